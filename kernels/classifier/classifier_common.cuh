// Device code shared by the classifier variants that split the reduction over Ni
// (smem_batched, wmma_batched): Ampere-style cp.async copies with zero fill, and the
// deterministic second pass that sums the per-split partial outputs.
#pragma once

#include "../common/cp_async.cuh"

__device__ __forceinline__ int cls_ceil_div(int a, int b) { return (a + b - 1) / b; }

// The k range [k_begin, k_end) of split s of `splits`: chunks of whole tiles of `tile`
// (so every split but the last non-empty one covers whole tiles, and tile-aligned
// vector copies stay aligned); trailing splits may be empty when Ni is small.
__device__ __forceinline__ void cls_split_range(int Ni, int splits, int s, int tile,
                                                int& k_begin, int& k_end) {
  const int chunk = cls_ceil_div(cls_ceil_div(Ni, splits), tile) * tile;
  const long long begin = static_cast<long long>(s) * chunk;
  k_begin = begin < Ni ? static_cast<int>(begin) : Ni;
  k_end = begin + chunk < Ni ? static_cast<int>(begin + chunk) : Ni;
}

// out[e] = sum over s < splits of partial[s * count + e], summed in the order of s (the
// same result on every run). Each thread takes 4 consecutive elements: one float4 per
// split when count % 4 == 0 (every split's slab is then 16-byte aligned), else scalars.
__device__ __forceinline__ void cls_split_reduce(const float* __restrict__ partial,
                                                 float* __restrict__ out, int count,
                                                 int splits) {
  const int e = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
  if (e >= count) return;
  if (count % 4 == 0) {
    const float4* p = reinterpret_cast<const float4*>(partial + e);
    float4 sum = __ldg(p);
#pragma unroll 4
    for (int s = 1; s < splits; ++s) {
      const float4 v = __ldg(p + static_cast<size_t>(s) * (count / 4));
      sum.x += v.x;
      sum.y += v.y;
      sum.z += v.z;
      sum.w += v.w;
    }
    *reinterpret_cast<float4*>(out + e) = sum;
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if (e + j < count) {
      const float* p = partial + e + j;
      float sum = __ldg(p);
#pragma unroll 4
      for (int s = 1; s < splits; ++s) sum += __ldg(p + static_cast<size_t>(s) * count);
      out[e + j] = sum;
    }
  }
}
