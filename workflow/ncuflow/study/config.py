"""The study: config.yaml validated (schema, then meaning) and expanded into plans.

Everything here runs before any GPU work, so that a wrong config costs nothing but one
clear message naming the offending key and the valid choices.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import schema
from ..errors import ConfigError, NcuflowError, SpecError, key_path
from ..files import YamlError, atomic_write, load_yaml, local_path
from ..ncu import NcuSettings
from ..plan import ConfigRow, Plan, Timing, VariantPlan
from ..spec import Family, available_families, load_family, scalar_value
from ..spec.functions import check_functions
from ..vocab import (
    ENQUEUE_METHOD,
    L2_FLUSH_METHOD,
    MEASURE,
    METRICS,
    PLAN,
    STANDARD_FIGURES,
    VERSION,
)
from .checks import check_config
from .expand import DeviceLimits, Scan, VariantGrid, size_grid, values_once
from .parts import batch_groups, part_expected_s, part_starts
from .questions import Question, parse_questions

BUNDLED_KERNELS = Path(__file__).resolve().parents[3] / "kernels"  # the workflow's own
PLANS = Path(".snakemake") / "ncuflow" / "plans"  # where the workflow keeps plans for jobs


@dataclass(frozen=True)
class Experiment:
    name: str
    family: Family
    grids: dict[str, VariantGrid]  # variant -> its configurations, built on demand
    scans: dict[str, Scan]  # variant -> which of them run
    given: dict[str, dict[str, Any]]  # variant -> its grid as the config gave it
    scalars: dict[str, int | float]  # each scalar's one value (declared or overridden)
    swept: dict[str, list[int | float]]  # each scalar the experiment sweeps: its values
    questions: tuple[Question, ...]  # what the report the study follows asked of it

    @property
    def variants(self) -> list[str]:
        return list(self.grids)

    def rows(self, variant: str) -> list[ConfigRow]:
        """Every configuration of a variant, in grid order (for a study small enough)."""
        return self.grids[variant].rows()


@dataclass(frozen=True)
class Study:
    """A validated config with every experiment expanded."""

    config: dict[str, Any]
    kernels_dir: Path
    experiments: dict[str, Experiment]
    timing: Timing  # how every configuration is timed: the settings and the methods
    # each variant's plan file, written once, and where its parts start, worked out once
    _written: dict[tuple[str, str, str], str] = field(
        default_factory=dict, compare=False, repr=False
    )
    _starts: dict[tuple[str, str], tuple[int, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )
    _groups: dict[str, list[list[tuple[str, str]]]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def jobs(self) -> Iterator[tuple[str, str]]:
        for name, experiment in self.experiments.items():
            for variant in experiment.variants:
                yield name, variant

    def gpus(self, experiment: str, variant: str) -> int:
        """GPUs a job of this variant holds: none for one that runs on the host (timed with
        the host clock, never profiled; it holds the host's cores instead, threads())."""
        return int(self.experiments[experiment].family.variant(variant).runs_on == "gpu")

    def threads(self, experiment: str, variant: str, cores: int | None) -> int:
        """Cores a measure job of this variant holds: all of the machine's (up to ``cores``,
        Snakemake's) for one timed by the host's clock, so that no job runs beside it (its
        BLAS takes every core; jobs beside it would spread its times, and it theirs), else 1."""
        if self.gpus(experiment, variant):
            return 1
        return max(1, min(cores or sys.maxsize, os.cpu_count() or 1))

    def parts(self, experiment: str, variant: str) -> list[str]:
        """The jobs a variant's configurations are split into (p0, p1, ...): each of at
        most ``configurations_per_job`` to run (or as many more as keep a variant within
        ``max_jobs_per_variant`` jobs) and about equal expected GPU time (study.parts), so
        that a long sweep spreads evenly over GPUs."""
        return [f"p{i}" for i in range(len(self._part_starts(experiment, variant)))]

    def _part_starts(self, experiment: str, variant: str) -> tuple[int, ...]:
        key = (experiment, variant)
        if key not in self._starts:
            scan = self.experiments[experiment].scans[variant]
            self._starts[key] = part_starts(scan.pending, scan.expected_s,
                                            self.config["configurations_per_job"],
                                            self.config["max_jobs_per_variant"])  # fmt: skip
        return self._starts[key]

    def priority(self, experiment: str, variant: str, part: str) -> int:
        """A job's Snakemake priority: its part's expected GPU seconds (study.parts), so
        that the longest jobs start first."""
        scan = self.experiments[experiment].scans[variant]
        starts = self._part_starts(experiment, variant)
        index = int(part[1:])
        stop = starts[index + 1] if index + 1 < len(starts) else scan.size
        return round(part_expected_s(scan.pending, scan.expected_s, starts[index], stop))

    def batches(self, experiment: str) -> list[str]:
        """An experiment's GPU jobs (b0, b1, ...: a measure job and a profile job each):
        each takes up to ``ncu.variants_per_job`` of its parts (study.parts.batch_groups),
        so that the measuring worker, ncu and the profiled process start once for all of
        them; a host variant's parts are batched apart (they hold every core, no GPU)."""
        return [f"b{i}" for i in range(len(self._batch_groups(experiment)))]

    def _batch_groups(self, experiment: str) -> list[list[tuple[str, str]]]:
        if experiment not in self._groups:
            exp = self.experiments[experiment]
            groups: list[list[tuple[str, str]]] = []
            for on_gpu in (1, 0):
                jobs = [(v, p) for v in exp.variants for p in self.parts(experiment, v)
                        if self.gpus(experiment, v) == on_gpu]  # fmt: skip
                expected = [self.priority(experiment, v, p) for v, p in jobs]
                most = self.config["ncu"]["variants_per_job"]
                groups += [[jobs[i] for i in g] for g in batch_groups(expected, most)]
            self._groups[experiment] = groups
        return self._groups[experiment]

    def batch_jobs(self, experiment: str, batch: str | None = None) -> list[tuple[str, str]]:
        """(variant, part) of each measure job a batch takes (None: the experiment's)."""
        groups = self._batch_groups(experiment)
        return [j for g in groups for j in g] if batch is None else groups[int(batch[1:])]

    def batch_of(self, experiment: str, variant: str, part: str) -> str:
        """The batch that takes a measure job."""
        for i, group in enumerate(self._batch_groups(experiment)):
            if (variant, part) in group:
                return f"b{i}"
        raise KeyError((experiment, variant, part))

    def batch_files(self, experiment: str, batch: str, name: str) -> list[str]:
        """The file ``name`` of each measure job a batch takes."""
        taken = self.batch_jobs(experiment, batch)
        return [f"results/{experiment}/{v}/{p}/{name}" for v, p in taken]

    def batch_priority(self, experiment: str, batch: str | None = None) -> int:
        """A batch's priority: its jobs' expected GPU seconds (None: the experiment's)."""
        return sum(self.priority(experiment, v, p) for v, p in self.batch_jobs(experiment, batch))

    def batch_gpus(self, experiment: str, batch: str) -> int:
        """GPUs a batch's jobs hold: one, or none for host variants (batched apart)."""
        return self.gpus(experiment, self.batch_jobs(experiment, batch)[0][0])

    def batch_threads(self, experiment: str, batch: str, cores: int | None) -> int:
        """Cores a batch's measure job holds (threads())."""
        return self.threads(experiment, self.batch_jobs(experiment, batch)[0][0], cores)

    @property
    def ncu(self) -> NcuSettings:
        return NcuSettings.from_config(self.config["ncu"])

    def variant_plan(self, experiment: str, variant: str) -> VariantPlan:
        """What the main process writes for one (experiment, variant): its jobs' shared
        header, its grid and where each part starts."""
        exp = self.experiments[experiment]
        header = Plan(
            experiment=experiment,
            family=exp.family.name,
            variant=variant,
            kernels_dir=str(self.kernels_dir),
            family_fingerprint=exp.family.fingerprint,
            seed=self.config["seed"],
            timing=self.timing,
            scalars=exp.scalars,
            device_facts=DeviceLimits.from_config(self.config["device_limits"]).facts(),
            configs=(),
        )
        grid = {
            "sizes": self.config["experiments"][experiment]["sizes"],
            "variant": exp.given[variant],
            "device_limits": self.config["device_limits"],
            **({"scalars": exp.swept} if exp.swept else {}),
        }
        return VariantPlan(header, grid, exp.scans[variant].size,
                           self._part_starts(experiment, variant))  # fmt: skip

    def plan(self, experiment: str, variant: str, part: str | None = None) -> Plan:
        """What the GPU stages need for one (experiment, variant), or for one ``part`` of it
        (parts()): written as plan.json by its job (part_plan)."""
        whole = self.variant_plan(experiment, variant)
        start, stop = whole.part_range(part) if part else (0, whole.size)
        return whole.plan.with_configs(
            self.experiments[experiment].grids[variant].rows(start, stop)
        )

    def plan_file(self, experiment: str, variant: str, folder: Path = PLANS) -> str:
        """The variant's plan written once under ``folder``, named by a hash of its content:
        its jobs expand their parts from it (no plan travels as a parameter), and a changed
        plan has a changed name, which makes Snakemake run them again."""
        key = (experiment, variant, str(folder))
        if key not in self._written:
            text = self.variant_plan(experiment, variant).to_json()
            # the version too: another ncuflow may expand the same grid into other rows
            named = hashlib.sha256(f"{VERSION}\n{text}".encode()).hexdigest()[:16]
            path = Path(folder) / f"{named}.json"
            if not path.is_file():
                path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(path, text)
            self._written[key] = str(path)
        return self._written[key]

    def collect_inputs(self, experiment: str, name: str | None = None) -> list[str]:
        """What the collect stage reads, (plan, measure, metrics) of each part of each
        variant in turn; or only the file ``name`` of each."""
        names = [name] if name else [PLAN, MEASURE, METRICS]
        return [
            f"results/{experiment}/{variant}/{part}/{file}"
            for variant in self.experiments[experiment].variants
            for part in self.parts(experiment, variant)
            for file in names
        ]

    def separate_sizes(self, experiment: str) -> bool:
        """Whether an experiment's sizes are a list of grids (named layers, say): separate
        problems, which figures do not join as a trend."""
        return isinstance(self.config["experiments"][experiment]["sizes"], list)

    def figures(self, experiment: str) -> list[str]:
        """Every figure of an experiment: the standard ones and its family's own."""
        return [*STANDARD_FIGURES, *self.experiments[experiment].family.figures]

    def family_figures(self) -> list[str]:
        """Names of the figures the families of this study declare themselves."""
        return sorted({f for e in self.experiments.values() for f in e.family.figures})

    def count(self) -> tuple[int, int]:
        """(configurations, of which pending)."""
        scans = [scan for e in self.experiments.values() for scan in e.scans.values()]
        return sum(s.size for s in scans), sum(len(s.pending) for s in scans)


def _experiment(
    name: str, data: Mapping[str, Any], kernels_dir: Path, limits: DeviceLimits
) -> Experiment:
    where = f"experiments.{name}"
    families = available_families(kernels_dir)
    if data["family"] not in families:
        raise ConfigError(
            f"{where}.family",
            f"unknown family {data['family']!r}; valid: {', '.join(families) or 'none'} "
            f"(folders of {kernels_dir} holding family.yaml)",
        )
    try:
        family = load_family(kernels_dir, data["family"])
    except NcuflowError as exc:
        raise ConfigError(f"{where}.family", str(exc)) from None
    sizes = size_grid(data["sizes"], family.dims, f"{where}.sizes")
    _check_index_range(family, sizes, f"{where}.sizes")
    scalars, swept = _scalars(family, data.get("scalars") or {}, f"{where}.scalars")
    grids, scans, given = {}, {}, {}
    for vname, vdata in data["variants"].items():
        given[vname] = vdata or {}
        grids[vname] = _variant_grid(name, family, (sizes, swept), vname, given[vname], limits)
        scans[vname] = scan = grids[vname].scan()
        if not scan.pending:
            shown = "; ".join(scan.reasons[:3]) + ("; ..." if len(scan.reasons) > 3 else "")
            raise ConfigError(
                f"{where}.variants.{vname}.params",
                f"every one of the {scan.size} combinations fails: {shown}. "
                f"Change the grid so that at least one combination is valid",
            )
    try:  # family.py and every function the family and these variants name, before any job
        check_functions(family, [grid.variant for grid in grids.values()])
    except SpecError as exc:
        raise ConfigError(f"{where}.family", str(exc)) from None
    return Experiment(
        name=name,
        family=family,
        grids=grids,
        scans=scans,
        given=given,
        scalars=scalars,
        swept=swept,
        questions=parse_questions(data.get("questions"), grids, family.problem_columns, where),
    )


def _variant_grid(
    experiment: str,
    family: Family,
    problems: tuple[list[dict[str, int]], Mapping[str, list[int | float]]],
    name: str,
    given: Mapping[str, Any],
    limits: DeviceLimits,
) -> VariantGrid:
    """One variant's grid in an experiment, from its section of the config, over its
    ``problems``: the sizes, and the values of each scalar it sweeps."""
    where = f"experiments.{experiment}.variants.{name}"
    if name not in family.variant_files:
        raise ConfigError(
            where,
            f"unknown variant {name!r} of family {family.name}; valid: "
            f"{', '.join(family.variant_files)}",
        )
    variant = family.variant(name)
    if given.get("dtype", variant.dtype) not in variant.accepts:
        raise ConfigError(
            f"{where}.dtype",
            f"variant {name} does not accept dtype {given['dtype']!r}; it accepts "
            f"{', '.join(variant.accepts)}",
        )
    params, restrictions = given.get("params") or {}, given.get("restrictions") or []
    sizes, swept = problems
    return VariantGrid(experiment, family, variant, sizes, params, restrictions, limits, where,
                       given.get("dtype"), swept)  # fmt: skip


def part_plan(variant_plan: Path, part: str) -> Plan:
    """A job's plan.json: its part of a variant's plan, expanded from the grid the config
    gave, against the kernel sources as they were when the study was planned."""
    whole = VariantPlan.load(variant_plan)
    header = whole.plan
    family = load_family(Path(header.kernels_dir), header.family)
    if family.fingerprint != header.family_fingerprint:
        raise NcuflowError(
            f"the kernel sources of family {header.family} changed since this study was "
            f"planned ({variant_plan}); run snakemake again, which plans it anew"
        )
    sizes = size_grid(whole.grid["sizes"], family.dims, f"experiments.{header.experiment}.sizes")
    limits = DeviceLimits.from_config(whole.grid["device_limits"])
    grid = _variant_grid(header.experiment, family, (sizes, whole.grid.get("scalars", {})),
                         header.variant, whole.grid["variant"], limits)  # fmt: skip
    if grid.size != whole.size:
        raise NcuflowError(f"{variant_plan}: its grid has {grid.size} positions, not "
                           f"{whole.size}; written by another ncuflow, or edited")  # fmt: skip
    return header.with_configs(grid.rows(*whole.part_range(part)))


def _check_index_range(family: Family, sizes: list[dict[str, int]], where: str) -> None:
    """Every dimension must fit the C type the family passes dimensions as."""
    bits = 31 if family.index_type == "int32" else 63
    for dims in sizes:
        too_big = [d for d, v in dims.items() if v >= 2**bits]
        if too_big:
            raise ConfigError(
                f"{where}.{too_big[0]}",
                f"{dims[too_big[0]]} does not fit the {family.index_type} that family "
                f"{family.name} passes its dimensions as (at most {2**bits - 1})",
            )


def _scalars(
    family: Family, given: Mapping[str, Any], where: str
) -> tuple[dict[str, int | float], dict[str, list[int | float]]]:
    """The family's scalar arguments with the experiment's values, each checked against
    its declared dtype: (those of one value, those swept: a list of values each)."""
    unknown = [k for k in given if k not in family.scalars]
    if unknown:
        valid = ", ".join(family.scalars) or "none (the family takes no scalar)"
        raise ConfigError(
            f"{where}.{unknown[0]}",
            f"unknown scalar {unknown[0]!r} of family {family.name}; valid: {valid}",
        )
    values: dict[str, int | float] = {}
    swept: dict[str, list[int | float]] = {}
    for name, scalar in family.scalars.items():
        value = given.get(name, scalar.value)
        listed = value if isinstance(value, list) else [value]
        checked = []
        for i, one in enumerate(listed):
            at = f"{where}.{name}[{i}]" if isinstance(value, list) else f"{where}.{name}"
            try:
                checked.append(scalar_value(name, scalar.dtype, one))
            except SpecError as exc:
                raise ConfigError(at, str(exc).split(": ", 1)[1]) from None
        if isinstance(value, list):
            swept[name] = values_once(checked, f"{where}.{name}")
        else:
            values[name] = checked[0]
    return values, swept


def coerce_overrides(config: dict[str, Any], overrides: Mapping[str, Any]) -> None:
    """Read as YAML each ``--config`` value that Snakemake leaves as text where the schema
    wants something else: ``--config timing='{min_repeats: 10}'`` gives the text '10', which
    is the integer 10 here (a value the config files gave keeps its own type). A text that
    is not valid YAML is refused, naming its key and line."""
    properties = schema.load(schema.CONFIG)["properties"]
    pending = [((key,), value, properties.get(key, {})) for key, value in overrides.items()]
    while pending:
        path, value, wanted = pending.pop()
        if isinstance(value, Mapping):
            inner = wanted.get("properties", {})
            pending += [((*path, k), v, inner.get(k, {})) for k, v in value.items()]
            continue
        types = wanted.get("type", [])
        types = [types] if isinstance(types, str) else types
        if not isinstance(value, str) or not types or "string" in types:
            continue
        try:
            read = load_yaml(value)
        except YamlError as exc:
            raise ConfigError(key_path(path), f"the --config value is not valid YAML: {exc}"
                              ) from None  # fmt: skip
        node = config
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = read


def load_study(
    config: dict[str, Any], root: Path | str = ".", bundled: Path = BUNDLED_KERNELS
) -> Study:
    """Validate the config (filling its defaults) and expand every experiment. A relative
    kernels_dir is relative to ``root`` (the folder of the config file that names it); no
    kernels_dir means ``bundled``, the workflow's own kernels."""
    check_config(config)
    named = config["kernels_dir"]
    kernels_dir = local_path((Path(root) / named if named else Path(bundled)).resolve())
    if not kernels_dir.is_dir():
        raise ConfigError("kernels_dir", f"{named or kernels_dir} is not a folder ({kernels_dir})")
    limits = DeviceLimits.from_config(config["device_limits"])
    experiments = {
        name: _experiment(name, data, kernels_dir, limits)
        for name, data in config["experiments"].items()
    }
    # the timing methods recorded beside the settings; its bounds checked before any plan
    timing = {**config["timing"], "l2_flush": L2_FLUSH_METHOD, "enqueue": ENQUEUE_METHOD}
    return Study(config=config, kernels_dir=kernels_dir, experiments=experiments,
                 timing=Timing.from_json(timing, "timing"))  # fmt: skip
