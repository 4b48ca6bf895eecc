// naive: one thread per element. threadIdx.x walks the columns of A, so a warp reads 32
// consecutive floats of a row of A (coalesced: 128 bytes, four whole 32-byte sectors) and
// writes them down a column of B, 32 floats M·4 bytes apart: 32 sectors with 4 useful bytes
// each (strided). Bounds checks make any M, N work. The first rung of the transpose ladder.
// Tunables: BLOCK_X (columns of A per block), BLOCK_Y (rows of A per block).
// Analytic DRAM traffic: A is read once, 4·M·N bytes. Without help from L2 every 4-byte
// store of B costs a whole 32-byte sector: 4·M·N + 32·M·N bytes (model_dram_bytes). The
// block's BLOCK_Y warps write consecutive floats of the same rows of B, so an L2 that merges
// their partial sectors before writing back brings this down to 8·M·N (min_bytes): the gap
// between the two is what the L2 traffic (lts__t_bytes) shows and DRAM does not.
/*---
kernel: transpose_naive
idea: one thread per element; coalesced reads of A, strided writes of B
params:
  BLOCK_X: 32
  BLOCK_Y: 8
block: BLOCK_X, BLOCK_Y
grid: ceil_div(N, BLOCK_X), ceil_div(M, BLOCK_Y)
model_dram_bytes: M * N * in_bytes + M * N * 32
restrictions:
  - BLOCK_X >= 1 and BLOCK_Y >= 1
---*/

#ifndef BLOCK_X
#define BLOCK_X 32
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 8
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
transpose_naive(const float* __restrict__ A, float* __restrict__ B, int M, int N) {
  const int col = blockIdx.x * BLOCK_X + threadIdx.x;  // column of A, row of B
  const int row = blockIdx.y * BLOCK_Y + threadIdx.y;  // row of A, column of B
  if (row >= M || col >= N) return;
  B[static_cast<size_t>(col) * M + row] = A[static_cast<size_t>(row) * N + col];
}
