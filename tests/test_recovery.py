"""One command recovers from any interruption: a replay of the default study's conv
experiment, stopped again and again across its stages (every process killed outright, or
Ctrl-C), each time followed by the same command, ends with the table of a run that was
never stopped."""

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import yaml

from conftest import REPLAYS, fake_measuring_worker, measured_numbers, replayed, replayed_once

COMMAND = [sys.executable, "-m", "snakemake", "--cores", "2", "--config", "mode=replay"]
STEPS = re.compile(r"^\d+ of \d+ steps")
# how each interruption comes, to the whole process group: a kill -9 of everything, and the
# terminal's Ctrl-C
WAYS = [signal.SIGKILL, signal.SIGINT]
# Snakemake 9's own traceback where Ctrl-C meets its teardown (its asyncio runner closed while
# it runs: every frame Snakemake's or asyncio's); not ncuflow's, and the command goes on
TEARDOWN = re.compile(r"RuntimeError: (Cannot close a running event loop|This event loop is "
                      r"already running)")  # fmt: skip


def tracebacks(printed: str) -> list[str]:
    """The tracebacks a run printed, each to its exception's line, less Snakemake's own at
    teardown (TEARDOWN)."""
    blocks = re.findall(r"^Traceback \(most recent call last\):\n.*?^\S[^\n]*", printed,
                        re.S | re.M)  # fmt: skip
    return [b for b in blocks if not (
        TEARDOWN.search(b.splitlines()[-1])
        and all(re.search(r"/(snakemake|asyncio)/", f) for f in re.findall(r'File "([^"]+)"', b))
    )]  # fmt: skip


def _running_rules(log: Path | None) -> set[str]:
    """The rules of the jobs a Snakemake log shows started and not finished."""
    text = log.read_text() if log is not None else ""
    started = {jobid: rule for rule, jobid in re.findall(
        r"rule (\w+):\n(?:.*\n)*?\s+jobid: (\d+)", text)}  # fmt: skip
    finished = set(re.findall(r"Finished jobid: (\d+)", text))
    return {rule for jobid, rule in started.items() if jobid not in finished}


def _run(folder: Path, stop: Callable[[int, set[str]], float | None] | None,
         signum: int) -> tuple[int, str, set[str]]:  # fmt: skip
    """The command, stopped as ``stop`` (of its steps done and the rules it runs, looked at
    every 50 ms) says: the seconds to wait before the stop, or None for not yet (``stop``
    None: never); (its exit status, what it printed, the rules it was running when
    stopped)."""
    logs = folder / ".snakemake" / "log"
    before = set(logs.glob("*.log"))
    proc = subprocess.Popen(COMMAND, cwd=folder, stdout=subprocess.PIPE, text=True,
                            stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    printed: list[str] = []
    reader = threading.Thread(target=lambda: printed.extend(proc.stdout or ()), daemon=True)
    reader.start()
    running: set[str] = set()
    while stop is not None and proc.poll() is None:
        log = next(iter(set(logs.glob("*.log")) - before), None)  # this run's, once written
        # its steps as printed, or as its log has them where the pipe lags behind
        logged = log.read_text().splitlines() if log is not None else []
        steps = max(sum(bool(STEPS.match(line)) for line in lines)
                    for lines in (list(printed), logged))  # fmt: skip
        delay_s = stop(steps, _running_rules(log))
        if delay_s is not None:
            time.sleep(delay_s)
            running = _running_rules(log)
            os.killpg(proc.pid, signum)
            break
        time.sleep(0.05)
    proc.wait(timeout=300)
    reader.join()
    if stop is not None and signum == signal.SIGKILL:
        time.sleep(0.5)  # what the kill left of the group dies with its stages
    return proc.returncode, "".join(printed), running


def test_the_same_command_goes_on_after_every_interruption(workflow_copy: Path) -> None:
    """Each run is stopped as a rule no stop has caught yet starts (every stage is caught),
    else after a few steps; the runs go on until one ends by itself. On a loaded machine a
    run can outpace its stops and end early: the study is then run again from nothing, and
    stopped again (five times at most), until eight stops have caught every stage. Snakemake
    may go on to the end past a Ctrl-C (seen in a loaded test session, at every Ctrl-C of
    five attempts): such a run is not a stop, and the stops after it are kills."""
    # one experiment of five variants: every stage, a fifth of the default study's steps
    config = yaml.safe_load((workflow_copy / "config.yaml").read_text())
    config["experiments"] = {"conv": config["experiments"]["conv"]}
    (workflow_copy / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    rng = random.Random(27)
    stops, rules, last, ways = 0, set(), "", WAYS
    ctrl_c = {"stopped": 0, "went on": 0}  # runs Ctrl-C stopped, and runs it did not
    seen = []  # what each run did: (attempt, the stop, exit status, the rules it ran)
    for attempt in range(5):
        tries = attempt + 1
        for round_ in range(40):
            most, caught, later = rng.randint(1, 3), frozenset(rules), rng.choice([0.0, 0.2, 0.5])

            # a rule no stop has caught: stopped at once (a short stage, a replay's profile,
            # could end while the stop waits); else after a few steps and a pause
            def stop(steps: int, now: set[str], most: int = most, caught: frozenset = caught,
                     later: float = later) -> float | None:  # fmt: skip
                return 0.0 if now - caught else later if steps >= most else None

            way = ways[round_ % len(ways)]
            code, printed, running = _run(workflow_copy, stop, way)
            assert "cannot be locked" not in printed and not tracebacks(printed), printed[-3000:]
            last = printed
            seen.append((attempt, signal.Signals(way).name, code, sorted(running)))
            if code == 0:  # it ended before the stop came, or it went on past a Ctrl-C
                if running and way == signal.SIGINT:  # no stop: kills from here on
                    ctrl_c["went on"], ways = ctrl_c["went on"] + 1, [signal.SIGKILL]
                if not running:
                    break
                continue
            stops, rules = stops + 1, rules | running
            ctrl_c["stopped"] += way == signal.SIGINT
        else:
            raise AssertionError(f"never finished:\n{last[-3000:]}")
        code, printed, _ = _run(workflow_copy, None, WAYS[0])
        assert code == 0 and "Nothing to be done" in printed, printed[-3000:]
        if stops >= 8 and {"measure", "profile", "collect", "plot"} <= rules:
            break
        shutil.rmtree(workflow_copy / "results")  # from nothing again
    assert stops >= 8, f"only {stops} interruptions in {tries} attempts: {seen}"
    assert {"measure", "profile", "collect", "plot"} <= rules, (rules, seen)
    assert sum(ctrl_c.values()) >= 1, seen  # a Ctrl-C came, and the same command went on
    for name in config["experiments"]:
        expected = replayed("h100-sxm")[name]
        table = pd.read_parquet(workflow_copy / "results" / name / "table.parquet")
        assert table["status"].tolist() == expected["status"].tolist()
        numeric = measured_numbers(expected)
        pd.testing.assert_frame_equal(table[numeric], expected[numeric], check_exact=True)


def _claim(lock: Path, locks: Path) -> str:
    """What a new run's main process says of the folder (ncuflow.runlock.claim_folder)."""
    code = ("import sys; from pathlib import Path; from ncuflow.runlock import claim_folder; "
            "print('\\n'.join(claim_folder(Path(sys.argv[1]), Path(sys.argv[2]), "
            "Path(sys.argv[2]).parent)))")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "workflow")}
    return subprocess.run([sys.executable, "-c", code, str(lock), str(locks)], env=env,
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip


def test_a_killed_runs_lock_goes_only_where_no_process_of_a_run_lives(tmp_path: Path) -> None:
    lock, locks = tmp_path / ".snakemake" / "ncuflow" / "run.lock", tmp_path / "locks"
    locks.mkdir()
    (locks / "0.output.lock").write_text("results/x\n")
    lock.parent.mkdir(parents=True)
    holder = subprocess.Popen(  # a stage of a run still alive
        [sys.executable, "-c", "import fcntl, os, sys, time; lock = os.open(sys.argv[1], "
         "os.O_RDWR | os.O_CREAT); fcntl.flock(lock, fcntl.LOCK_SH); print(1, flush=True); "
         "time.sleep(60)", str(lock)], stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "1"
        cut = tmp_path / "results" / "e" / "v" / "p0" / "measure.json"
        cut.parent.mkdir(parents=True)
        cut.write_text('{"a": {"stat')  # as a live run's job may be writing it
        said = _claim(lock, locks)
        assert "another run is still working in this folder" in said and "--unlock" in said
        assert (locks / "0.output.lock").is_file() and cut.is_file()
    finally:
        holder.kill()
        holder.wait()
    said = _claim(lock, locks)  # nothing of it is alive now
    assert said.startswith("ncuflow: the lock an interrupted run left on this folder was removed")
    assert said.endswith("results/e/v/p0/measure.json was cut short: removed, its job runs again")
    assert not any(locks.iterdir()) and not cut.exists()
    assert _claim(lock, locks) == ""  # nothing to say where there is no lock


def test_a_job_file_cut_short_is_made_again_by_the_same_command(tmp_path: Path) -> None:
    """A record file and a table cut half-way (a full disk, a copy stopped): the next run
    names them, removes them and runs their jobs again, to the same table."""
    done, proc = replayed_once("transpose")
    assert proc.returncode == 0, proc.stderr[-3000:]
    workflow_copy = tmp_path / "project"
    shutil.copytree(done, workflow_copy, symlinks=True)
    # up to the table: the figures, drawn from it, are other tests'
    run = [sys.executable, "-m", "snakemake", "results/transpose/table.parquet",
           *REPLAYS["transpose"]]  # fmt: skip
    results = workflow_copy / "results" / "transpose"
    before = pd.read_parquet(results / "table.parquet")
    part = next(results.glob("*/p0"))
    cut = [part / "measure.json", part / "metrics.parquet"]
    for path in cut:
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    proc = subprocess.run(run, cwd=workflow_copy, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for path in cut:
        relative = path.relative_to(workflow_copy)
        assert f"ncuflow: {relative} was cut short: removed, its job runs again" in proc.stderr
    after = pd.read_parquet(results / "table.parquet")
    numeric = measured_numbers(before)
    pd.testing.assert_frame_equal(after[numeric], before[numeric], check_exact=True)


def test_only_job_files_cut_short_are_removed(tmp_path: Path) -> None:
    from ncuflow.files import remove_cut_short

    part = tmp_path / "results" / "e" / "v" / "p0"
    part.mkdir(parents=True)
    chunks = tmp_path / "results" / "e" / "profile.b0" / "chunks"
    chunks.mkdir(parents=True)
    pd.DataFrame({"a": [1.0]}).to_parquet(part / "metrics.parquet")
    whole = (part / "metrics.parquet").read_bytes()
    (part / "ncu_long.parquet").write_bytes(whole[:-3])
    (part / "measure.json").write_text('{"a": {"status": "ok"}}\n')
    (part / "plan.json").write_text('{"a": {"stat')
    (chunks / "sweep_000.json").write_text('{"key"')  # the stage's own
    (tmp_path / "results" / "e" / "table.parquet").write_bytes(b"PAR1")
    removed = remove_cut_short(tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in removed) == [
        "results/e/table.parquet",
        "results/e/v/p0/ncu_long.parquet",
        "results/e/v/p0/plan.json",
    ]
    assert (part / "metrics.parquet").is_file() and (part / "measure.json").is_file()
    assert (chunks / "sweep_000.json").is_file()


STAGE = """
import sys
from pathlib import Path
sys.path.insert(0, {workflow!r})
from ncuflow.children import stop_on_signals
from ncuflow.measure.stage import measure_plan
stop_on_signals()
measure_plan(Path(sys.argv[1]), Path(sys.argv[2]), lambda line: None,
             worker=[sys.executable, sys.argv[3]])
"""


def _settled(journal: Path) -> None:
    """Wait until nothing has written to ``journal`` for half a second: a worker killed with
    its stage may still finish the record it was writing (on a loaded machine, after the
    stage is gone), but one that lived on, writing every 0.15 s, never lets it settle."""
    deadline, size = time.monotonic() + 5.0, -1
    while time.monotonic() < deadline:
        now = journal.stat().st_size if journal.is_file() else 0
        if now == size:
            return
        size = now
        time.sleep(0.5)
    raise AssertionError("a worker lived on")


def test_a_measure_stage_killed_ten_times_loses_and_repeats_nothing(tmp_path: Path) -> None:
    """The measure stage over simulated GPU workers, killed outright at ten moments and
    started again each time: no worker goes on after a kill (one may finish the record it
    was writing), and the records in the end are those of a run never stopped (none lost,
    none twice)."""
    from conftest import minimal_config
    from ncuflow.study.config import load_study

    workflow = str(Path(__file__).parents[1] / "workflow")
    worker = fake_measuring_worker(tmp_path / "worker.py", seconds=0.15)  # a moment each
    stage = tmp_path / "stage.py"
    stage.write_text(STAGE.format(workflow=workflow))
    config = minimal_config(sizes={"M": [64, 128, 256, 512, 1023], "N": "M", "K": "M"})
    config["experiments"]["sq"]["variants"]["naive"]["params"]["BLOCK_Y"] = [4, 8]
    plan = tmp_path / "plan.json"
    plan.write_text(load_study(config).plan("sq", "naive").to_json())
    command = [sys.executable, str(stage), str(plan)]

    def run(out: Path) -> subprocess.Popen:
        return subprocess.Popen([*command, str(out), str(worker)], stderr=subprocess.PIPE)

    clean = tmp_path / "clean.json"
    assert run(clean).wait(timeout=120) == 0
    out = tmp_path / "measure.json"
    journal = out.with_name(out.name + ".partial.jsonl")
    rng, kills = random.Random(27), 0
    while kills < 10:
        proc = run(out)
        time.sleep(rng.uniform(0.1, 0.5))
        if proc.poll() is not None:
            break
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += 1
        _settled(journal)  # a worker left alive would go on writing
    assert kills == 10
    assert run(out).wait(timeout=120) == 0
    assert json.loads(out.read_text()) == json.loads(clean.read_text())
