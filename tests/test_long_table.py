"""Exact values: the long table read from a real report (committed: transpose naive, five
sizes, H100, 2026-11-23) is the one the capture of that run held (kept beside it in
tests/data when the transpose study was recaptured), and is not rounded like the CSV."""

from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT
from ncuflow.analyze.derive import config_metrics
from ncuflow.profile.long_table import LONG_COLUMNS, read_report, write_long

REPORT = ROOT / "tests" / "data" / "transpose_naive.ncu-rep"
CAPTURED = ROOT / "tests" / "data" / "transpose_naive_long.parquet"


@pytest.fixture(scope="module")
def long() -> pd.DataFrame:
    return read_report(REPORT)


def test_every_kernel_maps_to_its_configuration(long: pd.DataFrame) -> None:
    assert list(long.columns) == LONG_COLUMNS
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
