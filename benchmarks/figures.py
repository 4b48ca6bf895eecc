"""How long the report's figures and tables take: the replayed default study, and a table
of 100 against one of 10,000 configurations (the issue's target: no more than a few times
longer; figures draw each variant's points in one call, never one artist per row).

    python benchmarks/figures.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))
sys.path.insert(0, str(ROOT / "tests"))

from conftest import replayed  # noqa: E402
from ncuflow.report.figures import FIGURES, draw  # noqa: E402
from ncuflow.report.summary import markdown, summarize  # noqa: E402
from ncuflow.spec import load_family  # noqa: E402

DEVICE = {"name": "NVIDIA H100 80GB HBM3", "date": "2026-11-23", "replayed_from": "h100-sxm"}


def grown(table: pd.DataFrame, rows: int) -> pd.DataFrame:
    """``rows`` configurations resampled from ``table``, each a distinct configuration with
    its values jittered by a few per cent."""
    rng = np.random.default_rng(0)
    picked = table.sample(rows, replace=True, random_state=0).reset_index(drop=True)
    jittered = ("time_ms", "gflops", "gbps", "achieved_flops_per_s", "dram_bytes",
                "sm_throughput_pct", "memory_throughput_pct")  # fmt: skip
    numeric = [c for c in jittered if c in picked]
    picked[numeric] = picked[numeric].astype(float) * rng.uniform(0.95, 1.05, (rows, len(numeric)))
    picked["config_id"] = picked["config_id"] + "_" + picked.index.astype(str)
    return picked


def timed(table: pd.DataFrame, family, out: Path) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    draw(table, family, DEVICE, out, list(FIGURES))
    markdown(summarize(table, family), family, "bench")
    return time.perf_counter() - started


def main() -> int:
    table = replayed("h100-sxm")["matmul_ladder"]
    family = load_family(ROOT / "kernels", "matmul")
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        print(f"default study ({len(table)} configurations): {timed(table, family, out):.1f} s "
              f"for {len(FIGURES)} figures (PNG and SVG) and the summary")  # fmt: skip
        small, large = (timed(grown(table, n), family, out) for n in (100, 10_000))
    print(f"100 configurations: {small:.1f} s; 10,000: {large:.1f} s ({large / small:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
