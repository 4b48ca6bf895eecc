"""Reading what a run wrote, for notebooks and the comparison: every experiment's table as
one DataFrame, and the exact ncu values beside it.

A results folder (``results/``) and a capture (``resources/captures/<name>/``) both hold
``<experiment>/table.parquet``, and the exact ncu values per variant: a capture's in
``<experiment>/<variant>/ncu_long.parquet``, a run's per job, in
``<experiment>/<variant>/<part>/ncu_long.parquet``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from ..errors import NcuflowError
from ..plan import read_records
from ..vocab import MEASURE, TABLE
from ..vocab import NCU_LONG as LONG


def _experiments(folder: Path | str) -> list[str]:
    """The experiments of ``folder`` (those with a table), sorted; an error where none."""
    found = [p.parent.name for p in sorted(Path(folder).glob(f"*/{TABLE}"))]
    if not found:
        raise NcuflowError(
            f"{folder} holds no <experiment>/{TABLE}: give a results folder after a run "
            "(snakemake --cores 1) or a capture folder (resources/captures/<name>)"
        )
    return found


def tables(folder: Path | str) -> dict[str, pd.DataFrame]:
    """Each experiment's table in ``folder``, by experiment name (sorted)."""
    return {name: pd.read_parquet(Path(folder) / name / TABLE) for name in _experiments(folder)}


def _variant_files(folder: Path | str, name: str) -> Iterator[tuple[str, str, Path]]:
    """(experiment, variant, path) of each file ``name`` of every experiment's variants: a
    capture keeps one per variant, a results folder one per part."""
    for experiment in _experiments(folder):
        where = Path(folder) / experiment
        for path in sorted([*where.glob(f"*/{name}"), *where.glob(f"*/p*/{name}")]):
            yield experiment, path.relative_to(where).parts[0], path


def repeats(
    folder: Path | str,
) -> dict[tuple[str, str, str], tuple[list[float], list[int] | None]]:
    """Every timed repeat (milliseconds) of a results folder or a capture, by (experiment,
    variant, config_id), and the repeats of each round of timing where there were several
    (else None): what its measure.json files recorded."""
    return {(experiment, variant, config): (list(record.times_ms), record.round_repeats)
            for experiment, variant, path in _variant_files(folder, MEASURE)
            for config, record in read_records(path).items() if record.times_ms}  # fmt: skip


def load(folder: Path | str = "results", metrics: bool = False) -> pd.DataFrame:
    """Every experiment's table as one DataFrame (one row per configuration), or with
    ``metrics=True`` the long table of every ncu metric of every profiled kernel
    (experiment, variant, config_id, kernel_id, kernel_name, metric, unit, value, and tier:
    the report's, where the run named it; kernel ids count per report)."""
    if not metrics:
        return pd.concat(tables(folder).values(), ignore_index=True, sort=False)
    parts = []
    for experiment, variant, path in _variant_files(folder, LONG):
        long = pd.read_parquet(path)
        long.insert(0, "variant", variant)
        long.insert(0, "experiment", experiment)
        parts.append(long)
    if not parts:
        raise NcuflowError(f"{folder} holds no profiled kernel (no */*/{LONG})")
    return pd.concat(parts, ignore_index=True)
