// The SM clock measured on the GPU, and a delay that keeps the GPU busy while the host enqueues.
//
// clock_probe (driven by asynctc/core/bench.py): thread 0 of one CTA waits skip_ns, then reads %globaltimer (ns, PTX
// ISA "Special Registers: %globaltimer") and clock64 (SM cycles, "%clock64"), spins until spin_ns
// nanoseconds have passed, reads both again and writes {c0, c1, t0, t1} to rec[4*slot .. 4*slot+3]. The host divides
// (c1 - c0) / (t1 - t0) for the SM clock in GHz. All SMs share one graphics clock, so one CTA is
// enough. Used by asynctc.core.bench.time_gpu twice per sample:
//   * before the timed launches, as a delay (spin_ns long enough for the host to enqueue them all,
//     so the GPU never waits for the host between two timed launches);
//   * right after them, as a short probe of the clock right after the timed launches (an upper
//     bound: the clock recovers within microseconds once the Tensor Cores stop);
//   * in flight, on a second stream: launched when the delay kernel starts (the GPU is idle but for
//     it, so the probe's one warp finds a slot even when the timed kernel later fills every SM with
//     a persistent grid), it waits skip_ns — the delay plus a few µs — and then measures while the
//     timed launches run.
// Bounded: the loop ends after spin_ns, or after 2^31 iterations if %globaltimer were stuck.

#include "ptx/common.cuh"

extern "C" __global__ void clock_probe(u64* __restrict__ rec, u32 slot, u64 spin_ns,
                                       u64 skip_ns) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  const u64 t_enter = globaltimer();
  for (u32 i = 0; i < (1u << 31) && globaltimer() - t_enter < skip_ns; ++i) {
  }
  const u64 t0 = globaltimer();
  const u64 c0 = clock64();
  u64 t1 = t0;
  for (u32 i = 0; i < (1u << 31) && t1 - t0 < spin_ns; ++i) t1 = globaltimer();
  const u64 c1 = clock64();
  t1 = globaltimer();
  rec[4 * slot + 0] = c0;
  rec[4 * slot + 1] = c1;
  rec[4 * slot + 2] = t0;
  rec[4 * slot + 3] = t1;
}
