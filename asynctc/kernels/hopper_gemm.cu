// The whole Hopper GEMM of chapter 06 in one file: rung 3's design, with no experiment switches.
//
//   C (M×N, fp16) = A (M×K, K-major) · B (stored N×K, K-major), fp32 accumulation.
//   bf16 instead of fp16 (inputs and C): compile with -DDT=1.
//
// One CTA computes one 128×256 tile of C (a non-persistent grid of M/128 · N/256 CTAs), walking K
// in k-tiles of 64. It has three warpgroups (384 threads):
//   warpgroup 0      the producer: one elected thread issues every TMA load; it keeps 40 registers.
//   warpgroups 1, 2  the consumers: each computes 64 rows × 256 columns with wgmma, 232 registers.
// They meet in a ring of 4 shared-memory stages, each guarded by two mbarriers:
//   full[s]   the producer's arrive.expect_tx + TMA's complete_tx: the stage's bytes landed;
//   empty[s]  one arrival per consumer warpgroup: the stage was read and may be refilled.
// Host side (asynctc.warp_specialization.whole): M, N multiples of 128 and 256, K of 64; tensor
// maps of A (box 128×64) and B (box 256×64), 128-byte swizzle; dynamic shared memory kSmemBytes.
// Every wait is bounded: a broken protocol ends with an error word in *err, never a hung GPU.

#include "ptx/common.cuh"
#include "ptx/cvt.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/setmaxnreg.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"

#ifndef DT
#define DT 0   // 0 fp16, 1 bf16
#endif

constexpr int BM = 128, BN = 256, BK = 64;   // the CTA tile; BK: one 128-byte row of K
constexpr int STAGES = 4;                    // shared-memory stages of the ring
constexpr int CONSUMERS = 2;                 // consumer warpgroups, 64 rows of the tile each
constexpr int kThreads = 128 * (1 + CONSUMERS);
constexpr u32 kATileBytes = BM * BK * 2;     // 16 KiB of A per stage
constexpr u32 kStageBytes = kATileBytes + BN * BK * 2;   // + 32 KiB of B = 48 KiB
constexpr int kAcc = BN / 2;                 // fp32 accumulators per thread (64×256 / 128)
constexpr int kKSteps = BK / 16;             // wgmma k16 steps per k-tile, 32 bytes of K each
constexpr int kSmemBytes = 1024 + STAGES * kStageBytes;  // + slack to align the ring to 1024
static_assert(DT == 0 || DT == 1, "DT: 0 fp16, 1 bf16");
static_assert(kSmemBytes <= 227 * 1024, "the ring fits the SM's 227 KiB of shared memory per CTA");

// ── chapter 03: a bounded mbarrier wait ──────────────────────────────────────────────────────
// Wait until the phase with `parity` of barrier `bar` has completed. Give up after
// ASYNCTC_WAIT_MAX_NS (2 s), or at once when another thread already gave up; the first to give up
// records 1 | tag << 8 in *err (tag: barrier 1 full / 2 empty, stage, warpgroup, k-tile).
__device__ __forceinline__ bool wait_bounded(u32 bar, u32 parity, u32* err, u32 tag) {
  if (mbarrier_try_wait_parity(bar, parity)) return true;   // the usual case: one try
  const u64 t0 = globaltimer();
  for (u32 i = 1;; ++i) {
    if (mbarrier_try_wait_parity(bar, parity)) return true;
    if ((i & 63) == 0 && (*reinterpret_cast<volatile u32*>(err) != ASYNCTC_ERR_NONE ||
                          globaltimer() - t0 > ASYNCTC_WAIT_MAX_NS)) break;
  }
  atomicCAS(err, ASYNCTC_ERR_NONE, ASYNCTC_ERR_MBARRIER_TIMEOUT | (tag << 8));
  return false;
}
__device__ __forceinline__ u32 wait_tag(u32 barrier, int stage, int warpgroup, int k) {
  return barrier | ((u32)stage << 4) | ((u32)warpgroup << 8) | (((u32)k & 0xFFFu) << 12);
}

// ── chapter 04: the wgmma shared-memory descriptor of a K-major tile, 128-byte swizzle ───────
// Bits 0-13 start address / 16, 16-29 LBO / 16 (unused with this swizzle: 1), 32-45 SBO / 16
// (1024 bytes from one 8-row group to the next), 62-63 layout type (1 = 128-byte swizzle).
__device__ __forceinline__ u64 smem_desc(u32 addr) {
  return (1ull << 62) | ((u64)(1024 >> 4) << 32) | ((u64)(16 >> 4) << 16) | smem_desc_addr(addr);
}

extern "C" __global__ void __launch_bounds__(kThreads, 1)   // ptxas needs it to honour setmaxnreg
    hopper_gemm(const __grid_constant__ TmaDesc ta, const __grid_constant__ TmaDesc tb,
                u16* __restrict__ c, int M, int N, int K, u32* __restrict__ err) {
  // ── chapter 05: the shared-memory layout ───────────────────────────────────────────────────
  // Stage s at base + s · 48 KiB: A's 128 rows × 128 bytes, then B's 256 rows × 128 bytes, each
  // row swizzled by TMA. Stages start on 1024 bytes, the 128-byte swizzle's repeat.
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ alignas(8) u64 full_bar[STAGES], empty_bar[STAGES];
  const u32 base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const u32 full0 = smem_u32(full_bar), empty0 = smem_u32(empty_bar);   // barrier s at + 8 s

  // ── chapter 06: which tile this CTA computes ───────────────────────────────────────────────
  // Groups of 8 tile rows walked column by column, so CTAs running at once share tiles in L2.
  const int tiles_m = M / BM, tiles_n = N / BN, T = K / BK;   // T: k-tiles
  const int per_group = 8 * tiles_n, first_m = blockIdx.x / per_group * 8;
  const int rows = min(tiles_m - first_m, 8), in_group = blockIdx.x % per_group;
  const int m0 = (first_m + in_group % rows) * BM, n0 = in_group / rows * BN;

  // ── chapter 03: barriers initialised by one thread, made visible to TMA, before any use ────
  if (threadIdx.x == 0) {
    tma_prefetch_desc(ta);
    tma_prefetch_desc(tb);
    for (int s = 0; s < STAGES; ++s) {
      mbarrier_init(full0 + 8 * s, 1);             // the producer's one arrive.expect_tx
      mbarrier_init(empty0 + 8 * s, CONSUMERS);    // one arrival per consumer warpgroup
    }
    fence_mbarrier_init();
  }
  __syncthreads();
  const int wg = threadIdx.x / 128;   // 0 producer, 1 and 2 consumers

  if (wg == 0) {
    // ── chapter 06: the producer warpgroup gives registers back (the whole warpgroup executes it)
    setmaxnreg_dec<40>();
    if (threadIdx.x != 0) return;     // 127 threads leave; one thread issues every TMA load
    // ── chapter 05: the producer's loop (you wrote one step of it in ch05.producer_step) ─────
    // The ring position: stage = k mod 4, phase = (k / 4) mod 2, kept without a division.
    int stage = 0;
    u32 phase = 0;
    for (int k = 0; k < T; ++k) {
      // Wait until the consumers released this stage's previous fill. On the first pass, parity 1
      // of a fresh barrier counts as complete, so the wait passes at once.
      if (!wait_bounded(empty0 + 8 * stage, phase ^ 1u, err, wait_tag(2, stage, 0, k))) return;
      // ── chapter 03: fill one stage (you wrote this in ch03.stage_fill): announce the bytes the
      // full barrier must see, then two TMA loads that complete on it.
      const u32 full = full0 + 8 * stage, dst = base + stage * kStageBytes;
      mbarrier_arrive_expect_tx(full, kStageBytes);
      tma_load_2d(dst, ta, full, k * BK, m0);                 // A: rows m0.., K from k · 64
      tma_load_2d(dst + kATileBytes, tb, full, k * BK, n0);   // B: rows n0.. (B stored N×K)
      if (++stage == STAGES) {
        stage = 0;
        phase ^= 1u;
      }
    }
    return;
  }

  // ── chapter 06: a consumer warpgroup takes the registers the producer gave back ────────────
  setmaxnreg_inc<232>();
  const int cw = wg - 1;                          // consumer 0 or 1: rows 64 cw .. of the tile
  const bool elected = (threadIdx.x & 127) == 0;  // the thread that releases stages
  const u64 da0 = smem_desc(base + cw * 64 * 128);   // stage 0: this consumer's 64 rows of A
  const u64 db0 = smem_desc(base + kATileBytes);     // stage 0: all 256 rows of B
  float acc[kAcc];
#pragma unroll
  for (int j = 0; j < kAcc; ++j) acc[j] = 0.f;

  // ── chapter 06: the consumers' loop (you wrote it in ch06.whole_kloop, exercise 1) ─────────
  int stage = 0, prev = 0;
  u32 phase = 0;
  bool ok = true;                                 // false once a wait gave up: skip later waits
  for (int k = 0; k < T; ++k) {
    if (ok && !wait_bounded(full0 + 8 * stage, phase, err, wait_tag(1, stage, wg, k))) ok = false;
    // ── chapter 04: one k-tile of wgmma, the descriptors advanced 32 bytes per k-step (you wrote
    // that in ch04.kstep), issued as one group.
    wgmma_fence_operand(acc);
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < kKSteps; ++s)
      wgmma_mma_async_ss<BN, DT, 0, 0>(acc, wgmma_desc_advance(da0, stage * kStageBytes + 32 * s),
                                       wgmma_desc_advance(db0, stage * kStageBytes + 32 * s), 1);
    wgmma_commit_group();
    // At most one group pending: k-tile k − 1's wgmmas are done, so its stage may be refilled.
    wgmma_wait_group<1>();
    wgmma_fence_operand(acc);
    if (k > 0 && elected) mbarrier_arrive(empty0 + 8 * prev);
    prev = stage;
    if (++stage == STAGES) {
      stage = 0;
      phase ^= 1u;
    }
  }
  wgmma_wait_group<0>();                          // the last k-tile's wgmmas
  wgmma_fence_operand(acc);
  if (elected) mbarrier_arrive(empty0 + 8 * prev);
  __syncwarp();

  // ── chapter 04: the epilogue, registers → global C ─────────────────────────────────────────
  // Accumulator pair (j, j + 1) of lane (g = lane / 4, t = lane % 4) of warp w holds row
  // 16 w + g + 8 ((j / 2) mod 2) and columns 8 (j / 4) + 2 t, + 1 of this consumer's 64×256 block.
  const int w = (threadIdx.x >> 5) & 3, g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
#pragma unroll
  for (int j = 0; j < kAcc; j += 2) {
    const int row = m0 + 64 * cw + 16 * w + g + 8 * ((j >> 1) & 1), col = n0 + 8 * (j >> 2) + 2 * t;
    *reinterpret_cast<u32*>(c + (size_t)row * N + col) = cvt_rn_x2_f32<DT>(acc[j], acc[j + 1]);
  }
}
