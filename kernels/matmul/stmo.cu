// stmo ("single thread, multiple outputs"): the block computes a BLOCK_SIZE×BLOCK_SIZE tile of
// C with BLOCK_SIZE×BLOCK_SIZE/OP_PER_THREAD threads; each thread computes OP_PER_THREAD
// elements of one column, rows spaced STRIDE = BLOCK_SIZE/OP_PER_THREAD apart, so a warp
// still covers consecutive columns. A and B tiles of BLOCK_SIZE×BLOCK_SIZE are staged in shared
// memory (zero-padded), each thread loading OP_PER_THREAD elements of each. From report 004.
// Tunables: BLOCK_SIZE, OP_PER_THREAD.
// Analytic DRAM traffic without reuse through L2 across blocks: A is read N/BLOCK_SIZE times
// and B M/BLOCK_SIZE times: 4·(M·K·ceil(N/BLOCK_SIZE) + K·N·ceil(M/BLOCK_SIZE) + M·N) bytes.
// At M=N=K=2049 all threads compute over zero-padded tiles: M, N and K are padded to a
// multiple of BLOCK_SIZE (2064 for 16, 2080 for 32): executed_flops / flops = 1.022
// (BLOCK_SIZE 16) or 1.046 (BLOCK_SIZE 32).
/*---
kernel: matmul_stmo
idea: square shared-memory tiles; each thread computes OP_PER_THREAD outputs of one column of the tile
params:
  BLOCK_SIZE: 16
  OP_PER_THREAD: 4
block: BLOCK_SIZE, BLOCK_SIZE // OP_PER_THREAD
grid: ceil_div(N, BLOCK_SIZE), ceil_div(M, BLOCK_SIZE)
static_smem: 2 * BLOCK_SIZE * BLOCK_SIZE * 4
executed_flops: 2 * round_up(M, BLOCK_SIZE) * round_up(N, BLOCK_SIZE) * round_up(K, BLOCK_SIZE)
model_dram_bytes: (M * K * ceil_div(N, BLOCK_SIZE) + K * N * ceil_div(M, BLOCK_SIZE)) * in_bytes + M * N * out_bytes
restrictions:
  - BLOCK_SIZE >= 1 and OP_PER_THREAD >= 1
  - BLOCK_SIZE % OP_PER_THREAD == 0
---*/

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 16
#endif
#ifndef OP_PER_THREAD
#define OP_PER_THREAD 4
#endif

static_assert(BLOCK_SIZE % OP_PER_THREAD == 0, "OP_PER_THREAD must divide BLOCK_SIZE");
// Thread rows of the block; a thread's outputs lie this many rows apart.
constexpr int kStride = BLOCK_SIZE / OP_PER_THREAD;

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE * kStride)
matmul_stmo(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
            int M, int N, int K) {
  // No padding needed: a warp spans at most 32/BLOCK_SIZE + 1 tile rows, whose a_tile
  // elements lie BLOCK_SIZE floats apart (distinct banks for 8, 16 and 24), and reads or
  // writes consecutive elements within a row.
  __shared__ float a_tile[BLOCK_SIZE][BLOCK_SIZE];
  __shared__ float b_tile[BLOCK_SIZE][BLOCK_SIZE];
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
      b_tile[r][tx] = (kb < K && col < N) ? B[static_cast<size_t>(kb) * N + col] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BLOCK_SIZE; ++k) {
      const float b = b_tile[k][tx];
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
