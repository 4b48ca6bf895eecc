"""The energy tier's figure, table and summary section (rule energy_figure): energy per
launch against time per launch, on lines of equal power; the energy roofline, GFLOP per
joule against arithmetic intensity under the device's measured energy ceilings (GB per
joule against problem size for a family that only moves bytes); and per problem size each
variant's most energy-efficient configuration beside the fastest."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..spec import Family
from ..vocab import OK
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
from .summary import written
from .tables import differing, one_value, without_empty, write_html_table

ENERGY_FIGSIZE = (10.0, 4.6)
# Lines of equal power drawn on the energy-against-time panel (W), with the power limit,
# and how near the limit one may be (a ratio) before it is left out
POWERS = (10, 25, 50, 100, 200, 400, 1000)
NEAR_LIMIT = 1.5
FADED = 0.25  # the opacity of configurations that are not their variant's most efficient
# the energy ceilings drawn (device/ceilings.py's ENERGY_CEILINGS): compute, then memory
COMPUTE_CEILINGS = {"energy_fp32": "FP32", "energy_tensor_fp16": "FP16 tensor"}
MEMORY_CEILING = "energy_dram"


def energy_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows that measured ok and have an energy."""
    if "energy_j" not in table:
        return table.iloc[0:0]
    return table[(table["status"] == OK) & table["energy_j"].notna()]


def counts_flops(rows: pd.DataFrame) -> bool:
    """Whether the rows count FLOPs (the roofline's y), else only bytes (GB per joule)."""
    return bool((rows["flops"].astype(float) > 0).all())


def most_efficient(rows: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per group of ``keys``, the row of least energy per launch (ties: the faster)."""
    ranked = rows.sort_values(["energy_j", "time_ms"], kind="stable")
    return ranked.groupby(keys, sort=False, dropna=False).head(1)


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


def energy_table(table: pd.DataFrame, family: Family) -> pd.DataFrame:
    """Per problem size and variant, its most energy-efficient configuration beside its
    fastest: energy (mJ), power (W), efficiency, time (ms), and whether they are one."""
    rows = energy_rows(table)
    keys = [*family.problem_columns, "variant"]
    if rows.empty:
        return pd.DataFrame(columns=keys)
    fastest = rows.sort_values("time_ms", kind="stable").groupby(keys, sort=False).head(1)
    fastest = fastest.set_index(keys)
    out = []
    for _, row in most_efficient(rows, keys).iterrows():
        quick = fastest.loc[tuple(row[k] for k in keys)]
        out.append({**{k: row[k] for k in keys}, "config_id": row["config_id"],
                    "energy_mj": 1e3 * row["energy_j"], "avg_power_w": row["avg_power_w"],
                    "gflops_per_w": row["gflops_per_w"], "gb_per_j": row["gb_per_j"],
                    "time_ms": row["time_ms"], "fastest_config_id": quick["config_id"],
                    "fastest_energy_mj": 1e3 * quick["energy_j"],
                    "fastest_time_ms": quick["time_ms"],
                    "sm_clock_mhz_energy": row.get("sm_clock_mhz_energy"),
                    "power_limited": row.get("power_limited") or ""})  # fmt: skip
    frame = pd.DataFrame(out).sort_values([*keys[:-1], "energy_mj"], kind="stable")
    return frame.reset_index(drop=True)


def energy_view(frame: pd.DataFrame, table: pd.DataFrame,
                family: Family) -> tuple[pd.DataFrame, str]:  # fmt: skip
    """The energy table as the report shows it, and the sentence naming what every row
    shares: variant, size, energy, power, efficiency first, then the time and the fastest
    configuration's; each configuration named by the parameters that differ between its
    variant's ("same" where the fastest is the most efficient); headings in words."""
    rows = energy_rows(table).set_index("config_id", drop=False)
    params = {v: list(family.variant(v).params) for v in rows["variant"].unique()}
    names = differing(rows.drop_duplicates("config_id"), params)
    shown = frame.copy()
    shown["configuration"] = shown["config_id"].map(names)
    pairs = zip(shown["config_id"], shown["fastest_config_id"], strict=True)
    shown["fastest"] = ["same" if a == b else names.get(b, b) for a, b in pairs]
    for column in ("energy_mj", "fastest_energy_mj"):  # whole millijoules past a joule
        shown[column] = [round(v) if v >= 1000 else v for v in shown[column]]
    headings = {"variant": "variant", **{d: d for d in family.problem_columns},
                "energy_mj": "energy (mJ)", "avg_power_w": "power (W)",
                "gflops_per_w": "GFLOP/J", "gb_per_j": "GB/J", "time_ms": "time (ms)",
                "configuration": "configuration", "power_limited": "power-limited",
                "sm_clock_mhz_energy": "SM clock (MHz)", "fastest": "fastest",
                "fastest_energy_mj": "its energy (mJ)",
                "fastest_time_ms": "its time (ms)"}  # fmt: skip
    shown = shown[[c for c in headings if c in shown]].rename(columns=headings)
    shown, note = one_value(shown, family.problem_columns)
    return without_empty(shown), note


def write_energy_table(table: pd.DataFrame, family: Family, csv: Path) -> pd.DataFrame:
    """energy.csv (every column) and its page (energy_view)."""
    frame = energy_table(table, family)
    frame.to_csv(csv, index=False, float_format="%.6g")
    shown, same = energy_view(frame, table, family) if len(frame) else (frame, "")
    write_html_table(shown, csv.with_suffix(".html"),
                     f"{table['experiment'].iloc[0]}: energy per variant",
                     "Per problem size, each variant's configuration of least energy per "
                     "launch (launched back to back, hot caches: docs/methods.md, Energy), "
                     "its average power and efficiency, beside the variant's fastest "
                     "configuration and its energy; power-limited: what held the clocks "
                     f"down meanwhile, where something did. {same}".strip())  # fmt: skip
    return frame


def energy_markdown(table: pd.DataFrame, family: Family) -> str:
    """summary.md's section on energy: per problem size, the most energy-efficient variant
    and whether it is also the fastest; the rows the power or heat held back."""
    rows = energy_rows(table)
    if rows.empty:
        return ""
    dims = family.problem_columns
    lines = ["## Energy", "",
             "| size | most efficient | energy (mJ) | power (W) | fastest | its energy (mJ) "
             "| also the fastest |", "|---|---|---:|---:|---|---:|---|"]  # fmt: skip
    answers = []
    for size, group in rows.groupby(dims, sort=True):
        size = size if isinstance(size, tuple) else (size,)
        where = ", ".join(f"{d} = {written(v)}" for d, v in zip(dims, size, strict=True))
        least = most_efficient(group, dims).iloc[0]
        quick = group.sort_values("time_ms", kind="stable").iloc[0]
        same = least["variant"] == quick["variant"]
        lines.append(f"| {where} | {least['variant']} | {1e3 * least['energy_j']:.4g} | "
                     f"{least['avg_power_w']:.0f} | {quick['variant']} | "
                     f"{1e3 * quick['energy_j']:.4g} | {'yes' if same else 'no'} |")  # fmt: skip
        if not same:
            more = 100 * (quick["energy_j"] / least["energy_j"] - 1)
            faster = 100 * (least["time_ms"] / quick["time_ms"] - 1)
            answers.append(f"At {where}, {least['variant']} uses the least energy per launch, "
                           f"but {quick['variant']} is {faster:.0f} % faster and uses "
                           f"{more:.0f} % more energy.")  # fmt: skip
    held = rows[rows["power_limited"].fillna("") != ""] if "power_limited" in rows else rows[:0]
    if len(held):
        kinds = ", ".join(
            f"{n} by its {k} limit" for k, n in held["power_limited"].value_counts().items()
        )
        answers.append(f"The GPU held its clocks down for {len(held)} configurations ({kinds}): "
                       "their times and energies are those of a throttled GPU.")  # fmt: skip
    else:
        answers.append("No configuration ran under a power or thermal limit.")
    return "\n".join([*lines, "", *answers, ""])
