"""The measure jobs one profile job takes together (its members), and what it writes for
each of them.

A profile job profiles the configurations of several measure jobs of one experiment (up to
``ncu.variants_per_job``) in shared ncu processes: ncu's start, the profiled process's
start and the report's export are paid once per chunk, not once per variant. Each
configuration is named in the shared reports by a target id, ``<variant>.<part>.<config>``
(vocab.target_id), so every value maps back to its member; each member
then gets the files a profile of it alone would have had.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from ..files import atomic_write
from ..metrics import tensor_counters
from ..plan import ConfigRow, Job, Record, profile_choice, profiled_ids, read_records
from ..spec import load_variant
from ..spec.model import Variant
from ..vocab import OK, split_target, target_id
from .worker import worker_command

if TYPE_CHECKING:  # a job that only measures never loads pandas
    import pandas as pd


@dataclass(frozen=True)
class Member(Job):
    """A measure job in a profile job: what it measured, and which of its configurations
    ncu profiles (``chosen``: those ncu.profile kept, None for all: choose())."""

    chosen: frozenset[str] | None = None

    @property
    def own_source(self) -> Path:
        """The variant's own .cu file (NVRTC names it a temporary file in line tables)."""
        return Path(self.plan.kernels_dir) / self.plan.family / f"{self.plan.variant}.cu"

    @cached_property
    def measured(self) -> dict[str, Record]:
        return read_records(self.measure_path)

    @cached_property
    def variant(self) -> Variant:
        plan = self.plan
        return load_variant(Path(plan.kernels_dir), plan.family, plan.variant)[1]

    @cached_property
    def ids(self) -> list[str]:
        """The configurations ncu profiles: those that ran to the end, of a profiled variant,
        that ncu.profile kept."""
        ids = profiled_ids(self.measured, self.variant.profiled)
        return ids if self.chosen is None else [c for c in ids if c in self.chosen]

    def problem(self, config: str) -> tuple:
        """The problem a configuration is of: its sizes and scalars."""
        row = self.rows[config]
        return tuple(sorted({**row.dims, **self.plan.scalars_of(row)}.items()))

    @property
    def tensor(self) -> tuple[str, ...]:
        """The tensor-core precisions whose FLOPs ncu counts for it (metrics.tensor_counters)."""
        return tensor_counters(self.variant.compute, self.variant.baseline)

    @cached_property
    def rows(self) -> dict[str, ConfigRow]:
        return {row.config_id: row for row in self.plan.configs}


def timed_targets(members: Sequence[Member]) -> list[tuple[tuple[str, tuple], str, float]]:
    """(variant and problem, target id, time in ms) of each configuration the members
    profile that measured ok: what the fastest are chosen from (a wrong result never is)."""
    return [((m.plan.variant, m.problem(c)), target_id(m.key, c), m.measured[c].time_ms)
            for m in members for c in m.ids
            if m.measured[c].status == OK and m.measured[c].time_ms is not None]  # fmt: skip


def choose(members: Sequence[Member], mode: str) -> list[Member]:
    """The members with the configurations ncu.profile keeps (``mode``: all, best or
    top:K), chosen among all of them: a variant's parts (a search's rounds) may be
    several members, and its K fastest per size are chosen over them all."""
    if mode == "all":
        return list(members)
    kept = profile_choice(mode, timed_targets(members)) or set()
    return [replace(m, chosen=frozenset(c for c in m.ids if target_id(m.key, c) in kept))
            for m in members]  # fmt: skip


@dataclass
class Batch:
    """A profile job's members, and every target id of theirs."""

    members: Sequence[Member]
    _by_key: dict[str, Member] = field(init=False)

    def __post_init__(self) -> None:
        self._by_key = {m.key: m for m in self.members}
        if len(self._by_key) != len(self.members):
            raise ValueError("two members of a profile job have the same variant and part")

    def targets(self, member: Member, ids: Iterable[str]) -> list[str]:
        return [target_id(member.key, c) for c in ids]

    def member(self, target: str) -> tuple[Member, str]:
        key, config = split_target(target)
        return self._by_key[key], config

    def row(self, target: str) -> ConfigRow:
        member, config = self.member(target)
        return member.rows[config]

    def fingerprint(self, target: str) -> str | None:
        member, config = self.member(target)
        return member.measured[config].fingerprint

    def worklist(self, targets: Sequence[str]) -> list[dict]:
        """What the profile worker launches: each member's plan, records and configurations
        among ``targets``, in order."""
        work: dict[str, dict] = {}
        for target in targets:
            member, config = self.member(target)
            entry = work.setdefault(member.key, {"member": member.key,
                                                 "plan": str(member.plan_path),
                                                 "measure": str(member.measure_path),
                                                 "ids": []})  # fmt: skip
            entry["ids"].append(config)
        return list(work.values())

    def split(self, frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
        """A table of target ids as each member's table of its configuration ids (every
        member gets one, empty where the table holds none of its configurations)."""
        out = {m.key: frame.iloc[0:0] for m in self.members}
        if frame.empty:
            return out
        parts = frame["config_id"].str.split(".", n=2, expand=True)
        keys = parts[0] + "." + parts[1]
        for key, rows in frame.groupby(keys, sort=False):
            rows = rows.copy()
            rows["config_id"] = parts.loc[rows.index, 2]
            out[str(key)] = rows.reset_index(drop=True)
        return out


def worker_for(batch: Batch, targets: Sequence[str], path: Path, after: Path | None = None,
               then: Path | None = None) -> list[str]:  # fmt: skip
    """The command of a profile worker over ``targets``, its work list written to ``path``
    (``after``, ``then``: its gates, profile.worker)."""
    atomic_write(path, json.dumps(batch.worklist(targets), indent=1))
    return worker_command(path, after, then)


def split_csv(reports: Sequence[tuple[Path, pd.DataFrame]], batch: Batch) -> dict[str, str]:
    """The reports' raw CSV exports (a header row, ncu's units row, a row per kernel) as one
    text per member: every column of any of them, blank where a report has no such metric
    (the explain tier's has more than the sweep's). ``reports``: each export and its
    report's long table, whose kernel ids (the CSV's ID + 1) say whose each row is."""
    header: list[str] = []
    units: dict[str, str] = {}
    rows: dict[str, list[dict[str, str]]] = {m.key: [] for m in batch.members}
    for path, long in reports:
        lines = path.read_text().splitlines() if path.is_file() else []
        table = [row for row in csv.reader(lines) if row]
        if not table:
            continue
        owner = {int(k) - 1: batch.member(t)[0].key
                 for t, k in zip(long["config_id"], long["kernel_id"], strict=True)}  # fmt: skip
        names, body = table[0], table[1:]
        if body and not body[0][0]:  # the units row (its ID cell is empty)
            units.update({n: u for n, u in zip(names, body.pop(0), strict=False) if u})
        header += [n for n in names if n not in header]
        for row in body:
            key = owner.get(int(row[0])) if row[0].isdigit() else None
            if key is None and len(batch.members) == 1:
                key = batch.members[0].key
            if key is not None:
                rows[key].append(dict(zip(names, row, strict=False)))
    texts = {}
    for key, kept in rows.items():
        text = io.StringIO()
        if header:
            writer = csv.writer(text, quoting=csv.QUOTE_ALL, lineterminator="\n")
            writer.writerow(header)
            if units:
                writer.writerow([units.get(n, "") for n in header])
            writer.writerows([row.get(n, "") for n in header] for row in kept)
        texts[key] = text.getvalue()
    return texts
