"""The figures of an experiment, PNG and SVG (``FIGURES``): the hierarchical roofline
(report.roofline), performance against problem size, parameter sweeps, the Speed-of-Light
scatter, occupancy, and modelled against measured DRAM traffic; plus a family's own
(``family_figure``). A figure that cannot be drawn for an experiment (no profiled
configuration, no swept tunable, no modelled traffic) becomes a note saying why, and the
others still build.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from ..analyze.bound import LATENCY_PCT
from ..spec import Family, load_family
from ..vocab import OK, STANDARD_FIGURES
from .roofline import roofline
from .style import (
    BOUND_MARKERS,
    FIGSIZE,
    LIMIT_MARKERS,
    NoFigure,
    Styles,
    legend,
    log_axis,
    marker_areas,
    marks,
    near_sizes,
    note,
    plot_by_size,
    prefixed,
    profiled_rows,
    save,
    size_handle,
    size_label,
    size_ticks,
    title,
)
from .summary import best_configs, merit_of

# Panels the performance figure draws at most; past that, the best over the free dimensions.
MAX_PERFORMANCE_PANELS = 6


def free_dims(rows: pd.DataFrame, family: Family) -> list[str]:
    """The dimensions (and swept scalars) besides the size axis that take several values at
    one size (a batch beside a layer's size): a best over them would hide which one each
    point shows."""
    ok = rows[rows["status"] == OK]
    axis = family.size_axis
    return [d for d in family.problem_columns
            if d != axis and (ok.groupby(axis)[d].nunique() > 1).any()]  # fmt: skip


def performance(table: pd.DataFrame, family: Family, styles: Styles, device: dict[str, Any]) -> Any:
    """The best configuration of each variant at each size, its figure of merit with the
    interquartile range of its timing as error bars; one panel per precision."""
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
        sharey=False,
    )
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
                styles.style[variant],
                near_sizes(sizes),
                yerr=[lower[pick].to_numpy()[order], upper[pick].to_numpy()[order]],
                ms=4,
                capsize=2,
                lw=1.2,
            )
        ax.set_xscale("log", base=2)
        size_ticks(ax, sizes)
        spread = value[in_panel]
        if spread.min() > 0 and spread.max() > 30 * spread.min():
            ax.set_yscale("log")  # a ladder spans orders of magnitude
            log_axis(ax.yaxis)
        else:
            ax.set_ylim(bottom=0)
        ax.set_xlabel(size_label(family.size_axis, sizes))
        named = [panel[0]] if several_dtypes else []
        named += [f"{d} = {v}" for d, v in zip(keys[1:], panel[1:], strict=True)]
        ax.set_title(", ".join(named))
        ax.grid(True, alpha=0.2)
    axes[0][0].set_ylabel(f"{unit} ({what}); bars: timing IQR")
    fig.suptitle(
        f"{table['experiment'].iloc[0]}: best configuration of each variant per "
        f"{family.size_axis}{' (best over ' + ', '.join(over) + ')' if over else ''} "
        f"({device.get('name', 'unknown GPU')})",
        fontsize=10,
    )
    legend(axes[0][-1], styles.handles(styles.present(best)))
    return fig


# ---- parameter sweeps

MAX_SWEEP_ROWS = 6


def _swept(rows: pd.DataFrame, family: Family, variant: str) -> list[str]:
    params = family.variants[variant].params
    return [p for p in params if p in rows and rows[p].nunique() > 1]


def sweep(table: pd.DataFrame, family: Family, styles: Styles, device: dict[str, Any]) -> Any:
    """Median time against the tunables of every swept variant, at up to three sizes:
    a line for one tunable, a heatmap for two (others at their best); the best marked."""
    ok = table[table["status"] == OK]
    swept = [(v, _swept(ok[ok["variant"] == v], family, v)) for v in styles.present(ok)]
    swept = [(v, p) for v, p in swept if p][:MAX_SWEEP_ROWS]
    if not swept:
        raise NoFigure("no variant is swept over its tunables in this experiment")
    every = sorted(ok[family.size_axis].unique())
    # the smallest, a middle and the largest size: how the best moves with the problem
    sizes = [every[i] for i in sorted({round(j * (len(every) - 1) / 2) for j in range(3)})]
    fig, axes = plt.subplots(
        len(swept),
        len(sizes),
        squeeze=False,
        figsize=(3.2 * len(sizes) + 1.5, 2.6 * len(swept) + 0.6),
    )
    for (variant, params), row_axes in zip(swept, axes, strict=True):
        for size, ax in zip(sizes, row_axes, strict=True):
            rows = ok[(ok["variant"] == variant) & (ok[family.size_axis] == size)]
            ax.set_title(f"{variant}, {family.size_axis} = {size}", fontsize=8)
            if rows.empty:
                ax.axis("off")
                continue
            if len(params) == 1:
                curve = rows.groupby(params[0])["time_ms"].min().sort_index()
                ax.plot(
                    curve.index.astype(str),
                    curve.to_numpy(),
                    color=styles.style[variant]["color"],
                    marker="o",
                )
                ax.plot(str(curve.idxmin()), curve.min(), marker="*", ms=12, color="black", ls="")
                ax.set_xlabel(params[0])
                ax.set_ylabel("median time (ms)")
            else:
                a, b = sorted(params, key=lambda p: -rows[p].nunique())[:2]
                grid = rows.groupby([a, b])["time_ms"].min().unstack(b)
                image = ax.imshow(grid.to_numpy(dtype=float), cmap="viridis_r", aspect="auto")
                ax.set_xticks(range(grid.shape[1]), grid.columns.astype(str))
                ax.set_yticks(range(grid.shape[0]), grid.index.astype(str))
                ax.set_xlabel(b)
                ax.set_ylabel(a)
                i, j = np.unravel_index(np.nanargmin(grid.to_numpy(dtype=float)), grid.shape)
                ax.plot(j, i, marker="*", ms=12, color="white", markeredgecolor="black")
                fig.colorbar(
                    image,
                    ax=ax,
                    label="ms" + (" (best over the others)" if len(params) > 2 else ""),
                )
    fig.suptitle(
        f"{table['experiment'].iloc[0]}: time against tunables, best marked ★ "
        f"({device.get('name', 'unknown GPU')})",
        fontsize=10,
    )
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
) -> None:
    """Each configuration at (x, y): its variant's colour, its class's marker, an area
    growing with its problem size; one scatter call per variant and class."""
    areas = marker_areas(rows[family.size_axis])
    for variant in styles.present(rows):
        pick = (rows["variant"] == variant).to_numpy()
        for name, marker in markers.items():
            sel = pick & (classes == name).to_numpy()
            marks(ax, rows.loc[sel, xy[0]], rows.loc[sel, xy[1]], areas[sel],
                  styles.style[variant]["color"], marker)  # fmt: skip


def _classed_handles(
    rows: pd.DataFrame, family: Family, styles: Styles, markers: dict[str, str], label: str
) -> list[Line2D]:
    handles = styles.handles(styles.present(rows))
    for name, marker in markers.items():
        text = label.format(name.replace("_", " "))
        handles.append(Line2D([], [], color="0.3", marker=marker, ls="", label=text))
    return [*handles, size_handle(family)]


def speed_of_light(
    table: pd.DataFrame, family: Family, styles: Styles, device: dict[str, Any]
) -> Any:
    """SM against memory throughput (% of peak, ncu's Speed of Light) per configuration;
    the regions where each would be called memory-, compute- or latency-bound by Speed
    of Light alone shaded (the table's bound uses every level and the FLOP rate too);
    the marker is the table's bound."""
    rows = profiled_rows(table)
    fig, ax = plt.subplots(figsize=FIGSIZE)
    t = LATENCY_PCT
    ax.fill_between([0, t], 0, t, color="0.85", lw=0)
    ax.fill([t, 100, 100, t], [0, 0, 100, t], color="#cfe3f2", lw=0)
    ax.fill([0, t, 100, 0], [t, t, 100, 100], color="#f6dcc3", lw=0)
    ax.plot([t, 100], [t, 100], color="0.5", lw=0.6)
    for text, xy in (("latency", (t / 2, t / 2)), ("memory", (85, 25)), ("compute", (25, 85))):
        ax.text(*xy, text, ha="center", va="center", color="0.35", fontsize=9)
    _classed_scatter(ax, rows, family, styles, ("memory_throughput_pct", "sm_throughput_pct"),
                     rows["bound"], BOUND_MARKERS)  # fmt: skip
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 100)
    ax.set_xlabel("memory throughput (% of peak, busiest of DRAM, L2, L1)")
    ax.set_ylabel("SM throughput (% of peak)")
    title(ax, table, "Speed of Light", device)
    legend(ax, _classed_handles(rows, family, styles, BOUND_MARKERS, "bound: {}"))
    return fig


def occupancy(table: pd.DataFrame, family: Family, styles: Styles, device: dict[str, Any]) -> Any:
    """Achieved against theoretical occupancy per configuration; the marker names the
    resource that limits the blocks per SM (ncu's launch__occupancy_limit_*)."""
    rows = profiled_rows(table)
    limits = rows[[f"occupancy_limit_{k}" for k in LIMIT_MARKERS]].astype(float)
    limiter = limits.idxmin(axis=1, skipna=True).str.removeprefix("occupancy_limit_")
    fig, ax = plt.subplots(figsize=FIGSIZE)
    ax.plot([0, 100], [0, 100], color="0.5", lw=0.6, ls="--")
    xy = ("theoretical_occupancy_pct", "achieved_occupancy_pct")
    _classed_scatter(ax, rows, family, styles, xy, limiter, LIMIT_MARKERS)
    ax.set_xlim(0, 105)
    ax.set_ylim(0, 105)
    ax.set_xlabel("theoretical occupancy (% of the SM's warps the launch allows)")
    ax.set_ylabel("achieved occupancy (% warps active)")
    title(ax, table, "occupancy and its limiter", device)
    legend(ax, _classed_handles(rows, family, styles, LIMIT_MARKERS, "limited by {}"))
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
    ax.annotate("measured = model", (hi / 1.2, hi / 1.2), ha="right", fontsize=7, color="0.4")
    ax.annotate("10× below the model", (hi / 1.2, hi / 12), ha="right", fontsize=7, color="0.5")
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
    table: pd.DataFrame, family: Family, device: dict[str, Any], out_dir: Path, names: list[str]
) -> list[Path]:
    """The figures ``names`` of one experiment into ``out_dir``; a figure that cannot be
    drawn becomes a note, so that the others still build."""
    styles = Styles(table, family)
    paths = []
    for name in names:
        try:
            fig = FIGURES[name](table, family, styles, device)
        except NoFigure as why:
            paths += note(table, name, str(why), device, out_dir / name)
            continue
        paths += save(fig, device, out_dir / name)
    return paths


def draw_one(
    table: pd.DataFrame, kernels_dir: Path, device: dict[str, Any], out_dir: Path, name: str
) -> list[Path]:
    """draw() of one figure, the family read here: what each worker process of a parallel
    plot stage runs."""
    family = load_family(kernels_dir, str(table["family"].iloc[0]))
    return draw(table, family, device, out_dir, [name])


def family_figure(
    table: pd.DataFrame, family: Family, name: str, device: dict[str, Any], out: Path
) -> list[Path]:
    """One of the family's own figures (``figures:`` in family.yaml): a column of each
    variant's best configuration against the size axis."""
    figure = family.figures[name]
    merit = merit_of(family)[0]
    best = best_configs(table[table[figure.y].notna()], ["variant", family.size_axis], merit)
    if best.empty:
        return note(table, name, f"no configuration has {figure.y}", device, out)
    styles = Styles(table, family)
    fig, ax = plt.subplots(figsize=FIGSIZE)
    near = near_sizes(best[family.size_axis])
    for variant in styles.present(best):
        rows = best[best["variant"] == variant].sort_values(family.size_axis)
        plot_by_size(ax, rows[family.size_axis].to_numpy(dtype=float),
                 rows[figure.y].to_numpy(dtype=float), styles.style[variant], near)  # fmt: skip
    ax.set_xscale("log", base=2)
    size_ticks(ax, best[family.size_axis])
    ax.set_xlabel(size_label(family.size_axis, best[family.size_axis]))
    ax.set_ylabel(figure.label)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.2)
    title(ax, table, figure.label, device)
    legend(ax, styles.handles(styles.present(best)))
    return save(fig, device, out)
