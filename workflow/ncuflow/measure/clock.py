"""The clock: a configuration's launches timed between CUDA events (or by the host's
clock for a host variant) in adaptive batches, each batch enqueued behind a gate kernel,
with L2 emptied before every timed launch."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..gpu import cupy
from ..nvml import ClockWatch
from .build import Launcher
from .helpers import helper_kernel
from .timing import TimingPolicy, adaptive_repeats, timing_stats


def l2_flush() -> Callable[[], None]:
    """A step that empties this GPU's L2 of everything a timed launch could reuse
    (``vocab.L2_FLUSH_METHOD``, l2_flush.cu), on the current stream."""
    cp = cupy()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    buffer = cp.zeros(2 * props["l2CacheSize"] // 16 * 4, dtype=cp.int32)  # int4 elements
    sink = cp.zeros(1, dtype=cp.int32)
    kernel = helper_kernel("l2_flush", "ncuflow_l2_flush")
    grid, n = (4 * props["multiProcessorCount"],), np.int64(buffer.size // 4)
    flush = functools.partial(kernel, grid, (512,), (buffer, n, sink))
    flush()  # compiled and loaded now, not inside the first timed batch (behind a gate)
    return flush


# Commands (launches and event records) enqueued behind one gate: few enough that the
# stream's queue never fills while it is held (the host would block on a full queue).
GATE_COMMANDS = 128
GATE_LIMIT_S = 1.0
# What a record's time_note says where a step kept the gate shut.
GATE_GAVE_UP = (
    "a step waited for the GPU while its launches were enqueued (a synchronising call, such "
    "as a read back to the host inside a library function), so the gate gave up and it was "
    "timed without it: host time between its launches is inside its times"
)


class Gate:
    """A kernel that holds the current stream until the host releases it (``hold``, then
    the batch's launches, then ``release``); ``gave_up`` after the batch has finished says
    whether any hold ended by its time limit instead (its batch may hold host gaps)."""

    def __init__(self, limit_s: float = GATE_LIMIT_S) -> None:
        cp = cupy()
        self._memory = cp.cuda.alloc_pinned_memory(8)
        self._words = np.frombuffer(self._memory, dtype=np.uint32, count=2)
        self._words[:] = 0
        self._kernel = helper_kernel("gate", "ncuflow_gate")
        self._limit_ns = np.uint64(limit_s * 1e9)
        self._ticket = 0
        self._first = 1
        self.hold()  # compiled and loaded now, not inside the first batch; released at once
        self.release()

    def hold(self) -> None:
        self._ticket += 1
        args = (np.uint64(self._memory.ptr), np.uint32(self._ticket), self._limit_ns)
        self._kernel((1,), (1,), args)

    def release(self) -> None:
        self._words[0] = self._ticket

    def gave_up(self) -> bool:
        """Whether a hold since the last call ended by its limit (call after a sync)."""
        given_up = int(self._words[1]) >= self._first
        self._first = self._ticket + 1
        return given_up


def time_launches(
    launcher: Launcher,
    repeats: int,
    flush: Callable[[], None] | None,
    gate: Gate | None = None,
    cuda: Any = None,
    during: Callable[[], None] | None = None,
) -> tuple[list[float], dict[str, list[float]]]:
    """Milliseconds of each of ``repeats`` runs of the launcher's steps, between a pair of
    CUDA events, and of each step alone (an event between consecutive steps); its reset runs
    before each, untimed. With a ``gate``, the repeats are enqueued behind it, GATE_COMMANDS
    commands at a time. ``cuda``: what makes the events, cupy.cuda unless given (a stand-in
    times on the CPU); ``during``: called once all is enqueued, while the GPU runs it (the
    clock watch's sample)."""
    cuda = cuda or cupy().cuda
    stream, steps = cuda.get_current_stream(), launcher.steps
    events = [[cuda.Event() for _ in range(len(steps) + 1)] for _ in range(repeats)]
    # a repeat: the reset, the flush, the steps and an event before and after each
    per_hold = max(1, GATE_COMMANDS // (2 * len(steps) + 3)) if gate else repeats
    for first in range(0, repeats, per_hold):
        if gate is not None:
            gate.hold()
        for marks in events[first : first + per_hold]:
            launcher.reset()
            if flush is not None:  # evict the inputs from L2, as ncu does before each profile
                flush()
            marks[0].record(stream)
            for (_, step), mark in zip(steps, marks[1:], strict=True):
                step()
                mark.record(stream)
        if gate is not None:
            gate.release()
    if during is not None:
        during()
    events[-1][-1].synchronize()
    totals = [float(cuda.get_elapsed_time(m[0], m[-1])) for m in events]
    per_step = {name: [float(cuda.get_elapsed_time(m[j], m[j + 1])) for m in events]
                for j, (name, _) in enumerate(steps)}  # fmt: skip
    return totals, per_step


def time_host_calls(launcher: Launcher, repeats: int) -> tuple[list[float], dict[str, list[float]]]:
    """Milliseconds of each of ``repeats`` runs of host code, and of each step, by the
    host's clock; the launcher's reset runs before each, untimed."""
    totals: list[float] = []
    per_step: dict[str, list[float]] = {name: [] for name, _ in launcher.steps}
    for _ in range(repeats):
        launcher.reset()
        started = mark = time.perf_counter()
        for name, step in launcher.steps:
            step()
            now = time.perf_counter()
            per_step[name].append((now - mark) * 1e3)
            mark = now
        totals.append((mark - started) * 1e3)
    return totals, per_step


# Where a configuration's timing was throttled, the pause before it is timed once more (the
# GPU's power and heat settle within tens of milliseconds; nvbench waits 50 ms)
THROTTLE_PAUSE_S = 0.2


def time_config(
    launcher: Launcher,
    policy: TimingPolicy,
    flush: Callable[[], None] | None,
    gate: Gate | None = None,
    cuda: Any = None,
    watch: ClockWatch | None = None,
) -> dict[str, Any]:
    """Warm up, then time in batches until the median is known within the policy's target
    (adaptive repeats); the record's timing fields, with each step's median where a
    configuration makes several launches. A GPU launcher's batches wait behind the ``gate``
    while they are enqueued; should a hold end by its limit (a step waited for the stream,
    or the host stalled for that long), that batch is timed again and the rest too without
    it, and the record's ``gated`` says so. With a ``watch`` (GPU, NVML), the SM clock and
    throttling are sampled as the batches run; a configuration timed while the GPU throttled
    is timed once more after a pause, and keeps ``time_throttled`` where it throttled again.
    ``cuda``: as for time_launches."""
    watching = watch if watch is not None and watch.works and not launcher.on_host else None
    record = _timed(launcher, policy, flush, gate, cuda, watching)
    if watching is None:
        return record
    first = watching.result()
    if not first.get("time_throttled"):
        return {**record, **first}
    time.sleep(THROTTLE_PAUSE_S)
    record = _timed(launcher, policy, flush, gate, cuda, watching)
    again = watching.result()
    told = (f"timed again: the first timing throttled ({first['throttle']})" +
            (f", and so did this one ({again['throttle']})" if again.get("time_throttled")
             else ""))  # fmt: skip
    return {**record, **again, "time_note": "; ".join(filter(None, [record["time_note"], told]))}


def _timed(launcher: Launcher, policy: TimingPolicy, flush: Callable[[], None] | None,
           gate: Gate | None, cuda: Any, watch: ClockWatch | None) -> dict[str, Any]:  # fmt: skip
    """One timing of time_config: warm-up, adaptive batches, the record's timing fields."""
    expected_ms = None  # a host call's warm-up says how long one takes (adaptive_repeats)
    for _ in range(policy.warmup):
        launcher.reset()
        started = time.perf_counter()
        launcher.launch()
        if launcher.on_host:
            expected_ms = (time.perf_counter() - started) * 1e3
    steps: dict[str, list[float]] = {name: [] for name, _ in launcher.steps}
    holding = gate if launcher.gated else None
    during = watch.sample if watch is not None else None
    if watch is not None:
        watch.start()

    def batch(n: int) -> list[float]:
        nonlocal holding
        if launcher.on_host:
            totals, per_step = time_host_calls(launcher, n)
        else:
            totals, per_step = time_launches(launcher, n, flush, holding, cuda, during)
            if holding is not None and holding.gave_up():
                holding = None
                totals, per_step = time_launches(launcher, n, flush, None, cuda, during)
        for name, values in per_step.items():
            steps[name] += values
        return totals

    times, note = adaptive_repeats(batch, policy, expected_ms)
    unstable = bool(note)
    if launcher.gated and holding is None:
        note = "; ".join(filter(None, [GATE_GAVE_UP, note]))
    record = {**timing_stats(times), "repeats": len(times), "times_ms": times,
              "time_unstable": unstable, "time_note": note}  # fmt: skip
    if not launcher.on_host:
        record["gated"] = holding is not None
    if len(steps) > 1:
        record["step_ms"] = {name: float(np.median(values)) for name, values in steps.items()}
    return record
