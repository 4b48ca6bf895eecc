"""The verdicts of collected tables against Nsight Compute's and against the ceilings.

For each results folder (a GPU run's or a replay's: results/ after snakemake), prints per
experiment: the share of profiled configurations whose bound agrees with ncu's own
SOLBottleneck verdict (and each disagreement with its reason), the rows above a measured
ceiling, the rows whose FLOP count is flagged, and the device's ceilings (the pattern that
set each, measured against theoretical).

    python benchmarks/verdicts.py [results ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from ncuflow.analyze.verdicts import above_ceilings, agreement  # noqa: E402

# theoretical peak columns of a table, by ceiling name
THEORETICAL = {"dram": "peak_dram_bytes_per_s", "l2": "peak_l2_bytes_per_s",
               "l1": "peak_l1_bytes_per_s", "shared": "peak_shared_bytes_per_s"}  # fmt: skip


def ceilings_table(ceilings: dict, tables: list[pd.DataFrame]) -> str:
    """Markdown: each ceiling, the pattern that set it, measured and theoretical."""
    rows = pd.concat(tables, ignore_index=True)
    lines = ["| ceiling | pattern | measured | theoretical | measured / theoretical |",
             "|---|---|---:|---:|---:|"]  # fmt: skip
    for name, entry in ceilings.items():
        column = THEORETICAL.get(name, f"peak_{name}_flops_per_s")
        theory = rows[column].median() if column in rows else float("nan")
        scale, unit = 1e12, "TB/s" if entry["unit"] == "byte/s" else "TFLOP/s"
        pattern = entry.get("pattern") or entry["method"].split(",")[0].split(":")[0]
        share = 100 * entry["value"] / theory
        lines.append(f"| {name} | {pattern} | {entry['value'] / scale:.3f} {unit} | "
                     f"{theory / scale:.3f} {unit} | {share:.1f} % |")  # fmt: skip
    return "\n".join(lines)


def report(results: Path) -> None:
    device = json.loads((results / "device.json").read_text())
    ceilings = device.get("ceilings", {})
    print(f"# {results} ({device.get('name')}, {device.get('date')})\n")
    tables = []
    for path in sorted(results.glob("*/table.parquet")):
        table = pd.read_parquet(path)
        tables.append(table)
        share, disagreements = agreement(table)
        judged = int(table["ncu_bottleneck"].notna().sum())
        print(f"## {path.parent.name}: bound agrees with ncu on "
              f"{judged - len(disagreements)} of {judged} ({100 * share:.1f} %)")  # fmt: skip
        for row in disagreements.to_dict("records"):
            print(f"- {row['variant']} {row['config_id']}: {row['bound_reason']}")
        above = above_ceilings(table, ceilings)
        print(f"- rows above a measured ceiling: {len(above)}")
        for row in above.to_dict("records"):
            print(f"  - {row['variant']} {row['config_id']}: {row['level']} "
                  f"{row['rate']:.4g} > {row['ceiling']:.4g}")  # fmt: skip
        flagged = table[table["flops_check"].fillna("") != ""]
        print(f"- FLOP counts flagged: {len(flagged)}")
        for row in flagged.to_dict("records"):
            print(f"  - {row['variant']} {row['config_id']}: {row['flops_check']}")
        print()
    print(ceilings_table(ceilings, tables))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="*", type=Path, default=[Path("results")])
    for results in parser.parse_args().results:
        report(results)


if __name__ == "__main__":
    main()
