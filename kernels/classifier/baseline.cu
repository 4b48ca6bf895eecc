// baseline: report 002's first rung of the classifier. One thread per output neuron walks
// its row of W and the input vector x in a plain loop (B = 1: a single input vector). The
// lanes of a warp read BLOCK different rows, Ni floats apart, so every load instruction
// touches BLOCK separate 128-byte lines and uses 4 bytes of each; L1 keeps each thread's
// current line for the next iterations, so W still comes from DRAM about once, but the
// load pipe moves 4 useful bytes per lane per instruction. x is one address for the whole
// warp (a broadcast). The report used 16 threads per block: Nn / 16 = 256 blocks of half a
// warp at Classifier 1, 4096 threads in all, about one warp per SM.
// Tunable: BLOCK (threads per block, one neuron each).
// Analytic DRAM traffic without reuse through L2 across blocks, L1 serving each block's
// rows and its copy of x: 4·(Nn·Ni + Ni·ceil(Nn/BLOCK) + Nn) bytes (model_dram_bytes);
// with x held in L2 (100 KB at Classifier 1) it is W once: 4·(Nn·Ni + Ni + Nn).
// Nothing is padded: executed FLOPs are 2·Nn·Ni.
/*---
kernel: classifier_baseline
idea: one thread per output neuron (B = 1), a plain loop over its row of W
params:
  BLOCK: 16
block: BLOCK
grid: ceil_div(Nn, BLOCK)
restrictions:
  - B == 1
  - BLOCK >= 1
model_dram_bytes: (Nn * Ni + Ni * B * ceil_div(Nn, BLOCK)) * in_bytes + Nn * B * out_bytes
---*/

#ifndef BLOCK
#define BLOCK 16
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
classifier_baseline(const float* __restrict__ W, const float* __restrict__ x,
                    float* __restrict__ y, int Ni, int Nn, int B) {
  const int n = blockIdx.x * BLOCK + threadIdx.x;
  if (n >= Nn) return;
  const float* w = W + static_cast<size_t>(n) * Ni;
  float acc = 0.0f;
  for (int i = 0; i < Ni; ++i) acc = fmaf(w[i], x[i], acc);
  y[n] = acc;  // B == 1: y[n * B]
}
