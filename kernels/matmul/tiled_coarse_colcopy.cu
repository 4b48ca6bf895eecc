// tiled_coarse_colcopy: tiled_coarse as report 000 had it before its "Memory Coalescing"
// commit (726d9b6): the tiles are copied to shared memory column by column, for A and for B,
// so consecutive threads take consecutive rows of a tile column, a matrix row apart in
// global memory. The report found that switching to row-by-row copies (tiled_coarse) doubled
// its performance; this variant measures the difference. At the defaults a warp's load of A
// touches 32 rows, 32 sectors instead of tiled_coarse's 4 (2 rows × 16 k), and of B 16 rows
// (16 k × 2 columns), 16 sectors instead of 4. The shared-memory stores change too: those of
// A (consecutive m, k-major tile) become conflict-free, those of B (consecutive k, TILEDIM_N
// floats apart) 16-way conflicts; ncu's sectors per request and shared store conflicts tell
// the two costs apart. Everything else is tiled_coarse's body (tiled_coarse.cuh).
// Tunables and restrictions: tiled_coarse's (like: tiled_coarse.cu).
// Analytic DRAM traffic: tiled_coarse's, 4·(M·K·ceil(N/TILEDIM_N) + K·N·ceil(M/TILEDIM_M) +
// M·N) bytes; the copy order changes the sectors L1 and L2 serve per request, not which bytes
// come from DRAM.
/*---
kernel: matmul_tiled_coarse_colcopy
idea: "tiled_coarse with column-by-column tile copies (report 000 before its coalescing commit): consecutive threads take consecutive rows, uncoalesced loads"
like: tiled_coarse.cu
block: BX, BY
grid: ceil_div(N, TILEDIM_N), ceil_div(M, TILEDIM_M)
static_smem: TILEDIM_K * (TILEDIM_M + 4) * 4 + TILEDIM_K * TILEDIM_N * 4
executed_flops: 2 * round_up(M, TILEDIM_M) * round_up(N, TILEDIM_N) * round_up(K, TILEDIM_K)
model_dram_bytes: (M * K * ceil_div(N, TILEDIM_N) + K * N * ceil_div(M, TILEDIM_M)) * in_bytes + M * N * out_bytes
---*/

#ifndef TILEDIM_M
#define TILEDIM_M 128
#endif
#ifndef TILEDIM_N
#define TILEDIM_N 64
#endif
#ifndef TILEDIM_K
#define TILEDIM_K 16
#endif
#ifndef BX
#define BX 16
#endif
#ifndef BY
#define BY 16
#endif
#ifndef PAD_LAST_ONLY
#define PAD_LAST_ONLY 1
#endif

#include "tiled_coarse.cuh"

extern "C" __global__ void __launch_bounds__(kThreads)
matmul_tiled_coarse_colcopy(const float* __restrict__ A, const float* __restrict__ B,
                            float* __restrict__ C, int M, int N, int K) {
  tiled_coarse<CopyOrder::kColumns, CopyOrder::kColumns>(A, B, C, M, N, K);
}
