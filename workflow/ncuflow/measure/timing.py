"""Adaptive timing: launch until the median is known well enough, then summarise.

A fixed number of repeats is too few for short kernels (their launch-to-launch noise is large)
and wasteful for long ones. ``adaptive_repeats`` keeps asking for batches of launches until
the 95 % confidence interval of the median is within a target width, or a budget of measured
GPU time or a maximum count is spent; a kernel that stops for the budget or the maximum gets
a note that says why (and whether its times fall into two clusters), and counts as unstable.

Pure Python and NumPy: no CuPy here, the caller passes a ``run_batch`` that launches.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..plan import Timing

# Two-sided 95 %: each tail of the interval may hold at most 2.5 %.
_TAIL = 0.025
_Z975 = 1.959963984540054  # the standard normal's 97.5 % quantile
# Up to this many samples the ranks come from the exact Binomial(n, 1/2) CDF (integer
# arithmetic with math.comb, so no rounding); above it from the normal approximation with a
# continuity correction, which is then within a rank of the exact answer.
_EXACT_MAX_N = 1000
# Bimodal (see bimodal_clusters): each cluster holds at least this share of the samples, and
# the step between them is at least (_STEP_PER_IQR + _SMALL_N / n) interquartile ranges.
_BIMODAL_MIN_N = 20
_CLUSTER_MIN_SHARE = 0.2
_STEP_PER_IQR = 3.0
_SMALL_N = 20.0


@functools.lru_cache(maxsize=4096)
def median_ci_ranks(n: int) -> tuple[int, int] | None:
    """1-based ranks (j, k) with P(x_(j) <= median < x_(k)) >= 95 %, or None when n < 6.

    The count B of samples below the population median is Binomial(n, 1/2) whatever the
    distribution, so [x_(j), x_(k)] with k = n + 1 - j covers it with probability
    1 - 2 P(B <= j - 1); j is the largest rank that keeps this at or above 95 %. Five samples
    or fewer cannot reach 95 % (even [min, max] covers only 1 - 2 / 2^n).
    """
    if n < 1:
        raise ValueError(f"need at least one sample, got n={n}")
    if n <= _EXACT_MAX_N:
        # largest j with P(B <= j - 1) <= 2.5 %, i.e. 40 * sum_{i<j} C(n, i) <= 2^n
        total = 1 << n
        tail = 0
        j = 0
        while (tail + math.comb(n, j)) * round(1 / _TAIL) <= total:
            tail += math.comb(n, j)
            j += 1
    else:
        # P(B <= j - 1) ~ Phi((j - 1/2 - n/2) / (sqrt(n)/2)) <= 2.5 %
        j = math.floor(n / 2 + 0.5 - _Z975 * math.sqrt(n) / 2)
    if j < 1:
        return None
    return j, n + 1 - j


def median_ci95(times_ms: Sequence[float]) -> tuple[float, float, float]:
    """(median, lo, hi): a distribution-free 95 % interval of the median from order statistics.

    Distribution-free because kernel times are skewed and sometimes bimodal, where a normal
    interval would lie. With fewer than six samples no pair of ranks reaches 95 %, and the
    interval is (min, max).
    """
    t = np.sort(np.asarray(times_ms, dtype=np.float64))
    if t.size == 0:
        raise ValueError("no times to summarise")
    median = float(np.median(t))
    ranks = median_ci_ranks(int(t.size))
    if ranks is None:
        return median, float(t[0]), float(t[-1])
    j, k = ranks
    return median, float(t[j - 1]), float(t[k - 1])


def ci95_pct(times_ms: Sequence[float]) -> float:
    """Half-width of the median's 95 % interval relative to the median, in percent.

    The larger side counts, since the interval is not symmetric around the median. A zero
    median with any spread is infinitely uncertain in relative terms.
    """
    median, lo, hi = median_ci95(times_ms)
    half = max(median - lo, hi - median)
    if half == 0:
        return 0.0
    if median <= 0:
        return math.inf
    return 100.0 * half / median


def timing_stats(times_ms: Sequence[float]) -> dict[str, float]:
    """The summary a record keeps: median, interquartile range, CV and the median's CI95 width."""
    t = np.asarray(times_ms, dtype=np.float64)
    if t.size == 0:
        raise ValueError("no times to summarise")
    q25, median, q75 = np.percentile(t, [25, 50, 75])
    cv = float(t.std(ddof=1) / t.mean()) if t.size > 1 else 0.0
    return {
        "time_ms": float(median),
        "time_ms_iqr": float(q75 - q25),
        "time_cv": cv,
        "time_ci95_pct": ci95_pct(t),
    }


def split_rounds(
    times_ms: Sequence[float], rounds: Sequence[int] | None
) -> list[np.ndarray] | None:
    """A record's times split by round of timing (``rounds``: each round's repeats, in
    turn), or None where it holds one round (or counts that do not add up)."""
    if not rounds or len(rounds) < 2 or sum(rounds) != len(times_ms):
        return None
    return np.split(np.asarray(times_ms, dtype=np.float64), np.cumsum(rounds)[:-1])


def round_spread(medians: Sequence[float]) -> float:
    """How far the rounds' medians lie apart: (max - min) over their median (0 to 1)."""
    middle = float(np.median(medians))
    return (max(medians) - min(medians)) / middle if middle > 0 else 0.0


def with_round(
    earlier: Sequence[float], earlier_rounds: Sequence[int] | None, times_ms: Sequence[float]
) -> dict[str, Any]:
    """A record's timing fields with one more round (``times_ms``) after the ``earlier``
    times (their rounds' repeats, in turn; None: one round of them all): every time kept,
    each round's median, the time the median of those (a round cannot outvote the others
    by its count of repeats), the spread, CV and interval of all the times pooled."""
    sizes = [*(earlier_rounds or [len(earlier)]), len(times_ms)]
    every = [*earlier, *times_ms]
    medians = [float(np.median(part)) for part in split_rounds(every, sizes) or []]
    spread_pct = 100.0 * round_spread(medians)
    return {**timing_stats(every), "time_ms": float(np.median(medians)), "times_ms": every,
            "repeats": len(every), "round_medians_ms": medians, "round_repeats": sizes,
            "rounds": len(sizes), "time_round_spread_pct": spread_pct}  # fmt: skip


def bimodal_clusters(
    times_ms: Sequence[float], min_step_pct: float = 1.0
) -> tuple[float, float] | None:
    """Medians of the two clusters when the times fall into two, else None.

    Simple and deterministic: split the sorted times in two where the sum of absolute
    deviations from each side's median is least (2-medians, so a tail of slow outliers does
    not pull the split as it would a variance split), each side holding at least 20 % of the
    samples. The times are bimodal when the step between the sides' medians is at least
    (3 + 20 / n) times the wider side's interquartile range (a single hump split in two gives
    1.6 to 2; the 20 / n guards small samples, where a few points understate the spread) and
    at least ``min_step_pct`` of the overall median (a smaller step cannot be what keeps the
    median's interval wider than that). Needs 20 samples.
    """
    t = np.sort(np.asarray(times_ms, dtype=np.float64))
    n = int(t.size)
    if n < _BIMODAL_MIN_N:
        return None
    least = math.ceil(_CLUSTER_MIN_SHARE * n)
    prefix = np.concatenate([[0.0], np.cumsum(t)])
    sizes = np.arange(least, n - least + 1)  # candidate sizes of the lower side

    def deviation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        # sum |t[a:b] - median| = (sum of its upper half) - (sum of its lower half)
        h = (b - a) // 2
        return (prefix[b] - prefix[b - h]) - (prefix[a + h] - prefix[a])

    cost = deviation(np.zeros_like(sizes), sizes) + deviation(sizes, np.full_like(sizes, n))
    size = int(sizes[np.argmin(cost)])
    low, high = t[:size], t[size:]
    step = float(np.median(high) - np.median(low))
    spread = max(float(np.subtract(*np.percentile(side, [75, 25]))) for side in (low, high))
    if step < (_STEP_PER_IQR + _SMALL_N / n) * spread:
        return None
    if step <= 0 or 100.0 * step < min_step_pct * float(np.median(t)):
        return None
    return float(np.median(low)), float(np.median(high))


# The fewest timed launches of a first batch the budget shortens (adaptive_repeats).
FLOOR_REPEATS = 5


@dataclass(frozen=True)
class TimingPolicy:
    """How long to keep timing one configuration.

    ``budget_s`` counts the GPU time the timed launches themselves measured (the sum of their
    times), not wall time: it is what the launches cost, whatever else the host is doing.
    ``warmup`` launches (untimed) are the caller's to run before the first batch.
    """

    warmup: int = 3
    min_repeats: int = 20
    max_repeats: int = 2000
    target_ci_pct: float = 1.0
    budget_s: float = 2.0

    @classmethod
    def from_timing(cls, timing: Timing) -> TimingPolicy:
        """The policy of a plan's timing (whose values its schema and Timing checked)."""
        return cls(int(timing.warmup), int(timing.min_repeats), int(timing.max_repeats),
                   float(timing.target_ci_pct), float(timing.budget_s))  # fmt: skip


def adaptive_repeats(
    run_batch: Callable[[int], list[float]], policy: TimingPolicy, expected_ms: float | None = None
) -> tuple[list[float], str]:
    """Times from repeated ``run_batch(n)`` calls until the median is known to the target.

    The first batch is ``min_repeats`` whatever the budget (fewer would not summarise), or,
    where a launch is ``expected_ms`` long (a host call's warm-up), as many as the budget
    affords but at least FLOOR_REPEATS: a host BLAS call of a second is timed 5 times, not
    20. Each next batch doubles the count so far, capped by ``max_repeats`` and by the launches the
    remaining budget affords at the current median, so later batches overrun the budget only
    by the noise around that median. Returns (all times, note): the
    note is "" when the median's CI95 half-width reached ``target_ci_pct``, else one sentence
    saying how wide it stayed, after how many repeats, why it stopped, and whether the times
    are bimodal.
    """
    first = policy.min_repeats
    if expected_ms is not None and expected_ms > 0:
        affordable = math.floor(policy.budget_s * 1e3 / expected_ms)
        first = min(first, max(FLOOR_REPEATS, affordable))
    times = _batch(run_batch, first)
    while True:
        ci = ci95_pct(times)
        if ci <= policy.target_ci_pct:
            return times, ""
        n = len(times)
        if n >= policy.max_repeats:
            reason = "max_repeats reached"
            break
        remaining_ms = policy.budget_s * 1e3 - math.fsum(times)
        median = float(np.median(times))
        affordable = math.floor(remaining_ms / median) if median > 0 else policy.max_repeats
        count = min(n, policy.max_repeats - n, affordable)
        if count < 1:
            reason = f"time budget of {policy.budget_s:g} s spent"
            break
        times += _batch(run_batch, count)
    note = (
        f"CI95 of the median {ci:.3g} % (target {policy.target_ci_pct:g} %) "
        f"after {len(times)} repeats ({reason})"
    )
    clusters = bimodal_clusters(times, policy.target_ci_pct)
    if clusters is not None:
        note += f"; bimodal: two clusters near {_ms(clusters[0])} and {_ms(clusters[1])} ms"
    return times, note


def _batch(run_batch: Callable[[int], list[float]], count: int) -> list[float]:
    """One batch, checked: a short batch would silently bias the stopping rule."""
    times = [float(t) for t in run_batch(count)]
    if len(times) != count:
        raise ValueError(f"run_batch({count}) returned {len(times)} times")
    return times


def _ms(value: float) -> str:
    """Three significant digits, without an exponent, for a note a person reads."""
    if value <= 0:
        return "0"
    decimals = max(0, 2 - math.floor(math.log10(value)))
    return f"{value:.{decimals}f}"
