"""A search run on a CPU: each proposal answered from a brute-force capture's records, as
kernel_tuner's simulation mode answers from its cache, so strategies are compared and
tested without a GPU. The rounds are the workflow's own (search.stage.plan_round); only
the measuring is replaced by a look-up, which never invents a time: a proposal the
capture lacks is an error naming it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import NcuflowError
from ..files import read_json
from ..plan import ConfigRow, Record, read_records
from ..study.config import Experiment
from ..study.rounds import SearchSettings
from ..vocab import DEVICE, MEASURE, OK
from .space import Point
from .stage import plan_round, spaces_of


def captured(capture: Path, experiment: str) -> tuple[dict[tuple[str, str], Record], dict]:
    """A capture's records of one experiment, by (variant, configuration id), and the
    measured ceilings of its device."""
    records = {}
    for path in sorted((capture / experiment).glob(f"*/{MEASURE}")):
        for config, record in read_records(path).items():
            records[(path.parent.name, config)] = record
    if not records:
        raise NcuflowError(f"capture {capture.name} holds no records of experiment {experiment}")
    return records, read_json(capture / DEVICE, "a capture's device facts").get("ceilings", {})


def simulate(
    experiment: Experiment,
    settings: SearchSettings,
    records: Mapping[tuple[str, str], Record],
    ceilings: Mapping[str, Any],
) -> tuple[list[tuple[ConfigRow, float | None]], Counter[str]]:
    """Every configuration the search measures, in the order it does, with its captured
    time (None where it failed); and how many proposals were skipped, by why."""
    compute = {name: experiment.family.variant(name).compute for name in experiment.variants}
    spaces = spaces_of(experiment.grids)
    by_round: list[list[tuple[Point, ConfigRow, float | None]]] = []
    skipped: Counter[str] = Counter()
    for round_index in range(settings.rounds):
        # with overlap, round r is told the rounds before r - 1; r - 1's are in flight
        told = len(by_round) - int(settings.overlap and bool(by_round))
        measured = [(row, t) for done in by_round[:told] for _, row, t in done]
        in_flight = [point for done in by_round[told:] for point, _, _ in done]
        proposals = plan_round(spaces, settings, round_index, measured, ceilings, compute, 0.0,
                               in_flight)  # fmt: skip
        for problem in proposals["problems"]:
            skipped.update(problem["skipped"])
        done = []
        for by_variant in proposals["parts"].values():
            for variant, positions in by_variant.items():
                for position in positions:
                    row = experiment.grids[variant].row_at(position)
                    record = records.get((variant, row.config_id))
                    if record is None:
                        raise NcuflowError(f"the capture has no record of {variant} "
                                           f"{row.config_id}: simulate on a brute-force "
                                           "capture of the same space")  # fmt: skip
                    time_ms = record.time_ms if record.status == OK else None
                    done.append((Point(variant, position),
                                 replace(row, search_round=round_index), time_ms))  # fmt: skip
        by_round.append(done)
    measured = [(row, t) for done in by_round for _, row, t in done]
    return measured, skipped
