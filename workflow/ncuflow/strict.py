"""Checks a config must pass that its JSON schema cannot express: no key written twice in
a YAML file, no float where an integer is meant (JSON Schema calls 1024.0 an integer),
ncu sections that exist, and grids of a size one can run.
"""

from __future__ import annotations

import functools
import math
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError

# Where a float belongs; every other number of a config is an integer.
FLOAT_KEYS = {("timing", k) for k in ("target_ci_pct", "budget_s", "timeout_s", "timeout_floor_s")}
# The sections of ncu 2025.3 (ncu --list-sections), checked against where ncu is absent.
KNOWN_SECTIONS = (
    "ComputeWorkloadAnalysis", "InstructionStats", "LaunchStats", "MemoryWorkloadAnalysis",
    "MemoryWorkloadAnalysis_Chart", "MemoryWorkloadAnalysis_Tables", "NumaAffinity", "Nvlink",
    "Nvlink_Tables", "Nvlink_Topology", "Occupancy", "PmSampling", "PmSampling_WarpStates",
    "SchedulerStats", "SourceCounters", "SpeedOfLight",
    "SpeedOfLight_HierarchicalDoubleRooflineChart", "SpeedOfLight_HierarchicalHalfRooflineChart",
    "SpeedOfLight_HierarchicalSingleRooflineChart", "SpeedOfLight_HierarchicalTensorRooflineChart",
    "SpeedOfLight_RooflineChart", "WarpStateStats", "WorkloadDistribution",
)  # fmt: skip
# Configurations a config may ask for unless it raises max_configurations.
MAX_CONFIGURATIONS = 100_000


def _where(path: tuple[Any, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text.lstrip(".") or "(top level)"


def duplicate_keys(text: str, source: str) -> None:
    """Refuse a YAML text that writes a key twice in one mapping (YAML keeps only the last,
    silently): the error names the key's path and both lines."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise ConfigError("(top level)", f"{source} is not valid YAML: {exc}") from None
    pending: list[tuple[Any, tuple[Any, ...]]] = [(root, ())]
    while pending:
        node, path = pending.pop()
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, value_node in node.value:
                key = key_node.value
                line = key_node.start_mark.line + 1
                if key in seen and key != "<<":
                    raise ConfigError(
                        _where((*path, key)),
                        f"written twice in {source} (lines {seen[key]} and {line}); YAML would "
                        "keep only the last: remove or rename one",
                    )
                seen[key] = line
                pending.append((value_node, (*path, key)))
        elif isinstance(node, yaml.SequenceNode):
            pending += [(item, (*path, i)) for i, item in enumerate(node.value)]


def read_config(path: Path) -> dict[str, Any]:
    """A config file, refused with one message if it writes a key twice."""
    text = Path(path).read_text()
    duplicate_keys(text, str(path))
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ConfigError("(top level)", f"{path} holds no mapping of keys")
    return data


def no_floats(value: Any, path: tuple[Any, ...] = ()) -> None:
    """Every number of a config is an integer except where a float belongs (FLOAT_KEYS and
    scalars, checked against their own dtypes)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if path[-1:] == ("scalars",):
                continue
            no_floats(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            no_floats(item, (*path, i))
    elif isinstance(value, float) and path not in FLOAT_KEYS:
        shown = f"; write {int(value)}" if math.isfinite(value) and value.is_integer() else ""
        raise ConfigError(_where(path), f"{value!r} is a float, expected an integer{shown}")


@functools.cache
def installed_sections(ncu_path: str) -> tuple[str, ...] | None:
    """The section identifiers the installed ncu knows, or None where there is no ncu."""
    ncu = shutil.which(ncu_path)
    if ncu is None:
        return None
    proc = subprocess.run([ncu, "--list-sections"], capture_output=True, text=True, timeout=60)
    names = [line.split()[0] for line in proc.stdout.splitlines() if line.split()]
    names = [n for n in names if n.replace("_", "").isalnum()]
    # a listing that lacks the basic sections was not understood: use the known list
    return tuple(names) if {"SpeedOfLight", "LaunchStats"} <= set(names) else None


def check_sections(sections: list[str], ncu_path: str) -> None:
    installed = installed_sections(ncu_path)
    known, against = (installed, "the installed ncu's --list-sections") if installed else (
        KNOWN_SECTIONS, "ncu 2025.3's sections (no ncu here to ask)")  # fmt: skip
    for i, section in enumerate(sections):
        if section not in known:
            raise ConfigError(
                f"ncu.sections[{i}]", f"unknown section {section!r}, checked against {against}; "
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
