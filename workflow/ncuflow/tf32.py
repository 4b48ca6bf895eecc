"""cuBLAS matrix products in TF32 through CuPy (used by the matmul family's cublas_tf32
baseline and by the TF32 tensor ceiling).

CuPy's TF32 switch (CUPY_TF32=1) is read once per process; its compute-type setting is
what that switch sets, so it is set here for one call and restored afterwards."""

from __future__ import annotations

from typing import Any


def matmul_tf32(a: Any, b: Any, out: Any) -> None:
    """out = a @ b for float32 CuPy arrays, with TF32 tensor-core arithmetic."""
    import cupy
    import numpy
    from cupy._core import _routines_linalg as linalg

    previous = linalg.get_compute_type(numpy.float32)
    linalg.set_compute_type(numpy.float32, linalg.COMPUTE_TYPE_TF32)
    try:
        cupy.matmul(a, b, out=out)
    finally:
        linalg.set_compute_type(numpy.float32, previous)
