"""What each figure draws is what the table says, read back from the drawn figure (each
group of markers is named ``<variant>:<class>`` in it): the Speed of Light markers lie in
the regions of their own bound, and an occupancy point above its diagonal is always a
configuration of several kernels, drawn hollow."""

import re
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from conftest import ROOT, replayed
from ncuflow.analyze.bound import bound_class
from ncuflow.files import read_config
from ncuflow.report.figures import FIGURES, rule_regions
from ncuflow.report.style import Styles, profiled_rows
from ncuflow.report.summary import best_configs, merit_of
from ncuflow.report.sweep import sweep_problems
from ncuflow.spec import load_family
from ncuflow.study.config import load_study

DEVICE = {"name": "NVIDIA H100 80GB HBM3", "date": "2026-11-26", "replayed_from": "h100-sxm"}
# experiments whose figures are read back: the ladder, the layers, the verdicts study
TABLES = [("h100-sxm", "matmul_ladder"), ("h100-sxm", "conv"), ("h100-sxm", "classifier"),
          ("h100-sxm-verdicts", "histogram"), ("h100-sxm-verdicts", "write_and_l1"),
          ("h100-sxm-axpy", "axpy")]  # fmt: skip


def _drawn(capture: str, experiment: str, name: str) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The experiment's table and its figure ``name``'s marker groups: gid → offsets."""
    table = replayed(capture)[experiment]
    family = load_family(ROOT / "kernels", str(table["family"].iloc[0]))
    fig = FIGURES[name](table, family, Styles(table, family), DEVICE)
    groups = {c.get_gid(): np.asarray(c.get_offsets()) for ax in fig.axes
              for c in ax.collections if c.get_gid()}  # fmt: skip
    plt.close(fig)
    return table, groups


@pytest.mark.parametrize(("capture", "experiment"), TABLES)
def test_each_speed_of_light_marker_lies_in_the_region_of_its_bound(
    capture: str, experiment: str
) -> None:
    table, groups = _drawn(capture, experiment, "speed_of_light")
    rows = profiled_rows(table).dropna(subset=["bound_memory_pct", "bound_compute_pct"])
    assert sum(len(xy) for xy in groups.values()) == len(rows) > 0
    for gid, xy in groups.items():
        variant, bound = gid.split(":")[:2]
        assert all(bound_class(x, y) == bound for x, y in xy), gid
        drawn = sorted(map(tuple, xy))
        mine = rows[(rows["variant"] == variant) & (rows["bound"] == bound)]
        assert drawn == sorted(zip(mine["bound_memory_pct"], mine["bound_compute_pct"],
                                   strict=True))  # fmt: skip


def test_the_regions_are_the_bound_rule_itself() -> None:
    grid, classes = rule_regions(100.0, step=0.5)
    for memory, compute in ((10, 20), (59, 10), (61, 30), (20, 70), (90, 80), (80, 90)):
        row, column = int(compute / 0.5), int(memory / 0.5)
        assert classes[grid[row, column]] == bound_class(memory + 0.25, compute + 0.25)


@pytest.mark.parametrize(("capture", "experiment"), TABLES)
def test_an_occupancy_point_above_its_diagonal_is_a_configuration_of_several_kernels(
    capture: str, experiment: str
) -> None:
    table, groups = _drawn(capture, experiment, "occupancy")
    rows = profiled_rows(table)
    assert sum(len(xy) for xy in groups.values()) == len(rows)
    several = rows["ncu_kernels"].astype(float) > 1
    for gid, xy in groups.items():
        above = xy[:, 1] > xy[:, 0] + 0.5
        assert gid.endswith(":hollow") or not above.any(), gid
        hollow = rows[several & (rows["variant"] == gid.split(":")[0])]
        if gid.endswith(":hollow"):
            assert len(xy) <= len(hollow)
    assert sum(len(xy) for g, xy in groups.items() if g.endswith(":hollow")) == several.sum()


@pytest.mark.parametrize(("capture", "experiment"),
                         [("h100-sxm", "matmul_ladder"),
                          ("h100-sxm-classifier_layers", "classifier_block_size")])  # fmt: skip
def test_each_sweep_panel_marks_the_best_of_its_own_problem(capture: str, experiment: str) -> None:
    """A panel holds one problem, every varying dimension named in its title (B beside Ni:
    never the best over B), and its ★ is that problem's fastest configuration."""
    table = replayed(capture)[experiment]
    family = load_family(ROOT / "kernels", str(table["family"].iloc[0]))
    fig = FIGURES["sweep"](table, family, Styles(table, family), DEVICE)
    keys, _ = sweep_problems(table, family)
    checked = 0
    for ax in fig.axes:
        stars = [line for line in ax.get_lines() if str(line.get_gid()).endswith(":best")]
        if not stars or not ax.images:
            continue
        variant, _, named = ax.get_title().partition(", ")
        problem = dict(part.split(" = ") for part in named.split(", "))
        assert sorted(problem) == sorted(keys)
        at = table[(table["variant"] == variant) & (table["status"] == "ok")]
        for key, value in problem.items():
            at = at[at[key].astype(float) == float(value)]
        best = at.loc[at["time_ms"].idxmin()]
        j, i = (round(float(v)) for v in stars[0].get_xydata()[0])
        column = ax.get_xticklabels()[j].get_text()
        row = ax.get_yticklabels()[i].get_text()
        image = np.asarray(ax.images[0].get_array(), dtype=float)
        assert np.nanmin(image) == pytest.approx(1.0) and image[i, j] == pytest.approx(1.0)
        assert {str(best[ax.get_xlabel()]), str(best[ax.get_ylabel()])} == {column, row}
        checked += 1
    plt.close(fig)
    assert checked >= 2


def test_the_roofline_puts_each_variants_best_per_problem_in_front() -> None:
    """One DRAM marker per profiled configuration; in front (not faded) exactly each
    variant's best per problem, at its own intensity unless past the edge."""
    table, groups = _drawn("h100-sxm", "matmul_ladder", "roofline")
    family = load_family(ROOT / "kernels", "matmul")
    rows = profiled_rows(table)
    rows = rows[rows["flops_counted"].astype(float) > 0]
    dram = {g: xy for g, xy in groups.items() if g.split(":")[1] == "dram"}
    assert sum(len(xy) for xy in dram.values()) == len(rows)
    best = best_configs(rows, ["variant", *family.problem_columns], merit_of(family)[0])
    for variant, at in best.groupby("variant"):
        drawn = sorted(dram[f"{variant}:dram"][:, 0])
        assert drawn == pytest.approx(sorted(at["ai_dram"].astype(float)), rel=1e-9)


def test_every_roofline_of_one_device_shows_the_same_theoretical_peak() -> None:
    """Each experiment's kernels run at their own SM clocks: the theoretical roof is the
    device's, at its maximum clock (1980 MHz on the H100: 66.9 TFLOP/s FP32), in every
    figure alike."""
    device = {**DEVICE, "sm_clock_max_mhz": 1980.0}
    labels = set()
    for experiment in ("matmul_ladder", "classifier", "conv"):
        table = replayed("h100-sxm")[experiment]
        family = load_family(ROOT / "kernels", str(table["family"].iloc[0]))
        fig = FIGURES["roofline"](table, family, Styles(table, family), device)
        labels |= {t.get_text() for ax in fig.axes for t in ax.texts
                   if t.get_text().startswith("FP32 ")}  # fmt: skip
        plt.close(fig)
    found = {
        float(m[1]) * {"T": 1.0, "P": 1e3}[m[2]]
        for m in (re.match(r"FP32 ([\d.]+) .*(T|P)FLOP/s", text) for text in labels)
        if m
    }
    assert found == {66.9} and len(labels) == 2, labels  # TFLOP/s, and PFLOP/s with tensors


def test_layers_listed_apart_are_never_joined_as_a_trend() -> None:
    """The default study lists the classifier's and the conv's sizes as separate layers:
    their performance figure draws points, no line between two unrelated layers; the
    ladder's sizes are one grid, a trend, joined."""
    study = load_study(read_config(ROOT / "config.yaml"), ROOT)
    assert study.separate_sizes("classifier") and study.separate_sizes("conv")
    assert not study.separate_sizes("matmul_ladder")
    for experiment, joined in (("classifier", False), ("matmul_ladder", True)):
        table = replayed("h100-sxm")[experiment]
        family = load_family(ROOT / "kernels", str(table["family"].iloc[0]))
        fig = FIGURES["performance"](table, family, Styles(table, family, joined), DEVICE)
        styles = {line.get_linestyle() for ax in fig.axes for line in ax.get_lines()
                  if len(line.get_xdata()) > 1}  # fmt: skip
        plt.close(fig)
        assert (styles - {"None"} != set()) is joined, styles


def test_an_occupancy_marker_names_a_limit_only_where_one_caps_it() -> None:
    """Where the launch allows every warp, every limit ties and none limits: the marker says
    "nothing", not the first limit listed (the bound rule names the same limits)."""
    _, groups = _drawn("h100-sxm", "classifier", "occupancy")
    full = {gid: xy for gid, xy in groups.items() if (xy[:, 0] >= 100).any()}
    assert full and all(gid.split(":")[1] == "nothing" for gid in full), list(full)
    assert all((xy[:, 0] < 100).all() for gid, xy in groups.items() if ":nothing" not in gid)


def test_the_roofline_draws_a_panel_per_level_and_its_legend_apart() -> None:
    """A panel per memory level, titled with its bandwidth and holding that level's
    markers only; the legend in a cell of its own, outside every panel, each variant under
    the roof it runs under."""
    table = replayed("h100-sxm")["matmul_ladder"]
    family = load_family(ROOT / "kernels", "matmul")
    fig = FIGURES["roofline"](table, family, Styles(table, family), DEVICE)
    panels = [ax for ax in fig.axes if ax.collections]
    assert [ax.get_title().split()[0] for ax in panels] == ["DRAM", "L2", "L1"]
    for ax, level in zip(panels, ("dram", "l2", "l1"), strict=True):
        assert {c.get_gid().split(":")[1] for c in ax.collections} == {level}
    keys = [ax for ax in fig.axes if ax.get_legend() is not None]
    assert len(keys) == 1 and not keys[0].axison and not keys[0].collections
    labels = [t.get_text() for t in keys[0].get_legend().get_texts()]
    plt.close(fig)
    rows = profiled_rows(table)
    rows = rows[rows["flops_counted"].astype(float) > 0]
    headers = {"fp32": "FP32", "tensor_fp16": "FP16 tensor", "tensor_tf32": "TF32 tensor"}
    for variant, roof in rows.groupby("variant")["roof"].first().items():
        label = next(t for t in labels if t.split(" (")[0] == variant)
        above = [t for t in labels[: labels.index(label)] if t in headers.values()]
        assert above[-1] == headers[roof], (variant, above)
