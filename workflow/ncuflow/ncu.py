"""The one module that runs Nsight Compute (``ncu``): finding it, asking it what it knows,
building its command line, running it under a time limit, exporting its reports.

Every message names ncu's own words and the fix; nothing here knows about plans or
stages (profile/ runs the profiling stage on top of this).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .children import spawn, stop
from .errors import NcuflowError
from .files import atomic_write, temporary_beside, user_cache
from .metrics import base_name, unlisted
from .vocab import NVTX_PREFIX

PERMISSION_HELP = (
    "ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM): the driver lets "
    "only administrators profile. Either run the workflow as root (or with sudo), or allow "
    "every user: as root write 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' to "
    "/etc/modprobe.d/nvidia-profiling.conf and reboot (see "
    "https://developer.nvidia.com/ERR_NVGPUCTRPERM). The timings already measured are kept."
)
# The sections of ncu 2025.3 (ncu --list-sections), checked against where ncu is absent.
KNOWN_SECTIONS = (
    "ComputeWorkloadAnalysis", "InstructionStats", "LaunchStats", "MemoryWorkloadAnalysis",
    "MemoryWorkloadAnalysis_Chart", "MemoryWorkloadAnalysis_Tables", "NumaAffinity", "Nvlink",
    "Nvlink_Tables", "Nvlink_Topology", "Occupancy", "PmSampling", "PmSampling_WarpStates",
    "SchedulerStats", "SourceCounters", "SpeedOfLight",
    "SpeedOfLight_HierarchicalDoubleRooflineChart", "SpeedOfLight_HierarchicalHalfRooflineChart",
    "SpeedOfLight_HierarchicalSingleRooflineChart", "SpeedOfLight_HierarchicalTensorRooflineChart",
    "SpeedOfLight_RooflineChart", "WarpStateStats", "WorkloadDistribution",
)  # fmt: skip


# The explain tier's sections besides the sweep's: stall reasons, schedulers and the
# instruction mix, which cost little beside the sweep's (benchmarks/profile_job.py).
EXPLAIN_SECTIONS = ("WarpStateStats", "SchedulerStats", "InstructionStats")
# The source tier's besides those: per-PC source counters (an instrumented replay) and the
# memory tables (sectors per request, bank conflicts), each about as costly as the sweep.
SOURCE_SECTIONS = ("SourceCounters", "MemoryWorkloadAnalysis_Tables")


@dataclass(frozen=True)
class NcuSettings:
    """How ncu runs: the executable, what it collects, its clocks, and how many
    configurations one ncu process profiles (a chunk)."""

    path: str = "ncu"
    sections: tuple[str, ...] = ()
    clock_control: str = "none"
    extra_metrics: tuple[str, ...] = ()
    chunk_size: int = 64
    # the explain tier: which configurations (best per size, all, none) and its sections
    explain: str = "best"
    explain_sections: tuple[str, ...] = EXPLAIN_SECTIONS
    # the source tier: which configurations (shortest, longest, best, all, none), its sections
    source: str = "shortest"
    source_sections: tuple[str, ...] = SOURCE_SECTIONS
    # ncu processes alive at once (the profile job's threads): with 2, the next chunk's
    # starts while one profiles, and waits before it touches the GPU
    processes: int = 1

    @classmethod
    def from_config(cls, ncu: dict[str, Any]) -> NcuSettings:
        """The settings of a config's ``ncu`` section (validated, defaults filled)."""
        return cls(ncu["path"], tuple(ncu["sections"]), ncu["clock_control"],
                   tuple(ncu["extra_metrics"]), ncu["chunk_size"], ncu["explain"],
                   tuple(ncu["explain_sections"]), ncu["source"],
                   tuple(ncu["source_sections"]))  # fmt: skip

    def recorded(self) -> dict[str, Any]:
        """The settings that decide what a profile holds, as a capture records them."""
        return {"sections": list(self.sections), "clock_control": self.clock_control,
                "extra_metrics": list(self.extra_metrics)}  # fmt: skip


class ProfileFailed(NcuflowError):
    """ncu could not profile a chunk (it failed, or outlived its time limit): the chunk's
    configurations become profile_error with this message; the others go on."""


def find_ncu(path: str) -> str:
    """The ncu executable, or a message that says how to point at it."""
    found = shutil.which(path)
    if found is None:
        raise NcuflowError(
            f"ncu (Nsight Compute) was not found: ncu.path is {path!r} and no such program "
            "is on PATH. Put Nsight Compute's folder on PATH (for example "
            "export PATH=/usr/local/cuda/bin:$PATH), or set ncu.path in config.yaml to the "
            "full path of ncu (for example /opt/nvidia/nsight-compute/2025.3.1/ncu)"
        )
    return found


def ncu_version(ncu: str) -> str:
    proc = subprocess.run([ncu, "--version"], capture_output=True, text=True)
    return proc.stdout.strip().splitlines()[-1] if proc.returncode == 0 else "unknown"


@functools.cache
def installed_sections(ncu_path: str) -> tuple[str, ...] | None:
    """The section identifiers the installed ncu knows, or None where there is no ncu."""
    ncu = shutil.which(ncu_path)
    if ncu is None:
        return None
    proc = subprocess.run([ncu, "--list-sections"], capture_output=True, text=True, timeout=60)
    names = [line.split()[0] for line in proc.stdout.splitlines() if line.split()]
    names = [n for n in names if n.replace("_", "").isalnum()]
    # a listing that lacks the basic sections was not understood: use the known list
    return tuple(names) if {"SpeedOfLight", "LaunchStats"} <= set(names) else None


def _metric_listing(ncu: str) -> str:
    """What ``ncu --query-metrics`` prints (1.2 s on an H100): kept in this user's cache
    (files.user_cache), named by ncu's file, the driver and the GPUs this process sees, so
    that only a machine's first profile job asks. A cache that cannot be written is
    skipped: ncu is asked each time, as before."""
    found = Path(shutil.which(ncu) or ncu).resolve()
    driver = Path("/proc/driver/nvidia")
    facts = [str(found), found.stat().st_mtime_ns, os.environ.get("CUDA_VISIBLE_DEVICES", ""),
             (driver / "version").read_text() if (driver / "version").is_file() else "",
             sorted(p.read_text() for p in driver.glob("gpus/*/information"))]  # fmt: skip
    kept = user_cache("ncu-metrics") / (
        hashlib.sha256(json.dumps(facts).encode()).hexdigest()[:16] + ".txt"
    )
    if kept.is_file():
        return kept.read_text()
    proc = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise NcuflowError(f"ncu --query-metrics failed: {proc.stderr.strip()[-2000:]}")
    with contextlib.suppress(OSError):  # a read-only home, say: nothing is kept
        kept.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(kept, proc.stdout)
    return proc.stdout


def _listed_metrics(listing: str) -> set[str]:
    """The base metrics an ``ncu --query-metrics`` listing names: the first word of each line
    where it is a counter's name (``unit__name``); its header lines and the lines a long
    description wraps onto are not."""
    words = (line.split(maxsplit=1)[0] for line in listing.splitlines()
             if line.strip() and not line[0].isspace())  # fmt: skip
    return {word for word in words if "__" in word}


def available_metrics(ncu: str, wanted: Sequence[str], log: Callable[[str], None]) -> list[str]:
    """The metrics of ``wanted`` that this GPU has: those its listing names and those ncu
    collects everywhere unlisted (metrics.unlisted). ncu refuses a run that asks for a
    counter the GPU lacks (fp8 tensor counters before Hopper, say): those are logged, never
    asked for."""
    bases = _listed_metrics(_metric_listing(ncu))
    kept = [m for m in wanted if base_name(m) in bases or unlisted(m)]
    missing = sorted(set(wanted) - set(kept))
    if missing:
        log(f"this GPU has no {len(missing)} of the registry's metrics: {', '.join(missing)}")
    return kept


def ncu_command(
    ncu: str,
    report: Path,
    sections: Sequence[str],
    clock_control: str,
    metrics_list: Sequence[str],
    target: Sequence[str],
) -> list[str]:
    """ncu over ``target`` (a command), kept to ncuflow's NVTX ranges, into ``report``."""
    metrics = ",".join(dict.fromkeys(metrics_list))
    command = [ncu, "--nvtx", "--nvtx-include", f"regex:{NVTX_PREFIX}.*/"]
    command += ["--clock-control", clock_control, "--force-overwrite", "-o", str(report)]
    for section in sections:
        command += ["--section", section]
    return [*command, "--metrics", metrics, *target]


_GATE_CHECK_S = 0.2  # how often a process started ahead looks whether its gate opened


def run_ncu(
    command: Sequence[str], log: Callable[[str], None], timeout_s: float | None = None,
    after: Path | None = None,
) -> float:  # fmt: skip
    """Run one ncu process; seconds it took. Errors carry ncu's own words and the fix; a
    process that outlives ``timeout_s`` is killed with everything it started. Where
    ``after`` names a file (the gate its worker waits for), the seconds count from when it
    appears."""
    started = time.perf_counter()
    proc = spawn(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = None  # set once the clock runs: at once, or when ``after`` appears
    try:
        while True:
            if deadline is None and timeout_s is not None and (after is None or after.exists()):
                deadline = time.perf_counter() + timeout_s
            wait = _GATE_CHECK_S if deadline is None else max(0.0, deadline - time.perf_counter())
            try:
                output, _ = proc.communicate(timeout=None if timeout_s is None else wait)
                break
            except subprocess.TimeoutExpired:
                if deadline is not None:  # it waited until the deadline
                    stop(proc)  # with everything it started
                    output, _ = proc.communicate()
                    for line in output.splitlines():
                        log(line)
                    raise ProfileFailed(
                        f"ncu did not finish within {timeout_s:.0f} s (its time limit): killed"
                    ) from None
    finally:  # interrupted too: ncu and what it profiles never outlive the stage
        stop(proc)
    seconds = time.perf_counter() - started
    for line in output.splitlines():
        log(line)
    if "ERR_NVGPUCTRPERM" in output:
        raise NcuflowError(PERMISSION_HELP)
    if proc.returncode != 0 or "==ERROR==" in output:
        errors = [line for line in output.splitlines() if "==ERROR==" in line or "Error" in line]
        shown = "\n".join(errors[-10:] or output.strip().splitlines()[-10:])
        raise ProfileFailed(f"ncu failed (exit code {proc.returncode}): {shown}")
    return seconds


def export_csv(ncu: str, report: Path, csv_path: Path) -> Callable[[], None]:
    """Start exporting the raw page of a report as CSV, in base units (bytes, ns, Hz, %), in
    an ncu process of its own (0.7 s on an H100), so that the caller reads the report
    meanwhile; the call returned waits for it, and raises if ncu failed."""
    command = [ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]
    partial = temporary_beside(csv_path)
    with partial.open("w") as out:
        proc = spawn(command, stdout=out, stderr=subprocess.PIPE, text=True)

    def wait() -> None:
        try:
            _, errors = proc.communicate()
        except BaseException:  # interrupted: no partial file stays behind
            partial.unlink(missing_ok=True)
            raise
        finally:
            stop(proc)
        if proc.returncode != 0:
            partial.unlink(missing_ok=True)
            raise NcuflowError(f"ncu could not export {report}: {errors.strip()[-2000:]}")
        partial.replace(csv_path)

    return wait
