"""Tables for the HTML report: each one a self-contained page (no file or network fetched)
that the report shows in place, sortable by any column and filtered as one types.

Snakemake's report shows an HTML result inside the page and offers any other table as a
download; the CSV beside each table stays for programs, with every column.

A page opens on its point (``summary_view``, ``rungs_view``, ``findings_view``): the
columns a reader comes for first (variant, size, time, throughput, % of library, bound and
level), headed in words, the rest after them; a column with nothing in it (every value
missing, blank or a dash) left out; a dimension with one value in every row named above
the table instead of repeated in each; and a configuration named by the parameters that
tell it from the other configurations of its variant in the table, never by a long id cut
short.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from ..analyze.why import ranked
from ..files import atomic_write
from ..spec import Family
from .summary import bound_and_level, written

STYLE = """
body { font: 13px system-ui, sans-serif; margin: 12px; color: #222; }
h1 { font-size: 16px; margin: 0 0 4px; } p { margin: 0 0 8px; color: #555; max-width: 75em; }
input { font: inherit; padding: 3px 6px; width: 24em; margin-bottom: 8px; }
table { border-collapse: separate; border-spacing: 0; width: max-content; }
th, td { border: 1px solid #ddd; border-width: 0 1px 1px 0; padding: 3px 6px;
  vertical-align: top; white-space: nowrap; background: #fff; }
th { background: #f3f3f3; cursor: pointer; position: sticky; top: 0; z-index: 1;
  white-space: normal; max-width: 9em; vertical-align: bottom; }
tr > :first-child { position: sticky; left: 0; border-left-width: 1px; }
thead th { border-top-width: 1px; } thead th:first-child { z-index: 2; }
th.up::after { content: " \\25B2"; } th.down::after { content: " \\25BC"; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
td.long { max-width: 32em; overflow: hidden; text-overflow: ellipsis; }
td.wrap { white-space: normal; }
tr:nth-child(even) td { background: #fafafa; }
"""
LONG = 60  # characters of text shown on one line, cut short, the rest on hover
# Sorting keeps numbers as numbers (a cell's data-v) and blanks last; the filter keeps the
# rows whose text holds every word typed.
SCRIPT = """
const table = document.querySelector("table"), body = table.tBodies[0];
const rows = Array.from(body.rows), count = document.getElementById("count");
function key(row, i) { const c = row.cells[i]; return c.dataset.v !== undefined ?
  parseFloat(c.dataset.v) : c.textContent.toLowerCase(); }
table.tHead.rows[0].querySelectorAll("th").forEach((th, i) => th.onclick = () => {
  const up = !th.classList.contains("up");
  table.tHead.querySelectorAll("th").forEach(h => h.classList.remove("up", "down"));
  th.classList.add(up ? "up" : "down");
  rows.sort((a, b) => { const x = key(a, i), y = key(b, i);
    if (x === "" || Number.isNaN(x)) return 1; if (y === "" || Number.isNaN(y)) return -1;
    return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1); });
  rows.forEach(r => body.appendChild(r)); });
document.getElementById("filter").oninput = e => {
  const words = e.target.value.toLowerCase().split(/\\s+/).filter(Boolean); let shown = 0;
  rows.forEach(r => { const ok = words.every(w => r.textContent.toLowerCase().includes(w));
    r.style.display = ok ? "" : "none"; shown += ok; });
  count.textContent = shown + " of " + rows.length + " rows"; };
"""
DASHES = frozenset({"", "-", "–", "—"})  # what a cell with nothing in it may hold


def _cell(value: object, wrap: float | None = None) -> str:
    """A table cell: numbers right-aligned to four significant digits (their exact value
    kept for sorting), missing values blank, text escaped (a long one on one line, or
    wrapped at ``wrap`` em in a column that wraps)."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return "<td></td>"
    if isinstance(value, bool):
        return f"<td>{value}</td>"
    if isinstance(value, int | float) and math.isfinite(float(value)):
        number = float(value)
        whole = number.is_integer() and abs(number) < 1e15
        shown = str(int(number)) if whole else f"{number:.4g}"
        return f'<td class="n" data-v="{number!r}">{shown}</td>'
    text = html.escape(str(value))
    if wrap:
        return f'<td class="wrap" style="max-width: {wrap:g}em">{text}</td>'
    if len(text) > LONG:  # one line, the whole text on hover: rows stay one line high
        return f'<td class="long" title="{text}">{text}</td>'
    return f"<td>{text}</td>"


def _blank(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip() in DASHES
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # a list or an array in a cell: something
        return False


def empty_columns(frame: pd.DataFrame) -> list[str]:
    """The columns of ``frame`` with nothing in them: every value missing, blank or a dash
    (none of a frame without rows, whose headings are all it shows)."""
    if frame.empty:
        return []
    return [str(c) for i, c in enumerate(frame.columns)
            if all(_blank(v) for v in frame.iloc[:, i])]  # fmt: skip


def without_empty(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without its empty columns (``empty_columns``)."""
    empty = set(empty_columns(frame))
    return frame[[c for c in frame.columns if str(c) not in empty]] if empty else frame


def html_table(frame: pd.DataFrame, title: str, note: str = "",
               wrap: Mapping[str, float] | None = None) -> str:  # fmt: skip
    """``frame`` as a page: its title, a line saying what it is, a filter box, the table;
    its empty columns left out, the text of each ``wrap`` column wrapped at its width (em),
    every other on one line."""
    frame = without_empty(frame)
    wrapped = [(wrap or {}).get(str(c)) for c in frame.columns]
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "\n".join("<tr>" + "".join(_cell(v, w) for v, w in zip(row, wrapped, strict=True))
                     + "</tr>" for row in frame.itertuples(index=False, name=None))  # fmt: skip
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}'
        f"</title><style>{STYLE}</style></head><body>\n<h1>{html.escape(title)}</h1>\n"
        f"<p>{html.escape(note)} Click a heading to sort; type to filter. "
        f'<span id="count">{len(frame)} rows</span></p>\n'
        '<input id="filter" placeholder="filter: words every row shown holds">\n'
        f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>\n"
        f"<script>{SCRIPT}</script></body></html>\n"
    )


def write_html_table(frame: pd.DataFrame, path: Path, title: str, note: str = "",
                     wrap: Mapping[str, float] | None = None) -> None:  # fmt: skip
    atomic_write(path, html_table(frame, title, note, wrap))


def _one(column: pd.Series | None) -> object | None:
    """The value every row of ``column`` holds, or None where they differ (or none has
    one)."""
    if column is None:
        return None
    values = column.dropna().unique()
    return values[0] if len(values) == 1 else None


def one_value(frame: pd.DataFrame, columns: Sequence[str]) -> tuple[pd.DataFrame, str]:
    """``frame`` without those of ``columns`` that hold one value in every row (where it
    has two rows or more), and a sentence naming them with their value."""
    same = [c for c in columns
            if c in frame and len(frame) > 1 and frame[c].nunique(dropna=False) == 1]  # fmt: skip
    if not same:
        return frame, ""
    named = ", ".join(f"{c} = {written(frame[c].iloc[0])}" for c in same)
    return frame.drop(columns=same), f"Every row: {named}."


def _heading(frame: pd.DataFrame, sources: Sequence[tuple[str, str]]) -> pd.DataFrame:
    """The columns of ``frame`` that ``sources`` names, in its order, each (column,
    heading) headed in words; a column ``frame`` lacks is left out."""
    present = [(c, h) for c, h in sources if c in frame.columns]
    shown = frame[[c for c, _ in present]].copy()
    shown.columns = [h for _, h in present]
    return shown


def summary_view(summary: pd.DataFrame, dims: Sequence[str]) -> tuple[pd.DataFrame, str]:
    """The summary (``report.summary.summarize``) as the report shows it, and the sentence
    naming what every row shares: variant, size, time, throughput, % of library and bound
    (level) first, then the speedup over the first rung and the parameters, then the rest;
    headings in words (the throughput's its unit, TFLOP/s or GB/s, as summary.md's; the
    speedup's names the rung); a dimension with one value in every row, and an empty
    column, left out."""
    frame = summary.copy()
    frame["bound_shown"] = [bound_and_level(b, lv, "", held) for b, lv, held in
                            zip(frame["bound"], frame["bound_level"], frame["power_limited"],
                                strict=True)]  # fmt: skip
    unit, over = _one(frame.get("unit")), _one(frame.get("speedup_over"))
    sources = [
        ("variant", "variant"), *((d, d) for d in dims), ("time_ms", "time (ms)"),
        ("throughput", str(unit) if unit else "throughput"),
        *([] if unit else [("unit", "unit")]), ("pct_of_library", "% of library"),
        ("bound_shown", "bound (level)"),
        ("speedup", f"speedup over {over}" if over else "speedup"),
        *([] if over else [("speedup_over", "speedup over")]), ("parameters", "parameters"),
        ("dtype", "dtype"), ("library", "library"), ("time_ms_iqr", "IQR (ms)"),
        ("time_ci95_pct", "95 % CI (± %)"), ("ai_model", "FLOP/B model"),
        ("ai_dram", "FLOP/B DRAM"), ("ncu_bottleneck", "ncu's bottleneck"),
        ("top_finding", "ncu's top finding"), ("top_finding_speedup_pct", "its est. speedup (%)"),
        ("top_stall", "top stall"), ("configurations", "configurations"), ("failed", "failed"),
    ]  # fmt: skip
    shown, note = one_value(_heading(frame, sources), dims)
    return without_empty(shown), note


def rungs_view(changes: pd.DataFrame) -> pd.DataFrame:
    """What changed between rungs (``report.rungs.rung_changes``) as the report shows it:
    the step (from → to), the size, the speedup and the bound (before → after where it
    moved) first, then the metrics that moved most and the findings gone and new."""
    frame = changes.copy()
    frame["step"] = [f"{a} → {b}" for a, b in zip(frame["from"], frame["to"], strict=True)]
    frame["bound_shown"] = [b if a == b else f"{a} → {b}" for a, b in
                            zip(frame["bound_from"], frame["bound_to"], strict=True)]  # fmt: skip
    sources = [("step", "step"), ("size", "size"), ("speedup", "speedup"),
               ("bound_shown", "bound"), ("moved", "moved most"),
               ("findings_gone", "findings gone"), ("findings_new", "findings new")]  # fmt: skip
    return without_empty(_heading(frame, sources))


# The columns of text a page wraps, and at what width (em): the rest stay on one line.
RUNG_WRAP = {"bound": 14, "moved most": 22, "findings gone": 20, "findings new": 20}
SUMMARY_WRAP = {"bound (level)": 14, "parameters": 24}


def differing(configs: pd.DataFrame, params: Mapping[str, Sequence[str]]) -> pd.Series:
    """Each configuration's parameters that differ between the configurations of its
    variant in ``configs`` (one row each, the parameters as columns; ``params``: each
    variant's parameter names), as "BN=256, TM=16"; blank where a variant has one."""
    labels = pd.Series("", index=configs.index, dtype=object)
    for variant, rows in configs.groupby("variant", sort=False):
        names = [p for p in params.get(str(variant), ())
                 if p in rows and rows[p].nunique(dropna=False) > 1]  # fmt: skip
        labels[rows.index] = [", ".join(f"{p}={written(row[p])}" for p in names)
                              for _, row in rows.iterrows()]  # fmt: skip
    return labels


def _parameters_of(family: Family, variants: Iterable[str]) -> dict[str, list[str]]:
    """Each variant's parameter names (none for one the family no longer has)."""
    return {v: list(family.variant(v).params) if v in family.variant_files else []
            for v in variants}  # fmt: skip


def findings_view(findings: pd.DataFrame, table: pd.DataFrame,
                  family: Family) -> tuple[pd.DataFrame, str]:  # fmt: skip
    """Every finding (``findings.parquet``) as the report shows it, in the order ncu ranks
    its advice (the largest estimated speedups first: ``analyze.why.ranked``), and the
    sentence naming what every row shares: the variant, its size (each dimension that
    varies, from ``table``) and its configuration (the parameters that tell it from the
    variant's other configurations here, ``differing``) first, then ncu's estimate and
    the finding; the whole configuration id last."""
    if "speedup_pct" in findings:
        findings = ranked(findings)
    dims = [d for d in family.problem_columns if d in table.columns]
    variants = [str(v) for v in findings["variant"].unique()] if "variant" in findings else []
    params = _parameters_of(family, variants)
    names = sorted({p for ps in params.values() for p in ps if p in table.columns} - set(dims))
    keys = ["variant", "config_id"]
    configs = findings[keys].drop_duplicates() if set(keys) <= set(findings) else None
    if configs is None:
        return without_empty(findings), ""
    configs = configs.merge(table[[*keys, *dims, *names]].drop_duplicates(keys), on=keys,
                            how="left").reset_index(drop=True)  # fmt: skip
    configs["configuration"] = differing(configs, params)
    # where the size and those parameters do not tell two configurations apart (an id made
    # of more than them), the id itself
    ambiguous = configs.duplicated(["variant", *dims, "configuration"], keep=False)
    configs.loc[ambiguous, "configuration"] = configs.loc[ambiguous, "config_id"]
    rows = findings.merge(configs[[*keys, *dims, "configuration"]], on=keys, how="left")
    rule = rows.get("rule", pd.Series("", index=rows.index))
    rows["finding"] = [t if isinstance(t, str) and t else r for t, r in
                       zip(rows.get("title", rule), rule, strict=True)]  # fmt: skip
    sources = [("variant", "variant"), *((d, d) for d in dims),
               ("configuration", "configuration"), ("speedup_pct", "est. speedup (%)"),
               ("finding", "finding"), ("kernel_name", "kernel"), ("kernel_id", "kernel #"),
               ("tier", "tier"),
               ("message", "message"), ("rule", "rule"), ("config_id", "config_id")]  # fmt: skip
    shown, note = one_value(_heading(rows, sources), dims)
    return without_empty(shown), note


def findings_page(findings: pd.DataFrame, path: Path, experiment: str, table: pd.DataFrame,
                  family: Family) -> None:  # fmt: skip
    """Every rule result of the experiment's kernels, as Nsight Compute gave it
    (``findings_view``), as a page."""
    shown, same = findings_view(findings, table, family)
    write_html_table(shown, path, f"{experiment}: Nsight Compute's findings",
                     "Every rule result of every profiled kernel, the largest of ncu's own "
                     "estimated speedups first. configuration: the parameters that tell a "
                     "configuration from the other ones of its variant here (the whole id "
                     f"is the last column). {same}".strip())  # fmt: skip
