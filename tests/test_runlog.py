"""A run's wall times: each stage's line, summed per stage into results/run.json."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ncuflow.runlog import add_time, process_started, record_stage, stage_times, write_run
from ncuflow.vocab import RUN_LOG_ENV


def test_each_stage_is_summed_and_a_cut_line_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "run.jsonl"
    monkeypatch.setenv(RUN_LOG_ENV, str(log))
    for stage, seconds, ok in (("measure", 2.0, True), ("measure", 3.5, False),
                               ("profile", 10.0, True)):  # fmt: skip
        record_stage(stage, seconds, ok)
    with log.open("a") as handle:
        handle.write('{"stage": "prof')  # a job killed while writing its line
    assert stage_times(log) == {
        "measure": {"jobs": 2, "failed": 1, "wall_s": 5.5, "longest_s": 3.5},
        "profile": {"jobs": 1, "failed": 0, "wall_s": 10.0, "longest_s": 10.0},
    }
    run = write_run(tmp_path / "results" / "run.json", log, process_started(), 1.25, cores=2,
                    gpus=1, ok=True)  # fmt: skip
    assert json.loads((tmp_path / "results" / "run.json").read_text()) == run
    assert run["stages"]["start"] == {"jobs": 1, "wall_s": 1.25} and run["wall_s"] >= 0


def test_a_stage_outside_a_run_records_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(RUN_LOG_ENV, raising=False)
    record_stage("collect", 1.0, True)  # no run: nowhere to write, and no error
    monkeypatch.setenv(RUN_LOG_ENV, str(tmp_path / "gone" / "run.jsonl"))
    record_stage("collect", 1.0, True)  # a run's folder removed: nothing written
    assert not (tmp_path / "gone").exists()


def test_a_ctrl_c_after_the_last_job_does_not_cut_the_runs_end(tmp_path: Path) -> None:
    """The run's record is written and what follows it goes on: no traceback in the
    terminal for a Ctrl-C pressed as the run ends."""
    code = (
        "import os, signal, types; from ncuflow.runlog import finish_run\n"
        "flow = types.SimpleNamespace(global_resources={'gpu': 1},\n"
        "    resource_settings=types.SimpleNamespace(cores=2))\n"
        "finish_run(flow, 'replay', 0.0, 0.5, ok=True)\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "print('went on')\n"
    )
    env = {**os.environ, RUN_LOG_ENV: str(tmp_path / "run.jsonl"),
           "PYTHONPATH": str(Path(__file__).parents[1] / "workflow")}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0 and done.stdout == "went on\n", done.stderr
    assert json.loads((tmp_path / "results" / "run.json").read_text())["ok"] is True


def test_a_run_that_goes_on_keeps_the_interrupted_ones(tmp_path: Path) -> None:
    """Two runs cut short, then one that ends well: its record keeps both, latest first,
    and the total; the run after that starts afresh."""
    path, log = tmp_path / "results" / "run.json", tmp_path / "run.jsonl"
    first, second, third = (write_run(path, log, process_started(), 1.0, ok=False),
                            write_run(path, log, process_started(), 1.0, ok=False),
                            write_run(path, log, process_started(), 1.0, ok=True))  # fmt: skip
    assert "earlier" not in first
    assert [r["started"] for r in second["earlier"]] == [first["started"]]
    assert [r["ok"] for r in third["earlier"]] == [False, False]
    assert third["earlier"][0] == {k: v for k, v in second.items()
                                   if k not in ("earlier", "total_wall_s")}  # fmt: skip
    assert third["total_wall_s"] == round(
        third["wall_s"] + second["wall_s"] + first["wall_s"], 1)  # fmt: skip
    assert "earlier" not in write_run(path, log, process_started(), 1.0, ok=True)


def test_a_block_may_name_its_phase_once_it_knows() -> None:
    """A build that compiled, not loaded, counts as compile (measure and profile workers)."""
    phases: dict[str, float] = {}
    for compiled in (True, False, False):
        with add_time(phases, "build") as phase:
            if compiled:
                phase.name = "compile"
    assert set(phases) == {"compile", "build"} and all(v >= 0 for v in phases.values())
