// smem_unpadded: smem_tiled without the padding column. The global reads and writes are
// just as coalesced, but the tile's rows are now exactly TILE floats long, so the column
// reads tile[x][y] of the write phase put a warp's 32 lanes on addresses TILE floats apart:
// with TILE = 32 all in one bank, a 32-way conflict that replays each read 32 times (8-way
// for TILE = 16). The kernel moves the minimum number of bytes and is still slow: it is
// bound by shared memory (l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld shows it).
// From NVIDIA's "An Efficient Matrix Transpose in CUDA C/C++" (transposeCoalesced).
// Tunables: TILE (edge of the tile), ROWS (thread rows; TILE/ROWS elements per thread).
// Analytic DRAM traffic, with or without L2: as smem_tiled, every sector whole:
// 4·M·N + 4·M·N bytes, the minimum.
/*---
kernel: transpose_smem_unpadded
idea: smem_tiled without the padding column; coalesced global accesses, TILE-way bank conflicts on the shared column reads
params:
  TILE: 32
  ROWS: 8
block: TILE, ROWS
grid: ceil_div(N, TILE), ceil_div(M, TILE)
static_smem: TILE * TILE * 4
model_dram_bytes: M * N * (in_bytes + out_bytes)
restrictions:
  - TILE >= 1 and ROWS >= 1
  - TILE % ROWS == 0
---*/

#ifndef TILE
#define TILE 32
#endif
#ifndef ROWS
#define ROWS 8
#endif

static_assert(TILE % ROWS == 0, "ROWS must divide TILE");

extern "C" __global__ void __launch_bounds__(TILE * ROWS)
transpose_smem_unpadded(const float* __restrict__ A, float* __restrict__ B, int M, int N) {
  // tile[r][c] = A[row0 + r][col0 + c]; a column of it lies in one bank (TILE = 32).
  __shared__ float tile[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;

  // Read: thread (ty, tx) takes column col0 + tx of rows row0 + ty, ty + ROWS, ...
  const int a_col = col0 + tx;
  if (a_col < N) {
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS) {
      const int r = ty + j;  // < TILE: ty < ROWS and ROWS divides TILE
      const int a_row = row0 + r;
      if (a_row < M) tile[r][tx] = A[static_cast<size_t>(a_row) * N + a_col];
    }
  }
  __syncthreads();

  // Write: row col0 + c of B holds column col0 + c of the tile; thread (ty, tx) writes its
  // element tx (column row0 + tx of B) of rows c = ty, ty + ROWS, ...
  const int b_col = row0 + tx;
  if (b_col < M) {
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS) {
      const int c = ty + j;
      const int b_row = col0 + c;
      if (b_row < N) B[static_cast<size_t>(b_row) * M + b_col] = tile[tx][c];
    }
  }
}
