// naive: one thread per element. A warp reads 32 consecutive floats of x and of y and writes
// 32 of y (coalesced: four whole 32-byte sectors each). Each thread moves 12 bytes for two
// FLOPs, so DRAM bandwidth bounds it; with one element per thread the GPU runs n / BLOCK
// short blocks, and block scheduling is its overhead. The first rung of the axpy ladder.
// Tunables: BLOCK (threads per block).
// Analytic DRAM traffic: x read once, y read and written once: 12·n bytes (min_bytes).
/*---
kernel: axpy_naive
idea: one thread per element
params:
  BLOCK: 256
block: BLOCK
grid: ceil_div(n, BLOCK)
restrictions:
  - BLOCK % 32 == 0 and BLOCK <= 1024
---*/

#ifndef BLOCK
#define BLOCK 256
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
axpy_naive(float a, const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;
  if (i < n) y[i] = fmaf(a, x[i], y[i]);
}
