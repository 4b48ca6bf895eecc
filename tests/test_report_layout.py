"""How the report lays its tables out, on the CPU from a committed capture: the columns a
reader comes for first, no empty column shown, configurations that read apart, and the
start page's links to every table and figure (docs/report.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pytest

from conftest import CAPTURES, ROOT
from ncuflow.report.rungs import rung_changes
from ncuflow.report.summary import markdown, summarize
from ncuflow.report.tables import (
    LONG,
    empty_columns,
    findings_view,
    html_table,
    rungs_view,
    summary_view,
)
from ncuflow.spec import load_family

MATMUL = load_family(ROOT / "kernels", "matmul")
CONV = load_family(ROOT / "kernels", "conv")
SIZE = ["M", "N", "K"]


def _captured(experiment: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(table, findings) of an experiment of the h100-sxm capture, its findings gathered
    from its variants as the collect stage gathers them."""
    folder = CAPTURES / "h100-sxm" / experiment
    findings = [pd.read_parquet(p).assign(variant=p.parent.name)
                for p in sorted(folder.glob("*/findings.parquet"))]  # fmt: skip
    return pd.read_parquet(folder / "table.parquet"), pd.concat(findings, ignore_index=True)


@pytest.fixture(scope="module")
def ladder() -> tuple[pd.DataFrame, pd.DataFrame]:
    return _captured("matmul_ladder")


def _headings(page: str) -> list[str]:
    return re.findall(r"<th>(.*?)</th>", page)


def test_the_key_columns_come_first_in_every_table(
    ladder: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    table, findings = ladder
    summary, _ = summary_view(summarize(table, MATMUL), MATMUL.problem_columns)
    first = ["variant", *SIZE, "time (ms)", "TFLOP/s", "% of library", "bound (level)",
             "speedup over naive", "parameters"]  # fmt: skip
    assert list(summary.columns[: len(first)]) == first
    assert _headings(html_table(summary, "t"))[: len(first)] == first  # the page keeps them
    assert (
        summary.loc[summary["variant"] == "warptile", "bound (level)"]
        .str.fullmatch(r"\w+ \(.+\)")
        .all()
    )  # bound and its level in one column
    changes = rungs_view(rung_changes(table, MATMUL, findings))
    assert list(changes.columns[:4]) == ["step", "size", "speedup", "bound"]
    assert changes["step"].iloc[0] == "naive → coalesced_a"
    shown, _ = findings_view(findings, table, MATMUL)
    assert list(shown.columns[:6]) == ["variant", *SIZE, "configuration", "est. speedup (%)"]
    assert shown.columns[-1] == "config_id"  # the whole id, last
    # ncu's order kept: the largest estimate first, none last
    estimates = shown["est. speedup (%)"].dropna()
    assert estimates.is_monotonic_decreasing and estimates.iloc[0] > 50


def test_no_empty_column_is_shown_and_the_data_keep_every_one(
    ladder: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    """A study without the family's first rung (naive): no "speedup over naive" column of
    dashes in the page or in summary.md, while the CSV's columns stay."""
    table, findings = ladder
    without = table[table["variant"] != "naive"]
    summary = summarize(without, MATMUL)
    assert "speedup" in summary.columns and summary["speedup"].isna().all()
    shown, _ = summary_view(summary, MATMUL.problem_columns)
    assert not any(c.startswith("speedup") for c in shown.columns)
    assert empty_columns(shown) == []
    assert "speedup over" not in markdown(summary, MATMUL, "ladder")
    assert "| speedup over naive |" in markdown(summarize(table, MATMUL), MATMUL, "ladder")
    # every page drops a column of nothing: missing, blank or a dash in every row
    frame = pd.DataFrame({"variant": ["a", "b"], "none": [None, float("nan")],
                          "blank": ["", " "], "dash": ["–", "-"],
                          "time_ms": [1.0, None]})  # fmt: skip
    assert _headings(html_table(frame, "t")) == ["variant", "time_ms"]
    assert empty_columns(frame.head(0)) == []  # a table without rows keeps its headings
    for view in (findings_view(findings, table, MATMUL)[0],
                 rungs_view(rung_changes(table, MATMUL, findings))):  # fmt: skip
        assert empty_columns(view) == []


@pytest.mark.parametrize("experiment", ["matmul_ladder", "conv", "classifier"])
def test_shown_configurations_are_distinct_where_the_rows_are(experiment: str) -> None:
    """Each configuration of the findings' page (a variant's config_id) reads apart from
    every other (variant, size and the parameters that differ), whole: never a long id cut
    short."""
    table, findings = _captured(experiment)
    family = load_family(ROOT / "kernels", str(table["family"].iloc[0]))
    shown, _ = findings_view(findings, table, family)
    keys = [c for c in ["variant", *family.problem_columns, "configuration"] if c in shown]
    ids = shown.groupby(keys, dropna=False)["config_id"].nunique()
    assert (ids == 1).all(), ids[ids > 1]
    # and one configuration reads the same in every row of it
    assert (shown.groupby(["variant", "config_id"])[keys].nunique(dropna=False) == 1).all(axis=None)
    if "configuration" in shown:
        assert shown["configuration"].str.len().max() <= LONG  # on one line, never cut


def test_a_configuration_is_named_by_what_differs_and_by_its_id_where_that_is_not_enough(
    ladder: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    table, findings = ladder
    shown, _ = findings_view(findings, table, MATMUL)
    warptile = set(shown.loc[shown["variant"] == "warptile", "configuration"])
    assert "BN=256, WM=64, TM=16, MIN_BLOCKS=1" in warptile  # BM, BK, WN, TN never vary
    assert set(shown.loc[shown["variant"] == "naive", "configuration"]) == {""}  # one
    # two ids that the size and the parameters do not tell apart: each shown whole
    twin = table[table["variant"] == "naive"].head(1)
    twins = pd.concat([twin, twin.assign(config_id=twin["config_id"] + "_seed=2")])
    rows = findings[findings["config_id"] == twin["config_id"].iloc[0]].head(1)
    both = pd.concat([rows, rows.assign(config_id=rows["config_id"] + "_seed=2")])
    named, _ = findings_view(both, twins, MATMUL)
    assert list(named["configuration"]) == list(both["config_id"])


def test_a_dimension_with_one_value_in_every_row_is_named_above_the_table() -> None:
    table, findings = _captured("conv")
    shown, same = summary_view(summarize(table, CONV), CONV.problem_columns)
    assert same == "Every row: Kx = 3, Ky = 3." and "Kx" not in shown and "Ky" not in shown
    assert list(shown.columns[:6]) == ["variant", "B", "Ni", "Nn", "Nx", "Ny"]
    assert findings_view(findings, table, CONV)[1] == same


def test_text_wraps_where_asked_and_stays_on_one_line_elsewhere() -> None:
    long = "BM=128, BN=256, BK=16, WM=64, WN=64, TM=16, TN=8, STAGES=3, MIN_BLOCKS=1"
    page = html_table(pd.DataFrame({"parameters": [long], "message": [long]}), "t",
                      wrap={"parameters": 24})  # fmt: skip
    assert f'<td class="wrap" style="max-width: 24em">{long}</td>' in page
    assert f'<td class="long" title="{long}">' in page


@dataclass
class _Result:
    """What Snakemake's report gives the workflow description of each result."""

    path: Path
    labels: dict[str, str]
    mime: str
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = self.path.name


def _registered() -> list[_Result]:
    """An experiment's results as the rules register them for the report: their reading
    order (#) and label, tables (summary.smk) shown in place, figures (plot.smk) as images."""
    results = []
    for rules, mime in (("summary.smk", "text/html"), ("plot.smk", "image/png")):
        text = (ROOT / "workflow" / "rules" / rules).read_text()
        assert "subcategory" not in text  # one list per experiment: one click from the start
        for number, result in re.findall(r'"#": "(\d+)",\s*"result": "([^"]+)"', text):
            result = result.replace("{figure}", "copy_share")  # a family's own figure
            stem = re.sub(r"\W+", "_", result.split(":")[0])
            path = Path(f"results/matmul_ladder/{stem}.{mime.split('/')[1]}")
            results.append(_Result(path, {"#": number, "result": result}, mime))
    return results


def test_the_start_page_links_every_table_and_figure_in_reading_order() -> None:
    """The report's description (workflow.rst), rendered as Snakemake renders it: a line
    per experiment, each result one click away: a table in place beside its experiment's
    list, a figure beside its caption."""
    from docutils.core import publish_parts
    from jinja2 import Environment
    from snakemake.report import Category

    results = _registered()
    numbers = [r.labels["#"] for r in results]
    assert len(set(numbers)) == len(numbers) >= 11  # a place each in the reading order
    device = _Result(Path("results/device.html"), {"table": "device facts"}, "text/html")
    categories = {Category("matmul_ladder"): {Category(None): results[::-1]},
                  Category("device and provenance"): {Category(None): [device]}}  # fmt: skip
    text = (ROOT / "workflow" / "report" / "workflow.rst").read_text()
    rst = (
        Environment(trim_blocks=True, lstrip_blocks=True)
        .from_string(text)
        .render(snakemake=None, categories=categories, files=[])
    )
    body = publish_parts(rst, writer="html")["html_body"]
    assert "system-message" not in body  # docutils took every line
    links = re.findall(r'<a class="reference external" href="([^"]+)">([^<]+)</a>', body)
    href = {name: target for target, name in links}
    ordered = sorted(results, key=lambda r: r.labels["#"])
    assert [name for _, name in links if name != "device facts"] == [
        r.labels["result"].split(":")[0] for r in ordered
    ]
    for result in ordered:
        target = href[result.labels["result"].split(":")[0]]
        assert f"results['{result.path}'].data_uri" in target
        if result.mime == "text/html":  # in place, beside its experiment's list
            assert "navbarMode:'subcategory'" in target and "content:'html'" in target
        else:  # beside its caption (Snakemake's result info)
            assert "navbarMode:'resultinfo'" in target and "content:'img'" in target
    assert "category:'device%20and%20provenance'" in href["device facts"]
