"""The GPU runner: each stage measured for real on this machine's GPU (or host)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..device.facts import facts_differences, gpu_facts, job_device
from ..files import read_json, write_json
from ..ncu import NcuSettings
from ..plan import Job
from ..spec import load_variant
from ..vocab import DEVICE
from .base import Log

if TYPE_CHECKING:  # the stages' modules load pandas: a measure job needs neither
    from ..profile.members import Member


class GpuRunner:
    """Measures on this machine: its GPU, or its host for a host variant."""

    def __init__(self, ncu: NcuSettings) -> None:
        self.ncu = ncu

    def measure(self, jobs: Sequence[Job], journal: Path, log: Log) -> None:
        from ..measure.stage import measure_stage

        here: dict[str, dict] = {}  # the facts of the GPU (or host), read once
        warned: set[str] = set()
        for job in jobs:
            plan = job.plan
            runs_on = load_variant(Path(plan.kernels_dir), plan.family, plan.variant)[1].runs_on
            facts = here.setdefault(runs_on, job_device(runs_on))
            write_json(job.out / DEVICE, facts)
            if runs_on == "gpu":
                for line in facts_differences(plan.device_facts or {}, facts):
                    if line not in warned:
                        warned.add(line)
                        log(line)
                        print(f"ncuflow: warning: {line}", file=sys.stderr)
        measure_stage(jobs, journal, log)

    def profile(self, members: Sequence[Member], chunks: Path, log: Log) -> None:
        from ..profile.stage import profile_stage

        profile_stage(members, chunks, self.ncu, log)

    def device_facts(
        self, out: Path, ceilings: Path | None, energy_ceilings: Path | None = None
    ) -> None:
        measured = read_json(ceilings) if ceilings is not None else {}
        if energy_ceilings is not None:
            measured |= read_json(energy_ceilings)
        write_json(out, {**gpu_facts(self.ncu.path), "ceilings": measured})

    def ceilings(self, out: Path, log: Log) -> None:
        from ..device.ceilings import measure_ceilings

        write_json(out, measure_ceilings(log))

    def energy_ceilings(self, out: Path, log: Log, seconds: float) -> None:
        from ..device.energy_ceilings import measure_energy_ceilings

        write_json(out, measure_energy_ceilings(log, seconds))
