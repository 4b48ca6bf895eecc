"""The compile stage on a machine without a GPU: every distinct CUDA build of an
experiment compiled once with NVRTC into the cache, nothing again on a rerun, and after
one kernel is edited only that kernel's builds; a GPU job finds its cubin by the options
it builds with, for its own architecture only."""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, minimal_config
from ncuflow.compile import cubins
from ncuflow.compile.cubins import (
    HELPERS,
    build_key,
    compile_options,
    compiled_cubin,
    compiled_helper,
    helper_build,
)
from ncuflow.compile.stage import compile_stage
from ncuflow.nvrtc import bindings
from ncuflow.spec.family import read_family
from ncuflow.study.config import load_study
from ncuflow.vocab import COMPILED_ENV

pytestmark = pytest.mark.skipif(bindings() is None, reason="NVRTC's bindings are not installed")


def _compile(tmp_path: Path, kernels: Path) -> tuple[dict, list[str]]:
    """The index of the ladder's naive and smem_tiled at two tilings each, and the log."""
    config = minimal_config(variants={"naive": {"params": {"BLOCK_X": [16, 32], "BLOCK_Y": 8}},
                                      "smem_tiled": {"params": {"TILE": [16, 32]}}})  # fmt: skip
    config["kernels_dir"] = str(kernels)
    read_family.cache_clear()  # as a new run's processes read the sources anew
    study = load_study(config)
    jobs = [(Path(study.plan_file("sq", v, tmp_path / "plans")), p)
            for v, p in study.batch_jobs("sq")]  # fmt: skip
    lines: list[str] = []
    index = tmp_path / "compiled.json"
    compile_stage(jobs, index, tmp_path / "cubins", "sm_90", 2, lines.append)
    return json.loads(index.read_text()), lines


def test_each_build_compiles_once_and_an_edit_recompiles_only_its_kernel(tmp_path: Path) -> None:
    kernels = tmp_path / "kernels"
    shutil.copytree(ROOT / "kernels", kernels)
    index, lines = _compile(tmp_path, kernels)
    assert index["arch"] == "sm_90" and len(index["cubins"]) == 4
    assert all(Path(p).stat().st_size > 0 for p in index["cubins"].values())
    # and the harness's own kernels, which every GPU job loads
    assert sorted(index["helpers"]) == sorted(HELPERS)
    assert all(Path(p).stat().st_size > 0 for p in index["helpers"].values())
    assert "4 builds for sm_90" in lines[0] and "7 to compile" in lines[0]
    again, lines = _compile(tmp_path, kernels)
    assert again["cubins"] == index["cubins"] and again["helpers"] == index["helpers"]
    assert "0 to compile" in lines[0]
    naive = kernels / "matmul" / "naive.cu"
    naive.write_text(naive.read_text() + "\n// edited\n")
    edited, lines = _compile(tmp_path, kernels)
    assert "2 to compile" in lines[0]  # naive's two tilings; smem_tiled's kept
    assert len(set(edited["cubins"].values()) - set(index["cubins"].values())) == 2


def test_two_variants_of_the_same_options_get_their_own_cubins(tmp_path: Path) -> None:
    """naive and coalesced_a take the same tunables: one entry each, never the other's."""
    config = minimal_config(variants={v: {"params": {"BLOCK_X": 16, "BLOCK_Y": 8}}
                                      for v in ("naive", "coalesced_a")})  # fmt: skip
    study = load_study(config)
    jobs = [(Path(study.plan_file("sq", v, tmp_path / "plans")), p)
            for v, p in study.batch_jobs("sq")]  # fmt: skip
    index = tmp_path / "compiled.json"
    compile_stage(jobs, index, tmp_path / "cubins", "sm_90", 1, lambda line: None)
    cubins = json.loads(index.read_text())["cubins"]
    assert len(cubins) == 2 and len(set(cubins.values())) == 2
    experiment = study.experiments["sq"]
    for name in ("naive", "coalesced_a"):
        variant = experiment.family.variant(name)
        row = experiment.rows(name)[0]
        options = compile_options(
            experiment.family, variant, row.params, (row.dtype, row.out_dtype)
        )
        assert (
            Path(cubins[build_key(variant, options)]).read_bytes().count(f"matmul_{name}".encode())
            > 0
        )  # its own kernel's name in its own cubin


def test_a_gpu_job_loads_the_cubin_of_its_options_for_its_architecture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    study = load_study(minimal_config())
    experiment = study.experiments["sq"]
    variant = experiment.family.variant("naive")
    row = experiment.rows("naive")[0]
    options = compile_options(experiment.family, variant, row.params, (row.dtype, row.out_dtype))
    cubin = tmp_path / "x.cubin"
    cubin.write_bytes(b"\x7fELF")
    index = tmp_path / "compiled.json"
    gate = tmp_path / helper_build("gate", "sm_90", "13.0")[2]  # as the stage names it
    gate.write_bytes(b"\x7fELF")
    index.write_text(json.dumps({"arch": "sm_90", "nvrtc": "13.0", "helpers": {"gate": str(gate)},
                                 "cubins": {build_key(variant, options): str(cubin)}}))  # fmt: skip
    assert compiled_cubin(options, variant, "90") == (
        None, "this job was given no compile stage index")  # fmt: skip
    assert compiled_helper("gate", "90") is None
    monkeypatch.setenv(COMPILED_ENV, str(index))
    assert compiled_cubin(options, variant, "90") == (cubin, "")
    assert compiled_helper("gate", "90") == gate
    assert compiled_helper("gate", "100") is None  # built for another architecture
    assert compiled_helper("compare", "90") is None  # not in the index: compiled in the job
    # the toolkit's headers found by another path: the same build
    moved = [o if o[:2] != "-I" else o + "/../include" for o in options]
    assert compiled_cubin(moved, variant, "90") == (cubin, "")
    assert compiled_cubin(options, variant, "100")[1] == (
        "the compile stage built for sm_90, this GPU runs sm_100")  # fmt: skip
    assert "has no build" in compiled_cubin((*options, "-DX=1"), variant, "90")[1]
    # a plan read back from its file may list the tunables in another order: the same build
    reordered = dict(reversed(list(row.params.items())))
    assert len(row.params) > 1 and list(reordered) != list(row.params)
    assert compile_options(experiment.family, variant, reordered,
                           (row.dtype, row.out_dtype)) == options  # fmt: skip
    own = dataclasses.replace(variant, arch="sm_90a")  # a variant's own architecture
    assert compiled_cubin(options, own, "90") == (cubin, "")
    cubin.unlink()
    assert compiled_cubin(options, variant, "90")[1].endswith("x.cubin is missing")


def test_a_helper_edited_since_its_build_is_compiled_in_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compile stage does not run again when only a harness kernel's source changes:
    a GPU job then finds that the index's build is of another source, and compiles it."""
    helpers = tmp_path / "measure"
    helpers.mkdir()
    for name in HELPERS:
        shutil.copy2(cubins.HELPERS_DIR / f"{name}.cu", helpers)
    monkeypatch.setattr(cubins, "HELPERS_DIR", helpers)
    index, _ = _compile(tmp_path, ROOT / "kernels")
    monkeypatch.setenv(COMPILED_ENV, str(tmp_path / "compiled.json"))
    assert compiled_helper("gate", "90") == Path(index["helpers"]["gate"])
    (helpers / "gate.cu").write_text((helpers / "gate.cu").read_text() + "\n// edited\n")
    assert compiled_helper("gate", "90") is None
    assert compiled_helper("compare", "90") == Path(index["helpers"]["compare"])
