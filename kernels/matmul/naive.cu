// naive: one thread per element of C. Each thread walks a row of A and a column of B in
// global memory, so every operand is fetched K times in total from the cache hierarchy;
// only the caches stand between this kernel and 2·M·N·K·4 bytes of traffic.
// From reports 003 and 004 (their first rung).
// Analytic DRAM traffic: with perfect caching 4·(M·K + K·N + M·N) bytes; with no reuse in
// any cache 4·(2·M·N·K + M·N). Without reuse through L2 across blocks, L1 serving each
// block's BLOCK_Y rows of A and BLOCK_X columns of B (its warps walk them together along K):
// 4·(M·K·ceil(N/BLOCK_X) + K·N·ceil(M/BLOCK_Y) + M·N) bytes (model_dram_bytes).
// At M=N=K=2049 nothing is padded: threads outside C return before the loop, so
// executed_flops / flops = 1.000.
/*---
kernel: matmul_naive
idea: one thread per C element; A and B read straight from global memory
params:
  BLOCK_X: 16
  BLOCK_Y: 16
block: BLOCK_X, BLOCK_Y
grid: ceil_div(N, BLOCK_X), ceil_div(M, BLOCK_Y)
executed_flops: 2 * M * N * K
model_dram_bytes: (M * K * ceil_div(N, BLOCK_X) + K * N * ceil_div(M, BLOCK_Y)) * in_bytes + M * N * out_bytes
---*/

#ifndef BLOCK_X
#define BLOCK_X 16
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 16
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
matmul_naive(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
             int M, int N, int K) {
  // threadIdx.x walks columns so that a warp reads consecutive elements of B and writes
  // consecutive elements of C (coalesced); the A element is the same for the whole row.
  const int col = blockIdx.x * BLOCK_X + threadIdx.x;
  const int row = blockIdx.y * BLOCK_Y + threadIdx.y;
  if (row >= M || col >= N) return;
  const float* a = A + static_cast<size_t>(row) * K;
  const float* b = B + col;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    acc = fmaf(a[k], b[static_cast<size_t>(k) * N], acc);
  }
  C[static_cast<size_t>(row) * N + col] = acc;
}
