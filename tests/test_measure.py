"""The measure stage's CPU-side logic: statistics, the journal, time limits, and the
restart after a crash (a stand-in worker in place of the GPU one)."""

import json
import sys
import time
from pathlib import Path

import pytest

from conftest import fake_measuring_worker, minimal_config
from ncuflow.errors import NcuflowError
from ncuflow.limits import time_limit
from ncuflow.measure import journal
from ncuflow.measure.build import Launcher
from ncuflow.measure.clock import GATE_COMMANDS, time_config, time_launches
from ncuflow.measure.helpers import ROW_COPY_BLOCK, row_copy_shape
from ncuflow.measure.stage import measure_plan
from ncuflow.measure.timing import TimingPolicy, timing_stats
from ncuflow.nvml import ClockWatch
from ncuflow.plan import Plan, Record, Timing
from ncuflow.study.config import load_study
from ncuflow.vocab import LAUNCH_ERROR, TIMEOUT


def test_timing_stats() -> None:
    stats = timing_stats([1.0, 2.0, 3.0, 4.0, 100.0])
    assert stats["time_ms"] == 3.0
    assert stats["time_ms_iqr"] == 2.0
    assert stats["time_cv"] == pytest.approx(43.6176 / 22, rel=1e-4)


def test_records_survive_a_line_cut_short(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    journal.started(path, "a")
    journal.finished(path, "a", Record("ok"))
    journal.started(path, "b")
    with open(path, "a") as handle:
        handle.write('{"event": "done", "config_id": "b", "rec')
    done, unfinished = journal.read(path)
    assert done == {"a": Record("ok")} and unfinished == ["b"]
    assert journal.running(path) == "b"


def test_the_journal_keeps_where_time_went_and_why_a_kernel_was_compiled(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    why = "naive compiled here, not loaded: this job was given no compile stage index"
    journal.finished(path, "a", Record("ok"), {"compile": 0.5}, {why})
    journal.finished(path, "b", Record("ok"), {"build": 0.1}, {why})
    journal.finished(path, "c", Record("ok"))
    assert journal.phases(path) == ({"a": {"compile": 0.5}, "b": {"build": 0.1}}, {why})


@pytest.fixture
def fake_worker(tmp_path: Path) -> list[str]:
    return [sys.executable, str(fake_measuring_worker(tmp_path / "worker.py"))]


def _plan(tmp_path: Path) -> Path:
    plan = tmp_path / "plan.json"
    plan.write_text(load_study(minimal_config()).plan("sq", "naive").to_json())
    return plan


def test_a_crash_costs_one_configuration_and_the_sweep_goes_on(
    tmp_path: Path, fake_worker: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = _plan(tmp_path)
    ids = [c["config_id"] for c in json.loads(plan.read_text())["configs"]]
    monkeypatch.setenv("CRASH_ON", ids[1])
    out = tmp_path / "measure.json"
    measure_plan(plan, out, lambda line: None, worker=fake_worker)
    result = json.loads(out.read_text())
    assert list(result) == ids
    assert [r["status"] for r in result.values()] == ["ok", LAUNCH_ERROR, "ok", "ok"]
    assert "the worker died" in result[ids[1]]["error"]
    assert not (tmp_path / "measure.json.partial.jsonl").exists()


def test_an_interrupted_run_resumes_from_its_records(
    tmp_path: Path, fake_worker: list[str]
) -> None:
    plan = _plan(tmp_path)
    first = Plan.load(plan).configs[0]
    partial = tmp_path / "measure.json.partial.jsonl"
    earlier = Record("ok", time_ms=42.0, fingerprint=Plan.load(plan).fingerprint(first))
    journal.finished(partial, f"naive.p0.{first.config_id}", earlier)  # its target id
    logged: list[str] = []
    measure_plan(plan, tmp_path / "measure.json", logged.append, worker=fake_worker)
    result = json.loads((tmp_path / "measure.json").read_text())
    assert result[first.config_id]["time_ms"] == 42.0  # kept, not measured again
    assert logged[0] == "resuming: 1 of 4 configurations measured by an earlier run"


def test_stale_records_are_measured_again(tmp_path: Path, fake_worker: list[str]) -> None:
    plan = _plan(tmp_path)
    first = Plan.load(plan).configs[0].config_id
    partial = tmp_path / "measure.json.partial.jsonl"
    stale = Record("ok", time_ms=42.0, fingerprint="from-other-sources")
    journal.finished(partial, f"naive.p0.{first}", stale)
    measure_plan(plan, tmp_path / "measure.json", lambda line: None, worker=fake_worker)
    assert json.loads((tmp_path / "measure.json").read_text())[first]["time_ms"] == 1.0


def test_a_worker_that_cannot_start_is_one_clear_error(tmp_path: Path) -> None:
    broken = [sys.executable, "-c", "import sys; sys.exit('CuPy is not installed')"]
    with pytest.raises(NcuflowError, match="failed before any kernel ran:\nCuPy is not installed"):
        measure_plan(_plan(tmp_path), tmp_path / "m.json", lambda line: None, worker=broken)


def test_a_configuration_that_hangs_is_killed_and_the_sweep_goes_on(
    tmp_path: Path, fake_worker: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = minimal_config()
    config["timing"] = {"timeout_s": 1.5}
    plan = tmp_path / "plan.json"
    plan.write_text(load_study(config).plan("sq", "naive").to_json())
    ids = [c["config_id"] for c in json.loads(plan.read_text())["configs"]]
    monkeypatch.setenv("HANG_ON", ids[2])
    logged: list[str] = []
    started = time.monotonic()
    measure_plan(plan, tmp_path / "measure.json", logged.append, worker=fake_worker)
    assert time.monotonic() - started < 30
    result = json.loads((tmp_path / "measure.json").read_text())
    assert [r["status"] for r in result.values()] == ["ok", "ok", TIMEOUT, "ok"]
    assert result[ids[2]]["error"].startswith("no result after 2 s (its time limit")
    assert f"naive.p0.{ids[2]}: timeout after 2 s" in logged  # named by variant and part


def test_the_time_limit_grows_with_the_work_of_a_configuration() -> None:
    timing = Timing(budget_s=2.0, warmup=3, timeout_floor_s=60)
    rows = load_study(minimal_config()).plan("sq", "naive").configs  # M = N = K = 64, 1023

    def limit(row, timing: Timing = timing) -> float:
        return time_limit(timing, row)

    assert limit(rows[0]) == pytest.approx(64.0, abs=0.01)  # the floor, the budget twice
    assert limit(rows[1]) == pytest.approx(64 + 50 * 2 * 1023**3 / 1e12, rel=1e-6)
    assert time_limit(Timing(timeout_s=5), rows[1]) == 5.0


@pytest.mark.parametrize(
    ("dtype", "ld", "chunk", "chunks"),
    [
        ("float32", 2052, 16, 3 * 2052 // 4),  # 8208-byte rows: 16-byte stores
        ("float16", 8, 16, 3 * 1),
        ("float32", 6, 8, 3 * 6 * 4 // 8),  # rows aligned to 8 bytes only
        ("uint8", 4, 4, 3 * 1),
        ("float32", 2052 * 1024, 16, 3 * 1024 * 2052 // 4),  # at most 8 blocks per SM
    ],
)
def test_the_row_copy_stores_the_widest_chunk_its_padded_rows_allow(
    dtype: str, ld: int, chunk: int, chunks: int
) -> None:
    """The row copy's instance and grid: as many bytes at once as the padded rows allow,
    a thread a chunk in a grid-stride loop of at most 8 blocks per SM."""
    import numpy as np

    element = np.dtype(dtype).itemsize
    blocks = min(-(-chunks // ROW_COPY_BLOCK), 8 * 132)
    assert row_copy_shape(3, ld, element, sm_count=132) == (chunk, blocks)


class _FakeCuda:
    """CuPy's events and streams stood in for: each event record and step is logged in
    order, every interval lasts 1 ms."""

    def __init__(self, log: list) -> None:
        class Event:
            def record(self, stream: object) -> None:
                log.append("event")

            def synchronize(self) -> None:
                log.append("sync")

        self.Event = Event
        self.get_current_stream = lambda: None
        self.get_elapsed_time = lambda start, end: 1.0
        self.cuda = self  # cupy.cuda.Event and cupy.cuda.get_elapsed_time alike


class _FakeGate:
    def __init__(self, log: list, gives_up: bool) -> None:
        self.log, self.gives_up = log, gives_up

    def hold(self) -> None:
        self.log.append("hold")

    def release(self) -> None:
        self.log.append("release")

    def gave_up(self) -> bool:
        return self.gives_up


def _steps(log: list, names: str) -> list:
    return [(name, lambda name=name: log.append(name)) for name in names]


@pytest.mark.parametrize("repeats", [1, 20, 41])
def test_a_gated_batch_is_enqueued_behind_holds_the_queue_can_take(repeats: int) -> None:
    """Every repeat (reset, flush, events, steps) is enqueued between a hold and its
    release, at most GATE_COMMANDS commands a hold, all of them before the first wait for
    the GPU."""
    log: list = []
    launcher = Launcher(_steps(log, "abc"), {}, reset=lambda: log.append("reset"))
    totals, per_step = time_launches(
        launcher, repeats, lambda: log.append("flush"), _FakeGate(log, gives_up=False),
        _FakeCuda(log),
    )  # fmt: skip
    assert totals == [1.0] * repeats and all(len(v) == repeats for v in per_step.values())
    assert log[-1] == "sync" and log.count("sync") == 1
    held = "|".join(log[:-1]).split("|release")
    assert held[-1] == "" and all(h.strip("|").startswith("hold") for h in held[:-1])
    commands = [h.strip("|").split("|")[1:] for h in held[:-1]]
    assert all(len(c) <= GATE_COMMANDS for c in commands)
    assert sum(c.count("flush") for c in commands) == repeats
    repeat = ["reset", "flush", "event", "a", "event", "b", "event", "c", "event"]
    assert [c for group in commands for c in group] == repeat * repeats


@pytest.mark.parametrize("gives_up", [False, True])
def test_a_batch_whose_gate_gave_up_is_timed_again_without_it(gives_up: bool) -> None:
    """A hold that ended by its time limit (a step waited for the stream) costs its batch:
    timed again, and the configuration's other batches too, ungated; the record says so."""
    log: list = []
    launcher = Launcher(_steps(log, "ab"), {}, gated=True)
    policy = TimingPolicy(warmup=0, min_repeats=20)
    record = time_config(launcher, policy, None, _FakeGate(log, gives_up), _FakeCuda(log))
    assert record["gated"] is not gives_up and record["repeats"] == 20
    assert record["time_note"].startswith("a step waited for the GPU") is gives_up
    assert record["time_unstable"] is False
    assert log.count("hold") == 2  # 20 repeats of up to 7 commands: 18 in the first hold
    assert log.count("a") == 20 * (2 if gives_up else 1)
    ungated = Launcher(_steps(log, "ab"), {})
    log.clear()
    assert (
        time_config(ungated, policy, None, _FakeGate(log, False), _FakeCuda(log))["gated"] is False
    )
    assert "hold" not in log


class _Watch(ClockWatch):
    """NVML stood in for: each timing's samples are the next clocks of ``timings``."""

    def __init__(self, timings: list[list[int]]) -> None:
        super().__init__(1980.0)
        self.timings, self.samples = timings, []

    @property
    def works(self) -> bool:
        return True

    def start(self) -> None:
        super().start()
        self.samples = list(self.timings.pop(0))

    def sample(self) -> None:
        self.clocks.append(self.samples.pop(0) if self.samples else 1980)

    def _violation_ns(self) -> dict[str, int]:
        return {}


@pytest.mark.parametrize("second", [1980, 1500])
def test_a_configuration_timed_while_the_clock_fell_is_timed_again(
    second: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An SM clock more than 10 % under the maximum while it was timed: timed once more after
    a pause; flagged only where the second timing throttled too, the note saying both."""
    monkeypatch.setattr("ncuflow.measure.clock.THROTTLE_PAUSE_S", 0.0)
    log: list = []
    launcher = Launcher(_steps(log, "a"), {})
    policy = TimingPolicy(warmup=0, min_repeats=20, target_ci_pct=50.0)
    record = time_config(launcher, policy, None, None, _FakeCuda(log),
                         _Watch([[1600], [second]]))  # fmt: skip
    assert log.count("a") == 40  # timed twice
    assert record["time_throttled"] is (second < 1782)
    assert record["sm_clock_mhz_timing_min"] == second
    assert record["time_note"].startswith("timed again: the first timing throttled (SM clock "
                                          "down to 1600 MHz (81 % of its 1980 MHz))")  # fmt: skip
    assert ("and so did this one" in record["time_note"]) is (second < 1782)
    steady = time_config(launcher, policy, None, None, _FakeCuda(log), _Watch([[1980]]))
    assert steady["time_throttled"] is False and steady["throttle"] == ""
    assert steady["sm_clock_mhz_timing"] == 1980.0
