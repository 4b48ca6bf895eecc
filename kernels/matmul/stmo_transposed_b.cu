// stmo_transposed_b: stmo with the B tile stored transposed in shared memory, b_tile[j][k] =
// B[k0 + k][col0 + j] (report 004, 1.4.4 "Transpose Matrix"). The report reasoned as on a
// CPU: a thread walks a row of a_tile, so let it walk a row of b_tile too; it found no
// noticeable improvement. Everything else is stmo's body (stmo.cuh): the same coalesced
// global loads, the same products in the same order, so a difference is the layout's alone.
// On a GPU the warp's pattern counts, not the thread's. stmo reads b_tile[k][tx], a row: a
// warp's columns are consecutive floats, one wavefront (thread rows get a broadcast).
// Transposed, the warp reads a column, lanes BLOCK_SIZE floats apart. The tile is left
// unpadded, as the report had it, to measure its trick as it was:
// - a thread's k now runs along a row, so ptxas fuses 4 k of B into one 128-bit load (sm_90,
//   every tunable set tried): a quarter of stmo's shared load instructions for B;
// - but those loads conflict: per k a warp's B reads take up to 2 (BLOCK_SIZE 8), 2 (24), 4
//   (16) or 8 (32) wavefronts instead of stmo's 1 (8 lanes of a quarter warp share a 128-bit
//   phase; their columns fall in 4 of its 8 bank groups at 8 and 24, 2 at 16, 1 at 32), and
//   the transposing stores b_tile[tx][r] are 2-, 6-, 8- or 32-way conflicts (stmo's: none).
//   ncu shows them as shared_bank_conflicts (zero for stmo) and more shared-memory
//   wavefronts for the same FLOPs; where they dominate, as short_scoreboard and mio_throttle
//   stalls.
// Padding each row by one float (the usual fix) spreads a warp's column over distinct banks
// (stores at most 2-way) but breaks the 16-byte rows the 128-bit loads need; by 4 floats
// keeps those loads and makes them conflict-free (stores up to 4-way, at 32). Either would at
// best match stmo's 1 wavefront per k for B; only the 4-float pad keeps the fewer loads.
// At BLOCK_SIZE 24, OP_PER_THREAD 8 ptxas (CUDA 13.0) holds the 72-thread block to 64
// registers, a few short for the 4-wide B loads: 8 bytes spill (one local load per K step),
// where stmo does not spill.
// Tunables and restrictions: stmo's (like: stmo.cu). Analytic DRAM traffic and padding at
// sizes no tile divides: stmo's, 4·(M·K·ceil(N/BLOCK_SIZE) + K·N·ceil(M/BLOCK_SIZE) + M·N)
// bytes; M, N and K padded to a multiple of BLOCK_SIZE (executed_flops / flops = 1.022 at
// M=N=K=2049 for BLOCK_SIZE 16); the layout changes the shared-memory traffic only.
/*---
kernel: matmul_stmo_transposed_b
idea: stmo with the B tile transposed in shared memory, unpadded as in the report (bank conflicts)
like: stmo.cu
block: BLOCK_SIZE, BLOCK_SIZE // OP_PER_THREAD
grid: ceil_div(N, BLOCK_SIZE), ceil_div(M, BLOCK_SIZE)
static_smem: 2 * BLOCK_SIZE * BLOCK_SIZE * 4
executed_flops: 2 * round_up(M, BLOCK_SIZE) * round_up(N, BLOCK_SIZE) * round_up(K, BLOCK_SIZE)
model_dram_bytes: (M * K * ceil_div(N, BLOCK_SIZE) + K * N * ceil_div(M, BLOCK_SIZE)) * in_bytes + M * N * out_bytes
---*/

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 16
#endif
#ifndef OP_PER_THREAD
#define OP_PER_THREAD 4
#endif

#include "stmo.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE * kStride)
matmul_stmo_transposed_b(const float* __restrict__ A, const float* __restrict__ B,
                         float* __restrict__ C, int M, int N, int K) {
  stmo<BLayout::kTransposed>(A, B, C, M, N, K);
}
