"""Time limits: how long a configuration may take to be measured, and an ncu process to
profile a chunk of them, before it is killed and recorded as such.

A limit must never cut a healthy configuration short, yet end a hung one within minutes:
it grows with the configuration's work, assumed done at the slowest rate worth waiting for.
"""

from __future__ import annotations

from collections.abc import Sequence

from .plan import ConfigRow, Timing

# How fast the slowest configuration worth waiting for is assumed to be.
SLOWEST_FLOP_PER_S, SLOWEST_BYTES_PER_S = 1e12, 1e11
# ncu replays each kernel once per pass of its metric set (about 40 with the sections and
# the registry); a chunk may take this many times its kernels' expected time, plus ncu's
# start-up and each configuration's set-up (compilation is cached by then).
REPLAY_PASSES, NCU_START_S, SETUP_S = 100, 60.0, 10.0
# About the longest the energy tier runs a process's first configuration for the GPU to
# warm up (measure.energy.warm_up; its last step may run past it): any may be the first.
ENERGY_WARMUP_MAX_S = 20.0


def slowest_launch_s(row: ConfigRow) -> float:
    """A launch of the configuration at 1 TFLOP/s or 100 GB/s, whichever takes longer."""
    return max(row.flops / SLOWEST_FLOP_PER_S, row.min_bytes / SLOWEST_BYTES_PER_S)


def time_limit(timing: Timing, row: ConfigRow) -> float:
    """Seconds a configuration may take (compile, check, time, and its energy tier):
    timing.timeout_s, or the floor plus twice the timing budget plus ten times its warm-up,
    checked and first timed launches at the slowest rate; either with twice the energy
    tier's seconds (timing.energy_s) and its warm-up beside."""
    energy = (2 * float(timing.energy_s) + ENERGY_WARMUP_MAX_S) if timing.energy_s else 0.0
    if timing.timeout_s:
        return float(timing.timeout_s) + energy
    return (
        float(timing.timeout_floor_s)
        + 2 * float(timing.budget_s)
        + (10 * (int(timing.warmup) + 2) * slowest_launch_s(row))
        + energy
    )


def chunk_limit(timing: Timing, rows: Sequence[ConfigRow]) -> float:
    """Seconds one ncu process may take over ``rows`` before it is killed."""
    launches = sum(slowest_launch_s(row) for row in rows)
    floor = float(timing.timeout_floor_s)
    return floor + NCU_START_S + len(rows) * SETUP_S + REPLAY_PASSES * launches
