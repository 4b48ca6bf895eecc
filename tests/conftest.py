"""Shared fixtures. GPU tests carry @pytest.mark.gpu and skip themselves where there is no
CUDA device with CuPy and ncu (CI); run them on the GPU machine with `pytest -m gpu`."""

from __future__ import annotations

import atexit
import fcntl
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))
# worker processes (the harness, ncu's target) import ncuflow too
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [str(ROOT / "workflow"), os.environ.get("PYTHONPATH")])
)
# the user's cache (files.user_cache) stays untouched: a folder of this session's own
os.environ["NCUFLOW_CACHE"] = tempfile.mkdtemp(prefix="ncuflow-cache-")
atexit.register(shutil.rmtree, os.environ["NCUFLOW_CACHE"], True)
# What the session's processes share (made_once): pytest-xdist's workers inherit the folder
# from the process that starts them, which makes it anew and removes it.
SHARED_ENV = "NCUFLOW_TEST_SHARED"
if "PYTEST_XDIST_WORKER" not in os.environ:
    os.environ[SHARED_ENV] = tempfile.mkdtemp(prefix="ncuflow-tests-")
    atexit.register(shutil.rmtree, os.environ[SHARED_ENV], True)

from ncuflow.gpu import cuda_device  # noqa: E402

if TYPE_CHECKING:
    from ncuflow.study.config import Study

CAPTURE = ROOT / "resources" / "captures" / "h100-sxm"
# What a copy of the workflow needs to run somewhere else.
WORKFLOW_PARTS = ("Snakefile", "config.yaml", "workflow", "kernels", "resources", "profiles",
                  "experiments")  # fmt: skip


def _gpu_missing() -> str:
    name, why = cuda_device()
    if name is None:
        return why
    return "" if shutil.which("ncu") else "ncu is not on PATH"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Tests that run the workflow in a copy take longest: started first, they spread over
    # pytest-xdist's workers and end with the rest.
    items.sort(key=lambda item: "workflow_copy" not in getattr(item, "fixturenames", ()))
    gpu_items = [item for item in items if "gpu" in item.keywords]
    why = _gpu_missing() if gpu_items else ""
    for item in gpu_items if why else ():
        item.add_marker(pytest.mark.skip(reason=f"needs a GPU: {why}"))


@pytest.fixture(autouse=True)
def one_at_a_time(request: pytest.FixtureRequest) -> Iterator[None]:
    """Tests of the GPU, and of the cluster, run one after another, whichever workers run
    them: a GPU shared by tests that time and profile would make their numbers wrong."""
    shared = [mark for mark in ("gpu", "slurm") if mark in request.node.keywords]
    if not shared:
        yield
        return
    with open(Path(os.environ[SHARED_ENV]) / f"{shared[0]}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released as the file closes
        yield


@pytest.fixture
def workflow_copy(tmp_path: Path) -> Path:
    """The workflow copied into a temporary folder, to run Snakemake there."""
    return workflow_copy_into(tmp_path)


def edit_file(path: Path, old: str, new: str) -> None:
    """``old`` replaced by ``new`` in a file (a copied family's, say), which must hold it."""
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


def minimal_config(**experiment: object) -> dict:
    """A one-experiment config over the matmul family; keyword arguments override its keys."""
    base = {
        "family": "matmul",
        "sizes": {"M": [64, 1023], "N": "M", "K": "M"},
        "variants": {"naive": {"params": {"BLOCK_X": [16, 32], "BLOCK_Y": [8]}}},
    }
    base.update(experiment)
    return {"kernels_dir": str(ROOT / "kernels"), "experiments": {"sq": base}}


CAPTURES = ROOT / "resources" / "captures"
# Each committed capture and the study it holds (every study names its capture).
STUDIES = {
    "h100-sxm": ROOT / "config.yaml",
    "h200": ROOT / "config.yaml",  # the default study on one H200
    # benchmarks/gpus.py's sweep, its run on both GPUs of one host at once (--resources gpu=2)
    "h200-x2-gpus": ROOT / "benchmarks" / "gpus.yaml",
    "h200-verdicts": ROOT / "experiments" / "verdicts.yaml",  # the verdicts study on one H200
    # experiments/gate.yaml's second run on one H200 and its run on another (issue 46)
    "h200-gate-b": ROOT / "experiments" / "gate.yaml",
    "h200-gate-host2": ROOT / "experiments" / "gate.yaml",
    "h200-energy-b": ROOT / "experiments" / "energy.yaml",  # its second run on one H200
    **{
        yaml.safe_load(p.read_text())["capture"]: p  # the capture a study file names
        for p in sorted((ROOT / "experiments").glob("*.yaml"))
    },
}


def _captured_grid(plan_path: Path, spec: dict | None) -> dict | None:
    """A variant's entry narrowed to the parameter values its captured plan holds: a capture
    taken before the study widened a grid still replays the configurations it has."""
    if not plan_path.is_file():  # captures before plans were kept: taken as configured
        return spec
    configs = json.loads(plan_path.read_text())["configs"]
    if not configs:
        return spec
    values = {name: sorted({c["params"][name] for c in configs}) for name in configs[0]["params"]}
    if not values:
        return spec
    params = {name: v[0] if len(v) == 1 else v for name, v in values.items()}
    return {**(spec or {}), "params": params}


@functools.cache
def replayed_study(capture: str) -> Study:
    """The study a capture holds, narrowed to what the capture measured, over this tree's
    kernels: what its replay plans."""
    from ncuflow.study.config import load_study

    config = yaml.safe_load(STUDIES[capture].read_text())
    config["kernels_dir"] = str(ROOT / "kernels")
    for name, experiment in list(config["experiments"].items()):  # what the capture measured
        kept = CAPTURES / capture / name
        experiment["variants"] = {v: _captured_grid(kept / v / "plan.json", spec)
                                  for v, spec in experiment["variants"].items()
                                  if (kept / v).is_dir()}  # fmt: skip
        if not experiment["variants"]:  # a study's experiment added since the capture
            del config["experiments"][name]
            continue
        experiment["questions"] = [q for q in experiment.get("questions", [])
                                   if _asked_about(q) <= set(experiment["variants"])]  # fmt: skip
    return load_study(config)


def _asked_about(question: dict) -> set[str]:
    """The variants a study's question names."""
    named = [question.get(kind) for kind in ("speedup", "best", "bound", "throughput")]
    return {v for n in named if n for v in ([n] if isinstance(n, str) else n)}


def measured_numbers(table: pd.DataFrame) -> list[str]:
    """A table's measured numbers, which a replay gives back exactly: its numeric columns
    but flags (bool in older captures, nullable since) and what this tree's reading of
    ncu's findings makes of them (a replay reads a capture's findings again)."""
    from ncuflow.analyze.why import WHY_COLUMNS

    return [c for c in table.columns if pd.api.types.is_numeric_dtype(table[c])
            and not pd.api.types.is_bool_dtype(table[c]) and c not in WHY_COLUMNS]  # fmt: skip


def sources_changed(capture: str, experiment: str) -> bool:
    """Whether the kernels of an experiment's family changed since the capture: the
    fingerprint its plans hold against this tree's. A replay names the change on every row
    (capture_mismatch); tests expect that line where it applies, so that editing a kernel (a
    comment, say) on a machine without a GPU keeps them green."""
    from ncuflow.plan import Plan
    from ncuflow.spec import load_family

    plan = Plan.load(next((CAPTURES / capture / experiment).glob("*/plan.json")))
    return plan.family_fingerprint != load_family(ROOT / "kernels", plan.family).fingerprint


def changed_sources_line(capture: str, experiment: str, family: str) -> str:
    """``; the kernel sources of family ... changed since the capture`` where they did."""
    if not sources_changed(capture, experiment):
        return ""
    return f"; the kernel sources of family {family} changed since the capture"


def made_once(name: str, make: Callable[[Path], None]) -> Path:
    """A folder of the session's shared folder, filled by ``make`` once: the first process to
    ask makes it, the others wait for it (a process killed while making it leaves it
    unmarked, and the next one to ask makes it again)."""
    folder = Path(os.environ[SHARED_ENV]) / name
    with open(folder.parent / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released as the file closes, however this ends
        if not (folder / ".made").is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (folder / ".made").touch()
    return folder


@functools.cache
def replayed(capture: str) -> dict[str, pd.DataFrame]:
    """A capture's study replayed through the stages' functions (no Snakemake): its
    collected table per experiment, replayed once per test session (made_once)."""
    kept = made_once(
        f"replayed-{capture}",
        lambda folder: pd.to_pickle(_replay(capture, folder), folder / "tables.pickle"),
    )
    return pd.read_pickle(kept / "tables.pickle")


def workflow_copy_into(folder: Path) -> Path:
    """The workflow copied into ``folder``, to run Snakemake there."""
    folder.mkdir(parents=True, exist_ok=True)
    for part in WORKFLOW_PARTS:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, folder / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, folder / part)
    return folder


def run_snakemake(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """Snakemake run in ``folder``, what it printed kept."""
    return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=folder,
                          capture_output=True, text=True, timeout=600)  # fmt: skip


# Snakemake's arguments of the studies replayed once per session (replayed_once).
REPLAYS = {
    "transpose": ("--cores", "2", "--configfile", "experiments/transpose.yaml", "--config",
                  "mode=replay"),
    # its table (the figures are other tests'), at most ten configurations per job:
    # regtile_vd's 27 make three jobs
    "register_tiling": ("results/register_tiling/table.parquet", "--cores", "2", "--configfile",
                        "experiments/register_tiling.yaml", "--config", "mode=replay",
                        "configurations_per_job=10"),
}  # fmt: skip


def replayed_once(name: str) -> tuple[Path, subprocess.CompletedProcess]:
    """A workflow copy where Snakemake ran with the arguments REPLAYS names, once per test
    session (made_once), and what it printed: tests read it, never write to it (one that
    must, works on a copy)."""

    def make(folder: Path) -> None:
        proc = run_snakemake(workflow_copy_into(folder / "workflow"), *REPLAYS[name])
        (folder / "proc.json").write_text(json.dumps([proc.args, proc.returncode, proc.stdout,
                                                      proc.stderr]))  # fmt: skip

    folder = made_once(name, make)
    return folder / "workflow", subprocess.CompletedProcess(
        *json.loads((folder / "proc.json").read_text())
    )


def _replay(capture: str, work: Path) -> dict[str, pd.DataFrame]:
    """Each experiment's table of the capture replayed, its jobs' files in ``work``."""
    from ncuflow.analyze.collect import collect
    from ncuflow.analyze.derive import config_metrics
    from ncuflow.plan import Plan
    from ncuflow.profile.members import Member, choose
    from ncuflow.runners.replay import ReplayRunner

    study = replayed_study(capture)
    folder = CAPTURES / capture
    runner = ReplayRunner(folder)
    runner.device_facts(work / "device.json", None)
    replay = (folder, study.ncu.recorded())
    tables = {}
    for name in study.experiments:
        jobs = []
        for experiment, variant in study.jobs():
            if experiment != name:
                continue
            base = work / experiment / variant  # a job's folder, its files named as in results/
            base.mkdir(parents=True)
            plan_path = base / "plan.json"
            if study.experiments[experiment].search.searches:  # the rows its search measured
                plan = Plan.load(folder / experiment / variant / "plan.json")
            else:
                plan = study.plan(experiment, variant)
            plan_path.write_text(plan.to_json())
            member = Member(plan_path, base / "measure.json", base)
            runner.measure([member], base / "journal.jsonl", lambda line: None)
            # ncu.profile's choice among the measured, as the profile stage makes it
            member = choose([member], study.profile_mode(experiment))[0]
            runner.profile([member], base / "chunks", lambda line: None)
            long = pd.read_parquet(base / "ncu_long.parquet")
            config_metrics(long).to_parquet(base / "metrics.parquet")
            jobs.append(tuple(base / s for s in ("plan.json", "measure.json",
                                                 "metrics.parquet")))  # fmt: skip
        tables[name] = collect(name, jobs, work / "device.json", work / name / "table.parquet",
                               replay, study.profile_mode(name))  # fmt: skip
    return tables


def measure_study(
    tmp_path: Path, kernels: Path, experiments: dict, repeats: int, **config: dict
) -> dict:
    """Every (experiment, variant) of a study through the measure stage, each timed
    ``repeats`` times; the records by variant (plans and records stay in ``tmp_path``).
    ``config`` adds to the study's config (timing settings, device limits)."""
    from ncuflow.measure.stage import measure_plan
    from ncuflow.study.config import load_study

    timing = {"warmup": 1, "min_repeats": repeats, "max_repeats": repeats,
              **config.pop("timing", {})}  # fmt: skip
    study = load_study({"kernels_dir": str(kernels), "timing": timing,
                        "experiments": experiments, **config})  # fmt: skip
    found: dict[str, dict] = {}
    for experiment, variant in study.jobs():
        plan = tmp_path / f"{experiment}.{variant}.plan.json"
        plan.write_text(study.plan(experiment, variant).to_json())
        out = tmp_path / f"{experiment}.{variant}.measure.json"
        measure_plan(plan, out, lambda line: None)
        found.setdefault(variant, {}).update(json.loads(out.read_text()))
    return found


def variants_as_run(family_name: str) -> dict[str, dict | None]:
    """Every variant of a bundled family, at its defaults and at the parameters the default
    study (config.yaml) runs it with: a variants section for an experiment."""
    from ncuflow.spec import load_family

    family = load_family(ROOT / "kernels", family_name)
    default_study = yaml.safe_load((ROOT / "config.yaml").read_text())["experiments"]
    chosen = {name: spec or {} for experiment in default_study.values()
              if experiment["family"] == family_name
              for name, spec in experiment["variants"].items()}  # fmt: skip
    variants: dict[str, dict | None] = {}
    for name, variant in family.variants.items():
        if not variant.params:
            variants[name] = None
            continue
        grid = {p: [default] for p, default in variant.params.items()}
        for param, values in (chosen.get(name, {}).get("params") or {}).items():
            extra = values if isinstance(values, list) else [values]
            grid[param] = list(dict.fromkeys([*grid[param], *extra]))
        variants[name] = {"params": grid}
    return variants


# A stand-in for the GPU's measuring worker (measure.worker's command line and journal):
# each configuration takes ``seconds`` and gets a record that depends on it alone (as a
# fixed seed's would); it dies (as a kernel fault takes the process down) on the one named
# in CRASH_ON, and hangs on the one named in HANG_ON.
FAKE_WORKER = """
import json, os, sys, time
from pathlib import Path
sys.path.insert(0, {workflow!r})
from ncuflow.measure import journal
from ncuflow.plan import Plan, Record, unfinished
from ncuflow.vocab import target_id
path = Path(sys.argv[2])
done, _ = journal.read(path)
for entry in json.loads(Path(sys.argv[1]).read_text()):
    plan = Plan.load(Path(entry["plan"]))
    for row in plan.pending:
        target = target_id(entry["member"], row.config_id)
        earlier = done.get(target)
        if not unfinished(earlier, plan.timing.round_count):
            continue
        journal.started(path, target)
        if row.config_id == os.environ.get("CRASH_ON"):
            os.abort()
        if row.config_id == os.environ.get("HANG_ON") or (
                earlier is not None and os.environ.get("LATER_ROUND") == "hang"):
            time.sleep(3600)
        time.sleep({seconds})
        record = Record("ok", rel_error=0.0, time_ms=1.0, fingerprint=plan.fingerprint(row))
        if earlier is not None:  # a later round of timing.rounds: it fails (LATER_ROUND)
            record = earlier.updated(status="launch_error", error="round 2 failed: boom")
        journal.finished(path, target, record)
"""


def fake_measuring_worker(script: Path, seconds: float = 0.0) -> Path:
    """The stand-in worker written to ``script``."""
    script.write_text(FAKE_WORKER.format(workflow=str(ROOT / "workflow"), seconds=seconds))
    return script
