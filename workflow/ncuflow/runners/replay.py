"""The replay runner: what a GPU run measured, taken from a committed capture instead of
the GPU (capture.folder). It copies exactly the records and ncu values of the
configurations the plan asks for, found by configuration in whichever experiment of the
capture took them (capture.records); deriving, collecting and plotting then run for real.
A configuration the capture lacks is an error, never invented."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from ..capture.folder import DAMAGED
from ..capture.records import missing_message, require
from ..errors import NcuflowError
from ..files import atomic_write, read_json, read_parquet, write_json
from ..plan import Job, records_json
from ..profile.members import Member
from ..vocab import (
    DEVICE,
    ENERGY_CEILING_NAMES,
    EXPLAIN_LONG,
    FINDINGS,
    MEASURE,
    NCU_LONG,
    NCU_RAW,
    PROFILE_ERRORS,
    PROFILE_EXTRAS,
    SOURCE_LINES,
)
from .base import Log


class ReplayRunner:
    """Copies what a capture recorded; names what it lacks, never invents it."""

    def __init__(self, capture: Path) -> None:
        self.capture = capture

    def measure(self, jobs: Sequence[Job], journal: Path, log: Log) -> None:
        """The capture's timing records of each job's pending configurations."""
        for job in jobs:
            plan = job.plan
            pending = [row.config_id for row in plan.pending]
            where, captured = require(self.capture, plan, pending, "timing record")
            for folder, count in Counter(where.values()).items():
                log(f"replaying {count} timing records from {folder / MEASURE}")
            job.measure_path.write_text(records_json({c: captured[c] for c in pending}))
            self.device_facts(job.out / DEVICE, None)

    def profile(self, members: Sequence[Member], chunks: Path, log: Log) -> None:
        """Each member's profile from the capture (``chunks``: unused, nothing is profiled)."""
        for member in members:
            member.out.mkdir(parents=True, exist_ok=True)
            self._profile(member, log)

    def _profile(self, member: Member, log: Log) -> None:
        """The capture's exact ncu values of the member's configurations that measured ok (a
        capture holds only profiles ncu took: no configuration has a profile error), from
        the folder each one's record came from."""
        import pandas as pd  # here: a job that measures or gives device facts needs none

        from ..profile.long_table import LONG_COLUMNS, write_long

        plan, out = member.plan, member.out
        atomic_write(out / PROFILE_ERRORS, "{}")
        # a capture keeps the exact values, not ncu's rounded CSV
        (out / NCU_RAW).write_text(f"# replayed from capture {self.capture.name}: no ncu CSV\n")
        ok = set(member.ids)
        where, _ = require(self.capture, plan, sorted(ok), "timing record")
        by_folder: dict[Path, set[str]] = {}
        for config, folder in where.items():
            by_folder.setdefault(folder, set()).add(config)
        _replay_extras(by_folder, out)
        kept = []
        for folder, ids in by_folder.items():
            source = folder / NCU_LONG
            if source.is_file():
                values = read_parquet(source, DAMAGED)
                kept.append(values[values["config_id"].isin(ids)])
            log(f"replaying the ncu values of {len(ids)} configurations from {source}")
        # the capture's columns as they are: one from before the tier column has none, and
        # the readers take such a table as they did (profile.long_table)
        table = pd.concat(kept, ignore_index=True) if kept else pd.DataFrame(columns=LONG_COLUMNS)
        missing = sorted(ok - set(table["config_id"]))
        if missing:
            raise NcuflowError(missing_message(self.capture, plan, missing, "ncu profile"))
        write_long(table, out / NCU_LONG)

    def device_facts(
        self, out: Path, ceilings: Path | None, energy_ceilings: Path | None = None
    ) -> None:
        """The capture's device, marked as replayed from it (its ceilings are the capture's)."""
        device = read_json(self.capture / DEVICE, "a capture's device facts", DAMAGED)
        write_json(out, {**device, "replayed_from": self.capture.name})

    def ceilings(self, out: Path, log: Log) -> None:
        """The ceilings measured on the capture's device (none for an older capture)."""
        measured = read_json(self.capture / DEVICE, "", DAMAGED).get("ceilings", {})
        write_json(out, {k: v for k, v in measured.items() if k not in ENERGY_CEILING_NAMES})

    def energy_ceilings(self, out: Path, log: Log, seconds: float) -> None:
        """The energy ceilings measured on the capture's device (none where it has none)."""
        measured = read_json(self.capture / DEVICE, "", DAMAGED).get("ceilings", {})
        write_json(out, {k: v for k, v in measured.items() if k in ENERGY_CEILING_NAMES})


def _replay_extras(by_folder: dict[Path, set[str]], out: Path) -> None:
    """The capture's findings, explain-tier values and source lines of the configurations
    replayed, each from its folder (empty tables where the capture predates them: nothing
    is invented)."""
    import pandas as pd

    from ..profile.explain import FINDING_COLUMNS, LINE_COLUMNS
    from ..profile.long_table import LONG_COLUMNS

    # the columns of each file the profile stage writes beside ncu_long.parquet
    columns = {FINDINGS: FINDING_COLUMNS, EXPLAIN_LONG: LONG_COLUMNS, SOURCE_LINES: LINE_COLUMNS}
    for name in PROFILE_EXTRAS:
        tables = [pd.DataFrame(columns=columns[name])]
        for folder, ids in by_folder.items():
            if (folder / name).is_file():
                table = read_parquet(folder / name, DAMAGED)
                tables.append(table[table["config_id"].isin(ids)])
        kept = [t for t in tables if not t.empty]
        (pd.concat(kept, ignore_index=True) if kept else tables[0]).to_parquet(
            out / name, index=False)  # fmt: skip
