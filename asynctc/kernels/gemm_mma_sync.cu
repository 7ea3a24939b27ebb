// Chapter 01 — the synchronous Tensor Core GEMM: C = A · B with mma.sync.m16n8k16.
//
//   A: M x K row-major (K contiguous), B: K x N row-major (N contiguous), fp16 or bf16.
//   C: M x N row-major, in the input dtype (OUT_F32=0) or fp32 (OUT_F32=1); fp32 accumulation.
//
// The data path is the pre-Hopper "synchronous" one, every step done by the threads themselves:
//   global --(16-byte loads into registers)--> registers --(stores)--> shared memory
//          --(ldmatrix)--> fragment registers --(mma.sync)--> fp32 accumulators,
// with __syncthreads() between the stages. It is tuned, not a straw man: a 128x128x64 CTA tile, 64x64
// warp tiles (32 mma per 8 ldmatrix per k16 step), shared-memory tiles XOR-swizzled so that neither
// the 16-byte stores nor ldmatrix hit bank conflicts, two shared-memory buffers so that one
// __syncthreads per k-tile suffices, and the next k-tile's global loads issued into registers before
// this k-tile's math (register prefetch), so load latency hides behind the mma.sync instructions.
// What it cannot do is let the copy run without the threads: every byte passes through registers,
// and every warp stops at every __syncthreads. Chapters 02-06 remove those two limits.
//
// Compile-time parameters (defines): BM, BN, BK (CTA tile), WM, WN (warp tile), DT (0 fp16, 1 bf16),
// OUT_F32, GROUP_M (CTA raster grouping for L2 reuse), MINB (CTAs per SM the register budget must
// allow: __launch_bounds__'s second argument). ABLATE (diagnostics only, the product is then wrong)
// removes parts of the data path to measure what each costs: 1 = no global loads or shared-memory
// stores after the first k-tile, 2 = no ldmatrix after the first k16 step (fragments reused),
// 3 = both (mma.sync and __syncthreads only). Requirements, checked in Python
// (asynctc.gemm): M % BM == 0, N % BN == 0, K % BK == 0, BK in {32, 64}, WM % 16 == 0, WN % 16 == 0.

#include "ptx/common.cuh"
#include "ptx/ldmatrix.cuh"
#include "ptx/mma.cuh"
#include "ptx/cvt.cuh"

#include "gemm_tile.cuh"

#ifndef ABLATE
#define ABLATE 0
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
gemm_mma_sync(const u16* __restrict__ A, const u16* __restrict__ B, void* __restrict__ C,
              int M, int N, int K) {
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* As = smem;                          // [2][A_TILE_BYTES]
  unsigned char* Bs = smem + 2 * A_TILE_BYTES;       // [2][B_TILE_BYTES]

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

  uint4 ra[A_LOADS], rb[B_LOADS];
  auto load_global = [&](int kt) {    // global -> registers (16-byte loads)
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) ra[i] = *reinterpret_cast<const uint4*>(ga + i * ga_step + kt * BK);
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i)
      rb[i] = *reinterpret_cast<const uint4*>(gb + i * gb_step + (size_t)kt * BK * N);
  };
  auto store_shared = [&](int buf) {  // registers -> shared memory (swizzled)
    unsigned char* as = As + buf * A_TILE_BYTES;
    unsigned char* bs = Bs + buf * B_TILE_BYTES;
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) *reinterpret_cast<uint4*>(as + a_st + i * A_ROW_STEP * BK * 2) = ra[i];
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) *reinterpret_cast<uint4*>(bs + b_st + i * B_ROW_STEP * BN * 2) = rb[i];
  };

  const int KT = K / BK;
  load_global(0);
  store_shared(0);
  __syncthreads();

  u32 af[MT][4], bf[NT][2];           // the fragments of one k16 step
  for (int kt = 0; kt < KT; ++kt) {
    const int buf = kt & 1;
    const bool refill = !(ABLATE & 1) && kt + 1 < KT;
    if (refill) load_global(kt + 1);    // issued now, consumed after the math below
    const u32 as = smem_u32(As + buf * A_TILE_BYTES);
    const u32 bs = smem_u32(Bs + buf * B_TILE_BYTES);
#pragma unroll
    for (int ks = 0; ks < BK / 16; ++ks) {
      if (!(ABLATE & 2) || (kt == 0 && ks == 0)) {
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
      }
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) mma_sync_m16n8k16<DT>(acc[i][j], af[i], bf[j]);
    }

    if (refill) store_shared(buf ^ 1);
    __syncthreads();
  }

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
