// stmo ("single thread, multiple outputs"): the block computes a BLOCK_SIZE×BLOCK_SIZE tile of
// C with BLOCK_SIZE×BLOCK_SIZE/OP_PER_THREAD threads; each thread computes OP_PER_THREAD
// elements of one column, rows spaced STRIDE = BLOCK_SIZE/OP_PER_THREAD apart, so a warp
// still covers consecutive columns. A and B tiles of BLOCK_SIZE×BLOCK_SIZE are staged in shared
// memory (zero-padded), each thread loading OP_PER_THREAD elements of each. From report 004.
// The body is in stmo.cuh, shared with stmo_transposed_b (the report's transposed B tile);
// here the B tile lies as in B (BLayout::kRows).
// Tunables: BLOCK_SIZE, OP_PER_THREAD.
// Analytic DRAM traffic without reuse through L2 across blocks: A is read N/BLOCK_SIZE times
// and B M/BLOCK_SIZE times: 4·(M·K·ceil(N/BLOCK_SIZE) + K·N·ceil(M/BLOCK_SIZE) + M·N) bytes.
// At M=N=K=2049 all threads compute over zero-padded tiles: M, N and K are padded to a
// multiple of BLOCK_SIZE (2064 for 16, 2080 for 32): executed_flops / flops = 1.022
// (BLOCK_SIZE 16) or 1.046 (BLOCK_SIZE 32).
/*---
kernel: matmul_stmo
idea: square shared-memory tiles; each thread computes OP_PER_THREAD outputs of one column of the tile
params:
  BLOCK_SIZE: 16
  OP_PER_THREAD: 4
block: BLOCK_SIZE, BLOCK_SIZE // OP_PER_THREAD
grid: ceil_div(N, BLOCK_SIZE), ceil_div(M, BLOCK_SIZE)
static_smem: 2 * BLOCK_SIZE * BLOCK_SIZE * 4
executed_flops: 2 * round_up(M, BLOCK_SIZE) * round_up(N, BLOCK_SIZE) * round_up(K, BLOCK_SIZE)
model_dram_bytes: (M * K * ceil_div(N, BLOCK_SIZE) + K * N * ceil_div(M, BLOCK_SIZE)) * in_bytes + M * N * out_bytes
restrictions:
  - BLOCK_SIZE >= 1 and OP_PER_THREAD >= 1
  - BLOCK_SIZE % OP_PER_THREAD == 0
---*/

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 16
#endif
#ifndef OP_PER_THREAD
#define OP_PER_THREAD 4
#endif

#include "stmo.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE * kStride)
matmul_stmo(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
            int M, int N, int K) {
  stmo<BLayout::kRows>(A, B, C, M, N, K);
}
