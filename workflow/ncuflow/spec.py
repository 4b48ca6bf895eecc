"""Kernel families and variants, declared as data under ``kernels/<family>/``.

A family folder holds ``family.yaml`` (dimensions, tensors, scalars, kernel argument
order, analytic FLOP and minimum-byte counts, checks, how its figures and tables read),
``family.py`` (the float64 reference, any library baselines and optional hooks) and one
file per variant:

* ``<variant>.cu``: CUDA kernels whose tunables are ``#ifndef``/``#define`` defaults, with
  the declaration (parameters, restrictions, one launch or a sequence of launches with
  their geometry) as YAML front matter in a ``/*--- ... ---*/`` comment;
* ``<variant>.yaml``: a library variant that calls functions of ``family.py``, on the GPU
  or, with ``runs_on: cpu``, on the host (timed with the host clock, never profiled).

The README's "Adding things" section is the reference of every key.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from .errors import ConfigError, NcuflowError
from .expr import Expr, ExprError
from .metrics import DEFAULT_COMPUTE, PRECISIONS
from .strict import duplicate_keys
from .tma import TensorMap, TensorMapError, parse_tensor_map

# Element sizes of every dtype a tensor or scalar may have.
DTYPE_BYTES = {
    "float64": 8, "float32": 4, "tf32": 4, "float16": 2, "bfloat16": 2,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1,
}  # fmt: skip
FLOAT_DTYPES = ("float64", "float32", "tf32", "float16", "bfloat16")
# Precisions that are a way of computing rather than a storage type: tf32 products read
# and write float32 arrays. Every other dtype is stored as itself.
STORAGE_DTYPE = {"tf32": "float32"}
# The C type a kernel sees for each dtype (also passed as NCUFLOW_IN_T / NCUFLOW_OUT_T).
C_TYPES = {
    "float64": "double", "float32": "float", "tf32": "float", "float16": "__half",
    "bfloat16": "__nv_bfloat16", "int64": "long long", "int32": "int", "int16": "short",
    "int8": "signed char", "uint8": "unsigned char",
}  # fmt: skip
INDEX_TYPES = ("int32", "int64")
RUNS_ON = ("gpu", "cpu")
MEMORIES = ("device", "host")
HOST_MEMORIES = ("pageable", "pinned")
CHECK_KINDS = ("rel_fro", "max_abs", "exact")
DRAWS = ("uniform", "normal", "integers")
MERITS = ("flops", "bytes")
# Figures every experiment gets; a family's own figures take other names.
STANDARD_FIGURES = ("roofline", "performance", "sweep", "speed_of_light", "occupancy", "traffic")
# Names every expression may use besides the dimensions and the tunables.
BUILTIN_NAMES = ("in_bytes", "out_bytes")
# Facts of the device that restrictions and launch grids may also use (device_limits in
# the config, the H100's by default; each GPU job compares them with its own GPU's).
DEVICE_FACTS = ("sm_count", "max_threads_per_sm", "smem_per_sm")


def names_device_facts(where: str) -> bool:
    """Whether the expression at ``where`` (a restriction, a launch's grid) may name the
    device's facts: a persistent kernel's grid is as many blocks as the GPU holds."""
    return where.startswith("restrictions") or where.rpartition(".")[2].startswith("grid[")


def _restriction_where(i: int, inherited: int, like: Sequence[Path]) -> str:
    """Where restriction ``i`` of a variant's merged list was written, as errors name it:
    the first ``inherited`` in the file it is like, at their place in that file's list (the
    "restrictions" prefix lets them name device facts), the others at theirs in its own."""
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


_FRONT_MATTER = re.compile(r"/\*---\s*\n(.*?)\n---\*/", re.DOTALL)
_LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# An architecture a variant may be compiled for besides the device's own: sm_90a is the
# H100/H200's with its architecture-specific instructions (wgmma, setmaxnreg).
_ARCH = re.compile(r"sm_\d{2,3}a?\Z")
_VARIANT_KEYS = {
    "kernel", "idea", "params", "restrictions", "block", "grid", "static_smem",
    "dynamic_smem", "smem_optin", "dtype", "out_dtype", "accepts", "library", "baseline",
    "runs_on", "compute", "model_dram_bytes", "executed_flops", "launches", "scratch",
    "profiled", "host_memory", "requires", "arch", "tensor_maps", "row_alignment", "like",
}  # fmt: skip
_LAUNCH_KEYS = {"name", "kernel", "library", "block", "grid", "static_smem", "dynamic_smem",
                "args", "when"}  # fmt: skip
_FAMILY_KEYS = {
    "name", "description", "dims", "index_type", "dtype", "inputs", "outputs", "scalars",
    "args", "flops", "min_bytes", "reference", "draw", "check", "tolerance", "restrictions",
    "size_axis", "merit", "order", "speedup_over", "columns", "figures",
}  # fmt: skip
_TENSOR_KEYS = {"shape", "dtype", "draw", "memory", "check"}


def storage_dtype(dtype: str) -> str:
    """The array dtype that holds values of ``dtype`` (float32 for tf32)."""
    return STORAGE_DTYPE.get(dtype, dtype)


class SpecError(NcuflowError):
    """A kernel family or variant declaration that is wrong."""


def _expr(where: str, value: Any) -> Expr:
    try:
        return Expr(value)
    except ExprError as exc:
        raise SpecError(f"{where}: {exc}") from None


def condition(where: str, value: Any) -> Expr:
    """A restriction: one condition (a comparison, and/or/not), never a bare number or a
    tuple, which would always hold."""
    expr = _expr(where, value)
    if not expr.is_condition:
        hint = " (a comma makes a tuple: join conditions with 'and')" if "," in expr.text else ""
        raise SpecError(
            f"{where}: {expr.text!r} is not a condition{hint}; expected a comparison such as "
            "'TILE >= 8', or conditions joined by and, or, not"
        )
    return expr


def _expr_list(where: str, value: Any) -> tuple[Expr, ...]:
    """'BX, BY' or a YAML list of expressions, as a tuple of expressions."""
    items = value if isinstance(value, list) else [value]
    return tuple(e for item in items for e in _expr(where, str(item)).split())


def _geometry(where: str, value: Any) -> tuple[Expr, ...]:
    exprs = _expr_list(where, value)
    if not 1 <= len(exprs) <= 3:
        raise SpecError(f"{where}: needs 1 to 3 expressions (x, y, z), got {len(exprs)}")
    return exprs


def _per_dtype(where: str, value: Any) -> dict[str, float] | float:
    """A tolerance: one number for every dtype, or a mapping dtype → number."""
    if isinstance(value, bool):
        raise SpecError(f"{where}: expected a number or a mapping of dtype to number")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict) and all(isinstance(v, int | float) for v in value.values()):
        unknown = set(value) - set(DTYPE_BYTES)
        if unknown:
            raise SpecError(f"{where}: unknown dtype(s) {', '.join(sorted(unknown))}")
        return {str(k): float(v) for k, v in value.items()}
    raise SpecError(f"{where}: expected a number or a mapping of dtype to number, got {value!r}")


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


def _check(where: str, value: Any) -> Check:
    if value == "exact":
        return Check("exact")
    if not isinstance(value, dict) or len(value) != 1:
        raise SpecError(
            f"{where}: expected exact, {{rel_fro: tolerance}} or {{max_abs: tolerance}}, "
            f"got {value!r}"
        )
    ((kind, tolerance),) = value.items()
    if kind not in CHECK_KINDS or kind == "exact":
        raise SpecError(f"{where}: unknown check {kind!r}; valid: exact, rel_fro, max_abs")
    return Check(kind, _per_dtype(f"{where}.{kind}", tolerance))


@dataclass(frozen=True)
class Tensor:
    """An input or output array of a family. ``dtype`` None follows the variant: its
    ``dtype`` for inputs, its ``out_dtype`` for outputs."""

    name: str
    shape: tuple[Expr, ...]
    output: bool
    dtype: str | None = None
    draw: tuple[str, tuple[float, float]] | None = None  # (kind, its two numbers)
    memory: str = "device"
    check: Check | None = None

    def element_dtype(self, in_dtype: str, out_dtype: str) -> str:
        """The dtype of its values when a variant runs with ``in_dtype``/``out_dtype``
        (tf32 for a TF32 variant's float32 arrays)."""
        if self.dtype is not None:
            return self.dtype
        return out_dtype if self.output else in_dtype


def _draw(where: str, value: Any, dtype: str | None) -> tuple[str, tuple[float, float]] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or len(value) != 1:
        raise SpecError(f"{where}: expected one of {', '.join(DRAWS)} with [a, b], got {value!r}")
    ((kind, bounds),) = value.items()
    if kind not in DRAWS:
        raise SpecError(f"{where}: unknown draw {kind!r}; valid: {', '.join(DRAWS)}")
    if (
        not isinstance(bounds, list)
        or len(bounds) != 2
        or not all(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds)
    ):
        raise SpecError(f"{where}.{kind}: expected two numbers [a, b], got {bounds!r}")
    lo, hi = float(bounds[0]), float(bounds[1])
    if kind == "normal" and hi <= 0:
        raise SpecError(f"{where}.normal: [mean, std] needs std > 0, got {bounds!r}")
    if kind != "normal" and not lo < hi:
        raise SpecError(f"{where}.{kind}: [lo, hi] needs lo < hi, got {bounds!r}")
    if kind == "integers" and not all(float(b).is_integer() for b in bounds):
        raise SpecError(f"{where}.integers: bounds must be integers, got {bounds!r}")
    if kind == "integers" and lo == 0 and hi == 1:
        raise SpecError(f"{where}.integers: [0, 1] draws only zeros (hi is exclusive)")
    if dtype is not None and dtype not in FLOAT_DTYPES and kind != "integers":
        raise SpecError(f"{where}: an {dtype} tensor is drawn with integers: [lo, hi]")
    return kind, (lo, hi)


def _tensor(where: str, name: str, value: Any, output: bool) -> Tensor:
    if not _IDENTIFIER.match(name):
        raise SpecError(f"{where}: tensor name {name!r} must be an identifier")
    data = value if isinstance(value, dict) else {"shape": value}
    unknown = set(data) - _TENSOR_KEYS
    if unknown:
        raise SpecError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
            f"valid: {', '.join(sorted(_TENSOR_KEYS))}"
        )
    if "shape" not in data:
        raise SpecError(f"{where}: needs 'shape' (expressions over the dimensions)")
    dtype = data.get("dtype")
    if dtype is not None and dtype not in DTYPE_BYTES:
        raise SpecError(f"{where}: dtype {dtype!r} is not one of {', '.join(DTYPE_BYTES)}")
    memory = data.get("memory", "device")
    if memory not in MEMORIES:
        raise SpecError(f"{where}: memory {memory!r} is not one of {', '.join(MEMORIES)}")
    if output and "draw" in data:
        raise SpecError(f"{where}: an output is written by the kernel, not drawn")
    if not output and "check" in data:
        raise SpecError(f"{where}: only outputs are checked")
    return Tensor(
        name=name,
        shape=_expr_list(f"{where}.shape", data["shape"]),
        output=output,
        dtype=dtype,
        draw=_draw(f"{where}.draw", data.get("draw"), dtype),
        memory=memory,
        check=_check(f"{where}.check", data["check"]) if "check" in data else None,
    )


@dataclass(frozen=True)
class Scalar:
    """A kernel argument that is neither a tensor nor a dimension (alpha, an epsilon)."""

    name: str
    dtype: str
    value: int | float


def scalar_value(where: str, dtype: str, value: Any) -> int | float:
    """``value`` checked against ``dtype``: an integer for integer dtypes, a number for
    floating ones (an error names what was given and what is expected)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(
            f"{where}: {value!r} is a {type(value).__name__}, expected a {dtype} number"
        )
    if dtype in FLOAT_DTYPES:
        return float(value)
    if isinstance(value, float) and not value.is_integer():
        raise SpecError(f"{where}: {value!r} is not an integer, expected a {dtype} number")
    bits = 8 * DTYPE_BYTES[dtype]
    lo, hi = (
        (0, 2**bits - 1) if dtype.startswith("uint") else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    )
    if not lo <= int(value) <= hi:
        raise SpecError(f"{where}: {value!r} does not fit {dtype} ({lo} to {hi})")
    return int(value)


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
        return self.path.read_text() if self.path.suffix == ".cu" else ""

    def expressions(self) -> list[tuple[str, Expr]]:
        named = [
            (_restriction_where(i, self.inherited_restrictions, self.like), r)
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
class Family:
    """A problem: its dimensions, tensors, counts, reference, checks and variants."""

    name: str
    folder: Path
    description: str
    dims: tuple[str, ...]
    tensors: dict[str, Tensor]
    scalars: dict[str, Scalar]
    args: tuple[str, ...]
    flops: Expr
    min_bytes: Expr | None  # None: every input read once, every output written once
    checks: dict[str, Check]  # output name → its check
    size_axis: str
    dtype: str
    reference: str
    variants: dict[str, Variant]
    index_type: str = "int32"
    check_function: str | None = None
    draw_function: str | None = None
    restrictions: tuple[Expr, ...] = ()
    merit: str = "flops"  # the figure of merit that leads: flops or bytes
    order: tuple[str, ...] = ()  # the ladder: variants in the order figures and tables show
    speedup_over: str | None = None
    columns: dict[str, Expr] = field(default_factory=dict)
    figures: dict[str, Figure] = field(default_factory=dict)

    @property
    def inputs(self) -> dict[str, Tensor]:
        return {n: t for n, t in self.tensors.items() if not t.output}

    @property
    def outputs(self) -> dict[str, Tensor]:
        return {n: t for n, t in self.tensors.items() if t.output}

    @functools.cached_property
    def module(self) -> ModuleType:
        """family.py, imported from its file (it is data, not part of the package)."""
        path = self.folder / "family.py"
        spec = importlib.util.spec_from_file_location(f"ncuflow_family_{self.name}", path)
        if spec is None or spec.loader is None:
            raise SpecError(f"{path}: cannot be imported")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    def function(self, name: str) -> Callable[..., Any]:
        fn = getattr(self.module, name, None)
        if not callable(fn):
            raise SpecError(f"{self.folder / 'family.py'}: has no function {name!r}")
        return fn

    @functools.cached_property
    def fingerprint(self) -> str:
        """Hash of everything that decides a measurement: the family folder's files and
        every file its kernels include, or are declared like, from elsewhere (read once per
        process)."""
        digest = hashlib.sha256()
        files = [
            p for p in sorted(self.folder.iterdir()) if p.suffix in {".yaml", ".py", ".cu", ".cuh"}
        ]
        for variant in self.variants.values():
            files += [p for p in (*local_includes(variant.path), *variant.like)
                      if p.parent != self.folder]  # fmt: skip
        for path in dict.fromkeys(files):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
        return digest.hexdigest()[:16]

    def scope(
        self,
        variant: Variant,
        dims: Mapping[str, int],
        params: Mapping[str, int],
        dtypes: tuple[str, str],
    ) -> dict[str, int]:
        """What a variant's expressions may name in one configuration: the dimensions, its
        tunables, the element sizes and, for each input whose rows it wants aligned, ld_T:
        the last dimension rounded up to a whole number of alignments (itself where rows
        are aligned already)."""
        in_dtype, out_dtype = dtypes
        env = {**dims, **params, "in_bytes": DTYPE_BYTES[in_dtype],
               "out_bytes": DTYPE_BYTES[out_dtype]}  # fmt: skip
        for name, alignment in variant.row_alignment.items():
            tensor = self.tensors[name]
            per_row = alignment // DTYPE_BYTES[tensor.element_dtype(in_dtype, out_dtype)]
            env[leading_dim(name)] = -(-int(tensor.shape[-1](dims)) // per_row) * per_row
        return env

    def ordered(self, variants: list[str]) -> list[str]:
        """``variants`` in the family's ladder order; undeclared ones keep their order, last."""
        rank = {name: i for i, name in enumerate(self.order)}
        return sorted(variants, key=lambda v: rank.get(v, len(rank)))


def local_includes(path: Path) -> list[Path]:
    """Files a CUDA source includes with ``#include "..."``, transitively, resolved
    against the including file's folder (what the harness adds to the include path)."""
    found: list[Path] = []
    pending = [path]
    while pending:
        current = pending.pop()
        if current.suffix not in {".cu", ".cuh", ".h"} or not current.is_file():
            continue
        for name in _LOCAL_INCLUDE.findall(current.read_text()):
            target = (current.parent / name).resolve()
            if target.is_file() and target not in found:
                found.append(target)
                pending.append(target)
    return found


def _read_yaml(path: Path, text: str) -> dict[str, Any]:
    try:
        duplicate_keys(text, str(path))
    except ConfigError as exc:
        raise SpecError(f"{path}: {exc.path}: {exc.problem}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: invalid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a mapping of keys, got {type(data).__name__}")
    return data


def _check_keys(path: Path | str, data: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = set(data) - allowed
    if unknown:
        raise SpecError(
            f"{path}: unknown key(s) {', '.join(sorted(unknown))}; "
            f"valid: {', '.join(sorted(allowed))}"
        )


def _check_define(path: Path, source: str, name: str, default: int, inherited: str) -> None:
    """The .cu file must carry the tunable as an overridable #define with the same default.
    A variant like another whose file it includes may leave it to that file (or to what
    that file includes: ``inherited``, their text), whatever the default there: ncuflow
    always sets every tunable with -D."""
    guarded = re.search(rf"#ifndef\s+{name}\s*\n\s*#define\s+{name}\s+(\S+)", source)
    if guarded is None and re.search(rf"#ifndef\s+{name}\s*\n\s*#define\s+{name}\s", inherited):
        return
    if guarded is None:
        raise SpecError(
            f"{path}: parameter {name} needs '#ifndef {name}' / '#define {name} {default}' "
            "so that ncuflow can set it with -D"
        )
    if guarded.group(1) != str(default):
        raise SpecError(
            f"{path}: #define {name} {guarded.group(1)} differs from the declared default "
            f"{name}: {default}"
        )


def _launch(where: str, data: Mapping[str, Any], cuda: bool, source: str) -> Launch:
    """One launch: a kernel with geometry in a .cu variant, a function in a .yaml one."""
    _check_keys(where, data, _LAUNCH_KEYS)
    args = _expr_list(f"{where}.args", data["args"]) if "args" in data else None
    when = _expr(f"{where}.when", data["when"]) if "when" in data else None
    if cuda:
        if "library" in data:
            raise SpecError(
                f"{where}: a .cu variant launches kernels; 'library' belongs in a .yaml"
            )
        for key in ("kernel", "block", "grid"):
            if key not in data:
                raise SpecError(f"{where}: the declaration needs '{key}'")
        kernel = str(data["kernel"])
        if not re.search(rf"\b{re.escape(kernel)}\s*\(", source):
            raise SpecError(
                f"{where}: kernel {kernel!r} is not defined in the file or what it includes"
            )
        return Launch(
            name=str(data.get("name", kernel)),
            kernel=kernel,
            block=_geometry(f"{where}: block", data["block"]),
            grid=_geometry(f"{where}: grid", data["grid"]),
            static_smem=_expr(f"{where}.static_smem", data.get("static_smem", 0)),
            dynamic_smem=_expr(f"{where}.dynamic_smem", data.get("dynamic_smem", 0)),
            args=args,
            when=when,
        )
    extra = {"kernel", "block", "grid", "static_smem", "dynamic_smem"} & set(data)
    if extra:
        raise SpecError(f"{where}: {', '.join(sorted(extra))} belong to CUDA kernels in a .cu file")
    if "library" not in data:
        raise SpecError(f"{where}: a .yaml variant needs 'library' (a family.py function)")
    library = str(data["library"])
    return Launch(name=str(data.get("name", library)), library=library, args=args, when=when)


def _launches(path: Path, data: Mapping[str, Any], source: str) -> tuple[Launch, ...]:
    cuda = path.suffix == ".cu"
    single = {"kernel", "library", "block", "grid", "static_smem", "dynamic_smem"} & set(data)
    if "launches" not in data:
        own = {k: v for k, v in data.items() if k in _LAUNCH_KEYS - {"name", "args", "when"}}
        return (_launch(str(path), own, cuda, source),)
    if single:
        raise SpecError(
            f"{path}: declare either one launch ({', '.join(sorted(single))}) or 'launches', "
            "not both"
        )
    steps = data["launches"]
    if not isinstance(steps, list) or not steps or not all(isinstance(s, dict) for s in steps):
        raise SpecError(f"{path}: launches must be a non-empty list of launch declarations")
    launches = tuple(
        _launch(f"{path}: launches[{i}]", s, cuda, source) for i, s in enumerate(steps)
    )
    names = [s.name for s in launches]
    for name in names:
        if not _IDENTIFIER.match(name):
            raise SpecError(f"{path}: launch name {name!r} must be an identifier")
    if len(set(names)) < len(names):
        raise SpecError(
            f"{path}: launches share a name ({', '.join(names)}); give each a distinct 'name' "
            "(it names its column of step times)"
        )
    return launches


@dataclass(frozen=True)
class _FamilyView:
    """What a variant declaration is checked against."""

    dims: tuple[str, ...]
    dtype: str
    tensors: dict[str, Tensor]
    scalars: dict[str, Scalar]


def _declaration(path: Path) -> tuple[str, dict[str, Any]]:
    """A variant file's source ('' for a .yaml library variant) and its declaration."""
    if path.suffix != ".cu":
        return "", _read_yaml(path, path.read_text())
    source = path.read_text()
    match = _FRONT_MATTER.search(source)
    if match is None:
        raise SpecError(f"{path}: no declaration; add a /*--- ... ---*/ YAML comment")
    return source, _read_yaml(path, match.group(1))


def _like(path: Path, data: dict[str, Any]) -> tuple[dict[str, Any], list[Path]]:
    """A declaration with ``like: <file>`` (another variant's .cu, relative to this one)
    takes that variant's tunables, in its order, its own defaults winning and its new ones
    after, and that variant's restrictions before its own: a variant that compiles another's
    code needs its conditions without a copy of them. Also the files it was built from."""
    like = data.get("like")
    if like is None:
        return data, []
    base_path = (path.parent / str(like)).resolve()
    if base_path.suffix != ".cu" or not base_path.is_file() or base_path == path.resolve():
        raise SpecError(f"{path}: like {like!r} must name another variant's .cu file, "
                        "relative to this one")  # fmt: skip
    _, base = _declaration(base_path)
    if "like" in base:
        raise SpecError(f"{path}: like {like!r} names a variant that is itself like another "
                        f"({base['like']}); name that one")  # fmt: skip
    merged = dict(data)
    for key, kind in (("params", dict), ("restrictions", list)):
        for where, value in ((path, data.get(key)), (base_path, base.get(key))):
            if value is not None and not isinstance(value, kind):
                raise SpecError(f"{where}: {key} must be a {'mapping' if kind is dict else 'list'}")
    own, inherited = data.get("params") or {}, base.get("params") or {}
    merged["params"] = {**{k: own.get(k, v) for k, v in inherited.items()}, **own}
    merged["restrictions"] = [*(base.get("restrictions") or []), *(data.get("restrictions") or [])]
    return merged, [base_path]


def _load_variant(path: Path, family: str, view: _FamilyView) -> Variant:
    dims, dtype = view.dims, view.dtype
    source, data = _declaration(path)
    _check_keys(path, data, _VARIANT_KEYS)
    own_restrictions = len(data.get("restrictions") or ())
    data, like = _like(path, data)
    restrictions = data.get("restrictions") or ()
    inherited_restrictions = len(restrictions) - own_restrictions
    # the text of the file this one is like (and of what it includes), where this one
    # includes it: its #ifndef defaults may stand there
    inherited = ""
    if like and like[0] in local_includes(path):
        inherited = "".join(f.read_text() for f in (like[0], *local_includes(like[0])))
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise SpecError(f"{path}: params must map each tunable to its default integer")
    reserved = (*dims, *BUILTIN_NAMES, *DEVICE_FACTS, *view.tensors, *view.scalars)
    for pname, default in params.items():
        if not _IDENTIFIER.match(str(pname)) or pname in reserved:
            raise SpecError(
                f"{path}: parameter name {pname!r} must be an identifier other than "
                f"{', '.join(reserved)}"
            )
        if isinstance(default, bool) or not isinstance(default, int):
            raise SpecError(f"{path}: default of {pname} must be an integer, got {default!r}")
        if path.suffix == ".cu":
            _check_define(path, source, pname, default, inherited)
    for key in ("dtype", "out_dtype"):
        value = data.get(key, dtype)
        if value not in DTYPE_BYTES:
            raise SpecError(f"{path}: {key} {value!r} is not one of {', '.join(DTYPE_BYTES)}")
    own_dtype = data.get("dtype", dtype)
    accepts = data.get("accepts", [own_dtype])
    if (
        not isinstance(accepts, list)
        or not set(accepts) <= set(DTYPE_BYTES)
        or own_dtype not in accepts
    ):
        raise SpecError(
            f"{path}: accepts must list dtypes from {', '.join(DTYPE_BYTES)}, its dtype "
            f"{own_dtype} among them; got {accepts!r}"
        )
    runs_on = data.get("runs_on", "gpu")
    if runs_on not in RUNS_ON or (runs_on != "gpu" and path.suffix == ".cu"):
        raise SpecError(
            f"{path}: runs_on {runs_on!r} is not valid; expected gpu, or cpu for a .yaml "
            "library variant"
        )
    compute = data.get("compute", DEFAULT_COMPUTE.get(own_dtype, ("fp32",)))
    if not isinstance(compute, list | tuple) or not set(compute) <= set(PRECISIONS):
        raise SpecError(
            f"{path}: compute must be a list of precisions from {', '.join(PRECISIONS)}, "
            f"got {compute!r}"
        )
    host_memory = data.get("host_memory", "pageable")
    if host_memory not in HOST_MEMORIES:
        raise SpecError(f"{path}: host_memory {host_memory!r} is not one of pageable, pinned")
    requires = data.get("requires") or []
    if not isinstance(requires, list) or not all(_IDENTIFIER.match(str(r)) for r in requires):
        raise SpecError(f"{path}: requires must list Python module names, got {requires!r}")
    scratch_data = data.get("scratch") or {}
    if not isinstance(scratch_data, dict):
        raise SpecError(f"{path}: scratch must map each buffer name to its shape and dtype")
    scratch = {}
    for sname, svalue in scratch_data.items():
        if sname in view.tensors or sname in view.scalars or sname in dims:
            raise SpecError(f"{path}: scratch buffer {sname!r} shadows a name of the family")
        buffer = _tensor(f"{path}: scratch.{sname}", str(sname), svalue, output=False)
        if buffer.draw is not None or buffer.memory != "device":
            raise SpecError(f"{path}: scratch.{sname} is device memory the variant writes itself")
        scratch[str(sname)] = buffer
    arch = data.get("arch")
    if arch is not None and (not _ARCH.match(str(arch)) or path.suffix != ".cu"):
        raise SpecError(f"{path}: arch {arch!r} is not an architecture like sm_90a (CUDA "
                        "variants only)")  # fmt: skip
    tensor_maps = {}
    for mname, mvalue in _named_map(path, data.get("tensor_maps"), "tensor_maps").items():
        where = f"{path}: tensor_maps.{mname}"
        taken = {*view.tensors, *view.scalars, *scratch, *dims, *params}
        if not _IDENTIFIER.match(str(mname)) or mname in taken:
            raise SpecError(f"{where}: the name must be an identifier of its own")
        try:
            tensor_maps[str(mname)] = parse_tensor_map(where, str(mname), mvalue, _expr_list)
        except TensorMapError as exc:
            raise SpecError(str(exc)) from None
        if tensor_maps[str(mname)].tensor not in {*view.tensors, *scratch}:
            raise SpecError(f"{where}: tensor {mvalue['tensor']!r} is neither a tensor of the "
                            f"family nor a scratch buffer")  # fmt: skip
    row_alignment = _row_alignment(path, data.get("row_alignment"), view, accepts)
    # a kernel may come from a shared header
    included = "".join(p.read_text() for p in local_includes(path)) if source else ""
    launches = _launches(path, data, source + included)
    taken = {*params, *scratch, *tensor_maps, *dims, *view.scalars}
    _check_aligned_inputs(path, row_alignment, launches, tensor_maps, taken)
    profiled = data.get("profiled", runs_on == "gpu")
    if not isinstance(profiled, bool) or (profiled and runs_on != "gpu"):
        raise SpecError(
            f"{path}: profiled must be true or false (a host variant is never profiled)"
        )
    optional = {k: _expr(f"{path}: {k}", data[k]) for k in ("model_dram_bytes", "executed_flops")
                if k in data}  # fmt: skip
    variant = Variant(
        name=path.stem,
        family=family,
        path=path,
        idea=str(data.get("idea", "")).strip(),
        params=dict(params),
        launches=launches,
        restrictions=tuple(
            condition(f"{path}: {_restriction_where(i, inherited_restrictions, like)}", r)
            for i, r in enumerate(restrictions)
        ),
        smem_optin=bool(data.get("smem_optin", False)),
        dtype=own_dtype,
        out_dtype=data.get("out_dtype", own_dtype),
        accepts=tuple(accepts),
        baseline=bool(data.get("baseline", False)),
        runs_on=runs_on,
        profiled=profiled,
        host_memory=host_memory,
        requires=tuple(str(r) for r in requires),
        scratch=scratch,
        compute=tuple(compute),
        arch=None if arch is None else str(arch),
        tensor_maps=tensor_maps,
        row_alignment=row_alignment,
        like=tuple(like),
        inherited_restrictions=inherited_restrictions,
        **optional,
    )
    _check_names(path, variant, view)
    return variant


def _check_names(path: Path, variant: Variant, view: _FamilyView) -> None:
    """Every expression names only dimensions, tunables and element sizes; every launch
    argument is a tensor, a scratch buffer, a scalar or such an expression."""
    known = set(view.dims) | set(variant.params) | set(BUILTIN_NAMES) | set(variant.leading_dims)
    for where, expr in variant.expressions():
        unknown = expr.names - known - (set(DEVICE_FACTS) if names_device_facts(where) else set())
        if unknown:
            facts = sorted(unknown & set(DEVICE_FACTS))
            hint = (f" ({', '.join(facts)}: a device fact, which only restrictions and launch "
                    "grids may name)" if facts else "")  # fmt: skip
            raise SpecError(
                f"{path}: {where} {expr.text!r} uses unknown name(s) "
                f"{', '.join(sorted(unknown))}{hint}; known: {', '.join(sorted(known))}"
            )
    objects = {*view.tensors, *variant.scratch, *variant.tensor_maps, *view.scalars}
    for i, launch in enumerate(variant.launches):
        for arg in launch.args or ():
            if arg.text in objects:
                continue
            unknown = arg.names - known
            if unknown:
                raise SpecError(
                    f"{path}: launches[{i}].args {arg.text!r} is neither a tensor, a scratch "
                    f"buffer, a tensor map nor a scalar ({', '.join(sorted(objects))}), nor an "
                    f"expression over {', '.join(sorted(known))}"
                )


MAX_ROW_ALIGNMENT = 256  # bytes; the TMA's 128-byte swizzle rows need the most


def _row_alignment(path: Path, data: Any, view: _FamilyView, accepts: list[str]) -> dict[str, int]:
    """``row_alignment``: device inputs of the family, each with a power of two of bytes
    that holds a whole number of its elements in every dtype the variant accepts."""
    if data is not None and not isinstance(data, dict):
        raise SpecError(f"{path}: row_alignment must map inputs to bytes, e.g. {{A: 16, B: 16}}; "
                        f"got {data!r}")  # fmt: skip
    alignment = {}
    for name, value in _named_map(path, data, "row_alignment").items():
        where = f"{path}: row_alignment.{name}"
        tensor = view.tensors.get(name)
        if tensor is None or tensor.output or tensor.memory != "device":
            inputs = [t for t, d in view.tensors.items() if not d.output and d.memory == "device"]
            what = (
                "an output"
                if tensor is not None and tensor.output
                else ("in host memory" if tensor is not None else "not a tensor of the family")
            )
            raise SpecError(f"{where}: {name} is {what}; only inputs in device memory are "
                            f"padded ({', '.join(inputs)})")  # fmt: skip
        sizes = sorted({DTYPE_BYTES[tensor.element_dtype(d, d)] for d in accepts})
        if (isinstance(value, bool) or not isinstance(value, int) or value <= 0
                or value & (value - 1) or value > MAX_ROW_ALIGNMENT
                or any(value % size for size in sizes)):  # fmt: skip
            raise SpecError(f"{where}: {value!r} bytes; expected a power of two up to "
                            f"{MAX_ROW_ALIGNMENT} and a multiple of the element size "
                            f"({'/'.join(map(str, sizes))} bytes), e.g. 16")  # fmt: skip
        alignment[name] = value
    return alignment


def _check_aligned_inputs(
    path: Path,
    alignment: Mapping[str, int],
    launches: tuple[Launch, ...],
    tensor_maps: Mapping[str, TensorMap],
    taken: set[str],
) -> None:
    """An aligned input's names (ld_T, the step pad_T) are its own, and every launch that
    takes it, itself or through a tensor map, is told its padded row length."""
    clash = {leading_dim(name) for name in alignment} & taken
    if clash:
        raise SpecError(f"{path}: {', '.join(sorted(clash))} names the padded row length of "
                        "an aligned input; give the other name a new one")  # fmt: skip
    clash = {pad_step(name) for name in alignment} & {launch.name for launch in launches}
    if clash:
        raise SpecError(f"{path}: launch {', '.join(sorted(clash))} takes the name of the step "
                        "that pads an aligned input's rows; name the launch otherwise")  # fmt: skip
    for i, launch in enumerate(launches if alignment else ()):
        where = f"{path}: launches[{i}] ({launch.name})"
        if launch.library or launch.args is None:
            raise SpecError(f"{where}: with row_alignment every launch must be a kernel that "
                            "lists its args, the padded row lengths among them (args: [A, B, "
                            "..., ld_A, ld_B])")  # fmt: skip
        texts = {arg.text for arg in launch.args}
        named = set().union(*(arg.names for arg in launch.args))
        for name in alignment:
            if name in texts and leading_dim(name) not in named:
                raise SpecError(f"{where}: takes the aligned input {name} but not ld_{name}, "
                                "the length of its padded rows")  # fmt: skip
            for tensor_map in tensor_maps.values():
                if (tensor_map.tensor == name and tensor_map.name in texts
                        and leading_dim(name) not in tensor_map.ld.names):  # fmt: skip
                    raise SpecError(f"{where}: tensor map {tensor_map.name} over the aligned "
                                    f"input {name} needs ld: ld_{name}")  # fmt: skip


def _named_map(path: Path, data: Any, key: str) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SpecError(f"{path}: {key} must be a mapping of names")
    return {str(k): v for k, v in data.items()}


def _scalars(path: Path, data: Any) -> dict[str, Scalar]:
    scalars = {}
    for name, value in _named_map(path, data, "scalars").items():
        where = f"{path}: scalars.{name}"
        if (
            not _IDENTIFIER.match(name)
            or not isinstance(value, dict)
            or set(value) != {"dtype", "value"}
        ):
            raise SpecError(f"{where}: expected an identifier with {{dtype: ..., value: ...}}")
        if value["dtype"] not in DTYPE_BYTES or value["dtype"] == "tf32":
            raise SpecError(f"{where}: dtype {value['dtype']!r} is not a scalar dtype")
        scalars[name] = Scalar(
            name, value["dtype"], scalar_value(where, value["dtype"], value["value"])
        )
    return scalars


def _checks(path: Path, data: Mapping[str, Any], tensors: dict[str, Tensor]) -> dict[str, Check]:
    """Each output's check: its own, else the family's rel_fro ``tolerance`` by dtype."""
    default = None
    if "tolerance" in data:
        default = Check("rel_fro", _per_dtype(f"{path}: tolerance", data["tolerance"]))
    checks = {}
    for tensor in tensors.values():
        if not tensor.output:
            continue
        check = tensor.check or default
        if check is None and "check" not in data:
            raise SpecError(
                f"{path}: output {tensor.name} has no check; give it one (check: exact, "
                "{rel_fro: ...} or {max_abs: ...}), a family-wide tolerance, or a family.py "
                "check function (check: <name>)"
            )
        if check is not None:
            checks[tensor.name] = check
    return checks


def _figures(path: Path, data: Any) -> dict[str, Figure]:
    figures = {}
    for name, value in _named_map(path, data, "figures").items():
        if (
            not _IDENTIFIER.match(name)
            or not isinstance(value, dict)
            or set(value) != {"y", "label"}
        ):
            raise SpecError(f"{path}: figures.{name} needs a name, y (a column) and label")
        if name in STANDARD_FIGURES:
            raise SpecError(f"{path}: figures.{name}: every experiment draws {name} already")
        figures[name] = Figure(name, str(value["y"]), str(value["label"]))
    return figures


@functools.cache
def load_family(kernels_dir: Path, name: str) -> Family:
    """Read kernels/<name>/: family.yaml and every variant file beside it."""
    # resolved: the fingerprint tells a family's own headers from others' by their folder
    folder = Path(kernels_dir).resolve() / name
    path = folder / "family.yaml"
    if not path.is_file():
        raise SpecError(f"{path}: no such file")
    data = _read_yaml(path, path.read_text())
    _check_keys(path, data, _FAMILY_KEYS)
    for key in ("dims", "inputs", "outputs", "args", "flops", "reference"):
        if key not in data:
            raise SpecError(f"{path}: needs '{key}'")
    dims = tuple(str(d) for d in data["dims"])
    dtype = data.get("dtype", "float32")
    index_type = data.get("index_type", "int32")
    if index_type not in INDEX_TYPES:
        raise SpecError(f"{path}: index_type {index_type!r} is not one of int32, int64")
    tensors: dict[str, Tensor] = {}
    for role, output in (("inputs", False), ("outputs", True)):
        for tname, value in _named_map(path, data[role], role).items():
            if tname in tensors or tname in dims:
                raise SpecError(f"{path}: {role}.{tname} is declared twice or is a dimension")
            tensors[tname] = _tensor(f"{path}: {role}.{tname}", tname, value, output)
    scalars = _scalars(path, data.get("scalars"))
    args = tuple(str(a) for a in data["args"])
    unknown_args = set(args) - set(dims) - set(tensors) - set(scalars)
    if unknown_args:
        raise SpecError(
            f"{path}: args {sorted(unknown_args)} are not dimensions, tensors or scalars"
        )
    view = _FamilyView(dims, dtype, tensors, scalars)
    variants: dict[str, Variant] = {}
    for vpath in sorted(folder.iterdir()):
        if vpath.suffix in {".cu", ".yaml"} and vpath.name != "family.yaml":
            if vpath.stem in variants:
                raise SpecError(f"{folder}: two files declare variant {vpath.stem!r}")
            variants[vpath.stem] = _load_variant(vpath, name, view)
    root = folder.resolve().parent
    for variant in variants.values():
        outside = [p for p in local_includes(variant.path) if not p.is_relative_to(root)]
        if outside:
            raise SpecError(
                f"{variant.path}: includes {outside[0]}, outside the kernels folder {root}; "
                "kernel sources are read only from inside it"
            )
    checks = _checks(path, data, tensors)
    for variant in variants.values():
        for out, check in checks.items():
            for accepted in variant.accepts:
                if check.limit(accepted) is None:
                    raise SpecError(
                        f"{path}: the check of {out} has no tolerance for dtype {accepted} "
                        f"(variant {variant.name}); add one, e.g. {{{accepted}: 1.0e-4}}"
                    )
    merit = data.get("merit", "flops")
    if merit not in MERITS:
        raise SpecError(f"{path}: merit {merit!r} is not one of {', '.join(MERITS)}")
    order = tuple(str(v) for v in data.get("order") or ())
    speedup_over = data.get("speedup_over")
    for key, names in (("order", order), ("speedup_over", [speedup_over] if speedup_over else [])):
        missing = [v for v in names if v not in variants]
        if missing:
            raise SpecError(f"{path}: {key} names unknown variant(s) {', '.join(missing)}")
    size_axis = str(data.get("size_axis", dims[0]))
    if size_axis not in dims:
        raise SpecError(f"{path}: size_axis {size_axis!r} is not one of {', '.join(dims)}")
    restrictions = tuple(
        condition(f"{path}: restrictions", r) for r in data.get("restrictions") or ()
    )
    for restriction in restrictions:
        if restriction.names - set(dims):
            raise SpecError(
                f"{path}: restriction {restriction.text!r} may name only the dimensions "
                f"{', '.join(dims)}"
            )
    columns = {str(k): _expr(f"{path}: columns.{k}", v)
               for k, v in _named_map(path, data.get("columns"), "columns").items()}  # fmt: skip
    return Family(
        name=name,
        folder=folder,
        description=str(data.get("description", "")).strip(),
        dims=dims,
        tensors=tensors,
        scalars=scalars,
        args=args,
        flops=_expr(f"{path}: flops", data["flops"]),
        min_bytes=_expr(f"{path}: min_bytes", data["min_bytes"]) if "min_bytes" in data else None,
        checks=checks,
        size_axis=size_axis,
        dtype=dtype,
        reference=str(data["reference"]),
        variants=variants,
        index_type=index_type,
        check_function=str(data["check"]) if "check" in data else None,
        draw_function=str(data["draw"]) if "draw" in data else None,
        restrictions=restrictions,
        merit=merit,
        order=order,
        speedup_over=speedup_over,
        columns=columns,
        figures=_figures(path, data.get("figures")),
    )


def available_families(kernels_dir: Path) -> list[str]:
    return sorted(p.parent.name for p in Path(kernels_dir).glob("*/family.yaml"))
