"""The families of reports 002 and 003 on the CPU: their declarations, their references
against formulations of their own, their studies' expansion, and the transfer family's
columns."""

import itertools
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import ROOT
from ncuflow.analyze.collect import family_columns
from ncuflow.spec import load_family
from ncuflow.study.config import load_study

KERNELS = ROOT / "kernels"


def test_classifier_declares_report_002s_ladder() -> None:
    family = load_family(KERNELS, "classifier")
    assert family.dims == ("Ni", "Nn", "B")
    assert family.order == ("baseline", "batched", "smem", "smem_batched", "wmma_batched",
                            "gemv_vectorized", "cublas")  # fmt: skip
    assert set(family.variants) == set(family.order)
    assert family.speedup_over == "baseline" and family.variants["cublas"].baseline
    wmma = family.variants["wmma_batched"]
    assert (wmma.dtype, wmma.out_dtype, wmma.compute) == ("float16", "float32", ("tensor_fp16",))
    assert family.flops({"Ni": 25088, "Nn": 4096, "B": 16}) == 2 * 25088 * 4096 * 16


def test_classifier_reference() -> None:
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((5, 7)), rng.standard_normal((7, 3))
    y = load_family(KERNELS, "classifier").function("reference")(W=w, x=x)["y"]
    expected = [[sum(w[n, i] * x[i, b] for i in range(7)) for b in range(3)] for n in range(5)]
    np.testing.assert_allclose(y, expected, rtol=1e-12)


def test_conv_declares_report_002s_variants() -> None:
    family = load_family(KERNELS, "conv")
    assert family.dims == ("B", "Ni", "Nn", "Nx", "Ny", "Kx", "Ky")
    assert set(family.variants) == set(family.order)
    dims = {"B": 2, "Ni": 3, "Nn": 4, "Nx": 5, "Ny": 6, "Kx": 3, "Ky": 2}
    assert tuple(e(dims) for e in family.inputs["x"].shape) == (2, 3, 7, 7)
    assert tuple(e(dims) for e in family.outputs["y"].shape) == (2, 4, 6, 5)
    im2col = family.variants["im2col_gemm"]
    assert len(im2col.launches) >= 2 and im2col.scratch
    cudnn = family.variants["cudnn"]
    assert cudnn.requires == ("torch",) and cudnn.baseline and cudnn.profiled


def test_conv_reference_is_the_direct_sum() -> None:
    """The reference (one contraction per filter tap) against the definition, summed term
    by term, at sizes no tile divides and a non-square filter."""
    b, ni, nn, nx, ny, kx, ky = 2, 3, 4, 5, 3, 3, 2
    rng = np.random.default_rng(1)
    x = rng.standard_normal((b, ni, ny + ky - 1, nx + kx - 1))
    w = rng.standard_normal((nn, ni, ky, kx))
    y = load_family(KERNELS, "conv").function("reference")(x=x, w=w, Nx=nx, Ny=ny, Kx=kx, Ky=ky)[
        "y"
    ]
    expected = np.zeros((b, nn, ny, nx))
    for bb, n, j, i in itertools.product(range(b), range(nn), range(ny), range(nx)):
        expected[bb, n, j, i] = sum(
            w[n, c, p, q] * x[bb, c, j + p, i + q]
            for c, p, q in itertools.product(range(ni), range(ky), range(kx))
        )
    assert y.shape == (b, nn, ny, nx) and y.flags.c_contiguous
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)


def test_transfer_is_an_offload_in_three_timed_unprofiled_steps() -> None:
    family = load_family(KERNELS, "transfer")
    assert set(family.variants) == {"pageable", "pinned"}
    for name, variant in family.variants.items():
        assert variant.host_memory == name and not variant.profiled
        assert [s.name for s in variant.launches] == ["copy_in", "gemm", "copy_out"]
        assert set(variant.scratch) == {"A_dev", "B_dev", "C_dev"}
    assert {t.memory for t in family.tensors.values()} == {"host"}
    assert set(family.figures) == {"copy_share", "copy_bandwidth"}


def test_transfer_columns_come_from_the_step_times() -> None:
    family = load_family(KERNELS, "transfer")
    n = 4096
    table = pd.DataFrame([{"n": n, "time_ms": 10.0, "step_copy_in_ms": 4.0, "step_gemm_ms": 3.0,
                           "step_copy_out_ms": 3.0}, {"n": n, "time_ms": np.nan}])  # fmt: skip
    family_columns(table, family)
    row = table.iloc[0]
    assert row["copy_ms"] == 7.0 and row["copy_share_pct"] == pytest.approx(70.0)
    assert row["h2d_gbps"] == pytest.approx(2 * n * n * 4 / 4e-3 / 1e9)
    assert row["copy_gbps"] == pytest.approx(3 * n * n * 4 / 7e-3 / 1e9)
    assert table.iloc[1][["copy_ms", "copy_share_pct"]].isna().all()  # a row without steps


def test_transfer_reference_and_steps_on_the_host() -> None:
    family = load_family(KERNELS, "transfer")
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    np.testing.assert_allclose(family.function("reference")(A=a, B=b)["C"], a @ b)


STUDIES = ["classifier_layers", "conv_layers", "transfer", "layers"]


@pytest.mark.parametrize("study", STUDIES)
def test_the_layer_studies_expand(study: str) -> None:
    config = yaml.safe_load((ROOT / "experiments" / f"{study}.yaml").read_text())
    config["kernels_dir"] = str(KERNELS)
    loaded = load_study(config)
    total, pending = loaded.count()
    assert pending > 0 and total >= pending
    assert config["capture"].endswith(f"-{study}")  # <device>-<study>


def test_the_layer_study_runs_the_four_layers_at_both_batches() -> None:
    config = yaml.safe_load((ROOT / "experiments" / "layers.yaml").read_text())
    config["kernels_dir"] = str(KERNELS)
    study = load_study(config)
    for name, layers in (("classifier", {(25088, 4096), (4096, 1024)}),
                         ("conv", {(64, 224), (512, 14)})):  # fmt: skip
        experiment = study.experiments[name]
        assert set(experiment.variants) == set(experiment.family.variants)
        dims = [r.dims for v in experiment.variants for r in experiment.rows(v)]
        key = ("Ni", "Nn") if name == "classifier" else ("Ni", "Nx")
        assert {tuple(d[k] for k in key) for d in dims} == layers
        assert {d["B"] for d in dims} == {1, 16}


def test_a_batch_the_tensor_core_variant_cannot_take_is_a_skipped_row() -> None:
    config = {"kernels_dir": str(KERNELS), "experiments": {"c": {
        "family": "classifier", "sizes": {"Ni": 4096, "Nn": 1024, "B": [3, 16]},
        "variants": {"wmma_batched": None}}}}  # fmt: skip
    rows = load_study(config).experiments["c"].rows("wmma_batched")
    assert [r.status for r in rows] == ["skipped", "pending"]
    assert "B % 16 == 0" in rows[0].error and "(B=3)" in rows[0].error


def test_a_study_file_names_its_own_capture() -> None:
    for path in map(Path, sorted((ROOT / "experiments").glob("*.yaml"))):
        name = yaml.safe_load(path.read_text())["capture"]
        assert re.fullmatch(rf"(h100-sxm|h200)-{path.stem}", name), path
