// tma.cuh: the Tensor Memory Accelerator's loads (cp.async.bulk.tensor, sm_90+) and the
// shared-memory mbarriers they signal, for the Hopper rungs of the matmul ladder
// (mma_fp16, wgmma_fp16). Not a family: no family.yaml here. The tensor maps come from the
// host (ncuflow's tensor_maps: cuTensorMapEncodeTiled), by address.
#pragma once

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count));
}

// One arrival that also announces the bytes the TMA copies will bring.
__device__ __forceinline__ void mbar_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbar_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}

// Waits for the completion of the barrier's phase of the given parity.
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}

// The box of the tensor map at (x = column, y = row) into dst, counted on bar.
__device__ __forceinline__ void tma_load_2d(void* dst, const void* map, unsigned long long* bar,
                                            int x, int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(smem_u32(dst)),
      "l"(map), "r"(x), "r"(y), "r"(smem_u32(bar))
      : "memory");
}

// A TMA pipeline's shared memory: its stages from the first 1024-byte boundary (a 128-byte
// swizzle pattern, 8 rows of 128 bytes, starts there: TMA and the readers of a swizzled
// tile must agree on where), then per stage a "full" mbarrier (one arrival: the
// expect_tx of the thread that issues the stage's copies) and an "empty" one (`readers`
// arrivals, once they are done with the stage). Thread 0 initialises the barriers before
// the block's first barrier, so every thread of the block must call it.
struct StageRing {
  unsigned char* stages;
  unsigned long long* full;
  unsigned long long* empty;
};

__device__ __forceinline__ StageRing stage_ring(unsigned char* raw, int stages, int stage_bytes,
                                                unsigned readers) {
  unsigned char* aligned = raw + ((1024 - (smem_u32(raw) & 1023)) & 1023);
  auto* full = reinterpret_cast<unsigned long long*>(aligned + stages * stage_bytes);
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&full[stages + s], readers);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  return {aligned, full, full + stages};
}

// One k-tile of a GEMM's stage at dst, counted on bar: the box of A (rows × 64 halves, at
// column k0 and row row0; a_bytes long), then BBoxes boxes of B of 64 k-rows × 64 columns
// (8 KB each) from column col0 on; `bytes` is the whole stage's. One thread issues it.
template <int BBoxes>
__device__ __forceinline__ void tma_load_gemm_stage(unsigned char* dst, int a_bytes, int bytes,
                                                    unsigned long long* bar, const void* map_a,
                                                    const void* map_b, int k0, int row0,
                                                    int col0) {
  mbar_expect_tx(bar, bytes);
  tma_load_2d(dst, map_a, bar, k0, row0);
#pragma unroll
  for (int j = 0; j < BBoxes; ++j)
    tma_load_2d(dst + a_bytes + j * 8192, map_b, bar, col0 + 64 * j, k0);
}
