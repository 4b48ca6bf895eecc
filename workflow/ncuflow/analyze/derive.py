"""From the long table of ncu values to one row of registry columns per configuration.

Each column of :data:`ncuflow.metrics.COLUMNS` is computed per kernel, then reduced over
the kernels of a configuration (cuBLAS may launch several): counts add up, percentages
are weighted by kernel duration, launch figures and peaks come from the longest kernel.
"""

from __future__ import annotations

import math

import pandas as pd

from ..metrics import COLUMNS, EXTRA_METRICS

KEYS = ["config_id", "kernel_id", "kernel_name"]


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
        rows.append(row)
    return pd.DataFrame(rows, columns=[*KEYS, *COLUMNS, *EXTRA_METRICS])


def _reduce(group: pd.DataFrame, reduce: str, column: str, weights: pd.Series) -> float:
    values = group[column]
    if reduce == "sum":
        return float(values.sum(min_count=1))
    if reduce == "weighted":
        total = float(weights.sum())
        if values.isna().all() or total <= 0:
            return float(values.mean())
        return float((values.fillna(0.0) * weights).sum() / total)
    return float(values.loc[weights.idxmax()])  # longest


def config_metrics(long: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration with ``ncu_kernels`` and every registry column."""
    names = ["config_id", "ncu_kernels", *COLUMNS, *EXTRA_METRICS]
    if long.empty:
        return pd.DataFrame(columns=names)
    kernels = kernel_table(long)
    rows = []
    for config_id, group in kernels.groupby("config_id", sort=False):
        weights = group["ncu_time_ms"].fillna(0.0)
        row: dict[str, object] = {"config_id": config_id, "ncu_kernels": len(group)}
        for name, column in COLUMNS.items():
            row[name] = _reduce(group, column.reduce, name, weights)
        for metric in EXTRA_METRICS:
            row[metric] = _reduce(group, "weighted", metric, weights)
        rows.append(row)
    return pd.DataFrame(rows, columns=names)
