"""Findings and source lines read from real reports: the sweep tier's transpose (H100,
2026-11-23) and an explain-tier naive SGEMM at 512 and 1024 (H200, 2026-11-26, with
WarpStateStats, SourceCounters, SchedulerStats, InstructionStats and
MemoryWorkloadAnalysis_Tables besides the sweep's sections)."""

import json
import math

import ncu_report
import pandas as pd
import pytest

from conftest import ROOT
from ncuflow.analyze.why import first_sentence, why_columns
from ncuflow.profile.explain import (
    FINDING_COLUMNS,
    MESSAGE_TYPES,
    SPEEDUP_KINDS,
    finding,
    plain,
    read_findings,
    read_source_lines,
)
from ncuflow.profile.long_table import read_report

DATA = ROOT / "tests" / "data"
SWEEP = DATA / "transpose_naive.ncu-rep"
EXPLAIN = DATA / "matmul_naive_explain.ncu-rep"
KERNELS = ROOT / "kernels"


def _payloads(path):
    """The raw rule results of a report's first kernel, as ncu_report gives them."""
    return (
        ncu_report.load_report(str(path)).range_by_idx(0).action_by_idx(0).rule_results_as_dicts()
    )


def test_the_type_tables_are_ncu_reports_own() -> None:
    for value, name in MESSAGE_TYPES.items():
        assert value == getattr(ncu_report, {"info": "MsgType_OK", "none": "MsgType_NONE",
                                             "optimization": "MsgType_OPTIMIZATION",
                                             "warning": "MsgType_WARNING",
                                             "error": "MsgType_ERR"}[name])  # fmt: skip
    for value, name in SPEEDUP_KINDS.items():
        assert value == getattr(ncu_report, f"SpeedupType_{name.upper()}")


def test_both_payload_forms_are_read_alike() -> None:
    # ncu-report 2026.3.1 on this machine gives dicts; on the GPU machine (2026-11-25) the
    # nested values came as the text of Python dicts: that form is the same payload, each
    # nested value replaced by its repr
    raw = _payloads(EXPLAIN)
    assert {type(r["rule_message"]).__name__ for r in raw} == {"dict"}
    as_text = [{k: (repr(v) if isinstance(v, dict | list) else v) for k, v in r.items()}
               for r in raw]  # fmt: skip
    assert [finding(r) for r in raw] == [finding(r) for r in as_text]
    issue = next(finding(r) for r in as_text if r["rule_identifier"] == "IssueSlotUtilization")
    assert issue["speedup_pct"] > 0 and issue["speedup_kind"] in {"local", "global"}
    assert json.loads(issue["focus"])[0]["name"] == "smsp__issue_active.avg.per_cycle_active"
    # and the form where the message's text carries the focus metrics and the estimate
    nested = next(r for r in raw if r["rule_identifier"] == "IssueSlotUtilization")
    folded = {k: v for k, v in nested.items() if k not in ("focus_metrics", "speedup_estimation")}
    folded["rule_message"] = repr({**nested["rule_message"],
                                   "focus_metrics": nested["focus_metrics"],
                                   "speedup_estimation": nested["speedup_estimation"]})  # fmt: skip
    assert finding(folded) == finding(nested)


def test_sweep_findings_hold_ncus_verdict_per_configuration() -> None:
    findings = read_findings(SWEEP, "sweep")
    assert list(findings.columns) == FINDING_COLUMNS
    verdicts = findings[findings["rule"] == "SOLBottleneck"]
    assert verdicts["config_id"].nunique() == 5 and (verdicts["tier"] == "sweep").all()
    assert verdicts["title"].str.len().gt(0).all()
    assert not findings["message"].str.contains("@section:|@url:").any()  # links made plain


def test_explain_findings_name_stalls_and_coalescing() -> None:
    findings = read_findings(EXPLAIN, "explain")
    titles = set(findings["title"])
    assert "Long Scoreboard Stalls" in titles
    assert findings["rule"].isin(["CPIStall", "UncoalescedGlobalAccess"]).any()
    best = findings.dropna(subset=["speedup_pct"])
    assert (best["speedup_pct"] > 0).all()


def test_source_lines_point_at_the_variants_own_file() -> None:
    lines = read_source_lines(EXPLAIN, lambda _: KERNELS / "matmul" / "naive.cu", KERNELS)
    for _, rows in lines.groupby("config_id"):
        top = rows.sort_values("samples", ascending=False).iloc[0]
        assert top["file"] == "matmul/naive.cu"
        text = (KERNELS / "matmul" / "naive.cu").read_text().splitlines()
        assert top["code"] == text[top["line"] - 1].strip()  # the line as the file has it now
        assert top["samples_pct"] > 50 and top["top_reason"]
        assert "FFMA" in top["sass"] or "LDG" in top["sass"]
        assert math.isclose(rows["samples_pct"].sum(), 100, rel_tol=1e-9)
    loads = lines[lines["global_requests"] > 0]
    assert (loads["sectors_per_request"] >= loads["ideal_sectors_per_request"]).all()


def test_why_columns_take_the_longest_kernel_and_stall_shares() -> None:
    long = read_report(EXPLAIN)
    why = why_columns(read_findings(EXPLAIN, "sweep"), long, long)
    for row in why.values():
        assert row["ncu_bottleneck"]
        shares = [row[c] for c in row if c.startswith("stall_") and c.endswith("_pct")]
        assert all(math.isfinite(v) and v >= 0 for v in shares)  # ncu's (test_ncu_readings)
        assert row["top_stall"] == "long_scoreboard"
        assert row["top_finding_speedup_pct"] > 0
        assert row["top_finding"].endswith(".")


@pytest.mark.parametrize(("text", "head"), [
    ("One. Two.", "One."), ("No stop", "No stop."), ("Keep 1.5 cycles. Then", "Keep 1.5 cycles."),
])  # fmt: skip
def test_first_sentence(text: str, head: str) -> None:
    assert first_sentence(text) == head


def test_links_are_made_plain() -> None:
    assert plain("See the @section:SourceCounters:Source Counters@ section") == (
        "See the Source Counters section"
    )
    assert plain("@url:Guide:https://docs.nvidia.com/x@ here") == "Guide here"


def test_an_empty_report_reads_as_empty_tables(tmp_path) -> None:
    missing = tmp_path / "none.ncu-rep"
    assert read_findings(missing, "sweep").empty
    assert read_source_lines(missing, lambda _: KERNELS / "matmul" / "naive.cu", KERNELS).empty
    assert isinstance(read_findings(missing, "sweep"), pd.DataFrame)


def test_each_tiers_findings_follow_that_reports_own_kernel_numbers() -> None:
    # the explain report holds fewer configurations than the sweep's: its kernels are
    # numbered apart, and strided_read's explained rows take their finding from it
    from conftest import replayed

    table = replayed("h100-sxm-verdicts")["write_and_l1"]
    explained = table[(table["variant"] == "strided_read") & table["top_stall"].notna()
                      & (table["top_stall"] != "")]  # fmt: skip
    assert len(explained) == 4
    assert explained["top_finding"].str.startswith(
        ("L1TEX Global Load Access Pattern", "UncoalescedGlobalAccess")).all()  # fmt: skip
