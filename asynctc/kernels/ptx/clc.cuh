// Cluster launch control (sm_100a): a running CTA (cluster) asks the hardware to cancel the launch
// of a cluster that has not started yet and, on success, takes over its work. One wrapper per PTX
// instruction. PTX ISA 8.6+, "Parallel Synchronization and Communication Instructions:
// clusterlaunchcontrol":
//
//   clusterlaunchcontrol.try_cancel   asynchronous; writes a 16-byte opaque response to shared
//                                     memory [addr] and performs complete_tx(16) on the mbarrier
//                                     [mbar] (.mbarrier::complete_tx::bytes). With
//                                     .multicast::cluster::all the response is written to, and the
//                                     complete_tx performed on, the same offsets in EVERY CTA of the
//                                     cluster (so every CTA learns the next tile). A cancelled
//                                     cluster never launches; no other request returns its id.
//                                     After one request has returned "not cancelled", issuing
//                                     another is undefined: a scheduler stops at the first failure.
//   clusterlaunchcontrol.query_cancel .is_canceled.pred.b128: did the request succeed;
//                                     .get_first_ctaid::{x,y,z}.b32.b128: the first CTA id of the
//                                     cancelled cluster (undefined when it did not succeed).
//
// The response is read with an ordinary shared-memory load after the mbarrier phase completed
// (the completion of the complete_tx makes the asynchronous write visible, as for TMA).
// In SASS (nvdisasm 13.x, sm_100a, measured in tests/test_tcgen05_persistent.py): try_cancel
// → UCLCTRYCANCEL-class instruction, query_cancel → ULCQUERY-class (see that test for the names
// this toolchain prints; the tests pin them).
#pragma once
#include "ptx/common.cuh"

// try_cancel, response to this CTA only (a cluster of one CTA).
__device__ __forceinline__ void clc_try_cancel(u32 response_smem, u32 bar) {
  asm volatile("clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes"
               ".b128 [%0], [%1];\n" ::"r"(response_smem), "r"(bar) : "memory");
}

// try_cancel, the response and the complete_tx at the same offsets in every CTA of the cluster.
__device__ __forceinline__ void clc_try_cancel_multicast(u32 response_smem, u32 bar) {
  asm volatile("clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes"
               ".multicast::cluster::all.b128 [%0], [%1];\n"
               ::"r"(response_smem), "r"(bar) : "memory");
}

// Decode the 16-byte response at shared address `response_smem`: returns true when a cluster was
// cancelled, and its first CTA id's x in *first_x (left unchanged otherwise).
__device__ __forceinline__ bool clc_query_cancel(u32 response_smem, u32* first_x) {
  u32 ok, x;
  asm volatile("{\n\t.reg .b128 r;\n\t.reg .pred p;\n\t"
               "ld.shared.b128 r, [%2];\n\t"
               "clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 p, r;\n\t"
               "selp.u32 %0, 1, 0, p;\n\t"
               "clusterlaunchcontrol.query_cancel.get_first_ctaid::x.b32.b128 %1, r;\n\t}\n"
               : "=r"(ok), "=r"(x) : "r"(response_smem) : "memory");
  if (ok) *first_x = x;
  return ok != 0;
}
