// faults: y = 2·x, one thread per element, done right (FAULT = 0) or wrong in one of four
// ways, to show that a sweep survives each: 1 writes 2^40 elements past y (an illegal
// address that takes the CUDA context down), 2 never finishes (a loop on the clock, which
// no compiler may drop), 3 writes NaN, 4 asks at launch for more dynamic shared memory
// than any GPU has (a test raises the declared limit to let it through to the device).
/*---
kernel: faults
idea: y = 2·x, with the fault FAULT (0 none, 1 out of bounds, 2 hang, 3 NaN, 4 shared memory)
params: {FAULT: 0}
block: 256
grid: ceil_div(n, 256)
dynamic_smem: 1024 + (FAULT == 4) * 1048576
smem_optin: true
restrictions: [FAULT >= 0 and FAULT <= 4]
---*/

#ifndef FAULT
#define FAULT 0
#endif

extern "C" __global__ void faults(const float* x, float* y, int n) {
  extern __shared__ float scratch[];
  const int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n) return;
  if (FAULT == 2) {
    while (clock64() >= 0) {}  // the clock never goes negative
  }
  scratch[threadIdx.x] = 2.0f * x[i];
  const size_t at = static_cast<size_t>(i) + (FAULT == 1 ? (size_t{1} << 40) : 0);
  y[at] = FAULT == 3 ? __int_as_float(0x7fffffff) : scratch[threadIdx.x];
}
