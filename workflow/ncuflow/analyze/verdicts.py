"""Checks of a whole table's verdicts: how often the bound agrees with Nsight Compute's
own verdict, and which rows run above a measured ceiling (tests, benchmarks/verdicts.py).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

# (level, the row's achieved rate in byte/s or FLOP/s, as a function of the row)
RATES = (
    ("dram", lambda r: r["dram_gbps"] * 1e9),
    ("l2", lambda r: r["l2_bytes"] / (r["ncu_time_ms"] / 1e3)),
    ("l1", lambda r: r["l1_bytes"] / (r["ncu_time_ms"] / 1e3)),
)


def agreement(table: pd.DataFrame) -> tuple[float, pd.DataFrame]:
    """(share of the rows with ncu's verdict whose bound agrees with it, those that do not)."""
    judged = table[table["ncu_bottleneck"].notna() & table["bound_agrees"].notna()]
    if judged.empty:
        return math.nan, judged
    agrees = judged["bound_agrees"].astype(bool)
    return float(agrees.mean()), judged[~agrees]


def above_ceilings(table: pd.DataFrame, ceilings: dict[str, Any]) -> pd.DataFrame:
    """Rows whose achieved rate at a level (or on their roof) exceeds that level's measured
    ceiling by more than the ceiling's spread: (variant, config_id, level, rate, ceiling)."""
    found = []
    profiled = table[table["ncu_time_ms"].notna()]
    for row in profiled.to_dict("records"):
        checks = [(level, rate(row)) for level, rate in RATES]
        roof = row.get("roof")
        if isinstance(roof, str) and roof:
            checks.append((roof, row["achieved_flops_per_s"]))
        for level, rate in checks:
            entry = ceilings.get(level)
            if not entry or not math.isfinite(rate):
                continue
            limit = entry["value"] * (1 + entry.get("spread_pct", 0.0) / 100)
            if rate > limit:
                found.append({"variant": row["variant"], "config_id": row["config_id"],
                              "level": level, "rate": rate, "ceiling": entry["value"]})  # fmt: skip
    return pd.DataFrame(found, columns=["variant", "config_id", "level", "rate", "ceiling"])
