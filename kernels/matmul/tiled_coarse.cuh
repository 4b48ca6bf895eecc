// tiled_coarse.cuh: the body of tiled_coarse and of its copy-scheme variants
// (tiled_coarse_colcopy, tiled_coarse_blockcopy; report 000). They differ only in how the
// block's threads share the copy of a tile to shared memory (CopyOrder, one for A and one
// for B): tiling, zero padding, the product and the stores are this one body, so that a
// measured difference is the copy's alone.
//
// The including file defines the tunables first (TILEDIM_M, TILEDIM_N, TILEDIM_K, BX, BY,
// PAD_LAST_ONLY: each .cu carries its #ifndef defaults, which ncuflow overrides with -D),
// and its extern "C" kernel calls tiled_coarse<order of A, order of B>(A, B, C, M, N, K),
// under __launch_bounds__(kThreads).
#pragma once

#if !defined(TILEDIM_M) || !defined(TILEDIM_N) || !defined(TILEDIM_K) || !defined(BX) || \
    !defined(BY) || !defined(PAD_LAST_ONLY)
#error "define the tiled_coarse tunables before including tiled_coarse.cuh"
#endif

static_assert(TILEDIM_M % BY == 0 && TILEDIM_N % BX == 0, "BY must divide TILEDIM_M, BX TILEDIM_N");
constexpr int kScaleM = TILEDIM_M / BY;  // TILESCALE_M: rows of C per thread
constexpr int kScaleN = TILEDIM_N / BX;  // TILESCALE_N: columns of C per thread
constexpr int kThreads = BX * BY;
// The A tile is stored transposed (k-major) so that a thread's kScaleM consecutive rows are
// consecutive floats (vector loads). The 4 extra floats per k keep rows 16-byte aligned and
// shift successive k by 4 banks, so the row-wise transposing stores conflict at most 2-way
// for TILEDIM_K = 16 instead of TILEDIM_K-way.
constexpr int kALd = TILEDIM_M + 4;

// How the block's threads share the copy of a Rows×Cols tile. Each order maps (tid, step s)
// one to one onto 0 ≤ e < kThreads·kSteps and e (< kElems) one to one onto the tile's
// elements, so every element is copied exactly once; a thread count that does not divide
// the tile leaves the e ≥ kElems of the last steps idle.
enum class CopyOrder {
  // e = tid + s·kThreads, row-major: consecutive threads take consecutive elements of a tile
  // row, contiguous in global memory (coalesced). tiled_coarse's order, for A and B.
  kRows,
  // e = tid + s·kThreads, column-major: consecutive threads take consecutive rows of a tile
  // column, a matrix row apart in global memory (strided, uncoalesced).
  kColumns,
  // e = tid·kSteps + s, row-major: each thread walks its own run of kSteps consecutive
  // elements (part of a row, or whole rows), so at each step a warp's addresses lie a run
  // apart (strided, uncoalesced).
  kChunks,
};

template <CopyOrder Order, int Rows, int Cols>
struct TileCopy {
  static constexpr int kElems = Rows * Cols;
  static constexpr int kSteps = (kElems + kThreads - 1) / kThreads;  // per thread

  // Step s of thread tid copies element e = index(tid, s), at row(e), col(e) of the tile, if
  // has(e); when the threads divide the tile, has() folds away.
  __device__ __forceinline__ static int index(int tid, int s) {
    return Order == CopyOrder::kChunks ? tid * kSteps + s : tid + s * kThreads;
  }
  __device__ __forceinline__ static bool has(int e) {
    return kElems % kThreads == 0 || e < kElems;
  }
  __device__ __forceinline__ static int row(int e) {
    return Order == CopyOrder::kColumns ? e % Rows : e / Cols;
  }
  __device__ __forceinline__ static int col(int e) {
    return Order == CopyOrder::kColumns ? e / Rows : e % Cols;
  }
};

// Copies the A tile (rows row0.., columns k0..) and the B tile (rows k0.., columns col0..) to
// shared memory in the given orders, zero outside the matrices. kGuardK: whether the tile
// may reach past K (otherwise only M and N are checked).
template <bool kGuardK, CopyOrder OrderA, CopyOrder OrderB>
__device__ __forceinline__ void stage_tiles(float (*a_tile)[kALd], float (*b_tile)[TILEDIM_N],
                                            const float* __restrict__ A,
                                            const float* __restrict__ B, int M, int N, int K,
                                            int row0, int col0, int k0, int tid) {
  using CopyA = TileCopy<OrderA, TILEDIM_M, TILEDIM_K>;
  using CopyB = TileCopy<OrderB, TILEDIM_K, TILEDIM_N>;
#pragma unroll
  for (int s = 0; s < CopyA::kSteps; ++s) {
    const int e = CopyA::index(tid, s);
    if (CopyA::has(e)) {
      const int m = CopyA::row(e), k = CopyA::col(e);
      const int row = row0 + m, ka = k0 + k;
      const bool inside = row < M && (!kGuardK || ka < K);
      a_tile[k][m] = inside ? A[static_cast<size_t>(row) * K + ka] : 0.0f;
    }
  }
#pragma unroll
  for (int s = 0; s < CopyB::kSteps; ++s) {
    const int e = CopyB::index(tid, s);
    if (CopyB::has(e)) {
      const int k = CopyB::row(e), n = CopyB::col(e);
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

// The whole kernel: the block's TILEDIM_M×TILEDIM_N tile of C, the A tiles copied in OrderA
// and the B tiles in OrderB.
template <CopyOrder OrderA, CopyOrder OrderB>
__device__ __forceinline__ void tiled_coarse(const float* __restrict__ A,
                                             const float* __restrict__ B, float* __restrict__ C,
                                             int M, int N, int K) {
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
    stage_tiles<false, OrderA, OrderB>(a_tile, b_tile, A, B, M, N, K, row0, col0, k0, tid);
    __syncthreads();
    multiply_tiles(a_tile, b_tile, acc, ty, tx);
    __syncthreads();  // the tiles are overwritten in the next step
  }
  for (int k0 = k_full; k0 < K; k0 += TILEDIM_K) {
    stage_tiles<true, OrderA, OrderB>(a_tile, b_tile, A, B, M, N, K, row0, col0, k0, tid);
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
