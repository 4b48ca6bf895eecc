"""The measured-ceilings micro-benchmarks: ceilings.cu compiles for sm_90 without spills, keeps
its work, and has every kernel that ceilings.py launches; on the GPU, every ceiling is measured
and is a finite, positive rate."""

import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT
from ncuflow.device import ceilings, energy_ceilings
from ncuflow.metrics import LEVELS

NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
SOURCE = ROOT / "workflow" / "ncuflow" / "device" / "ceilings.cu"
UNITS = {name: "byte/s" if name in LEVELS else "FLOP/s" for name in ceilings.CEILING_NAMES}
ENTRY_KEYS = {"value", "unit", "method", "repeats", "spread_pct"}


def _kernel_defined(source: str, name: str) -> bool:
    pattern = rf'extern "C" __global__ void\s+(?:__launch_bounds__\([^)]*\)\s+)?{name}\('
    return re.search(pattern, source) is not None


def test_every_launched_kernel_is_in_the_source() -> None:
    assert ceilings.SOURCE == SOURCE
    source = SOURCE.read_text()
    for name in ceilings.KERNELS:
        if name in ceilings.STREAMS:  # one NCUFLOW_STREAMS line defines a width's four
            width = int(name.rsplit("_", 1)[1])
            assert re.search(rf"^NCUFLOW_STREAMS\(\w+, {width}\)$", source, re.M), name
        else:
            assert _kernel_defined(source, name), name
    # every kernel name that ceilings.py launches is one of KERNELS
    text = Path(ceilings.__file__).read_text()
    launched = set(re.findall(r'"(\w+_(?:loop|read|write))"', text))
    assert launched | set(ceilings.STREAMS) == set(ceilings.KERNELS)


def test_launch_constants_fit_the_kernels() -> None:
    k = ceilings.kernel_constants(SOURCE.read_text())
    for name in ("THREADS", "SHARED_THREADS"):  # pass_lane needs powers of two
        assert k[name] >= 32 and k[name] & (k[name] - 1) == 0, name
    assert k["THREADS"] * k["BLOCKS_PER_SM"] <= 2048
    assert k["SHARED_THREADS"] * k["SHARED_BLOCKS_PER_SM"] <= 2048
    assert k["SHARED_VEC"] % k["SHARED_THREADS"] == 0
    assert k["SHARED_VEC"] * 16 <= 48 * 1024  # static shared memory
    assert (ceilings.L1_SLICE_BYTES // 16) % (k["BATCH"] * k["THREADS"]) == 0
    assert k["CHAINS"] * k["STEPS"] >= 64


def test_spread_is_iqr_over_median() -> None:
    assert ceilings.spread_pct([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(200 / 3)
    assert ceilings.spread_pct([7.0] * 15) == 0.0


def _ptxas_by_kernel(stderr: str) -> dict[str, str]:
    """Each kernel's part of the ``-Xptxas -v`` report."""
    parts = re.split(r"Compiling entry function '(\w+)'", stderr)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


@needs_nvcc
def test_compiles_for_sm90_without_spills(tmp_path: Path) -> None:
    command = [NVCC, "-arch=sm_90", "-cubin", "-std=c++17", "-Xptxas", "-v",
               "-o", str(tmp_path / "ceilings.cubin"), str(SOURCE)]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    report = _ptxas_by_kernel(proc.stderr)
    assert set(report) == set(ceilings.KERNELS), proc.stderr
    k = ceilings.kernel_constants(SOURCE.read_text())
    for name, text in report.items():
        assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", text), (name, text)
        registers = int(re.search(r"Used (\d+) registers", text)[1])
        threads = 2048 if name != "shared_read" else (
            k["SHARED_THREADS"] * k["SHARED_BLOCKS_PER_SM"])  # fmt: skip
        assert registers * threads <= 65536, (name, registers)  # the blocks per SM fit


@needs_nvcc
def test_ptx_keeps_the_work(tmp_path: Path) -> None:
    """Nothing is folded away: the FMA chains and the 128-bit loads are in each kernel's PTX."""
    ptx_path = tmp_path / "ceilings.ptx"
    command = [NVCC, "-arch=sm_90", "-ptx", "-std=c++17", "-o", str(ptx_path), str(SOURCE)]
    proc = subprocess.run(command, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    parts = re.split(r"\.entry (\w+)\(", ptx_path.read_text())
    bodies = dict(zip(parts[1::2], parts[2::2], strict=True))  # each up to the next kernel
    k = ceilings.kernel_constants(SOURCE.read_text())
    fmas = k["CHAINS"] * k["STEPS"]
    assert bodies["ffma_loop"].count("fma.rn.f32") >= fmas
    assert bodies["dfma_loop"].count("fma.rn.f64") >= fmas
    assert bodies["hfma2_loop"].count("fma.rn.f16x2") >= fmas
    assert bodies["l2_read"].count("ld.global.cg.v4.f32") >= k["BATCH"]
    assert bodies["l1_read"].count("ld.global.nc.v4.f32") >= k["BATCH"]
    assert "ld.shared.v4.f32" in bodies["shared_read"]


@pytest.mark.gpu
def test_measure_ceilings_on_the_gpu() -> None:
    lines: list[str] = []
    result = ceilings.measure_ceilings(lines.append)
    required = set(UNITS) - set(ceilings.OPTIONAL)
    assert required <= set(result) <= set(UNITS)
    for name in set(ceilings.OPTIONAL) - set(result):
        assert any(line.startswith(f"{name} skipped") for line in lines), lines
    for name, entry in result.items():
        patterned = name in LEVELS  # memory levels
        rounds = {"rounds"} if name == "dram" else set()  # DRAM's patterns: each its best round
        assert set(entry) == ENTRY_KEYS | ({"pattern", "patterns"} | rounds if patterned
                                           else set()), name  # fmt: skip
        if patterned:  # the level's ceiling is its fastest pattern
            assert entry["value"] == max(p["value"] for p in entry["patterns"].values())
        for pattern in entry.get("patterns", {}).values() if rounds else ():
            assert len(pattern["rounds"]) == ceilings.DRAM_ROUNDS
            assert pattern["value"] == max(pattern["rounds"])
        assert math.isfinite(entry["value"]) and entry["value"] > 0, (name, entry)
        assert entry["unit"] == UNITS[name]
        assert entry["repeats"] >= 15
        assert math.isfinite(entry["spread_pct"]) and entry["spread_pct"] >= 0
        assert entry["method"]


@pytest.mark.gpu
def test_energy_ceilings_on_the_gpu() -> None:
    """The energy tier's ceilings (rule energy_ceilings): FP32, FP16-tensor and DRAM, in
    work per joule, each the best of its patterns, at a power NVML measured."""
    lines: list[str] = []
    result = energy_ceilings.measure_energy_ceilings(lines.append, 0.5)
    units = {"energy_fp32": "FLOP/J", "energy_tensor_fp16": "FLOP/J", "energy_dram": "byte/J"}
    assert set(units) == set(ceilings.ENERGY_CEILINGS) == set(result), lines
    for name, unit in units.items():
        entry = result[name]
        assert entry["unit"] == unit and entry["value"] > 0 and entry["avg_power_w"] > 0
        assert entry["value"] == max(p["value"] for p in entry["patterns"].values())
    assert set(result["energy_dram"]["patterns"]) == set(ceilings.ENERGY_PATTERNS["dram"]), lines
    assert result["energy_fp32"]["value"] < result["energy_tensor_fp16"]["value"]
