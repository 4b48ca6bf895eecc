"""The replay runner: what a GPU run measured, taken from a committed capture instead of
the GPU (capture.folder). It copies exactly the records and ncu values of the
configurations the plan asks for; deriving, collecting and plotting then run for real. A
configuration the capture lacks is an error, never invented."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import pandas as pd

from ..capture.folder import DAMAGED
from ..errors import NcuflowError
from ..files import atomic_write, read_json, read_parquet, write_json
from ..plan import Plan, profiled_ids, read_records, records_json
from ..profile.explain import FINDING_COLUMNS, LINE_COLUMNS
from ..profile.long_table import LONG_COLUMNS, write_long
from ..spec import load_variant
from ..vocab import (
    DEVICE,
    EXPLAIN_LONG,
    FINDINGS,
    MEASURE,
    NCU_LONG,
    PROFILE_ERRORS,
    PROFILE_EXTRAS,
    SOURCE_LINES,
)
from .base import Log

# The columns of each file the profile stage writes beside ncu_long.parquet.
EXTRA_COLUMNS = {FINDINGS: FINDING_COLUMNS, EXPLAIN_LONG: LONG_COLUMNS, SOURCE_LINES: LINE_COLUMNS}


def _missing(folder: Path, plan: Plan, missing: list[str], what: str) -> NoReturn:
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    raise NcuflowError(
        f"capture {folder.name} has no {what} of configuration(s) {shown} "
        f"(experiments.{plan.experiment}.variants.{plan.variant}). Replay never invents "
        "a result: remove them from the config, or refresh the capture on a GPU machine "
        "(docs/guide.md: replay and captures)"
    )


class ReplayRunner:
    """Copies what a capture recorded; names what it lacks, never invents it."""

    def __init__(self, capture: Path) -> None:
        self.capture = capture

    def measure(self, plan: Plan, plan_path: Path, out: Path, device_out: Path, log: Log) -> None:
        """The capture's timing records of the plan's pending configurations."""
        source = self.capture / plan.experiment / plan.variant / MEASURE
        pending = [row.config_id for row in plan.pending]
        captured = read_records(source, DAMAGED) if source.is_file() else {}
        missing = [c for c in pending if c not in captured]
        if missing:
            _missing(self.capture, plan, missing, "timing record")
        log(f"replaying {len(pending)} timing records from {source}")
        out.write_text(records_json({c: captured[c] for c in pending}))
        self.device_facts(device_out, None)

    def profile(self, plan: Plan, plan_path: Path, measure: Path, long: Path, csv: Path | None,
                log: Log) -> None:  # fmt: skip
        """The capture's exact ncu values of the configurations that measured ok (a capture
        holds only profiles ncu took: no configuration has a profile error)."""
        atomic_write(long.with_name(PROFILE_ERRORS), "{}")
        if csv is not None:  # a capture keeps the exact values, not ncu's rounded CSV
            csv.write_text(f"# replayed from capture {self.capture.name}: no ncu CSV\n")
        variant = load_variant(Path(plan.kernels_dir), plan.family, plan.variant)[1]
        ok = set(profiled_ids(read_records(measure), variant.profiled))
        folder = self.capture / plan.experiment / plan.variant
        source = folder / NCU_LONG
        _replay_extras(folder, long.parent, ok)
        if not ok:
            write_long(pd.DataFrame(columns=LONG_COLUMNS), long)
            return
        values = (read_parquet(source, DAMAGED) if source.is_file()
                  else pd.DataFrame(columns=LONG_COLUMNS))  # fmt: skip
        kept = values[values["config_id"].isin(ok)]
        missing = sorted(ok - set(kept["config_id"]))
        if missing:
            _missing(self.capture, plan, missing, "ncu profile")
        log(f"replaying {len(kept)} ncu values of {len(ok)} configurations from {source}")
        write_long(kept, long)

    def device_facts(self, out: Path, ceilings: Path | None) -> None:
        """The capture's device, marked as replayed from it (its ceilings are the capture's)."""
        device = read_json(self.capture / DEVICE, "a capture's device facts", DAMAGED)
        write_json(out, {**device, "replayed_from": self.capture.name})

    def ceilings(self, out: Path, log: Log) -> None:
        """The ceilings measured on the capture's device (none for an older capture)."""
        write_json(out, read_json(self.capture / DEVICE, "", DAMAGED).get("ceilings", {}))


def _replay_extras(folder: Path, out: Path, ok: set[str]) -> None:
    """The capture's findings, explain-tier values and source lines of the configurations
    replayed (empty tables where the capture predates them: nothing is invented)."""
    for name in PROFILE_EXTRAS:
        source = folder / name
        table = read_parquet(source, DAMAGED) if source.is_file() else pd.DataFrame(
            columns=EXTRA_COLUMNS[name])  # fmt: skip
        table[table["config_id"].isin(ok)].to_parquet(out / name, index=False)
