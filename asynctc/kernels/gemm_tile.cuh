// The tile shared by chapter 01's and chapter 02's mma.sync GEMMs: compile-time parameters (with
// their defaults), the constants derived from them, the XOR swizzle of the shared-memory tiles,
// and the code both kernels run the same way (CTA raster order, per-thread addresses, the math of
// one k-tile, the epilogue). Included after the PTX wrappers by mma_sync.cu and
// cp_async.cu, so the two rungs of the ladder differ only in how k-tiles reach shared memory
// (and so in how many shared-memory buffers they use and where their barriers stand).
//
// Defines: BM, BN, BK (CTA tile), WM, WN (warp tile), DT (0 fp16, 1 bf16), OUT_F32, GROUP_M (CTA
// raster grouping for L2 reuse), MINB (CTAs per SM the register budget must allow).
#pragma once
#include "ptx/common.cuh"

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 64
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef DT
#define DT 0
#endif
#ifndef OUT_F32
#define OUT_F32 0
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef MINB
#define MINB 1
#endif

constexpr int WARPS_M = BM / WM;
constexpr int WARPS_N = BN / WN;
constexpr int THREADS = WARPS_M * WARPS_N * 32;
constexpr int MT = WM / 16;              // m16 tiles per warp
constexpr int NT = WN / 8;               // n8 tiles per warp
constexpr int A_CHUNKS_ROW = BK / 8;     // 16-byte chunks per A-tile row
constexpr int B_CHUNKS_ROW = BN / 8;     // 16-byte chunks per B-tile row
constexpr int A_LOADS = BM * BK / 8 / THREADS;  // 16-byte global loads per thread per k-tile
constexpr int B_LOADS = BK * BN / 8 / THREADS;
constexpr int A_TILE_BYTES = BM * BK * 2;
constexpr int B_TILE_BYTES = BK * BN * 2;

static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must divide the CTA tile");
static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tile must be a multiple of 16x16");
static_assert(BK == 32 || BK == 64, "BK must be 32 or 64 (swizzle below)");
static_assert(BM * BK / 8 % THREADS == 0 && BK * BN / 8 % THREADS == 0, "loads must divide evenly");
static_assert(BN % 64 == 0, "B rows must span whole 128-byte lines for the B swizzle");

// Byte offset of 16-byte chunk c of row r in the A tile (rows of BK*2 bytes). XOR-swizzled so that
// the 8 rows read by one ldmatrix phase, and the 8 chunks written by one store phase, fall in 8
// different 16-byte bank groups.
__device__ __forceinline__ u32 a_off(int r, int c) {
  if (BK == 32) return r * 64 + ((c ^ ((r >> 1) & 3)) << 4);   // two 64-byte rows per 128-byte line
  return r * 128 + ((c ^ (r & 7)) << 4);                        // one 128-byte row per line
}
// Byte offset of chunk c of row k in the B tile (rows of BN*2 bytes, a multiple of 128).
__device__ __forceinline__ u32 b_off(int k, int c) { return k * (BN * 2) + ((c ^ (k & 7)) << 4); }

// ---- The parts both rungs share: where the CTA's tile is, who copies and reads what, the math of
// ---- one k-tile, and the epilogue. Both kernels include ptx/ldmatrix.cuh, ptx/mma.cuh and
// ---- ptx/cvt.cuh before this header.

constexpr int A_ROW_STEP = THREADS / A_CHUNKS_ROW;   // rows between one thread's A chunks
constexpr int B_ROW_STEP = THREADS / B_CHUNKS_ROW;   // rows between one thread's B chunks
static_assert(THREADS % A_CHUNKS_ROW == 0 && THREADS % B_CHUNKS_ROW == 0, "row-aligned loads");
static_assert(A_ROW_STEP % 8 == 0 && B_ROW_STEP % 8 == 0, "row steps must keep the swizzle phase");

// Where this CTA's BM x BN tile of C starts. Grouped raster order: GROUP_M consecutive CTA rows
// share B columns while they are in L2.
__device__ __forceinline__ void cta_origin(int M, int N, int& m0, int& n0) {
  const int tiles_m = M / BM, tiles_n = N / BN;
  const int bid = blockIdx.x;
  const int first_m = bid / (GROUP_M * tiles_n) * GROUP_M;
  const int rows_in_group = min(tiles_m - first_m, GROUP_M);
  m0 = (first_m + (bid % (GROUP_M * tiles_n)) % rows_in_group) * BM;
  n0 = (bid % (GROUP_M * tiles_n)) / rows_in_group * BN;
}

// Per-thread address parts, computed once before the k loop (ptxas may still recompute some inside
// the loop to save registers; in chapter 01's kernel it does so for the ldmatrix addresses). The
// swizzle pattern repeats every 8 rows and every row step is a multiple of 8, so one base offset per
// thread suffices; the rest are compile-time immediates in the instructions.
struct ThreadAddresses {
  const u16* ga;          // this thread's first A chunk of k-tile 0 (then + i * ga_step, + kt * BK)
  const u16* gb;          // this thread's first B chunk of k-tile 0 (then + i * gb_step, + kt * BK * N)
  size_t ga_step, gb_step;
  u32 a_st, b_st;         // where those chunks go in the A / B tile (+ i * ROW_STEP rows)
  u32 a_ld[BK / 16];      // ldmatrix row address in the A tile, per k16 step
  u32 b_ld[NT / 2];       // ldmatrix.trans row address in the B tile, per 16-column pair
};

__device__ __forceinline__ ThreadAddresses thread_addresses(const u16* A, const u16* B, int N, int K,
                                                            int m0, int n0, int wm, int wn) {
  const int tid = threadIdx.x, lane = tid & 31;
  ThreadAddresses t;
  t.ga = A + (size_t)(m0 + tid / A_CHUNKS_ROW) * K + (tid % A_CHUNKS_ROW) * 8;
  t.gb = B + (size_t)(tid / B_CHUNKS_ROW) * N + n0 + (tid % B_CHUNKS_ROW) * 8;
  t.ga_step = (size_t)A_ROW_STEP * K;
  t.gb_step = (size_t)B_ROW_STEP * N;
  t.a_st = a_off(tid / A_CHUNKS_ROW, tid % A_CHUNKS_ROW);
  t.b_st = b_off(tid / B_CHUNKS_ROW, tid % B_CHUNKS_ROW);
#pragma unroll
  for (int ks = 0; ks < BK / 16; ++ks) t.a_ld[ks] = a_off(wm + (lane & 15), ks * 2 + (lane >> 4));
#pragma unroll
  for (int j = 0; j < NT / 2; ++j) {
    const int q = lane >> 3;          // which 8x8 matrix this lane addresses
    t.b_ld[j] = b_off((q & 1) * 8 + (lane & 7), (wn + j * 16) / 8 + (q >> 1));
  }
  return t;
}

__device__ __forceinline__ void zero(float (&acc)[MT][NT][4]) {
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
}

// ldmatrix the warp's fragments of k16 step ks of the k-tile at (as, bs): MT A fragments (rows
// wm + 16i .. +15) and NT B fragments (columns wn + 8j .. +7, via ldmatrix.trans of 16-column pairs).
__device__ __forceinline__ void load_fragments(u32 (&af)[MT][4], u32 (&bf)[NT][2], u32 as, u32 bs,
                                               const ThreadAddresses& t, int ks) {
#pragma unroll
  for (int i = 0; i < MT; ++i) ldmatrix_x4(af[i], as + t.a_ld[ks] + i * 16 * BK * 2);
#pragma unroll
  for (int j = 0; j < NT / 2; ++j) {
    u32 q[4];
    ldmatrix_x4_trans(q, bs + t.b_ld[j] + ks * 16 * BN * 2);
    bf[2 * j][0] = q[0]; bf[2 * j][1] = q[1];
    bf[2 * j + 1][0] = q[2]; bf[2 * j + 1][1] = q[3];
  }
}

// The math of one k-tile held in shared memory at (as, bs): per k16 step, ldmatrix the warp's
// fragments, then MT x NT mma.sync into the accumulators. With kLoad = false the fragments already
// in af/bf are reused (chapter 01's ABLATE diagnostics only).
template <bool kLoad = true>
__device__ __forceinline__ void mma_ktile(float (&acc)[MT][NT][4], u32 (&af)[MT][4], u32 (&bf)[NT][2],
                                          u32 as, u32 bs, const ThreadAddresses& t) {
#pragma unroll
  for (int ks = 0; ks < BK / 16; ++ks) {
    if (kLoad) load_fragments(af, bf, as, bs, t, ks);
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j) mma_sync_m16n8k16<DT>(acc[i][j], af[i], bf[j]);
  }
}

// Epilogue: each thread writes its accumulator pairs (rows g and g+8, columns 2t and 2t+1 of every
// 16x8 tile), converted to the output dtype.
__device__ __forceinline__ void store_c(const float (&acc)[MT][NT][4], void* C, int N, int m0, int n0,
                                        int wm, int wn) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int row = m0 + wm + i * 16 + g, col = n0 + wn + j * 8 + 2 * t4;
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
