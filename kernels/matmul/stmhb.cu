// stmhb ("single thread, multiple horizontal blocks"): stmvb turned sideways (report 004,
// 1.4.3). A block of BLOCK_SIZE×BLOCK_SIZE threads computes one BLOCK_SIZE×BLOCK_SIZE tile of
// C, one element per thread, as smem_tiled (STSO) does; but per step it stages a 1×PARALLEL
// strip of A tiles (PARALLEL consecutive tiles along K) and a PARALLEL×1 strip of B tiles in
// shared memory, zero-padded, then accumulates over PARALLEL·BLOCK_SIZE values of k between
// two barriers. At PARALLEL 1 it is smem_tiled's algorithm. Tunables: BLOCK_SIZE, PARALLEL
// (stmvb's names, so that a study sweeps both alike); sets over 48 KB of static shared memory
// (2·PARALLEL·BLOCK_SIZE²·4: 32 with PARALLEL 8) or 1024 threads (BLOCK_SIZE over 32) are
// skipped by the device-limit check of static_smem and block.
// The report found it slower than even STMO, as one would expect: the strips make the steps
// along K longer, not the reuse larger. The block still owns one BLOCK_SIZE×BLOCK_SIZE tile
// of C, so every A element staged serves BLOCK_SIZE columns and every B element BLOCK_SIZE
// rows, exactly as in stmo and smem_tiled at the same BLOCK_SIZE (the same global traffic);
// and each thread owns one output, so no value read from shared memory is reused from a
// register: every FMA needs its own a and b (at sm_90 a 128-bit load brings 4 k of a, so
// 1.25 shared loads per FMA against stmo's 0.5 at 16/4), in one dependent chain per thread
// (latency hidden only by other warps). What it saves is barriers (2 per PARALLEL·BLOCK_SIZE
// k instead of per BLOCK_SIZE) and it keeps 2·PARALLEL global loads per thread in flight per
// step; it pays PARALLEL times the shared memory for the same tile, which on the report's
// Kepler (48 KB per SM) left one 256-thread block per SM at 16×4 (on the H100's 228 KB, 6
// blocks instead of 8).
// Analytic DRAM traffic without reuse through L2 across blocks: A is read N/BLOCK_SIZE times
// and B M/BLOCK_SIZE times, whatever PARALLEL:
// 4·(M·K·ceil(N/BLOCK_SIZE) + K·N·ceil(M/BLOCK_SIZE) + M·N) bytes.
// At sizes no tile divides all threads compute over zero-padded tiles: M and N are padded to a
// multiple of BLOCK_SIZE, K to a multiple of PARALLEL·BLOCK_SIZE (the last step's strip may
// lie partly or wholly past K): at M=N=K=2049 2064² × 2080 for the defaults, executed_flops /
// flops = 1.030, or 1.078 for BLOCK_SIZE 16, PARALLEL 8 (K padded to 2176).
/*---
kernel: matmul_stmhb
idea: one output per thread; per step PARALLEL tiles of A along K and PARALLEL of B in shared memory
params:
  BLOCK_SIZE: 16
  PARALLEL: 2
block: BLOCK_SIZE, BLOCK_SIZE
grid: ceil_div(N, BLOCK_SIZE), ceil_div(M, BLOCK_SIZE)
static_smem: 2 * PARALLEL * BLOCK_SIZE * BLOCK_SIZE * 4
executed_flops: 2 * round_up(M, BLOCK_SIZE) * round_up(N, BLOCK_SIZE) * round_up(K, PARALLEL * BLOCK_SIZE)
model_dram_bytes: (M * K * ceil_div(N, BLOCK_SIZE) + K * N * ceil_div(M, BLOCK_SIZE)) * in_bytes + M * N * out_bytes
restrictions:
  - BLOCK_SIZE >= 1 and PARALLEL >= 1
---*/

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 16
#endif
#ifndef PARALLEL
#define PARALLEL 2
#endif

// Values of k one step covers: the strips' length.
constexpr int kSpan = PARALLEL * BLOCK_SIZE;

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE * BLOCK_SIZE)
matmul_stmhb(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
             int M, int N, int K) {
  // a_tiles[p][r][k] = A[row0 + r][k0 + p·BLOCK_SIZE + k], b_tiles[p][k][c] =
  // B[k0 + p·BLOCK_SIZE + k][col0 + c]: stmvb's layout. No padding needed: a warp's thread
  // rows read a_tiles[p] BLOCK_SIZE floats apart (distinct banks for 8, 16 and 24), and
  // consecutive floats of b_tiles[p] (stores too are consecutive floats).
  __shared__ float a_tiles[PARALLEL][BLOCK_SIZE][BLOCK_SIZE];
  __shared__ float b_tiles[PARALLEL][BLOCK_SIZE][BLOCK_SIZE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * BLOCK_SIZE + ty;  // this thread's element of C
  const int col = blockIdx.x * BLOCK_SIZE + tx;
  float acc = 0.0f;

  for (int k0 = 0; k0 < K; k0 += kSpan) {
#pragma unroll
    for (int p = 0; p < PARALLEL; ++p) {
      const int ka = k0 + p * BLOCK_SIZE + tx, kb = k0 + p * BLOCK_SIZE + ty;
      a_tiles[p][ty][tx] = (row < M && ka < K) ? A[static_cast<size_t>(row) * K + ka] : 0.0f;
      b_tiles[p][ty][tx] = (kb < K && col < N) ? B[static_cast<size_t>(kb) * N + col] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < PARALLEL; ++p) {
#pragma unroll
      for (int k = 0; k < BLOCK_SIZE; ++k) acc = fmaf(a_tiles[p][ty][k], b_tiles[p][k][tx], acc);
    }
    __syncthreads();  // the strips are overwritten in the next step
  }
  if (row < M && col < N) C[static_cast<size_t>(row) * N + col] = acc;
}
