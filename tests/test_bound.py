"""The bound rule on real captured rows of every class (H100, 2026-11-23 and later)."""

import math

import pandas as pd
import pytest

from conftest import replayed
from ncuflow.analyze.bound import (
    BAND_POINTS,
    LATENCY_PCT,
    classify,
    flops_check,
    ncu_classes,
    occupancy_limiters,
)

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
        # half a wave (132 blocks, 2 fit per SM): ncu's Small Grid, though SMs are busy
        ((LADDER, "matmul_ladder", "stream_k", {"M": 2048}, {"BN": 128, "MIN_BLOCKS": 1}),
         "latency", "waves", "each SM holds fewer warps than it could"),
        # one block per SM for its shared memory (theoretical 6 %), over 7.8 waves
        ((LADDER, "matmul_ladder", "mma_fp16", {"M": 4096}, {"BN": 128, "STAGES": 4}),
         "latency", "occupancy", "theoretical occupancy 6 %, limited by shared_mem"),
        # achieved 64 % of a theoretical 100 %: ncu's first advice (AchievedOccupancy)
        ((TRANSPOSE, "transpose", "smem_tiled", {"M": 2048}, {"TILE": 16, "PAD": 1}),
         "latency", "occupancy", "achieved occupancy 64 % (sm__warps_active) against a "
         "theoretical 100 %"),
        ((VERDICTS, "histogram", "shared_atomic", {"BINS": 1024}, {}), "latency",
         "issue stalls", "sm__issue_active"),
    ],
)  # fmt: skip
def test_bound_rule_on_captured_rows(where: tuple, bound: str, level: str, words: str) -> None:
    capture, experiment, variant, size, params = where
    row = _row(capture, experiment, variant, size, **params)
    assert (row["bound"], row["bound_level"]) == (bound, level), row["bound_reason"]
    assert words in row["bound_reason"]


def test_a_small_grid_is_named_where_no_launch_limit_caps_occupancy() -> None:
    """The classifier's batched GEMV at B=16: 0.24 waves, every launch limit allows full
    occupancy (registers and warps tie at 8 blocks): the grid is the cause, as ncu says,
    not a limit."""
    row = _row(LADDER, "classifier", "batched", {"Ni": 25088, "Nn": 4096, "B": 16},
               BLOCK_B=16, BLOCK_N=16)  # fmt: skip
    assert row["theoretical_occupancy_pct"] == 100 and row["waves_per_sm"] < 0.25
    assert row["occupancy_limit_registers"] == row["occupancy_limit_warps"]
    assert (row["bound_level"], row["ncu_bottleneck"]) == ("waves", "Small Grid")
    assert "fills 24 % of one wave" in row["bound_reason"]
    assert "limited by" not in row["bound_reason"]
    # the same kernel over a grid of two waves: the gap between achieved (24 %) and
    # theoretical occupancy, never a limit that caps nothing
    full = classify({**row, "waves_per_sm": 2.0, "top_finding_rule": None}, {})
    assert full["bound_level"] == "occupancy", full["bound_reason"]
    assert "achieved occupancy 24 % (sm__warps_active) against a theoretical 100 %" in (
        full["bound_reason"])  # fmt: skip
    assert "limited by" not in full["bound_reason"]


def test_a_limit_is_named_where_it_caps_theoretical_occupancy() -> None:
    """stream_k's registers and shared memory both allow 2 blocks per SM (12.5 %): both
    named, as ncu names every tied limit; the achieved 6 % is within ncu's 10 points of it.
    Where ncu advises theoretical occupancy first, a limit is named above 25 % too."""
    row = _row(LADDER, "matmul_ladder", "stream_k", {"M": 2048}, BN=128, MIN_BLOCKS=1)
    many = classify({**row, "waves_per_sm": 2.0, "top_finding_rule": None}, {})
    assert many["bound_level"] == "occupancy", many["bound_reason"]
    assert ("theoretical occupancy 12 %, limited by registers and shared_mem "
            "(launch__occupancy_limit_registers, launch__occupancy_limit_shared_mem 2 blocks "
            "per SM)") in many["bound_reason"]  # fmt: skip
    advised = {**row, "waves_per_sm": 2.0, "top_finding_rule": "TheoreticalOccupancy",
               "theoretical_occupancy_pct": 37.5, "achieved_occupancy_pct": 36.0}  # fmt: skip
    said = classify(advised, {})
    assert said["bound_level"] == "occupancy"
    assert "theoretical occupancy 38 %, limited by registers" in said["bound_reason"]
    assert "first advice is TheoreticalOccupancy" in said["bound_reason"]
    assert classify({**advised, "top_finding_rule": "CPIStall"}, {})["bound_level"] == (
        "issue stalls")  # fmt: skip


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


def test_a_limit_is_named_only_where_it_caps_theoretical_occupancy() -> None:
    """At 100 % every launch limit ties and none limits; below it the fewest blocks per SM
    decide, every tie named (as ncu names them)."""
    limits = {"occupancy_limit_registers": 2, "occupancy_limit_shared_mem": 2,
              "occupancy_limit_warps": 8, "occupancy_limit_blocks": 32}  # fmt: skip
    assert occupancy_limiters({**limits, "theoretical_occupancy_pct": 100.0}) == []
    assert occupancy_limiters({**limits, "theoretical_occupancy_pct": math.nan}) == []
    assert occupancy_limiters({**limits, "theoretical_occupancy_pct": 25.0}) == [
        "registers", "shared_mem"]  # fmt: skip
