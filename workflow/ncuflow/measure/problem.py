"""One problem size of a family: inputs drawn, outputs allocated and poisoned, the float64
reference, and the checks of the outputs against it.

Everything here works on NumPy and CuPy arrays alike (``xp``): host variants and the tests
use NumPy, GPU variants CuPy. Inputs are drawn on the host with NumPy's generator (seeded,
so a seed reproduces them on any machine) and never all zero; outputs are poisoned before
each checked launch so that an element the kernel never wrote cannot pass.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import NcuflowError
from ..gpu import cupy
from ..plan import ConfigRow, Plan
from ..spec.model import FLOAT_DTYPES, Tensor, Variant, pad_step, storage_dtype
from .compare import POISON_BITS, UINT, Outcome, array_module, compare, moved_to

if TYPE_CHECKING:
    from ..spec.family import Family

# The draw of a tensor that declares none: values with both signs (cancellation errors
# show) and never zero everywhere.
DEFAULT_FLOAT_DRAW = ("uniform", (-1.0, 1.0))
DEFAULT_INT_DRAW = ("integers", (-100.0, 100.0))
DEFAULT_UINT_DRAW = ("integers", (0.0, 100.0))


def numpy_dtype(dtype: str) -> np.dtype:
    """The NumPy/CuPy dtype that stores values of ``dtype``."""
    if dtype == "bfloat16":
        raise NcuflowError(
            "bfloat16 tensors cannot be allocated by the harness: neither NumPy nor CuPy has a "
            "bfloat16 array type; declare the tensor as uint16 (its bits) or float32"
        )
    return np.dtype(storage_dtype(dtype))


def _copy_into(padded: Any, source: Any) -> Callable[[], None]:
    target = padded[..., : source.shape[-1]]

    def copy() -> None:
        target[...] = source

    return copy


def shape_of(tensor: Tensor, dims: Mapping[str, int]) -> tuple[int, ...]:
    return tuple(int(e(dims)) for e in tensor.shape)


def draw(
    rng: np.random.Generator, tensor: Tensor, shape: tuple[int, ...], dtype: str
) -> np.ndarray:
    """Values for one input, on the host, as its declaration (or the default) says."""
    floating = dtype in FLOAT_DTYPES
    default = (
        DEFAULT_FLOAT_DRAW
        if floating
        else (DEFAULT_UINT_DRAW if dtype.startswith("uint") else DEFAULT_INT_DRAW)
    )
    kind, (a, b) = tensor.draw or default
    # scaled and shifted in place: the same float32 operations, without two temporaries
    # (a third of the time drawing the classifier's 25088 x 4096 weights)
    if kind == "uniform":
        values = rng.random(shape, dtype=np.float32)
        values *= np.float32(b - a)
        values += np.float32(a)
    elif kind == "normal":
        values = rng.standard_normal(shape, dtype=np.float32)
        values *= np.float32(b)
        values += np.float32(a)
    else:
        values = rng.integers(int(a), int(b), size=shape, dtype=np.int64)
    array = values.astype(numpy_dtype(dtype), copy=False)  # float32 draws stay as drawn
    if array.size and not array.any():
        raise NcuflowError(
            f"input {tensor.name} drew only zeros ({kind} {[a, b]} as {dtype}): a kernel that "
            "ignores it would pass the check; widen its draw"
        )
    return array


def call_with(fn: Callable[..., Any], available: Mapping[str, Any]) -> Any:
    """Call ``fn`` with the values it names as parameters (all of them for ``**kwargs``)."""
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return fn(**available)
    missing = [n for n, p in params.items() if n not in available and p.default is p.empty]
    if missing:
        raise NcuflowError(
            f"{fn.__name__} asks for {', '.join(missing)}, which the family does not have; "
            f"available: {', '.join(available)}"
        )
    return fn(**{n: available[n] for n in params if n in available})


class Problem:
    """Inputs, outputs, scratch buffers and the float64 reference for one problem size.

    ``xp`` is the module of device arrays (CuPy for GPU variants, NumPy for host ones);
    tensors declared ``memory: host`` are NumPy arrays, page-locked when the variant asks
    for ``host_memory: pinned``."""

    def __init__(
        self,
        family: Family,
        variant: Variant,
        dims: Mapping[str, int],
        scalars: Mapping[str, int | float],
        seed: int,
        dtypes: tuple[str, str],
        xp: Any = np,
        checked: bool = True,
    ) -> None:
        self.family, self.dims, self.xp = family, dict(dims), xp
        # the variants of one Work.problem_key share it: of a variant, only where its host
        # tensors live matters here
        self.pinned = variant.host_memory == "pinned"
        self.in_dtype, self.out_dtype = dtypes
        rng = np.random.default_rng(seed)
        drawn: dict[str, np.ndarray] = {}
        if family.draw_function:
            made = call_with(family.function(family.draw_function), {"dims": self.dims, "rng": rng})
            drawn = {k: np.asarray(v) for k, v in (made or {}).items()}
        drawn_values: dict[str, Any] = {}
        for name, tensor in family.drawn.items():
            shape, dtype = shape_of(tensor, dims), self.dtype_of(tensor)
            host = drawn.get(name)
            if host is None:
                host = draw(rng, tensor, shape, dtype)
            elif host.shape != shape:
                raise NcuflowError(
                    f"{family.draw_function} gave {name} shape {host.shape}, expected {shape}"
                )
            drawn_values[name] = self._place(tensor, host.astype(numpy_dtype(dtype), copy=False))
        self.inputs = {name: drawn_values[name] for name in family.inputs}
        # an inout's drawn values, kept to restore it before every launch
        self.initial = {name: drawn_values[name] for name, t in family.drawn.items() if t.inout}
        self.outputs = {
            name: self._empty(tensor, shape_of(tensor, dims), self.dtype_of(tensor))
            for name, tensor in family.outputs.items()
        }
        self.scratch: dict[str, Any] = {}  # a configuration's buffers (prepare_scratch)
        self.padded: dict[str, Any] = {}  # row-padded copies of inputs (pad_rows)
        self.scalars = {
            name: numpy_dtype(family.scalars[name].dtype).type(value)
            for name, value in scalars.items()
        }
        self.index = np.dtype(family.index_type).type
        self.returned: dict[str, Any] = {}  # outputs a library call returned instead of writing
        # the profiled process only launches: no reference to check against
        self.reference = self._reference() if checked else {}

    @property
    def read(self) -> dict[str, Any]:
        """What kernels read: the inputs and the inouts' drawn values."""
        return {**self.inputs, **self.initial}

    def restore(self) -> None:
        """Every inout back to its drawn values, on the current stream: a copy, not a
        kernel, so that ncu profiles none inside a configuration's range."""
        for name, initial in self.initial.items():
            target = self.outputs[name]
            if array_module(target) is np:
                np.copyto(target, initial)
            else:
                runtime = cupy().cuda.runtime
                runtime.memcpyAsync(target.data.ptr, initial.data.ptr, initial.nbytes,
                                    runtime.memcpyDeviceToDevice,
                                    cupy().cuda.get_current_stream().ptr)  # fmt: skip

    def dtype_of(self, tensor: Tensor) -> str:
        return tensor.element_dtype(self.in_dtype, self.out_dtype)

    def _place(self, tensor: Tensor, host: np.ndarray) -> Any:
        if tensor.memory == "device":
            return self.xp.asarray(host)
        placed = self._empty(tensor, host.shape, str(host.dtype))
        placed[...] = host
        return placed

    def _empty(self, tensor: Tensor, shape: tuple[int, ...], dtype: str) -> Any:
        if tensor.memory == "device":
            return self.xp.empty(shape, dtype=numpy_dtype(dtype))
        if self.pinned:
            import cupyx

            return cupyx.empty_pinned(shape, dtype=numpy_dtype(dtype))
        return np.empty(shape, dtype=numpy_dtype(dtype))

    def _reference(self) -> dict[str, Any]:
        """The family's reference on the inputs the kernel sees (fp16-rounded for fp16
        inputs), floating ones in float64; it may also name dimensions and scalars."""
        xp = self.xp
        values = {
            name: moved_to(xp, a).astype(xp.float64)
            if np.dtype(a.dtype).kind == "f"
            else moved_to(xp, a)
            for name, a in self.read.items()
        }
        available = {**values, **self.dims, **{k: float(v) if isinstance(v, np.floating) else int(v)
                                               for k, v in self.scalars.items()}}  # fmt: skip
        result = call_with(self.family.function(self.family.reference), available)
        missing = set(self.outputs) - set(result or {})
        if missing:
            raise NcuflowError(
                f"the reference {self.family.reference} returned no {', '.join(sorted(missing))}"
            )
        return result

    def prepare_scratch(self, env: Mapping[str, int], tensors: Mapping[str, Tensor]) -> None:
        """Allocate one configuration's scratch buffers (its variant's declarations, by name;
        their shapes may name what its expressions may: ``env``, from Family.scope),
        releasing the previous configuration's. They start zeroed: a kernel may keep flags
        there that it clears again before it ends."""
        self.scratch = {}
        for name, tensor in tensors.items():
            self.scratch[name] = self.xp.zeros(
                shape_of(tensor, env), dtype=numpy_dtype(self.dtype_of(tensor))
            )

    def pad_rows(
        self,
        lengths: Mapping[str, int],
        copier: Callable[[Any, Any], Callable[[], None]] | None = None,
    ) -> list[tuple[str, Callable[[], None]]]:
        """Row-padded copies of the inputs in ``lengths`` whose rows are shorter than that
        (zeros past the input's values), which arguments take in the inputs' place from now
        on; and the steps, pad_<input>, that fill them, run and timed with the launches:
        ``copier(padded, input)`` makes one (the harness's kernel on a GPU), by default an
        assignment to the padded copy's first columns."""
        copier = copier or _copy_into
        self.padded = {}
        steps = []
        for name, length in lengths.items():
            source = self.inputs[name]
            if length == source.shape[-1]:
                continue
            padded = self.xp.zeros((*source.shape[:-1], length), dtype=source.dtype)
            self.padded[name] = padded
            steps.append((pad_step(name), copier(padded, source)))
        return steps

    def arg(self, name: str) -> Any:
        """A kernel or library argument by name: a tensor (or its row-padded copy), a
        scratch buffer, a scalar or a dimension (passed as the family's index type)."""
        for table in (self.padded, self.inputs, self.outputs, self.scratch, self.scalars):
            if name in table:
                return table[name]
        return self.index(self.dims[name])

    def poison(self) -> None:
        """Fill every output with a value no kernel computes by accident: a NaN with its own
        payload (POISON_BITS) for floating outputs, the most negative value for integer ones;
        an inout gets its drawn values back instead (kernels read it)."""
        self.returned = {}
        self.restore()
        for name, out in self.outputs.items():
            if name in self.initial:
                continue
            kind = np.dtype(out.dtype)
            if kind.kind == "f":
                out.view(UINT[kind.itemsize]).fill(POISON_BITS[kind.itemsize])
            else:
                out.fill(np.iinfo(kind).min)

    def check(self) -> Outcome:
        """Every output against the reference, by its check and the family's check function."""
        worst_rel: float | None = None
        worst_abs: float | None = None
        failures = []
        for name in self.family.outputs:
            out = self.returned.get(name, self.outputs[name])
            result = compare(name, out, self.reference[name], self.family.checks.get(name),
                             self.in_dtype)  # fmt: skip
            if result.rel_error is not None:
                worst_rel = max(worst_rel or 0.0, result.rel_error)
                worst_abs = max(worst_abs or 0.0, result.max_abs_error or 0.0)
            if not result.ok:
                failures.append(result.message)
        if self.family.check_function and not failures:
            outputs = {n: self.returned.get(n, o) for n, o in self.outputs.items()}
            # the inputs too: a reduction's tolerance may scale with the sum of |x|
            scalars = {k: v.item() for k, v in self.scalars.items()}
            ok, message = call_with(
                self.family.function(self.family.check_function),
                {"outputs": outputs, "reference": self.reference, "dims": self.dims,
                 "inputs": self.read, "scalars": scalars},
            )  # fmt: skip
            if not ok:
                failures.append(
                    str(message) or f"{self.family.check_function} rejected the outputs"
                )
        rel = None if worst_rel is None or math.isnan(worst_rel) else worst_rel
        return Outcome(not failures, "; ".join(failures), rel, worst_abs)


def fresh_seed() -> int:
    """A seed no config named: a worker draws one for all its plans that name none."""
    return int(np.random.SeedSequence().generate_state(1)[0])


def inputs_seed(plan: Plan, fresh: int | None = None) -> int:
    """The seed of a plan's inputs: the config's, else ``fresh`` (a worker's, shared by all
    its plans so that they can share inputs), else a new one; recorded with each record."""
    if plan.seed is not None:
        return int(plan.seed)
    return fresh_seed() if fresh is None else fresh


@dataclass(frozen=True)
class Work:
    """One configuration a worker runs: its plan, family, variant, measure job (``member``),
    row and the seed of its inputs."""

    plan: Plan
    family: Family
    variant: Variant
    member: str
    row: ConfigRow
    seed: int

    @property
    def problem_key(self) -> str:
        """What makes two configurations' problems one: the family, the size and scalars,
        the dtypes and the seed (so the same values), and where the variant keeps them
        (device or host, page-locked or not)."""
        plan, row = self.plan, self.row
        return json.dumps([plan.family, row.dims, plan.scalars_of(row), row.dtype,
                           row.out_dtype, self.seed, self.variant.runs_on,
                           self.variant.host_memory], sort_keys=True)  # fmt: skip

    def problem(self, checked: bool = True) -> Problem:
        return problem_for(self.plan, self.family, self.variant, self.row, self.seed, checked)


def by_problem(works: Iterable[Work]) -> Iterator[list[Work]]:
    """A worker's configurations grouped by problem, in the order each problem first comes:
    inputs are drawn and the reference computed once per group, for all its variants."""
    groups: dict[str, list[Work]] = {}
    for work in works:
        groups.setdefault(work.problem_key, []).append(work)
    yield from groups.values()


def problem_for(
    plan: Plan, family: Family, variant: Variant, row: ConfigRow, seed: int, checked: bool = True
) -> Problem:
    """The problem of ``row``'s size: on the GPU (CuPy) for a GPU variant, on the host
    (NumPy, no CUDA needed) for a host one; with its reference where it is ``checked``."""
    xp = np if variant.runs_on == "cpu" else cupy()
    dtypes = (row.dtype, row.out_dtype)
    return Problem(family, variant, row.dims, plan.scalars_of(row), seed, dtypes, xp, checked)
