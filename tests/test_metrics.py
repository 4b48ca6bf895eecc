"""The registry's numbers on real captured rows: FLOPs by precision, the roof of every row,
ceilings, the hierarchical bytes and the timing target (captures of 2026-11-23, H100)."""

import math

import pandas as pd
import pytest

from conftest import CAPTURES, STUDIES, replayed
from ncuflow.metrics import COLUMNS, LEVELS, PRECISIONS, required_metrics

LADDER = "h100-sxm"


@pytest.fixture(scope="module")
def ladder() -> pd.DataFrame:
    table = replayed(LADDER)["matmul_ladder"]  # the measured rows: not those a restriction skips
    return table[(table["runs_on"] == "gpu") & (table["status"] != "skipped")].copy()


def _with_capture() -> list[str]:
    return [c for c in STUDIES if (CAPTURES / c / "capture.json").is_file()]


def test_counted_flops_equal_the_analytic_count_where_tiles_divide(ladder: pd.DataFrame) -> None:
    # float32 and fp16 kernels and libraries; register-zeroing HFMA2.MMA in float32 kernels
    # is not their arithmetic (flops_undeclared shows it)
    square = ladder[ladder["M"].isin([1024, 2048, 4096])]
    ratio = square["flops_counted"] / square["flops"]
    assert ((ratio - 1).abs() <= 1e-3).all(), square.loc[(ratio - 1).abs() > 1e-3, "variant"]
    hand_written = square[~square["baseline"]]
    # stream_k's owners add the partial tiles of the tiles they share: one BM×BN tile of
    # fp32 adds per block at most, beyond 2·M·N·K
    fixups = hand_written["variant"] == "stream_k"
    exact = hand_written[~fixups]
    assert (exact["flops_counted"] == exact["flops"]).all()
    shared = hand_written[fixups]
    blocks = shared["grid"].str.extract(r"^(\d+)")[0].astype(int)
    extra = shared["flops_counted"] - shared["flops"]
    assert ((extra >= 0) & (extra <= blocks * shared["BM"] * shared["BN"])).all()
    assert (extra > 0).any()
    smem = square[square["variant"] == "smem_tiled"]
    assert (smem["flops_undeclared"] > 0).all()  # the zeroing is there, and not counted


def test_at_2049_the_excess_is_the_padding_each_variant_declares(ladder: pd.DataFrame) -> None:
    # the ladder's own CUDA kernels: a library rung (Triton) declares neither figure
    odd = ladder[(ladder["M"] == 2049) & ~ladder["baseline"] & (ladder["variant"] != "triton_fp16")]
    # ten rungs at one shape, six shapes of warptile, three of stream_k, four of mma_fp16,
    # two of each WMMA rung
    assert len(odd) == 10 + 6 + 3 + 4 + 2 + 2 and odd["executed_flops"].notna().all()
    exact = odd[odd["variant"] != "stream_k"]  # and the adds of its split tiles
    assert (exact["flops_counted"].to_numpy() == exact["executed_flops"].to_numpy()).all()
    shared = odd[odd["variant"] == "stream_k"]
    assert (shared["flops_counted"] > shared["executed_flops"]).all()
    padded = odd[odd["variant"] != "naive"]
    assert (padded["flops_counted"] > padded["flops"]).all()


def test_each_row_sits_on_the_roof_of_its_precision(ladder: pd.DataFrame) -> None:
    roof = dict(zip(ladder["dtype"], ladder["roof"], strict=False))
    assert roof == {"float32": "fp32", "tf32": "tensor_tf32", "float16": "tensor_fp16"}
    row = ladder[(ladder["variant"] == "cublas_tf32") & (ladder["M"] == 4096)].iloc[0]
    # cuBLAS TF32 outruns the FP32 CUDA-core roof many times: it must not be placed there
    assert row["achieved_flops_per_s"] > 5 * row["peak_fp32_flops_per_s"]
    assert row["roof_flops_per_s"] == row["peak_tensor_tf32_flops_per_s"]


def test_theoretical_tensor_roofs_are_the_published_dense_rates(ladder: pd.DataFrame) -> None:
    # ncu's sm__ops_path_tensor_src_fp16 peak is the 2:4-sparse rate; the dense one used
    # must equal NVIDIA's per-SM rate for compute capability 9.0 at the kernel's clock
    sms = 132
    for name in ("tensor_fp16", "tensor_tf32", "tensor_bf16", "fp32", "fp64"):
        per_sm = ladder[f"peak_{name}_flops_per_s"] / (ladder["sm_clock_hz"] * sms)
        assert per_sm.to_numpy() == pytest.approx(PRECISIONS[name].published_per_sm["9.0"])


@pytest.mark.parametrize("capture", _with_capture())
def test_no_row_runs_faster_than_its_roof(capture: str) -> None:
    for table in replayed(capture).values():
        rows = table[table["roof"].fillna("") != ""]
        assert (rows["achieved_flops_per_s"] <= rows["roof_flops_per_s"] * 1.02).all()
        timed = rows["flops"] / (rows["time_ms"] / 1e3)  # analytic FLOPs, CUDA-event time
        assert (timed <= rows["roof_flops_per_s"] * 1.02).all(), rows.loc[
            timed > rows["roof_flops_per_s"] * 1.02, ["variant", "config_id"]
        ]


@pytest.mark.parametrize("capture", _with_capture())
def test_dram_traffic_is_never_silently_below_the_compulsory_bytes(capture: str) -> None:
    for table in replayed(capture).values():
        rows = table[table["dram_bytes"].notna()]
        below = rows[rows["dram_bytes"] < 0.98 * rows["min_bytes"]]
        assert below["bound_reason"].str.contains("below the compulsory").all()
        # writes the L2 still held are what the raw counter missed
        assert (rows["dram_bytes"] >= rows["dram_bytes_counted"]).all()


def test_deferred_writes_fill_the_gap_at_1024(ladder: pd.DataFrame) -> None:
    small = ladder[ladder["M"] == 1024]
    assert (small["dram_bytes_counted"] < small["min_bytes"]).any()  # the counter alone
    assert (small["dram_bytes"] >= small["min_bytes"]).all()
    assert (small["dram_write_deferred_bytes"] <= small["output_bytes"]).all()


def test_hierarchical_levels_and_intensities(ladder: pd.DataFrame) -> None:
    assert set(LEVELS) == {"dram", "l2", "l1", "shared"}
    for level in ("dram", "l2", "l1"):
        assert (ladder[f"{level}_bytes"] > 0).all()
        ai = ladder["flops_counted"] / ladder[f"{level}_bytes"]
        assert ladder[f"ai_{level}"].to_numpy() == pytest.approx(ai.to_numpy())
    # theoretical bandwidths of the H100 SXM at the clocks ncu read
    assert ladder["peak_dram_bytes_per_s"].between(3.0e12, 3.5e12).all()
    assert (ladder["peak_l2_bytes_per_s"] > 2 * ladder["peak_dram_bytes_per_s"]).all()
    assert (ladder["peak_l1_bytes_per_s"] > 2 * ladder["peak_l2_bytes_per_s"]).all()


def test_model_dram_bytes_beside_the_measured_ones(ladder: pd.DataFrame) -> None:
    own = ladder[~ladder["baseline"] & (ladder["variant"] != "triton_fp16")]  # CUDA kernels
    assert own["model_dram_bytes"].notna().all()
    assert (own["model_dram_bytes"] >= own["min_bytes"]).all()


def test_measured_ceilings_are_stored_with_the_capture() -> None:
    import json

    ceilings = json.loads((CAPTURES / LADDER / "device.json").read_text())["ceilings"]
    assert {"dram", "l2", "l1", "shared", "fp32", "fp64", "tensor_fp16", "tensor_tf32"} <= set(
        ceilings
    )
    assert all(c["value"] > 0 and c["method"] for c in ceilings.values())
    assert 2.5e12 < ceilings["dram"]["value"] < 3.35e12  # below the 3.35 TB/s theoretical


def test_every_short_kernel_meets_the_timing_target_or_says_why(ladder: pd.DataFrame) -> None:
    timed = ladder[ladder["time_ms"] > 0.02]
    assert ((timed["time_ci95_pct"] <= 1.0) | timed["time_unstable"]).all()
    assert (timed.loc[timed["time_unstable"], "time_note"] != "").all()


def test_a_family_that_only_moves_bytes() -> None:
    table = replayed("h100-sxm-transpose")["transpose"]
    assert (table["merit"] == "bytes").all() and (table["flops"] == 0).all()
    assert (table["gflops"] == 0).all() and (table["gbps"] > 0).all()
    assert (table["roof"].fillna("") == "").all() and (table["ai_dram"] == 0).all()
    assert (table["dram_gbps"] > 0).all()
    big = table[(table["M"] == 8192) & (table["TILE"] == 32)].set_index("PAD")
    assert big.loc[0, "bound_level"] == "shared"  # 32-way bank conflicts
    assert big.loc[1, "bound_level"] == "dram"


def test_the_registry_is_one_place() -> None:
    metrics = required_metrics()
    assert len(metrics) == len(set(metrics))
    for column in COLUMNS.values():
        assert column.reduce in {"sum", "weighted", "longest"} and column.unit
        assert set(column.needs) <= set(metrics)
    with_nan = COLUMNS["flops_fp32"].formula(lambda metric: math.nan)
    assert math.isnan(with_nan)  # never a made-up zero for a counter ncu did not report
