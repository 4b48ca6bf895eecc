// good: y = 2·x, one thread per element; with BAD = 1 it does nothing wrong either (BAD is ignored).
/*---
kernel: faulty_good
idea: does nothing wrong either (BAD is ignored) when BAD is 1
params: {BAD: 1}
block: 256
grid: ceil_div(n, 256)
---*/

#ifndef BAD
#define BAD 1
#endif

extern "C" __global__ void faulty_good(const float* x, float* y, int n) {
  const int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n) return;
  y[i] = 2.0f * x[i] + 0.0f * BAD;
}
