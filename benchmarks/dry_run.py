"""Benchmark: how long `snakemake -n` takes to plan a 2,000-configuration study.

Runs the dry run three times on benchmarks/dry_run.yaml (in replay mode, so it needs no
GPU) from the repository root and prints each wall time; the target is under 10 s.

    python benchmarks/dry_run.py
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    command = [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile",
               "benchmarks/dry_run.yaml", "--config", "mode=replay"]  # fmt: skip
    times = []
    for _ in range(3):
        started = time.perf_counter()
        proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        times.append(time.perf_counter() - started)
        if proc.returncode != 0:
            print(proc.stderr[-2000:], file=sys.stderr)
            return 1
    planned = next(line for line in proc.stderr.splitlines() if line.startswith("ncuflow: mode"))
    print(planned)
    print("snakemake -n wall time (s): " + ", ".join(f"{t:.2f}" for t in times))
    print(f"median {sorted(times)[1]:.2f} s (target < 10 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
