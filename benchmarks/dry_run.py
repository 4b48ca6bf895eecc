"""Benchmark: how long `snakemake -n` takes to plan a 2,000-, a 100,000- and a
1,000,000-configuration study, and how much memory it needs.

Runs the dry run three times on benchmarks/dry_run.yaml and once each on
benchmarks/dry_run_100k.yaml and dry_run_1m.yaml (in gpu mode: a dry run starts no job, and
no capture holds these configurations for a replay to be planned; in a temporary working
folder) and prints the wall times and the largest resident memory of a
dry run; the targets (issue 26) are under 10 s for 2,000 and 100,000, under 60 s and 1 GB
for 1,000,000, on a 2-core machine.

    python benchmarks/dry_run.py
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def dry_runs(study: str, runs: int) -> list[float] | None:
    """Wall times of ``runs`` dry runs of one study, each in a fresh working folder (the
    largest resident memory of any is the children's, resource.getrusage)."""
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as work:
            command = [sys.executable, "-m", "snakemake", "-n", "--cores", "1",
                       "-s", str(ROOT / "Snakefile"), "-d", work, "--configfile",
                       str(ROOT / "benchmarks" / study), "--config", "mode=gpu"]  # fmt: skip
            started = time.perf_counter()
            proc = subprocess.run(command, capture_output=True, text=True)
            times.append(time.perf_counter() - started)
        if proc.returncode != 0:
            print(proc.stderr[-2000:], file=sys.stderr)
            return None
    print(next(line for line in proc.stderr.splitlines() if line.startswith("ncuflow: mode")))
    return times


def main() -> int:
    for study, runs, target in (("dry_run.yaml", 3, 10), ("dry_run_100k.yaml", 1, 10),
                                ("dry_run_1m.yaml", 1, 60)):  # fmt: skip
        times = dry_runs(study, runs)
        if times is None:
            return 1
        shown = ", ".join(f"{t:.2f}" for t in times)
        print(f"snakemake -n wall time (s): {shown}; median {sorted(times)[len(times) // 2]:.2f} "
              f"s (target < {target} s)")  # fmt: skip
    memory_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"largest resident memory of a dry run: {memory_mb:.0f} MB (target < 1024 MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
