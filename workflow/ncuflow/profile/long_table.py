"""Reading an Nsight Compute report (``.ncu-rep``) at full precision.

NVIDIA's ``ncu_report`` module (PyPI ``ncu-report``) reads reports without a GPU and
gives typed values; ncu's CSV export rounds percentages to two decimals, so ncuflow keeps
the CSV for people and derives every number from the report. Each kernel maps to its
configuration through the NVTX push/pop range the profile worker opened around it.

Each report numbers its kernels from 1, so a kernel is named by its report's tier, its
configuration and its number: the profile stage's long tables carry the tier of each
row's report (``tier``). Tables written before that column (the captures committed
before it) lack it and are read as before: there each configuration has one report.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import NcuflowError
from ..vocab import EXPLAIN, SOURCE, SWEEP, config_of_range

# A report's values (read_report), and a profile's long table: those and its report's tier.
REPORT_COLUMNS = ["config_id", "kernel_id", "kernel_name", "metric", "unit", "value"]
LONG_COLUMNS = [*REPORT_COLUMNS, "tier"]
DEEPEST_FIRST = (SOURCE, EXPLAIN, SWEEP)  # the tiers, each with more sections than the next


def ncu_report():  # the module, imported where it is needed
    try:
        import ncu_report
    except ImportError:
        raise NcuflowError(
            "the ncu_report module is missing: pip install ncu-report (it reads .ncu-rep "
            "files, with or without a GPU)"
        ) from None
    return ncu_report


def config_of(action: object) -> str | None:
    """The configuration whose NVTX range a kernel ran in (None outside every one)."""
    state = action.nvtx_state()  # type: ignore[attr-defined]
    for domain in state.domains():
        for name in state.domain_by_id(domain).push_pop_ranges():
            config = config_of_range(name)
            if config is not None:
                return config
    return None


def kernel_actions(path: Path) -> Iterator[tuple[str | None, int, Any]]:
    """(config_id, kernel_id, action) of every kernel of a report, config_id None for one
    outside every ncuflow range; kernel ids count from 1. Nothing for a missing or empty
    report."""
    if not Path(path).is_file() or Path(path).stat().st_size == 0:
        return
    context = ncu_report().load_report(str(path))
    kernel_id = 0
    for r in range(context.num_ranges()):
        result_range = context.range_by_idx(r)
        for a in range(result_range.num_actions()):
            action = result_range.action_by_idx(a)
            kernel_id += 1
            yield config_of(action), kernel_id, action


def read_report(path: Path) -> pd.DataFrame:
    """Every numeric metric of every kernel in the report, one row each (base units as ncu
    stores them: bytes, ns, Hz, %, counts), mapped to its configuration."""
    nr = ncu_report()
    numeric = {nr.IMetric.ValueKind_FLOAT, nr.IMetric.ValueKind_DOUBLE,
               nr.IMetric.ValueKind_UINT32, nr.IMetric.ValueKind_UINT64}  # fmt: skip
    records, kernels = [], 0
    for config, kernel_id, action in kernel_actions(path):
        kernels += 1
        if config is None:
            continue  # a kernel outside every ncuflow range
        name = action.name()
        for metric in action.metric_names():
            value = action[metric]
            if value.kind() in numeric:
                records.append((config, kernel_id, name, metric, value.unit(),
                                float(value.value())))  # fmt: skip
    if kernels and not records:
        raise NcuflowError(f"{path}: no kernel inside an ncuflow NVTX range")
    return pd.DataFrame.from_records(records, columns=REPORT_COLUMNS)


def one_report(long: pd.DataFrame) -> pd.DataFrame:
    """Each configuration's rows from one report, that of the deepest tier holding it (the
    profile stage profiles a configuration once, yet two reports' kernel numbers would mix).
    Rows whose tier is not named (a table from before the tier column) are kept as they
    are."""
    if "tier" not in long or long.empty:
        return long
    depth = long["tier"].map({tier: i for i, tier in enumerate(DEEPEST_FIRST)})
    deepest = depth.groupby(long["config_id"]).transform("min")
    return long[depth.isna() | (depth == deepest)]


def write_long(long: pd.DataFrame, path: Path) -> None:
    """The long table as Parquet: float64 values, exactly as read. Rows sorted by metric
    compress best (a metric's values repeat across kernels): a third of the size."""
    ordered = long.sort_values(["metric", "config_id", "kernel_id"], kind="stable")
    ordered.to_parquet(path, index=False, compression="zstd")
