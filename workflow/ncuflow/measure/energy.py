"""The energy tier (``energy:`` in the config; docs/methods.md, "Energy"): a configuration
that ran correctly is launched back to back for a few tenths of a second to seconds while
NVML's energy counter, power, clocks and temperature are read; its energy per launch is the
average power over whole counter updates times its GPU time per launch.

NVML refreshes the counter about every 100 ms on an H200 (2026-11-29); read every few ms,
each new value is seen within a read of its refresh, so the power is the counter's rise
between its first update after the GPU settled (RAMP_S) and its last before the launches
end, over the time between the reads that first saw them. The instantaneous power samples
of the same span, integrated over time, are the check on it (``avg_power_w_samples``). A
GPU draws a few per cent more at one clock as it warms, over seconds, so a process's first
configuration runs until the GPU's temperatures settle before it is measured
(``warm_up``): two runs then start from the same state, not one from an idle GPU. A host
variant's energy comes from the CPU packages' RAPL counters where they are readable.
"""

from __future__ import annotations

import itertools
import math
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..gpu import cupy
from ..limits import ENERGY_WARMUP_MAX_S
from ..nvml import CLOCK_DROP, PowerSample, PowerWatch, throttle_reasons

RAMP_S = 0.05  # the GPU's power settles within tens of ms of the first launch (H200)
CHUNK_S = 0.02  # GPU time of one enqueued chunk of launches (a CUDA graph where it captures)
MAX_CHUNK_LAUNCHES = 4096  # a graph of more nodes takes longer to build than to run
MIN_SPAN_S = 0.2  # counter updates spanning less than this give no power (samples do)
POLL_S = 0.001  # the pause between two samples (each takes about 4 ms: the counter's read)
# The warm-up (a process's first configuration, run until the GPU's and the memory's
# temperatures have moved at most STEADY_C over STEADY_S; at least STEADY_S, at most
# limits.ENERGY_WARMUP_MAX_S): from idle, an H200's settle within 5-15 s under a GEMM or a
# copy and its power at one clock rises 2-3 % meanwhile (2026-11-29)
STEADY_C, STEADY_S = 1, 3.0
WARMUP_STEP_S = 0.25  # GPU time enqueued between two readings of the temperatures
# A chunk measured faster than this share of its launches' timed time ran elsewhere (a
# problem L2 holds runs 3x as fast back to back as cold: 2^20-element axpy on an H200)
UNSEEN = 0.05

# What a record keeps of the samples of the run: (its field, the sample's, how they reduce):
# the clocks' medians, the hottest temperatures.
WATCHED: tuple[tuple[str, str, Callable[[list[int]], float]], ...] = (
    ("sm_clock_mhz_energy", "sm_clock_mhz", lambda v: float(statistics.median(v))),
    ("memory_clock_mhz_energy", "memory_clock_mhz", lambda v: float(statistics.median(v))),
    ("temperature_c_energy", "temperature_c", max),
    ("memory_temperature_c_energy", "memory_temperature_c", max),
)

COUNTER = "NVML energy counter"
SAMPLES = "NVML power samples"
RAPL = "RAPL (CPU packages)"
RAPL_ROOT = Path("/sys/class/powercap")


def power_of(samples: Sequence[PowerSample], start_s: float, end_s: float) -> dict[str, Any]:
    """The average power of the samples taken while the GPU was busy (``start_s`` to
    ``end_s``, the host's clock): the energy counter's rise over whole updates, and the
    mean of the instantaneous samples over the same span (all of it after RAMP_S where the
    counter gives none); the clocks' medians, the hottest temperature, what throttled."""
    settled = start_s + RAMP_S
    updates: list[tuple[float, int]] = []  # (first read, mJ) of each new counter value
    for s in samples:
        if s.energy_mj is not None and s.energy_at_s is not None and \
                (not updates or s.energy_mj != updates[-1][1]):  # fmt: skip
            updates.append((s.energy_at_s, s.energy_mj))
    inside = [u for u in updates[1:] if settled <= u[0] <= end_s]  # the first may be stale
    out: dict[str, Any] = {}
    span = (settled, end_s)  # the samples' span where the counter gives no power
    if len(inside) >= 2 and inside[-1][0] - inside[0][0] >= MIN_SPAN_S:
        span = (inside[0][0], inside[-1][0])
        out["avg_power_w"] = (inside[-1][1] - inside[0][1]) / 1e3 / (span[1] - span[0])
        out["energy_method"] = COUNTER
    during = [s for s in samples if span[0] <= s.at_s <= span[1]]
    powers = [(s.at_s, s.power_w) for s in during if s.power_w is not None]
    if powers:
        out["avg_power_w_samples"] = time_mean(powers)
        if "avg_power_w" not in out:
            out["avg_power_w"], out["energy_method"] = out["avg_power_w_samples"], SAMPLES
    out["energy_window_s"] = span[1] - span[0]
    for key, field, reduce in WATCHED:
        known = [getattr(s, field) for s in during if getattr(s, field) is not None]
        if known:
            out[key] = reduce(known)
    reasons = 0
    for s in during:
        reasons |= s.reasons
    out["energy_throttle"] = "; ".join(throttle_reasons(reasons))
    return out


def time_mean(readings: Sequence[tuple[float, float]]) -> float:
    """The mean over time of ``(time, value)`` readings, each holding halfway to its
    neighbours in time (so an uneven pace of readings weighs nothing)."""
    readings = sorted(readings)
    if len(readings) == 1 or readings[-1][0] <= readings[0][0]:
        return statistics.fmean(v for _, v in readings)
    area = sum((t1 - t0) * (v0 + v1) / 2 for (t0, v0), (t1, v1) in itertools.pairwise(readings))
    return area / (readings[-1][0] - readings[0][0])


def energy_fields(
    power: dict[str, Any], gpu_s: float, launches: int, sm_clock_max_mhz: float
) -> dict[str, Any]:
    """A record's energy fields from the power over the run (``power_of``), the GPU time
    of its ``launches`` launches; where no power came, the reason in ``energy_note``."""
    if "avg_power_w" not in power:
        return {**power, "energy_note": "NVML gave neither an energy counter nor power "
                "samples while it ran"}  # fmt: skip
    launch_s = gpu_s / launches
    out = {**power, "energy_j": power["avg_power_w"] * launch_s, "energy_launches": launches,
           "energy_launch_ms": launch_s * 1e3}  # fmt: skip
    clock = power.get("sm_clock_mhz_energy")
    if clock is not None and clock < (1.0 - CLOCK_DROP) * sm_clock_max_mhz:
        out["energy_throttle"] = "; ".join(filter(None, [
            power.get("energy_throttle"),
            f"SM clock {clock:.0f} MHz ({100 * clock / sm_clock_max_mhz:.0f} % of its "
            f"{sm_clock_max_mhz:.0f} MHz)"]))  # fmt: skip
    out["energy_throttled"] = bool(out.get("energy_throttle"))
    return out


def _chunk(launch: Callable[[], None], capturable: bool,
           count: int) -> tuple[Callable[[], None], str, Any]:  # fmt: skip
    """One chunk of ``count`` back-to-back launches, why it is not a graph ('' where it
    is) and the stream its work goes to: a CUDA graph of them on a stream of its own (no
    host time between launches, however short), or, where they cannot be captured
    (``capturable`` false: they may wait for the host; or a library that synchronises,
    another stream), launched from the host as they are timed (measure.clock)."""
    cp = cupy()

    def loop() -> None:
        for _ in range(count):
            launch()

    if capturable:
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            try:
                stream.begin_capture()
                try:
                    loop()
                finally:
                    graph = stream.end_capture()
                graph.launch(stream)  # built now, not in the measured chunks
                stream.synchronize()
                return (lambda: graph.launch(stream)), "", stream
            except Exception as exc:  # CUDA's refusals to capture take many forms
                why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    else:
        why = "its steps may wait for the host"
    note = (f"launched from the host, not as a CUDA graph ({why}): host time between "
            "launches counts in its energy per launch")  # fmt: skip
    return loop, note, cp.cuda.get_current_stream()


def warm_up(chunk: Callable[[], None], chunk_s: float, stream: Any,
            watch: PowerWatch) -> float:  # fmt: skip
    """Run ``chunk`` (taking ``chunk_s`` on the GPU) back to back until the GPU's and the
    memory's temperatures settle (STEADY_C over STEADY_S, at most ENERGY_WARMUP_MAX_S); the
    seconds it took. Each step waits for the one before it, so the GPU's queue stays short."""
    cp = cupy()
    per_step = max(1, math.ceil(WARMUP_STEP_S / chunk_s))
    started = time.perf_counter()
    readings: list[tuple[float, tuple[int | None, int | None]]] = []
    before: Any = None  # the previous step's event
    while True:
        for _ in range(per_step):
            chunk()
        step = cp.cuda.Event()
        step.record(stream)
        if before is not None:
            before.synchronize()
        before = step
        now = time.perf_counter()
        readings.append((now, watch.temperatures()))
        # the readings of the last STEADY_S at least: from the last one before it on
        first = max([0] + [i for i, (at, _) in enumerate(readings) if at <= now - STEADY_S])
        recent = [temps for _, temps in readings[first:]]
        settled = now - started >= STEADY_S and len(recent) >= 2 and _steady(recent)
        if settled or now - started >= ENERGY_WARMUP_MAX_S:
            before.synchronize()
            watch.warm = True
            return time.perf_counter() - started


def _steady(readings: Sequence[tuple[int | None, int | None]]) -> bool:
    """Whether each sensor's readings (GPU, memory; None: NVML has none) span at most
    STEADY_C."""
    for sensor in (0, 1):
        known = [temps[sensor] for temps in readings if temps[sensor] is not None]
        if known and max(known) - min(known) > STEADY_C:
            return False
    return True


def gpu_energy(launch: Callable[[], None], capturable: bool, seconds: float, time_ms: float,
               watch: PowerWatch, sm_clock_max_mhz: float) -> dict[str, Any]:  # fmt: skip
    """A GPU configuration's energy fields: its ``launch`` (``capturable``: it only
    enqueues GPU work) run back to back, in chunks of about CHUNK_S, for about ``seconds``
    (``time_ms``: one launch's time, which sizes the chunks), with ``watch`` sampling NVML
    meanwhile in a thread of its own; first, where ``watch`` is not warm yet, until the
    GPU's temperatures settle (``energy_warmup_s``)."""
    if not watch.works:
        return {"energy_note": "no NVML on this machine (nvidia-ml-py), or none for this GPU"}
    cp = cupy()
    per_chunk = max(1, min(MAX_CHUNK_LAUNCHES, math.ceil(CHUNK_S * 1e3 / max(time_ms, 1e-6))))
    chunk, note, stream = _chunk(launch, capturable, per_chunk)
    begin, end = cp.cuda.Event(), cp.cuda.Event()
    begin.record(stream)
    chunk()
    end.record(stream)
    end.synchronize()
    chunk_s = cp.cuda.get_elapsed_time(begin, end) / 1e3
    expected_s = per_chunk * time_ms / 1e3
    if chunk_s < UNSEEN * expected_s:  # its launches went to another stream than the events'
        return {"energy_note": f"a chunk of {per_chunk} launches took {1e3 * chunk_s:.3g} ms "
                f"on the stream measured, not about {1e3 * expected_s:.3g}: its launches run "
                "on another stream, and its energy per launch would be wrong"}  # fmt: skip
    warmed = {} if watch.warm else {"energy_warmup_s": warm_up(chunk, chunk_s, stream, watch)}
    chunks = max(2, math.ceil(seconds / chunk_s))
    with watch.sampling(POLL_S):
        start_s = time.time()
        begin.record(stream)
        for _ in range(chunks):
            chunk()
        end.record(stream)
        while not end.done:  # a sleep, not a wait in CUDA, leaves the sampling thread room
            time.sleep(POLL_S)
        end_s = time.time()
    gpu_s = cp.cuda.get_elapsed_time(begin, end) / 1e3
    if watch.failed:
        note = "; ".join(filter(None, [note, f"NVML's sampling stopped early ({watch.failed})"]))
    power = power_of(watch.samples, start_s, end_s)
    out = {**energy_fields(power, gpu_s, chunks * per_chunk, sm_clock_max_mhz), **warmed}
    limit = watch.power_limit_w()
    if limit is not None:
        out["power_limit_w"] = limit
    if note:
        out["energy_note"] = "; ".join(filter(None, [out.get("energy_note"), note]))
    return out


def rapl_counters(root: Path = RAPL_ROOT) -> tuple[list[tuple[Path, int]], str]:
    """The CPU packages' RAPL energy counters ((energy_uj file, its wrap-around), ...) and,
    where none is readable, why."""
    packages = sorted(p for p in root.glob("intel-rapl:*") if p.name.count(":") == 1)
    if not packages:
        return [], f"no RAPL counters on this machine ({root}/intel-rapl:*)"
    counters = []
    for package in packages:
        try:
            (package / "energy_uj").read_text()
            wrap = int((package / "max_energy_range_uj").read_text())
        except OSError as exc:
            return [], f"RAPL is not readable here ({package / 'energy_uj'}: {exc.strerror})"
        counters.append((package / "energy_uj", wrap))
    return counters, ""


def _rapl_uj(counters: list[tuple[Path, int]]) -> list[int]:
    return [int(path.read_text()) for path, _ in counters]


def host_energy(
    launch: Callable[[], None], seconds: float, root: Path = RAPL_ROOT
) -> dict[str, Any]:
    """A host variant's energy fields: its calls run back to back for about ``seconds``,
    the CPU packages' RAPL counters read before and after (their whole draw: other work on
    the host counts too); where RAPL is not readable, the reason in ``energy_note``."""
    counters, why = rapl_counters(root)
    if not counters:
        return {"energy_note": why}
    calls, before, started = 0, _rapl_uj(counters), time.perf_counter()
    while calls == 0 or time.perf_counter() - started < seconds:
        launch()
        calls += 1
    elapsed = time.perf_counter() - started
    after = _rapl_uj(counters)
    joules = sum((b - a) % wrap for a, b, (_, wrap) in zip(before, after, counters,
                                                              strict=True)) / 1e6  # fmt: skip
    return {"energy_j": joules / calls, "avg_power_w": joules / elapsed, "energy_method": RAPL,
            "energy_launches": calls, "energy_launch_ms": elapsed / calls * 1e3,
            "energy_window_s": elapsed}  # fmt: skip
