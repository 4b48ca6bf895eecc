"""A search's own figure and summary section: the best time found against evaluations, per
problem size; how much of the space was tried, and whether the best was still improving
when the budget ran out (rounds files: search.stage)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from ..vocab import SKIPPED
from .style import FIGSIZE, save, suptitle

STRATEGIES = {"random": "random sampling (Optuna's RandomSampler)",
              "tpe": "Optuna's TPE sampler (model-based)"}  # fmt: skip
SHOWN = ("ruled out", "roofline")  # skips a reader is told of (the others are the sampler's)


def _problems(table: pd.DataFrame, rounds: Sequence[dict]) -> list[dict]:
    """Per problem of the last round: its sizes, positions, skips over all rounds, and
    after each round the evaluations so far and the best time so far."""
    out = []
    for j, last in enumerate(rounds[-1]["problems"]):
        sizes = {**last["dims"], **last.get("scalars", {})}
        rows = table[(table[list(sizes)] == pd.Series(sizes)).all(axis=1)]
        rows = rows[rows["status"] != SKIPPED]
        skipped = {k: sum(r["problems"][j]["skipped"].get(k, 0) for r in rounds) for k in SHOWN}
        steps, best = [], math.inf
        for r in sorted(rows["search_round"].dropna().unique()):
            upto = rows[rows["search_round"] <= r]
            best = min(best, upto["time_ms"][upto["status"] == "ok"].min(skipna=True))
            steps.append((int(r), len(upto), best))
        out.append({"sizes": sizes, "space": last["space"], "rows": rows, "steps": steps,
                    "skipped": skipped})  # fmt: skip
    return out


def _label(sizes: dict[str, Any]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in sizes.items())


def search_progress(table: pd.DataFrame, rounds: Sequence[dict],
                    device: dict[str, Any], out: Path) -> list[Path]:  # fmt: skip
    """The best time found after each round against the evaluations so far, one panel per
    problem size."""
    problems = _problems(table, rounds)
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
        ax.set_title(f"{_label(problem['sizes'])}\n{len(problem['rows'])} of "
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


def search_markdown(table: pd.DataFrame, rounds: Sequence[dict]) -> str:
    """summary.md's section on a search: per problem, how much of the space it measured,
    the best it found and in which round, and whether the best was still improving."""
    settings = rounds[0]["search"]
    lines = [
        "## The search",
        "",
        f"{STRATEGIES.get(settings['strategy'], settings['strategy'])}, seed {settings['seed']}"
        f": {len(rounds)} rounds of up to {settings['batch']} configurations per size, a "
        f"budget of {settings['budget']} per size"
        + (f" and {settings['budget_s']:g} s in all" if settings.get("budget_s") else "")
        + (", each proposed while the one before was measured" if settings.get("overlap") else "")
        + f", pruning: {settings['prune']}. "
        "Proposals a restriction or a device limit rules out, or that the roofline bound "
        "shows cannot beat the best, are never measured.",
        "",
        "| size | measured | positions | ruled out | skipped by the roofline | best (ms) | "
        "found in round | last half's gain |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    verdicts = []
    for problem in _problems(table, rounds):
        steps = problem["steps"]
        if not steps or not math.isfinite(steps[-1][2]):
            lines.append(f"| {_label(problem['sizes'])} | {len(problem['rows'])} | "
                         f"{problem['space']} | | | – | | |")  # fmt: skip
            continue
        best = steps[-1][2]
        found = next(r for r, _, t in steps if t == best)
        half = next((t for _, n, t in steps if n >= steps[-1][1] / 2), best)
        gain = 100 * (half - best) / half
        lines.append(f"| {_label(problem['sizes'])} | {len(problem['rows'])} | "
                     f"{problem['space']} | {problem['skipped']['ruled out']} | "
                     f"{problem['skipped']['roofline']} | {best:.4g} | {found} of "
                     f"{len(steps) - 1} | {gain:.1f} % |")  # fmt: skip
        held, where = len(steps) - 1 - found, _label(problem["sizes"])
        if held == 0 or gain >= 2:
            how = "found in the last round" if held == 0 else f"{gain:.1f} % in the second half"
            verdicts.append(f"At {where} the best was still improving ({how}): a larger "
                            "budget may find a faster configuration.")  # fmt: skip
        else:
            verdicts.append(f"At {where} the best held for the last {held} round(s) and the "
                            f"second half gained {gain:.1f} %: likely close to the best of the "
                            "space, which only a brute force proves.")  # fmt: skip
    timed_out = [r["round"] for r in rounds if settings.get("budget_s") is not None
                 and r.get("spent_s", 0) >= settings["budget_s"]]  # fmt: skip
    if timed_out:
        verdicts.append(f"The time budget ran out before round {timed_out[0]}: the rounds "
                        "from there proposed nothing.")  # fmt: skip
    return "\n".join([*lines, "", *verdicts, ""])
