"""The study: config.yaml validated (schema, then meaning) and expanded into plans.

Everything here runs before any GPU work, so that a wrong config costs nothing but one
clear message naming the offending key and the valid choices.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError, NcuflowError
from .expand import PENDING, DeviceLimits, expand_variant, size_grid
from .records import atomic_write
from .spec import STANDARD_FIGURES, Family, SpecError, available_families, load_family, scalar_value
from .strict import check_grid, check_sections, no_floats
from .vocab import ENQUEUE_METHOD, L2_FLUSH_METHOD

SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "config.schema.yaml"
BUNDLED_KERNELS = Path(__file__).resolve().parents[2] / "kernels"  # the workflow's own
PLANS = Path(".snakemake") / "ncuflow" / "plans"  # where the workflow keeps plans for jobs


def _path(parts: Sequence[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text.lstrip(".") or "(top level)"


def _deepest(err: Any) -> Any:
    """Inside anyOf, the branch error that reaches deepest into the value (the list element
    that is wrong rather than the whole list)."""
    while err.validator in {"anyOf", "oneOf"} and err.context:
        deeper = max(err.context, key=lambda e: (len(e.absolute_path), e.validator != "type"))
        if len(deeper.absolute_path) <= len(err.absolute_path):
            break
        err = deeper
    return err


def _schema_error(err: Any) -> ConfigError:
    """One line from a jsonschema ValidationError: where, what, and what is expected."""
    err = _deepest(err)
    path = list(err.absolute_path)
    if err.validator in {"anyOf", "oneOf"}:
        message = f"{err.instance!r} is not valid"
    elif err.validator == "enum":
        choices = ", ".join(map(str, err.validator_value))
        message = f"{err.instance!r} is not a valid choice; valid: {choices}"
    elif err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = list(err.schema.get("properties", {}))
        extra = next(k for k in err.instance if k not in allowed)
        path.append(extra)
        message = f"unknown key {extra!r}; valid: {', '.join(allowed)}"
    elif err.validator == "pattern":
        message = f"{err.instance!r} holds characters that are not allowed"
    elif err.validator == "type":
        kind = type(err.instance).__name__
        article = "an" if kind[0] in "aeiou" else "a"
        message = f"{err.instance!r} is {article} {kind}, not {err.validator_value}"
    else:
        message = err.message
    description, node = None, err
    while node is not None and description is None:
        description = node.schema.get("description") if isinstance(node.schema, dict) else None
        node = node.parent
    if description and err.validator not in {"additionalProperties", "enum"}:
        message += f" (expected: {description})"
    return ConfigError(_path(path), message)


def validate_schema(config: dict[str, Any]) -> dict[str, Any]:
    """Check the config against workflow/schemas and fill in its defaults, in place."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    try:
        validate(config, str(SCHEMA))
    except WorkflowError as exc:
        cause = exc.__context__
        if cause is None or not hasattr(cause, "absolute_path"):
            raise ConfigError("(top level)", str(exc)) from None
        raise _schema_error(cause) from None
    return config


@dataclass(frozen=True)
class Experiment:
    name: str
    family: Family
    configs: dict[str, list[dict[str, Any]]]  # variant -> its configurations
    scalars: dict[str, int | float]  # every scalar argument's value (declared or overridden)

    @property
    def variants(self) -> list[str]:
        return list(self.configs)


@dataclass(frozen=True)
class Study:
    """A validated config with every experiment expanded."""

    config: dict[str, Any]
    kernels_dir: Path
    experiments: dict[str, Experiment]
    # each variant's configurations by part (parts()), worked out once
    _split: dict[tuple[str, str], list[list[dict[str, Any]]]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def jobs(self) -> Iterator[tuple[str, str]]:
        for name, experiment in self.experiments.items():
            for variant in experiment.variants:
                yield name, variant

    def gpus(self, experiment: str, variant: str) -> int:
        """GPUs a job of this variant holds: none for one that runs on the host (timed with
        the host clock, never profiled; it holds the host's cores instead, threads())."""
        return int(self.experiments[experiment].family.variants[variant].runs_on == "gpu")

    def threads(self, experiment: str, variant: str, cores: int | None) -> int:
        """Cores a measure job of this variant holds: all of the machine's (up to
        ``cores``, Snakemake's) for one timed by the host's clock, so that no job runs
        beside it (its BLAS takes every core; jobs beside it would spread its times, and
        it theirs), one otherwise."""
        if self.gpus(experiment, variant):
            return 1
        return max(1, min(cores or sys.maxsize, os.cpu_count() or 1))

    def parts(self, experiment: str, variant: str) -> list[str]:
        """The jobs a variant's configurations are split into (p0, p1, ...), each of at most
        ``configurations_per_job`` pending ones, so that a long sweep spreads over GPUs."""
        return [f"p{i}" for i in range(len(self._parts(experiment, variant)))]

    def _parts(self, experiment: str, variant: str) -> list[list[dict[str, Any]]]:
        """Each part's configurations, in the grid's order: its share of the pending ones;
        the first part also lists the skipped ones."""
        key = (experiment, variant)
        if key not in self._split:
            size, pending = self.config["configurations_per_job"], 0
            split: list[list[dict[str, Any]]] = [[]]
            for row in self.experiments[experiment].configs[variant]:  # in the grid's order
                part = pending // size if row["status"] == PENDING else 0
                pending += row["status"] == PENDING
                if part == len(split):
                    split.append([])
                split[part].append(row)
            self._split[key] = split
        return self._split[key]

    def part_jobs(self) -> Iterator[tuple[str, str, str]]:
        for experiment, variant in self.jobs():
            for part in self.parts(experiment, variant):
                yield experiment, variant, part

    def plan(self, experiment: str, variant: str, part: str | None = None) -> dict[str, Any]:
        """What the GPU stages need for one (experiment, variant), or for one ``part`` of it
        (parts()): written as plan.json."""
        exp = self.experiments[experiment]
        configs = exp.configs[variant]
        if part is not None:
            configs = self._parts(experiment, variant)[int(part[1:])]
        return {
            "experiment": experiment,
            "family": exp.family.name,
            "variant": variant,
            "kernels_dir": str(self.kernels_dir),
            "family_fingerprint": exp.family.fingerprint,
            "seed": self.config["seed"],
            "timing": {
                **self.config["timing"],
                "l2_flush": L2_FLUSH_METHOD,
                "enqueue": ENQUEUE_METHOD,
            },
            "scalars": exp.scalars,
            "device_facts": DeviceLimits.from_config(self.config["device_limits"]).facts(),
            "configs": configs,
        }

    def plan_json(self, experiment: str, variant: str, part: str | None = None) -> str:
        return json.dumps(self.plan(experiment, variant, part), indent=1, sort_keys=True)

    def plan_file(
        self, experiment: str, variant: str, part: str | None = None, folder: Path = PLANS
    ) -> str:
        """The plan written once under ``folder``, named by a hash of its content: a job
        copies it (cheap, and no plan travels as a parameter), and a changed plan has a
        changed name, which makes Snakemake run the job again."""
        text = self.plan_json(experiment, variant, part)
        path = Path(folder) / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, text)
        return str(path)

    def collect_inputs(self, experiment: str, name: str | None = None) -> list[str]:
        """What the collect stage reads, (plan, measure, metrics) of each part of each
        variant in turn; or only the file ``name`` of each."""
        names = [name] if name else ["plan.json", "measure.json", "metrics.parquet"]
        return [
            f"results/{experiment}/{variant}/{part}/{file}"
            for variant in self.experiments[experiment].variants
            for part in self.parts(experiment, variant)
            for file in names
        ]

    def figures(self, experiment: str) -> list[str]:
        """Every figure of an experiment: the standard ones and its family's own."""
        return [*STANDARD_FIGURES, *self.experiments[experiment].family.figures]

    def family_figures(self) -> list[str]:
        """Names of the figures the families of this study declare themselves."""
        return sorted({f for e in self.experiments.values() for f in e.family.figures})

    def count(self) -> tuple[int, int]:
        """(configurations, of which pending)."""
        rows = [r for e in self.experiments.values() for rs in e.configs.values() for r in rs]
        return len(rows), sum(r["status"] == PENDING for r in rows)


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
    configs: dict[str, list[dict[str, Any]]] = {}
    for vname, vdata in data["variants"].items():
        if vname not in family.variants:
            raise ConfigError(
                f"{where}.variants.{vname}",
                f"unknown variant {vname!r} of family {family.name}; valid: "
                f"{', '.join(family.variants)}",
            )
        vdata = vdata or {}
        variant = family.variants[vname]
        if vdata.get("dtype", variant.dtype) not in variant.accepts:
            raise ConfigError(
                f"{where}.variants.{vname}.dtype",
                f"variant {vname} does not accept dtype {vdata['dtype']!r}; it accepts "
                f"{', '.join(variant.accepts)}",
            )
        rows = expand_variant(
            name,
            family,
            family.variants[vname],
            sizes,
            vdata.get("params") or {},
            vdata.get("restrictions") or [],
            limits,
            f"{where}.variants.{vname}",
            vdata.get("dtype"),
        )
        if not any(r["status"] == PENDING for r in rows):
            reasons = sorted({r["error"] for r in rows})
            shown = "; ".join(reasons[:3]) + ("; ..." if len(reasons) > 3 else "")
            raise ConfigError(
                f"{where}.variants.{vname}.params",
                f"every one of the {len(rows)} combinations fails: {shown}. "
                f"Change the grid so that at least one combination is valid",
            )
        configs[vname] = rows
    return Experiment(
        name=name,
        family=family,
        configs=configs,
        scalars=_scalars(family, data.get("scalars") or {}, f"{where}.scalars"),
    )


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


def _scalars(family: Family, given: Mapping[str, Any], where: str) -> dict[str, int | float]:
    """The family's scalar arguments with the experiment's values, each checked against
    its declared dtype."""
    unknown = [k for k in given if k not in family.scalars]
    if unknown:
        valid = ", ".join(family.scalars) or "none (the family takes no scalar)"
        raise ConfigError(
            f"{where}.{unknown[0]}",
            f"unknown scalar {unknown[0]!r} of family {family.name}; valid: {valid}",
        )
    values = {}
    for name, scalar in family.scalars.items():
        try:
            values[name] = scalar_value(name, scalar.dtype, given.get(name, scalar.value))
        except SpecError as exc:
            raise ConfigError(f"{where}.{name}", str(exc).split(": ", 1)[1]) from None
    return values


def load_study(
    config: dict[str, Any], root: Path | str = ".", bundled: Path = BUNDLED_KERNELS
) -> Study:
    """Validate the config (filling its defaults) and expand every experiment. A relative
    kernels_dir is relative to ``root`` (the folder of the config file that names it); no
    kernels_dir means ``bundled``, the workflow's own kernels."""
    no_floats(config)
    validate_schema(config)
    check_sections(config["ncu"]["sections"], config["ncu"]["path"])
    check_grid(config)
    named = config["kernels_dir"]
    kernels_dir = (Path(root) / named if named else Path(bundled)).resolve()
    if not kernels_dir.is_dir():
        raise ConfigError("kernels_dir", f"{named or kernels_dir} is not a folder ({kernels_dir})")
    limits = DeviceLimits.from_config(config["device_limits"])
    experiments = {
        name: _experiment(name, data, kernels_dir, limits)
        for name, data in config["experiments"].items()
    }
    return Study(config=config, kernels_dir=kernels_dir, experiments=experiments)
