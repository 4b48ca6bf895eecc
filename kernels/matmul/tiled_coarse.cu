// tiled_coarse: the block computes a TILEDIM_M×TILEDIM_N tile of C with BX×BY threads, each
// thread TILESCALE_M×TILESCALE_N outputs held in registers (TILESCALE_M = TILEDIM_M/BY
// consecutive rows, TILESCALE_N = TILEDIM_N/BX columns BX apart). Per TILEDIM_K step the
// whole block copies the A and B tiles to shared memory with row-wise coalesced loops,
// zero-padding what lies outside the matrices. With PAD_LAST_ONLY=1 only the last, partial
// K tile checks K; full tiles check only M (A) and N (B). From report 000.
// Tunables: TILEDIM_M, TILEDIM_N, TILEDIM_K, BX, BY, PAD_LAST_ONLY.
// Analytic DRAM traffic without reuse through L2 across blocks: A is read N/TILEDIM_N times
// and B M/TILEDIM_M times:
// 4·(M·K·ceil(N/TILEDIM_N) + K·N·ceil(M/TILEDIM_M) + M·N) bytes.
// At M=N=K=2049 all threads compute their whole TILESCALE_M×TILESCALE_N outputs over
// zero-padded tiles: M padded to 2176 (TILEDIM_M 128), N to 2112 (TILEDIM_N 64) or 2176
// (128), K to 2064 (TILEDIM_K 16): executed_flops / flops = 1.103 (defaults) or 1.136
// (128×128×16).
/*---
kernel: matmul_tiled_coarse
idea: rectangular shared-memory tiles, block geometry decoupled from the tile, several outputs per thread in registers
params:
  TILEDIM_M: 128
  TILEDIM_N: 64
  TILEDIM_K: 16
  BX: 16
  BY: 16
  PAD_LAST_ONLY: 1
block: BX, BY
grid: ceil_div(N, TILEDIM_N), ceil_div(M, TILEDIM_M)
static_smem: TILEDIM_K * (TILEDIM_M + 4) * 4 + TILEDIM_K * TILEDIM_N * 4
executed_flops: 2 * round_up(M, TILEDIM_M) * round_up(N, TILEDIM_N) * round_up(K, TILEDIM_K)
model_dram_bytes: (M * K * ceil_div(N, TILEDIM_N) + K * N * ceil_div(M, TILEDIM_M)) * in_bytes + M * N * out_bytes
restrictions:
  - TILEDIM_M >= 1 and TILEDIM_N >= 1 and TILEDIM_K >= 1 and BX >= 1 and BY >= 1
  - TILEDIM_M % BY == 0 and TILEDIM_N % BX == 0
  - PAD_LAST_ONLY == 0 or PAD_LAST_ONLY == 1
---*/

#ifndef TILEDIM_M
#define TILEDIM_M 128
#endif
#ifndef TILEDIM_N
#define TILEDIM_N 64
#endif
#ifndef TILEDIM_K
#define TILEDIM_K 16
#endif
#ifndef BX
#define BX 16
#endif
#ifndef BY
#define BY 16
#endif
#ifndef PAD_LAST_ONLY
#define PAD_LAST_ONLY 1
#endif

static_assert(TILEDIM_M % BY == 0 && TILEDIM_N % BX == 0, "BY must divide TILEDIM_M, BX TILEDIM_N");
constexpr int kScaleM = TILEDIM_M / BY;  // TILESCALE_M: rows of C per thread
constexpr int kScaleN = TILEDIM_N / BX;  // TILESCALE_N: columns of C per thread
constexpr int kThreads = BX * BY;
constexpr int kAElems = TILEDIM_M * TILEDIM_K;
constexpr int kBElems = TILEDIM_K * TILEDIM_N;
// Copy steps per thread. A thread count that does not divide a tile leaves the last step
// partly idle (guarded by e < elems); when it divides, the guard folds away.
constexpr int kASteps = (kAElems + kThreads - 1) / kThreads;
constexpr int kBSteps = (kBElems + kThreads - 1) / kThreads;
// The A tile is stored transposed (k-major) so that a thread's kScaleM consecutive rows are
// consecutive floats (vector loads). The 4 extra floats per k keep rows 16-byte aligned and
// shift successive k by 4 banks, so the transposing stores conflict at most 2-way for
// TILEDIM_K = 16 instead of TILEDIM_K-way.
constexpr int kALd = TILEDIM_M + 4;

// Copies the A tile (rows row0.., columns k0..) and the B tile (rows k0.., columns col0..) to
// shared memory, zero outside the matrices. Consecutive threads take consecutive elements of
// a tile row, so each warp reads contiguous runs of global memory. kGuardK: whether the tile
// may reach past K (otherwise only M and N are checked).
template <bool kGuardK>
__device__ __forceinline__ void stage_tiles(float (*a_tile)[kALd], float (*b_tile)[TILEDIM_N],
                                            const float* __restrict__ A,
                                            const float* __restrict__ B, int M, int N, int K,
                                            int row0, int col0, int k0, int tid) {
#pragma unroll
  for (int s = 0; s < kASteps; ++s) {
    const int e = tid + s * kThreads;
    if (kAElems % kThreads == 0 || e < kAElems) {
      const int m = e / TILEDIM_K, k = e % TILEDIM_K;
      const int row = row0 + m, ka = k0 + k;
      const bool inside = row < M && (!kGuardK || ka < K);
      a_tile[k][m] = inside ? A[static_cast<size_t>(row) * K + ka] : 0.0f;
    }
  }
#pragma unroll
  for (int s = 0; s < kBSteps; ++s) {
    const int e = tid + s * kThreads;
    if (kBElems % kThreads == 0 || e < kBElems) {
      const int k = e / TILEDIM_N, n = e % TILEDIM_N;
      const int kb = k0 + k, col = col0 + n;
      const bool inside = col < N && (!kGuardK || kb < K);
      b_tile[k][n] = inside ? B[static_cast<size_t>(kb) * N + col] : 0.0f;
    }
  }
}

// acc += this thread's share of a_tile·b_tile. Per k a warp reads the same few A vectors
// (one per ty it spans: broadcasts) and BX-consecutive B elements (distinct banks).
__device__ __forceinline__ void multiply_tiles(const float (*a_tile)[kALd],
                                               const float (*b_tile)[TILEDIM_N],
                                               float (&acc)[kScaleM][kScaleN], int ty, int tx) {
#pragma unroll
  for (int k = 0; k < TILEDIM_K; ++k) {
    float a[kScaleM], b[kScaleN];
#pragma unroll
    for (int i = 0; i < kScaleM; ++i) a[i] = a_tile[k][ty * kScaleM + i];
#pragma unroll
    for (int j = 0; j < kScaleN; ++j) b[j] = b_tile[k][tx + j * BX];
#pragma unroll
    for (int i = 0; i < kScaleM; ++i)
#pragma unroll
      for (int j = 0; j < kScaleN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
}

extern "C" __global__ void __launch_bounds__(kThreads)
matmul_tiled_coarse(const float* __restrict__ A, const float* __restrict__ B,
                    float* __restrict__ C, int M, int N, int K) {
  __shared__ __align__(16) float a_tile[TILEDIM_K][kALd];  // a_tile[k][m] = A[row0 + m][k0 + k]
  __shared__ __align__(16) float b_tile[TILEDIM_K][TILEDIM_N];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * BX + tx;
  const int row0 = blockIdx.y * TILEDIM_M, col0 = blockIdx.x * TILEDIM_N;
  float acc[kScaleM][kScaleN];
#pragma unroll
  for (int i = 0; i < kScaleM; ++i)
#pragma unroll
    for (int j = 0; j < kScaleN; ++j) acc[i][j] = 0.0f;

  // K tiles below k_full lie wholly inside K; with PAD_LAST_ONLY they skip the K checks and
  // the second loop handles at most the one partial tile left. Without it, every tile goes
  // through the second, fully guarded loop.
  const int k_full = PAD_LAST_ONLY ? K / TILEDIM_K * TILEDIM_K : 0;
  for (int k0 = 0; k0 < k_full; k0 += TILEDIM_K) {
    stage_tiles<false>(a_tile, b_tile, A, B, M, N, K, row0, col0, k0, tid);
    __syncthreads();
    multiply_tiles(a_tile, b_tile, acc, ty, tx);
    __syncthreads();  // the tiles are overwritten in the next step
  }
  for (int k0 = k_full; k0 < K; k0 += TILEDIM_K) {
    stage_tiles<true>(a_tile, b_tile, A, B, M, N, K, row0, col0, k0, tid);
    __syncthreads();
    multiply_tiles(a_tile, b_tile, acc, ty, tx);
    __syncthreads();
  }

  // Consecutive tx write consecutive columns of each row: coalesced stores.
#pragma unroll
  for (int i = 0; i < kScaleM; ++i) {
    const int row = row0 + ty * kScaleM + i;
    if (row >= M) break;  // later rows lie further down
#pragma unroll
    for (int j = 0; j < kScaleN; ++j) {
      const int col = col0 + tx + j * BX;
      if (col < N) C[static_cast<size_t>(row) * N + col] = acc[i][j];
    }
  }
}
