"""The harness's CPU-side logic: statistics, records, and the restart after a crash."""

import json
import sys
import time
from pathlib import Path

import pytest

from conftest import minimal_config
from ncuflow import records
from ncuflow.config import load_study
from ncuflow.errors import NcuflowError
from ncuflow.harness import measure_stage, time_limit
from ncuflow.timing import timing_stats
from ncuflow.vocab import LAUNCH_ERROR, TIMEOUT


def test_timing_stats() -> None:
    stats = timing_stats([1.0, 2.0, 3.0, 4.0, 100.0])
    assert stats["time_ms"] == 3.0
    assert stats["time_ms_iqr"] == 2.0
    assert stats["time_cv"] == pytest.approx(43.6176 / 22, rel=1e-4)


def test_records_survive_a_line_cut_short(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    records.append(path, {"event": "start", "config_id": "a"})
    records.append(path, {"event": "done", "config_id": "a", "record": {"status": "ok"}})
    records.append(path, {"event": "start", "config_id": "b"})
    with open(path, "a") as handle:
        handle.write('{"event": "done", "config_id": "b", "rec')
    done, unfinished = records.read(path)
    assert done == {"a": {"status": "ok"}} and unfinished == ["b"]


# A stand-in for the GPU worker: records each configuration, and dies (as a kernel fault
# would take the process down) on the one named in CRASH_ON, once.
FAKE_WORKER = """
import json, os, sys
sys.path.insert(0, {workflow!r})
from ncuflow import records
plan_path, path = sys.argv[1], sys.argv[2]
plan = json.load(open(plan_path))
done, _ = records.read(__import__("pathlib").Path(path))
for row in plan["configs"]:
    cid = row["config_id"]
    if cid in done:
        continue
    records.append(__import__("pathlib").Path(path), {{"event": "start", "config_id": cid}})
    if cid == os.environ.get("CRASH_ON"):
        os.abort()
    if cid == os.environ.get("HANG_ON"):
        import time
        time.sleep(3600)
    record = {{"status": "ok", "error": "", "time_ms": 1.0, "rel_error": 0.0,
               "fingerprint": records.fingerprint(plan, row)}}
    records.append(__import__("pathlib").Path(path),
                   {{"event": "done", "config_id": cid, "record": record}})
"""


@pytest.fixture
def fake_worker(tmp_path: Path) -> list[str]:
    script = tmp_path / "worker.py"
    script.write_text(FAKE_WORKER.format(workflow=str(Path(__file__).parents[1] / "workflow")))
    return [sys.executable, str(script)]


def _plan(tmp_path: Path) -> Path:
    plan = tmp_path / "plan.json"
    plan.write_text(load_study(minimal_config()).plan_json("sq", "naive"))
    return plan


def test_a_crash_costs_one_configuration_and_the_sweep_goes_on(
    tmp_path: Path, fake_worker: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = _plan(tmp_path)
    ids = [c["config_id"] for c in json.loads(plan.read_text())["configs"]]
    monkeypatch.setenv("CRASH_ON", ids[1])
    out = tmp_path / "measure.json"
    measure_stage(plan, out, lambda line: None, worker=fake_worker)
    result = json.loads(out.read_text())
    assert list(result) == ids
    assert [r["status"] for r in result.values()] == ["ok", LAUNCH_ERROR, "ok", "ok"]
    assert "the worker died" in result[ids[1]]["error"]
    assert not (tmp_path / "measure.json.partial.jsonl").exists()


def test_an_interrupted_run_resumes_from_its_records(
    tmp_path: Path, fake_worker: list[str]
) -> None:
    plan = _plan(tmp_path)
    plan_data = json.loads(plan.read_text())
    first = plan_data["configs"][0]
    partial = tmp_path / "measure.json.partial.jsonl"
    earlier = {
        "status": "ok",
        "time_ms": 42.0,
        "fingerprint": records.fingerprint(plan_data, first),
    }
    records.append(partial, {"event": "done", "config_id": first["config_id"], "record": earlier})
    logged: list[str] = []
    measure_stage(plan, tmp_path / "measure.json", logged.append, worker=fake_worker)
    result = json.loads((tmp_path / "measure.json").read_text())
    assert result[first["config_id"]]["time_ms"] == 42.0  # kept, not measured again
    assert logged[0] == "resuming: 1 of 4 configurations measured by an earlier run"


def test_stale_records_are_measured_again(tmp_path: Path, fake_worker: list[str]) -> None:
    plan = _plan(tmp_path)
    first = json.loads(plan.read_text())["configs"][0]["config_id"]
    partial = tmp_path / "measure.json.partial.jsonl"
    stale = {"status": "ok", "time_ms": 42.0, "fingerprint": "from-other-sources"}
    records.append(partial, {"event": "done", "config_id": first, "record": stale})
    measure_stage(plan, tmp_path / "measure.json", lambda line: None, worker=fake_worker)
    assert json.loads((tmp_path / "measure.json").read_text())[first]["time_ms"] == 1.0


def test_a_worker_that_cannot_start_is_one_clear_error(tmp_path: Path) -> None:
    broken = [sys.executable, "-c", "import sys; sys.exit('CuPy is not installed')"]
    with pytest.raises(NcuflowError, match="failed before any kernel ran:\nCuPy is not installed"):
        measure_stage(_plan(tmp_path), tmp_path / "m.json", lambda line: None, worker=broken)


def test_a_configuration_that_hangs_is_killed_and_the_sweep_goes_on(
    tmp_path: Path, fake_worker: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = minimal_config()
    config["timing"] = {"timeout_s": 1.5}
    plan = tmp_path / "plan.json"
    plan.write_text(load_study(config).plan_json("sq", "naive"))
    ids = [c["config_id"] for c in json.loads(plan.read_text())["configs"]]
    monkeypatch.setenv("HANG_ON", ids[2])
    logged: list[str] = []
    started = time.monotonic()
    measure_stage(plan, tmp_path / "measure.json", logged.append, worker=fake_worker)
    assert time.monotonic() - started < 30
    result = json.loads((tmp_path / "measure.json").read_text())
    assert [r["status"] for r in result.values()] == ["ok", "ok", TIMEOUT, "ok"]
    assert result[ids[2]]["error"].startswith("no result after 2 s (its time limit")
    assert f"{ids[2]}: timeout after 2 s" in logged


def test_the_time_limit_grows_with_the_work_of_a_configuration() -> None:
    timing = {"budget_s": 2.0, "warmup": 3, "timeout_floor_s": 60}
    small = time_limit(timing, {"flops": 2 * 64**3, "min_bytes": 3 * 64 * 64 * 4})
    large = time_limit(timing, {"flops": 2 * 16384**3, "min_bytes": 3 * 16384**2 * 4})
    assert small == pytest.approx(64.0, abs=0.01) and large == pytest.approx(
        64 + 50 * 8.796, rel=1e-3
    )
    assert time_limit({**timing, "timeout_s": 5}, {"flops": 1, "min_bytes": 1}) == 5.0


@pytest.mark.parametrize(
    ("dtype", "cols", "ld", "kernel", "chunks"),
    [
        ("float32", 2049, 2052, (4, 16), 3 * 2052 // 4),  # 8208-byte rows: 16-byte stores
        ("float16", 7, 8, (2, 16), 3 * 1),
        ("float32", 5, 6, (4, 8), 3 * 6 * 4 // 8),  # rows aligned to 8 bytes only
        ("uint8", 3, 4, (1, 4), 3 * 1),
    ],
)
def test_the_row_copy_stores_the_widest_chunk_its_padded_rows_allow(
    monkeypatch: pytest.MonkeyPatch, dtype: str, cols: int, ld: int, kernel: tuple, chunks: int
) -> None:
    """copy_rows on the CPU, with the kernel and CuPy's device stood in for: which
    instantiation it takes, how many threads it starts (a grid-stride loop, at most 8 blocks
    per SM) and the arguments it passes."""
    import numpy as np

    from ncuflow import harness

    calls = []
    monkeypatch.setattr(
        harness,
        "_pad_rows_kernel",
        lambda element, chunk: lambda *a: calls.append(((element, chunk), a)),
    )
    device = type("Device", (), {"attributes": {"MultiProcessorCount": 132}})
    cuda = type("Cuda", (), {"Device": staticmethod(lambda: device)})
    monkeypatch.setattr(harness, "_cupy", lambda: type("CuPy", (), {"cuda": cuda}))  # fmt: skip
    source, padded = np.ones((3, cols), dtype), np.zeros((3, ld), dtype)
    harness.copy_rows(padded, source)()
    ((instance, (grid, block, args)),) = calls
    assert instance == kernel and block == (256,)
    assert grid == (min(-(-chunks // 256), 8 * 132),)
    assert args[0] is source and args[1] is padded and [int(a) for a in args[2:]] == [3, cols, ld]


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
def test_a_gated_batch_is_enqueued_behind_holds_the_queue_can_take(
    monkeypatch: pytest.MonkeyPatch, repeats: int
) -> None:
    """Every repeat (flush, events, steps) is enqueued between a hold and its release, at
    most GATE_COMMANDS commands a hold, all of them before the first wait for the GPU."""
    from ncuflow import harness

    log: list = []
    monkeypatch.setattr(harness, "_cupy", lambda: _FakeCuda(log))
    steps = _steps(log, "abc")
    totals, per_step = harness.time_launches(
        steps, repeats, lambda: log.append("flush"), _FakeGate(log, gives_up=False)
    )
    assert totals == [1.0] * repeats and all(len(v) == repeats for v in per_step.values())
    assert log[-1] == "sync" and log.count("sync") == 1
    held = "|".join(log[:-1]).split("|release")
    assert held[-1] == "" and all(h.strip("|").startswith("hold") for h in held[:-1])
    commands = [h.strip("|").split("|")[1:] for h in held[:-1]]
    assert all(len(c) <= harness.GATE_COMMANDS for c in commands)
    assert sum(c.count("flush") for c in commands) == repeats
    repeat = ["flush", "event", "a", "event", "b", "event", "c", "event"]
    assert [c for group in commands for c in group] == repeat * repeats


@pytest.mark.parametrize("gives_up", [False, True])
def test_a_batch_whose_gate_gave_up_is_timed_again_without_it(
    monkeypatch: pytest.MonkeyPatch, gives_up: bool
) -> None:
    """A hold that ended by its time limit (a step waited for the stream) costs its batch:
    timed again, and the configuration's other batches too, ungated; the record says so."""
    from ncuflow import harness
    from ncuflow.timing import TimingPolicy

    log: list = []
    monkeypatch.setattr(harness, "_cupy", lambda: _FakeCuda(log))
    launcher = harness.Launcher(_steps(log, "ab"), {}, gated=True)
    policy = TimingPolicy(warmup=0, min_repeats=20)
    record = harness.time_config(launcher, policy, None, _FakeGate(log, gives_up))
    assert record["gated"] is not gives_up and record["repeats"] == 20
    assert log.count("hold") == 1  # 20 repeats of 6 commands fit in one
    assert log.count("a") == 20 * (2 if gives_up else 1)
    ungated = harness.Launcher(_steps(log, "ab"), {})
    log.clear()
    assert harness.time_config(ungated, policy, None, _FakeGate(log, False))["gated"] is False
    assert "hold" not in log
