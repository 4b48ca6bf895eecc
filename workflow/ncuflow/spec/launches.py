"""A variant's launches: one kernel or library call, or a sequence of them, with their
geometry and arguments; and the inputs whose rows it wants aligned, with the names
(ld_<input>, pad_<input>) and arguments that alignment brings."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import SpecError
from .fields import IDENTIFIER, expr, expr_list, geometry, named_map, single
from .model import DTYPE_BYTES, FamilyView, Launch, TensorMap, leading_dim, pad_step

# Keys only a CUDA kernel's launch has.
KERNEL_KEYS = ("kernel", "block", "grid", "static_smem", "dynamic_smem")


def _launch(
    path: Path, index: int | None, data: Mapping[str, Any], cuda: bool, source: str
) -> Launch:
    """One launch, the ``index``-th of ``launches`` or (None) the declaration's only one: a
    kernel with geometry in a .cu variant, a function in a .yaml one (its keys and their
    types are the schema's to check)."""
    where = str(path) if index is None else f"{path}: launches[{index}]"
    at = f"{path}: " if index is None else f"{where}."  # what names one of its keys
    args = expr_list(f"{at}args", data["args"]) if "args" in data else None
    when = expr(f"{at}when", data["when"]) if "when" in data else None
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
            block=geometry(f"{at}block", data["block"]),
            grid=geometry(f"{at}grid", data["grid"]),
            static_smem=single(f"{at}static_smem", data.get("static_smem", 0)),
            dynamic_smem=single(f"{at}dynamic_smem", data.get("dynamic_smem", 0)),
            args=args,
            when=when,
        )
    extra = sorted(set(KERNEL_KEYS) & set(data))
    if extra:
        raise SpecError(f"{where}: {', '.join(extra)} belong to CUDA kernels in a .cu file")
    if "library" not in data:
        raise SpecError(f"{where}: a .yaml variant needs 'library' (a family.py function)")
    library = str(data["library"])
    return Launch(name=str(data.get("name", library)), library=library, args=args, when=when)


def launches_of(path: Path, data: Mapping[str, Any], source: str) -> tuple[Launch, ...]:
    """The launches a declaration makes, in order: its one launch (the launch keys at its
    top level) or its ``launches``, each named uniquely (names label the step columns)."""
    cuda = path.suffix == ".cu"
    top_level = sorted({"library", *KERNEL_KEYS} & set(data))
    if "launches" not in data:
        own = {k: v for k, v in data.items() if k in {"library", *KERNEL_KEYS}}
        return (_launch(path, None, own, cuda, source),)
    if top_level:
        raise SpecError(
            f"{path}: declare either one launch ({', '.join(top_level)}) or 'launches', not both"
        )
    launches = tuple(_launch(path, i, s, cuda, source) for i, s in enumerate(data["launches"]))
    names = [s.name for s in launches]
    for name in names:
        if not IDENTIFIER.match(name):
            raise SpecError(f"{path}: launch name {name!r} must be an identifier")
    if len(set(names)) < len(names):
        raise SpecError(
            f"{path}: launches share a name ({', '.join(names)}); give each a distinct 'name' "
            "(it names its column of step times)"
        )
    return launches


MAX_ROW_ALIGNMENT = 256  # bytes; the TMA's 128-byte swizzle rows need the most


def row_alignment(path: Path, data: Any, view: FamilyView, accepts: list[str]) -> dict[str, int]:
    """``row_alignment``: device inputs of the family, each with a power of two of bytes
    that holds a whole number of its elements in every dtype the variant accepts."""
    alignment = {}
    for name, value in named_map(path, data, "row_alignment").items():
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


def check_aligned_inputs(
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
