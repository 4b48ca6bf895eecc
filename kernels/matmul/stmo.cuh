// stmo.cuh: the body of stmo and of stmo_transposed_b (report 004, sections 1.2 and 1.4.4).
// They differ only in how the B tile lies in shared memory (BLayout): tiling, zero padding,
// the product and the stores are this one body, so that a measured difference is the
// layout's alone.
//
// The including file defines the tunables first (BLOCK_SIZE, OP_PER_THREAD: each .cu carries
// its #ifndef defaults, which ncuflow overrides with -D), and its extern "C" kernel calls
// stmo<layout>(A, B, C, M, N, K) under __launch_bounds__(BLOCK_SIZE * kStride).
#pragma once

#if !defined(BLOCK_SIZE) || !defined(OP_PER_THREAD)
#error "define BLOCK_SIZE and OP_PER_THREAD before including stmo.cuh"
#endif

static_assert(BLOCK_SIZE % OP_PER_THREAD == 0, "OP_PER_THREAD must divide BLOCK_SIZE");
// Thread rows of the block; a thread's outputs lie this many rows apart.
constexpr int kStride = BLOCK_SIZE / OP_PER_THREAD;

// How the B tile (rows k0.., columns col0.. of B) lies in shared memory.
enum class BLayout {
  kRows,        // b_tile[k][j] = B[k0 + k][col0 + j], as in B (stmo)
  kTransposed,  // b_tile[j][k] = B[k0 + k][col0 + j], unpadded (stmo_transposed_b)
};

template <BLayout Layout>
__device__ __forceinline__ void stmo(const float* __restrict__ A, const float* __restrict__ B,
                                     float* __restrict__ C, int M, int N, int K) {
  // kRows needs no padding: a warp spans at most 32/BLOCK_SIZE + 1 tile rows, whose a_tile
  // elements lie BLOCK_SIZE floats apart (distinct banks for 8, 16 and 24), and reads or
  // writes consecutive elements within a row. kTransposed makes a warp's b_tile accesses
  // column walks, BLOCK_SIZE floats apart: the bank conflicts are the point of that variant
  // (stmo_transposed_b.cu's header).
  __shared__ float a_tile[BLOCK_SIZE][BLOCK_SIZE];
  __shared__ float b_tile[BLOCK_SIZE][BLOCK_SIZE];
  constexpr bool kT = Layout == BLayout::kTransposed;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row0 = blockIdx.y * BLOCK_SIZE;
  const int col = blockIdx.x * BLOCK_SIZE + tx;
  float acc[OP_PER_THREAD];
#pragma unroll
  for (int i = 0; i < OP_PER_THREAD; ++i) acc[i] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BLOCK_SIZE) {
    const int ka = k0 + tx;
#pragma unroll
    for (int i = 0; i < OP_PER_THREAD; ++i) {
      const int r = ty + i * kStride;  // tile row this thread stages
      const int row = row0 + r, kb = k0 + r;
      a_tile[r][tx] = (row < M && ka < K) ? A[static_cast<size_t>(row) * K + ka] : 0.0f;
      // the same coalesced global load of B in both layouts; only the shared store differs
      const float b = (kb < K && col < N) ? B[static_cast<size_t>(kb) * N + col] : 0.0f;
      (kT ? b_tile[tx][r] : b_tile[r][tx]) = b;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BLOCK_SIZE; ++k) {
      const float b = kT ? b_tile[tx][k] : b_tile[k][tx];
#pragma unroll
      for (int i = 0; i < OP_PER_THREAD; ++i) {
        acc[i] = fmaf(a_tile[ty + i * kStride][k], b, acc[i]);
      }
    }
    __syncthreads();  // the tiles are overwritten in the next step
  }
  if (col < N) {
#pragma unroll
    for (int i = 0; i < OP_PER_THREAD; ++i) {
      const int row = row0 + ty + i * kStride;
      if (row < M) C[static_cast<size_t>(row) * N + col] = acc[i];
    }
  }
}
