"""A search's section of summary.md (rule summary): per problem size, how much of the space
it tried, the best it found and whether the best was still improving when the budget ran
out (rounds files: search.stage); what the progress figure (report.search_report) draws."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..vocab import SKIPPED

STRATEGIES = {"random": "random sampling (Optuna's RandomSampler)",
              "tpe": "Optuna's TPE sampler (model-based)"}  # fmt: skip
SHOWN = ("ruled out", "roofline")  # skips a reader is told of (the others are the sampler's)


def search_problems(table: pd.DataFrame, rounds: Sequence[dict]) -> list[dict]:
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


def problem_label(sizes: dict[str, Any]) -> str:
    """A problem's sizes in words: ``M = 1024, N = 1024``."""
    return ", ".join(f"{k} = {v}" for k, v in sizes.items())


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
    for problem in search_problems(table, rounds):
        steps = problem["steps"]
        if not steps or not math.isfinite(steps[-1][2]):
            lines.append(f"| {problem_label(problem['sizes'])} | {len(problem['rows'])} | "
                         f"{problem['space']} | | | – | | |")  # fmt: skip
            continue
        best = steps[-1][2]
        found = next(r for r, _, t in steps if t == best)
        half = next((t for _, n, t in steps if n >= steps[-1][1] / 2), best)
        gain = 100 * (half - best) / half
        lines.append(f"| {problem_label(problem['sizes'])} | {len(problem['rows'])} | "
                     f"{problem['space']} | {problem['skipped']['ruled out']} | "
                     f"{problem['skipped']['roofline']} | {best:.4g} | {found} of "
                     f"{len(steps) - 1} | {gain:.1f} % |")  # fmt: skip
        held, where = len(steps) - 1 - found, problem_label(problem["sizes"])
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
