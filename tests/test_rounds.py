"""timing.rounds: every configuration timed in several rounds, each a fresh warm-up and
timing, the rounds' medians kept; a worker stopped between rounds resumes with the rounds
it lacks; the compare verdict resamples the rounds' medians."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, fake_measuring_worker
from ncuflow.measure import journal
from ncuflow.measure.stage import measure_plan
from ncuflow.measure.timing import with_round
from ncuflow.plan import Record
from ncuflow.report.compare import verdict
from ncuflow.study.config import load_study

TIMING = {"warmup": 1, "min_repeats": 6, "max_repeats": 12, "target_ci_pct": 50.0,
          "budget_s": 0.05, "rounds": 3}  # fmt: skip


def _host_plan(tmp_path: Path) -> Path:
    """NumPy's axpy on the host, two sizes: the real worker, no GPU."""
    config = {"kernels_dir": str(ROOT / "kernels"), "timing": TIMING, "experiments": {"ax": {
        "family": "axpy", "sizes": {"n": [4096, 8192]}, "scalars": {"a": [2.0]},
        "variants": {"numpy_axpy": {}}}}}  # fmt: skip
    plan = tmp_path / "plan.json"
    plan.write_text(load_study(config).plan("ax", "numpy_axpy").to_json())
    return plan


def test_each_configuration_is_timed_in_every_round(tmp_path: Path) -> None:
    out = tmp_path / "measure.json"
    measure_plan(_host_plan(tmp_path), out, lambda line: None)
    records = {k: Record.from_json(v) for k, v in json.loads(out.read_text()).items()}
    assert len(records) == 2
    for record in records.values():
        assert record.status == "ok" and record.rounds == 3
        assert len(record.round_medians_ms) == 3 and sum(record.round_repeats) == record.repeats
        assert record.repeats == len(record.times_ms) >= 18  # at least min_repeats a round
        assert record.time_ms == float(np.median(record.round_medians_ms))


def test_a_worker_stopped_between_rounds_times_only_the_rounds_left(tmp_path: Path) -> None:
    plan = _host_plan(tmp_path)
    out = tmp_path / "measure.json"
    measure_plan(plan, out, lambda line: None)
    first = {k: Record.from_json(v) for k, v in json.loads(out.read_text()).items()}
    # a journal that ends after one configuration's second round (the member is the plan's
    # folder, as measure_plan names it), then the stage again
    path = out.with_name(out.name + ".partial.jsonl")
    config, record = next(iter(first.items()))
    two = with_round(
        record.times_ms[: record.round_repeats[0]],
        None,
        record.times_ms[record.round_repeats[0] : sum(record.round_repeats[:2])],
    )
    target = f"numpy_axpy.p0.{config}"
    journal.finished(path, target, record.updated(**two))
    journal.started(path, target)  # the third round began, and the worker was stopped
    measure_plan(plan, out, lambda line: None)
    again = Record.from_json(json.loads(out.read_text())[config])
    assert again.rounds == 3 and again.times_ms[: len(two["times_ms"])] == two["times_ms"]


def test_the_verdict_resamples_rounds_so_a_run_to_run_shift_is_not_called_real() -> None:
    rng = np.random.default_rng(3)

    # each side three rounds of 30 tight repeats, the rounds' levels apart by about 3 %
    def side(levels: list[float]) -> list[float]:
        return [x for level in levels for x in level * (1 + 0.001 * rng.standard_normal(30))]

    a, b = side([1.00, 1.03, 0.99]), side([1.02, 0.98, 1.01])
    sizes = [30, 30, 30]
    assert verdict(a, b)[0] != "AMBIGUOUS"  # the repeats alone: tight, so a verdict
    told, low, high = verdict(a, b, rounds_a=sizes, rounds_b=sizes)
    assert told == "AMBIGUOUS" and low < 0.98 and high > 1.02  # the rounds say otherwise


def test_ten_rounds_of_noisy_launches_whose_medians_agree_read_same() -> None:
    # a 7 µs kernel: each launch spreads by 7 %, each round's median by its 160 launches'
    # noise alone; identical code on both sides reads SAME, and 3 % slower reads SLOWER
    rng = np.random.default_rng(5)

    def side(scale: float) -> list[float]:
        return list(0.007 * scale * (1 + 0.07 * rng.standard_normal(1600)))

    sizes = [160] * 10
    assert verdict(side(1.0), side(1.0), rounds_a=sizes, rounds_b=sizes)[0] == "SAME"
    assert verdict(side(1.0), side(1.05), rounds_a=sizes, rounds_b=sizes)[0] == "SLOWER"


def test_a_later_round_that_fails_or_hangs_keeps_the_earlier_rounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker whose only progress is a configuration failing in its second round has made
    progress; one killed for its time in a later round leaves a timeout that keeps the
    first round's times (a stand-in worker, no GPU)."""
    config = {"kernels_dir": str(ROOT / "kernels"),
              "timing": {**TIMING, "rounds": 2, "timeout_s": 1.0}, "experiments": {"ax": {
                  "family": "axpy", "sizes": {"n": [4096]}, "scalars": {"a": [2.0]},
                  "variants": {"naive": {"params": {"BLOCK": [128]}}}}}}  # fmt: skip
    plan = tmp_path / "plan.json"
    plan.write_text(load_study(config).plan("ax", "naive").to_json())
    script = fake_measuring_worker(tmp_path / "worker.py")
    for later, status in (("fail", "launch_error"), ("hang", "timeout")):
        monkeypatch.setenv("LATER_ROUND", later)
        out = tmp_path / later / "measure.json"
        out.parent.mkdir()
        measure_plan(plan, out, lambda line: None, worker=[sys.executable, str(script)])
        (record,) = (Record.from_json(r) for r in json.loads(out.read_text()).values())
        assert record.status == status and record.time_ms == 1.0, later  # round 1's time kept
