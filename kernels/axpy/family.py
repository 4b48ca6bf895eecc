"""axpy: the float64 reference and the library baselines.

Functions take arrays of whichever module created them (NumPy or CuPy): the host variant
runs on NumPy arrays, the CuPy one on device arrays.
"""

from __future__ import annotations

import functools
from typing import Any


def reference(a: float, x: Any, y: Any) -> dict[str, Any]:
    """y's final values: a·x + y, from y's drawn values (in float64)."""
    return {"y": a * x + y}


def numpy_axpy(a: Any, x: Any, y: Any, n: int) -> None:
    """NumPy's in-place update on the host: a·x into a temporary, then added into y."""
    y += a * x


@functools.cache
def _cupy_kernel() -> Any:
    import cupy

    # y is an output that the operation also reads: CuPy updates it in place
    return cupy.ElementwiseKernel("float32 a, float32 x", "float32 y", "y = a * x + y",
                                  "ncuflow_cupy_axpy")  # fmt: skip


def cupy_axpy(a: Any, x: Any, y: Any, n: int) -> None:
    """CuPy's elementwise kernel, one thread per element, on the current stream."""
    _cupy_kernel()(a, x, y)
