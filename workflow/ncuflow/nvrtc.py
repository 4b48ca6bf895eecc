"""NVRTC, NVIDIA's runtime compiler, through its Python bindings (``pip install
cuda-bindings nvidia-cuda-nvrtc``): it runs on any CPU, so a kernel is compiled for a GPU
on a machine that has none. Imported only when used; importing this module needs neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from .errors import NcuflowError

INSTALL = "pip install cuda-bindings nvidia-cuda-nvrtc"


class CompileFailed(NcuflowError):
    """NVRTC refused a source: its log."""


class Compiled(NamedTuple):
    """A cubin and NVRTC's log of it: ptxas's report where the options ask for one
    (``-Xptxas -v``: each kernel's registers and the bytes it spills)."""

    cubin: bytes
    log: str


def bindings() -> Any | None:
    """NVRTC's Python module, or None where it is not installed."""
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        return None
    return nvrtc


def _checked(nvrtc: Any, result: tuple, what: str) -> Any:
    status, *values = result
    if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise NcuflowError(f"NVRTC: {what} failed ({status})")
    return values[0] if len(values) == 1 else values


def version() -> str:
    """NVRTC's version, major.minor (bindings installed)."""
    nvrtc = bindings()
    if nvrtc is None:
        raise NcuflowError(f"NVRTC's Python bindings are not installed ({INSTALL})")
    major, minor = _checked(nvrtc, nvrtc.nvrtcVersion(), "asking its version")
    return f"{major}.{minor}"


def _log(nvrtc: Any, program: Any) -> str:
    size = _checked(nvrtc, nvrtc.nvrtcGetProgramLogSize(program), "reading its log")
    log = b" " * size
    nvrtc.nvrtcGetProgramLog(program, log)
    return log.decode(errors="replace").strip("\x00 \n")


def compile_cubin(source: str, name: str, options: Sequence[str]) -> Compiled:
    """The cubin of ``source`` (``name`` in NVRTC's messages) compiled with ``options``,
    which name the architecture (``--gpu-architecture=sm_90``), and NVRTC's log;
    CompileFailed with the log where NVRTC refuses the source."""
    nvrtc = bindings()
    if nvrtc is None:
        raise NcuflowError(f"NVRTC's Python bindings are not installed ({INSTALL})")
    program = _checked(nvrtc, nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []),
                       "creating a program")  # fmt: skip
    try:
        encoded = [o.encode() for o in options]
        (status,) = nvrtc.nvrtcCompileProgram(program, len(encoded), encoded)
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CompileFailed(_log(nvrtc, program))
        size = _checked(nvrtc, nvrtc.nvrtcGetCUBINSize(program), "sizing the cubin")
        cubin = b" " * size
        nvrtc.nvrtcGetCUBIN(program, cubin)
        return Compiled(cubin, _log(nvrtc, program))
    finally:
        nvrtc.nvrtcDestroyProgram(program)
