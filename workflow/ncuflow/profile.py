"""Profiling stage: ONE ncu process per (experiment, variant) profiles all its configurations.

The profiled process is the harness's profile worker, which launches each configuration
once inside an NVTX range named ``ncuflow_<config_id>``; ``--nvtx-include`` keeps ncu to
those launches, and the range names map the report's rows back to configurations.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .errors import NcuflowError
from .metrics import base_name, required_metrics
from .ncu_rep import read_report, write_long
from .vocab import NVTX_PREFIX, plan_variant, profiled_ids

PERMISSION_HELP = (
    "ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM): the driver lets "
    "only administrators profile. Either run the workflow as root (or with sudo), or allow "
    "every user: as root write 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' to "
    "/etc/modprobe.d/nvidia-profiling.conf and reboot (see "
    "https://developer.nvidia.com/ERR_NVGPUCTRPERM). The timings already measured are kept."
)


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


def available_metrics(ncu: str, wanted: Sequence[str], log: Callable[[str], None]) -> list[str]:
    """The metrics of ``wanted`` that this GPU has (ncu refuses a run that asks for one it
    lacks: fp8 tensor counters before Hopper, say); the rest are logged, never asked for."""
    proc = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise NcuflowError(f"ncu --query-metrics failed: {proc.stderr.strip()[-2000:]}")
    bases = {line.split()[0] for line in proc.stdout.splitlines() if "__" in line.split(" ")[0]}
    kept = [m for m in wanted if base_name(m) in bases or m.startswith("launch__")]
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
    metrics = ",".join(dict.fromkeys(metrics_list))
    command = [ncu, "--nvtx", "--nvtx-include", f"regex:{NVTX_PREFIX}.*/"]
    command += ["--clock-control", clock_control, "--force-overwrite", "-o", str(report)]
    for section in sections:
        command += ["--section", section]
    return [*command, "--metrics", metrics, *target]


def worker_command(plan: Path, measure: Path, only: Sequence[str] = ()) -> list[str]:
    return [
        sys.executable,
        "-m",
        "ncuflow.harness",
        "profile-worker",
        str(plan),
        str(measure),
        *only,
    ]


def run_ncu(command: Sequence[str], log: Callable[[str], None]) -> float:
    """Run one ncu process; seconds it took. Errors carry ncu's own words and the fix."""
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    output = proc.stdout + proc.stderr
    for line in output.splitlines():
        log(line)
    if "ERR_NVGPUCTRPERM" in output:
        raise NcuflowError(PERMISSION_HELP)
    if proc.returncode != 0 or "==ERROR==" in output:
        errors = [line for line in output.splitlines() if "==ERROR==" in line or "Error" in line]
        shown = "\n".join(errors[-10:] or output.strip().splitlines()[-10:])
        raise NcuflowError(f"ncu failed (exit code {proc.returncode}):\n{shown}")
    return seconds


def export_csv(ncu: str, report: Path, csv_path: Path) -> None:
    """The raw page of a report as CSV, in base units (bytes, ns, Hz, %)."""
    command = [ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise NcuflowError(f"ncu could not export {report}: {proc.stderr.strip()[-2000:]}")
    csv_path.write_text(proc.stdout)


def profile_stage(
    plan: Path,
    measure: Path,
    long_path: Path,
    csv_path: Path,
    report: Path,
    ncu_path: str,
    sections: Sequence[str],
    clock_control: str,
    extra_metrics: Sequence[str],
    log: Callable[[str], None],
) -> None:
    """Profile every configuration that measured ok with one ncu process; write the exact
    long table from the report, and the raw CSV export for people."""
    ncu = find_ncu(ncu_path)
    _, variant = plan_variant(json.loads(plan.read_text()))
    ok = profiled_ids(variant, json.loads(measure.read_text()))
    log(f"profiling {len(ok)} configurations in one ncu process")
    if not ok:
        csv_path.write_text("")
        report.write_bytes(b"")
        write_long(read_report(report), long_path)
        return
    base = report.with_suffix("")  # ncu appends .ncu-rep itself
    wanted = available_metrics(ncu, [*required_metrics(), *extra_metrics], log)
    command = ncu_command(ncu, base, sections, clock_control, wanted, worker_command(plan, measure))
    log("$ " + " ".join(command))
    seconds = run_ncu(command, log)
    log(f"ncu took {seconds:.1f} s")
    export_csv(ncu, report, csv_path)
    long = read_report(report)
    write_long(long, long_path)
    log(f"{len(long)} metric values of {long['config_id'].nunique()} configurations")
