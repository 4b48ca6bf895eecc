"""The device: which mode to run in, and the facts of the GPU for titles and provenance."""

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

from . import __version__
from .errors import NcuflowError
from .profile import find_ncu
from .spec import DEVICE_FACTS


def cuda_device() -> tuple[str | None, str]:
    """(name of device 0, or None; why not)."""
    try:
        import cupy
    except ImportError:
        return None, "CuPy is not installed (pip install -e '.[gpu]' on a GPU machine)"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError without a driver, or a broken install
        return None, f"CUDA reports no usable device ({exc})"
    if count == 0:
        return None, "CUDA reports no device"
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    return (name.decode() if isinstance(name, bytes) else str(name)), ""


def resolve_mode(requested: str, ncu_path: str) -> tuple[str, str]:
    """(gpu or replay, the reason), or an error for mode gpu on a machine that cannot."""
    if requested == "replay":
        return "replay", "mode: replay"
    name, why = cuda_device()
    ncu = shutil.which(ncu_path)
    if requested == "gpu":
        if name is None:
            raise NcuflowError(
                f"mode is gpu but {why}. Run on a machine with an NVIDIA GPU, or set "
                "mode: replay (or auto) to replay the committed capture"
            )
        find_ncu(ncu_path)  # raises with the fix when ncu is missing
        return "gpu", f"{name}, ncu at {ncu}"
    if name is None:
        return "replay", why
    if ncu is None:
        return "replay", f"{name} found, but ncu ({ncu_path!r}) is not on PATH"
    return "gpu", f"{name}, ncu at {ncu}"


def mode_line(config: dict[str, Any], capture: Path, counts: tuple[int, int]) -> str:
    """What a run prints first: what this machine would do with the mode (each job decides
    on the machine it runs on), where the numbers come from, and how many configurations."""
    total, pending = counts
    tail = f"{total} configurations, {pending} to run, {total - pending} skipped"
    try:
        here, why = resolve_mode(config["mode"], config["ncu"]["path"])
    except NcuflowError:  # mode gpu on a machine without one: the jobs may run elsewhere
        _, missing = cuda_device()
        return (f"ncuflow: mode gpu, but this machine cannot measure ({missing or 'no ncu'}): "
                f"each job must run where there is a GPU; {tail}")  # fmt: skip
    source = "measuring on the GPU"
    if here == "replay":
        info_file = capture / "capture.json"
        meta = json.loads(info_file.read_text()) if info_file.is_file() else {}
        source = f"no capture {capture.name} to replay"
        if meta:
            source = f"replaying capture {capture.name} ({meta['device']}, {meta['date']})"
    decided = "" if config["mode"] == here else "; each job decides on its own machine"
    return f"ncuflow: mode {here} ({why}{decided}): {source}; {tail}"


def _ncu_version(ncu: str) -> str:
    proc = subprocess.run([ncu, "--version"], capture_output=True, text=True)
    return proc.stdout.strip().splitlines()[-1] if proc.returncode == 0 else "unknown"


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


def _cpu_model() -> str:
    """The host CPU's model name (host variants such as cpu_blas run on it)."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def facts_differences(assumed: dict[str, int], found: dict[str, int]) -> list[str]:
    """One line per device fact the plan's restrictions assumed otherwise than this GPU has."""
    return [
        f"this GPU has {name} = {found[name]}, the plan assumed {assumed[name]} "
        f"(device_limits.{name}): restrictions and grids that name it were decided for "
        "another GPU; set device_limits to this GPU's facts"
        for name in DEVICE_FACTS
        if name in assumed and name in found and assumed[name] != found[name]
    ]


def measured_on(runs_on: str) -> str:
    """What a job measures on, as the table's ``device`` column names it: the GPU it holds,
    with its UUID (two GPUs of one model are two devices), or the host's CPU."""
    if runs_on != "gpu":
        return f"host: {_cpu_model()}"
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    raw = props.get("uuid")
    if not isinstance(raw, bytes) or len(raw) != 16:
        return name
    h = raw.hex()
    return f"{name} (GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]})"


def gpu_properties() -> dict[str, Any]:
    """The hardware facts of the GPU this process uses (the job's own, where it claimed one)."""
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"]
    return {
        "name": name.decode() if isinstance(name, bytes) else str(name),
        "compute_capability": f"{props['major']}.{props['minor']}",
        "sm_count": props["multiProcessorCount"],
        "sm_clock_max_mhz": props["clockRate"] / 1000,
        "memory_clock_max_mhz": props["memoryClockRate"] / 1000,
        "memory_bus_width_bits": props["memoryBusWidth"],
        "memory_bytes": props["totalGlobalMem"],
        "l2_bytes": props["l2CacheSize"],
        "shared_mem_per_block_optin_bytes": props["sharedMemPerBlockOptin"],
        # the facts a plan's restrictions may name (spec.DEVICE_FACTS), by those names
        "max_threads_per_sm": props["maxThreadsPerMultiProcessor"],
        "smem_per_sm": props["sharedMemPerMultiprocessor"],
    }


def gpu_facts(ncu_path: str) -> dict[str, Any]:
    """What the figures' titles and a capture's provenance need: the GPU's facts and the
    versions of what measured on it."""
    import cupy

    return {
        **gpu_properties(),
        "driver": _driver_version(),
        "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
        "ncu": _ncu_version(find_ncu(ncu_path)),
        "cupy": cupy.__version__,
        "ncuflow": __version__,
        "host": platform.node(),
        "cpu": _cpu_model(),
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
            unit = "B/s" if name in {"dram", "l2", "l1", "shared"} else "FLOP/s"
            rows.append((f"measured ceiling: {name}", f"{entry['value']:.4g} {unit}"))
    return rows


def write(path: Path, facts: dict[str, Any]) -> None:
    path.write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")


def job_device(runs_on: str) -> dict[str, Any]:
    """The facts of what one measure job ran on, under ``device`` as the table names it:
    the GPU it held (each job reads its own, so a run over several GPUs, or several
    machines, keeps each one's facts; the versions of the tools are in device.json), or
    the host."""
    host = {"device": measured_on(runs_on), "host": platform.node(), "cpu_count": os.cpu_count()}
    if runs_on == "gpu":
        return {**gpu_properties(), **host}
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
        write(written[-1], facts)
    return written
