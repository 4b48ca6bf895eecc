// tiled_sync_each_step: the fine-grained tiling report 001 asks "why didn't we do so?" about
// (its "Synchronization Overhead" slide). A TILE×TILE block computes a TILE×TILE tile of C,
// one output per thread, as smem_tiled does, but it stages only what one step along K needs:
// one column of the A tile and one row of the B tile, 2·TILE floats instead of 2·TILE².
// Per k only thread rows 0 (the row of B, coalesced) and 1 (the column of A, one float per
// row of A, TILE rows apart) load, the other rows idle (divergence); then a barrier, one
// multiply-add per thread, and a barrier before the next step overwrites the vectors: two
// barriers per multiply-add, the overhead the slide names. Tunable TILE (at most 32: a block
// has at most 1024 threads).
// Analytic DRAM traffic without reuse through L2 across blocks, if L1 keeps a block's TILE
// sectors of A for the 8 steps that use each: A is read once per block column and B once
// per block row: 4·(M·K·ceil(N/TILE) + K·N·ceil(M/TILE) + M·N) bytes.
// Elements of A and B outside the matrices are staged as zeros, so any M, N, K works; the
// loop runs over K exactly, but threads outside C still compute (their sums are dropped): at
// M=N=K=2049, M and N are padded to 2064 (TILE 16) or 2080 (32): executed_flops / flops =
// 1.015 (TILE 16) or 1.030 (TILE 32).
/*---
kernel: matmul_tiled_sync_each_step
idea: TILE×TILE tile, one output per thread; per k two thread rows stage a column of A and a row of B, two barriers per multiply-add
params:
  TILE: 16
block: TILE, TILE
grid: ceil_div(N, TILE), ceil_div(M, TILE)
static_smem: 2 * TILE * 4
executed_flops: 2 * round_up(M, TILE) * round_up(N, TILE) * K
model_dram_bytes: (M * K * ceil_div(N, TILE) + K * N * ceil_div(M, TILE)) * in_bytes + M * N * out_bytes
restrictions:
  # thread rows 0 and 1 load
  - TILE >= 2
---*/

#ifndef TILE
#define TILE 16
#endif

static_assert(TILE >= 2, "thread rows 0 and 1 load: TILE must be at least 2");

extern "C" __global__ void __launch_bounds__(TILE * TILE)
matmul_tiled_sync_each_step(const float* __restrict__ A, const float* __restrict__ B,
                            float* __restrict__ C, int M, int N, int K) {
  // a_col[i] = A[row0 + i][k], b_row[j] = B[k][col0 + j]. A warp reads one or a few a_col
  // elements (broadcasts) and consecutive b_row elements: no bank conflicts.
  __shared__ float a_col[TILE];
  __shared__ float b_row[TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
  // Thread row 0 loads B at column col0 + tx, thread row 1 A at row row0 + tx.
  const bool b_inside = col0 + tx < N;
  const bool a_inside = row0 + tx < M;
  const float* b_src = B + (b_inside ? col0 + tx : 0);
  const float* a_src = A + static_cast<size_t>(a_inside ? row0 + tx : 0) * K;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    if (ty == 0) {
      b_row[tx] = b_inside ? b_src[static_cast<size_t>(k) * N] : 0.0f;
    } else if (ty == 1) {
      a_col[tx] = a_inside ? a_src[k] : 0.0f;
    }
    __syncthreads();
    acc = fmaf(a_col[ty], b_row[tx], acc);
    // The next step overwrites both vectors.
    __syncthreads();
  }
  const int row = row0 + ty, col = col0 + tx;
  if (row < M && col < N) C[static_cast<size_t>(row) * N + col] = acc;
}
