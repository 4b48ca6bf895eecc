"""A family folder read and checked: ``family.yaml`` (dimensions, tensors, scalars, argument
order, counts, checks, how figures and tables read), ``family.py`` (the reference and any
library functions) and one file per variant, each variant read when first asked for: a
stage that measures one variant reads that one alone."""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from .. import schema
from ..errors import SpecError
from ..expr import Expr
from ..files import read_text
from ..vocab import ENERGY_FIGURE, SEARCH_FIGURE, STANDARD_FIGURES
from .fields import (
    condition,
    expr,
    named_map,
    per_dtype,
    scalar_value,
    single,
    tensor_of,
    validated,
)
from .model import (
    BUILTIN_NAMES,
    DTYPE_BYTES,
    Check,
    FamilyView,
    Figure,
    Scalar,
    Tensor,
    Variant,
    leading_dim,
)
from .sources import fingerprint, read_yaml
from .variant import load_variant as read_variant


@dataclass(frozen=True)
class Family:
    """A problem: its dimensions, tensors, counts, reference, checks and variants (one file
    each in ``variant_files``, read by ``variant()`` when first asked for)."""

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
    variant_files: dict[str, Path]
    index_type: str = "int32"
    out_dtype: str | None = None  # the variants' output dtype, unless one declares its own
    check_function: str | None = None
    draw_function: str | None = None
    restrictions: tuple[Expr, ...] = ()
    merit: str = "flops"  # the figure of merit that leads: flops or bytes
    order: tuple[str, ...] = ()  # the ladder: variants in the order figures and tables show
    speedup_over: str | None = None
    columns: dict[str, Expr] = field(default_factory=dict)
    figures: dict[str, Figure] = field(default_factory=dict)
    _read: dict[str, Variant] = field(default_factory=dict, compare=False, repr=False)

    def variant(self, name: str) -> Variant:
        """One variant, read and checked on first use."""
        if name not in self._read:
            if name not in self.variant_files:
                raise SpecError(f"{self.folder}: no variant {name!r}; its variants: "
                                f"{', '.join(self.variant_files)}")  # fmt: skip
            view = FamilyView(self.name, self.dims, self.dtype, self.tensors, self.scalars,
                              self.checks, self.folder.parent, self.out_dtype)  # fmt: skip
            self._read[name] = read_variant(self.variant_files[name], view)
        return self._read[name]

    @property
    def variants(self) -> dict[str, Variant]:
        """Every variant, each read and checked (the study checks them all)."""
        return {name: self.variant(name) for name in self.variant_files}

    @property
    def inputs(self) -> dict[str, Tensor]:
        return {n: t for n, t in self.tensors.items() if not t.output}

    @property
    def outputs(self) -> dict[str, Tensor]:
        """What kernels write and the check compares: outputs and inouts."""
        return {n: t for n, t in self.tensors.items() if t.output}

    @property
    def problem_columns(self) -> list[str]:
        """The table columns that say which problem a configuration solves: its dimensions
        and its scalars' values (an experiment may sweep a scalar). Best configurations,
        speedups and rung changes are per problem."""
        return [*self.dims, *self.scalars]

    @property
    def drawn(self) -> dict[str, Tensor]:
        """What the harness draws: inputs and inouts."""
        return {n: t for n, t in self.tensors.items() if t.drawn}

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
        return fingerprint(self.folder, self.variant_files.values())

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


def _scalars(path: Path, data: Any, taken: Mapping[str, str]) -> dict[str, Scalar]:
    """The scalars, each named apart from the dimensions and tensors (``taken``: each of
    their names, with what it is)."""
    scalars = {}
    for name, value in named_map(path, data, "scalars").items():
        where = f"{path}: scalars.{name}"
        if name in taken:
            raise SpecError(f"{where}: {name} is a {taken[name]}; scalars take other names")
        if value["dtype"] == "tf32":
            raise SpecError(f"{where}: dtype 'tf32' is not a scalar dtype (tf32 is a way of "
                            "computing float32 products)")  # fmt: skip
        scalars[name] = Scalar(
            name, value["dtype"], scalar_value(where, value["dtype"], value["value"])
        )
    return scalars


def _checks(path: Path, data: Mapping[str, Any], tensors: dict[str, Tensor]) -> dict[str, Check]:
    """Each output's check: its own, else the family's rel_fro ``tolerance`` by dtype."""
    default = None
    if "tolerance" in data:
        default = Check("rel_fro", per_dtype(f"{path}: tolerance", data["tolerance"]))
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


def _count(path: Path, key: str, value: Any, known: tuple[str, ...]) -> Expr:
    """An analytic count (``flops``, ``min_bytes``): an expression over ``known`` alone,
    whatever the variant or the config (an unknown name is this file's mistake)."""
    count = single(f"{path}: {key}", value)
    unknown = count.names - set(known)
    if unknown:
        raise SpecError(f"{path}: {key} {count.text!r} uses unknown name(s) "
                        f"{', '.join(sorted(unknown))}; known: {', '.join(known)}")  # fmt: skip
    return count


def _figures(path: Path, data: Any) -> dict[str, Figure]:
    figures = {}
    for name, value in named_map(path, data, "figures").items():
        if name in (*STANDARD_FIGURES, SEARCH_FIGURE, ENERGY_FIGURE):
            raise SpecError(f"{path}: figures.{name}: an experiment draws {name} itself "
                            "(a search's, the energy tier's)")  # fmt: skip
        figures[name] = Figure(name, str(value["y"]), str(value["label"]))
    return figures


def _tensors(path: Path, data: Mapping[str, Any], dims: tuple[str, ...]) -> dict[str, Tensor]:
    tensors: dict[str, Tensor] = {}
    for role, output, inout in (("inputs", False, False), ("outputs", True, False),
                                ("inouts", True, True)):  # fmt: skip
        for name, value in named_map(path, data.get(role), role).items():
            if name in dims:
                raise SpecError(f"{path}: {role}.{name} is a dimension; tensors take other names")
            if name in tensors:
                raise SpecError(
                    f"{path}: {role}.{name} is declared twice; a tensor that kernels read and "
                    "write in place is declared once, under inouts"
                )
            tensors[name] = tensor_of(f"{path}: {role}.{name}", name, value, output, inout)
            unknown = sorted({n for e in tensors[name].shape for n in e.names} - set(dims))
            if unknown:
                raise SpecError(f"{path}: {role}.{name}: its shape names {', '.join(unknown)}, "
                                f"which is not a dimension; dims: {', '.join(dims)}")  # fmt: skip
    if not any(t.output for t in tensors.values()):
        raise SpecError(f"{path}: the family writes nothing; declare its outputs (or inouts: "
                        "tensors read and written in place)")  # fmt: skip
    return tensors


def _variant_files(folder: Path) -> dict[str, Path]:
    files: dict[str, Path] = {}
    for path in sorted(folder.iterdir()):
        if path.suffix in {".cu", ".yaml"} and path.name != "family.yaml":
            if path.stem in files:
                raise SpecError(f"{folder}: two files declare variant {path.stem!r}")
            files[path.stem] = path
    return files


@functools.cache
def read_family(kernels_dir: Path, name: str) -> Family:
    """kernels/<name>/family.yaml, checked, and the files of its variants (not yet read)."""
    # resolved: the fingerprint tells a family's own headers from others' by their folder
    folder = Path(kernels_dir).resolve() / name
    path = folder / "family.yaml"
    if not path.is_file():
        raise SpecError(f"{path}: no such file")
    data = validated(path, read_yaml(path, read_text(path)), schema.FAMILY)
    dims = tuple(data["dims"])
    tensors = _tensors(path, data, dims)
    taken = {**dict.fromkeys(dims, "dimension"), **dict.fromkeys(tensors, "tensor")}
    scalars = _scalars(path, data.get("scalars"), taken)
    args = tuple(data["args"])
    unknown_args = set(args) - set(dims) - set(tensors) - set(scalars)
    if unknown_args:
        raise SpecError(
            f"{path}: args {sorted(unknown_args)} are not dimensions, tensors or scalars"
        )
    variant_files = _variant_files(folder)
    order = tuple(data.get("order") or ())
    speedup_over = data.get("speedup_over")
    for key, names in (("order", order), ("speedup_over", [speedup_over] if speedup_over else [])):
        missing = [v for v in names if v not in variant_files]
        if missing:
            raise SpecError(f"{path}: {key} names unknown variant(s) {', '.join(missing)}")
    size_axis = data.get("size_axis", dims[0])
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
    columns = {str(k): expr(f"{path}: columns.{k}", v)
               for k, v in named_map(path, data.get("columns"), "columns").items()}  # fmt: skip
    min_bytes = (_count(path, "min_bytes", data["min_bytes"], (*dims, *BUILTIN_NAMES))
                 if "min_bytes" in data else None)  # fmt: skip
    return Family(
        name=name,
        folder=folder,
        description=str(data.get("description", "")).strip(),
        dims=dims,
        tensors=tensors,
        scalars=scalars,
        args=args,
        flops=_count(path, "flops", data["flops"], dims),
        min_bytes=min_bytes,
        checks=_checks(path, data, tensors),
        size_axis=size_axis,
        dtype=data["dtype"],
        out_dtype=data.get("out_dtype"),
        reference=data["reference"],
        variant_files=variant_files,
        index_type=data["index_type"],
        check_function=data.get("check"),
        draw_function=data.get("draw"),
        restrictions=restrictions,
        merit=data["merit"],
        order=order,
        speedup_over=speedup_over,
        columns=columns,
        figures=_figures(path, data.get("figures")),
    )


def load_family(kernels_dir: Path, name: str) -> Family:
    """kernels/<name>/: family.yaml and every variant file beside it, all read and checked."""
    family = read_family(kernels_dir, name)
    for variant in family.variant_files:
        family.variant(variant)
    return family


def load_variant(kernels_dir: Path, family: str, variant: str) -> tuple[Family, Variant]:
    """A family and one of its variants, the others left unread: what a stage needs."""
    loaded = read_family(kernels_dir, family)
    return loaded, loaded.variant(variant)


def available_families(kernels_dir: Path) -> list[str]:
    return sorted(p.parent.name for p in Path(kernels_dir).glob("*/family.yaml"))
