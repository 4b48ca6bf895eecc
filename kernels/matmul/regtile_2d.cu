// regtile_2d: 2-D register blocking. A block computes a BM×BN tile of C with
// (BM/TM)·(BN/TN) threads, each owning a TM×TN sub-tile in registers. Per step of BK along
// K the block stages the A tile transposed (As[k][m]) and the B tile in shared memory, so a
// thread reads TM consecutive A and TN consecutive B values of one k with float4 loads and
// does TM·TN FMAs for TM/4 + TN/4 loads. Global loads are float4: the declaration asks for
// 16-byte aligned rows (row_alignment), so where K or N is not a multiple of 4 ncuflow
// passes a copy of A or B with rows padded by zeros (timed with the configuration; lda and
// ldb are the rows' lengths). With guarded scalar loads instead, its launches' durations
// at 2049 spread over 4-8 % (one to three of 20 a fifth faster than the rest). Outside
// the matrices the tiles are zero.
// From reports 000 (TILESCALE_M×TILESCALE_N outputs per thread) and 001 (register tiling,
// A transposed).
// Tunables BM, BN, BK, TM, TN. Analytic DRAM traffic without reuse through L2 across
// blocks: 4·(M·K·ceil(N/BN) + K·N·ceil(M/BM) + M·N) bytes, plus, where a padded copy runs,
// its input read and the copy written.
// At M=N=K=2049 every thread computes its whole TM×TN sub-tile over zero-filled tiles: M
// and N padded to 2176 (BM, BN 128), K to 2064 (BK 16): executed_flops / flops = 1.136.
// It also runs at 2049 at half its rate at 2048: 17×17 blocks against 16×16, two blocks
// per SM, make 1.09 waves on 132 SMs where 2048 fills 0.97 of one (the padded copies
// change nothing to that: 17.3 and 17.7 TFLOP/s; stream_k shares out such a tail).
/*---
idea: BM×BN block tiles, TM×TN outputs per thread; A transposed in shared memory, float4 fragment loads
params:
  BM: 128
  BN: 128
  BK: 16
  TM: 8
  TN: 8
row_alignment: {A: 16, B: 16}
launches:
  - kernel: matmul_regtile_2d
    name: gemm
    block: (BM // TM) * (BN // TN)
    grid: ceil_div(N, BN), ceil_div(M, BM)
    static_smem: (BK * (BM + 4) + BK * BN) * 4
    args: [A, B, C, M, N, K, ld_A, ld_B]
executed_flops: 2 * round_up(M, BM) * round_up(N, BN) * round_up(K, BK)
model_dram_bytes: (M * K * ceil_div(N, BN) + K * N * ceil_div(M, BM)) * in_bytes + M * N * out_bytes + (ld_A != K) * M * (K + ld_A) * in_bytes + (ld_B != N) * K * (N + ld_B) * in_bytes
restrictions:
  - TM % 4 == 0
  - TN % 4 == 0
  - BM % TM == 0
  - BN % TN == 0
  - BK % 4 == 0
  # the threads must divide a row of each tile they copy, or the row the threads
  # (A as float4 along K, B as float4 along N)
  - (BM // TM) * (BN // TN) % (BK // 4) == 0 or (BK // 4) % ((BM // TM) * (BN // TN)) == 0
  - (BM // TM) * (BN // TN) % (BN // 4) == 0 or (BN // 4) % ((BM // TM) * (BN // TN)) == 0
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
static_assert(TM % 4 == 0 && TN % 4 == 0, "fragments are read as float4");
static_assert(BM % TM == 0 && BN % TN == 0, "thread tiles must divide the block tile");
static_assert(BK % 4 == 0, "A is loaded in float4 groups along K");

// The BM×BK tile of A (rows of lda floats, a multiple of 4) at (row0, k0) into As[k][m]:
// 4 consecutive floats of a row of A per load, then 4 transposing stores. Threads share
// the tile by CopyPlan. A group of 4 (k0, the offsets and lda being multiples of 4) lies
// wholly inside a row or past its end, where the padded copy's zeros or the bounds check
// give zeros.
__device__ __forceinline__ void load_tile_a_transposed(float* As, const float* A, int M,
                                                       int lda, int row0, int k0, int tid) {
  constexpr int Vec = 4;
  using Plan = CopyPlan<BM, BK / Vec, kThreads>;
  const int m_first = tid / Plan::kWorkersPerRow;
  const int k_first = (tid % Plan::kWorkersPerRow) * Vec;
  const int row_first = row0 + m_first;
  // Pointers of rows past M are formed but never dereferenced.
  const float* src = A + static_cast<size_t>(row_first) * lda + k0 + k_first;
  const size_t pass_stride = static_cast<size_t>(Plan::kRowStep) * lda;
#pragma unroll
  for (int p = 0; p < Plan::kRowPasses; ++p, src += pass_stride) {
    const int m = m_first + p * Plan::kRowStep;
    if (Plan::kRowGuard && m >= BM) break;
    const bool row_inside = row0 + m < M;
#pragma unroll
    for (int q = 0; q < Plan::kColPasses; ++q) {
      const int dk = q * Plan::kWorkersPerRow * Vec;
      const bool inside = row_inside && k0 + k_first + dk < lda;
      float* const dst = As + (k_first + dk) * kAsLd<BM> + m;
      const float4 a = inside ? *reinterpret_cast<const float4*>(src + dk)
                              : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      dst[0 * kAsLd<BM>] = a.x;
      dst[1 * kAsLd<BM>] = a.y;
      dst[2 * kAsLd<BM>] = a.z;
      dst[3 * kAsLd<BM>] = a.w;
    }
  }
}

extern "C" __global__ void __launch_bounds__(kThreads)
matmul_regtile_2d(const float* __restrict__ A, const float* __restrict__ B,
                  float* __restrict__ C, int M, int N, int K, int lda, int ldb) {
  __shared__ __align__(16) float As[BK * kAsLd<BM>];
  __shared__ __align__(16) float Bs[BK * BN];
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  // The thread's TM rows and TN columns are contiguous.
  const int a_col = (tid / kThreadsN) * TM, b_col = (tid % kThreadsN) * TN;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  }

  for (int k0 = 0; k0 < K; k0 += BK) {
    load_tile_a_transposed(As, A, M, lda, row0, k0, tid);
    // B as K×ldb: its columns from N on are the padded copy's zeros or past ldb
    copy_tile_b_by<BK, BN, kThreads, 4, false>(Bs, B, K, ldb, k0, col0, tid);
    __syncthreads();
    accumulate_tile<BK, kAsLd<BM>, BN, TM, TN, 4, 4>(As, Bs, a_col, b_col, acc);
    // The tiles are overwritten by the next step.
    __syncthreads();
  }

  store_c_tile<TM, TN, 4, 4>(C, M, N, row0 + a_col, col0 + b_col, acc);
}
