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
// stores after the first k-tile (every k-tile multiplies k-tile 0 in buffer 0), 2 = no ldmatrix
// after the first k16 step (its fragments are reused), 3 = both (only the mma.sync and the
// __syncthreads remain). Requirements, checked in Python
// (asynctc.mma_sync): M % BM == 0, N % BN == 0, K % BK == 0, BK in {32, 64}, WM % 16 == 0, WN % 16 == 0.

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

  int m0, n0;
  cta_origin(M, N, m0, n0);
  const int warp = threadIdx.x >> 5;
  const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
  const ThreadAddresses t = thread_addresses(A, B, N, K, m0, n0, wm, wn);

  float acc[MT][NT][4];                // the warp's 16x8 fp32 accumulator tiles
  zero(acc);

  uint4 ra[A_LOADS], rb[B_LOADS];     // one k-tile in flight, in registers
  auto load_global = [&](int kt) {    // global -> registers (16-byte loads)
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) ra[i] = *reinterpret_cast<const uint4*>(t.ga + i * t.ga_step + kt * BK);
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i)
      rb[i] = *reinterpret_cast<const uint4*>(t.gb + i * t.gb_step + (size_t)kt * BK * N);
  };
  auto store_shared = [&](int buf) {  // registers -> shared memory (swizzled)
    unsigned char* as = As + buf * A_TILE_BYTES;
    unsigned char* bs = Bs + buf * B_TILE_BYTES;
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) *reinterpret_cast<uint4*>(as + t.a_st + i * A_ROW_STEP * BK * 2) = ra[i];
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) *reinterpret_cast<uint4*>(bs + t.b_st + i * B_ROW_STEP * BN * 2) = rb[i];
  };

  const int KT = K / BK;
  load_global(0);
  store_shared(0);
  __syncthreads();

  u32 af[MT][4], bf[NT][2];           // the fragments of one k16 step
  if (ABLATE & 2) load_fragments(af, bf, smem_u32(As), smem_u32(Bs), t, 0);   // (diagnostic: once)
  for (int kt = 0; kt < KT; ++kt) {
    const int buf = (ABLATE & 1) ? 0 : kt & 1;   // (ABLATE & 1: buffer 0 is never refilled)
    const bool refill = !(ABLATE & 1) && kt + 1 < KT;
    if (refill) load_global(kt + 1);    // issued now, consumed after the math below
    const u32 as = smem_u32(As + buf * A_TILE_BYTES), bs = smem_u32(Bs + buf * B_TILE_BYTES);
    mma_ktile<!(ABLATE & 2)>(acc, af, bf, as, bs, t);   // ldmatrix + mma.sync, BK/16 k16 steps
    if (refill) store_shared(buf ^ 1);  // the other buffer: last read before the previous barrier
    __syncthreads();
  }

  store_c(acc, C, N, m0, n0, wm, wn);
}
