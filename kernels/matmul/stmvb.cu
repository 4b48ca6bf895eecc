// stmvb ("single thread, multiple vertical blocks"): a block of BLOCK_SIZE×BLOCK_SIZE threads
// computes PARALLEL×PARALLEL neighbouring BLOCK_SIZE×BLOCK_SIZE tiles of C; thread (ty, tx)
// computes element (ty, tx) of each of them, in registers. Per step along K the block
// stages PARALLEL tiles of A (one per tile row) and PARALLEL tiles of B (one per tile
// column) in shared memory, zero-padded, so any M, N, K works. From report 004.
// Tunables: BLOCK_SIZE, PARALLEL.
// Analytic DRAM traffic without reuse through L2 across blocks: A is read
// N/(PARALLEL·BLOCK_SIZE) times and B M/(PARALLEL·BLOCK_SIZE) times:
// 4·(M·K·ceil(N/(PARALLEL·BLOCK_SIZE)) + K·N·ceil(M/(PARALLEL·BLOCK_SIZE)) + M·N) bytes.
// At M=N=K=2049 all threads compute all PARALLEL×PARALLEL outputs over zero-padded tiles:
// M and N are padded to a multiple of PARALLEL·BLOCK_SIZE (2080 for 2×16, 2176 for 8×16), K
// to a multiple of BLOCK_SIZE (2064): executed_flops / flops = 1.038 (defaults) or 1.136
// (BLOCK_SIZE 16, PARALLEL 8).
/*---
kernel: matmul_stmvb
idea: each thread computes the same element of PARALLEL×PARALLEL neighbouring tiles of C
params:
  BLOCK_SIZE: 16
  PARALLEL: 2
block: BLOCK_SIZE, BLOCK_SIZE
grid: ceil_div(N, PARALLEL * BLOCK_SIZE), ceil_div(M, PARALLEL * BLOCK_SIZE)
static_smem: 2 * PARALLEL * BLOCK_SIZE * BLOCK_SIZE * 4
executed_flops: 2 * round_up(M, PARALLEL * BLOCK_SIZE) * round_up(N, PARALLEL * BLOCK_SIZE) * round_up(K, BLOCK_SIZE)
model_dram_bytes: (M * K * ceil_div(N, PARALLEL * BLOCK_SIZE) + K * N * ceil_div(M, PARALLEL * BLOCK_SIZE)) * in_bytes + M * N * out_bytes
restrictions:
  - BLOCK_SIZE >= 1 and PARALLEL >= 1
---*/

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 16
#endif
#ifndef PARALLEL
#define PARALLEL 2
#endif

// Edge of the block's whole C tile.
constexpr int kSpan = PARALLEL * BLOCK_SIZE;
// Unrolled, the k loop lets ptxas hoist shared loads of later k steps, which needs more
// registers than the 96 per thread that a 576-thread block (BLOCK_SIZE 24) gets once there
// are 64 sums (PARALLEL 8): such blocks keep the k loop rolled to avoid spilling.
constexpr int kUnrollK = BLOCK_SIZE * BLOCK_SIZE > 512 && PARALLEL * PARALLEL >= 64 ? 1 : BLOCK_SIZE;

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE * BLOCK_SIZE)
matmul_stmvb(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
             int M, int N, int K) {
  // a_tiles[p] holds rows p·BLOCK_SIZE.. of the block's A strip, b_tiles[p] columns
  // p·BLOCK_SIZE.. of its B strip. No padding needed: a warp reads a_tiles[p][ty][k] for
  // rows BLOCK_SIZE floats apart (distinct banks for 8, 16 and 24) and consecutive elements
  // of b_tiles[p][k].
  __shared__ float a_tiles[PARALLEL][BLOCK_SIZE][BLOCK_SIZE];
  __shared__ float b_tiles[PARALLEL][BLOCK_SIZE][BLOCK_SIZE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row0 = blockIdx.y * kSpan + ty;  // this thread's row in the first tile row
  const int col0 = blockIdx.x * kSpan + tx;  // and its column in the first tile column
  float acc[PARALLEL][PARALLEL];
#pragma unroll
  for (int p = 0; p < PARALLEL; ++p)
#pragma unroll
    for (int q = 0; q < PARALLEL; ++q) acc[p][q] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BLOCK_SIZE) {
    const int ka = k0 + tx, kb = k0 + ty;
#pragma unroll
    for (int p = 0; p < PARALLEL; ++p) {
      const int row = row0 + p * BLOCK_SIZE, col = col0 + p * BLOCK_SIZE;
      a_tiles[p][ty][tx] = (row < M && ka < K) ? A[static_cast<size_t>(row) * K + ka] : 0.0f;
      b_tiles[p][ty][tx] = (kb < K && col < N) ? B[static_cast<size_t>(kb) * N + col] : 0.0f;
    }
    __syncthreads();
#pragma unroll kUnrollK
    for (int k = 0; k < BLOCK_SIZE; ++k) {
      float b[PARALLEL];
#pragma unroll
      for (int q = 0; q < PARALLEL; ++q) b[q] = b_tiles[q][k][tx];
#pragma unroll
      for (int p = 0; p < PARALLEL; ++p) {
        const float a = a_tiles[p][ty][k];
#pragma unroll
        for (int q = 0; q < PARALLEL; ++q) acc[p][q] = fmaf(a, b[q], acc[p][q]);
      }
    }
    __syncthreads();  // the tiles are overwritten in the next step
  }
#pragma unroll
  for (int p = 0; p < PARALLEL; ++p) {
    const int row = row0 + p * BLOCK_SIZE;
    if (row >= M) break;  // later tile rows lie further down
#pragma unroll
    for (int q = 0; q < PARALLEL; ++q) {
      const int col = col0 + q * BLOCK_SIZE;
      if (col < N) C[static_cast<size_t>(row) * N + col] = acc[p][q];
    }
  }
}
