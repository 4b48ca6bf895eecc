// Holds the stream while the host enqueues a batch of timed launches, so that the GPU runs
// them back to back whatever the host is doing meanwhile (a host thread that falls behind
// would open idle gaps inside the timed intervals): spins until the host writes its ticket
// into page-locked memory (mapped: the same address on the device), or gives up after
// limit_ns and says so, so that a step that waits for the stream cannot hang the batch.
extern "C" __global__ void ncuflow_gate(volatile unsigned int* __restrict__ words,
                                        unsigned int ticket, unsigned long long limit_ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    if (words[0] >= ticket) return;  // words[0]: the last ticket the host released
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < limit_ns);
  words[1] = ticket;  // words[1]: the last ticket given up on
}
