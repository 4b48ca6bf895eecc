// smem_batched: shared-memory tiles over (neuron, batch), built to run Classifier 1 at
// B = 16 at DRAM bandwidth. There every W element serves 16 outputs (8 FLOP per byte of
// W), so the 411 MB of W must stream near 3 TB/s while the SM issues 16 FMAs per W float
// with little else. Report 002 staged x and W in shared memory; this rung adds register
// blocking, a cp.async pipeline and a split over Ni (public techniques of GEMM kernels:
// NVIDIA's CUTLASS "split-K" and multistage cp.async mainloop).
// - A block owns kRows = 32·RPT·WARPS_N neurons and BT batch columns. Each lane owns RPT
//   rows (lane, lane + 32, ...) × all BT columns: RPT·BT accumulators in registers, so an
//   x value read from shared memory serves RPT rows and a W value BT columns.
// - The block walks its part of Ni in tiles of KT: a kRows×KT tile of W and a KT×BT tile
//   of x go global → shared by 16-byte cp.async (4-byte copies where rows are not 16-byte
//   aligned: Ni % 4 != 0, or B % 4 != 0 for x), STAGES-deep, one barrier per tile. The W
//   tile is not padded but XOR-swizzled (16-byte chunk q of row r stored at q ^ (r % 8)):
//   the lanes of a warp read the same chunk of 32 consecutive rows, which then fall in 8
//   different bank groups per quarter warp (conflict-free 128-bit reads), and the copies
//   stay conflict-free too. All lanes of a warp read the same x row (a broadcast: one
//   shared-memory wavefront for 16 bytes to 32 lanes).
// - The WARPS_K warps that share the rows split each tile's KT columns among themselves;
//   at the end their partial sums meet in shared memory (reusing the pipeline's), and the
//   block writes its kRows×BT outputs coalesced.
// - SPLIT blocks share a row block, each a contiguous part of Ni (whole tiles): their
//   partial outputs go to scratch and a second launch sums them in a fixed order
//   (deterministic), so that the grid fills the GPU. With SPLIT = 1 the one launch writes y.
// Sizing, Classifier 1 at B = 16, defaults: 128 rows × 64 columns per tile (32 KB of W,
// 256-byte row pieces), 3 stages = 108 KB of shared memory, 256 threads, at most 128
// registers: 2 blocks per SM, so 2 × 2 × 32 KB = 128 KB of W in flight per SM. 32 row
// blocks × SPLIT 8 = 256 blocks for 264 slots (one wave). Per 4 columns of a tile a warp
// issues 4 + 16 shared loads (16 + 16 wavefronts; with the copies' writes about 50 per 2 KB
// of W, a third of the SM's shared-memory bandwidth at 3 TB/s) for 256 FMAs; the FMA pipe
// would keep up with about twice the DRAM bandwidth.
// Tunables: RPT (rows per lane), WARPS_N (warps along the rows), WARPS_K (warps along a
// tile's columns), KT (tile columns), BT (batch columns per block), STAGES (pipeline
// depth), SPLIT (blocks along Ni), MIN_BLOCKS (residency hint of __launch_bounds__).
// Analytic DRAM traffic without reuse through L2 across blocks: W once per batch tile,
// x once per row block, the partial outputs written and read back when SPLIT > 1, y once:
// 4·(Nn·Ni·ceil(B/BT) + Ni·B·ceil(Nn/kRows)) + 4·Nn·B·(1 + 2·SPLIT·[SPLIT > 1]) bytes.
// At Classifier 1, B = 16: 411 MB + 51 MB of x (in fact served by L2: blocks of one split
// walk the same x tiles at the same time) + 4.5 MB.
// Executed FLOPs: every lane computes all its RPT·BT sums over whole tiles, zero-padded
// past Nn, B and Ni: 2·round_up(Nn, kRows)·round_up(B, BT)·round_up(Ni, KT), plus the adds
// that combine the SPLIT·WARPS_K partial sums of each output: Nn·B·(SPLIT·WARPS_K − 1).
// At Classifier 1, B = 16 nothing is padded; the adds are 0.1 %.
/*---
idea: register-blocked (RPT rows × BT columns per lane) tiles of W and x through a STAGES-deep cp.async pipeline (swizzled W, broadcast x); Ni split over SPLIT blocks, then a deterministic reduce
params:
  RPT: 4
  WARPS_N: 1
  WARPS_K: 8
  KT: 64
  BT: 16
  STAGES: 3
  SPLIT: 8
  MIN_BLOCKS: 2
scratch:
  partial: {shape: "SPLIT, Nn, B", dtype: float32}
launches:
  - kernel: classifier_smem_batched
    name: direct
    when: SPLIT == 1
    block: 32 * WARPS_N * WARPS_K
    grid: ceil_div(B, BT), ceil_div(Nn, 32 * RPT * WARPS_N), SPLIT
    dynamic_smem: max(STAGES * (32 * RPT * WARPS_N * KT + KT * BT), WARPS_K * 32 * RPT * WARPS_N * (BT + 4)) * 4
    args: [W, x, y, Ni, Nn, B]
  - kernel: classifier_smem_batched
    name: partials
    when: SPLIT > 1
    block: 32 * WARPS_N * WARPS_K
    grid: ceil_div(B, BT), ceil_div(Nn, 32 * RPT * WARPS_N), SPLIT
    dynamic_smem: max(STAGES * (32 * RPT * WARPS_N * KT + KT * BT), WARPS_K * 32 * RPT * WARPS_N * (BT + 4)) * 4
    args: [W, x, partial, Ni, Nn, B]
  - kernel: classifier_smem_batched_reduce
    name: reduce
    when: SPLIT > 1
    block: 256
    grid: ceil_div(Nn * B, 4 * 256)
    args: [partial, y, Nn * B, SPLIT]
smem_optin: true
restrictions:
  - RPT >= 1 and WARPS_N >= 1 and WARPS_K >= 1 and SPLIT >= 1 and MIN_BLOCKS >= 1
  - BT >= 4 and BT % 4 == 0
  - KT % 32 == 0
  - KT % (4 * WARPS_K) == 0
  - (32 * WARPS_N * WARPS_K) % (KT // 4) == 0
  - STAGES >= 2
  - 32 * WARPS_N * WARPS_K * MIN_BLOCKS <= max_threads_per_sm
  - MIN_BLOCKS * (max(STAGES * (32 * RPT * WARPS_N * KT + KT * BT), WARPS_K * 32 * RPT * WARPS_N * (BT + 4)) * 4 + 1024) <= smem_per_sm
executed_flops: 2 * round_up(Nn, 32 * RPT * WARPS_N) * round_up(B, BT) * round_up(Ni, KT) + Nn * B * (SPLIT * WARPS_K - 1)
model_dram_bytes: (Nn * Ni * ceil_div(B, BT) + Ni * B * ceil_div(Nn, 32 * RPT * WARPS_N)) * in_bytes + (1 + 2 * SPLIT * (SPLIT > 1)) * Nn * B * out_bytes
---*/

#include "classifier_common.cuh"

#ifndef RPT
#define RPT 4
#endif
#ifndef WARPS_N
#define WARPS_N 1
#endif
#ifndef WARPS_K
#define WARPS_K 8
#endif
#ifndef KT
#define KT 64
#endif
#ifndef BT
#define BT 16
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef SPLIT
#define SPLIT 8
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 2
#endif

constexpr int kThreads = 32 * WARPS_N * WARPS_K;
constexpr int kRows = 32 * RPT * WARPS_N;  // neurons per block
constexpr int kChunks = KT / 4;            // 16-byte chunks in a row of the W tile
constexpr int kWarpK = KT / WARPS_K;       // tile columns per warp
constexpr int kWFloats = kRows * KT;
constexpr int kStageFloats = kWFloats + KT * BT;
constexpr int kLdRed = BT + 4;  // padded row of the reduction buffer (conflict-free float4s)
static_assert(KT % 32 == 0, "the swizzle permutes groups of 8 chunks of a tile row");
static_assert(KT % (4 * WARPS_K) == 0, "each warp takes whole float4 columns of a tile");
static_assert(BT % 4 == 0, "x rows are read as float4s");
static_assert(STAGES >= 2, "the pipeline needs at least two stages");

// The 16-byte copies of a W tile: thread tid copies chunk column tid % kChunks of rows
// tid / kChunks + i·kRowStep, i < kWCopies (16 threads per row at KT = 64: 256 contiguous
// bytes of a row per 16 threads).
constexpr int kRowStep = kThreads / kChunks;
constexpr int kWCopies = kRows / kRowStep;
static_assert(kThreads % kChunks == 0 && kRows % kRowStep == 0,
              "the block copies whole rows of the W tile");

// Offset (floats) of 16-byte chunk q of row r of a swizzled W tile.
__device__ __forceinline__ int w_offset(int r, int q) { return r * KT + 4 * (q ^ (r & 7)); }

// What a thread copies into each stage, fixed for the whole kernel but for the column.
struct TileCopies {
  const float* w_src;  // W at this thread's first row and chunk column of tile 0
  size_t w_step;       // kRowStep rows of W
  int w_rows_left;     // copy i reads a row of W while i·kRowStep < w_rows_left
  int w_row, w_q;      // the first row and the chunk column of this thread in the tile
  int k_begin, k_end;  // this split's columns of W
  int n0, b0;          // the block's first row and first batch column
};

// Issues the copies of tile `tile` (columns k_begin + tile·KT ...) into `stage`.
__device__ __forceinline__ void load_tile(float* stage, const TileCopies& tc,
                                          const float* __restrict__ W,
                                          const float* __restrict__ x, int Ni, int Nn, int B,
                                          int tile, bool vec_w, bool vec_x, int tid) {
  float* ws = stage;
  float* xs = stage + kWFloats;
  const int k0 = tc.k_begin + tile * KT;
  if (vec_w) {
    // Ni % 4 == 0, and splits start at multiples of KT: k_end is a multiple of 4, so a
    // chunk is wholly inside the split or wholly past its end.
    const bool k_in = k0 + 4 * tc.w_q < tc.k_end;
    const float* src = tc.w_src + tile * KT;
#pragma unroll
    for (int i = 0; i < kWCopies; ++i) {
      const bool in = k_in && i * kRowStep < tc.w_rows_left;
      cp_async_16(ws + w_offset(tc.w_row + i * kRowStep, tc.w_q),
                      in ? src + i * tc.w_step : W, in ? 16 : 0);
    }
  } else {  // rows of W not 16-byte aligned: 4-byte copies, consecutive threads along a row
    constexpr int kCopies = kRows * KT;
#pragma unroll 4
    for (int i = 0; i < kCopies / kThreads; ++i) {
      const int e = tid + i * kThreads;
      const int r = e / KT, kk = e % KT;
      const int n = tc.n0 + r, k = k0 + kk;
      const bool in = n < Nn && k < tc.k_end;
      cp_async_4(ws + w_offset(r, kk / 4) + kk % 4,
                     in ? W + static_cast<size_t>(n) * Ni + k : W, in ? 4 : 0);
    }
  }
  if (vec_x) {  // B % 4 == 0: 16-byte pieces of rows of x
    constexpr int kCopies = KT * BT / 4;
#pragma unroll
    for (int i = 0; i < (kCopies + kThreads - 1) / kThreads; ++i) {
      const int c = tid + i * kThreads;
      if (kCopies % kThreads == 0 || c < kCopies) {
        const int kk = c / (BT / 4), q = c % (BT / 4);
        const int k = k0 + kk, b = tc.b0 + 4 * q;
        const bool in = k < tc.k_end && b < B;
        cp_async_16(xs + kk * BT + 4 * q, in ? x + static_cast<size_t>(k) * B + b : x,
                        in ? 16 : 0);
      }
    }
  } else {
    constexpr int kCopies = KT * BT;
#pragma unroll 4
    for (int i = 0; i < (kCopies + kThreads - 1) / kThreads; ++i) {
      const int e = tid + i * kThreads;
      if (kCopies % kThreads == 0 || e < kCopies) {
        const int kk = e / BT, bb = e % BT;
        const int k = k0 + kk, b = tc.b0 + bb;
        const bool in = k < tc.k_end && b < B;
        cp_async_4(xs + kk * BT + bb, in ? x + static_cast<size_t>(k) * B + b : x,
                       in ? 4 : 0);
      }
    }
  }
}

__device__ __forceinline__ float component(const float4& v, int j) {
  return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
}

// out is [gridDim.z][Nn][B]: y itself when there is one split, else the partial outputs.
extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS)
classifier_smem_batched(const float* __restrict__ W, const float* __restrict__ x,
                        float* __restrict__ out, int Ni, int Nn, int B) {
  extern __shared__ __align__(16) float smem[];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wk = warp % WARPS_K, wn = warp / WARPS_K;
  const int b0 = blockIdx.x * BT;
  const int n0 = blockIdx.y * kRows;
  const int split = blockIdx.z;
  int k_begin, k_end;
  cls_split_range(Ni, gridDim.z, split, KT, k_begin, k_end);
  const int tiles = cls_ceil_div(k_end - k_begin, KT);
  TileCopies tc;
  tc.w_row = tid / kChunks;
  tc.w_q = tid % kChunks;
  tc.w_src = W + static_cast<size_t>(n0 + tc.w_row) * Ni + k_begin + 4 * tc.w_q;
  tc.w_step = static_cast<size_t>(kRowStep) * Ni;
  tc.w_rows_left = Nn - n0 - tc.w_row;
  tc.k_begin = k_begin;
  tc.k_end = k_end;
  tc.n0 = n0;
  tc.b0 = b0;
  const bool vec_w = Ni % 4 == 0 && (reinterpret_cast<size_t>(W) & 15) == 0;
  const bool vec_x = B % 4 == 0 && (reinterpret_cast<size_t>(x) & 15) == 0;

  float acc[RPT][BT];
#pragma unroll
  for (int r = 0; r < RPT; ++r)
#pragma unroll
    for (int b = 0; b < BT; ++b) acc[r][b] = 0.0f;

  // Prologue: tiles 0 .. STAGES-2; a group is committed even when empty, so that group t
  // always holds tile t.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < tiles) {
      load_tile(smem + s * kStageFloats, tc, W, x, Ni, Nn, B, s, vec_w, vec_x, tid);
    }
    cp_async_commit();
  }

  const int row_base = wn * 32 * RPT + lane;  // this lane's rows: row_base + 32·r
  for (int t = 0; t < tiles; ++t) {
    // Tile t has landed once at most STAGES-2 groups are pending; the barrier also says
    // that every warp is done with tile t-1, whose stage is refilled next.
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    const int next = t + STAGES - 1;
    if (next < tiles) {
      load_tile(smem + (next % STAGES) * kStageFloats, tc, W, x, Ni, Nn, B, next, vec_w,
                vec_x, tid);
    }
    cp_async_commit();

    const float* ws = smem + (t % STAGES) * kStageFloats;
    const float* xs = ws + kWFloats;
#pragma unroll 1
    for (int s = 0; s < kWarpK / 4; ++s) {
      const int q = wk * (kWarpK / 4) + s;  // the float4 column of the tile
      float4 w[RPT];
#pragma unroll
      for (int r = 0; r < RPT; ++r) {
        w[r] = *reinterpret_cast<const float4*>(ws + w_offset(row_base + 32 * r, q));
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float* xrow = xs + (4 * q + j) * BT;
        float xv[BT];
#pragma unroll
        for (int c = 0; c < BT / 4; ++c) {
          const float4 v = *reinterpret_cast<const float4*>(xrow + 4 * c);
          xv[4 * c] = v.x;
          xv[4 * c + 1] = v.y;
          xv[4 * c + 2] = v.z;
          xv[4 * c + 3] = v.w;
        }
#pragma unroll
        for (int r = 0; r < RPT; ++r) {
          const float wv = component(w[r], j);
#pragma unroll
          for (int b = 0; b < BT; ++b) acc[r][b] = fmaf(wv, xv[b], acc[r][b]);
        }
      }
    }
  }

  // The warps of a row group meet in shared memory (the pipeline's, once it is drained).
  cp_async_wait<0>();
  __syncthreads();
  float* red = smem;  // [WARPS_K][kRows][kLdRed]
#pragma unroll
  for (int r = 0; r < RPT; ++r) {
    float* dst = red + (wk * kRows + row_base + 32 * r) * kLdRed;
#pragma unroll
    for (int c = 0; c < BT / 4; ++c) {
      *reinterpret_cast<float4*>(dst + 4 * c) =
          make_float4(acc[r][4 * c], acc[r][4 * c + 1], acc[r][4 * c + 2], acc[r][4 * c + 3]);
    }
  }
  __syncthreads();
  float* out_split = out + static_cast<size_t>(split) * Nn * B;
  for (int o = tid; o < kRows * BT; o += kThreads) {
    const int r = o / BT, bb = o % BT;
    const int n = n0 + r, b = b0 + bb;
    if (n < Nn && b < B) {
      float v = red[r * kLdRed + bb];
#pragma unroll
      for (int k = 1; k < WARPS_K; ++k) v += red[(k * kRows + r) * kLdRed + bb];
      out_split[static_cast<size_t>(n) * B + b] = v;
    }
  }
}

// y = the sum of the SPLIT partial outputs, in split order.
extern "C" __global__ void __launch_bounds__(256)
classifier_smem_batched_reduce(const float* __restrict__ partial, float* __restrict__ y,
                               int count, int splits) {
  cls_split_reduce(partial, y, count, splits);
}
