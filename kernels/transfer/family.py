"""transfer: the reference and the steps of an offloaded matrix product.

Each step is a library call on the harness's arrays: host arrays are NumPy (pageable or
page-locked, as the variant's host_memory says), device ones CuPy; copies are issued on
the current stream, so the CUDA events around each step time it.
"""

from __future__ import annotations

from typing import Any


def reference(A: Any, B: Any) -> dict[str, Any]:
    """C = A·B (the harness passes float64 copies of the host inputs)."""
    return {"C": A @ B}


def copy_in(A: Any, B: Any, A_dev: Any, B_dev: Any) -> None:
    """Host → device: A and B into their device buffers."""
    A_dev.set(A)
    B_dev.set(B)


def gemm(A_dev: Any, B_dev: Any, C_dev: Any) -> None:
    """C = A·B on the device with cuBLAS SGEMM."""
    import cupy

    cupy.matmul(A_dev, B_dev, out=C_dev)


def copy_out(C_dev: Any, C: Any) -> None:
    """Device → host: the product into the host output."""
    C_dev.get(out=C)
