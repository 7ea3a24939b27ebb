// prefetch: ask the memory system to bring the cache line holding an address into a cache level,
// with no register written and no completion to wait for (PTX ISA: "Data Movement and Conversion
// Instructions: prefetch, prefetchu"). A hint: the hardware may drop it.
#pragma once
#include "ptx/common.cuh"

__device__ __forceinline__ void prefetch_global_L1(const void* p) {
  asm volatile("prefetch.global.L1 [%0];\n" ::"l"(p));
}
__device__ __forceinline__ void prefetch_global_L2(const void* p) {
  asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p));
}
