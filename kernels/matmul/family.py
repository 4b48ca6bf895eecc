"""matmul: the float64 reference and the library baselines.

Functions take arrays of whichever module created them (NumPy or CuPy), so the
reference is tested on the CPU and runs on the GPU in the harness.
"""

from __future__ import annotations

from typing import Any


def reference(A: Any, B: Any) -> dict[str, Any]:
    """C = A·B in the precision of the inputs (the harness passes float64)."""
    return {"C": A @ B}


def cublas_matmul(A: Any, B: Any, C: Any, M: int, N: int, K: int) -> None:
    """cuBLAS through cupy.matmul, writing into the harness's (poisoned) output."""
    import cupy

    cupy.matmul(A, B, out=C)
