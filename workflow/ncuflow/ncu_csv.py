"""Parsing ncu's raw CSV (``--page raw --print-units base``) into tables.

The file has a header row of metric names, a row of units, then one row per profiled
kernel. Numbers carry thousands separators and are quoted; "n/a" and "no data" mean no
value; some cells are text ("(256, 1, 1)", "PolicySpread"). Each kernel row is mapped to
its configuration through the NVTX range the harness opened around the launch.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pandas as pd

from .analysis import classify
from .errors import NcuflowError
from .harness import NVTX_PREFIX

# Columns that describe the launch rather than measure it.
ID_COLUMNS = {
    "ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
    "Block Size", "Grid Size", "Device", "CC",
}  # fmt: skip
_MISSING = {"", "n/a", "N/A", "no data"}
_RANGE = re.compile(re.escape(NVTX_PREFIX) + r'([^:"\s/]+)')
LONG_COLUMNS = ["config_id", "kernel_id", "kernel_name", "metric", "unit", "value"]


def parse_number(cell: str) -> float | None:
    """'1,310,944' → 1310944.0; text, 'n/a' and 'no data' → None."""
    cell = cell.strip()
    if cell in _MISSING:
        return None
    try:
        return float(cell.replace(",", ""))
    except ValueError:
        return None


def config_of(row: dict[str, str]) -> str | None:
    """The configuration whose NVTX range enclosed this kernel: read from the NVTX columns,
    or from the kernel name when the report was exported with --print-nvtx-rename kernel."""
    for column, cell in row.items():
        if "Range" in column or column == "Kernel Name":
            match = _RANGE.search(cell)
            if match:
                return match.group(1)
    return None


def read_rows(path: Path) -> tuple[list[str], list[str], list[dict[str, str]]]:
    """(header, units, rows as dicts); an empty file has no rows."""
    with open(path, newline="") as handle:
        lines = list(csv.reader(handle))
    if not lines:
        return [], [], []
    if len(lines) < 2 or "ID" not in lines[0]:
        raise NcuflowError(f"{path}: not an ncu raw CSV (expected a header and a units row)")
    header, units = lines[0], lines[1]
    return header, units, [dict(zip(header, line, strict=False)) for line in lines[2:]]


def read_long(path: Path) -> pd.DataFrame:
    """Every numeric metric of every kernel: config_id, kernel_id, kernel_name, metric, unit,
    value (base units)."""
    header, units, rows = read_rows(path)
    unit_of = dict(zip(header, units, strict=False))
    records = []
    for row in rows:
        config = config_of(row)
        if config is None:
            continue  # a kernel outside every ncuflow range (never collected with --nvtx-include)
        kernel_id, kernel_name = int(row["ID"]), row.get("Kernel Name", "")
        for metric, cell in row.items():
            if metric in ID_COLUMNS or "Range" in metric:
                continue
            value = parse_number(cell)
            if value is not None:
                records.append((config, kernel_id, kernel_name, metric, unit_of[metric], value))
    return pd.DataFrame.from_records(records, columns=LONG_COLUMNS)


def _sum(wide: pd.DataFrame, *names: str, scale: float = 1.0) -> pd.Series:
    present = [n for n in names if n in wide]
    if not present:
        return pd.Series(0.0, index=wide.index)
    return wide[present].fillna(0.0).sum(axis=1) * scale


def _col(wide: pd.DataFrame, name: str) -> pd.Series:
    return wide[name] if name in wide else pd.Series(np.nan, index=wide.index)


TENSOR_FLOP_METRICS = (
    "sm__ops_path_tensor_src_fp16.sum",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
)
# Duration-weighted over a configuration's kernels (cuBLAS may launch more than one).
_WEIGHTED = {
    "sm_throughput_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "memory_throughput_pct": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_throughput_pct": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
}
# Taken from the configuration's longest kernel.
_LONGEST = {
    "theoretical_occupancy_pct": "sm__maximum_warps_per_active_cycle_pct",
    "registers_per_thread": "launch__registers_per_thread",
    "sm_clock_hz": "sm__cycles_elapsed.avg.per_second",
}


def kernel_table(long: pd.DataFrame) -> pd.DataFrame:
    """One row per profiled kernel with the quantities ncuflow derives."""
    wide = long.pivot_table(
        index=["config_id", "kernel_id", "kernel_name"], columns="metric", values="value"
    ).reset_index()
    out = wide[["config_id", "kernel_id", "kernel_name"]].copy()
    out["ncu_time_ms"] = _col(wide, "gpu__time_duration.sum") / 1e6
    out["flops_fp32"] = _sum(
        wide,
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    ) + _sum(wide, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", scale=2.0)
    out["flops_fp16"] = _sum(
        wide,
        "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
    ) + _sum(wide, "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum", scale=2.0)
    out["flops_tensor"] = _sum(wide, *TENSOR_FLOP_METRICS)
    out["flops_counted"] = out["flops_fp32"] + out["flops_fp16"] + out["flops_tensor"]
    out["dram_bytes"] = _col(wide, "dram__bytes.sum")
    out["dram_read_bytes"] = _col(wide, "dram__bytes_read.sum")
    out["dram_write_bytes"] = _col(wide, "dram__bytes_write.sum")
    out["l2_bytes"] = _col(wide, "lts__t_bytes.sum")
    out["l1_bytes"] = _col(wide, "l1tex__t_bytes.sum")
    for name, metric in {**_WEIGHTED, **_LONGEST}.items():
        out[name] = _col(wide, metric)
    # bytes the kernel asked for (static + dynamic), without the 1 KiB the driver reserves
    out["shared_mem_per_block"] = _sum(
        wide, "launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic"
    )
    # Ceilings of this device at the clocks the kernel ran at (the roofline section's peaks).
    out["peak_fp32_flops_per_s"] = (
        2 * _col(wide, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained")
        * _col(wide, "sm__cycles_elapsed.avg.per_second")
    )  # fmt: skip
    out["peak_dram_bytes_per_s"] = _col(wide, "dram__bytes.sum.peak_sustained") * _col(
        wide, "dram__cycles_elapsed.avg.per_second"
    )
    # the tensor counters count FLOPs (2 per multiply-add), so their peak is in FLOP/cycle
    out["flops_tensor_fp16"] = _col(wide, TENSOR_FLOP_METRICS[0])
    out["peak_tensor_fp16_flops_per_s"] = _col(
        wide, f"{TENSOR_FLOP_METRICS[0]}.peak_sustained"
    ) * _col(wide, "sm__cycles_elapsed.avg.per_second")
    return out


def config_metrics(long: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration: counts summed over its kernels, percentages weighted by
    duration, launch figures of its longest kernel; then the DRAM intensity and the bound."""
    columns = [
        "config_id", "ncu_kernels", "ncu_time_ms", "flops_counted", "flops_fp32", "flops_fp16",
        "flops_tensor", "dram_bytes", "dram_read_bytes", "dram_write_bytes", "l2_bytes",
        "l1_bytes", *_WEIGHTED, *_LONGEST, "shared_mem_per_block", "peak_fp32_flops_per_s",
        "peak_tensor_fp16_flops_per_s", "peak_dram_bytes_per_s", "ai_dram", "bound",
        "bound_reason",
    ]  # fmt: skip
    if long.empty:
        return pd.DataFrame(columns=columns)
    kernels = kernel_table(long)
    summed = ["ncu_time_ms", "flops_counted", "flops_fp32", "flops_fp16", "flops_tensor"]
    summed += ["dram_bytes", "dram_read_bytes", "dram_write_bytes", "l2_bytes", "l1_bytes"]
    rows = []
    for config_id, group in kernels.groupby("config_id", sort=False):
        weights = group["ncu_time_ms"].fillna(0.0)
        total = float(weights.sum()) or 1.0
        longest = group.loc[weights.idxmax()]
        row = {"config_id": config_id, "ncu_kernels": len(group)}
        row.update({c: float(group[c].sum(min_count=1)) for c in summed})
        row.update({c: float((group[c] * weights).sum(min_count=1) / total) for c in _WEIGHTED})
        row.update({c: float(longest[c]) for c in (*_LONGEST, "shared_mem_per_block")})
        for peak in ("peak_fp32_flops_per_s", "peak_tensor_fp16_flops_per_s",
                     "peak_dram_bytes_per_s"):  # fmt: skip
            row[peak] = float(longest[peak])
        dram = row["dram_bytes"]
        row["ai_dram"] = row["flops_counted"] / dram if dram and dram > 0 else float("nan")
        # the compute roof is the one of the pipeline that did most of the FLOPs
        on_tensor = group["flops_tensor_fp16"].sum() > 0.5 * row["flops_counted"]
        roof = row["peak_tensor_fp16_flops_per_s" if on_tensor else "peak_fp32_flops_per_s"]
        row["bound"], row["bound_reason"] = classify(
            row["ai_dram"],
            roof / row["peak_dram_bytes_per_s"],
            row["memory_throughput_pct"],
            row["sm_throughput_pct"],
        )
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)
