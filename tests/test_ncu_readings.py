"""ncu's numbers read the way ncu's own rules state them: each stall reason's share as its
CPIStall rule message gives it, and the advice ncu puts first where estimates tie. Checked
on a committed report (tests/data, an explain-tier naive SGEMM, H200, 2026-11-26) and on
the rule messages kept in captures."""

import json
import math
import re

import pandas as pd
import pytest

from conftest import CAPTURES, ROOT
from ncuflow.analyze.why import STALL, ranked, why_columns
from ncuflow.profile.explain import read_findings
from ncuflow.profile.long_table import read_report

REPORT = ROOT / "tests" / "data" / "matmul_naive_explain.ncu-rep"
# "... This stall type represents about 53.6% of the total average of 29.2 cycles between
# issuing two instructions." (ncu prints one decimal)
STATED = re.compile(r"represents about ([0-9.]+)% of the total average of ([0-9.]+) cycles")
REASON = "smsp_average_"  # the focus metric of a stall rule names its reason


def _stated(findings: pd.DataFrame) -> list[tuple[str, int, str, float, float]]:
    """(config_id, kernel_id, reason, share %, cycles between issues) of every stall rule
    message that states its share."""
    stated = []
    for row in findings[findings["rule"] == "CPIStall"].itertuples():
        match = STATED.search(row.message)
        if match:
            focus = [f["name"] for f in json.loads(row.focus) if f["name"].startswith(REASON)]
            stated.append((row.config_id, int(row.kernel_id), focus[0][len(REASON) :],
                           float(match[1]), float(match[2])))  # fmt: skip
    return stated


def _shares(findings: pd.DataFrame, explain: pd.DataFrame, config: str, kernel: int) -> dict:
    """The why columns of ``config`` computed from its kernel ``kernel`` alone."""
    values = explain[(explain["config_id"] == config) & (explain["kernel_id"] == kernel)]
    return why_columns(findings, values, values)[config]


def test_stall_shares_are_those_ncus_stall_rules_state() -> None:
    findings = read_findings(REPORT, "explain")
    long = read_report(REPORT)
    stated = _stated(findings)
    assert len(stated) == 3  # long scoreboard at 512; long scoreboard and LG throttle at 1024
    for config, kernel, reason, share, cycles in stated:
        row = _shares(findings, long, config, kernel)
        assert abs(row[f"stall_{reason}_pct"] - share) <= 0.05, (config, reason)
        assert abs(row["cycles_per_issue"] - cycles) <= 0.05


# ncu states 33.4 % no_instruction for four bins' shared_atomic, whose reasons add up to 48
# of its 91.4 cycles between issues (a share of their sum: 63.6 %); 58.8 % for a conv tile
@pytest.mark.parametrize(
    "folder",
    [
        "h100-sxm-verdicts/histogram/shared_atomic",
        "h100-sxm-conv_layers/conv_filter_size/smem_tiled",
    ],
)
def test_captured_stall_messages_agree_where_the_reasons_do_not_add_up(folder: str) -> None:
    """On short kernels the stall reasons add up to as little as half of the cycles between
    two issued instructions: a share of their sum would be up to 30 points off ncu's."""
    findings = pd.read_parquet(CAPTURES / folder / "findings.parquet")
    explain = pd.read_parquet(CAPTURES / folder / "explain_long.parquet")
    off = []
    for config, kernel, reason, share, _ in _stated(findings):
        row = _shares(findings, explain, config, kernel)
        assert abs(row[f"stall_{reason}_pct"] - share) <= 0.05, (config, kernel, reason)
        values = explain[(explain["config_id"] == config) & (explain["kernel_id"] == kernel)]
        stalls = values[values["metric"].str.fullmatch(STALL.format(".+"))]["value"]
        reason_value = values[values["metric"] == STALL.format(reason)]["value"].iloc[0]
        off.append(abs(100 * reason_value / stalls.sum() - share))
    assert max(off) > 10  # what the share of the reasons' sum would have said


def test_a_tie_goes_to_the_global_estimate() -> None:
    """At 512 ncu estimates 38.1 % both for its issue slots (IssueSlotUtilization, a local
    estimate) and for the long scoreboard stalls (a global one, capped by it)."""
    findings = read_findings(REPORT, "explain")
    long = read_report(REPORT)
    config = "BLOCK_X=32_BLOCK_Y=16_M=512_N=512_K=512"
    advice = findings[(findings["config_id"] == config) & findings["speedup_pct"].notna()]
    tied = advice[advice["speedup_pct"] == advice["speedup_pct"].max()]
    assert set(zip(tied["rule"], tied["speedup_kind"], strict=True)) == {
        ("IssueSlotUtilization", "local"), ("CPIStall", "global")}  # fmt: skip
    row = why_columns(findings, long, long)[config]
    assert row["top_finding_rule"] == "CPIStall"
    assert row["top_finding"].startswith("Long Scoreboard Stalls: On average")
    assert math.isclose(row["top_finding_speedup_pct"], tied["speedup_pct"].iloc[0])


@pytest.mark.parametrize(("rows", "first"), [
    # (rule, estimate, kind) in the report's order
    ([("IssueSlotUtilization", 40.0, "local"), ("AchievedOccupancy", 40.0, "global")],
     "AchievedOccupancy"),
    ([("AchievedOccupancy", 40.0, "global"), ("CPIStall", 40.0, "global")], "AchievedOccupancy"),
    ([("CPIStall", 40.0, "global"), ("AchievedOccupancy", 40.0, "global")], "CPIStall"),
    ([("LaunchConfiguration", 30.0, "global"), ("TheoreticalOccupancy", 75.0, "local")],
     "TheoreticalOccupancy"),
    ([("SOLBottleneck", math.nan, ""), ("CPIStall", 5.0, "global")], "CPIStall"),
])  # fmt: skip
def test_the_first_advice_is_the_largest_then_global_then_listed_first(
    rows: list[tuple[str, float, str]], first: str
) -> None:
    advice = pd.DataFrame(rows, columns=["rule", "speedup_pct", "speedup_kind"],
                          index=[10 * (i + 1) for i in range(len(rows))])  # fmt: skip
    assert ranked(advice)["rule"].iloc[0] == first


def test_ranking_keeps_each_finding_once_whatever_the_index() -> None:
    """Findings of several reports, put together with their indexes kept: none is repeated,
    and a capture's findings without speedup_kind (older ones) rank by estimate alone."""
    findings = pd.DataFrame({"rule": ["A", "B", "C"], "speedup_pct": [1.0, 3.0, 2.0],
                             "speedup_kind": ["global"] * 3}, index=[0, 0, 1])  # fmt: skip
    assert ranked(findings)["rule"].tolist() == ["B", "C", "A"]
    assert ranked(findings.drop(columns="speedup_kind"))["rule"].tolist() == ["B", "C", "A"]
