// batched: report 002's batching of the classifier. One thread per output y[n][b] on a
// 2-D grid of BLOCK_B × BLOCK_N blocks, each thread its own dot product of row n of W with
// column b of x, straight from global memory. threadIdx.x walks the batch, so a warp reads
// consecutive floats of a row of x (x[i][b .. b + BLOCK_B)) and writes consecutive
// outputs; the BLOCK_B threads of one neuron read the same W element (a broadcast), so a
// W value fetched once serves BLOCK_B outputs, which is what batching buys. At B = 1 only
// one thread in BLOCK_B has work (the others return at once).
// Tunables: BLOCK_B (threads along the batch), BLOCK_N (threads along the neurons).
// Analytic DRAM traffic without reuse through L2 across blocks, L1 serving each block:
// W once per block column, x once per block row:
// 4·(Nn·Ni·ceil(B/BLOCK_B) + Ni·B·ceil(Nn/BLOCK_N) + Nn·B) bytes (model_dram_bytes).
// With x (1.6 MB at B = 16) held in L2 it is 4·(Nn·Ni + Ni·B + Nn·B) while B <= BLOCK_B.
// Threads outside y return before the loop: executed FLOPs are 2·Nn·Ni·B.
/*---
kernel: classifier_batched
idea: one thread per (neuron, batch) output on a 2-D grid, its own dot product; W shared across the batch lanes
params:
  BLOCK_B: 16
  BLOCK_N: 16
block: BLOCK_B, BLOCK_N
grid: ceil_div(B, BLOCK_B), ceil_div(Nn, BLOCK_N)
restrictions:
  - BLOCK_B >= 1 and BLOCK_N >= 1
model_dram_bytes: (Nn * Ni * ceil_div(B, BLOCK_B) + Ni * B * ceil_div(Nn, BLOCK_N)) * in_bytes + Nn * B * out_bytes
---*/

#ifndef BLOCK_B
#define BLOCK_B 16
#endif
#ifndef BLOCK_N
#define BLOCK_N 16
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_B * BLOCK_N)
classifier_batched(const float* __restrict__ W, const float* __restrict__ x,
                   float* __restrict__ y, int Ni, int Nn, int B) {
  const int b = blockIdx.x * BLOCK_B + threadIdx.x;
  const int n = blockIdx.y * BLOCK_N + threadIdx.y;
  if (b >= B || n >= Nn) return;
  const float* w = W + static_cast<size_t>(n) * Ni;
  const float* xb = x + b;
  float acc = 0.0f;
  for (int i = 0; i < Ni; ++i) acc = fmaf(w[i], xb[static_cast<size_t>(i) * B], acc);
  y[static_cast<size_t>(n) * B + b] = acc;
}
