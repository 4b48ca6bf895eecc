// smem_tiled: the block transposes a TILE×TILE tile of A through shared memory. TILE×ROWS
// threads read the tile row by row (each thread TILE/ROWS elements, ROWS rows apart), so a
// warp reads consecutive floats of a row of A; after a barrier they write the tile's columns
// as rows of B, so a warp also writes consecutive floats of a row of B: both global sides
// coalesced. With PAD = 1 the tile is padded by one column (TILE + 1 floats per row), which
// turns the column reads tile[x][y] of a warp (TILE floats apart) into distinct banks:
// conflict-free for TILE = 32, where a warp is one tile row (for TILE = 16 a warp spans two
// rows, and one bank is hit twice). With PAD = 0 a column lies in one bank: a 32-way
// conflict at TILE = 32 (8-way at 16) replays each read, and the kernel, though it moves the
// minimum of bytes, is bound by shared memory. Bounds checks make any M, N work. From
// NVIDIA's "An Efficient Matrix Transpose in CUDA C/C++" (transposeCoalesced, PAD = 0, and
// transposeNoBankConflicts, PAD = 1).
// Tunables: TILE (edge of the tile), ROWS (thread rows; TILE/ROWS elements per thread),
// PAD (columns of padding per tile row, 0 or 1).
// Analytic DRAM traffic, with or without L2: every sector read or written is whole (rows
// of 4·TILE bytes; only the edges of rows that are not 32-byte aligned, e.g. at 2049,
// touch partial sectors): 4·M·N + 4·M·N bytes, the minimum.
/*---
kernel: transpose_smem_tiled
idea: TILE×TILE tiles through shared memory (PAD columns of padding); coalesced reads and writes, conflict-free shared accesses with PAD 1
params:
  TILE: 32
  ROWS: 8
  PAD: 1
block: TILE, ROWS
grid: ceil_div(N, TILE), ceil_div(M, TILE)
static_smem: TILE * (TILE + PAD) * 4
model_dram_bytes: M * N * (in_bytes + out_bytes)
restrictions:
  - TILE >= 1 and ROWS >= 1
  - TILE % ROWS == 0
  - PAD == 0 or PAD == 1
---*/

#ifndef TILE
#define TILE 32
#endif
#ifndef ROWS
#define ROWS 8
#endif
#ifndef PAD
#define PAD 1
#endif

static_assert(TILE % ROWS == 0, "ROWS must divide TILE");

extern "C" __global__ void __launch_bounds__(TILE * ROWS)
transpose_smem_tiled(const float* __restrict__ A, float* __restrict__ B, int M, int N) {
  // tile[r][c] = A[row0 + r][col0 + c]; a padding column shifts each row by one bank.
  __shared__ float tile[TILE][TILE + PAD];
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
