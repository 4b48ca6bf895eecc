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
from .metrics import LEVELS, PRECISIONS
from .spec import Family
from .vocab import OK

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


def _log_axes(ax: Any) -> None:
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(PLAIN)
        axis.set_minor_formatter(NullFormatter())


def _scatter(ax: Any, ok: pd.DataFrame, x: str, y: pd.Series) -> None:
    variants = list(dict.fromkeys(ok["variant"]))
    colors = _colors(variants)
    for variant in variants:
        rows = ok["variant"] == variant
        ax.scatter(
            ok.loc[rows, x],
            y[rows],
            s=28,
            color=colors[variant],
            marker="s" if ok.loc[rows, "baseline"].any() else "o",
            label=variant,
            edgecolor="black",
            linewidth=0.4,
            zorder=3,
        )


def _bandwidth_view(ok: pd.DataFrame, device: dict[str, Any], out: Path) -> list[Path]:
    """Kernels that only move bytes: achieved DRAM GB/s per configuration under each
    level's bandwidth ceiling (measured where the device has one, else theoretical)."""
    fig, ax = plt.subplots(figsize=(7.5, 5))
    ax.set_title(f"{ok['experiment'].iloc[0]}: DRAM bandwidth, {device.get('name', '')}")
    measured = device.get("ceilings", {})
    for level in ("dram", "l2"):
        theory = float(ok[f"peak_{level}_bytes_per_s"].median()) / 1e9
        value = (measured.get(level) or {}).get("value")
        for gbps, style, kind in (
            (theory, "-", "theoretical"),
            ((value or np.nan) / 1e9, "--", "measured"),
        ):
            if np.isfinite(gbps):
                ax.axhline(gbps, color="black", ls=style, lw=1)
                ax.annotate(
                    f"{LEVELS[level].label} {kind} {gbps:,.0f} GB/s",
                    (0.01, gbps),
                    xycoords=("axes fraction", "data"),
                    va="bottom",
                    fontsize=8,
                )
    size = "M" if "M" in ok else ok.columns[5]
    _scatter(ax, ok, size, ok["dram_gbps"])
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(PLAIN)
    ax.set_xlabel(f"{size} (elements)")
    ax.set_ylabel("DRAM GB/s (DRAM bytes / ncu duration)")
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(PLAIN)
    ax.grid(True, alpha=0.25)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    return _finish(fig, device, out)


def roofline(table: pd.DataFrame, device: dict[str, Any], out: Path) -> list[Path]:
    """Counted FLOP/s against DRAM intensity for every profiled configuration, under the
    DRAM ceiling and the dense compute roof of every precision present (each row is
    placed against its own roof, ``roof``)."""
    profiled = table[(table["status"] == OK) & table["ncu_time_ms"].notna()].copy()
    ok = profiled[profiled["flops_counted"].astype(float) > 0]
    if ok.empty and not profiled.empty:
        return _bandwidth_view(profiled, device, out)
    fig, ax = plt.subplots(figsize=(7.5, 5))
    experiment = table["experiment"].iloc[0]
    ax.set_title(f"{experiment}: DRAM roofline, {device.get('name', '')}")
    if ok.empty:
        unprofiled = table[(table["status"] == OK) & ~table["profiled"].astype(bool)]
        text = "no profiled configuration"
        if not unprofiled.empty:
            reasons = "\n".join(dict.fromkeys(unprofiled["bound_reason"].dropna()))
            text += f"\n{len(unprofiled)} measured without ncu:\n{reasons}"
        ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, wrap=True)
        return _finish(fig, device, out)
    gflops = ok["achieved_flops_per_s"].astype(float) / 1e9
    bandwidth = float(ok["peak_dram_bytes_per_s"].median()) / 1e9  # GB/s
    roofs = {
        r: float(ok.loc[ok["roof"] == r, "roof_flops_per_s"].median()) / 1e9
        for r in dict.fromkeys(ok["roof"])
    }
    ridges = [g / bandwidth for g in roofs.values()]
    lo = min(float(ok["ai_dram"].min()), *ridges) / 4
    hi = max(float(ok["ai_dram"].max()), *ridges) * 4
    x = np.geomspace(lo, hi, 256)
    for i, (roof, peak) in enumerate(sorted(roofs.items(), key=lambda kv: kv[1])):
        ax.plot(
            x,
            np.minimum(peak, x * bandwidth),
            color="black",
            lw=1.5 if i == 0 else 1,
            ls="-" if i == 0 else "--",
        )
        label = f"{PRECISIONS[roof].label} dense peak {peak / 1e3:,.1f} TFLOP/s"
        ax.annotate(label, (hi, peak), ha="right", va="bottom", fontsize=9)
    ax.annotate(
        f"DRAM {bandwidth / 1e3:.2f} TB/s",
        (lo * 1.3, lo * 1.3 * bandwidth),
        va="bottom",
        fontsize=9,
    )
    _scatter(ax, ok, "ai_dram", gflops)
    _log_axes(ax)
    ax.set_xlabel("DRAM arithmetic intensity (counted FLOP / DRAM byte)")
    ax.set_ylabel("achieved GFLOP/s (counted FLOPs / ncu duration)")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    fig.set_size_inches(10, 5.5)
    return _finish(fig, device, out)


def _best_lines(
    ax: Any,
    ok: pd.DataFrame,
    size_axis: str,
    y: str,
    order: list[str],
    best_by: str,
    position: dict[int, int] | None = None,
) -> list[str]:
    """Each variant's best configuration per size (highest ``best_by``: the figure of
    merit), ``y`` of it against the size (or against ``position[size]``), in ``order``;
    library baselines grey and dashed. Returns the variants drawn."""
    baselines = [v for v in order if ok.loc[ok["variant"] == v, "baseline"].astype(bool).any()]
    variants = [v for v in order if v not in baselines]
    colors = _colors(variants)
    for variant in variants + baselines:
        rows = ok[ok["variant"] == variant].astype({best_by: float})
        fastest = rows.loc[rows.groupby(size_axis)[best_by].idxmax()].sort_values(size_axis)
        if variant in baselines:
            color, marker = BASELINE_STYLES[baselines.index(variant) % len(BASELINE_STYLES)]
            style = {"ls": "--", "color": color, "marker": marker, "label": f"{variant} (library)"}
        else:
            style = {"ls": "-", "color": colors[variant], "marker": "o", "label": variant}
        x = fastest[size_axis] if position is None else fastest[size_axis].map(position)
        ax.plot(x, fastest[y].astype(float), **style)
    return variants + baselines


def family_figure(
    table: pd.DataFrame, family: Family, name: str, device: dict[str, Any], out: Path
) -> list[Path]:
    """One of the family's own figures (``figures:`` in family.yaml): a column of the best
    configuration of each variant against the size axis."""
    figure = family.figures[name]
    ok = table[(table["status"] == OK) & table[figure.y].notna()]
    fig, ax = plt.subplots(figsize=(7.5, 5))
    ax.set_title(f"{table['experiment'].iloc[0]}: {figure.label}, {device.get('name', '')}")
    if ok.empty:
        ax.text(0.5, 0.5, f"no configuration has {figure.y}", ha="center", transform=ax.transAxes)
        return _finish(fig, device, out)
    _best_lines(
        ax, ok, family.size_axis, figure.y, family.ordered(list(dict.fromkeys(ok["variant"])))
    )
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(PLAIN)
    ax.set_xlabel(f"{family.size_axis} (elements)")
    ax.set_ylabel(figure.label)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return _finish(fig, device, out)


def gflops_vs_size(
    table: pd.DataFrame, family: Family, device: dict[str, Any], out: Path
) -> list[Path]:
    """Best configuration of each variant at each size, by the family's figure of merit
    (GFLOP/s, or effective GB/s for a family that only moves bytes); baselines dashed.

    Sizes sit at evenly spaced positions, so that 2048 and 2049 stay apart and the dips
    at sizes no tile divides are easy to see."""
    ok = table[table["status"] == OK]
    merit = "gbps" if family.merit == "bytes" else "gflops"
    unit = (
        "GB/s (compulsory bytes / median time)"
        if merit == "gbps"
        else ("GFLOP/s (analytic FLOPs / median time)")
    )
    fig, ax = plt.subplots(figsize=(7.5, 5))
    experiment = table["experiment"].iloc[0]
    ax.set_title(f"{experiment}: best configuration per variant, {device.get('name', '')}")
    size_axis = family.size_axis
    sizes = sorted(ok[size_axis].unique())
    position = {size: i for i, size in enumerate(sizes)}
    order = family.ordered(list(dict.fromkeys(ok["variant"])))
    drawn = _best_lines(ax, ok, size_axis, merit, order, merit, position)
    ax.set_xticks(range(len(sizes)), [str(s) for s in sizes], rotation=45 if len(sizes) > 8 else 0)
    values = ok[merit].astype(float)
    if not values.empty and values.min() > 0 and values.max() > 30 * values.min():
        # a ladder spans orders of magnitude: a log axis keeps the low rungs readable
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:
        ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(PLAIN)
    ax.set_xlabel(f"{size_axis} (elements)")
    ax.set_ylabel(unit)
    ax.grid(True, alpha=0.3, which="both")
    if len(drawn) > 6:
        fig.set_size_inches(10, 5.5)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    else:
        ax.legend()
    return _finish(fig, device, out)
