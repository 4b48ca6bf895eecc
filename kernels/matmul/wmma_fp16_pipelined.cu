// wmma_fp16_pipelined: the block computes a BM×BN tile of C with (BM/WM)·(BN/WN) warps, each
// holding (WM/16)·(WN/16) WMMA accumulator fragments (fp16 inputs, fp32 accumulation). BM×BK
// tiles of A and BK×BN tiles of B stream through a STAGES-deep ring of shared-memory buffers
// filled with 16-byte cp.async (zero-filled past the edges; plain guarded loads when rows are
// not 16-byte aligned), so loads of later tiles overlap the tensor-core work on the current
// one. Rows are padded by 8 halves to spread ldmatrix rows over all banks; the epilogue goes
// through shared memory (the same buffers) to coalesced float4 stores.
// From report 002 (its tensor-core rung), with the tiling of reports 001, 003 and 004.
// Tunables: BM, BN, BK, WM, WN, STAGES; GROUP_M (block rows walked together, for L2 reuse);
// MIN_BLOCKS (blocks per SM the register allocation must allow: __launch_bounds__).
// Analytic DRAM traffic without reuse through L2 across blocks (A is read once per block
// column, B once per block row): 2·(M·K·ceil(N/BN) + K·N·ceil(M/BM)) + 4·M·N bytes.
// At M=N=K=2049 every warp computes all its fragments over zero-filled tiles: M and N
// padded to 2176 (BM, BN 128), K to 2080 (BK 32): tensor executed_flops / flops = 1.145.
/*---
kernel: matmul_wmma_fp16_pipelined
idea: block-tiled WMMA with a STAGES-deep cp.async pipeline through padded shared memory
params:
  BM: 128
  BN: 128
  BK: 32
  WM: 64
  WN: 32
  STAGES: 4
  GROUP_M: 8
  MIN_BLOCKS: 2
block: 32 * (BM // WM) * (BN // WN)
grid: ceil_div(N, BN), ceil_div(M, BM)
dynamic_smem: max(STAGES * (BM * (BK + 8) + BK * (BN + 8)) * 2, BM * (BN + 8) * 4)
smem_optin: true
dtype: float16
out_dtype: float32
executed_flops: 2 * round_up(M, BM) * round_up(N, BN) * round_up(K, BK)
model_dram_bytes: (M * K * ceil_div(N, BN) + K * N * ceil_div(M, BM)) * in_bytes + M * N * out_bytes
restrictions:
  - WM >= 16 and WN >= 16 and BK >= 16
  - WM % 16 == 0 and WN % 16 == 0 and BK % 16 == 0
  - BM % WM == 0 and BN % WN == 0
  - STAGES >= 2
  - GROUP_M >= 1
  - MIN_BLOCKS >= 1 and 32 * (BM // WM) * (BN // WN) * MIN_BLOCKS <= 2048
---*/

#include <cuda_fp16.h>
#include <mma.h>

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 2
#endif

namespace wmma = nvcuda::wmma;

constexpr int kFrag = 16;  // WMMA tile edge (m = n = k = 16)
constexpr int kWarpSize = 32;
constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;
constexpr int kThreads = kWarpsM * kWarpsN * kWarpSize;
constexpr int kFragsM = WM / kFrag, kFragsN = WN / kFrag;
constexpr int kChunk = 8;  // halves per 16-byte copy
// Shared-memory leading dimensions. The +8 halves make each row pitch an odd multiple of 16
// bytes (BK and BN are multiples of 16), so the eight 16-byte rows that one ldmatrix phase
// reads fall in distinct banks.
constexpr int kLdA = BK + 8, kLdB = BN + 8;
constexpr int kStageA = BM * kLdA, kStageB = BK * kLdB;  // halves per stage
// The fp32 C tile reuses the buffers after the main loop; +8 floats per row keeps the
// accumulator stores of a half-warp (four rows of 8 floats) in distinct banks.
constexpr int kLdC = BN + 8;

static_assert(WM % kFrag == 0 && WN % kFrag == 0 && BK % kFrag == 0, "WMMA tiles are 16×16×16");
static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
static_assert(STAGES >= 2, "a pipeline needs at least two stages");
static_assert(kThreads <= 1024, "too many threads per block");

using FragA = wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, __half, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, __half, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float>;

__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src, bool inside) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  const int src_bytes = inside ? 16 : 0;  // 0: nothing is read, the 16 bytes are zero-filled
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem_src),
               "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// Copies the TILE_ROWS×TILE_COLS tile at (row0, col0) of a rows×cols row-major matrix
// (leading dimension cols) into dst (leading dimension ld_dst), zeros outside the matrix,
// in 8-half chunks spread over the block. With 16-byte aligned rows (cols % 8 == 0) a chunk
// starting inside the matrix lies wholly inside it and goes by cp.async; otherwise each half
// is loaded on its own and stored to shared memory directly.
template <int TILE_ROWS, int TILE_COLS, int LD_DST>
__device__ __forceinline__ void load_tile(__half* dst, const __half* __restrict__ src, int rows,
                                          int cols, int row0, int col0, bool rows_aligned) {
  constexpr int kChunksPerRow = TILE_COLS / kChunk;
  constexpr int kChunks = TILE_ROWS * kChunksPerRow;
#pragma unroll
  for (int i = 0; i < (kChunks + kThreads - 1) / kThreads; ++i) {
    const int chunk = static_cast<int>(threadIdx.x) + i * kThreads;
    if (kChunks % kThreads != 0 && chunk >= kChunks) break;
    const int r = chunk / kChunksPerRow, c = chunk % kChunksPerRow * kChunk;
    const int gr = row0 + r, gc = col0 + c;
    __half* d = dst + r * LD_DST + c;
    const bool row_inside = gr < rows;
    const __half* src_row = src + static_cast<size_t>(row_inside ? gr : 0) * cols;
    if (rows_aligned) {
      const bool inside = row_inside && gc < cols;
      cp_async_16(d, inside ? src_row + gc : src, inside);
    } else {
#pragma unroll
      for (int e = 0; e < kChunk; ++e) {
        d[e] = (row_inside && gc + e < cols) ? src_row[gc + e] : __float2half(0.0f);
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS)
matmul_wmma_fp16_pipelined(const __half* __restrict__ A, const __half* __restrict__ B,
                           float* __restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(128) unsigned char smem[];
  __half* smem_a = reinterpret_cast<__half*>(smem);  // STAGES × BM × kLdA
  __half* smem_b = smem_a + STAGES * kStageA;         // STAGES × BK × kLdB
  float* smem_c = reinterpret_cast<float*>(smem);    // BM × kLdC, after the main loop

  const int warp = threadIdx.x / kWarpSize;
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  // Blocks start roughly in launch order; walking GROUP_M block rows down before moving one
  // block column right keeps the A and B tiles of the blocks running together in L2.
  const int tiles_n = gridDim.x, tiles_m = gridDim.y;
  const int launch_id = blockIdx.y * tiles_n + blockIdx.x;
  const int group = launch_id / (GROUP_M * tiles_n), in_group = launch_id % (GROUP_M * tiles_n);
  const int group_rows = min(GROUP_M, tiles_m - group * GROUP_M);
  const int block_row = (group * GROUP_M + in_group % group_rows) * BM;
  const int block_col = in_group / group_rows * BN;
  const bool a_rows_aligned = K % kChunk == 0, b_rows_aligned = N % kChunk == 0;
  const int k_tiles = (K + BK - 1) / BK;

  auto load_stage = [&](int stage, int k_tile) {
    const int k0 = k_tile * BK;
    load_tile<BM, BK, kLdA>(smem_a + stage * kStageA, A, M, K, block_row, k0, a_rows_aligned);
    load_tile<BK, BN, kLdB>(smem_b + stage * kStageB, B, K, N, k0, block_col, b_rows_aligned);
  };

  FragC acc[kFragsM][kFragsN];
#pragma unroll
  for (int i = 0; i < kFragsM; ++i)
#pragma unroll
    for (int j = 0; j < kFragsN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  // Prologue: tiles 0 .. STAGES-2 in flight. One commit group per tile, empty ones included,
  // so that "tile t has landed" is always "at most STAGES-2 groups pending" below.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    cp_async_commit();
  }

  for (int kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt have landed
    // Every thread's copies of tile kt are visible, and every warp has finished tile kt-1,
    // whose stage is the one refilled next.
    __syncthreads();
    const int next = kt + STAGES - 1;
    if (next < k_tiles) load_stage(next % STAGES, next);
    cp_async_commit();

    const int stage = kt % STAGES;
    const __half* a_warp = smem_a + stage * kStageA + warp_m * WM * kLdA;
    const __half* b_warp = smem_b + stage * kStageB + warp_n * WN;
#pragma unroll
    for (int kk = 0; kk < BK; kk += kFrag) {
      // All fragments of this k-step first, so the loads overlap and the mmas run back to back.
      FragA a[kFragsM];
      FragB b[kFragsN];
#pragma unroll
      for (int i = 0; i < kFragsM; ++i)
        wmma::load_matrix_sync(a[i], a_warp + i * kFrag * kLdA + kk, kLdA);
#pragma unroll
      for (int j = 0; j < kFragsN; ++j)
        wmma::load_matrix_sync(b[j], b_warp + kk * kLdB + j * kFrag, kLdB);
#pragma unroll
      for (int i = 0; i < kFragsM; ++i)
#pragma unroll
        for (int j = 0; j < kFragsN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
  }

  // Epilogue. Only empty groups can still be pending, but the C tile overwrites the stages,
  // so wait for everything and for every warp to leave the main loop.
  cp_async_wait<0>();
  __syncthreads();
  float* c_warp = smem_c + warp_m * WM * kLdC + warp_n * WN;
#pragma unroll
  for (int i = 0; i < kFragsM; ++i)
#pragma unroll
    for (int j = 0; j < kFragsN; ++j)
      wmma::store_matrix_sync(c_warp + i * kFrag * kLdC + j * kFrag, acc[i][j], kLdC,
                              wmma::mem_row_major);
  __syncthreads();

  // Consecutive threads write consecutive 4-float pieces of a row of C. With N % 4 == 0 a
  // piece that starts inside the row ends inside it and its address is 16-byte aligned.
  constexpr int kVecsPerRow = BN / 4;
  constexpr int kVecs = BM * kVecsPerRow;
  const bool c_rows_aligned = N % 4 == 0;
#pragma unroll
  for (int i = 0; i < (kVecs + kThreads - 1) / kThreads; ++i) {
    const int vec = static_cast<int>(threadIdx.x) + i * kThreads;
    if (kVecs % kThreads != 0 && vec >= kVecs) break;
    const int r = vec / kVecsPerRow, c = vec % kVecsPerRow * 4;
    const int gr = block_row + r, gc = block_col + c;
    if (gr >= M || gc >= N) continue;
    const float* s = smem_c + r * kLdC + c;
    float* d = C + static_cast<size_t>(gr) * N + gc;
    if (c_rows_aligned) {
      *reinterpret_cast<float4*>(d) = *reinterpret_cast<const float4*>(s);
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (gc + e < N) d[e] = s[e];
    }
  }
}
