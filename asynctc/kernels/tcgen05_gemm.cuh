// Device code both Blackwell (sm_100a) tcgen05 GEMMs share — chapter 09's tcgen05.cu and its deep
// dive's tcgen05_persistent.cu: the thread sync that orders tcgen05 operations across threads, the
// Tensor Memory set-up (allocation, published to every thread) and the epilogue's store of the 32
// accumulator columns one tcgen05.ld.32x32b.x32 brings into a thread's registers. Included after
// the PTX wrappers; each kernel keeps its own roles, barriers and schedule.
#pragma once
#include "ptx/common.cuh"
#include "ptx/cluster.cuh"
#include "ptx/tcgen05.cuh"

// The pattern the tcgen05 memory consistency model prescribes for a value produced by a tcgen05
// operation of one thread and consumed by another (an allocation's address, an accumulator read
// before it is freed): tcgen05.fence::before_thread_sync → thread sync → fence::after_thread_sync.
// The thread sync is __syncthreads for one CTA and barrier.cluster arrive.release / wait.acquire
// for a cluster (kCluster).
template <bool kCluster>
__device__ __forceinline__ void tcgen05_thread_sync() {
  tcgen05_fence_before_thread_sync();
  if constexpr (kCluster) cluster_sync(); else __syncthreads();
  tcgen05_fence_after_thread_sync();
}

// Tensor Memory set-up, executed by every thread of the CTA: warp 1 — one full warp, as "Tensor
// Memory Allocation" requires — allocates `cols` columns × 128 lanes (tcgen05.alloc writes the
// address to *slot in shared memory) and relinquishes the allocation permit at once (the CTA never
// allocates again, so a CTA waiting for this SM's Tensor Memory is not held back); then the thread
// sync above publishes the address (and whatever the CTA initialised before, e.g. its mbarriers)
// to every thread of the CTA, or of the cluster. Returns the TMEM address.
template <int kCtaGroup, bool kCluster>
__device__ __forceinline__ u32 tcgen05_alloc_publish(int warp, u32* slot, u32 cols) {
  if (warp == 1) {
    tcgen05_alloc<kCtaGroup>(smem_u32(slot), cols);
    tcgen05_relinquish_alloc_permit<kCtaGroup>();
  }
  tcgen05_thread_sync<kCluster>();
  return *slot;
}

// The epilogue's store of one tcgen05.ld.32x32b.x32: r[i] holds (as fp32 bits) column col + i of
// the row of C that crow points to, n columns wide. Columns ≥ n are not stored. With vec (n % 4 == 0:
// every row starts 16-byte aligned) a chunk wholly inside the row goes out as eight float4 stores;
// a clipped chunk (or vec false) column by column.
__device__ __forceinline__ void store_c_row32(float* crow, int col, int n, bool vec,
                                              const u32 (&r)[32]) {
  if (vec && col + 32 <= n) {
#pragma unroll
    for (int i = 0; i < 32; i += 4)
      *reinterpret_cast<float4*>(crow + col + i) =
          make_float4(__uint_as_float(r[i]), __uint_as_float(r[i + 1]),
                      __uint_as_float(r[i + 2]), __uint_as_float(r[i + 3]));
  } else {
#pragma unroll
    for (int i = 0; i < 32; ++i)
      if (col + i < n) crow[col + i] = __uint_as_float(r[i]);
  }
}
