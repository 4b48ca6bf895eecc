"""A variant's declaration read and checked: its keys against the variant schema, then its
meaning: tunables (with those of the variant it is like) and their #define defaults,
dtypes, scratch buffers, tensor maps, aligned inputs and launches; every expression may
name only what exists where it stands, and every output's check has a tolerance for every
dtype the variant accepts."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import schema
from ..errors import SpecError
from ..files import read_text
from ..metrics import DEFAULT_COMPUTE
from .fields import IDENTIFIER, condition, expr_list, named_map, single, tensor_of, validated
from .launches import check_aligned_inputs, launches_of, row_alignment
from .model import (
    BUILTIN_NAMES,
    DEVICE_FACTS,
    FamilyView,
    Tensor,
    TensorMap,
    Variant,
    restriction_where,
)
from .sources import check_confined, check_define, declaration, like_merged, local_includes


def load_variant(path: Path, view: FamilyView) -> Variant:
    """The variant declared by ``path`` (a .cu or .yaml file of the family ``view``)."""
    check_confined(path, view.root)  # before anything is read: itself and what it includes
    source, data = declaration(path)
    validated(path, data, schema.VARIANT)
    own_restrictions = len(data.get("restrictions") or ())
    data, like = like_merged(path, data, view.root)
    restrictions = data.get("restrictions") or ()
    inherited = len(restrictions) - own_restrictions
    params = _params(path, data, source, like, view)
    own_dtype = data.get("dtype", view.dtype)
    accepts = data.get("accepts", [own_dtype])
    if own_dtype not in accepts:
        raise SpecError(f"{path}: accepts {accepts!r} must include its dtype {own_dtype}")
    if data["runs_on"] != "gpu" and path.suffix == ".cu":
        raise SpecError(f"{path}: runs_on {data['runs_on']!r} is not valid for a .cu file; "
                        "only a .yaml library variant runs on the host")  # fmt: skip
    if "arch" in data and path.suffix != ".cu":
        raise SpecError(f"{path}: arch belongs to CUDA variants (.cu files)")
    scratch = _scratch(path, data, view)
    tensor_maps = _tensor_maps(path, data, view, set(scratch), set(params))
    alignment = row_alignment(path, data.get("row_alignment"), view, accepts)
    included = "".join(read_text(p) for p in local_includes(path)) if source else ""
    launches = launches_of(path, data, source + included)  # a kernel may be in a header
    taken = {*params, *scratch, *tensor_maps, *view.dims, *view.scalars}
    check_aligned_inputs(path, alignment, launches, tensor_maps, taken)
    profiled = data.get("profiled", data["runs_on"] == "gpu")
    if profiled and data["runs_on"] != "gpu":
        raise SpecError(f"{path}: profiled: true, but a host variant is never profiled")
    models = {k: single(f"{path}: {k}", data[k]) for k in ("model_dram_bytes", "executed_flops")
              if k in data}  # fmt: skip
    variant = Variant(
        name=path.stem,
        family=view.name,
        path=path,
        idea=str(data.get("idea", "")).strip(),
        params=params,
        launches=launches,
        restrictions=tuple(
            condition(f"{path}: {restriction_where(i, inherited, like)}", r)
            for i, r in enumerate(restrictions)
        ),
        smem_optin=data["smem_optin"],
        dtype=own_dtype,
        out_dtype=data.get("out_dtype", view.out_dtype or own_dtype),
        accepts=tuple(accepts),
        baseline=data["baseline"],
        runs_on=data["runs_on"],
        profiled=profiled,
        host_memory=data["host_memory"],
        requires=tuple(data.get("requires") or ()),
        scratch=scratch,
        compute=tuple(data.get("compute", DEFAULT_COMPUTE.get(own_dtype, ("fp32",)))),
        arch=data.get("arch"),
        tensor_maps=tensor_maps,
        row_alignment=alignment,
        like=tuple(like),
        inherited_restrictions=inherited,
        **models,
    )
    _check_names(path, variant, view)
    _check_tolerances(path, variant, view)
    return variant


def _params(
    path: Path, data: Mapping[str, Any], source: str, like: list[Path], view: FamilyView
) -> dict[str, int]:
    """The tunables with their defaults; in a .cu file each is an overridable #define,
    which a variant like another may leave to that file where it includes it."""
    inherited = ""
    if like and like[0] in local_includes(path):
        inherited = "".join(read_text(f) for f in (like[0], *local_includes(like[0])))
    params = dict(data.get("params") or {})
    reserved = (*view.dims, *BUILTIN_NAMES, *DEVICE_FACTS, *view.tensors, *view.scalars)
    for name, default in params.items():
        if not IDENTIFIER.match(str(name)) or name in reserved:
            raise SpecError(
                f"{path}: parameter name {name!r} must be an identifier other than "
                f"{', '.join(reserved)}"
            )
        if isinstance(default, bool) or not isinstance(default, int):
            raise SpecError(f"{path}: default of {name} must be an integer, got {default!r}")
        if path.suffix == ".cu":
            check_define(path, source, name, default, inherited)
    return params


def _scratch(path: Path, data: Mapping[str, Any], view: FamilyView) -> dict[str, Tensor]:
    scratch = {}
    for name, value in named_map(path, data.get("scratch"), "scratch").items():
        if name in view.tensors or name in view.scalars or name in view.dims:
            raise SpecError(f"{path}: scratch buffer {name!r} shadows a name of the family")
        scratch[name] = tensor_of(f"{path}: scratch.{name}", name, value, output=False)
    return scratch


def _tensor_maps(
    path: Path, data: Mapping[str, Any], view: FamilyView, scratch: set[str], params: set[str]
) -> dict[str, TensorMap]:
    """The TMA maps its launches take, each over a tensor or a scratch buffer, each with a
    name of its own."""
    tensor_maps = {}
    for name, value in named_map(path, data.get("tensor_maps"), "tensor_maps").items():
        where = f"{path}: tensor_maps.{name}"
        taken = {*view.tensors, *view.scalars, *view.dims, *scratch, *params}
        if not IDENTIFIER.match(name) or name in taken:
            raise SpecError(f"{where}: the name must be an identifier of its own")
        shape, box = (
            expr_list(f"{where}.shape", value["shape"]),
            expr_list(f"{where}.box", value["box"]),
        )
        ld = expr_list(f"{where}.ld", value["ld"])
        if len(shape) != 2 or len(box) != 2 or len(ld) != 1:
            raise SpecError(f"{where}: shape and box each need two expressions (rows, cols), "
                            "ld one (the elements between rows)")  # fmt: skip
        tensor_maps[name] = TensorMap(name, str(value["tensor"]), (shape[0], shape[1]), ld[0],
                                      (box[0], box[1]))  # fmt: skip
        if tensor_maps[name].tensor not in {*view.tensors, *scratch}:
            raise SpecError(f"{where}: tensor {value['tensor']!r} is neither a tensor of the "
                            f"family nor a scratch buffer")  # fmt: skip
    return tensor_maps


def _check_tolerances(path: Path, variant: Variant, view: FamilyView) -> None:
    """Every output's check has a tolerance for every dtype the variant accepts."""
    for out, check in view.checks.items():
        for accepted in variant.accepts:
            if check.limit(accepted) is None:
                raise SpecError(
                    f"{path.parent / 'family.yaml'}: the check of {out} has no tolerance for "
                    f"dtype {accepted} (variant {variant.name}); add one, e.g. "
                    f"{{{accepted}: 1.0e-4}}"
                )


def _check_names(path: Path, variant: Variant, view: FamilyView) -> None:
    """Every expression names only dimensions, tunables and element sizes; every launch
    argument is a tensor, a scratch buffer, a scalar or such an expression."""
    known = (set(view.dims) | set(variant.params) | set(BUILTIN_NAMES)
             | set(variant.leading_dims) | set(DEVICE_FACTS))  # fmt: skip
    for where, named in variant.expressions():
        unknown = named.names - known
        if unknown:
            raise SpecError(
                f"{path}: {where} {named.text!r} uses unknown name(s) "
                f"{', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}"
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
