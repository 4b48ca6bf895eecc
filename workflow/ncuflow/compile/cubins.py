"""Cubins built ahead of the GPU jobs, and how a GPU job finds its configuration's.

The compile stage writes each cubin once into a cache folder, named by a hash of what
decides the binary: the variant's source and the text of every file it includes, the
NVRTC options (tunables, element types; not the include folders' paths nor the family's
fingerprint, which changes with any of its kernels), the architecture and NVRTC's version.
A rerun after editing one kernel therefore compiles only that kernel's configurations. It
also writes an index per experiment, from each configuration's variant and options (as the
GPU path builds them) to its cubin, and of the harness's own kernels (HELPERS: the check,
the gate, the L2 flush) to theirs; a GPU job given the index (``COMPILED_ENV``) loads the
cubin where the index has one for this GPU's architecture, and compiles with CuPy otherwise.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..files import read_json, read_text
from ..gpu import toolkit_includes
from ..spec.model import C_TYPES, Variant
from ..spec.sources import local_includes
from ..vocab import COMPILED_ENV
from .ptxas import REPORT_OPTIONS

if TYPE_CHECKING:
    from ..spec.family import Family

# CuPy adds -ftz=true to what it compiles; so does the compile stage, for the same binary
CUPY_DEFAULTS = ("-ftz=true",)
# The harness's own kernels every GPU job loads (measure/<name>.cu), built ahead with an
# experiment's configurations: compiled in the job, each took NVRTC's time while the job
# held the GPU (the check's array operations, about ten kernels, seconds on an empty cache).
HELPERS = ("compare", "gate", "l2_flush")
HELPER_OPTIONS = ("-std=c++17",)
HELPERS_DIR = Path(__file__).parents[1] / "measure"


def helper_source(name: str) -> str:
    """One of the harness's own CUDA sources (measure/: compare, gate, l2_flush, pad_rows)."""
    return (HELPERS_DIR / f"{name}.cu").read_text()


def helper_build(name: str, arch: str, nvrtc: str) -> tuple[str, tuple[str, ...], str]:
    """What the compile stage builds of one of HELPERS: its source, NVRTC's options and the
    cache's file name (a hash of both, the architecture and NVRTC's version)."""
    source = helper_source(name)
    options = (*HELPER_OPTIONS, *CUPY_DEFAULTS, f"--gpu-architecture={arch}")
    return source, options, cubin_name(source, options, arch, nvrtc)


def compile_options(
    family: Family, variant: Variant, params: dict[str, int], dtypes: tuple[str, str]
) -> tuple[str, ...]:
    """NVRTC options of one configuration: tunables as -D (by name: a plan read back from
    its file may order them otherwise than the compile stage's), the element types, the
    folders of the variant and of every file it includes."""
    folders = dict.fromkeys([variant.path.parent.resolve(),
                             *(p.parent for p in local_includes(variant.path))])  # fmt: skip
    # -lineinfo lets the Nsight Compute GUI show the source beside the SASS
    # CuPy's cache keys on the source and the options, not on included headers: the
    # family's fingerprint (its files and what they include) makes a changed header recompile
    arch = (f"--gpu-architecture={variant.arch}",) if variant.arch else ()
    return ("-std=c++17", "-lineinfo", *arch, *(f"-I{f}" for f in folders), *toolkit_includes(),
            f"-DNCUFLOW_FAMILY_HASH={family.fingerprint}",
            f"-DNCUFLOW_IN_T={C_TYPES[dtypes[0]]}", f"-DNCUFLOW_OUT_T={C_TYPES[dtypes[1]]}",
            *(f"-D{k}={v}" for k, v in sorted(params.items())))  # fmt: skip


def build_key(variant: Variant, options: Sequence[str]) -> str:
    """A configuration's entry in the index: its variant (two variants may take the same
    options) and its options as the GPU path builds them, without the include folders (a
    GPU job on another node, under Slurm, may find the toolkit's by another path than the
    compile job's)."""
    text = json.dumps([variant.family, variant.name, [o for o in options if o[:2] != "-I"]])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def source_digest(variant: Variant) -> str:
    """A hash of the variant's source and the text of every file it includes: read once per
    variant, not once per configuration."""
    included = [read_text(p) for p in local_includes(variant.path)]
    return hashlib.sha256(json.dumps([variant.source, included]).encode()).hexdigest()


def cubin_name(sources: str, options: Sequence[str], arch: str, nvrtc: str) -> str:
    """The cache's file name of a cubin: a hash of what decides it (``sources``: the
    variant's source_digest)."""
    stable = [o for o in options if not o.startswith(("-I", "-DNCUFLOW_FAMILY_HASH="))]
    text = json.dumps([sources, stable, arch, nvrtc])
    return hashlib.sha256(text.encode()).hexdigest()[:32] + ".cubin"


def nvrtc_options(options: Sequence[str], variant: Variant, arch: str) -> tuple[str, ...]:
    """What NVRTC compiles a configuration with: its options, CuPy's additions, ptxas's
    report (no change to the binary) and the architecture (the variant's own where it
    names one)."""
    target = () if variant.arch else (f"--gpu-architecture={arch}",)
    return (*options, *CUPY_DEFAULTS, *REPORT_OPTIONS, *target)


@functools.cache
def _index(path: str) -> dict:
    return read_json(Path(path)) if Path(path).is_file() else {}


def _given_index(arch: str | None, capability: str) -> tuple[str, dict, str]:
    """The index this job was given (its file, its contents), or why it has none for a
    build of ``arch`` (None: this GPU's) on a GPU of compute ``capability`` ('90')."""
    named = os.environ.get(COMPILED_ENV)
    if not named:
        return "", {}, "this job was given no compile stage index"
    index = _index(named)
    wanted = arch or f"sm_{capability}"
    if arch is None and index.get("arch") != wanted:
        return named, {}, f"the compile stage built for {index.get('arch')}, this GPU runs {wanted}"
    return named, index, ""


def compiled_helper(name: str, capability: str) -> Path | None:
    """The compile stage's cubin of one of HELPERS for this GPU, where this job has one of
    its source as it is now (the compile stage does not run again when only a helper's
    source changes: its index may name the build of an older one)."""
    index = _given_index(None, capability)[1]
    cubin = index.get("helpers", {}).get(name)
    if not cubin or not Path(cubin).is_file():
        return None
    current = helper_build(name, index["arch"], index.get("nvrtc", ""))[2]
    return Path(cubin) if Path(cubin).name == current else None


def compiled_cubin(
    options: Sequence[str], variant: Variant, capability: str
) -> tuple[Path | None, str]:
    """The compile stage's cubin of a configuration for a GPU of compute ``capability``
    ('90'), where the index this job was given has one; else None and why not."""
    named, index, why = _given_index(variant.arch, capability)
    if why:
        return None, why
    key, cubins = build_key(variant, options), index.get("cubins", {})
    cubin = cubins.get(key)
    if not cubin:
        return None, (f"the compile stage's index {named} has no build {key} "
                      f"({len(cubins)} builds)")  # fmt: skip
    if not Path(cubin).is_file():
        return None, f"the compile stage's cubin {cubin} is missing"
    return Path(cubin), ""
