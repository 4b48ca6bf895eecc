"""Runners: where a GPU stage's numbers come from. ``GpuRunner`` measures on this
machine's GPU (or host, for a host variant); ``ReplayRunner`` copies exactly what a
capture recorded. Both answer the same four calls, one per GPU stage (measure, profile,
device facts, ceilings), so the stages' commands never branch on the mode."""

from __future__ import annotations

from pathlib import Path

from ..errors import NcuflowError
from ..ncu import NcuSettings
from .base import Log, Runner

__all__ = ["Log", "Runner", "open_runner"]


def open_runner(
    mode: str, ncu: NcuSettings, capture: Path | None, log: Log, exclusive: bool = True
) -> Runner:
    """The runner of this job: gpu or replay, decided here, in the job, by what this machine
    has (mode: auto), or as the config says; the capture must exist for a replay. An
    ``exclusive`` job (one that measures on a GPU) first claims a GPU of its own
    (runners.slots), before CUDA starts."""
    from ..device.mode import resolve_mode
    from .slots import claim_gpu, release_gpu

    if exclusive and mode != "replay":
        claim_gpu(log)
    resolved, why = resolve_mode(mode, ncu.path)
    log(f"mode {resolved}: {why}")
    if resolved == "gpu":
        from .gpu import GpuRunner

        return GpuRunner(ncu)
    release_gpu()
    if capture is None:
        raise NcuflowError("this job replays, but no capture was named (capture: in the config)")
    from ..capture.folder import checked_capture  # pandas: loaded where a job replays
    from .replay import ReplayRunner

    return ReplayRunner(checked_capture(capture))
