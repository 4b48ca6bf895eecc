"""Figures of an experiment, as PNG and SVG: the DRAM roofline and GFLOP/s against size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from .device import footer
from .harness import OK

plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "legend.fontsize": 9})
plt.rcParams["svg.fonttype"] = "none"  # text stays editable text in the SVG
# Plain numbers with thousands separators, not powers of ten, on every axis.
PLAIN = FuncFormatter(lambda value, _: f"{value:,.0f}" if value >= 1 else f"{value:g}")


def _colors(variants: list[str]) -> dict[str, Any]:
    cmap = plt.get_cmap("tab10" if len(variants) <= 10 else "tab20")
    return {v: cmap(i % cmap.N) for i, v in enumerate(variants)}


# Library baselines: shades of grey, dashed, each with its own marker.
BASELINE_STYLES = [("black", "s"), ("0.45", "D"), ("0.65", "^"), ("0.25", "v"), ("0.8", "P")]


def _finish(fig: Any, device: dict[str, Any], out: Path) -> list[Path]:
    fig.text(0.01, 0.01, footer(device), fontsize=8, color="0.35", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    paths = [out.with_suffix(".png"), out.with_suffix(".svg")]
    for path in paths:
        fig.savefig(path, dpi=150)
    plt.close(fig)
    return paths


def roofline(table: pd.DataFrame, device: dict[str, Any], out: Path) -> list[Path]:
    """Counted FLOP/s against DRAM intensity for every profiled configuration, under the
    FP32 and DRAM ceilings that ncu read on that device."""
    ok = table[(table["status"] == OK) & np.isfinite(table["ai_dram"].astype(float))].copy()
    fig, ax = plt.subplots(figsize=(7.5, 5))
    experiment = table["experiment"].iloc[0]
    ax.set_title(f"{experiment}: DRAM roofline, {device.get('name', '')}")
    if ok.empty:
        ax.text(0.5, 0.5, "no profiled configuration", ha="center", transform=ax.transAxes)
        return _finish(fig, device, out)
    ok["gflops_counted"] = ok["flops_counted"] / ok["ncu_time_ms"] / 1e6
    peak_gflops = float(ok["peak_fp32_flops_per_s"].median()) / 1e9
    bandwidth = float(ok["peak_dram_bytes_per_s"].median()) / 1e9  # GB/s
    ridge = peak_gflops / bandwidth
    lo = min(float(ok["ai_dram"].min()), ridge) / 4
    hi = max(float(ok["ai_dram"].max()), ridge) * 4
    x = np.geomspace(lo, hi, 256)
    ax.plot(x, np.minimum(peak_gflops, x * bandwidth), color="black", lw=1.5)
    ax.annotate(
        f"FP32 peak {peak_gflops / 1e3:.1f} TFLOP/s",
        (hi, peak_gflops),
        ha="right",
        va="bottom",
        fontsize=9,
    )
    ax.annotate(
        f"DRAM {bandwidth / 1e3:.2f} TB/s",
        (lo * 1.3, lo * 1.3 * bandwidth),
        rotation=0,
        va="bottom",
        fontsize=9,
    )
    tensor = ok["flops_tensor"].astype(float).fillna(0) > 0
    if "peak_tensor_fp16_flops_per_s" in ok and tensor.any():
        # tensor-core kernels have their own, higher compute roof
        peak_tensor = float(ok.loc[tensor, "peak_tensor_fp16_flops_per_s"].median()) / 1e9
        if np.isfinite(peak_tensor):
            ax.plot(x, np.minimum(peak_tensor, x * bandwidth), color="black", lw=1, ls="--")
            label = f"FP16 tensor peak {peak_tensor / 1e3:.0f} TFLOP/s"
            ax.annotate(label, (hi, peak_tensor), ha="right", va="bottom", fontsize=9)
    ax.axvline(ridge, color="0.6", ls=":", lw=1)
    ax.annotate(
        f"ridge {ridge:.1f} FLOP/B", (ridge * 1.05, peak_gflops / 30), fontsize=8, color="0.4"
    )
    variants = list(dict.fromkeys(ok["variant"]))
    colors = _colors(variants)
    for variant in variants:
        rows = ok[ok["variant"] == variant]
        ax.scatter(
            rows["ai_dram"],
            rows["gflops_counted"],
            s=28,
            color=colors[variant],
            marker="s" if rows["baseline"].any() else "o",
            label=variant,
            edgecolor="black",
            linewidth=0.4,
            zorder=3,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(PLAIN)
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("DRAM arithmetic intensity (counted FLOP / DRAM byte)")
    ax.set_ylabel("achieved GFLOP/s (counted FLOPs / ncu duration)")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(loc="lower right")
    return _finish(fig, device, out)


def gflops_vs_size(
    table: pd.DataFrame, size_axis: str, device: dict[str, Any], out: Path
) -> list[Path]:
    """Best configuration of each variant at each size; library baselines dashed.

    Sizes sit at evenly spaced positions, so that 2048 and 2049 stay apart and the dips
    at sizes no tile divides are easy to see."""
    ok = table[table["status"] == OK]
    fig, ax = plt.subplots(figsize=(7.5, 5))
    experiment = table["experiment"].iloc[0]
    ax.set_title(f"{experiment}: GFLOP/s against {size_axis}, {device.get('name', '')}")
    baselines = list(dict.fromkeys(ok.loc[ok["baseline"].astype(bool), "variant"]))
    variants = [v for v in dict.fromkeys(ok["variant"]) if v not in baselines]
    colors = _colors(variants)
    sizes = sorted(ok[size_axis].unique())
    position = {size: i for i, size in enumerate(sizes)}
    for variant in variants + baselines:
        best = ok[ok["variant"] == variant].groupby(size_axis)["gflops"].max().sort_index()
        if variant in baselines:
            color, marker = BASELINE_STYLES[baselines.index(variant) % len(BASELINE_STYLES)]
            style = {"ls": "--", "color": color, "marker": marker, "label": f"{variant} (library)"}
        else:
            style = {"ls": "-", "color": colors[variant], "marker": "o", "label": variant}
        ax.plot([position[s] for s in best.index], best.values, **style)
    ax.set_xticks(range(len(sizes)), [str(s) for s in sizes], rotation=45 if len(sizes) > 8 else 0)
    gflops = ok["gflops"].astype(float)
    if not gflops.empty and gflops.max() > 30 * gflops.min():
        # a ladder spans orders of magnitude: a log axis keeps the low rungs readable
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:
        ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(PLAIN)
    ax.set_xlabel(f"{size_axis} (elements)")
    ax.set_ylabel("GFLOP/s (analytic FLOPs / median time)")
    ax.grid(True, alpha=0.3, which="both")
    if len(variants) + len(baselines) > 6:
        fig.set_size_inches(10, 5.5)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    else:
        ax.legend()
    return _finish(fig, device, out)
