"""How long a run took. Every stage a Snakemake run starts appends its wall time to the
run's log (a JSON line per job, in the file the environment variable ``NCUFLOW_RUN_LOG``
names, which the main process sets and Snakemake passes to jobs elsewhere); at its end the
main process sums them per stage into ``results/run.json``, which ``ncuflow capture``
keeps in ``capture.json`` under ``run``."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .files import append_line, write_json
from .vocab import RUN, RUN_LOG_ENV


@dataclass
class Phase:
    """The phase a block's time goes to; the block may name another once it knows."""

    name: str


@contextlib.contextmanager
def add_time(phases: dict[str, float], name: str) -> Iterator[Phase]:
    """Add the seconds the block takes to ``phases`` under its phase's name: where a
    worker's time went."""
    started, phase = time.perf_counter(), Phase(name)
    try:
        yield phase
    finally:
        phases[phase.name] = phases.get(phase.name, 0.0) + time.perf_counter() - started


def process_started() -> float:
    """When this process started (seconds since the epoch): a run's wall time includes
    Snakemake's own start, not only what follows the Snakefile's first line."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(fields[19])  # starttime, the 22nd field, in clock ticks after boot
        boot = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))  # fmt: skip
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return time.time()


def record_stage(stage: str, wall_s: float, ok: bool) -> None:
    """One job's stage and wall time, appended to the run's log where a run set one."""
    log = os.environ.get(RUN_LOG_ENV)
    if log and Path(log).parent.is_dir():
        append_line(Path(log), {"stage": stage, "wall_s": round(wall_s, 3), "ok": ok})


def stage_times(log: Path) -> dict[str, dict[str, Any]]:
    """Per stage: its jobs, how many failed, their wall times summed and the longest
    (seconds)."""
    stages: dict[str, dict[str, Any]] = {}
    lines = log.read_text().splitlines() if log.is_file() else []
    for line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:  # a job killed while writing its line
            continue
        empty = {"jobs": 0, "failed": 0, "wall_s": 0.0, "longest_s": 0.0}
        stage = stages.setdefault(entry["stage"], empty)
        stage["jobs"] += 1
        stage["failed"] += not entry["ok"]
        stage["wall_s"] = round(stage["wall_s"] + entry["wall_s"], 3)
        stage["longest_s"] = max(stage["longest_s"], entry["wall_s"])
    return stages


def write_run(path: Path, log: Path, started: float, planned_s: float, **facts: Any) -> dict:
    """``results/run.json`` of a run that began at ``started`` and planned its study in
    ``planned_s``: the wall time to now, ``facts`` (cores, gpus, mode, whether it ended
    well) and each stage's times; the stages' sum exceeds the wall time where jobs ran
    side by side. A run that goes on from runs that did not end well (interrupted, or a
    job failed) keeps them, latest first, under ``earlier``, and ``total_wall_s`` sums
    them all: what these results cost, not only their last part."""
    now = time.time()
    run = {
        "started": dt.datetime.fromtimestamp(started, dt.UTC).isoformat(timespec="seconds"),
        "wall_s": round(now - started, 1),
        **facts,
        "stages": {"start": {"jobs": 1, "wall_s": round(planned_s, 3)}, **stage_times(log)},
    }
    before = _unfinished(path)
    if before:
        run["earlier"] = before
        run["total_wall_s"] = round(run["wall_s"] + sum(r["wall_s"] for r in before), 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, run)
    return run


def _unfinished(path: Path) -> list[dict]:
    """The runs an earlier ``run.json`` records that did not end well (none after one that
    did, or where it cannot be read): the one it describes, then those it kept."""
    try:
        last = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return []
    if not isinstance(last, dict) or last.get("ok", True):
        return []
    kept = last.pop("earlier", [])
    last.pop("total_wall_s", None)
    return [last, *kept]


def finish_run(workflow: Any, mode: str, started: float, start_s: float, ok: bool) -> dict:
    """results/run.json of the Snakemake run ``workflow`` (its cores and gpu slots), from
    the Snakefile's onsuccess or onerror. From here on a Ctrl-C is ignored: every job has
    ended, and what is left (this record, the summary lines) is short and would only be
    cut into a traceback."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    gpus = workflow.global_resources.get("gpu")
    cores = workflow.resource_settings.cores  # None on a cluster run without --cores
    return write_run(Path("results") / RUN, Path(os.environ[RUN_LOG_ENV]), started, start_s,
                     cores=cores, gpus=getattr(gpus, "value", gpus), mode=mode,
                     ok=ok)  # fmt: skip
