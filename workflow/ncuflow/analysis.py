"""Roofline position and the bound rule.

The rule (documented in the README): a configuration sits on the memory side of the DRAM
roofline when its DRAM arithmetic intensity (counted FLOPs per DRAM byte) is below the
ridge point (peak FP32 FLOP/s over peak DRAM bytes/s, both read by ncu on that device);
otherwise on the compute side. That position is checked against the Speed of Light
percentages: the unit that is busier (memory pipelines vs SM) must agree. When they
disagree, the SOL percentages decide, because they measure what actually saturated (a
kernel above the DRAM ridge can still be bound by L1 or L2 traffic), and the reason says
so. Below 60 % on both, the kernel is latency-limited: the bound names the busier unit and
the reason says that neither is near its peak.
"""

from __future__ import annotations

import math

import pandas as pd

MEMORY, COMPUTE = "memory", "compute"
# Under this share of peak on both the SM and memory, neither is the limit: latency is.
LATENCY_PCT = 60.0


def classify(ai_dram: float, ridge: float, memory_pct: float, sm_pct: float) -> tuple[str, str]:
    """(bound, reason) for one configuration; ('', why) when the metrics are missing."""
    if any(not math.isfinite(x) for x in (memory_pct, sm_pct)):
        return "", "no Speed of Light metrics"
    sol = MEMORY if memory_pct >= sm_pct else COMPUTE
    sol_text = f"SOL memory {memory_pct:.0f}% vs SM {sm_pct:.0f}%"
    if not (math.isfinite(ai_dram) and math.isfinite(ridge)):
        return sol, f"{sol_text}; no DRAM intensity (no DRAM traffic counted)"
    side = MEMORY if ai_dram < ridge else COMPUTE
    where = "below" if side == MEMORY else "above"
    roof_text = f"DRAM intensity {ai_dram:.3g} FLOP/B {where} the ridge {ridge:.3g}"
    if side == sol:
        reason = f"{roof_text}; {sol_text} agrees"
    elif sol == MEMORY:
        reason = f"{roof_text}, but {sol_text}: bound by on-chip (L1/L2/shared) traffic, not DRAM"
    else:
        reason = f"{roof_text}, but {sol_text}: the SM pipelines saturate before DRAM does"
    if max(memory_pct, sm_pct) < LATENCY_PCT:
        reason = f"latency-limited (neither above {LATENCY_PCT:.0f}% of peak); {reason}"
    return sol, reason


def ladder(table: pd.DataFrame, size: dict[str, int]) -> pd.DataFrame:
    """Each variant's fastest ok configuration at one problem size, with its share of the
    GPU library baseline of the same precision (cuBLAS fp32 for float32 kernels, cuBLAS
    fp16 for fp16 ones); rows in the order the variants appear in the table."""
    at_size = table[(table["status"] == "ok") & (table[list(size)] == pd.Series(size)).all(axis=1)]
    best = at_size.loc[at_size.groupby("variant", sort=False)["gflops"].idxmax()].copy()
    library = best[best["baseline"].astype(bool) & (best["runs_on"] == "gpu")]
    reference = dict(zip(library["dtype"], library["gflops"], strict=True))
    best["pct_of_library"] = [
        100 * g / reference[d] if d in reference else float("nan")
        for g, d in zip(best["gflops"], best["dtype"], strict=True)
    ]
    best["tflops"] = best["gflops"] / 1e3
    return best.reset_index(drop=True)
