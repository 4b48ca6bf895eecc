// mma_fp16: the tensor-core rung below WMMA's abstraction. Each warp drives the PTX
// instruction mma.sync.m16n8k16 (fp16 inputs, fp32 accumulation) itself and loads its
// fragments with ldmatrix.x4 (.trans for B, which lies K×N row-major), four 8×8 tiles per
// instruction, straight into the registers the mma expects; WMMA's load_matrix_sync goes
// through a generic layout and cannot be told which fragments to share. The block computes
// a BM×BN tile of C with (BM/WM)·(BN/WN) warps of WM×WN; BM×BK tiles of A and BK×BN tiles
// of B stream through a STAGES-deep ring of shared-memory buffers filled by 16-byte
// cp.async, so loading later k-tiles overlaps the mmas on the current one. Rows are padded
// by 8 halves: each row pitch is then an odd number of 16-byte units, and the eight rows
// one ldmatrix phase reads fall in distinct banks. The accumulators go straight from
// registers to C (a quad of lanes writes 32 contiguous bytes of a row: whole sectors).
// The main loop hides the barrier between k-tiles: fragments are double-buffered in
// registers, each k16 step loading the next step's while its mmas run, and the last step
// of a tile issues its mmas before the wait and barrier for the next tile and that tile's
// first fragments (the barrier otherwise idles the tensor pipe: with one block of 8 warps
// per SM no other warps fill it; 331 → 397 TFLOP/s at 4096 on the H100). Tiles wholly
// inside the matrices are copied without bounds checks or per-chunk index arithmetic.
// Awkward sizes: cp.async needs 16-byte aligned rows, which the declaration asks for
// (row_alignment): where K or N is not a multiple of 8, ncuflow passes a copy of A or B
// whose rows are padded with zeros to a multiple of 8 halves (the copy is timed with the
// configuration), lda and ldb being the rows' lengths; the zero columns add nothing to C.
// The technique of the public "fast CUDA GEMM" write-ups for Ampere (ldmatrix, m16n8k16,
// multi-stage cp.async), on report 002's tensor-core rung and the tiling of reports 001/003.
// Tunables: BM, BN, BK, WM, WN, STAGES; GROUP_M (block rows walked together, for L2 reuse);
// MIN_BLOCKS (blocks per SM the register allocation must allow: __launch_bounds__).
// Analytic DRAM traffic without reuse through L2 across blocks (A read once per block
// column, B once per block row, C written once): 2·(M·K·ceil(N/BN) + K·N·ceil(M/BM)) +
// 4·M·N bytes, plus, where a padded copy runs, its input read and the copy written.
/*---
idea: mma.sync m16n8k16 fed by ldmatrix.x4 from padded shared memory, fragments double-buffered across the k-tile barrier, a STAGES-deep cp.async pipeline; a padded copy of A and B where rows are not 16-byte aligned
params:
  BM: 128
  BN: 256
  BK: 64
  WM: 64
  WN: 64
  STAGES: 3
  GROUP_M: 8
  MIN_BLOCKS: 1
smem_optin: true
dtype: float16
out_dtype: float32
row_alignment: {A: 16, B: 16}
launches:
  - kernel: matmul_mma_fp16
    name: gemm
    block: 32 * (BM // WM) * (BN // WN)
    grid: ceil_div(N, BN), ceil_div(M, BM)
    dynamic_smem: STAGES * (BM * (BK + 8) + BK * (BN + 8)) * 2
    args: [A, B, C, M, N, K, ld_A, ld_B]
executed_flops: 2 * round_up(M, BM) * round_up(N, BN) * round_up(K, BK)
model_dram_bytes: (M * K * ceil_div(N, BN) + K * N * ceil_div(M, BM)) * in_bytes + M * N * out_bytes + (ld_A != K) * M * (K + ld_A) * in_bytes + (ld_B != N) * K * (N + ld_B) * in_bytes
restrictions:
  # BK/16 k16 steps per tile, an even number: the two fragment sets alternate
  - WM % 16 == 0 and WN % 16 == 0 and BK % 32 == 0
  - BM % WM == 0 and BN % WN == 0
  - STAGES >= 2
  - GROUP_M >= 1
  - MIN_BLOCKS >= 1 and 32 * (BM // WM) * (BN // WN) * MIN_BLOCKS <= max_threads_per_sm
  - STAGES * (BM * (BK + 8) + BK * (BN + 8)) * 2 * MIN_BLOCKS <= smem_per_sm
  # registers per thread: WM·WN/32 accumulators, two sets of fragments ((WM + WN)/2) and
  # about 56 more (addresses, indices: 250 in all at 64×64), within the 255 a thread may
  # have and the 64 K 32-bit registers of an SM (every GPU since sm_70)
  - WM * WN // 32 + (WM + WN) // 2 + 56 <= 255
  - (WM * WN // 32 + (WM + WN) // 2 + 56) * 32 * (BM // WM) * (BN // WN) * MIN_BLOCKS <= 65536
---*/

#include <cuda_fp16.h>

#include "fp16_gemm.cuh"

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 64
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif

constexpr int kWarpSize = 32;
constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;
constexpr int kThreads = kWarpsM * kWarpsN * kWarpSize;
constexpr int kTilesM = WM / 16, kTilesN = WN / 8;  // m16n8 accumulator tiles per warp
constexpr int kLdA = BK + 8, kLdB = BN + 8;           // padded row pitches, in halves
constexpr int kStageA = BM * kLdA, kStageB = BK * kLdB;

static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % 32 == 0,
              "warp tiles of m16 and n16; an even number of k16 steps per tile");
static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
static_assert(STAGES >= 2, "a pipeline needs at least two stages");
static_assert(kThreads <= 1024, "too many threads per block");

// Four 8×8 b16 tiles; lanes 8i..8i+7 give the row addresses of tile i, and register i
// receives tile i, each lane holding two consecutive elements of one row (.trans: of one
// column).
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const __half* p) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const __half* p) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(p));
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
matmul_mma_fp16(const __half* __restrict__ A, const __half* __restrict__ B, float* __restrict__ C,
                int M, int N, int K, int lda, int ldb) {
  extern __shared__ __align__(128) unsigned char smem[];
  __half* smem_a = reinterpret_cast<__half*>(smem);  // STAGES × BM × kLdA
  __half* smem_b = smem_a + STAGES * kStageA;         // STAGES × BK × kLdB

  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  const BlockTile tile = grouped_block_tile(BM, BN, GROUP_M);
  const int block_row = tile.row, block_col = tile.col;
  const int k_tiles = (K + BK - 1) / BK;

  auto load_stage = [&](int stage, int k_tile) {
    const int k0 = k_tile * BK;
    load_tile_fp16<kThreads, BM, BK, kLdA>(smem_a + stage * kStageA, A, M, K, lda, block_row, k0);
    load_tile_fp16<kThreads, BK, BN, kLdB>(smem_b + stage * kStageB, B, K, N, ldb, k0, block_col);
  };

  float acc[kTilesM][kTilesN][4];
#pragma unroll
  for (int i = 0; i < kTilesM; ++i)
#pragma unroll
    for (int j = 0; j < kTilesN; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  // Prologue: tiles 0 .. STAGES-2 in flight. One commit group per tile, empty ones included,
  // so that "tile t has landed" is always "at most STAGES-2 groups pending" below.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    cp_async_commit();
  }

  // Each lane's ldmatrix row: lanes 0-15 address rows 0-15 of the first 8 columns, lanes
  // 16-31 the same rows of the next 8 (A: m rows, k columns; B: k rows, n columns).
  const int ld_row = lane % 16, ld_col = lane / 16 * 8;
  const __half* a_lane = smem_a + (warp_m * WM + ld_row) * kLdA + ld_col;
  const __half* b_lane = smem_b + ld_row * kLdB + warp_n * WN + ld_col;
  unsigned a[2][kTilesM][4];
  unsigned b[2][kTilesN][2];
  auto load_fragments = [&](int buf, int stage, int kk) {
    const __half* a_warp = a_lane + stage * kStageA + kk;
    const __half* b_warp = b_lane + stage * kStageB + kk * kLdB;
#pragma unroll
    for (int i = 0; i < kTilesM; ++i) ldmatrix_x4(a[buf][i], a_warp + i * 16 * kLdA);
#pragma unroll
    for (int j = 0; j < kTilesN; j += 2) {
      unsigned r[4];  // k 0-7 and 8-15 of n-tile j, then of n-tile j+1
      ldmatrix_x4_trans(r, b_warp + j * 8);
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

  constexpr int kSteps = BK / 16;
  cp_async_wait<STAGES - 2>();  // tile 0 has landed
  __syncthreads();
  load_fragments(0, 0, 0);
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int stage = kt % STAGES;
#pragma unroll
    for (int step = 0; step < kSteps; ++step) {
      if (step == 0) {
        // Tile kt-1's stage is free: every warp passed the barrier below after its last read.
        const int next = kt + STAGES - 1;
        if (next < k_tiles) load_stage(next % STAGES, next);
        cp_async_commit();
      }
      if (step < kSteps - 1) {
        load_fragments((step + 1) % 2, stage, (step + 1) * 16);
        mma_fragments(step % 2);
      } else {
        // The last step's mmas go first, so that the wait for tile kt+1, the barrier and
        // tile kt+1's first fragments overlap them instead of idling the tensor pipe.
        mma_fragments(step % 2);
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        if (kt + 1 < k_tiles) load_fragments((step + 1) % 2, (kt + 1) % STAGES, 0);
      }
    }
  }
  cp_async_wait<0>();  // only empty groups can be pending; leave none behind

  // Accumulator layout of m16n8: lane (g = lane/4, t = lane%4) holds row g, columns 2t and
  // 2t+1 in registers 0-1, and row g+8 in registers 2-3.
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < kTilesM; ++i) {
    const int row = block_row + warp_m * WM + i * 16 + g;
#pragma unroll
    for (int j = 0; j < kTilesN; ++j) {
      const int col = block_col + warp_n * WN + j * 8 + 2 * t;
      store_pair(C, M, N, row, col, acc[i][j][0], acc[i][j][1]);
      store_pair(C, M, N, row + 8, col, acc[i][j][2], acc[i][j][3]);
    }
  }
}
