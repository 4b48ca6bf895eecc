// gemv_vectorized: beyond report 002, B = 1 at DRAM bandwidth. At B = 1 every W element
// is used once, so the kernel is a stream of W (411 MB at Classifier 1) and all that
// matters is keeping enough bytes in flight with no wasted sectors. The public technique
// of GEMV kernels: a warp per row, 16-byte vector loads (NVIDIA's "CUDA Pro Tip: Increase
// Performance with Vectorized Memory Access") and a warp-shuffle reduction ("Faster
// Parallel Reductions on Kepler"). WARPS_PER_ROW warps own one row; each lane loads
// float4s of W, UNROLL per round, and the loads of round r + 1 are issued before round r
// is summed (a register double buffer; ptxas otherwise sinks each load to just before its
// use and keeps only one or two in flight), so UNROLL × 512 bytes per warp are always in
// flight, every load instruction of a warp reading 512 contiguous bytes (four whole
// 128-byte lines). W goes through the non-coherent path without allocating in L1
// (ld.global.nc.L1::no_allocate), so the stream does not evict x; x is read as float4s
// through the read-only path (__ldg), shared by all the warps of an SM (100 KB at
// Classifier 1, held in L1 and L2). Each lane keeps UNROLL partial sums; a shuffle
// butterfly reduces the warp, and shared memory the WARPS_PER_ROW warps of a row.
// Rows whose start is not 16-byte aligned (Ni % 4 != 0) do their first (up to 3) elements
// as scalars, then float4s of W with x read as scalars (x + head is then not aligned),
// then a scalar tail of up to 3 elements.
// Sizing for the H100 (132 SMs): at BLOCK = 128 and one warp per row, Classifier 1 is 1,024
// blocks of 4 rows; with 64 registers 8 blocks fit an SM, so all are resident at once
// (7.8 blocks, 31 warps per SM), and each SM keeps about 31 × 2 KB = 62 KB of W in
// flight, twice what Little's law asks for 3 TB/s at about a microsecond of loaded DRAM
// latency (3 TB/s × 1 µs / 132 SMs = 23 KB). Classifier 2 (1,024 rows) leaves 8 warps
// per SM: WARPS_PER_ROW = 2 or 4 restores the bytes in flight there.
// Tunables: BLOCK (threads per block), WARPS_PER_ROW (warps sharing a row), UNROLL
// (float4 loads in flight per lane).
// Analytic DRAM traffic without reuse through L2 across blocks, L1 serving each block:
// W once, x once per block, y once: 4·(Nn·Ni + Ni·ceil(Nn/(BLOCK/(32·WARPS_PER_ROW))) + Nn)
// bytes (model_dram_bytes); with x held in L2 (what happens), 4·(Nn·Ni + Ni + Nn).
// Executed FLOPs: 2·Nn·Ni for the products, plus per row 32·WARPS_PER_ROW·(UNROLL − 1)
// adds (each lane folds its partial sums) and WARPS_PER_ROW − 1 across warps, plus the 5
// butterfly adds of every lane of the grid, rows past Nn included:
// 160·WARPS_PER_ROW·round_up(Nn, rows per block); +0.5 % at Classifier 1.
/*---
kernel: classifier_gemv_vectorized
idea: WARPS_PER_ROW warps per row, UNROLL float4 loads of W in flight per lane (no L1 allocation), x through the read-only path, shuffle reduction
params:
  BLOCK: 128
  WARPS_PER_ROW: 1
  UNROLL: 4
block: BLOCK
grid: ceil_div(Nn, BLOCK // (32 * WARPS_PER_ROW))
static_smem: (BLOCK // 32) * 4
restrictions:
  - B == 1
  - WARPS_PER_ROW >= 1 and UNROLL >= 1
  - BLOCK % (32 * WARPS_PER_ROW) == 0
executed_flops: 2 * Nn * Ni + Nn * (32 * WARPS_PER_ROW * (UNROLL - 1) + WARPS_PER_ROW - 1) + 160 * WARPS_PER_ROW * round_up(Nn, BLOCK // (32 * WARPS_PER_ROW))
model_dram_bytes: (Nn * Ni + Ni * B * ceil_div(Nn, BLOCK // (32 * WARPS_PER_ROW))) * in_bytes + Nn * B * out_bytes
---*/

#ifndef BLOCK
#define BLOCK 128
#endif
#ifndef WARPS_PER_ROW
#define WARPS_PER_ROW 1
#endif
#ifndef UNROLL
#define UNROLL 4
#endif

constexpr int kGroup = 32 * WARPS_PER_ROW;  // threads sharing one row
constexpr int kRowsPerBlock = BLOCK / kGroup;
static_assert(BLOCK % kGroup == 0, "a block holds whole rows");
static_assert(UNROLL >= 1, "at least one load in flight");

// A float4 of W, streamed: non-coherent read-only path, no allocation in L1.
__device__ __forceinline__ float4 load_streaming(const float4* p) {
  float4 v;
  asm("ld.global.nc.L1::no_allocate.v4.f32 {%0, %1, %2, %3}, [%4];"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
      : "l"(p));
  return v;
}

__device__ __forceinline__ float dot4(float4 w, float4 v, float acc) {
  acc = fmaf(w.x, v.x, acc);
  acc = fmaf(w.y, v.y, acc);
  acc = fmaf(w.z, v.z, acc);
  return fmaf(w.w, v.w, acc);
}

// The x float4 that goes with W's float4 number c of the aligned part of the row: one
// 16-byte read when x + head is aligned, else four scalar reads.
template <bool kVectorX>
__device__ __forceinline__ float4 load_x(const float* __restrict__ xh, int c) {
  if (kVectorX) return __ldg(reinterpret_cast<const float4*>(xh) + c);
  const float* p = xh + 4 * static_cast<size_t>(c);
  return make_float4(__ldg(p), __ldg(p + 1), __ldg(p + 2), __ldg(p + 3));
}

// This thread's share (thread t of the row's kGroup) of the dot product of the aligned
// part of a row: nvec float4s of W at wh (16-byte aligned) against x at xh. The thread
// takes float4s t, t + kGroup, t + 2·kGroup, ...: cnt of them, in `full` whole rounds of
// UNROLL and a partial one. The loads of round r + 1 are issued before round r is summed (a
// register double buffer): left to itself, ptxas places each load just before its first
// use to save registers, which leaves one or two loads in flight per lane.
template <bool kVectorX>
__device__ __forceinline__ float row_body(const float* __restrict__ wh,
                                          const float* __restrict__ xh, int nvec, int t) {
  const float4* w4 = reinterpret_cast<const float4*>(wh) + t;
  const float* x_t = xh + 4 * t;  // x of this thread's first float4
  const int cnt = nvec > t ? (nvec - t + kGroup - 1) / kGroup : 0;
  const int full = cnt / UNROLL;
  float acc[UNROLL];
  float4 next[UNROLL];
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) acc[u] = 0.0f;
  if (full > 0) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) next[u] = load_streaming(w4 + u * kGroup);
  }
  for (int r = 0; r < full; ++r) {
    float4 cur[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) cur[u] = next[u];
    if (r + 1 < full) {  // round r + 1, in flight while round r is summed
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) next[u] = load_streaming(w4 + ((r + 1) * UNROLL + u) * kGroup);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      acc[u] = dot4(cur[u], load_x<kVectorX>(x_t, (r * UNROLL + u) * kGroup), acc[u]);
    }
  }
  // The partial round: fewer than UNROLL float4s left.
#pragma unroll
  for (int u = 0; u < UNROLL - 1; ++u) {
    const int j = full * UNROLL + u;
    if (j < cnt) acc[u] = dot4(load_streaming(w4 + j * kGroup), load_x<kVectorX>(x_t, j * kGroup), acc[u]);
  }
  float sum = acc[0];
#pragma unroll
  for (int u = 1; u < UNROLL; ++u) sum += acc[u];
  return sum;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
classifier_gemv_vectorized(const float* __restrict__ W, const float* __restrict__ x,
                           float* __restrict__ y, int Ni, int Nn, int B) {
  __shared__ float partial[BLOCK / 32];
  const int t = threadIdx.x % kGroup;  // thread within its row's group
  const int local_row = threadIdx.x / kGroup;
  const int n = blockIdx.x * kRowsPerBlock + local_row;

  float sum = 0.0f;
  if (n < Nn) {  // no return: the warps of a row meet at a barrier below
    const float* w = W + static_cast<size_t>(n) * Ni;
    // Elements before the row's first 16-byte boundary (none when Ni % 4 == 0).
    const unsigned misalign = static_cast<unsigned>(reinterpret_cast<size_t>(w) & 15u) / 4u;
    const int head = min(static_cast<int>((4u - misalign) & 3u), Ni);
    const int nvec = (Ni - head) / 4;
    const bool vector_x = ((reinterpret_cast<size_t>(x + head) & 15u) == 0);
    sum = vector_x ? row_body<true>(w + head, x + head, nvec, t)
                   : row_body<false>(w + head, x + head, nvec, t);
    // Scalar head (threads 0 .. head-1) and tail (the last (Ni - head) % 4 elements).
    if (t < head) sum = fmaf(__ldg(w + t), __ldg(x + t), sum);
    const int tail = head + 4 * nvec + t;
    if (t < 4 && tail < Ni) sum = fmaf(__ldg(w + tail), __ldg(x + tail), sum);
  }
  // Butterfly: every lane ends with its warp's sum.
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (WARPS_PER_ROW == 1) {
    if (n < Nn && t == 0) y[n] = sum;  // B == 1: y[n * B]
    return;
  }
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) partial[warp] = sum;
  __syncthreads();
  if (n < Nn && t == 0) {
    float total = partial[warp];  // warp is the row's first warp here
#pragma unroll
    for (int k = 1; k < WARPS_PER_ROW; ++k) total += partial[warp + k];
    y[n] = total;
  }
}
