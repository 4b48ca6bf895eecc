// shared_atomic: the block counts into its own copy of the bins in shared memory, then adds
// each non-zero count to the global bins once. Contention moves from the L2's atomic units
// to shared memory (a warp's increments of one address serialize there), and global atomics
// fall from N to at most BINS per block. Needs BINS ints of shared memory per block, so
// BINS is bounded by what a block may have (48 KiB without opt-in: 12,288 bins).
// Tunables: BLOCK (threads per block), ITEMS (values per thread).
// Analytic DRAM traffic: the values read once.
/*---
idea: per-block bins in shared memory, merged into the global bins once per block
params:
  BLOCK: 256
  ITEMS: 32
launches:
  - kernel: histogram_zero
    name: zero
    block: 256
    grid: ceil_div(BINS, 256)
    args: [counts, BINS]
  - kernel: histogram_shared_atomic
    name: count
    block: BLOCK
    grid: ceil_div(N, BLOCK * ITEMS)
    dynamic_smem: BINS * 4
restrictions:
  - BLOCK % 32 == 0 and BLOCK <= 1024
  - ITEMS >= 1
  - BINS * 4 <= 48 * 1024
---*/

#include "histogram_common.cuh"

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 32
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
histogram_shared_atomic(const int* __restrict__ values, int* __restrict__ counts, int n,
                        int bins) {
  extern __shared__ int local[];
  for (int b = threadIdx.x; b < bins; b += BLOCK) local[b] = 0;
  __syncthreads();
  const size_t first = static_cast<size_t>(blockIdx.x) * BLOCK * ITEMS + threadIdx.x;
#pragma unroll 4
  for (int k = 0; k < ITEMS; ++k) {
    const size_t i = first + static_cast<size_t>(k) * BLOCK;
    if (i < static_cast<size_t>(n)) {
      const int v = values[i];
      if (static_cast<unsigned>(v) < static_cast<unsigned>(bins)) atomicAdd(&local[v], 1);
    }
  }
  __syncthreads();
  for (int b = threadIdx.x; b < bins; b += BLOCK) {
    if (local[b] != 0) atomicAdd(&counts[b], local[b]);
  }
}
