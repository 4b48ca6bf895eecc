// strided_read: naive's mirror image. threadIdx.x walks the rows of A, so a warp writes 32
// consecutive floats of a row of B (coalesced) and reads them down a column of A, 32 floats
// N·4 bytes apart: each load touches 32 cache lines. The BLOCK_Y warps of a block read
// neighbouring columns, so the lines a warp fetches are read again by the next warps: with
// BLOCK_Y = 32 every byte of a fetched sector is used from L1, which then does the work
// (32 wavefronts per load instruction): a kernel bound by L1 wavefronts rather than by DRAM
// or L2. Bounds checks make any M, N work.
// Tunables: BLOCK_X (rows of A per block), BLOCK_Y (columns of A per block).
// Analytic DRAM traffic: A read once and B written once, 4·M·N + 4·M·N bytes, as long as
// L1 and L2 keep the lines between the warps that share them.
/*---
kernel: transpose_strided_read
idea: one thread per element; strided reads of A served from L1, coalesced writes of B
params:
  BLOCK_X: 32
  BLOCK_Y: 32
block: BLOCK_X, BLOCK_Y
grid: ceil_div(M, BLOCK_X), ceil_div(N, BLOCK_Y)
restrictions:
  - BLOCK_X >= 1 and BLOCK_Y >= 1
  - BLOCK_X * BLOCK_Y <= 1024
---*/

#ifndef BLOCK_X
#define BLOCK_X 32
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 32
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
transpose_strided_read(const float* __restrict__ A, float* __restrict__ B, int M, int N) {
  const int row = blockIdx.x * BLOCK_X + threadIdx.x;  // row of A, column of B
  const int col = blockIdx.y * BLOCK_Y + threadIdx.y;  // column of A, row of B
  if (row >= M || col >= N) return;
  B[static_cast<size_t>(col) * M + row] = A[static_cast<size_t>(row) * N + col];
}
