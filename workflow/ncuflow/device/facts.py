"""The device's facts: of the GPU (or host) each measure job ran on, and of the run (with
its measured ceilings) for figure titles, the report and a capture's provenance."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from ..files import write_json
from ..gpu import cpu_model, cupy, gpu_properties, measured_on
from ..metrics import LEVELS
from ..ncu import find_ncu, ncu_version
from ..nvml import host_facts
from ..spec import DEVICE_FACTS
from ..vocab import VERSION


def _driver_version() -> str:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "unknown"
    proc = subprocess.run(
        [smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True
    )
    return (
        proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout else "unknown"
    )


def facts_differences(assumed: dict[str, int], found: dict[str, int]) -> list[str]:
    """One line per device fact the plan's restrictions assumed otherwise than this GPU has."""
    return [
        f"this GPU has {name} = {found[name]}, the plan assumed {assumed[name]} "
        f"(device_limits.{name}): the expressions that name it were decided for "
        "another GPU; set device_limits to this GPU's facts"
        for name in DEVICE_FACTS
        if name in assumed and name in found and assumed[name] != found[name]
    ]


def gpu_facts(ncu_path: str) -> dict[str, Any]:
    """What the figures' titles and a capture's provenance need: the GPU's facts and the
    versions of what measured on it."""
    cp = cupy()
    return {
        **gpu_properties(),
        **host_facts(),
        "driver": _driver_version(),
        "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
        "ncu": ncu_version(find_ncu(ncu_path)),
        "cupy": cp.__version__,
        "ncuflow": VERSION,
        "host": platform.node(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
        "date": dt.date.today().isoformat(),
    }


def footer(device: dict[str, Any]) -> str:
    """Where the numbers in a figure come from, in one line."""
    name = device.get("name", "unknown GPU")
    replay = device.get("replayed_from")
    if replay:
        return f"replayed from capture {replay}, {device.get('date', '?')} ({name})"
    return f"measured on {name}, {device.get('date', '?')}, ncuflow {device.get('ncuflow', '?')}"


FACTS = [
    ("name", "GPU"), ("compute_capability", "compute capability"), ("sm_count", "SMs"),
    ("sm_clock_max_mhz", "SM clock, max (MHz)"),
    ("memory_clock_max_mhz", "memory clock, max (MHz)"),
    ("memory_bytes", "memory (bytes)"), ("l2_bytes", "L2 (bytes)"), ("driver", "driver"),
    ("power_limit_w", "power limit (W)"),
    ("sm_clock_application_mhz", "SM application clock (MHz)"), ("ecc", "ECC"),
    ("persistence", "persistence mode"), ("pcie", "PCIe link"), ("nvlinks_active", "NVLinks"),
    ("cuda_runtime", "CUDA runtime"), ("ncu", "Nsight Compute"), ("cupy", "CuPy"),
    ("cpu", "host CPU"), ("date", "date measured"), ("ncuflow", "ncuflow"),
]  # fmt: skip


def facts_rows(device: dict[str, Any]) -> list[tuple[str, str]]:
    """(fact, value) rows of device.json for the report: the GPU, the software, where the
    numbers come from, and the ceilings measured on the device."""
    rows = [(label, str(device[key])) for key, label in FACTS if key in device]
    rows.append(("numbers", footer(device)))
    for name, entry in sorted(device.get("ceilings", {}).items()):
        if isinstance(entry, dict) and entry.get("value"):
            unit = entry.get("unit", "B/s" if name in LEVELS else "FLOP/s").replace("byte", "B")
            rows.append((f"measured ceiling: {name}", f"{entry['value']:.4g} {unit}"))
    return rows


def job_device(runs_on: str) -> dict[str, Any]:
    """The facts of what one measure job ran on, under ``device`` as the table names it:
    the GPU it held (each job reads its own, so a run over several GPUs, or several
    machines, keeps each one's facts; the versions of the tools are in device.json), or
    the host."""
    host = {"device": measured_on(runs_on), "host": platform.node(), "cpu_count": os.cpu_count()}
    if runs_on == "gpu":
        return {**gpu_properties(), **host_facts(), **host}
    return host


def _file_name(device: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in device).strip("_") + ".json"


def write_devices(job_files: list[Path], out_dir: Path) -> list[Path]:
    """results/devices/: one file per device the jobs ran on (its facts, as the first job
    on it read them, and the jobs that ran there), from each job's device.json."""
    found: dict[str, dict[str, Any]] = {}
    for path in job_files:
        facts = json.loads(path.read_text())
        facts.pop("ceilings", None)  # a replayed job's capture facts: measured once, elsewhere
        device = str(facts.get("device") or facts.get("name", "unknown"))
        entry = found.setdefault(device, {**facts, "device": device, "jobs": []})
        entry["jobs"].append(str(path.parent))
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for device, facts in sorted(found.items()):
        written.append(out_dir / _file_name(device))
        write_json(written[-1], facts)
    return written
