"""Benchmark (GPU): does ncuflow compare catch a slow-down of 1, 2, 3, 5 or 10 %?

benchmarks/detection.yaml times kernels/axpy/extra_work.cu without extra work and with
EXTRA_PCT % more DRAM reads, at five sizes and four launch shapes, in ten rounds of
timing (each its own worker process), with ncuflow's own worker (benchmarks/measured.py).
For every size and shape, each slow-down is judged against the same kernel without one by
the verdict `ncuflow compare` gives (the rounds' medians resampled; the least effect
2 % unless --threshold says, or the rounds' own spread where that is larger). Printed per
slow-down injected: the share called SLOWER, the other verdicts and the slow-down the
times show (somewhat more than injected: a kernel with the extra loop differs from one
without); then the share called SLOWER per slow-down the times show.

    python benchmarks/detection.py
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

from measured import ROOT, measure_study

from ncuflow.report.compare import least_effect_of, verdict
from ncuflow.vocab import MIN_EFFECT, SLOWER

STUDY = ROOT / "benchmarks" / "detection.yaml"
HEAD = ["injected", "rows", "called SLOWER", "other verdicts", "slow-down shown (median, range)"]
BINS = [(0.0, 2.0), (2.0, 3.0), (3.0, 5.0), (5.0, 10.0), (10.0, 100.0)]  # slow-down shown, %


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threshold", type=float, default=100 * MIN_EFFECT, metavar="PCT")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ncuflow-detection-") as folder:
        measured = measure_study(STUDY, Path(folder), lambda line: None)
    shapes: dict[tuple, dict[int, object]] = defaultdict(dict)
    for work, record in measured:
        if record.status == "ok":
            params = work.row.params
            shape = (work.row.dims["n"], params["BLOCK"], params["BLOCKS_PER_SM"])
            shapes[shape][params["EXTRA_PCT"]] = record
    judged: dict[int, list[tuple[str, float]]] = defaultdict(list)
    for extra in shapes.values():
        base = extra.get(0)
        for pct, record in sorted(extra.items()):
            if pct and base is not None:
                sides = [(r.times_ms, r.round_repeats) for r in (base, record)]
                least = least_effect_of(args.threshold / 100, *sides)
                told = verdict(*(t for t, _ in sides), least_effect=least,
                               rounds_a=sides[0][1], rounds_b=sides[1][1])[0]  # fmt: skip
                judged[pct].append((told, record.time_ms / base.time_ms - 1.0))
    print(f"{len(shapes)} sizes and launch shapes; least effect {args.threshold:g} %")
    print("| " + " | ".join(HEAD) + " |\n|---:|---:|---:|---|---|")
    for pct, told in sorted(judged.items()):
        slower = sum(v == SLOWER for v, _ in told)
        others: dict[str, int] = defaultdict(int)
        for v, _ in told:
            if v != SLOWER:
                others[v] += 1
        shown = ", ".join(f"{n} {v}" for v, n in sorted(others.items())) or "–"
        seen = [100 * s for _, s in told]
        print(
            f"| {pct} % | {len(told)} | {slower} ({100 * slower / len(told):.0f} %) | {shown} | "
            f"{statistics.median(seen):.1f} % ({min(seen):.1f}–{max(seen):.1f}) |"
        )
    # what was injected is what the code does; what the times show is what a gate must see
    every = [(v, 100 * s) for told in judged.values() for v, s in told]
    print("\n| slow-down the times show | rows | called SLOWER |\n|---|---:|---:|")
    for low, high in BINS:
        inside = [v for v, s in every if low <= s < high]
        if inside:
            slower = sum(v == SLOWER for v in inside)
            share = f"{slower} ({100 * slower / len(inside):.0f} %)"
            print(f"| {low:g} to {high:g} % | {len(inside)} | {share} |")


if __name__ == "__main__":
    main()
