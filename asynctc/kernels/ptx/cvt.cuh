// Packing two fp32 values into one .b32 of two 16-bit floats, round to nearest even
// (PTX ISA: "Data Movement and Conversion Instructions: cvt", .f16x2.f32 and .bf16x2.f32 forms;
// "cvt.rn.f16x2.f32 d, a, b" puts a in the upper half and b in the lower half).
#pragma once
#include "ptx/common.cuh"

template <int kDtype>
__device__ __forceinline__ u32 cvt_rn_x2_f32(float lo, float hi);

template <>
__device__ __forceinline__ u32 cvt_rn_x2_f32<0>(float lo, float hi) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

template <>
__device__ __forceinline__ u32 cvt_rn_x2_f32<1>(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
