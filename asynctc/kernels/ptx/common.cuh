// Small helpers shared by the PTX wrappers. No CUDA headers are needed: NVRTC provides the built-in
// vector types (uint4, float2, ...) and __cvta_generic_to_shared.
#pragma once

typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

// The 32-bit shared-state-space address of a generic pointer into shared memory
// (PTX ISA: "cvta" — generic addressing; shared addresses fit in 32 bits).
__device__ __forceinline__ u32 smem_u32(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

// The start-address field of a shared-memory matrix descriptor (wgmma, tcgen05): bits 0-13, the
// address in 16-byte units, i.e. the low 18 bits of the shared-memory offset. In a cluster launch
// the shared-window address smem_u32 returns carries more than that: measured on the H200
// (chapter 06, docs/NOTES.md), the second CTA of a cluster of 2 reads addresses with bit 24 set.
// Added unmasked into a descriptor, (addr >> 4) carries bit 20 into the leading-byte-offset field
// (bits 16-29): +16 units = +256 bytes of LBO — harmless for K-major swizzled operands (LBO
// unused) and wrong for MN-major ones (each 64-column box read 2 rows of K late). Mask first.
__device__ __forceinline__ u64 smem_desc_addr(u32 addr) {
  return (u64)((addr & 0x3FFFFu) >> 4);
}

// %globaltimer: a 64-bit nanosecond timer shared by all SMs (PTX ISA: "Special Registers:
// %globaltimer"). Coarse (updates every ~µs on many GPUs), but comparable across SMs.
__device__ __forceinline__ u64 globaltimer() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// %smid: the SM this thread runs on (PTX ISA: "Special Registers: %smid"; may change during a
// thread's life in principle, in practice fixed for a CTA). Used to label trace records.
__device__ __forceinline__ u32 smid() {
  u32 r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}
