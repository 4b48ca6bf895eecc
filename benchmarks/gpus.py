"""Benchmark: the same sweep on 1 GPU and on N GPUs of one host (``--resources gpu=N``),
each from an empty working folder with empty CuPy, Triton and ncuflow caches of its own (so
that no run gains from the one before); prints each run's wall time as it ends, then the
speed-up over the first, whether every configuration ended with the same status, and which
GPUs measured.

    python benchmarks/gpus.py --gpus 1 2 [--configfile benchmarks/gpus.yaml] [--keep DIR]

Needs a machine with as many GPUs as the largest count, CuPy and ncu (mode gpu).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from ncuflow.vocab import USER_CACHE_ENV  # noqa: E402


def run(gpus: int, configfile: Path, cores: int, work: Path) -> tuple[float, pd.DataFrame]:
    """Wall seconds of one whole run on ``gpus`` GPUs, and its tables joined."""
    command = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d",
               str(work), "--cores", str(cores), "--resources", f"gpu={gpus}",
               "--configfile", str(configfile), "--config", "mode=gpu"]  # fmt: skip
    caches = {"CUPY_CACHE_DIR": "cupy", "TRITON_CACHE_DIR": "triton", USER_CACHE_ENV: "ncuflow"}
    env = os.environ | {name: str(work / "caches" / folder) for name, folder in caches.items()}
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    wall_s = time.perf_counter() - started
    print(f"{gpus} GPU(s): {wall_s:.1f} s", flush=True)
    if proc.returncode != 0:
        sys.exit(f"the run on {gpus} GPU(s) failed:\n{proc.stderr[-3000:]}")
    tables = [pd.read_parquet(t) for t in sorted(work.glob("results/*/table.parquet"))]
    return wall_s, pd.concat(tables, ignore_index=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--configfile", type=Path, default=ROOT / "benchmarks" / "gpus.yaml")
    parser.add_argument("--cores", type=int, default=16)
    parser.add_argument("--keep", type=Path, help="copy each run's results/ here")
    args = parser.parse_args()
    runs: dict[int, tuple[float, pd.DataFrame]] = {}
    for gpus in args.gpus:
        with tempfile.TemporaryDirectory() as work:
            runs[gpus] = run(gpus, args.configfile.resolve(), args.cores, Path(work))
            if args.keep:
                shutil.copytree(Path(work) / "results", args.keep / f"gpu{gpus}" / "results")
    base_s, base = runs[args.gpus[0]]
    key = ["experiment", "variant", "config_id"]
    statuses = base.set_index(key)["status"].sort_index()
    print(f"{len(base)} configurations ({args.configfile.name}), --cores {args.cores}")
    print("| GPUs | wall (s) | speed-up | same statuses | devices that measured |")
    print("|---:|---:|---:|---|---|")
    for gpus, (wall_s, table) in runs.items():
        same = table.set_index(key)["status"].sort_index().equals(statuses)
        devices = sorted(set(table["device"].dropna()) - {""})
        print(f"| {gpus} | {wall_s:.1f} | {base_s / wall_s:.2f}x | {'yes' if same else 'NO'} | "
              f"{'; '.join(devices)} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
