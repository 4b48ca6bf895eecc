// nan: y = 2·x, one thread per element; with BAD = 1 it writes NaN into y.
/*---
kernel: faulty_nan
idea: writes NaN into y when BAD is 1
params: {BAD: 1}
block: 256
grid: ceil_div(n, 256)
---*/

#ifndef BAD
#define BAD 1
#endif

extern "C" __global__ void faulty_nan(const float* x, float* y, int n) {
  const int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n) return;
  y[i] = BAD ? __int_as_float(0x7fffffff) : 2.0f * x[i];
}
