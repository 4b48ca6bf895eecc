// stream_k: warptile's tiles on a schedule without a tail wave. One block per tile leaves
// SMs idle in the last wave whenever the tiles are not a multiple of the blocks the GPU
// holds at once: at 4096³ the 512 tiles of 128×256 are 3.88 waves on 132 SMs (the last
// wave 88 % full, 3 % of the time lost); at 2049 the 289 tiles of 128×128 are 1.09 waves at
// two blocks per SM, and every float32 rung runs at half its 2048 rate.
// Here the grid is persistent: sm_count·MIN_BLOCKS blocks (fewer where there are fewer
// tiles). Each block first computes whole tiles, wave by wave (tile r·G + block, so that the
// blocks of a wave walk neighbouring tiles, as a launch of one block per tile does). The
// last part wave, with one full wave before it, is shared out by K-slices instead: those
// tiles' slices, taken in order, split into equal runs, one per block ("Stream-K", Osama,
// Merrill, Cecka, Garland and Owens, PPoPP 2023; the data-parallel + stream-K hybrid).
// Every run is at least one tile's slices long, so a tile is split between at most two
// blocks. The one whose run ends with the tile's first slices owns it; the other stores its
// sum of the rest in the tile's slot of `partials` (in the owner's register order, 16-byte
// stores) and sets the tile's flag with a release store. The owner computes its slices last
// in its run, waits for the flag with acquire loads (the other block computed its part
// first in its run: the flag has long been set), adds the partial read through L2, clears
// the flag for the next launch (scratch starts zeroed) and writes C. The sum is always
// owner + partial: deterministic.
// Blocks wait only for blocks of higher index, dispatched after them, and only for the part
// those compute first: with every block resident (the grid is the residency the
// restrictions allow) nothing waits long, and were they not, nothing could wait forever.
// Measured on the H100 (2026-11-24, an earlier capture; TUNING.md): 47.3 TFLOP/s at 4096³
// against warptile's 46.4 and cuBLAS's 51.7; 37.0 at 2049 against warptile's 27.2 and
// cuBLAS's 37.7. The default study's figures are in docs/results.md.
// Tunables and restrictions: warptile's (like: warptile.cu). Analytic DRAM traffic:
// warptile's; the partial tiles (at most one written and read per block, about 1 % of the
// traffic at 4096³) are left out.
/*---
idea: warptile's tiles on a persistent grid; whole tiles wave by wave, then the tail shared out by K-slices (Stream-K), split tiles summed through L2
like: warptile.cu
params:
  BN: 256
  WM: 64
  TM: 16
  MIN_BLOCKS: 1
smem_optin: true
scratch:
  partials: {shape: "ceil_div(M, BM) * ceil_div(N, BN), BM * BN"}
  flags: {shape: "ceil_div(M, BM) * ceil_div(N, BN)", dtype: int32}
launches:
  - kernel: matmul_stream_k
    name: gemm
    block: (BM // WM) * (BN // WN) * 32
    grid: min(ceil_div(M, BM) * ceil_div(N, BN), sm_count * MIN_BLOCKS)
    dynamic_smem: STAGES * (BK * (BM + 4) + BK * BN) * 4
    args: [A, B, C, M, N, K, partials, flags]
executed_flops: 2 * round_up(M, BM) * round_up(N, BN) * round_up(K, BK)
model_dram_bytes: (M * K * ceil_div(N, BN) + K * N * ceil_div(M, BM)) * in_bytes + M * N * out_bytes
restrictions:
  # the schedule keeps about 16 registers more than warptile live: 8×8 outputs at two
  # blocks of 256 threads (128 registers) spilled 64 bytes and ran 16 % slower
  - TM * TN + TM + TN + 56 <= min(255, 65536 // ((BM // WM) * (BN // WN) * 32 * MIN_BLOCKS))
---*/

// Every tunable comes with -D (a compile by hand without them gets warptile.cu's defaults).
#include "warptile.cu"

// The tile's flag: set (release, after the partial's stores) by the block that computed
// the tile's last slices; read (acquire) by the owner before it reads the partial.
__device__ __forceinline__ void set_flag(int* flag) {
  asm volatile("st.release.gpu.global.s32 [%0], %1;" ::"l"(flag), "r"(1) : "memory");
}

__device__ __forceinline__ int flag_value(const int* flag) {
  int value;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
  return value;
}

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS)
matmul_stream_k(const float* __restrict__ A, const float* __restrict__ B,
                float* __restrict__ C, int M, int N, int K, float4* __restrict__ partials,
                int* __restrict__ flags) {
  const WarptileThread me(threadIdx.x);
  const int tiles_n = (N + BN - 1) / BN;
  const int tiles = (M + BM - 1) / BM * tiles_n;
  const int slices = (K + BK - 1) / BK;
  // A grid larger than the tiles (not what the declaration launches) leaves blocks idle.
  const int blocks = min(static_cast<int>(gridDim.x), tiles);
  if (static_cast<int>(blockIdx.x) >= blocks) return;
  // Whole waves, less one whenever a part wave remains: the stream-K share of each block
  // is then at least one tile's slices.
  int waves = tiles / blocks;
  int shared_tiles = tiles - waves * blocks;
  if (shared_tiles > 0 && waves > 0) {
    --waves;
    shared_tiles += blocks;
  }
  // This block's run of the shared tiles' slices: from slice `first` of tile `shared`
  // on, `left` slices.
  const long long total = static_cast<long long>(shared_tiles) * slices;
  const long long begin = total * blockIdx.x / blocks;
  int shared = waves * blocks + static_cast<int>(begin / slices);
  int first = static_cast<int>(begin % slices);
  int left = static_cast<int>(total * (blockIdx.x + 1) / blocks - begin);

  constexpr int kVectors = TM * TN / 4;  // a thread's float4s of one partial tile
  float acc[TM][TN];
  for (int wave = 0; wave < waves || left > 0; ++wave) {
    // a whole tile of this block's waves, else the next part of its run
    const bool whole = wave < waves;
    const int tile = whole ? wave * blocks + blockIdx.x : shared;
    const int from = whole ? 0 : first;
    const int to = whole ? slices : min(slices, first + left);
    if (!whole) {
      left -= to - first;
      ++shared, first = 0;
    }
    const int row0 = tile / tiles_n * BM, col0 = tile % tiles_n * BN;
    warptile_zero(acc);
    warptile_slices(A, B, M, N, K, row0, col0, from, to,
                    reinterpret_cast<float*>(warptile_smem), me, acc);
    float4* const slot = partials + static_cast<size_t>(tile) * kVectors * kThreads + me.tid;
    if (from > 0) {  // the tile's last slices: hand them to the owner
#pragma unroll
      for (int v = 0; v < kVectors; ++v) {
        const int i = v / (TN / 4), h = v % (TN / 4);
        slot[v * kThreads] = make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2],
                                         acc[i][4 * h + 3]);
      }
      __threadfence();
      __syncthreads();
      if (me.tid == 0) set_flag(flags + tile);
      continue;
    }
    if (to < slices) {  // the owner: add the other block's part
      if (me.tid == 0) {
        while (flag_value(flags + tile) == 0) {
        }
        flags[tile] = 0;
      }
      __syncthreads();
#pragma unroll
      for (int v = 0; v < kVectors; ++v) {
        const int i = v / (TN / 4), h = v % (TN / 4);
        const float4 part = __ldcg(slot + v * kThreads);
        acc[i][4 * h] += part.x, acc[i][4 * h + 1] += part.y;
        acc[i][4 * h + 2] += part.z, acc[i][4 * h + 3] += part.w;
      }
    }
    store_c_tile<TM, TN, kLanesM * 4, kLanesN * 4>(C, M, N, row0 + me.a_col, col0 + me.b_col,
                                                   acc);
  }
}
