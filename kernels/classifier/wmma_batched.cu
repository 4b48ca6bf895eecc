// wmma_batched: report 002's tensor-core rung of the classifier. y = W·x as a GEMM with
// M = Nn, N = B, K = Ni on tensor cores through nvcuda::wmma 16×16×16 tiles: fp16 W and x,
// fp32 accumulation and output. W is matrix_a (row-major Nn×Ni), x matrix_b (row-major
// Ni×B: B is WMMA's N, hence B % 16 == 0).
// - A block of WARPS_M×WARPS_N warps owns BM = 16·FM·WARPS_M neurons and BN = 16·FN·WARPS_N
//   batch columns; a warp owns FM×FN accumulator fragments. Fragments whose rows lie past
//   Nn or whose columns lie past B are skipped (at B = 16 only one of FN columns works).
// - The block walks its part of Ni in tiles of KT: a BM×KT tile of W and a KT×BN tile of x go
//   global → shared by 16-byte cp.async, STAGES-deep (CUTLASS-style multistage mainloop),
//   one barrier per tile. Rows are padded by 8 halves (16 bytes), so the 8 rows that one
//   phase of a fragment load reads fall in 8 different 16-byte bank groups. When W's rows
//   are not 16-byte aligned (Ni % 8 != 0) its tile is loaded element by element instead.
// - As in smem_batched, SPLIT blocks share a row block, each a contiguous part of Ni (whole
//   tiles); partial outputs (float32) go to scratch and a second launch sums them in a fixed
//   order. The batch tiles are the grid's fastest axis, so the blocks that read the same W
//   tile for different batch columns (B > BN) run side by side and share it through L2.
// Sizing at Classifier 1, B = 16 (memory-bound: W is 205 MB in fp16): 128 rows × 64 columns
// of W per tile (16 KB), 3 stages of 27 KB, 128 threads: 2 blocks per SM, 64 KB of W in
// flight per SM; 32 row blocks × SPLIT 8 = 256 blocks for 264 slots. At B = 256 the block
// computes 8 fragments per warp per k step (FN = 4), 4 batch tiles.
// Tunables: WARPS_M, WARPS_N (warps along rows and batch columns), FM, FN (fragments per
// warp along each), KT (tile columns), STAGES (pipeline depth), SPLIT (blocks along Ni),
// MIN_BLOCKS (residency hint of __launch_bounds__).
// Analytic DRAM traffic without reuse through L2 across blocks: W once per batch tile, x
// once per row block, partial outputs written and read back when SPLIT > 1, y once:
// 2·(Nn·Ni·ceil(B/BN) + Ni·B·ceil(Nn/BM)) + 4·Nn·B·(1 + 2·SPLIT·[SPLIT > 1]) bytes.
// Executed tensor FLOPs: whole 16×16×16 fragments, rows padded to 16 and k to 16 in each
// split (splits start at multiples of KT): 2·round_up(Nn, 16)·B·round_up(Ni, 16). The
// reduce's float32 adds (Nn·B·(SPLIT − 1)) are not tensor FLOPs.
/*---
idea: WMMA 16×16×16 fp16 fragments (fp32 accumulate) on W and x tiles through a STAGES-deep cp.async pipeline; Ni split over SPLIT blocks, then a deterministic reduce
params:
  WARPS_M: 4
  WARPS_N: 1
  FM: 2
  FN: 4
  KT: 64
  STAGES: 3
  SPLIT: 8
  MIN_BLOCKS: 2
dtype: float16
out_dtype: float32
scratch:
  partial: {shape: "SPLIT, Nn, B", dtype: float32}
launches:
  - kernel: classifier_wmma_batched
    name: direct
    when: SPLIT == 1
    block: 32 * WARPS_M * WARPS_N
    grid: ceil_div(B, 16 * FN * WARPS_N), ceil_div(Nn, 16 * FM * WARPS_M), SPLIT
    dynamic_smem: max(STAGES * (16 * FM * WARPS_M * (KT + 8) + KT * (16 * FN * WARPS_N + 8)) * 2, WARPS_M * WARPS_N * 1024)
    args: [W, x, y, Ni, Nn, B]
  - kernel: classifier_wmma_batched
    name: partials
    when: SPLIT > 1
    block: 32 * WARPS_M * WARPS_N
    grid: ceil_div(B, 16 * FN * WARPS_N), ceil_div(Nn, 16 * FM * WARPS_M), SPLIT
    dynamic_smem: max(STAGES * (16 * FM * WARPS_M * (KT + 8) + KT * (16 * FN * WARPS_N + 8)) * 2, WARPS_M * WARPS_N * 1024)
    args: [W, x, partial, Ni, Nn, B]
  - kernel: classifier_wmma_batched_reduce
    name: reduce
    when: SPLIT > 1
    block: 256
    grid: ceil_div(Nn * B, 4 * 256)
    args: [partial, y, Nn * B, SPLIT]
smem_optin: true
restrictions:
  - B % 16 == 0
  - WARPS_M >= 1 and WARPS_N >= 1 and FM >= 1 and FN >= 1
  - SPLIT >= 1 and MIN_BLOCKS >= 1
  - KT >= 16 and KT % 16 == 0
  - STAGES >= 2
  - 32 * WARPS_M * WARPS_N * MIN_BLOCKS <= max_threads_per_sm
  - MIN_BLOCKS * (max(STAGES * (16 * FM * WARPS_M * (KT + 8) + KT * (16 * FN * WARPS_N + 8)) * 2, WARPS_M * WARPS_N * 1024) + 1024) <= smem_per_sm
executed_flops: 2 * round_up(Nn, 16) * B * round_up(Ni, 16)
model_dram_bytes: (Nn * Ni * ceil_div(B, 16 * FN * WARPS_N) + Ni * B * ceil_div(Nn, 16 * FM * WARPS_M)) * in_bytes + (1 + 2 * SPLIT * (SPLIT > 1)) * Nn * B * out_bytes
---*/

#include <cuda_fp16.h>
#include <mma.h>

#include "classifier_common.cuh"

#ifndef WARPS_M
#define WARPS_M 4
#endif
#ifndef WARPS_N
#define WARPS_N 1
#endif
#ifndef FM
#define FM 2
#endif
#ifndef FN
#define FN 4
#endif
#ifndef KT
#define KT 64
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

namespace wmma = nvcuda::wmma;

constexpr int kFrag = 16;
constexpr int kThreads = 32 * WARPS_M * WARPS_N;
constexpr int kBM = kFrag * FM * WARPS_M;  // neurons per block
constexpr int kBN = kFrag * FN * WARPS_N;  // batch columns per block
constexpr int kLdA = KT + 8;               // padded rows (halves) of the W tile
constexpr int kLdB = kBN + 8;              // padded rows (halves) of the x tile
constexpr int kStageHalves = kBM * kLdA + KT * kLdB;
static_assert(KT % kFrag == 0, "tiles hold whole k steps");
static_assert(STAGES >= 2, "the pipeline needs at least two stages");

using FragA = wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, __half, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, __half, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float>;

// Issues the copies of the tile of columns k0 .. k0+KT into `stage`. vec_w: 16-byte
// cp.async of W (rows 16-byte aligned, k_end a multiple of 8); otherwise element loads.
__device__ __forceinline__ void load_tile(__half* stage, const __half* __restrict__ W,
                                          const __half* __restrict__ x, int Ni, int Nn, int B,
                                          int n0, int b0, int k0, int k_end, bool vec_w,
                                          int tid) {
  __half* ws = stage;
  __half* xs = stage + kBM * kLdA;
  if (vec_w) {
    constexpr int kChunks = KT / 8, kCopies = kBM * kChunks;
#pragma unroll
    for (int i = 0; i < (kCopies + kThreads - 1) / kThreads; ++i) {
      const int c = tid + i * kThreads;
      if (kCopies % kThreads == 0 || c < kCopies) {
        const int r = c / kChunks, q = c % kChunks;
        const int n = n0 + r, k = k0 + 8 * q;
        const bool in = n < Nn && k < k_end;
        cp_async_16(ws + r * kLdA + 8 * q, in ? W + static_cast<size_t>(n) * Ni + k : W,
                        in ? 16 : 0);
      }
    }
  } else {
    constexpr int kCopies = kBM * KT;
#pragma unroll 4
    for (int i = 0; i < (kCopies + kThreads - 1) / kThreads; ++i) {
      const int e = tid + i * kThreads;
      if (kCopies % kThreads == 0 || e < kCopies) {
        const int r = e / KT, kk = e % KT;
        const int n = n0 + r, k = k0 + kk;
        ws[r * kLdA + kk] = n < Nn && k < k_end ? W[static_cast<size_t>(n) * Ni + k]
                                                : __float2half(0.0f);
      }
    }
  }
  // x: B % 16 == 0, so rows of x are 32-byte aligned and a 16-byte piece is wholly inside
  // or outside the batch.
  constexpr int kChunksX = kBN / 8, kCopiesX = KT * kChunksX;
#pragma unroll
  for (int i = 0; i < (kCopiesX + kThreads - 1) / kThreads; ++i) {
    const int c = tid + i * kThreads;
    if (kCopiesX % kThreads == 0 || c < kCopiesX) {
      const int kk = c / kChunksX, q = c % kChunksX;
      const int k = k0 + kk, b = b0 + 8 * q;
      const bool in = k < k_end && b < B;
      cp_async_16(xs + kk * kLdB + 8 * q, in ? x + static_cast<size_t>(k) * B + b : x,
                      in ? 16 : 0);
    }
  }
}

// One k step of a warp over its LIVE batch fragments (the others lie past B) and its
// rows_live row fragments: ws and xs point at the warp's rows and columns of the stage.
template <int LIVE>
__device__ __forceinline__ void mma_step(FragC (&acc)[FM][FN], const __half* ws,
                                         const __half* xs, int rows_live) {
  FragA a[FM];
  FragB b[LIVE];
#pragma unroll
  for (int i = 0; i < FM; ++i) {
    if (i < rows_live) wmma::load_matrix_sync(a[i], ws + i * kFrag * kLdA, kLdA);
  }
#pragma unroll
  for (int j = 0; j < LIVE; ++j) wmma::load_matrix_sync(b[j], xs + j * kFrag, kLdB);
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < LIVE; ++j)
      if (i < rows_live) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
}

// The step with `live` (1 .. FN, warp-uniform) batch fragments as a compile-time count,
// chosen by branches: a fragment past B is never issued. (Guarding each mma_sync with
// `col < B` instead compiles to predicated HMMAs, which are still issued, and which
// Nsight Compute counts as tensor FLOPs: 4x the work at B = 16 with FN = 4.)
template <int LIVE>
__device__ __forceinline__ void mma_step_live(int live, FragC (&acc)[FM][FN], const __half* ws,
                                              const __half* xs, int rows_live) {
  if constexpr (LIVE > 1) {
    if (live < LIVE) {
      mma_step_live<LIVE - 1>(live, acc, ws, xs, rows_live);
      return;
    }
  }
  mma_step<LIVE>(acc, ws, xs, rows_live);
}

// out is [gridDim.z][Nn][B] float32: y itself with one split, else the partial outputs.
extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS)
classifier_wmma_batched(const __half* __restrict__ W, const __half* __restrict__ x,
                        float* __restrict__ out, int Ni, int Nn, int B) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __half* const smem = reinterpret_cast<__half*>(smem_raw);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
  const int b0 = blockIdx.x * kBN;
  const int n0 = blockIdx.y * kBM;
  const int split = blockIdx.z;
  int k_begin, k_end;
  cls_split_range(Ni, gridDim.z, split, KT, k_begin, k_end);
  const int tiles = cls_ceil_div(k_end - k_begin, KT);
  const bool vec_w = Ni % 8 == 0 && (reinterpret_cast<size_t>(W) & 15) == 0;
  const int row0 = n0 + warp_m * FM * kFrag;  // this warp's first row and column
  const int col0 = b0 + warp_n * FN * kFrag;
  // this warp's fragments inside y: batch columns (0 .. FN) and rows (0 .. FM)
  const int live = min(FN, max(0, (B - col0 + kFrag - 1) / kFrag));
  const int rows_live = min(FM, max(0, (Nn - row0 + kFrag - 1) / kFrag));

  FragC acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < tiles) {
      load_tile(smem + s * kStageHalves, W, x, Ni, Nn, B, n0, b0, k_begin + s * KT, k_end,
                vec_w, tid);
    }
    cp_async_commit();
  }

  for (int t = 0; t < tiles; ++t) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    const int next = t + STAGES - 1;
    if (next < tiles) {
      load_tile(smem + (next % STAGES) * kStageHalves, W, x, Ni, Nn, B, n0, b0,
                k_begin + next * KT, k_end, vec_w, tid);
    }
    cp_async_commit();

    const __half* ws = smem + (t % STAGES) * kStageHalves + warp_m * FM * kFrag * kLdA;
    const __half* xs = smem + (t % STAGES) * kStageHalves + kBM * kLdA + warp_n * FN * kFrag;
    const int k0 = k_begin + t * KT;
#pragma unroll
    for (int kk = 0; kk < KT; kk += kFrag) {
      if (k0 + kk >= k_end) break;  // the last tile of a split may be short
      if (live > 0) mma_step_live<FN>(live, acc, ws + kk, xs + kk * kLdB, rows_live);
    }
  }

  // Epilogue: whole fragments inside y go straight out; a fragment that crosses Nn goes
  // through a per-warp 16×16 scratch tile (the drained pipeline's memory).
  cp_async_wait<0>();
  __syncthreads();
  float* scratch = reinterpret_cast<float*>(smem_raw) + warp * kFrag * kFrag;
  float* out_split = out + static_cast<size_t>(split) * Nn * B;
#pragma unroll
  for (int i = 0; i < FM; ++i) {
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      const int r = row0 + i * kFrag, c = col0 + j * kFrag;
      if (r >= Nn || c >= B) continue;
      if (r + kFrag <= Nn) {
        wmma::store_matrix_sync(out_split + static_cast<size_t>(r) * B + c, acc[i][j], B,
                                wmma::mem_row_major);
      } else {
        wmma::store_matrix_sync(scratch, acc[i][j], kFrag, wmma::mem_row_major);
        __syncwarp();
        for (int e = lane; e < kFrag * kFrag; e += 32) {
          const int rr = r + e / kFrag;
          if (rr < Nn) out_split[static_cast<size_t>(rr) * B + c + e % kFrag] = scratch[e];
        }
        __syncwarp();
      }
    }
  }
}

// y = the sum of the SPLIT partial outputs, in split order.
extern "C" __global__ void __launch_bounds__(256)
classifier_wmma_batched_reduce(const float* __restrict__ partial, float* __restrict__ y,
                               int count, int splits) {
  cls_split_reduce(partial, y, count, splits);
}
