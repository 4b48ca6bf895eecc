"""ptxas's report of a build, kept beside its cubin in the compile stage's cache: NVRTC
prints it where the options ask for it (``-Xptxas -v``, which changes no binary). It says,
for each function, the registers its threads use and the bytes it spills to local memory:
what ``ncuflow check`` tells of every tunable set before any GPU runs it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# what NVRTC is asked for, besides a build's own options
REPORT_OPTIONS = ("-Xptxas", "-v")
_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_REGISTERS = re.compile(r"Used (\d+) registers")


@dataclass(frozen=True)
class Resources:
    """One function of a build as ptxas reports it (registers: of an entry function)."""

    function: str
    registers: int | None = None
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0


def report_path(cubin: Path) -> Path:
    """Where the report of a cubin of the cache is kept."""
    return cubin.with_suffix(".ptxas.txt")


def read_report(text: str) -> list[Resources]:
    """Each function the report names, in its order, with what it says of it."""
    found: dict[str, dict] = {}
    current = None
    for line in text.splitlines():
        if match := _ENTRY.search(line) or _PROPERTIES.search(line):
            current = match[1]
            found.setdefault(current, {})
        elif current is not None and (match := _SPILLS.search(line)):
            found[current].update(spill_store_bytes=int(match[1]), spill_load_bytes=int(match[2]))
        elif current is not None and (match := _REGISTERS.search(line)):
            found[current]["registers"] = int(match[1])
    return [Resources(name, **values) for name, values in found.items()]


def entry_functions(text: str) -> list[str]:
    """The kernels the report says it compiled."""
    return _ENTRY.findall(text)


def spilled_bytes(text: str) -> int:
    """The most bytes any function of the build stores to local memory for want of
    registers (0: none spills)."""
    return max((r.spill_store_bytes for r in read_report(text)), default=0)
