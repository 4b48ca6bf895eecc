// wgmma_fp16: Hopper's own path to its tensor cores. A warpgroup (four warps, 128 threads)
// issues wgmma.mma_async m64n128k16, which reads both operands straight from shared memory
// through 64-bit matrix descriptors, runs asynchronously, and accumulates in fp32
// registers; nothing passes through registers on the way in (no ldmatrix). The tiles are
// brought by the Tensor Memory Accelerator: one thread issues cp.async.bulk.tensor with a
// tensor map built on the host (cuTensorMapEncodeTiled), which copies a whole box of A or
// B into shared memory in the 128-byte swizzled layout wgmma reads without bank conflicts,
// zero-fills what lies outside the matrix, and signals an mbarrier by the bytes it wrote.
// Warp specialization: warpgroup 0 is the producer (one thread keeps STAGES k-tiles in
// flight), warpgroups 1 and 2 the consumers, each BM/2 rows of the block's BM×BN tile. A
// stage goes back to the producer (its "empty" mbarrier) once every consumer warp's
// wgmmas on it have completed (wgmma.wait_group 1 leaves one k-tile's batch in flight).
// Layouts: A is K-major (a BK = 64-half row is exactly one 128-byte swizzle row; the
// descriptor steps 32 bytes per k16). B is N-major: its tile comes as BN/64 boxes of 64
// columns × 64 k-rows, and wgmma reads it transposed (imm-trans-b = 1); the descriptor's
// leading byte offset is the distance between those 64-column boxes, its stride byte
// offset the distance between groups of 8 k-rows (1024 bytes), and it steps 16 rows
// (2048 bytes) per k16.
// Awkward sizes: a tensor map needs 16-byte aligned rows, which the declaration asks for
// (row_alignment): where K or N is not a multiple of 8 ncuflow passes a copy of A or B with
// rows padded to a multiple of 8 halves (timed with the configuration), and the maps
// describe the copies (ld_A, ld_B).
// Compiled for sm_90a (wgmma and setmaxnreg exist on the H100/H200 only: compute
// capability 9.0). The technique of NVIDIA's Hopper GEMMs (CUTLASS's warp-specialized
// kernels) and the public "outperforming cuBLAS on H100" write-ups, on the ladder of
// reports 001-004.
// Tunables: BM (128 or 256: each consumer warpgroup computes BM/128 m64 blocks), BN (a
// multiple of 128: one n128 wgmma per 128 columns), STAGES, GROUP_M (block rows walked
// together, for L2 reuse).
// Analytic DRAM traffic without reuse through L2 across blocks (A read once per block
// column, B once per block row, C written once), plus the padded copies where they run
// (the input read, the copy written).
/*---
idea: warp-specialized wgmma.mma_async m64n128k16 from 128-byte swizzled shared memory filled by TMA (cp.async.bulk.tensor) on mbarriers; a padded copy where rows are not 16-byte aligned
arch: sm_90a
params:
  BM: 128
  BN: 256
  STAGES: 4
  GROUP_M: 8
smem_optin: true
dtype: float16
out_dtype: float32
row_alignment: {A: 16, B: 16}
tensor_maps:
  map_a: {tensor: A, shape: "M, K", ld: ld_A, box: "BM, 64"}
  map_b: {tensor: B, shape: "K, N", ld: ld_B, box: "64, 64"}
launches:
  - kernel: matmul_wgmma_fp16
    name: gemm
    block: 384
    grid: ceil_div(N, BN), ceil_div(M, BM)
    dynamic_smem: STAGES * (BM + BN) * 64 * 2 + 2048
    args: [map_a, map_b, C, M, N, K]
executed_flops: 2 * round_up(M, BM) * round_up(N, BN) * round_up(K, 64)
model_dram_bytes: (M * K * ceil_div(N, BN) + K * N * ceil_div(M, BM)) * in_bytes + M * N * out_bytes + (ld_A != K) * M * (K + ld_A) * in_bytes + (ld_B != N) * K * (N + ld_B) * in_bytes
restrictions:
  - BM == 128 or BM == 256
  - BN % 128 == 0 and BN <= 256
  - STAGES >= 2
  - GROUP_M >= 1
  - STAGES * (BM + BN) * 64 * 2 + 2048 <= smem_per_sm
  # fp32 accumulators per consumer thread: (BM/128)·(BN/128)·64, within the 232 registers
  # a consumer warpgroup takes (setmaxnreg) from the producer's share
  - (BM // 128) * (BN // 128) * 64 <= 128
---*/

#include <cuda_fp16.h>

#include "../common/tma.cuh"
#include "fp16_gemm.cuh"

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif

constexpr int kBK = 64;  // halves per k-tile: one 128-byte swizzle row
constexpr int kConsumers = 2;
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kMBlocks = BM / 64 / kConsumers;  // m64 blocks per consumer warpgroup
constexpr int kNBlocks = BN / 128;              // n128 wgmmas per m64 block
constexpr int kStageABytes = BM * kBK * 2, kStageBBytes = kBK * BN * 2;
constexpr int kStageBytes = kStageABytes + kStageBBytes;
constexpr int kBoxBBytes = kBK * 64 * 2;  // one 64-column box of B: 64 rows of 128 bytes

static_assert(BM == 128 || BM == 256, "two consumer warpgroups of one or two m64 blocks");
static_assert(BN % 128 == 0, "n128 wgmmas");
static_assert(kStageBytes % 1024 == 0, "stages keep the 1024-byte swizzle alignment");

// A shared-memory matrix descriptor: start address, leading and stride byte offsets (all
// in 16-byte units), 128-byte swizzle (layout type 1 in bits 62-63).
__device__ __forceinline__ unsigned long long smem_desc(const void* p, unsigned leading_bytes,
                                                        unsigned stride_bytes) {
  return static_cast<unsigned long long>((smem_u32(p) & 0x3FFFF) >> 4) |
         static_cast<unsigned long long>((leading_bytes >> 4) & 0x3FFF) << 16 |
         static_cast<unsigned long long>((stride_bytes >> 4) & 0x3FFF) << 32 | 1ULL << 62;
}

// d += A·B for a 64×128×16 tile: A K-major, B N-major (transposed), both from shared memory.
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], unsigned long long desc_a,
                                                 unsigned long long desc_b) {
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "
      "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "
      "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "
      "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, 1, 1, 1, 0, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
        "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),
        "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]),
        "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),
        "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),
        "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]),
        "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b));
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}

extern "C" __global__ void __launch_bounds__(kThreads, 1)
matmul_wgmma_fp16(const void* __restrict__ map_a, const void* __restrict__ map_b,
                  float* __restrict__ C, int M, int N, int K) {
  extern __shared__ unsigned char smem_raw[];
  // every consumer warp hands a stage back
  const StageRing ring = stage_ring(smem_raw, STAGES, kStageBytes, kConsumers * 4);
  unsigned char* const smem = ring.stages;
  unsigned long long *const full = ring.full, *const empty = ring.empty;

  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const BlockTile tile = grouped_block_tile(BM, BN, GROUP_M);
  const int k_tiles = (K + kBK - 1) / kBK;


  if (warpgroup == 0) {  // producer: gives most of its registers to the consumers
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (threadIdx.x == 0) {
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % STAGES;
        if (kt >= STAGES) mbar_wait(&empty[s], (kt / STAGES + 1) & 1);  // tile kt-STAGES done
        tma_load_gemm_stage<BN / 64>(smem + s * kStageBytes, kStageABytes, kStageBytes, &full[s],
                                     map_a, map_b, kt * kBK, tile.row, tile.col);
      }
    }
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
  const int consumer = warpgroup - 1;
  float acc[kMBlocks][kNBlocks][64];
#pragma unroll
  for (int m = 0; m < kMBlocks; ++m)
#pragma unroll
    for (int n = 0; n < kNBlocks; ++n)
#pragma unroll
      for (int e = 0; e < 64; ++e) acc[m][n][e] = 0.0f;

  for (int kt = 0; kt < k_tiles; ++kt) {
    const int s = kt % STAGES;
    mbar_wait(&full[s], (kt / STAGES) & 1);
    const unsigned char* a_stage = smem + s * kStageBytes + consumer * kMBlocks * 64 * 128;
    const unsigned char* b_stage = smem + s * kStageBytes + kStageABytes;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
#pragma unroll
      for (int m = 0; m < kMBlocks; ++m) {
        const unsigned long long desc_a = smem_desc(a_stage + m * 64 * 128 + kk * 32, 16, 1024);
#pragma unroll
        for (int n = 0; n < kNBlocks; ++n) {
          const unsigned long long desc_b =
              smem_desc(b_stage + n * 2 * kBoxBBytes + kk * 16 * 128, kBoxBBytes, 1024);
          wgmma_m64n128k16(acc[m][n], desc_a, desc_b);
        }
      }
    }
    wgmma_commit();
    wgmma_wait<1>();  // the previous k-tile's wgmmas have read their stage: hand it back
    if (kt > 0 && lane == 0) mbar_arrive(&empty[(kt - 1) % STAGES]);
  }
  wgmma_wait<0>();

  // Accumulator layout of m64nN: warp w of the warpgroup holds rows 16w .. 16w+15; lane
  // (g = lane/4, t = lane%4) holds, for each 8-column block j, row g at columns 8j+2t and
  // 8j+2t+1 in registers 4j, 4j+1, and row g+8 in registers 4j+2, 4j+3.
  const int warp = static_cast<int>(threadIdx.x) / 32 % 4;
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int m = 0; m < kMBlocks; ++m) {
    const int row = tile.row + (consumer * kMBlocks + m) * 64 + warp * 16 + g;
#pragma unroll
    for (int n = 0; n < kNBlocks; ++n) {
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const int col = tile.col + n * 128 + j * 8 + 2 * t;
        store_pair(C, M, N, row, col, acc[m][n][4 * j], acc[m][n][4 * j + 1]);
        store_pair(C, M, N, row + 8, col, acc[m][n][4 * j + 2], acc[m][n][4 * j + 3]);
      }
    }
  }
}
