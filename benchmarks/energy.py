"""Benchmark (CPU, on two captures): how repeatable is the energy tier, how well do NVML's
energy counter and its power samples agree, and what does the tier cost?

Reads every experiment's table of two captures of one study with the energy tier (by
default h200-energy and h200-energy-b, two runs of experiments/energy.yaml on one H200)
and prints, for the configurations both measured:
- repeatability: energy per launch of the second run against the first (the median and
  largest difference, and the share within 3 %), for those of 20 µs or more a launch and
  for the shorter ones apart;
- counter against samples: each run's average power from the energy counter against the
  mean of its instantaneous power samples over the same span (share within 5 %);
- cost: the tier's wall seconds per configuration (median, largest) and in all, and the
  warm-ups (a measure process's first configuration, until the GPU is warm) apart.

    python benchmarks/energy.py [--captures A B]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
CAPTURES = ROOT / "resources" / "captures"
KEYS = ["experiment", "variant", "config_id"]
LONG_ENOUGH_MS = 0.02  # the 20 µs


def energy_table(capture: Path) -> pd.DataFrame:
    """Every experiment's rows of a capture that have an energy."""
    tables = [pd.read_parquet(p) for p in sorted(capture.glob("*/table.parquet"))]
    table = pd.concat(tables, ignore_index=True)
    if "energy_j" not in table:
        raise SystemExit(f"{capture}: no energy_j column (taken without the energy tier)")
    return table[table["energy_j"].notna()]


def _pct(values: pd.Series) -> str:
    return f"median {values.median():.2f} %, largest {values.max():.2f} %"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--captures", nargs=2, default=["h200-energy", "h200-energy-b"])
    args = parser.parse_args()
    a, b = (energy_table(CAPTURES / name) for name in args.captures)
    # one block per dtype (copy), not the merge's many: columns are added below
    both = a.merge(b, on=KEYS, suffixes=("_a", "_b")).copy()
    print(f"{args.captures[0]} and {args.captures[1]}: {len(both)} configurations with an "
          "energy in both")  # fmt: skip
    both["diff_pct"] = 100 * (both["energy_j_b"] / both["energy_j_a"] - 1).abs()
    print("\nEnergy per launch, second run against the first:")
    for label, long in ((f">= {1e3 * LONG_ENOUGH_MS:g} µs", True),
                        (f"< {1e3 * LONG_ENOUGH_MS:g} µs", False)):  # fmt: skip
        rows = both[(both["energy_launch_ms_a"] >= LONG_ENOUGH_MS) == long]
        if rows.empty:
            continue
        within = (rows["diff_pct"] <= 3).mean()
        print(f"  {label} a launch: {len(rows)} configurations, {_pct(rows['diff_pct'])}, "
              f"{100 * within:.0f} % within 3 %")  # fmt: skip
    worst = both.sort_values("diff_pct", ascending=False).head(5)
    print("  largest differences:")
    for _, row in worst.iterrows():
        print(f"    {row['variant']} {row['config_id']}: {1e3 * row['energy_j_a']:.4g} and "
              f"{1e3 * row['energy_j_b']:.4g} mJ ({row['diff_pct']:.1f} %), power "
              f"{row['avg_power_w_a']:.0f} and {row['avg_power_w_b']:.0f} W, "
              f"{row['energy_launch_ms_a']:.4g} ms a launch")  # fmt: skip
    print("\nAverage power, energy counter against the power samples of the same span:")
    for name, table in zip(args.captures, (a, b), strict=True):
        gap = 100 * (table["avg_power_w"] / table["avg_power_w_samples"] - 1).abs()
        print(f"  {name}: {len(gap)} configurations, {_pct(gap)}, "
              f"{100 * (gap <= 5).mean():.0f} % within 5 %")  # fmt: skip
    print("\nWhat the tier costs (its wall seconds per configuration, the warm-ups apart):")
    for name, table in zip(args.captures, (a, b), strict=True):
        warm = table.get("energy_warmup_s", pd.Series(np.nan, index=table.index)).astype(float)
        spent, warmups = table["energy_wall_s"].astype(float) - warm.fillna(0), warm.dropna()
        graphs = table["energy_note"].fillna("").eq("") if "energy_note" in table else True
        every = (spent.sum() + warmups.sum()) / len(spent)
        warmed = (f"warm-ups of {', '.join(f'{w:.1f}' for w in warmups)} s" if len(warmups)
                  else "no warm-up")  # fmt: skip
        print(f"  {name}: median {spent.median():.2f} s, largest {spent.max():.2f} s, "
              f"{spent.sum():.0f} s for {len(spent)} configurations; "
              f"{int(np.sum(graphs))} of them as CUDA graphs; {warmed}: "
              f"{every:.2f} s a configuration in all")  # fmt: skip


if __name__ == "__main__":
    main()
