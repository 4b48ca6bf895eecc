// smem_tiled: the block computes a TILE×TILE tile of C, one output per thread (STSO).
// For each step along K the block stages a TILE×TILE tile of A and one of B in shared
// memory, each thread loading one element of each, then every thread reads TILE values
// of each tile from shared memory. Tiles that stick out of the matrices are zero-padded,
// so any M, N, K works. From reports 001, 003 and 004.
// Analytic DRAM traffic without help from L2: A is read N/TILE times and B M/TILE times:
// 4·(M·K·ceil(N/TILE) + K·N·ceil(M/TILE) + M·N) bytes.
// At M=N=K=2049 every thread of the edge blocks multiplies zero-padded tiles: M, N and K are
// padded to a multiple of TILE (2064 for TILE 16, 2080 for 32): executed_flops / flops =
// 1.022 (TILE 16) or 1.046 (TILE 32).
/*---
kernel: matmul_smem_tiled
idea: TILE×TILE tiles of A and B staged in shared memory; one output per thread
params:
  TILE: 16
block: TILE, TILE
grid: ceil_div(N, TILE), ceil_div(M, TILE)
static_smem: 2 * TILE * TILE * 4
executed_flops: 2 * round_up(M, TILE) * round_up(N, TILE) * round_up(K, TILE)
model_dram_bytes: (M * K * ceil_div(N, TILE) + K * N * ceil_div(M, TILE)) * in_bytes + M * N * out_bytes
restrictions:
  - TILE >= 1
---*/

#ifndef TILE
#define TILE 16
#endif

extern "C" __global__ void __launch_bounds__(TILE * TILE)
matmul_smem_tiled(const float* __restrict__ A, const float* __restrict__ B,
                  float* __restrict__ C, int M, int N, int K) {
  // No padding needed: in the inner loop a warp reads one a_tile element per row (a
  // broadcast) and consecutive b_tile elements (distinct banks).
  __shared__ float a_tile[TILE][TILE];
  __shared__ float b_tile[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    const int ka = k0 + tx, kb = k0 + ty;
    a_tile[ty][tx] = (row < M && ka < K) ? A[static_cast<size_t>(row) * K + ka] : 0.0f;
    b_tile[ty][tx] = (kb < K && col < N) ? B[static_cast<size_t>(kb) * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) {
      acc = fmaf(a_tile[ty][k], b_tile[k][tx], acc);
    }
    __syncthreads();
  }
  if (row < M && col < N) C[static_cast<size_t>(row) * N + col] = acc;
}
