"""The Triton rung's kernel (imported by family.py's triton_matmul where Triton is
installed; planning never imports it).

Each program computes one BLOCK_M × BLOCK_N tile of C. It walks K in BLOCK_K steps, loading
a tile of A and of B (masked at the edges, zeros outside) and accumulating their product
in fp32 with tl.dot, which Triton lowers to the GPU's tensor-core instructions (wgmma on
the H100) with STAGES loads in flight (software pipelining through shared memory). Tiles
are walked in groups of GROUP_M tile rows, so that the programs running together share B's
column tiles in L2 (the swizzle of the ladder's wgmma_fp16 and of cuBLAS).
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl


@triton.jit
def gemm_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):  # fmt: skip
    program = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (program // per_group) * GROUP_M
    rows = tl.minimum(tiles_m - first_m, GROUP_M)  # the last group may be shorter
    tile_m = first_m + (program % per_group) % rows
    tile_n = (program % per_group) // rows
    offs_m = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, BLOCK_K)):
        left = K - step * BLOCK_K
        a_tile = tl.load(a, mask=(offs_m[:, None] < M) & (offs_k[None, :] < left), other=0.0)
        b_tile = tl.load(b, mask=(offs_k[:, None] < left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a_tile, b_tile, acc)
        a += BLOCK_K * stride_ak
        b += BLOCK_K * stride_bk
    c = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    inside = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=inside)


def matmul(A: Any, B: Any, C: Any, tiles: tuple[int, int, int, int], warps: int,
           stages: int) -> None:  # fmt: skip
    """C = A·B for PyTorch tensors on the GPU (the harness's arrays shared through
    DLPack), launched on PyTorch's current stream: the legacy default stream, which is
    CuPy's too, so that the launch is ordered with the harness's events."""
    block_m, block_n, block_k, group_m = tiles
    M, K = A.shape
    N = B.shape[1]
    grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n),)
    gemm_kernel[grid](A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                      C.stride(0), C.stride(1), BLOCK_M=block_m, BLOCK_N=block_n,
                      BLOCK_K=block_k, GROUP_M=group_m, num_warps=warps,
                      num_stages=stages)  # fmt: skip
