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
    measured: list[tuple[ConfigRow, float | None]] = []
    skipped: Counter[str] = Counter()
    for round_index in range(settings.rounds):
        proposals = plan_round(spaces, settings, round_index, measured, ceilings, compute)
        for problem in proposals["problems"]:
            skipped.update(problem["skipped"])
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
                    measured.append((replace(row, search_round=round_index), time_ms))
    return measured, skipped
