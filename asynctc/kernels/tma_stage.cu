// Chapter 03's code exercise ch03.stage_fill: the producer's lines that fill one stage of a GEMM's
// ring with k-tile kt — a BM x BK box of A (tensor map ta, A is M x K) and a BN x BK box of B
// (tensor map tb, B stored N x K, K-major), both under one mbarrier, as chapter 05's load_stage does.
//
// fill_stage's body is the exercise (asynctc.tma.stage_fill splices the learner's lines in place of
// the body between the two marker lines); the kernel around it fills the stage once, waits on
// parity 0 (bounded: a wrong byte count ends in ASYNCTC_ERR_MBARRIER_TIMEOUT, never a hang) and
// writes the stage out. Only compiled by the course's CPU check; it runs as written on an sm_90 GPU.

#include "ptx/common.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/fence.cuh"

#ifndef MAX_TRIES
#define MAX_TRIES 10000000u
#endif

constexpr int BM = 128, BN = 128, BK = 64;        // fp16: each box is 128 rows of 128 bytes

// stage: the stage's shared-memory address (1024-aligned; A first, then B); full_bar: its mbarrier;
// kt: the k-tile; m0, n0: the CTA's first row of A and first row of B (C's first column).
__device__ __forceinline__ void fill_stage(const TmaDesc& ta, const TmaDesc& tb, u32 stage,
                                           u32 full_bar, int kt, int m0, int n0) {
  // ---- the exercise: from here ----
  mbarrier_arrive_expect_tx(full_bar, (BM + BN) * BK * 2);
  tma_load_2d(stage, ta, full_bar, kt * BK, m0);                // A: BM x BK at (column kt*BK, row m0)
  tma_load_2d(stage + BM * BK * 2, tb, full_bar, kt * BK, n0);  // B: BN x BK right after A
  // ---- the exercise: to here ----
}

extern "C" __global__ void __launch_bounds__(128)
    tma_stage_fill(const __grid_constant__ TmaDesc ta, const __grid_constant__ TmaDesc tb, int kt,
                   int m0, int n0, unsigned char* __restrict__ out, u32* err) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ alignas(8) u64 full_storage;
  const u32 full_bar = smem_u32(&full_storage);
  const u32 stage = (smem_u32(smem_raw) + 1023u) & ~1023u;
  if (threadIdx.x == 0) {
    mbarrier_init(full_bar, 1);
    fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) fill_stage(ta, tb, stage, full_bar, kt, m0, n0);
  if (!mbarrier_wait_parity_bounded(full_bar, 0, MAX_TRIES, err, 1)) return;
  const unsigned char* s = smem_raw + (stage - smem_u32(smem_raw));
  for (int i = threadIdx.x; i < (BM + BN) * BK * 2; i += blockDim.x) out[i] = s[i];
}
