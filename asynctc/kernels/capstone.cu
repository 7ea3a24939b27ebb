// Chapter 06's capstone ch06.whole_kloop, compiled: the learner's loops (both roles of a persistent,
// warp-specialized CTA, asynctc/warp_specialization/whole_kloop.py) become the body of a real
// sm_90a GEMM kernel. C (M×N fp32) = A (M×K fp16) · B (K×N, stored N×K: K-major), fp32 accumulation.
//
// The CTA: 3 warpgroups, 384 threads. Warpgroup 0 is the producer, warpgroups 1 and 2 the consumers,
// each computing 64 rows × 128 columns of the CTA's 128 × 128 tile with wgmma m64n128k16. A ring of
// STAGES stages, each an A box (128 rows × 64 fp16 = 128 × 128 bytes) and a B box (the same), kStageBytes
// = 32768, guarded by full[s] (arrive count 1: the producer's arrive.expect_tx + TMA's complete_tx) and
// empty[s] (arrive count 2: one arrival per consumer warpgroup). The stage layout, the 128-byte
// swizzle and the wgmma descriptor templates are chapter 05's and 06's (ring_defaults.cuh, the
// host's WSConfig(bm=128, bn=128).descriptor_templates()); mma_ktile and the register epilogue are
// wgmma_ring.cuh's. Persistent: the grid is at most the tile count; CTA b takes tiles b,
// b + gridDim.x, ... (row-major over the tile grid), TILES of them.
//
// The exercise's names, as the kernel defines them before the learner's text (whole_kloop's prompt):
//   wg            this thread's warpgroup: 0 the producer, 1 and 2 the consumers;
//   TILES, T      this CTA's tiles and the k-tiles of a tile (K / 64); STAGES; kStageBytes;
//   full, empty   the ring's barriers (CapBarriers): .wait(stage, parity) is bounded (below);
//                 .arrive(stage) and .arrive_expect_tx(stage, bytes) are made by one elected thread
//                 of the warpgroup (thread 0 of it), as the course's kernels do them;
//   tma_load(stage, tile, k)   the elected thread issues the two TMA loads of k-tile k of this CTA's
//                 tile number `tile` (A's box, then B's) into stage `stage`, completing on full[stage];
//   mma_ktile(acc, stage)      the whole warpgroup issues the k-tile's wgmmas (4 k16 steps) on stage
//                 `stage` as one group (wgmma.fence, 4 × wgmma.mma_async, commit_group);
//   wgmma_wait_group<N>()      the whole warpgroup waits until at most N wgmma groups are pending
//                 (ptx/wgmma.cuh, PTX ISA §9.7.15.7.3);
//   store_tile(acc, tile)      the whole warpgroup stores its 64 rows of tile `tile`'s C from
//                 registers, then clears acc for the next tile (acc starts every tile at zero);
//   acc           this consumer warpgroup's accumulators (64 fp32 per thread).
// Every thread of every warpgroup runs the text: the waits are each thread's own acquire (as the
// course's consumers wait), the .sync.aligned wgmma instructions are the warpgroup's, and what one
// thread must do (expect_tx, the TMA loads, the arrives) elects inside. So the text reads as one
// elected thread of each role, which is how the exercise's check reads it.
//
// Bounded waits (ring.cuh's ring_wait_bounded): a wait gives up after ASYNCTC_WAIT_MAX_NS (2 s) or
// at once when another thread has already recorded an error, and records ASYNCTC_ERR_MBARRIER_TIMEOUT
// | tag << 8 in *err, tag = ring_wait_tag(WAIT_FULL / WAIT_EMPTY, stage, warpgroup, n) where n is
// this thread's count of earlier waits on that barrier set (in the course's loops: the ring counter
// j, modulo 4096). After a wait gave up, the thread's later waits return at once and its TMA loads
// and expect_tx are skipped, so a wrong parity ends in an error word, never a hung GPU. Before
// leaving, the producer's elected thread waits (at most 2 s) for the last fill of every stage it
// loaded to land, so no TMA writes into the shared memory of a CTA that has left; the consumers
// wait for their last wgmma group.
//
// Defines: STAGES (2..6; ring_defaults.cuh's other defaults, which must stay BM = BN = 128, BK = 64,
// CONSUMERS = 2, fp16, K-major B, fp32 C), the layout offsets the host passes (A_KSTEP_BYTES,
// B_KSTEP_BYTES, B_BOX_BYTES). No setmaxnreg: every warpgroup runs the same text, so ptxas cannot
// keep the producer's code inside a smaller budget (C7507); 384 threads × 168 registers fit anyway.
// Arguments: ta, tb (tensor maps of A and B, 128 × 64 boxes, 128-byte swizzle), c (M×N fp32), M, N,
// K (multiples of 128, 128, 64), desc_a0, desc_b0 (the descriptor templates of stage 0), err.
// Dynamic shared memory: 1024 (alignment slack) + STAGES · kStageBytes.
//
// The text between the two marker lines below is the course's answer (whole_kloop.SOLUTION; a test
// keeps them equal); asynctc.warp_specialization.capstone_build splices a learner's text in its place
// under #line 1 "your loops" (NVRTC then names the learner's lines), never changing this file.
// The "walk:" marker lines split the file into the blocks of chapter 06 §4's read of the whole kernel
// (asynctc.warp_specialization.capstone_read; the learner's to-here marker opens its last block,
// leaving); the header comment above them is left out there.

// ---- walk: names ----
#include "ptx/common.cuh"
#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"
#include "ring.cuh"
#include "ring_defaults.cuh"

static_assert(BM == 128 && BN == 128 && BK == 64 && CONSUMERS == 2 && DT == 0 && B_MAJOR == 0 &&
              OUT_F32 == 1, "the capstone's tile: 128 x 128 x 64, two consumers, fp16, K-major B, fp32 C");
static_assert(STAGES >= 2 && STAGES <= 6, "STAGES: 2..6");

constexpr int kThreads = 128 * (1 + CONSUMERS);
constexpr int kAtoms = 1;                          // one m64 atom per consumer (64 rows)
constexpr int kAcc = BN / 2;                       // fp32 accumulators per thread
constexpr int kKSteps = 4;                         // k16 steps of a 64-deep k-tile
constexpr u32 kAtomBytes = A_ATOM_BYTES;
constexpr u32 kATileBytes = BM * 128;
constexpr u32 kStageBytes = kATileBytes + BN * 128;
#include "wgmma_ring.cuh"   // fence_accumulators, mma_ktile(acc, desc_a, desc_b), store_c

// The ring's full or empty barriers as the exercise names them (ring.cuh's StageBarriers, plus
// this thread's wait count for the error tag and the elected-thread arrives).
struct CapBarriers {
  u32 base;      // shared address of barrier 0 (barrier s at base + 8 s)
  u32 kind;      // WAIT_FULL or WAIT_EMPTY
  u32* err;
  int wg;        // the warpgroup of this thread (the tag's warpgroup field)
  bool elected;  // thread 0 of the warpgroup: the one that arrives
  bool* gave_up; // this thread gave up a wait: later waits, loads and expect_tx are skipped
  u32 waits;     // this thread's earlier waits on this set (the tag's k-tile field)
  __device__ __forceinline__ u32 operator[](int s) const { return base + 8u * (u32)s; }
  __device__ __forceinline__ bool wait(int stage, u32 parity) {
    const u32 n = waits++;
    if (*gave_up) return false;
    if (!ring_wait_bounded((*this)[stage], parity, err, ring_wait_tag(kind, stage, wg, (int)n)))
      *gave_up = true;
    return !*gave_up;
  }
  __device__ __forceinline__ void arrive(int stage) const {
    if (elected) mbarrier_arrive((*this)[stage]);
  }
  __device__ __forceinline__ void arrive_expect_tx(int stage, u32 bytes) const {
    if (elected && !*gave_up) mbarrier_arrive_expect_tx((*this)[stage], bytes);
  }
};

// ---- walk: set-up ----
extern "C" __global__ void __launch_bounds__(kThreads, 1)
    capstone_gemm(const __grid_constant__ TmaDesc ta, const __grid_constant__ TmaDesc tb,
                  float* __restrict__ c, int M, int N, int K, u64 desc_a0, u64 desc_b0,
                  u32* __restrict__ err) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ alignas(8) u64 full_storage[STAGES];
  __shared__ alignas(8) u64 empty_storage[STAGES];
  const u32 base = (smem_u32(smem_raw) + 1023u) & ~1023u;   // stage s at base + s · kStageBytes
  const int wg = threadIdx.x >> 7;
  const bool elected = (threadIdx.x & 127) == 0;
  const int tiles_n = N / BN, n_tiles = M / BM * tiles_n;
  const int first = blockIdx.x, step = gridDim.x;
  const int TILES = first < n_tiles ? (n_tiles - first + step - 1) / step : 0;
  const int T = K / BK;
  if (threadIdx.x == 0) {
    tma_prefetch_desc(ta);
    tma_prefetch_desc(tb);
    for (int s = 0; s < STAGES; ++s) {
      mbarrier_init(smem_u32(&full_storage[s]), 1);
      mbarrier_init(smem_u32(&empty_storage[s]), CONSUMERS);
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  // ---- walk: calls ----
  bool gave_up = false;
  CapBarriers full{smem_u32(full_storage), WAIT_FULL, err, wg, elected, &gave_up, 0u};
  CapBarriers empty{smem_u32(empty_storage), WAIT_EMPTY, err, wg, elected, &gave_up, 0u};
  u32 loaded = 0, fill_parity = 0;          // producer: stages loaded, parity of their fill counts
  auto origin = [&](int tile, int& m0, int& n0) {          // this CTA's tile `tile` → C's corner
    const int t = first + tile * step;
    m0 = t / tiles_n * BM;
    n0 = t % tiles_n * BN;
  };
  auto tma_load = [&](int stage, int tile, int k) {
    if (!elected || gave_up) return;
    int m0, n0;
    origin(tile, m0, n0);
    const u32 dst = base + (u32)stage * kStageBytes;
    tma_load_2d(dst, ta, full[stage], k * BK, m0);                // A: 128 rows × 64 of K
    tma_load_2d(dst + kATileBytes, tb, full[stage], k * BK, n0);  // B: 128 rows (N) × 64 of K
    loaded |= 1u << stage;
    fill_parity ^= 1u << stage;
  };
  const int cw = wg > 0 ? wg - 1 : 0;                        // consumer index
  const u64 da0 = wgmma_desc_at(desc_a0, base + cw * kAtoms * kAtomBytes);
  const u64 db0 = wgmma_desc_at(desc_b0, base + kATileBytes);
  float acc[kAtoms][kAcc];
#pragma unroll
  for (int j = 0; j < kAcc; ++j) acc[0][j] = 0.f;
  auto mma_ktile = [&](float (&a)[kAtoms][kAcc], int stage) {
    fence_accumulators(a);
    ::mma_ktile(a, wgmma_desc_advance(da0, stage * kStageBytes),
                wgmma_desc_advance(db0, stage * kStageBytes));
  };
  // ---- walk: epilogue ----
  auto store_tile = [&](float (&a)[kAtoms][kAcc], int tile) {
    fence_accumulators(a);
    int m0, n0;
    origin(tile, m0, n0);
    store_c(a, c, N, m0 + cw * 64, n0);
#pragma unroll
    for (int j = 0; j < kAcc; ++j) a[0][j] = 0.f;
  };
  (void)M;
  {
    // ---- the learner's loops: from here ----
// tile 2's first k-tile: stage 0, consumers' full parity 1   (ring counter 6: 6 mod 2, 6 // 2 mod 2)
int stage = 0, phase = 0;                // the ring position: set once, before the tile loop
if (wg == 0) {                           // the producer warpgroup
  for (int tile = 0; tile < TILES; ++tile) {
    for (int k = 0; k < T; ++k) {
      empty.wait(stage, phase ^ 1);      // (f + 1) mod 2: the stage's last fill was released
      full.arrive_expect_tx(stage, kStageBytes);
      tma_load(stage, tile, k);          // A's box and B's box; they land on full[stage]
      if (++stage == STAGES) { stage = 0; phase ^= 1; }
    }
  }
} else {                                 // consumer warpgroups 1 and 2
  for (int tile = 0; tile < TILES; ++tile) {
    for (int k = 0; k < T; ++k) {
      full.wait(stage, phase);           // f mod 2: the TMA's bytes have landed
      mma_ktile(acc, stage);
      wgmma_wait_group<0>();             // the wgmmas are done reading the stage
      empty.arrive(stage);
      if (++stage == STAGES) { stage = 0; phase ^= 1; }
    }
    store_tile(acc, tile);
  }
}
    // ---- the learner's loops: to here ----
  }
  if (wg > 0) {
    wgmma_wait_group<0>();                                   // no wgmma in flight at exit
  } else if (elected) {
    // Drain: the last fill of each loaded stage has landed (its phase, parity of fills − 1). Only
    // the time bounds it (err null: another thread's error does not cut it short, so the loads
    // issued land before the CTA leaves); a timeout is recorded with k-tile field 0xFFF.
    for (int s = 0; s < STAGES; ++s)
      if ((loaded >> s & 1u) && !ring_wait_bounded(full[s], ((fill_parity >> s) & 1u) ^ 1u, nullptr, 0u))
        atomicCAS(err, ASYNCTC_ERR_NONE,
                  ASYNCTC_ERR_MBARRIER_TIMEOUT | (ring_wait_tag(WAIT_FULL, s, 0, 0xFFF) << 8));
  }
}
