"""Benchmark (GPU): what ncu itself costs per profiled kernel, and whether two ncu processes
on two GPUs of one host slow each other.

A trivial kernel (2a + 1 over 2^20 floats: microseconds) is launched N times in a child
process, each launch in its own ncuflow NVTX range, under ncu with the pipeline's command
line (ncu.ncu_command). The child times only its profiled launches, so ncu's start and its
report's writing are left out, and the kernel's own run is negligible: what is left is
ncu's cost per kernel. Prints, per profiled launch:

- one metric (gpu__time_duration): ncu's fixed cost per kernel;
- the explain tier's set (the default sections, the explain tier's and the registry's
  metrics: what the default study asks for most kernels), with its replay passes, so the
  cost per pass;
- the same with 8 GiB more device memory allocated (kernel replay saves the memory a kernel
  can reach before its first pass);
- with two GPUs or more: the explain set by two ncu processes at once, one per GPU.

    python benchmarks/ncu_overhead.py [--launches 20]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from ncuflow.metrics import DURATION, required_metrics  # noqa: E402
from ncuflow.ncu import (  # noqa: E402
    EXPLAIN_SECTIONS,
    available_metrics,
    find_ncu,
    ncu_command,
    run_ncu,
)
from ncuflow.study.config import load_study  # noqa: E402
from ncuflow.vocab import NVTX_PREFIX  # noqa: E402

KERNEL = r"""extern "C" __global__ void twice_plus_one(const float* a, float* out, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * a[i] + 1.0f;
}"""
ELEMENTS = 1 << 20
EXTRA_MIB = 8192
PER_LAUNCH = re.compile(r"per profiled launch: ([\d.]+) ms")
PASSES = re.compile(r"(\d+) passes")


def child(device: int, extra_mib: int, launches: int) -> None:
    """What ncu profiles: the kernel once outside every range, then ``launches`` times,
    each in its own range; prints the milliseconds per profiled launch."""
    import cupy as cp
    from cupy.cuda import nvtx

    cp.cuda.Device(device).use()
    held = cp.ones(extra_mib * 2**18, dtype=cp.float32) if extra_mib else None
    a = cp.random.random(ELEMENTS, dtype=cp.float32)
    out = cp.empty_like(a)
    kernel = cp.RawKernel(KERNEL, "twice_plus_one")
    grid, args = ((ELEMENTS + 255) // 256,), (a, out, cp.int64(ELEMENTS))
    kernel(grid, (256,), args)  # module load outside the ranges
    cp.cuda.runtime.deviceSynchronize()
    started = time.perf_counter()
    for i in range(launches):
        nvtx.RangePush(f"{NVTX_PREFIX}overhead_{i}")
        kernel(grid, (256,), args)
        nvtx.RangePop()
        cp.cuda.runtime.deviceSynchronize()
    seconds = time.perf_counter() - started
    print(f"per profiled launch: {1000 * seconds / launches:.1f} ms", file=sys.stderr)
    del held


def profiled(ncu: str, flags: tuple[list[str], list[str]], device: int, extra_mib: int,
             launches: int, report: Path) -> tuple[float, str]:  # fmt: skip
    """ms per profiled launch and the replay passes of one ncu process over the child."""
    lines: list[str] = []
    target = [sys.executable, __file__, "--child", str(device), str(extra_mib), str(launches)]
    sections, metrics = flags
    run_ncu(ncu_command(ncu, report, sections, "none", metrics, target), lines.append)
    text = "\n".join(lines)
    per_launch, passes = PER_LAUNCH.search(text), PASSES.search(text)
    if per_launch is None:
        sys.exit(f"the profiled child said nothing of its launches:\n{text[-2000:]}")
    return float(per_launch.group(1)), passes.group(1) if passes else "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=20)
    parser.add_argument("--child", type=int, nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return 0
    import cupy as cp

    ncu = find_ncu("ncu")
    study = load_study(yaml.safe_load((ROOT / "config.yaml").read_text()))  # the default study's
    sections = list(study.config["ncu"]["sections"]) + list(EXPLAIN_SECTIONS)
    one = ([], [DURATION])
    explain = (sections, available_metrics(ncu, required_metrics(), lambda line: None))
    gpus = cp.cuda.runtime.getDeviceCount()
    print(f"ncu over a trivial kernel, {args.launches} profiled launches per process")
    print("| ncu collects | device memory held | ms per profiled launch | passes |")
    print("|---|---|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags, extra in (("one metric", one, 0), ("one metric", one, EXTRA_MIB),
                                   ("the explain set", explain, 0),
                                   ("the explain set", explain, EXTRA_MIB)):  # fmt: skip
            ms, passes = profiled(ncu, flags, 0, extra, args.launches, Path(tmp) / "one")
            print(f"| {name} | +{extra} MiB | {ms:.1f} | {passes} |", flush=True)
        if gpus < 2:
            print("one GPU: two ncu processes on two GPUs not measured")
            return 0
        with ThreadPoolExecutor(2) as pool:
            both = list(pool.map(
                lambda d: profiled(ncu, explain, d, 0, args.launches, Path(tmp) / f"gpu{d}"),
                (0, 1),
            ))  # fmt: skip
        alone = profiled(ncu, explain, 0, 0, args.launches, Path(tmp) / "alone")[0]
    shown = ", ".join(f"GPU {d}: {ms:.1f}" for d, (ms, _) in enumerate(both))
    together = 2 * alone / max(ms for ms, _ in both)
    print(f"two ncu processes at once, one per GPU, the explain set: {shown} ms per launch "
          f"(one alone, right after: {alone:.1f} ms); together they profile "
          f"{together:.2f}x as many kernels per second as one")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
