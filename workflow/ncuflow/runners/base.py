"""The interface every runner implements (runners.gpu, runners.replay)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from ..plan import Plan

Log = Callable[[str], None]


class Runner(Protocol):
    """One implementation of the GPU stages."""

    def measure(self, plan: Plan, plan_path: Path, out: Path, device_out: Path, log: Log) -> None:
        """measure.json of a plan's pending configurations, and device.json of where."""

    def profile(self, plan: Plan, plan_path: Path, measure: Path, long: Path, csv: Path | None,
                log: Log) -> None:  # fmt: skip
        """ncu_long.parquet (and profile_errors.json beside it) of the configurations that
        ran to the end; the raw CSV where ``csv`` is given."""

    def device_facts(self, out: Path, ceilings: Path | None) -> None:
        """device.json: the device's facts and its measured ceilings."""

    def ceilings(self, out: Path, log: Log) -> None:
        """ceilings.json: the device's measured ceilings."""
