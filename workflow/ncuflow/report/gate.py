"""A comparison as a CI gate: whether B regressed against A, and a summary short enough for
a pull-request comment (``gate.md``). ``ncuflow compare A B --fail-on slower`` exits with
GATE_FAILED where it did.

What fails is chosen by the caller (FAIL_ON): ``slower``, a configuration whose time
verdict is SLOWER (the whole 95 % interval beyond the least effect) or that ran ok in A and
broke in B (a wrong result, a compile or launch error, a time-out: the worst slow-down of
all); ``ambiguous``, one whose repeats cannot tell; ``missing``, one that A measured ok and
B did not measure at all (a variant or size dropped from the study).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..vocab import (
    AMBIGUOUS,
    COMPILE_ERROR,
    LAUNCH_ERROR,
    OK,
    SLOWER,
    TIMEOUT,
    VERDICTS,
    WRONG_RESULT,
)

GATE_FAILED = 3  # the exit status of a failed gate (1: an error, 2: a usage error)
FAIL_ON = ("slower", "ambiguous", "missing")
# what B's status must be, of a configuration A measured ok, for it to count as broken: not
# a profile error (ncu's trouble, the timing is kept) nor a configuration skipped in B
BROKEN_STATUSES = (WRONG_RESULT, COMPILE_ERROR, LAUNCH_ERROR, TIMEOUT)
SHOWN = 10  # configurations listed per cause

if TYPE_CHECKING:  # the command line reads FAIL_ON without pandas
    import pandas as pd


def broken(left: pd.DataFrame, right: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """The configurations ``left`` (A) measured ok that ``right`` (B) ran and broke: their
    key, B's status and B's error."""
    ok_a = left.loc[left["status"] == OK, key]
    bad_b = right.loc[right["status"].isin(BROKEN_STATUSES), [*key, "status", "error"]]
    return ok_a.merge(bad_b, on=key)


def causes(rows: pd.DataFrame, only: dict[str, Any], fail_on: list[str]) -> dict[str, int]:
    """How many configurations fail the gate, per cause it was asked to fail on."""
    counts = {SLOWER: int((rows["verdict"] == SLOWER).sum()), "broken": len(only["broken"]),
              AMBIGUOUS: int((rows["verdict"] == AMBIGUOUS).sum()),
              "missing": len(only["missing"])}  # fmt: skip
    wanted = {"slower": (SLOWER, "broken"), "ambiguous": (AMBIGUOUS,), "missing": ("missing",)}
    return {cause: counts[cause] for name in fail_on for cause in wanted[name]
            if counts[cause]}  # fmt: skip


def summary(rows: pd.DataFrame, only: dict[str, Any], names: tuple[str, str],
            fail_on: list[str], least_effect: float, caveats: list[str]) -> str:  # fmt: skip
    """gate.md: the gate's outcome in its first line, the verdicts' counts, the configurations
    that fail it (the slowest first), and what a reader must know before trusting it."""
    failing = causes(rows, only, fail_on)
    told = ", ".join(f"{n} {cause}" for cause, n in failing.items())
    head = (f"FAIL: {told}" if failing else "PASS") if fail_on else "compared"
    counts = rows["verdict"].value_counts()
    lines = [f"## ncuflow compare: {head}", "",
             f"B = {names[1]} against A = {names[0]}: {len(rows)} configurations measured ok "
             f"on both; a change under {least_effect:.0%} is no change"
             + (f"; the gate fails on {', '.join(fail_on)}." if fail_on else "."), "",
             "| FASTER | SLOWER | SAME | HOST | AMBIGUOUS | broken in B | only in A |",
             "|---:|---:|---:|---:|---:|---:|---:|",
             "| " + " | ".join(str(counts.get(v, 0)) for v in VERDICTS)
             + f" | {len(only['broken'])} | {len(only['missing'])} |"]  # fmt: skip
    slower = rows[rows["verdict"] == SLOWER].sort_values("speedup")
    if len(slower):
        lines += ["", f"Slower in B ({len(slower)}, the slowest first):", "",
                  "| experiment | variant | configuration | A ms | B ms | speedup (95 % interval) "
                  "| moved most |", "|---|---|---|---:|---:|---|---|"]  # fmt: skip
        lines += [_slower_line(row) for row in slower.head(SHOWN).itertuples()]
        more = len(slower) - SHOWN
        lines += ["", f"…and {more} more in compare.csv."] if more > 0 else []
    if len(only["broken"]):
        lines += ["", f"Ran ok in A, broken in B ({len(only['broken'])}):", ""]
        lines += [f"- {r.experiment} / {r.variant} / {r.config_id}: {r.status} ({r.error})"
                  for r in only["broken"].head(SHOWN).itertuples()]  # fmt: skip
        more = len(only["broken"]) - SHOWN
        lines += [f"- …and {more} more: the tables say which."] if more > 0 else []
    if only["missing"]:
        lines += ["", f"Measured ok in A, not in B ({len(only['missing'])}), e.g. "
                  + ", ".join("/".join(k) for k in only["missing"][:3]) + "."]  # fmt: skip
    lines += ["", *caveats] if caveats else []
    lines += ["", "Every configuration, with the metrics that moved: `compare.md`, `compare.csv`."]
    return "\n".join(lines) + "\n"


def _slower_line(row: Any) -> str:
    moved = (f"{row.moved_most} ({row.moved_most_ratio:.3g}×)"
             if isinstance(row.moved_most, str) else "–")  # fmt: skip
    return (
        f"| {row.experiment} | {row.variant} | {row.config_id} | {row.time_ms_a:.4g} | "
        f"{row.time_ms_b:.4g} | {row.speedup:.3f} ({row.speedup_low:.3f}–"
        f"{row.speedup_high:.3f}) | {moved} |"
    )
