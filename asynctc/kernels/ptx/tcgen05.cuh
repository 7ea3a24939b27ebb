// tcgen05: the fifth-generation Tensor Core instructions of sm_100a (Blackwell), one wrapper per PTX
// instruction. PTX ISA 8.6+, chapter "Parallel Synchronization ... / TensorCore 5th Generation
// Family Instructions" (section numbers move between ISA versions; the titles below do not):
//
//   "Tensor Memory"                         128 lanes × 512 columns of 32-bit cells per SM (per CTA
//                                           the part it allocated). Address: lane in bits 31..16,
//                                           column in bits 15..0.
//   "Tensor Memory Allocation and Management Instructions"
//     tcgen05.alloc        one full warp; allocates nCols columns (a power of two, 32 ≤ nCols ≤ 512)
//                          of all 128 lanes and writes the TMEM address to shared memory [dst]. It
//                          may block until the columns are free. With .cta_group::2 one warp of
//                          each CTA of the pair issues it; both CTAs get the same columns.
//     tcgen05.dealloc      one full warp (the same warp that allocated); every allocated column must
//                          be deallocated before the CTA exits.
//     tcgen05.relinquish_alloc_permit
//                          this CTA promises not to allocate again, which lets other CTAs waiting
//                          on the SM's Tensor Memory proceed; an alloc after it is illegal.
//   "tcgen05.mma"          single-thread issue: D (TMEM) = A·B (+ D when enable-input-d), A and B
//                          read from shared memory through 64-bit matrix descriptors, the shape and
//                          types from a 32-bit instruction descriptor. Asynchronous.
//   "tcgen05.commit"       single-thread: the mbarrier tracks completion of all prior asynchronous
//                          tcgen05 operations (mma, cp, shift) this thread issued; when they are done,
//                          one arrive-on happens (.mbarrier::arrive::one). .multicast::cluster: the
//                          arrive happens on the mbarrier at the same offset in every CTA of ctaMask.
//                          commit implicitly performs tcgen05.fence::before_thread_sync.
//   "tcgen05.ld"           one full warp: TMEM → registers. A warp may access only the 32-lane
//                          quarter (warp id % 4) × 32 .. + 31 of the Tensor Memory ("Access
//                          restrictions" under "Tensor Memory"). Asynchronous: the registers may be
//                          read only after tcgen05.wait::ld.
//   "tcgen05.wait"         ::ld waits for all prior tcgen05.ld of this thread; ::st for tcgen05.st.
//   "tcgen05.fence"        ::before_thread_sync orders this thread's prior asynchronous tcgen05
//                          operations before a following thread synchronisation (bar.sync,
//                          barrier.cluster, mbarrier arrive); ::after_thread_sync orders later
//                          tcgen05 operations after a preceding one. "Memory Consistency Model for
//                          5th generation of TensorCore operations": a tcgen05 operation of thread X
//                          is ordered before one of thread Y only through
//                          X: fence::before_thread_sync → sync → Y: fence::after_thread_sync
//                          (or mbarrier completion, which plays the sync role).
//
// Section numbers in PTX ISA 9.2: 9.7.16.2 (Tensor Memory; 9.7.16.2.3 data movement shapes),
// 9.7.16.4.1 (shared memory descriptor), 9.7.16.4.2 (instruction descriptor), 9.7.16.5 (issue
// granularity: single thread for mma/commit, one warp — for ::2 one warp in EACH CTA of the pair —
// for alloc/dealloc/relinquish; a ::2 issue needs the peer CTA alive), 9.7.16.6 (memory
// consistency: alloc/dealloc/relinquish/fence/wait/commit are synchronous, mma/cp/shift/ld/st
// asynchronous; mma → mma on the same accumulator is a pipelined pair).
//
// In SASS (nvdisasm 13.5, NVRTC 13.5, measured in tests/test_tcgen05.py): tcgen05.mma kind::f16 →
// UTCHMMA (UTCHMMA.2CTA for ::2; the shape is not in the opcode, it comes from the idesc register);
// commit → UTCBAR (UTCBAR.2CTA.MULTICAST); ld.32x32b.x32 → LDTM.x32; alloc → a retry loop of
// UTCATOMSWS.FIND_AND_SET.ALIGN (UTCATOMSWS.2CTA.FIND_AND_SET.ALIGN plus a compiler-generated
// mbarrier handshake with the peer for ::2); dealloc → UTCATOMSWS.AND, preceded by compiler
// "guardrail" checks that trap if the columns were not allocated; relinquish_alloc_permit →
// UVIRTCOUNT.DEALLOC.SMPOOL; the fences and wait::ld leave no instruction of their own (they
// constrain scheduling and scoreboards).
#pragma once
#include "ptx/common.cuh"

// ---- Tensor Memory allocation ------------------------------------------------------------------

// Allocate n_cols columns; the TMEM address lands in shared memory at dst_smem (4 bytes). Warp-wide.
template <int kCtaGroup>
__device__ __forceinline__ void tcgen05_alloc(u32 dst_smem, u32 n_cols) {
  static_assert(kCtaGroup == 1 || kCtaGroup == 2, ".cta_group::1 or ::2");
  if constexpr (kCtaGroup == 1)
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;\n"
                 ::"r"(dst_smem), "r"(n_cols) : "memory");
  else
    asm volatile("tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [%0], %1;\n"
                 ::"r"(dst_smem), "r"(n_cols) : "memory");
}

// Free the n_cols columns at taddr (as returned by tcgen05_alloc). Warp-wide, the allocating warp.
template <int kCtaGroup>
__device__ __forceinline__ void tcgen05_dealloc(u32 taddr, u32 n_cols) {
  static_assert(kCtaGroup == 1 || kCtaGroup == 2, ".cta_group::1 or ::2");
  if constexpr (kCtaGroup == 1)
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;\n"
                 ::"r"(taddr), "r"(n_cols) : "memory");
  else
    asm volatile("tcgen05.dealloc.cta_group::2.sync.aligned.b32 %0, %1;\n"
                 ::"r"(taddr), "r"(n_cols) : "memory");
}

// This CTA will not allocate again. Warp-wide.
template <int kCtaGroup>
__device__ __forceinline__ void tcgen05_relinquish_alloc_permit() {
  static_assert(kCtaGroup == 1 || kCtaGroup == 2, ".cta_group::1 or ::2");
  if constexpr (kCtaGroup == 1)
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n" ::: "memory");
  else
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;\n" ::: "memory");
}

// ---- fences and waits --------------------------------------------------------------------------

__device__ __forceinline__ void tcgen05_fence_before_thread_sync() {
  asm volatile("tcgen05.fence::before_thread_sync;\n" ::: "memory");
}

__device__ __forceinline__ void tcgen05_fence_after_thread_sync() {
  asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory");
}

// All prior tcgen05.ld of this thread have completed: their destination registers may be read.
__device__ __forceinline__ void tcgen05_wait_ld() {
  asm volatile("tcgen05.wait::ld.sync.aligned;\n" ::: "memory");
}

// All prior tcgen05.st of this thread have completed.
__device__ __forceinline__ void tcgen05_wait_st() {
  asm volatile("tcgen05.wait::st.sync.aligned;\n" ::: "memory");
}

// ---- MMA -----------------------------------------------------------------------------------------

// tcgen05.mma.cta_group::N.kind::f16 [d_tmem], a_desc, b_desc, idesc, enable_input_d;
// f16 or bf16 inputs (the instruction descriptor says which), fp32 (or f16) accumulator in TMEM,
// K = 16 per instruction. enable_input_d = 0: D = A·B; 1: D = A·B + D. Single thread.
// With .cta_group::2 it is issued by one thread of one CTA of the pair (by convention the even
// one) and reads A and B from both CTAs' shared memory at the descriptors' (equal) offsets, and
// writes D into both CTAs' Tensor Memory at the same TMEM address.
template <int kCtaGroup>
__device__ __forceinline__ void tcgen05_mma_f16(u32 d_tmem, u64 a_desc, u64 b_desc, u32 idesc,
                                                u32 enable_input_d) {
  static_assert(kCtaGroup == 1 || kCtaGroup == 2, ".cta_group::1 or ::2");
  if constexpr (kCtaGroup == 1)
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %4, 0;\n\t"
                 "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n\t}\n"
                 ::"r"(d_tmem), "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(enable_input_d)
                 : "memory");
  else
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %4, 0;\n\t"
                 "tcgen05.mma.cta_group::2.kind::f16 [%0], %1, %2, %3, p;\n\t}\n"
                 ::"r"(d_tmem), "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(enable_input_d)
                 : "memory");
}

// ---- commit: MMA completion → mbarrier -----------------------------------------------------------

// One arrive on the mbarrier at shared address `bar` (this CTA's) once every prior asynchronous
// tcgen05 operation of this thread has completed. Single thread.
template <int kCtaGroup>
__device__ __forceinline__ void tcgen05_commit(u32 bar) {
  static_assert(kCtaGroup == 1 || kCtaGroup == 2, ".cta_group::1 or ::2");
  if constexpr (kCtaGroup == 1)
    asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];\n"
                 ::"r"(bar) : "memory");
  else
    asm volatile("tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.b64 [%0];\n"
                 ::"r"(bar) : "memory");
}

// The same, arriving on the mbarrier at offset `bar` in every CTA whose bit is set in cta_mask
// (bit i = cluster CTA rank i). The CTA pair's MMA issuer uses it to release a stage, or the
// accumulator, to both CTAs at once.
template <int kCtaGroup>
__device__ __forceinline__ void tcgen05_commit_multicast(u32 bar, u16 cta_mask) {
  static_assert(kCtaGroup == 1 || kCtaGroup == 2, ".cta_group::1 or ::2");
  if constexpr (kCtaGroup == 1)
    asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster"
                 ".multicast::cluster.b64 [%0], %1;\n"
                 ::"r"(bar), "h"(cta_mask) : "memory");
  else
    asm volatile("tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster"
                 ".multicast::cluster.b64 [%0], %1;\n"
                 ::"r"(bar), "h"(cta_mask) : "memory");
}

// ---- TMEM → registers ----------------------------------------------------------------------------
// tcgen05.ld.sync.aligned.32x32b.xN.b32: shape 32x32b = 32 lanes × 32 bits; thread t of the warp
// reads lane (lane field of taddr) + t, and .xN repeats along the columns: register j of thread t
// holds column (column field of taddr) + j. Warp-wide; follow with tcgen05_wait_ld().

#define TCGEN05_R8(i) "=r"(r[(i)]), "=r"(r[(i) + 1]), "=r"(r[(i) + 2]), "=r"(r[(i) + 3]), \
  "=r"(r[(i) + 4]), "=r"(r[(i) + 5]), "=r"(r[(i) + 6]), "=r"(r[(i) + 7])

__device__ __forceinline__ void tcgen05_ld_32x32b_x8(u32 (&r)[8], u32 taddr) {
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x8.b32 "
               "{%0, %1, %2, %3, %4, %5, %6, %7}, [%8];\n"
               : TCGEN05_R8(0) : "r"(taddr) : "memory");
}

__device__ __forceinline__ void tcgen05_ld_32x32b_x16(u32 (&r)[16], u32 taddr) {
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x16.b32 "
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, [%16];\n"
               : TCGEN05_R8(0), TCGEN05_R8(8) : "r"(taddr) : "memory");
}

__device__ __forceinline__ void tcgen05_ld_32x32b_x32(u32 (&r)[32], u32 taddr) {
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x32.b32 "
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
               "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31},"
               " [%32];\n"
               : TCGEN05_R8(0), TCGEN05_R8(8), TCGEN05_R8(16), TCGEN05_R8(24)
               : "r"(taddr) : "memory");
}

#undef TCGEN05_R8

// A TMEM address: lane in bits 31..16, column in bits 15..0 ("Tensor Memory Addressing").
__device__ __forceinline__ u32 tmem_addr(u32 base, u32 lane, u32 col) {
  return base + (lane << 16) + col;
}

// ---- block-scaled MMA and the scale-factor copy (persistent kernel, chapter 09 deep dive) ---------

// tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.scale_vec::1X [d], a_desc, b_desc, idesc,
// [scale_a], [scale_b], enable_input_d: D += (A · scale_A) (B · scale_B), A and B fp8/fp6/fp4 in
// shared memory, K = 32 per instruction, one UE8M0 scale per row of A and per column of B for the
// instruction's 32 elements of K. scale_a / scale_b are TMEM addresses of the scale columns; which
// byte of each 32-bit cell is used comes from the idesc's scale-factor IDs (PTX ISA "Block
// Scaling", "Scale Factor A ID", "Scale Factor B ID"; "Instruction descriptor", the table for
// .kind::mxf8f6f4). Single thread.
__device__ __forceinline__ void tcgen05_mma_mxf8f6f4(u32 d_tmem, u64 a_desc, u64 b_desc, u32 idesc,
                                                     u32 scale_a_tmem, u32 scale_b_tmem,
                                                     u32 enable_input_d) {
  asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %6, 0;\n\t"
               "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.scale_vec::1X "
               "[%0], %1, %2, %3, [%4], [%5], p;\n\t}\n"
               ::"r"(d_tmem), "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(scale_a_tmem),
                 "r"(scale_b_tmem), "r"(enable_input_d)
               : "memory");
}

// tcgen05.cp.cta_group::1.128x128b [taddr], s_desc: copy 128 rows × 16 bytes from shared memory
// (described by a matrix descriptor, here the no-swizzle K-major layout: 8-row core matrices of
// 128 contiguous bytes, SBO = 128) into TMEM lanes 0..127, 4 columns from taddr's column: row r
// → lane r. Asynchronous, single thread, tracked by tcgen05.commit; tcgen05.cp → tcgen05.mma by
// the same thread is ordered without a wait (PTX ISA "tcgen05.cp"; "Memory Consistency Model for
// 5th generation of TensorCore operations": a pipelined pair).
__device__ __forceinline__ void tcgen05_cp_128x128b(u32 taddr, u64 s_desc) {
  asm volatile("tcgen05.cp.cta_group::1.128x128b [%0], %1;\n" ::"r"(taddr), "l"(s_desc) : "memory");
}
