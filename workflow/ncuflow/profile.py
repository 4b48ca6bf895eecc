"""Profiling stage: ONE ncu process per (experiment, variant) profiles all its configurations.

The profiled process is the harness's profile worker, which launches each configuration
once inside an NVTX range named ``ncuflow_<config_id>``; ``--nvtx-include`` keeps ncu to
those launches, and the range names map the report's rows back to configurations.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .errors import NcuflowError
from .harness import slowest_launch_s
from .metrics import base_name, required_metrics
from .ncu_rep import LONG_COLUMNS, read_report, write_long
from .records import atomic_write
from .vocab import NVTX_PREFIX, PROFILE_ERRORS, plan_variant, profiled_ids

# Beside a variant's results: each chunk's report, long table, CSV and completion marker.
CHUNKS = "profile_chunks"

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


class ProfileFailed(NcuflowError):
    """ncu could not profile a chunk (it failed, or outlived its time limit): the chunk's
    configurations become profile_error with this message; the others go on."""


def run_ncu(
    command: Sequence[str], log: Callable[[str], None], timeout_s: float | None = None
) -> float:
    """Run one ncu process; seconds it took. Errors carry ncu's own words and the fix; a
    process that outlives ``timeout_s`` is killed with everything it started."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)  # fmt: skip
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        for line in output.splitlines():
            log(line)
        raise ProfileFailed(
            f"ncu did not finish within {timeout_s:.0f} s (its time limit): killed"
        ) from None
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


def export_csv(ncu: str, report: Path, csv_path: Path) -> None:
    """The raw page of a report as CSV, in base units (bytes, ns, Hz, %)."""
    command = [ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise NcuflowError(f"ncu could not export {report}: {proc.stderr.strip()[-2000:]}")
    csv_path.write_text(proc.stdout)


@dataclass(frozen=True)
class NcuSettings:
    """How ncu runs: the executable, what it collects, its clocks, and how many
    configurations one ncu process profiles (a chunk)."""

    path: str = "ncu"
    sections: tuple[str, ...] = ()
    clock_control: str = "none"
    extra_metrics: tuple[str, ...] = ()
    chunk_size: int = 16


# ncu replays each kernel once per pass of its metric set (about 40 with the sections and
# the registry); a chunk may take this many times its kernels' expected time, plus ncu's
# start-up and each configuration's set-up (compilation is cached by then).
REPLAY_PASSES, NCU_START_S, SETUP_S = 100, 60.0, 10.0


def chunk_limit(timing: dict[str, Any], rows: Sequence[dict[str, Any]]) -> float:
    """Seconds one ncu process may take over ``rows`` before it is killed."""
    launches = sum(slowest_launch_s(row) for row in rows)
    floor = float(timing.get("timeout_floor_s", 60))
    return floor + NCU_START_S + len(rows) * SETUP_S + REPLAY_PASSES * launches


def _chunk_key(ids: Sequence[str], measured: dict[str, dict[str, Any]]) -> str:
    """What a chunk profiled: its configurations and the records they were measured with."""
    text = json.dumps([(c, measured[c].get("fingerprint")) for c in ids])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def profile_stage(
    plan: Path,
    measure: Path,
    long_path: Path,
    csv_path: Path,
    settings: NcuSettings,
    log: Callable[[str], None],
) -> None:
    """Profile every configuration that ran to the end, ``settings.chunk_size`` per ncu
    process; write the exact long table of all of them, the raw CSV for people, and the
    configurations ncu could not profile with ncu's message (profile_errors.json).

    Each chunk's report and long table are kept in profile_chunks/ as the chunk completes
    (the marker file last, written atomically): a run stopped at any point profiles again
    only the chunks that had not completed, and those ncu failed on."""
    ncu = find_ncu(settings.path)
    plan_data = json.loads(plan.read_text())
    _, variant = plan_variant(plan_data)
    measured = json.loads(measure.read_text())
    ids = profiled_ids(variant, measured)
    rows = {r["config_id"]: r for r in plan_data["configs"]}
    folder = long_path.parent / CHUNKS
    folder.mkdir(exist_ok=True)
    chunks = [ids[i : i + settings.chunk_size] for i in range(0, len(ids), settings.chunk_size)]
    log(f"profiling {len(ids)} configurations in {len(chunks)} ncu processes")
    wanted = (
        available_metrics(ncu, [*required_metrics(), *settings.extra_metrics], log) if ids else []
    )
    parts, errors, csv_parts = [], {}, []
    for i, chunk in enumerate(chunks):
        base, key = folder / f"chunk_{i:03d}", _chunk_key(chunk, measured)
        marker = base.with_suffix(".json")
        earlier = json.loads(marker.read_text()) if marker.is_file() else {}
        if earlier.get("key") != key or earlier.get("errors"):  # new, changed or failed
            failed = _profile_chunk(
                ncu, plan, measure, base, chunk, settings, wanted, plan_data, rows, log
            )
            atomic_write(marker, json.dumps({"key": key, "errors": failed}))
        else:
            log(f"chunk {i}: profiled by an earlier run, kept")
        errors.update(json.loads(marker.read_text())["errors"])
        if base.with_suffix(".parquet").is_file():
            parts.append(pd.read_parquet(base.with_suffix(".parquet")))
            csv_parts.append(base.with_suffix(".csv"))
    long = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=LONG_COLUMNS)
    write_long(long, long_path)
    _join_csv(csv_parts, csv_path)
    atomic_write(long_path.with_name(PROFILE_ERRORS), json.dumps(errors, indent=1))
    log(f"{len(long)} metric values of {long['config_id'].nunique()} configurations; "
        f"{len(errors)} could not be profiled")  # fmt: skip


def _profile_chunk(
    ncu: str, plan: Path, measure: Path, base: Path, chunk: list[str], settings: NcuSettings,
    wanted: list[str], plan_data: dict[str, Any], rows: dict[str, dict[str, Any]],
    log: Callable[[str], None],
) -> dict[str, str]:  # fmt: skip
    """One ncu process over ``chunk``: its long table and CSV beside its report; the
    configurations it could not profile, with why. What an earlier run left of the chunk
    goes first, so that a failure never brings back another set of configurations."""
    for suffix in (".parquet", ".csv", ".ncu-rep"):
        base.with_suffix(suffix).unlink(missing_ok=True)
    command = ncu_command(ncu, base, settings.sections, settings.clock_control, wanted,
                          worker_command(plan, measure, chunk))  # fmt: skip
    limit = chunk_limit(plan_data["timing"], [rows[c] for c in chunk])
    log("$ " + " ".join(command))
    report = base.with_suffix(".ncu-rep")
    try:
        log(f"ncu took {run_ncu(command, log, limit):.1f} s for {len(chunk)} configurations")
    except ProfileFailed as failure:
        log(str(failure))
        return {c: str(failure) for c in chunk}
    long = read_report(report)
    write_long(long, base.with_suffix(".parquet"))
    export_csv(ncu, report, base.with_suffix(".csv"))
    return {}


def _join_csv(parts: Sequence[Path], out: Path) -> None:
    """The chunks' raw CSV exports as one file (one header)."""
    lines: list[str] = []
    for path in parts:
        if path.is_file():
            text = path.read_text().splitlines()
            lines += text if not lines else text[1:]
    atomic_write(out, "\n".join(lines) + ("\n" if lines else ""))
