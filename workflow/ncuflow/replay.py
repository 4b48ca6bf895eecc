"""Replay: what a GPU run measured, taken from a committed capture instead of the GPU.

A capture (``resources/captures/<name>/``) holds, per experiment and variant, the timing
records (``measure.json``) and every numeric ncu metric at full precision as read from
the report (``ncu_long.parquet``), plus ``device.json`` (with the measured ceilings) and
``capture.json`` (when, where, with which command). Replay copies exactly those records
for the configurations the config asks for; deriving, collecting and plotting then run
for real. A configuration the capture lacks is an error, never invented.

A capture also keeps each variant's plan (``plan.json``) and the ncu settings of its run
(``capture.json``), so a replay can say where this config would measure otherwise:
``capture_mismatches`` gives, per configuration, every difference in timing, seed, scalars,
dtype, kernel sources, ncuflow version and ncu settings; the table keeps it in the
``capture_mismatch`` column and the run's last lines repeat it.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from . import __version__
from .errors import NcuflowError
from .ncu_rep import LONG_COLUMNS, write_long
from .records import atomic_write, fingerprint
from .vocab import PENDING, PROFILE_ERRORS, plan_variant, profiled_ids

CAPTURES = Path("resources") / "captures"
MEASURE, NCU_LONG, DEVICE, INFO = "measure.json", "ncu_long.parquet", "device.json", "capture.json"
PLAN = "plan.json"
TABLE = "table.parquet"  # the GPU run's own table: what a replay must reproduce


def capture_dir(root: Path, name: str) -> Path:
    """The capture ``name`` of the workflow at ``root``, checked."""
    return checked_capture(Path(root) / CAPTURES / name)


def checked_capture(folder: Path) -> Path:
    """``folder`` if it holds a capture, else an error that lists the captures beside it."""
    if not (folder / INFO).is_file():
        found = sorted(p.parent.name for p in folder.parent.glob(f"*/{INFO}"))
        raise NcuflowError(
            f"replay needs capture {folder.name!r}, but {folder} holds no {INFO}; captures here: "
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
    """Copy the capture's exact ncu values of the configurations that measured ok (a
    capture holds only profiles ncu took: no configuration has a profile error)."""
    atomic_write(out.with_name(PROFILE_ERRORS), "{}")
    ok = set(profiled_ids(plan_variant(plan)[1], json.loads(measure.read_text())))
    source = folder / plan["experiment"] / plan["variant"] / NCU_LONG
    if not ok:
        write_long(pd.DataFrame(columns=LONG_COLUMNS), out)
        return
    long = pd.read_parquet(source) if source.is_file() else pd.DataFrame(columns=LONG_COLUMNS)
    kept = long[long["config_id"].isin(ok)]
    missing = sorted(ok - set(kept["config_id"]))
    if missing:
        _missing_error(folder, plan, missing, "ncu profile")
    log(f"replaying {len(kept)} ncu values of {len(ok)} configurations from {source}")
    write_long(kept, out)


def replay_device(folder: Path, out: Path) -> None:
    facts = json.loads((folder / DEVICE).read_text())
    facts["replayed_from"] = folder.name
    out.write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")


def replay_ceilings(folder: Path, out: Path) -> None:
    """The ceilings measured on the capture's device (an empty set for an older capture)."""
    facts = json.loads((folder / DEVICE).read_text())
    out.write_text(json.dumps(facts.get("ceilings", {}), indent=1, sort_keys=True) + "\n")


def ncu_settings(sections: Iterable[str], clock_control: str, metrics: Iterable[str]) -> dict:
    """The ncu settings that decide what a profile holds, as a capture records them."""
    return {"sections": list(sections), "clock_control": clock_control,
            "extra_metrics": list(metrics)}  # fmt: skip


def save_capture(
    results: Path, root: Path, name: str, jobs: Iterable[tuple[str, str, Sequence[str]]],
    command: str, ncu: dict[str, Any],
) -> Path:  # fmt: skip
    """Copy a GPU run's records and plans into resources/captures/<name>/ (replacing what
    was there), with the run's ncu settings; ``jobs``: (experiment, variant, its parts),
    whose files a capture keeps as one per variant."""
    device = json.loads((results / DEVICE).read_text())
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
            plans.append(json.loads((source / PLAN).read_text()))
            measured.update(json.loads((source / MEASURE).read_text()))
            longs.append(pd.read_parquet(source / NCU_LONG))
        plan = {**plans[0], "configs": [row for p in plans for row in p["configs"]]}
        (target / PLAN).write_text(json.dumps(plan, indent=1, sort_keys=True))
        (target / MEASURE).write_text(json.dumps(measured, indent=1))
        write_long(pd.concat(longs, ignore_index=True), target / NCU_LONG)
        if (results / experiment / TABLE).is_file():
            shutil.copy2(results / experiment / TABLE, folder / experiment / TABLE)
    shutil.copy2(results / DEVICE, folder / DEVICE)
    meta = {
        "name": name,
        "date": device.get("date"),
        "device": device.get("name"),
        "saved": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": command,
        "settings": {"ncuflow": __version__, "ncu": ncu},
    }
    (folder / INFO).write_text(json.dumps(meta, indent=1) + "\n")
    return folder


def _differences(prefix: str, captured: Any, here: Any) -> list[str]:
    """``prefix: <captured> in the capture, <here> here``, per differing key of two dicts."""
    if isinstance(captured, dict) and isinstance(here, dict):
        keys = sorted(set(captured) | set(here), key=str)
        return [d for k in keys
                for d in _differences(f"{prefix}.{k}", captured.get(k), here.get(k))]  # fmt: skip
    if captured == here:
        return []
    return [f"{prefix} {json.dumps(captured)} in the capture, {json.dumps(here)} here"]


def capture_mismatches(
    folder: Path, ncu: dict[str, Any], plan: dict[str, Any], measured: dict[str, Any],
    profiled: Iterable[str],
) -> dict[str, str]:  # fmt: skip
    """Why each replayed configuration of ``plan`` may not be what this config would
    measure, by configuration id: its record's fingerprint (timing, seed, scalars, dtype,
    the device facts a grid follows, kernel sources, ncuflow version) against this plan's,
    each difference named from the capture's own plan and settings; and, for the
    ``profiled`` ones, the ncu settings. A capture from before plans were kept gets one line
    that says so."""
    meta = info(folder)
    settings = meta.get("settings") or {}
    ncu_found = _differences("ncu", settings["ncu"], ncu) if "ncu" in settings else []
    plan_file = folder / plan["experiment"] / plan["variant"] / PLAN
    old = json.loads(plan_file.read_text()) if plan_file.is_file() else None
    old_rows = {r["config_id"]: r for r in old["configs"]} if old else {}
    found: dict[str, list[str]] = {c: list(ncu_found) for c in profiled if ncu_found}
    for row in plan["configs"]:
        cid, record = row["config_id"], measured.get(row["config_id"])
        if not record or record.get("fingerprint") == fingerprint(plan, row):
            continue
        if old is None:
            why = [f"measured with other settings or kernel sources than this config's "
                   f"(capture {folder.name}, {meta.get('date')}, keeps no plans)"]  # fmt: skip
        else:
            why = [*_differences("timing", old["timing"], plan["timing"]),
                   *_differences("seed", old["seed"], plan["seed"]),
                   *_differences("scalars", old.get("scalars"), plan.get("scalars")),
                   *_differences("dtype", old_rows.get(cid, {}).get("dtype"), row.get("dtype")),
                   *_differences("grid_facts", old_rows.get(cid, {}).get("grid_facts"),
                                 row.get("grid_facts")),
                   *_differences("ncuflow", settings.get("ncuflow"), __version__)]  # fmt: skip
            if old["family_fingerprint"] != plan["family_fingerprint"]:
                why.append(f"the kernel sources of family {plan['family']} changed since the "
                           "capture")  # fmt: skip
        found.setdefault(cid, []).extend(why or ["measured with other settings than this config's"])
    return {cid: "; ".join(dict.fromkeys(why)) for cid, why in found.items()}
