import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from ncuflow.device.facts import facts_differences
from ncuflow.errors import ConfigError
from ncuflow.measure.problem import Problem
from ncuflow.plan import LaunchGeometry, Plan, Timing
from ncuflow.spec import load_family
from ncuflow.study.expand import DeviceLimits, VariantGrid, config_id, size_grid
from ncuflow.vocab import PENDING, SKIPPED

FAMILY = load_family(ROOT / "kernels", "matmul")


def test_size_grid_is_the_cross_product_of_free_dimensions() -> None:
    grid = size_grid({"M": [1, 2], "N": [3, 4], "K": 5}, ("M", "N", "K"), "sizes")
    assert grid == [
        {"M": 1, "N": 3, "K": 5},
        {"M": 1, "N": 4, "K": 5},
        {"M": 2, "N": 3, "K": 5},
        {"M": 2, "N": 4, "K": 5},
    ]


def test_tied_dimensions_follow_their_expressions_in_any_order() -> None:
    grid = size_grid({"M": "N", "N": [8, 16], "K": "2 * M"}, ("M", "N", "K"), "sizes")
    assert grid == [{"M": 8, "N": 8, "K": 16}, {"M": 16, "N": 16, "K": 32}]


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ({"M": 8, "N": "M"}, "missing K"),
        ({"M": 8, "N": "M", "K": "M", "L": 3}, "unknown L"),
        ({"M": "N", "N": "K", "K": "M"}, "cycle"),
        ({"M": 8, "N": "M - 8", "K": "M"}, "gives 0"),
        ({"M": 8, "N": "M / 3", "K": "M"}, "gives 2.66"),
        ({"M": 8, "N": "X", "K": "M"}, "names X, which is not a dimension"),
    ],
)
def test_bad_sizes_are_named(sizes: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        size_grid(sizes, ("M", "N", "K"), "experiments.e.sizes")


def test_config_id_is_readable_and_stable() -> None:
    assert config_id({"TILE": 16}, {"M": 2048, "N": 2048, "K": 2048}) == (
        "TILE=16_M=2048_N=2048_K=2048"
    )
    assert config_id({}, {"M": 1, "N": 2, "K": 3}) == "M=1_N=2_K=3"


H100 = DeviceLimits()


def _expand(variant: str, params: dict, restrictions=(), limits=H100):
    sizes = [{"M": 1023, "N": 1023, "K": 1023}]
    return VariantGrid(
        "e", FAMILY, FAMILY.variants[variant], sizes, params, restrictions, limits, "where"
    ).rows()


def test_expansion_keeps_failing_combinations_as_skipped_rows_with_reasons() -> None:
    rows = _expand("smem_tiled", {"TILE": [16, 32, 64]})
    assert [r.status for r in rows] == [PENDING, PENDING, SKIPPED]
    assert "4096 threads exceeds the device limit of 1024" in rows[2].error
    assert rows[0].launches == (LaunchGeometry("matmul_smem_tiled", (16, 16, 1), (64, 64, 1), 0),)
    assert rows[0].flops == 2 * 1023**3
    assert rows[0].min_bytes == 3 * 1023 * 1023 * 4


def test_restrictions_from_the_experiment_apply_too() -> None:
    rows = _expand("naive", {"BLOCK_X": [8, 32], "BLOCK_Y": [8]}, ["BLOCK_X >= 16"])
    assert [r.status for r in rows] == [SKIPPED, PENDING]
    assert rows[0].error == "restriction 'BLOCK_X >= 16' is false (BLOCK_X=8)"


def test_restrictions_may_name_the_device_facts_of_the_config() -> None:
    fits = ["BLOCK_X * BLOCK_Y * 2 <= max_threads_per_sm", "BLOCK_X * 4 + 16 <= sm_count"]
    rows = _expand("naive", {"BLOCK_X": [32], "BLOCK_Y": [32]}, fits)  # the H100's by default
    assert (
        rows[0].error
        == "restriction 'BLOCK_X * 4 + 16 <= sm_count' is false (BLOCK_X=32, sm_count=132)"
    )
    rows = _expand("naive", {"BLOCK_X": [32], "BLOCK_Y": [32]}, fits, DeviceLimits(sm_count=144))
    assert rows[0].status == PENDING
    assert DeviceLimits().facts() == {"sm_count": 132, "max_threads_per_sm": 2048,
                                      "smem_per_sm": 233472}  # fmt: skip


def test_a_job_says_which_device_facts_its_gpu_has_otherwise() -> None:
    assumed = DeviceLimits().facts()
    assert facts_differences(assumed, dict(assumed)) == []
    found = {**assumed, "sm_count": 78, "smem_per_sm": 167936}  # an H20's, say
    lines = facts_differences(assumed, found)
    assert len(lines) == 2 and lines[0].startswith(
        "this GPU has sm_count = 78, the plan assumed 132"
    )


def test_shared_memory_limit_without_opt_in() -> None:
    small = DeviceLimits(max_static_smem_per_block=4096)
    rows = _expand("smem_tiled", {"TILE": [16, 32]}, limits=small)
    assert [r.status for r in rows] == [PENDING, SKIPPED]
    assert "static shared memory 8192 B exceeds the 4096 B" in rows[1].error


def test_unknown_parameter_names_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown parameter 'TILES'.*valid: TILE"):
        _expand("smem_tiled", {"TILES": [16]})


def test_library_variants_have_one_configuration_per_size() -> None:
    rows = _expand("cublas_fp32", {})
    assert len(rows) == 1 and rows[0].config_id == "M=1023_N=1023_K=1023"
    assert rows[0].status == PENDING and rows[0].launches == (LaunchGeometry("cublas_matmul"),)


def test_a_persistent_grid_is_as_many_blocks_as_the_planned_gpu_holds() -> None:
    """stream_k's grid names sm_count: planned with device_limits' value, and never more
    blocks than tiles."""
    sizes = [{"M": 4096, "N": 4096, "K": 4096}, {"M": 300, "N": 517, "K": 129}]
    params = {"BN": [128], "MIN_BLOCKS": [2]}
    grids = [
        [row.launches[0].grid for row in VariantGrid(
            "e", FAMILY, FAMILY.variants["stream_k"], sizes, params, (), limits, "where").rows()]
        for limits in (H100, DeviceLimits(sm_count=114))
    ]  # fmt: skip
    assert grids == [[(264, 1, 1), (15, 1, 1)], [(228, 1, 1), (15, 1, 1)]]


def test_a_measurement_under_other_device_facts_is_not_reused_where_the_grid_follows_them() -> None:
    """Records are reused on resume by fingerprint: stream_k's (its grid names sm_count)
    differ between a plan for 132 and one for 114 SMs, warptile's (fixed grid) do not."""
    size = [{"M": 2049, "N": 2049, "K": 2049}]
    plan = Plan("e", "matmul", "v", "kernels", "f", 1, Timing(), {}, ())

    def prints(variant: str) -> list[str]:
        return [
            plan.fingerprint(VariantGrid("e", FAMILY, FAMILY.variants[variant], size,
                                         {}, (), limits, "where").rows(0, 1)[0])
            for limits in (H100, DeviceLimits(sm_count=114))
        ]  # fmt: skip

    first, other = prints("stream_k")
    assert first != other
    first, other = prints("warptile")
    assert first == other
    row = VariantGrid("e", FAMILY, FAMILY.variants["warptile"], size, {}, (), H100, "w").rows()[0]
    assert row.grid_facts is None  # its fingerprint as before (test_replay: as captured)


def test_any_range_of_positions_is_that_slice_of_the_grid() -> None:
    """A job expands only its part: positions [start, stop) of the grid, which may begin
    and end in the middle of a combination of tunables' sizes."""
    sizes = [{"M": m, "N": m, "K": m} for m in (64, 1023, 2049)]
    grid = VariantGrid("e", FAMILY, FAMILY.variants["smem_tiled"], sizes,
                       {"TILE": [8, 16, 64]}, (), H100, "where")  # fmt: skip
    whole = grid.rows()
    assert grid.size == len(whole) == 9
    for start, stop in ((0, 9), (2, 7), (4, 5), (8, 9), (3, 3)):
        assert grid.rows(start, stop) == whole[start:stop]
    assert list(grid.scan().pending) == [i for i, row in enumerate(whole) if row.pending]


def test_a_buffer_or_model_may_follow_a_device_fact_and_the_row_records_it(
    tmp_path: Path,
) -> None:
    """Any expression of a variant may name a device fact, not only its grid: a buffer of
    one partial sum per SM, a model that counts them. The row records the facts it follows
    (its fingerprint with them); buffers are allocated with them."""
    shutil.copytree(ROOT / "kernels" / "axpy", tmp_path / "axpy")
    naive = tmp_path / "axpy" / "naive.cu"
    naive.write_text(naive.read_text().replace("restrictions:", (
        "scratch:\n  partials: {shape: sm_count * 4, dtype: float32}\n"
        "model_dram_bytes: 12 * n + 4 * sm_count * 4\nrestrictions:")))  # fmt: skip
    family = load_family(tmp_path, "axpy")
    variant = family.variant("naive")
    plan = Plan("e", "axpy", "naive", str(tmp_path), "f", 1, Timing(), {"a": 2.0}, ())
    rows = {
        limits.sm_count: VariantGrid("e", family, variant, [{"n": 1000}], {}, (), limits,
                                     "where").rows()[0]
        for limits in (H100, DeviceLimits(sm_count=114))
    }  # fmt: skip
    assert rows[132].grid_facts == {"sm_count": 132} and rows[132].model_dram_bytes == 14112
    assert rows[114].model_dram_bytes == 12 * 1000 + 16 * 114
    assert plan.fingerprint(rows[132]) != plan.fingerprint(rows[114])
    row = rows[114]
    problem = Problem(family, variant, row.dims, {"a": 2.0}, 5, ("float32", "float32"))
    env = {**family.scope(variant, row.dims, row.params, ("float32", "float32")),
           **row.grid_facts}  # fmt: skip
    problem.prepare_scratch(env, {"partials": variant.scratch["partials"]})
    assert problem.arg("partials").shape == (456,)
