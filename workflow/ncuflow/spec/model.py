"""The model of kernels as data: a family's tensors, scalars and checks, a variant's
launches and tunables, and the tables of dtypes they are declared with.

These are plain frozen dataclasses; spec.family and spec.variant read them from the
files of a family folder and check them, so that anything here is already valid.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..expr import Expr
from ..files import read_text

# Element sizes of every dtype a tensor or scalar may have.
DTYPE_BYTES = {
    "float64": 8, "float32": 4, "tf32": 4, "float16": 2, "bfloat16": 2,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1,
}  # fmt: skip
FLOAT_DTYPES = ("float64", "float32", "tf32", "float16", "bfloat16")
# The largest finite value of each floating dtype: a scalar or a draw beyond it would reach
# the kernels as infinity.
FLOAT_MAX = {
    "float64": 1.7976931348623157e308, "float32": 3.4028234663852886e38,
    "tf32": 3.4028234663852886e38, "float16": 65504.0, "bfloat16": 3.3895313892515355e38,
}  # fmt: skip
# Precisions that are a way of computing rather than a storage type: tf32 products read
# and write float32 arrays. Every other dtype is stored as itself.
STORAGE_DTYPE = {"tf32": "float32"}
# The C type a kernel sees for each dtype (also passed as NCUFLOW_IN_T / NCUFLOW_OUT_T).
C_TYPES = {
    "float64": "double", "float32": "float", "tf32": "float", "float16": "__half",
    "bfloat16": "__nv_bfloat16", "int64": "long long", "int32": "int", "int16": "short",
    "int8": "signed char", "uint8": "unsigned char",
}  # fmt: skip
CHECK_KINDS = ("rel_fro", "max_abs", "exact")
DRAWS = ("uniform", "normal", "integers")
# Names every expression may use besides the dimensions and the tunables.
BUILTIN_NAMES = ("in_bytes", "out_bytes")
# Facts of the device that every expression of a variant may also use: restrictions, launch
# geometry and arguments, scratch shapes, tensor maps and models (device_limits in the
# config, the H100's by default; each GPU job compares them with its own GPU's). A family's
# own expressions (counts, tensor shapes) name only its dimensions.
DEVICE_FACTS = ("sm_count", "max_threads_per_sm", "smem_per_sm")


def restriction_where(i: int, inherited: int, like: Sequence[Path]) -> str:
    """Where restriction ``i`` of a variant's merged list was written, as errors name it:
    the first ``inherited`` in the file it is like, at their place in that file's list, the
    others at theirs in its own."""
    if i < inherited:
        return f"restrictions[{i}] of {like[0]} (inherited through like)"
    return f"restrictions[{i - inherited}]"


def leading_dim(tensor: str) -> str:
    """The name expressions use for the padded row length of an aligned input."""
    return f"ld_{tensor}"


def pad_step(tensor: str) -> str:
    """The name of the step that fills an aligned input's row-padded copy (its time column
    is step_<name>_ms)."""
    return f"pad_{tensor}"


def storage_dtype(dtype: str) -> str:
    """The array dtype that holds values of ``dtype`` (float32 for tf32)."""
    return STORAGE_DTYPE.get(dtype, dtype)


@dataclass(frozen=True)
class Check:
    """How an output is compared with the reference: ``rel_fro`` (‖out - ref‖_F / ‖ref‖_F),
    ``max_abs`` (largest |out - ref|) or ``exact``; the tolerance per variant dtype."""

    kind: str
    tolerance: dict[str, float] | float = 0.0

    def limit(self, dtype: str) -> float | None:
        """The tolerance for a variant of ``dtype`` (None when the check has none for it)."""
        if self.kind == "exact":
            return 0.0
        if isinstance(self.tolerance, float):
            return self.tolerance
        return self.tolerance.get(dtype)


@dataclass(frozen=True)
class Tensor:
    """An input or output array of a family, or an ``inout`` one (an output that kernels
    also read: drawn like an input, restored before every launch). ``dtype`` None follows
    the variant: its ``dtype`` for inputs, its ``out_dtype`` for outputs and inouts."""

    name: str
    shape: tuple[Expr, ...]
    output: bool
    dtype: str | None = None
    draw: tuple[str, tuple[float, float]] | None = None  # (kind, its two numbers)
    memory: str = "device"
    check: Check | None = None
    inout: bool = False

    @property
    def drawn(self) -> bool:
        """Whether the harness draws its values (an input or an inout)."""
        return self.inout or not self.output

    def element_dtype(self, in_dtype: str, out_dtype: str) -> str:
        """The dtype of its values when a variant runs with ``in_dtype``/``out_dtype``
        (tf32 for a TF32 variant's float32 arrays)."""
        if self.dtype is not None:
            return self.dtype
        return out_dtype if self.output else in_dtype


@dataclass(frozen=True)
class Scalar:
    """A kernel argument that is neither a tensor nor a dimension (alpha, an epsilon)."""

    name: str
    dtype: str
    value: int | float


@dataclass(frozen=True)
class TensorMap:
    """A TMA tensor map (Hopper's Tensor Memory Accelerator) a variant's launches take:
    ``tensor`` (a family tensor or scratch buffer) seen as a rows × cols row-major
    matrix with ``ld`` elements per row, copied in boxes of box_rows × box_cols."""

    name: str
    tensor: str
    shape: tuple[Expr, Expr]
    ld: Expr
    box: tuple[Expr, Expr]

    def expressions(self) -> list[tuple[str, Expr]]:
        where = f"tensor_maps.{self.name}"
        return [(f"{where}.shape", self.shape[0]), (f"{where}.shape", self.shape[1]),
                (f"{where}.ld", self.ld), (f"{where}.box", self.box[0]),
                (f"{where}.box", self.box[1])]  # fmt: skip

    def sizes(self, env: Mapping[str, int]) -> dict[str, int]:
        """rows, cols, ld, box_rows, box_cols at one configuration."""
        return {"rows": int(self.shape[0](env)), "cols": int(self.shape[1](env)),
                "ld": int(self.ld(env)), "box_rows": int(self.box[0](env)),
                "box_cols": int(self.box[1](env))}  # fmt: skip


@dataclass(frozen=True)
class Launch:
    """One step of a variant: a CUDA kernel with its geometry, or a family.py function.
    ``args`` None takes the family's argument order; ``when`` None always runs."""

    name: str
    kernel: str | None = None
    library: str | None = None
    block: tuple[Expr, ...] = ()
    grid: tuple[Expr, ...] = ()
    static_smem: Expr = field(default_factory=lambda: Expr(0))
    dynamic_smem: Expr = field(default_factory=lambda: Expr(0))
    args: tuple[Expr, ...] | None = None
    when: Expr | None = None

    def expressions(self, prefix: str) -> list[tuple[str, Expr]]:
        named = [(f"{prefix}block[{i}]", e) for i, e in enumerate(self.block)]
        named += [(f"{prefix}grid[{i}]", e) for i, e in enumerate(self.grid)]
        if self.kernel:
            named += [(f"{prefix}static_smem", self.static_smem),
                      (f"{prefix}dynamic_smem", self.dynamic_smem)]  # fmt: skip
        if self.when is not None:
            named.append((f"{prefix}when", self.when))
        return named


@dataclass(frozen=True)
class Variant:
    """One implementation of a family: CUDA kernels or library calls, one or several
    launches per configuration."""

    name: str
    family: str
    path: Path
    idea: str
    params: dict[str, int]
    launches: tuple[Launch, ...]
    restrictions: tuple[Expr, ...] = ()
    smem_optin: bool = False
    dtype: str = "float32"
    out_dtype: str = "float32"
    accepts: tuple[str, ...] = ("float32",)  # dtypes a config may choose (dtype: in it)
    baseline: bool = False
    runs_on: str = "gpu"
    profiled: bool = True
    host_memory: str = "pageable"  # how host tensors are allocated
    requires: tuple[str, ...] = ()  # Python modules it needs where it runs
    scratch: dict[str, Tensor] = field(default_factory=dict)
    # the precisions whose FLOPs are this variant's arithmetic (flops_counted)
    compute: tuple[str, ...] = ("fp32",)
    # analytic DRAM bytes without help from L2, and FLOPs executed including padding
    model_dram_bytes: Expr | None = None
    executed_flops: Expr | None = None
    # an NVRTC architecture (sm_90a) where the kernels need more than the device's default,
    # and the TMA tensor maps its launches take (tma.py)
    arch: str | None = None
    tensor_maps: dict[str, TensorMap] = field(default_factory=dict)
    # inputs whose rows must start at a multiple of these bytes (vector loads, cp.async,
    # TMA): where they do not, the harness passes a row-padded copy, made by a timed step
    row_alignment: dict[str, int] = field(default_factory=dict)
    # the variant files its declaration is like (their tunables and restrictions), and how
    # many of its restrictions, the first, come from them
    like: tuple[Path, ...] = ()
    inherited_restrictions: int = 0

    @property
    def leading_dims(self) -> tuple[str, ...]:
        """The names ld_T its expressions may use: the row length of each aligned input T."""
        return tuple(leading_dim(name) for name in self.row_alignment)

    @property
    def is_cuda(self) -> bool:
        return any(launch.kernel for launch in self.launches)

    def dtypes(self, chosen: str | None = None) -> tuple[str, str]:
        """(input dtype, output dtype) when a config chooses ``chosen`` from ``accepts``:
        an output dtype equal to the input one follows the choice, a distinct one stays."""
        in_dtype = chosen or self.dtype
        return in_dtype, in_dtype if self.out_dtype == self.dtype else self.out_dtype

    @property
    def kernels(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.kernel for s in self.launches if s.kernel))

    @functools.cached_property
    def source(self) -> str:
        return read_text(self.path) if self.path.suffix == ".cu" else ""

    def expressions(self) -> list[tuple[str, Expr]]:
        named = [
            (restriction_where(i, self.inherited_restrictions, self.like), r)
            for i, r in enumerate(self.restrictions)
        ]
        several = len(self.launches) > 1
        for i, launch in enumerate(self.launches):
            named += launch.expressions(f"launches[{i}]." if several else "")
        named += [
            (k, e)
            for k, e in (
                ("model_dram_bytes", self.model_dram_bytes),
                ("executed_flops", self.executed_flops),
            )
            if e is not None
        ]
        for tensor in self.scratch.values():
            named += [(f"scratch.{tensor.name}.shape", e) for e in tensor.shape]
        for tensor_map in self.tensor_maps.values():
            named += tensor_map.expressions()
        return named


@dataclass(frozen=True)
class Figure:
    """A family's own figure: ``y`` (a table column) against its size axis, one line per
    variant (each variant's best configuration per size)."""

    name: str
    y: str
    label: str


@dataclass(frozen=True)
class FamilyView:
    """What a variant's declaration is checked against: its family's name, dimensions,
    default dtypes, tensors, scalars and output checks, and the kernels folder its sources
    must stay inside."""

    name: str
    dims: tuple[str, ...]
    dtype: str
    tensors: dict[str, Tensor]
    scalars: dict[str, Scalar]
    checks: dict[str, Check]
    root: Path
    out_dtype: str | None = None  # the family's output dtype; None: each variant's input's
