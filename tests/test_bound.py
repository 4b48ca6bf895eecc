"""The bound rule on real captured rows of every class (H100, 2026-11-23)."""

import math

import pytest

from conftest import replayed
from ncuflow.analyze.bound import TIE_POINTS, classify


def _row(capture: str, experiment: str, variant: str, size: int, **params: int) -> dict:
    table = replayed(capture)[experiment]
    rows = table[(table["variant"] == variant) & (table["M"] == size)]
    for name, value in params.items():
        rows = rows[rows[name] == value]
    assert len(rows) == 1
    return rows.iloc[0].to_dict()


@pytest.mark.parametrize(
    ("where", "bound", "level", "words"),
    [
        # memory, at each level
        (("transpose", "smem_tiled", 8192, {"TILE": 32, "PAD": 1}), "memory", "dram", "DRAM at"),
        (("matmul_ladder", "wmma_fp16_pipelined", 4096, {"STAGES": 4}), "memory", "l2", "L2 at"),
        (("matmul_ladder", "naive", 4096, {}), "memory", "l1", "L1 at"),
        (("matmul_ladder", "double_buffer", 4096, {}), "memory", "shared", "shared memory at"),
        (("transpose", "smem_tiled", 8192, {"TILE": 32, "PAD": 0}), "memory", "shared", "shared"),
        # compute, on the roof of its precision
        (("matmul_ladder", "cublas_tf32", 4096, {}), "compute", "tensor_tf32", "tensor_tf32 at"),
        (("matmul_ladder", "cublas_fp16", 4096, {}), "compute", "tensor_fp16", "tensor_fp16 at"),
        (
            ("matmul_ladder", "warptile", 4096, {"BN": 256, "WM": 64, "TM": 16, "MIN_BLOCKS": 1}),
            "compute",
            "fp32",
            "fp32 at",
        ),
        # latency, with its limiter
        (("matmul_ladder", "tiled_coarse", 1024, {}), "latency", "waves", "of one wave"),
        (
            ("matmul_ladder", "wmma_fp16", 4096, {"FRAG_M": 4}),
            "latency",
            "occupancy",
            "limited by registers",
        ),
        (("matmul_ladder", "regtile_vd", 4096, {}), "latency", "issue stalls", "sm__issue_active"),
    ],
)
def test_bound_rule_on_captured_rows(where: tuple, bound: str, level: str, words: str) -> None:
    capture = "h100-sxm-transpose" if where[0] == "transpose" else "h100-sxm"
    experiment, variant, size, params = where
    row = _row(capture, experiment, variant, size, **params)
    assert (row["bound"], row["bound_level"]) == (bound, level), row["bound_reason"]
    assert words in row["bound_reason"]
    assert "% of measured peak" in row["bound_reason"]  # against this device's ceilings


def test_reason_gives_the_intensity_against_the_ridge() -> None:
    row = _row("h100-sxm", "matmul_ladder", "smem_tiled", 4096)
    ridge = row["roof_flops_per_s"] / row["peak_dram_bytes_per_s"]
    assert f"AI {row['ai_dram']:.3g} FLOP/B" in row["bound_reason"]
    assert f"the fp32 ridge {ridge:.3g}" in row["bound_reason"]


def test_near_ties_are_called_balanced_and_name_the_larger() -> None:
    row = _row("h100-sxm", "matmul_ladder", "naive", 4096)  # L1 79 % vs SM pipes 75 %
    assert row["bound_reason"].startswith(f"balanced within {TIE_POINTS:.0f} points")
    moved = {**row, "sm_throughput_pct": 20.0}
    bound, level, reason = classify(moved, {})  # theoretical ceilings only
    assert (bound, level) == ("memory", "l1") and not reason.startswith("balanced")
    assert "% of theoretical peak" in reason


def test_missing_metrics_give_no_bound() -> None:
    row = _row("h100-sxm", "matmul_ladder", "naive", 1024)
    empty = {k: (math.nan if isinstance(v, float) else v) for k, v in row.items()}
    assert classify(empty, {}) == ("", "", "no ncu metrics for this configuration")
