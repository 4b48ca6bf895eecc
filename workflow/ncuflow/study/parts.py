"""Jobs sized by the GPU time they are expected to take, and run longest first.

A variant's configurations to run are split into parts (its jobs, p0, p1, ...) in grid
order. Each configuration's GPU time is estimated before anything runs, from the FLOPs and
bytes the family counts: a fixed cost (building, drawing and checking, ncu's start per
kernel) and the kernel's own time at a middling rate, run about ``RUNS`` times (warm-up,
timed repeats, profiling passes). The estimate only balances the jobs and orders them (a
job's Snakemake priority is its expected seconds, so the longest start first and no GPU
is left with one long job at the end); it is never reported as a measurement.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

FIXED_S = 0.5  # per configuration: compile (cached), inputs, reference, check, ncu per kernel
RATE_FLOPS = 10e12  # a middling kernel's FLOP/s: neither the naive rungs nor cuBLAS
RATE_BYTES = 1e12  # and its bytes per second
RUNS = 60  # warm-up, timed repeats and profiling passes of one configuration


def expected_s(flops: int, min_bytes: int) -> float:
    """The expected GPU seconds of one configuration (for balancing jobs only)."""
    return FIXED_S + RUNS * max(flops / RATE_FLOPS, min_bytes / RATE_BYTES)


def part_starts(
    pending: Sequence[int], expected: Sequence[float], size: int, most: int
) -> tuple[int, ...]:
    """Where each part starts (grid positions): parts of at most ``size`` configurations
    to run (more where a variant would need over ``most`` parts), each of about the time
    a part of ``size`` would take on average; the first part also holds the skipped
    positions before its first configuration, each other part those after its last."""
    size = max(size, -(-len(pending) // most))
    count = -(-len(pending) // size) or 1
    share = math.fsum(expected) / count  # each part's time, were the parts all of `size`
    starts, taken, elapsed = [0], 0, 0.0
    for position, seconds in zip(pending, expected, strict=True):
        # a part ends where it is full, or where this configuration's middle would pass
        # its share: dear configurations make more, smaller parts
        if taken and (taken == size or elapsed + seconds / 2 > share):
            starts.append(position)
            taken, elapsed = 0, 0.0
        taken += 1
        elapsed += seconds
    if len(starts) > most:  # time-balanced parts would be too many: by count alone
        starts = [0, *pending[size::size]]
    return tuple(starts)


def part_expected_s(
    pending: Sequence[int], expected: Sequence[float], start: int, stop: int
) -> float:
    """The expected GPU seconds of the configurations to run at positions [start, stop)
    (``pending`` ascending, as a scan gives it)."""
    return math.fsum(
        expected[bisect.bisect_left(pending, start) : bisect.bisect_left(pending, stop)]
    )


def batch_groups(expected: Sequence[float], most: int) -> list[list[int]]:
    """Parts (by index, with their expected GPU seconds) grouped into batches of at most
    ``most`` each, as few as that allows: the longest goes first, each to the batch with
    the least time so far that has room, so that the batches take about equal time; each
    batch keeps its parts in their given order."""
    count = -(-len(expected) // most)
    groups: list[list[int]] = [[] for _ in range(count)]
    totals = [0.0] * count
    for index in sorted(range(len(expected)), key=lambda i: (-expected[i], i)):
        open_groups = [g for g in range(count) if len(groups[g]) < most]
        target = min(open_groups, key=lambda g: (totals[g], g))
        groups[target].append(index)
        totals[target] += expected[index]
    return [sorted(group) for group in groups]
