"""The parameter-sweep figure: time against each swept variant's tunables, one problem
per panel, relative to the panel's best on one scale for the whole figure."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..spec import Family
from ..vocab import OK
from .style import NoFigure, Styles, free_dims, size_text, suptitle

MAX_SWEEP_ROWS = 6


def _swept(rows: pd.DataFrame, family: Family, variant: str) -> list[str]:
    params = family.variants[variant].params
    return [p for p in params if p in rows and rows[p].nunique() > 1]


def sweep_problems(table: pd.DataFrame, family: Family) -> tuple[list[str], list[tuple]]:
    """The problem coordinates a sweep panel holds fixed (the size axis and every other
    dimension or swept scalar that varies at one size, a batch say) and up to three
    problems: the smallest, a middle and the largest, how the best moves with the problem."""
    ok = table[table["status"] == OK]
    keys = [family.size_axis, *free_dims(ok, family)]
    every = sorted(set(ok[keys].itertuples(index=False, name=None)))
    picks = sorted({round(j * (len(every) - 1) / 2) for j in range(3)}) if every else []
    return keys, [every[i] for i in picks]


def _skipped_reason(error: str, width: int = 22) -> str:
    """A skipped cell's label: the restriction that failed (its text), or the reason's
    first words, cut to ``width`` characters."""
    quoted = error.split("'")
    reason = quoted[1] if len(quoted) > 2 else " ".join(error.split()[:4])
    return reason if len(reason) <= width else reason[: width - 1] + "…"


def sweep(table: pd.DataFrame, family: Family, styles: Styles, device: dict[str, Any]) -> Any:
    """Time against the tunables of every swept variant at up to three problems, each
    panel at one problem (its size and every other varying dimension named, never a best
    over them), relative to the panel's best (★), on one scale for the whole figure: a
    line for one tunable, a heatmap for two (others at their best, said so); a skipped
    cell of a heatmap says which restriction skipped it."""
    ok = table[table["status"] == OK]
    swept = [(v, _swept(ok[ok["variant"] == v], family, v)) for v in styles.present(ok)]
    swept = [(v, p) for v, p in swept if p][:MAX_SWEEP_ROWS]
    if not swept:
        raise NoFigure("no variant is swept over its tunables in this experiment")
    keys, problems = sweep_problems(table, family)
    size = (3.4 * len(problems) + 1.5, 2.7 * len(swept) + 0.6)
    fig, axes = plt.subplots(len(swept), len(problems), squeeze=False, figsize=size)
    panels = []  # (ax, variant, params, rows of the variant at the problem, all of them)
    for (variant, params), row_axes in zip(swept, axes, strict=True):
        for problem, ax in zip(problems, row_axes, strict=True):
            at = (table[keys] == pd.Series(problem, index=keys)).all(axis=1)
            every = table[at & (table["variant"] == variant)]
            ax.set_title(f"{variant}, " + ", ".join(f"{k} = {size_text(v)}" for k, v in
                                                     zip(keys, problem, strict=True)),
                         fontsize=8)  # fmt: skip
            rows = every[every["status"] == OK]
            if rows.empty:
                ax.axis("off")
                why = every["error"].dropna()
                ax.text(0.5, 0.5, "nothing measured ok here" + (
                    f":\n{_skipped_reason(str(why.iloc[0]), 40)}" if len(why) else ""),
                        ha="center", va="center", fontsize=7, color="0.35",
                        transform=ax.transAxes)  # fmt: skip
                continue
            panels.append((ax, variant, params, rows, every))
    worst = max(float(r["time_ms"].max() / r["time_ms"].min()) for *_, r, _ in panels)
    for ax, variant, params, rows, every in panels:
        best = float(rows["time_ms"].min())
        if len(params) == 1:
            curve = rows.groupby(params[0])["time_ms"].min().sort_index() / best
            ax.plot(curve.index.astype(str), curve.to_numpy(),
                    color=styles.style[variant]["color"], marker="o")  # fmt: skip
            ax.plot(str(curve.idxmin()), 1.0, marker="*", ms=12, color="black", ls="",
                    gid=f"{variant}:best")  # fmt: skip
            ax.set_ylim(1 - 0.04 * (worst - 1) - 0.01, worst + 0.04 * (worst - 1) + 0.01)
            ax.set_xlabel(params[0])
            ax.set_ylabel("time ÷ best")
            continue
        a, b = sorted(params, key=lambda p: -every[p].nunique())[:2]
        grid = (rows.groupby([a, b])["time_ms"].min() / best).unstack(b)
        grid = grid.reindex(index=sorted(every[a].unique()), columns=sorted(every[b].unique()))
        image = ax.imshow(grid.to_numpy(dtype=float), cmap="viridis_r", aspect="auto",
                          vmin=1.0, vmax=worst)  # fmt: skip
        ax.set_xticks(range(grid.shape[1]), grid.columns.astype(str))
        ax.set_yticks(range(grid.shape[0]), grid.index.astype(str))
        ax.set_xlabel(b)
        ax.set_ylabel(a)
        skipped = every[every["status"] != OK].groupby([a, b])["error"].first()
        for (value_a, value_b), error in skipped.items():
            if np.isnan(grid.loc[value_a, value_b]):
                i, j = grid.index.get_loc(value_a), grid.columns.get_loc(value_b)
                ax.text(j, i, "skipped:\n" + _skipped_reason(str(error)), ha="center",
                        va="center", fontsize=6, color="0.3", wrap=True)  # fmt: skip
        i, j = np.unravel_index(np.nanargmin(grid.to_numpy(dtype=float)), grid.shape)
        ax.plot(j, i, marker="*", ms=12, color="white", markeredgecolor="black",
                gid=f"{variant}:best")  # fmt: skip
        others = " (the others at their best)" if len(params) > 2 else ""
        fig.colorbar(image, ax=ax, label=f"time ÷ best{others}")
    suptitle(
        fig,
        f"{table['experiment'].iloc[0]}: time against tunables, relative to each panel's "
        f"best ★, one scale ({device.get('name', 'unknown GPU')})",
    )
    return fig
