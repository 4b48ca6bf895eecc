"""The parser on the ncu CSVs of the committed H100 capture (2026-11-23)."""

import json
import re

import numpy as np
import pandas as pd
import pytest

from conftest import CAPTURE
from ncuflow.ncu_csv import (
    config_metrics,
    config_of,
    parse_number,
    read_long,
    read_rows,
)

NAIVE = CAPTURE / "matmul_ladder" / "naive"
_DIMS = re.compile(r"M=(\d+)_N=(\d+)_K=(\d+)$")
CUBLAS = CAPTURE / "matmul_ladder" / "cublas_fp32"
WMMA = CAPTURE / "matmul_ladder" / "wmma_fp16_pipelined"


@pytest.mark.parametrize(
    ("cell", "value"),
    [
        ("1,310,944", 1310944.0),
        ("97.36", 97.36),
        ("1,994,828,821.83", 1994828821.83),
        ("0", 0.0),
        ("n/a", None),
        ("no data", None),
        ("", None),
        ("(256, 1, 1)", None),
        ("PolicySpread", None),
    ],
)
def test_parse_number(cell: str, value: float | None) -> None:
    assert parse_number(cell) == value


def test_rows_map_to_config_ids_through_their_nvtx_ranges() -> None:
    header, units, rows = read_rows(NAIVE / "ncu_raw.csv")
    assert header[0] == "ID" and units[header.index("gpu__time_duration.sum")] == "ns"
    measured = json.loads((NAIVE / "measure.json").read_text())
    assert sorted(config_of(r) for r in rows) == sorted(measured)


def test_config_id_also_read_from_a_renamed_kernel() -> None:
    assert config_of({"Kernel Name": "ncuflow_TILE=16_M=8_N=8_K=8/matmul"}) == "TILE=16_M=8_N=8_K=8"
    assert config_of({"Kernel Name": "matmul_naive"}) is None


def test_long_table_holds_every_numeric_metric_in_base_units() -> None:
    long = read_long(NAIVE / "ncu_raw.csv")
    assert list(long.columns) == [
        "config_id",
        "kernel_id",
        "kernel_name",
        "metric",
        "unit",
        "value",
    ]
    assert long["config_id"].nunique() == 4
    duration = long[long["metric"] == "gpu__time_duration.sum"]
    assert set(duration["unit"]) == {"ns"} and (duration["value"] > 1e5).all()
    units = dict(zip(long["metric"], long["unit"], strict=False))
    assert units["dram__bytes.sum"] == "byte"
    assert units["sm__throughput.avg.pct_of_peak_sustained_elapsed"] == "%"
    assert long["value"].notna().all()
    # text cells ("PolicySpread", "(16, 8, 1)") are not metrics
    assert "launch__cluster_scheduling_policy" not in set(long["metric"])


def test_counted_flops_of_the_naive_kernel_are_exactly_2mnk() -> None:
    # one FFMA per (i, j, k) and nothing else: ncu's count must equal the analytic count
    metrics = config_metrics(read_long(NAIVE / "ncu_raw.csv"))
    for row in metrics.itertuples():
        m, n, k = map(int, _DIMS.search(row.config_id).groups())
        assert row.flops_counted == 2 * m * n * k
        assert row.flops_tensor == 0 and row.flops_fp16 == 0


def test_tensor_core_flops_are_counted_and_judged_against_the_tensor_roof() -> None:
    metrics = config_metrics(read_long(WMMA / "ncu_raw.csv"))
    for row in metrics.itertuples():
        m, n, k = map(int, _DIMS.search(row.config_id).groups())
        # HMMA on zero-padded edge tiles counts too: exact only where the tiles divide
        assert row.flops_tensor >= 2 * m * n * k
        assert row.flops_tensor == 2 * m * n * k or m % 128
        assert row.flops_fp32 < 1e-3 * row.flops_tensor
        # ncu's peak of the fp16 tensor path, far above the FP32 roof, sets the ridge
        assert row.peak_tensor_fp16_flops_per_s > 10 * row.peak_fp32_flops_per_s
        ridge = row.peak_tensor_fp16_flops_per_s / row.peak_dram_bytes_per_s
        assert f"ridge {ridge:.3g}" in row.bound_reason


def test_dram_reads_cover_at_least_the_compulsory_input_bytes() -> None:
    # ncu flushes the caches before each profiled pass, so A and B come from DRAM at least once
    metrics = config_metrics(read_long(NAIVE / "ncu_raw.csv"))
    for row in metrics.itertuples():
        m, n, k = map(int, _DIMS.search(row.config_id).groups())
        assert row.dram_read_bytes >= 0.95 * 4 * (m * k + k * n)
        assert row.dram_bytes == pytest.approx(row.dram_read_bytes + row.dram_write_bytes)


def test_derived_columns_are_consistent() -> None:
    metrics = config_metrics(read_long(CUBLAS / "ncu_raw.csv"))
    assert len(metrics) == 4 and (metrics["ncu_kernels"] == 1).all()
    np.testing.assert_allclose(metrics["ai_dram"], metrics["flops_counted"] / metrics["dram_bytes"])
    # H100 SXM: 132 SMs x 128 FP32 lanes x 2 FLOP x ~1.98 GHz and 3.35 TB/s
    assert metrics["peak_fp32_flops_per_s"].between(55e12, 70e12).all()
    assert metrics["peak_dram_bytes_per_s"].between(3.0e12, 3.5e12).all()
    assert metrics["registers_per_thread"].between(1, 255).all()
    assert metrics["achieved_occupancy_pct"].between(0, 100).all()
    assert set(metrics["bound"]) <= {"memory", "compute"}


def test_kernels_of_one_configuration_are_combined() -> None:
    # cuBLAS may launch several kernels in one range: counts add up, percentages are
    # weighted by duration, launch figures come from the longest kernel
    long = read_long(CUBLAS / "ncu_raw.csv")
    one = long[long["config_id"] == long["config_id"].iloc[0]]
    second = one.assign(kernel_id=one["kernel_id"] + 1000)
    second.loc[second["metric"] == "gpu__time_duration.sum", "value"] /= 3
    second.loc[second["metric"] == "launch__registers_per_thread", "value"] = 1
    pct = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
    second.loc[second["metric"] == pct, "value"] = 0.0
    both = config_metrics(pd.concat([one, second]))
    alone = config_metrics(one)
    assert both["ncu_kernels"].iloc[0] == 2
    assert both["flops_counted"].iloc[0] == 2 * alone["flops_counted"].iloc[0]
    assert both["ncu_time_ms"].iloc[0] == pytest.approx(alone["ncu_time_ms"].iloc[0] * 4 / 3)
    assert both["sm_throughput_pct"].iloc[0] == pytest.approx(
        alone["sm_throughput_pct"].iloc[0] * 3 / 4
    )
    assert both["registers_per_thread"].iloc[0] == alone["registers_per_thread"].iloc[0]


def test_empty_csv_gives_an_empty_table() -> None:
    assert config_metrics(pd.DataFrame(columns=["config_id", "metric", "value"])).empty
