// Chapter 02 — the chapter-01 mma.sync GEMM made multistage with cp.async.
//
//   A: M x K row-major (K contiguous), B: K x N row-major (N contiguous), fp16 or bf16.
//   C: M x N row-major, in the input dtype (OUT_F32=0) or fp32 (OUT_F32=1); fp32 accumulation.
//
// What changed against gemm_mma_sync.cu (everything else — tile, warp tiles, XOR swizzle, ldmatrix,
// mma.sync, epilogue — is the same code):
//   * global -> shared memory goes through cp.async (LDGSTS in SASS): each thread *issues* 16-byte
//     copies and goes on; the data never passes through its registers. The register staging
//     (ra/rb, load_global/store_shared) is gone.
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
// and STAGES (1..4). Requirements, checked in Python (asynctc.cpasync): M % BM == 0, N % BN == 0,
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

  // Grouped raster order: GROUP_M consecutive CTA rows share B columns while they are in L2.
  const int tiles_m = M / BM, tiles_n = N / BN;
  const int bid = blockIdx.x;
  const int group = bid / (GROUP_M * tiles_n);
  const int first_m = group * GROUP_M;
  const int rows_in_group = min(tiles_m - first_m, GROUP_M);
  const int tile_m = first_m + (bid % (GROUP_M * tiles_n)) % rows_in_group;
  const int tile_n = (bid % (GROUP_M * tiles_n)) / rows_in_group;
  const int m0 = tile_m * BM, n0 = tile_n * BN;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

  // Per-thread address parts, computed once (the swizzle pattern repeats every 8 rows, and every
  // row step below is a multiple of 8, so only a base offset per thread is needed; the rest are
  // compile-time immediates in the instructions).
  constexpr int A_ROW_STEP = THREADS / A_CHUNKS_ROW;   // rows between one thread's A chunks
  constexpr int B_ROW_STEP = THREADS / B_CHUNKS_ROW;
  static_assert(THREADS % A_CHUNKS_ROW == 0 && THREADS % B_CHUNKS_ROW == 0, "row-aligned loads");
  static_assert(A_ROW_STEP % 8 == 0 && B_ROW_STEP % 8 == 0, "row steps must keep the swizzle phase");
  const u16* ga = A + (size_t)(m0 + tid / A_CHUNKS_ROW) * K + (tid % A_CHUNKS_ROW) * 8;
  const u16* gb = B + (size_t)(tid / B_CHUNKS_ROW) * N + n0 + (tid % B_CHUNKS_ROW) * 8;
  const size_t ga_step = (size_t)A_ROW_STEP * K, gb_step = (size_t)B_ROW_STEP * N;
  const u32 a_st = a_off(tid / A_CHUNKS_ROW, tid % A_CHUNKS_ROW);   // + i * A_ROW_STEP rows
  const u32 b_st = b_off(tid / B_CHUNKS_ROW, tid % B_CHUNKS_ROW);   // + i * B_ROW_STEP rows
  u32 a_ld[BK / 16];                  // ldmatrix row address in the A tile, per k16 step
#pragma unroll
  for (int ks = 0; ks < BK / 16; ++ks) a_ld[ks] = a_off(wm + (lane & 15), ks * 2 + (lane >> 4));
  u32 b_ld[NT / 2];                   // ldmatrix.trans row address in the B tile, per 16-column pair
#pragma unroll
  for (int j = 0; j < NT / 2; ++j) {
    const int q = lane >> 3;          // which 8x8 matrix this lane addresses
    b_ld[j] = b_off((q & 1) * 8 + (lane & 7), (wn + j * 16) / 8 + (q >> 1));
  }

  const u32 as0 = smem_u32(As), bs0 = smem_u32(Bs);
  // Issue the cp.async copies of k-tile kt into ring slot `slot` (no wait, no registers).
  auto load_tile = [&](int kt, int slot) {
    const u32 as = as0 + slot * A_TILE_BYTES, bs = bs0 + slot * B_TILE_BYTES;
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i)
      cp_async_cg_16(as + a_st + i * A_ROW_STEP * BK * 2, ga + i * ga_step + (size_t)kt * BK);
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i)
      cp_async_cg_16(bs + b_st + i * B_ROW_STEP * BN * 2, gb + i * gb_step + (size_t)kt * BK * N);
  };
  auto compute_tile = [&](int slot) {
    const u32 as = as0 + slot * A_TILE_BYTES, bs = bs0 + slot * B_TILE_BYTES;
#pragma unroll
    for (int ks = 0; ks < BK / 16; ++ks) {
      u32 af[MT][4], bf[NT][2];
#pragma unroll
      for (int i = 0; i < MT; ++i)    // rows wm + 16i .. +15, k 16ks .. +15
        ldmatrix_x4(af[i], as + a_ld[ks] + i * 16 * BK * 2);
#pragma unroll
      for (int j = 0; j < NT / 2; ++j) {  // k 16ks .. +15, columns wn + 16j .. +15
        u32 t[4];
        ldmatrix_x4_trans(t, bs + b_ld[j] + ks * 16 * BN * 2);
        bf[2 * j][0] = t[0]; bf[2 * j][1] = t[1];
        bf[2 * j + 1][0] = t[2]; bf[2 * j + 1][1] = t[3];
      }
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) mma_sync_m16n8k16<DT>(acc[i][j], af[i], bf[j]);
    }
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

  // Epilogue: each thread writes its accumulator pairs (row g / g+8, cols 2t, 2t+1).
  const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      int row = m0 + wm + i * 16 + g, col = n0 + wn + j * 8 + 2 * t4;
#if OUT_F32
      float* c = reinterpret_cast<float*>(C);
      *reinterpret_cast<float2*>(c + (size_t)row * N + col) = make_float2(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<float2*>(c + (size_t)(row + 8) * N + col) = make_float2(acc[i][j][2], acc[i][j][3]);
#else
      u32* c0 = reinterpret_cast<u32*>(reinterpret_cast<u16*>(C) + (size_t)row * N + col);
      u32* c1 = reinterpret_cast<u32*>(reinterpret_cast<u16*>(C) + (size_t)(row + 8) * N + col);
      *c0 = cvt_rn_x2_f32<DT>(acc[i][j][0], acc[i][j][1]);
      *c1 = cvt_rn_x2_f32<DT>(acc[i][j][2], acc[i][j][3]);
#endif
    }
}
