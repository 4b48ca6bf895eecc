// spin: y = 2·x, one thread per element; with BAD = 1 it never finishes (a loop the compiler must keep).
/*---
kernel: faulty_spin
idea: never finishes (a loop the compiler must keep) when BAD is 1
params: {BAD: 1}
block: 256
grid: ceil_div(n, 256)
---*/

#ifndef BAD
#define BAD 1
#endif

extern "C" __global__ void faulty_spin(const float* x, float* y, int n) {
  const int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n) return;
  if (BAD) {
    while (clock64() >= 0) {}  // the clock never goes negative: a loop no compiler may drop
  }
  y[i] = 2.0f * x[i];
}
