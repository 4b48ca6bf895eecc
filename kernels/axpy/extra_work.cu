// extra_work: grid_stride's axpy, then a known amount of extra memory traffic that leaves
// the result alone: a slow-down injected on purpose, for benchmarks/detection.py to ask
// whether ncuflow compare calls it real. After the update, the grid reads the first
// 3·n·EXTRA_PCT/100 elements of x once more (4 bytes each against the update's 12 per
// element), so a DRAM-bound run takes about EXTRA_PCT % longer; the sum it reads is kept
// only where it is one exact NaN that a sum of finite inputs cannot give, so the compiler
// must do the reads and y is never touched by them.
// Tunables: BLOCK (threads per block), BLOCKS_PER_SM (as grid_stride), EXTRA_PCT (the
// slow-down wanted, in percent of the update's traffic).
// Analytic DRAM traffic: 12·n bytes for the update, plus 4 bytes per extra element read.
/*---
kernel: axpy_extra_work
idea: grid_stride's update followed by extra reads of x, about EXTRA_PCT % more traffic
params:
  BLOCK: 256
  BLOCKS_PER_SM: 8
  EXTRA_PCT: 0
block: BLOCK
grid: sm_count * BLOCKS_PER_SM
restrictions:
  - BLOCK % 32 == 0 and BLOCK <= 1024
  - BLOCK * BLOCKS_PER_SM <= max_threads_per_sm
  - EXTRA_PCT >= 0 and EXTRA_PCT <= 33
---*/

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef BLOCKS_PER_SM
#define BLOCKS_PER_SM 8
#endif
#ifndef EXTRA_PCT
#define EXTRA_PCT 0
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
axpy_extra_work(float a, const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = static_cast<long long>(gridDim.x) * BLOCK;
  const long long first = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;
  for (long long i = first; i < n; i += stride) {
    y[i] = fmaf(a, x[i], y[i]);
  }
  const long long extra = n * 3 * EXTRA_PCT / 100;
  float sum = 0.0f;
  for (long long i = first; i < extra; i += stride) {
    sum += x[i];
  }
  if (__float_as_uint(sum) == 0x7fbfffffu) {  // a NaN payload no finite sum has
    y[0] = sum;
  }
}
