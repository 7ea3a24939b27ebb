// mbarrier: a 64-bit barrier object in shared memory that counts arrivals *and* transaction bytes
// (PTX ISA: "Parallel Synchronization and Communication Instructions: mbarrier"; sections
// mbarrier.init, mbarrier.arrive, mbarrier.expect_tx / arrive.expect_tx, mbarrier.test_wait /
// try_wait (.parity), "Phase completion of the mbarrier object", "Tracking asynchronous operations
// by the mbarrier object: tx-count"; fence.mbarrier_init under "membar / fence").
//
// Life cycle. init(count) sets the expected arrival count of phase 0. A phase completes when both the
// pending arrival count and the tx-count reach zero; then the phase flips (0 -> 1 -> 0 ...), the
// arrival count resets to `count` and the next phase begins. arrive.expect_tx(bytes) raises the
// tx-count by `bytes` and arrives; each TMA copy that names the barrier lowers it by the bytes it
// wrote (complete_tx). try_wait.parity(P) / test_wait.parity(P) report whether the phase with parity
// P has completed: while phase 0 is in progress, parity 0 -> false and parity 1 -> true (the
// "preceding" phase counts as complete), which is why an empty-slot wait with parity 1 passes at once.
// In SASS: SYNCS.EXCH.64 (init), SYNCS.ARRIVE.TRANS64* (arrive/expect_tx), SYNCS.PHASECHK.TRANS64*
// (test/try_wait).
#pragma once
#include "ptx/common.cuh"

__device__ __forceinline__ void mbarrier_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

// Make the initialisation visible to the async proxy (TMA's complete_tx) and to other threads of
// the cluster; use once after the inits, before a __syncthreads (PTX ISA: fence.mbarrier_init).
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// Arrive once (release semantics, CTA scope); returns the opaque state token of the phase.
__device__ __forceinline__ u64 mbarrier_arrive(u32 bar) {
  u64 state;
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 %0, [%1];\n"
               : "=l"(state) : "r"(bar) : "memory");
  return state;
}

// Raise the tx-count by tx_bytes and arrive once: the producer's half of a TMA load.
__device__ __forceinline__ u64 mbarrier_arrive_expect_tx(u32 bar, u32 tx_bytes) {
  u64 state;
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 %0, [%1], %2;\n"
               : "=l"(state) : "r"(bar), "r"(tx_bytes) : "memory");
  return state;
}

// Raise the tx-count without arriving.
__device__ __forceinline__ void mbarrier_expect_tx(u32 bar, u32 tx_bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n"
               ::"r"(bar), "r"(tx_bytes) : "memory");
}

// Non-blocking: has the phase with parity `parity` completed? (acquire, CTA scope)
__device__ __forceinline__ bool mbarrier_test_wait_parity(u32 bar, u32 parity) {
  u32 done;
  asm volatile("{\n\t.reg .pred p;\n\t"
               "mbarrier.test_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2;\n\t"
               "selp.b32 %0, 1, 0, p;\n\t}\n"
               : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  return done != 0;
}

// Potentially blocking: the thread may be suspended for a system-dependent time limit while the
// phase is incomplete; returns false if the limit passed first (so callers loop).
__device__ __forceinline__ bool mbarrier_try_wait_parity(u32 bar, u32 parity) {
  u32 done;
  asm volatile("{\n\t.reg .pred p;\n\t"
               "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2;\n\t"
               "selp.b32 %0, 1, 0, p;\n\t}\n"
               : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  return done != 0;
}

// Unbounded wait (use only where the protocol is proven; teaching kernels use the bounded one).
__device__ __forceinline__ void mbarrier_wait_parity(u32 bar, u32 parity) {
  while (!mbarrier_try_wait_parity(bar, parity)) {
  }
}

// Error codes a bounded wait writes into the kernel's error word (decoded in asynctc.tma).
#define ASYNCTC_ERR_NONE 0u
#define ASYNCTC_ERR_MBARRIER_TIMEOUT 1u

// Bounded wait: gives up after max_tries try_wait rounds, or once ASYNCTC_WAIT_MAX_NS nanoseconds of
// %globaltimer have passed (whichever comes first: one round may suspend the thread for a
// system-dependent time). On a timeout the first failing thread records (code | tag << 8) in *err
// with atomicCAS (the first error wins) and the call returns false: the kernel then leaves instead
// of hanging the GPU. err may be null.
#ifndef ASYNCTC_WAIT_MAX_NS
#define ASYNCTC_WAIT_MAX_NS 2000000000ull   // 2 s
#endif
__device__ __forceinline__ bool mbarrier_wait_parity_bounded(u32 bar, u32 parity, u32 max_tries,
                                                             u32* err, u32 tag) {
  if (mbarrier_try_wait_parity(bar, parity)) return true;
  const u64 t0 = globaltimer();
  for (u32 i = 1; i < max_tries; ++i) {
    if (mbarrier_try_wait_parity(bar, parity)) return true;
    if (globaltimer() - t0 > ASYNCTC_WAIT_MAX_NS) break;
  }
  if (err) atomicCAS(err, ASYNCTC_ERR_NONE, ASYNCTC_ERR_MBARRIER_TIMEOUT | (tag << 8));
  return false;
}

// Invalidate before the memory is reused for something else (PTX ISA: mbarrier.inval).
__device__ __forceinline__ void mbarrier_inval(u32 bar) {
  asm volatile("mbarrier.inval.shared.b64 [%0];\n" ::"r"(bar) : "memory");
}

// Arrive once on the mbarrier at shared::cluster address `bar` (this CTA's or a peer's, from
// mapa), release semantics at cluster scope: this thread's prior memory operations (and, after a
// tcgen05.fence::before_thread_sync, its tcgen05.ld) are ordered before the phase the arrive
// helps complete (PTX ISA "mbarrier.arrive", .shared::cluster, .release, .cluster).
__device__ __forceinline__ void mbarrier_arrive_cluster(u32 bar) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(bar)
               : "memory");
}
