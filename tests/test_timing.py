"""Adaptive timing statistics: the median's interval, the stopping rule and its note."""

import math
import re
from fractions import Fraction

import numpy as np
import pytest

from ncuflow.errors import ConfigError
from ncuflow.measure.timing import (
    FLOOR_REPEATS,
    TimingPolicy,
    adaptive_repeats,
    bimodal_clusters,
    ci95_pct,
    median_ci95,
    median_ci_ranks,
    timing_stats,
)
from ncuflow.plan import Timing


def coverage(n: int, j: int) -> Fraction:
    """P(x_(j) <= median < x_(n+1-j)) = P(j <= B <= n - j) for B ~ Binomial(n, 1/2)."""
    return Fraction(sum(math.comb(n, i) for i in range(j, n - j + 1)), 2**n)


def exact_lower_rank(n: int) -> int:
    """The largest j whose interval still covers 95 % (0 when none does), walking up the CDF."""
    j, below = 0, Fraction(0)  # below = P(B <= j - 1) for the next candidate j + 1
    while 1 - 2 * (below + Fraction(math.comb(n, j), 2**n)) >= Fraction(95, 100):
        below += Fraction(math.comb(n, j), 2**n)
        j += 1
    return j


def test_ranks_for_twenty() -> None:
    assert exact_lower_rank(20) == 6
    assert coverage(20, 6) >= Fraction(95, 100)  # 0.9586
    assert coverage(20, 7) < Fraction(95, 100)  # 0.8847
    assert median_ci_ranks(20) == (6, 15)


@pytest.mark.parametrize("n", [*range(1, 60), 100, 257, 1000])
def test_exact_ranks_match_the_binomial_cdf(n: int) -> None:
    j = exact_lower_rank(n)
    assert median_ci_ranks(n) == (None if j == 0 else (j, n + 1 - j))


def test_too_few_samples_for_an_interval() -> None:
    assert median_ci_ranks(5) is None
    assert median_ci_ranks(6) == (1, 6)  # [min, max] covers 1 - 2/64
    assert median_ci95([3.0, 1.0, 2.0, 5.0, 4.0]) == (3.0, 1.0, 5.0)
    assert median_ci95([2.0]) == (2.0, 2.0, 2.0)
    with pytest.raises(ValueError):
        median_ci95([])


@pytest.mark.parametrize("n", range(1001, 3001, 111))
def test_normal_approximation_is_at_most_one_rank_wider(n: int) -> None:
    j, k = median_ci_ranks(n)
    assert k == n + 1 - j
    assert exact_lower_rank(n) - 1 <= j <= exact_lower_rank(n)  # never narrower than exact


def test_interval_of_a_normal_sample_covers_and_shrinks() -> None:
    rng = np.random.default_rng(0)  # a 95 % interval misses for 1 seed in 20: this one does not
    median, lo, hi = median_ci95(rng.normal(10.0, 1.0, 5000))
    assert lo <= 10.0 <= hi
    assert lo < median < hi
    # the mean width over 100 samples goes like 1 / sqrt(n), at the asymptotic
    # 2 * 1.96 * sqrt(pi / 2) * sigma / sqrt(n) of the normal's median (a little wider at
    # small n, where whole ranks overshoot 95 %: 0.9648 at n = 100)
    scaled = []
    for n in (400, 1600, 6400):
        widths = [
            hi - lo for _, lo, hi in (median_ci95(rng.normal(10.0, 1.0, n)) for _ in range(100))
        ]
        scaled.append(float(np.mean(widths)) * math.sqrt(n))
    assert scaled == pytest.approx([2 * 1.96 * math.sqrt(math.pi / 2)] * 3, rel=0.08)
    assert scaled[0] / scaled[-1] == pytest.approx(1.0, abs=0.1)


def test_interval_covers_at_least_95_percent() -> None:
    rng = np.random.default_rng(11)
    samples = rng.lognormal(0.0, 0.5, size=(1000, 30))  # skewed; the median is exactly 1
    covered = sum(lo <= 1.0 <= hi for _, lo, hi in map(median_ci95, samples))
    assert covered >= 940  # exact coverage at n = 30 is 0.957


def test_ci95_pct() -> None:
    times = [float(t) for t in range(1, 21)]  # median 10.5, ranks 6 and 15
    assert median_ci95(times) == (10.5, 6.0, 15.0)
    assert ci95_pct(times) == pytest.approx(100 * 4.5 / 10.5)
    # the wider side counts
    assert ci95_pct([1.0, 1.0, 1.0, 1.0, 9.0]) == pytest.approx(800.0)
    assert ci95_pct([2.0] * 30) == 0.0


def test_timing_stats() -> None:
    stats = timing_stats([1.0, 2.0, 3.0, 4.0, 100.0])
    assert stats["time_ms"] == 3.0
    assert stats["time_ms_iqr"] == 2.0
    assert stats["time_cv"] == pytest.approx(43.6176 / 22, rel=1e-4)
    assert stats["time_ci95_pct"] == pytest.approx(100 * 97 / 3)
    assert timing_stats([0.5]) == {
        "time_ms": 0.5,
        "time_ms_iqr": 0.0,
        "time_cv": 0.0,
        "time_ci95_pct": 0.0,
    }


class Launcher:
    """A fake ``run_batch`` that draws times from ``draw`` and records the counts asked for."""

    def __init__(self, draw, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.draw = draw
        self.calls: list[int] = []

    def __call__(self, n: int) -> list[float]:
        self.calls.append(n)
        return [float(t) for t in self.draw(self.rng, n)]


def lognormal(median_ms: float, sigma: float):
    return lambda rng, n: median_ms * rng.lognormal(0.0, sigma, n)


def mixture(share_low: float, low_ms: float = 0.80, high_ms: float = 0.95):
    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        low = rng.random(n) < share_low
        return np.where(
            low, rng.normal(low_ms, 0.01 * low_ms, n), rng.normal(high_ms, 0.01 * high_ms, n)
        )

    return draw


def test_a_tight_kernel_stops_at_min_repeats() -> None:
    launch = Launcher(lambda rng, n: rng.normal(1.0, 0.003, n))
    times, note = adaptive_repeats(launch, TimingPolicy())
    assert launch.calls == [20]
    assert len(times) == 20
    assert note == ""
    assert ci95_pct(times) <= 1.0


def test_a_noisy_kernel_doubles_until_the_target() -> None:
    launch = Launcher(lognormal(1.0, 0.1), seed=1)
    times, note = adaptive_repeats(launch, TimingPolicy())
    assert note == ""
    assert launch.calls[:4] == [20, 20, 40, 80]
    assert all(b == sum(launch.calls[:i]) for i, b in enumerate(launch.calls) if i)
    assert len(times) == sum(launch.calls) > 20
    assert ci95_pct(times) <= 1.0
    # it stopped at the first count that met the target
    assert ci95_pct(times[: len(times) - launch.calls[-1]]) > 1.0


def test_max_repeats_stops_with_a_note() -> None:
    launch = Launcher(lognormal(0.03, 0.3), seed=2)
    times, note = adaptive_repeats(launch, TimingPolicy(max_repeats=500))
    assert len(times) == 500
    assert launch.calls == [20, 20, 40, 80, 160, 180]
    assert note.startswith(f"CI95 of the median {ci95_pct(times):.3g} % (target 1 %)")
    assert "after 500 repeats (max_repeats reached)" in note
    assert "bimodal" not in note


def test_the_budget_stops_with_a_note() -> None:
    launch = Launcher(lognormal(20.0, 0.1), seed=3)
    times, note = adaptive_repeats(launch, TimingPolicy(budget_s=1.0))
    assert "(time budget of 1 s spent)" in note
    assert f"after {len(times)} repeats" in note
    assert 20 < len(times) < 60
    assert 0.9 < sum(times) / 1e3 < 1.1  # the last batch fits what was left at the median


def test_min_repeats_run_even_past_the_budget() -> None:
    launch = Launcher(lognormal(200.0, 0.1), seed=4)
    _, note = adaptive_repeats(launch, TimingPolicy(budget_s=2.0))
    assert launch.calls == [20]
    assert "after 20 repeats (time budget of 2 s spent)" in note


@pytest.mark.parametrize(("expected_ms", "first"), [(1000.0, 5), (150.0, 13), (1.0, 20)])
def test_a_long_host_call_is_timed_as_often_as_the_budget_affords(
    expected_ms: float, first: int
) -> None:
    # a host BLAS call of a second: 5 repeats (FLOOR_REPEATS), not 20 seconds of them
    launch = Launcher(lambda rng, n: rng.normal(expected_ms, 0.001 * expected_ms, n), seed=7)
    times, _ = adaptive_repeats(launch, TimingPolicy(budget_s=2.0), expected_ms)
    assert launch.calls[0] == first and len(times) >= FLOOR_REPEATS


def test_a_bimodal_mixture_is_named() -> None:
    # 55 % near 0.80 ms, 45 % near 0.95 ms, cut off before the median settles in one cluster
    launch = Launcher(mixture(0.55), seed=5)
    times, note = adaptive_repeats(launch, TimingPolicy(max_repeats=60))
    assert len(times) == 60
    found = re.search(
        r"\(max_repeats reached\); bimodal: two clusters near (\S+) and (\S+) ms$", note
    )
    assert found, note
    assert float(found[1]) == pytest.approx(0.80, rel=0.01)
    assert float(found[2]) == pytest.approx(0.95, rel=0.01)
    low, high = bimodal_clusters(times)
    assert low == pytest.approx(0.80, rel=0.01)
    assert high == pytest.approx(0.95, rel=0.01)


def test_an_even_mixture_never_settles() -> None:
    launch = Launcher(mixture(0.5), seed=6)
    times, note = adaptive_repeats(launch, TimingPolicy())
    assert len(times) == 2000
    assert "after 2000 repeats (max_repeats reached); bimodal: two clusters near 0.8" in note


@pytest.mark.parametrize(
    "draw",
    [
        lambda rng, n: rng.normal(1.0, 0.2, n),
        lambda rng, n: rng.uniform(0.5, 1.5, n),
        lambda rng, n: rng.lognormal(0.0, 0.5, n),
        lambda rng, n: 0.03 + rng.exponential(0.03, n),
    ],
    ids=["normal", "uniform", "lognormal", "exponential"],
)
@pytest.mark.parametrize("n", [40, 2000])
def test_one_hump_is_not_bimodal(draw, n: int) -> None:
    assert bimodal_clusters(draw(np.random.default_rng(n), n)) is None


def test_two_humps_with_slow_outliers_are_bimodal() -> None:
    rng = np.random.default_rng(8)
    times = mixture(0.55)(rng, 2000)
    slow = rng.random(2000) < 0.1
    times[slow] *= 1 + rng.exponential(1.0, slow.sum())
    low, high = bimodal_clusters(times)
    assert low == pytest.approx(0.80, rel=0.01)
    assert high == pytest.approx(0.95, rel=0.02)


def test_bimodal_needs_a_step_and_samples() -> None:
    two = [1.0] * 10 + [1.005] * 10  # tight clusters, but a 0.5 % step
    assert bimodal_clusters(two) is None
    assert bimodal_clusters(two, min_step_pct=0.1) == (1.0, 1.005)
    assert bimodal_clusters([1.0] * 9 + [2.0] * 10) is None  # 19 samples


def test_run_batch_must_return_what_was_asked() -> None:
    with pytest.raises(ValueError, match="returned 19 times"):
        adaptive_repeats(lambda n: [1.0] * (n - 1), TimingPolicy())


def test_the_policy_is_the_plan_s_timing() -> None:
    assert TimingPolicy.from_timing(Timing()) == TimingPolicy()
    timing = Timing(warmup=5, min_repeats=30, max_repeats=300, target_ci_pct=2, budget_s=0.5)
    policy = TimingPolicy.from_timing(timing)
    assert policy == TimingPolicy(
        warmup=5, min_repeats=30, max_repeats=300, target_ci_pct=2.0, budget_s=0.5
    )
    assert isinstance(policy.target_ci_pct, float)


def test_fewer_most_repeats_than_least_are_refused() -> None:
    """The one bound the config's schema cannot say: refused as the study is read."""
    with pytest.raises(ConfigError) as info:
        Timing(min_repeats=50, max_repeats=10)
    assert info.value.path == "timing.max_repeats"
    assert "10 is below min_repeats (50)" in str(info.value)
