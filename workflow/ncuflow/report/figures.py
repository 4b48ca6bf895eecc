"""The figures of an experiment, PNG and SVG (``FIGURES``): the hierarchical roofline
(report.roofline), performance against problem size, parameter sweeps, the Speed-of-Light
scatter, occupancy, and modelled against measured DRAM traffic; plus a family's own
(``family_figure``). A figure that cannot be drawn for an experiment (no profiled
configuration, no swept tunable, no modelled traffic) becomes a note saying why, and the
others still build.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ..analyze.bound import BAND_POINTS, LATENCY_PCT, bound_class, occupancy_limiters
from ..spec import Family, load_family
from ..vocab import BORDERLINE, COMPUTE, LATENCY, MEMORY, STANDARD_FIGURES
from .roofline import roofline
from .style import (
    BOUND_MARKERS,
    FIGSIZE,
    LIMIT_MARKERS,
    NO_LIMIT,
    FreeLabel,
    NoFigure,
    Styles,
    free_dims,
    legend,
    log_axis,
    log_places,
    marker_areas,
    marks,
    near_sizes,
    note,
    note_figure,
    plot_by_size,
    prefixed,
    profiled_rows,
    save,
    size_handle,
    size_label,
    size_ticks,
    suptitle,
    title,
)
from .summary import best_configs, merit_of
from .sweep import sweep

# Panels the performance figure draws at most; past that, the best over the free dimensions.
MAX_PERFORMANCE_PANELS = 6


def performance(table: pd.DataFrame, family: Family, styles: Styles, device: dict[str, Any]) -> Any:
    """The best configuration of each variant at each size, its figure of merit with the
    interquartile range of its timing as error bars; one panel per precision (and value of
    each free dimension), all on one y scale, logarithmic where the values span decades."""
    merit, base, what = merit_of(family)
    free = free_dims(table, family)
    best = best_configs(table, ["variant", family.size_axis, *free], merit)
    keys = ["dtype", *free]  # a panel per precision and per value of each free dimension
    if len(best[keys].drop_duplicates()) > MAX_PERFORMANCE_PANELS:
        best, keys = best_configs(table, ["variant", family.size_axis], merit), ["dtype"]
    over = [d for d in free if d not in keys]
    if best.empty:
        raise NoFigure("no configuration measured ok")
    work = best["flops" if merit == "gflops" else "min_bytes"].astype(float)
    time_s = best["time_ms"].astype(float) / 1e3
    half = best["time_ms_iqr"].astype(float).fillna(0.0) / 2e3
    value = work / time_s
    scale, unit = prefixed(value, base)
    lower = (value - work / (time_s + half)) / scale
    upper = (work / (time_s - half).clip(lower=time_s * 1e-3) - value) / scale
    panels = list(dict.fromkeys(best[keys].itertuples(index=False, name=None)))
    fig, axes = plt.subplots(
        1,
        len(panels),
        figsize=(FIGSIZE[0] + 2.5 * (len(panels) - 1), FIGSIZE[1]),
        squeeze=False,
        sharey=True,  # one scale: panels compare at a glance
    )
    logarithmic = bool(value.min() > 0 and value.max() > 30 * value.min())  # a ladder spans decades
    several_dtypes = best["dtype"].nunique() > 1
    for ax, panel in zip(axes[0], panels, strict=True):
        in_panel = (best[keys] == pd.Series(panel, index=keys)).all(axis=1)
        sizes = best.loc[in_panel, family.size_axis]
        for variant in styles.present(best[in_panel]):
            pick = (in_panel & (best["variant"] == variant)).to_numpy()
            order = np.argsort(best.loc[pick, family.size_axis].to_numpy())
            plot_by_size(
                ax,
                best.loc[pick, family.size_axis].to_numpy(dtype=float)[order],
                (value[pick] / scale).to_numpy()[order],
                styles.line(variant),
                near_sizes(sizes),
                yerr=[lower[pick].to_numpy()[order], upper[pick].to_numpy()[order]],
                ms=4,
                capsize=2,
                lw=1.2,
            )
        ax.set_xscale("log", base=2)
        size_ticks(ax, sizes)
        if logarithmic:
            ax.set_yscale("log")
            log_axis(ax.yaxis)
        else:
            ax.set_ylim(bottom=0)
        apart = "" if styles.joined else "; sizes listed apart: not joined"
        ax.set_xlabel(size_label(family.size_axis, sizes) + apart)
        named = [panel[0]] if several_dtypes else []
        named += [f"{d} = {v}" for d, v in zip(keys[1:], panel[1:], strict=True)]
        ax.set_title(", ".join(named))
        ax.grid(True, alpha=0.2)
    axes[0][0].set_ylabel(f"{unit} ({what}); bars: timing IQR")
    suptitle(
        fig,
        f"{table['experiment'].iloc[0]}: best configuration of each variant per "
        f"{family.size_axis}{' (best over ' + ', '.join(over) + ')' if over else ''} "
        f"({device.get('name', 'unknown GPU')})",
    )
    legend(axes[0][-1], styles.handles(styles.present(best)))
    return fig


# ---- Speed of Light, occupancy, traffic


def _classed_scatter(
    ax: Any,
    rows: pd.DataFrame,
    family: Family,
    styles: Styles,
    xy: tuple[str, str],
    classes: pd.Series,
    markers: dict[str, str],
    hollow: pd.Series | None = None,
) -> None:
    """Each configuration at (x, y): its variant's colour, its class's marker, an area
    growing with its problem size; one scatter call per variant and class, and apart (its
    group named ``<variant>:<class>:hollow``) for the rows ``hollow`` marks."""
    areas = marker_areas(rows[family.size_axis])
    apart = np.zeros(len(rows), bool) if hollow is None else hollow.to_numpy(dtype=bool)
    for variant in styles.present(rows):
        pick = (rows["variant"] == variant).to_numpy()
        for name, marker in markers.items():
            for empty in (False, True):
                sel = pick & (classes == name).to_numpy() & (apart == empty)
                if not sel.any():
                    continue
                gid = f"{variant}:{name}" + (":hollow" if empty else "")
                marks(ax, rows.loc[sel, xy[0]], rows.loc[sel, xy[1]], areas[sel],
                      styles.style[variant]["color"], marker, gid, hollow=empty)  # fmt: skip


def _classed_handles(
    rows: pd.DataFrame, family: Family, styles: Styles, markers: dict[str, str], label: str
) -> list[Line2D]:
    handles = styles.handles(styles.present(rows))
    for name, marker in markers.items():
        text = label.format(name.replace("_", " "))
        handles.append(Line2D([], [], color="0.3", marker=marker, ls="", label=text))
    return [*handles, size_handle(family)]


# The regions of the Speed of Light figure, by the bound rule's class.
REGION_COLORS = {LATENCY: "0.85", BORDERLINE: "0.7", MEMORY: "#cfe3f2", COMPUTE: "#f6dcc3"}
SOL_XY = ("bound_memory_pct", "bound_compute_pct")


def rule_regions(limit: float, step: float = 0.25) -> tuple[np.ndarray, list[str]]:
    """The bound rule's class at every point of a [0, limit]² grid (rows: compute %,
    columns: memory %), as indices into the classes it returns: the figure's regions are
    the rule itself, not a drawing of it."""
    axis = np.arange(step / 2, limit, step)
    classes = list(REGION_COLORS)
    grid = np.array([[classes.index(bound_class(m, c)) for m in axis] for c in axis])
    return grid, classes


def region_places(
    region: str, near: tuple[float, float], limit: float
) -> list[tuple[float, float]]:
    """Where a region's label may go, nearest ``near`` first: the points of a grid over
    [0, limit]² that lie, with a label's half width and height around them, in the region."""
    grid = np.arange(limit / 20, limit, limit / 20)
    room = [(dx * limit / 100, dy * limit / 100) for dx in (-6, 6) for dy in (-3, 3)]
    inside = [(float(x), float(y)) for x in grid for y in grid
              if all(bound_class(x + dx, y + dy) == region for dx, dy in room)]  # fmt: skip
    return sorted(inside, key=lambda xy: math.dist(xy, near)) or [near]


def speed_of_light(
    table: pd.DataFrame, family: Family, styles: Styles, device: dict[str, Any]
) -> Any:
    """Per configuration, the two figures the bound rule decides with (the busiest memory
    unit's share of its peak against the SM's or its FLOPs' share), on regions drawn by
    the rule itself (analyze.bound.bound_class): each marker, the table's bound, lies in
    its own region."""
    rows = profiled_rows(table).dropna(subset=list(SOL_XY))
    if rows.empty:
        raise NoFigure("no profiled configuration has the bound rule's figures")
    limit = max(100.0, float(np.ceil(rows[list(SOL_XY)].to_numpy().max() / 5) * 5))
    fig, ax = plt.subplots(figsize=FIGSIZE)
    grid, classes = rule_regions(limit)
    colours = ListedColormap([REGION_COLORS[c] for c in classes])
    ax.imshow(grid, origin="lower", extent=(0, limit, 0, limit), cmap=colours, vmin=-0.5,
              vmax=len(classes) - 0.5, interpolation="nearest", aspect="auto")  # fmt: skip
    ax.plot([LATENCY_PCT, limit], [LATENCY_PCT, limit], color="0.5", lw=0.6)
    labels = ((LATENCY, (LATENCY_PCT / 2, LATENCY_PCT / 2)), (MEMORY, (0.85 * limit, 25)),
              (COMPUTE, (25, 0.85 * limit)))  # fmt: skip
    for text, xy in labels:
        FreeLabel(ax, region_places(text, xy, limit), text, ha="center", va="center",
                  color="0.35", fontsize=9)  # fmt: skip
    _classed_scatter(ax, rows, family, styles, SOL_XY, rows["bound"], BOUND_MARKERS)
    ax.set_xlim(0, limit)
    ax.set_ylim(0, limit)
    ax.set_xlabel("memory: busiest unit, % of its peak (DRAM, L2, L1, shared)")
    ax.set_ylabel("compute: SM or its counted FLOPs, % of peak")
    title(ax, table, "Speed of Light (the bound rule's figures)", device)
    handles = _classed_handles(rows, family, styles, BOUND_MARKERS, "bound: {}")
    band = f"borderline region: within {BAND_POINTS:g} points of {LATENCY_PCT:g} %"
    handles.append(Patch(color=REGION_COLORS[BORDERLINE], label=band))
    legend(ax, handles)
    return fig


def occupancy(table: pd.DataFrame, family: Family, styles: Styles, device: dict[str, Any]) -> Any:
    """Achieved against theoretical occupancy per configuration; the marker names the
    resource that limits the blocks per SM (ncu's launch__occupancy_limit_*), or nothing
    where the launch allows every warp (every limit ties at 100 %). A
    configuration of several kernels is hollow: its achieved occupancy is their average
    weighted by time, its theoretical one (and limiter) the longest kernel's, so it may
    lie above the diagonal where a shorter kernel keeps more warps."""
    rows = profiled_rows(table)
    # the first of the limits that cap it (the bound rule's), "nothing" at 100 %
    limiter = pd.Series([(occupancy_limiters(row) or [NO_LIMIT])[0]
                         for row in rows.to_dict("records")], index=rows.index)  # fmt: skip
    several = rows["ncu_kernels"].astype(float).fillna(1) > 1
    fig, ax = plt.subplots(figsize=FIGSIZE)
    ax.plot([0, 100], [0, 100], color="0.5", lw=0.6, ls="--")
    xy = ("theoretical_occupancy_pct", "achieved_occupancy_pct")
    _classed_scatter(ax, rows, family, styles, xy, limiter, LIMIT_MARKERS, several)
    ax.set_xlim(0, 105)
    ax.set_ylim(0, 105)
    ax.set_xlabel("theoretical occupancy (% of the SM's warps the launch allows)")
    ax.set_ylabel("achieved occupancy (% warps active)")
    title(ax, table, "occupancy and its limiter", device)
    handles = _classed_handles(rows, family, styles, LIMIT_MARKERS, "limited by {}")
    if several.any():
        handles.append(Line2D([], [], color="0.3", marker="o", mfc="none", ls="",
                              label="hollow: several kernels\n(achieved: time-weighted;\n"
                              "theoretical: the longest's)"))  # fmt: skip
    legend(ax, handles)
    return fig


def traffic(table: pd.DataFrame, family: Family, styles: Styles, device: dict[str, Any]) -> Any:
    """The variant's modelled DRAM bytes (its header's analytic traffic, no help from L2)
    against the measured ones; on the diagonal the model is exact, below it L2 saves."""
    rows = profiled_rows(table)
    rows = rows[rows["model_dram_bytes"].notna() & (rows["dram_bytes"].astype(float) > 0)]
    if rows.empty:
        raise NoFigure("no profiled variant declares model_dram_bytes")
    model, measured = rows["model_dram_bytes"].astype(float), rows["dram_bytes"].astype(float)
    scale, unit = prefixed([*model, *measured], "B")
    fig, ax = plt.subplots(figsize=FIGSIZE)
    lo, hi = (
        min(model.min(), measured.min()) / scale / 2,
        max(model.max(), measured.max()) / scale * 2,
    )
    ax.plot([lo, hi], [lo, hi], color="0.4", lw=0.8)
    ax.plot([lo, hi], [lo / 10, hi / 10], color="0.6", lw=0.6, ls=":")
    # each line's label on its side away from the data, where along it no point lies
    along = log_places(lo, hi, 1.2, 1.5)
    FreeLabel(ax, [(x, x) for x in along], "measured = model", ha="right", va="bottom",
              fontsize=7, color="0.4")  # fmt: skip
    FreeLabel(ax, [(x, x / 10) for x in along], "10× below the model", ha="left", va="top",
              fontsize=7, color="0.5")  # fmt: skip
    areas = marker_areas(rows[family.size_axis])
    for variant in styles.present(rows):
        pick = (rows["variant"] == variant).to_numpy()
        style = styles.style[variant]
        marks(ax, model[pick] / scale, measured[pick] / scale, areas[pick], style["color"],
              style["marker"])  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo / 10, hi)
    log_axis(ax.xaxis)
    log_axis(ax.yaxis)
    ax.set_xlabel(f"modelled DRAM traffic ({unit}, no reuse through L2 across blocks)")
    ax.set_ylabel(f"measured DRAM traffic ({unit})")
    title(ax, table, "modelled against measured DRAM traffic", device)
    legend(ax, [*styles.handles(styles.present(rows)), size_handle(family)])
    return fig


FIGURES: dict[str, Callable[..., Any]] = {
    "roofline": roofline,
    "performance": performance,
    "sweep": sweep,
    "speed_of_light": speed_of_light,
    "occupancy": occupancy,
    "traffic": traffic,
}


assert tuple(FIGURES) == STANDARD_FIGURES  # the names the workflow's rules expect


def draw(
    table: pd.DataFrame, family: Family, device: dict[str, Any], out_dir: Path, names: list[str],
    joined: bool = True,
) -> list[Path]:  # fmt: skip
    """The figures ``names`` of one experiment into ``out_dir``; a figure that cannot be
    drawn becomes a note, so that the others still build. ``joined``: whether points at
    successive sizes are a trend, joined by lines (not where the sizes are separate layers)."""
    styles = Styles(table, family, joined)
    paths = []
    for name in names:
        paths += save(figure(table, family, styles, device, name), device, out_dir / name)
    return paths


def figure(
    table: pd.DataFrame, family: Family, styles: Styles, device: dict[str, Any], name: str
) -> Any:
    """The figure ``name`` (FIGURES) of one experiment, or the note that stands in for it
    where it cannot be drawn; not yet finished (style.finish) nor saved."""
    try:
        return FIGURES[name](table, family, styles, device)
    except NoFigure as why:
        return note_figure(table, name, str(why), device)


def draw_one(
    table: pd.DataFrame, kernels_dir: Path, device: dict[str, Any], out_dir: Path, name: str,
    joined: bool = True,
) -> list[Path]:  # fmt: skip
    """draw() of one figure, the family read here: what each worker process of a parallel
    plot stage runs."""
    family = load_family(kernels_dir, str(table["family"].iloc[0]))
    return draw(table, family, device, out_dir, [name], joined)


def family_figure(
    table: pd.DataFrame, family: Family, name: str, device: dict[str, Any], out: Path
) -> list[Path]:
    """One of the family's own figures (``figures:`` in family.yaml): a column of each
    variant's best configuration against the size axis."""
    own = family.figures[name]
    merit = merit_of(family)[0]
    best = best_configs(table[table[own.y].notna()], ["variant", family.size_axis], merit)
    if best.empty:
        return note(table, name, f"no configuration has {own.y}", device, out)
    styles = Styles(table, family)
    fig, ax = plt.subplots(figsize=FIGSIZE)
    near = near_sizes(best[family.size_axis])
    for variant in styles.present(best):
        rows = best[best["variant"] == variant].sort_values(family.size_axis)
        plot_by_size(ax, rows[family.size_axis].to_numpy(dtype=float),
                 rows[own.y].to_numpy(dtype=float), styles.style[variant], near)  # fmt: skip
    ax.set_xscale("log", base=2)
    size_ticks(ax, best[family.size_axis])
    ax.set_xlabel(size_label(family.size_axis, best[family.size_axis]))
    ax.set_ylabel(own.label)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.2)
    title(ax, table, own.label, device)
    legend(ax, styles.handles(styles.present(best)))
    return save(fig, device, out)
