"""The report's tables: pages that show a table in place, sortable and filterable."""

import math
import re

import pandas as pd

from ncuflow.report.tables import html_table


def test_a_table_page_holds_every_row_escaped_and_numbers_sortable() -> None:
    frame = pd.DataFrame(
        {"variant": ["naive", "<b>x</b>", None], "time_ms": [12.345678, 0.5, math.nan],
         "repeats": [20, 3, 7]}
    )  # fmt: skip
    page = html_table(frame, "matmul: best", "A note.")
    assert page.startswith("<!DOCTYPE html>") and "<script>" in page and 'id="filter"' in page
    assert "src=" not in page and "href=" not in page  # self-contained: nothing fetched
    assert page.count("<tr>") == 1 + 3 and "3 rows" in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page
    assert '<td class="n" data-v="12.345678">12.35</td>' in page  # shown short, sorted exact
    assert '<td class="n" data-v="20.0">20</td>' in page
    first = re.search(r"<tbody>\n<tr>(.*?)</tr>", page).group(1)
    assert first.count("<td") == 3 and "<td></td>" not in first
    assert page.count("<td></td>") == 2  # a missing name and a missing time: blank


def test_long_text_stays_on_one_line_and_whole_on_hover() -> None:
    message = "The memory access pattern for global loads might not be optimal. " * 3
    page = html_table(pd.DataFrame({"message": [message]}), "findings")
    cell = re.search(r'<td class="long" title="([^"]*)">', page)
    assert cell and cell.group(1) == message
