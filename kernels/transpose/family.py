"""transpose: the reference and the library baseline.

Functions take arrays of whichever module created them (NumPy or CuPy), so the
reference is tested on the CPU and runs on the GPU in the harness.
"""

from __future__ import annotations

from typing import Any


def reference(A: Any) -> dict[str, Any]:
    """B = Aᵀ as a contiguous (row-major) array, not a strided view of A."""
    return {"B": A.T.copy()}


def cupy_transpose(A: Any, B: Any, M: int, N: int) -> None:
    """CuPy's elementwise copy of the transposed view of A into the harness's output."""
    import cupy

    cupy.copyto(B, A.T)
