// fp16_gemm.cuh: what the Hopper tensor-core rungs (mma_fp16, wgmma_fp16) share besides
// their main loops: the grouped block order, the fp32 stores of accumulator pairs, and the
// kernel that copies an fp16 matrix into one whose rows are padded to 16 bytes.
#pragma once

#include <cuda_fp16.h>

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

// dst (rows × ld_dst, ld_dst a multiple of 8) = src (rows × cols, any cols) with the columns
// from cols to ld_dst zero: one thread per 8 halves of dst, one 16-byte store each. Both
// rungs need 16-byte aligned rows (cp.async, TMA) and run this first where K or N is not a
// multiple of 8.
extern "C" __global__ void matmul_pad_rows_fp16(const __half* __restrict__ src,
                                                __half* __restrict__ dst, int rows, int cols,
                                                int ld_dst) {
  constexpr int kChunk = 8;
  const size_t chunk = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int chunks_per_row = ld_dst / kChunk;
  if (chunk >= static_cast<size_t>(rows) * chunks_per_row) return;
  const int r = static_cast<int>(chunk / chunks_per_row);
  const int c0 = static_cast<int>(chunk % chunks_per_row) * kChunk;
  const __half* s = src + static_cast<size_t>(r) * cols;
  __align__(16) __half v[kChunk];
#pragma unroll
  for (int e = 0; e < kChunk; ++e) v[e] = c0 + e < cols ? s[c0 + e] : __float2half(0.0f);
  *reinterpret_cast<uint4*>(dst + static_cast<size_t>(r) * ld_dst + c0) =
      *reinterpret_cast<const uint4*>(v);
}
