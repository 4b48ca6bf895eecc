"""A search's own figure (rule search_figure): the best time found against evaluations, per
problem size. Its section of summary.md: report.search_summary."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from .search_summary import problem_label, search_problems
from .style import FIGSIZE, save, suptitle


def search_progress(table: pd.DataFrame, rounds: Sequence[dict],
                    device: dict[str, Any], out: Path) -> list[Path]:  # fmt: skip
    """The best time found after each round against the evaluations so far, one panel per
    problem size."""
    problems = search_problems(table, rounds)
    strategy = rounds[0]["search"]["strategy"]
    columns = min(3, len(problems))
    lines = math.ceil(len(problems) / columns)
    fig, axes = plt.subplots(lines, columns, squeeze=False,
                             figsize=(FIGSIZE[0], 0.5 + 3.0 * lines))  # fmt: skip
    for ax, problem in zip(axes.flat, problems, strict=False):
        steps = problem["steps"]
        if steps:
            x = [0] + [s[1] for s in steps]
            y = [steps[0][2]] + [s[2] for s in steps]
            ax.step(x, y, where="post", color="C0", label=strategy)
            ax.plot(x[1:], y[1:], "o", color="C0", ms=3)
            ax.axhline(steps[-1][2], color="0.5", ls=":", lw=1)
        ax.set_title(f"{problem_label(problem['sizes'])}\n{len(problem['rows'])} of "
                     f"{problem['space']} positions measured", fontsize=9)  # fmt: skip
        ax.set_xlabel("configurations measured")
        ax.set_ylabel("best time so far (ms)")
        ax.set_xlim(left=0)
        ax.grid(True, alpha=0.2)
    for ax in list(axes.flat)[len(problems) :]:
        ax.axis("off")
    suptitle(fig, f"{table['experiment'].iloc[0]}: search progress, {strategy} "
                  f"({device.get('name', 'unknown GPU')})")  # fmt: skip
    return save(fig, device, out)
