"""Every CUDA variant compiles for sm_90 as the harness compiles it (NVRTC, the harness's
options), at its defaults and at up to two other parameter sets that the repository's
configs run, without register spills; and the harness's own kernels compile with nvcc."""

import shutil
import subprocess
from pathlib import Path

import pytest

from ncuflow.compile.ptxas import entry_functions, report_path, spilled_bytes
from ncuflow.nvrtc import bindings, compile_cubin
from ncuflow.spec import load_family
from shared_builds import bundled_cubins, case_build, compile_cases

NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")


@pytest.mark.skipif(bindings() is None, reason="NVRTC's Python bindings are not installed")
@pytest.mark.parametrize(
    ("kernels", "family_name", "variant_name", "params"),
    compile_cases(),
    ids=lambda v: "_".join(f"{k}={x}" for k, x in v.items()) or "defaults"
    if isinstance(v, dict) else v if isinstance(v, str) else "",
)  # fmt: skip
def test_variant_compiles_for_sm90_as_the_harness_compiles_it(
    kernels: Path, family_name: str, variant_name: str, params: dict[str, int]
) -> None:
    """As the compile stage builds it (NVRTC; the harness's options: include folders of
    every included file, element types, the family hash, every tunable as -D, CuPy's
    additions, ptxas's report; sm_90 or the variant's own arch), in the session's shared
    cache: compiled, ptxas's report names each kernel, and no function spills a register."""
    cache = bundled_cubins()
    build = case_build(kernels, family_name, variant_name, params, cache)
    variant = load_family(kernels, family_name).variants[variant_name]
    if not Path(build.path).is_file():  # refused: compiled again, for NVRTC's whole log
        compile_cubin(build.source, variant.path.name, build.options)
    report = report_path(Path(build.path)).read_text()
    assert set(variant.kernels) <= set(entry_functions(report)), report
    assert spilled_bytes(report) == 0, report


@needs_nvcc
def test_the_harness_row_padding_kernel_compiles_for_every_element_and_chunk(
    tmp_path: Path,
) -> None:
    """The copy behind row_alignment: each element size with each chunk a row may allow."""
    from ncuflow.measure.helpers import UNSIGNED, helper_source, pad_rows_name

    pairs = [(e, c) for e in (1, 2, 4, 8) for c in (1, 2, 4, 8, 16) if c >= e]
    source = tmp_path / "pad.cu"
    source.write_text("#include <vector_types.h>\n" + helper_source("pad_rows") + "".join(
        f"template __global__ void {pad_rows_name(e, c)}("
        f"const {UNSIGNED[e]}*, {UNSIGNED[c]}*, long long, int, int);\n" for e, c in pairs
    ))  # fmt: skip
    command = [NVCC, "-arch=sm_90", "-cubin", "-std=c++17", "-Xptxas", "-v",
               "-o", str(tmp_path / "pad.cubin"), str(source)]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("Compiling entry function") == len(pairs)


@needs_nvcc
@pytest.mark.parametrize("name", ["gate", "l2_flush"])
def test_the_harness_timing_kernels_compile(tmp_path: Path, name: str) -> None:
    """The gate that holds a batch of timed launches, and the L2 flush before each."""
    from ncuflow.compile.cubins import helper_source

    source = tmp_path / f"{name}.cu"
    source.write_text(helper_source(name))
    command = [NVCC, "-arch=sm_90", "-cubin", "-o", str(tmp_path / f"{name}.cubin"), str(source)]
    proc = subprocess.run(command, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
