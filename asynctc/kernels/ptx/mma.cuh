// mma.sync.aligned.m16n8k16.row.col: one warp multiplies a 16x16 A fragment by a 16x8 B fragment
// and accumulates into a 16x8 fp32 fragment, synchronously (PTX ISA: "Warp-level matrix multiply-
// accumulate instructions: mma", shape .m16n8k16, fragment layouts in "Matrix Fragments for
// mma.m16n8k16 with floating point type"). With g = lane/4 and t = lane%4:
//   A (4 x .b32, each two b16): a0 (row g,   k 2t..2t+1)  a1 (row g+8, k 2t..)  a2 (row g, k 2t+8..)
//                               a3 (row g+8, k 2t+8..)
//   B (2 x .b32):               b0 (k 2t..2t+1, col g)    b1 (k 2t+8.., col g)
//   C/D (4 x f32):              c0,c1 (row g, cols 2t, 2t+1)  c2,c3 (row g+8, cols 2t, 2t+1)
// In SASS this is HMMA.16816.F32 (fp16) or HMMA.16816.F32.BF16 (bf16).
#pragma once
#include "ptx/common.cuh"

// kDtype: 0 = fp16 inputs, 1 = bf16 inputs. fp32 accumulate in place.
template <int kDtype>
__device__ __forceinline__ void mma_sync_m16n8k16(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]);

template <>
__device__ __forceinline__ void mma_sync_m16n8k16<0>(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <>
__device__ __forceinline__ void mma_sync_m16n8k16<1>(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
