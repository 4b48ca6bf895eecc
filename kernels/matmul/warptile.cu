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
// The main loop over a range of K-slices (warptile_slices) is also stream_k's, which runs
// these tiles on a persistent grid; conv's im2col_gemm includes this file for its GEMM.
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
  - (BM // WM) * (BN // WN) * 32 * MIN_BLOCKS <= max_threads_per_sm
  - MIN_BLOCKS * (STAGES * (BK * (BM + 4) + BK * BN) * 4 + 1024) <= smem_per_sm
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

// A thread's place in the block: lanes with the same lane_m read the same A float4 (a
// broadcast); the kLanesN lanes of a row read consecutive B float4s, so every float4
// request covers distinct banks. a_col, b_col: its first row in As and column in Bs.
struct WarptileThread {
  int tid, a_col, b_col;
  __device__ explicit WarptileThread(int t)
      : tid(t),
        a_col((t / 32 / kWarpsN) * WM + (t % 32 / kLanesN) * 4),
        b_col((t / 32 % kWarpsN) * WN + (t % 32 % kLanesN) * 4) {}
};

// acc += the product over K-slices [first, last) of the BM×BN tile of C at (row0, col0),
// through the STAGES stages at smem. Every thread of the block calls it; it may be called
// again for another tile or range (the barrier on entry lets the previous call's last
// stage be overwritten).
__device__ __forceinline__ void warptile_slices(const float* __restrict__ A,
                                                const float* __restrict__ B, int M, int N,
                                                int K, int row0, int col0, int first, int last,
                                                float* smem, const WarptileThread& me,
                                                float (&acc)[TM][TN]) {
  __syncthreads();
  // Prologue: slices first .. first+STAGES-2 into stages 0 .. STAGES-2. A group is
  // committed even when there is no slice left, so that group s always holds slice first+s.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (first + s < last) {
      float* const stage = smem + s * kStageFloats;
      const int k0 = (first + s) * BK;
      cp_async_tile_a_transposed<BM, BK, kThreads>(stage, A, M, K, row0, k0, me.tid);
      copy_tile_b<BK, BN, kThreads, true>(stage + kAsFloats, B, K, N, k0, col0, me.tid);
    }
    cp_async_commit();
  }

  int read_stage = 0, write_stage = STAGES - 1;
  for (int t = first; t < last; ++t) {
    // STAGES-1+(t-first) groups are committed; once at most STAGES-2 are pending, slice t
    // has landed for this thread. The barrier makes all threads' copies visible and tells
    // that every thread has finished slice t-1, whose stage (write_stage) is refilled next.
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    const int next = t + STAGES - 1;
    if (next < last) {
      float* const stage = smem + write_stage * kStageFloats;
      cp_async_tile_a_transposed<BM, BK, kThreads>(stage, A, M, K, row0, next * BK, me.tid);
      copy_tile_b<BK, BN, kThreads, true>(stage + kAsFloats, B, K, N, next * BK, col0, me.tid);
    }
    cp_async_commit();

    const float* const stage = smem + read_stage * kStageFloats;
    accumulate_tile<BK, kAsLd<BM>, BN, TM, TN, kLanesM * 4, kLanesN * 4>(
        stage, stage + kAsFloats, me.a_col, me.b_col, acc);
    read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;
    write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;
  }
}

__device__ __forceinline__ void warptile_zero(float (&acc)[TM][TN]) {
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  }
}

// STAGES stages of [As | Bs]; every part starts 16-byte aligned (all sizes are multiples
// of 4 floats).
extern __shared__ float4 warptile_smem[];

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS)
matmul_warptile(const float* __restrict__ A, const float* __restrict__ B,
                float* __restrict__ C, int M, int N, int K) {
  const WarptileThread me(threadIdx.x);
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN];
  warptile_zero(acc);
  warptile_slices(A, B, M, N, K, row0, col0, 0, (K + BK - 1) / BK,
                  reinterpret_cast<float*>(warptile_smem), me, acc);
  store_c_tile<TM, TN, kLanesM * 4, kLanesN * 4>(C, M, N, row0 + me.a_col, col0 + me.b_col, acc);
}
