"""The hierarchical roofline: counted FLOP/s against arithmetic intensity at DRAM, L2 and
L1, under each level's bandwidth and each precision's dense roof, theoretical and measured;
or, for a family that only moves bytes, each level's bandwidth against problem size."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.collections import LineCollection
from matplotlib.lines import Line2D

from ..metrics import LEVELS, PRECISIONS
from ..spec import Family
from .style import (
    CEILING_LABEL,
    FIGSIZE,
    LEVEL_MARKERS,
    Styles,
    flat_ceiling,
    legend,
    log_axis,
    marker_areas,
    marks,
    measured_ceiling,
    prefixed,
    profiled_rows,
    size_handle,
    size_ticks,
    title,
)
from .summary import best_configs, merit_of

# Intensities past this many times the largest ridge point are drawn at the axis's edge:
# a tensor-core kernel that bypasses L1 reaches 10^5 FLOP/B there, which would squash the rest.
EDGE_PAST_RIDGE = 30.0
FADED = 0.18  # the opacity of the configurations that are not their variant's best


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
    """Counted FLOP/s against arithmetic intensity at DRAM, L2 and L1 (one marker each,
    joined per configuration), under each level's bandwidth and each precision's dense
    roof, theoretical (solid, at the device's maximum SM clock) and measured on this device
    (dashed), each labelled with its values. Each variant's best configuration per problem
    stands in front; the rest of the sweep is faded behind it. Intensities far past every
    ridge are drawn at the right edge."""
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
    ai = rows[[f"ai_{lvl}" for lvl in LEVEL_MARKERS]].astype(float).clip(upper=edge)
    lo = float(np.nanmin(ai.to_numpy())) / 4
    hi = max(float(np.nanmax(ai.to_numpy())) * 2, ridge * 1.5)
    fig, ax = plt.subplots(figsize=FIGSIZE)
    _ceilings(ax, bandwidths, roofs, (lo, hi), (scale, unit))
    areas = marker_areas(rows[family.size_axis])
    for variant in styles.present(rows):
        color = styles.style[variant]["color"]
        for best in (False, True):  # the sweep behind, the best in front
            pick = ((rows["variant"] == variant).to_numpy()) & (front == best)
            if not pick.any():
                continue
            points = ai[pick].to_numpy()
            level_y = np.repeat(y[pick].to_numpy()[:, None] / scale, points.shape[1], axis=1)
            segments = np.stack([points, level_y], axis=-1)
            ax.add_collection(LineCollection(list(segments), colors=color, linewidths=0.6,
                                             alpha=0.5 if best else FADED / 2))  # fmt: skip
            for j, lvl in enumerate(LEVEL_MARKERS):
                marks(ax, points[:, j], level_y[:, j], areas[pick], color, LEVEL_MARKERS[lvl],
                      f"{variant}:{lvl}" + ("" if best else ":faded"),
                      alpha=1.0 if best else FADED)  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    log_axis(ax.xaxis)
    log_axis(ax.yaxis)
    beyond = bool(
        (rows[[f"ai_{lvl}" for lvl in LEVEL_MARKERS]].astype(float) > edge).any(axis=None)
    )
    ax.set_xlabel("arithmetic intensity (counted FLOP per byte of each level)" + (
        f"; past {edge:,.0f} at the edge" if beyond else ""))  # fmt: skip
    ax.set_ylabel(f"achieved {unit} (counted FLOPs / ncu duration)")
    ax.grid(True, which="major", alpha=0.2)
    title(ax, table, "hierarchical roofline", device)
    handles = styles.handles(styles.present(rows))
    handles += [
        Line2D([], [], color="0.3", marker=m, ls="", label=f"{LEVELS[lvl].label} intensity")
        for lvl, m in LEVEL_MARKERS.items()
    ]
    handles += [
        Line2D([], [], color="0.3", marker="o", ls="", alpha=FADED,
               label="faded: not the variant's best"),
        Line2D([], [], color="0.3", ls="-", label="theoretical ceiling"),
        Line2D([], [], color="0.3", ls="--", label="measured ceiling"),
    ]  # fmt: skip
    handles.append(size_handle(family))
    legend(ax, handles)
    return fig


def _ceilings(
    ax: Any,
    bandwidths: dict[str, tuple[float, float]],
    roofs: dict[str, tuple[float, float]],
    span: tuple[float, float],
    scale_unit: tuple[float, str],
) -> None:
    """Each level's bandwidth slope and each precision's flat roof over ``span`` of
    intensities, theoretical (solid) and measured (dashed, where measured), labelled."""
    (lo, hi), (scale, unit) = span, scale_unit
    top = max(t for t, _ in roofs.values())
    x = np.geomspace(lo, hi, 128)
    for lvl, (theory, measured) in bandwidths.items():
        for value, style in ((theory, "-"), (measured, "--")):
            if value > 0:
                ax.plot(x, np.minimum(x * value, top) / scale, color="0.3", lw=0.9, ls=style)
        at = (lo * 1.1, lo * 1.1 * theory / scale)
        label = f"{LEVELS[lvl].label} {theory / 1e12:.3g}" + (
            f" (measured {measured / 1e12:.3g})" if measured > 0 else "") + " TB/s"  # fmt: skip
        ax.annotate(label, at, va="bottom", **CEILING_LABEL)
    for roof, (theory, measured) in roofs.items():
        text = (f"{PRECISIONS[roof].label} {theory / scale:,.3g}", f" {unit}")
        flat_ceiling(ax, (theory, measured), scale, text, xy=(hi / 1.05, theory / scale),
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
