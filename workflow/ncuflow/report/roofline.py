"""The hierarchical roofline: counted FLOP/s against arithmetic intensity, a panel each for
DRAM, L2 and L1, under the level's bandwidth and each precision's dense roof, theoretical
and measured; or, for a family that only moves bytes, each level's bandwidth against
problem size."""

from __future__ import annotations

import math
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from ..metrics import LEVELS, PRECISIONS
from ..spec import Family
from .style import (
    FIGSIZE,
    LEVEL_MARKERS,
    Styles,
    flat_ceiling,
    free_dims,
    legend,
    log_axis,
    log_places,
    marker_areas,
    marks,
    measured_ceiling,
    near_sizes,
    prefixed,
    profiled_rows,
    size_handle,
    size_ticks,
    suptitle,
    title,
)
from .summary import best_configs, merit_of

# Intensities past this many times the largest ridge point are drawn at the axis's edge:
# a tensor-core kernel that bypasses L1 reaches 10^5 FLOP/B there, which would squash the rest.
EDGE_PAST_RIDGE = 30.0
FADED = 0.18  # the opacity of the configurations that are not their variant's best
# inches: two panels a row, the legend in the cell after the last level's (the report
# scales it to its page's width, as FIGSIZE: keep it not much wider)
ROOFLINE_FIGSIZE = (9.0, 7.2)


def device_roof(rows: pd.DataFrame, device: dict[str, Any]) -> float:
    """One precision's theoretical dense peak on the device: its FLOPs per SM cycle (each
    row's roof over the clock its kernel ran at) at the device's maximum SM clock, so that
    every figure of one GPU shows the same value; the rows' median where the device's clock
    is unknown."""
    max_mhz = device.get("sm_clock_max_mhz")
    clock = rows["sm_clock_hz"].astype(float) if "sm_clock_hz" in rows else pd.Series()
    per_cycle = (rows["roof_flops_per_s"].astype(float) / clock).median()
    if not max_mhz or not np.isfinite(per_cycle):
        return float(rows["roof_flops_per_s"].astype(float).median())
    return float(per_cycle * max_mhz * 1e6)


def roofline(table: pd.DataFrame, family: Family, styles: Styles, device: dict[str, Any]) -> Any:
    """Counted FLOP/s against arithmetic intensity, one panel per memory level (DRAM, L2,
    L1) on one scale, under that level's bandwidth and each precision's dense roof,
    theoretical (solid, at the device's maximum SM clock) and measured on this device
    (dashed); the legend, the variants grouped by the roof they run under, in a cell of its
    own. Each variant's best configuration per problem stands in front (joined from size to
    size where the sizes are a trend); the rest of the sweep is faded behind it. Intensities
    far past every ridge are drawn at the right edge."""
    rows = profiled_rows(table)
    rows = rows[rows["flops_counted"].astype(float) > 0]
    if rows.empty:
        return bandwidth_view(table, family, styles, device)
    merit = merit_of(family)[0]
    front = rows.index.isin(best_configs(rows, ["variant", *family.problem_columns], merit).index)
    y = rows["achieved_flops_per_s"].astype(float)
    roofs = {
        r: (device_roof(g, device), float(g["roof_measured_flops_per_s"].median()))
        for r, g in rows.groupby("roof")
    }
    scale, unit = prefixed([*y, *(t for t, _ in roofs.values())], "FLOP/s")
    bandwidths = {
        lvl: (float(rows[f"peak_{lvl}_bytes_per_s"].median()), measured_ceiling(device, lvl))
        for lvl in LEVEL_MARKERS
    }
    top = max(t for t, _ in roofs.values())
    ridge = max(top / b for b, _ in bandwidths.values() if b > 0)
    edge = ridge * EDGE_PAST_RIDGE
    ai = rows[[f"ai_{lvl}" for lvl in LEVEL_MARKERS]].astype(float)
    span = (float(np.nanmin(ai.clip(upper=edge).to_numpy())) / 4,
            max(float(np.nanmax(ai.clip(upper=edge).to_numpy())) * 2, ridge * 1.5))  # fmt: skip
    heights = (float(y.min()) / scale / 3, top / scale * 3)  # room above the top roof's label
    fig, axes = plt.subplots(math.ceil((len(LEVEL_MARKERS) + 1) / 2), 2, squeeze=False,
                             figsize=ROOFLINE_FIGSIZE)  # fmt: skip
    cells = list(axes.flat)
    trend = styles.joined and not free_dims(rows, family)
    for j, lvl in enumerate(LEVEL_MARKERS):
        ax, x = cells[j], ai[f"ai_{lvl}"]
        _ceilings(ax, bandwidths[lvl], roofs, span, (scale, unit))
        _level_points(ax, rows, family, styles, (x.clip(upper=edge), y / scale), front, lvl)
        if trend:
            _trends(ax, rows[front], family, styles, (x.clip(upper=edge)[front], y[front] / scale))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(*span)
        ax.set_ylim(*heights)
        log_axis(ax.xaxis)
        log_axis(ax.yaxis)
        theory, measured = bandwidths[lvl]
        name = LEVELS[lvl].label
        ax.set_title(f"{name} {theory / 1e12:.3g} TB/s" + (
            f" (measured {measured / 1e12:.3g})" if measured > 0 else ""), fontsize=9)  # fmt: skip
        ax.set_xlabel(f"{name} intensity (counted FLOP per byte)" + (
            f"; past {edge:,.0f} at the edge" if (x > edge).any() else ""))  # fmt: skip
        if j % 2 == 0:
            ax.set_ylabel(f"achieved {unit} (counted FLOPs / ncu duration)")
        ax.grid(True, which="major", alpha=0.2)
    for ax in cells[len(LEVEL_MARKERS) :]:
        ax.axis("off")
    _key(cells[len(LEVEL_MARKERS)], rows, family, styles, (trend, bool((~front).any())))
    suptitle(fig, f"{table['experiment'].iloc[0]}: hierarchical roofline, one panel per memory "
                  f"level ({device.get('name', 'unknown GPU')})")  # fmt: skip
    return fig


def _level_points(
    ax: Any, rows: pd.DataFrame, family: Family, styles: Styles, xy: tuple[pd.Series, pd.Series],
    front: np.ndarray, lvl: str,
) -> None:  # fmt: skip
    """Each configuration at one level, in its variant's colour and marker: the sweep faded
    behind, each variant's best per problem in front (groups ``<variant>:<level>[:faded]``)."""
    areas = marker_areas(rows[family.size_axis])
    for variant in styles.present(rows):
        style, mine = styles.style[variant], (rows["variant"] == variant).to_numpy()
        for best in (False, True):
            pick = mine & (front == best)
            if pick.any():
                marks(ax, xy[0][pick], xy[1][pick], areas[pick], style["color"], style["marker"],
                      f"{variant}:{lvl}" + ("" if best else ":faded"),
                      alpha=1.0 if best else FADED)  # fmt: skip


def _trends(
    ax: Any, best: pd.DataFrame, family: Family, styles: Styles, xy: tuple[pd.Series, pd.Series]
) -> None:
    """Each variant's best configurations joined from size to size (near sizes apart)."""
    near = near_sizes(best[family.size_axis])
    for variant in styles.present(best):
        pick = (best["variant"] == variant) & ~best[family.size_axis].astype(float).isin(near)
        order = best.loc[pick, family.size_axis].astype(float).argsort().to_numpy()
        ax.plot(xy[0][pick].to_numpy()[order], xy[1][pick].to_numpy()[order], lw=0.9,
                color=styles.style[variant]["color"], alpha=0.6, zorder=2.5)  # fmt: skip


def _key(
    ax: Any, rows: pd.DataFrame, family: Family, styles: Styles, drawn: tuple[bool, bool]
) -> None:
    """The roofline's legend, in a cell of its own, two columns: the variants under the
    roof each runs under (a header per precision where there are several, never last in a
    column), then what the marks mean (``drawn``: whether trends and faded points are)."""
    variants = styles.present(rows)
    roof_of = rows.groupby("variant")["roof"].first()
    groups = list(dict.fromkeys(roof_of[v] for v in variants))
    handles, headers = [], []
    for roof in groups:
        if len(groups) > 1:
            name = PRECISIONS[roof].label if roof in PRECISIONS else "no roof"
            headers.append(Line2D([], [], ls="none", label=name))
            handles.append(headers[-1])
        handles += styles.handles([v for v in variants if roof_of[v] == roof])
    trend, faded = drawn
    handles += [
        *([Line2D([], [], color="0.3", marker="o", ls="", alpha=FADED,
                  label="faded: not the variant's best")] if faded else []),
        *([Line2D([], [], color="0.3", lw=0.9, alpha=0.6,
                  label=f"its best at each {family.size_axis}")] if trend else []),
        Line2D([], [], color="0.3", ls="-", label="theoretical ceiling"),
        Line2D([], [], color="0.3", ls="--", label="measured ceiling"),
        size_handle(family),
    ]  # fmt: skip
    while handles[math.ceil(len(handles) / 2) - 1] in headers:  # a header ends column one
        handles.insert(math.ceil(len(handles) / 2) - 1, Line2D([], [], ls="none", label=" "))
    made = ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.0, 1.0), ncols=2,
                     borderaxespad=0, frameon=False)  # fmt: skip
    for handle, text in zip(handles, made.get_texts(), strict=True):
        if handle in headers:
            text.set_fontweight("bold")


def _ceilings(
    ax: Any,
    bandwidth: tuple[float, float],
    roofs: dict[str, tuple[float, float]],
    span: tuple[float, float],
    scale_unit: tuple[float, str],
) -> None:
    """One level's bandwidth slope (its values are the panel's title) and each precision's
    flat roof over ``span`` of intensities, theoretical (solid) and measured (dashed, where
    measured), each roof labelled above its line where no point lies."""
    (lo, hi), (scale, unit) = span, scale_unit
    top = max(t for t, _ in roofs.values())
    x = np.geomspace(lo, hi, 128)
    for value, style in zip(bandwidth, ("-", "--"), strict=True):
        if value > 0:
            ax.plot(x, np.minimum(x * value, top) / scale, color="0.3", lw=0.9, ls=style)
    along = log_places(lo, hi, 1.05, 1.6)
    for roof, (theory, measured) in roofs.items():
        text = (f"{PRECISIONS[roof].label} {theory / scale:,.3g}", f" {unit}")
        flat_ceiling(ax, (theory, measured), scale, text, [(a, theory / scale) for a in along],
                     ha="right", va="bottom")  # fmt: skip


def bandwidth_view(
    table: pd.DataFrame, family: Family, styles: Styles, device: dict[str, Any]
) -> Any:
    """A family that only moves bytes: each level's achieved bandwidth per configuration
    against problem size, under that level's ceilings."""
    rows = profiled_rows(table)
    seconds = rows["ncu_time_ms"].astype(float) / 1e3
    rates = {lvl: rows[f"{lvl}_bytes"].astype(float) / seconds for lvl in LEVEL_MARKERS}
    rates["dram"] = rows["dram_bytes_counted"].astype(float) / seconds
    ceilings = {
        lvl: (float(rows[f"peak_{lvl}_bytes_per_s"].median()), measured_ceiling(device, lvl))
        for lvl in LEVEL_MARKERS
    }
    scale, unit = prefixed(
        [v for r in rates.values() for v in r] + [c for c, _ in ceilings.values()], "B/s"
    )
    fig, ax = plt.subplots(figsize=FIGSIZE)
    for lvl, (theory, measured) in ceilings.items():
        text = (f"{LEVELS[lvl].label} {theory / scale:,.3g} {unit}", "")
        flat_ceiling(ax, (theory, measured), scale, text, xy=(0.01, theory / scale),
                     xycoords=("axes fraction", "data"), va="bottom")  # fmt: skip
    size = rows[family.size_axis].astype(float)
    for variant in styles.present(rows):
        pick = rows["variant"] == variant
        for lvl, marker in LEVEL_MARKERS.items():
            marks(ax, size[pick], rates[lvl][pick] / scale, 30, styles.style[variant]["color"],
                  marker)  # fmt: skip
    ax.set_xscale("log", base=2)
    size_ticks(ax, size)
    ax.set_yscale("log")
    ax.set_xlabel(f"{family.size_axis} (elements, log scale)")
    ax.set_ylabel(f"achieved {unit} at each level (bytes / ncu duration)")
    ax.grid(True, alpha=0.2)
    title(ax, table, "bandwidth at each memory level", device)
    handles = styles.handles(styles.present(rows))
    handles += [
        Line2D([], [], color="0.3", marker=m, ls="", label=LEVELS[lvl].label)
        for lvl, m in LEVEL_MARKERS.items()
    ]
    handles.append(size_handle(family))
    legend(ax, handles)
    return fig
