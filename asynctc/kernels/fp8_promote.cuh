// Chapter 07's FP8 GEMM on chapter 06's kernel (warp_specialization.cu): the fp8 rules, the
// promotion of the Tensor Core's sums into fp32 registers (PROMOTE) and the per-block scales
// (BLOCK_SCALES). Compile-time switches: with DT < 2 (16-bit inputs) and PROMOTE = 0 nothing here
// emits code, so the 16-bit builds stay byte for byte. Included by warp_specialization.cu after
// wgmma_ring.cuh (fence_accumulators) and its tile constants (kAtoms, kAcc). asynctc.fp8 builds,
// checks and times these variants; asynctc.warp_specialization.WSConfig validates the fields.
//
// FP8 (DT = 2 e4m3, 3 e5m2; PTX ISA "wgmma.mma_async", m64nNk32 .f32.e4m3.e4m3 / .f32.e5m2.e5m2):
// a k-tile row is still one 128-byte swizzle row — 128 fp8 elements — so the stages, boxes,
// descriptors and k-step offsets (32 bytes per wgmma) are byte for byte those of the 16-bit
// kernel; only the instruction and the element count per row change. fp8 wgmma has no transpose:
// A and B must both be K-major. PROMOTE = P > 0: every P k-tiles (and after the last) the consumer
// waits for its wgmmas (wait_group 0), adds the wgmma accumulators into a second set of fp32
// registers and zeroes them, so the Tensor Core's reduced-precision accumulation never runs over
// more than P · BK products; the second set doubles the accumulator registers.
//
// Per-block scales (BLOCK_SCALES = 1; fp8, PROMOTE = 1, BN ≤ 128, EDGES = 0): A carries one fp32
// dequantisation scale per 1×128 row segment, sa (M × T, row-major, T = K / 128), B (stored N×K)
// one per 128×128 block, sb (ceil(N / 128) × T): C[r, c] = Σ_kt sa[r, kt] · sb[c / 128, kt] ·
// (A·Bᵀ over k-tile kt). A k-tile is BK = 128 fp8 elements — exactly one block along K — so the
// scales change only where the wgmma sums of one k-tile are promoted: with PROMOTE = 1 the
// consumer adds acc · (sa · sb) into the fp32 totals (one fma per accumulator), never scaling
// inside the Tensor Core's sum. Which rows a thread needs follows the wgmma accumulator fragment
// (PTX ISA "wgmma.mma_async", "Register fragments: matrix D", m64nNk32 .f32): in atom i, warp w
// of the warpgroup, lane l holds rows 64i + 16w + l/4 and that + 8 (accumulator pairs j with
// (j / 2) mod 2 = 0 and 1), every column of the tile — so 2 · kAtoms A scales and one B scale
// (the tile's n-block, n0 / 128: BN ≤ 128 keeps a tile inside one block) per thread per k-tile,
// loaded from global memory at the top of the k-tile so the loads overlap the barrier wait and
// the wgmmas. The per-tensor `scales` argument is then null (asynctc refuses both at once).
#pragma once

#ifndef PROMOTE
#define PROMOTE 0
#endif
#ifndef BLOCK_SCALES
#define BLOCK_SCALES 0
#endif

static_assert(DT < 2 || B_MAJOR == 0, "fp8 wgmma has no transpose: B must be K-major");
static_assert(PROMOTE >= 0 && (PROMOTE == 0 || DT >= 2), "PROMOTE: fp8 only, k-tiles ≥ 0");
static_assert(BLOCK_SCALES == 0 || (DT >= 2 && PROMOTE == 1 && BN <= 128 && EDGES == 0),
              "BLOCK_SCALES: fp8, PROMOTE = 1 (scales change every k-tile), BN ≤ 128 (one n-block "
              "per tile), EDGES = 0");
static_assert(PROMOTE == 0 || 2 * kAtoms * kAcc <= 128,
              "PROMOTE keeps a second fp32 set: both together within the 128-register budget");

// PROMOTE > 0: zero the fp32 totals at the start of a tile (else nothing).
__device__ __forceinline__ void clear_totals(float (&tot)[kAtoms][kAcc]) {
  if constexpr (PROMOTE > 0) {
#pragma unroll
    for (int i = 0; i < kAtoms; ++i)
#pragma unroll
      for (int j = 0; j < kAcc; ++j) tot[i][j] = 0.f;
  }
}

#if BLOCK_SCALES
// This k-tile's scale products for the thread's 2 · kAtoms rows (see the header): row0 is the
// consumer warpgroup's first C row, n0 the tile's first column, k the k-tile, T the k-tiles.
__device__ __forceinline__ void load_block_scales(float (&bs)[kAtoms][2], const float* sa,
                                                  const float* sb, int row0, int n0, int k, int T) {
  const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) & 3;
  const float sbk = sb[(size_t)(n0 / 128) * T + k];
  const int r0 = row0 + 16 * w + (lane >> 2);
#pragma unroll
  for (int i = 0; i < kAtoms; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) bs[i][h] = sa[(size_t)(r0 + 64 * i + 8 * h) * T + k] * sbk;
}
#endif

// PROMOTE = P > 0: after k-tile k's wgmmas were issued, every P k-tiles (and after the last, T − 1)
// wait for them (wait_group 0), add the accumulators into the fp32 totals (scaled by bs with
// BLOCK_SCALES) and zero them. Else nothing.
__device__ __forceinline__ void promote(float (&acc)[kAtoms][kAcc], float (&tot)[kAtoms][kAcc],
                                        const float (&bs)[kAtoms][2], int k, int T) {
  if constexpr (PROMOTE > 0) {                             // promotion into fp32 registers
    if ((k + 1) % (PROMOTE > 0 ? PROMOTE : 1) == 0 || k + 1 == T) {
      wgmma_wait_group<0>();                               // k-tile k is complete
      fence_accumulators(acc);
#pragma unroll
      for (int i = 0; i < kAtoms; ++i)
#pragma unroll
        for (int j = 0; j < kAcc; ++j) {
          if constexpr (BLOCK_SCALES)
            tot[i][j] = __fmaf_rn(acc[i][j], bs[i][(j >> 1) & 1], tot[i][j]);
          else
            tot[i][j] += acc[i][j];
          acc[i][j] = 0.f;
        }
      fence_accumulators(acc);
    }
  }
}

// fp8 (DT ≥ 2) with per-tensor scales: multiply the tile's results by scale_a · scale_b
// (`scales` null: unscaled). 16-bit inputs: nothing.
__device__ __forceinline__ void apply_tensor_scales(float (&res)[kAtoms][kAcc],
                                                    const float* scales) {
  if constexpr (DT >= 2) {                                 // per-tensor scales, fp32
    if (scales) {
      const float s = scales[0] * scales[1];
#pragma unroll
      for (int i = 0; i < kAtoms; ++i)
#pragma unroll
        for (int j = 0; j < kAcc; ++j) res[i][j] *= s;
    }
  }
}
