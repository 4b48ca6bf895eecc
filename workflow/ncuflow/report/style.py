"""The one style of every figure, and the helpers figures share.

Variants keep one colour in every figure (a colour-blind-safe palette, in the family's
ladder order); library baselines are grey with dashed lines; the problem size is the
marker's area; axes carry units with an SI prefix chosen for the data; legends sit
outside the data; the footer says where the numbers come from (measured, or replayed from
a capture). A figure that cannot be drawn becomes a note saying why (``NoFigure``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.collections import PathCollection
from matplotlib.layout_engine import TightLayoutEngine
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from ..device.facts import footer
from ..metrics import ROOFLINE_LEVELS
from ..spec import Family
from ..vocab import BORDERLINE, COMPUTE, LATENCY, MEMORY, OK

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
LEVEL_MARKERS = dict(zip(ROOFLINE_LEVELS, ("o", "s", "^"), strict=True))
BOUND_MARKERS = {MEMORY: "o", COMPUTE: "^", LATENCY: "s", BORDERLINE: "D"}
NO_LIMIT = "nothing"  # the launch allows every warp the SM has
LIMIT_MARKERS = {"registers": "o", "shared_mem": "s", "warps": "^", "blocks": "D", NO_LIMIT: "X"}
FIGSIZE = (8.0, 4.8)  # inches: a page-wide figure of a report
# savefig's arguments: the whole figure at 150 dpi (FIGSIZE: 1200 × 720 px), no tight bbox,
# so what is outside the figure is cut off (finish() lays every text out inside it)
SAVE: dict[str, Any] = {"dpi": 150}
FOOTER = 0.03  # the share of the figure's height its footer keeps
MAX_LEGEND_COLUMNS = 3
# inches of a figure's height a legend hanging from its panel's top cannot take: the title
# and margin above the panel, a margin below
LEGEND_MARGINS = 0.4
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

    def __init__(self, table: pd.DataFrame, family: Family, joined: bool = True) -> None:
        self.joined = joined  # whether successive sizes are a trend a line may join
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

    def line(self, variant: str) -> dict[str, Any]:
        """A variant's style for points along the size axis: its line only where
        successive sizes are a trend."""
        return self.style[variant] if self.joined else {**self.style[variant], "ls": "none"}

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


def title(ax: Any, table: pd.DataFrame, text: str, device: dict[str, Any]) -> None:
    """A one-panel figure's title, from the panel's left edge: a legend beside the panel
    makes it narrower than its title, which centred on it would run off the figure."""
    ax.set_title(f"{table['experiment'].iloc[0]}: {text} ({device.get('name', 'unknown GPU')})",
                 loc="left", wrap=True)  # fmt: skip


def suptitle(fig: Any, text: str) -> None:
    """A figure's title over all its panels, a fixed 0.1 in below the figure's top (the
    default, 2 % of its height, puts a tall figure's title on its first panels' titles)."""
    fig.suptitle(text, fontsize=10, y=1 - 0.1 / fig.get_figheight(), va="top", wrap=True)


def size_handle(family: Family) -> Line2D:
    return Line2D(
        [], [], color="0.6", marker="o", ls="", label=f"larger marker: larger {family.size_axis}"
    )


def legend(ax: Any, handles: list[Any], title: str | None = None) -> None:
    """The legend beside ``ax``, hanging from its top: in one column, or in as many as keep
    it within the figure (a ladder's variants and markers outnumber a figure's lines)."""
    fig = ax.figure
    room = (fig.get_figheight() - LEGEND_MARGINS) * fig.dpi
    for columns in range(1, MAX_LEGEND_COLUMNS + 1):
        made = ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                         borderaxespad=0, frameon=False, title=title, ncols=columns)  # fmt: skip
        if made.get_window_extent(fig.canvas.get_renderer()).height <= room:
            break


def finish(fig: Any, device: dict[str, Any]) -> Any:
    """The figure as it is saved: its footer, and the layout that keeps every text inside
    it (the PNG is the figure's own size, SAVE's dpi; the report scales it to its page)."""
    fig.text(0.01, 0.005, footer(device), fontsize=7, color="0.35", ha="left", va="bottom")
    lay_out(fig, (0, FOOTER, 1, 1))
    return fig


def lay_out(fig: Any, rect: tuple[float, float, float, float] = (0, 0, 1, 1)) -> None:
    """tight_layout's placement, once, within ``rect``: fig.tight_layout() leaves a layout
    engine on the figure, for which every savefig draws the whole figure once more before
    it saves (about a third of a figure's saving time, the pixels the same)."""
    TightLayoutEngine(rect=rect).execute(fig)


def save(fig: Any, device: dict[str, Any], out: Path) -> list[Path]:
    finish(fig, device)
    paths = [out.with_suffix(".png"), out.with_suffix(".svg")]
    for path in paths:
        fig.savefig(path, **SAVE)
    plt.close(fig)
    return paths


def note(
    table: pd.DataFrame, name: str, reason: str, device: dict[str, Any], out: Path
) -> list[Path]:
    """What stands in for a figure that cannot be drawn: its name and why."""
    return save(note_figure(table, name, reason, device), device, out)


def note_figure(table: pd.DataFrame, name: str, reason: str, device: dict[str, Any]) -> Any:
    """note()'s figure, not yet finished."""
    fig, ax = plt.subplots(figsize=(FIGSIZE[0], 1.6))
    ax.axis("off")
    title(ax, table, name.replace("_", " "), device)
    ax.text(
        0.5,
        0.45,
        f"not drawn: {reason}",
        ha="center",
        va="center",
        wrap=True,
        transform=ax.transAxes,
    )
    return fig


def log_axis(axis: Any) -> None:
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


def size_text(value: float) -> str:
    """A problem size as a reader reads it: whole up to 99,999, a power of two as 2^k
    above, else three digits and k, M or G (67.1M); a fraction (a swept scalar) as itself."""
    if not float(value).is_integer():
        return f"{value:g}"
    whole = int(value)
    if abs(whole) < 100_000:
        return str(whole)
    if whole > 0 and whole & (whole - 1) == 0:
        return f"2^{whole.bit_length() - 1}"
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(whole) >= factor:
            return f"{whole / factor:.3g}{suffix}"
    return str(whole)


def size_ticks(ax: Any, sizes: pd.Series) -> None:
    """A tick at every problem size on a log2 axis; a near size (near_sizes) keeps its tick
    but not a label that would overprint."""
    values = sorted(sizes.astype(float).unique())
    near = set(near_sizes(sizes))
    labels = ["" if value in near else size_text(value) for value in values]
    ax.set_xticks(values, labels, rotation=45 if len(values) > 8 else 0)
    ax.minorticks_off()


def size_label(axis: str, sizes: pd.Series) -> str:
    near = near_sizes(sizes)
    hollow = f"; hollow: {', '.join(size_text(v) for v in near)}" if near else ""
    return f"{axis} (elements, log scale{hollow})"


def plot_by_size(
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


def profiled_rows(table: pd.DataFrame) -> pd.DataFrame:
    rows = table[(table["status"] == OK) & table["ncu_time_ms"].notna()]
    if rows.empty:
        reasons = table.loc[table["status"] == OK, "bound_reason"].dropna().unique()
        raise NoFigure(
            "no configuration was profiled by ncu" + (f" ({reasons[0]})" if len(reasons) else "")
        )
    return rows


def measured_ceiling(device: dict[str, Any], name: str) -> float:
    value = (device.get("ceilings", {}).get(name) or {}).get("value")
    return float(value) if value else math.nan


def marks(
    ax: Any, x: Any, y: Any, size: Any, color: str, marker: str, gid: str | None = None,
    hollow: bool = False, alpha: float = 1.0,
) -> None:  # fmt: skip
    """Data points, as every figure draws them: filled, outlined thinly in black, above the
    lines and ceilings (``hollow``: outlined in their colour; faded ones, ``alpha`` < 1,
    behind the others); ``gid`` names the group (``<variant>:<class>``) in the SVG and for
    the tests that read a figure back."""
    if hollow:
        ax.scatter(x, y, s=size, facecolor="none", edgecolor=color, marker=marker,
                   linewidth=1.2, zorder=3, gid=gid)  # fmt: skip
        return
    ax.scatter(x, y, s=size, color=color, marker=marker, edgecolor="black", linewidth=0.3,
               zorder=3 if alpha >= 1 else 2, gid=gid, alpha=alpha)  # fmt: skip


def flat_ceiling(
    ax: Any, values: tuple[float, float], scale: float, text: tuple[str, str],
    places: list[tuple[float, float]] | None = None, **where: Any,
) -> None:  # fmt: skip
    """A ceiling drawn flat: (theoretical, measured) ``values``, solid and dashed (the
    measured one where measured), labelled ``text[0] (measured …)text[1]`` at ``where``, or
    at the first of ``places`` free of data points (FreeLabel)."""
    theory, measured = values
    for value, style in ((theory, "-"), (measured, "--")):
        if value > 0:
            ax.axhline(value / scale, color="0.3", lw=0.9, ls=style)
    label = text[0] + (f" (measured {measured / scale:,.3g})" if measured > 0 else "") + text[1]
    if places:
        FreeLabel(ax, places, label, **where, **CEILING_LABEL)
    else:
        ax.annotate(label, **where, **CEILING_LABEL)


def drawn_points(ax: Any) -> np.ndarray:
    """The data points ``ax`` draws within its view, rows of (x, y, radius) in pixels: its
    scatters' markers and its lines' markers."""
    dpi, rows = ax.figure.dpi, []
    for c in ax.collections:
        if isinstance(c, PathCollection) and c.get_visible() and len(c.get_offsets()):
            xy = c.get_offset_transform().transform(np.asarray(c.get_offsets(), dtype=float))
            rows.append(np.column_stack([xy, np.broadcast_to(np.sqrt(c.get_sizes()) / 2, len(xy))]))
    for line in ax.get_lines():
        if line.get_visible() and line.get_marker() not in (None, "None", "none", "", " "):
            xy = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
            rows.append(np.column_stack([xy, np.full(len(xy), line.get_markersize() / 2)]))
    points = np.concatenate(rows) if rows else np.empty((0, 3))
    points[:, 2] *= dpi / 72  # points (of type) to pixels
    box = ax.bbox
    inside = ((points[:, 0] >= box.x0) & (points[:, 0] <= box.x1)
              & (points[:, 1] >= box.y0) & (points[:, 1] <= box.y1))  # fmt: skip
    return points[inside & np.isfinite(points).all(axis=1)]


def points_under(box: Any, points: np.ndarray, margin_px: float = 0.0) -> np.ndarray:
    """Those of ``points`` (``drawn_points``) whose marker, a disc of its radius less
    ``margin_px``, reaches into the pixel box ``box``."""
    dx = np.maximum(np.maximum(box.x0 - points[:, 0], points[:, 0] - box.x1), 0)
    dy = np.maximum(np.maximum(box.y0 - points[:, 1], points[:, 1] - box.y1), 0)
    return points[np.hypot(dx, dy) < points[:, 2] - margin_px]


def log_places(lo: float, hi: float, first: float, ratio: float) -> np.ndarray:
    """Places for a FreeLabel along a log axis from ``hi`` down to ``lo``: ``hi / first``,
    then each ``ratio`` times below the one before."""
    return hi / first / ratio ** np.arange(np.log(hi / lo) / np.log(ratio))


class FreeLabel(Text):
    """A label inside an axes that takes, as it is drawn (the layout final), the first of
    its ``places`` (data coordinates) where it lies inside the axes and covers no data
    point nor a FreeLabel drawn before it; where none is free, the one inside that covers
    fewest."""

    def __init__(self, ax: Any, places: list[tuple[float, float]], text: str, **kw: Any) -> None:
        super().__init__(*places[0], text, **kw)
        self.places = places
        self.placed: Any = None  # its box where it was last drawn (pixels)
        ax.add_artist(self)

    def draw(self, renderer: Any) -> None:
        points, frame = drawn_points(self.axes), self.axes.bbox
        # those drawn before it this time: a lower zorder, or the same and added earlier
        texts = list(self.axes.texts)
        order = {id(t): (t.get_zorder(), i) for i, t in enumerate(texts)}
        others = [t.placed for t in texts if isinstance(t, FreeLabel) and t.placed is not None
                  and order[id(t)] < order[id(self)]]  # fmt: skip
        costs = []  # (outside the axes, labels covered, points covered, place)
        for i, place in enumerate(self.places):
            self.set_position(place)
            box = self.get_window_extent(renderer)
            outside = not (box.x0 >= frame.x0 and box.x1 <= frame.x1
                           and box.y0 >= frame.y0 and box.y1 <= frame.y1)  # fmt: skip
            covered = sum(box.overlaps(other) for other in others)
            costs.append((outside, covered, len(points_under(box, points)), i))
            if costs[-1][:3] == (False, 0, 0):
                break
        self.set_position(self.places[min(costs)[3]])
        self.placed = self.get_window_extent(renderer)
        super().draw(renderer)


def free_dims(rows: pd.DataFrame, family: Family) -> list[str]:
    """The dimensions (and swept scalars) besides the size axis that take several values at
    one size (a batch beside a layer's size): a best over them would hide which one each
    point shows."""
    ok = rows[rows["status"] == OK]
    axis = family.size_axis
    return [d for d in family.problem_columns
            if d != axis and (ok.groupby(axis)[d].nunique() > 1).any()]  # fmt: skip
