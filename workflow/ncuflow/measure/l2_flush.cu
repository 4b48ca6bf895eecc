// Empties L2 before a timed launch (vocab.L2_FLUSH_METHOD): reads every 16 bytes of a buffer
// twice the size of L2 with .cg loads (cached in L2 only), so that L2 then holds clean lines
// of the buffer alone, and the dirty lines the last launch left are written back now rather
// than during the next timed launch.
extern "C" __global__ void ncuflow_l2_flush(const int4* __restrict__ buffer, long long n,
                                            int* __restrict__ sink) {
  int folded = 0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int4 v = __ldcg(buffer + i);
    folded ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (folded == 0x5EED) *sink = folded;  // the buffer is zeros: never; keeps the loads
}
