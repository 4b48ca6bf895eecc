"""Collect: one row per configuration of an experiment, from its plans, timing records and
ncu metrics, written as ``results/<experiment>/table.parquet``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import NcuflowError
from .expand import PENDING, SKIPPED
from .harness import OK, plan_variant
from .spec import load_family

# The columns every table starts with, in this order; the dimensions and tunables of the
# family follow the first five, and per-kernel details follow these.
LEADING = ["experiment", "family", "variant", "config_id", "dtype"]
MEASURED = [
    "status", "error", "rel_error", "time_ms", "time_ms_iqr", "time_cv", "repeats", "flops",
    "gflops", "ncu_time_ms", "flops_counted", "dram_bytes", "ai_dram", "sm_throughput_pct",
    "memory_throughput_pct", "achieved_occupancy_pct", "theoretical_occupancy_pct",
    "registers_per_thread", "shared_mem_per_block", "bound", "bound_reason",
]  # fmt: skip
DETAILS = [
    "baseline", "runs_on", "min_bytes", "block", "grid", "dynamic_smem",
    "registers_per_thread_compiled", "local_bytes_per_thread", "ncu_kernels", "flops_fp32",
    "flops_fp16", "flops_tensor",
    "dram_read_bytes", "dram_write_bytes", "l2_bytes", "l1_bytes", "dram_throughput_pct",
    "sm_clock_hz", "peak_fp32_flops_per_s", "peak_tensor_fp16_flops_per_s",
    "peak_dram_bytes_per_s", "seed",
]  # fmt: skip


def _geometry(value: Sequence[int] | None) -> str | None:
    return "x".join(map(str, value)) if value else None


def variant_rows(plan_path: Path, measure_path: Path, metrics_path: Path) -> list[dict]:
    plan = json.loads(Path(plan_path).read_text())
    _, variant = plan_variant(plan)
    measured = json.loads(Path(measure_path).read_text())
    metrics = pd.read_parquet(metrics_path).set_index("config_id")
    rows = []
    for config in plan["configs"]:
        cid = config["config_id"]
        row = {k: config[k] for k in LEADING}
        row.update(config["dims"])
        row.update(config["params"])
        row.update(
            status=config["status"],
            error=config["error"],
            flops=config["flops"],
            min_bytes=config["min_bytes"],
            baseline=variant.baseline,
            runs_on=variant.runs_on,
            block=_geometry(config.get("block")),
            grid=_geometry(config.get("grid")),
            dynamic_smem=config.get("dynamic_smem"),
        )
        if config["status"] == PENDING:
            if cid not in measured:
                raise NcuflowError(f"{measure_path} has no record of {cid}: measure again")
            record = {
                k: v for k, v in measured[cid].items() if k not in ("times_ms", "fingerprint")
            }
            row.update(record)
            if row["status"] == OK:
                row["gflops"] = row["flops"] / row["time_ms"] / 1e6
                if cid in metrics.index:
                    row.update(metrics.loc[cid].to_dict())
                elif variant.profiled:
                    row["error"] = "ncu recorded no kernel inside this configuration's NVTX range"
        rows.append(row)
    return rows


def collect(experiment: str, jobs: Sequence[tuple[Path, Path, Path]], out: Path) -> pd.DataFrame:
    """jobs: (plan.json, measure.json, metrics.parquet) of each variant, in config order."""
    rows = [row for job in jobs for row in variant_rows(*job)]
    table = pd.DataFrame(rows)
    if table.empty:
        raise NcuflowError(f"experiment {experiment} has no configurations")
    family = load_family(
        Path(json.loads(Path(jobs[0][0]).read_text())["kernels_dir"]), table["family"].iloc[0]
    )
    dims = list(family.dims)
    params = list(dict.fromkeys(p for v in table["variant"].unique()
                                for p in family.variants[v].params))  # fmt: skip
    for column in MEASURED + DETAILS:
        if column not in table:
            table[column] = np.nan
    for column in params:
        table[column] = table[column].astype("Int64")
    for column in ("repeats", "registers_per_thread", "ncu_kernels", "dynamic_smem"):
        table[column] = table[column].astype("Float64").astype("Int64")
    table["status"] = table["status"].fillna(SKIPPED)
    table["error"] = table["error"].fillna("")
    ordered = LEADING + dims + params + MEASURED + DETAILS
    table = table[ordered + [c for c in table.columns if c not in ordered]]
    table.to_parquet(out, index=False)
    table.to_csv(out.with_suffix(".csv"), index=False)
    return table
