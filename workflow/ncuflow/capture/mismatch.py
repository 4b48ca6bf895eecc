"""Where a replay is not what this config would measure: each replayed configuration's
record was fingerprinted with the capture's plan and settings; where the fingerprint
differs from this plan's, every difference is named from the capture's own plan (timing,
seed, scalars, dtype, the device facts a grid follows, kernel sources, ncuflow version),
and for profiled configurations the ncu settings. The table keeps it in the
``capture_mismatch`` column and the run's last lines repeat it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..files import read_json
from ..plan import ConfigRow, Plan, Record
from ..vocab import PLAN, VERSION
from .folder import info
from .records import locate


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
    folder: Path, ncu: dict[str, Any], plan: Plan, measured: dict[str, Record],
    profiled: Iterable[str],
) -> dict[str, str]:  # fmt: skip
    """Why each replayed configuration of ``plan`` may not be what this config would
    measure, by configuration id (``profiled``: those whose ncu settings count too). A
    capture from before plans were kept gets one line that says so."""
    meta = info(folder)
    settings = meta.get("settings") or {}
    ncu_found = _differences("ncu", settings["ncu"], ncu) if "ncu" in settings else []
    # each configuration against the plan of the folder its record came from
    where, _ = locate(folder, plan, [row.config_id for row in plan.configs])
    plans: dict[Path, tuple[Plan | None, dict[str, ConfigRow]]] = {}
    for variant_folder in dict.fromkeys(where.values()):
        plan_file = variant_folder / PLAN
        kept = (Plan.from_json(read_json(plan_file), str(plan_file))
                if plan_file.is_file() else None)  # fmt: skip
        plans[variant_folder] = (kept, {r.config_id: r for r in kept.configs} if kept else {})
    found: dict[str, list[str]] = {c: list(ncu_found) for c in profiled if ncu_found}
    for row in plan.configs:
        cid, record = row.config_id, measured.get(row.config_id)
        if not record or record.fingerprint == plan.fingerprint(row):
            continue
        old, old_rows = plans.get(where.get(cid, folder), (None, {}))
        if old is None:
            why = [f"measured with other settings or kernel sources than this config's "
                   f"(capture {folder.name}, {meta.get('date')}, keeps no plans)"]  # fmt: skip
        else:
            was = old_rows.get(cid)
            why = [*_differences("timing", old.timing.to_json(), plan.timing.to_json()),
                   *_differences("seed", old.seed, plan.seed),
                   *_differences("scalars", old.scalars, plan.scalars),
                   *_differences("dtype", was and was.dtype, row.dtype),
                   *_differences("grid_facts", was and was.grid_facts, row.grid_facts),
                   *_differences("ncuflow", settings.get("ncuflow"), VERSION)]  # fmt: skip
            if old.family_fingerprint != plan.family_fingerprint:
                why.append(f"the kernel sources of family {plan.family} changed since the "
                           "capture")  # fmt: skip
        found.setdefault(cid, []).extend(why or ["measured with other settings than this config's"])
    return {cid: "; ".join(dict.fromkeys(why)) for cid, why in found.items()}
