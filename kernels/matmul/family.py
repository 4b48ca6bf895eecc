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


def cublas_tf32_matmul(A: Any, B: Any, C: Any, M: int, N: int, K: int) -> None:
    """cuBLAS with float32 storage and TF32 tensor-core arithmetic."""
    from ncuflow.tf32 import matmul_tf32

    matmul_tf32(A, B, C)


def host_matmul(A: Any, B: Any, C: Any, M: int, N: int, K: int) -> None:
    """NumPy's BLAS on the host (NumPy arrays in and out)."""
    import numpy

    numpy.matmul(A, B, out=C)
