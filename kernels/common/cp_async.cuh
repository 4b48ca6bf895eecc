// cp_async.cuh: the Ampere-style asynchronous global → shared copies (cp.async, sm_80+)
// that the pipelined variants of every family share (matmul's sgemm_tiles.cuh, the
// classifier's split variants, conv's smem_tiled). Not a family: no family.yaml here.
//
// src_bytes smaller than the copy's size zero-fills the rest of the destination; with
// src_bytes == 0 nothing is read from src, so the address of an element outside a matrix
// may be formed (pass any valid one) but is never dereferenced.
#pragma once

// 16 bytes, cached in L2 only (.cg). T is the element type (float, __half, ...).
template <typename T>
__device__ __forceinline__ void cp_async_16(T* dst, const T* src, int src_bytes) {
  const unsigned dst_addr = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst_addr), "l"(src),
               "r"(src_bytes)
               : "memory");
}

// 4 bytes (.ca: copies under 16 bytes cannot bypass L1).
template <typename T>
__device__ __forceinline__ void cp_async_4(T* dst, const T* src, int src_bytes) {
  const unsigned dst_addr = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst_addr), "l"(src),
               "r"(src_bytes)
               : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Waits until at most Pending of this thread's committed groups are still in flight.
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}
