"""On the GPU (pytest -m gpu, run on the GPU machine): every variant against the float64
reference at divisible and non-divisible sizes, faulty kernels caught, one ncu process."""

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT, measure_study, variants_as_run
from ncuflow.analyze.derive import config_metrics
from ncuflow.profile.members import Member
from ncuflow.profile.stage import profile_stage
from ncuflow.spec import load_family
from ncuflow.study.config import load_study

pytestmark = pytest.mark.gpu

_HEAD = """/*---
kernel: {name}
params: {{BAD: 1}}
block: 16, 16
grid: ceil_div(N, 16), ceil_div(M, 16)
---*/
#ifndef BAD
#define BAD 1
#endif
extern "C" __global__ void {name}(const float* A, const float* B, float* C, int M, int N, int K) {{
  const int col = blockIdx.x * 16 + threadIdx.x, row = blockIdx.y * 16 + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
"""
_LOOP = (
    "  for (int k = 0; k < K - {skip}; ++k) acc += A[(size_t)row*K + k] * B[(size_t)k*N + col];\n"
)
_STORE = "  C[(size_t)row * N + col{offset}] = acc;\n}}\n"
# Each breaks in its own way when BAD is 1 and is a correct kernel when BAD is 0.
FAULTY = {
    "wrong": _LOOP.format(skip="BAD") + _STORE.format(offset=""),
    "unwritten": "  if (BAD && row == M - 1) return;\n"
    + _LOOP.format(skip=0)
    + _STORE.format(offset=""),
    "fault": _LOOP.format(skip=0) + _STORE.format(offset=" + (BAD ? (size_t)1 << 40 : 0)"),
    "broken": "  this is not CUDA;\n}\n",
}


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("kernels")
    shutil.copytree(ROOT / "kernels" / "matmul", folder / "matmul")
    shutil.copytree(ROOT / "kernels" / "common", folder / "common")  # what the tiles include
    for name, body in FAULTY.items():
        (folder / "matmul" / f"{name}.cu").write_text(_HEAD.format(name=f"matmul_{name}") + body)
    return folder


def _measure(tmp_path: Path, kernels: Path, experiments: dict) -> dict[str, dict]:
    return measure_study(tmp_path, kernels, experiments, repeats=5)


def test_every_variant_matches_the_reference(tmp_path: Path, kernels: Path) -> None:
    ladder = variants_as_run("matmul")
    experiments = {
        "square": {"family": "matmul", "sizes": {"M": [64, 1023, 1025, 2049], "N": "M",
                                                 "K": "M"}, "variants": ladder},
        "rectangular": {"family": "matmul", "sizes": {"M": 300, "N": 517, "K": 129},
                        "variants": ladder},
        "tiny": {"family": "matmul", "sizes": {"M": 7, "N": 5, "K": 3}, "variants": ladder},
    }  # fmt: skip
    found = _measure(tmp_path, kernels, experiments)
    family = load_family(kernels, "matmul")
    assert set(found) == set(ladder)
    failures = []
    for variant, records in found.items():
        tolerance = family.checks["C"].limit(family.variants[variant].dtype)
        for config_id, record in records.items():
            if record["status"] != "ok" or not record["rel_error"] < tolerance:
                failures.append(f"{variant} {config_id}: {record['status']} {record['error']}")
            else:
                assert len(record["times_ms"]) == 5 and record["time_ms"] > 0
    assert not failures, "\n".join(failures)


def test_faulty_kernels_are_caught_and_the_sweep_goes_on(tmp_path: Path, kernels: Path) -> None:
    variants = {name: {"params": {"BAD": [1, 0]}} for name in FAULTY}
    experiments = {"faulty": {"family": "matmul", "sizes": {"M": [256, 257], "N": "M", "K": "M"},
                              "variants": variants}}  # fmt: skip
    found = _measure(tmp_path, kernels, experiments)

    def status(variant: str, bad: int) -> set[str]:
        return {r["status"] for c, r in found[variant].items() if c.startswith(f"BAD={bad}_")}

    assert status("wrong", 1) == {"wrong_result"}
    assert all("relative error" in r["error"] for r in found["wrong"].values() if r["error"])
    assert status("unwritten", 1) == {"wrong_result"}
    assert any("never written" in r["error"] for r in found["unwritten"].values())
    assert status("fault", 1) == {"launch_error"}
    assert status("broken", 1) == status("broken", 0) == {"compile_error"}
    assert all(re.search(r"broken\.cu.*error", r["error"], re.S) for r in found["broken"].values())
    for variant in ("wrong", "unwritten", "fault"):  # the same kernels, correct with BAD=0
        assert status(variant, 0) == {"ok"}, found[variant]


def test_one_ncu_process_profiles_every_ok_configuration(tmp_path: Path, kernels: Path) -> None:
    experiments = {"p": {"family": "matmul", "sizes": {"M": [128, 257], "N": "M", "K": "M"},
                         "variants": {"naive": {"params": {"BLOCK_X": [16, 32]}}}}}  # fmt: skip
    found = _measure(tmp_path, kernels, experiments)["naive"]
    plan, measure = tmp_path / "p.naive.plan.json", tmp_path / "p.naive.measure.json"
    csv_path = tmp_path / "ncu_raw.csv"
    long_path = tmp_path / "ncu_long.parquet"
    study = load_study({"kernels_dir": str(kernels), "experiments": experiments})
    # every one swept
    settings = dataclasses.replace(study.ncu, chunk_size=2, explain="none", source="none")
    profile_stage([Member(plan, measure, tmp_path)], tmp_path / "chunks", settings,
                  lambda line: None)  # fmt: skip
    chunks = sorted((tmp_path / "chunks").glob("sweep_*.ncu-rep"))
    assert len(chunks) == 2 and csv_path.stat().st_size > 0  # 4 configurations, 2 per ncu
    assert json.loads((tmp_path / "profile_errors.json").read_text()) == {}
    metrics = config_metrics(pd.read_parquet(long_path))
    assert sorted(metrics["config_id"]) == sorted(found)
    for row in metrics.itertuples():
        m = int(re.search(r"_M=(\d+)", row.config_id).group(1))
        assert row.flops_fp32 == 2 * m**3


def test_a_profile_killed_midway_profiles_only_the_missing_chunks(
    tmp_path: Path, kernels: Path
) -> None:
    """The profile stage killed (its whole process group, ncu with it) once two of its four
    one-configuration chunks are done; run again, it profiles only the others."""
    experiments = {"k": {"family": "matmul", "sizes": {"M": [128, 257], "N": "M", "K": "M"},
                         "variants": {"naive": {"params": {"BLOCK_X": [16, 32]}}}}}  # fmt: skip
    _measure(tmp_path, kernels, experiments)
    plan, measure = tmp_path / "k.naive.plan.json", tmp_path / "k.naive.measure.json"
    out, chunks = tmp_path / "profiled", tmp_path / "chunks"
    member = Member(plan, measure, out / "naive" / "p0")
    long_path = member.out / "ncu_long.parquet"
    study = load_study({"kernels_dir": str(kernels), "experiments": experiments})
    ncu = study.config["ncu"]
    command = [sys.executable, "-m", "ncuflow", "profile", "--plans", str(plan), "--measures",
               str(measure), "--out", str(out), "--chunks", str(chunks),
               "--mode", "gpu", "--ncu", ncu["path"], "--chunk-size", "1", "--explain", "none",
               "--source", "none",
               "--sections", *ncu["sections"]]  # fmt: skip
    first = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL)
    done = chunks / "sweep_001.json"
    deadline = time.monotonic() + 240
    while not done.is_file() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    assert done.is_file() and not long_path.exists()  # killed before the end
    lines: list[str] = []
    # chunks alone
    settings = dataclasses.replace(study.ncu, chunk_size=1, explain="none", source="none")
    profile_stage([member], chunks, settings, lines.append)
    kept = [line for line in lines if "profiled by an earlier run, kept" in line]
    profiled = [line for line in lines if line.startswith("ncu took") and "(sweep tier)" in line]
    print(f"resumed: {len(kept)} chunks kept, {len(profiled)} profiled again")
    assert len(kept) >= 2 and len(kept) + len(profiled) == 4 and profiled
    assert config_metrics(pd.read_parquet(long_path))["config_id"].nunique() == 4


@pytest.mark.parametrize("min_blocks", [1, 2])
def test_stream_k_sums_its_split_tiles_alike_every_launch_and_clears_its_flags(
    kernels: Path, min_blocks: int
) -> None:
    """At 2049, 17×17 tiles of 128×128: at two blocks per SM (264) all of them are shared
    out by K-slices; at one (132), one whole wave first, then the other 157 tiles. Three
    launches give the same bits, within float32's error of the float64 product, and leave
    every flag cleared for the next launch."""
    import cupy as cp
    import numpy as np

    from ncuflow.compile.cubins import compile_options

    family = load_family(kernels, "matmul")
    variant = family.variants["stream_k"]
    params = {**variant.params, "BN": 128, "MIN_BLOCKS": min_blocks}
    size = 2049
    env = {**family.scope(variant, {"M": size, "N": size, "K": size}, params,
                          ("float32", "float32")),
           "sm_count": cp.cuda.Device().attributes["MultiProcessorCount"]}  # fmt: skip
    launch = variant.launches[0]
    grid, block = int(launch.grid[0](env)), int(launch.block[0](env))
    smem = int(launch.dynamic_smem(env))
    tiles = 17 * 17
    assert grid < tiles  # a part wave is left to share out
    kernel = cp.RawModule(
        code=variant.source,
        options=compile_options(family, variant, params, ("float32", "float32")),
    ).get_function("matmul_stream_k")
    kernel.max_dynamic_shared_size_bytes = smem
    rng = np.random.default_rng(12)
    a, b = (rng.standard_normal((size, size)).astype(np.float32) for _ in range(2))
    dev_a, dev_b = cp.asarray(a), cp.asarray(b)
    partials = cp.zeros((tiles, 128 * 128), dtype=cp.float32)
    flags = cp.zeros(tiles, dtype=cp.int32)
    results = []
    for _ in range(3):
        c = cp.full((size, size), cp.nan, dtype=cp.float32)  # poisoned
        n = np.int32(size)
        kernel((grid,), (block,), (dev_a, dev_b, c, n, n, n, partials, flags), shared_mem=smem)
        cp.cuda.runtime.deviceSynchronize()
        results.append(c.get())
    assert not flags.any() and partials.any()  # tiles were split, their flags cleared
    assert all(np.array_equal(results[0], r) for r in results[1:])
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(results[0] - exact) / np.linalg.norm(exact) < 1e-5


def test_the_gate_keeps_host_delays_out_of_the_timed_intervals() -> None:
    """A step that sleeps 2 ms on the host before its launch: without the gate the sleep
    falls inside every timed interval; with it the GPU runs the batch only once it is all
    enqueued, back to back, and the intervals hold the kernels alone. A step that waits
    for the stream makes the gate give up at its limit, and say so, instead of hanging."""
    import cupy as cp
    import numpy as np

    from ncuflow.measure.build import Launcher
    from ncuflow.measure.clock import Gate, time_launches

    x = cp.ones(1 << 20, dtype=cp.float32)

    def scale() -> None:
        cp.multiply(x, np.float32(1.0001), out=x)

    def slow_scale() -> None:
        time.sleep(0.002)
        scale()

    steps = Launcher([("fast", scale), ("slow", slow_scale)], {})
    ungated, _ = time_launches(steps, 20, None)
    gate = Gate()
    gated, per_step = time_launches(steps, 20, None, gate)
    assert not gate.gave_up()
    print(f"median ungated {np.median(ungated):.4f} ms, gated {np.median(gated):.4f} ms")
    assert np.median(ungated) > 1.5 and np.median(gated) < 0.2
    assert len(per_step["slow"]) == 20
    waiting = Gate(limit_s=0.05)
    sync = Launcher([("fast", scale), ("sync", cp.cuda.get_current_stream().synchronize)], {})
    started = time.monotonic()
    time_launches(sync, 2, None, waiting)
    assert waiting.gave_up() and time.monotonic() - started < 5
    time_launches(steps, 3, None, waiting)
    assert not waiting.gave_up()  # once released in time, it says so again


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_the_one_kernel_check_agrees_with_the_array_operations(dtype: str) -> None:
    """compare.cu against CuPy's array operations on the same output, per element size:
    a close output, one off by more than its tolerance, one with unwritten elements, one
    with a NaN the kernel wrote, one NaN in both, and an exact check; several blocks."""
    import cupy as cp
    import numpy as np

    from ncuflow.measure.compare import POISON_BITS, UINT, array_figures, compare, fused_figures
    from ncuflow.spec.model import Check

    rng = np.random.default_rng(7)
    ref = rng.uniform(-1, 1, size=(1000, 1037))
    close = ref * (1 + 1e-4 * rng.standard_normal(ref.shape))
    far = close.copy()
    far[3, 5] += 10.0
    unwritten = close.astype(dtype)
    unwritten.view(UINT[unwritten.itemsize])[7, 11:20] = POISON_BITS[unwritten.itemsize]
    nan_written, both_nan, ref_nan = close.copy(), close.copy(), ref.copy()
    nan_written[1, 2] = np.nan
    both_nan[1, 2], ref_nan[1, 2] = np.nan, np.nan
    cases = [(close, ref), (far, ref), (unwritten, ref), (nan_written, ref), (both_nan, ref_nan)]
    for check in (Check("rel_fro", {dtype: 1e-2}), Check("exact", {}), None):
        for out, expected in cases:
            device_out = cp.asarray(np.asarray(out).astype(dtype))
            device_ref = cp.asarray(expected)
            fused = compare("C", device_out, device_ref, check, dtype)
            by_arrays = compare("C", device_out, device_ref, check, dtype, fused=False)
            assert (fused.ok, fused.message) == (by_arrays.ok, by_arrays.message)
            for a, b in ((fused.rel_error, by_arrays.rel_error),
                         (fused.max_abs_error, by_arrays.max_abs_error)):  # fmt: skip
                assert (a is None and b is None) or np.isclose(a, b, rtol=1e-12, equal_nan=True)
    same = ref_nan.astype(dtype)  # equal to the reference where it is exact, NaN unequal
    both = fused_figures(cp.asarray(same), cp.asarray(same.astype(np.float64)))
    arrays = array_figures(cp.asarray(same), cp.asarray(same.astype(np.float64)), True)
    assert both is not None and both.unequal == arrays.unequal == 1
    assert np.isnan(both.max_abs) and np.isnan(arrays.max_abs)
