"""Benchmark (CPU): search strategies compared on a brute-force capture, without a GPU.

Each strategy searches the capture's grid experiment (the one with the most
configurations) in the study's rounds, every proposal answered from the capture's records
(ncuflow.search.simulate: the workflow's own rounds, only the measuring replaced). Per
problem size and strategy, over the seeds, it prints:

- evaluations to come within 2 % of the brute-force best (median and worst; ">N" where a
  seed did not within the budget: 12 % of the space, unless --budget-pct says);
- the best found at 5 % and at 10 % of the space, over the brute-force best (median and
  worst: 1.000 is the best itself);
- for tpe, the same with roofline pruning (prune: roofline), and how many proposals it
  skipped; and the same with rounds that wait for the one before (overlap: false), to
  show what proposing from times one round old costs.

    python benchmarks/search.py --capture h200-regtile_search [--seeds 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from ncuflow.files import read_config  # noqa: E402
from ncuflow.plan import ConfigRow  # noqa: E402
from ncuflow.search.simulate import captured, simulate  # noqa: E402
from ncuflow.study.config import load_study  # noqa: E402
from ncuflow.study.rounds import SearchSettings  # noqa: E402

RUNS = (("random", "none", True), ("tpe", "none", True), ("tpe", "roofline", True),
        ("tpe", "roofline", False))  # fmt: skip


def study_of(capture: str) -> Path:
    """The experiments file that names the capture."""
    for path in sorted((ROOT / "experiments").glob("*.yaml")):
        if read_config(path).get("capture") == capture:
            return path
    sys.exit(f"no file of experiments/ names capture {capture}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capture", required=True)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--budget-pct", type=float, default=12.0)
    args = parser.parse_args()
    path = study_of(args.capture)
    study = load_study(read_config(path), path.parent)
    name = max((e for e in study.experiments.values() if not e.search.searches),
               key=lambda e: sum(s.size for s in e.scans.values())).name  # fmt: skip
    experiment = study.experiments[name]
    records, ceilings = captured(ROOT / "resources" / "captures" / args.capture, name)
    batch = next((e.search.batch for e in study.experiments.values() if e.search.searches), 20)
    problems: dict[str, list[float]] = {}  # each problem's times, by its sizes
    for variant, grid in experiment.grids.items():
        for row in grid.rows():
            record = records.get((variant, row.config_id))
            if row.pending and record is not None and record.status == "ok":
                problems.setdefault(_key(row), []).append(record.time_ms)
    space = {key: len(times) for key, times in problems.items()}
    best = {key: min(times) for key, times in problems.items()}
    print(f"capture {args.capture}, experiment {name}: {sum(space.values())} configurations "
          f"that ran, per problem {space}; rounds of {batch}; {args.seeds} seeds")  # fmt: skip
    for strategy, prune, overlap in RUNS:
        started = time.perf_counter()
        runs, skipped = [], Counter()
        for seed in range(args.seeds):
            most = max(1, round(max(space.values()) * args.budget_pct / 100))
            settings = SearchSettings(strategy=strategy, budget=most, batch=batch, seed=seed,
                                      prune=prune, overlap=overlap)  # fmt: skip
            measured, why = simulate(experiment, settings, records, ceilings)
            runs.append(measured)
            skipped.update(why)
        print(f"\n{strategy}, prune {prune}, overlap {str(overlap).lower()} "
              f"({time.perf_counter() - started:.0f} s; proposals "
              f"skipped over all seeds: {dict(skipped)}):")  # fmt: skip
        for key in sorted(best):
            _print_problem(key, [[t for row, t in run if _key(row) == key] for run in runs],
                           space[key], best[key])  # fmt: skip


def _key(row: ConfigRow) -> str:
    return ", ".join(f"{k}={v}" for k, v in {**row.dims, **(row.scalars or {})}.items())


def _print_problem(key: str, runs: list[list[float | None]], space: int, best: float) -> None:
    """One problem's line: evaluations to within 2 % of the best, and the best at 5 % and
    10 % of the space, over the seeds' runs (each its times in order)."""
    needed, at5, at10 = [], [], []
    for times in runs:
        running, reached = float("inf"), None
        for count, time_ms in enumerate(times, 1):
            running = min(running, time_ms if time_ms is not None else running)
            if reached is None and running <= 1.02 * best:
                reached = count
            if count == round(0.05 * space):
                at5.append(running / best)
            if count == round(0.10 * space):
                at10.append(running / best)
        needed.append(reached)
    longest = max(len(t) for t in runs)
    shown = sorted(n for n in needed if n is not None)
    worst = f">{longest}" if len(shown) < len(needed) else str(max(shown))
    half = len(shown) * 2 > len(needed)
    median = f"{statistics.median(shown):.0f}" if half else f">{longest}"
    share = f" ({100 * statistics.median(shown) / space:.1f} % of {space})" if half else ""
    print(
        f"  {key}: within 2 % after {median} evaluations{share} (median; worst {worst}); "
        f"best found at 5 %: {_spread(at5)}, at 10 %: {_spread(at10)}"
    )


def _spread(ratios: list[float]) -> str:
    if not ratios:
        return "-"
    return f"{statistics.median(ratios):.3f} (worst {max(ratios):.3f})"


if __name__ == "__main__":
    main()
