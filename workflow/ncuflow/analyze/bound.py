"""What bounds a configuration: its roof, its place on the hierarchical roofline, and the
bound rule (memory, compute or latency, with the level).

The rule (docs/methods.md, "The bound rule"): every memory level's achieved bandwidth (its bytes
over the ncu duration) and the counted FLOP rate are divided by their ceilings: the
measured ceiling of this device where the ``ceilings`` rule ran, the theoretical one
otherwise. The SM's Speed of Light throughput stands beside the FLOP share, because a
kernel can saturate the SM's pipes with instructions that are not FLOPs. The busiest
resource decides: at or above ``LATENCY_PCT`` % it is the bound (memory with its level,
or compute with its roof's precision); two within ``TIE_POINTS`` points are "balanced" in
the reason and the larger is named. Below ``LATENCY_PCT`` % everywhere the kernel is
latency-bound and the level names the limiter: waves, occupancy or issue stalls.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..metrics import LEVELS, PRECISIONS, ROOFLINE_LEVELS
from ..vocab import COMPUTE, LATENCY, MEMORY

LATENCY_PCT = 60.0  # under this share of every ceiling, nothing is saturated
TIE_POINTS = 5.0  # two utilizations this close are balanced
WAVES_FULL = 1.0  # under one wave, SMs idle for want of blocks
OCCUPANCY_LOW_PCT = 25.0


def _si(value: float, unit: str) -> str:
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _nan(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def roof_of(row: Mapping[str, Any], compute: Sequence[str]) -> str:
    """The declared precision that carries most of the counted FLOPs ('' when none)."""
    flops = {p: _nan(row.get(f"flops_{p}")) for p in compute}
    flops = {p: f for p, f in flops.items() if math.isfinite(f) and f > 0}
    return max(flops, key=flops.__getitem__) if flops else ""


def _ceiling(measured: Mapping[str, Any], name: str, theoretical: float) -> tuple[float, str]:
    entry = measured.get(name)
    if entry and math.isfinite(_nan(entry.get("value"))) and entry["value"] > 0:
        return float(entry["value"]), "measured"
    return theoretical, "theoretical"


def derived_columns(
    row: Mapping[str, Any], compute: Sequence[str], measured: Mapping[str, Any]
) -> dict[str, Any]:
    """Columns that need the plan, the timing and the device besides the ncu metrics."""
    out: dict[str, Any] = {}
    counted = [_nan(row.get(f"flops_{p}")) for p in compute]
    out["flops_counted"] = math.fsum(f for f in counted if math.isfinite(f))
    every = [_nan(row.get(f"flops_{p}")) for p in PRECISIONS]
    out["flops_undeclared"] = math.fsum(f for f in every if math.isfinite(f)) - out["flops_counted"]
    roof = roof_of(row, compute)
    out["roof"] = roof
    out["roof_flops_per_s"] = _nan(row.get(f"peak_{roof}_flops_per_s")) if roof else math.nan
    out["roof_measured_flops_per_s"] = (
        _nan((measured.get(roof) or {}).get("value")) if roof else math.nan
    )
    # Output the L2 still held when the kernel ended reaches DRAM later: count it.
    counted_dram = _nan(row.get("dram_bytes"))
    deferred = min(_nan(row.get("l2_write_bytes")), _nan(row.get("output_bytes")))
    deferred = max(0.0, deferred - _nan(row.get("dram_write_bytes")))
    out["dram_bytes_counted"] = counted_dram
    out["dram_write_deferred_bytes"] = deferred if math.isfinite(deferred) else 0.0
    out["dram_bytes"] = counted_dram + out["dram_write_deferred_bytes"]
    seconds = _nan(row.get("ncu_time_ms")) / 1e3
    for level in ROOFLINE_LEVELS:
        traffic = out["dram_bytes"] if level == "dram" else _nan(row.get(f"{level}_bytes"))
        out[f"ai_{level}"] = out["flops_counted"] / traffic if traffic > 0 else math.nan
    out["achieved_flops_per_s"] = out["flops_counted"] / seconds if seconds > 0 else math.nan
    # bytes DRAM moved while the kernel ran: the deferred writes happen after it
    out["dram_gbps"] = counted_dram / seconds / 1e9 if seconds > 0 else math.nan
    return out


def _utilizations(
    row: Mapping[str, Any], measured: Mapping[str, Any]
) -> tuple[dict[str, tuple[float, float, float, str]], tuple[float, float, float, str]]:
    """Per level and for the roof: (% of ceiling, achieved rate, ceiling, basis)."""
    seconds = _nan(row.get("ncu_time_ms")) / 1e3
    levels = {}
    for name in LEVELS:
        bytes_key = "dram_bytes_counted" if name == "dram" else f"{name}_bytes"
        if name == "shared":  # wavefronts, so that bank conflicts count as busy time
            rate = (
                _nan(row.get("peak_shared_bytes_per_s"))
                * _nan(
                    row.get(
                        "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed"
                    )
                )
                / 100
            )
        else:
            rate = _nan(row.get(bytes_key)) / seconds if seconds > 0 else math.nan
        ceiling, basis = _ceiling(measured, name, _nan(row.get(f"peak_{name}_bytes_per_s")))
        levels[name] = (100 * rate / ceiling, rate, ceiling, basis)
    roof = str(row.get("roof") or "")
    rate = _nan(row.get("achieved_flops_per_s"))
    ceiling, basis = _ceiling(measured, roof, _nan(row.get("roof_flops_per_s")))
    compute = (100 * rate / ceiling if roof else 0.0, rate, ceiling, basis)
    return levels, compute


def _latency(row: Mapping[str, Any]) -> tuple[str, str]:
    waves = _nan(row.get("waves_per_sm"))
    achieved = _nan(row.get("achieved_occupancy_pct"))
    theoretical = _nan(row.get("theoretical_occupancy_pct"))
    if waves < WAVES_FULL:
        return "waves", (
            f"the grid fills {100 * waves:.0f} % of one wave "
            f"(launch__waves_per_multiprocessor {waves:.2f}): SMs idle for want of blocks"
        )
    if theoretical <= OCCUPANCY_LOW_PCT or achieved <= OCCUPANCY_LOW_PCT:
        limits = {
            k: _nan(row.get(f"occupancy_limit_{k}"))
            for k in ("registers", "shared_mem", "warps", "blocks")
        }
        limits = {k: v for k, v in limits.items() if math.isfinite(v)}
        by = min(limits, key=limits.__getitem__) if limits else "unknown"
        return "occupancy", (
            f"achieved occupancy {achieved:.0f} % (sm__warps_active), theoretical "
            f"{theoretical:.0f} %, limited by {by} (launch__occupancy_limit_{by} "
            f"{limits.get(by, math.nan):.0f} blocks per SM)"
        )
    issue = _nan(row.get("issue_active_pct"))
    return "issue stalls", (
        f"schedulers issue on {issue:.0f} % of cycles (sm__issue_active) at "
        f"{achieved:.0f} % occupancy: warps wait on dependencies, not on a saturated unit"
    )


def classify(row: Mapping[str, Any], measured: Mapping[str, Any]) -> tuple[str, str, str]:
    """(bound, bound_level, bound_reason) of one profiled configuration."""
    levels, (flop_pct, flop_rate, flop_ceiling, flop_basis) = _utilizations(row, measured)
    sm_pct = _nan(row.get("sm_throughput_pct"))
    known = {k: v for k, v in levels.items() if math.isfinite(v[0])}
    if not known or not math.isfinite(sm_pct):
        return "", "", "no ncu metrics for this configuration"
    level = max(known, key=lambda k: known[k][0])
    mem_pct, mem_rate, mem_ceiling, mem_basis = known[level]
    roof = str(row.get("roof") or "")
    compute_pct = max(flop_pct if math.isfinite(flop_pct) else 0.0, sm_pct)
    label = LEVELS[level].label
    mem_text = (
        f"{label} at {mem_pct:.0f} % of {mem_basis} peak "
        f"({_si(mem_rate, 'B/s')} of {_si(mem_ceiling, 'B/s')})"
    )
    if roof:
        flop_text = (
            f"{roof} at {flop_pct:.0f} % of {flop_basis} peak "
            f"({_si(flop_rate, 'FLOP/s')} of {_si(flop_ceiling, 'FLOP/s')})"
        )
        ridge = _nan(row.get("roof_flops_per_s")) / _nan(row.get("peak_dram_bytes_per_s"))
        ai = _nan(row.get("ai_dram"))
        side = "below" if ai < ridge else "above"
        ai_text = f"AI {ai:.3g} FLOP/B, {side} the {roof} ridge {ridge:.3g}"
    else:
        flop_text, ai_text = "no FLOPs counted", "a kernel that only moves bytes"
    sm_text = f"SM pipes at {sm_pct:.0f} % (Speed of Light)"
    notes = []
    if _nan(row.get("dram_write_deferred_bytes")) > 0.01 * _nan(row.get("dram_bytes")):
        notes.append(
            f"DRAM bytes include {_si(row['dram_write_deferred_bytes'], 'B')} of "
            "output still held in L2 when the kernel ended"
        )
    if _nan(row.get("dram_bytes")) < 0.98 * _nan(row.get("min_bytes")):
        notes.append(
            f"DRAM traffic {_si(row['dram_bytes'], 'B')} is below the compulsory "
            f"{_si(row['min_bytes'], 'B')}: part of the data was served from L2"
        )
    tail = "".join(f"; {n}" for n in notes)
    if max(mem_pct, compute_pct) < LATENCY_PCT:
        limiter, why = _latency(row)
        return (
            LATENCY,
            limiter,
            (
                f"latency: nothing above {LATENCY_PCT:.0f} % of its ceiling ({mem_text}; "
                f"{flop_text}; {sm_text}); {why}; {ai_text}{tail}"
            ),
        )
    balanced = abs(mem_pct - compute_pct) <= TIE_POINTS
    if mem_pct >= compute_pct:
        head = f"{mem_text}; {ai_text}"
        other = flop_text if flop_pct >= sm_pct else sm_text
        bound, bound_level = MEMORY, level
    else:
        if not roof or flop_pct >= sm_pct - TIE_POINTS:
            head = flop_text if roof else sm_text
        elif flop_pct < LATENCY_PCT:
            head = f"{sm_text} while {flop_text}: instructions other than FLOPs fill the SM"
        else:
            head = f"{sm_text}, {flop_text}"
        head = f"{head}; {ai_text}"
        other = mem_text
        bound, bound_level = COMPUTE, roof or "sm"
    prefix = f"balanced within {TIE_POINTS:.0f} points, the larger named: " if balanced else ""
    return bound, bound_level, f"{prefix}{head}; next: {other}{tail}"
