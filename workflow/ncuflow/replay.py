"""Replay: what a GPU run measured, taken from a committed capture instead of the GPU.

A capture (``resources/captures/<name>/``) holds, per experiment and variant, the timing
records (``measure.json``) and the ncu raw CSV (``ncu_raw.csv``), plus ``device.json`` and
``capture.json`` (when, where, with which command). Replay copies exactly those records
for the configurations the config asks for; parsing, collecting and plotting then run
for real. A configuration the capture lacks is an error, never invented.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .errors import NcuflowError
from .expand import PENDING
from .harness import plan_variant, profiled_ids
from .ncu_csv import config_of, read_rows

CAPTURES = Path("resources") / "captures"
MEASURE, NCU_CSV, DEVICE, INFO = "measure.json", "ncu_raw.csv", "device.json", "capture.json"


def capture_dir(root: Path, name: str) -> Path:
    folder = Path(root) / CAPTURES / name
    if not (folder / INFO).is_file():
        found = sorted(p.parent.name for p in (Path(root) / CAPTURES).glob(f"*/{INFO}"))
        raise NcuflowError(
            f"replay needs capture {name!r}, but {folder} holds no {INFO}; captures here: "
            f"{', '.join(found) or 'none'}. Set capture: in the config, or run on a GPU "
            "machine (mode: gpu) and save one with: python -m ncuflow capture <name>"
        )
    return folder


def info(folder: Path) -> dict[str, Any]:
    return json.loads((folder / INFO).read_text())


def _missing_error(folder: Path, plan: dict[str, Any], missing: list[str], what: str) -> None:
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    raise NcuflowError(
        f"capture {folder.name} has no {what} of configuration(s) {shown} "
        f"(experiments.{plan['experiment']}.variants.{plan['variant']}). Replay never invents "
        "a result: remove them from the config, or refresh the capture on a GPU machine "
        "(README: Replay)"
    )


def replay_measure(
    plan: dict[str, Any], folder: Path, out: Path, log: Callable[[str], None]
) -> None:
    source = folder / plan["experiment"] / plan["variant"] / MEASURE
    pending = [r["config_id"] for r in plan["configs"] if r["status"] == PENDING]
    captured = json.loads(source.read_text()) if source.is_file() else {}
    missing = [c for c in pending if c not in captured]
    if missing:
        _missing_error(folder, plan, missing, "timing record")
    log(f"replaying {len(pending)} timing records from {source}")
    out.write_text(json.dumps({c: captured[c] for c in pending}, indent=1))


def replay_profile(
    plan: dict[str, Any], measure: Path, folder: Path, out: Path, log: Callable[[str], None]
) -> None:
    """Copy the capture's CSV rows of the configurations that measured ok."""
    ok = set(profiled_ids(plan_variant(plan)[1], json.loads(measure.read_text())))
    source = folder / plan["experiment"] / plan["variant"] / NCU_CSV
    if not ok:
        out.write_text("")
        return
    header, units, rows = read_rows(source) if source.is_file() else ([], [], [])
    kept = [row for row in rows if config_of(row) in ok]
    missing = sorted(ok - {config_of(row) for row in kept})
    if missing:
        _missing_error(folder, plan, missing, "ncu profile")
    log(f"replaying {len(kept)} ncu kernel rows for {len(ok)} configurations from {source}")
    with open(out, "w", newline="") as handle:
        writer = csv.writer(handle, quoting=csv.QUOTE_ALL)
        writer.writerows([header, units, *([row[h] for h in header] for row in kept)])


def replay_device(folder: Path, out: Path) -> None:
    facts = json.loads((folder / DEVICE).read_text())
    facts["replayed_from"] = folder.name
    out.write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")


def save_capture(
    results: Path, root: Path, name: str, jobs: Iterable[tuple[str, str]], command: str
) -> Path:
    """Copy a GPU run's records into resources/captures/<name>/ (replacing what was there)."""
    device = json.loads((results / DEVICE).read_text())
    if device.get("replayed_from"):
        raise NcuflowError(f"{results} holds a replay, not a GPU run: nothing to capture")
    folder = Path(root) / CAPTURES / name
    if folder.exists():
        shutil.rmtree(folder)
    for experiment, variant in jobs:
        source = results / experiment / variant
        for file in (MEASURE, NCU_CSV):
            if not (source / file).is_file():
                raise NcuflowError(f"{source / file} is missing: run the workflow first")
            (folder / experiment / variant).mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / file, folder / experiment / variant / file)
    shutil.copy2(results / DEVICE, folder / DEVICE)
    meta = {
        "name": name,
        "date": device.get("date"),
        "device": device.get("name"),
        "saved": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": command,
    }
    (folder / INFO).write_text(json.dumps(meta, indent=1) + "\n")
    return folder
