// The SM clock measured on the GPU, and a delay that keeps the GPU busy while the host enqueues.
//
// clock_probe (driven by asynctc/core/bench.py): thread 0 of one CTA reads %globaltimer (ns, PTX
// ISA "Special Registers: %globaltimer") and clock64 (SM cycles, "%clock64"), spins until spin_ns
// nanoseconds have passed, reads both again and writes {c0, c1, t0, t1} to rec[4*slot .. 4*slot+3]. The host divides
// (c1 - c0) / (t1 - t0) for the SM clock in GHz. All SMs share one graphics clock, so one CTA is
// enough. Used by asynctc.core.bench.time_gpu twice per sample:
//   * before the timed launches, as a delay (spin_ns long enough for the host to enqueue them all,
//     so the GPU never waits for the host between two timed launches);
//   * right after them, as a short probe of the clock the GPU ran the timed launches at (the
//     clock follows power with a response of milliseconds; the probe starts microseconds after
//     the last timed launch ends).
// Bounded: the loop ends after spin_ns, or after 2^31 iterations if %globaltimer were stuck.

#include "ptx/common.cuh"

extern "C" __global__ void clock_probe(u64* __restrict__ rec, u32 slot, u64 spin_ns) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
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
