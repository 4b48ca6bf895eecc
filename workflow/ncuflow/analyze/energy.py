"""A row's energy columns (the energy tier's records, measure.energy) and its power verdict:
whether the GPU held its clocks under its power or thermal limit while the configuration
was timed or run for its energy."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..vocab import POWER, THERMAL, TIMED

# The columns a row with an energy has beside its record's (GFLOP/J is GFLOP/s per watt).
ENERGY_COLUMNS = ["energy_j", "avg_power_w", "gflops_per_w", "gb_per_j", "energy_launch_ms",
                  "sm_clock_mhz_energy", "power_limit_w", "energy_throttled",
                  "power_limited"]  # fmt: skip


def power_limited(row: Mapping[str, Any]) -> str:
    """POWER where NVML reported power capping (the software power cap, the hardware power
    brake, time in violation of the power policy) while the row was timed or run for its
    energy, THERMAL where it reported only thermal slowdowns, '' where neither."""
    said = " ".join(str(row.get(k) or "") for k in ("throttle", "energy_throttle"))
    if "power" in said:
        return POWER
    return THERMAL if "thermal" in said else ""


def _positive(value: Any) -> float:
    number = float(value) if value is not None else math.nan
    return number if number > 0 else math.nan


def energy_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    """GFLOP per joule (its counted FLOPs; NaN for a family that counts none) and GB per
    joule (the least bytes it must move) of a row with an energy, its power verdict, and
    the sentence bound_reason starts with where it has one."""
    joules = _positive(row.get("energy_j"))
    out: dict[str, Any] = {
        "gflops_per_w": _positive(row.get("flops")) / joules / 1e9,
        "gb_per_j": _positive(row.get("min_bytes")) / joules / 1e9,
        "power_limited": power_limited(row),
    }
    if out["power_limited"]:
        when = [f"{what} ({row[key]})" for key, what in
                (("throttle", "while timed"), ("energy_throttle", "while run back to back for "
                                                "its energy")) if row.get(key)]  # fmt: skip
        out["bound_reason"] = (f"{out['power_limited']}-bound: NVML reported the GPU held "
                               f"under its {out['power_limited']} limit "
                               f"{' and '.join(when)}. {row.get('bound_reason') or ''}"
                               ).strip()  # fmt: skip
    return out


def add_energy_columns(table: pd.DataFrame) -> None:
    """Each timed row's energy columns and power verdict, in place (once every other
    column, bound_reason among them, is final: the verdict opens it)."""
    timed = table.index[table["status"].isin(TIMED)]
    if timed.empty:
        return
    found = pd.DataFrame([energy_columns(r) for r in table.loc[timed].to_dict("records")],
                         index=timed)  # fmt: skip
    for column in found:
        values = found[column].dropna()
        if values.empty:
            continue
        textual = any(isinstance(v, str) for v in values)  # into a column of NaN so far
        merged = table[column].astype(object) if textual else table[column].copy()
        merged.loc[values.index] = values
        table[column] = merged
