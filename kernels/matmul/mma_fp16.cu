// mma_fp16: the tensor-core rung below WMMA's abstraction. Each warp drives the PTX
// instruction mma.sync.m16n8k16 (fp16 inputs, fp32 accumulation) itself and loads its
// fragments with ldmatrix.x4 (.trans for B, which lies K×N row-major), four 8×8 tiles per
// instruction, straight into the registers the mma expects; WMMA's load_matrix_sync goes
// through a generic layout and cannot be told which fragments to share. The block computes
// a BM×BN tile of C with (BM/WM)·(BN/WN) warps of WM×WN over k-tiles of 64.
// The tiles come by the Tensor Memory Accelerator: one thread issues cp.async.bulk.tensor
// for a stage (the BM×64 tile of A, BN/64 boxes of 64×64 of B) with tensor maps built on
// the host, STAGES-1 tiles ahead of the mmas, and the copy signals the stage's "full"
// mbarrier by the bytes it wrote. TMA writes the 128-byte swizzled layout (16-byte chunk c
// of row r at chunk c ^ (r % 8)), which the ldmatrix addresses follow: conflict-free
// without padding, and it zero-fills what lies outside the matrices, so no tile needs
// bounds checks. The previous version copied the tiles with 16-byte cp.async (12 per thread
// per k-tile, with their addresses): 393.8 TFLOP/s at 4096 on the H100, against 437.6 with
// TMA and the same tiles and barriers (cuBLAS 760-773 in those probes; TUNING.md; the
// default study's figures are in docs/results.md).
// No block barrier in the main loop: each stage has a second mbarrier, "empty", on which
// every thread arrives once it has loaded its last fragments from the stage, and the thread
// that refills a stage waits on it first: only that thread's warp waits for the others, and
// every other warp waits only for its data. Fragments are double-buffered in registers,
// each k16 step loading the next step's while its mmas run, and the last step of a tile
// issues its mmas before the wait for the next tile and that tile's first fragments. With a
// barrier per k-tile instead, one block of eight warps (128×256, four stages) ran at 434
// TFLOP/s and two blocks of four warps per SM (128×128) at 458-470; without, 479 and
// 468-472 (H100 probes, 2026-11-24, TUNING.md).
// Awkward sizes: a tensor map needs 16-byte aligned rows, which the declaration asks for
// (row_alignment): where K or N is not a multiple of 8 ncuflow passes a copy of A or B with
// rows padded to a multiple of 8 halves (timed with the configuration), and the maps
// describe the copies (ld_A, ld_B).
// The technique of the public "fast CUDA GEMM" write-ups for Ampere (ldmatrix, m16n8k16,
// multi-stage pipelines) fed the Hopper way, on report 002's tensor-core rung and the
// tiling of reports 001/003.
// Tunables: BM, BN, WM, WN, STAGES; GROUP_M (block rows walked together, for L2 reuse);
// MIN_BLOCKS (blocks per SM the register allocation must allow: __launch_bounds__).
// Analytic DRAM traffic without reuse through L2 across blocks (A read once per block
// column, B once per block row, C written once): 2·(M·K·ceil(N/BN) + K·N·ceil(M/BM)) +
// 4·M·N bytes, plus, where a padded copy runs, its input read and the copy written.
/*---
idea: mma.sync m16n8k16 fed by ldmatrix.x4 from 128-byte swizzled shared memory that TMA fills, full and empty mbarriers per stage instead of block barriers, fragments double-buffered; a padded copy of A and B where rows are not 16-byte aligned
params:
  BM: 128
  BN: 256
  WM: 64
  WN: 64
  STAGES: 4
  GROUP_M: 8
  MIN_BLOCKS: 1
smem_optin: true
dtype: float16
out_dtype: float32
row_alignment: {A: 16, B: 16}
tensor_maps:
  map_a: {tensor: A, shape: "M, K", ld: ld_A, box: "BM, 64"}
  map_b: {tensor: B, shape: "K, N", ld: ld_B, box: "64, 64"}
launches:
  - kernel: matmul_mma_fp16
    name: gemm
    block: 32 * (BM // WM) * (BN // WN)
    grid: ceil_div(N, BN), ceil_div(M, BM)
    dynamic_smem: STAGES * (BM + BN) * 128 + 2048
    args: [map_a, map_b, C, M, N, K]
executed_flops: 2 * round_up(M, BM) * round_up(N, BN) * round_up(K, 64)
model_dram_bytes: (M * K * ceil_div(N, BN) + K * N * ceil_div(M, BM)) * in_bytes + M * N * out_bytes + (ld_A != K) * M * (K + ld_A) * in_bytes + (ld_B != N) * K * (N + ld_B) * in_bytes
restrictions:
  - WM % 16 == 0 and WN % 16 == 0
  # a TMA box has at most 256 rows; B comes in boxes of 64 columns
  - BM % WM == 0 and BN % WN == 0 and BM <= 256 and BN % 64 == 0
  - STAGES >= 2
  - GROUP_M >= 1
  - MIN_BLOCKS >= 1 and 32 * (BM // WM) * (BN // WN) * MIN_BLOCKS <= max_threads_per_sm
  # the stages, 1 KB of alignment and the mbarriers, per block
  - (STAGES * (BM + BN) * 128 + 2048) * MIN_BLOCKS <= smem_per_sm
  # registers per thread: WM·WN/32 accumulators, two sets of fragments ((WM + WN)/2) and
  # about 56 more (ptxas: 213-217 in all at 64×64, an estimate on the safe side), within
  # the 255 a thread may have and the 64 K 32-bit registers of an SM
  - WM * WN // 32 + (WM + WN) // 2 + 56 <= 255
  - (WM * WN // 32 + (WM + WN) // 2 + 56) * 32 * (BM // WM) * (BN // WN) * MIN_BLOCKS <= 65536
---*/

#include <cuda_fp16.h>

#include "../common/tma.cuh"
#include "fp16_gemm.cuh"

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif

constexpr int kBK = 64;  // halves per k-tile: one 128-byte swizzle row
constexpr int kWarpSize = 32;
constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;
constexpr int kThreads = kWarpsM * kWarpsN * kWarpSize;
constexpr int kTilesM = WM / 16, kTilesN = WN / 8;  // m16n8 accumulator tiles per warp
// A stage: the BM×64 tile of A (BM rows of 128 bytes), then BN/64 boxes of B, each 64
// k-rows of 64 columns (128 bytes).
constexpr int kStageABytes = BM * 128, kBoxBBytes = kBK * 128;
constexpr int kStageBytes = kStageABytes + BN / 64 * kBoxBBytes;

static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tiles of m16 and pairs of n8");
static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
static_assert(BM <= 256 && BN % 64 == 0, "a TMA box has at most 256 rows; B comes in boxes of 64");
static_assert(STAGES >= 2, "a pipeline needs at least two stages");
static_assert(kStageBytes % 1024 == 0, "stages keep the 1024-byte swizzle alignment");

// Four 8×8 b16 tiles; lanes 8i..8i+7 give the row addresses (in shared memory) of tile i,
// and register i receives tile i, each lane holding two consecutive elements of one row
// (.trans: of one column).

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// d += a·b for one 16×8×16 tile: a is the 16×16 A fragment (four registers of two halves),
// b the 16×8 B fragment (two registers), d four fp32 accumulators.
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                          unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS)
matmul_mma_fp16(const void* __restrict__ map_a, const void* __restrict__ map_b,
                float* __restrict__ C, int M, int N, int K) {
  extern __shared__ unsigned char smem_raw[];
  // every thread reads every stage
  const StageRing ring = stage_ring(smem_raw, STAGES, kStageBytes, kThreads);
  unsigned char* const smem = ring.stages;
  unsigned long long *const full = ring.full, *const empty = ring.empty;
  const unsigned smem_base = smem_u32(smem);

  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  const BlockTile tile = grouped_block_tile(BM, BN, GROUP_M);
  const int k_tiles = (K + kBK - 1) / kBK;

  // Thread 0 alone: the stage's boxes, counted in bytes on its full mbarrier; TMA
  // zero-fills what lies outside the matrices.
  auto load_stage = [&](int stage, int k_tile) {
    tma_load_gemm_stage<BN / 64>(smem + stage * kStageBytes, kStageABytes, kStageBytes,
                                 &full[stage], map_a, map_b, k_tile * kBK, tile.row, tile.col);
  };

  float acc[kTilesM][kTilesN][4];
#pragma unroll
  for (int i = 0; i < kTilesM; ++i)
#pragma unroll
    for (int j = 0; j < kTilesN; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES - 1 && s < k_tiles; ++s) load_stage(s, s);
  }

  // Each lane's ldmatrix row: lanes 0-15 address rows 0-15 of the first 8 columns, lanes
  // 16-31 the same rows of the next 8 (A: m rows, k columns; B: k rows, n columns). In the
  // 128-byte swizzle, 16-byte chunk c of row r lies at chunk c ^ (r % 8); r % 8 is lane % 8
  // for every row a lane addresses, so the eight rows of one 8×8 tile fall in eight
  // distinct chunks: no bank conflicts.
  const int ld_row = lane % 16, hi = lane / 16, lo = lane % 8;
  const unsigned a_lane = smem_base + (warp_m * WM + ld_row) * 128;
  const unsigned b_lane = smem_base + kStageABytes + ld_row * 128;
  unsigned a[2][kTilesM][4];
  unsigned b[2][kTilesN][2];
  auto load_fragments = [&](int buf, int stage, int step) {
    const unsigned a_stage = a_lane + stage * kStageBytes + (((2 * step + hi) ^ lo) << 4);
#pragma unroll
    for (int i = 0; i < kTilesM; ++i) ldmatrix_x4(a[buf][i], a_stage + i * 16 * 128);
    const unsigned b_stage = b_lane + stage * kStageBytes + step * 16 * 128;
#pragma unroll
    for (int j = 0; j < kTilesN; j += 2) {
      const int n8 = warp_n * (WN / 8) + j + hi;  // which 8 columns of the block tile
      unsigned r[4];
      ldmatrix_x4_trans(r, b_stage + n8 / 8 * kBoxBBytes + (((n8 % 8) ^ lo) << 4));
      b[buf][j][0] = r[0];
      b[buf][j][1] = r[1];
      b[buf][j + 1][0] = r[2];
      b[buf][j + 1][1] = r[3];
    }
  };
  auto mma_fragments = [&](int buf) {
#pragma unroll
    for (int i = 0; i < kTilesM; ++i)
#pragma unroll
      for (int j = 0; j < kTilesN; ++j) mma_16816(acc[i][j], a[buf][i], b[buf][j][0], b[buf][j][1]);
  };

  constexpr int kSteps = kBK / 16;
  mbar_wait(&full[0], 0);  // tile 0 has landed
  load_fragments(0, 0, 0);
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int stage = kt % STAGES;
#pragma unroll
    for (int step = 0; step < kSteps; ++step) {
      if (step == 0 && threadIdx.x == 0) {
        // Tile kt-1's stage is refilled once every thread has read it.
        const int next = kt + STAGES - 1;
        if (next < k_tiles) {
          if (next >= STAGES) mbar_wait(&empty[next % STAGES], (next / STAGES + 1) & 1);
          load_stage(next % STAGES, next);
        }
      }
      if (step < kSteps - 1) {
        load_fragments((step + 1) % 2, stage, step + 1);
        if (step + 1 == kSteps - 1) mbar_arrive(&empty[stage]);  // its last read of the stage
        mma_fragments(step % 2);
      } else {
        // The last step's mmas go first, so that the wait for tile kt+1 and its first
        // fragments overlap them instead of idling the tensor pipe.
        mma_fragments(step % 2);
        if (kt + 1 < k_tiles) {
          mbar_wait(&full[(kt + 1) % STAGES], ((kt + 1) / STAGES) & 1);
          load_fragments((step + 1) % 2, (kt + 1) % STAGES, 0);
        }
      }
    }
  }

  // Accumulator layout of m16n8: lane (g = lane/4, t = lane%4) holds row g, columns 2t and
  // 2t+1 in registers 0-1, and row g+8 in registers 2-3.
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < kTilesM; ++i) {
    const int row = tile.row + warp_m * WM + i * 16 + g;
#pragma unroll
    for (int j = 0; j < kTilesN; ++j) {
      const int col = tile.col + warp_n * WN + j * 8 + 2 * t;
      store_pair(C, M, N, row, col, acc[i][j][0], acc[i][j][1]);
      store_pair(C, M, N, row + 8, col, acc[i][j][2], acc[i][j][3]);
    }
  }
}
