// Chapter 04 — one warpgroup, one 64×N tile: D = A·B (+ C) with wgmma, every operand layout.
//
// The experiment isolates the one thing wgmma depends on: the bytes in shared memory and the
// descriptor that says how to read them. The host (asynctc.wgmma) lays out each operand tile
// exactly where its layout model says wgmma will read each element (asynctc.models.descriptors.OperandTile
// .image) and encodes one descriptor per k-step; this kernel copies those images into shared memory
// unchanged (16-byte chunks, so any swizzle survives), makes them visible to the async proxy, and
// runs the wgmmas. A wrong model or descriptor gives a wrong D — which is what the mismatch mode
// below shows on purpose.
//
//   A: 64×K (K = KSTEPS × 16 for f16/bf16, × 32 for fp8), from shared memory (SS) or registers (RS)
//   B: K×N from shared memory;  D: 64×N fp32, row-major in global memory.
//
// Entry points (TA/TB: 0 = K-major, 1 = MN-major; fp8 has only the K-major ones):
//   wgmma_tile_ss_kk, _ss_km, _ss_mk, _ss_mm   A and B from shared memory
//   wgmma_tile_rs_k,  _rs_m                    A from registers, B K- or N-major
//   wgmma_tile_tma_kk, _tma_km, _tma_mk, _tma_mm  the same SS wgmmas, operands loaded by TMA boxes
//                                              (see the TMA entry points at the end)
// Arguments: a_img/b_img (16-byte aligned images, a_bytes/b_bytes multiples of 16), b_offset (byte
// offset of B's image from the 1024-aligned shared-memory base; A's is 0), descs (2·KSTEPS u64:
// A's and B's descriptor for each k-step, start addresses relative to that base), a_rm (row-major
// 64×K A, read for RS only), c_in (64×N fp32 or null: D = A·B + C when given), d_out (64×N fp32).
// Dynamic shared memory: 1024 (alignment slack) + b_offset + b_bytes.
//
// Defines: DT (0 f16, 1 bf16, 2 e4m3, 3 e5m2), N (8..256), KSTEPS (1..8),
//          MISMATCH_LAYOUT (-1 off; 0..3 = force this swizzle-mode field into every descriptor —
//          the deliberate descriptor/layout mismatch of the chapter; only asynctc.wgmma.mismatch_demo
//          compiles it).

#include "ptx/common.cuh"
#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
// ptx/tma.cuh names a template parameter N, which the -DN define of this file would replace (and
// NVRTC has no push_macro): keep the value in a constant, include, and let N name the constant.
#ifndef N
#define N 64
#endif
constexpr int kTileN = N;
#undef N
#include "ptx/tma.cuh"
#define N kTileN
#include "ptx/wgmma.cuh"

#ifndef DT
#define DT 0
#endif
#ifndef N
#define N 64
#endif
#ifndef KSTEPS
#define KSTEPS 4
#endif
#ifndef MISMATCH_LAYOUT
#define MISMATCH_LAYOUT -1
#endif

constexpr int kElemBytes = DT < 2 ? 2 : 1;
constexpr int kInstK = DT < 2 ? 16 : 32;  // m64nNk16 / m64nNk32: 32 bytes of K per instruction
constexpr int kK = KSTEPS * kInstK;
constexpr int kAcc = N / 2;               // fp32 accumulators per thread
static_assert(KSTEPS >= 1 && KSTEPS <= 8, "KSTEPS: 1..8");

__device__ __forceinline__ u64 mismatch(u64 desc) {
#if MISMATCH_LAYOUT >= 0
  return (desc & ~(3ull << 62)) | ((u64)MISMATCH_LAYOUT << 62);
#else
  return desc;
#endif
}

// Register fragment of A for k-step s (ptx/wgmma.cuh): four b32, each 2 (16-bit) or 4 (8-bit)
// consecutive K elements of one row, read straight from the row-major 64×K matrix.
__device__ __forceinline__ void load_a_fragment(u32 (&a)[4], const unsigned char* a_rm, int s) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int row = 16 * warp + g + 8 * (r & 1);
    const int k = s * kInstK + (kElemBytes == 2 ? 2 * t + 8 * (r >> 1) : 4 * t + 16 * (r >> 1));
    a[r] = *reinterpret_cast<const u32*>(a_rm + ((size_t)row * kK + k) * kElemBytes);
  }
}

// The wgmma part, shared by both ways of filling shared memory: fragments of A (for RS), C or
// nothing into the accumulators, KSTEPS wgmmas, commit, wait, D out by the fragment layout.
template <int kTransA, int kTransB, int kFromRegs>
__device__ __forceinline__ void mma_and_store(u32 base_addr, const u64* __restrict__ descs,
                                              const unsigned char* __restrict__ a_rm,
                                              const float* __restrict__ c_in,
                                              float* __restrict__ d_out) {
  const int tid = threadIdx.x;
  const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  float d[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) {
    const int row = 16 * warp + g + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * t + (i & 1);
    d[i] = c_in ? c_in[row * N + col] : 0.f;
  }
  u32 a[KSTEPS][4];
  if (kFromRegs) {
#pragma unroll
    for (int s = 0; s < KSTEPS; ++s) load_a_fragment(a[s], a_rm, s);
  }

  // fence (the registers were written above), KSTEPS instructions, commit, wait.
  wgmma_fence_operand(d);
  wgmma_fence();
#pragma unroll
  for (int s = 0; s < KSTEPS; ++s) {
    const u64 db = mismatch(descs[2 * s + 1] + (base_addr >> 4));
    const int scale_d = (s > 0 || c_in != nullptr) ? 1 : 0;
    if constexpr (kFromRegs) {
      wgmma_mma_async_rs<N, DT, kTransB>(d, a[s], db, scale_d);
    } else {
      const u64 da = mismatch(descs[2 * s] + (base_addr >> 4));
      wgmma_mma_async_ss<N, DT, kTransA, kTransB>(d, da, db, scale_d);
    }
  }
  wgmma_commit_group();
  wgmma_wait_group<0>();
  wgmma_fence_operand(d);

#pragma unroll
  for (int i = 0; i < kAcc; ++i) {
    const int row = 16 * warp + g + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * t + (i & 1);
    d_out[row * N + col] = d[i];
  }
}

// The images arrive in shared memory as plain 16-byte copies (generic proxy), then a proxy fence.
template <int kTransA, int kTransB, int kFromRegs>
__device__ __forceinline__ void tile_body(const uint4* __restrict__ a_img, u32 a_bytes,
                                          const uint4* __restrict__ b_img, u32 b_bytes, u32 b_offset,
                                          const u64* __restrict__ descs,
                                          const unsigned char* __restrict__ a_rm,
                                          const float* __restrict__ c_in, float* __restrict__ d_out) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const u32 raw = smem_u32(smem_raw);
  const u32 pad = ((raw + 1023u) & ~1023u) - raw;  // the images assume a 1024-aligned base
  unsigned char* base = smem_raw + pad;
  const int tid = threadIdx.x;
  if (!kFromRegs)
    for (u32 i = tid; i < a_bytes / 16; i += 128) reinterpret_cast<uint4*>(base)[i] = a_img[i];
  for (u32 i = tid; i < b_bytes / 16; i += 128)
    reinterpret_cast<uint4*>(base + b_offset)[i] = b_img[i];
  fence_proxy_async_shared_cta();  // generic-proxy writes -> visible to wgmma (async proxy)
  __syncthreads();
  mma_and_store<kTransA, kTransB, kFromRegs>(raw + pad, descs, a_rm, c_in, d_out);
}

// TMA variant: the operands arrive as TMA boxes (box j of an operand at base + j·box_pitch, taken
// from global coordinates (j·box_cols, 0)); one mbarrier with expect_tx = all box bytes; every thread
// waits (bounded: a timeout writes *err and leaves instead of hanging). TMA writes and wgmma reads
// both go through the async proxy, so the barrier wait is all the ordering needed.
template <int kTransA, int kTransB>
__device__ __forceinline__ void tile_body_tma(const TmaDesc& ta, const TmaDesc& tb,
                                              const u32* __restrict__ geo, u32 b_offset,
                                              const u64* __restrict__ descs,
                                              const float* __restrict__ c_in,
                                              float* __restrict__ d_out, u32* __restrict__ err) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ alignas(8) u64 bar_storage;
  const u32 raw = smem_u32(smem_raw);
  const u32 base_addr = (raw + 1023u) & ~1023u;
  const u32 bar = smem_u32(&bar_storage);
  // geo: a_boxes, a_box_cols, a_box_pitch, a_box_bytes, b_boxes, b_box_cols, b_box_pitch, b_box_bytes
  if (threadIdx.x == 0) {
    mbarrier_init(bar, 1);
    fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(bar, geo[0] * geo[3] + geo[4] * geo[7]);
    for (u32 j = 0; j < geo[0]; ++j) tma_load_2d(base_addr + j * geo[2], ta, bar, j * geo[1], 0);
    for (u32 j = 0; j < geo[4]; ++j)
      tma_load_2d(base_addr + b_offset + j * geo[6], tb, bar, j * geo[5], 0);
  }
  if (!mbarrier_wait_parity_bounded(bar, 0, 1u << 22, err, 1)) return;
  mma_and_store<kTransA, kTransB, 0>(base_addr, descs, nullptr, c_in, d_out);
}

#define WGMMA_TILE_ENTRY(NAME, TA, TB, REGS)                                                      \
  extern "C" __global__ void __launch_bounds__(128, 1)                                            \
      NAME(const uint4* a_img, u32 a_bytes, const uint4* b_img, u32 b_bytes, u32 b_offset,        \
           const u64* descs, const unsigned char* a_rm, const float* c_in, float* d_out) {        \
    tile_body<TA, TB, REGS>(a_img, a_bytes, b_img, b_bytes, b_offset, descs, a_rm, c_in, d_out); \
  }

WGMMA_TILE_ENTRY(wgmma_tile_ss_kk, 0, 0, 0)
WGMMA_TILE_ENTRY(wgmma_tile_rs_k, 0, 0, 1)
#if DT < 2
WGMMA_TILE_ENTRY(wgmma_tile_ss_km, 0, 1, 0)
WGMMA_TILE_ENTRY(wgmma_tile_ss_mk, 1, 0, 0)
WGMMA_TILE_ENTRY(wgmma_tile_ss_mm, 1, 1, 0)
WGMMA_TILE_ENTRY(wgmma_tile_rs_m, 0, 1, 1)
#endif

// TMA-fed entry points (A and B both through TMA, SS only): ta/tb are the tensor maps of A and B in
// global memory (A: 64×K row-major when K-major, K×64 when M-major; B: N×K when K-major, K×N when
// N-major), geo the 8 box numbers above, err one u32 (0 = ok).
#define WGMMA_TILE_TMA_ENTRY(NAME, TA, TB)                                                        \
  extern "C" __global__ void __launch_bounds__(128, 1)                                            \
      NAME(const __grid_constant__ TmaDesc ta, const __grid_constant__ TmaDesc tb,                \
           const u32* geo, u32 b_offset, const u64* descs, const float* c_in, float* d_out,       \
           u32* err) {                                                                            \
    tile_body_tma<TA, TB>(ta, tb, geo, b_offset, descs, c_in, d_out, err);                        \
  }

WGMMA_TILE_TMA_ENTRY(wgmma_tile_tma_kk, 0, 0)
#if DT < 2
WGMMA_TILE_TMA_ENTRY(wgmma_tile_tma_km, 0, 1)
WGMMA_TILE_TMA_ENTRY(wgmma_tile_tma_mk, 1, 0)
WGMMA_TILE_TMA_ENTRY(wgmma_tile_tma_mm, 1, 1)
#endif
