// gather: two launches. The first zeroes the histogram (the harness poisons every output,
// so a kernel that accumulates must clear its output first); the second gives each thread
// one index: it writes alpha·x[idx[i]] and counts the index with an atomic add.
// Tunables: BLOCK (threads per block of both launches).
// Analytic DRAM traffic: idx and y once (4 + 4 bytes per i), x and hits at most once each.
/*---
idea: zero the histogram, then one thread per index gathers, scales and counts
params: {BLOCK: 256}
launches:
  - kernel: gather_zero_hits
    block: BLOCK
    grid: ceil_div(m, BLOCK)
    args: [hits, m]
  - kernel: gather_scaled
    block: BLOCK
    grid: ceil_div(n, BLOCK)
model_dram_bytes: n * 8 + m * 8
restrictions: [BLOCK % 32 == 0]
---*/

#ifndef BLOCK
#define BLOCK 256
#endif

extern "C" __global__ void gather_zero_hits(int* hits, long long m) {
  const long long j = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;
  if (j < m) hits[j] = 0;
}

extern "C" __global__ void gather_scaled(const float* x, const int* idx, float* y, int* hits,
                                         long long n, long long m, float alpha) {
  const long long i = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;
  if (i >= n) return;
  const int j = idx[i];
  y[i] = alpha * x[j];
  atomicAdd(&hits[j], 1);
}
