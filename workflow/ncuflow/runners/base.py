"""The interface every runner implements (runners.gpu, runners.replay)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..plan import Job

if TYPE_CHECKING:  # the stages' modules load pandas: a measure job needs neither
    from ..profile.members import Member

Log = Callable[[str], None]


class Runner(Protocol):
    """One implementation of the GPU stages."""

    def measure(self, jobs: Sequence[Job], journal: Path, log: Log) -> None:
        """Each job's measure.json (of its plan's pending configurations) and, in its
        folder, device.json (where they were measured); ``journal``: where a GPU run keeps
        every record as it is made."""

    def profile(self, members: Sequence[Member], chunks: Path, log: Log) -> None:
        """For each member (a measure job), in its folder: ncu_long.parquet of its
        configurations that ran to the end, and the files beside it (profile_errors.json,
        findings, the explain tier's values and lines, ncu's raw CSV); ``chunks``: where a
        GPU run keeps each ncu process's report as it completes."""

    def device_facts(
        self, out: Path, ceilings: Path | None, energy_ceilings: Path | None = None
    ) -> None:
        """device.json: the device's facts and its measured ceilings (its energy ceilings
        too, where ``energy_ceilings`` gives them)."""

    def ceilings(self, out: Path, log: Log) -> None:
        """ceilings.json: the device's measured ceilings."""

    def energy_ceilings(self, out: Path, log: Log, seconds: float) -> None:
        """energy_ceilings.json: the device's energy ceilings, each kernel run back to back
        for ``seconds`` (the energy tier's)."""
