// Chapter 04 — one warpgroup, one 64×N tile: D = A·B (+ C) with wgmma, every operand layout.
//
// The experiment isolates the one thing wgmma depends on: the bytes in shared memory and the
// descriptor that says how to read them. The host (asynctc.wgmma) lays out each operand tile
// exactly where its layout model says wgmma will read each element (asynctc.descriptors.OperandTile
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
  const u32 base_addr = raw + pad;
  const int tid = threadIdx.x;

  // 1. Shared memory ← the images (generic proxy), then make them visible to wgmma (async proxy).
  if (!kFromRegs)
    for (u32 i = tid; i < a_bytes / 16; i += 128) reinterpret_cast<uint4*>(base)[i] = a_img[i];
  for (u32 i = tid; i < b_bytes / 16; i += 128)
    reinterpret_cast<uint4*>(base + b_offset)[i] = b_img[i];
  fence_proxy_async_shared_cta();
  __syncthreads();

  // 2. Accumulators: C when given (accumulate from the first step), else ignored (scale-d = 0).
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

  // 3. The wgmmas: fence (registers written above), KSTEPS instructions, commit, wait.
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

  // 4. D out, by the accumulator fragment layout.
#pragma unroll
  for (int i = 0; i < kAcc; ++i) {
    const int row = 16 * warp + g + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * t + (i & 1);
    d_out[row * N + col] = d[i];
  }
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
