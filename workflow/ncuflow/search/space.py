"""A search's space: every variant's tunables at one problem size, as a sampler sees them.

A point is a variant and one value of each of its tunables; it maps to one position of the
variant's grid (study.expand.VariantGrid), so that a proposal is an ordinary configuration
with its ordinary id and record. Each tunable is offered to the sampler as the index of its
value among the sorted values: tunables are mostly sizes and powers of two, whose order a
model-based sampler should see.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..plan import ConfigRow
from ..study.expand import VariantGrid

VARIANT = "variant"  # the sampler's name of the variant, where there are several


@dataclass(frozen=True)
class Point:
    """One configuration of the space: a variant and its grid position."""

    variant: str
    position: int


class Space:
    """The configurations of one problem (``problem``: its index among the grids' problems,
    the sizes and swept scalars every variant of an experiment shares)."""

    def __init__(self, grids: Mapping[str, VariantGrid], problem: int) -> None:
        self.grids, self.problem = dict(grids), problem
        # each variant's tunables of more than one value: (name, values sorted, index of
        # each sorted value in the grid's order)
        self.axes: dict[str, list[tuple[str, list[int], list[int]]]] = {}
        for name, grid in self.grids.items():
            axes = []
            for param, values in zip(grid.variant.params, grid.values, strict=True):
                if len(values) > 1:
                    order = sorted(range(len(values)), key=lambda i, v=values: v[i])
                    axes.append((param, [values[i] for i in order], order))
            self.axes[name] = axes

    @property
    def size(self) -> int:
        """Positions of this problem, runnable or not."""
        return sum(g.size // len(g.problems) for g in self.grids.values())

    def key(self, variant: str, param: str) -> str:
        """The sampler's name of a tunable: variants may share tunables' names, and a
        sampler models each name as one quantity."""
        return f"{variant}.{param}" if len(self.grids) > 1 else param

    def position(self, variant: str, chosen: Mapping[str, int]) -> int:
        """The grid position of a variant's tunables (``chosen``: the sampler's index of each
        of its axes; a tunable of one value has none)."""
        grid = self.grids[variant]
        axes = {param: order for param, _, order in self.axes[variant]}
        combo = 0
        for param, values in zip(grid.variant.params, grid.values, strict=True):
            index = axes[param][chosen[self.key(variant, param)]] if param in axes else 0
            combo = combo * len(values) + index
        return combo * len(grid.problems) + self.problem

    def point_of(self, row: ConfigRow) -> tuple[Point, dict[str, Any]]:
        """A measured row's point and the sampler's values of it."""
        values: dict[str, Any] = {VARIANT: row.variant} if len(self.grids) > 1 else {}
        for param, sorted_values, _ in self.axes[row.variant]:
            values[self.key(row.variant, param)] = sorted_values.index(row.params[param])
        chosen = {k: v for k, v in values.items() if k != VARIANT}
        return Point(row.variant, self.position(row.variant, chosen)), values

    def row(self, point: Point) -> ConfigRow:
        return self.grids[point.variant].row_at(point.position)

    def owns(self, point: Point) -> bool:
        """Whether a point is of this space's problem (its position's innermost index)."""
        return point.position % len(self.grids[point.variant].problems) == self.problem

    def holds(self, row: ConfigRow) -> bool:
        """Whether a row is of this space's problem."""
        dims, scalars = self.grids[row.variant].problems[self.problem]
        return row.dims == dims and (row.scalars or {}) == scalars


def least_time_ms(row: ConfigRow, compute: tuple[str, ...], ceilings: Mapping[str, Any]) -> float:
    """The roofline's least time of a configuration, in ms: its FLOPs (executed, where the
    variant models them) at the fastest measured ceiling of its precisions, or its modelled
    DRAM bytes (least bytes where it models none) at the measured DRAM bandwidth, whichever
    is longer, each ceiling raised by a tenth (a kernel may beat a microbenchmark by a
    little). A model, not a bound: reuse through L2 can save what the model counts. 0 where
    the ceilings are unknown."""
    flop_rate = max((ceilings[p]["value"] for p in compute if p in ceilings), default=0.0)
    byte_rate = ceilings.get("dram", {}).get("value", 0.0)
    flops = row.executed_flops or row.flops
    traffic = row.model_dram_bytes or row.min_bytes
    times = [flops / flop_rate if flop_rate else 0.0, traffic / byte_rate if byte_rate else 0.0]
    return 1e3 * max(times) / 1.1
