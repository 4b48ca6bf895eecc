"""Two runs compared configuration by configuration: an earlier run, another GPU, a changed
kernel. For every configuration both measured ok: the speedup from A to B, whether it is
real (a verdict from the two runs' timed repeats), and the metrics that moved most; per
variant the geometric-mean speedup and the verdicts' counts; a table, a Markdown summary
and a figure. Each side is a results folder or a capture (resources/captures/<name>).

    ncuflow compare resources/captures/h100-sxm results --out results/compare
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FormatStrFormatter

from ..files import read_json
from ..measure.timing import round_spread, split_rounds
from ..vocab import AMBIGUOUS, DEVICE, FASTER, HOST, MIN_EFFECT, OK, SAME, SKIPPED, SLOWER, VERDICTS
from .gate import broken, causes, summary
from .hosts import differences, explained, host_factor
from .results import load, repeats
from .style import lay_out

KEY = ["experiment", "variant", "config_id"]
# What "moved" is judged on: throughput, traffic at each level, utilisation, occupancy,
# resources; every one a column of the table.
METRICS = ["time_ms", "ncu_time_ms", "achieved_flops_per_s", "dram_bytes", "l2_bytes",
           "l1_bytes", "shared_bytes", "dram_gbps", "sm_throughput_pct",
           "memory_throughput_pct", "issue_active_pct", "achieved_occupancy_pct",
           "theoretical_occupancy_pct", "registers_per_thread", "shared_mem_per_block",
           "waves_per_sm", "sm_clock_hz"]  # fmt: skip


# A time verdict (docs/methods.md, "Comparing two runs"): bootstrap intervals of the ratio
# of the two sides' median times against a least effect (MIN_EFFECT unless the caller sets
# one: compare --threshold). FASTER and SLOWER take the 95 % interval (a one-sided test at
# 2.5 %: a gate fails on them); SAME is an equivalence test, two one-sided tests at 5 %,
# which is the 90 % interval within the least effect (Schuirmann's TOST).
RESAMPLES = 2000
# A traffic verdict per level: each side has one profiled launch, so no interval; ncu's byte
# counts of the same launch differ between replays by well under MIN_TRAFFIC_EFFECT.
LESS, MORE = "LESS", "MORE"
TRAFFIC = ["dram_bytes", "l2_bytes", "l1_bytes"]
MIN_TRAFFIC_EFFECT = 0.05
# compare.png's marker per time verdict (hollow: the repeats cannot tell)
VERDICT_COLORS = {FASTER: "#009E73", SLOWER: "#D55E00", SAME: "#999999", HOST: "#56B4E9",
                  AMBIGUOUS: None}  # fmt: skip


def verdict(times_a: list[float], times_b: list[float], seed: int = 0,
            least_effect: float = MIN_EFFECT, rounds_a: list[int] | None = None,
            rounds_b: list[int] | None = None) -> tuple[str, float, float]:  # fmt: skip
    """(verdict, low, high): FASTER where B is faster than A by more than ``least_effect``
    (the whole 95 % interval of median A / median B, ``low`` to ``high``, above 1 +
    least_effect), SLOWER where slower by as much, SAME where the 90 % interval lies
    within least_effect of 1, AMBIGUOUS otherwise (too few repeats, or too much noise,
    to tell).
    ``rounds_a``, ``rounds_b``: each side's repeats per round of timing (timing.rounds),
    where it has several: the rounds are resampled instead of the repeats, so the interval
    covers how the rounds (each its own process) differ, not only the launches in one."""
    a, b = np.asarray(times_a, dtype=float), np.asarray(times_b, dtype=float)
    if len(a) < 3 or len(b) < 3:
        return AMBIGUOUS, float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    ratio = _resampled_medians(a, rounds_a, rng) / _resampled_medians(b, rounds_b, rng)
    low, same_low, same_high, high = np.quantile(ratio, [0.025, 0.05, 0.95, 0.975])
    up, down = 1.0 + least_effect, 1.0 / (1.0 + least_effect)
    told = AMBIGUOUS
    if low > up:
        told = FASTER
    elif high < down:
        told = SLOWER
    elif same_low >= down and same_high <= up:
        told = SAME
    return told, float(low), float(high)


def least_effect_of(threshold: float, *sides: tuple[list[float], list[int] | None]) -> float:
    """The least change a configuration's verdict takes as real: ``threshold``, or the
    spread of either side's round medians (max - min over their median) where that is
    larger: a change within what a side's own rounds (each its own process) differ by
    cannot be told from the runs' noise (docs/methods.md, "Comparing two runs")."""
    spreads = [0.0]
    for times, rounds in sides:
        parts = split_rounds(times, rounds)
        if parts is not None:
            spreads.append(round_spread([float(np.median(part)) for part in parts]))
    return max(threshold, *spreads)


def _resampled_medians(times: np.ndarray, rounds: list[int] | None, rng: Any) -> np.ndarray:
    """RESAMPLES bootstrap medians of a side's time: of its repeats; with several rounds,
    the median of round medians (as the record's time_ms), each resample drawing the
    rounds' medians with replacement. The rounds alone are drawn (a cluster bootstrap): a
    round's median already varies by its repeats' noise, and drawing the repeats again
    would count that noise twice and widen the interval beyond what runs differ by."""
    parts = split_rounds(times, rounds)
    if parts is None:
        return np.median(rng.choice(times, (RESAMPLES, len(times))), axis=1)
    medians = np.array([np.median(part) for part in parts])
    return np.median(rng.choice(medians, (RESAMPLES, len(parts))), axis=1)


def traffic_verdict(bytes_a: float, bytes_b: float) -> str:
    """LESS or MORE where B moves fewer or more bytes than A by more than
    MIN_TRAFFIC_EFFECT, SAME within it, AMBIGUOUS where a side has no count."""
    if not (np.isfinite(bytes_a) and np.isfinite(bytes_b)) or bytes_a <= 0:
        return AMBIGUOUS
    ratio = bytes_b / bytes_a
    if abs(ratio - 1.0) <= MIN_TRAFFIC_EFFECT:
        return SAME
    return LESS if ratio < 1.0 else MORE


def timing_method(table: pd.DataFrame) -> str | None:
    """What to say where a side's GPU rows were timed with the method before 2026-11-25
    (launches not enqueued behind a gate: `gated` is empty); None where it is today's."""
    gpu = table[(table.get("runs_on", "gpu") == "gpu") & (table["status"] == OK)]
    if len(gpu) and ("gated" not in gpu or gpu["gated"].isna().all()):
        return ("timed with the method before 2026-11-25 (launches not enqueued behind a "
                "gate, so host delays could fall inside a timed interval)")  # fmt: skip
    return None


def label(folder: Path) -> str:
    """A side's name: its folder and, where it says, the device and date."""
    device = folder / DEVICE
    if device.is_file():
        facts = read_json(device)
        return f"{folder.name} ({facts.get('name', '?')}, {facts.get('date', '?')})"
    return folder.name


def compare(a: Path, b: Path,
            least_effect: float = MIN_EFFECT) -> tuple[pd.DataFrame, dict[str, Any]]:  # fmt: skip
    """(one row per configuration measured ok on both sides, what only one side has: ``a``
    and ``b`` the keys of each side's alone, ``missing`` those A measured ok of them,
    ``broken`` (gate.broken) those A measured ok that B ran and broke)."""
    left, right = load(a), load(b)
    metrics = [m for m in METRICS if m in left and m in right]
    both = left[left["status"] == OK].merge(
        right[right["status"] == OK], on=KEY, suffixes=("_a", "_b")
    )
    rows = both[KEY].copy()
    rows["time_ms_a"], rows["time_ms_b"] = both["time_ms_a"], both["time_ms_b"]
    rows["speedup"] = both["time_ms_a"] / both["time_ms_b"]
    timed_a, timed_b = repeats(a), repeats(b)
    judged, leasts, none = [], [], ([], None)
    for key in map(tuple, both[KEY].to_numpy()):
        (times_a, rounds_a), (times_b, rounds_b) = timed_a.get(key, none), timed_b.get(key, none)
        leasts.append(least_effect_of(least_effect, (times_a, rounds_a), (times_b, rounds_b)))
        judged.append(verdict(times_a, times_b, least_effect=leasts[-1], rounds_a=rounds_a,
                              rounds_b=rounds_b))  # fmt: skip
    rows["least_effect"] = leasts
    rows["verdict"] = [v for v, _, _ in judged]
    rows["speedup_low"] = [low for _, low, _ in judged]
    rows["speedup_high"] = [high for _, _, high in judged]
    for level in TRAFFIC:
        if f"{level}_a" in both:  # a table of host variants alone has no traffic
            rows[f"{level}_verdict"] = [
                traffic_verdict(float(x), float(y))
                for x, y in zip(both[f"{level}_a"], both[f"{level}_b"], strict=True)
            ]
    ratios = pd.DataFrame(
        {m: both[f"{m}_b"].astype(float) / both[f"{m}_a"].astype(float) for m in metrics}
    )
    moved = (
        np.log2(ratios.where(ratios > 0))
        .abs()
        .drop(columns=["time_ms", "ncu_time_ms"], errors="ignore")
    )
    # a host variant has no ncu metric: nothing moved that can be named
    rows["moved_most"] = moved.fillna(-1.0).idxmax(axis=1).where(moved.max(axis=1) > 0)
    pairs = zip(rows.index, rows["moved_most"], strict=True)
    rows["moved_most_ratio"] = [ratios.at[i, m] if isinstance(m, str) else np.nan for i, m in pairs]
    for m in metrics:
        rows[f"{m}_ratio"] = ratios[m]
    for column in ("bound", "bound_level", "sm_clock_mhz_timing"):
        for side in "ab":
            if f"{column}_{side}" in both:
                rows[f"{column}_{side}"] = both[f"{column}_{side}"]
    rows["runs_on"] = both.get("runs_on_a", "gpu")
    facts_a, facts_b = _facts(a), _facts(b)
    rows["host_factor"] = host_factor(rows, facts_a, facts_b)
    rows["verdict"] = explained(list(rows["verdict"]), list(rows["speedup_low"]),
                                list(rows["speedup_high"]), rows["host_factor"].to_numpy(),
                                list(rows["least_effect"]))  # fmt: skip
    keys_a, keys_b = (set(map(tuple, t[KEY].to_numpy())) for t in (left, right))
    only: dict[str, Any] = {"a": sorted(keys_a - keys_b), "b": sorted(keys_b - keys_a)}
    ok_a = set(map(tuple, left.loc[left["status"] == OK, KEY].to_numpy()))
    # B never measured it: not in its tables, or skipped there (a restriction, a module)
    skipped_b = set(map(tuple, right.loc[right["status"] == SKIPPED, KEY].to_numpy()))
    only["missing"] = sorted(ok_a & ((keys_a - keys_b) | skipped_b))
    only["broken"] = broken(left, right, KEY)
    only["method_a"], only["method_b"] = timing_method(left), timing_method(right)
    only["hosts"] = differences(facts_a, facts_b, rows)
    return rows.reset_index(drop=True), only


def _facts(folder: Path) -> dict[str, Any]:
    """A side's device facts (device.json), or none."""
    return read_json(folder / DEVICE) if (folder / DEVICE).is_file() else {}


def hosts_lines(only: dict[str, Any]) -> list[str]:
    """What the two sides' hosts differ in, for compare.md and gate.md."""
    if not only["hosts"]:
        return ["The two devices report the same facts (device.json)."]
    return ["The hosts differ:", "", *only["hosts"]]


def geomean(values: pd.Series) -> float:
    values = values[values > 0]
    return float(np.exp(np.log(values).mean())) if len(values) else float("nan")


def markdown(rows: pd.DataFrame, only: dict[str, Any], name_a: str, name_b: str,
             least_effect: float = MIN_EFFECT) -> str:  # fmt: skip
    lines = [f"# {name_b} against {name_a}", "",
             f"{len(rows)} configurations measured ok on both sides; speedup = time on A / "
             "time on B (above 1: B is faster).", "",
             "Verdict from each configuration's timed repeats (its rounds' medians where it "
             "has rounds): bootstrap intervals of the speedup against a least change of "
             f"{least_effect:.0%}: FASTER or SLOWER where the whole 95 % interval lies beyond "
             "it, SAME where the 90 % interval lies within it, AMBIGUOUS where the repeats "
             "cannot tell; HOST where a change is "
             "what the two hosts' SM clocks (compute- and latency-bound configurations) or "
             "measured ceilings (memory-bound ones) make of it.", "",
             *hosts_lines(only), "",
             "| experiment | variant | configurations | geometric-mean speedup | min | max | "
             "verdicts | metric that moved most (median ratio B/A) |",
             "|---|---|---:|---:|---:|---:|---|---|"]  # fmt: skip
    for (experiment, variant), group in rows.groupby(["experiment", "variant"], sort=False):
        counts = group["moved_most"].value_counts()
        metric = counts.index[0] if len(counts) else "–"
        ratio = (
            group.loc[group["moved_most"] == metric, "moved_most_ratio"].median()
            if len(counts)
            else np.nan
        )
        verdicts = group["verdict"].value_counts()
        told = ", ".join(f"{verdicts[v]} {v}" for v in VERDICTS
                         if v in verdicts)  # fmt: skip
        cells = [experiment, variant, str(len(group)), f"{geomean(group['speedup']):.3f}",
                 f"{group['speedup'].min():.3f}", f"{group['speedup'].max():.3f}", told,
                 f"{metric} ({ratio:.3g}×)" if len(counts) else "–"]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    caveats = _caveats(rows, only, name_a, name_b)
    lines += _traffic_lines(rows) + (["", *caveats] if caveats else [])
    ratios = rows[[c for c in rows if c.endswith("_ratio") and c != "moved_most_ratio"]]
    spread = np.log2(ratios.where(ratios > 0)).abs().median().sort_values(ascending=False)
    lines += ["", "Metrics by how far they moved (median |log2(B/A)| over all configurations):", ""]
    lines += [f"- {name.removesuffix('_ratio')}: median ratio {ratios[name].median():.3g}×"
              for name in spread.index[:8] if np.isfinite(spread[name])]  # fmt: skip
    if "bound_a" in rows:
        changed = rows[rows["bound_a"].astype(str) != rows["bound_b"].astype(str)]
        lines += ["", f"{len(changed)} configurations changed their bound."]
    for side, name in (("a", name_a), ("b", name_b)):
        if only[side]:
            lines += [
                "",
                f"{len(only[side])} configurations only in {name}, e.g. {only[side][0][2]}.",
            ]
    return "\n".join(lines) + "\n"


def _traffic_lines(rows: pd.DataFrame) -> list[str]:
    """Per variant, the count of each traffic verdict at each level."""
    levels = [lvl for lvl in TRAFFIC if f"{lvl}_verdict" in rows]
    rows = rows[rows["runs_on"] != "cpu"]  # host variants have no traffic to judge
    verdicts = rows[[f"{lvl}_verdict" for lvl in levels]]
    if not levels or rows.empty or verdicts.eq(AMBIGUOUS).all(axis=None):
        return []
    lines = ["", f"Traffic verdicts per level, from one profiled launch a side: B moves LESS or "
             f"MORE bytes than A by over {MIN_TRAFFIC_EFFECT:.0%}, the SAME within it "
             "(AMBIGUOUS: a side has no count).", "",
             "| experiment | variant | " + " | ".join(levels) + " |",
             "|---|---|" + "---|" * len(levels)]  # fmt: skip
    for (experiment, variant), group in rows.groupby(["experiment", "variant"], sort=False):
        cells = []
        for level in levels:
            counts = group[f"{level}_verdict"].value_counts()
            cells.append(", ".join(f"{counts[v]} {v}" for v in (LESS, MORE, SAME, AMBIGUOUS)
                                   if v in counts))  # fmt: skip
        lines.append(f"| {experiment} | {variant} | " + " | ".join(cells) + " |")
    return lines


def _caveats(rows: pd.DataFrame, only: dict[str, Any], name_a: str, name_b: str) -> list[str]:
    """What a reader must know before trusting a speedup: a side timed with the older
    method, and SM clocks that differ (part of a speedup is then the clock's)."""
    lines = [f"{name}: {only[f'method_{side}']}." for side, name in (("a", name_a), ("b", name_b))
             if only.get(f"method_{side}")]  # fmt: skip
    clock = rows.get("sm_clock_hz_ratio")
    if clock is not None and clock.notna().any() and abs(clock.median() - 1.0) > MIN_EFFECT:
        lines.append(f"The SM clock differs: B's kernels ran at {clock.median():.3f}× A's "
                     "(median); that much of a speedup is the clock's.")  # fmt: skip
    return lines


def figure(rows: pd.DataFrame, name_a: str, name_b: str, out: Path) -> list[Path]:
    """Every configuration's speedup, grouped by variant and coloured by its time verdict
    (log scale, 1 marked, each variant's geometric mean and median); host variants in a
    panel of their own, so that a different CPU's factor does not set the GPU variants'
    scale."""
    host = rows["runs_on"] == "cpu"
    sides = (("GPU variants", rows[~host]), ("host variants\n(the host's clock)", rows[host]))
    groups = [(name, part) for name, part in sides if len(part)]
    widths = [max(3.0, len(part.groupby(["experiment", "variant"]))) for _, part in groups]
    fig, axes = plt.subplots(1, len(groups), squeeze=False, width_ratios=widths,
                             figsize=(max(6.0, 0.45 * sum(widths) + 2.5), 4.8))  # fmt: skip
    for ax, (name, part) in zip(axes[0], groups, strict=True):
        _speedups(ax, part)
        ax.set_title(name, fontsize=8)
    axes[0][0].set_ylabel("speedup (time on A / time on B)")
    # one legend of every panel's markers, beside the panels, never over a point
    shown: dict[str, Any] = {}
    for ax in axes[0]:
        for handle, text in zip(*ax.get_legend_handles_labels(), strict=True):
            shown.setdefault(text, handle)
    axes[0][-1].legend(list(shown.values()), list(shown), frameon=False, fontsize=7,
                       loc="upper left", bbox_to_anchor=(1.01, 1.0))  # fmt: skip
    fig.suptitle(f"B = {name_b}\nagainst A = {name_a}", fontsize=9)
    lay_out(fig)
    paths = [out.with_suffix(".png"), out.with_suffix(".svg")]
    for path in paths:
        fig.savefig(path, dpi=150)
    plt.close(fig)
    return paths


def _speedups(ax: Any, rows: pd.DataFrame) -> None:
    """One panel of figure(): the configurations' speedups, jittered per variant."""
    order = list(dict.fromkeys(rows["experiment"] + " / " + rows["variant"]))
    position = {name: i for i, name in enumerate(order)}
    x = (rows["experiment"] + " / " + rows["variant"]).map(position)
    jitter = np.random.default_rng(0).uniform(-0.2, 0.2, len(rows))
    for told, color in VERDICT_COLORS.items():
        mine = (rows["verdict"] == told).to_numpy()
        if mine.any():
            ax.scatter((x + jitter)[mine], rows["speedup"][mine], s=14, edgecolor="black",
                       linewidth=0.3, label=told, color=color if color else "none")  # fmt: skip
    grouped = rows.groupby(["experiment", "variant"], sort=False)["speedup"]
    ax.scatter(range(len(order)), grouped.apply(geomean).to_numpy(), marker="_", s=400,
               color="#0072B2", label="geometric mean", zorder=3)  # fmt: skip
    ax.scatter(range(len(order)), grouped.median().to_numpy(), marker="x", s=30,
               color="black", label="median (robust to outliers)", zorder=3)  # fmt: skip
    ax.axhline(1.0, color="0.4", lw=0.8, ls="--")
    ax.set_yscale("log")
    # plain ratios (1.005, 0.99): a narrow range on a log axis otherwise reads 1.005 × 10^0
    for axis_format in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
        axis_format(FormatStrFormatter("%.4g"))
    ax.set_xticks(range(len(order)), order, rotation=60, ha="right", fontsize=7)


def run(a: Path, b: Path, out: Path, least_effect: float = MIN_EFFECT,
        fail_on: tuple[str, ...] = ()) -> tuple[list[Path], dict[str, int]]:  # fmt: skip
    """The comparison's table, summary, figure and gate summary (gate.md) in ``out``, and
    what fails the gate (``fail_on``: gate.FAIL_ON's names): per cause, how many."""
    rows, only = compare(a, b, least_effect)
    out.mkdir(parents=True, exist_ok=True)
    name_a, name_b = label(a), label(b)
    rows.to_csv(out / "compare.csv", index=False, float_format="%.6g")
    (out / "compare.md").write_text(markdown(rows, only, name_a, name_b, least_effect))
    caveats = [*_caveats(rows, only, name_a, name_b), "", *hosts_lines(only)]
    (out / "gate.md").write_text(summary(rows, only, (name_a, name_b), list(fail_on),
                                         least_effect, caveats))  # fmt: skip
    paths = [out / "compare.csv", out / "compare.md", out / "gate.md"]
    if len(rows):  # nothing measured ok on both sides (B broke everywhere): no figure to draw
        paths += figure(rows, name_a, name_b, out / "compare")
    return paths, causes(rows, only, list(fail_on))
