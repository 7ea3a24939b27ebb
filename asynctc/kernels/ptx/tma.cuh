// TMA: cp.async.bulk.tensor — one thread asks the Tensor Memory Accelerator to copy a whole box of a
// tensor between global and shared memory, described by a tensor map (PTX ISA: "Data Movement and
// Conversion Instructions: cp.async.bulk.tensor", "cp.async.bulk.commit_group",
// "cp.async.bulk.wait_group"; "Tensor copy": tensor maps, bounding box, out-of-bound access;
// the tensor map itself: CUDA driver API cuTensorMapEncodeTiled). In SASS: UTMALDG / UTMASTG,
// UTMACMDFLUSH (bulk commit), DEPBAR (bulk wait).
//
//  * A tensor map is an opaque 128-byte, 64-byte-aligned object; the host makes it (asynctc.tma)
//    and passes it by value as a `const __grid_constant__ TmaDesc` kernel parameter; the PTX operand
//    is the generic address of that parameter.
//  * Coordinates are signed 32-bit element indices, innermost dimension first (c0 = column).
//    Parts of the box outside the tensor are not read; a load fills them with zeros (or a NaN
//    with CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA); a store skips them.
//  * Loads complete on an mbarrier: the barrier's tx-count is lowered by the box bytes
//    (mbarrier::complete_tx::bytes), always the full box, out-of-bound part included.
//  * The shared-memory address must be 128-byte aligned, and aligned to the swizzle pattern's
//    repeat (256/512/1024 B) for the layout in asynctc.models.layout to hold from the tile base.
//  * Stores are tracked per thread in bulk async-groups: commit_group, then wait_group.read N
//    (the source shared memory may be reused) or wait_group N (the writes are done).
#pragma once
#include "ptx/common.cuh"

// The 128-byte CUtensorMap, as the kernel sees it.
struct alignas(64) TmaDesc {
  u64 opaque[16];
};

__device__ __forceinline__ u64 tma_desc_addr(const TmaDesc& d) {
  return reinterpret_cast<u64>(&d);
}

// Bring the tensor map into the descriptor cache early (PTX ISA: prefetch.tensormap).
__device__ __forceinline__ void tma_prefetch_desc(const TmaDesc& d) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(tma_desc_addr(d)) : "memory");
}

// ---- loads: global -> shared::cluster (this CTA's shared memory), completing on an mbarrier ----
__device__ __forceinline__ void tma_load_1d(u32 dst, const TmaDesc& d, u32 bar, int c0) {
  asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2}], [%3];\n"
               ::"r"(dst), "l"(tma_desc_addr(d)), "r"(c0), "r"(bar) : "memory");
}
__device__ __forceinline__ void tma_load_2d(u32 dst, const TmaDesc& d, u32 bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];\n"
               ::"r"(dst), "l"(tma_desc_addr(d)), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
__device__ __forceinline__ void tma_load_3d(u32 dst, const TmaDesc& d, u32 bar, int c0, int c1,
                                            int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4}], [%5];\n"
               ::"r"(dst), "l"(tma_desc_addr(d)), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
__device__ __forceinline__ void tma_load_4d(u32 dst, const TmaDesc& d, u32 bar, int c0, int c1,
                                            int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4, %5}], [%6];\n"
               ::"r"(dst), "l"(tma_desc_addr(d)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
               : "memory");
}
__device__ __forceinline__ void tma_load_5d(u32 dst, const TmaDesc& d, u32 bar, int c0, int c1,
                                            int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];\n"
               ::"r"(dst), "l"(tma_desc_addr(d)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4),
                 "r"(bar)
               : "memory");
}

// ---- stores: shared::cta -> global, tracked by bulk async-groups ----
__device__ __forceinline__ void tma_store_1d(const TmaDesc& d, u32 src, int c0) {
  asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group [%0, {%1}], [%2];\n"
               ::"l"(tma_desc_addr(d)), "r"(c0), "r"(src) : "memory");
}
__device__ __forceinline__ void tma_store_2d(const TmaDesc& d, u32 src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];\n"
               ::"l"(tma_desc_addr(d)), "r"(c0), "r"(c1), "r"(src) : "memory");
}
__device__ __forceinline__ void tma_store_3d(const TmaDesc& d, u32 src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group"
               " [%0, {%1, %2, %3}], [%4];\n"
               ::"l"(tma_desc_addr(d)), "r"(c0), "r"(c1), "r"(c2), "r"(src) : "memory");
}
__device__ __forceinline__ void tma_store_4d(const TmaDesc& d, u32 src, int c0, int c1, int c2,
                                             int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group"
               " [%0, {%1, %2, %3, %4}], [%5];\n"
               ::"l"(tma_desc_addr(d)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src) : "memory");
}
__device__ __forceinline__ void tma_store_5d(const TmaDesc& d, u32 src, int c0, int c1, int c2,
                                             int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group"
               " [%0, {%1, %2, %3, %4, %5}], [%6];\n"
               ::"l"(tma_desc_addr(d)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(src)
               : "memory");
}

// ---- bulk async-groups (stores) ----
__device__ __forceinline__ void bulk_commit_group() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// At most N committed bulk groups of this thread still pending (their writes not yet done).
template <int kN>
__device__ __forceinline__ void bulk_wait_group() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(kN) : "memory");
}
// At most N committed bulk groups still *reading* their shared-memory source.
template <int kN>
__device__ __forceinline__ void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(kN) : "memory");
}

// ---- CTA pair (sm_100a): a load whose completion mbarrier may sit in the peer CTA ----
// cp.async.bulk.tensor with .cta_group::2 (PTX ISA: "cp.async.bulk.tensor", qualifier .cta_group):
// the box lands in this CTA's shared memory at dst, and the complete_tx goes to the mbarrier at
// shared::cluster address `bar`, which may belong to either CTA of the pair (a tcgen05 CTA pair
// waits for both halves of a stage on the MMA-issuing CTA's barrier). Make `bar` with
// mapa_shared_cluster (ptx/cluster.cuh).
__device__ __forceinline__ void tma_load_2d_cta_pair(u32 dst, const TmaDesc& d, u32 bar, int c0,
                                                     int c1) {
  asm volatile("cp.async.bulk.tensor.2d.cta_group::2.shared::cluster.global.tile"
               ".mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
               ::"r"(dst), "l"(tma_desc_addr(d)), "r"(c0), "r"(c1), "r"(bar) : "memory");
}

// ---- multicast inside a cluster of CTA pairs or single CTAs (sm_100a persistent kernel) ----------
// The box lands at offset dst of every CTA in cta_mask (.multicast::cluster). With kCtaGroup = 1 the
// complete_tx goes to the mbarrier at offset `bar` in each destination CTA; with kCtaGroup = 2
// (.cta_group::2) `bar` names the barrier in the issuing CTA's pair leader, and each destination's
// complete_tx goes to the barrier at that offset in the destination's own pair leader (PTX ISA
// "cp.async.bulk.tensor", .multicast::cluster and .cta_group).
template <int kCtaGroup>
__device__ __forceinline__ void tma_load_2d_multicast_cg(u32 dst, const TmaDesc& d, u32 bar, int c0,
                                                         int c1, u16 cta_mask) {
  if constexpr (kCtaGroup == 1)
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n"
                 ::"r"(dst), "l"(tma_desc_addr(d)), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask)
                 : "memory");
  else
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 ".multicast::cluster.cta_group::2 [%0], [%1, {%2, %3}], [%4], %5;\n"
                 ::"r"(dst), "l"(tma_desc_addr(d)), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask)
                 : "memory");
}
