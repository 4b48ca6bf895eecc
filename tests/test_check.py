"""`ncuflow check`: a study's kernels checked on a machine without a GPU, one line per
variant (NVRTC compiles each tunable set where its Python bindings are installed)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from ncuflow.nvrtc import bindings

EXAMPLE = ROOT / "tests" / "data" / "kernels"


def _check(tmp_path: Path, kernels: Path) -> subprocess.CompletedProcess:
    variants = {"numpy_gather": None, "gather": {"params": {"BLOCK": [128, 256]}}}
    experiment = {"family": "gather", "sizes": {"n": [1000, 4097], "m": 77}, "variants": variants}
    study = {"kernels_dir": str(kernels), "experiments": {"g": experiment}}
    config = tmp_path / "study.yaml"
    config.write_text(yaml.safe_dump(study))
    return subprocess.run([sys.executable, "-m", "ncuflow", "check", str(config)],
                          capture_output=True, text=True, cwd=ROOT)  # fmt: skip


@pytest.fixture
def example_copy(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLE / "gather", tmp_path / "kernels" / "gather")
    return tmp_path / "kernels"


def _lines(proc: subprocess.CompletedProcess) -> dict[str, str]:
    """Each variant's line, by variant."""
    return {line.split(": ")[1].split("/")[1]: line for line in proc.stdout.splitlines()
            if line.startswith("ncuflow check: ")}  # fmt: skip


def test_a_good_family_passes_with_one_line_per_variant(tmp_path: Path) -> None:
    proc = _check(tmp_path, EXAMPLE)
    assert proc.returncode == 0, proc.stderr
    lines = _lines(proc)
    assert set(lines) == {"numpy_gather", "gather"}
    assert lines["numpy_gather"].startswith(
        "ncuflow check: g/numpy_gather: ok: inputs drawn and the reference computed at n=1000, "
        "m=77; run on the host and checked at n=1000, m=77 (")  # fmt: skip
    compiled = ("2 tunable set(s) compiled for sm_90" if bindings() else
                "not compiled (NVRTC's Python bindings are not installed")  # fmt: skip
    assert lines["gather"].startswith(f"ncuflow check: g/gather: ok: {compiled}"), lines


def test_a_host_variant_that_computes_wrong_is_named(tmp_path: Path, example_copy: Path) -> None:
    module = example_copy / "gather" / "family.py"
    module.write_text(module.read_text().replace(
        "hits[...] = np.bincount(idx, minlength=m)",
        "hits[...] = np.bincount(idx, minlength=m) + (np.arange(m) == 3)"))  # fmt: skip
    proc = _check(tmp_path, example_copy)
    assert proc.returncode == 1
    assert (
        proc.stdout.splitlines()[0].startswith(
            "ncuflow check: g/numpy_gather: WRONG: BLOCK=128_n=1000_m=77: wrong_result: 1 of 77 "
            "elements of hits differ from the reference"
        )
        or "wrong_result: 1 of 77" in proc.stdout
    )
    assert "ncuflow: check: 1 variant(s) of" in proc.stderr


@pytest.mark.skipif(bindings() is None, reason="NVRTC's Python bindings are not installed")
def test_what_nvrtc_refuses_is_named_before_any_gpu(tmp_path: Path, example_copy: Path) -> None:
    """nvcc takes -INFINITY from its host headers; NVRTC does not: found here, not on a GPU."""
    source = example_copy / "gather" / "gather.cu"
    text = source.read_text()
    at = text.index('extern "C" __global__ void gather_zero_hits')
    source.write_text(text[:at] + "__device__ float ncuflow_low = -INFINITY;\n" + text[at:])
    proc = _check(tmp_path, example_copy)
    assert proc.returncode == 1
    wrong = _lines(proc)["gather"]
    assert wrong.startswith("ncuflow check: g/gather: WRONG: BLOCK=128_n=1000_m=77 does not "
                            "compile for sm_90 with NVRTC:"), wrong  # fmt: skip
    assert 'identifier "INFINITY" is undefined' in proc.stdout


@pytest.mark.parametrize(
    ("study", "variants"),
    [("config.yaml", 32), ("experiments/transfer.yaml", 2), ("experiments/transpose.yaml", 3),
     ("experiments/verdicts.yaml", 7), ("experiments/axpy.yaml", 5)],
)  # fmt: skip
def test_every_bundled_family_passes(study: str, variants: int) -> None:
    """The default study (matmul, classifier, conv) and the studies of the histogram,
    transpose, transfer and axpy families."""
    proc = subprocess.run([sys.executable, "-m", "ncuflow", "check", study],
                          capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    lines = [x for x in proc.stdout.splitlines() if x.startswith("ncuflow check: ")]
    assert len(lines) == variants and all(": ok: " in x for x in lines), proc.stdout


def test_mode_check_checks_the_study_and_runs_no_job(tmp_path: Path, example_copy: Path) -> None:
    """snakemake --config mode=check is ncuflow check: a line per variant, no job, no
    results; exit status 1 where a variant is wrong."""
    variants = {"numpy_gather": None, "gather": None}
    study = {"kernels_dir": str(example_copy), "experiments": {"g": {
        "family": "gather", "sizes": {"n": 1000, "m": 77}, "variants": variants}}}  # fmt: skip
    config = tmp_path / "study.yaml"
    config.write_text(yaml.safe_dump(study))
    command = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--cores", "1",
               "--configfile", str(config), "--config", "mode=check"]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert set(_lines(proc)) == {"numpy_gather", "gather"}
    assert all(": ok: " in line for line in _lines(proc).values())
    assert not (tmp_path / "results").exists()
    module = example_copy / "gather" / "family.py"
    module.write_text(module.read_text().replace(
        "hits[...] = np.bincount(idx, minlength=m)",
        "hits[...] = np.bincount(idx, minlength=m) + 1"))  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 1 and "numpy_gather: WRONG: " in _lines(proc)["numpy_gather"]
    assert "ncuflow: check: 1 variant(s) are wrong (above)" in proc.stderr
