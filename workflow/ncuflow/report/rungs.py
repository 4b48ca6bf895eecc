"""What changed between rungs: for each problem size, each rung of the family's ladder
(``order``) against the next, at their fastest configurations: the speedup, the metrics
that moved most, the findings that appeared or went away, and the bound's change; as a
table and as a paragraph per size (the "development flow" of the seed reports).

"Moved most" ranks a count (bytes per level, instructions, registers) by how many times it
grew or shrank, and a percentage (occupancy, utilization, a stall reason's share) by the
points it moved, 25 points standing for a factor of two.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import pandas as pd

from ..analyze.why import STALL_REASONS
from ..spec import Family
from ..vocab import EXPLAIN, OK, SOURCE, SWEEP
from .summary import bound_and_level

# (column, what it is, kind): kind "count" compares ratios, "pct" points.
MOVERS = (
    ("dram_bytes", "DRAM bytes", "count"),
    ("l2_bytes", "L2 bytes", "count"),
    ("l1_bytes", "L1 bytes", "count"),
    ("shared_bytes", "shared-memory bytes", "count"),
    ("instructions", "instructions", "count"),
    ("registers_per_thread", "registers per thread", "count"),
    ("achieved_occupancy_pct", "achieved occupancy", "pct"),
    ("sm_throughput_pct", "SM throughput", "pct"),
    ("memory_throughput_pct", "memory throughput", "pct"),
    ("issue_active_pct", "issue slots used", "pct"),
    *(
        (f"stall_{r}_pct", f"{r.replace('_', ' ').removesuffix(' stall')} stalls", "pct")
        for r in STALL_REASONS
    ),
)
POINTS_PER_DOUBLING = 25.0
RUNG_COLUMNS = ["size", "from", "to", "speedup", "moved", "findings_new", "findings_gone",
                "bound_from", "bound_to"]  # fmt: skip


def _score(before: float, after: float, kind: str) -> float:
    if not (math.isfinite(before) and math.isfinite(after)):
        return math.nan
    if kind == "pct":
        return abs(after - before) / POINTS_PER_DOUBLING
    if before <= 0 or after <= 0:
        return math.nan
    return abs(math.log2(after / before))


def _number(value: Any) -> float:
    return math.nan if value is None or pd.isna(value) else float(value)


def _shown(before: float, after: float, what: str, kind: str) -> str:
    if kind == "pct":
        return f"{what} {before:.0f} → {after:.0f} %"
    ratio = after / before
    return f"{what} {ratio:.3g}×" if ratio >= 1 else f"{what} ÷{1 / ratio:.3g}"


def moved(a: pd.Series, b: pd.Series, top: int = 3) -> list[str]:
    """The ``top`` metrics that moved most from row ``a`` to row ``b``, as text."""
    scored = []
    for column, what, kind in MOVERS:
        x, y = (_number(row.get(column)) for row in (a, b))
        score = _score(x, y, kind)
        if math.isfinite(score) and score > 0:
            scored.append((score, _shown(x, y, what, kind)))
    return [text for _, text in sorted(scored, key=lambda s: -s[0])[:top]]


def _mine(findings: pd.DataFrame, variant: str, config: str) -> pd.DataFrame:
    return findings[(findings["variant"] == variant) & (findings["config_id"] == config)]


def _titles(findings: pd.DataFrame, tier: str) -> set[str]:
    """The advice ncu gives a configuration in one tier (in its only profile where the
    other tier profiled it)."""
    advice = findings[findings["speedup_pct"].notna()]
    mine = advice[advice["tier"] == tier] if (findings["tier"] == tier).any() else advice
    return {t or r for t, r in zip(mine["title"], mine["rule"], strict=True)}


def _deepest(findings: pd.DataFrame) -> str:
    """The deepest tier a configuration's findings come from."""
    tiers = set(findings["tier"])
    return next((t for t in (SOURCE, EXPLAIN) if t in tiers), SWEEP)


def rung_changes(table: pd.DataFrame, family: Family, findings: pd.DataFrame) -> pd.DataFrame:
    """One row per size and pair of consecutive rungs that both measured ok."""
    dims = family.problem_columns
    ok = table[(table["status"] == OK) & table["time_ms"].notna()]
    rows: list[dict[str, Any]] = []
    for size, at_size in ok.groupby(dims, sort=False):
        values = size if isinstance(size, tuple) else (size,)
        label = ", ".join(f"{d} = {v}" for d, v in zip(dims, values, strict=True))
        best = at_size.loc[at_size.groupby("variant")["time_ms"].idxmin()].set_index("variant")
        # the family's own rungs; library baselines are the yardstick, not a rung
        rungs = [v for v in family.order if v in best.index and not family.variant(v).baseline]
        for a, b in itertools.pairwise(rungs):
            ra, rb = best.loc[a], best.loc[b]
            ours = [_mine(findings, v, r["config_id"]) for v, r in ((a, ra), (b, rb))]
            # the findings of the deeper tier (its sections include the sweep's) where both
            # rungs were profiled in it (each size's fastest is explained), else the sweep's
            tiers = {_deepest(f) for f in ours}
            shared = tiers.pop() if len(tiers) == 1 else SWEEP
            before, after = (_titles(f, shared) for f in ours)
            rows.append({
                "size": label, "from": a, "to": b,
                "speedup": float(ra["time_ms"]) / float(rb["time_ms"]),
                "moved": ", ".join(moved(ra, rb)),
                "findings_new": ", ".join(sorted(after - before)),
                "findings_gone": ", ".join(sorted(before - after)),
                "bound_from": bound_and_level(ra.get("bound"), ra.get("bound_level")),
                "bound_to": bound_and_level(rb.get("bound"), rb.get("bound_level")),
            })  # fmt: skip
    return pd.DataFrame(rows, columns=RUNG_COLUMNS)


def paragraph(changes: pd.DataFrame) -> str:
    """The development flow of one size, in sentences."""
    sentences = []
    for row in changes.to_dict("records"):
        text = f"{row['to']} runs {row['speedup']:.2f}× as fast as {row['from']}"
        if row["moved"]:
            text += f" ({row['moved']})"
        if row["bound_from"] != row["bound_to"]:
            text += f"; the bound moves from {row['bound_from']} to {row['bound_to']}"
        else:
            text += f"; still {row['bound_to']}"
        if row["findings_gone"]:
            text += f"; ncu no longer reports {row['findings_gone']}"
        if row["findings_new"]:
            text += f"; it now reports {row['findings_new']}"
        sentences.append(text + ".")
    return " ".join(sentences)


def markdown(changes: pd.DataFrame) -> str:
    """The section of summary.md headed "What changed between rungs"."""
    lines = ["## What changed between rungs", ""]
    if changes.empty:
        return "\n".join([*lines, "No two consecutive rungs measured ok at one size.", ""])
    for size, rows in changes.groupby("size", sort=False):
        lines += [f"### {size}", "", paragraph(rows), "",
                  "| from → to | speedup | moved most | findings gone | findings new | bound |",
                  "|---|---:|---|---|---|---|"]  # fmt: skip
        for row in rows.to_dict("records"):
            bound = row["bound_to"] if row["bound_from"] == row["bound_to"] else (
                f"{row['bound_from']} → {row['bound_to']}")  # fmt: skip
            cells = [f"{row['from']} → {row['to']}", f"{row['speedup']:.2f}",
                     row["moved"] or "–", row["findings_gone"] or "–",
                     row["findings_new"] or "–", bound]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)
