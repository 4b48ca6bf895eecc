"""gpu or replay: what each job does, decided by what its machine has (mode: auto) or as
the config says; and the line a run prints first, saying so."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ..errors import NcuflowError
from ..files import read_json
from ..gpu import cuda_device
from ..ncu import find_ncu
from ..vocab import CAPTURE_INFO


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


def replays_here(config: dict[str, Any]) -> bool:
    """Whether this machine's jobs would replay (mode replay, or auto without a GPU and ncu
    here); mode gpu never does."""
    try:
        return resolve_mode(config["mode"], config["ncu"]["path"])[0] == "replay"
    except NcuflowError:  # mode gpu on a machine without one: its jobs run elsewhere
        return False


def mode_line(config: dict[str, Any], capture: Path, counts: tuple[int, int],
              searches: bool = False) -> str:  # fmt: skip
    """What a run prints first: what this machine would do with the mode (each job decides
    on the machine it runs on), where the numbers come from, and how many configurations
    (``searches``: a search's, at most its budget, are to run)."""
    total, pending = counts
    rest = "skipped or left to the searches" if searches else "skipped"
    tail = f"{total} configurations, {pending} to run, {total - pending} {rest}"
    try:
        here, why = resolve_mode(config["mode"], config["ncu"]["path"])
    except NcuflowError:  # mode gpu on a machine without one: the jobs may run elsewhere
        _, missing = cuda_device()
        return (f"ncuflow: mode gpu, but this machine cannot measure ({missing or 'no ncu'}): "
                f"each job must run where there is a GPU; {tail}")  # fmt: skip
    source = "measuring on the GPU"
    if here == "replay":
        info_file = capture / CAPTURE_INFO
        meta = read_json(info_file) if info_file.is_file() else {}
        source = f"no capture {capture.name} to replay"
        if meta:
            source = f"replaying capture {capture.name} ({meta['device']}, {meta['date']})"
    decided = "" if config["mode"] == here else "; each job decides on its own machine"
    return f"ncuflow: mode {here} ({why}{decided}): {source}; {tail}"
