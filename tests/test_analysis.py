import math

import pytest

from ncuflow.analysis import classify


@pytest.mark.parametrize(
    ("ai", "memory_pct", "sm_pct", "bound", "words"),
    [
        (2.0, 90.0, 20.0, "memory", "below the ridge 20; SOL memory 90% vs SM 20% agrees"),
        (300.0, 45.0, 87.0, "compute", "above the ridge 20; SOL memory 45% vs SM 87% agrees"),
        (255.0, 97.0, 65.0, "memory", "bound by on-chip (L1/L2/shared) traffic, not DRAM"),
        (5.0, 30.0, 80.0, "compute", "the SM pipelines saturate before DRAM does"),
        (300.0, 20.0, 30.0, "compute", "latency-limited (neither above 60% of peak)"),
    ],
)
def test_bound_rule(ai: float, memory_pct: float, sm_pct: float, bound: str, words: str) -> None:
    got, reason = classify(ai, 20.0, memory_pct, sm_pct)
    assert got == bound
    assert words in reason


def test_missing_metrics() -> None:
    assert classify(1.0, 20.0, math.nan, 50.0) == ("", "no Speed of Light metrics")
    bound, reason = classify(math.nan, 20.0, 10.0, 90.0)
    assert bound == "compute" and "no DRAM intensity" in reason
