// direct_batched: direct with the batch folded into the thread mapping. One thread per
// output pixel of one image and one output channel: the block covers BLOCK_X × BLOCK_Y
// pixels, grid.z the Nn·B (channel, image) pairs, the channel fastest, so that the blocks
// in flight together read the same image (kept in L2: Ni·(Ny+Ky−1)·(Nx+Kx−1)·4 bytes,
// 13 MB for Conv 1) with different weights. Past 65535 pairs grid.z stays at 65535 and the
// blocks loop over the rest. Every thread sums Ni·Ky·Kx products straight from global
// memory as in direct, but a thread now does one image, not B: B times the threads, for
// the cases where Nn alone does not fill the GPU (Conv 2: 512 blocks of a 14×14 plane).
// The answer to report 002's batched baseline, which was ~16× slower at B = 16 because
// the batch was not parallelized.
// Tunables BLOCK_X, BLOCK_Y (as direct).
// Analytic DRAM traffic without reuse through L2 across blocks, L1 serving a block's input
// tile with its halo and its channel's weights: as direct, but every (tile, channel, image)
// block reads the Ni·Ky·Kx weights: 4·(Nn·B·Ni·(Nx + tx·(Kx−1))·(Ny + ty·(Ky−1)) +
// tx·ty·Nn·B·Ni·Ky·Kx + B·Nn·Ny·Nx), tx = ceil(Nx/BLOCK_X), ty = ceil(Ny/BLOCK_Y).
// Threads outside the plane return at once: executed FLOPs equal the family's.
/*---
kernel: conv_direct_batched
idea: one thread per (image, output channel, output pixel); grid.z over Nn·B, channel fastest
params:
  BLOCK_X: 16
  BLOCK_Y: 16
block: BLOCK_X, BLOCK_Y
grid: ceil_div(Nx, BLOCK_X), ceil_div(Ny, BLOCK_Y), min(Nn * B, 65535)
model_dram_bytes: (Nn * B * Ni * (Nx + ceil_div(Nx, BLOCK_X) * (Kx - 1)) * (Ny + ceil_div(Ny, BLOCK_Y) * (Ky - 1)) + ceil_div(Nx, BLOCK_X) * ceil_div(Ny, BLOCK_Y) * Nn * B * Ni * Ky * Kx) * in_bytes + B * Nn * Ny * Nx * out_bytes
restrictions:
  - BLOCK_X >= 1 and BLOCK_Y >= 1
---*/

#ifndef BLOCK_X
#define BLOCK_X 16
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 16
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
conv_direct_batched(const float* __restrict__ x, const float* __restrict__ w,
                    float* __restrict__ y, int B, int Ni, int Nn, int Nx, int Ny, int Kx,
                    int Ky) {
  const int i = blockIdx.x * BLOCK_X + threadIdx.x;  // output column
  const int j = blockIdx.y * BLOCK_Y + threadIdx.y;  // output row
  if (i >= Nx || j >= Ny) return;
  const int in_w = Nx + Kx - 1, in_h = Ny + Ky - 1;
  const size_t in_plane = static_cast<size_t>(in_h) * in_w;
  const size_t out_plane = static_cast<size_t>(Ny) * Nx;
  const int taps = Ky * Kx;
  const int pairs = Nn * B;  // < 2^31 wherever y's planes fit in int32 counts
  for (int z = blockIdx.z; z < pairs; z += gridDim.z) {
    const int n = z % Nn, b = z / Nn;
    const float* xc = x + static_cast<size_t>(b) * Ni * in_plane + static_cast<size_t>(j) * in_w + i;
    const float* wc = w + static_cast<size_t>(n) * Ni * taps;
    float acc = 0.0f;
    for (int c = 0; c < Ni; ++c, xc += in_plane, wc += taps) {
      const float* xr = xc;
      const float* wr = wc;
      for (int ky = 0; ky < Ky; ++ky, xr += in_w, wr += Kx) {
        for (int kx = 0; kx < Kx; ++kx) acc = fmaf(wr[kx], xr[kx], acc);
      }
    }
    y[static_cast<size_t>(z) * out_plane + static_cast<size_t>(j) * Nx + i] = acc;
  }
}
