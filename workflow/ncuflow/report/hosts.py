"""What two runs' hosts differ in, and how much of a speedup that explains (report.compare).

Two GPUs of one model can time the same kernel differently: another power limit or clock
setting, a warmer or throttling GPU, another driver, a faster HBM stack. Each run keeps
its device's facts (device.json, NVML's among them) and each configuration the SM clock
NVML saw while it was timed (``sm_clock_mhz_timing``). A speedup is then normalised where
the configuration's bound says what it scales with: for a compute- or latency-bound one
the clock (cycles: time × SM clock), for a memory-bound one the level's measured ceiling
(the share of the device's own measured bandwidth it reached). Where a time verdict is
FASTER or SLOWER and the normalised interval lies within the least effect, the hosts
explain it: the verdict becomes HOST.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..vocab import COMPUTE, ENERGY_CEILING_NAMES, FASTER, HOST, LATENCY, MEMORY, SLOWER

if TYPE_CHECKING:
    import pandas as pd

# The facts compared, with their names in compare.md: those that decide a kernel's speed
# or the software that timed it; ceilings are compared apart, by their relative change.
FACTS = [
    ("name", "GPU"), ("driver", "driver"), ("vbios", "VBIOS"), ("power_limit_w", "power limit (W)"),
    ("sm_clock_max_mhz", "SM clock, max (MHz)"),
    ("sm_clock_application_mhz", "SM application clock (MHz)"),
    ("memory_clock_max_mhz", "memory clock, max (MHz)"), ("ecc", "ECC"),
    ("persistence", "persistence mode"), ("pcie", "PCIe link"), ("nvlinks_active", "NVLinks"),
    ("cuda_runtime", "CUDA runtime"), ("cupy", "CuPy"), ("ncu", "Nsight Compute"),
    ("cpu", "host CPU"),
]  # fmt: skip
CEILING_CHANGE = 0.02  # a measured ceiling that moved less than this is the same


def differences(facts_a: dict[str, Any], facts_b: dict[str, Any], rows: pd.DataFrame) -> list[str]:
    """One line per fact the two runs' devices differ in, the measured ceilings that moved
    by over CEILING_CHANGE, and the SM clocks the configurations were timed at (median per
    side) where they differ."""
    lines = [f"- {label}: {facts_a[key]} (A), {facts_b[key]} (B)" for key, label in FACTS
             if key in facts_a and key in facts_b and facts_a[key] != facts_b[key]]  # fmt: skip
    ceilings_a, ceilings_b = facts_a.get("ceilings", {}), facts_b.get("ceilings", {})
    # the energy ceilings move with the GPU's temperature and power state (3-4 % between two
    # runs of one H200): not a difference of the hosts
    for name in sorted(set(ceilings_a) & set(ceilings_b) - set(ENERGY_CEILING_NAMES)):
        a, b = _ceiling(ceilings_a, name), _ceiling(ceilings_b, name)
        if a and b and abs(b / a - 1.0) > CEILING_CHANGE:
            lines.append(f"- measured ceiling {name}: B's is {b / a:.3f}× A's")
    clocks = [rows.get(f"sm_clock_mhz_timing_{side}") for side in "ab"]
    if all(c is not None and c.notna().any() for c in clocks):
        a, b = (float(c.median()) for c in clocks)
        if abs(b / a - 1.0) > 0.005:
            lines.append(f"- SM clock while timed (median): {a:.0f} MHz (A), {b:.0f} MHz (B)")
    missing = [
        side for side, facts in (("A", facts_a), ("B", facts_b)) if "power_limit_w" not in facts
    ]
    if missing:
        lines.append(f"- {' and '.join(missing)} kept no NVML facts (a run before "
                     "2026-11-28, or without nvidia-ml-py): what else the hosts differ in is "
                     "unknown")  # fmt: skip
    return lines


def _ceiling(ceilings: dict[str, Any], name: str) -> float | None:
    entry = ceilings.get(name)
    return float(entry["value"]) if isinstance(entry, dict) and entry.get("value") else None


def host_factor(rows: pd.DataFrame, facts_a: dict[str, Any], facts_b: dict[str, Any]) -> np.ndarray:
    """Per row, what the hosts alone make of a speedup (time A / time B): the SM clocks'
    ratio B/A for a compute- or latency-bound configuration timed with a clock on both
    sides, the bound level's measured ceilings' ratio B/A for a memory-bound one; NaN where
    the bound or the figures are missing."""
    out = np.full(len(rows), np.nan)
    bound = rows["bound_b"].astype(str).to_numpy() if "bound_b" in rows else None
    if bound is None:
        return out
    if "sm_clock_mhz_timing_a" in rows and "sm_clock_mhz_timing_b" in rows:
        clock = (rows["sm_clock_mhz_timing_b"].astype(float) /
                 rows["sm_clock_mhz_timing_a"].astype(float)).to_numpy()  # fmt: skip
        on_clock = np.isin(bound, [COMPUTE, LATENCY])
        out[on_clock] = clock[on_clock]
    levels = rows.get("bound_level_b", rows["bound_b"]).astype(str).to_numpy()
    ceilings_a, ceilings_b = facts_a.get("ceilings", {}), facts_b.get("ceilings", {})
    for i in np.flatnonzero(bound == MEMORY):
        a, b = _ceiling(ceilings_a, levels[i]), _ceiling(ceilings_b, levels[i])
        out[i] = b / a if a and b else np.nan
    return out


def explained(verdicts: list[str], low: list[float], high: list[float], factor: np.ndarray,
              least: list[float]) -> list[str]:  # fmt: skip
    """The verdicts with HOST where a FASTER or SLOWER one's interval, divided by what the
    hosts make of it, lies within its row's least effect (``least``) of 1."""
    out = []
    for told, lo, hi, f, effect in zip(verdicts, low, high, factor, least, strict=True):
        up, down = 1.0 + effect, 1.0 / (1.0 + effect)
        normalised = told in (FASTER, SLOWER) and np.isfinite(f) and f > 0
        out.append(HOST if normalised and lo / f >= down and hi / f <= up else told)
    return out
