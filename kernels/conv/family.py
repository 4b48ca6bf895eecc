"""conv: the float64 reference and the cuDNN baseline.

The reference is an independent formulation, not any kernel's algorithm: for each filter
tap (ky, kx), every output pixel gains the tap's Nn×Ni weight matrix applied to the input
shifted by (ky, kx), as one tensor contraction over the channels. Functions take arrays
of whichever module created them (NumPy or CuPy): the reference is tested on the CPU and
runs on the GPU in the harness.
"""

from __future__ import annotations

from typing import Any


def _module(array: Any) -> Any:
    """cupy for an array in device memory, numpy otherwise."""
    if hasattr(array, "__cuda_array_interface__"):
        import cupy

        return cupy
    import numpy

    return numpy


def reference(x: Any, w: Any, Nx: int, Ny: int, Kx: int, Ky: int) -> dict[str, Any]:
    """y = Σ over taps of w[:, :, ky, kx] contracted with x shifted by (ky, kx)."""
    xp = _module(x)
    y = None
    for ky in range(Ky):
        for kx in range(Kx):
            shifted = x[:, :, ky : ky + Ny, kx : kx + Nx]  # B, Ni, Ny, Nx
            # (Nn, Ni) · (B, Ni, Ny, Nx) over Ni → (Nn, B, Ny, Nx)
            term = xp.tensordot(w[:, :, ky, kx], shifted, axes=([1], [1]))
            y = term if y is None else y + term
    return {"y": xp.ascontiguousarray(y.transpose(1, 0, 2, 3))}


def cudnn_conv2d(x: Any, w: Any) -> dict[str, Any]:
    """cuDNN through PyTorch's conv2d on the harness's arrays (shared through DLPack, no
    copy), in float32 arithmetic: TF32, which PyTorch allows for convolutions by default,
    is switched off so that it computes what the other variants compute. cuDNN writes its
    own output, which the harness checks in place of the poisoned one."""
    import cupy
    import torch

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True  # the first (checked, untimed) call picks the algorithm
    out = torch.nn.functional.conv2d(torch.from_dlpack(x), torch.from_dlpack(w))
    return {"y": cupy.from_dlpack(out)}
