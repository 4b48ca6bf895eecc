// dst (rows x ld elements) = src (rows x cols) with zeros from column cols on: a thread per
// Chunk of dst (as many bytes as the rows' alignment, up to 16), gathered from Elements
// (unsigned integers of the element's size: a copy of bits), a grid-stride loop. It fills
// the row-padded copy of an input whose rows a kernel needs aligned (row_alignment).
template <typename Element, typename Chunk>
__global__ void ncuflow_pad_rows(const Element* __restrict__ src, Chunk* __restrict__ dst,
                                 long long rows, int cols, int ld) {
  constexpr int kPer = sizeof(Chunk) / sizeof(Element);
  const long long chunks_per_row = ld / kPer, total = rows * chunks_per_row;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long row = i / chunks_per_row;
    const int c0 = static_cast<int>(i - row * chunks_per_row) * kPer;
    const Element* s = src + row * cols;
    union { Chunk chunk; Element values[kPer]; } out;
#pragma unroll
    for (int e = 0; e < kPer; ++e) out.values[e] = c0 + e < cols ? s[c0 + e] : Element(0);
    dst[i] = out.chunk;
  }
}
