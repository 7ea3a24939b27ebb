// Chapter 01 — the ceiling of mma.sync itself: Tensor Core math with no memory traffic in the loop.
//
// Every warp loads one 16x16 A fragment and one 16x8 B fragment once (A: 16x16 row-major, B: 16x8
// row-major, fp16 or bf16), then issues ITERS x CHAINS mma.sync.m16n8k16 into CHAINS independent
// fp32 accumulators (independent, so the Tensor Core pipeline never waits on its own result), and
// writes them out: out[warp][chain] is a 16x8 fp32 tile that must equal ITERS * (A . B).
// FLOP per launch = warps x ITERS x CHAINS x (2 * 16 * 8 * 16).
// The SM clock during the loop, as kernels/wgmma_peak.cu measures it: thread 0 of each CTA reads
// %globaltimer (ns) and clock64 (SM cycles) before and after the loop and writes
// clk[cta] = {c0, c1, t0, t1}; the host divides the differences (PTX ISA, "Special Registers:
// %globaltimer, %clock64").
// Defines: DT (0 fp16, 1 bf16), CHAINS, ITERS.

#include "ptx/common.cuh"
#include "ptx/mma.cuh"

#ifndef DT
#define DT 0
#endif
#ifndef CHAINS
#define CHAINS 8
#endif
#ifndef ITERS
#define ITERS 4096
#endif

extern "C" __global__ void mma_sync_peak(const u16* __restrict__ A, const u16* __restrict__ B,
                                         float* __restrict__ out, u64* __restrict__ clk) {
  const int lane = threadIdx.x & 31;
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int g = lane >> 2, t = lane & 3;
  // Fragment layout of mma.m16n8k16 (see ptx/mma.cuh).
  auto pack = [](u16 lo, u16 hi) { return (u32)lo | ((u32)hi << 16); };
  u32 a[4], b[2];
  a[0] = pack(A[g * 16 + 2 * t], A[g * 16 + 2 * t + 1]);
  a[1] = pack(A[(g + 8) * 16 + 2 * t], A[(g + 8) * 16 + 2 * t + 1]);
  a[2] = pack(A[g * 16 + 2 * t + 8], A[g * 16 + 2 * t + 9]);
  a[3] = pack(A[(g + 8) * 16 + 2 * t + 8], A[(g + 8) * 16 + 2 * t + 9]);
  b[0] = pack(B[(2 * t) * 8 + g], B[(2 * t + 1) * 8 + g]);
  b[1] = pack(B[(2 * t + 8) * 8 + g], B[(2 * t + 9) * 8 + g]);

  float acc[CHAINS][4];
#pragma unroll
  for (int c = 0; c < CHAINS; ++c)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[c][e] = 0.f;

  u64 c0 = 0, t0 = 0;
  if (threadIdx.x == 0) { t0 = globaltimer(); c0 = clock64(); }
  for (int it = 0; it < ITERS; ++it) {
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) mma_sync_m16n8k16<DT>(acc[c], a, b);
  }
  if (threadIdx.x == 0) {
    // clock64 after the loop: the last mma's result is not needed yet, so this read can be issued
    // while the tail of the loop is in flight — a few hundred cycles out of ITERS x CHAINS mmas.
    const u64 c1 = clock64(), t1 = globaltimer();
    clk[blockIdx.x * 4 + 0] = c0; clk[blockIdx.x * 4 + 1] = c1;
    clk[blockIdx.x * 4 + 2] = t0; clk[blockIdx.x * 4 + 3] = t1;
  }

  float* o = out + (size_t)warp * CHAINS * 128;
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) {
    o[c * 128 + g * 8 + 2 * t] = acc[c][0];
    o[c * 128 + g * 8 + 2 * t + 1] = acc[c][1];
    o[c * 128 + (g + 8) * 8 + 2 * t] = acc[c][2];
    o[c * 128 + (g + 8) * 8 + 2 * t + 1] = acc[c][3];
  }
}
