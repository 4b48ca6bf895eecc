"""A search's settings and its rounds, as the study plans them (the search itself: search/).

A search experiment measures in rounds: round r's proposals (``round<r>.json``, written by
rule ``search`` from the times of the rounds before) are split into ``jobs_per_round``
measure jobs, one GPU each. With ``overlap`` (the default), round r is proposed from the
times of the rounds before r - 1 and round r - 1's proposals, still in flight: it is
proposed and compiled on the CPU while the GPUs measure round r - 1. Its variants' parts
are those jobs: part ``p<i>`` is job ``i % jobs_per_round`` of round
``i // jobs_per_round`` (empty for a variant that round did not propose), and batch
``b<i>`` measures part ``p<i>`` of every variant. The number of rounds follows from the
budget, so the whole workflow is known before any job runs: no checkpoint, and a stopped
search resumes where its files end.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..files import read_json
from ..vocab import MEASURE, PLAN

GRID = "grid"


@dataclass(frozen=True)
class SearchSettings:
    """An experiment's ``search`` section (config schema: experiments.<name>.search)."""

    strategy: str = GRID
    budget: int = 100
    budget_s: float | None = None
    batch: int = 16
    jobs_per_round: int = 1
    seed: int = 0
    prune: str = "roofline"
    overlap: bool = True

    @classmethod
    def from_config(cls, data: Mapping[str, Any] | None) -> SearchSettings:
        return cls(**(data or {}))

    @classmethod
    def from_round(cls, data: Mapping[str, Any]) -> SearchSettings:
        """The settings a round file records: one written before rounds could overlap, or
        had a time budget, has neither key (its rounds waited for the one before)."""
        return cls(**{"overlap": False, **data})

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def searches(self) -> bool:
        """Whether configurations are proposed (else every one of the grid is measured)."""
        return self.strategy != GRID

    @property
    def rounds(self) -> int:
        return math.ceil(self.budget / self.batch)

    @property
    def parts(self) -> int:
        """Measure jobs of each variant: one per job of each round."""
        return self.rounds * self.jobs_per_round

    def round_of(self, part: str) -> int:
        """The round a part (p<i>) or batch (b<i>) belongs to."""
        return int(part[1:]) // self.jobs_per_round


@dataclass(frozen=True)
class Rounds:
    """An experiment's rounds (none for a grid experiment): their files, and what each
    round's jobs read."""

    experiment: str
    variants: tuple[str, ...]
    search: SearchSettings

    def file(self, round_index: int) -> str:
        """Where rule ``search`` writes a round's proposals."""
        return f"results/{self.experiment}/search/round{round_index}.json"

    def files(self) -> list[str]:
        return [self.file(r) for r in range(self.search.rounds if self.search.searches else 0)]

    def first(self, round_index: int) -> list[str]:
        """Round 0's file, which says when the search began (none for round 0 itself)."""
        return [self.file(0)] if round_index else []

    def proposals(self, batch: str) -> list[str]:
        """The round file whose proposals a batch measures (none for a grid's batch)."""
        return [self.file(self.search.round_of(batch))] if self.search.searches else []

    def share(self, cores: int, batch: str) -> int:
        """Cores a compile job takes: all it is given, or a search round's share of them (its
        jobs compile side by side, one per measure job), less a core for each measure job
        of the round before and for the next round's proposing, which go on meanwhile."""
        jobs = self.search.jobs_per_round
        return max(1, (cores - jobs - 1) // jobs) if batch else cores

    def in_flight(self, round_index: int) -> list[str]:
        """The round file whose proposals are measured while this round is proposed: the
        round before's, with overlap (none without, or for round 0)."""
        return [self.file(round_index - 1)] if self.search.overlap and round_index else []

    def earlier(self, round_index: int) -> list[str]:
        """plan.json and measure.json of each part the rounds before ``round_index`` (with
        overlap, before the round before it) measured: what the round is proposed from."""
        told = max(0, round_index - 1) if self.search.overlap else round_index
        parts = range(told * self.search.jobs_per_round)
        return [f"results/{self.experiment}/{v}/p{i}/{name}" for i in parts
                for v in self.variants for name in (PLAN, MEASURE)]  # fmt: skip


def proposed(path: Path, part: str, variant: str) -> tuple[int, list[int]]:
    """A round's file: its round, and the grid positions of ``variant`` it gives to one of
    its parts."""
    data = read_json(path, "a search round's proposals")
    return data["round"], data["parts"].get(part, {}).get(variant, [])


def every_proposal(path: Path) -> list[tuple[str, int]]:
    """(variant, grid position) of every configuration a round's file proposes."""
    parts = read_json(path, "a search round's proposals")["parts"].values()
    return [(variant, p) for part in parts for variant, taken in part.items() for p in taken]
