"""Reading what a run wrote, for notebooks and the comparison: every experiment's table as
one DataFrame, and the exact ncu values beside it.

A results folder (``results/``) and a capture (``resources/captures/<name>/``) both hold
``<experiment>/table.parquet``, and the exact ncu values per variant: a capture's in
``<experiment>/<variant>/ncu_long.parquet``, a run's per job, in
``<experiment>/<variant>/<part>/ncu_long.parquet``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..errors import NcuflowError
from ..plan import read_records
from ..vocab import MEASURE, TABLE
from ..vocab import NCU_LONG as LONG


def tables(folder: Path | str) -> dict[str, pd.DataFrame]:
    """Each experiment's table in ``folder``, by experiment name (sorted)."""
    root = Path(folder)
    found = {p.parent.name: pd.read_parquet(p) for p in sorted(root.glob(f"*/{TABLE}"))}
    if not found:
        raise NcuflowError(
            f"{root} holds no <experiment>/{TABLE}: give a results folder after a run "
            "(snakemake --cores 1) or a capture folder (resources/captures/<name>)"
        )
    return found


def repeats(folder: Path | str) -> dict[tuple[str, str, str], list[float]]:
    """Every timed repeat (milliseconds) of a results folder or a capture, by (experiment,
    variant, config_id): what its measure.json files recorded."""
    found = {}
    for experiment in tables(folder):
        where = Path(folder) / experiment
        for path in sorted([*where.glob(f"*/{MEASURE}"), *where.glob(f"*/p*/{MEASURE}")]):
            variant = path.relative_to(where).parts[0]
            for config, record in read_records(path).items():
                if record.times_ms:
                    found[(experiment, variant, config)] = list(record.times_ms)
    return found


def load(folder: Path | str = "results", metrics: bool = False) -> pd.DataFrame:
    """Every experiment's table as one DataFrame (one row per configuration), or with
    ``metrics=True`` the long table of every ncu metric of every profiled kernel
    (experiment, variant, config_id, kernel_id, kernel_name, metric, unit, value)."""
    found = tables(folder)
    if not metrics:
        return pd.concat(found.values(), ignore_index=True, sort=False)
    parts = []
    for experiment in found:
        where = Path(folder) / experiment
        for path in sorted([*where.glob(f"*/{LONG}"), *where.glob(f"*/p*/{LONG}")]):
            long = pd.read_parquet(path)
            long.insert(0, "variant", path.relative_to(where).parts[0])
            long.insert(0, "experiment", experiment)
            parts.append(long)
    if not parts:
        raise NcuflowError(f"{folder} holds no profiled kernel (no */*/{LONG})")
    return pd.concat(parts, ignore_index=True)
