// wmma_fp16: tensor cores through nvcuda::wmma (16×16×16, fp16 inputs, fp32 accumulation).
// Each warp computes a (FRAG_M·16)×(FRAG_N·16) tile of C as FRAG_M×FRAG_N accumulator
// fragments; the block is WARPS_M×WARPS_N warps. Fragments are loaded straight from global
// memory when the 16×16 tile is in bounds and its rows are 16-byte aligned, otherwise through
// a zero-padded per-warp scratch tile in shared memory; no data is shared between warps.
// Where K or N is not a multiple of 8 the kernel reads row-padded copies of A and B that
// ncuflow makes for it (row_alignment, as in mma_fp16), so that only the edge tiles take
// the scratch path: with every tile staged, this rung ran at 21 TFLOP/s at 2049 and its
// durations spread over 10 %.
// From report 002 (its tensor-core rung). Tunables: WARPS_M, WARPS_N, FRAG_M, FRAG_N.
// Analytic DRAM traffic without reuse through L2 across blocks, L1 serving the warps of a
// block that read the same rows of A or columns of B (A is read once per block column, B
// once per block row): 2·(M·K·ceil(N/(16·FRAG_N·WARPS_N)) + K·N·ceil(M/(16·FRAG_M·WARPS_M)))
// + 4·M·N bytes, plus, where a padded copy runs, its input read and the copy written.
// Were every warp's reads to miss L1 it would be
// 2·(M·K·ceil(N/(16·FRAG_N)) + K·N·ceil(M/(16·FRAG_M))) + 4·M·N; the H100's L2 traffic at
// 4096 (3.1 GB against 3.3 and 6.5) shows the block-level figure.
// At M=N=K=2049 warps wholly outside C return, but a warp that reaches C computes all its
// FRAG_M×FRAG_N 16×16×16 mmas over zero padding: M padded to 2112 (FRAG_M 4 → 64 rows per
// warp), N to 2080 (FRAG_N 2 → 32), K to 2064: tensor executed_flops / flops = 1.054.
/*---
idea: each warp computes FRAG_M×FRAG_N WMMA fragments of C; operands straight from global memory; a padded copy of A and B where rows are not 16-byte aligned
params:
  WARPS_M: 2
  WARPS_N: 2
  FRAG_M: 4
  FRAG_N: 2
dtype: float16
out_dtype: float32
row_alignment: {A: 16, B: 16}
launches:
  - kernel: matmul_wmma_fp16
    name: gemm
    block: 32 * WARPS_M * WARPS_N
    grid: ceil_div(N, 16 * FRAG_N * WARPS_N), ceil_div(M, 16 * FRAG_M * WARPS_M)
    static_smem: WARPS_M * WARPS_N * 16 * 16 * 4
    args: [A, B, C, M, N, K, ld_A, ld_B]
executed_flops: 2 * round_up(M, 16 * FRAG_M) * round_up(N, 16 * FRAG_N) * round_up(K, 16)
model_dram_bytes: (M * K * ceil_div(N, 16 * FRAG_N * WARPS_N) + K * N * ceil_div(M, 16 * FRAG_M * WARPS_M)) * in_bytes + M * N * out_bytes + (ld_A != K) * M * (K + ld_A) * in_bytes + (ld_B != N) * K * (N + ld_B) * in_bytes
restrictions:
  - WARPS_M >= 1 and WARPS_N >= 1
  - FRAG_M >= 1 and FRAG_N >= 1
---*/

#include <cuda_fp16.h>
#include <mma.h>

#include "fp16_gemm.cuh"

#ifndef WARPS_M
#define WARPS_M 2
#endif
#ifndef WARPS_N
#define WARPS_N 2
#endif
#ifndef FRAG_M
#define FRAG_M 4
#endif
#ifndef FRAG_N
#define FRAG_N 2
#endif

namespace wmma = nvcuda::wmma;

constexpr int kFrag = 16;  // WMMA tile edge (m = n = k = 16)
constexpr int kWarpSize = 32;
constexpr int kWarps = WARPS_M * WARPS_N;
constexpr int kThreads = kWarps * kWarpSize;
constexpr int kWarpTileM = FRAG_M * kFrag;
constexpr int kWarpTileN = FRAG_N * kFrag;

using FragA = wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, __half, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, __half, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float>;

// Copies the 16×16 tile of a rows×cols row-major matrix (leading dimension ld) at (row0, col0)
// into scratch (leading dimension 16), with zeros outside the matrix. Lane l fills half a row,
// 8 consecutive elements, so it needs a single row pointer.
__device__ __forceinline__ void stage_tile(__half* scratch, const __half* __restrict__ src,
                                          int rows, int cols, int ld, int row0, int col0,
                                          int lane) {
  const int tile_r = lane / 2, tile_c = lane % 2 * 8;
  const int r = row0 + tile_r, c = col0 + tile_c;
  const __half* src_row = src + static_cast<size_t>(r < rows ? r : 0) * ld;
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    scratch[tile_r * kFrag + tile_c + e] =
        (r < rows && c + e < cols) ? src_row[c + e] : __float2half(0.0f);
  }
}

extern "C" __global__ void __launch_bounds__(kThreads)
matmul_wmma_fp16(const __half* __restrict__ A, const __half* __restrict__ B,
                 float* __restrict__ C, int M, int N, int K, int lda, int ldb) {
  // One 16×16 fp32 tile per warp: staging of one fp16 operand tile (half of it) during the
  // main loop, staging of one accumulator tile in the epilogue. WMMA needs 32-byte alignment.
  __shared__ __align__(32) float scratch_all[kWarps][kFrag * kFrag];

  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
  const int row0 = (blockIdx.y * WARPS_M + warp_m) * kWarpTileM;
  const int col0 = (blockIdx.x * WARPS_N + warp_n) * kWarpTileN;
  // Warps only synchronise among their own lanes, so a warp with nothing to do may leave.
  if (row0 >= M || col0 >= N) return;

  float* scratch_c = scratch_all[warp];
  __half* scratch_ab = reinterpret_cast<__half*>(scratch_c);
  // Direct fragment loads need 16-byte aligned rows (ld a multiple of 8 halves); tile starts
  // are then 32-byte aligned because row and column offsets are multiples of 16.
  const bool a_rows_aligned = lda % 8 == 0, b_rows_aligned = ldb % 8 == 0;

  FragC acc[FRAG_M][FRAG_N];
#pragma unroll
  for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
    for (int j = 0; j < FRAG_N; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  for (int k0 = 0; k0 < K; k0 += kFrag) {
    const bool k_inside = k0 + kFrag <= K;
    FragA a[FRAG_M];
    FragB b[FRAG_N];
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i) {
      const int r = row0 + i * kFrag;
      if (a_rows_aligned && k_inside && r + kFrag <= M) {
        wmma::load_matrix_sync(a[i], A + static_cast<size_t>(r) * lda + k0, lda);
      } else {
        stage_tile(scratch_ab, A, M, K, lda, r, k0, lane);
        __syncwarp();
        wmma::load_matrix_sync(a[i], scratch_ab, kFrag);
        __syncwarp();  // the scratch tile is refilled next
      }
    }
#pragma unroll
    for (int j = 0; j < FRAG_N; ++j) {
      const int c = col0 + j * kFrag;
      if (b_rows_aligned && k_inside && c + kFrag <= N) {
        wmma::load_matrix_sync(b[j], B + static_cast<size_t>(k0) * ldb + c, ldb);
      } else {
        stage_tile(scratch_ab, B, K, N, ldb, k0, c, lane);
        __syncwarp();
        wmma::load_matrix_sync(b[j], scratch_ab, kFrag);
        __syncwarp();
      }
    }
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
      for (int j = 0; j < FRAG_N; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
  }

  // Epilogue: whole in-bounds fragments with 16-byte aligned rows of C go straight out;
  // the others pass through the scratch tile and are written element by element.
#pragma unroll
  for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
    for (int j = 0; j < FRAG_N; ++j) {
      const int r = row0 + i * kFrag, c = col0 + j * kFrag;
      if (N % 4 == 0 && r + kFrag <= M && c + kFrag <= N) {
        wmma::store_matrix_sync(C + static_cast<size_t>(r) * N + c, acc[i][j], N,
                                wmma::mem_row_major);
      } else {
        wmma::store_matrix_sync(scratch_c, acc[i][j], kFrag, wmma::mem_row_major);
        __syncwarp();
#pragma unroll
        for (int e = lane; e < kFrag * kFrag; e += kWarpSize) {
          const int rr = r + e / kFrag, cc = c + e % kFrag;
          if (rr < M && cc < N) C[static_cast<size_t>(rr) * N + cc] = scratch_c[e];
        }
        __syncwarp();
      }
    }
  }
}
