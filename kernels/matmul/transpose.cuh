// transpose.cuh: dst = srcᵀ, a step for variants that want an operand in the other layout
// (transposed_a: A, M×K row-major, into At, K×M). src is rows×cols, dst cols×rows, both
// row-major. A block of 32×8 threads moves a 32×32 tile through shared memory: it reads the
// tile's rows (a warp, 32 consecutive floats of a row of src) and, after a barrier, writes
// its columns as rows of dst (a warp, 32 consecutive floats of a row of dst): both sides
// coalesced. The tile is padded by one column, so that a warp's reads down a column of it
// hit 32 distinct banks. Bounds checks make any rows, cols work.
// Launch: block (kTransposeTile, kTransposeRows) = (32, 8), grid (ceil_div(cols, 32),
// ceil_div(rows, 32)), static shared memory 32·33·4 bytes.
#pragma once

constexpr int kTransposeTile = 32;
constexpr int kTransposeRows = 8;  // each thread moves kTransposeTile / kTransposeRows floats

extern "C" __global__ void __launch_bounds__(kTransposeTile * kTransposeRows)
matmul_transpose(const float* __restrict__ src, float* __restrict__ dst, int rows, int cols) {
  __shared__ float tile[kTransposeTile][kTransposeTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row0 = blockIdx.y * kTransposeTile, col0 = blockIdx.x * kTransposeTile;
  // tile[r][c] = src[row0 + r][col0 + c]
  if (col0 + tx < cols) {
#pragma unroll
    for (int r = ty; r < kTransposeTile; r += kTransposeRows) {
      if (row0 + r < rows) tile[r][tx] = src[static_cast<size_t>(row0 + r) * cols + col0 + tx];
    }
  }
  __syncthreads();
  // dst[col0 + c][row0 + tx] = tile[tx][c]: only elements written above are read.
  if (row0 + tx < rows) {
#pragma unroll
    for (int c = ty; c < kTransposeTile; c += kTransposeRows) {
      if (col0 + c < cols) dst[static_cast<size_t>(col0 + c) * rows + row0 + tx] = tile[tx][c];
    }
  }
}
