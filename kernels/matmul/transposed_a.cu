// transposed_a: regtile_vd with report 001's layout fix ("Data Layout – For C (row major)":
// loading A into registers is not coalesced; transpose A for coalescing). The family gives A
// row-major, so the variant makes two launches, timed together as its time: first
// transpose.cuh's kernel (32×32 tiles through padded shared memory, 32×8 threads, both
// sides coalesced) writes At = Aᵀ (K×M) into a scratch buffer; then regtile_vd's block
// (included from regtile_vd.cu) reads its KT values of A per step from At: for each k the
// threads, consecutive rows of C, read consecutive floats of a row of At, 4 whole sectors
// per warp request, where regtile_vd's loads of 32 rows K apart touch 32 sectors per request
// and use half of each (float4) or an eighth (floats, where K % 4 != 0).
// B, the shared-memory tile, the barriers and the stores to C are regtile_vd's.
// Tunables TA, TB and their restrictions: regtile_vd's (like: regtile_vd.cu); the transpose
// has fixed 32×32 tiles.
// Analytic DRAM traffic without reuse through L2 across blocks: the transpose reads A and
// writes At once (4·2·M·K); the GEMM reads At once per block column and B once per block
// row: 4·(M·K·(2 + ceil(N/TB)) + K·N·ceil(M/TA) + M·N) bytes.
// At is exactly K×M; reads outside it are zeros, so any M, N, K works, with regtile_vd's
// padding of the work (M=N=K=2049: executed_flops / flops = 1.073, the transpose none).
// Where M % 8 != 0 rows of At are not 32-byte aligned and a warp's 128 bytes span 5 sectors.
/*---
idea: transpose A into a K×M scratch first, then regtile_vd's blocks read A from it, a warp 32 consecutive floats per k
like: regtile_vd.cu
scratch:
  At: {shape: "K, M"}
launches:
  - kernel: matmul_transpose
    name: transpose
    block: 32, 8
    grid: ceil_div(K, 32), ceil_div(M, 32)
    static_smem: 32 * 33 * 4
    args: [A, At, M, K]
  - kernel: matmul_transposed_a
    name: gemm
    block: TA
    grid: ceil_div(N, TB), ceil_div(M, TA)
    static_smem: TA * 4
    args: [At, B, C, M, N, K]
executed_flops: 2 * round_up(M, TA) * round_up(N, TB) * round_up(K, TA // TB)
model_dram_bytes: (M * K * (2 + ceil_div(N, TB)) + K * N * ceil_div(M, TA)) * in_bytes + M * N * out_bytes
---*/

// TA, TB (with -D, else regtile_vd's defaults), KT and regtile_vd_tile.
#include "regtile_vd.cu"
// matmul_transpose, the first launch
#include "transpose.cuh"

// At is K×M: matmul_transpose(A, At, M, K) has written At[k][m] = A[m][k].
extern "C" __global__ void __launch_bounds__(TA)
matmul_transposed_a(const float* __restrict__ At, const float* __restrict__ B,
                    float* __restrict__ C, int M, int N, int K) {
  regtile_vd_tile<true>(At, B, C, M, N, K);
}
