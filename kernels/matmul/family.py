"""matmul: the float64 reference and the library baselines.

Functions take arrays of whichever module created them (NumPy or CuPy), so the
reference is tested on the CPU and runs on the GPU in the harness.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from types import ModuleType
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


@functools.cache
def _triton_gemm() -> ModuleType:
    """triton_gemm.py beside this file, imported where the Triton rung runs (it imports
    Triton, which planning and the check on a CPU need not have)."""
    path = Path(__file__).with_name("triton_gemm.py")
    spec = importlib.util.spec_from_file_location("ncuflow_matmul_triton_gemm", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def triton_matmul(
    A: Any, B: Any, C: Any, M: int, N: int, K: int, BLOCK_M: int, BLOCK_N: int,
    BLOCK_K: int, GROUP_M: int, WARPS: int, STAGES: int,
) -> None:  # fmt: skip
    """The Triton rung (triton_gemm.py) on the harness's arrays, shared with PyTorch
    through DLPack (no copy), writing into the harness's (poisoned) output."""
    import torch

    shared = [torch.from_dlpack(x) for x in (A, B, C)]
    _triton_gemm().matmul(*shared, (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M), WARPS, STAGES)
