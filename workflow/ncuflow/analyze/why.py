"""The "why" columns of a configuration, from what Nsight Compute itself concluded: its
SOLBottleneck verdict, its finding with the largest estimated speedup, and (explain tier)
the stall reasons, bank conflicts and bytes used per sector.

Every value is read from a report, per kernel; a configuration of several kernels takes
its longest kernel's (the one that decides its time).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..profile.long_table import one_report
from ..vocab import EXPLAIN, SOURCE, SWEEP

# ncu's warp stall reasons (smsp__average_warps_issue_stalled_<reason>_per_issue_active):
# cycles a warp spent in each state per issued instruction. ncu's stall rules (CPIStall)
# state each as a share of the cycles between two issued instructions of a warp
# (smsp__average_warp_latency_per_inst_issued), which these reasons need not add up to: on
# short kernels they cover as little as half of it (tests/test_ncu_readings.py).
STALL_REASONS = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "gmma", "imc_miss",
    "lg_throttle", "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc",
    "no_instruction", "not_selected", "selected", "short_scoreboard", "sleeping",
    "tex_throttle", "wait",
)  # fmt: skip
STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
CYCLES_PER_ISSUE = "smsp__average_warp_latency_per_inst_issued.ratio"
BYTES_PER_SECTOR = "smsp__sass_average_data_bytes_per_sector_mem_global_op_{}.ratio"
# Explain-tier counters copied as they are: (column, ncu metric, what it is).
EXPLAIN_COUNTERS = (
    ("cycles_per_issue", CYCLES_PER_ISSUE, "cycles between two issued instructions of a warp"),
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
    "top_finding_rule", "top_stall", *STALL_COLUMNS, *(c for c, _, _ in EXPLAIN_COUNTERS),
]  # fmt: skip
# Rules that describe rather than advise: never the top finding.
DESCRIPTIVE = {"SOLBottleneck", "SOLFPRoofline"}
DURATION = "gpu__time_duration.sum"


def longest_kernels(long: pd.DataFrame) -> pd.DataFrame:
    """Each configuration's longest kernel in a long table, from one report: config_id and
    kernel_id, and the tier of its report where the table names it."""
    durations = one_report(long[long["metric"] == DURATION])
    keys = [c for c in ("tier", "config_id", "kernel_id") if c in durations]
    return durations.sort_values("value").groupby("config_id").tail(1)[keys]


def _with_tiers(kernels: pd.DataFrame, tiers: Sequence[str]) -> pd.DataFrame:
    """(tier, config_id, kernel_id) of ``kernels``; one whose tier a table does not name
    (written before the tier column) stands for each of ``tiers``, those its reports may
    be of."""
    named = kernels if "tier" in kernels else kernels.assign(tier=None)
    unnamed = named[named["tier"].isna()].drop(columns="tier")
    return pd.concat([named[named["tier"].notna()], *(unnamed.assign(tier=t) for t in tiers)],
                     ignore_index=True)  # fmt: skip


def first_sentence(text: str) -> str:
    head = text.split(". ", 1)[0].strip()
    return head if not head or head.endswith(".") else head + "."


def longest_findings(findings: pd.DataFrame, longest: pd.DataFrame) -> pd.DataFrame:
    """The findings of the kernels in ``longest`` (tier, config_id, kernel_id: each report
    numbers its own kernels), each kernel's in the order its report lists them."""
    keys = longest.drop_duplicates().astype({"kernel_id": findings["kernel_id"].dtype})
    return findings.merge(keys, on=["tier", "config_id", "kernel_id"])


def ranked(findings: pd.DataFrame) -> pd.DataFrame:
    """``findings`` in the order ncu ranks its advice: the largest estimated speedup first
    (none last); among equal ones a global estimate (of the kernel's whole time) before a
    local one (ncu's child rules, AchievedOccupancy or CPIStall, cap their global estimate
    by IssueSlotUtilization's local one, and tie with it), then the report's order."""
    kind = findings.get("speedup_kind")  # None in older captures: every one local
    local = True if kind is None else (kind != "global").to_numpy()
    keys = pd.DataFrame({"speedup": -findings["speedup_pct"].to_numpy(), "local": local,
                         "order": range(len(findings))})  # fmt: skip
    # by position: an index that repeats a label would repeat its rows
    return findings.iloc[keys.sort_values(["speedup", "local", "order"]).index]


def _findings_columns(findings: pd.DataFrame) -> dict[str, dict]:
    """Per configuration, ncu's verdict and first advice: each the first row of its
    configuration in a table ordered once (not a pandas sort per configuration)."""
    out: dict[str, dict[str, Any]] = {str(c): {} for c in sorted(findings["config_id"].unique())}
    # the configuration's one profile: the sweep's, or the explain tier's (whose sections
    # include the sweep's) where that profiled it instead
    verdicts = findings[findings["rule"] == "SOLBottleneck"].sort_values(
        "tier", key=lambda tier: tier != SWEEP, kind="stable")  # fmt: skip
    for config, title, message in _columns(verdicts, "config_id", "title", "message"):
        row = out[str(config)]
        if "ncu_bottleneck" not in row:
            row.update(ncu_bottleneck=title, ncu_bottleneck_message=message)
    advice = ranked(findings[~findings["rule"].isin(DESCRIPTIVE) & findings["speedup_pct"].notna()])
    for config, rule, title, message, speedup in _columns(
        advice, "config_id", "rule", "title", "message", "speedup_pct"
    ):
        row = out[str(config)]
        if "top_finding" not in row:
            row.update(top_finding=f"{title or rule}: {first_sentence(str(message))}",
                       top_finding_speedup_pct=float(speedup), top_finding_rule=rule)  # fmt: skip
    return out


def _columns(frame: pd.DataFrame, *names: str) -> zip:
    """The rows of ``frame``'s columns ``names``, as tuples of Python values."""
    return zip(*(frame[name].tolist() for name in names), strict=True)


def _explain_columns(explain: pd.DataFrame, longest: pd.DataFrame) -> dict[str, dict]:
    out: dict[str, dict[str, Any]] = {}
    values = explain.merge(longest, on=list(longest.columns))
    found: dict[str, dict[str, float]] = {}
    for config, metric, value in _columns(values, "config_id", "metric", "value"):
        found.setdefault(str(config), {})[metric] = value
    for config, get in sorted(found.items()):
        stalls = {r: float(get.get(STALL.format(r), math.nan)) for r in STALL_REASONS}
        known = {r: v for r, v in stalls.items() if math.isfinite(v)}
        cycles = float(get.get(CYCLES_PER_ISSUE, math.nan))
        row: dict[str, Any] = {
            f"stall_{r}_pct": 100 * v / cycles if cycles > 0 else math.nan
            for r, v in stalls.items()
        }
        waiting = {r: v for r, v in known.items() if r != "selected"}  # selected: issuing
        row["top_stall"] = max(waiting, key=waiting.__getitem__) if waiting else ""
        for column, metric, _ in EXPLAIN_COUNTERS:
            row[column] = float(get.get(metric, math.nan))
        out[str(config)] = row
    return out


def why_columns(
    findings: pd.DataFrame, explain: pd.DataFrame, long: pd.DataFrame
) -> dict[str, dict[str, Any]]:
    """Per configuration: ncu's verdict, its first advice (``top_finding``, its estimate and
    rule), and the explain tier's stall shares (``stall_<reason>_pct``: % of the cycles
    between two issued instructions of a warp, as ncu's stall rules state them) and
    counters, where the reports have them. ``long`` needs only the durations."""
    explained = longest_kernels(explain)  # the explain and source tiers' reports
    longest = pd.concat([_with_tiers(longest_kernels(long), [SWEEP]),
                         _with_tiers(explained, [EXPLAIN, SOURCE])])  # fmt: skip
    rows = _findings_columns(longest_findings(findings, longest))
    for config, values in _explain_columns(explain, explained).items():
        rows.setdefault(config, {}).update(values)
    return rows
