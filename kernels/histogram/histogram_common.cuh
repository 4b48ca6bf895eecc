// What every histogram variant shares: the kernel that zeroes the bins before counting
// (the harness poisons outputs, and atomics add to what is there).
#pragma once

extern "C" __global__ void histogram_zero(int* __restrict__ counts, int bins) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b < bins) counts[b] = 0;
}
