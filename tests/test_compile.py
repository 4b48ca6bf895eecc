"""Every CUDA variant compiles for sm_90 as the harness compiles it (NVRTC, the harness's
options), at its defaults and at up to two other parameter sets that the repository's
configs run, without register spills; and the harness's own kernels compile with nvcc."""

import itertools
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from ncuflow.compile.cubins import compile_options, nvrtc_options
from ncuflow.spec import available_families, load_family
from ncuflow.study.config import load_study

NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
# (the 100,000- and 1,000,000-configuration dry-run studies are for planning, not running;
# the search of 129,600 positions runs variants the others run)
CONFIGS = [ROOT / "config.yaml", *sorted((ROOT / "experiments").glob("*.yaml")),
           *sorted((ROOT / "benchmarks").glob("*.yaml"))]  # fmt: skip
CONFIGS = [
    c
    for c in CONFIGS
    if c.name not in ("dry_run_100k.yaml", "dry_run_1m.yaml", "warptile_search.yaml")
]

try:  # NVIDIA's NVRTC bindings (pip install cuda-bindings nvidia-cuda-nvrtc): CPU only
    from cuda.bindings import nvrtc
except ImportError:
    nvrtc = None


def _used_params() -> dict[tuple[str, str], list[dict[str, int]]]:
    """The first few distinct parameter sets of pending configurations, per (family,
    variant), in the configs' order (a search's space: its first positions that run)."""
    used: dict[tuple[str, str], list[dict[str, int]]] = {}
    for path in CONFIGS:
        config = yaml.safe_load(path.read_text())
        config["kernels_dir"] = str(ROOT / "kernels")
        for experiment in load_study(config).experiments.values():
            for variant in experiment.variants:
                seen = used.setdefault((experiment.family.name, variant), [])
                grid = experiment.grids[variant]
                for position in experiment.scans[variant].pending:
                    if len(seen) >= 3:
                        break
                    row = grid.row_at(position)
                    if row.params not in seen:
                        seen.append(row.params)
    return used


def _cases() -> list[tuple[Path, str, str, dict[str, int]]]:
    """Each CUDA variant of the bundled families at its defaults and at up to two other
    parameter sets the configs run; those of the test tree's families at their defaults."""
    used = _used_params()
    cases = []
    for kernels in (ROOT / "kernels", ROOT / "tests" / "data" / "kernels"):
        for family_name in available_families(kernels):
            family = load_family(kernels, family_name)
            for name, variant in family.variants.items():
                if not variant.is_cuda:
                    continue
                others = [p for p in used.get((family_name, name), []) if p != variant.params]
                for params in itertools.islice([{}, *others], 3):
                    cases.append((kernels, family_name, name, params))
    return cases


def _nvrtc_log(program: object) -> str:
    _, size = nvrtc.nvrtcGetProgramLogSize(program)
    log = b" " * size
    nvrtc.nvrtcGetProgramLog(program, log)
    return log.decode(errors="replace")


@pytest.mark.skipif(nvrtc is None, reason="NVRTC's Python bindings are not installed")
@pytest.mark.parametrize(
    ("kernels", "family_name", "variant_name", "params"),
    _cases(),
    ids=lambda v: "_".join(f"{k}={x}" for k, x in v.items()) or "defaults"
    if isinstance(v, dict) else v if isinstance(v, str) else "",
)  # fmt: skip
def test_variant_compiles_for_sm90_as_the_harness_compiles_it(
    kernels: Path, family_name: str, variant_name: str, params: dict[str, int]
) -> None:
    """The harness's own options (include folders of every included file, element types,
    the family hash, every tunable as -D): what CuPy hands NVRTC on the GPU machine; ptxas's
    report (-v) names each kernel and no register spilled."""
    family = load_family(kernels, family_name)
    variant = family.variants[variant_name]
    # as the compile stage hands them to NVRTC (CuPy's defaults, the variant's own arch or
    # sm_90), and ptxas's report
    options = [*nvrtc_options(compile_options(family, variant, {**variant.params, **params},
                                              variant.dtypes()), variant, "sm_90"),
               "-Xptxas", "-v"]  # fmt: skip
    _, program = nvrtc.nvrtcCreateProgram(variant.source.encode(), variant.path.name.encode(),
                                          0, [], [])  # fmt: skip
    try:
        (result,) = nvrtc.nvrtcCompileProgram(program, len(options), [o.encode() for o in options])
        log = _nvrtc_log(program)
    finally:
        nvrtc.nvrtcDestroyProgram(program)
    assert result == nvrtc.nvrtcResult.NVRTC_SUCCESS, log
    for kernel in variant.kernels:
        assert f"Compiling entry function '{kernel}'" in log
    spills = re.findall(r"(\d+) bytes spill stores", log)
    assert spills and all(s == "0" for s in spills), log


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
