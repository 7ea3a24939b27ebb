// The tile shared by chapter 01's and chapter 02's mma.sync GEMMs: compile-time parameters (with
// their defaults), the constants derived from them, and the XOR swizzle of the shared-memory tiles.
// Included after the PTX wrappers by gemm_mma_sync.cu and gemm_cp_async.cu, so the two rungs of
// the ladder differ only in how a k-tile reaches shared memory.
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
