"""Measured ceilings (rule ``ceilings``): the peak rates of this GPU that a roofline is
drawn against, measured once per device.

Memory levels are in byte/s, each the best of several access patterns, every pattern
recorded (``patterns``): ``dram`` (a device-to-device copy and STREAM-like read, write, copy
and triad kernels at 4-, 8- and 16-byte elements, bytes read plus written), ``l2`` (reads
and writes of a buffer L2 holds), ``l1`` (reads of slices L1 holds) and ``shared`` (reads
and writes). A single pattern is not a ceiling: on an H100 16-byte stores alone reach
3.15 TB/s where cudaMemcpy gives 3.01 (2026-11-26).

Compute is in FLOP/s: ``fp32``, ``fp64`` and ``fp16`` (FMA chains in registers; an FMA is
2 FLOP, an HFMA2 4) and the tensor cores through cuBLAS (cupy.matmul at 8192³, 2·n³ FLOP):
``tensor_fp16``, ``tensor_tf32`` and, where CuPy has bfloat16 (from ml_dtypes),
``tensor_bf16``.

With the energy tier (``energy:`` in the config), rule ``energy_ceilings`` measures the energy
ceilings apart (device.energy_ceilings) with this module's kernels: ``energy_fp32`` and
``energy_tensor_fp16`` in FLOP/J, ``energy_dram`` in byte/J (the best of the memcpy and the
16-byte read and copy streams).

Each value is the median over REPEATS timed launches (CUDA events), each sized to last about
TARGET_S (the memcpy pattern: one 2 GiB copy, about 1 ms), after warm-up launches; a DRAM
pattern's is the best of DRAM_ROUNDS such medians, each on arrays of its own. The kernels
fill every SM with as many blocks as can be resident at once. For a sanity check, an H100
SXM gives about 3.0 TB/s for the DRAM copy, 7–10 TB/s from L2, 60 TFLOP/s FP32 and 750
TFLOP/s FP16 on the tensor cores.
"""

from __future__ import annotations

import functools
import math
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..gpu import cupy, gpu_properties, toolkit_includes
from ..metrics import LEVELS
from ..tf32 import matmul_tf32
from ..vocab import ENERGY_CEILING_NAMES

SOURCE = Path(__file__).with_name("ceilings.cu")
# DRAM streams: arrays touched per element, and the element widths in bytes.
STREAM_ARRAYS = {"read": 1, "write": 1, "copy": 2, "triad": 3}
STREAM_WIDTHS = (4, 8, 16)
STREAMS = tuple(f"stream_{p}_{w}" for p in STREAM_ARRAYS for w in STREAM_WIDTHS)
KERNELS = ("ffma_loop", "dfma_loop", "hfma2_loop", "l2_read", "l2_write", "l1_read",
           "shared_read", "shared_write", *STREAMS)  # fmt: skip
# What is measured: a ceiling per memory level of the registry, and per precision below
# (each a precision of the registry: tests/test_ceilings.py).
CEILING_NAMES = (*LEVELS, "fp32", "fp64", "fp16", "tensor_fp16", "tensor_tf32", "tensor_bf16")
OPTIONAL = ("tensor_bf16",)  # left out, with the reason logged, where CuPy cannot run it
# The energy ceilings (rule energy_ceilings): the rate ceiling each is measured on, and the
# patterns of a ceiling whose energy is measured where it has several.
ENERGY_CEILINGS = dict(zip(ENERGY_CEILING_NAMES, ("fp32", "tensor_fp16", "dram"), strict=True))
ENERGY_PATTERNS = {"dram": ("memcpy", "read_16B", "copy_16B")}

WARMUP = 5  # launches at least, and at least WARMUP_S of them, before timing
WARMUP_S = 0.05
REPEATS = 20
TARGET_S = 2e-3  # each timed launch lasts about this long ...
MIN_S = 1.25e-3  # ... and at least this long, once its work is scaled
DRAM_BYTES = 2 << 30  # the copied buffer (read once, written once), and each stream array
# DRAM's rate moves by 1-2 % between sets of arrays of the same run (an H200, 2026-11-29):
# each pattern is measured on this many sets, freshly allocated, and keeps its best.
DRAM_ROUNDS = 3
L2_BYTES = 16 << 20  # l2_read's buffer, at most L2 / 3, then rounded to whole load batches
L1_SLICE_BYTES = 16 << 10  # each l1_read block's slice
GEMM_N = 8192


def kernel_constants(source: str) -> dict[str, int]:
    """The launch-shape constants of ceilings.cu (its lines ``constexpr int NAME = value;``)."""
    return {m[1]: int(m[2]) for m in re.finditer(r"^constexpr int (\w+) = (\d+);", source, re.M)}


def spread_pct(values: list[float]) -> float:
    """Interquartile range over median, in percent."""
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return (q3 - q1) / median * 100


@dataclass
class Device:
    """What every measurement needs: CuPy, the compiled kernels and the facts of the GPU."""

    cp: Any
    module: Any
    k: dict[str, int]  # the constants of ceilings.cu
    sms: int
    l2_bytes: int
    log: Callable[[str], None]
    sm_clock_max_mhz: float
    energy_s: float | None = None  # the energy tier's seconds, None: no energy ceilings
    # the patterns whose energy is measured once every rate is: (ceiling, pattern, launch,
    # work, unit, method, ms a launch)
    pending: list[tuple[Any, ...]] = field(default_factory=list)


def open_device(log: Callable[[str], None], energy_s: float | None) -> Device:
    cp = cupy()
    source = SOURCE.read_text()
    module = cp.RawModule(code=source, options=("-std=c++17", *toolkit_includes()))
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    return Device(cp, module, kernel_constants(source), int(props["multiProcessorCount"]),
                   int(props["l2CacheSize"]), log, gpu_properties()["sm_clock_max_mhz"],
                   energy_s)  # fmt: skip


def _kernel(d: Device, name: str, threads: int, carveout: int | None = None) -> tuple[Any, int]:
    """(the kernel, its grid): as many blocks of ``threads`` as fit on every SM at once."""
    fn = d.module.get_function(name)
    if carveout is not None:  # percent of the unified L1/shared memory kept for shared memory
        fn.preferred_shared_memory_carveout = carveout
    per_sm = d.cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, threads, 0)
    if per_sm < 1:
        raise RuntimeError(f"{name} cannot run blocks of {threads} threads on this GPU")
    return fn, d.sms * per_sm


def _time(d: Device, launch: Callable[[], None], repeats: int) -> list[float]:
    """Seconds of each of ``repeats`` launches, each between its own pair of CUDA events."""
    cp = d.cp
    stream = cp.cuda.get_current_stream()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(repeats):
        start.record(stream)
        launch()
        end.record(stream)
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
    return times


def _scale(d: Device, launch: Callable[[int], None], count: int) -> int:
    """The work count (iterations, passes) that makes one launch last about TARGET_S."""
    launch(count)  # compiles on first use, outside any timing
    d.cp.cuda.Device().synchronize()
    for _ in range(8):
        seconds = statistics.median(_time(d, functools.partial(launch, count), 3))
        if seconds >= MIN_S:
            break
        factor = min(1000.0, TARGET_S / max(seconds, 1e-7))
        count = min(2**31 - 1, max(count + 1, math.ceil(count * factor)))
    return count


def _measure(
    d: Device, launch: Callable[[], None], work: float, unit: str, method: str,
    energy: tuple[str, str] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Warm up for WARMUP_S, time REPEATS launches: the rate work / median time; with the
    energy tier, ``energy`` (the ceiling and the pattern, given for those ENERGY_CEILINGS
    and ENERGY_PATTERNS name): its launch kept for its energy (measure_energy_ceilings)."""
    once = _time(d, launch, 1)[0]
    for _ in range(max(WARMUP, math.ceil(WARMUP_S / once))):
        launch()
    d.cp.cuda.Device().synchronize()
    rates = [work / seconds for seconds in _time(d, launch, REPEATS)]
    d.cp.cuda.Device().synchronize()  # raises any error the launches left
    if d.energy_s is not None and energy is not None:  # run once every rate is timed
        d.pending.append(
            (*energy, launch, work, unit, method, 1e3 * work / statistics.median(rates))
        )
    return {
        "value": float(statistics.median(rates)),
        "unit": unit,
        "method": method,
        "repeats": len(rates),
        "spread_pct": float(spread_pct(rates)),
    }


def best_of(patterns: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A level's ceiling: its fastest pattern, with every pattern's rate and spread."""
    name = max(patterns, key=lambda k: patterns[k]["value"])
    # an energy ceiling's run has no spread; DRAM's patterns have rounds
    kept = ("value", "spread_pct", "method", "rounds")
    return {**patterns[name], "pattern": name,
            "patterns": {k: {key: v[key] for key in kept if key in v}
                         for k, v in patterns.items()}}  # fmt: skip


def measure_dram(
    d: Device, rounds: int = DRAM_ROUNDS, only: tuple[str, ...] | None = None
) -> dict[str, Any]:
    """The DRAM ceiling: every pattern (or those named ``only``) measured on ``rounds``
    sets of freshly allocated arrays, each pattern at its best round (the rounds' rates
    kept); the energy tier's patterns run on the last round's arrays."""
    done = []
    for number in range(rounds):
        done.append(_dram_round(d, number == rounds - 1, only))
        d.cp.get_default_memory_pool().free_all_blocks()  # the round's arrays
    patterns = {}
    for name in done[0]:
        measured = [each[name] for each in done]
        best = max(measured, key=lambda entry: entry["value"])
        patterns[name] = {**best, "rounds": [entry["value"] for entry in measured]}
    return best_of(patterns)


def _dram_round(d: Device, last: bool, only: tuple[str, ...] | None) -> dict[str, dict[str, Any]]:
    """Each DRAM pattern (of ``only``, where given) once, on arrays of its own (``last``:
    energy patterns kept)."""
    cp = d.cp
    n = DRAM_BYTES // 4
    a, b, c = (cp.random.random(n, dtype=cp.float32) for _ in range(3))

    def copy() -> None:  # on the stream current when it runs: the energy tier captures it
        a.data.copy_from_device_async(b.data, b.nbytes, cp.cuda.get_current_stream())

    def energy(name: str) -> tuple[str, str] | None:
        return ("dram", name) if last and name in ENERGY_PATTERNS["dram"] else None

    method = (f"cudaMemcpyAsync device to device of {b.nbytes >> 20} MiB of random float32, "
              "counting the bytes read plus the bytes written.")  # fmt: skip
    patterns = {}
    if only is None or "memcpy" in only:
        patterns["memcpy"] = _measure(d, copy, 2 * b.nbytes, "byte/s", method, energy("memcpy"))
    for pattern, arrays in STREAM_ARRAYS.items():
        for width in STREAM_WIDTHS:
            name = f"{pattern}_{width}B"
            if only is not None and name not in only:
                continue
            fn, grid = _kernel(d, f"stream_{pattern}_{width}", d.k["THREADS"])
            out = cp.empty(grid * d.k["THREADS"], dtype=cp.float32)
            sized = (a, b, c, np.uint64(DRAM_BYTES // width))  # elements of the width

            def launch(passes: int, fn: Any = fn, grid: int = grid, out: Any = out,
                       sized: tuple = sized) -> None:  # fmt: skip
                fn((grid,), (d.k["THREADS"],), (*sized, np.int32(passes), np.float32(0.5), out))

            passes = _scale(d, launch, 1)
            method = (f"stream_{pattern}_{width}: {grid} blocks x {d.k['THREADS']} threads "
                      f"stride over {arrays} array(s) of {DRAM_BYTES >> 20} MiB with "
                      f"{width}-byte elements, {passes} pass(es) a launch, counting every "
                      "byte read and written.")  # fmt: skip
            patterns[name] = _measure(d, functools.partial(launch, passes),
                                      arrays * DRAM_BYTES * passes, "byte/s", method,
                                      energy(name))  # fmt: skip
    return patterns


def _l2(d: Device) -> dict[str, Any]:
    cp = d.cp
    threads, batch = d.k["THREADS"], d.k["BATCH"]
    fn, grid = _kernel(d, "l2_read", threads)
    # whole batches of loads per pass: n_vec a multiple of BATCH * (threads in the grid)
    unit = batch * grid * threads
    target = min(L2_BYTES, d.l2_bytes // 3) // 16
    whole = unit * max(1, round(target / unit))
    n_vec = whole if whole * 16 <= d.l2_bytes // 2 else target // threads * threads
    buf = cp.random.random(n_vec * 4, dtype=cp.float32)
    out = cp.empty(grid * threads, dtype=cp.float32)

    def launch(passes: int) -> None:
        fn((grid,), (threads,), (buf, np.uint64(n_vec), np.int32(passes), out))

    passes = _scale(d, launch, 16)
    method = (
        f"l2_read: {grid} blocks x {threads} threads ({grid // d.sms} per SM) read a "
        f"{n_vec * 16 / 2**20:.1f} MiB buffer {passes} times with 128-bit ld.global.cg loads "
        f"(an L2 of {d.l2_bytes >> 20} MiB)."
    )
    return _measure(d, lambda: launch(passes), n_vec * 16 * passes, "byte/s", method)


def _l2_write(d: Device) -> dict[str, Any]:
    cp = d.cp
    threads = d.k["THREADS"]
    fn, grid = _kernel(d, "l2_write", threads)
    n_vec = min(L2_BYTES, d.l2_bytes // 3) // 16 // (grid * threads) * (grid * threads)
    buf = cp.empty(n_vec * 4, dtype=cp.float32)

    def launch(passes: int) -> None:
        fn((grid,), (threads,), (buf, np.uint64(n_vec), np.int32(passes)))

    passes = _scale(d, launch, 16)
    method = (
        f"l2_write: {grid} blocks x {threads} threads ({grid // d.sms} per SM) write a "
        f"{n_vec * 16 / 2**20:.1f} MiB buffer {passes} times with 128-bit st.global.cg stores."
    )
    return _measure(d, lambda: launch(passes), n_vec * 16 * passes, "byte/s", method)


def _l1(d: Device) -> dict[str, Any]:
    cp = d.cp
    threads = d.k["THREADS"]
    fn, grid = _kernel(d, "l1_read", threads, carveout=0)  # 0: the largest L1
    per_block = L1_SLICE_BYTES // 16
    buf = cp.random.random(grid * per_block * 4, dtype=cp.float32)
    out = cp.empty(grid * threads, dtype=cp.float32)

    def launch(passes: int) -> None:
        fn((grid,), (threads,), (buf, np.int32(per_block), np.int32(passes), out))

    passes = _scale(d, launch, 64)
    method = (
        f"l1_read: {grid} blocks x {threads} threads ({grid // d.sms} per SM) each read their "
        f"own {L1_SLICE_BYTES >> 10} KiB slice {passes} times with 128-bit ld.global.nc loads, "
        "with the L1 carve-out at its largest."
    )
    work = grid * per_block * 16 * passes
    return _measure(d, lambda: launch(passes), work, "byte/s", method)


def _shared(d: Device, name: str) -> dict[str, Any]:
    cp = d.cp
    threads, n_vec = d.k["SHARED_THREADS"], d.k["SHARED_VEC"]
    fn, grid = _kernel(d, name, threads, carveout=100)  # 100: the most shared memory
    out = cp.empty(grid * threads, dtype=cp.float32)

    def launch(passes: int) -> None:
        fn((grid,), (threads,), (out, np.int32(passes)))

    passes = _scale(d, launch, 64)
    verb, op = ("read", "LDS.128") if name == "shared_read" else ("write", "STS.128")
    method = (
        f"{name}: {grid} blocks x {threads} threads ({grid // d.sms} per SM) each {verb} "
        f"their {n_vec * 16 >> 10} KiB of shared memory {passes} times with conflict-free "
        f"{op}."
    )
    work = grid * n_vec * 16 * passes
    return _measure(d, lambda: launch(passes), work, "byte/s", method)


def measure_fma(d: Device, name: str, dtype: str, flop_per_fma: int, what: str) -> dict[str, Any]:
    cp = d.cp
    threads, fmas = d.k["THREADS"], d.k["CHAINS"] * d.k["STEPS"]
    fn, grid = _kernel(d, name, threads)
    elements = grid * threads * (2 if dtype == "float16" else 1)  # __half2 is two halves
    out = cp.empty(elements, dtype=dtype)

    def launch(iters: int) -> None:
        fn((grid,), (threads,), (out, np.int32(iters)))

    iters = _scale(d, launch, 64)
    method = (
        f"{name}: {grid} blocks x {threads} threads ({grid // d.sms} per SM), each "
        f"{iters} x {fmas} {what} in {d.k['CHAINS']} independent register chains "
        f"({flop_per_fma} FLOP each)."
    )
    work = grid * threads * iters * fmas * flop_per_fma
    ceiling = {"float32": "fp32", "float64": "fp64", "float16": "fp16"}[dtype]
    return _measure(d, lambda: launch(iters), work, "FLOP/s", method, _energy(ceiling, name))


def _energy(ceiling: str, pattern: str) -> tuple[str, str] | None:
    """(ceiling, pattern) where the energy tier measures the ceiling's energy too."""
    return (ceiling, pattern) if ceiling in ENERGY_CEILINGS.values() else None


def measure_gemm(
    d: Device, dtype: Any, label: str, ceiling: str, tf32: bool = False
) -> dict[str, Any]:
    cp, n = d.cp, GEMM_N
    x = cp.random.random((n, n), dtype=cp.float32).astype(dtype)
    y = cp.random.random((n, n), dtype=cp.float32).astype(dtype)
    z = cp.empty((n, n), dtype=dtype)

    def launch() -> None:
        if tf32:
            matmul_tf32(x, y, z)
        else:
            cp.matmul(x, y, out=z)

    method = f"cuBLAS through cupy.matmul, {label}, {n}x{n}x{n} (2*n^3 FLOP)."
    return _measure(d, launch, 2.0 * n**3, "FLOP/s", method, _energy(ceiling, "cublas"))


def _bf16_gemm(d: Device) -> dict[str, Any] | None:
    """tensor_bf16, or None (logged) where CuPy cannot multiply bfloat16 matrices."""
    try:
        import ml_dtypes
    except ImportError:
        d.log("tensor_bf16 skipped: CuPy takes bfloat16 from ml_dtypes, which is not installed")
        return None
    try:
        return measure_gemm(d, ml_dtypes.bfloat16, "bfloat16 in and out", "tensor_bf16")
    except Exception as exc:  # CuPy before bfloat16 support, or no bfloat16 matmul
        d.log(f"tensor_bf16 skipped: CuPy cannot multiply bfloat16 matrices ({exc})")
        return None


def measure_ceilings(log: Callable[[str], None]) -> dict[str, dict[str, Any]]:
    """Every ceiling, keyed by the names in CEILING_NAMES (tensor_bf16 where it runs)."""
    device = open_device(log, None)
    cp = device.cp
    steps: dict[str, Callable[[], dict[str, Any] | None]] = {
        "dram": lambda: measure_dram(device),
        "l2": lambda: best_of({"read_16B": _l2(device), "write_16B": _l2_write(device)}),
        "l1": lambda: best_of({"read_16B": _l1(device)}),
        "shared": lambda: best_of(
            {
                "read_16B": _shared(device, "shared_read"),
                "write_16B": _shared(device, "shared_write"),
            }
        ),
        "fp32": lambda: measure_fma(device, "ffma_loop", "float32", 2, "FP32 FMAs"),
        "fp64": lambda: measure_fma(device, "dfma_loop", "float64", 2, "FP64 FMAs"),
        "fp16": lambda: measure_fma(device, "hfma2_loop", "float16", 4, "packed-half FMAs (HFMA2)"),
        "tensor_fp16": lambda: measure_gemm(
            device, cp.float16, "float16 in and out", "tensor_fp16"
        ),
        "tensor_tf32": lambda: measure_gemm(
            device, cp.float32, "float32 with TF32 compute", "tensor_tf32", True
        ),
        "tensor_bf16": lambda: _bf16_gemm(device),
    }
    ceilings: dict[str, dict[str, Any]] = {}
    for name, step in steps.items():
        entry = step()
        device.cp.get_default_memory_pool().free_all_blocks()  # the step's arrays
        if entry is None:
            continue
        ceilings[name] = entry
        log(f"{name}: {entry['value']:.4g} {entry['unit']} (spread {entry['spread_pct']:.1f}%)")
        for pattern, each in entry.get("patterns", {}).items():
            log(f"  {pattern}: {each['value']:.4g} (spread {each['spread_pct']:.1f}%)")
    if "tensor_bf16" in ceilings and ceilings["tensor_bf16"]["value"] < (
        0.5 * ceilings["tensor_fp16"]["value"]
    ):
        log("warning: tensor_bf16 is under half of tensor_fp16; CuPy may not use tensor cores")
    return ceilings
