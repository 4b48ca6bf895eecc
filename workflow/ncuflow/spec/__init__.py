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

Every key is in workflow/schemas/family.schema.yaml and variant.schema.yaml, and in the
reference generated from them (docs/reference/kernels.md).
"""

from ..errors import SpecError
from .family import Family, available_families, load_family, load_variant
from .fields import condition, scalar_value
from .model import (
    BUILTIN_NAMES,
    C_TYPES,
    DEVICE_FACTS,
    DTYPE_BYTES,
    FLOAT_DTYPES,
    Check,
    Figure,
    Launch,
    Scalar,
    Tensor,
    TensorMap,
    Variant,
    leading_dim,
    pad_step,
    storage_dtype,
)
from .sources import local_includes

__all__ = [
    "BUILTIN_NAMES", "C_TYPES", "DEVICE_FACTS", "DTYPE_BYTES", "FLOAT_DTYPES", "Check", "Family",
    "Figure", "Launch", "Scalar", "SpecError", "Tensor", "TensorMap", "Variant",
    "available_families", "condition", "leading_dim", "load_family", "load_variant",
    "local_includes", "pad_step", "scalar_value", "storage_dtype",
]  # fmt: skip
