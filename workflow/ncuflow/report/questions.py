"""The section of summary.md headed "The report's questions": each question of the
experiment (study/questions.py) answered from the summary (each variant's best
configuration per problem) in one generated sentence, beside what the report found.

A speedup at one problem whose size is within the two times' 95 % intervals is called the
same within the timing noise rather than given as a factor.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from ..study.questions import Question
from .summary import written

HEADING = "## The report's questions"
# A question asked at more problems than this lists the first ones and counts the rest.
LISTED = 6


def _problem(row: pd.Series, columns: Sequence[str]) -> str:
    return ", ".join(f"{c} = {written(row[c])}" for c in columns)


def _at(summary: pd.DataFrame, question: Question) -> pd.DataFrame:
    """The summary's rows at the problems the question fixes (all where it fixes none)."""
    keep = pd.Series(True, index=summary.index)
    for column, value in question.at.items():
        keep &= summary[column].astype(float) == float(value)
    return summary[keep]


def _speedup(rows: pd.DataFrame, question: Question, columns: Sequence[str]) -> str:
    a, b = question.variants
    keys = list(columns)
    # at one problem (no column varies) the two variants' rows pair up as they are
    how = {"on": keys} if keys else {"how": "cross"}
    pair = rows[rows["variant"] == a].merge(rows[rows["variant"] == b], suffixes=("_a", "_b"),
                                            **how)  # fmt: skip
    if pair.empty:
        return f"not answered: {a} and {b} have no problem where both measured ok"
    ratio = pair["time_ms_b"].astype(float) / pair["time_ms_a"].astype(float)
    if len(pair) == 1:
        row = pair.iloc[0]
        noise = _ci(row, "_a") + _ci(row, "_b")
        where = f" at {_problem(row, keys)}" if keys else ""
        if abs(ratio.iloc[0] - 1) * 100 < noise:
            return (f"{a} and {b} take the same time within the timing noise{where} "
                    f"({ratio.iloc[0]:.3f}×, 95 % intervals ±{noise:.1f} % together)")  # fmt: skip
        return f"{_factor(a, b, ratio.iloc[0])}{where}"
    mean = math.exp(float(ratio.map(math.log).mean()))
    low, high = ratio.idxmin(), ratio.idxmax()
    return (f"{_factor(a, b, mean)} (geometric mean over {len(pair)} problems; "
            f"{ratio[low]:.2f}× at {_problem(pair.loc[low], keys)} to {ratio[high]:.2f}× at "
            f"{_problem(pair.loc[high], keys)})")  # fmt: skip


def _ci(row: pd.Series, suffix: str) -> float:
    value = row.get(f"time_ci95_pct{suffix}")
    return float(value) if value is not None and pd.notna(value) else 0.0


def _factor(a: str, b: str, ratio: float) -> str:
    if ratio >= 1:
        return f"{a} is {ratio:.2f}× as fast as {b}"
    return f"{a} takes {1 / ratio:.2f}× the time of {b}"


def _per_problem(rows: pd.DataFrame, columns: Sequence[str], say: object) -> str:
    """One clause per problem (``say``: row -> text), the first LISTED of them."""
    clauses = [f"{say(row)} at {_problem(row, columns)}" if columns else say(row)  # type: ignore[operator]
               for _, row in rows.head(LISTED).iterrows()]  # fmt: skip
    more = len(rows) - LISTED
    return "; ".join(clauses) + (f"; and {more} more problems in the table" if more > 0 else "")


def _best(row: pd.Series) -> str:
    return f"{row['parameters'] or 'its only configuration'} ({row['time_ms']:.4f} ms)"


def _bound(row: pd.Series) -> str:
    bound = row.get("bound")
    if not isinstance(bound, str) or not bound:
        return "not profiled"
    theirs = row.get("ncu_bottleneck")
    ncu = f"; ncu: {theirs}" if isinstance(theirs, str) and theirs else ""
    return f"{bound} ({row['bound_level']}{ncu})"


def _throughput(row: pd.Series) -> str:
    share = row.get("pct_of_library")
    library = (f", {share:.1f} % of {row['library']}"
               if share is not None and pd.notna(share) else "")  # fmt: skip
    return f"{row['throughput']:,.2f} {row['unit']}{library}"


def answer(summary: pd.DataFrame, question: Question, columns: Sequence[str]) -> str:
    """The question's answer from the summary (one row per problem and variant):
    ``columns``, the problem columns that vary (named where an answer is per problem)."""
    rows = _at(summary, question)
    if question.kind == "speedup":
        return _speedup(rows, question, columns)
    (variant,) = question.variants
    rows = rows[rows["variant"] == variant]
    if rows.empty:
        fixed = ", ".join(f"{c} = {written(v)}" for c, v in question.at.items())
        return f"not answered: no configuration of {variant} measured ok" + (
            f" at {fixed}" if fixed else ""
        )
    say = {"best": _best, "bound": _bound, "throughput": _throughput}[question.kind]
    return f"{variant}: {_per_problem(rows, columns, say)}"


def markdown(summary: pd.DataFrame, questions: Sequence[Question], problem: Sequence[str],
             device: str | None) -> str:  # fmt: skip
    """The section: a bullet per question, with the device the answer was measured on and
    what the report found."""
    if not questions:
        return ""
    varying = [c for c in problem if c in summary and summary[c].nunique() > 1]
    on = f"on the {device}" if device else "here"
    lines = [HEADING, "", f"Answered from this study's measurements {on}.", ""]
    for question in questions:
        found = f" ({question.report})" if question.report else ""
        lines.append(f"- **{question.ask}**: {answer(summary, question, varying)}{found}.")
    return "\n".join([*lines, ""])
