// im2col_gemm: the Toeplitz (im2col) formulation report 002 points to, the convolution as
// one matrix product. A first kernel unrolls the input into cols, a (Ni·Ky·Kx) × (B·Ny·Nx)
// matrix: cols[(c·Ky + ky)·Kx + kx][b·Ny·Nx + j·Nx + i] = x[b][c][j + ky][i + kx] (one
// thread per column, IM_CH input channels per thread, writes coalesced along the
// columns). Then the float32 GEMM of the matmul ladder, warptile (included from
// kernels/matmul: block, warp and thread tiles, cp.async pipeline), computes
// w (Nn × Ni·Ky·Kx, the weights as they lie) · cols = an Nn × B·Ny·Nx matrix:
//   matmul_warptile(A = w, B = cols, C, M = Nn, N = B·Ny·Nx, K = Ni·Ky·Kx).
// For B = 1 that matrix is y (NCHW); for B > 1 it is y with the image and channel axes
// swapped (C[n][b·Ny·Nx + p] = y[b][n][p]), so the GEMM writes a scratch buffer and a third
// kernel moves each Ny·Nx plane to its place in y (float4s where Ny·Nx % 4 == 0).
// The cost is the unrolled matrix: Ky·Kx times the input, written once and read once
// (Conv 1, B = 16: 1.85 GB each way).
// Tunables: IM_CH (channels per im2col thread) and warptile's BM, BN, BK, WM, WN, TM, TN,
// STAGES, MIN_BLOCKS, set here for M = Nn = 64: BM = 64 (a 128-row tile would be half
// empty at Nn = 64) and BN = 256, with warptile's default warps (32×64, 8×8 per thread),
// 2 × 4 of them instead of 4 × 2: 256 threads, MIN_BLOCKS = 2, 127 registers. One block
// row covers M = 64, so cols is read from DRAM once. (BN = 128 with 4 warps and
// MIN_BLOCKS = 4 spills 8 bytes at the 128-register cap.)
// Analytic DRAM traffic without reuse through L2 across blocks: x read once (L1 serves the
// Ky·Kx overlapping reads of neighbouring columns) and cols written once, 4·Ni·Ky·Kx·B·Ny·Nx;
// the GEMM reads w ceil(B·Ny·Nx / BN) times and cols ceil(Nn / BM) times and writes
// Nn·B·Ny·Nx; for B > 1 the reorder reads and writes that again:
// 4·(B·Ni·(Ny+Ky−1)·(Nx+Kx−1) + Ni·Ky·Kx·B·Ny·Nx·(1 + ceil(Nn/BM))
//   + Nn·Ni·Ky·Kx·ceil(B·Ny·Nx/BN) + Nn·B·Ny·Nx·(1 + 2·[B > 1])).
// Executed FLOPs: the GEMM computes its zero-padded tiles whole:
// 2·round_up(Nn, BM)·round_up(B·Ny·Nx, BN)·round_up(Ni·Ky·Kx, BK).
/*---
idea: im2col into a (Ni·Ky·Kx) × (B·Ny·Nx) matrix, then the warptile SGEMM with the weights; B > 1 reorders the product into NCHW
params:
  IM_CH: 4
  BM: 64
  BN: 256
  BK: 16
  WM: 32
  WN: 64
  TM: 8
  TN: 8
  STAGES: 3
  MIN_BLOCKS: 2
smem_optin: true
scratch:
  cols: {shape: "Ni * Ky * Kx, B * Ny * Nx"}
  product: {shape: "Nn, B * Ny * Nx"}
launches:
  - kernel: conv_im2col
    name: im2col
    block: 256
    grid: ceil_div(B * Ny * Nx, 256), ceil_div(Ni, IM_CH)
    args: [x, cols, B, Ni, Nx, Ny, Kx, Ky]
  - &gemm
    kernel: matmul_warptile
    name: gemm
    when: B == 1
    block: (BM // WM) * (BN // WN) * 32
    grid: ceil_div(B * Ny * Nx, BN), ceil_div(Nn, BM)
    dynamic_smem: STAGES * (BK * (BM + 4) + BK * BN) * 4
    args: [w, cols, y, Nn, B * Ny * Nx, Ni * Ky * Kx]
  - <<: *gemm
    name: gemm_batched
    when: B > 1
    args: [w, cols, product, Nn, B * Ny * Nx, Ni * Ky * Kx]
  - kernel: conv_unbatch
    name: unbatch
    when: B > 1
    block: 256
    grid: ceil_div(B * Nn * Ny * Nx, 1024)
    args: [product, y, B, Nn, Ny * Nx]
executed_flops: 2 * round_up(Nn, BM) * round_up(B * Ny * Nx, BN) * round_up(Ni * Ky * Kx, BK)
model_dram_bytes: (B * Ni * (Ny + Ky - 1) * (Nx + Kx - 1) + Ni * Ky * Kx * B * Ny * Nx * (1 + ceil_div(Nn, BM)) + Nn * Ni * Ky * Kx * ceil_div(B * Ny * Nx, BN)) * in_bytes + Nn * B * Ny * Nx * out_bytes * (1 + 2 * (B > 1))
restrictions:
  - IM_CH >= 1
  # warptile's own restrictions
  - TM % 4 == 0
  - TN % 4 == 0
  - WM % TM == 0
  - WN % TN == 0
  - (WM // TM) * (WN // TN) == 32
  - BM % WM == 0
  - BN % WN == 0
  - BK % 8 == 0
  - (BM // WM) * (BN // WN) % (BK // 8) == 0 or (BK // 8) % ((BM // WM) * (BN // WN)) == 0
  - (BM // WM) * (BN // WN) * 32 % (BN // 4) == 0 or (BN // 4) % ((BM // WM) * (BN // WN) * 32) == 0
  - (BM // WM) * (BN // WN) * 32 % (BN) == 0 or (BN) % ((BM // WM) * (BN // WN) * 32) == 0
  - STAGES >= 2
  - MIN_BLOCKS >= 1
  - (BM // WM) * (BN // WN) * 32 * MIN_BLOCKS <= max_threads_per_sm
  - MIN_BLOCKS * (STAGES * (BK * (BM + 4) + BK * BN) * 4 + 1024) <= smem_per_sm
---*/

#ifndef IM_CH
#define IM_CH 4
#endif
// warptile's tunables, chosen for M = Nn = 64 (its own #ifndef defaults then stand aside)
#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 16
#endif
#ifndef WM
#define WM 32
#endif
#ifndef WN
#define WN 64
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 2
#endif

#include "../matmul/warptile.cu"

// cols[(c·Ky + ky)·Kx + kx][col] = x[b][c][j + ky][i + kx], col = b·Ny·Nx + j·Nx + i: a
// thread per column col (blockIdx.x), IM_CH channels per thread (blockIdx.y). For each row
// of cols a warp writes 32 consecutive floats and reads 32 consecutive inputs (except where
// it crosses an image row); the Ky·Kx reads of one input by neighbouring threads hit L1.
extern "C" __global__ void __launch_bounds__(256)
conv_im2col(const float* __restrict__ x, float* __restrict__ cols, int B, int Ni, int Nx,
            int Ny, int Kx, int Ky) {
  const int plane = Ny * Nx;
  const size_t ncols = static_cast<size_t>(B) * plane;
  const size_t col = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= ncols) return;
  const int b = static_cast<int>(col / plane), p = static_cast<int>(col % plane);
  const int j = p / Nx, i = p % Nx;
  const int in_w = Nx + Kx - 1, in_h = Ny + Ky - 1;
  const size_t in_plane = static_cast<size_t>(in_h) * in_w;
  const int c_first = blockIdx.y * IM_CH;
  const int c_end = min(Ni, c_first + IM_CH);
  const float* src = x + (static_cast<size_t>(b) * Ni + c_first) * in_plane +
                     static_cast<size_t>(j) * in_w + i;
  float* dst = cols + static_cast<size_t>(c_first) * Ky * Kx * ncols + col;
  for (int c = c_first; c < c_end; ++c, src += in_plane) {
    const float* row = src;
    for (int ky = 0; ky < Ky; ++ky, row += in_w) {
      for (int kx = 0; kx < Kx; ++kx, dst += ncols) *dst = row[kx];
    }
  }
}

// y[b][n][p] = product[n][b·plane + p]: the Nn × (B·plane) product back to NCHW. Each
// thread moves 4 consecutive elements of y: one float4 each way where plane % 4 == 0 (a
// group of 4 then stays in one plane, and every plane starts 16-byte aligned), else 4
// floats.
extern "C" __global__ void __launch_bounds__(256)
conv_unbatch(const float* __restrict__ product, float* __restrict__ y, int B, int Nn, int plane) {
  const size_t total = static_cast<size_t>(B) * Nn * plane;
  const size_t first = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 4;
  if (first >= total) return;
  const size_t row_len = static_cast<size_t>(B) * plane;  // a row of product
  if (plane % 4 == 0) {
    const size_t bn = first / plane;  // b·Nn + n
    const int p = static_cast<int>(first % plane);
    const int n = static_cast<int>(bn % Nn), b = static_cast<int>(bn / Nn);
    *reinterpret_cast<float4*>(y + first) = *reinterpret_cast<const float4*>(
        product + n * row_len + static_cast<size_t>(b) * plane + p);
  } else {
    for (size_t e = first; e < first + 4 && e < total; ++e) {
      const size_t bn = e / plane;
      const int p = static_cast<int>(e % plane);
      const int n = static_cast<int>(bn % Nn), b = static_cast<int>(bn / Nn);
      y[e] = product[n * row_len + static_cast<size_t>(b) * plane + p];
    }
  }
}
