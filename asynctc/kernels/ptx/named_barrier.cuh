// Named barriers (PTX ISA: "Parallel Synchronization and Communication Instructions: bar, barrier"):
// bar.sync id, n — the calling warps wait until n threads (a multiple of 32) arrived on barrier id
// (0..15; __syncthreads is barrier 0 with every thread). A subset of the CTA (one warpgroup)
// synchronises without the producer warp. A warp that exits without arriving leaves the others
// waiting: kernels that may give up (bounded waits) still arrive, then leave together.
// In SASS: BAR.SYNC.
#pragma once
#include "ptx/common.cuh"

__device__ __forceinline__ void named_barrier_sync(u32 id, u32 threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
