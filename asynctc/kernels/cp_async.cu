// Chapter 02 — the chapter-01 mma.sync GEMM made multistage with cp.async.
//
//   A: M x K row-major (K contiguous), B: K x N row-major (N contiguous), fp16 or bf16.
//   C: M x N row-major, in the input dtype (OUT_F32=0) or fp32 (OUT_F32=1); fp32 accumulation.
//
// What changed against mma_sync.cu (everything else — tile, warp tiles, XOR swizzle, ldmatrix,
// mma.sync, epilogue — is the same code, in gemm_tile.cuh):
//   * global -> shared memory goes through cp.async (LDGSTS in SASS): each thread *issues* 16-byte
//     copies and goes on; the data never passes through its registers. The register staging
//     (ra/rb, load_global/store_shared) is gone. The .cg form used here caches in L2 only (not L1).
//   * shared memory is a ring of STAGES k-tiles. The copies of k-tile kt+STAGES-1 are issued, then
//     committed as one async-group, while the warps compute on k-tile kt; before computing on a
//     k-tile, a thread waits with cp.async.wait_group<STAGES-2> (all but its STAGES-2 newest groups
//     done) and the CTA meets at __syncthreads so every thread's copies are visible.
//   * one group is committed per iteration even when there is nothing left to load (an empty group
//     completes at once), so "STAGES-2 newest groups" always means the same k-tiles.
//   * STAGES == 1 is the synchronous baseline with cp.async: load, wait_group<0>, sync, compute, sync.
// Ring-slot reuse is safe: the slot written at iteration kt, (kt+STAGES-1) % STAGES, is the one
// computed on at iteration kt-1, and every thread has passed this iteration's __syncthreads after
// finishing kt-1.
//
// Compile-time parameters (defines): BM, BN, BK, WM, WN, DT, OUT_F32, GROUP_M, MINB as in chapter 01,
// and STAGES (1..4). Requirements, checked in Python (asynctc.cp_async): M % BM == 0, N % BN == 0,
// K % BK == 0, BK in {32, 64}, STAGES * (BM*BK + BK*BN) * 2 bytes <= 227 KiB.

#include "ptx/common.cuh"
#include "ptx/ldmatrix.cuh"
#include "ptx/mma.cuh"
#include "ptx/cvt.cuh"
#include "ptx/cp_async.cuh"

#include "gemm_tile.cuh"
#ifndef STAGES
#define STAGES 3
#endif
static_assert(STAGES >= 1 && STAGES <= 4, "STAGES must be 1..4");

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
gemm_cp_async(const u16* __restrict__ A, const u16* __restrict__ B, void* __restrict__ C,
              int M, int N, int K) {
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* As = smem;                          // [STAGES][A_TILE_BYTES]
  unsigned char* Bs = smem + STAGES * A_TILE_BYTES;  // [STAGES][B_TILE_BYTES]

  int m0, n0;
  cta_origin(M, N, m0, n0);
  const int warp = threadIdx.x >> 5;
  const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
  const ThreadAddresses t = thread_addresses(A, B, N, K, m0, n0, wm, wn);

  float acc[MT][NT][4];                // the warp's 16x8 fp32 accumulator tiles
  zero(acc);

  const u32 as0 = smem_u32(As), bs0 = smem_u32(Bs);
  // Issue the cp.async copies of k-tile kt into ring slot `slot` (no wait, no registers).
  auto load_tile = [&](int kt, int slot) {
    const u32 as = as0 + slot * A_TILE_BYTES, bs = bs0 + slot * B_TILE_BYTES;
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i)
      cp_async_cg_16(as + t.a_st + i * A_ROW_STEP * BK * 2, t.ga + i * t.ga_step + (size_t)kt * BK);
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i)
      cp_async_cg_16(bs + t.b_st + i * B_ROW_STEP * BN * 2, t.gb + i * t.gb_step + (size_t)kt * BK * N);
  };
  u32 af[MT][4], bf[NT][2];           // the fragments of one k16 step
  auto compute_tile = [&](int slot) {  // ldmatrix + mma.sync on the k-tile in ring slot `slot`
    mma_ktile(acc, af, bf, as0 + slot * A_TILE_BYTES, bs0 + slot * B_TILE_BYTES, t);
  };

  const int KT = K / BK;
#if STAGES == 1
  for (int kt = 0; kt < KT; ++kt) {   // no overlap: copy, wait, compute
    load_tile(kt, 0);
    cp_async_commit_group();
    cp_async_wait_group<0>();
    __syncthreads();
    compute_tile(0);
    __syncthreads();                  // everyone done reading slot 0 before it is overwritten
  }
#else
  // Prologue: k-tiles 0 .. STAGES-2 in flight, one group each.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) load_tile(s, s);
    cp_async_commit_group();
  }
  int slot = 0;                       // ring slot of k-tile kt
  for (int kt = 0; kt < KT; ++kt) {
    cp_async_wait_group<STAGES - 2>();  // this thread's copies of k-tile kt have landed
    __syncthreads();                    // ... and everyone's; slot of kt-1 is free again
    const int nk = kt + STAGES - 1;     // refill the slot computed on in iteration kt-1
    if (nk < KT) load_tile(nk, slot == 0 ? STAGES - 1 : slot - 1);
    cp_async_commit_group();            // possibly empty: keeps the group count uniform
    compute_tile(slot);
    slot = (slot + 1 == STAGES) ? 0 : slot + 1;
  }
  cp_async_wait_all();                  // no copies outstanding at exit (all groups are empty here)
#endif

  store_c(acc, C, N, m0, n0, wm, wn);
}
