"""Report 002's layers from collected tables: the layer table and issue 8's targets.

For each layer size (Classifier 1 and 2, Conv 1 and 2, at B = 1 and 16) prints every
variant's fastest configuration (time, TFLOP/s, GB/s of compulsory bytes, bound and level)
as Markdown, then checks, on the same run's tables:

* Classifier 1, B = 1: the best hand-written variant moves W at >= 85 % of the device's
  measured DRAM (device-to-device copy) bandwidth, and is at least as fast as cuBLAS;
  its bound is memory at the DRAM level;
* Classifier 1, B = 16: the best hand-written variant within 1.5x of cuBLAS's time;
* Conv 1, B = 16: the best hand-written variant within 3x of cuDNN's time;
each against hand-written variants of the library's own precision (float32).

    python benchmarks/layers.py [--results results] [--experiments classifier conv]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from ncuflow.report.summary import ladder  # noqa: E402

LAYERS = {
    "Classifier 1": ("classifier", {"Ni": 25088, "Nn": 4096}),
    "Classifier 2": ("classifier", {"Ni": 4096, "Nn": 1024}),
    "Conv 1": ("conv", {"Ni": 64, "Nn": 64, "Nx": 224, "Ny": 224, "Kx": 3, "Ky": 3}),
    "Conv 2": ("conv", {"Ni": 512, "Nn": 512, "Nx": 14, "Ny": 14, "Kx": 3, "Ky": 3}),
}
BATCHES = (1, 16)
W_BANDWIDTH_PCT, CLASSIFIER_RATIO, CONV_RATIO = 85.0, 1.5, 3.0


def layer_rows(tables: dict[str, pd.DataFrame], layer: str, batch: int) -> pd.DataFrame:
    experiment, dims = LAYERS[layer]
    table = tables.get(experiment)
    if table is None:
        return pd.DataFrame()
    return ladder(table, {**dims, "B": batch})


def markdown(rows: pd.DataFrame, layer: str, batch: int) -> str:
    lines = [f"**{layer}, B = {batch}**", "",
             "| variant | time (ms) | TFLOP/s | GB/s | bound (level) |",
             "|---|---:|---:|---:|---|"]  # fmt: skip
    for row in rows.itertuples():
        bound = f"{row.bound} ({row.bound_level})" if isinstance(row.bound, str) else "–"
        cells = [row.variant, f"{row.time_ms:.4f}", f"{row.tflops:.2f}", f"{row.gbps:,.0f}", bound]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _best_own(rows: pd.DataFrame, dtype: str) -> pd.Series | None:
    """The fastest hand-written variant that computes in ``dtype`` (the library's)."""
    own = rows[~rows["baseline"].astype(bool) & (rows["dtype"] == dtype)]
    return None if own.empty else own.loc[own["time_ms"].idxmin()]


def _library(rows: pd.DataFrame, variant: str) -> pd.Series | None:
    found = rows[rows["variant"] == variant]
    return None if found.empty else found.iloc[0]


def targets(tables: dict[str, pd.DataFrame], dram_ceiling: float) -> list[tuple[bool, str]]:
    checks = []
    rows = layer_rows(tables, "Classifier 1", 1)
    cublas = _library(rows, "cublas") if not rows.empty else None
    best = _best_own(rows, "float32") if not rows.empty else None
    if best is None or cublas is None or not dram_ceiling:
        checks.append((False, "Classifier 1, B = 1: needs a hand-written variant, cuBLAS and "
                              "the device's measured DRAM ceiling"))  # fmt: skip
    else:
        w_bytes = 25088 * 4096 * 4
        pct = 100 * w_bytes / (best["time_ms"] / 1e3) / dram_ceiling
        text = (
            f"Classifier 1, B = 1: {best['variant']} moves W at {pct:.1f} % of the measured "
            f"DRAM bandwidth (target {W_BANDWIDTH_PCT:.0f} %), {best['time_ms']:.4f} ms "
            f"against cuBLAS {cublas['time_ms']:.4f} ms"
        )
        checks.append((pct >= W_BANDWIDTH_PCT and best["time_ms"] <= cublas["time_ms"], text))
        text = f"Classifier 1, B = 1: {best['variant']} is {best['bound']} ({best['bound_level']})"
        checks.append((best["bound"] == "memory" and best["bound_level"] == "dram", text))
    for layer, batch, library, ratio in (("Classifier 1", 16, "cublas", CLASSIFIER_RATIO),
                                         ("Conv 1", 16, "cudnn", CONV_RATIO)):  # fmt: skip
        rows = layer_rows(tables, layer, batch)
        reference = _library(rows, library) if not rows.empty else None
        best = _best_own(rows, reference["dtype"]) if reference is not None else None
        if best is None or reference is None:
            checks.append((False, f"{layer}, B = {batch}: needs a hand-written variant and "
                                  f"{library} measured ok in the same run"))  # fmt: skip
            continue
        times = best["time_ms"] / reference["time_ms"]
        text = (
            f"{layer}, B = {batch}: {best['variant']} {best['time_ms']:.4f} ms is {times:.2f}x "
            f"{library}'s {reference['time_ms']:.4f} ms (target <= {ratio}x)"
        )
        checks.append((times <= ratio, text))
    return checks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=ROOT / "results")
    args = parser.parse_args()
    tables = {}
    for experiment in {e for e, _ in LAYERS.values()}:
        path = args.results / experiment / "table.parquet"
        if path.is_file():
            tables[experiment] = pd.read_parquet(path)
    if not tables:
        print(f"{args.results} holds no classifier or conv table", file=sys.stderr)
        return 1
    device = json.loads((args.results / "device.json").read_text())
    dram = float((device.get("ceilings", {}).get("dram") or {}).get("value") or 0.0)
    for layer in LAYERS:
        for batch in BATCHES:
            rows = layer_rows(tables, layer, batch)
            if not rows.empty:
                print(markdown(rows, layer, batch), end="\n\n")
    checks = targets(tables, dram)
    for passed, text in checks:
        print(f"{'PASS' if passed else 'FAIL'}  {text}")
    return 0 if all(passed for passed, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
