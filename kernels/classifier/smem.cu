// smem: report 002's shared-memory rung of the classifier (B = 1). A block of ROWS threads
// owns ROWS neurons, one each, and walks Ni in chunks of TILE: it stages the chunk of x and
// the ROWS×TILE tile of W in shared memory, then every thread reduces its own row of the
// tile. The tile is loaded coalesced (consecutive threads read consecutive floats of a row
// of W, so a warp reads whole 128-byte lines instead of baseline's one float per line) into
// a tile padded by one column (TILE + 1 floats per row), which puts the row reads
// Ws[t][c] of the 32 threads of a warp in 32 different banks; x[c] is a broadcast. Each
// thread issues all TILE of its loads into registers before storing any (so a block has
// its whole 4·ROWS·TILE-byte tile in flight; TILE <= 128 keeps them in registers without
// spilling), and four partial sums break the dependency chain of the TILE multiply-adds.
// Sizing: one thread per neuron is only Nn threads (4,096 at Classifier 1: 128 blocks of
// one warp, about one per SM); per SM one 16 KB tile is in flight, then a barrier, the
// sums and another barrier, so the rung is latency-bound well below DRAM bandwidth, which
// is the point it makes against gemv_vectorized.
// Tunables: ROWS (threads per block = neurons per block), TILE (columns of a chunk).
// Analytic DRAM traffic without reuse through L2 across blocks: W once, x once per block:
// 4·(Nn·Ni + Ni·ceil(Nn/ROWS) + Nn) bytes (model_dram_bytes); with x held in L2, W once.
// Every thread computes whole tiles, zero-padded past Nn and Ni: executed FLOPs are
// 2·round_up(Nn, ROWS)·round_up(Ni, TILE) + 3·Nn (the adds of the partial sums);
// at Classifier 1 (32 | 4096, 128 | 25088) only the adds are extra.
/*---
kernel: classifier_smem
idea: chunks of x and a coalesced, padded ROWS×TILE tile of W staged in shared memory; each thread reduces its row
params:
  ROWS: 32
  TILE: 128
block: ROWS
grid: ceil_div(Nn, ROWS)
static_smem: (ROWS * (TILE + 1) + TILE) * 4
restrictions:
  - B == 1
  - ROWS >= 1 and TILE >= 4
  - TILE % 4 == 0
  - TILE <= 128
executed_flops: 2 * round_up(Nn, ROWS) * round_up(Ni, TILE) + 3 * Nn
model_dram_bytes: (Nn * Ni + Ni * B * ceil_div(Nn, ROWS)) * in_bytes + Nn * B * out_bytes
---*/

#ifndef ROWS
#define ROWS 32
#endif
#ifndef TILE
#define TILE 128
#endif

static_assert(TILE % 4 == 0, "the row reduction keeps four partial sums");
// Columns of a tile row each thread loads (the last pass is partial when ROWS ∤ TILE).
constexpr int kColIters = (TILE + ROWS - 1) / ROWS;

extern "C" __global__ void __launch_bounds__(ROWS)
classifier_smem(const float* __restrict__ W, const float* __restrict__ x, float* __restrict__ y,
                int Ni, int Nn, int B) {
  __shared__ float Ws[ROWS][TILE + 1];
  __shared__ float xs[TILE];
  const int t = threadIdx.x;
  const int n0 = blockIdx.x * ROWS;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};

  for (int i0 = 0; i0 < Ni; i0 += TILE) {
#pragma unroll
    for (int j = 0; j < kColIters; ++j) {
      const int c = t + j * ROWS;
      if (TILE % ROWS == 0 || c < TILE) xs[c] = i0 + c < Ni ? x[i0 + c] : 0.0f;
    }
    // Row by row, consecutive threads read consecutive columns: a warp reads 128
    // contiguous bytes of one row of W. All TILE loads of a thread are issued into
    // registers before the first store to shared memory, so they are in flight together.
    float v[ROWS][kColIters];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      const bool row_in = n0 + r < Nn;
      const float* w = W + static_cast<size_t>(row_in ? n0 + r : 0) * Ni + i0;
#pragma unroll
      for (int j = 0; j < kColIters; ++j) {
        const int c = t + j * ROWS;
        v[r][j] = row_in && (TILE % ROWS == 0 || c < TILE) && i0 + c < Ni ? w[c] : 0.0f;
      }
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
#pragma unroll
      for (int j = 0; j < kColIters; ++j) {
        const int c = t + j * ROWS;
        if (TILE % ROWS == 0 || c < TILE) Ws[r][c] = v[r][j];
      }
    }
    __syncthreads();
#pragma unroll
    for (int c = 0; c < TILE; c += 4) {
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[j] = fmaf(Ws[t][c + j], xs[c + j], acc[j]);
    }
    __syncthreads();  // the tile is refilled next
  }
  const int n = n0 + t;
  if (n < Nn) y[n] = (acc[0] + acc[1]) + (acc[2] + acc[3]);  // B == 1: y[n * B]
}
