// Thread-block clusters: CTAs of one cluster run at the same time on neighbouring SMs and can reach
// each other's shared memory (distributed shared memory) and barriers.
// PTX ISA: "Special Registers: %cluster_ctarank, %cluster_nctarank"; "Parallel Synchronization and
// Communication Instructions: barrier.cluster"; "Data Movement and Conversion Instructions: mapa";
// "State Spaces: Shared State Space" (the .shared::cta window is contained in the .shared::cluster
// window: a shared::cta address of the executing CTA is also a valid shared::cluster address of it).
// In SASS: S2UR/S2R of SR_CgaCtaId (ctarank), UCGABAR_ARV / UCGABAR_WAIT (barrier.cluster),
// PRMT/LEA-style address arithmetic for mapa on sm_100 (or MAPA where the hardware has it).
#pragma once
#include "ptx/common.cuh"

// Rank of the executing CTA in its cluster, 0 .. %cluster_nctarank - 1.
__device__ __forceinline__ u32 cluster_ctarank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

// Number of CTAs in the cluster.
__device__ __forceinline__ u32 cluster_nctarank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(r));
  return r;
}

// barrier.cluster.arrive.release: this thread arrives on the cluster barrier; its prior memory
// accesses are released at cluster scope. Every thread of every CTA of the cluster must arrive
// (.aligned: all threads of the warp execute it together) before any wait can complete.
__device__ __forceinline__ void barrier_cluster_arrive_release() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}

// barrier.cluster.wait.acquire: wait until every thread of the cluster has arrived; the accesses
// they released become visible to this thread (acquire, cluster scope).
__device__ __forceinline__ void barrier_cluster_wait_acquire() {
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// Both halves: a cluster-wide __syncthreads with release/acquire semantics.
__device__ __forceinline__ void cluster_sync() {
  barrier_cluster_arrive_release();
  barrier_cluster_wait_acquire();
}

// mapa.shared::cluster: the shared::cluster address of the variable that sits at shared::cta
// address `addr` in the CTA of rank `rank` (same offset, other CTA's window). Used to name a peer
// CTA's mbarrier in a TMA completion or a remote arrive.
__device__ __forceinline__ u32 mapa_shared_cluster(u32 addr, u32 rank) {
  u32 out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(out) : "r"(addr), "r"(rank));
  return out;
}
