"""The GPU as every stage sees it: CuPy (imported only when needed, with a message that
says how to get it), CUDA's error types, the toolkit's headers, and the properties of the
device this process uses. Importing this module touches no GPU."""

from __future__ import annotations

import functools
import os
import platform
import shutil
from pathlib import Path
from typing import Any

from .errors import NcuflowError


def cupy() -> Any:
    """The cupy module, or a message that says how to install it."""
    try:
        import cupy
    except ImportError:
        raise NcuflowError(
            "CuPy is not installed: GPU mode needs it (pip install -e '.[gpu]'), "
            "or set mode: replay"
        ) from None
    return cupy


def cuda_errors() -> tuple[type[BaseException], ...]:
    """The exceptions CUDA raises through CuPy (runtime and driver)."""
    from cupy_backends.cuda.api.driver import CUDADriverError
    from cupy_backends.cuda.api.runtime import CUDARuntimeError

    return (CUDARuntimeError, CUDADriverError)


@functools.cache
def toolkit_includes() -> tuple[str, ...]:
    """The CUDA toolkit's include folder, where it has headers NVRTC's own may lack.

    The CUDA headers that come with pip's NVRTC have mma.h without the crt/mma.h it
    includes; the toolkit's folder (CUDA_PATH, beside nvcc, or /usr/local/cuda) has both."""
    nvcc = shutil.which("nvcc")
    candidates = [os.environ.get("CUDA_PATH"), nvcc and str(Path(nvcc).resolve().parents[1]),
                  "/usr/local/cuda"]  # fmt: skip
    for root in filter(None, candidates):
        include = Path(root) / "include"
        if (include / "crt" / "mma.h").is_file():
            return (f"-I{include}",)
    return ()


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


def _properties() -> dict[str, Any]:
    cp = cupy()
    return cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)


def _name(props: dict[str, Any]) -> str:
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def gpu_properties() -> dict[str, Any]:
    """The hardware facts of the GPU this process uses (the job's own, where it claimed one)."""
    props = _properties()
    return {
        "name": _name(props),
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


def cpu_model() -> str:
    """The host CPU's model name (host variants such as cpu_blas run on it)."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def measured_on(runs_on: str) -> str:
    """What a job measures on, as the table's ``device`` column names it: the GPU it holds,
    with its UUID (two GPUs of one model are two devices), or the host's CPU."""
    if runs_on != "gpu":
        return f"host: {cpu_model()}"
    props = _properties()
    raw = props.get("uuid")
    if not isinstance(raw, bytes) or len(raw) != 16:
        return _name(props)
    h = raw.hex()
    return f"{_name(props)} (GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]})"


def device_model(device: str) -> str:
    """The model in a ``device`` value, without the UUID that tells two GPUs of it apart."""
    return device.split(" (GPU-", 1)[0]
