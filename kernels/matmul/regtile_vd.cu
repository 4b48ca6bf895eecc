// regtile_vd: Volkov & Demmel's register tiling (report 001). A 1-D block of TA threads
// computes a TA×TB tile of C; each thread owns one row of it (TB accumulators) and holds
// KT = TA/TB elements of its row of A in registers per step, while the block stages the
// KT×TB tile of B in shared memory, one element per thread, so no thread idles in the load.
// Row-major A is not coalesced this way (report 001 transposes A for that); here a thread
// reads its KT consecutive floats of A (float4 when K % 4 == 0), whole sectors from KT = 8.
// C is written row by row per thread: uncoalesced, as in the original. Tunables TA, TB.
// Analytic DRAM traffic without reuse through L2 across blocks: A is read once per block
// column and B once per block row: 4·(M·K·ceil(N/TB) + K·N·ceil(M/TA) + M·N) bytes.
// At M=N=K=2049 rows past M and columns past N still compute over zero A and B: M padded
// to 2176 (TA 128), N to 2064 (TB 16), K to 2056 (KT 8): executed_flops / flops = 1.073.
// transposed_a includes this file and runs the same block on a transposed copy of A.
/*---
kernel: matmul_regtile_vd
idea: 1-D blocks of TA threads, each a row of TB outputs; A in registers, a KT×TB tile of B in shared memory
params:
  TA: 128
  TB: 16
block: TA
grid: ceil_div(N, TB), ceil_div(M, TA)
static_smem: TA * 4
executed_flops: 2 * round_up(M, TA) * round_up(N, TB) * round_up(K, TA // TB)
model_dram_bytes: (M * K * ceil_div(N, TB) + K * N * ceil_div(M, TA)) * in_bytes + M * N * out_bytes
restrictions:
  - TB >= 1
  - TA % TB == 0
---*/

#ifndef TA
#define TA 128
#endif
#ifndef TB
#define TB 16
#endif

// Rows of K per step: the B tile KT×TB has exactly TA elements, one per thread.
constexpr int KT = TA / TB;
static_assert(TB >= 1 && TA % TB == 0, "TA must be a multiple of TB");

// One block's TA×TB tile of C. With kATransposed, A is At (K×M, At[k][m] = A[m][k]): the
// block's threads, consecutive rows, then read consecutive floats of At for each k.
template <bool kATransposed>
__device__ __forceinline__ void regtile_vd_tile(const float* __restrict__ A,
                                                const float* __restrict__ B,
                                                float* __restrict__ C, int M, int N, int K) {
  // Every thread reads the same b_tile element at a time: a broadcast, no bank conflicts.
  __shared__ __align__(16) float b_tile[KT][TB];
  const int tid = threadIdx.x;
  const int row = blockIdx.y * TA + tid;
  const int col0 = blockIdx.x * TB;
  const bool row_inside = row < M;
  // Rows past M still stage B and reach every barrier; their A stays zero.
  const float* a_row = A + static_cast<size_t>(row_inside ? row : 0) * K;
  const int b_k = tid / TB, b_n = tid % TB;
  const bool b_col_inside = col0 + b_n < N;
  const bool a_vector = KT % 4 == 0 && (K & 3) == 0;

  float acc[TB];
#pragma unroll
  for (int c = 0; c < TB; ++c) acc[c] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += KT) {
    const int bk = k0 + b_k;
    b_tile[b_k][b_n] = (bk < K && b_col_inside) ? B[static_cast<size_t>(bk) * N + col0 + b_n] : 0.0f;

    float a[KT];
    if constexpr (kATransposed) {
#pragma unroll
      for (int j = 0; j < KT; ++j) {
        a[j] = (row_inside && k0 + j < K) ? A[static_cast<size_t>(k0 + j) * M + row] : 0.0f;
      }
    } else if (a_vector) {
      // K % 4 == 0 and k0 % 4 == 0: 16-byte aligned, and a group is wholly inside or out.
#pragma unroll
      for (int q = 0; q < KT / 4; ++q) {
        const int k = k0 + 4 * q;
        const float4 v = (row_inside && k < K) ? *reinterpret_cast<const float4*>(a_row + k)
                                               : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        a[4 * q] = v.x, a[4 * q + 1] = v.y, a[4 * q + 2] = v.z, a[4 * q + 3] = v.w;
      }
    } else {
#pragma unroll
      for (int j = 0; j < KT; ++j) a[j] = (row_inside && k0 + j < K) ? a_row[k0 + j] : 0.0f;
    }
    __syncthreads();

#pragma unroll
    for (int j = 0; j < KT; ++j) {
#pragma unroll
      for (int c = 0; c < TB; ++c) acc[c] = fmaf(a[j], b_tile[j][c], acc[c]);
    }
    // b_tile is overwritten by the next step.
    __syncthreads();
  }

  if (!row_inside) return;
  float* c_row = C + static_cast<size_t>(row) * N + col0;
#pragma unroll
  for (int c = 0; c < TB; ++c) {
    if (col0 + c < N) c_row[c] = acc[c];
  }
}

extern "C" __global__ void __launch_bounds__(TA)
matmul_regtile_vd(const float* __restrict__ A, const float* __restrict__ B,
                  float* __restrict__ C, int M, int N, int K) {
  regtile_vd_tile<false>(A, B, C, M, N, K);
}
