"""Benchmark (GPU): what a measure job's first check of an output costs on a machine whose
CuPy kernel cache is empty, the check in one kernel built ahead (compare.cu, compiled with
NVRTC on the CPU as the compile stage does, its cubin loaded) against CuPy's array
operations (compiled at their first use); each in a fresh process with an empty cache,
then each once warm (median of 5). Prints the seconds of each.

    python benchmarks/first_check.py [--size 4096] [--dtype float32]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

from ncuflow.compile.cubins import CUPY_DEFAULTS, HELPER_OPTIONS, HELPERS, helper_source
from ncuflow.compile.stage import gpu_arch
from ncuflow.nvrtc import compile_cubin
from ncuflow.vocab import COMPILED_ENV


def one(fused: bool, size: int, dtype: str) -> dict[str, float]:
    """In this process: the first check's seconds, then the median of five more."""
    import cupy as cp
    import numpy as np

    from ncuflow.measure.compare import compare

    rng = np.random.default_rng(1)
    ref_host = rng.uniform(-1, 1, size=(size, size))
    out = cp.asarray((ref_host * (1 + 1e-6 * rng.standard_normal(ref_host.shape))).astype(dtype))
    ref = cp.asarray(ref_host)
    cp.cuda.Device().synchronize()
    started = time.perf_counter()
    first = compare("C", out, ref, None, dtype, fused=fused)
    first_s = time.perf_counter() - started
    warm = []
    for _ in range(5):
        started = time.perf_counter()
        compare("C", out, ref, None, dtype, fused=fused)
        warm.append(time.perf_counter() - started)
    return {"first_s": first_s, "warm_s": statistics.median(warm), "rel": first.rel_error or 0.0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--one", choices=["fused", "arrays"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one == "fused", args.size, args.dtype)))
        return 0
    arch = gpu_arch()
    if arch is None:
        sys.exit("needs a GPU (nvidia-smi names its architecture)")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        helpers = {}
        for name in HELPERS:  # as the compile stage builds them, on the CPU
            cubin = Path(tmp) / f"{name}.cubin"
            options = (*HELPER_OPTIONS, *CUPY_DEFAULTS, f"--gpu-architecture={arch}")
            cubin.write_bytes(compile_cubin(helper_source(name), f"{name}.cu", options))
            helpers[name] = str(cubin)
        built_s = time.perf_counter() - started
        index = Path(tmp) / "compiled.json"
        index.write_text(json.dumps({"arch": arch, "cubins": {}, "helpers": helpers}))
        for way in ("arrays", "fused"):
            env = {**os.environ, "CUPY_CACHE_DIR": tempfile.mkdtemp(dir=tmp)}
            env.pop(COMPILED_ENV, None)
            if way == "fused":
                env[COMPILED_ENV] = str(index)
            proc = subprocess.run([sys.executable, __file__, "--one", way, "--size",
                                   str(args.size), "--dtype", args.dtype],
                                  capture_output=True, text=True, env=env, check=True)  # fmt: skip
            results[way] = json.loads(proc.stdout.splitlines()[-1])
    print(f"an output of {args.size}x{args.size} {args.dtype} against its float64 reference, "
          f"an empty CuPy kernel cache; the harness's kernels built on the CPU in "
          f"{built_s:.2f} s ({arch})")  # fmt: skip
    print("| check | first (s) | warm (s) | relative error |")
    print("|---|---:|---:|---:|")
    for way, label in (("arrays", "CuPy's array operations"), ("fused", "one kernel (compare.cu)")):
        r = results[way]
        print(f"| {label} | {r['first_s']:.3f} | {r['warm_s']:.4f} | {r['rel']:.3e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
