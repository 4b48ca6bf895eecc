"""Expansion: an experiment's size grid × each variant's parameter grid → configurations.

Every combination becomes a row with a stable ``config_id``. Combinations that fail a
restriction or a device limit stay in the plan with ``status="skipped"`` and the reason,
so that the final table shows what was not run and why.
"""

from __future__ import annotations

import collections
import itertools
import math
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, SpecError
from ..expr import Expr, ExprError
from ..plan import ConfigRow, LaunchGeometry
from ..spec import (
    BUILTIN_NAMES,
    DEVICE_FACTS,
    DTYPE_BYTES,
    Family,
    Launch,
    Tensor,
    Variant,
    condition,
)
from ..vocab import PENDING, SKIPPED
from .parts import expected_s


@dataclass(frozen=True)
class DeviceLimits:
    """Launch limits checked before any GPU work (defaults: H100, compute capability 9.0)."""

    max_threads_per_block: int = 1024
    max_block_dims: tuple[int, int, int] = (1024, 1024, 64)
    max_grid_dims: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    max_static_smem_per_block: int = 48 * 1024
    max_smem_per_block_optin: int = 227 * 1024
    sm_count: int = 132
    max_threads_per_sm: int = 2048
    smem_per_sm: int = 228 * 1024

    def facts(self) -> dict[str, int]:
        """The device facts restrictions may name (spec.DEVICE_FACTS)."""
        return {name: getattr(self, name) for name in DEVICE_FACTS}

    @classmethod
    def from_config(cls, data: Mapping[str, Any]) -> DeviceLimits:
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


def values_once(value: Any, where: str) -> list[Any]:
    """A value or list of values of a size, a tunable or a swept scalar; one written twice
    is refused (it would make the same configurations twice)."""
    values = list(value) if isinstance(value, list | tuple) else [value]
    twice = sorted(v for v, n in collections.Counter(values).items() if n > 1)
    if twice:
        raise ConfigError(where, f"{', '.join(map(str, twice))} written twice in {values}; "
                          "list each value once")  # fmt: skip
    return values


def size_grid(sizes: Any, dims: Sequence[str], where: str) -> list[dict[str, int]]:
    """Cross product of the listed sizes; a string is an expression over other dimensions
    (``N: M`` ties N to M, ``K: 2 * M`` makes K twice M). A list of such grids (named layer
    sizes, say) is their union, in order, without repeats."""
    if isinstance(sizes, list):
        seen: dict[tuple[int, ...], dict[str, int]] = {}  # in order, without repeats
        for i, part in enumerate(sizes):
            for g in size_grid(part, dims, f"{where}[{i}]"):
                seen.setdefault(tuple(g.values()), g)
        return list(seen.values())
    missing = [d for d in dims if d not in sizes]
    unknown = [d for d in sizes if d not in dims]
    if missing or unknown:
        detail = "; ".join(
            part
            for part in (
                missing and f"missing {', '.join(missing)}",
                unknown and f"unknown {', '.join(unknown)}",
            )
            if part
        )
        raise ConfigError(where, f"{detail}; the family's dimensions are {', '.join(dims)}")
    tied: dict[str, Expr] = {}
    for dim in dims:
        if isinstance(sizes[dim], str):
            try:
                tied[dim] = Expr(sizes[dim])
            except ExprError as exc:
                raise ConfigError(f"{where}.{dim}", str(exc)) from None
            bad = tied[dim].names - set(dims)
            if bad:
                raise ConfigError(
                    f"{where}.{dim}",
                    f"{sizes[dim]!r} names {', '.join(sorted(bad))}, which is not a dimension; "
                    f"expected an integer, a list of integers, or an expression over "
                    f"{', '.join(d for d in dims if d != dim)}",
                )
    free = [d for d in dims if d not in tied]
    order: list[str] = []  # tied dimensions in an order where each needs only earlier ones
    while len(order) < len(tied):
        ready = [d for d in tied if d not in order and tied[d].names <= set(free) | set(order)]
        if not ready:
            cycle = ", ".join(d for d in tied if d not in order)
            raise ConfigError(where, f"the tied dimensions {cycle} refer to each other in a cycle")
        order.extend(ready)
    grid = []
    for combo in itertools.product(*(values_once(sizes[d], f"{where}.{d}") for d in free)):
        env = dict(zip(free, combo, strict=True))
        for dim in order:
            try:
                value = tied[dim](env)
            except ExprError as exc:
                raise ConfigError(f"{where}.{dim}", str(exc)) from None
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(
                    f"{where}.{dim}",
                    f"{sizes[dim]!r} gives {value!r} for {env}; sizes must be positive integers",
                )
            env[dim] = value
        grid.append({d: env[d] for d in dims})
    return grid


def config_id(params: Mapping[str, int], dims: Mapping[str, int | float]) -> str:
    """Readable and stable: tunables in declared order, then dimensions in family order
    (and the values of swept scalars)."""
    return "_".join(f"{k}={v}" for k, v in (*params.items(), *dims.items()))


def _geometry(exprs: Sequence[Expr], env: Mapping[str, int]) -> tuple[int, int, int]:
    values = [int(e(env)) for e in exprs]
    return (*values, *[1] * (3 - len(values)))  # type: ignore[return-value]


def _launch_limits(
    variant: Variant, launch: Launch, env: Mapping[str, int], limits: DeviceLimits
) -> tuple[str, LaunchGeometry]:
    """The reason one kernel launch cannot run ('' when it can), and its geometry."""
    if not launch.kernel:
        return "", LaunchGeometry(launch.name)
    block, grid = _geometry(launch.block, env), _geometry(launch.grid, env)
    static_smem, dynamic_smem = int(launch.static_smem(env)), int(launch.dynamic_smem(env))
    geometry = LaunchGeometry(launch.name, block, grid, dynamic_smem)
    threads = math.prod(block)
    if min(block) < 1 or min(grid) < 1:
        return f"block {block} and grid {grid} must be positive in every dimension", geometry
    if threads > limits.max_threads_per_block:
        return (
            f"block {'×'.join(map(str, block))} = {threads} threads exceeds the device limit "
            f"of {limits.max_threads_per_block} threads per block",
            geometry,
        )
    for axis, size, most in zip("xyz", block, limits.max_block_dims, strict=True):
        if size > most:
            return f"block.{axis} = {size} exceeds the device limit of {most}", geometry
    for axis, size, most in zip("xyz", grid, limits.max_grid_dims, strict=True):
        if size > most:
            return f"grid.{axis} = {size} exceeds the device limit of {most}", geometry
    if static_smem > limits.max_static_smem_per_block:
        return (
            f"static shared memory {static_smem} B exceeds the "
            f"{limits.max_static_smem_per_block} B a block may declare statically",
            geometry,
        )
    total = static_smem + dynamic_smem
    if total > limits.max_static_smem_per_block and not variant.smem_optin:
        return (
            f"shared memory {total} B exceeds {limits.max_static_smem_per_block} B and the "
            "variant does not opt in (smem_optin: true)",
            geometry,
        )
    if total > limits.max_smem_per_block_optin:
        return (
            f"shared memory {total} B exceeds the opt-in limit of "
            f"{limits.max_smem_per_block_optin} B per block",
            geometry,
        )
    return "", geometry


def _check_launches(
    variant: Variant, env: Mapping[str, int], limits: DeviceLimits
) -> tuple[str, list[LaunchGeometry]]:
    """The reason a configuration cannot run ('' when it can), and the geometry of the
    launches it makes (those whose ``when`` holds), in order."""
    active = []
    several = len(variant.launches) > 1
    for launch in variant.launches:
        if launch.when is not None and not launch.when(env):
            continue
        reason, geometry = _launch_limits(variant, launch, env, limits)
        active.append(geometry)
        if reason:
            return (f"{launch.name}: {reason}" if several else reason), active
    if not active:
        return "no launch's 'when' holds for this configuration", active
    return "", active


def refuse_unknown(given: Iterable[str], known: Iterable[str], where: str, what: str,
                   none: str) -> None:  # fmt: skip
    """A ConfigError naming the first of ``given`` not ``known`` (``what``: 'parameter ...
    of variant x'; ``none``: what to say where nothing is known)."""
    known = list(known)
    unknown = [k for k in given if k not in known]
    if unknown:
        kind, _, owner = what.partition(" ")
        raise ConfigError(f"{where}.{unknown[0]}", f"unknown {kind} {unknown[0]!r} {owner}; "
                          f"valid: {', '.join(known) or none}")  # fmt: skip


def _param_values(variant: Variant, grid: Mapping[str, Any], where: str) -> list[list[int]]:
    """Each tunable's values, in the variant's order of tunables."""
    refuse_unknown(grid, variant.params, where, f"parameter of variant {variant.name}",
                   "none (this variant has no tunables)")  # fmt: skip
    return [values_once(grid.get(p, default), f"{where}.{p}")
            for p, default in variant.params.items()]  # fmt: skip


def tensor_bytes(
    tensors: Iterable[Tensor], dims: Mapping[str, int], in_dtype: str, out_dtype: str
) -> int:
    """Bytes the tensors occupy when a variant runs with these input/output dtypes."""
    return sum(
        math.prod(int(e(dims)) for e in t.shape) * DTYPE_BYTES[t.element_dtype(in_dtype, out_dtype)]
        for t in tensors
    )


def _restrictions(family: Family, variant: Variant, extra: Sequence[str], where: str) -> list[Expr]:
    """The family's, the variant's and the experiment's restrictions (``extra``, checked
    here: conditions over names a restriction may use)."""
    restrictions = [*family.restrictions, *variant.restrictions]
    known = set(family.dims) | set(variant.params) | {*BUILTIN_NAMES, *DEVICE_FACTS,
                                                      *variant.leading_dims}  # fmt: skip
    for i, text in enumerate(extra):
        try:
            expr = condition(f"{where}.restrictions[{i}]", text)
        except SpecError as exc:
            raise ConfigError(f"{where}.restrictions[{i}]", str(exc).split(": ", 1)[1]) from None
        if expr.names - known:
            raise ConfigError(
                f"{where}.restrictions[{i}]",
                f"{text!r} uses unknown name(s) {', '.join(sorted(expr.names - known))}; "
                f"known: {', '.join(sorted(known))}",
            )
        restrictions.append(expr)
    return restrictions


def _why_not(
    variant: Variant, restrictions: list[Expr], scope: Mapping[str, int], limits: DeviceLimits
) -> tuple[str, list[LaunchGeometry]]:
    """Why a configuration cannot run ('' when it can: the first restriction that fails, or
    a device limit a launch exceeds), and the launches it makes."""
    try:
        failed = next((r for r in restrictions if not r(scope)), None)
        if failed is not None:
            shown = ", ".join(f"{k}={scope[k]}" for k in sorted(failed.names))
            return f"restriction {failed.text!r} is false ({shown})", []
        return _check_launches(variant, scope, limits)
    except ExprError as exc:
        return str(exc), []


def count_at(path: Path, key: str, count: Expr, env: Mapping[str, int], where: str) -> int:
    """A count or model (``key`` of the file ``path``) at one configuration: an integer, 0
    or more. An error names that file and key, the values the expression read and the
    config's variant (``where``) that asked for them."""
    value, problem = 0, ""
    try:
        value = int(count(env))
    except ExprError as exc:
        problem = str(exc)
    if value < 0:
        problem = f"{count.text!r} gives {value}; expected a count, 0 or more"
    if problem:
        shown = ", ".join(f"{k}={env[k]}" for k in sorted(count.names))
        raise SpecError(f"{path}: {key}: {problem} (at {shown}, in {where})")
    return value


@dataclass(frozen=True)
class Scan:
    """One pass over a variant's grid that keeps no rows: how many positions it has, the
    positions of the configurations that run and each one's expected GPU seconds
    (study.parts), and the first few reasons the others do not run."""

    size: int
    pending: array[int]
    expected_s: array[float]
    reasons: tuple[str, ...]


class VariantGrid:
    """The configurations of one variant in one experiment, in grid order (each tunable's
    values, then the problems: each size with each value of the scalars it sweeps), built
    one position at a time: a sweep of a million is never held in memory. ``dtype`` is the
    input dtype the experiment chose from the variant's ``accepts`` (None: its own);
    ``swept``: each scalar the experiment sweeps, with its values."""

    def __init__(
        self,
        experiment: str,
        family: Family,
        variant: Variant,
        sizes: list[dict[str, int]],
        params_grid: Mapping[str, Any],
        extra_restrictions: Sequence[str],
        limits: DeviceLimits,
        where: str,
        dtype: str | None = None,
        swept: Mapping[str, Sequence[int | float]] | None = None,
    ) -> None:
        self.experiment, self.family, self.variant = experiment, family, variant
        swept = swept or {}
        scalar_sets = [dict(zip(swept, values, strict=True))
                       for values in itertools.product(*swept.values())]  # fmt: skip
        # (dimensions, swept scalars' values) of each problem, in grid order
        self.problems = [(dims, scalars) for dims in sizes for scalars in scalar_sets]
        self.limits, self.where = limits, where
        self._declared = family.folder / "family.yaml"  # where the counts are written
        self.values = _param_values(variant, params_grid, f"{where}.params")
        self._restrictions = _restrictions(family, variant, extra_restrictions, where)
        self.dtypes = variant.dtypes(dtype)
        self._facts = limits.facts()
        # the device's facts what it launches follows (a persistent grid of sm_count blocks,
        # a buffer per SM): recorded per row, so that a measurement under other facts is not
        # reused. A restriction only decides whether a row runs.
        named = {n for where, e in variant.expressions() if not where.startswith("restrictions")
                 for n in e.names}  # fmt: skip
        named |= {n for launch in variant.launches for a in launch.args or () for n in a.names}
        self._grid_facts = {k: v for k, v in self._facts.items() if k in named} or None
        declared = (("model_dram_bytes", variant.model_dram_bytes),
                    ("executed_flops", variant.executed_flops))  # fmt: skip
        self._models = {k: e for k, e in declared if e is not None}
        self.size = math.prod(len(v) for v in self.values) * len(self.problems)

    def _tunables(self, start: int = 0) -> Iterator[dict[str, int]]:
        """Each combination of tunables in grid order, from the ``start``-th."""
        combos = itertools.product(*self.values)
        for combo in itertools.islice(combos, start, None):
            yield dict(zip(self.variant.params, combo, strict=True))

    def _scope(self, dims: dict[str, int], params: dict[str, int]) -> dict[str, int]:
        """What the variant's expressions may name at one configuration, the device's facts
        included."""
        return {**self.family.scope(self.variant, dims, params, self.dtypes), **self._facts}

    def _why(self, env: dict[str, int]) -> tuple[str, list[LaunchGeometry]]:
        return _why_not(self.variant, self._restrictions, env, self.limits)

    def scan(self) -> Scan:
        pending, expected, reasons, position = array("q"), array("d"), [], 0
        for params in self._tunables():
            for dims, _ in self.problems:
                env = self._scope(dims, params)
                reason = self._why(env)[0]
                counts = self._counts(env, dims)  # every formula a row needs, checked now
                if not reason:
                    self._models_of(env)
                    pending.append(position)
                    expected.append(expected_s(*counts))
                elif len(reasons) < 4 and reason not in reasons:
                    reasons.append(reason)
                position += 1
        return Scan(self.size, pending, expected, tuple(reasons))

    def _counts(self, env: dict[str, int], dims: dict[str, int]) -> tuple[int, int]:
        """(FLOPs, least bytes moved) of a configuration, as the family counts them."""
        flops = count_at(self._declared, "flops", self.family.flops, env, self.where)
        if self.family.min_bytes is None:
            return flops, self._tensor_bytes(dims)
        return flops, count_at(self._declared, "min_bytes", self.family.min_bytes, env,
                               self.where)  # fmt: skip

    def _tensor_bytes(self, dims: dict[str, int]) -> int:
        """The default least bytes: every input read once, every output written once and
        every inout both."""
        tensors = self.family.tensors.values()
        return tensor_bytes([*tensors, *(t for t in tensors if t.inout)], dims, *self.dtypes)

    def _models_of(self, env: dict[str, int]) -> dict[str, int]:
        """The variant's own models (model_dram_bytes, executed_flops) of a configuration
        that runs."""
        return {k: count_at(self.variant.path, k, e, env, self.where)
                for k, e in self._models.items()}  # fmt: skip

    def _row(
        self, params: dict[str, int], dims: dict[str, int], scalars: dict[str, int | float]
    ) -> ConfigRow:
        env = self._scope(dims, params)
        reason, launches = self._why(env)
        in_dtype, out_dtype = self.dtypes
        flops, min_bytes = self._counts(env, dims)
        return ConfigRow(
            experiment=self.experiment,
            family=self.family.name,
            variant=self.variant.name,
            config_id=config_id(params, {**dims, **scalars}),
            dtype=in_dtype,
            out_dtype=out_dtype,
            dims=dims,
            params=params,
            status=SKIPPED if reason else PENDING,
            error=reason,
            flops=flops,
            min_bytes=min_bytes,
            output_bytes=tensor_bytes(self.family.outputs.values(), dims, in_dtype, out_dtype),
            launches=() if reason else tuple(launches),
            **({} if reason else self._models_of(env)),
            grid_facts=self._grid_facts,
            scalars=scalars or None,
        )

    def row_at(self, position: int) -> ConfigRow:
        """The configuration at one grid position, without walking the grid to it."""
        combo, problem = divmod(position, len(self.problems))
        picked = []
        for values in reversed(self.values):  # the last tunable varies fastest
            combo, index = divmod(combo, len(values))
            picked.append(values[index])
        params = dict(zip(self.variant.params, reversed(picked), strict=True))
        return self._row(params, *self.problems[problem])

    def rows(self, start: int = 0, stop: int | None = None) -> list[ConfigRow]:
        """The configurations at positions [start, stop), in grid order."""
        stop = self.size if stop is None else stop
        rows: list[ConfigRow] = []
        first, skip = divmod(start, len(self.problems))
        for params in self._tunables(first):
            for dims, scalars in self.problems[skip:]:
                if start + len(rows) >= stop:
                    return rows
                rows.append(self._row(params, dims, scalars))
            skip = 0
        return rows
