"""The transpose family: a zero-FLOP, bandwidth-bound family declared as data. It loads, its
reference transposes, and every CUDA variant compiles for sm_90 without spills."""

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import ROOT
from ncuflow.spec import Check, load_family
from ncuflow.study.config import load_study

FOLDER = ROOT / "kernels" / "transpose"
NVCC = shutil.which("nvcc")
CUDA_VARIANTS = sorted(p.stem for p in FOLDER.glob("*.cu"))


def test_transpose_family_declares_its_variants() -> None:
    family = load_family(ROOT / "kernels", "transpose")
    assert family.dims == ("M", "N")
    assert set(family.variants) == {"naive", "strided_read", "smem_tiled", "cupy_transpose"}
    assert family.args == ("A", "B", "M", "N")
    dims = {"M": 3, "N": 5}
    assert tuple(e(dims) for e in family.inputs["A"].shape) == (3, 5)
    assert tuple(e(dims) for e in family.outputs["B"].shape) == (5, 3)
    assert family.flops(dims) == 0
    assert family.min_bytes({**dims, "in_bytes": 4, "out_bytes": 4}) == 120
    assert family.checks["B"] == Check("rel_fro", {"float32": 0.0})
    assert family.size_axis == "M"
    for name in CUDA_VARIANTS:
        variant = family.variants[name]
        assert variant.is_cuda and variant.kernels == (f"transpose_{name}",)
    baseline = family.variants["cupy_transpose"]
    assert baseline.baseline and not baseline.is_cuda and baseline.profiled
    assert callable(family.function(baseline.launches[0].library or ""))


def test_reference_is_the_contiguous_transpose() -> None:
    family = load_family(ROOT / "kernels", "transpose")
    a = np.random.default_rng(0).standard_normal((4, 7))
    b = family.function("reference")(A=a)["B"]
    assert b.shape == (7, 4) and b.flags.c_contiguous
    np.testing.assert_array_equal(b, a.T)
    a[0, 0] = 42.0  # a copy, not a view of the input
    assert b[0, 0] != 42.0


def test_transpose_study_expands() -> None:
    config = yaml.safe_load((ROOT / "experiments" / "transpose.yaml").read_text())
    config["kernels_dir"] = str(ROOT / "kernels")
    experiment = load_study(config).experiments["transpose"]
    assert set(experiment.variants) == {"naive", "smem_tiled", "cupy_transpose"}
    assert len(experiment.rows("naive")) == 5
    assert {r.params["TILE"] for r in experiment.rows("smem_tiled")} == {16, 32}


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize(
    ("name", "params"),
    [
        *((name, {}) for name in CUDA_VARIANTS),
        ("smem_tiled", {"TILE": 16}),
        ("smem_tiled", {"PAD": 0}),
    ],
    ids=lambda v: "_".join(f"{k}={x}" for k, x in v.items()) or "defaults"
    if isinstance(v, dict) else v,
)  # fmt: skip
def test_variant_compiles_for_sm90(tmp_path: Path, name: str, params: dict[str, int]) -> None:
    assert NVCC is not None
    defines = [f"-D{k}={v}" for k, v in params.items()]
    command = [NVCC, "-arch=sm_90", "-cubin", "-std=c++17", "-Xptxas", "-v", *defines,
               "-o", str(tmp_path / "k.cubin"), str(FOLDER / f"{name}.cu")]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert f"Compiling entry function 'transpose_{name}'" in proc.stderr
    spills = re.findall(r"(\d+) bytes spill stores", proc.stderr)
    assert spills and all(s == "0" for s in spills), proc.stderr
