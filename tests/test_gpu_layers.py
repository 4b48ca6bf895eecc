"""On the GPU (pytest -m gpu, run on the GPU machine): the layer families of report 002,
the transfer family of report 003 and the in-place axpy family, every variant against the
float64 reference at the layer sizes and at awkward ones; the test tree's example family
on the GPU; several launches of one configuration profiled together, and an inout's
restore not profiled at all."""

from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT, measure_study, variants_as_run
from ncuflow.analyze.derive import config_metrics
from ncuflow.measure.worker import missing_modules
from ncuflow.profile.members import Member
from ncuflow.profile.stage import profile_stage
from ncuflow.spec import load_family
from ncuflow.study.config import load_study

pytestmark = pytest.mark.gpu

SIZES = {
    "classifier": [
        {"Ni": 25088, "Nn": 4096, "B": [1, 16]},
        {"Ni": 4096, "Nn": 1024, "B": [1, 16, 32]},
        {"Ni": 1023, "Nn": 517, "B": [1, 3, 16]},
        {"Ni": 4097, "Nn": 33, "B": [1, 48]},
        {"Ni": 7, "Nn": 5, "B": 1},
    ],
    "conv": [
        {"B": [1, 16], "Ni": 64, "Nn": 64, "Nx": 224, "Ny": 224, "Kx": 3, "Ky": 3},
        {"B": [1, 16], "Ni": 512, "Nn": 512, "Nx": 14, "Ny": 14, "Kx": 3, "Ky": 3},
        {"B": 3, "Ni": 3, "Nn": 5, "Nx": 13, "Ny": 7, "Kx": 5, "Ky": 3},
        {"B": 2, "Ni": 17, "Nn": 70, "Nx": 31, "Ny": 30, "Kx": [1, 7], "Ky": "Kx"},
    ],
    "transfer": [{"n": [256, 1000, 2048]}],
    "axpy": [{"n": [1, 31, 1000003, 1 << 22]}],  # in place; the vectorized kernel's tails
}


def _measure(tmp_path: Path, kernels: Path, experiments: dict) -> dict[str, dict]:
    return measure_study(tmp_path, kernels, experiments, repeats=3)


@pytest.mark.parametrize("family", list(SIZES))
def test_every_variant_matches_the_reference(tmp_path: Path, family: str) -> None:
    declared = load_family(ROOT / "kernels", family).variants
    variants = variants_as_run(family)  # at their defaults and as config.yaml runs them
    found = _measure(tmp_path, ROOT / "kernels", {
        family: {"family": family, "sizes": SIZES[family], "variants": variants}})  # fmt: skip
    optional = {v for v, spec in declared.items() if missing_modules(spec)}  # torch, say
    allowed = {v: {"ok", "skipped"} if v in optional else {"ok"} for v in declared}
    failures = [f"{v} {c}: {r['status']} {r['error']}" for v, records in found.items()
                for c, r in records.items() if r["status"] not in allowed[v]]  # fmt: skip
    assert not failures, "\n".join(failures)


def test_the_example_family_runs_on_the_gpu(tmp_path: Path) -> None:
    kernels = ROOT / "tests" / "data" / "kernels"
    variants = {"gather": None, "numpy_gather": None}
    found = _measure(tmp_path, kernels, {"g": {
        "family": "gather", "sizes": {"n": [1000, 1 << 20], "m": [7, 4099]},
        "scalars": {"alpha": -0.75}, "variants": variants}})  # fmt: skip
    statuses = {r["status"] for records in found.values() for r in records.values()}
    assert statuses == {"ok"}, found


def test_an_inouts_restore_is_not_profiled_with_the_kernel(tmp_path: Path) -> None:
    """The copy that gives y its drawn values back before the profiled launch is a copy,
    not a kernel, and outside the configuration's range: ncu sees one kernel each."""
    experiments = {"a": {"family": "axpy", "sizes": {"n": [4096, 1 << 20]},
                         "scalars": {"a": [2.0, -0.5]}, "variants": {"naive": None}}}  # fmt: skip
    found = _measure(tmp_path, ROOT / "kernels", experiments)["naive"]
    assert {r["status"] for r in found.values()} == {"ok"}, found
    study = load_study({"kernels_dir": str(ROOT / "kernels"), "experiments": experiments})
    member = Member(tmp_path / "a.naive.plan.json", tmp_path / "a.naive.measure.json", tmp_path)
    profile_stage([member], tmp_path / "chunks", study.ncu, lambda line: None)
    metrics = config_metrics(pd.read_parquet(tmp_path / "ncu_long.parquet"))
    assert sorted(metrics["config_id"]) == sorted(found) and len(found) == 4
    assert (metrics["ncu_kernels"] == 1).all()


def test_the_launches_of_a_configuration_are_profiled_together(tmp_path: Path) -> None:
    kernels = ROOT / "tests" / "data" / "kernels"
    experiments = {"g": {"family": "gather", "sizes": {"n": [4096, 5000], "m": 64},
                         "variants": {"gather": None}}}  # fmt: skip
    found = _measure(tmp_path, kernels, experiments)["gather"]
    study = load_study({"kernels_dir": str(kernels), "experiments": experiments})
    long_path = tmp_path / "ncu_long.parquet"
    member = Member(tmp_path / "g.gather.plan.json", tmp_path / "g.gather.measure.json", tmp_path)
    profile_stage([member], tmp_path / "chunks", study.ncu, lambda line: None)
    metrics = config_metrics(pd.read_parquet(long_path))
    assert sorted(metrics["config_id"]) == sorted(found)
    assert (metrics["ncu_kernels"] == 2).all()
