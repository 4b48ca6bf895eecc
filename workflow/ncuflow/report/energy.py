"""The energy tier's figure (rule energy_figure): energy per launch against time per launch,
on lines of equal power; the energy roofline, GFLOP per joule against arithmetic intensity
under the device's measured energy ceilings (GB per joule against problem size for a family
that only moves bytes). Its table and summary section: report.energy_tables."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..spec import Family
from .energy_tables import counts_flops, energy_rows, most_efficient
from .style import (
    CEILING_LABEL,
    FreeLabel,
    NoFigure,
    Styles,
    legend,
    log_axis,
    log_places,
    marker_areas,
    marks,
    measured_ceiling,
    note,
    save,
    size_handle,
    size_label,
    size_ticks,
    suptitle,
)

ENERGY_FIGSIZE = (10.0, 4.6)
# Lines of equal power drawn on the energy-against-time panel (W), with the power limit,
# and how near the limit one may be (a ratio) before it is left out
POWERS = (10, 25, 50, 100, 200, 400, 1000)
NEAR_LIMIT = 1.5
FADED = 0.25  # the opacity of configurations that are not their variant's most efficient
# the energy ceilings drawn (device/ceilings.py's ENERGY_CEILINGS): compute, then memory
COMPUTE_CEILINGS = {"energy_fp32": "FP32", "energy_tensor_fp16": "FP16 tensor"}
MEMORY_CEILING = "energy_dram"


def _power_lines(ax: Any, rows: pd.DataFrame) -> None:
    """Lines of equal power (energy = power x time) across the energy-against-time panel,
    the device's power limit among them, each labelled where it covers no point."""
    t_lo, t_hi = ax.get_xlim()
    e_lo, e_hi = ax.get_ylim()
    limit = rows["power_limit_w"].dropna().max() if "power_limit_w" in rows else math.nan
    powers = [p for p in POWERS if e_lo / t_hi <= p <= e_hi / t_lo
              and not (limit == limit and 1 / NEAR_LIMIT < p / limit < NEAR_LIMIT)]  # fmt: skip
    powers = sorted([*powers, *([float(limit)] if limit == limit else [])])
    t = np.geomspace(t_lo, t_hi, 50)
    for power in powers:
        is_limit = power == limit
        ax.plot(t, power * t, color="0.35" if is_limit else "0.75", lw=0.8,
                ls="--" if is_limit else ":", zorder=1)  # fmt: skip
        inside = [(x, power * x) for x in log_places(t_lo, t_hi, 1.2, 1.3)
                  if e_lo < power * x < e_hi]  # fmt: skip
        if inside:
            text = f"{power:.0f} W" + (" (limit)" if is_limit else "")
            FreeLabel(ax, inside, text, rotation=0, ha="right", va="bottom", **CEILING_LABEL)
    ax.set_xlim(t_lo, t_hi)
    ax.set_ylim(e_lo, e_hi)


def _versus_time(ax: Any, rows: pd.DataFrame, styles: Styles, family: Family) -> None:
    best = set(most_efficient(rows, ["variant", *family.problem_columns]).index)
    areas = pd.Series(marker_areas(rows[family.size_axis]), index=rows.index)
    for variant in styles.present(rows):
        mine = rows[rows["variant"] == variant]
        style = styles.style[variant]
        for chosen, alpha in ((False, FADED), (True, 1.0)):
            part = mine[mine.index.isin(best) == chosen]
            if not part.empty:
                marks(ax, part["energy_launch_ms"], 1e3 * part["energy_j"],
                      areas[part.index], style["color"], style["marker"], f"{variant}:energy",
                      alpha=alpha)  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.margins(0.15)
    ax.autoscale_view()
    _power_lines(ax, rows)
    _log_panel(ax, "time per launch, back to back (ms)", "energy per launch (mJ)",
               "energy against time (faint: not the variant's most efficient)")  # fmt: skip


def _log_panel(ax: Any, xlabel: str, ylabel: str, text: str) -> None:
    """A log-log panel's ticks, labels, title and grid."""
    log_axis(ax.xaxis)
    log_axis(ax.yaxis)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(text, fontsize=9)
    ax.grid(True, which="major", alpha=0.2)


def _roofline(ax: Any, rows: pd.DataFrame, styles: Styles, family: Family,
              device: dict[str, Any]) -> None:  # fmt: skip
    """GFLOP/J against FLOP per DRAM byte (measured by ncu where profiled, else the
    variant's model) under each measured energy ceiling: min(compute, intensity x memory)."""
    measured = rows["ai_dram"].astype(float) if "ai_dram" in rows else pd.Series(np.nan, rows.index)
    intensity = measured.where(measured > 0, rows["ai_model"].astype(float))
    shown = rows[intensity > 0]
    if shown.empty:
        raise NoFigure("no configuration has an arithmetic intensity (ncu's or its model's)")
    areas = marker_areas(shown[family.size_axis])
    for variant in styles.present(shown):
        pick = (shown["variant"] == variant).to_numpy()
        part = shown[pick]
        marks(ax, intensity[part.index], part["gflops_per_w"], areas[pick],
              styles.style[variant]["color"], styles.style[variant]["marker"],
              f"{variant}:roofline")  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    per_byte = measured_ceiling(device, MEMORY_CEILING) / 1e9  # GB/J
    flats = {
        label: measured_ceiling(device, name) / 1e9 for name, label in COMPUTE_CEILINGS.items()
    }
    flats = {label: flat for label, flat in flats.items() if flat > 0}
    # every ridge point in view, however narrow the data's range of intensities
    ridges = [flat / per_byte for flat in flats.values()] if per_byte > 0 else []
    x_lo = min(intensity[shown.index].min(), *ridges) / 3
    x_hi = max(intensity[shown.index].max(), *ridges) * 3
    x = np.geomspace(x_lo, x_hi, 100)
    tops = [shown["gflops_per_w"].max()]
    for label, flat in flats.items():
        roof = np.minimum(flat, x * per_byte) if per_byte > 0 else np.full_like(x, flat)
        ax.plot(x, roof, color="0.3", lw=0.9, ls="--")
        tops.append(flat)
        ridge = flat / per_byte if per_byte > 0 else x_lo
        places = [(px, flat) for px in log_places(ridge * 2, x_hi, 1.2, 1.5)]
        FreeLabel(ax, places or [(x_hi / 1.2, flat)], f"{label}: {flat:.3g} GFLOP/J",
                  ha="right", va="bottom", **CEILING_LABEL)  # fmt: skip
    if per_byte > 0:
        FreeLabel(
            ax,
            [(px, px * per_byte) for px in log_places(x_lo, x_hi, 30, 1.6)],
            f"DRAM: {per_byte:.3g} GB/J",
            ha="left",
            va="top",
            **CEILING_LABEL,
        )
    bottom = shown["gflops_per_w"].min() / 3
    ax.set_ylim(bottom, 2.0 * max(tops))
    ax.set_xlim(x_lo, x_hi)
    _log_panel(ax, "arithmetic intensity (FLOP per DRAM byte)",
               "GFLOP per joule (GFLOP/s per W)",
               "energy roofline: measured energy ceilings dashed")  # fmt: skip


def _bytes_per_joule(ax: Any, rows: pd.DataFrame, styles: Styles, family: Family,
                     device: dict[str, Any]) -> None:  # fmt: skip
    """GB per joule of each variant's most efficient configuration against problem size,
    under the device's measured DRAM energy ceiling."""
    axis = family.size_axis
    best = most_efficient(rows, ["variant", *family.problem_columns])
    for variant in styles.present(best):
        mine = best[best["variant"] == variant].sort_values(axis)
        style = styles.line(variant)
        ax.plot(mine[axis].astype(float), mine["gb_per_j"], color=style["color"],
                marker=style["marker"], ls=style["ls"])  # fmt: skip
    ax.set_xscale("log", base=2)
    size_ticks(ax, best[axis])
    ceiling = measured_ceiling(device, MEMORY_CEILING) / 1e9
    if ceiling > 0:
        ax.axhline(ceiling, color="0.3", lw=0.9, ls="--")
        ax.annotate(f"DRAM: {ceiling:.3g} GB/J (measured)", (0.01, ceiling),
                    xycoords=("axes fraction", "data"), va="bottom", **CEILING_LABEL)  # fmt: skip
    ax.set_ylim(0, 1.15 * max(ceiling if ceiling > 0 else 0, best["gb_per_j"].max()))
    ax.set_xlabel(size_label(axis, best[axis]))
    ax.set_ylabel("GB per joule (least bytes moved)")
    ax.set_title("bytes per joule, each variant's most efficient", fontsize=9)
    ax.grid(True, alpha=0.2)


def energy_plot(table: pd.DataFrame, family: Family, device: dict[str, Any]) -> Any:
    """The energy figure, not yet finished nor saved (NoFigure where no row has energy)."""
    rows = energy_rows(table)
    if rows.empty:
        raise NoFigure("no configuration has an energy (the config's energy tier was off, or "
                       "NVML gave none: the energy_note column)")  # fmt: skip
    styles = Styles(table, family)
    fig, (left, right) = plt.subplots(1, 2, figsize=ENERGY_FIGSIZE)
    _versus_time(left, rows, styles, family)
    try:
        if counts_flops(rows):
            _roofline(right, rows, styles, family, device)
        else:
            _bytes_per_joule(right, rows, styles, family, device)
    except NoFigure as why:
        right.axis("off")
        right.text(0.5, 0.5, f"not drawn: {why}", ha="center", va="center", wrap=True)
    legend(right, [*styles.handles(styles.present(rows)), size_handle(family)])
    suptitle(fig, f"{table['experiment'].iloc[0]}: energy per launch "
                  f"({device.get('name', 'unknown GPU')})")  # fmt: skip
    return fig


def energy_figure(table: pd.DataFrame, family: Family, device: dict[str, Any],
                  out: Path) -> list[Path]:  # fmt: skip
    """The energy figure (PNG and SVG at ``out``), or the note that stands in for it."""
    try:
        return save(energy_plot(table, family, device), device, out)
    except NoFigure as why:
        return note(table, "energy", str(why), device, out)
