"""Benchmark (GPU): the same code measured twice on this machine, compared as `ncuflow
compare` would: how many configurations read SAME, and which do not and why.

The study (default experiments/gate.yaml; --experiment keeps one of its experiments) is
measured twice, each run in a process of its own with ncuflow's own worker
(benchmarks/measured.py: no Snakemake, ncu or compile stage), with --rounds rounds of timing
(default: the study's). Printed: the count of each verdict, then each configuration that is
not SAME with its time, least effect, interval and both runs' round spreads.

    python benchmarks/self_compare.py --rounds 5 --experiment gate_axpy
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import yaml
from measured import ROOT, measure_study

from ncuflow.report.compare import least_effect_of, verdict
from ncuflow.vocab import MIN_EFFECT, SAME


def one_run(study: Path, out: Path) -> None:
    """One side: the study measured, its records by variant and configuration into ``out``."""
    with tempfile.TemporaryDirectory(prefix="ncuflow-self-") as folder:
        measured = measure_study(study, Path(folder), lambda line: None)
    keyed = {f"{w.plan.experiment}/{w.variant.name}/{w.row.config_id}": r.to_json()
             for w, r in measured}  # fmt: skip
    out.write_text(json.dumps(keyed))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configfile", type=Path, default=ROOT / "experiments" / "gate.yaml")
    parser.add_argument("--experiment", help="only this experiment of the study")
    parser.add_argument("--rounds", type=int, help="timing.rounds (default: the study's)")
    parser.add_argument("--side", type=Path, help=argparse.SUPPRESS)  # a run's own process
    args = parser.parse_args()
    if args.side is not None:
        one_run(args.configfile, args.side)
        return
    config = yaml.safe_load(args.configfile.read_text())
    config.pop("capture", None)
    config["kernels_dir"] = str(ROOT / "kernels")
    if args.rounds:
        config.setdefault("timing", {})["rounds"] = args.rounds
    if args.experiment:
        config["experiments"] = {args.experiment: config["experiments"][args.experiment]}
    with tempfile.TemporaryDirectory(prefix="ncuflow-self-") as tmp:
        study = Path(tmp) / "study.yaml"
        study.write_text(yaml.safe_dump(config))
        runs = []
        for side in "ab":
            out = Path(tmp) / f"{side}.json"
            subprocess.run([sys.executable, __file__, "--configfile", str(study), "--side",
                            str(out)], check=True)  # fmt: skip
            runs.append(json.loads(out.read_text()))
    told: Counter[str] = Counter()
    for key, a in runs[0].items():
        b = runs[1].get(key)
        if not b or a["status"] != "ok" or b["status"] != "ok":
            continue
        sides = [(r["times_ms"], r.get("round_repeats")) for r in (a, b)]
        least = least_effect_of(MIN_EFFECT, *sides)
        said, low, high = verdict(sides[0][0], sides[1][0], least_effect=least,
                                  rounds_a=sides[0][1], rounds_b=sides[1][1])  # fmt: skip
        told[said] += 1
        if said != SAME:
            spreads = [r.get("time_round_spread_pct") for r in (a, b)]
            print(
                f"{key}: {said}, {a['time_ms']:.4g} ms, least effect {100 * least:.1f} %, "
                f"interval {low:.4f}–{high:.4f}, round spreads {spreads} %"
            )
    print(f"{sum(told.values())} configurations: {dict(told)}")


if __name__ == "__main__":
    main()
