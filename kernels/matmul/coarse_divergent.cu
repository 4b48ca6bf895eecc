// coarse_divergent: report 001's first coarsened kernel ("A somewhat different approach":
// optimization 1, thread coarsening, and 2, shared-memory tiling), before "A more balanced
// approach" (regtile_vd). A 1-D block of TA threads computes a TA×TB tile of C; each thread
// owns TB consecutive outputs of one row, in registers. Per step along K each thread loads
// ONE element of its row of A into a register, and only TB of the TA threads load the TB
// elements of one row of B into shared memory (divergence: the other TA − TB idle); a
// barrier, TB multiply-adds per thread, a barrier before the next row of B. So two barriers
// per TB multiply-adds, where regtile_vd has two per KT·TB. A warp's A loads are one float
// per row of A (32 sectors per request; each sector serves 8 steps if L1 keeps it); the row
// of B is coalesced. C is written row by row per thread, as in regtile_vd. Tunables TA, TB
// (TB ≤ TA; regtile_vd's TA % TB == 0 is not needed here).
// Analytic DRAM traffic without reuse through L2 across blocks: A is read once per block
// column and B once per block row: 4·(M·K·ceil(N/TB) + K·N·ceil(M/TA) + M·N) bytes.
// Rows past M load zero A and columns past N zero B, so any M, N, K works; the loop runs
// over K exactly, but rows and columns of the edge blocks outside C still compute: at
// M=N=K=2049, M padded to 2176 (TA 128), N to 2064 (TB 16): executed_flops / flops = 1.070.
/*---
kernel: matmul_coarse_divergent
idea: 1-D blocks of TA threads, each a row of TB outputs; per k one A element in a register, TB threads stage a row of B, two barriers
params:
  TA: 128
  TB: 16
block: TA
grid: ceil_div(N, TB), ceil_div(M, TA)
static_smem: TB * 4
executed_flops: 2 * round_up(M, TA) * round_up(N, TB) * K
model_dram_bytes: (M * K * ceil_div(N, TB) + K * N * ceil_div(M, TA)) * in_bytes + M * N * out_bytes
restrictions:
  # TB of the TA threads load the row of B
  - TB >= 1 and TB <= TA
---*/

#ifndef TA
#define TA 128
#endif
#ifndef TB
#define TB 16
#endif

static_assert(TB >= 1 && TB <= TA, "TB of the TA threads load B");

extern "C" __global__ void __launch_bounds__(TA)
matmul_coarse_divergent(const float* __restrict__ A, const float* __restrict__ B,
                        float* __restrict__ C, int M, int N, int K) {
  // Every thread reads the same b_row element at a time: a broadcast, no bank conflicts.
  __shared__ float b_row[TB];
  const int tid = threadIdx.x;
  const int row = blockIdx.y * TA + tid;
  const int col0 = blockIdx.x * TB;
  const bool row_inside = row < M;
  // Rows past M still stage B and reach every barrier; their A stays zero.
  const float* a_row = A + static_cast<size_t>(row_inside ? row : 0) * K;
  const bool b_inside = tid < TB && col0 + tid < N;
  const float* b_src = B + (b_inside ? col0 + tid : 0);

  float acc[TB];
#pragma unroll
  for (int c = 0; c < TB; ++c) acc[c] = 0.0f;

  for (int k = 0; k < K; ++k) {
    if (tid < TB) b_row[tid] = b_inside ? b_src[static_cast<size_t>(k) * N] : 0.0f;
    // Loaded before the barrier, so that its latency overlaps the wait.
    const float a = row_inside ? a_row[k] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int c = 0; c < TB; ++c) acc[c] = fmaf(a, b_row[c], acc[c]);
    // The next step overwrites b_row.
    __syncthreads();
  }

  if (!row_inside) return;
  float* c_row = C + static_cast<size_t>(row) * N + col0;
#pragma unroll
  for (int c = 0; c < TB; ++c) {
    if (col0 + c < N) c_row[c] = acc[c];
  }
}
