// Proxy fences (PTX ISA: "Parallel Synchronization and Communication Instructions: membar / fence",
// fence.proxy.async; memory consistency model, "Proxies"). TMA (cp.async.bulk*) and wgmma access
// shared memory through the *async proxy*; ordinary loads and stores use the *generic proxy*. A
// write through one proxy is not ordered with an access through the other unless a proxy fence sits
// between them: e.g. threads fill shared memory with st.shared, then fence.proxy.async.shared::cta,
// then a barrier, then one thread issues a TMA store that reads that memory. In SASS:
// FENCE.VIEW.ASYNC.S.
#pragma once
#include "ptx/common.cuh"

// Order this thread's prior generic-proxy accesses to shared::cta memory with later async-proxy ones.
__device__ __forceinline__ void fence_proxy_async_shared_cta() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// The same for global memory (e.g. before a TMA load of data this grid just wrote with st.global).
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
}
