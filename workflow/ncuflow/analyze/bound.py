"""What bounds a configuration: its roof, its place on the hierarchical roofline, the
FLOP check, and the bound rule (memory, compute, latency or borderline, with the level).

The rule (docs/methods.md, "The bound rule") reads the numbers Nsight Compute decides with:
each memory unit's utilization is the largest of its Speed of Light breakdown parts (DRAM;
L2 with writes, tags, fills and atomics; L1 with wavefronts, bank reads and writes and
requests; shared memory), and the memory figure is never below ncu's own Memory
Throughput; the compute figure is the larger of the SM's throughput (its busiest pipe or
issue) and the counted FLOPs' share of their roof. At or above ``LATENCY_PCT`` % the larger
decides (memory with its unit, or compute with its roof or pipe); under it nothing is
saturated and the kernel is latency-bound, the level naming the limiter (atomics, waves,
tail, occupancy or issue stalls). Within ``BAND_POINTS`` of the line it is borderline, both
candidates named. Beside it stands ncu's own SOLBottleneck verdict, and whether they agree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..breakdown import MEMORY_UNITS, SM_PIPES, part_of
from ..metrics import LEVELS, PRECISIONS, ROOFLINE_LEVELS
from ..vocab import BORDERLINE, COMPUTE, LATENCY, MEMORY

LATENCY_PCT = 60.0  # ncu's line: under this share of every peak, nothing is saturated
BAND_POINTS = 2.5  # within this of the line, a verdict is borderline
TIE_POINTS = 10.0  # memory and compute this close are balanced (both named)
IDLE_SM_PCT = 80.0  # SMs with no resident warp for over a fifth of the time: a launch limit
SMALL_GRID_WAVES = 1  # ncu's SOLBottleneck: a grid under one wave is a "Small Grid"
OCCUPANCY_LOW_PCT = 25.0
ACHIEVED_GAP_POINTS = 10.0  # ncu's AchievedOccupancy rule: achieved this far under theoretical
OCCUPANCY_RULES = {"AchievedOccupancy", "TheoreticalOccupancy"}  # ncu's advice on occupancy
OCCUPANCY_LIMITS = ("registers", "shared_mem", "warps", "blocks")  # launch__occupancy_limit_*
ATOMIC_HOT_PCT = 60.0  # one L2 slice's atomic units this busy: contention
FLOPS_OFF = 0.01  # counted FLOPs this far from the declared ones are flagged


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


def flops_check(row: Mapping[str, Any]) -> str:
    """'' when the counted FLOPs are within FLOPS_OFF of what the variant declares it
    executes (executed_flops, else the family's useful flops); else how far off, and why."""
    counted = _nan(row.get("flops_counted"))
    executed = _nan(row.get("executed_flops"))
    declared, what = (executed, "executed_flops") if math.isfinite(executed) else (
        _nan(row.get("flops")), "the family's flops")  # fmt: skip
    if not math.isfinite(counted) or not math.isfinite(declared):
        return ""
    if declared <= 0:
        return "" if counted <= 0 else f"ncu counted {_si(counted, 'FLOP')}, {what} is 0"
    ratio = counted / declared
    if abs(ratio - 1) <= FLOPS_OFF:
        return ""
    why = ("a library kernel: its tiles and padding are not declared" if row.get("baseline")
           else "declare executed_flops for work done beyond the useful FLOPs")  # fmt: skip
    return f"counted {ratio:.3g}× {what} ({_si(counted, 'FLOP')} of {_si(declared, 'FLOP')}): {why}"


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
    out["flops_check"] = flops_check({**row, **out})
    return out


def _part(row: Mapping[str, Any], unit: str, prefix: str = "util") -> str:
    """The breakdown part that decided a unit's figure ('' where none did)."""
    decided = row.get(f"{prefix}_{unit}_by")
    return decided if isinstance(decided, str) else ""


def _memory(row: Mapping[str, Any]) -> tuple[float, str, str]:
    """(% of peak, unit, what decided) of the busiest memory unit."""
    units = {u: _nan(row.get(f"util_{u}_pct")) for u in MEMORY_UNITS}  # dram, l2, l1, shared
    units = {u: v for u, v in units.items() if math.isfinite(v)}
    sol = _nan(row.get("memory_throughput_pct"))
    if not units:
        return sol, "", "ncu's Memory Throughput"
    unit = max(units, key=units.__getitem__)
    value = units[unit]
    decided = _part(row, unit)
    shared = units.get("shared", 0.0)
    pipe_bound = any(word in decided for word in ("bank", "lsu_wavefronts"))
    if unit == "l1" and shared >= 0.5 * value and pipe_bound:
        unit = "shared"  # the L1 data pipe is busy mostly with shared-memory wavefronts
        text = (f"L1 data pipe at {value:.0f} % ({part_of(decided).what}), "
                f"shared-memory wavefronts {shared:.0f} % of its peak")  # fmt: skip
    else:
        what = f"{part_of(decided).what}, {decided}" if decided else "its throughput"
        text = f"{LEVELS[unit].label} at {value:.0f} % of its peak ({what})"
    if math.isfinite(sol) and sol > value + 1:
        text += f"; ncu's Memory Throughput {sol:.0f} %"
    return max(value, sol if math.isfinite(sol) else 0.0), unit, text


def _measured_text(row: Mapping[str, Any], measured: Mapping[str, Any]) -> str:
    """DRAM's achieved rate against its theoretical and measured peaks."""
    rate = _nan(row.get("dram_gbps")) * 1e9
    theoretical = _nan(row.get("peak_dram_bytes_per_s"))
    ceiling = _nan((measured.get("dram") or {}).get("value"))
    if not math.isfinite(rate) or not theoretical > 0:
        return ""
    text = f"DRAM {_si(rate, 'B/s')}, {100 * rate / theoretical:.0f} % of theoretical"
    if ceiling > 0:
        text += f", {100 * rate / ceiling:.0f} % of measured"
    return text


def _compute(row: Mapping[str, Any], measured: Mapping[str, Any]) -> tuple[float, str, str]:
    """(% of peak, roof or pipe, what decided) of the SM."""
    sm = _nan(row.get("sm_throughput_pct"))
    roof = str(row.get("roof") or "")
    rate = _nan(row.get("achieved_flops_per_s"))
    flop_pct = 100 * rate / _nan(row.get("roof_flops_per_s")) if roof else math.nan
    pipes = {p: _nan(row.get(f"pipe_{p}_pct")) for p in SM_PIPES}
    pipes = {p: v for p, v in pipes.items() if math.isfinite(v)}
    pipe = max(pipes, key=pipes.__getitem__) if pipes else ""
    by = _part(row, pipe, "pipe") if pipe else ""
    pipe_text = f"SM at {sm:.0f} % ({part_of(by).what} {pipes[pipe]:.0f} %)" if by else (
        f"SM at {sm:.0f} %")  # fmt: skip
    if not roof:
        return sm, pipe or "sm", f"{pipe_text}; no FLOPs counted"
    ceiling = _nan((measured.get(roof) or {}).get("value"))
    flop_text = f"{roof} FLOPs at {flop_pct:.0f} % of theoretical peak ({_si(rate, 'FLOP/s')}"
    flop_text += f", {100 * rate / ceiling:.0f} % of measured)" if ceiling > 0 else ")"
    ridge = _nan(row.get("roof_flops_per_s")) / _nan(row.get("peak_dram_bytes_per_s"))
    ai = _nan(row.get("ai_dram"))
    side = "below" if ai < ridge else "above"
    flop_text += f", AI {ai:.3g} FLOP/B, {side} the {roof} ridge {ridge:.3g}"
    if flop_pct >= sm - TIE_POINTS:  # the FLOPs are what fills the SM
        return max(sm, flop_pct), roof, f"{flop_text}; {pipe_text}"
    return sm, pipe or "sm", f"{pipe_text} while {flop_text}: instructions other than FLOPs fill it"


def _grid(row: Mapping[str, Any]) -> tuple[str, str] | None:
    """Waves or tail where the launch leaves SMs idle or underfilled, else None."""
    waves = _nan(row.get("waves_per_sm"))
    active = _nan(row.get("sm_active_pct"))
    if waves < SMALL_GRID_WAVES:
        if active < IDLE_SM_PCT or not math.isfinite(active):
            what = f"SMs active {active:.0f} % of the time: SMs idle for want of blocks"
        else:  # every SM has a block, but fewer warps than it could hold
            what = (f"each SM holds fewer warps than it could (achieved occupancy "
                    f"{_nan(row.get('achieved_occupancy_pct')):.0f} % of a theoretical "
                    f"{_nan(row.get('theoretical_occupancy_pct')):.0f} %)")  # fmt: skip
        return "waves", (
            f"a small grid: it fills {100 * waves:.0f} % of one wave "
            f"(launch__waves_per_multiprocessor {waves:.2f}, ncu's Small Grid under "
            f"{SMALL_GRID_WAVES}); {what}")  # fmt: skip
    if active < IDLE_SM_PCT:
        return "tail", (
            f"SMs active {active:.0f} % of the time over {waves:.2f} waves: the last, partial "
            "wave (or uneven blocks) leaves SMs idle")  # fmt: skip
    return None


def occupancy_limiters(row: Mapping[str, Any]) -> list[str]:
    """The launch limits (OCCUPANCY_LIMITS) that cap a row's theoretical occupancy: those
    allowing the fewest blocks per SM, every tie (ncu names each); none where the launch
    allows every warp (100 %: all limits tie, none limits) or the report has none."""
    if not _nan(row.get("theoretical_occupancy_pct")) < 100:  # 100 %, or not in the report
        return []
    limits = {k: _nan(row.get(f"occupancy_limit_{k}")) for k in OCCUPANCY_LIMITS}
    limits = {k: v for k, v in limits.items() if math.isfinite(v)}
    fewest = min(limits.values(), default=math.nan)
    return [k for k, v in limits.items() if v == fewest]


def _occupancy(row: Mapping[str, Any]) -> str | None:
    """Why occupancy limits, where it does (ncu's first advice is an occupancy rule, or
    achieved or theoretical occupancy is at most OCCUPANCY_LOW_PCT), else None: the gap
    between achieved and theoretical occupancy, or the launch limit that caps theoretical
    occupancy below 100 %."""
    achieved = _nan(row.get("achieved_occupancy_pct"))
    theoretical = _nan(row.get("theoretical_occupancy_pct"))
    first = str(row.get("top_finding_rule") or "")
    low = theoretical <= OCCUPANCY_LOW_PCT or achieved <= OCCUPANCY_LOW_PCT
    if first not in OCCUPANCY_RULES and not low:
        return None
    binding = occupancy_limiters(row)
    named = ", ".join(f"launch__occupancy_limit_{k}" for k in binding)
    fewest = _nan(row.get(f"occupancy_limit_{binding[0]}")) if binding else math.nan
    capped = (f", limited by {' and '.join(binding)} ({named} {fewest:.0f} blocks per SM)"
              if binding else "")  # fmt: skip
    advised = f"; ncu's first advice is {first}" if first in OCCUPANCY_RULES else ""
    gap = theoretical - achieved > ACHIEVED_GAP_POINTS
    if first == "AchievedOccupancy" or (gap and first != "TheoreticalOccupancy"):
        return (f"achieved occupancy {achieved:.0f} % (sm__warps_active) against a theoretical "
                f"{theoretical:.0f} %{capped}: warps end unevenly or wait to be "
                f"scheduled{advised}")  # fmt: skip
    shown = f"{theoretical:.0f} %" if math.isfinite(theoretical) else "not in the report"
    return (f"theoretical occupancy {shown}{capped}; achieved {achieved:.0f} % "
            f"(sm__warps_active){advised}")  # fmt: skip


def _latency(row: Mapping[str, Any]) -> tuple[str, str]:
    """The limiter of a kernel that saturates nothing, and why."""
    hot = _nan(row.get("l2_atomic_busiest_slice_pct"))
    if hot >= ATOMIC_HOT_PCT:
        average = _nan(row.get("util_l2_pct"))
        return "atomics", (
            f"atomic contention: the busiest L2 slice's atomic units at {hot:.0f} % "
            f"(lts__d_atomic_input_cycles_active.max) while L2 as a whole is at {average:.0f} %: "
            "updates to few addresses serialize in the slices that hold them")  # fmt: skip
    grid = _grid(row)
    if grid is not None:
        return grid
    occupancy = _occupancy(row)
    if occupancy is not None:
        return "occupancy", occupancy
    issue = _nan(row.get("issue_active_pct"))
    achieved = _nan(row.get("achieved_occupancy_pct"))
    stall = str(row.get("top_stall") or "")
    waits = (f"warps wait mostly on {stall} ({_nan(row.get(f'stall_{stall}_pct')):.0f} % of the "
             f"cycles between issues)") if stall else "warps wait on dependencies"  # fmt: skip
    return "issue stalls", (
        f"schedulers issue on {issue:.0f} % of cycles (sm__issue_active) at {achieved:.0f} % "
        f"occupancy: {waits}, not on a saturated unit")  # fmt: skip


def ncu_classes(
    row: Mapping[str, Any], memory: float | None = None, sm: float | None = None
) -> set[str]:
    """The classes ncu's own SOLBottleneck title stands for (empty where there is none);
    "High Throughput" names the larger of ``memory`` and ``sm`` (the row's Memory and SM
    Throughput by default)."""
    title = str(row.get("ncu_bottleneck") or "").lower()
    if not title:
        return set()
    memory = _nan(row.get("memory_throughput_pct")) if memory is None else memory
    sm = _nan(row.get("sm_throughput_pct")) if sm is None else sm
    if "memory" in title:
        return {MEMORY}
    if "compute" in title:
        return {COMPUTE}
    if "balanced" in title:
        return {MEMORY, COMPUTE}
    if title == "high throughput":
        return {MEMORY} if memory >= sm else {COMPUTE}
    return {LATENCY}  # small grid, latency issue, low utilization


def bound_class(memory_pct: float, compute_pct: float) -> str:
    """The bound rule's class from its two figures (the busiest memory unit's and the SM's
    or its FLOPs' share of peak): the larger decides at or above LATENCY_PCT, nothing is
    saturated under it, and within BAND_POINTS of it the verdict is borderline. The Speed of
    Light figure draws its regions with this very function."""
    top, cls = (memory_pct, MEMORY) if memory_pct >= compute_pct else (compute_pct, COMPUTE)
    if abs(top - LATENCY_PCT) < BAND_POINTS:
        return BORDERLINE
    return LATENCY if top < LATENCY_PCT else cls


def classify(row: Mapping[str, Any], measured: Mapping[str, Any]) -> dict[str, Any]:
    """bound, bound_level, bound_reason and bound_agrees (with ncu's own verdict) of one
    profiled configuration, and the two figures the rule decided with (bound_memory_pct,
    bound_compute_pct)."""
    mem_pct, unit, mem_text = _memory(row)
    cpu_pct, level, cpu_text = _compute(row, measured)
    figures = {"bound_memory_pct": mem_pct, "bound_compute_pct": cpu_pct}
    if not math.isfinite(mem_pct) or not math.isfinite(cpu_pct):
        return {"bound": "", "bound_level": "", "bound_agrees": None,
                "bound_reason": "no ncu metrics for this configuration", **figures}  # fmt: skip
    dram = _measured_text(row, measured)
    tail = f"; {dram}" if dram and unit != "dram" else ""
    mem_text += f" ({dram})" if dram and unit == "dram" else ""
    top, (cls, lvl, text), (other_text) = (
        (mem_pct, (MEMORY, unit, mem_text), cpu_text) if mem_pct >= cpu_pct
        else (cpu_pct, (COMPUTE, level, cpu_text), mem_text))  # fmt: skip
    limiter, why = _latency(row)
    bound = bound_class(mem_pct, cpu_pct)
    if bound == BORDERLINE:
        bound_level = f"{cls} ({lvl}) or {LATENCY} ({limiter})"
        reason = (f"borderline: the busiest resource is at {top:.1f} %, within {BAND_POINTS} "
                  f"points of the {LATENCY_PCT:.0f} % line: {text}; else {why}")  # fmt: skip
    elif bound == LATENCY:
        bound_level = limiter
        reason = (f"latency: nothing above {LATENCY_PCT:.0f} % of its peak ({mem_text}; "
                  f"{cpu_text}); {why}")  # fmt: skip
    else:
        bound_level = lvl
        balanced = min(mem_pct, cpu_pct) >= LATENCY_PCT and abs(mem_pct - cpu_pct) <= TIE_POINTS
        prefix = f"balanced within {TIE_POINTS:.0f} points, the larger named: " if balanced else ""
        reason = f"{prefix}{text}; next: {other_text}"
    reason += tail
    classes = ncu_classes(row)
    ours = {cls, LATENCY} if bound == BORDERLINE else {bound}
    agrees = bool(ours & classes) if classes else None
    kernels = _nan(row.get("ncu_kernels"))
    memory, sm = (_nan(row.get(c)) for c in ("longest_kernel_memory_pct",
                                               "longest_kernel_sm_pct"))  # fmt: skip
    if classes and kernels > 1 and math.isfinite(memory) and math.isfinite(sm):
        # ncu's verdict is of the longest kernel alone: compared with ncuflow's reading of it
        agrees = bool(_kernel_classes(memory, sm) & ncu_classes(row, memory, sm))
        if agrees and not ours & classes:  # the configuration as a whole reads otherwise
            reason += (f"; ncu's {row.get('ncu_bottleneck')!r} is of the longest of its "
                       f"{kernels:.0f} kernels alone, which ncuflow reads the same (busiest "
                       f"memory unit {memory:.0f} %, SM {sm:.0f} %); the verdict above weighs "
                       f"all {kernels:.0f} by their time")  # fmt: skip
    if agrees is False:
        reason += (
            f"; ncu says {row.get('ncu_bottleneck')!r}: {_disagreement(row, mem_pct, cpu_pct)}"
        )
    return {"bound": bound, "bound_level": bound_level, "bound_reason": reason,
            "bound_agrees": agrees, **figures}  # fmt: skip


def _kernel_classes(memory_pct: float, sm_pct: float) -> set[str]:
    """The classes one kernel's figures stand for, by the same lines as a configuration's."""
    cls = bound_class(memory_pct, sm_pct)
    if cls == BORDERLINE:
        return {MEMORY if memory_pct >= sm_pct else COMPUTE, LATENCY}
    return {cls}


def _disagreement(row: Mapping[str, Any], mem_pct: float, cpu_pct: float) -> str:
    """Why ncuflow's verdict differs from ncu's (the figures each decided on)."""
    sol_mem, sol_sm = _nan(row.get("memory_throughput_pct")), _nan(row.get("sm_throughput_pct"))
    return (f"its Memory Throughput {sol_mem:.0f} % and SM Throughput {sol_sm:.0f} %, against "
            f"ncuflow's memory {mem_pct:.0f} % (busiest unit) and compute {cpu_pct:.0f} % "
            "(busiest pipe or FLOP share of the roof)")  # fmt: skip
