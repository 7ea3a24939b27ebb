// The consumer side shared by chapter 05's ring (pipeline.cu) and chapter 06's warp-specialized ladder
// (warp_specialization.cu): fence the accumulators, issue one k-tile of wgmma as one group, store the
// accumulators to C. Include it after the including file has defined its tile constants:
//   kAtoms (m64 wgmma atoms per warpgroup), kAcc (= BN / 2 fp32 accumulators per thread per atom),
//   kKSteps (= BK / 16), kAtomBytes (A: bytes from one m64 atom to the next), and the defines
//   BN, DT (and DT_B: B's, default DT), B_MAJOR, A_KSTEP_BYTES, B_KSTEP_BYTES, OUT_F32, and optionally C_DT (the 16-bit type
//   of C when OUT_F32 = 0; default DT).
// PTX ISA §9.7.15 (wgmma.fence / mma_async / commit_group); register fragments: ptx/wgmma.cuh.
#pragma once
#include "ptx/common.cuh"
#include "ptx/cvt.cuh"
#include "ptx/wgmma.cuh"

#ifndef C_DT
#define C_DT DT
#endif
#ifndef DT_B
#define DT_B DT   // B's input dtype where it differs from A's (chapter 07's mixed FP8)
#endif

// No ordinary access to the accumulators may move across a wgmma, commit or wait (ptx/wgmma.cuh).
__device__ __forceinline__ void fence_accumulators(float (&acc)[kAtoms][kAcc]) {
#pragma unroll
  for (int i = 0; i < kAtoms; ++i) wgmma_fence_operand(acc[i]);
}

// Byte offset of k-step s inside a k-tile: s · *_KSTEP_BYTES (one swizzle row of K), unless the
// including file defines A_KSTEP_OFFSET(s) / B_KSTEP_OFFSET(s) (chapter 07's narrower swizzles,
// where the row is several TMA boxes: offsets from the layout model).
#ifndef A_KSTEP_OFFSET
#define A_KSTEP_OFFSET(s) ((s) * A_KSTEP_BYTES)
#endif
#ifndef B_KSTEP_OFFSET
#define B_KSTEP_OFFSET(s) ((s) * B_KSTEP_BYTES)
#endif

// ---- the consumers' half: one k-tile of wgmma -------------------------------------------------
// desc_a: this warpgroup's first atom, k-step 0, of the stage; desc_b: B of the stage, k-step 0.
__device__ __forceinline__ void mma_ktile(float (&acc)[kAtoms][kAcc], u64 desc_a, u64 desc_b) {
  wgmma_fence();
#pragma unroll
  for (int s = 0; s < kKSteps; ++s) {
    const u64 db = wgmma_desc_advance(desc_b, B_KSTEP_OFFSET(s));
#pragma unroll
    for (int i = 0; i < kAtoms; ++i)
      wgmma_mma_async_ss<BN, DT, 0, B_MAJOR, DT_B>(
          acc[i], wgmma_desc_advance(desc_a, i * kAtomBytes + A_KSTEP_OFFSET(s)), db, 1);
  }
  wgmma_commit_group();
}

// ---- epilogue: accumulators → C (fragment layout of ptx/wgmma.cuh) ----------------------------
// This thread's accumulator pair acc[i][j], acc[i][j + 1] (j even) holds C[row][col], C[row][col + 1]
// of the warpgroup's m64 atom i, whose rows start at row0 and columns at n0.
__device__ __forceinline__ void acc_pair_origin(int i, int j, int row0, int n0, int& row, int& col) {
  const int w = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  row = row0 + 64 * i + 16 * w + g + 8 * ((j >> 1) & 1);
  col = n0 + 8 * (j >> 2) + 2 * t;
}

// Two neighbouring elements of C at element offset ``at`` (even: 8-byte fp32 / 4-byte 16-bit store).
__device__ __forceinline__ void store_c_pair(void* c, size_t at, float x, float y) {
  if constexpr (OUT_F32)
    *reinterpret_cast<float2*>(static_cast<float*>(c) + at) = make_float2(x, y);
  else
    *reinterpret_cast<u32*>(static_cast<u16*>(c) + at) = cvt_rn_x2_f32<C_DT>(x, y);
}

__device__ __forceinline__ void store_c(const float (&acc)[kAtoms][kAcc], void* c, int N, int row0,
                                        int n0) {
#pragma unroll
  for (int i = 0; i < kAtoms; ++i) {
#pragma unroll
    for (int j = 0; j < kAcc; j += 2) {
      int row, col;
      acc_pair_origin(i, j, row0, n0, row, col);
      store_c_pair(c, (size_t)row * N + col, acc[i][j], acc[i][j + 1]);
    }
  }
}
