"""Kernel families and variants, declared as data under ``kernels/<family>/``.

A family folder holds ``family.yaml`` (dimensions, inputs and outputs, kernel argument
order, analytic FLOP and minimum-byte counts, tolerances), ``family.py`` (the float64
reference and any library baselines) and one file per variant:

* ``<variant>.cu``: a CUDA kernel whose tunables are ``#ifndef``/``#define`` defaults,
  with its declaration (kernel name, parameters, restrictions, launch geometry) as YAML
  front matter in a ``/*--- ... ---*/`` comment;
* ``<variant>.yaml``: a library baseline that calls a function of ``family.py``, on the
  GPU or, with ``runs_on: cpu``, on the host (timed with the host clock, never profiled).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from .errors import NcuflowError
from .expr import Expr, ExprError
from .metrics import DEFAULT_COMPUTE, PRECISIONS

DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "tf32": 4, "float64": 8}
# Precisions that are a way of computing rather than a storage type: tf32 products read
# and write float32 arrays. Every other dtype is stored as itself.
STORAGE_DTYPE = {"tf32": "float32"}
RUNS_ON = ("gpu", "cpu")
# Names every expression may use besides the dimensions and the tunables.
BUILTIN_NAMES = ("in_bytes", "out_bytes")

_FRONT_MATTER = re.compile(r"/\*---\s*\n(.*?)\n---\*/", re.DOTALL)
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_VARIANT_KEYS = {
    "kernel", "idea", "params", "restrictions", "block", "grid", "static_smem",
    "dynamic_smem", "smem_optin", "dtype", "out_dtype", "library", "baseline", "runs_on",
    "compute", "model_dram_bytes", "executed_flops",
}  # fmt: skip
_FAMILY_KEYS = {
    "name", "description", "dims", "dtype", "inputs", "outputs", "args", "flops",
    "min_bytes", "reference", "tolerance", "size_axis", "merit",
}  # fmt: skip
MERITS = ("flops", "bytes")


def storage_dtype(dtype: str) -> str:
    """The array dtype that holds values of ``dtype`` (float32 for tf32)."""
    return STORAGE_DTYPE.get(dtype, dtype)


class SpecError(NcuflowError):
    """A kernel family or variant declaration that is wrong."""


def _expr_list(where: str, value: Any) -> tuple[Expr, ...]:
    """'BX, BY' or a YAML list of expressions, as a tuple of expressions."""
    items = value if isinstance(value, list) else [value]
    try:
        return tuple(e for item in items for e in Expr(str(item)).split())
    except ExprError as exc:
        raise SpecError(f"{where}: {exc}") from None


def _geometry(where: str, value: Any) -> tuple[Expr, ...]:
    exprs = _expr_list(where, value)
    if not 1 <= len(exprs) <= 3:
        raise SpecError(f"{where}: needs 1 to 3 expressions (x, y, z), got {len(exprs)}")
    return exprs


@dataclass(frozen=True)
class Variant:
    """One implementation of a family: a CUDA kernel or a library call."""

    name: str
    family: str
    path: Path
    idea: str
    params: dict[str, int]
    restrictions: tuple[Expr, ...] = ()
    kernel: str | None = None
    block: tuple[Expr, ...] = ()
    grid: tuple[Expr, ...] = ()
    static_smem: Expr = field(default_factory=lambda: Expr(0))
    dynamic_smem: Expr = field(default_factory=lambda: Expr(0))
    smem_optin: bool = False
    dtype: str = "float32"
    out_dtype: str = "float32"
    library: str | None = None
    baseline: bool = False
    runs_on: str = "gpu"
    # the precisions whose FLOPs are this variant's arithmetic (flops_counted)
    compute: tuple[str, ...] = ("fp32",)
    # analytic DRAM bytes without help from L2, and FLOPs executed including padding
    model_dram_bytes: Expr | None = None
    executed_flops: Expr | None = None

    @property
    def is_cuda(self) -> bool:
        return self.library is None

    @property
    def profiled(self) -> bool:
        """Whether ncu profiles it: everything that runs on the GPU."""
        return self.runs_on == "gpu"

    @functools.cached_property
    def source(self) -> str:
        return self.path.read_text()

    def expressions(self) -> list[tuple[str, Expr]]:
        named = [(f"restrictions[{i}]", r) for i, r in enumerate(self.restrictions)]
        named += [(f"block[{i}]", e) for i, e in enumerate(self.block)]
        named += [(f"grid[{i}]", e) for i, e in enumerate(self.grid)]
        named += [("static_smem", self.static_smem), ("dynamic_smem", self.dynamic_smem)]
        named += [
            (k, e)
            for k, e in (
                ("model_dram_bytes", self.model_dram_bytes),
                ("executed_flops", self.executed_flops),
            )
            if e is not None
        ]
        return named


@dataclass(frozen=True)
class Family:
    """A problem: its dimensions, tensors, counts, reference and variants."""

    name: str
    folder: Path
    description: str
    dims: tuple[str, ...]
    inputs: dict[str, tuple[Expr, ...]]
    outputs: dict[str, tuple[Expr, ...]]
    args: tuple[str, ...]
    flops: Expr
    min_bytes: Expr
    tolerance: dict[str, float]
    size_axis: str
    dtype: str
    reference: str
    variants: dict[str, Variant]
    merit: str = "flops"  # the figure of merit that leads: flops or bytes

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
        """Hash of everything in the family folder that decides a measurement (read once
        per process, like the rest of the family)."""
        digest = hashlib.sha256()
        for path in sorted(self.folder.iterdir()):
            if path.suffix in {".yaml", ".py", ".cu", ".cuh"}:
                digest.update(path.name.encode())
                digest.update(path.read_bytes())
        return digest.hexdigest()[:16]


def _read_yaml(path: Path, text: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: invalid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a mapping of keys, got {type(data).__name__}")
    return data


def _check_keys(path: Path, data: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = set(data) - allowed
    if unknown:
        raise SpecError(
            f"{path}: unknown key(s) {', '.join(sorted(unknown))}; "
            f"valid: {', '.join(sorted(allowed))}"
        )


def _check_define(path: Path, source: str, name: str, default: int) -> None:
    """The .cu file must carry the tunable as an overridable #define with the same default."""
    guarded = re.search(rf"#ifndef\s+{name}\s*\n\s*#define\s+{name}\s+(\S+)", source)
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


def _load_variant(path: Path, family: str, dims: tuple[str, ...], dtype: str) -> Variant:
    name = path.stem
    if path.suffix == ".cu":
        source = path.read_text()
        match = _FRONT_MATTER.search(source)
        if match is None:
            raise SpecError(f"{path}: no declaration; add a /*--- ... ---*/ YAML comment")
        data = _read_yaml(path, match.group(1))
    else:
        source = ""
        data = _read_yaml(path, path.read_text())
    _check_keys(path, data, _VARIANT_KEYS)
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise SpecError(f"{path}: params must map each tunable to its default integer")
    for pname, default in params.items():
        if not _IDENTIFIER.match(str(pname)) or pname in dims or pname in BUILTIN_NAMES:
            raise SpecError(
                f"{path}: parameter name {pname!r} must be an identifier other than "
                f"{', '.join((*dims, *BUILTIN_NAMES))}"
            )
        if isinstance(default, bool) or not isinstance(default, int):
            raise SpecError(f"{path}: default of {pname} must be an integer, got {default!r}")
        if path.suffix == ".cu":
            _check_define(path, source, pname, default)
    for key in ("dtype", "out_dtype"):
        value = data.get(key, dtype)
        if value not in DTYPE_BYTES:
            raise SpecError(f"{path}: {key} {value!r} is not one of {', '.join(DTYPE_BYTES)}")
    runs_on = data.get("runs_on", "gpu")
    if runs_on not in RUNS_ON or (runs_on != "gpu" and path.suffix == ".cu"):
        raise SpecError(
            f"{path}: runs_on {runs_on!r} is not valid; expected gpu, or cpu for a .yaml "
            "library variant"
        )
    compute = data.get("compute", DEFAULT_COMPUTE.get(data.get("dtype", dtype), ("fp32",)))
    if not isinstance(compute, list | tuple) or not set(compute) <= set(PRECISIONS):
        raise SpecError(
            f"{path}: compute must be a list of precisions from {', '.join(PRECISIONS)}, "
            f"got {compute!r}"
        )
    try:
        optional = {k: Expr(data[k]) for k in ("model_dram_bytes", "executed_flops") if k in data}
        common: dict[str, Any] = {
            "name": name,
            "family": family,
            "path": path,
            "idea": str(data.get("idea", "")).strip(),
            "params": dict(params),
            "restrictions": tuple(Expr(r) for r in data.get("restrictions") or ()),
            "dtype": data.get("dtype", dtype),
            "out_dtype": data.get("out_dtype", data.get("dtype", dtype)),
            "baseline": bool(data.get("baseline", False)),
            "runs_on": runs_on,
            "compute": tuple(compute),
            **optional,
        }
        if path.suffix == ".cu":
            for key in ("kernel", "block", "grid"):
                if key not in data:
                    raise SpecError(f"{path}: the declaration needs '{key}'")
            if not re.search(rf"\b{re.escape(str(data['kernel']))}\s*\(", source):
                raise SpecError(f"{path}: kernel {data['kernel']!r} is not defined in the file")
            variant = Variant(
                **common,
                kernel=str(data["kernel"]),
                block=_geometry(f"{path}: block", data["block"]),
                grid=_geometry(f"{path}: grid", data["grid"]),
                static_smem=Expr(data.get("static_smem", 0)),
                dynamic_smem=Expr(data.get("dynamic_smem", 0)),
                smem_optin=bool(data.get("smem_optin", False)),
            )
        else:
            if "library" not in data:
                raise SpecError(f"{path}: a .yaml variant needs 'library' (a family.py function)")
            variant = Variant(**common, library=str(data["library"]))
    except ExprError as exc:
        raise SpecError(f"{path}: {exc}") from None
    known = set(dims) | set(params) | set(BUILTIN_NAMES)
    for where, expr in variant.expressions():
        unknown = expr.names - known
        if unknown:
            raise SpecError(
                f"{path}: {where} {expr.text!r} uses unknown name(s) "
                f"{', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}"
            )
    return variant


@functools.cache
def load_family(kernels_dir: Path, name: str) -> Family:
    """Read kernels/<name>/: family.yaml and every variant file beside it."""
    folder = Path(kernels_dir) / name
    path = folder / "family.yaml"
    if not path.is_file():
        raise SpecError(f"{path}: no such file")
    data = _read_yaml(path, path.read_text())
    _check_keys(path, data, _FAMILY_KEYS)
    for key in ("dims", "inputs", "outputs", "args", "flops", "min_bytes", "reference"):
        if key not in data:
            raise SpecError(f"{path}: needs '{key}'")
    dims = tuple(str(d) for d in data["dims"])
    dtype = data.get("dtype", "float32")
    inputs = {k: _expr_list(f"{path}: inputs.{k}", v) for k, v in data["inputs"].items()}
    outputs = {k: _expr_list(f"{path}: outputs.{k}", v) for k, v in data["outputs"].items()}
    args = tuple(str(a) for a in data["args"])
    unknown_args = set(args) - set(dims) - set(inputs) - set(outputs)
    if unknown_args:
        raise SpecError(f"{path}: args {sorted(unknown_args)} are not dims, inputs or outputs")
    variants: dict[str, Variant] = {}
    for vpath in sorted(folder.iterdir()):
        if vpath.suffix in {".cu", ".yaml"} and vpath.name != "family.yaml":
            if vpath.stem in variants:
                raise SpecError(f"{folder}: two files declare variant {vpath.stem!r}")
            variants[vpath.stem] = _load_variant(vpath, name, dims, dtype)
    tolerance = {str(k): float(v) for k, v in (data.get("tolerance") or {}).items()}
    for variant in variants.values():
        if variant.dtype not in tolerance:
            raise SpecError(
                f"{path}: tolerance has no entry for dtype {variant.dtype} (variant "
                f"{variant.name}); add one, e.g. tolerance: {{{variant.dtype}: 1.0e-4}}"
            )
    try:
        flops, min_bytes = Expr(data["flops"]), Expr(data["min_bytes"])
    except ExprError as exc:
        raise SpecError(f"{path}: {exc}") from None
    merit = data.get("merit", "flops")
    if merit not in MERITS:
        raise SpecError(f"{path}: merit {merit!r} is not one of {', '.join(MERITS)}")
    return Family(
        name=name,
        folder=folder,
        description=str(data.get("description", "")).strip(),
        dims=dims,
        inputs=inputs,
        outputs=outputs,
        args=args,
        flops=flops,
        min_bytes=min_bytes,
        tolerance=tolerance,
        size_axis=str(data.get("size_axis", dims[0])),
        dtype=dtype,
        reference=str(data["reference"]),
        variants=variants,
        merit=merit,
    )


def available_families(kernels_dir: Path) -> list[str]:
    return sorted(p.parent.name for p in Path(kernels_dir).glob("*/family.yaml"))
