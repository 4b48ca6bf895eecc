// sgemm_tiles.cuh: pieces shared by the 2-D register-blocked SGEMM variants (regtile_2d,
// double_buffer, warptile): the shared-memory tile layout, how threads share a tile copy,
// cp.async wrappers and the tile loaders, the per-thread inner product over
// one staged tile, and the guarded store of a thread's outputs.
//
// Layout of one staged K-slice: the A tile (TileM×TileK) is kept transposed, As[k][m] with
// leading dimension kAsLd<TileM>, so that a thread reads 4 consecutive rows of one k with
// a single float4 load; the B tile (TileK×TileN) is kept as it is, Bs[k][n] with leading
// dimension TileN. Both tiles are zero outside the matrices, so the inner product needs no
// bounds checks and any M, N, K works.
//
// Template parameters are CamelCase so that they never collide with the variants' tunable
// macros (BM, BN, BK, TM, TN, ...), which are defined before this file is included.
#pragma once

// Padding of a row of As. It keeps float4 alignment, and a row stride ≡ 4 (mod 8) floats
// sends the transposing stores of 8 consecutive k × 4 consecutive m to 32 distinct banks.
constexpr int kAsPad = 4;

template <int TileM>
constexpr int kAsLd = TileM + kAsPad;

// ---- How Workers workers (threads, or warps) share a Rows × Cols grid of copy units:
// worker w takes column w % kWorkersPerRow of rows w / kWorkersPerRow + p·kRowStep
// (p < kRowPasses; rows past Rows skipped) and, when Cols > Workers, every
// kWorkersPerRow-th column after it. A worker's units are thus a constant distance apart,
// which keeps the address arithmetic of a copy to an add. Workers must divide Cols or be a
// multiple of it.
template <int Rows, int Cols, int Workers>
struct CopyPlan {
  static_assert(Workers % Cols == 0 || Cols % Workers == 0,
                "the workers must divide a row, or a row the workers");
  static constexpr int kWorkersPerRow = Workers < Cols ? Workers : Cols;
  static constexpr int kColPasses = Cols / kWorkersPerRow;
  static constexpr int kRowStep = Workers / kWorkersPerRow;
  static constexpr int kRowPasses = (Rows + kRowStep - 1) / kRowStep;
  static constexpr bool kRowGuard = Rows % kRowStep != 0;
};

// ---- cp.async (sm_80+): the copies every pipelined variant shares.
#include "../common/cp_async.cuh"

// ---- Tile loaders: each of the Threads threads (tid) issues its share.

// The TileM×TileK tile of A at (row0, k0) into As[k][m]. A copy cannot transpose, so each
// cp.async moves one float. A warp copies a cell of 4 rows × 8 consecutive k per
// instruction (lane → row lane / 8, k lane % 8): four whole 32-byte sectors of A, and 32
// distinct banks of As. The warps share the cells by CopyPlan.
template <int TileM, int TileK, int Threads>
__device__ __forceinline__ void cp_async_tile_a_transposed(float* As, const float* A, int M,
                                                           int K, int row0, int k0, int tid) {
  static_assert(TileM % 4 == 0 && TileK % 8 == 0 && Threads % 32 == 0,
                "A is copied by whole warps in cells of 4 rows x 8 k");
  using Plan = CopyPlan<TileM / 4, TileK / 8, Threads / 32>;
  const int warp = tid / 32, lane = tid % 32;
  const int m_first = (warp / Plan::kWorkersPerRow) * 4 + lane / 8;
  const int k_first = (warp % Plan::kWorkersPerRow) * 8 + lane % 8;
  const int row_first = row0 + m_first;
  const float* src = A + static_cast<size_t>(row_first) * K + k0 + k_first;
  const size_t pass_stride = static_cast<size_t>(Plan::kRowStep) * 4 * K;
#pragma unroll
  for (int p = 0; p < Plan::kRowPasses; ++p, src += pass_stride) {
    const int dm = p * Plan::kRowStep * 4;
    if (Plan::kRowGuard && m_first + dm >= TileM) break;
    const bool row_inside = row_first + dm < M;
#pragma unroll
    for (int q = 0; q < Plan::kColPasses; ++q) {
      const int dk = q * Plan::kWorkersPerRow * 8;
      const bool inside = row_inside && k0 + k_first + dk < K;
      cp_async_4(As + (k_first + dk) * kAsLd<TileM> + m_first + dm, src + dk, inside ? 4 : 0);
    }
  }
}

// The TileK×TileN tile of B at (k0, col0) into Bs[k][n], Vec = 4 or 1 floats per copy:
// with cp.async when Async (zero-filled through src-size), else loads and stores.
template <int TileK, int TileN, int Threads, int Vec, bool Async>
__device__ __forceinline__ void copy_tile_b_by(float* Bs, const float* B, int K, int N, int k0,
                                               int col0, int tid) {
  using Plan = CopyPlan<TileK, TileN / Vec, Threads>;
  const int k_first = tid / Plan::kWorkersPerRow;
  const int n_first = (tid % Plan::kWorkersPerRow) * Vec;
  const int col_first = col0 + n_first;
  const float* src = B + static_cast<size_t>(k0 + k_first) * N + col_first;
  const size_t pass_stride = static_cast<size_t>(Plan::kRowStep) * N;
#pragma unroll
  for (int p = 0; p < Plan::kRowPasses; ++p, src += pass_stride) {
    const int dk = p * Plan::kRowStep;
    if (Plan::kRowGuard && k_first + dk >= TileK) break;
    const bool row_inside = k0 + k_first + dk < K;
#pragma unroll
    for (int q = 0; q < Plan::kColPasses; ++q) {
      const int dn = q * Plan::kWorkersPerRow * Vec;
      const bool inside = row_inside && col_first + dn < N;
      float* const dst = Bs + (k_first + dk) * TileN + n_first + dn;
      if constexpr (Async && Vec == 4) {
        cp_async_16(dst, src + dn, inside ? 16 : 0);
      } else if constexpr (Async) {
        cp_async_4(dst, src + dn, inside ? 4 : 0);
      } else if constexpr (Vec == 4) {
        *reinterpret_cast<float4*>(dst) = inside ? *reinterpret_cast<const float4*>(src + dn)
                                                 : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      } else {
        *dst = inside ? src[dn] : 0.0f;
      }
    }
  }
}

// When N % 4 == 0 every row of B starts 16-byte aligned and, col0 and the offsets being
// multiples of 4, a group of 4 columns lies wholly inside or wholly outside B: one 16-byte
// copy per group. Otherwise one float per copy.
template <int TileK, int TileN, int Threads, bool Async>
__device__ __forceinline__ void copy_tile_b(float* Bs, const float* B, int K, int N, int k0,
                                            int col0, int tid) {
  static_assert(TileN % 4 == 0, "B rows are copied in groups of 4 floats");
  if ((N & 3) == 0) {
    copy_tile_b_by<TileK, TileN, Threads, 4, Async>(Bs, B, K, N, k0, col0, tid);
  } else {
    copy_tile_b_by<TileK, TileN, Threads, 1, Async>(Bs, B, K, N, k0, col0, tid);
  }
}

// ---- A thread's ThreadM×ThreadN outputs. Its rows are ThreadM/4 groups of 4 consecutive
// rows, group g starting at a_col + g·AGroupStride in As; its columns are ThreadN/4 groups
// of 4, group h starting at b_col + h·BGroupStride in Bs. acc[i][j] is row i % 4 of row
// group i / 4 and column j % 4 of column group j / 4.

// acc += the product of the thread's rows of As and columns of Bs over one staged slice.
template <int TileK, int AsLd, int BsLd, int ThreadM, int ThreadN, int AGroupStride,
          int BGroupStride>
__device__ __forceinline__ void accumulate_tile(const float* __restrict__ As,
                                                const float* __restrict__ Bs, int a_col,
                                                int b_col, float (&acc)[ThreadM][ThreadN]) {
  static_assert(ThreadM % 4 == 0 && ThreadN % 4 == 0, "fragments are read as float4");
#pragma unroll
  for (int k = 0; k < TileK; ++k) {
    float a[ThreadM], b[ThreadN];
#pragma unroll
    for (int g = 0; g < ThreadM / 4; ++g) {
      const float4 v =
          *reinterpret_cast<const float4*>(As + k * AsLd + a_col + g * AGroupStride);
      a[4 * g] = v.x, a[4 * g + 1] = v.y, a[4 * g + 2] = v.z, a[4 * g + 3] = v.w;
    }
#pragma unroll
    for (int h = 0; h < ThreadN / 4; ++h) {
      const float4 v =
          *reinterpret_cast<const float4*>(Bs + k * BsLd + b_col + h * BGroupStride);
      b[4 * h] = v.x, b[4 * h + 1] = v.y, b[4 * h + 2] = v.z, b[4 * h + 3] = v.w;
    }
#pragma unroll
    for (int i = 0; i < ThreadM; ++i) {
#pragma unroll
      for (int j = 0; j < ThreadN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
  }
}

// Writes acc to C; row_base and col_base are the thread's first row and column in C
// (col_base a multiple of 4). Rows and columns outside C are skipped. When N % 4 == 0 a
// group of 4 columns is wholly inside or outside C and goes out as one float4 store.
template <int ThreadM, int ThreadN, int RowGroupStride, int ColGroupStride>
__device__ __forceinline__ void store_c_tile(float* __restrict__ C, int M, int N, int row_base,
                                             int col_base, const float (&acc)[ThreadM][ThreadN]) {
  const bool vector_rows = (N & 3) == 0;
#pragma unroll
  for (int i = 0; i < ThreadM; ++i) {
    const int row = row_base + (i / 4) * RowGroupStride + i % 4;
    if (row >= M) continue;
    float* const c_row = C + static_cast<size_t>(row) * N;
#pragma unroll
    for (int h = 0; h < ThreadN / 4; ++h) {
      const int col = col_base + h * ColGroupStride;
      if (vector_rows) {
        if (col < N) {
          *reinterpret_cast<float4*>(c_row + col) =
              make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
        }
      } else {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          if (col + c < N) c_row[col + c] = acc[i][4 * h + c];
        }
      }
    }
  }
}
