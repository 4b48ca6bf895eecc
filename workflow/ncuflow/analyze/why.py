"""The "why" columns of a configuration, from what Nsight Compute itself concluded: its
SOLBottleneck verdict, its finding with the largest estimated speedup, and (explain tier)
the stall reasons, bank conflicts and bytes used per sector.

Every value is read from a report, per kernel; a configuration of several kernels takes
its longest kernel's (the one that decides its time).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..vocab import EXPLAIN, SOURCE, SWEEP

# ncu's warp stall reasons (smsp__average_warps_issue_stalled_<reason>_per_issue_active):
# cycles a warp spent in each state per issued instruction; their sum is the cycles between
# two issued instructions of a warp (smsp__average_warp_latency_per_inst_issued).
STALL_REASONS = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "gmma", "imc_miss",
    "lg_throttle", "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc",
    "no_instruction", "not_selected", "selected", "short_scoreboard", "sleeping",
    "tex_throttle", "wait",
)  # fmt: skip
STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
BYTES_PER_SECTOR = "smsp__sass_average_data_bytes_per_sector_mem_global_op_{}.ratio"
# Explain-tier counters copied as they are: (column, ncu metric, what it is).
EXPLAIN_COUNTERS = (
    ("cycles_per_issue", "smsp__average_warp_latency_per_inst_issued.ratio",
     "cycles between two issued instructions of a warp"),
    ("shared_bank_conflicts", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
     "shared-memory bank conflicts (extra wavefronts)"),
    ("global_load_bytes_per_sector", BYTES_PER_SECTOR.format("ld"),
     "bytes of each 32-byte sector a global load uses (32: coalesced)"),
    ("global_store_bytes_per_sector", BYTES_PER_SECTOR.format("st"),
     "bytes of each 32-byte sector a global store uses (32: coalesced)"),
)  # fmt: skip
STALL_COLUMNS = [f"stall_{reason}_pct" for reason in STALL_REASONS]
WHY_COLUMNS = [
    "ncu_bottleneck", "ncu_bottleneck_message", "top_finding", "top_finding_speedup_pct",
    "top_stall", *STALL_COLUMNS, *(c for c, _, _ in EXPLAIN_COUNTERS),
]  # fmt: skip
# Rules that describe rather than advise: never the top finding.
DESCRIPTIVE = {"SOLBottleneck", "SOLFPRoofline"}
DURATION = "gpu__time_duration.sum"


def longest_kernels(long: pd.DataFrame) -> dict[str, int]:
    """Each configuration's longest kernel (kernel_id) in a long table."""
    durations = long[long["metric"] == DURATION]
    if durations.empty:
        return {}
    top = durations.sort_values("value").groupby("config_id").tail(1)
    return dict(zip(top["config_id"], top["kernel_id"].astype(int), strict=True))


def first_sentence(text: str) -> str:
    head = text.split(". ", 1)[0].strip()
    return head if not head or head.endswith(".") else head + "."


def longest_findings(findings: pd.DataFrame, longest: Mapping[str, dict[str, int]]) -> pd.DataFrame:
    """The findings of each configuration's longest kernel in each tier: ``longest`` maps a
    tier to {config_id: kernel_id} (each report numbers its own kernels)."""
    keep = [(tier, config, kernel) for tier, kernels in longest.items()
            for config, kernel in kernels.items()]  # fmt: skip
    keys = pd.DataFrame(keep, columns=["tier", "config_id", "kernel_id"])
    return findings.merge(keys.astype({"kernel_id": findings["kernel_id"].dtype}),
                          on=["tier", "config_id", "kernel_id"])  # fmt: skip


def _findings_columns(findings: pd.DataFrame) -> dict[str, dict]:
    out: dict[str, dict[str, Any]] = {}
    for config, mine in findings.groupby("config_id"):
        row: dict[str, Any] = {}
        # the configuration's one profile: the sweep's, or the explain tier's (whose
        # sections include the sweep's) where that profiled it instead
        verdict = mine[mine["rule"] == "SOLBottleneck"].sort_values(
            "tier", key=lambda tier: tier != SWEEP, kind="stable")  # fmt: skip
        if not verdict.empty:
            row["ncu_bottleneck"] = verdict["title"].iloc[0]
            row["ncu_bottleneck_message"] = verdict["message"].iloc[0]
        advice = mine[~mine["rule"].isin(DESCRIPTIVE) & mine["speedup_pct"].notna()]
        if not advice.empty:
            top = advice.sort_values("speedup_pct", ascending=False, kind="stable").iloc[0]
            named = top["title"] or top["rule"]
            row["top_finding"] = f"{named}: {first_sentence(str(top['message']))}"
            row["top_finding_speedup_pct"] = float(top["speedup_pct"])
        out[str(config)] = row
    return out


def _explain_columns(explain: pd.DataFrame, longest: dict[str, int]) -> dict[str, dict]:
    out: dict[str, dict[str, Any]] = {}
    for config, kernel in longest.items():
        values = explain[(explain["config_id"] == config) & (explain["kernel_id"] == kernel)]
        get = dict(zip(values["metric"], values["value"], strict=True))
        stalls = {r: float(get.get(STALL.format(r), math.nan)) for r in STALL_REASONS}
        known = {r: v for r, v in stalls.items() if math.isfinite(v)}
        total = math.fsum(known.values())
        row: dict[str, Any] = {
            f"stall_{r}_pct": 100 * v / total if total > 0 else math.nan for r, v in stalls.items()
        }
        waiting = {r: v for r, v in known.items() if r != "selected"}  # selected: issuing
        row["top_stall"] = max(waiting, key=waiting.__getitem__) if waiting else ""
        for column, metric, _ in EXPLAIN_COUNTERS:
            row[column] = float(get.get(metric, math.nan))
        out[config] = row
    return out


def why_columns(
    findings: pd.DataFrame, explain: pd.DataFrame, long: pd.DataFrame
) -> dict[str, dict[str, Any]]:
    """Per configuration: ncu's verdict, its top finding, and the explain tier's stall
    shares (``stall_<reason>_pct``, % of the cycles between issued instructions) and
    counters, where the reports have them. ``long`` needs only the sweep's durations."""
    explained = longest_kernels(explain)  # the explain and source tiers' reports
    longest = {SWEEP: longest_kernels(long), EXPLAIN: explained, SOURCE: explained}
    rows = _findings_columns(longest_findings(findings, longest))
    for config, values in _explain_columns(explain, explained).items():
        rows.setdefault(config, {}).update(values)
    return rows
