"""The study: config.yaml validated (schema, then meaning) and expanded into plans.

Everything here runs before any GPU work, so that a wrong config costs nothing but one
clear message naming the offending key and the valid choices.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import ConfigError, NcuflowError, SpecError
from ..files import atomic_write, local_path
from ..ncu import NcuSettings
from ..plan import ConfigRow, Plan, Timing, VariantPlan
from ..spec import Family, available_families, load_family
from ..spec.functions import check_functions
from ..vocab import (
    ENERGY_FIGURE,
    ENQUEUE_METHOD,
    L2_FLUSH_METHOD,
    MEASURE,
    METRICS,
    PLAN,
    SEARCH_FIGURE,
    STANDARD_FIGURES,
    VERSION,
)
from .checks import check_config, check_index_range, energy_seconds, experiment_scalars
from .expand import DeviceLimits, Scan, VariantGrid, size_grid
from .parts import batch_groups, part_expected_s, part_starts
from .questions import Question, parse_questions
from .rounds import Rounds, SearchSettings, proposed

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
    search: SearchSettings  # how its grids are explored: every configuration, or a search

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
        """The jobs a variant's configurations are split into (p0, p1, ...): each of at most
        ``configurations_per_job`` to run (or more, to keep within ``max_jobs_per_variant``)
        and about equal expected GPU time (study.parts), so that a long sweep spreads evenly
        over GPUs; a search's, one per measure job of each of its rounds (study.rounds)."""
        search = self.experiments[experiment].search
        count = search.parts if search.searches else len(self._part_starts(experiment, variant))
        return [f"p{i}" for i in range(count)]

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
        that the longest jobs start first (a search's rounds go in their order)."""
        if self.experiments[experiment].search.searches:
            return 0
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
            if exp.search.searches:  # b<i>: part p<i> of every variant (study.rounds)
                parts = range(exp.search.parts)
                self._groups[experiment] = [[(v, f"p{i}") for v in exp.variants] for i in parts]
                return self._groups[experiment]
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
        """GPUs a batch's jobs hold: one, or none for host variants (batched apart, but in
        a search's batches beside the GPU's)."""
        return max(self.gpus(experiment, v) for v, _ in self.batch_jobs(experiment, batch))

    def batch_threads(self, experiment: str, batch: str, cores: int | None) -> int:
        """Cores a batch's measure job holds (threads())."""
        return max(self.threads(experiment, v, cores)
                   for v, _ in self.batch_jobs(experiment, batch))  # fmt: skip

    def profile_mode(self, experiment: str) -> str:
        """Which configurations ncu profiles (ncu.profile): as the config says, else all in
        a grid experiment and the 3 fastest per variant and size in a search."""
        given = self.config["ncu"]["profile"]
        return given or ("top:3" if self.experiments[experiment].search.searches else "all")

    def profile_batches(self, experiment: str) -> list[str]:
        """An experiment's profile jobs: one per measure batch where ncu profiles every
        configuration, else one that chooses among all of them."""
        return self.batches(experiment) if self.profile_mode(experiment) == "all" else ["b0"]

    def profile_jobs(self, experiment: str, batch: str) -> list[tuple[str, str]]:
        """(variant, part) of each measure job a profile job takes."""
        whole = self.profile_mode(experiment) != "all"
        return self.batch_jobs(experiment, None if whole else batch)

    def profile_batch_of(self, experiment: str, variant: str, part: str) -> str:
        """The profile job that takes a measure job."""
        whole = self.profile_mode(experiment) != "all"
        return "b0" if whole else self.batch_of(experiment, variant, part)

    def profile_files(self, experiment: str, batch: str, name: str) -> list[str]:
        """The file ``name`` of each measure job a profile job takes."""
        taken = self.profile_jobs(experiment, batch)
        return [f"results/{experiment}/{v}/{p}/{name}" for v, p in taken]

    def rounds(self, experiment: str) -> Rounds:
        """A search's rounds: their files, and what each reads."""
        exp = self.experiments[experiment]
        return Rounds(experiment, tuple(exp.variants), exp.search)

    def compiled_file(self, experiment: str, batch: str | None = None) -> list[str]:
        """The cubins' index a measure batch (or, without ``batch``, a profile job) loads:
        its experiment's; in a search, its round's own (a round's proposals are compiled
        when they are known), and none for the profile, which builds its few itself."""
        if not self.experiments[experiment].search.searches:
            return [f"results/{experiment}/compiled.json"]
        return [f"results/{experiment}/compiled.{batch}.json"] if batch else []

    def compile_jobs(self, experiment: str, batch: str) -> list[tuple[str, str]]:
        """(variant plan, part) of the measure jobs a compile job builds for ('': all)."""
        taken = self.batch_jobs(experiment, batch or None)
        return [(self.plan_file(experiment, v), p) for v, p in taken]

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
            timing=replace(self.timing, energy_s=energy_seconds(self.config, experiment)),
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
        """Every figure of an experiment: the standard ones, its family's, a search's, energy's."""
        exp = self.experiments[experiment]
        return [*STANDARD_FIGURES, *exp.family.figures,
                *([SEARCH_FIGURE] if exp.search.searches else []),
                *([ENERGY_FIGURE] if energy_seconds(self.config, experiment) else [])]  # fmt: skip

    def family_figures(self) -> list[str]:
        """Names of the figures the families of this study declare themselves."""
        return sorted({f for e in self.experiments.values() for f in e.family.figures})

    def count(self) -> tuple[int, int]:
        """(configurations, of which to run): of a search's, at most its budget per size."""
        total = runs = 0
        for exp in self.experiments.values():
            pending = sum(len(scan.pending) for scan in exp.scans.values())
            most = exp.search.budget * len(next(iter(exp.grids.values())).problems)
            total += sum(scan.size for scan in exp.scans.values())
            runs += min(pending, most) if exp.search.searches else pending
        return total, runs


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
    check_index_range(family, sizes, f"{where}.sizes")
    scalars, swept = experiment_scalars(family, data.get("scalars") or {}, f"{where}.scalars")
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
        search=SearchSettings.from_config(data.get("search")),
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


def part_plan(variant_plan: Path, part: str, proposals: Path | None = None) -> Plan:
    """A job's plan.json: its part of a variant's plan, expanded from the grid the config
    gave, against the kernel sources as they were when the study was planned; in a search,
    the part's configurations that its round proposed (``proposals``, its round file)."""
    whole, grid = variant_grid(variant_plan)
    if proposals is not None:
        search_round, taken = proposed(proposals, part, whole.plan.variant)
        return whole.plan.with_configs([replace(grid.row_at(p), search_round=search_round)
                                        for p in taken])  # fmt: skip
    return whole.plan.with_configs(grid.rows(*whole.part_range(part)))


def variant_grid(variant_plan: Path) -> tuple[VariantPlan, VariantGrid]:
    """A variant's plan, and its grid built again from what the config gave."""
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
    return whole, grid


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
