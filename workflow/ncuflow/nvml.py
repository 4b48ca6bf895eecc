"""NVML (the ``nvidia-ml-py`` module, ``pynvml``) on the GPU this process uses: the facts
that can make two GPUs of one model time differently (power limit, clocks, ECC, links), and
the SM clock and throttling watched while a configuration is timed.

Everything here is optional: without the module, or where NVML refuses a query (a virtual
GPU, an older driver), a fact is absent and a watch says nothing, and a record says so in
its note instead of guessing. Importing this module touches no GPU.
"""

from __future__ import annotations

import functools
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

# The clock-event reasons (nvmlClocksEventReason*) that mean the GPU lowered its clocks for
# power or heat: a time measured meanwhile is the throttled GPU's. Idle, application-clock
# settings and sync boost are not throttling.
THROTTLE_REASONS = {
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
}
# A configuration is throttled where the SM clock fell this far below the device's maximum
# while it was timed (as nvbench's throttle check, with issue 46's 10 %)
CLOCK_DROP = 0.10


def _nvml() -> Any | None:
    try:
        import pynvml
    except ImportError:
        return None
    return pynvml


@functools.cache
def handle() -> Any | None:
    """NVML's handle of the GPU CUDA calls the current device (found by its PCI bus id, so
    CUDA_VISIBLE_DEVICES and NVML's own order cannot disagree), or None without NVML."""
    nvml = _nvml()
    if nvml is None:
        return None
    try:
        import cupy as cp  # NVML's handle is found by the GPU CUDA uses: none without CuPy

        nvml.nvmlInit()
        bus = cp.cuda.runtime.deviceGetPCIBusId(cp.cuda.Device().id)
        return nvml.nvmlDeviceGetHandleByPciBusId(bus.encode() if isinstance(bus, str) else bus)
    except Exception:  # no CuPy, or an NVMLError (of its many kinds): no NVML for this GPU
        return None


def _read(query: Callable[[], Any]) -> Any | None:
    """One NVML query, or None where the GPU or driver does not support it."""
    try:
        return query()
    except Exception:  # pynvml.NVMLError_NotSupported and the rest
        return None


def host_facts() -> dict[str, Any]:
    """What can make two GPUs of one model differ, as NVML reports it now: power limits (W),
    application and maximum clocks (MHz), ECC, persistence mode, PCIe link, active NVLinks,
    VBIOS, temperature (°C). Empty without NVML; a fact NVML refuses is left out."""
    nvml, device = _nvml(), handle()
    if nvml is None or device is None:
        return {}
    sm, mem = nvml.NVML_CLOCK_SM, nvml.NVML_CLOCK_MEM
    queries: dict[str, Callable[[], Any]] = {
        "power_limit_w": lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(device) / 1e3,
        "power_limit_default_w": lambda: (
            nvml.nvmlDeviceGetPowerManagementDefaultLimit(device) / 1e3
        ),
        "sm_clock_application_mhz": lambda: nvml.nvmlDeviceGetApplicationsClock(device, sm),
        "memory_clock_application_mhz": lambda: nvml.nvmlDeviceGetApplicationsClock(device, mem),
        "sm_clock_nvml_max_mhz": lambda: nvml.nvmlDeviceGetMaxClockInfo(device, sm),
        "memory_clock_nvml_max_mhz": lambda: nvml.nvmlDeviceGetMaxClockInfo(device, mem),
        "ecc": lambda: "on" if nvml.nvmlDeviceGetEccMode(device)[0] else "off",
        "persistence": lambda: "on" if nvml.nvmlDeviceGetPersistenceMode(device) else "off",
        "pcie": lambda: (
            f"gen {nvml.nvmlDeviceGetCurrPcieLinkGeneration(device)} "
            f"x{nvml.nvmlDeviceGetCurrPcieLinkWidth(device)}"
        ),
        "nvlinks_active": lambda: _active_links(nvml, device),
        "vbios": lambda: nvml.nvmlDeviceGetVbiosVersion(device),
        "temperature_c": lambda: nvml.nvmlDeviceGetTemperature(device, nvml.NVML_TEMPERATURE_GPU),
    }
    facts = {name: _read(query) for name, query in queries.items()}
    return {name: value for name, value in facts.items() if value is not None}


def _active_links(nvml: Any, device: Any) -> int:
    active = 0
    for link in range(nvml.NVML_NVLINK_MAX_LINKS):
        state = _read(lambda link=link: nvml.nvmlDeviceGetNvLinkState(device, link))
        active += int(state == nvml.NVML_FEATURE_ENABLED)
    return active


class ClockWatch:
    """The SM clock and the clock-event reasons, sampled while a configuration's batches
    run (``sample``, called with launches in flight), and NVML's power and thermal violation
    counters read before and after (``start``, ``result``): whether the GPU throttled."""

    def __init__(self, sm_clock_max_mhz: float) -> None:
        self.nvml, self.device = _nvml(), handle()
        self.max_mhz = sm_clock_max_mhz
        self.clocks: list[int] = []
        self.reasons = 0
        self.violations: dict[str, int] = {}

    @property
    def works(self) -> bool:
        return self.nvml is not None and self.device is not None

    def start(self) -> None:
        self.clocks, self.reasons = [], 0
        self.violations = self._violation_ns()

    def sample(self) -> None:
        if not self.works:
            return
        nvml, device = self.nvml, self.device
        clock = _read(lambda: nvml.nvmlDeviceGetClockInfo(device, nvml.NVML_CLOCK_SM))
        if clock is not None:
            self.clocks.append(int(clock))
        reasons = _read(lambda: nvml.nvmlDeviceGetCurrentClocksEventReasons(device))
        self.reasons |= int(reasons or 0)

    def result(self) -> dict[str, Any]:
        """The record's fields: ``sm_clock_mhz_timing`` (median of the samples) and
        ``sm_clock_mhz_timing_min``, ``throttle`` (what throttled, '' where nothing did),
        and ``time_throttled``; empty without NVML or without a sample."""
        if not self.works or not self.clocks:
            return {}
        after = self._violation_ns()
        seen = throttle_reasons(self.reasons)
        seen += [f"{policy} violation for {(after[policy] - ns) / 1e6:.3g} ms"
                 for policy, ns in self.violations.items()
                 if policy in after and after[policy] > ns]  # fmt: skip
        lowest = min(self.clocks)
        if lowest < (1.0 - CLOCK_DROP) * self.max_mhz:
            seen.append(f"SM clock down to {lowest} MHz ({100 * lowest / self.max_mhz:.0f} % of "
                        f"its {self.max_mhz:.0f} MHz)")  # fmt: skip
        return {"sm_clock_mhz_timing": float(statistics.median(self.clocks)),
                "sm_clock_mhz_timing_min": lowest,
                "throttle": "; ".join(seen), "time_throttled": bool(seen)}  # fmt: skip

    def _violation_ns(self) -> dict[str, int]:
        """NVML's counters of the time the GPU spent held below its clocks by its power and
        its thermal policy (ns since the driver loaded), where it keeps them."""
        if not self.works:
            return {}
        nvml, device = self.nvml, self.device
        policies = {"power": nvml.NVML_PERF_POLICY_POWER, "thermal": nvml.NVML_PERF_POLICY_THERMAL}
        out = {}
        for name, policy in policies.items():
            status = _read(lambda policy=policy: nvml.nvmlDeviceGetViolationStatus(device, policy))
            if status is not None:
                out[name] = int(status.violationTime)
        return out


@dataclass(frozen=True)
class PowerSample:
    """One reading of NVML while a configuration runs back to back: the host's clock (s
    since the epoch), the energy counter (mJ since the driver loaded: NVML refreshes it
    about every 100 ms on an H200) and its field's timestamp (s since the epoch: the time
    of the read, not of the refresh, 2026-11-29), the instantaneous power (W), the SM and
    memory clocks (MHz), the GPU's and the memory's temperatures (°C) and the clock-event
    reasons (a bit mask, THROTTLE_REASONS)."""

    at_s: float
    energy_mj: int | None
    energy_at_s: float | None
    power_w: float | None
    sm_clock_mhz: int | None
    memory_clock_mhz: int | None
    temperature_c: int | None
    reasons: int
    memory_temperature_c: int | None = None


class PowerWatch:
    """NVML's energy counter, power, clocks and temperature, read (``sample``, or in a
    thread of its own: ``sampling``) while a configuration runs back to back
    (measure.energy). One read of the counter takes about 4 ms (H200, 2026-11-29), so a
    watch samples every few ms at best. ``warm``: this process has once run the GPU until
    its temperatures settled (measure.energy.warm_up), so that every run starts alike (the
    GPU may cool again between configurations). ``failed``: why the sampling thread
    stopped early ('' where it did not)."""

    def __init__(self) -> None:
        self.nvml, self.device = _nvml(), handle()
        self.samples: list[PowerSample] = []
        self.warm = False
        self.failed = ""
        nvml = self.nvml
        self.fields = [] if nvml is None else [nvml.NVML_FI_DEV_ENERGY,
                                                nvml.NVML_FI_DEV_POWER_INSTANT,
                                                nvml.NVML_FI_DEV_MEMORY_TEMP]  # fmt: skip

    @property
    def works(self) -> bool:
        return self.nvml is not None and self.device is not None

    def power_limit_w(self) -> float | None:
        nvml, device = self.nvml, self.device
        return _read(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(device) / 1e3)

    def temperatures(self) -> tuple[int | None, int | None]:
        """The GPU's and the memory's temperatures (°C) now, None where NVML has none."""
        nvml, device = self.nvml, self.device
        memory = _read(lambda: nvml.nvmlDeviceGetFieldValues(
            device, [nvml.NVML_FI_DEV_MEMORY_TEMP])[0])  # fmt: skip
        return (_read(lambda: nvml.nvmlDeviceGetTemperature(device, nvml.NVML_TEMPERATURE_GPU)),
                int(memory.value.uiVal) if memory is not None and
                memory.nvmlReturn == nvml.NVML_SUCCESS else None)  # fmt: skip

    @contextmanager
    def sampling(self, every_s: float) -> Iterator[None]:
        """Samples anew, in a thread of its own, every ``every_s`` (after each read) while
        the body runs: evenly in time, however the body's thread is held up (a host loop of
        launches blocks while the GPU's queue is full)."""
        self.samples, self.failed = [], ""
        stop = threading.Event()

        def loop() -> None:
            while not stop.is_set():
                try:
                    self.sample()
                except Exception as exc:  # a reply pynvml cannot read: say so, not die mute
                    self.failed = f"{type(exc).__name__}: {exc}"
                    return
                stop.wait(every_s)

        thread = threading.Thread(target=loop, name="nvml-power", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def sample(self) -> None:
        nvml, device = self.nvml, self.device
        energy = power = energy_at = memory_c = None
        values = _read(lambda: nvml.nvmlDeviceGetFieldValues(device, self.fields))
        if values is not None:  # the counter with the time NVML read it
            if values[0].nvmlReturn == nvml.NVML_SUCCESS:
                energy, energy_at = int(values[0].value.ullVal), values[0].timestamp / 1e6
            if values[1].nvmlReturn == nvml.NVML_SUCCESS:
                power = values[1].value.uiVal / 1e3
            if values[2].nvmlReturn == nvml.NVML_SUCCESS:
                memory_c = int(values[2].value.uiVal)
        if energy is None:  # an older driver: the counter alone, timed by the host
            energy = _read(lambda: nvml.nvmlDeviceGetTotalEnergyConsumption(device))
            energy_at = time.time() if energy is not None else None
        if power is None:  # NVML's own average where the instantaneous power is missing
            usage = _read(lambda: nvml.nvmlDeviceGetPowerUsage(device))
            power = usage / 1e3 if usage is not None else None
        self.samples.append(PowerSample(
            at_s=time.time(), energy_mj=energy, energy_at_s=energy_at, power_w=power,
            sm_clock_mhz=_read(lambda: nvml.nvmlDeviceGetClockInfo(device, nvml.NVML_CLOCK_SM)),
            memory_clock_mhz=_read(lambda: nvml.nvmlDeviceGetClockInfo(device,
                                                                        nvml.NVML_CLOCK_MEM)),
            temperature_c=_read(lambda: nvml.nvmlDeviceGetTemperature(
                device, nvml.NVML_TEMPERATURE_GPU)),
            reasons=int(_read(lambda: nvml.nvmlDeviceGetCurrentClocksEventReasons(device)) or 0),
            memory_temperature_c=memory_c,
        ))  # fmt: skip


def throttle_reasons(reasons: int) -> list[str]:
    """The names of the throttling clock-event reasons in a bit mask."""
    return [name for bit, name in THROTTLE_REASONS.items() if reasons & bit]
