"""The typed plan, configuration row and measurement record: what flows between stages.

A **plan** (``plan.json``) is what one GPU job measures: one part of one variant of one
experiment, with the study's timing settings, seed and scalars, and its **configuration
rows** (one per combination of tunables and problem size, skipped ones included). A
**record** is what measuring one configuration gave (``measure.json`` maps configuration
ids to records). Each is built in one place (plans by ``study.config``, rows by
``study.expand``, records through the constructors below) and read back through
``from_json``, which checks every key and names the file of anything wrong. The JSON
forms are exactly those of earlier versions, so every committed capture still reads.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, fields, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from .errors import ConfigError, NcuflowError
from .files import RERUN, read_json
from .vocab import LAUNCH_ERROR, PENDING, SKIPPED, TIMED, TIMEOUT, VERSION

Json = dict[str, Any]


@functools.cache
def _names(cls: type) -> tuple[str, ...]:
    """The field names of a dataclass, looked up once: a search's plan holds 100,000 rows."""
    return tuple(f.name for f in fields(cls))


def _take(data: Any, cls: type, where: str, required: tuple[str, ...]) -> Json:
    """``data``'s keys, checked against the fields of ``cls``: every required one there, no
    other one."""
    if not isinstance(data, dict):
        raise NcuflowError(f"{where}: expected a mapping, got {type(data).__name__}")
    unknown = sorted(set(data).difference(_names(cls)))
    missing = [k for k in required if k not in data]
    if unknown or missing:
        parts = (missing and f"missing {', '.join(missing)}",
                 unknown and f"unknown {', '.join(unknown)}")  # fmt: skip
        detail = "; ".join(p for p in parts if p)
        raise NcuflowError(f"{where}: {detail}; it was written by another ncuflow or edited")
    return data


def _present(obj: Any, always: tuple[str, ...] = ()) -> Json:
    """The fields of a dataclass as JSON: those in ``always`` whatever their value, the
    others where they are not None (absent in the JSON of older versions)."""
    out = {}
    for name in _names(type(obj)):
        value = getattr(obj, name)
        if value is not None or name in always:
            out[name] = value
    return out


@dataclass(frozen=True)
class Timing:
    """How a plan's configurations are timed (the config's ``timing`` section), and by
    which methods (``l2_flush``, ``enqueue``: absent in plans from before each existed).
    Values keep the type the config gave them: they are part of every fingerprint."""

    warmup: int = 3
    min_repeats: int = 20
    max_repeats: int = 2000
    target_ci_pct: float = 1.0
    budget_s: float = 2.0
    timeout_s: float | None = None
    timeout_floor_s: float = 60
    flush_l2: bool = True
    rounds: int | None = None  # rounds of timing per configuration; None: one
    # seconds each correct configuration runs back to back for its energy; None: no energy
    energy_s: float | None = None
    l2_flush: str | None = None
    enqueue: str | None = None

    def __post_init__(self) -> None:
        # the schema bounds each value of a config; this, what it cannot say
        if self.max_repeats < self.min_repeats:
            raise ConfigError(
                "timing.max_repeats",
                f"{self.max_repeats} is below min_repeats ({self.min_repeats}); expected an "
                "integer >= min_repeats",
            )

    def to_json(self) -> Json:
        return _present(self, always=("timeout_s",))

    @property
    def round_count(self) -> int:
        return self.rounds or 1

    @classmethod
    def from_json(cls, data: Any, where: str = "timing") -> Timing:
        return cls(**_take(data, cls, where, ()))


@dataclass(frozen=True)
class LaunchGeometry:
    """One launch a configuration makes: a kernel's grid, block and dynamic shared memory,
    or a library function (name only)."""

    name: str
    block: tuple[int, ...] | None = None
    grid: tuple[int, ...] | None = None
    dynamic_smem: int | None = None

    def to_json(self) -> Json:
        out = _present(self)
        for key in ("block", "grid"):
            if key in out:
                out[key] = list(out[key])
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "launch") -> LaunchGeometry:
        data = _take(data, cls, where, ("name",))
        tuples = {k: tuple(data[k]) for k in ("block", "grid") if data.get(k) is not None}
        return cls(**{**data, **tuples})


@dataclass(frozen=True)
class ConfigRow:
    """One configuration of a variant: its tunables (``params``) and problem size
    (``dims``), whether it runs (``status`` pending or skipped, with the reason in
    ``error``), its analytic counts and the launches it makes. ``grid_facts``: the device
    facts its launch geometry follows (only on rows whose grid names one); ``scalars``: the
    values of the scalars its experiment sweeps (only where it sweeps one)."""

    experiment: str
    family: str
    variant: str
    config_id: str
    dtype: str
    out_dtype: str
    dims: dict[str, int]
    params: dict[str, int]
    status: str
    error: str
    flops: int
    min_bytes: int
    output_bytes: int
    launches: tuple[LaunchGeometry, ...] = ()
    model_dram_bytes: int | None = None
    executed_flops: int | None = None
    grid_facts: dict[str, int] | None = None
    scalars: dict[str, int | float] | None = None
    search_round: int | None = None  # the round of a search that proposed it (search/)

    @property
    def pending(self) -> bool:
        return self.status == PENDING

    def to_json(self) -> Json:
        out = _present(self)
        out["launches"] = [launch.to_json() for launch in self.launches]
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "configs[]") -> ConfigRow:
        data = _take(data, cls, where, _ROW_REQUIRED)
        launches = tuple(LaunchGeometry.from_json(g, f"{where}.launches[{i}]")
                         for i, g in enumerate(data.get("launches") or ()))  # fmt: skip
        if data["status"] not in (PENDING, SKIPPED):
            raise NcuflowError(f"{where}: status {data['status']!r} is neither {PENDING} nor "
                               f"{SKIPPED}")  # fmt: skip
        return cls(**{**data, "launches": launches})


# a row's keys that its JSON always holds (the others: None where absent)
_ROW_REQUIRED = tuple(f.name for f in fields(ConfigRow)
                      if f.default is not None and f.name != "launches")  # fmt: skip


@dataclass(frozen=True)
class Plan:
    """What one job measures: one part of one (experiment, variant), written as plan.json.
    ``device_facts``: the facts restrictions and grids were decided with (absent in plans
    from before they could name them)."""

    experiment: str
    family: str
    variant: str
    kernels_dir: str
    family_fingerprint: str
    seed: int | None
    timing: Timing
    scalars: dict[str, int | float]
    configs: tuple[ConfigRow, ...]
    device_facts: dict[str, int] | None = None

    @property
    def pending(self) -> list[ConfigRow]:
        return [row for row in self.configs if row.pending]

    def scalars_of(self, row: ConfigRow) -> dict[str, int | float]:
        """Every scalar's value in one configuration: the plan's, and the row's swept ones."""
        return {**self.scalars, **(row.scalars or {})}

    def with_configs(self, configs: tuple[ConfigRow, ...] | list[ConfigRow]) -> Plan:
        return replace(self, configs=tuple(configs))

    def fingerprint(self, row: ConfigRow) -> str:
        """What decides a measurement: kernel sources, the configuration (and the device
        facts its launch geometry follows), its dtype and scalars, timing and seed."""
        config = {"config_id": row.config_id, "dims": row.dims, "params": row.params,
                  "dtype": row.dtype}  # fmt: skip
        key = {"ncuflow": VERSION, "family": self.family_fingerprint, "variant": self.variant,
               "config": config, "scalars": self.scalars, "timing": self.timing.to_json(),
               "seed": self.seed}  # fmt: skip
        # only a row whose grid follows the device's facts has them: the others keep the
        # fingerprints they had before grids could
        if row.grid_facts is not None:
            key["grid_facts"] = row.grid_facts
        if row.scalars is not None:
            key["scalars"] = self.scalars_of(row)
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]

    def to_json(self) -> str:
        data = _present(self, always=("seed",))
        data["timing"] = self.timing.to_json()
        data["configs"] = [row.to_json() for row in self.configs]
        return json.dumps(data, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, data: Any, where: str = "plan") -> Plan:
        data = _take(data, cls, where, tuple(n for n in _names(cls) if n != "device_facts"))
        configs = tuple(ConfigRow.from_json(row, f"{where}: configs[{i}]")
                        for i, row in enumerate(data["configs"]))  # fmt: skip
        timing = Timing.from_json(data["timing"], f"{where}: timing")
        return cls(**{**data, "timing": timing, "configs": configs})

    @classmethod
    def load(cls, path: Path) -> Plan:
        return cls.from_json(read_json(path, "a job's plan"), str(path))


@dataclass(frozen=True)
class VariantPlan:
    """What the main process writes for one (experiment, variant), whatever the size of its
    grid: the header every part's plan shares (``plan``, without configurations), the grid
    as the config gave it (the experiment's ``sizes``, the variant's section, the device
    limits), how many positions it has and where each part starts. A job expands only its
    own part into its plan.json (study.config.part_plan)."""

    plan: Plan
    grid: Json
    size: int
    part_starts: tuple[int, ...]

    def part_range(self, part: str) -> tuple[int, int]:
        """The grid positions [start, stop) of a part (p0, p1, ...)."""
        index = int(part[1:]) if re.fullmatch(r"p[0-9]+", part) else len(self.part_starts)
        if index >= len(self.part_starts):
            raise NcuflowError(f"part {part!r} is not one of p0 ... p{len(self.part_starts) - 1}")
        ends = (*self.part_starts[1:], self.size)
        return self.part_starts[index], ends[index]

    def to_json(self) -> str:
        data = {"plan": json.loads(self.plan.to_json()), "grid": self.grid, "size": self.size,
                "part_starts": list(self.part_starts)}  # fmt: skip
        return json.dumps(data, indent=1, sort_keys=True)

    @classmethod
    def load(cls, path: Path) -> VariantPlan:
        where = str(path)
        data = _take(read_json(path, "a variant's plan"), cls, where, _names(cls))
        plan = Plan.from_json(data["plan"], f"{where}: plan")
        return cls(plan, data["grid"], int(data["size"]), tuple(data["part_starts"]))


# Keys every record has, whatever became of its configuration.
_ALWAYS = ("status", "error", "rel_error", "repeats")


@dataclass(frozen=True)
class Record:
    """What measuring one configuration gave: its status and error, the check's errors,
    and for a timed one its times (milliseconds) and their summary, the compiled kernel's
    resources, the seed of its inputs, the device it ran on and its fingerprint."""

    status: str
    error: str = ""
    rel_error: float | None = None
    repeats: int = 0
    fingerprint: str | None = None
    max_abs_error: float | None = None
    time_ms: float | None = None
    time_ms_iqr: float | None = None
    time_cv: float | None = None
    time_ci95_pct: float | None = None
    time_unstable: bool | None = None
    time_note: str | None = None
    times_ms: list[float] | None = None
    # with timing.rounds: each round's median and repeats (times_ms holds them in turn), how
    # many rounds, and their medians' spread (max - min over time_ms, in percent)
    round_medians_ms: list[float] | None = None
    round_repeats: list[int] | None = None
    rounds: int | None = None
    time_round_spread_pct: float | None = None
    gated: bool | None = None  # whether its batches waited behind the gate (GPU only)
    # NVML while it was timed (GPU, where NVML answers): the SM clock (median, lowest), what
    # throttled ('' where nothing did) and whether it did (nvml.ClockWatch)
    sm_clock_mhz_timing: float | None = None
    sm_clock_mhz_timing_min: int | None = None
    throttle: str | None = None
    time_throttled: bool | None = None
    # the energy tier (measure.energy), where timing.energy_s asks for it: joules and the
    # GPU's time per launch back to back (hot caches), the average power from NVML's counter
    # and from its samples, by which method, over how long a window of how many launches,
    # the clocks and hottest temperatures (GPU, memory) meanwhile, the power limit, what
    # throttled ('' where nothing did) and whether, why one has no energy, the tier's seconds
    # (its warm-up's included: a process's first configuration ran until the GPU was warm)
    energy_j: float | None = None
    energy_launch_ms: float | None = None
    avg_power_w: float | None = None
    avg_power_w_samples: float | None = None
    energy_method: str | None = None
    energy_window_s: float | None = None
    energy_launches: int | None = None
    sm_clock_mhz_energy: float | None = None
    memory_clock_mhz_energy: float | None = None
    temperature_c_energy: int | None = None
    memory_temperature_c_energy: int | None = None
    power_limit_w: float | None = None
    energy_throttle: str | None = None
    energy_throttled: bool | None = None
    energy_note: str | None = None
    energy_wall_s: float | None = None
    energy_warmup_s: float | None = None
    step_ms: dict[str, float] | None = None  # each launch's median, where there are several
    registers_per_thread_compiled: int | None = None
    static_smem_bytes: int | None = None
    local_bytes_per_thread: int | None = None
    seed: int | None = None
    device: str | None = None

    @classmethod
    def failed(cls, status: str, error: str, fingerprint: str | None = None) -> Record:
        """A configuration that produced no time."""
        return cls(status=status, error=error, fingerprint=fingerprint)

    @classmethod
    def timed_out(cls, limit_s: float, fingerprint: str) -> Record:
        return cls.failed(TIMEOUT, f"no result after {limit_s:.0f} s (its time limit, "
                          "timing.timeout_s): killed with its worker; a fresh worker went on "
                          "with the rest", fingerprint)  # fmt: skip

    @classmethod
    def crashed(cls, code: int, tail: str, fingerprint: str) -> Record:
        return cls.failed(LAUNCH_ERROR, f"the worker died (exit code {code}) running this "
                          f"configuration: {tail}", fingerprint)  # fmt: skip

    def updated(self, **changes: Any) -> Record:
        """This record with some fields changed."""
        return replace(self, **changes)

    @property
    def rounds_timed(self) -> int:
        """How many rounds of timing it holds: one unless timing.rounds asked for more."""
        return self.rounds or 1

    @property
    def summary(self) -> Json:
        """The record as a table row holds it: everything but the raw times and the
        fingerprint (the steps' medians become columns of their own)."""
        return {k: v for k, v in self.to_json().items()
                if k not in ("times_ms", "fingerprint", "step_ms", "round_medians_ms",
                             "round_repeats")}  # fmt: skip

    def to_json(self) -> Json:
        """Keys sorted, as measure.json has always held them."""
        return dict(sorted(_present(self, always=_ALWAYS).items()))

    @classmethod
    def from_json(cls, data: Any, where: str = "record") -> Record:
        return cls(**_take(data, cls, where, ("status",)))


def profiled_ids(measured: dict[str, Record], profiled: bool) -> list[str]:
    """The configurations ncu profiles: those that ran to the end (a wrong result keeps its
    time and metrics, to show how it went wrong), of a variant ncu profiles."""
    if not profiled:
        return []
    return [config_id for config_id, rec in measured.items() if rec.status in TIMED]


def profile_choice(mode: str, timed: Iterable[tuple[Hashable, str, float]]) -> set[str] | None:
    """The configurations ``ncu.profile`` keeps (None: all that ran to the end): of
    ``timed``, (group, id, time in ms) of each that measured ok, the fastest of each group
    (``best``) or its K fastest (``top:K``), ties broken by id."""
    if mode == "all":
        return None
    most = 1 if mode == "best" else int(mode.split(":", 1)[1])
    groups: dict[Hashable, list[tuple[float, str]]] = {}
    for group, config, time_ms in timed:
        groups.setdefault(group, []).append((time_ms, config))
    return {config for ranked in groups.values() for _, config in sorted(ranked)[:most]}


def read_records(path: Path, fix: str = RERUN) -> dict[str, Record]:
    """measure.json: each configuration's record, by configuration id (``fix``: what to do
    about a file cut short)."""
    data = read_json(path, "a job's timing records", fix)
    if not isinstance(data, dict):
        raise NcuflowError(f"{path}: expected a mapping of configuration ids to records")
    return {cid: Record.from_json(rec, f"{path}: {cid}") for cid, rec in data.items()}


def unfinished(record: Record | None, rounds: int) -> bool:
    """Whether a configuration still needs measuring: no record, or a timed one with fewer
    rounds than its timing asks (timing.rounds)."""
    return record is None or (record.status in TIMED and record.rounds_timed < rounds)


def records_json(records: dict[str, Record]) -> str:
    """measure.json's text."""
    return json.dumps({cid: rec.to_json() for cid, rec in records.items()}, indent=1)


@dataclass(frozen=True)
class Job:
    """One measure job's files: its plan, its records, and the folder of the rest (its
    device facts, its profile). A GPU job may take several (a batch), which name them by
    ``key``, ``<variant>.<part>`` (vocab.target_id)."""

    plan_path: Path
    measure_path: Path
    out: Path
    part: str = "p0"

    @cached_property
    def plan(self) -> Plan:
        return Plan.load(self.plan_path)

    @property
    def key(self) -> str:
        return f"{self.plan.variant}.{self.part}"
