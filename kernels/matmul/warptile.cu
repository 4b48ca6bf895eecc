// warptile: block → warp → thread tiling. A block of (BM/WM)·(BN/WN) warps computes a BM×BN
// tile of C; a warp owns a WM×WN sub-tile, a thread TM×TN outputs spread over it as
// (TM/4)×(TN/4) groups of 4×4, so that the lanes of a warp read contiguous float4s of As
// and Bs (no bank conflicts) and share each fragment with the other lanes of its row or
// column. K-slices of BK go through a STAGES-deep cp.async pipeline (A transposed, 4-byte
// copies; B 16-byte copies when N % 4 == 0), one barrier per slice; the inner product over
// a slice is fully unrolled. MIN_BLOCKS is the __launch_bounds__ residency hint (it caps
// registers at 65536 / (threads · MIN_BLOCKS)). From reports 000 (2-D thread tiles; the
// copy/compute overlap it proposed) and 001 (register tiling).
// Tunables BM, BN, BK, WM, WN, TM, TN, STAGES, MIN_BLOCKS. Analytic DRAM traffic without
// reuse through L2 across blocks: 4·(M·K·ceil(N/BN) + K·N·ceil(M/BM) + M·N) bytes.
// At M=N=K=2049 every thread computes its whole TM×TN outputs over zero-filled tiles: M
// and N padded to 2176 (BM, BN 128), K to 2064 (BK 16): executed_flops / flops = 1.136.
/*---
kernel: matmul_warptile
idea: block, warp and thread tiles; conflict-free float4 fragments; STAGES-deep cp.async pipeline
params:
  BM: 128
  BN: 128
  BK: 16
  WM: 32
  WN: 64
  TM: 8
  TN: 8
  STAGES: 3
  MIN_BLOCKS: 2
block: (BM // WM) * (BN // WN) * 32
grid: ceil_div(N, BN), ceil_div(M, BM)
dynamic_smem: STAGES * (BK * (BM + 4) + BK * BN) * 4
smem_optin: true
executed_flops: 2 * round_up(M, BM) * round_up(N, BN) * round_up(K, BK)
model_dram_bytes: (M * K * ceil_div(N, BN) + K * N * ceil_div(M, BM)) * in_bytes + M * N * out_bytes
restrictions:
  - TM % 4 == 0
  - TN % 4 == 0
  - WM % TM == 0
  - WN % TN == 0
  - (WM // TM) * (WN // TN) == 32
  - BM % WM == 0
  - BN % WN == 0
  - BK % 8 == 0
  # A is copied by whole warps in cells of 4 rows x 8 k; the warps must divide a row of
  # cells, or the row the warps; likewise the threads for B (float4 or floats along N)
  - (BM // WM) * (BN // WN) % (BK // 8) == 0 or (BK // 8) % ((BM // WM) * (BN // WN)) == 0
  - (BM // WM) * (BN // WN) * 32 % (BN // 4) == 0 or (BN // 4) % ((BM // WM) * (BN // WN) * 32) == 0
  - (BM // WM) * (BN // WN) * 32 % (BN) == 0 or (BN) % ((BM // WM) * (BN // WN) * 32) == 0
  - STAGES >= 2
  - MIN_BLOCKS >= 1
  - (BM // WM) * (BN // WN) * 32 * MIN_BLOCKS <= 2048
  - MIN_BLOCKS * (STAGES * (BK * (BM + 4) + BK * BN) * 4 + 1024) <= 233472
  # registers per thread: TM·TN accumulators, TM + TN fragment values and about 40 more
  # (121 at 8×8, 211 at 16×8), within the 255 a thread may have and its share of the SM's
  # 64 K at MIN_BLOCKS blocks; beyond, ptxas spills hundreds of bytes and the rung runs
  # ten times slower
  - TM * TN + TM + TN + 40 <= min(255, 65536 // ((BM // WM) * (BN // WN) * 32 * MIN_BLOCKS))
---*/

#include "sgemm_tiles.cuh"

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 16
#endif
#ifndef WM
#define WM 32
#endif
#ifndef WN
#define WN 64
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 2
#endif

// Lanes of a warp along M and N; a thread's row groups lie kLanesM·4 rows apart, its
// column groups kLanesN·4 columns apart.
constexpr int kLanesM = WM / TM;
constexpr int kLanesN = WN / TN;
constexpr int kWarpsN = BN / WN;
constexpr int kThreads = (BM / WM) * kWarpsN * 32;
constexpr int kAsFloats = BK * kAsLd<BM>;
constexpr int kStageFloats = kAsFloats + BK * BN;
static_assert(TM % 4 == 0 && TN % 4 == 0, "fragments are read as float4");
static_assert(WM % TM == 0 && WN % TN == 0 && kLanesM * kLanesN == 32,
              "a warp's 32 lanes must tile the warp tile");
static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must divide the block tile");
static_assert(STAGES >= 2, "the pipeline needs at least two stages");

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS)
matmul_warptile(const float* __restrict__ A, const float* __restrict__ B,
                float* __restrict__ C, int M, int N, int K) {
  // STAGES stages of [As | Bs]; every part starts 16-byte aligned (all sizes are
  // multiples of 4 floats).
  extern __shared__ float4 smem_vec[];
  float* const smem = reinterpret_cast<float*>(smem_vec);
  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  // Lanes with the same lane_m read the same A float4 (a broadcast); the kLanesN lanes of
  // a row read consecutive B float4s, so every float4 request covers distinct banks.
  const int a_col = (warp / kWarpsN) * WM + (lane / kLanesN) * 4;
  const int b_col = (warp % kWarpsN) * WN + (lane % kLanesN) * 4;
  const int num_slices = (K + BK - 1) / BK;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  }

  // Prologue: slices 0 .. STAGES-2 into stages 0 .. STAGES-2. A group is committed even
  // when there is no slice left, so that group s always holds slice s.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < num_slices) {
      float* const stage = smem + s * kStageFloats;
      cp_async_tile_a_transposed<BM, BK, kThreads>(stage, A, M, K, row0, s * BK, tid);
      copy_tile_b<BK, BN, kThreads, true>(stage + kAsFloats, B, K, N, s * BK, col0, tid);
    }
    cp_async_commit();
  }

  int read_stage = 0, write_stage = STAGES - 1;
  for (int t = 0; t < num_slices; ++t) {
    // STAGES-1+t groups are committed; once at most STAGES-2 are pending, slice t has
    // landed for this thread. The barrier makes all threads' copies visible and tells
    // that every thread has finished slice t-1, whose stage (write_stage) is refilled next.
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    const int next = t + STAGES - 1;
    if (next < num_slices) {
      float* const stage = smem + write_stage * kStageFloats;
      cp_async_tile_a_transposed<BM, BK, kThreads>(stage, A, M, K, row0, next * BK, tid);
      copy_tile_b<BK, BN, kThreads, true>(stage + kAsFloats, B, K, N, next * BK, col0, tid);
    }
    cp_async_commit();

    const float* const stage = smem + read_stage * kStageFloats;
    accumulate_tile<BK, kAsLd<BM>, BN, TM, TN, kLanesM * 4, kLanesN * 4>(
        stage, stage + kAsFloats, a_col, b_col, acc);
    read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;
    write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;
  }

  store_c_tile<TM, TN, kLanesM * 4, kLanesN * 4>(C, M, N, row0 + a_col, col0 + b_col, acc);
}
