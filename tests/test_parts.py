"""Jobs sized by their expected GPU time and run longest first (study.parts)."""

from conftest import minimal_config
from ncuflow.study.config import load_study
from ncuflow.study.parts import batch_groups, expected_s, part_expected_s, part_starts


def test_parts_hold_about_equal_time_and_never_more_than_their_size() -> None:
    # twelve configurations to run at positions 0, 2, 4, ...: six cheap, then six dear
    pending = list(range(0, 24, 2))
    expected = [1.0] * 6 + [5.0] * 6
    starts = part_starts(pending, expected, size=4, most=256)
    assert starts == (0, 8, 16, 20)  # four cheap; two cheap and two dear; then two by two
    times = [part_expected_s(pending, expected, a, b) for a, b in
             zip(starts, [*starts[1:], 24], strict=True)]  # fmt: skip
    assert times == [4.0, 12.0, 10.0, 10.0] and sum(times) == sum(expected)
    assert part_starts(pending, [1.0] * 12, size=4, most=256) == (0, 8, 16)  # by count
    # at most `most` parts: their size grows
    assert part_starts(pending, expected, size=1, most=3) == (0, 8, 16)


def test_a_larger_kernel_is_expected_to_take_longer_and_its_job_goes_first() -> None:
    assert expected_s(2 * 4096**3, 3 * 4 * 4096**2) > expected_s(2 * 1024**3, 3 * 4 * 1024**2)
    config = minimal_config(variants={"naive": {"params": {"BLOCK_X": [8, 16, 32]}}},
                            sizes={"M": [512, 4096], "N": "M", "K": "M"})  # fmt: skip
    config["configurations_per_job"] = 2
    study = load_study(config)
    parts = study.parts("sq", "naive")
    priorities = [study.priority("sq", "naive", part) for part in parts]
    assert len(parts) == 3 and min(priorities) > 0
    total = sum(expected_s(r.flops, r.min_bytes) for r in study.plan("sq", "naive").pending)
    assert abs(sum(priorities) - total) <= len(parts)  # each part's seconds, rounded


def test_batches_are_as_few_as_their_size_allows_and_take_about_equal_time() -> None:
    expected = [40.0, 1.0, 1.0, 30.0, 2.0, 25.0, 3.0, 20.0, 1.0, 5.0]
    groups = batch_groups(expected, most=4)
    assert len(groups) == 3 and all(len(g) <= 4 for g in groups)
    assert sorted(i for g in groups for i in g) == list(range(10))  # each part once
    assert all(g == sorted(g) for g in groups)  # in their given order
    times = [sum(expected[i] for i in g) for g in groups]
    assert max(times) - min(times) <= max(expected[i] for g in groups for i in g if len(g) > 1)
    assert batch_groups([], most=8) == [] and batch_groups([3.0], most=8) == [[0]]


def test_the_default_study_runs_in_a_few_batches_host_variants_apart() -> None:
    from conftest import ROOT
    from ncuflow.files import read_config
    from ncuflow.study.config import load_study

    study = load_study(read_config(ROOT / "config.yaml"), root=ROOT)
    batches = study.batches("matmul_ladder")
    assert len(batches) == 3  # 19 GPU variants in 2 (at most 16 each), cpu_blas alone
    taken = [study.batch_jobs("matmul_ladder", b) for b in batches]
    assert sum(len(t) for t in taken) == 20 and taken[-1] == [("cpu_blas", "p0")]
    assert [study.batch_gpus("matmul_ladder", b) for b in batches] == [1, 1, 0]
    for batch, jobs in zip(batches, taken, strict=True):
        assert all(study.batch_of("matmul_ladder", v, p) == batch for v, p in jobs)
    assert study.batch_files("matmul_ladder", "b2", "plan.json") == [
        "results/matmul_ladder/cpu_blas/p0/plan.json"
    ]
