// tiled_coarse_blockcopy: tiled_coarse with report 000's "Different Copying Scheme"
// (6b9d4f5) for the A tile: rather than the element at its position in each block-sized part
// of the tile, each thread copies a consecutive piece of its own, element by element. The
// row-major A tile is cut into BX·BY runs of ceil(TILEDIM_M·TILEDIM_K / (BX·BY)) consecutive
// elements, one per thread; at the defaults 8, half a row of the tile. (The report's wording,
// a TILESCALE_M × TILEDIM_N block per thread, is more than a thread's share of the tile; the
// share is what is taken.) At each step a warp's loads lie a run apart: at the defaults 16
// rows, 32 sectors instead of tiled_coarse's 4; the shared-memory stores conflict 2-way, as
// tiled_coarse's do, so the difference is the global loads'. B is copied as in tiled_coarse,
// as in the report's benchmark. The report found the scheme slower and guessed that the
// hardware merges parallel threads' neighbouring loads better than one thread's sequential
// ones: coalescing. Everything else is tiled_coarse's body (tiled_coarse.cuh).
// Tunables and restrictions: tiled_coarse's (like: tiled_coarse.cu).
// Analytic DRAM traffic: tiled_coarse's, 4·(M·K·ceil(N/TILEDIM_N) + K·N·ceil(M/TILEDIM_M) +
// M·N) bytes; the copy order changes the sectors L1 and L2 serve per request, not which bytes
// come from DRAM.
/*---
kernel: matmul_tiled_coarse_blockcopy
idea: "tiled_coarse with each thread copying its own consecutive run of the A tile (report 000's other copying scheme): a warp's loads a run apart, uncoalesced"
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
matmul_tiled_coarse_blockcopy(const float* __restrict__ A, const float* __restrict__ B,
                              float* __restrict__ C, int M, int N, int K) {
  tiled_coarse<CopyOrder::kChunks, CopyOrder::kRows>(A, B, C, M, N, K);
}
