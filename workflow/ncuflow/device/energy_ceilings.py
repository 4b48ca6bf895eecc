"""The energy ceilings (rule ``energy_ceilings``): the kernels of the FP32, FP16 tensor and
DRAM rate ceilings (device.ceilings) each run back to back for the energy tier's seconds
(measure.energy), their work per joule. Measured apart from the rate ceilings: a study that
turns the tier on or off keeps its rate ceilings, and what reads them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..measure.energy import gpu_energy
from ..nvml import PowerWatch
from .ceilings import (
    ENERGY_CEILINGS,
    ENERGY_PATTERNS,
    Device,
    best_of,
    measure_dram,
    measure_fma,
    measure_gemm,
    open_device,
)


def measure_energy_ceilings(
    log: Callable[[str], None], seconds: float
) -> dict[str, dict[str, Any]]:
    """The energy ceilings (ENERGY_CEILINGS, rule energy_ceilings): the kernels of the FP32,
    FP16 tensor and DRAM ceilings set up (and timed, which sizes them) as for their rates,
    then each pattern run back to back for ``seconds``; a ceiling is its best pattern."""
    device = open_device(log, seconds)
    # sizes the energy patterns (their rates are the ceilings stage's); the others not run
    measure_dram(device, rounds=1, only=ENERGY_PATTERNS["dram"])
    measure_fma(device, "ffma_loop", "float32", 2, "FP32 FMAs")
    measure_gemm(device, device.cp.float16, "float16 in and out", "tensor_fp16")
    return _energy_ceilings(device)


def _energy_ceilings(d: Device) -> dict[str, dict[str, Any]]:
    """The energy ceilings (ENERGY_CEILINGS): each pending pattern run back to back for the
    energy tier's seconds, its work per joule; a ceiling is its best pattern."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    watch = PowerWatch()  # one warm-up, before the first pattern
    for ceiling, pattern, launch, work, unit, method, launch_ms in d.pending:
        seconds = float(d.energy_s or 0.0)  # set: measure_energy_ceilings gave it
        run = gpu_energy(launch, True, seconds, launch_ms, watch, d.sm_clock_max_mhz)
        if not run.get("energy_j", 0) > 0:
            d.log(f"{ceiling} {pattern}: no energy ({run.get('energy_note', '')})")
            continue
        found.setdefault(ceiling, {})[pattern] = {
            "value": work / run["energy_j"], "unit": unit.replace("/s", "/J"),
            "method": f"{method} Run back to back for {seconds:g} s: "
                      f"{run['avg_power_w']:.0f} W by the {run['energy_method']}.",
            "avg_power_w": run["avg_power_w"]}  # fmt: skip
    d.pending.clear()
    out = {}
    for name, measured in ENERGY_CEILINGS.items():
        if measured in found:
            entry = out[name] = best_of(found[measured])
            d.log(f"{name}: {entry['value']:.4g} {entry['unit']} at {entry['avg_power_w']:.0f} W")
    return out
