// tiled_coarse: the block computes a TILEDIM_M×TILEDIM_N tile of C with BX×BY threads, each
// thread TILESCALE_M×TILESCALE_N outputs held in registers (TILESCALE_M = TILEDIM_M/BY
// consecutive rows, TILESCALE_N = TILEDIM_N/BX columns BX apart). Per TILEDIM_K step the
// whole block copies the A and B tiles to shared memory with row-wise coalesced loops,
// zero-padding what lies outside the matrices. With PAD_LAST_ONLY=1 only the last, partial
// K tile checks K; full tiles check only M (A) and N (B). From report 000. The body is in
// tiled_coarse.cuh, shared with the report's other copy schemes (tiled_coarse_colcopy,
// tiled_coarse_blockcopy); here both tiles are copied row by row (CopyOrder::kRows).
// Tunables: TILEDIM_M, TILEDIM_N, TILEDIM_K, BX, BY, PAD_LAST_ONLY.
// Analytic DRAM traffic without reuse through L2 across blocks: A is read N/TILEDIM_N times
// and B M/TILEDIM_M times:
// 4·(M·K·ceil(N/TILEDIM_N) + K·N·ceil(M/TILEDIM_M) + M·N) bytes.
// At M=N=K=2049 all threads compute their whole TILESCALE_M×TILESCALE_N outputs over
// zero-padded tiles: M padded to 2176 (TILEDIM_M 128), N to 2112 (TILEDIM_N 64) or 2176
// (128), K to 2064 (TILEDIM_K 16): executed_flops / flops = 1.103 (defaults) or 1.136
// (128×128×16).
/*---
kernel: matmul_tiled_coarse
idea: rectangular shared-memory tiles, block geometry decoupled from the tile, several outputs per thread in registers
params:
  TILEDIM_M: 128
  TILEDIM_N: 64
  TILEDIM_K: 16
  BX: 16
  BY: 16
  PAD_LAST_ONLY: 1
block: BX, BY
grid: ceil_div(N, TILEDIM_N), ceil_div(M, TILEDIM_M)
static_smem: TILEDIM_K * (TILEDIM_M + 4) * 4 + TILEDIM_K * TILEDIM_N * 4
executed_flops: 2 * round_up(M, TILEDIM_M) * round_up(N, TILEDIM_N) * round_up(K, TILEDIM_K)
model_dram_bytes: (M * K * ceil_div(N, TILEDIM_N) + K * N * ceil_div(M, TILEDIM_M)) * in_bytes + M * N * out_bytes
restrictions:
  - TILEDIM_M >= 1 and TILEDIM_N >= 1 and TILEDIM_K >= 1 and BX >= 1 and BY >= 1
  - TILEDIM_M % BY == 0 and TILEDIM_N % BX == 0
  - PAD_LAST_ONLY == 0 or PAD_LAST_ONLY == 1
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
matmul_tiled_coarse(const float* __restrict__ A, const float* __restrict__ B,
                    float* __restrict__ C, int M, int N, int K) {
  tiled_coarse<CopyOrder::kRows, CopyOrder::kRows>(A, B, C, M, N, K);
}
