// double_buffer: regtile_2d's tiling (BM×BN block tile, TM×TN outputs per thread, A
// transposed in shared memory) with two shared-memory stages filled by cp.async: the
// copy of K-slice t+1 runs while slice t is computed, one barrier per slice. This is the
// "even-odd memory scheme" that report 000 proposed and never built. B moves 16 bytes per
// copy (cp.async.cg) when N % 4 == 0, else 4; A, transposed on the way, 4 bytes per copy
// (cp.async.ca). src-size zero-fills the parts outside the matrices.
// Tunables BM, BN, BK, TM, TN. Analytic DRAM traffic without reuse through L2 across
// blocks: 4·(M·K·ceil(N/BN) + K·N·ceil(M/BM) + M·N) bytes.
// At M=N=K=2049 every thread computes its whole TM×TN sub-tile over zero-filled tiles: M
// and N padded to 2176 (BM, BN 128), K to 2064 (BK 16): executed_flops / flops = 1.136.
/*---
kernel: matmul_double_buffer
idea: regtile_2d with two shared-memory stages; cp.async copies slice t+1 while slice t is computed
params:
  BM: 128
  BN: 128
  BK: 16
  TM: 8
  TN: 8
block: (BM // TM) * (BN // TN)
grid: ceil_div(N, BN), ceil_div(M, BM)
dynamic_smem: 2 * (BK * (BM + 4) + BK * BN) * 4
smem_optin: true
executed_flops: 2 * round_up(M, BM) * round_up(N, BN) * round_up(K, BK)
model_dram_bytes: (M * K * ceil_div(N, BN) + K * N * ceil_div(M, BM)) * in_bytes + M * N * out_bytes
restrictions:
  - TM % 4 == 0
  - TN % 4 == 0
  - BM % TM == 0
  - BN % TN == 0
  - BK % 8 == 0
  # A is copied by whole warps in cells of 4 rows x 8 k; the warps must divide a row of
  # cells, or the row the warps; likewise the threads for B (float4 or floats along N)
  - (BM // TM) * (BN // TN) % 32 == 0
  - (BM // TM) * (BN // TN) // 32 % (BK // 8) == 0 or (BK // 8) % ((BM // TM) * (BN // TN) // 32) == 0
  - (BM // TM) * (BN // TN) % (BN // 4) == 0 or (BN // 4) % ((BM // TM) * (BN // TN)) == 0
  - (BM // TM) * (BN // TN) % (BN) == 0 or (BN) % ((BM // TM) * (BN // TN)) == 0
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
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif

constexpr int kThreadsN = BN / TN;
constexpr int kThreads = (BM / TM) * kThreadsN;
constexpr int kAsFloats = BK * kAsLd<BM>;
constexpr int kStageFloats = kAsFloats + BK * BN;
static_assert(TM % 4 == 0 && TN % 4 == 0, "fragments are read as float4");
static_assert(BM % TM == 0 && BN % TN == 0, "thread tiles must divide the block tile");

extern "C" __global__ void __launch_bounds__(kThreads)
matmul_double_buffer(const float* __restrict__ A, const float* __restrict__ B,
                     float* __restrict__ C, int M, int N, int K) {
  // Two stages of [As | Bs]; every part starts 16-byte aligned (all sizes are multiples
  // of 4 floats).
  extern __shared__ float4 smem_vec[];
  float* const smem = reinterpret_cast<float*>(smem_vec);
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int a_col = (tid / kThreadsN) * TM, b_col = (tid % kThreadsN) * TN;
  const int num_slices = (K + BK - 1) / BK;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  }

  // K >= 1, so there is always a slice 0.
  cp_async_tile_a_transposed<BM, BK, kThreads>(smem, A, M, K, row0, 0, tid);
  copy_tile_b<BK, BN, kThreads, true>(smem + kAsFloats, B, K, N, 0, col0, tid);
  cp_async_commit();

  for (int t = 0; t < num_slices; ++t) {
    float* const stage = smem + (t & 1) * kStageFloats;
    // Slice t (the only group in flight) has landed for this thread; the barrier makes
    // every thread's copies visible, and tells that all threads are done with slice t-1,
    // whose stage the next copy overwrites.
    cp_async_wait<0>();
    __syncthreads();
    if (t + 1 < num_slices) {
      float* const next = smem + ((t + 1) & 1) * kStageFloats;
      const int k0 = (t + 1) * BK;
      cp_async_tile_a_transposed<BM, BK, kThreads>(next, A, M, K, row0, k0, tid);
      copy_tile_b<BK, BN, kThreads, true>(next + kAsFloats, B, K, N, k0, col0, tid);
      cp_async_commit();
    }
    accumulate_tile<BK, kAsLd<BM>, BN, TM, TN, 4, 4>(stage, stage + kAsFloats, a_col, b_col,
                                                        acc);
  }

  store_c_tile<TM, TN, 4, 4>(C, M, N, row0 + a_col, col0 + b_col, acc);
}
