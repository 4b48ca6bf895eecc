// coalesced_a: one thread per element of C, as in naive, but the block's BLOCK_Y rows of A
// are staged in shared memory one BLOCK_Y×KTILE tile at a time (KTILE = BLOCK_X, so each
// thread loads one element per step and a warp reads consecutive elements of a row of A).
// B is still read straight from global memory, coalesced along its rows. Zero padding of the
// A tile and a shorter last K step make any M, N, K work. From report 003 (its second rung).
// Tunables: BLOCK_X (columns of C per block, also KTILE), BLOCK_Y (rows of C per block).
// Analytic DRAM traffic without reuse through L2 across blocks: A is read once per block
// column, 4·M·K·ceil(N/BLOCK_X); B once per block if L1 serves the block's BLOCK_Y thread
// rows (they read the same B rows), 4·K·N·ceil(M/BLOCK_Y), else 4·M·N·K; plus 4·M·N for C.
// At M=N=K=2049 (BLOCK_X 32, BLOCK_Y 8) the edge blocks' threads outside C still compute
// (rows padded to 2056, columns to 2080) but the last K step stops at K: +0.32 GFLOP,
// executed_flops / flops = 1.019.
/*---
kernel: matmul_coalesced_a
idea: one thread per C element; A tiles staged in shared memory, B read straight from global memory
params:
  BLOCK_X: 32
  BLOCK_Y: 8
block: BLOCK_X, BLOCK_Y
grid: ceil_div(N, BLOCK_X), ceil_div(M, BLOCK_Y)
static_smem: BLOCK_Y * BLOCK_X * 4
executed_flops: 2 * round_up(M, BLOCK_Y) * round_up(N, BLOCK_X) * K
model_dram_bytes: (M * K * ceil_div(N, BLOCK_X) + K * N * ceil_div(M, BLOCK_Y)) * in_bytes + M * N * out_bytes
restrictions:
  - BLOCK_X >= 1 and BLOCK_Y >= 1
---*/

#ifndef BLOCK_X
#define BLOCK_X 32
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 8
#endif

// The A tile is as wide along K as the block is along x: one element per thread per step.
constexpr int kTileK = BLOCK_X;

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
matmul_coalesced_a(const float* __restrict__ A, const float* __restrict__ B,
                   float* __restrict__ C, int M, int N, int K) {
  // A warp reads a_tile[ty][k] for one or a few ty (a broadcast per row) and writes
  // consecutive elements of a row (distinct banks): no padding needed.
  __shared__ float a_tile[BLOCK_Y][kTileK];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * BLOCK_Y + ty;
  const int col = blockIdx.x * BLOCK_X + tx;
  // Threads outside C still stage A for their neighbours and meet every barrier; they read
  // the last column of B instead of their own, so their B reads stay in bounds, and their
  // sums are dropped.
  const float* a_row = A + static_cast<size_t>(row < M ? row : 0) * K;
  const float* b_col = B + (col < N ? col : N - 1);
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += kTileK) {
    const int ka = k0 + tx;
    a_tile[ty][tx] = (row < M && ka < K) ? a_row[ka] : 0.0f;
    __syncthreads();
    const float* b = b_col + static_cast<size_t>(k0) * N;
    if (k0 + kTileK <= K) {
#pragma unroll
      for (int k = 0; k < kTileK; ++k) {
        acc = fmaf(a_tile[ty][k], b[static_cast<size_t>(k) * N], acc);
      }
    } else {
      // The last, partial step: stop at K so that B is never read past its last row. Kept
      // rolled: unrolled, it made ptxas spill with 1024-thread blocks.
      const int k_count = K - k0;
#pragma unroll 1
      for (int k = 0; k < k_count; ++k) {
        acc = fmaf(a_tile[ty][k], b[static_cast<size_t>(k) * N], acc);
      }
    }
    __syncthreads();  // the tile is overwritten in the next step
  }
  if (row < M && col < N) C[static_cast<size_t>(row) * N + col] = acc;
}
