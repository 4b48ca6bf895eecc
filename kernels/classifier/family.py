"""classifier: the float64 reference and the cuBLAS baseline.

Functions take arrays of whichever module created them (NumPy or CuPy), so the
reference is tested on the CPU and runs on the GPU in the harness.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def reference(W: Any, x: Any) -> dict[str, Any]:
    """y = W·x in the precision of the inputs (the harness passes float64)."""
    return {"y": W @ x}


_ONE, _ZERO = np.ones(1, np.float32), np.zeros(1, np.float32)


def cublas_classifier(W: Any, x: Any, y: Any, Ni: int, Nn: int, B: int) -> None:
    """cuBLAS: SGEMV for a single input vector, SGEMM for a batch, into the harness's
    (poisoned) output."""
    import cupy
    from cupy_backends.cuda.libs import cublas

    if B > 1:
        cupy.matmul(W, x, out=y)
        return
    # cuBLAS is column-major: row-major W (Nn×Ni) is the column-major Ni×Nn matrix Wᵀ, so
    # y = W·x is SGEMV with that matrix transposed (m = Ni, n = Nn, lda = Ni)
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setStream(handle, cupy.cuda.get_current_stream().ptr)
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    cublas.sgemv(handle, cublas.CUBLAS_OP_T, int(Ni), int(Nn), _ONE.ctypes.data, W.data.ptr,
                 int(Ni), x.data.ptr, 1, _ZERO.ctypes.data, y.data.ptr, 1)  # fmt: skip
