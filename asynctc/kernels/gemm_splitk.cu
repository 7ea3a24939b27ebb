// asynctc.matmul's split-K reduction: C (M×N, row pitch ldc) = the sum of SPLITS fp32 partial
// tiles that kernels/warp_specialization.cu (SPLIT_K = SPLITS) wrote to a workspace, split s at
// ws + s · M · N (rows of N floats). Each element's partials are added in the fixed order
// 0 .. SPLITS − 1, in fp32, so the result does not depend on which split finished first
// (deterministic), then written in C's dtype (round to nearest even: cvt.rn, PTX ISA "cvt").
//
// One thread per pair of adjacent columns (col even): a pair inside N with an even ldc goes out as
// one 8-byte (fp32) or 4-byte (16-bit) store, else element by element (C's base is 16-byte
// aligned, as the GEMM's register epilogue assumes). Reads of the workspace are float2 when N is
// even (every row then starts 8-byte aligned), else scalar. Grid-stride over M · ceil(N / 2) pairs.
//
// Defines: SPLITS (2..16), OUT_KIND (0 fp32, 1 f16, 2 bf16).
// Arguments: ws (fp32 workspace), c (C), M, N, ldc (C's row pitch in elements).

#include "ptx/common.cuh"
#include "ptx/cvt.cuh"

#ifndef SPLITS
#define SPLITS 2
#endif
#ifndef OUT_KIND
#define OUT_KIND 0
#endif
static_assert(SPLITS >= 2 && SPLITS <= 16, "SPLITS: 2..16");
static_assert(OUT_KIND >= 0 && OUT_KIND <= 2, "OUT_KIND: 0 fp32, 1 f16, 2 bf16");
constexpr int kCvt = OUT_KIND == 2 ? 1 : 0;   // cvt_rn_x2_f32's type: 0 f16, 1 bf16

__device__ __forceinline__ void store_one(void* c, size_t at, float x) {
  if constexpr (OUT_KIND == 0)
    static_cast<float*>(c)[at] = x;
  else
    static_cast<u16*>(c)[at] = (u16)(cvt_rn_x2_f32<kCvt>(x, 0.f) & 0xFFFFu);
}

extern "C" __global__ void __launch_bounds__(256)
    splitk_reduce(const float* __restrict__ ws, void* __restrict__ c, int M, int N, int ldc) {
  const int pairs_n = (N + 1) / 2;
  const long long total = (long long)M * pairs_n;
  const size_t split_stride = (size_t)M * N;
  const bool even_n = (N & 1) == 0, pairs = (ldc & 1) == 0;
  for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < total;
       p += (long long)gridDim.x * blockDim.x) {
    const int row = (int)(p / pairs_n), col = 2 * (int)(p % pairs_n);
    const size_t src = (size_t)row * N + col;
    const bool two = col + 1 < N;
    float x = 0.f, y = 0.f;
#pragma unroll
    for (int s = 0; s < SPLITS; ++s) {                      // fixed order: deterministic
      const float* w = ws + s * split_stride + src;
      if (even_n) {
        const float2 v = *reinterpret_cast<const float2*>(w);
        x += v.x;
        y += v.y;
      } else {
        x += w[0];
        if (two) y += w[1];
      }
    }
    const size_t at = (size_t)row * ldc + col;
    if (two && pairs) {
      if constexpr (OUT_KIND == 0)
        *reinterpret_cast<float2*>(static_cast<float*>(c) + at) = make_float2(x, y);
      else
        *reinterpret_cast<u32*>(static_cast<u16*>(c) + at) = cvt_rn_x2_f32<kCvt>(x, y);
    } else {
      store_one(c, at, x);
      if (two) store_one(c, at + 1, y);
    }
  }
}
