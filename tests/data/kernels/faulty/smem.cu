// smem: y = 2·x, one thread per element; with BAD = 1 it asks at launch for more shared memory than any GPU has (declared limits raised to let it through).
/*---
kernel: faulty_smem
idea: asks at launch for more shared memory than any GPU has (declared limits raised to let it through) when BAD is 1
params: {BAD: 1}
block: 256
grid: ceil_div(n, 256)
dynamic_smem: 1024 + BAD * 1048576
smem_optin: true
---*/

#ifndef BAD
#define BAD 1
#endif

extern "C" __global__ void faulty_smem(const float* x, float* y, int n) {
  const int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n) return;
  extern __shared__ float scratch[];
  scratch[threadIdx.x] = 2.0f * x[i];
  y[i] = scratch[threadIdx.x];
}
