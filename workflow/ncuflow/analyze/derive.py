"""From the long table of ncu values to one row of registry columns per configuration.

Each column of :data:`ncuflow.metrics.COLUMNS` is computed per kernel, then reduced over
the kernels of a configuration (cuBLAS may launch several): counts add up, percentages
are weighted by kernel duration, launch figures and peaks come from the longest kernel.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd

from ..breakdown import ATOMIC_PART, MAX_PCT, MEMORY_UNITS, PCT, SM_PIPES, Part
from ..metrics import COLUMNS, EXTRA_METRICS

KEYS = ["config_id", "kernel_id", "kernel_name"]
# Each unit of the Speed of Light breakdown: its utilization (the largest of its parts, %
# of its peak) and the part that decided (util_<unit>_by); the SM's pipes as pipe_<name>.
UNITS: dict[str, tuple[Part, ...]] = {
    **{f"util_{name}": parts for name, parts in MEMORY_UNITS.items()},
    **{f"pipe_{name}": parts for name, parts in SM_PIPES.items()},
}
UNIT_COLUMNS = [c for unit in UNITS for c in (f"{unit}_pct", f"{unit}_by")]
# The busiest L2 slice's atomic units (the breakdown's parts are averages over slices).
ATOMIC_SLICE = "l2_atomic_busiest_slice_pct"
BREAKDOWN_COLUMNS = [*UNIT_COLUMNS, ATOMIC_SLICE]
# The longest kernel's own busiest memory unit and SM throughput (%): what ncu's verdict on
# a configuration of several kernels, which is that kernel's, is to be compared with.
LONGEST_COLUMNS = ["longest_kernel_memory_pct", "longest_kernel_sm_pct"]


def unit_values(get: Callable[[str], float]) -> dict[str, float | str]:
    """One kernel's utilization per unit and the part that decided each."""
    out: dict[str, float | str] = {}
    for unit, parts in UNITS.items():
        values = {p.metric: get(p.metric + PCT) for p in parts}
        values = {m: v for m, v in values.items() if not math.isnan(v)}
        top = max(values, key=values.__getitem__) if values else ""
        out[f"{unit}_pct"] = values[top] if top else math.nan
        out[f"{unit}_by"] = top
    out[ATOMIC_SLICE] = get(ATOMIC_PART + MAX_PCT)
    return out


def kernel_table(long: pd.DataFrame) -> pd.DataFrame:
    """One row per profiled kernel: the registry's columns and the bound rule's inputs."""
    wide = long.pivot_table(index=KEYS, columns="metric", values="value", aggfunc="first")
    rows = []
    for key, values in zip(wide.index, wide.to_dict("records"), strict=True):

        def get(metric: str, values: dict = values) -> float:
            value = values.get(metric, math.nan)
            return math.nan if value is None else float(value)

        row = dict(zip(KEYS, key, strict=True))
        row.update({name: column.formula(get) for name, column in COLUMNS.items()})
        row.update({metric: get(metric) for metric in EXTRA_METRICS})
        row.update(unit_values(get))
        rows.append(row)
    return pd.DataFrame(rows, columns=[*KEYS, *COLUMNS, *EXTRA_METRICS, *BREAKDOWN_COLUMNS])


def _reduce(group: pd.DataFrame, reduce: str, column: str, weights: pd.Series) -> float | str:
    values = group[column]
    if reduce == "sum":
        return float(values.sum(min_count=1))
    if reduce == "weighted":
        total = float(weights.sum())
        if values.isna().all() or total <= 0:
            return float(values.mean())
        return float((values.fillna(0.0) * weights).sum() / total)
    longest = values.loc[weights.idxmax()]
    return longest if isinstance(longest, str) else float(longest)


def config_metrics(long: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration with ``ncu_kernels`` and every registry column."""
    names = ["config_id", "ncu_kernels", *COLUMNS, *EXTRA_METRICS, *BREAKDOWN_COLUMNS,
             *LONGEST_COLUMNS]  # fmt: skip
    if long.empty:
        return pd.DataFrame(columns=names)
    kernels = kernel_table(long)
    rows = []
    for config_id, group in kernels.groupby("config_id", sort=False):
        weights = group["ncu_time_ms"].fillna(0.0)
        row: dict[str, object] = {"config_id": config_id, "ncu_kernels": len(group)}
        for name, column in COLUMNS.items():
            row[name] = _reduce(group, column.reduce, name, weights)
        for metric in [*EXTRA_METRICS, *BREAKDOWN_COLUMNS]:
            by_longest = metric.endswith("_by")  # the part that decided the longest kernel
            row[metric] = _reduce(group, "longest" if by_longest else "weighted", metric, weights)
        longest = group.loc[weights.idxmax()]
        memory = [longest[f"util_{u}_pct"] for u in MEMORY_UNITS]
        memory = [float(v) for v in [*memory, longest["memory_throughput_pct"]] if pd.notna(v)]
        row["longest_kernel_memory_pct"] = max(memory) if memory else math.nan
        row["longest_kernel_sm_pct"] = float(longest["sm_throughput_pct"])
        rows.append(row)
    return pd.DataFrame(rows, columns=names)
