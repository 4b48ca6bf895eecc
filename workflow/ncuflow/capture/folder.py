"""Captures: what a GPU run measured, kept in the repository so that any machine can
replay it (``resources/captures/<name>/``).

A capture holds, per experiment and variant, the plan, the timing records
(``measure.json``) and every numeric ncu metric at full precision as read from the
report (``ncu_long.parquet``); per experiment the GPU run's own table; and
``device.json`` (with the measured ceilings), a search's rounds as proposed, and
``capture.json`` (when, where, with which
command and ncu settings). ``ncuflow capture <name>`` writes one from a GPU run's results.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..errors import NcuflowError
from ..files import read_json
from ..plan import Plan, read_records, records_json
from ..vocab import (
    CAPTURE_INFO,
    DEVICE,
    MEASURE,
    NCU_LONG,
    PLAN,
    PROFILE_EXTRAS,
    RUN,
    SEARCH,
    TABLE,
    VERSION,
)

CAPTURES = Path("resources") / "captures"
# What to do about a capture's file that was cut short or edited.
DAMAGED = ("a capture's file: restore it (git checkout -- resources/captures) or capture "
           "again on a GPU")  # fmt: skip


def capture_dir(root: Path, name: str) -> Path:
    """The capture ``name`` of the workflow at ``root``, checked."""
    return checked_capture(Path(root) / CAPTURES / name)


def checked_capture(folder: Path) -> Path:
    """``folder`` if it holds a capture, else an error that lists the captures beside it."""
    if not (folder / CAPTURE_INFO).is_file():
        found = sorted(p.parent.name for p in folder.parent.glob(f"*/{CAPTURE_INFO}"))
        raise NcuflowError(
            f"replay needs capture {folder.name!r}, but {folder} holds no {CAPTURE_INFO}; "
            f"captures here: {', '.join(found) or 'none'}. Set capture: in the config, or run "
            "on a GPU machine (mode: gpu) and save one with: python -m ncuflow capture <name>"
        )
    return folder


def info(folder: Path) -> dict[str, Any]:
    """capture.json: name, date, device, when it was saved, the command, the settings."""
    return read_json(folder / CAPTURE_INFO, "a capture's provenance", DAMAGED)


def run_command(command: str, run: dict[str, Any]) -> str:
    """``command`` (``snakemake ...``) with the cores and GPUs the run had, as its run.json
    records them (the capture is saved after the run, by a command that cannot know them)."""
    given = [f"--cores {run['cores']}"] if run.get("cores") else []
    if (run.get("gpus") or 1) > 1:
        given.append(f"--resources gpu={run['gpus']}")
    program, _, rest = command.partition(" ")
    return " ".join([program, *given, rest])


def save_capture(
    results: Path, root: Path, name: str, jobs: Iterable[tuple[str, str, Sequence[str]]],
    command: str, ncu: dict[str, Any],
) -> Path:  # fmt: skip
    """Copy a GPU run's records and plans into resources/captures/<name>/ (replacing what
    was there), with the run's ncu settings; ``jobs``: (experiment, variant, its parts),
    whose files a capture keeps as one per variant."""
    import pandas as pd  # here: a job that replays reads a capture without it

    from ..profile.long_table import write_long

    device = read_json(results / DEVICE)
    if device.get("replayed_from"):
        raise NcuflowError(f"{results} holds a replay, not a GPU run: nothing to capture")
    folder = Path(root) / CAPTURES / name
    if folder.exists():
        shutil.rmtree(folder)
    for experiment, variant, parts in jobs:
        target = folder / experiment / variant
        target.mkdir(parents=True)
        plans, measured, longs = [], {}, []
        for part in parts:  # the jobs of a variant, one file each in the capture
            source = results / experiment / variant / part
            for file in (PLAN, MEASURE, NCU_LONG):
                if not (source / file).is_file():
                    raise NcuflowError(f"{source / file} is missing: run the workflow first")
            plans.append(Plan.load(source / PLAN))
            measured.update(read_records(source / MEASURE))
            longs.append(pd.read_parquet(source / NCU_LONG))
        whole = plans[0].with_configs([row for plan in plans for row in plan.configs])
        (target / PLAN).write_text(whole.to_json())
        (target / MEASURE).write_text(records_json(measured))
        write_long(pd.concat(longs, ignore_index=True), target / NCU_LONG)
        for extra in PROFILE_EXTRAS:  # findings and the explain tier, where the run had them
            frames = [
                pd.read_parquet(results / experiment / variant / part / extra)
                for part in parts
                if (results / experiment / variant / part / extra).is_file()
            ]
            frames = [f for f in frames if not f.empty]
            if frames:
                pd.concat(frames, ignore_index=True).to_parquet(target / extra, index=False)
        if (results / experiment / TABLE).is_file():
            shutil.copy2(results / experiment / TABLE, folder / experiment / TABLE)
        rounds = sorted((results / experiment / SEARCH).glob("round*.json"))
        if rounds:  # a search's proposals, which its replay gives back as they were
            (folder / experiment / SEARCH).mkdir(exist_ok=True)
            for path in rounds:
                shutil.copy2(path, folder / experiment / SEARCH / path.name)
    shutil.copy2(results / DEVICE, folder / DEVICE)
    meta = {
        "name": name,
        "date": device.get("date"),
        "device": device.get("name"),
        "saved": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": command,
        "settings": {"ncuflow": VERSION, "ncu": ncu},
    }
    if (results / RUN).is_file():  # how long the run took, where it recorded it
        meta["run"] = read_json(results / RUN, "the run's wall times")
        meta["command"] = run_command(command, meta["run"])
    (folder / CAPTURE_INFO).write_text(json.dumps(meta, indent=1) + "\n")
    return folder
