// wmma_fp16_pipelined: the block computes a BM×BN tile of C with (BM/WM)·(BN/WN) warps, each
// holding (WM/16)·(WN/16) WMMA accumulator fragments (fp16 inputs, fp32 accumulation). BM×BK
// tiles of A and BK×BN tiles of B stream through a STAGES-deep ring of shared-memory buffers
// filled with 16-byte cp.async (zero-filled past the edges), so loads of later tiles overlap
// the tensor-core work on the current one. Where K or N is not a multiple of 8 (rows not
// 16-byte aligned) the kernel reads row-padded copies of A and B that ncuflow makes for
// it (row_alignment), as mma_fp16 does: the guarded per-half loads this rung used instead
// ran at 44 TFLOP/s at 2049, their duration alternating between two values from launch
// to launch. Rows are padded by
// 8 halves to spread ldmatrix rows over all banks; the epilogue goes through shared memory
// (the same buffers) to coalesced float4 stores.
// From report 002 (its tensor-core rung), with the tiling of reports 001, 003 and 004.
// Tunables: BM, BN, BK, WM, WN, STAGES; GROUP_M (block rows walked together, for L2 reuse);
// MIN_BLOCKS (blocks per SM the register allocation must allow: __launch_bounds__).
// Analytic DRAM traffic without reuse through L2 across blocks (A is read once per block
// column, B once per block row): 2·(M·K·ceil(N/BN) + K·N·ceil(M/BM)) + 4·M·N bytes, plus,
// where a padded copy runs, its input read and the copy written.
// At M=N=K=2049 every warp computes all its fragments over zero-filled tiles: M and N
// padded to 2176 (BM, BN 128), K to 2080 (BK 32): tensor executed_flops / flops = 1.145.
/*---
idea: block-tiled WMMA with a STAGES-deep cp.async pipeline through padded shared memory; a padded copy of A and B where rows are not 16-byte aligned
params:
  BM: 128
  BN: 128
  BK: 32
  WM: 64
  WN: 32
  STAGES: 4
  GROUP_M: 8
  MIN_BLOCKS: 2
smem_optin: true
dtype: float16
out_dtype: float32
row_alignment: {A: 16, B: 16}
launches:
  - kernel: matmul_wmma_fp16_pipelined
    name: gemm
    block: 32 * (BM // WM) * (BN // WN)
    grid: ceil_div(N, BN), ceil_div(M, BM)
    dynamic_smem: max(STAGES * (BM * (BK + 8) + BK * (BN + 8)) * 2, BM * (BN + 8) * 4)
    args: [A, B, C, M, N, K, ld_A, ld_B]
executed_flops: 2 * round_up(M, BM) * round_up(N, BN) * round_up(K, BK)
model_dram_bytes: (M * K * ceil_div(N, BN) + K * N * ceil_div(M, BM)) * in_bytes + M * N * out_bytes + (ld_A != K) * M * (K + ld_A) * in_bytes + (ld_B != N) * K * (N + ld_B) * in_bytes
restrictions:
  - WM >= 16 and WN >= 16 and BK >= 16
  - WM % 16 == 0 and WN % 16 == 0 and BK % 16 == 0
  - BM % WM == 0 and BN % WN == 0
  - STAGES >= 2
  - GROUP_M >= 1
  - MIN_BLOCKS >= 1 and 32 * (BM // WM) * (BN // WN) * MIN_BLOCKS <= 2048
---*/

#include <cuda_fp16.h>
#include <mma.h>

#include "fp16_gemm.cuh"

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 2
#endif

namespace wmma = nvcuda::wmma;

constexpr int kFrag = 16;  // WMMA tile edge (m = n = k = 16)
constexpr int kWarpSize = 32;
constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;
constexpr int kThreads = kWarpsM * kWarpsN * kWarpSize;
constexpr int kFragsM = WM / kFrag, kFragsN = WN / kFrag;
// Shared-memory leading dimensions. The +8 halves make each row pitch an odd multiple of 16
// bytes (BK and BN are multiples of 16), so the eight 16-byte rows that one ldmatrix phase
// reads fall in distinct banks.
constexpr int kLdA = BK + 8, kLdB = BN + 8;
constexpr int kStageA = BM * kLdA, kStageB = BK * kLdB;  // halves per stage
// The fp32 C tile reuses the buffers after the main loop; +8 floats per row keeps the
// accumulator stores of a half-warp (four rows of 8 floats) in distinct banks.
constexpr int kLdC = BN + 8;

static_assert(WM % kFrag == 0 && WN % kFrag == 0 && BK % kFrag == 0, "WMMA tiles are 16×16×16");
static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
static_assert(STAGES >= 2, "a pipeline needs at least two stages");
static_assert(kThreads <= 1024, "too many threads per block");

using FragA = wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, __half, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, __half, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float>;

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS)
matmul_wmma_fp16_pipelined(const __half* __restrict__ A, const __half* __restrict__ B,
                           float* __restrict__ C, int M, int N, int K, int lda, int ldb) {
  extern __shared__ __align__(128) unsigned char smem[];
  __half* smem_a = reinterpret_cast<__half*>(smem);  // STAGES × BM × kLdA
  __half* smem_b = smem_a + STAGES * kStageA;         // STAGES × BK × kLdB
  float* smem_c = reinterpret_cast<float*>(smem);    // BM × kLdC, after the main loop

  const int warp = threadIdx.x / kWarpSize;
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  const BlockTile tile = grouped_block_tile(BM, BN, GROUP_M);
  const int block_row = tile.row, block_col = tile.col;
  const int k_tiles = (K + BK - 1) / BK;

  auto load_stage = [&](int stage, int k_tile) {
    const int k0 = k_tile * BK;
    load_tile_fp16<kThreads, BM, BK, kLdA>(smem_a + stage * kStageA, A, M, K, lda, block_row, k0);
    load_tile_fp16<kThreads, BK, BN, kLdB>(smem_b + stage * kStageB, B, K, N, ldb, k0, block_col);
  };

  FragC acc[kFragsM][kFragsN];
#pragma unroll
  for (int i = 0; i < kFragsM; ++i)
#pragma unroll
    for (int j = 0; j < kFragsN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  // Prologue: tiles 0 .. STAGES-2 in flight. One commit group per tile, empty ones included,
  // so that "tile t has landed" is always "at most STAGES-2 groups pending" below.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    cp_async_commit();
  }

  for (int kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt have landed
    // Every thread's copies of tile kt are visible, and every warp has finished tile kt-1,
    // whose stage is the one refilled next.
    __syncthreads();
    const int next = kt + STAGES - 1;
    if (next < k_tiles) load_stage(next % STAGES, next);
    cp_async_commit();

    const int stage = kt % STAGES;
    const __half* a_warp = smem_a + stage * kStageA + warp_m * WM * kLdA;
    const __half* b_warp = smem_b + stage * kStageB + warp_n * WN;
#pragma unroll
    for (int kk = 0; kk < BK; kk += kFrag) {
      // All fragments of this k-step first, so the loads overlap and the mmas run back to back.
      FragA a[kFragsM];
      FragB b[kFragsN];
#pragma unroll
      for (int i = 0; i < kFragsM; ++i)
        wmma::load_matrix_sync(a[i], a_warp + i * kFrag * kLdA + kk, kLdA);
#pragma unroll
      for (int j = 0; j < kFragsN; ++j)
        wmma::load_matrix_sync(b[j], b_warp + kk * kLdB + j * kFrag, kLdB);
#pragma unroll
      for (int i = 0; i < kFragsM; ++i)
#pragma unroll
        for (int j = 0; j < kFragsN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
  }

  // Epilogue. Only empty groups can still be pending, but the C tile overwrites the stages,
  // so wait for everything and for every warp to leave the main loop.
  cp_async_wait<0>();
  __syncthreads();
  float* c_warp = smem_c + warp_m * WM * kLdC + warp_n * WN;
#pragma unroll
  for (int i = 0; i < kFragsM; ++i)
#pragma unroll
    for (int j = 0; j < kFragsN; ++j)
      wmma::store_matrix_sync(c_warp + i * kFrag * kLdC + j * kFrag, acc[i][j], kLdC,
                              wmma::mem_row_major);
  __syncthreads();

  // Consecutive threads write consecutive 4-float pieces of a row of C. With N % 4 == 0 a
  // piece that starts inside the row ends inside it and its address is 16-byte aligned.
  constexpr int kVecsPerRow = BN / 4;
  constexpr int kVecs = BM * kVecsPerRow;
  const bool c_rows_aligned = N % 4 == 0;
#pragma unroll
  for (int i = 0; i < (kVecs + kThreads - 1) / kThreads; ++i) {
    const int vec = static_cast<int>(threadIdx.x) + i * kThreads;
    if (kVecs % kThreads != 0 && vec >= kVecs) break;
    const int r = vec / kVecsPerRow, c = vec % kVecsPerRow * 4;
    const int gr = block_row + r, gc = block_col + c;
    if (gr >= M || gc >= N) continue;
    const float* s = smem_c + r * kLdC + c;
    float* d = C + static_cast<size_t>(gr) * N + gc;
    if (c_rows_aligned) {
      *reinterpret_cast<float4*>(d) = *reinterpret_cast<const float4*>(s);
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (gc + e < N) d[e] = s[e];
    }
  }
}
