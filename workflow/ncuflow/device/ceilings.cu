// Measured ceilings: micro-benchmarks for the peak rates a roofline is drawn against.
// Compiled by ncuflow/device/ceilings.py with cupy.RawModule, which also reads the constants below
// (the lines "constexpr int NAME = value;") for its launch shapes and work counts. Each kernel
// writes one value per thread at the end, computed from everything it loaded or computed, so
// nothing is optimised away.

#include <cuda_fp16.h>

// Threads per block, and the blocks per SM that __launch_bounds__ asks registers to allow
// (2048 threads, a full H100 SM), of every kernel but shared_read.
constexpr int THREADS = 256;
constexpr int BLOCKS_PER_SM = 8;
// FMA kernels: per trip of the loop over iters, STEPS rounds of CHAINS independent FMA chains.
constexpr int CHAINS = 8;
constexpr int STEPS = 16;
// Loads each thread issues before it uses any of them, in l2_read and l1_read.
constexpr int BATCH = 4;
// shared_read: SHARED_VEC float4 (32 KiB) per block of SHARED_THREADS threads.
constexpr int SHARED_VEC = 2048;
constexpr int SHARED_THREADS = 512;
constexpr int SHARED_BLOCKS_PER_SM = 4;

// One FMA and one add per precision, so that a single loop measures every FMA pipe.
__device__ __forceinline__ float fused(float x, float m, float a) { return fmaf(x, m, a); }
__device__ __forceinline__ double fused(double x, double m, double a) { return fma(x, m, a); }
__device__ __forceinline__ __half2 fused(__half2 x, __half2 m, __half2 a) {
  return __hfma2(x, m, a);
}
__device__ __forceinline__ float add(float a, float b) { return a + b; }
__device__ __forceinline__ double add(double a, double b) { return a + b; }
__device__ __forceinline__ __half2 add(__half2 a, __half2 b) { return __hadd2(a, b); }

// FMA throughput of one precision. Eight independent chains per thread hide the FMA latency
// even with one warp per scheduler, and each loop trip is CHAINS × STEPS FMAs beside only a
// counter, a compare and a branch, so the schedulers issue an FMA on nearly every cycle: the
// pipe's peak. x = x * m + a converges to a / (1 - m), so the values stay finite and normal;
// the callers derive m, a and the start values from threadIdx, iters and tid, so nothing can
// be folded at compile time.
template <typename T>
__device__ __forceinline__ T fma_chains(T (&x)[CHAINS], const T m, const T a, int iters) {
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int s = 0; s < STEPS; ++s) {
#pragma unroll
      for (int c = 0; c < CHAINS; ++c) x[c] = fused(x[c], m, a);
    }
  }
  T sum = x[0];
#pragma unroll
  for (int c = 1; c < CHAINS; ++c) sum = add(sum, x[c]);
  return sum;
}

// FP32: FFMA on the FMA pipe.
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    ffma_loop(float* out, int iters) {
  const int tid = blockIdx.x * blockDim.x + threadIdx.x;
  float x[CHAINS];
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) x[c] = 1e-3f * (tid + c);
  out[tid] = fma_chains(x, 0.5f + 1e-3f * (threadIdx.x & 15), 0.25f + 1e-6f * iters, iters);
}

// FP64: DFMA on the FP64 pipe (half as many lanes as FP32 on an H100).
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    dfma_loop(double* out, int iters) {
  const int tid = blockIdx.x * blockDim.x + threadIdx.x;
  double x[CHAINS];
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) x[c] = 1e-3 * (tid + c);
  out[tid] = fma_chains(x, 0.5 + 1e-3 * (threadIdx.x & 15), 0.25 + 1e-6 * iters, iters);
}

// Packed FP16: one HFMA2 is two half-precision FMAs per lane (4 FLOP); values near 0.5.
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    hfma2_loop(__half2* out, int iters) {
  const int tid = blockIdx.x * blockDim.x + threadIdx.x;
  __half2 x[CHAINS];
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) x[c] = __floats2half2_rn(1e-3f * (tid & 255), 1e-3f * c);
  out[tid] = fma_chains(x, __floats2half2_rn(0.5f + 1e-3f * (threadIdx.x & 15), 0.5f),
                        __float2half2_rn(0.25f + 1e-6f * iters), iters);
}

// Adds every part of a loaded float4, so that all 16 bytes are used and the load stays 128-bit.
__device__ __forceinline__ void accumulate(float4& acc, const float4 v) {
  acc.x += v.x;
  acc.y += v.y;
  acc.z += v.z;
  acc.w += v.w;
}

// The element of its block's BLOCK that a thread reads in pass p: its thread index XOR a
// multiple of 32 below BLOCK (a power of two). Each warp still reads 32 consecutive, aligned
// float4 (512 bytes), the block still reads each of its elements once per pass, and since the
// addresses change from pass to pass the compiler cannot hoist the loads out of the pass loop.
template <int BLOCK>
__device__ __forceinline__ unsigned pass_lane(int p) {
  static_assert((BLOCK & (BLOCK - 1)) == 0 && BLOCK >= 32, "BLOCK must be a power of two");
  return threadIdx.x ^ ((static_cast<unsigned>(p) * 32u) & (BLOCK - 1u));
}

// L2 read bandwidth. The caller sizes buf to fit well within L2, so after the first pass every
// load hits L2, and makes n_vec a multiple of BATCH * THREADS * gridDim.x so that every pass is
// whole batches. __ldcg (ld.global.cg) caches in L2 only, so no load is served by L1; each
// thread issues BATCH independent 128-bit loads before using them, which with a full GPU of
// threads keeps enough bytes in flight to cover L2 latency.
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    l2_read(const float4* buf, size_t n_vec, int passes, float* out) {
  const size_t stride = static_cast<size_t>(gridDim.x) * THREADS;
  const size_t block_start = static_cast<size_t>(blockIdx.x) * THREADS;
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int p = 0; p < passes; ++p) {
    size_t i = block_start + pass_lane<THREADS>(p);
    for (; i + (BATCH - 1) * stride < n_vec; i += BATCH * stride) {
      float4 v[BATCH];
#pragma unroll
      for (int b = 0; b < BATCH; ++b) v[b] = __ldcg(buf + i + b * stride);
#pragma unroll
      for (int b = 0; b < BATCH; ++b) accumulate(acc, v[b]);
    }
    for (; i < n_vec; i += stride) accumulate(acc, __ldcg(buf + i));  // other sizes' remainder
  }
  out[block_start + threadIdx.x] = acc.x + acc.y + acc.z + acc.w;
}

// L1 read bandwidth. Each block re-reads its own slice of buf, n_vec_per_block float4 (a
// multiple of BATCH * THREADS, 16 KiB by default), with __ldg (ld.global.nc, cached in L1):
// each chunk of BATCH * THREADS float4 passes times before the next. The slices of the blocks
// resident on an SM fit in its L1 (the caller asks for the largest L1 carve-out), so after the
// first pass every load hits L1, whose 128 bytes per cycle per SM is the limit; a pass is
// BATCH independent 128-bit loads at constant offsets and little else.
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    l1_read(const float4* buf, int n_vec_per_block, int passes, float* out) {
  const float4* slice = buf + static_cast<size_t>(blockIdx.x) * n_vec_per_block;
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int k = 0; k < n_vec_per_block; k += BATCH * THREADS) {
#pragma unroll 2
    for (int p = 0; p < passes; ++p) {
      const float4* base = slice + k + pass_lane<THREADS>(p);
      float4 v[BATCH];
#pragma unroll
      for (int b = 0; b < BATCH; ++b) v[b] = __ldg(base + b * THREADS);
#pragma unroll
      for (int b = 0; b < BATCH; ++b) accumulate(acc, v[b]);
    }
  }
  out[static_cast<size_t>(blockIdx.x) * THREADS + threadIdx.x] = acc.x + acc.y + acc.z + acc.w;
}

// Shared-memory read bandwidth. Each block of SHARED_THREADS fills 32 KiB of shared memory, then
// reads it passes times with float4 loads (LDS.128) in which each warp reads 512 consecutive
// bytes: each quarter-warp covers the 32 banks once, so there are no bank conflicts and every
// LDS.128 takes the minimum four cycles at 128 bytes per cycle per SM. The offsets within a
// pass are compile-time constants, so a load costs one instruction besides its four adds.
extern "C" __global__ void __launch_bounds__(SHARED_THREADS, SHARED_BLOCKS_PER_SM)
    shared_read(float* out, int passes) {
  static_assert(SHARED_VEC % SHARED_THREADS == 0, "each thread reads whole rows");
  __shared__ float4 tile[SHARED_VEC];
  for (int i = threadIdx.x; i < SHARED_VEC; i += SHARED_THREADS) {
    const float v = 1e-3f * (i + blockIdx.x);
    tile[i] = make_float4(v, v + 1.0f, v + 2.0f, v + 3.0f);
  }
  __syncthreads();
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 2
  for (int p = 0; p < passes; ++p) {
    const float4* base = tile + pass_lane<SHARED_THREADS>(p);
#pragma unroll
    for (int k = 0; k < SHARED_VEC; k += SHARED_THREADS) accumulate(acc, base[k]);
  }
  out[static_cast<size_t>(blockIdx.x) * SHARED_THREADS + threadIdx.x] =
      acc.x + acc.y + acc.z + acc.w;
}

// Shared-memory write bandwidth: the mirror of shared_read, float4 stores (STS.128) of
// values that change each pass; the tile is summed once at the end so that no store is dead.
extern "C" __global__ void __launch_bounds__(SHARED_THREADS, SHARED_BLOCKS_PER_SM)
    shared_write(float* out, int passes) {
  __shared__ float4 tile[SHARED_VEC];
  const float seed = 1e-3f * (threadIdx.x + blockIdx.x);
#pragma unroll 2
  for (int p = 0; p < passes; ++p) {
    float4* base = tile + pass_lane<SHARED_THREADS>(p);
    const float v = seed + p;
#pragma unroll
    for (int k = 0; k < SHARED_VEC; k += SHARED_THREADS) base[k] = make_float4(v, v, v, v);
  }
  __syncthreads();
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int i = threadIdx.x; i < SHARED_VEC; i += SHARED_THREADS) accumulate(acc, tile[i]);
  out[static_cast<size_t>(blockIdx.x) * SHARED_THREADS + threadIdx.x] =
      acc.x + acc.y + acc.z + acc.w;
}

// L2 write bandwidth: every thread stores float4s (st.global.cg: L2, not L1) over a buffer
// that fits in L2, passes times, so that after the first pass the writes stay in L2.
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    l2_write(float4* buf, size_t n_vec, int passes) {
  const size_t stride = static_cast<size_t>(gridDim.x) * THREADS;
  const size_t block_start = static_cast<size_t>(blockIdx.x) * THREADS;
  for (int p = 0; p < passes; ++p) {
    const float v = static_cast<float>(p);
    for (size_t i = block_start + pass_lane<THREADS>(p); i < n_vec; i += stride) {
      __stcg(buf + i, make_float4(v, v, v, v));
    }
  }
}

// DRAM streams over arrays far larger than L2, each at three element widths (4, 8 and 16
// bytes: float, float2, float4): read (a sum), write (a fill), copy and triad
// (a = b + s·c, STREAM's kernel). The grid fills the GPU once and strides over the arrays,
// `passes` times in one launch: a single pass of 2 GiB lasts about 0.5 ms on an H200, and
// its launch's ramp and drain then cost 1-3 % of the rate. A plain load or store per
// element, the compiler's choice of caching.
__device__ __forceinline__ float total(float v) { return v; }
__device__ __forceinline__ float total(float2 v) { return v.x + v.y; }
__device__ __forceinline__ float total(float4 v) { return v.x + v.y + v.z + v.w; }
__device__ __forceinline__ float2 operator+(float2 a, float2 b) { return {a.x + b.x, a.y + b.y}; }
__device__ __forceinline__ float4 operator+(float4 a, float4 b) {
  return {a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w};
}
__device__ __forceinline__ float2 operator*(float s, float2 a) { return {s * a.x, s * a.y}; }
__device__ __forceinline__ float4 operator*(float s, float4 a) {
  return {s * a.x, s * a.y, s * a.z, s * a.w};
}
template <typename V> __device__ __forceinline__ V splat(float v);
template <> __device__ __forceinline__ float splat<float>(float v) { return v; }
template <> __device__ __forceinline__ float2 splat<float2>(float v) { return {v, v}; }
template <> __device__ __forceinline__ float4 splat<float4>(float v) { return {v, v, v, v}; }

template <typename V>
__device__ __forceinline__ void stream_read(const V* a, size_t n, int passes, float* out) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float acc = 0.0f;
  for (int pass = 0; pass < passes; ++pass) {
#pragma unroll 4
    for (size_t i = first; i < n; i += stride) acc += total(a[i]);
  }
  out[first] = acc;
}
template <typename V>
__device__ __forceinline__ void stream_write(V* a, size_t n, int passes, float s) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (int pass = 0; pass < passes; ++pass) {  // a value per pass: no pass is a repeat
#pragma unroll 4
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
      a[i] = splat<V>(s + pass);
    }
  }
}
template <typename V>
__device__ __forceinline__ void stream_copy(V* a, const V* b, size_t n, int passes) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (int pass = 0; pass < passes; ++pass) {
#pragma unroll 4
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
      a[i] = b[i];
    }
  }
}
template <typename V>
__device__ __forceinline__ void stream_triad(V* a, const V* b, const V* c, size_t n, int passes,
                                             float s) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (int pass = 0; pass < passes; ++pass) {
#pragma unroll 4
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
      a[i] = b[i] + s * c[i];
    }
  }
}

// The entry points: stream_<pattern>_<bytes>, n counted in elements of that width.
#define NCUFLOW_STREAMS(V, BYTES)                                                             \
  extern "C" __global__ void __launch_bounds__(THREADS) stream_read_##BYTES(                  \
      const V* a, const V*, const V*, size_t n, int passes, float s, float* out) {            \
    stream_read(a, n, passes, out);                                                           \
  }                                                                                           \
  extern "C" __global__ void __launch_bounds__(THREADS) stream_write_##BYTES(                 \
      V* a, const V*, const V*, size_t n, int passes, float s, float*) {                      \
    stream_write(a, n, passes, s);                                                            \
  }                                                                                           \
  extern "C" __global__ void __launch_bounds__(THREADS) stream_copy_##BYTES(                  \
      V* a, const V* b, const V*, size_t n, int passes, float s, float*) {                    \
    stream_copy(a, b, n, passes);                                                             \
  }                                                                                           \
  extern "C" __global__ void __launch_bounds__(THREADS) stream_triad_##BYTES(                 \
      V* a, const V* b, const V* c, size_t n, int passes, float s, float*) {                  \
    stream_triad(a, b, c, n, passes, s);                                                      \
  }
NCUFLOW_STREAMS(float, 4)
NCUFLOW_STREAMS(float2, 8)
NCUFLOW_STREAMS(float4, 16)
