// oob: y = 2·x, one thread per element; with BAD = 1 it writes 2^40 elements past y (an illegal address that takes the context down).
/*---
kernel: faulty_oob
idea: writes 2^40 elements past y (an illegal address that takes the context down) when BAD is 1
params: {BAD: 1}
block: 256
grid: ceil_div(n, 256)
---*/

#ifndef BAD
#define BAD 1
#endif

extern "C" __global__ void faulty_oob(const float* x, float* y, int n) {
  const int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n) return;
  y[static_cast<size_t>(i) + (BAD ? (size_t{1} << 40) : 0)] = 2.0f * x[i];
}
