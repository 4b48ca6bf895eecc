"""From the long table of ncu values to one row of registry columns per configuration.

Each column of :data:`ncuflow.metrics.COLUMNS` is computed per kernel, then reduced over
the kernels of a configuration (cuBLAS may launch several): counts add up, percentages
are weighted by kernel duration, launch figures and peaks come from the longest kernel.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from ..breakdown import ATOMIC_PART, MAX_PCT, MEMORY_UNITS, PCT, SM_PIPES, Part
from ..metrics import COLUMNS, EXTRA_METRICS
from ..profile.long_table import one_report

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
    """One row per profiled kernel, in the order of (config_id, kernel_id, kernel_name): the
    registry's columns and the bound rule's inputs (each configuration's kernels of one
    report: long_table.one_report). A metric's first value that is not NaN counts."""
    long = one_report(long)
    values: dict[tuple, dict[str, float]] = {}
    # plain lists, not a pivot: a table of thousands of kernels is read in a blink
    for *key, metric, value in zip(*(long[c].tolist() for c in [*KEYS, "metric", "value"]),
                                   strict=True):  # fmt: skip
        if value == value:  # NaN is no value
            values.setdefault(tuple(key), {}).setdefault(metric, value)
    rows = []
    for key in sorted(values):
        found = values[key]

        def get(metric: str, found: dict = found) -> float:
            value = found.get(metric)
            return math.nan if value is None else float(value)

        row = dict(zip(KEYS, key, strict=True))
        row.update({name: column.formula(get) for name, column in COLUMNS.items()})
        row.update({metric: get(metric) for metric in EXTRA_METRICS})
        row.update(unit_values(get))
        rows.append(row)
    return pd.DataFrame(rows, columns=[*KEYS, *COLUMNS, *EXTRA_METRICS, *BREAKDOWN_COLUMNS])


def _reduce(values: np.ndarray, reduce: str, weights: np.ndarray, longest: int) -> float | str:
    """One column's values over a configuration's kernels: summed, weighted by ``weights``
    (the kernels' durations), or the ``longest`` kernel's."""
    if reduce == "longest":
        value = values[longest]
        return value if isinstance(value, str) else float(value)
    known = ~np.isnan(values)
    if not known.any():
        return math.nan
    filled = np.where(known, values, 0.0)
    if reduce == "sum":
        return float(filled.sum())
    total = float(weights.sum())
    if total <= 0:  # no duration: the plain mean
        return float(filled.sum() / known.sum())
    return float((filled * weights).sum() / total)


def config_metrics(long: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration with ``ncu_kernels`` and every registry column."""
    names = ["config_id", "ncu_kernels", *COLUMNS, *EXTRA_METRICS, *BREAKDOWN_COLUMNS,
             *LONGEST_COLUMNS]  # fmt: skip
    if long.empty:
        return pd.DataFrame(columns=names)
    kernels = kernel_table(long)
    # each column once as an array (text columns as objects), each configuration's kernels
    # as positions in it: NumPy over a handful of kernels, not pandas over each one
    reduces = {name: column.reduce for name, column in COLUMNS.items()}
    reduces |= {m: "longest" if m.endswith("_by") else "weighted"  # _by: what decided it
                for m in [*EXTRA_METRICS, *BREAKDOWN_COLUMNS]}  # fmt: skip
    arrays = {name: kernels[name].to_numpy(dtype=None if name.endswith("_by") else float)
              for name in reduces}  # fmt: skip
    durations = np.nan_to_num(kernels["ncu_time_ms"].to_numpy(dtype=float), nan=0.0)
    rows = []
    for config_id, at in kernels.groupby("config_id", sort=False).indices.items():
        weights = durations[at]
        first = int(np.argmax(weights))  # the first of the longest kernels
        longest = int(at[first])
        row: dict[str, object] = {"config_id": config_id, "ncu_kernels": len(at)}
        for name, reduce in reduces.items():
            row[name] = _reduce(arrays[name][at], reduce, weights, first)
        memory = [arrays[f"util_{u}_pct"][longest] for u in MEMORY_UNITS]
        memory = [float(v) for v in [*memory, arrays["memory_throughput_pct"][longest]]
                  if not math.isnan(v)]  # fmt: skip
        row["longest_kernel_memory_pct"] = max(memory) if memory else math.nan
        row["longest_kernel_sm_pct"] = float(arrays["sm_throughput_pct"][longest])
        rows.append(row)
    return pd.DataFrame(rows, columns=names)
