// smem_tiled: the convolution as an implicit GEMM (output channels × pixels × Ni·Ky·Kx),
// tiled through shared memory and registers. A block computes a TW×TH pixel tile of one
// image for OC output channels; a thread computes RY pixels of one column (rows g·RY ..
// g·RY + RY − 1 of the tile) for PC output channels: RY·PC accumulators in registers.
// Input channels go by chunks: each chunk's input tile with its halo,
// (TH + Ky − 1) × (TW + Kx − 1) per channel, and its weights, transposed to
// [channel][ky][kx][output channel], are staged in shared memory by cp.async (zero-filled
// outside the tensors), STAGES chunks deep, so that the next chunk's copy overlaps this
// chunk's arithmetic. A chunk holds CC = max(1, min(CI, KMAX // (Ky·Kx))) channels, so
// that large filters stage fewer channels and the shared memory stays bounded.
// Inner loop, per channel and filter column kx: a thread loads its column window of
// RY + Ky − 1 inputs once and slides it over the Ky filter rows, each row costing PC/4
// float4 weight loads for RY·PC FMAs (3×3: 10 + 6 loads for 192 FMAs). The common square
// filters (1, 3, 5, 7) have kernels of their own with Kx, Ky constant (the window in
// registers, constant shared-memory offsets), launched by `when`; any other Kx × Ky takes
// the generic kernel (RY loads per tap).
// Bank conflicts: the lanes of a warp share one channel group, so weight loads are
// broadcasts; lanes run along x, TW per tile row, and when a warp spans 32/TW row groups
// the input row stride LDI (≥ TW + Kx − 1) is chosen with RY·LDI ≡ TW (mod 2·TW), which
// puts the row groups' loads in disjoint banks; the transposing weight copy moves cells of
// 4 output channels × 8 consecutive taps per warp instruction into 32 distinct banks
// (row stride OC + 4). From the implicit-GEMM formulation of convolution (as in cuDNN's
// IMPLICIT_GEMM algorithm and CUTLASS's implicit-GEMM convolutions) with the register
// tiling of the matmul ladder (reports 000, 001) and report 002's layer.
// Grid: x over pixel tiles, y over channel tiles, z over images × SPLITS. Where the tiles
// alone give fewer than TARGET_BLOCKS blocks (Conv 2, 14×14: 8 channel tiles per image),
// the input-channel chunks are split over SPLITS = max(1, min(chunks, TARGET_BLOCKS //
// tiles)) block sets that add their partial sums into y with atomics (a first launch zeroes
// y); SPLITS = 1 (TARGET_BLOCKS 0, or enough tiles, as Conv 1) stores plainly, one launch.
// Tunables TW (8, 16 or 32), TH, RY, OC, PC, CI, KMAX, STAGES, MIN_BLOCKS (the
// __launch_bounds__ residency hint), TARGET_BLOCKS. Defaults: 16×16 pixels × 64 channels
// per block of 256 threads, 8 × 8 per thread (64 accumulators, ≤ 128 registers for two
// blocks per SM); 16×16 tiles divide 224 and cover Conv 2's 14×14 plane with one tile
// (76 % useful), where 32×8 would compute 38 % useful pixels.
// Analytic DRAM traffic without reuse through L2 across blocks: each (pixel tile, channel
// tile, image) block reads its input tiles with their halo, the tiles of a row spanning
// Nx + ceil(Nx/TW)·(Kx − 1) columns, so x is read ceil(Nn/OC) times; and the weights of
// its channel tile, so w is read once per (pixel tile, image); y is written once, or, with
// SPLITS > 1, zeroed and then read and written by each split's atomics:
// 4·(ceil(Nn/OC)·B·Ni·(Nx + tx·(Kx−1))·(Ny + ty·(Ky−1)) + tx·ty·B·Nn·Ni·Ky·Kx)
//   + 4·B·Nn·Ny·Nx·(1 + 2·SPLITS if SPLITS > 1 else 1), tx = ceil(Nx/TW), ty = ceil(Ny/TH).
// Executed FLOPs: every thread computes its whole RY×PC tile (over zero-filled pixels and
// channels past Nx, Ny, Nn), over the real input channels of each chunk only:
// 2·B·round_up(Nn, OC)·round_up(Ny, TH)·round_up(Nx, TW)·Ni·Ky·Kx.
/*---
idea: implicit GEMM; TW×TH pixels × OC channels per block, RY×PC per thread; halo input tile and transposed weights staged by cp.async per channel chunk; split over channels where tiles are few
params:
  TW: 16
  TH: 16
  RY: 8
  OC: 64
  PC: 8
  CI: 8
  KMAX: 72
  STAGES: 2
  MIN_BLOCKS: 2
  TARGET_BLOCKS: 264
smem_optin: true
launches:
  - kernel: conv_zero
    name: zero
    when: max(1, min(ceil_div(Ni, max(1, min(CI, KMAX // (Ky * Kx)))), TARGET_BLOCKS // (ceil_div(Nx, TW) * ceil_div(Ny, TH) * ceil_div(Nn, OC) * B))) > 1
    block: 256
    grid: min(ceil_div(B * Nn * Ny * Nx, 256), 4096)
    args: [y, B * Nn * Ny * Nx]
  # one kernel per common square filter (constant Kx, Ky), the generic one otherwise
  - &tile
    kernel: conv_smem_tiled_3x3
    name: conv_3x3
    when: Kx == 3 and Ky == 3
    block: TW * (TH // RY) * (OC // PC)
    grid: ceil_div(Nx, TW) * ceil_div(Ny, TH), ceil_div(Nn, OC), B * max(1, min(ceil_div(Ni, max(1, min(CI, KMAX // (Ky * Kx)))), TARGET_BLOCKS // (ceil_div(Nx, TW) * ceil_div(Ny, TH) * ceil_div(Nn, OC) * B)))
    dynamic_smem: STAGES * 4 * round_up(max(1, min(CI, KMAX // (Ky * Kx))) * (Ky * Kx * (OC + 4) + (TH + Ky - 1) * (round_up(TW + Kx - 1 - TW // RY, 2 * TW // RY) + TW // RY)), 4)
  - <<: *tile
    kernel: conv_smem_tiled_1x1
    name: conv_1x1
    when: Kx == 1 and Ky == 1
  - <<: *tile
    kernel: conv_smem_tiled_5x5
    name: conv_5x5
    when: Kx == 5 and Ky == 5
  - <<: *tile
    kernel: conv_smem_tiled_7x7
    name: conv_7x7
    when: Kx == 7 and Ky == 7
  - <<: *tile
    kernel: conv_smem_tiled
    name: conv
    when: not (Kx == Ky and (Kx == 1 or Kx == 3 or Kx == 5 or Kx == 7))
executed_flops: 2 * B * round_up(Nn, OC) * round_up(Ny, TH) * round_up(Nx, TW) * Ni * Ky * Kx
model_dram_bytes: (ceil_div(Nn, OC) * B * Ni * (Nx + ceil_div(Nx, TW) * (Kx - 1)) * (Ny + ceil_div(Ny, TH) * (Ky - 1)) + ceil_div(Nx, TW) * ceil_div(Ny, TH) * B * Nn * Ni * Ky * Kx) * in_bytes + B * Nn * Ny * Nx * out_bytes * (1 + 2 * max(1, min(ceil_div(Ni, max(1, min(CI, KMAX // (Ky * Kx)))), TARGET_BLOCKS // (ceil_div(Nx, TW) * ceil_div(Ny, TH) * ceil_div(Nn, OC) * B))) * (max(1, min(ceil_div(Ni, max(1, min(CI, KMAX // (Ky * Kx)))), TARGET_BLOCKS // (ceil_div(Nx, TW) * ceil_div(Ny, TH) * ceil_div(Nn, OC) * B))) > 1))
restrictions:
  - TW == 8 or TW == 16 or TW == 32
  # a thread's RY rows: the row groups of a warp must fit the bank rule (RY divides TW)
  - RY >= 1 and TW % RY == 0 and TH % RY == 0
  # the lanes of a warp share one channel group (weight loads are broadcasts)
  - TW * (TH // RY) % 32 == 0
  - PC % 4 == 0 and OC % PC == 0 and OC % 8 == 0
  - TW * (TH // RY) * (OC // PC) <= 1024
  - CI >= 1 and KMAX >= 1
  - STAGES >= 2
  - MIN_BLOCKS >= 1 and TW * (TH // RY) * (OC // PC) * MIN_BLOCKS <= 2048
  - TARGET_BLOCKS >= 0
  # the input offsets within a chunk are int32
  - max(1, min(CI, KMAX // (Ky * Kx))) * (Ny + Ky - 1) * (Nx + Kx - 1) < 2 ** 31
---*/

#ifndef TW
#define TW 16
#endif
#ifndef TH
#define TH 16
#endif
#ifndef RY
#define RY 8
#endif
#ifndef OC
#define OC 64
#endif
#ifndef PC
#define PC 8
#endif
#ifndef CI
#define CI 8
#endif
#ifndef KMAX
#define KMAX 72
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 2
#endif
#ifndef TARGET_BLOCKS
#define TARGET_BLOCKS 264  // used by the launch geometry only: two blocks on each of 132 SMs
#endif

#include "../common/cp_async.cuh"

namespace conv_tiles {

constexpr int kRowGroups = TH / RY;            // thread rows of a tile (RY pixel rows each)
constexpr int kPixThreads = TW * kRowGroups;   // threads that share one channel group
constexpr int kChanGroups = OC / PC;
constexpr int kThreads = kPixThreads * kChanGroups;
constexpr int kWarps = kThreads / 32;
constexpr int kLdW = OC + 4;                   // row stride of the staged weights
// The weight copy: OC/4 groups of 4 output channels over the warps; with more warps than
// groups, kKSplit warps share a group and split its k cells.
constexpr int kOGroups = OC / 4;
constexpr int kKSplit = kWarps >= kOGroups ? kWarps / kOGroups : 1;
constexpr int kOGStride = kWarps >= kOGroups ? kOGroups : kWarps;  // groups copied at once
constexpr int kOGPasses = (kOGroups + kOGStride - 1) / kOGStride;
// Input row stride: the smallest LDI ≥ TW + Kx − 1 with LDI ≡ TW/RY (mod 2·TW/RY), i.e.
// RY·LDI an odd multiple of TW: the 32/TW row groups of a warp, RY rows apart, then start
// their TW-wide loads TW banks apart (mod 32), all 32 lanes in distinct banks.
constexpr int kLdOff = TW / RY;
constexpr int kLdMod = 2 * TW / RY;

static_assert(TW == 8 || TW == 16 || TW == 32, "a tile row is 8, 16 or 32 lanes");
static_assert(TW % RY == 0 && TH % RY == 0, "RY must divide TW and TH");
static_assert(kPixThreads % 32 == 0, "a warp must hold one channel group");
static_assert(PC % 4 == 0 && OC % PC == 0 && OC % 8 == 0, "channel groups are float4s");
static_assert(kThreads <= 1024, "too many threads per block");
static_assert(STAGES >= 2, "the pipeline needs at least two stages");

__host__ __device__ constexpr int input_ld(int kx) {
  return (TW + kx - 1 - kLdOff + kLdMod - 1) / kLdMod * kLdMod + kLdOff;
}

__device__ __forceinline__ int chunk_channels(int Kx, int Ky) {
  return max(1, min(CI, KMAX / (Kx * Ky)));
}

// What a block needs to stage and use a chunk; Kx, Ky, rows, cols, ldi are compile-time
// constants in the specialized paths (KXC, KYC > 0).
struct Geometry {
  int Ni, Nn, in_w, in_h;
  int Kx, Ky, taps;        // filter
  int cc;                  // channels per chunk
  int rows, cols, ldi;     // staged input tile: rows × cols, row stride ldi
  int w_floats, stage_floats;
  int x0, y0, n0;          // tile origin (input coordinates = output coordinates) and channel
};

// Stages chunk `chunk` (channels c0 .. c0 + cc − 1) into `stage`: weights ws[k][o] (k =
// channel·taps + tap, o = output channel in the tile), then the input tile
// is[channel][row][col]; both zero outside the tensors.
__device__ __forceinline__ void load_chunk(float* __restrict__ stage, const float* __restrict__ xb,
                                           const float* __restrict__ w, const Geometry& g,
                                           int chunk, int tid) {
  const int c0 = chunk * g.cc;
  // Weights: a warp copies cells of 4 output channels (lane / 8) × 8 consecutive k
  // (lane % 8): 4 runs of 32 bytes of w, 32 distinct banks of ws (row stride ≡ 4 mod 8).
  // A warp keeps its output channels and walks k, so the address is a running offset.
  {
    const int kc = g.cc * g.taps;                  // k of the chunk, staged
    const int k_first = c0 * g.taps;               // its first k in a row of w
    const int k_end = min(kc, g.Ni * g.taps - k_first);  // k inside w (≥ 1)
    const size_t w_row = static_cast<size_t>(g.Ni) * g.taps;
    const int warp = tid / 32, lane = tid % 32;
    if (warp < kOGStride * kKSplit) {
#pragma unroll
      for (int p = 0; p < kOGPasses; ++p) {
        const int og = warp % kOGStride + p * kOGStride;
        if (kOGPasses * kOGStride != kOGroups && og >= kOGroups) break;
        const int o = og * 4 + lane / 8;
        const int n = g.n0 + o;
        const int bytes = n < g.Nn ? 4 : 0;
        // a row of w that exists (nothing is read where bytes is 0)
        const float* const row = w + static_cast<size_t>(min(n, g.Nn - 1)) * w_row + k_first;
        float* const dst = stage + o;
        for (int k = (warp / kOGStride) * 8 + lane % 8; k - lane % 8 < kc; k += kKSplit * 8) {
          if (k < kc) cp_async_4(dst + k * kLdW, row + min(k, k_end - 1), k < k_end ? bytes : 0);
        }
      }
    }
  }
  // Input: consecutive threads take consecutive elements of the flattened tile (channel,
  // row, col), walked incrementally (one step is kThreads elements); coordinates outside x
  // are clamped to an element that exists, and zero-filled. Offsets from the chunk's
  // origin fit in int32 (a restriction: the chunk's channels span less than 2^31 floats).
  {
    float* const is = stage + g.w_floats;
    const int per_c = g.rows * g.cols;
    const int plane = g.in_h * g.in_w;
    const int c_last = g.Ni - 1 - c0, r_last = g.in_h - 1 - g.y0, q_last = g.in_w - 1 - g.x0;
    const float* const origin =
        xb + static_cast<size_t>(c0) * plane + static_cast<size_t>(g.y0) * g.in_w + g.x0;
    int q = tid % g.cols, r = (tid / g.cols) % g.rows, c = tid / per_c;
    const int dq = kThreads % g.cols, dr = (kThreads / g.cols) % g.rows, dc = kThreads / per_c;
    while (c < g.cc) {
      const bool inside = c <= c_last && r <= r_last && q <= q_last;
      const int offset = min(c, c_last) * plane + min(r, r_last) * g.in_w + min(q, q_last);
      cp_async_4(is + (c * g.rows + r) * g.ldi + q, origin + offset, inside ? 4 : 0);
      q += dq;
      r += dr;
      c += dc;
      if (q >= g.cols) q -= g.cols, ++r;
      if (r >= g.rows) r -= g.rows, ++c;
    }
  }
}

// PC weights of one tap for the thread's channel group (a broadcast within the warp).
__device__ __forceinline__ void load_weights(const float* __restrict__ p, float (&wv)[PC]) {
#pragma unroll
  for (int h = 0; h < PC / 4; ++h) {
    const float4 v = *reinterpret_cast<const float4*>(p + 4 * h);
    wv[4 * h] = v.x, wv[4 * h + 1] = v.y, wv[4 * h + 2] = v.z, wv[4 * h + 3] = v.w;
  }
}

// acc[i][j] += in[i + Shift] · wv[j]
template <int Shift, int Len>
__device__ __forceinline__ void fma_tile(const float (&in)[Len], const float (&wv)[PC],
                                         float (&acc)[RY][PC]) {
#pragma unroll
  for (int i = 0; i < RY; ++i) {
#pragma unroll
    for (int j = 0; j < PC; ++j) acc[i][j] = fmaf(in[i + Shift], wv[j], acc[i][j]);
  }
}

// Sliding the column window over the KYC filter rows, unrolled (Ky a constant).
template <int KYC, int Ky_i = 0>
__device__ __forceinline__ void slide_rows(const float (&v)[RY + KYC - 1],
                                           const float* __restrict__ wtap, int tap_stride,
                                           float (&acc)[RY][PC]) {
  if constexpr (Ky_i < KYC) {
    float wv[PC];
    load_weights(wtap + Ky_i * tap_stride, wv);
    fma_tile<Ky_i>(v, wv, acc);
    slide_rows<KYC, Ky_i + 1>(v, wtap, tap_stride, acc);
  }
}

// One staged chunk: ws points at the thread's channel group in the weights, is at its
// column and first row in the input tile.
template <int KXC, int KYC>
__device__ __forceinline__ void compute_chunk(const float* __restrict__ ws,
                                              const float* __restrict__ is, const Geometry& g,
                                              int channels, float (&acc)[RY][PC]) {
  if constexpr (KXC > 0) {
    constexpr int kLd = input_ld(KXC);
    constexpr int kRows = TH + KYC - 1;
    constexpr int kTaps = KXC * KYC;
#pragma unroll 1
    for (int c = 0; c < channels; ++c) {
      const float* const in_c = is + c * kRows * kLd;
      const float* const w_c = ws + c * kTaps * kLdW;
#pragma unroll 1
      for (int kx = 0; kx < KXC; ++kx) {
        float v[RY + KYC - 1];
#pragma unroll
        for (int r = 0; r < RY + KYC - 1; ++r) v[r] = in_c[r * kLd + kx];
        slide_rows<KYC>(v, w_c + kx * kLdW, KXC * kLdW, acc);
      }
    }
  } else {
#pragma unroll 1
    for (int c = 0; c < channels; ++c) {
      const float* const in_c = is + c * g.rows * g.ldi;
      const float* const w_c = ws + c * g.taps * kLdW;
#pragma unroll 1
      for (int ky = 0; ky < g.Ky; ++ky) {
#pragma unroll 1
        for (int kx = 0; kx < g.Kx; ++kx) {
          float v[RY];
#pragma unroll
          for (int r = 0; r < RY; ++r) v[r] = in_c[(r + ky) * g.ldi + kx];
          float wv[PC];
          load_weights(w_c + (ky * g.Kx + kx) * kLdW, wv);
          fma_tile<0>(v, wv, acc);
        }
      }
    }
  }
}

template <int KXC, int KYC>
__device__ __forceinline__ void conv_tile(const float* __restrict__ x, const float* __restrict__ w,
                                          float* __restrict__ y, int B, int Ni, int Nn, int Nx,
                                          int Ny, int Kx, int Ky, float* smem) {
  Geometry g;
  g.Ni = Ni, g.Nn = Nn;
  g.Kx = KXC > 0 ? KXC : Kx;
  g.Ky = KYC > 0 ? KYC : Ky;
  g.taps = g.Kx * g.Ky;
  g.in_w = Nx + g.Kx - 1, g.in_h = Ny + g.Ky - 1;
  g.cc = chunk_channels(g.Kx, g.Ky);
  g.rows = TH + g.Ky - 1, g.cols = TW + g.Kx - 1, g.ldi = input_ld(g.Kx);
  g.w_floats = g.cc * g.taps * kLdW;
  g.stage_floats = (g.w_floats + g.cc * g.rows * g.ldi + 3) / 4 * 4;
  const int tiles_x = (Nx + TW - 1) / TW;
  g.x0 = (blockIdx.x % tiles_x) * TW;
  g.y0 = (blockIdx.x / tiles_x) * TH;
  g.n0 = blockIdx.y * OC;

  // grid.z = B · splits; split s takes chunks [s·chunks/splits, (s+1)·chunks/splits)
  const int splits = gridDim.z / B;
  const int b = blockIdx.z % B, split = blockIdx.z / B;
  const int chunks = (Ni + g.cc - 1) / g.cc;
  const int first = static_cast<int>(static_cast<long long>(split) * chunks / splits);
  const int last = static_cast<int>(static_cast<long long>(split + 1) * chunks / splits);
  const int count = last - first;

  const int tid = threadIdx.x;
  const int lx = tid % TW;                  // column in the tile
  const int rg = (tid / TW) % kRowGroups;   // row group: rows rg·RY .. rg·RY + RY − 1
  const int cg = tid / kPixThreads;         // channel group: channels cg·PC .. cg·PC + PC − 1
  const float* const xb = x + static_cast<size_t>(b) * Ni * g.in_h * g.in_w;

  float acc[RY][PC];
#pragma unroll
  for (int i = 0; i < RY; ++i) {
#pragma unroll
    for (int j = 0; j < PC; ++j) acc[i][j] = 0.0f;
  }

  // Prologue: chunks first .. first + STAGES − 2 into stages 0 .. STAGES − 2; a group is
  // committed even when there is no chunk left, so that group t always holds chunk t.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < count) load_chunk(smem + s * g.stage_floats, xb, w, g, first + s, tid);
    cp_async_commit();
  }
  int read_stage = 0, write_stage = STAGES - 1;
#pragma unroll 1
  for (int t = 0; t < count; ++t) {
    // chunk t has landed once at most STAGES − 2 groups are pending; the barrier makes
    // every thread's copies visible and tells that the stage refilled next is free
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    if (t + STAGES - 1 < count) {
      load_chunk(smem + write_stage * g.stage_floats, xb, w, g, first + t + STAGES - 1, tid);
    }
    cp_async_commit();
    const float* const stage = smem + read_stage * g.stage_floats;
    const int channels = min(g.cc, Ni - (first + t) * g.cc);
    compute_chunk<KXC, KYC>(stage + cg * PC, stage + g.w_floats + rg * RY * g.ldi + lx, g,
                            channels, acc);
    read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;
    write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;
  }

  // Store (SPLITS = 1) or add into the zeroed y (SPLITS > 1).
  const int col = g.x0 + lx;
  if (col >= Nx) return;
#pragma unroll
  for (int i = 0; i < RY; ++i) {
    const int row = g.y0 + rg * RY + i;
    if (row >= Ny) continue;
#pragma unroll
    for (int j = 0; j < PC; ++j) {
      const int n = g.n0 + cg * PC + j;
      if (n >= Nn) continue;
      float* const out = y + ((static_cast<size_t>(b) * Nn + n) * Ny + row) * Nx + col;
      if (splits == 1) {
        *out = acc[i][j];
      } else {
        atomicAdd(out, acc[i][j]);
      }
    }
  }
}

}  // namespace conv_tiles

// One kernel per filter shape, so that each gets its own register allocation (one kernel
// holding all five paths spills at 128 registers); the declaration launches the one whose
// shape the configuration has.
#define CONV_PARAMS                                                                      \
  const float *__restrict__ x, const float *__restrict__ w, float *__restrict__ y, int B, \
      int Ni, int Nn, int Nx, int Ny, int Kx, int Ky
#define CONV_BODY(KXC, KYC)                                                             \
  extern __shared__ float4 smem_vec[]; /* float4: the weight rows are read as float4 */ \
  conv_tiles::conv_tile<KXC, KYC>(x, w, y, B, Ni, Nn, Nx, Ny, Kx, Ky,                  \
                                  reinterpret_cast<float*>(smem_vec))

extern "C" __global__ void __launch_bounds__(conv_tiles::kThreads, MIN_BLOCKS)
conv_smem_tiled(CONV_PARAMS) {  // any Kx × Ky
  CONV_BODY(0, 0);
}

extern "C" __global__ void __launch_bounds__(conv_tiles::kThreads, MIN_BLOCKS)
conv_smem_tiled_1x1(CONV_PARAMS) {
  CONV_BODY(1, 1);
}

extern "C" __global__ void __launch_bounds__(conv_tiles::kThreads, MIN_BLOCKS)
conv_smem_tiled_3x3(CONV_PARAMS) {
  CONV_BODY(3, 3);
}

extern "C" __global__ void __launch_bounds__(conv_tiles::kThreads, MIN_BLOCKS)
conv_smem_tiled_5x5(CONV_PARAMS) {
  CONV_BODY(5, 5);
}

extern "C" __global__ void __launch_bounds__(conv_tiles::kThreads, MIN_BLOCKS)
conv_smem_tiled_7x7(CONV_PARAMS) {
  CONV_BODY(7, 7);
}

// y = 0 before the splits add into it (launched only where SPLITS > 1).
extern "C" __global__ void __launch_bounds__(256) conv_zero(float* __restrict__ y, int count) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    y[i] = 0.0f;
  }
}
