"""Exact values: the long table read from a real report (committed: transpose naive, five
sizes, H100, 2026-11-23) is the one the capture of that run held (kept beside it in
tests/data when the transpose study was recaptured), and is not rounded like the CSV. A
profile's long table names each row's tier, since each report numbers its own kernels;
one written before that column (every committed capture's) is read as before."""

import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import CAPTURE, ROOT
from ncuflow.analyze.derive import config_metrics
from ncuflow.analyze.why import why_columns
from ncuflow.plan import Plan
from ncuflow.profile.explain import read_findings
from ncuflow.profile.long_table import REPORT_COLUMNS, read_report, write_long
from ncuflow.profile.members import Member
from ncuflow.runners.replay import ReplayRunner

REPORT = ROOT / "tests" / "data" / "transpose_naive.ncu-rep"
CAPTURED = ROOT / "tests" / "data" / "transpose_naive_long.parquet"
EXPLAINED = ROOT / "tests" / "data" / "matmul_naive_explain.ncu-rep"


@pytest.fixture(scope="module")
def long() -> pd.DataFrame:
    return read_report(REPORT)


def test_every_kernel_maps_to_its_configuration(long: pd.DataFrame) -> None:
    assert list(long.columns) == REPORT_COLUMNS
    assert sorted(long["config_id"].unique()) == sorted(
        f"BLOCK_X=32_BLOCK_Y=8_M={m}_N={m}" for m in (1024, 2048, 2049, 4096, 8192)
    )
    assert set(long.groupby("config_id")["kernel_id"].nunique()) == {1}


def test_the_capture_holds_exactly_the_report_values(long: pd.DataFrame) -> None:
    captured = pd.read_parquet(CAPTURED)
    key = ["config_id", "metric"]
    both = long.merge(captured, on=key, suffixes=("_report", "_capture"))
    assert len(both) == len(long) == len(captured)
    relative = (both["value_report"] - both["value_capture"]).abs() / both[
        "value_report"
    ].abs().clip(lower=1e-300)
    assert relative.max() <= 1e-6
    # ncu_report names a derived metric's unit (thread or inst) after whether rule results
    # were read earlier in the process; the profile stage reads every long table first
    plain = ~both["metric"].str.startswith("derived__")
    assert (both.loc[plain, "unit_report"] == both.loc[plain, "unit_capture"]).all()


def test_percentages_keep_their_digits(long: pd.DataFrame) -> None:
    # ncu's CSV prints these with two decimals; the report holds the full value
    pct = long[long["metric"] == "sm__throughput.avg.pct_of_peak_sustained_elapsed"]["value"]
    assert (pct.round(2) != pct).all()


def test_write_long_round_trips(long: pd.DataFrame, tmp_path: Path) -> None:
    write_long(long, tmp_path / "long.parquet")
    back = pd.read_parquet(tmp_path / "long.parquet")
    merged = long.merge(back, on=["config_id", "kernel_id", "metric"])
    assert len(merged) == len(long) and (merged["value_x"] == merged["value_y"]).all()
    metrics = config_metrics(back)
    assert (metrics["dram_bytes"] > 0).all() and (metrics["flops_fp32"] == 0).all()


def test_a_configuration_in_two_reports_is_read_from_the_deepest(long: pd.DataFrame) -> None:
    """Both reports number the configuration's kernel 1: its values come from the explain
    tier's report alone, never mixed with (or added to) the sweep's."""
    config = long["config_id"].iloc[0]
    sweep = long.assign(tier="sweep", value=2 * long["value"])
    both = pd.concat([sweep, long[long["config_id"] == config].assign(tier="explain")])
    metrics = config_metrics(both).set_index("config_id")
    alone = config_metrics(long).set_index("config_id")
    assert metrics.loc[config, "ncu_kernels"] == 1
    assert metrics.loc[config, "dram_bytes"] == alone.loc[config, "dram_bytes"]
    other = alone.index[1]  # profiled by the sweep alone: its (doubled) values
    assert metrics.loc[other, "dram_bytes"] == 2 * alone.loc[other, "dram_bytes"]


def test_findings_are_those_of_the_report_the_values_come_from() -> None:
    """A sweep report of a configuration the explain tier profiled too, its kernel numbered
    alike: its findings are not the configuration's."""
    long = read_report(EXPLAINED)
    findings = read_findings(EXPLAINED, "explain")
    stale = findings.assign(tier="sweep", speedup_pct=99.0)
    tiered = pd.concat([long.assign(tier="sweep"), long.assign(tier="explain")])
    why = why_columns(pd.concat([stale, findings]), long.assign(tier="explain"), tiered)
    assert all(row["top_finding_speedup_pct"] < 99 for row in why.values())
    # without the column, each table's kernels stand for every tier they may be of
    untiered = why_columns(pd.concat([stale, findings]), long, long)
    assert all(row["top_finding_speedup_pct"] == 99 for row in untiered.values())


def _replayed_long(capture: Path, tmp_path: Path) -> pd.DataFrame:
    """The ncu values a replay of the ladder's naive variant writes from ``capture``."""
    plan = Plan.load(CAPTURE / "matmul_ladder" / "naive" / "plan.json")
    tmp_path.mkdir()
    (tmp_path / "plan.json").write_text(plan.to_json())
    member = Member(tmp_path / "plan.json", tmp_path / "measure.json", tmp_path)
    runner = ReplayRunner(capture)
    runner.measure([member], tmp_path / "journal.jsonl", lambda line: None)
    runner.profile([member], tmp_path / "chunks", lambda line: None)
    return pd.read_parquet(tmp_path / "ncu_long.parquet")


def test_a_replay_keeps_the_captured_columns_with_or_without_the_tier(tmp_path: Path) -> None:
    """A capture from before the tier column replays without it, one after with it; both
    give the same registry columns."""
    old = _replayed_long(CAPTURE, tmp_path / "old")
    assert "tier" not in old
    capture = tmp_path / "capture"
    for name in ("capture.json", "device.json", "matmul_ladder/naive"):
        copy = shutil.copytree if (CAPTURE / name).is_dir() else shutil.copy2
        (capture / name).parent.mkdir(parents=True, exist_ok=True)
        copy(CAPTURE / name, capture / name)
    values = pd.read_parquet(capture / "matmul_ladder" / "naive" / "ncu_long.parquet")
    write_long(
        values.assign(tier="sweep"), capture / "matmul_ladder" / "naive" / "ncu_long.parquet"
    )
    new = _replayed_long(capture, tmp_path / "new")
    assert set(new["tier"]) == {"sweep"}
    pd.testing.assert_frame_equal(config_metrics(old), config_metrics(new))
