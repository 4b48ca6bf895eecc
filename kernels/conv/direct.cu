// direct: report 002's mapping of the convolution layer. One thread per output pixel: the
// block covers BLOCK_X × BLOCK_Y pixels of the output plane, the grid covers the plane and
// the Nn output channels (grid.z; a grid-stride loop past 65535), and every thread loops
// over the B images itself, so the batch is not parallelized: at B = 16 a thread does 16
// times the work of B = 1 on the same grid (the report's batched baseline, ~16× slower).
// For each image a thread sums Ni·Ky·Kx products straight from global memory: the weight
// is the same for the whole block (a broadcast), the input row is read by consecutive
// threads (coalesced); the Kx·Ky overlapping reads of neighbouring threads are left to L1.
// Tunables BLOCK_X, BLOCK_Y (16×16 covers a 14×14 plane of Conv 2 in one block and a
// 224×224 one in 14×14 blocks).
// Analytic DRAM traffic without reuse through L2 across blocks, L1 serving a block's input
// tile with its halo and its output channel's weights: every block reads, for each image
// and input channel, (BLOCK_X + Kx − 1)·(BLOCK_Y + Ky − 1) inputs (edge tiles less: the
// tiles of a row span Nx + ceil(Nx/BLOCK_X)·(Kx − 1) columns), so x is read Nn times over;
// the weights Ni·Ky·Kx once per block; y written once:
// 4·(Nn·B·Ni·(Nx + tx·(Kx−1))·(Ny + ty·(Ky−1)) + tx·ty·Nn·Ni·Ky·Kx + B·Nn·Ny·Nx),
// tx = ceil(Nx/BLOCK_X), ty = ceil(Ny/BLOCK_Y). Threads outside the plane return at once:
// executed FLOPs equal the family's.
/*---
kernel: conv_direct
idea: one thread per output pixel, grid over the plane and Nn; the batch looped inside each thread (report 002)
params:
  BLOCK_X: 16
  BLOCK_Y: 16
block: BLOCK_X, BLOCK_Y
grid: ceil_div(Nx, BLOCK_X), ceil_div(Ny, BLOCK_Y), min(Nn, 65535)
model_dram_bytes: (Nn * B * Ni * (Nx + ceil_div(Nx, BLOCK_X) * (Kx - 1)) * (Ny + ceil_div(Ny, BLOCK_Y) * (Ky - 1)) + ceil_div(Nx, BLOCK_X) * ceil_div(Ny, BLOCK_Y) * Nn * Ni * Ky * Kx) * in_bytes + B * Nn * Ny * Nx * out_bytes
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
conv_direct(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
            int B, int Ni, int Nn, int Nx, int Ny, int Kx, int Ky) {
  const int i = blockIdx.x * BLOCK_X + threadIdx.x;  // output column
  const int j = blockIdx.y * BLOCK_Y + threadIdx.y;  // output row
  if (i >= Nx || j >= Ny) return;
  const int in_w = Nx + Kx - 1, in_h = Ny + Ky - 1;
  const size_t in_plane = static_cast<size_t>(in_h) * in_w;
  const size_t out_plane = static_cast<size_t>(Ny) * Nx;
  const int taps = Ky * Kx;
  for (int n = blockIdx.z; n < Nn; n += gridDim.z) {
    const float* const wn = w + static_cast<size_t>(n) * Ni * taps;
    for (int b = 0; b < B; ++b) {
      // the thread's input window: image b, channel 0, row j, column i
      const float* xc = x + static_cast<size_t>(b) * Ni * in_plane + static_cast<size_t>(j) * in_w + i;
      const float* wc = wn;
      float acc = 0.0f;
      for (int c = 0; c < Ni; ++c, xc += in_plane, wc += taps) {
        const float* xr = xc;
        const float* wr = wc;
        for (int ky = 0; ky < Ky; ++ky, xr += in_w, wr += Kx) {
          for (int kx = 0; kx < Kx; ++kx) acc = fmaf(wr[kx], xr[kx], acc);
        }
      }
      y[(static_cast<size_t>(b) * Nn + n) * out_plane + static_cast<size_t>(j) * Nx + i] = acc;
    }
  }
}
