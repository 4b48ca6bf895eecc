// global_atomic: every value is one atomicAdd on its bin in global memory. A first kernel
// zeroes the bins (outputs arrive poisoned); then each thread reads ITEMS values, a block's
// warps reading consecutive ints (coalesced), and increments their bins. The increments are
// done by the L2's atomic units: values of one bin serialize there, so with few bins (4) a
// handful of L2 slices take every update while the rest idle: atomic contention, not
// bandwidth, limits the kernel. With many bins the updates spread over every slice.
// Tunables: BLOCK (threads per block), ITEMS (values per thread).
// Analytic DRAM traffic: the values read once; the bins stay in L2 while it holds them.
/*---
idea: one global atomicAdd per value; contention at L2 when bins are few
params:
  BLOCK: 256
  ITEMS: 8
launches:
  - kernel: histogram_zero
    name: zero
    block: 256
    grid: ceil_div(BINS, 256)
    args: [counts, BINS]
  - kernel: histogram_global_atomic
    name: count
    block: BLOCK
    grid: ceil_div(N, BLOCK * ITEMS)
restrictions:
  - BLOCK % 32 == 0 and BLOCK <= 1024
  - ITEMS >= 1
---*/

#include "histogram_common.cuh"

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 8
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
histogram_global_atomic(const int* __restrict__ values, int* __restrict__ counts, int n,
                        int bins) {
  // the block's ITEMS·BLOCK values, read BLOCK at a time so that each load is coalesced
  const size_t first = static_cast<size_t>(blockIdx.x) * BLOCK * ITEMS + threadIdx.x;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const size_t i = first + static_cast<size_t>(k) * BLOCK;
    if (i < static_cast<size_t>(n)) {
      const int v = values[i];
      if (static_cast<unsigned>(v) < static_cast<unsigned>(bins)) atomicAdd(&counts[v], 1);
    }
  }
}
