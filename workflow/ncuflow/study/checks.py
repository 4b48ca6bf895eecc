"""Checks a config must pass that its JSON schema cannot express: no deeper than the
walks of a config can go, no float where an integer is meant (JSON Schema calls 1024.0 an
integer), experiment names that are not the workflow's own in results/, ncu sections that
exist, grids of a size one can run, sizes that fit the family's index type and scalars of
their declared types; and ``--config`` values read as the schema wants them. (A key
written twice in a YAML file is refused as the file is read: ncuflow.files.read_config.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .. import schema
from ..errors import ConfigError, SpecError, key_path
from ..files import DEPTH_EXPECTED, TOO_DEEP, YamlError, load_yaml, too_deep
from ..ncu import KNOWN_SECTIONS, installed_sections
from ..spec import Family, scalar_value
from ..vocab import RESULTS_OWN
from .expand import refuse_unknown, values_once


def check_config(config: dict[str, Any]) -> None:
    """Every check of a config before any experiment is expanded, the schema's among them
    (which fills in its defaults): each refusal one ConfigError naming its key."""
    check_depth(config)
    no_floats(config)
    schema.validate(config, schema.CONFIG)
    check_names(config["experiments"])
    for key in ("sections", "explain_sections", "source_sections"):
        check_sections(config["ncu"][key], config["ncu"]["path"], f"ncu.{key}")
    check_grid(config)


def _members(value: Any) -> list[tuple[Any, Any]] | None:
    """A mapping's keys and values, a list's places and items; None for anything else."""
    if isinstance(value, Mapping):
        return list(value.items())
    return list(enumerate(value)) if isinstance(value, list) else None


def check_depth(config: Mapping[str, Any]) -> None:
    """A config nested no deeper than ncuflow's walks of it can go (a value given through
    --config, or by a program, that no YAML reader bounded)."""
    deep = too_deep(config, _members)
    if deep:
        steps, _, holds_itself = deep
        problem = ("a value that holds itself nests without end; expected mappings and lists "
                   "that end" if holds_itself else f"{TOO_DEEP}; {DEPTH_EXPECTED}")  # fmt: skip
        raise ConfigError(key_path(steps), problem)


def check_names(experiments: Mapping[str, Any]) -> None:
    """No experiment takes a name of the workflow's own in results/ (its folder would be
    theirs), in any case: some file systems do not tell cases apart."""
    for name in experiments:
        if name.lower() in RESULTS_OWN:
            raise ConfigError(
                f"experiments.{name}",
                f"the experiment's folder results/{name}/ would collide with the workflow's "
                f"own files of that name in results/; expected a name other than "
                f"{', '.join(RESULTS_OWN)} (in any case)",
            )


# Where a float belongs; every other number of a config is an integer.
FLOAT_KEYS = {("timing", k) for k in ("target_ci_pct", "budget_s", "timeout_s", "timeout_floor_s")}
FLOAT_KEYS.add(("energy", "seconds"))


def no_floats(value: Any, path: tuple[Any, ...] = ()) -> None:
    """Every number of a config is finite, and an integer except where a float belongs
    (FLOAT_KEYS and scalars, checked against their own dtypes)."""
    if isinstance(value, float) and not math.isfinite(value):  # .nan, .inf: never meant
        raise ConfigError(key_path(path), f"{value!r} is not a finite number")
    if isinstance(value, Mapping):
        for key, item in value.items():
            if path[-1:] == ("scalars",):  # a value, or a list of values swept
                for i, one in enumerate(item if isinstance(item, list) else [item]):
                    if isinstance(one, float) and not math.isfinite(one):
                        at = (*path, key, i) if isinstance(item, list) else (*path, key)
                        raise ConfigError(key_path(at), f"{one!r} is not a finite number")
                continue
            no_floats(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            no_floats(item, (*path, i))
    elif isinstance(value, float) and path not in FLOAT_KEYS:
        shown = f"; write {int(value)}" if math.isfinite(value) and value.is_integer() else ""
        raise ConfigError(key_path(path), f"{value!r} is a float, expected an integer{shown}")


def check_sections(sections: list[str], ncu_path: str, key: str) -> None:
    """Every section of ``sections`` (the config's ``key``) is one ncu knows."""
    installed = installed_sections(ncu_path)
    known, against = (installed, "the installed ncu's --list-sections") if installed else (
        KNOWN_SECTIONS, "ncu 2025.3's sections (no ncu here to ask)")  # fmt: skip
    for i, section in enumerate(sections):
        if section not in known:
            raise ConfigError(
                f"{key}[{i}]", f"unknown section {section!r}, checked against {against}; "
                f"valid: {', '.join(known)}",
            )  # fmt: skip


def _count(value: Any) -> int:
    return len(value) if isinstance(value, list) else 1


def grid_size(sizes: Any) -> int:
    """How many problem sizes a sizes entry makes, without making them (tied dimensions
    add none)."""
    if isinstance(sizes, list):
        return sum(grid_size(part) for part in sizes)
    return math.prod(_count(v) for v in sizes.values() if not isinstance(v, str))


def check_grid(config: Mapping[str, Any]) -> None:
    """Refuse, before expanding anything, a study of more configurations than
    max_configurations (it says how to raise the limit)."""
    limit = config["max_configurations"]
    total = 0
    for experiment in config["experiments"].values():
        sizes = grid_size(experiment["sizes"])
        for variant in experiment["variants"].values():
            params = (variant or {}).get("params") or {}
            total += sizes * math.prod(_count(v) for v in params.values())
    if total > limit:
        raise ConfigError(
            "experiments",
            f"the study asks for {total:,} configurations, more than max_configurations "
            f"({limit:,}); narrow the grids, or raise the limit in the config "
            f"(max_configurations: {total}) if you mean to run them all",
        )


def check_index_range(family: Family, sizes: list[dict[str, int]], where: str) -> None:
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


def experiment_scalars(
    family: Family, given: Mapping[str, Any], where: str
) -> tuple[dict[str, int | float], dict[str, list[int | float]]]:
    """The family's scalar arguments with the experiment's values, each checked against
    its declared dtype: (those of one value, those swept: a list of values each)."""
    refuse_unknown(given, family.scalars, where, f"scalar of family {family.name}",
                   "none (the family takes no scalar)")  # fmt: skip
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


def energy_seconds(config: Mapping[str, Any], experiment: str) -> float | None:
    """How long each of an experiment's configurations runs back to back for its energy
    (the study's ``energy``, which the experiment's own true or false overrides), or None
    where it gets no energy tier; ``config``: checked, its defaults filled in."""
    study = config["energy"]
    if not config["experiments"][experiment].get("energy", study is not False):
        return None
    return float(study.get("seconds", 1.0)) if isinstance(study, dict) else 1.0


def study_energy_seconds(config: Mapping[str, Any]) -> float | None:
    """The energy tier's seconds where any experiment has it (the device's energy ceilings
    are then measured, once for all), else None."""
    asked = [energy_seconds(config, name) for name in config["experiments"]]
    return max((s for s in asked if s is not None), default=None)
