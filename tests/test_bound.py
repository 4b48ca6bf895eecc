"""The bound rule on real captured rows of every class (H100, 2026-11-23 and later)."""

import math

import pandas as pd
import pytest

from conftest import replayed
from ncuflow.analyze.bound import BAND_POINTS, LATENCY_PCT, classify, flops_check, ncu_classes

LADDER, TRANSPOSE, VERDICTS = "h100-sxm", "h100-sxm-transpose", "h100-sxm-verdicts"


def _row(capture: str, experiment: str, variant: str, size: dict, **params: int) -> dict:
    table = replayed(capture)[experiment]
    rows = table[table["variant"] == variant]
    for name, value in {**size, **params}.items():
        rows = rows[rows[name] == value]
    assert len(rows) == 1
    return rows.iloc[0].to_dict()


@pytest.mark.parametrize(
    ("where", "bound", "level", "words"),
    [
        # memory, at each unit, named by the breakdown part that decided
        ((TRANSPOSE, "transpose", "smem_tiled", {"M": 8192}, {"TILE": 32, "PAD": 1}),
         "memory", "dram", "% of measured"),
        # strided 4-byte stores: the crossbar into L2 is what saturates (SM writes)
        ((TRANSPOSE, "transpose", "naive", {"M": 8192}, {}), "memory", "l2",
         "lts__xbar2lts_cycles_active"),
        ((TRANSPOSE, "transpose", "cupy_transpose", {"M": 8192}, {}), "memory", "l2",
         "lts__t_tag_requests"),
        # strided loads that the block's warps read again from L1, and a naive SGEMM at 512
        ((VERDICTS, "write_and_l1", "strided_read", {"M": 8192}, {"BLOCK_Y": 8}), "memory",
         "l1", "l1tex__data_pipe_lsu_wavefronts"),
        ((VERDICTS, "l1_sgemm", "naive", {"M": 512}, {}), "memory", "l1", "L1"),
        ((LADDER, "matmul_ladder", "naive", {"M": 4096}, {}), "memory", "l1",
         "l1tex__data_pipe_lsu_wavefronts"),
        ((TRANSPOSE, "transpose", "smem_tiled", {"M": 8192}, {"TILE": 32, "PAD": 0}),
         "memory", "shared", "shared-memory wavefronts"),
        # compute on the roof of its precision, or the pipe when FLOPs are not what fills it
        ((LADDER, "matmul_ladder", "cublas_fp16", {"M": 4096}, {}), "compute", "tensor_fp16",
         "tensor_fp16 FLOPs at"),
        ((LADDER, "matmul_ladder", "warptile", {"M": 4096},
          {"BN": 256, "WM": 64, "TM": 16, "MIN_BLOCKS": 1}), "compute", "fp32", "fp32 FLOPs at"),
        ((LADDER, "matmul_ladder", "tiled_coarse", {"M": 4096}, {}), "compute", "issue",
         "instructions other than FLOPs fill it"),
        # latency, with its limiter: four bins put every atomic on a few L2 slices
        ((VERDICTS, "histogram", "global_atomic", {"BINS": 4}, {}), "latency", "atomics",
         "atomic contention"),
        ((LADDER, "matmul_ladder", "tiled_coarse", {"M": 1024}, {}), "latency", "waves",
         "of one wave"),
        ((LADDER, "matmul_ladder", "tiled_coarse", {"M": 2049}, {}), "latency", "tail",
         "partial"),
        ((LADDER, "matmul_ladder", "stream_k", {"M": 2048}, {"BN": 128, "MIN_BLOCKS": 1}),
         "latency", "occupancy", "limited by registers"),
        ((TRANSPOSE, "transpose", "smem_tiled", {"M": 2048}, {"TILE": 16, "PAD": 1}),
         "latency", "issue stalls", "sm__issue_active"),
    ],
)  # fmt: skip
def test_bound_rule_on_captured_rows(where: tuple, bound: str, level: str, words: str) -> None:
    capture, experiment, variant, size, params = where
    row = _row(capture, experiment, variant, size, **params)
    assert (row["bound"], row["bound_level"]) == (bound, level), row["bound_reason"]
    assert words in row["bound_reason"]


def test_near_the_line_a_verdict_is_borderline_and_names_both() -> None:
    row = _row(TRANSPOSE, "transpose", "smem_tiled", {"M": 2049}, TILE=32, PAD=1)
    assert row["bound"] == "borderline"
    assert row["bound_level"].startswith("memory (l2) or latency (")  # both candidates
    assert f"within {BAND_POINTS} points" in row["bound_reason"]
    top = max(row["util_l2_pct"], row["memory_throughput_pct"], row["sm_throughput_pct"])
    assert abs(top - LATENCY_PCT) < BAND_POINTS


@pytest.mark.parametrize("capture", [LADDER, TRANSPOSE])
def test_the_memory_figure_is_never_below_ncus_memory_throughput(capture: str) -> None:
    for table in replayed(capture).values():
        for row in table[table["bound"].isin(["memory", "compute", "latency"])].to_dict("records"):
            units = [row[f"util_{u}_pct"] for u in ("dram", "l2", "l1", "shared")]
            top = max([u for u in units if math.isfinite(u)] + [row["memory_throughput_pct"]])
            busiest = max(top, row["sm_throughput_pct"])
            expected = "latency" if busiest < LATENCY_PCT else row["bound"]
            assert row["bound"] == expected, row["bound_reason"]


def test_ncus_titles_stand_for_classes() -> None:
    row = _row(TRANSPOSE, "transpose", "naive", {"M": 8192})  # memory 86 %, SM 6 %
    assert ncu_classes({**row, "ncu_bottleneck": "High Throughput"}) == {"memory"}
    assert ncu_classes({**row, "ncu_bottleneck": "High Memory Throughput"}) == {"memory"}
    assert ncu_classes({**row, "ncu_bottleneck": "Balanced Throughput"}) == {"memory", "compute"}
    assert ncu_classes({**row, "ncu_bottleneck": "Small Grid"}) == {"latency"}
    assert ncu_classes({**row, "ncu_bottleneck": None}) == set()
    said = classify({**row, "ncu_bottleneck": "Small Grid"}, {})
    assert said["bound_agrees"] is False and "ncu says 'Small Grid'" in said["bound_reason"]
    assert classify({**row, "ncu_bottleneck": "High Throughput"}, {})["bound_agrees"] is True


def test_flops_are_checked_against_the_declared_work() -> None:
    row = _row(LADDER, "matmul_ladder", "warptile", {"M": 2049}, BN=128, WM=32, TM=8,
               MIN_BLOCKS=1)  # fmt: skip
    assert flops_check(row) == ""  # executed_flops declares the padded tiles
    off = {**row, "executed_flops": row["executed_flops"] / 2}
    assert flops_check(off).startswith("counted 2× executed_flops")
    library = _row(LADDER, "matmul_ladder", "cublas_fp32", {"M": 2049})
    assert "a library kernel" in library["flops_check"]


def test_missing_metrics_give_no_bound() -> None:
    row = _row(LADDER, "matmul_ladder", "naive", {"M": 1024})
    empty = {k: (math.nan if isinstance(v, float) else v) for k, v in row.items()}
    assert classify(empty, {})["bound_reason"] == "no ncu metrics for this configuration"
    assert pd.isna(classify(empty, {})["bound_agrees"])
