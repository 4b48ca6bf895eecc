"""Collect: one row per configuration of an experiment, from its plans, timing records and
ncu metrics, written as ``results/<experiment>/table.parquet``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..capture.mismatch import capture_mismatches
from ..errors import NcuflowError
from ..expr import ExprError
from ..files import read_json
from ..metrics import COLUMNS
from ..plan import LaunchGeometry, Plan, profile_choice, read_records
from ..profile.explain import FINDING_COLUMNS, LINE_COLUMNS
from ..profile.long_table import LONG_COLUMNS
from ..spec import Family, Variant, load_variant
from ..vocab import (
    EXPLAIN_LONG,
    FINDINGS,
    NCU_LONG,
    OK,
    PROFILE_ERROR,
    PROFILE_ERRORS,
    SKIPPED,
    SOURCE_LINES,
    STATUSES,
    TIMED,
)
from .bound import classify, derived_columns
from .energy import ENERGY_COLUMNS, add_energy_columns
from .why import DURATION, WHY_COLUMNS, why_columns

# A replay's capture folder and this config's ncu settings (NcuSettings.recorded()).
Replay = tuple[Path, dict[str, Any]]
# The columns every table starts with, in this order; the dimensions and tunables of the
# family follow the first five, and per-kernel details follow these.
LEADING = ["experiment", "family", "variant", "config_id", "dtype"]
# What a row takes from its configuration's plan besides those: its status and its counts.
PLANNED = ["status", "error", "flops", "min_bytes", "output_bytes", "model_dram_bytes",
           "executed_flops", "out_dtype"]  # fmt: skip
MEASURED = [
    "status", "error", "rel_error", "max_abs_error", "time_ms", "time_ms_iqr", "time_cv",
    "time_ci95_pct", "time_unstable", "time_note", "repeats", "flops", "gflops", "min_bytes",
    "gbps",
    "ncu_time_ms", "flops_counted", "roof", "roof_flops_per_s", "roof_measured_flops_per_s",
    "achieved_flops_per_s", "dram_bytes", "model_dram_bytes", "l2_bytes", "l1_bytes",
    "ai_model", "ai_dram", "ai_l2", "ai_l1", "dram_gbps", "sm_throughput_pct",
    "memory_throughput_pct", "achieved_occupancy_pct", "theoretical_occupancy_pct",
    "registers_per_thread",
    "shared_mem_per_block", "bound", "bound_level", "bound_reason", "bound_agrees",
    "bound_memory_pct", "bound_compute_pct",
    *WHY_COLUMNS, "flops_check", *ENERGY_COLUMNS,
]  # fmt: skip
DETAILS = [
    "out_dtype", "baseline", "runs_on", "profiled", "merit", "speedup", "output_bytes",
    "executed_flops", "block", "grid", "dynamic_smem", "registers_per_thread_compiled",
    "local_bytes_per_thread", "ncu_kernels", "device", "capture_mismatch",
    "flops_undeclared", "dram_bytes_counted", "dram_write_deferred_bytes",
    *(c for c in COLUMNS if c not in {"ncu_time_ms", "dram_bytes", "l2_bytes", "l1_bytes",
                                      "sm_throughput_pct", "memory_throughput_pct",
                                      "achieved_occupancy_pct", "theoretical_occupancy_pct",
                                      "registers_per_thread", "shared_mem_per_block"}),
    "seed",
]  # fmt: skip


def _geometry(launches: Sequence[LaunchGeometry], key: str) -> str | None:
    """'16x16x1', or each kernel's joined by ' + ' for a sequence of launches."""
    shown = ["x".join(map(str, getattr(g, key))) for g in launches if getattr(g, key)]
    return " + ".join(shown) or None


def _beside(
    metrics_path: Path, name: str, columns: list[str], filters: list | None = None
) -> pd.DataFrame:
    """A file the profile stage wrote beside metrics.parquet (empty where a run predates it),
    only its rows that pass ``filters`` (pyarrow's)."""
    path = Path(metrics_path).with_name(name)
    if not path.is_file():
        return pd.DataFrame(columns=columns)
    return pd.read_parquet(path, filters=filters)


def _not_profiled(variant: Variant) -> str:
    if variant.runs_on == "cpu":
        return "not profiled: runs on the host (timed with the host clock)"
    return "not profiled: the variant declares profiled: false (timed with CUDA events only)"


def variant_rows(
    plan_path: Path, measure_path: Path, metrics_path: Path, ceilings: dict[str, Any],
    replay: Replay | None = None,
) -> list[dict]:  # fmt: skip
    """One row per configuration of a variant; ``ceilings`` are the device's measured ones;
    ``replay``: the capture the records came from and this config's ncu settings, whose
    differences from the capture's go into ``capture_mismatch``."""
    plan = Plan.load(Path(plan_path))
    family, variant = load_variant(Path(plan.kernels_dir), plan.family, plan.variant)
    measured = read_records(Path(measure_path))
    metrics = pd.read_parquet(metrics_path).set_index("config_id")
    errors_path = Path(metrics_path).with_name(PROFILE_ERRORS)
    profile_errors = read_json(errors_path) if errors_path.is_file() else {}
    mismatches = capture_mismatches(*replay, plan, measured, metrics.index) if replay else {}
    why = why_columns(_beside(metrics_path, FINDINGS, FINDING_COLUMNS),
                      _beside(metrics_path, EXPLAIN_LONG, LONG_COLUMNS),
                      _beside(metrics_path, NCU_LONG, LONG_COLUMNS,
                              [("metric", "==", DURATION)]))  # fmt: skip
    rows = []
    for config in plan.configs:
        cid = config.config_id
        row: dict[str, Any] = {k: getattr(config, k) for k in LEADING}
        row.update(config.dims)
        row.update(config.params)
        row.update(plan.scalars_of(config))
        launches = config.launches
        row.update({k: getattr(config, k) for k in PLANNED})
        if config.search_round is not None:  # a search's: the round that proposed it
            row["search_round"] = config.search_round
        row["ai_model"] = _analytic_intensity(config.flops, config.model_dram_bytes)
        row.update(
            merit=family.merit,
            baseline=variant.baseline,
            runs_on=variant.runs_on,
            profiled=variant.profiled,
            block=_geometry(launches, "block"),
            grid=_geometry(launches, "grid"),
            dynamic_smem=max(
                (g.dynamic_smem for g in launches if g.dynamic_smem is not None), default=None
            ),
            capture_mismatch=mismatches.get(cid),
        )
        if config.pending:
            if cid not in measured:
                raise NcuflowError(f"{measure_path} has no record of {cid}: measure again")
            record = measured[cid]
            row.update(record.summary)
            row.update({f"step_{k}_ms": v for k, v in (record.step_ms or {}).items()})
            if row["status"] in TIMED:
                row.update(why.get(cid, {}))
                _timed_columns(row, cid, metrics, profile_errors, variant, ceilings)
        rows.append(row)
    return rows


def _analytic_intensity(flops: float | None, model_dram_bytes: float | None) -> float:
    """FLOPs per byte of the variant's declared DRAM traffic (``model_dram_bytes``): the
    intensity a report derives by hand, beside the measured ``ai_dram``."""
    if not flops or not model_dram_bytes or model_dram_bytes <= 0:
        return np.nan
    return flops / model_dram_bytes


def _timed_columns(
    row: dict[str, Any], cid: str, metrics: pd.DataFrame, profile_errors: dict[str, str],
    variant: Variant, ceilings: dict[str, Any],
) -> None:  # fmt: skip
    """A timed row's rates, and its ncu metrics with the columns and the bound derived from
    them, or why it has none."""
    row["gflops"] = row["flops"] / row["time_ms"] / 1e6
    row["gbps"] = row["min_bytes"] / row["time_ms"] / 1e6
    if cid in metrics.index:
        row.update(metrics.loc[cid].to_dict())
        row.update(derived_columns(row, variant.compute, ceilings))
        row.update(classify(row, ceilings))
    elif cid in profile_errors:
        row["status"], row["error"] = PROFILE_ERROR, profile_errors[cid]
    elif variant.profiled and row["status"] == OK:
        row["error"] = NO_KERNEL
    else:
        row["bound_reason"] = _not_profiled(variant)


NO_KERNEL = "ncu recorded no kernel inside this configuration's NVTX range"


def unchosen(table: pd.DataFrame, mode: str, dims: list[str]) -> None:
    """Rows ncu did not profile because ncu.profile (``mode``) did not choose them: not an
    error, and said in bound_reason (the choice made again as the profile stage made it)."""
    if mode == "all":
        return
    ok = table[(table["status"] == OK) & table["profiled"].astype(bool)]
    timed = [((row["variant"], tuple(row[d] for d in dims)), index, row["time_ms"])
             for index, row in ok.iterrows()]  # fmt: skip
    kept = profile_choice(mode, timed) or set()
    left = ok.index[~ok.index.isin(list(kept)) & (ok["error"] == NO_KERNEL)]
    table.loc[left, "error"] = ""
    table.loc[left, "bound_reason"] = (f"not profiled: ncu.profile {mode} profiles only the "
                                       "fastest per variant and size")  # fmt: skip


def family_columns(table: pd.DataFrame, family: Family) -> None:
    """The family's own columns (``columns:`` in family.yaml), expressions over each row's
    values; a row that lacks a value (a skipped one) gets NaN."""
    for name, expr in family.columns.items():
        values = []
        for row in table.to_dict("records"):
            env = {k: v for k, v in row.items() if isinstance(v, int | float) and not pd.isna(v)}
            try:
                values.append(float(expr(env)))
            except ExprError:
                values.append(np.nan)
        table[name] = values


def speedups(table: pd.DataFrame, family: Family, dims: list[str]) -> pd.Series:
    """Each ok row's speedup over the fastest ok configuration of the family's reference
    variant (``speedup_over``) at the same sizes; NaN where there is none."""
    ok = table[table["status"] == OK]
    reference = ok[ok["variant"] == family.speedup_over].groupby(dims)["time_ms"].min()
    if reference.empty:
        return pd.Series(np.nan, index=table.index)
    keys = pd.MultiIndex.from_frame(table[dims])
    base = pd.Series(reference.reindex(keys).to_numpy(), index=table.index)
    return (base / table["time_ms"].astype(float)).where(table["status"] == OK)


def collect(
    experiment: str, jobs: Sequence[tuple[Path, Path, Path]], device: Path, out: Path,
    replay: Replay | None = None, profile: str = "all",
) -> pd.DataFrame:  # fmt: skip
    """jobs: (plan.json, measure.json, metrics.parquet) of each variant, in config order;
    profile: ncu.profile, which decided which configurations ncu profiled;
    device: device.json, whose measured ceilings the bound rule uses; replay: the capture
    and this config's ncu settings, compared where device.json says it was replayed."""
    facts = read_json(Path(device))
    ceilings = facts.get("ceilings", {})
    replay = replay if facts.get("replayed_from") else None
    per_job = [variant_rows(*job, ceilings, replay) for job in jobs]
    rows = [row for job_rows in per_job for row in job_rows]
    table = pd.DataFrame(rows)
    if table.empty:
        raise NcuflowError(f"experiment {experiment} has no configurations")
    if "device" not in table:  # records from before each job named its device
        table["device"] = None
    named = np.where(table["runs_on"] == "gpu", facts.get("name"), f"host: {facts.get('cpu')}")
    measured = table["status"] != SKIPPED
    table["device"] = table["device"].where(~measured | table["device"].notna(), named)
    first = Plan.load(Path(jobs[0][0]))
    family = load_variant(Path(first.kernels_dir), first.family, first.variant)[0]
    dims = family.problem_columns
    params = list(dict.fromkeys(p for v in table["variant"].unique()
                                for p in family.variant(v).params))  # fmt: skip
    missing = [c for c in dict.fromkeys(MEASURED + DETAILS) if c not in table]
    table = pd.concat([table, pd.DataFrame(np.nan, index=table.index, columns=missing)], axis=1)
    unchosen(table, profile, dims)
    add_energy_columns(table)
    if family.speedup_over:
        table["speedup"] = speedups(table, family, dims)
    family_columns(table, family)
    for column in params:
        table[column] = table[column].astype("Int64")
    table["time_unstable"] = table["time_unstable"].astype("boolean")
    table["bound_agrees"] = table["bound_agrees"].astype("boolean")
    table["energy_throttled"] = table["energy_throttled"].astype("boolean")
    for column in ("time_note", "bound", "bound_level", "bound_reason", "roof", "device",
                   "capture_mismatch", "ncu_bottleneck", "ncu_bottleneck_message",
                   "top_finding", "top_finding_rule", "top_stall", "flops_check",
                   "power_limited"):  # fmt: skip
        table[column] = table[column].astype("string")
    for column in ("repeats", "registers_per_thread", "ncu_kernels", "dynamic_smem"):
        table[column] = table[column].astype("Float64").astype("Int64")
    table["status"] = table["status"].fillna(SKIPPED)
    table["error"] = table["error"].fillna("")
    ordered = LEADING + list(family.dims) + params + list(family.scalars) + MEASURED + DETAILS
    table = table[ordered + [c for c in table.columns if c not in ordered]]
    table.to_parquet(out, index=False)
    table.to_csv(out.with_suffix(".csv"), index=False)
    variants = [Plan.load(Path(job[0])).variant for job in jobs]  # a search's part may be empty
    _experiment_extras(experiment, list(zip(variants, jobs, strict=True)), out.parent)
    return table


def _experiment_extras(experiment: str, jobs: Sequence[tuple[str, tuple[Path, Path, Path]]],
                       folder: Path) -> None:  # fmt: skip
    """Every variant's findings and source lines as one table each, beside the table;
    ``jobs``: (variant, its files) of each job."""
    for name, columns in ((FINDINGS, FINDING_COLUMNS), (SOURCE_LINES, LINE_COLUMNS)):
        frames = []
        for variant, (_, _, metrics_path) in jobs:
            frame = _beside(metrics_path, name, columns)
            if not frame.empty:
                frame.insert(0, "variant", variant)
                frames.append(frame)
        table = (pd.concat(frames, ignore_index=True) if frames
                 else pd.DataFrame(columns=["variant", *columns]))  # fmt: skip
        table.insert(0, "experiment", experiment)
        table.to_parquet(folder / name, index=False)


def status_line(table_path: Path) -> str:
    """One line for the end of a run: an experiment's configurations by status, and where
    the reasons are."""
    table = pd.read_parquet(table_path)
    name = table["experiment"].iloc[0]
    counts = table["status"].value_counts()
    shown = ", ".join(f"{counts.get(s, 0)} {s}" for s in STATUSES)
    failed = len(table) - counts.get(OK, 0) - counts.get(SKIPPED, 0)
    where = f"; why: the error column of {table_path.with_suffix('.csv')}" if failed else ""
    lines = [f"ncuflow: {name}: {shown}{where}"]
    if "capture_mismatch" in table:  # a replay whose capture was measured otherwise
        for why, count in table["capture_mismatch"].dropna().value_counts(sort=False).items():
            lines.append(f"ncuflow: {name}: warning: {count} configurations replayed from "
                         f"a capture that differs from this config: {why}")  # fmt: skip
    return "\n".join(lines)
