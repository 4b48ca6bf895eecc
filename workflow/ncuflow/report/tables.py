"""Tables for the HTML report: each one a self-contained page (no file or network fetched)
that the report shows in place, sortable by any column and filtered as one types.

Snakemake's report shows an HTML result inside the page and offers any other table as a
download; the CSV beside each table stays for programs.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

import pandas as pd

from ..analyze.why import ranked
from ..files import atomic_write

STYLE = """
body { font: 13px system-ui, sans-serif; margin: 12px; color: #222; }
h1 { font-size: 16px; margin: 0 0 4px; } p { margin: 0 0 8px; color: #555; }
input { font: inherit; padding: 3px 6px; width: 24em; margin-bottom: 8px; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ddd; padding: 3px 6px; vertical-align: top; white-space: nowrap; }
th { background: #f3f3f3; cursor: pointer; position: sticky; top: 0; white-space: nowrap; }
th.up::after { content: " \\25B2"; } th.down::after { content: " \\25BC"; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.long { max-width: 32em; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
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


def _cell(value: object) -> str:
    """A table cell: numbers right-aligned to four significant digits (their exact value
    kept for sorting), missing values blank, text escaped (a long one on one line)."""
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
    if len(text) > LONG:  # one line, the whole text on hover: rows stay one line high
        return f'<td class="long" title="{text}">{text}</td>'
    return f"<td>{text}</td>"


def html_table(frame: pd.DataFrame, title: str, note: str = "") -> str:
    """``frame`` as a page: its title, a line saying what it is, a filter box, the table."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "\n".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>"
                     for row in frame.itertuples(index=False, name=None))  # fmt: skip
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}'
        f"</title><style>{STYLE}</style></head><body>\n<h1>{html.escape(title)}</h1>\n"
        f"<p>{html.escape(note)} Click a heading to sort; type to filter. "
        f'<span id="count">{len(frame)} rows</span></p>\n'
        '<input id="filter" placeholder="filter: words every row shown holds">\n'
        f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>\n"
        f"<script>{SCRIPT}</script></body></html>\n"
    )


def write_html_table(frame: pd.DataFrame, path: Path, title: str, note: str = "") -> None:
    atomic_write(path, html_table(frame, title, note))


FINDING_SHOWN = ["variant", "config_id", "kernel_name", "tier", "rule", "title", "speedup_pct",
                 "message"]  # fmt: skip


def findings_page(findings: pd.DataFrame, path: Path, experiment: str) -> None:
    """Every rule result of the experiment's kernels, as Nsight Compute gave it, in the
    order ncu ranks its advice (the largest estimated speedups first: analyze.why.ranked)."""
    if "speedup_pct" in findings:
        findings = ranked(findings)
    shown = findings[[c for c in FINDING_SHOWN if c in findings.columns]]
    write_html_table(shown, path, f"{experiment}: Nsight Compute's findings",
                     "Every rule result of every profiled kernel; speedup_pct is ncu's own "
                     "estimate.")  # fmt: skip
