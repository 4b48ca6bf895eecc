"""The figures of an experiment, PNG and SVG, in one style.

Variants keep one colour in every figure (a colour-blind-safe palette, in the family's
ladder order); library baselines are grey with dashed lines; the problem size is the
marker's area; axes carry units with an SI prefix chosen for the data; legends sit
outside the data; the footer says where the numbers come from (measured, or replayed from
a capture). A figure that cannot be drawn for an experiment (no profiled configuration, no
swept tunable, no modelled traffic) becomes a note saying why, and the others still build.

Figures (``FIGURES``): the hierarchical roofline (or the bandwidth view of a family that
only moves bytes), performance against problem size, parameter sweeps, the Speed-of-Light
scatter, occupancy, and modelled against measured DRAM traffic; plus a family's own
(``family_figure``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.collections import LineCollection
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from .analysis import LATENCY_PCT
from .device import footer
from .metrics import LEVELS, PRECISIONS
from .spec import STANDARD_FIGURES, Family, load_family
from .vocab import OK

plt.rcParams.update({
    "font.size": 9, "axes.titlesize": 10, "legend.fontsize": 8, "axes.labelsize": 9,
    "svg.fonttype": "none",  # text stays editable text in the SVG
    "axes.spines.top": False, "axes.spines.right": False,
})  # fmt: skip

# Okabe and Ito's colour-blind-safe palette, then Paul Tol's muted one for longer ladders;
# variants past both repeat colours with another marker.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
           "#000000", "#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77",
           "#CC6677", "#882255", "#AA4499"]  # fmt: skip
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
BASELINE_GREYS = ["0.15", "0.45", "0.65", "0.3", "0.55"]
LEVEL_MARKERS = {"dram": "o", "l2": "s", "l1": "^"}
BOUND_MARKERS = {"memory": "o", "compute": "^", "latency": "s"}
LIMIT_MARKERS = {"registers": "o", "shared_mem": "s", "warps": "^", "blocks": "D"}
FIGSIZE = (8.0, 4.8)  # inches: a page-wide figure of a report
# Ceiling labels stay readable where data points lie under them: drawn above the markers,
# on a light backing.
CEILING_LABEL: dict[str, Any] = {
    "fontsize": 7,
    "color": "0.3",
    "zorder": 5,
    "bbox": {"fc": "white", "ec": "none", "alpha": 0.7, "pad": 1},
}
PREFIXES = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]


def _compact(value: float, _: Any = None) -> str:
    """Tick labels without exponents: 0.5, 20, 500, 2k, 10M."""
    for factor, prefix in PREFIXES[2:-1]:
        if value >= factor:
            return f"{value / factor:g}{prefix}"
    return f"{value:g}"


PLAIN = FuncFormatter(_compact)


class NoFigure(Exception):
    """The figure cannot be drawn for this experiment; the message says why."""


def prefixed(values: Any, unit: str) -> tuple[float, str]:
    """(scale, label): the SI prefix that keeps the largest value between 1 and 1000."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    top = float(np.abs(finite).max()) if finite.size else 1.0
    for factor, prefix in PREFIXES:
        if top >= factor:
            return factor, f"{prefix}{unit}"
    return 1.0, unit


class Styles:
    """Colour, marker and line of each variant, the same in every figure."""

    def __init__(self, table: pd.DataFrame, family: Family) -> None:
        variants = family.ordered(list(dict.fromkeys(table["variant"])))
        baseline = table.groupby("variant")["baseline"].first().astype(bool)
        self.order = variants
        self.baselines = [v for v in variants if baseline.get(v, False)]
        own = [v for v in variants if v not in self.baselines]
        self.style: dict[str, dict[str, Any]] = {}
        for i, variant in enumerate(own):
            self.style[variant] = {
                "color": PALETTE[i % len(PALETTE)],
                "marker": MARKERS[i // len(PALETTE) % len(MARKERS)],
                "ls": "-",
                "label": variant,
            }
        for i, variant in enumerate(self.baselines):
            self.style[variant] = {
                "color": BASELINE_GREYS[i % len(BASELINE_GREYS)],
                "marker": MARKERS[(i + 1) % len(MARKERS)],
                "ls": "--",
                "label": f"{variant} (library)",
            }

    def present(self, rows: pd.DataFrame) -> list[str]:
        return [v for v in self.order if v in set(rows["variant"])]

    def handles(self, variants: list[str]) -> list[Line2D]:
        return [
            Line2D(
                [],
                [],
                color=self.style[v]["color"],
                marker=self.style[v]["marker"],
                ls=self.style[v]["ls"],
                label=self.style[v]["label"],
            )
            for v in variants
        ]


def marker_areas(sizes: pd.Series) -> np.ndarray:
    """Marker areas growing with the logarithm of the problem size (14 to 70 pt²)."""
    values = np.log2(sizes.astype(float).clip(lower=1).to_numpy())
    lo, hi = values.min(initial=0.0), values.max(initial=1.0)
    return 14 + 56 * (values - lo) / ((hi - lo) or 1.0)


def _title(ax: Any, table: pd.DataFrame, text: str, device: dict[str, Any]) -> None:
    ax.set_title(f"{table['experiment'].iloc[0]}: {text} ({device.get('name', 'unknown GPU')})")


def size_handle(family: Family) -> Line2D:
    return Line2D(
        [], [], color="0.6", marker="o", ls="", label=f"larger marker: larger {family.size_axis}"
    )


def _legend(ax: Any, handles: list[Any], title: str | None = None) -> None:
    ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        borderaxespad=0,
        frameon=False,
        title=title,
    )


def save(fig: Any, device: dict[str, Any], out: Path) -> list[Path]:
    fig.text(0.01, 0.005, footer(device), fontsize=7, color="0.35", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    paths = [out.with_suffix(".png"), out.with_suffix(".svg")]
    for path in paths:
        fig.savefig(path, dpi=150)
    plt.close(fig)
    return paths


def note(
    table: pd.DataFrame, name: str, reason: str, device: dict[str, Any], out: Path
) -> list[Path]:
    """What stands in for a figure that cannot be drawn: its name and why."""
    fig, ax = plt.subplots(figsize=(FIGSIZE[0], 1.6))
    ax.axis("off")
    _title(ax, table, name.replace("_", " "), device)
    ax.text(
        0.5,
        0.45,
        f"not drawn: {reason}",
        ha="center",
        va="center",
        wrap=True,
        transform=ax.transAxes,
    )
    return save(fig, device, out)


def _log_axis(axis: Any) -> None:
    low, high = axis.get_view_interval()
    decades = math.log10(max(high, 1e-300) / max(low, 1e-300))
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades <= 4 else (1.0,)))
    axis.set_major_formatter(PLAIN)
    axis.set_minor_formatter(NullFormatter())


def near_sizes(sizes: pd.Series) -> list[float]:
    """The problem sizes within 3 % of the labelled size before them (2049 after 2048): on
    a log axis they stand on their neighbour, so a line through both would drop straight
    down; they are drawn as hollow markers of their own, their ticks unlabelled."""
    near, last = [], -math.inf
    for value in sorted(sizes.astype(float).unique()):
        if math.log10(value) - last < 0.013:
            near.append(value)
        else:
            last = math.log10(value)
    return near


def _size_ticks(ax: Any, sizes: pd.Series) -> None:
    """A tick at every problem size on a log2 axis; a near size (near_sizes) keeps its tick
    but not a label that would overprint."""
    values = sorted(sizes.astype(float).unique())
    near = set(near_sizes(sizes))
    labels = ["" if value in near else f"{value:g}" for value in values]
    ax.set_xticks(values, labels, rotation=45 if len(values) > 8 else 0)
    ax.minorticks_off()


def _size_label(axis: str, sizes: pd.Series) -> str:
    near = near_sizes(sizes)
    hollow = f"; hollow: {', '.join(f'{v:g}' for v in near)}" if near else ""
    return f"{axis} (elements, log scale{hollow})"


def _by_size(
    ax: Any, x: np.ndarray, y: np.ndarray, style: dict[str, Any], near: list[float], **kw: Any
) -> None:
    """One variant's points against the size axis: joined by its line, except the near
    sizes, hollow and unjoined (``kw``: errorbar's yerr and looks)."""
    yerr = kw.pop("yerr", None)
    apart = np.isin(x, near)
    for pick, line, face in ((~apart, style["ls"], style["color"]), (apart, "none", "white")):
        if pick.any():
            err = None if yerr is None else [e[pick] for e in yerr]
            ax.errorbar(x[pick], y[pick], yerr=err, color=style["color"], marker=style["marker"],
                        ls=line, markerfacecolor=face, **kw)  # fmt: skip


def _profiled(table: pd.DataFrame) -> pd.DataFrame:
    rows = table[(table["status"] == OK) & table["ncu_time_ms"].notna()]
    if rows.empty:
        reasons = table.loc[table["status"] == OK, "bound_reason"].dropna().unique()
        raise NoFigure(
            "no configuration was profiled by ncu" + (f" ({reasons[0]})" if len(reasons) else "")
        )
    return rows


def _ceiling(device: dict[str, Any], name: str) -> float:
    value = (device.get("ceilings", {}).get(name) or {}).get("value")
    return float(value) if value else math.nan


# ---- the hierarchical roofline


def roofline(table: pd.DataFrame, family: Family, styles: Styles, device: dict[str, Any]) -> Any:
    """Counted FLOP/s against arithmetic intensity at DRAM, L2 and L1 (one marker each,
    joined per configuration), under each level's bandwidth and each precision's dense
    roof, theoretical (solid) and measured on this device (dashed)."""
    rows = _profiled(table)
    rows = rows[rows["flops_counted"].astype(float) > 0]
    if rows.empty:
        return bandwidth_view(table, family, styles, device)
    y = rows["achieved_flops_per_s"].astype(float)
    roofs = {
        r: (float(g["roof_flops_per_s"].median()), float(g["roof_measured_flops_per_s"].median()))
        for r, g in rows.groupby("roof")
    }
    scale, unit = prefixed([*y, *(t for t, _ in roofs.values())], "FLOP/s")
    ai = rows[[f"ai_{lvl}" for lvl in LEVEL_MARKERS]].astype(float)
    lo = float(np.nanmin(ai.to_numpy())) / 4
    hi = float(np.nanmax(ai.to_numpy())) * 4
    bandwidths = {
        lvl: (float(rows[f"peak_{lvl}_bytes_per_s"].median()), _ceiling(device, lvl))
        for lvl in LEVEL_MARKERS
    }
    top = max(t for t, _ in roofs.values())
    hi = max(hi, *(top / b for b, _ in bandwidths.values() if b > 0)) * 1.5
    fig, ax = plt.subplots(figsize=FIGSIZE)
    x = np.geomspace(lo, hi, 128)
    for lvl, (theory, measured) in bandwidths.items():
        for value, style in ((theory, "-"), (measured, "--")):
            if value > 0:
                ax.plot(x, np.minimum(x * value, top) / scale, color="0.3", lw=0.9, ls=style)
        ax.annotate(
            f"{LEVELS[lvl].label} {theory / 1e12:.2f} TB/s",
            (lo * 1.1, lo * 1.1 * theory / scale),
            va="bottom",
            **CEILING_LABEL,
        )
    for roof, (theory, measured) in roofs.items():
        for value, style in ((theory, "-"), (measured, "--")):
            if value > 0:
                ax.axhline(value / scale, color="0.3", lw=0.9, ls=style)
        label = f"{PRECISIONS[roof].label} {theory / scale:,.3g}"
        if measured > 0:
            label += f" (measured {measured / scale:,.3g})"
        ax.annotate(f"{label} {unit}", (hi / 1.05, theory / scale), ha="right", va="bottom",
                    **CEILING_LABEL)  # fmt: skip
    areas = marker_areas(rows[family.size_axis])
    for variant in styles.present(rows):
        pick = (rows["variant"] == variant).to_numpy()
        color = styles.style[variant]["color"]
        points = ai[pick].to_numpy()
        level_y = np.repeat(y[pick].to_numpy()[:, None] / scale, points.shape[1], axis=1)
        segments = np.stack([points, level_y], axis=-1)
        ax.add_collection(LineCollection(list(segments), colors=color, linewidths=0.6, alpha=0.5))
        for j, lvl in enumerate(LEVEL_MARKERS):
            ax.scatter(
                points[:, j],
                level_y[:, j],
                s=areas[pick],
                color=color,
                marker=LEVEL_MARKERS[lvl],
                edgecolor="black",
                linewidth=0.3,
                zorder=3,
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    _log_axis(ax.xaxis)
    _log_axis(ax.yaxis)
    ax.set_xlabel("arithmetic intensity (counted FLOP per byte of each level)")
    ax.set_ylabel(f"achieved {unit} (counted FLOPs / ncu duration)")
    ax.grid(True, which="major", alpha=0.2)
    _title(ax, table, "hierarchical roofline", device)
    handles = styles.handles(styles.present(rows))
    handles += [
        Line2D([], [], color="0.3", marker=m, ls="", label=f"{LEVELS[lvl].label} intensity")
        for lvl, m in LEVEL_MARKERS.items()
    ]
    handles += [
        Line2D([], [], color="0.3", ls="-", label="theoretical ceiling"),
        Line2D([], [], color="0.3", ls="--", label="measured ceiling"),
    ]
    handles.append(size_handle(family))
    _legend(ax, handles)
    return fig


def bandwidth_view(
    table: pd.DataFrame, family: Family, styles: Styles, device: dict[str, Any]
) -> Any:
    """A family that only moves bytes: each level's achieved bandwidth per configuration
    against problem size, under that level's ceilings."""
    rows = _profiled(table)
    seconds = rows["ncu_time_ms"].astype(float) / 1e3
    rates = {lvl: rows[f"{lvl}_bytes"].astype(float) / seconds for lvl in LEVEL_MARKERS}
    rates["dram"] = rows["dram_bytes_counted"].astype(float) / seconds
    ceilings = {
        lvl: (float(rows[f"peak_{lvl}_bytes_per_s"].median()), _ceiling(device, lvl))
        for lvl in LEVEL_MARKERS
    }
    scale, unit = prefixed(
        [v for r in rates.values() for v in r] + [c for c, _ in ceilings.values()], "B/s"
    )
    fig, ax = plt.subplots(figsize=FIGSIZE)
    for lvl, (theory, measured) in ceilings.items():
        for value, style in ((theory, "-"), (measured, "--")):
            if value > 0:
                ax.axhline(value / scale, color="0.3", lw=0.9, ls=style)
        label = f"{LEVELS[lvl].label} {theory / scale:,.3g} {unit}"
        if measured > 0:
            label += f" (measured {measured / scale:,.3g})"
        ax.annotate(label, (0.01, theory / scale), xycoords=("axes fraction", "data"),
                    va="bottom", **CEILING_LABEL)  # fmt: skip
    size = rows[family.size_axis].astype(float)
    for variant in styles.present(rows):
        pick = rows["variant"] == variant
        for lvl, marker in LEVEL_MARKERS.items():
            ax.scatter(
                size[pick],
                rates[lvl][pick] / scale,
                color=styles.style[variant]["color"],
                marker=marker,
                s=30,
                edgecolor="black",
                linewidth=0.3,
                zorder=3,
            )
    ax.set_xscale("log", base=2)
    _size_ticks(ax, size)
    ax.set_yscale("log")
    ax.set_xlabel(f"{family.size_axis} (elements, log scale)")
    ax.set_ylabel(f"achieved {unit} at each level (bytes / ncu duration)")
    ax.grid(True, alpha=0.2)
    _title(ax, table, "bandwidth at each memory level", device)
    handles = styles.handles(styles.present(rows))
    handles += [
        Line2D([], [], color="0.3", marker=m, ls="", label=LEVELS[lvl].label)
        for lvl, m in LEVEL_MARKERS.items()
    ]
    handles.append(size_handle(family))
    _legend(ax, handles)
    return fig


# ---- performance against problem size


def merit_of(family: Family) -> tuple[str, str, str]:
    """(column, base unit, what it is) of the family's figure of merit."""
    if family.merit == "bytes":
        return "gbps", "B/s", "compulsory bytes / median time"
    return "gflops", "FLOP/s", "analytic FLOPs / median time"


# Panels the performance figure draws at most; past that, the best over the free dimensions.
MAX_PERFORMANCE_PANELS = 6


def best_per_size(rows: pd.DataFrame, sizes: list[str], merit: str) -> pd.DataFrame:
    """Each variant's best ok configuration at each combination of ``sizes`` (highest
    figure of merit)."""
    rows = rows[rows["status"] == OK].astype({merit: float})
    return rows.loc[rows.groupby(["variant", *sizes])[merit].idxmax()]


def free_dims(rows: pd.DataFrame, family: Family) -> list[str]:
    """The dimensions besides the size axis that take several values at one size (a batch
    beside a layer's size): a best over them would hide which one each point shows."""
    ok = rows[rows["status"] == OK]
    axis = family.size_axis
    return [d for d in family.dims
            if d != axis and (ok.groupby(axis)[d].nunique() > 1).any()]  # fmt: skip


def performance(table: pd.DataFrame, family: Family, styles: Styles, device: dict[str, Any]) -> Any:
    """The best configuration of each variant at each size, its figure of merit with the
    interquartile range of its timing as error bars; one panel per precision."""
    merit, base, what = merit_of(family)
    free = free_dims(table, family)
    best = best_per_size(table, [family.size_axis, *free], merit)
    keys = ["dtype", *free]  # a panel per precision and per value of each free dimension
    if len(best[keys].drop_duplicates()) > MAX_PERFORMANCE_PANELS:
        best, keys = best_per_size(table, [family.size_axis], merit), ["dtype"]
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
        in_panel = (best[keys] == panel).all(axis=1)
        sizes = best.loc[in_panel, family.size_axis]
        for variant in styles.present(best[in_panel]):
            pick = (in_panel & (best["variant"] == variant)).to_numpy()
            order = np.argsort(best.loc[pick, family.size_axis].to_numpy())
            _by_size(
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
        _size_ticks(ax, sizes)
        spread = value[in_panel]
        if spread.min() > 0 and spread.max() > 30 * spread.min():
            ax.set_yscale("log")  # a ladder spans orders of magnitude
            _log_axis(ax.yaxis)
        else:
            ax.set_ylim(bottom=0)
        ax.set_xlabel(_size_label(family.size_axis, sizes))
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
    _legend(axes[0][-1], styles.handles(styles.present(best)))
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
            ax.scatter(rows.loc[sel, xy[0]], rows.loc[sel, xy[1]], s=areas[sel],
                       color=styles.style[variant]["color"], marker=marker, edgecolor="black",
                       linewidth=0.3, zorder=3)  # fmt: skip


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
    rows = _profiled(table)
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
    _title(ax, table, "Speed of Light", device)
    _legend(ax, _classed_handles(rows, family, styles, BOUND_MARKERS, "bound: {}"))
    return fig


def occupancy(table: pd.DataFrame, family: Family, styles: Styles, device: dict[str, Any]) -> Any:
    """Achieved against theoretical occupancy per configuration; the marker names the
    resource that limits the blocks per SM (ncu's launch__occupancy_limit_*)."""
    rows = _profiled(table)
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
    _title(ax, table, "occupancy and its limiter", device)
    _legend(ax, _classed_handles(rows, family, styles, LIMIT_MARKERS, "limited by {}"))
    return fig


def traffic(table: pd.DataFrame, family: Family, styles: Styles, device: dict[str, Any]) -> Any:
    """The variant's modelled DRAM bytes (its header's analytic traffic, no help from L2)
    against the measured ones; on the diagonal the model is exact, below it L2 saves."""
    rows = _profiled(table)
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
        ax.scatter(
            model[pick] / scale,
            measured[pick] / scale,
            s=areas[pick],
            color=styles.style[variant]["color"],
            marker=styles.style[variant]["marker"],
            edgecolor="black",
            linewidth=0.3,
            zorder=3,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo / 10, hi)
    _log_axis(ax.xaxis)
    _log_axis(ax.yaxis)
    ax.set_xlabel(f"modelled DRAM traffic ({unit}, no reuse through L2 across blocks)")
    ax.set_ylabel(f"measured DRAM traffic ({unit})")
    _title(ax, table, "modelled against measured DRAM traffic", device)
    _legend(ax, [*styles.handles(styles.present(rows)), size_handle(family)])
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
    best = best_per_size(table[table[figure.y].notna()], [family.size_axis], merit)
    if best.empty:
        return note(table, name, f"no configuration has {figure.y}", device, out)
    styles = Styles(table, family)
    fig, ax = plt.subplots(figsize=FIGSIZE)
    near = near_sizes(best[family.size_axis])
    for variant in styles.present(best):
        rows = best[best["variant"] == variant].sort_values(family.size_axis)
        _by_size(ax, rows[family.size_axis].to_numpy(dtype=float),
                 rows[figure.y].to_numpy(dtype=float), styles.style[variant], near)  # fmt: skip
    ax.set_xscale("log", base=2)
    _size_ticks(ax, best[family.size_axis])
    ax.set_xlabel(_size_label(family.size_axis, best[family.size_axis]))
    ax.set_ylabel(figure.label)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.2)
    _title(ax, table, figure.label, device)
    _legend(ax, styles.handles(styles.present(best)))
    return save(fig, device, out)
