// fp16_gemm.cuh: what the tensor-core rungs (wmma_fp16, wmma_fp16_pipelined, mma_fp16,
// wgmma_fp16) share besides their main loops: the grouped block order, the cp.async tile
// loader and the fp32 stores of accumulator pairs.
#pragma once

#include <cuda_fp16.h>

#include "../common/cp_async.cuh"

// The BM×BN tile of C a block computes. Blocks start roughly in launch order; walking
// group_m block rows down before moving one block column right keeps the A and B tiles of
// the blocks running together in L2.
struct BlockTile {
  int row, col;
};

__device__ __forceinline__ BlockTile grouped_block_tile(int bm, int bn, int group_m) {
  const int tiles_n = gridDim.x, tiles_m = gridDim.y;
  const int launch_id = blockIdx.y * tiles_n + blockIdx.x;
  const int group = launch_id / (group_m * tiles_n), in_group = launch_id % (group_m * tiles_n);
  const int group_rows = min(group_m, tiles_m - group * group_m);
  return {(group * group_m + in_group % group_rows) * bm, in_group / group_rows * bn};
}

// Copies the TILE_ROWS×TILE_COLS tile at (row0, col0) of a rows×cols matrix with leading
// dimension ld (a multiple of 8, the columns from cols to ld zero: a padded copy where the
// matrix's own rows are not 16-byte aligned) into dst (leading dimension LD_DST) in 16-byte
// cp.async chunks spread over the block's THREADS threads; chunks that start outside the
// matrix are zero-filled without a read.
template <int THREADS, int TILE_ROWS, int TILE_COLS, int LD_DST>
__device__ __forceinline__ void load_tile_fp16(__half* dst, const __half* __restrict__ src,
                                               int rows, int cols, int ld, int row0, int col0) {
  constexpr int kChunk = 8;  // halves per 16-byte copy
  constexpr int kChunksPerRow = TILE_COLS / kChunk;
  constexpr int kChunks = TILE_ROWS * kChunksPerRow;
  if constexpr (THREADS % kChunksPerRow == 0 && kChunks % THREADS == 0) {
    // Each thread copies the same column of chunks in rows kRowStep apart; a tile wholly
    // inside the matrix (every tile but the last row, column and k step of awkward sizes)
    // needs neither bounds checks nor per-chunk index arithmetic.
    constexpr int kRowStep = THREADS / kChunksPerRow;
    const int r = static_cast<int>(threadIdx.x) / kChunksPerRow;
    const int c = static_cast<int>(threadIdx.x) % kChunksPerRow * kChunk;
    if (row0 + TILE_ROWS <= rows && col0 + TILE_COLS <= cols) {
      const __half* s = src + static_cast<size_t>(row0 + r) * ld + col0 + c;
      const size_t step = static_cast<size_t>(kRowStep) * ld;
#pragma unroll
      for (int i = 0; i < kChunks / THREADS; ++i)
        cp_async_16(dst + (r + i * kRowStep) * LD_DST + c, s + i * step, 16);
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < (kChunks + THREADS - 1) / THREADS; ++i) {
    const int chunk = static_cast<int>(threadIdx.x) + i * THREADS;
    if (kChunks % THREADS != 0 && chunk >= kChunks) break;
    const int r = chunk / kChunksPerRow, c = chunk % kChunksPerRow * kChunk;
    const int gr = row0 + r, gc = col0 + c;
    const bool inside = gr < rows && gc < cols;
    cp_async_16(dst + r * LD_DST + c, inside ? src + static_cast<size_t>(gr) * ld + gc : src,
                inside ? 16 : 0);
  }
}

// Two adjacent accumulators of one row of C (M×N, row-major); one 8-byte store where N is
// even, so that a quad of lanes writes 32 contiguous bytes: whole sectors.
__device__ __forceinline__ void store_pair(float* __restrict__ C, int M, int N, int row,
                                           int col, float x, float y) {
  if (row >= M || col >= N) return;
  float* d = C + static_cast<size_t>(row) * N + col;
  if (N % 2 == 0) {
    *reinterpret_cast<float2*>(d) = make_float2(x, y);
  } else {
    d[0] = x;
    if (col + 1 < N) d[1] = y;
  }
}
