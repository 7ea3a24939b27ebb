// cp.async: Ampere-style asynchronous copy global -> shared, tracked per thread in "async groups"
// (PTX ISA: "Data Movement and Conversion Instructions: cp.async", "cp.async.commit_group",
// "cp.async.wait_group / cp.async.wait_all"). In SASS: LDGSTS (the copy), LDGDEPBAR (commit),
// DEPBAR (wait).
//
// Rules the callers rely on:
//  * the data is not visible to this thread until a wait_group/wait_all that covers its group has
//    completed; other threads need a barrier (__syncthreads) after that wait as usual;
//  * .cg (cache global, bypass L1) exists only for 16-byte copies; .ca allows 4, 8 and 16 bytes;
//  * both addresses must be aligned to the copy size;
//  * wait_group N waits until at most N of this thread's most recent committed groups are pending.
#pragma once
#include "ptx/common.cuh"

// 16 bytes global -> shared, L2 only (.cg). dst: shared-state-space address, src: global pointer.
__device__ __forceinline__ void cp_async_cg_16(u32 dst_smem, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst_smem), "l"(src) : "memory");
}

// 16 bytes with a source size: bytes src_bytes..15 of the destination are filled with zeros
// (cp.async's optional src-size operand; src_bytes in 0..16).
__device__ __forceinline__ void cp_async_cg_16_zfill(u32 dst_smem, const void* src, u32 src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
               ::"r"(dst_smem), "l"(src), "r"(src_bytes) : "memory");
}

// 4 bytes global -> shared through L1 (.ca): the element-wise copy of the Luo et al. microbenchmark.
__device__ __forceinline__ void cp_async_ca_4(u32 dst_smem, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst_smem), "l"(src) : "memory");
}

// Close the current group of this thread's cp.async operations (an empty group is allowed and
// completes at once, which keeps the group arithmetic of a pipeline uniform at its tail).
__device__ __forceinline__ void cp_async_commit_group() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Wait until at most N of this thread's committed groups are still pending (N: compile-time).
template <int kN>
__device__ __forceinline__ void cp_async_wait_group() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kN) : "memory");
}

// Wait for all of this thread's cp.async operations, committed or not.
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}
