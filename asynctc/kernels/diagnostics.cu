// Test-only kernels (tests/test_runtime.py): each makes ptxas print one diagnostic that means lost
// performance, so that asynctc.core.runtime's PerformanceWarning can be shown to surface it. None
// of them is a course kernel and none is ever launched. Select one with -DDIAG=<n>:
//   1 diag_setmaxnreg   setmaxnreg in a kernel without __launch_bounds__: ptxas cannot know the
//                       register count at entry and ignores it (C7508).
//   2 diag_wgmma_serial ordinary instructions write the accumulators between wgmmas of one
//                       pipeline stage (no wgmma.fence, no wait): ptxas injects wgmma.wait_group
//                       (C7517) and serializes the wgmmas (C7511, "Potential Performance Loss:
//                       wgmma.mma_async instructions are serialized due to ...").
//   3 diag_spill        a register budget far below what the kernel needs (1024 threads × 2
//                       blocks: 32 registers): ptxas spills to local memory.
//   4 diag_wgmma_divergent  a wgmma under a per-thread (non-uniform) predicate: ptxas serializes
//                       (C7519, "... due to program dependence on compiler-inserted WG.AR in
//                       divergent path").
#include "ptx/common.cuh"
#include "ptx/wgmma.cuh"

#ifndef DIAG
#define DIAG 0
#endif

#if DIAG == 1
extern "C" __global__ void diag_setmaxnreg(float* out) {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
  out[threadIdx.x] = 1.0f;
}
#endif

#if DIAG == 2
extern "C" __global__ void __launch_bounds__(128) diag_wgmma_serial(float* out, u64 da, u64 db,
                                                                    int n) {
  float d[32];
  for (int i = 0; i < 32; ++i) d[i] = 0.f;
  wgmma_fence();
  for (int k = 0; k < n; ++k) {
    Wgmma<64>::ss<0, 0, 0>(d, da, db, 1);
    d[k & 31] += 1.0f;            // an ordinary write to an accumulator inside the stage
  }
  wgmma_commit_group();
  wgmma_wait_group<0>();
  for (int i = 0; i < 32; ++i) out[threadIdx.x * 32 + i] = d[i];
}
#endif

#if DIAG == 3
extern "C" __global__ void __launch_bounds__(1024, 2) diag_spill(const float* in, float* out) {
  float v[48];
#pragma unroll
  for (int i = 0; i < 48; ++i) v[i] = in[threadIdx.x + i * 1024];
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 48; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) s += v[i] * v[(i * 7 + j) % 48];
  out[threadIdx.x] = s;
}
#endif

#if DIAG == 4
extern "C" __global__ void __launch_bounds__(128) diag_wgmma_divergent(float* out, u64 da, u64 db,
                                                                       int n) {
  float d[4];
  for (int i = 0; i < 4; ++i) d[i] = 0.f;
  wgmma_fence();
  if ((int)threadIdx.x < n) Wgmma<8>::ss<0, 0, 0>(d, da, db, 1);   // not warpgroup-uniform
  wgmma_commit_group();
  wgmma_wait_group<0>();
  for (int i = 0; i < 4; ++i) out[threadIdx.x * 4 + i] = d[i];
}
#endif
