// grid_stride: a persistent grid, BLOCKS_PER_SM blocks on each SM (the device's sm_count
// from its facts), each thread walking the array in steps of the whole grid. The same bytes
// as naive, with a block started once per slot instead of once per BLOCK elements: what
// block scheduling cost naive shows here as the difference.
// Tunables: BLOCK (threads per block), BLOCKS_PER_SM (resident blocks the grid asks for).
// Analytic DRAM traffic: 12·n bytes, as naive.
/*---
kernel: axpy_grid_stride
idea: a persistent grid of BLOCKS_PER_SM blocks per SM striding over the array
params:
  BLOCK: 256
  BLOCKS_PER_SM: 8
block: BLOCK
grid: sm_count * BLOCKS_PER_SM
restrictions:
  - BLOCK % 32 == 0 and BLOCK <= 1024
  - BLOCK * BLOCKS_PER_SM <= max_threads_per_sm
---*/

#ifndef BLOCK
#define BLOCK 256
#endif
// sets the grid's size only: the kernel reads gridDim.x
#ifndef BLOCKS_PER_SM
#define BLOCKS_PER_SM 8
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
axpy_grid_stride(float a, const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = static_cast<long long>(gridDim.x) * BLOCK;
  for (long long i = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x; i < n;
       i += stride) {
    y[i] = fmaf(a, x[i], y[i]);
  }
}
