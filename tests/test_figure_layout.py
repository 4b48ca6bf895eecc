"""Every figure of the default study, checked as the report shows it: the PNG, saved at the
figure's own size and dpi (style.SAVE: no tight bounding box), which ``snakemake --report``
scales down to its page (under 1,000 px wide in a 1400 px window, headless Chromium).
Scaling keeps what overlaps overlapping and what is cut off cut off, so the check runs on
the figure as saved (style.finish): no text may leave the figure, no two texts may cover
each other (titles, axis and tick labels, legend entries, annotations), and no label inside
the axes may lie under a data point."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import combinations
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from conftest import CAPTURE, ROOT, replayed
from ncuflow.files import read_config, read_json
from ncuflow.report.figures import FIGURES, figure
from ncuflow.report.style import SAVE, Styles, drawn_points, finish, points_under
from ncuflow.runners.replay import ReplayRunner
from ncuflow.spec import load_family
from ncuflow.study.config import load_study

# Texts that touch by less than this (pixels at the saved size) do not overlap.
TOUCH_PX = 1.0


def _legend_texts(legend: Legend) -> list[Text]:
    return [legend.get_title(), *legend.get_texts()]


def _drawn_ticklabels(axis: Axis) -> Iterator[Text]:
    """The tick labels of ``axis`` that are drawn: those whose tick lies within the view."""
    ax = axis.axes
    vertical = axis is ax.yaxis
    place = ax.get_yaxis_transform() if vertical else ax.get_xaxis_transform()
    lo, hi = (ax.bbox.y0, ax.bbox.y1) if vertical else (ax.bbox.x0, ax.bbox.x1)
    for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
        at = place.transform((0, tick.get_loc()) if vertical else (tick.get_loc(), 0))
        if lo - 0.5 <= at[1 if vertical else 0] <= hi + 0.5:
            yield from (label for label in (tick.label1, tick.label2) if label.get_visible())


def drawn_texts(fig: Figure) -> list[tuple[str, Text]]:
    """Every text the figure draws, each with where it is (for a message): the figure's
    own (suptitle, footer), its legends', and each visible axes' titles, texts,
    annotations, legends, axis labels and the tick labels within its view."""
    found = [("figure", t) for t in fig.texts]
    found += [("figure legend", t) for legend in fig.legends for t in _legend_texts(legend)]
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        where = f"axes {i} ({ax.get_title() or ax.get_label()})"
        for child in ax.get_children():
            if isinstance(child, Legend):
                found += [(f"{where} legend", t) for t in _legend_texts(child)]
            elif isinstance(child, Text):
                found.append((where, child))
        if not ax.axison:
            continue
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_visible():
                found += [(where, axis.label), (where, axis.get_offset_text())]
                found += [(where, t) for t in _drawn_ticklabels(axis)]
    return [(w, t) for w, t in found if t.get_visible() and t.get_text().strip()]


def _overlap(a: Bbox, b: Bbox) -> bool:
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > TOUCH_PX
            and min(a.y1, b.y1) - max(a.y0, b.y0) > TOUCH_PX)  # fmt: skip


def layout_problems(fig: Figure, save: dict[str, Any] | None = None) -> list[str]:
    """What a reader of the saved figure (savefig's arguments ``save``, style.SAVE by
    default) cannot read: a text cut off at the figure's edge (with bbox_inches="tight",
    the edge is the tight box's), two texts over each other, and a label in the axes (not
    on a backing of its own, which is drawn over the points on purpose) under a point."""
    save = SAVE if save is None else save
    fig.set_dpi(save.get("dpi", fig.dpi))  # as savefig draws it
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    edge = fig.bbox
    if save.get("bbox_inches") == "tight":
        edge = fig.get_tightbbox(renderer).padded(save.get("pad_inches", 0.1))
        edge = edge.transformed(fig.dpi_scale_trans)
    texts = [(where, t, t.get_window_extent(renderer)) for where, t in drawn_texts(fig)]
    problems = []
    for where, text, box in texts:
        if (box.x0 < edge.x0 - 0.5 or box.y0 < edge.y0 - 0.5
                or box.x1 > edge.x1 + 0.5 or box.y1 > edge.y1 + 0.5):  # fmt: skip
            problems.append(f"cut off: {where}: {text.get_text()!r}")
    for (w1, t1, b1), (w2, t2, b2) in combinations(texts, 2):
        if _overlap(b1, b2):
            problems.append(f"overlap: {w1}: {t1.get_text()!r} and {w2}: {t2.get_text()!r}")
    for ax in fig.axes:
        points = drawn_points(ax)
        for text in ax.texts:
            if text.get_visible() and text.get_text().strip() and text.get_bbox_patch() is None:
                hit = points_under(text.get_window_extent(renderer), points, TOUCH_PX)
                if len(hit):
                    problems.append(f"under {len(hit)} point(s): {text.get_text()!r}")
    return problems


def test_the_check_finds_what_it_is_for() -> None:
    """The check itself: a title wider than its figure, two labels on one spot and a label
    under a point are found; the same figure laid out apart passes."""
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.set_title("a title far too long for a figure three inches wide")
    ax.scatter([0.5], [0.5], s=200)
    ax.text(0.5, 0.5, "under", ha="center")
    ax.text(0.2, 0.9, "here", transform=ax.transAxes)
    ax.text(0.2, 0.9, "there", transform=ax.transAxes)
    problems = layout_problems(fig, {"dpi": 100})
    plt.close(fig)
    assert any(p.startswith("cut off") and "far too long" in p for p in problems), problems
    assert any("'here' and" in p and "'there'" in p for p in problems), problems
    assert any(p.startswith("under 1 point") for p in problems), problems
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.set_title("short")
    ax.scatter([0.5], [0.5], s=200)
    ax.text(0.1, 0.1, "apart", transform=ax.transAxes)
    fig.tight_layout()
    assert layout_problems(fig, {"dpi": 100}) == []
    plt.close(fig)


@pytest.fixture(scope="module")
def device(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The device facts a replay of the default capture writes (its measured ceilings
    included: the roofline's labels are as long as in the report)."""
    path = tmp_path_factory.mktemp("device") / "device.json"
    ReplayRunner(CAPTURE).device_facts(path, None)
    return read_json(path)


STUDY = load_study(read_config(ROOT / "config.yaml"), ROOT)


@pytest.mark.parametrize("experiment", list(STUDY.experiments))
@pytest.mark.parametrize("name", list(FIGURES))
def test_every_figure_of_the_default_study_reads_as_saved(
    experiment: str, name: str, device: dict[str, Any]
) -> None:
    table: pd.DataFrame = replayed(CAPTURE.name)[experiment]
    family = load_family(ROOT / "kernels", str(table["family"].iloc[0]))
    styles = Styles(table, family, joined=not STUDY.separate_sizes(experiment))
    fig = finish(figure(table, family, styles, device, name), device)
    problems = layout_problems(fig)
    plt.close(fig)
    assert not problems, "\n".join(problems)


def test_the_default_study_is_the_replayed_capture() -> None:
    """What the figures above are drawn from: the capture config.yaml replays."""
    assert Path(read_config(ROOT / "config.yaml")["capture"]) == Path(CAPTURE.name)
