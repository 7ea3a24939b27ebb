// Chapter 09 — a Blackwell (sm_100a) GEMM on tcgen05: C (M×N, fp32) = A (M×K) · B (K×N), f16 or bf16
// inputs, the accumulator in Tensor Memory (TMEM) instead of registers.
//
//   warp 0        producer: one thread waits for a free stage (empty mbarrier), then TMA-loads the
//                 A and B boxes of one k-tile into it (full mbarrier, expect_tx).
//   warp 1        Tensor Memory owner and MMA issuer: the whole warp allocates the accumulator
//                 columns (tcgen05.alloc) and gives up the allocation permit; then ONE thread waits
//                 for each full stage, issues BK/16 tcgen05.mma (K = 16 each) and tcgen05.commit's
//                 the stage's empty mbarrier (the arrive happens when those MMAs have finished
//                 reading shared memory); after the last k-tile a commit to the `done` mbarrier
//                 hands the accumulator to the epilogue. At the end the warp deallocates.
//   warps 2..5    epilogue: wait for `done`, tcgen05.ld the accumulator (32x32b: thread t of warp w
//                 reads TMEM lane 32·(w % 4) + t = one row of C), tcgen05.wait::ld, store fp32 C.
//
// CTA_GROUP = 2 runs the same protocol on a CTA pair (a cluster of two, M = 256 per pair): each CTA
// loads its own 128 rows of A and its own BN/2 rows of Bᵀ into its own shared memory (same
// offsets), the even CTA's MMA thread issues tcgen05.mma.cta_group::2, which reads both CTAs'
// shared memory and writes each CTA's 128 rows of D into that CTA's Tensor Memory. Both CTAs'
// TMA loads complete on the even CTA's full barrier (cp.async.bulk.tensor .cta_group::2); the
// even CTA's commits arrive on both CTAs' empty / done barriers (tcgen05.commit .multicast::cluster,
// mask 0b11). Multicast of B across CTAs does not apply inside one pair: the pair's MMA already
// reads each half of Bᵀ from the CTA that holds it, so no byte is loaded twice; B multicast pays
// only across pairs (a larger cluster), which this kernel does not build.
//
// Layouts. A is M×K row-major (K-major); B is given to the kernel as Bᵀ, N×K row-major (K-major);
// both in shared memory as TMA boxes of 64 elements (128 bytes) × rows with the 128-byte swizzle:
// the canonical K-major SWIZZLE_128B layout of the tcgen05 shared-memory descriptor (8-row atoms
// of 1024 bytes, SBO = 1024). A stage holds BK/64 such slabs of A, then BK/64 slabs of Bᵀ, each
// 1024-byte aligned. The descriptors' fixed fields (version, layout, SBO, LBO) come from the host
// as templates with start address 0; the kernel adds (shared address >> 4) per k-step, and the
// k-step j inside a slab adds 32·j bytes (16 elements) — the same in-atom advance as wgmma's.
// The instruction descriptor (types, M, N, K-major, fp32 accumulate) comes from the host too.
//
// Kernel arguments: ta (tensor map of A, box 64 × BM/CTA_GROUP), tb (tensor map of Bᵀ, box
// 64 × BN/CTA_GROUP), c (M×N fp32, row-major), m, n, k, a_desc / b_desc (templates), idesc, err
// (one u32: 0, or a bounded wait's code | tag << 8). Grid: (CTA_GROUP · ceil(M/BM), ceil(N/BN));
// cluster (CTA_GROUP, 1, 1); block 192 threads; dynamic shared memory 1024 + STAGES · stage bytes.
// Rows of A / Bᵀ and k beyond the tensor are zero-filled by TMA; rows / columns of C beyond M / N
// are not stored. K must be a multiple of 8 (16-byte global row pitch, a TMA rule).
//
// Defines: DT (0 f16, 1 bf16), BM (128 with CTA_GROUP 1, 256 with CTA_GROUP 2), BN (32..256, a
// multiple of 32), BK (64, 128, 192 or 256), STAGES (1..8), CTA_GROUP (1 or 2).

#include "ptx/common.cuh"
#include "ptx/cluster.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tcgen05.cuh"
#include "ptx/tma.cuh"
#include "tcgen05_gemm.cuh"

#ifndef DT
#define DT 0
#endif
#ifndef CTA_GROUP
#define CTA_GROUP 1
#endif
#ifndef BM
#define BM (128 * CTA_GROUP)
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 64
#endif
#ifndef STAGES
#define STAGES 4
#endif

constexpr int kCtaGroup = CTA_GROUP;
constexpr int kRowsCta = BM / CTA_GROUP;        // rows of A and of C this CTA holds (128)
constexpr int kBRowsCta = BN / CTA_GROUP;       // rows of Bᵀ (columns of B) this CTA loads
constexpr int kSlabs = BK / 64;                 // 128-byte swizzle atoms along K per stage
constexpr int kStepsPerSlab = 4;                // 64 elements / K 16 per tcgen05.mma.kind::f16
constexpr u32 kASlabBytes = kRowsCta * 128;
constexpr u32 kBSlabBytes = kBRowsCta * 128;
constexpr u32 kStageBytes = kSlabs * (kASlabBytes + kBSlabBytes);
constexpr u32 kTxBytes = kStageBytes * CTA_GROUP;  // bytes that land per stage on the full barrier
constexpr u32 kTmemCols = BN <= 32 ? 32 : BN <= 64 ? 64 : BN <= 128 ? 128 : 256;
constexpr int kThreads = 192;

static_assert(DT == 0 || DT == 1, "DT: 0 f16, 1 bf16");
static_assert(CTA_GROUP == 1 || CTA_GROUP == 2, "CTA_GROUP: 1 or 2");
static_assert(kRowsCta == 128, "BM: 128 per CTA (M = 128 with cta_group::1, 256 with ::2); the "
                               "epilogue reads the layout where row i of D is TMEM lane i");
static_assert(BN % 32 == 0 && BN >= 32 && BN <= 256, "BN: a multiple of 32 in 32..256");
static_assert(BK % 64 == 0 && BK >= 64 && BK <= 256, "BK: 64, 128, 192 or 256");
static_assert(STAGES >= 1 && STAGES <= 8, "STAGES: 1..8");
static_assert(kBSlabBytes % 1024 == 0, "each slab must keep 1024-byte (8-row atom) alignment");

// Error tags (bits 8.. of the error word): which wait gave up.
#define TAG_EMPTY 1u   // producer waiting for a free stage
#define TAG_FULL 2u    // MMA issuer waiting for a loaded stage
#define TAG_DONE 3u    // epilogue waiting for the accumulator
#define TAG_TAIL 4u    // producer draining the last commits before exit
constexpr u32 kMaxTries = 1u << 30;  // the time bound (ASYNCTC_WAIT_MAX_NS) ends a wait first
#define ERR_NOT_A_PAIR 2u    // CTA_GROUP 2 launched without a cluster of two CTAs

extern "C" __global__ void __launch_bounds__(kThreads, 1)
    tcgen05_gemm(const __grid_constant__ TmaDesc ta, const __grid_constant__ TmaDesc tb,
                 float* __restrict__ c, int m, int n, int k, u64 a_desc, u64 b_desc, u32 idesc,
                 u32* __restrict__ err) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ alignas(8) u64 full_bar[STAGES];   // a stage's TMA bytes have landed (the leader's)
  __shared__ alignas(8) u64 empty_bar[STAGES];  // the MMAs reading a stage have completed
  __shared__ alignas(8) u64 done_bar;           // the whole accumulator is written
  __shared__ u32 tmem_slot;                     // tcgen05.alloc writes the TMEM address here

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const u32 raw = smem_u32(smem_raw);
  const u32 base = (raw + 1023u) & ~1023u;      // the same offset in both CTAs of a pair
  const u32 rank = kCtaGroup == 2 ? cluster_ctarank() : 0u;
  const bool leader = rank == 0;                // the CTA whose thread issues the MMAs
  const int tile_m = blockIdx.x / kCtaGroup, tile_n = blockIdx.y;
  const int m0 = tile_m * BM + (int)rank * kRowsCta;   // first row of A / C in this CTA
  const int n0 = tile_n * BN;                          // first column of C
  const int nb0 = n0 + (int)rank * kBRowsCta;          // first row of Bᵀ this CTA loads
  const int k_tiles = (k + BK - 1) / BK;

  // A CTA pair needs a cluster of exactly two CTAs (launched with cluster dims (2, 1, 1)); anything
  // else would make every CTA a "leader" of a pair that does not exist. Leave before any barrier,
  // allocation or copy, all threads together, with an error the host decodes.
  if constexpr (kCtaGroup == 2) {
    if (cluster_nctarank() != 2) {
      if (threadIdx.x == 0 && err) atomicCAS(err, ASYNCTC_ERR_NONE, ERR_NOT_A_PAIR);
      return;
    }
  }

  // ---- set-up -------------------------------------------------------------------------------
  if (warp == 0 && lane == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbarrier_init(smem_u32(&full_bar[s]), 1);   // one arrive: the leader's arrive.expect_tx
      mbarrier_init(smem_u32(&empty_bar[s]), 1);  // one arrive: the (multicast) commit
    }
    mbarrier_init(smem_u32(&done_bar), 1);        // one arrive: the final (multicast) commit
    // fence.mbarrier_init.release.cluster: the inits are visible to the async proxy (TMA
    // complete_tx, tcgen05.commit arrives) and, with the cluster barrier below, to the peer CTA.
    fence_mbarrier_init();
    tma_prefetch_desc(ta);
    tma_prefetch_desc(tb);
  }
  // Warp 1 allocates kTmemCols columns × 128 lanes (tcgen05_gemm.cuh). With cta_group::2 warp 1
  // of BOTH CTAs executes this (same warp id in both, as the pair allocation requires) and both get
  // the same columns. The sync after it publishes the TMEM address (and the barrier inits) to every
  // thread — and, for a pair, orders both CTAs' allocations and inits before any MMA / TMA / commit
  // of either CTA: cluster-wide, since the peer's barriers must be initialised before our TMA or
  // commit touches them, and the peer's TMEM allocated before the leader's MMA writes into it.
  const u32 tmem_base = tcgen05_alloc_publish<kCtaGroup, (kCtaGroup == 2)>(warp, &tmem_slot,
                                                                         kTmemCols);

  // ---- roles --------------------------------------------------------------------------------
  if (warp == 0) {
    if (lane == 0) {
      // Producer. The full barrier that counts a stage's bytes is the leader's: for a pair, the
      // peer's boxes complete_tx on the leader's barrier through its shared::cluster address.
      bool failed = false;
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % STAGES;
        const u32 round = (u32)(kt / STAGES);
        // Stage s is free once the MMAs of k-tile kt - STAGES completed (the commit's arrive).
        // Round 0 waits on parity 1 = the phase before the first, complete by definition
        // (PTX ISA "mbarrier.test_wait/try_wait": parity of the preceding phase).
        if (!mbarrier_wait_parity_bounded(smem_u32(&empty_bar[s]), (round & 1u) ^ 1u, kMaxTries,
                                          err, TAG_EMPTY)) {
          failed = true;   // reported in *err; stop loading, skip the tail's waits
          break;
        }
        const u32 full_local = smem_u32(&full_bar[s]);
        if (leader) mbarrier_arrive_expect_tx(full_local, kTxBytes);
        const u32 st = base + (u32)s * kStageBytes;
        for (int j = 0; j < kSlabs; ++j) {
          const int kc = kt * BK + j * 64;
          const u32 a_dst = st + (u32)j * kASlabBytes;
          const u32 b_dst = st + kSlabs * kASlabBytes + (u32)j * kBSlabBytes;
          if constexpr (kCtaGroup == 1) {
            tma_load_2d(a_dst, ta, full_local, kc, m0);
            tma_load_2d(b_dst, tb, full_local, kc, nb0);
          } else {
            const u32 full_leader = mapa_shared_cluster(full_local, 0);
            tma_load_2d_cta_pair(a_dst, ta, full_leader, kc, m0);
            tma_load_2d_cta_pair(b_dst, tb, full_leader, kc, nb0);
          }
        }
      }
      // Tail: wait until the commits of the last STAGES k-tiles have arrived on this CTA's empty
      // barriers, so that no tcgen05.commit arrive (possibly sent from the peer CTA) is still in
      // flight to this CTA's shared memory when the CTA exits.
      for (int kt = k_tiles; kt < k_tiles + STAGES && !failed; ++kt) {
        const int s = kt % STAGES;
        if (!mbarrier_wait_parity_bounded(smem_u32(&empty_bar[s]), ((u32)(kt / STAGES) & 1u) ^ 1u,
                                          kMaxTries, err, TAG_TAIL))
          break;
      }
    }
    __syncwarp();
  } else if (warp == 1) {
    if (lane == 0 && leader) {
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % STAGES;
        const u32 round = (u32)(kt / STAGES);
        if (!mbarrier_wait_parity_bounded(smem_u32(&full_bar[s]), round & 1u, kMaxTries, err,
                                          TAG_FULL))
          break;
        // The completed phase is the thread synchronisation after which this thread's tcgen05
        // operations may read what TMA wrote (both go through the async proxy; the fence orders
        // the MMAs after the wait, as the tcgen05 memory consistency model asks of any tcgen05
        // operation that follows a synchronisation).
        tcgen05_fence_after_thread_sync();
        const u32 st = base + (u32)s * kStageBytes;
        for (int j = 0; j < kSlabs; ++j) {
          const u32 a_addr = st + (u32)j * kASlabBytes;
          const u32 b_addr = st + kSlabs * kASlabBytes + (u32)j * kBSlabBytes;
          for (int w = 0; w < kStepsPerSlab; ++w) {
            // Start address field = bits 0..13, 16-byte units: add (address >> 4); inside the
            // 128-byte swizzle atom, k-step w starts 32·w bytes further (16 elements × 2 bytes).
            const u64 ad = a_desc + smem_desc_addr(a_addr + 32u * w);   // masked: a CTA pair is a
            const u64 bd = b_desc + smem_desc_addr(b_addr + 32u * w);   // cluster (ptx/common.cuh)
            // enable-input-d = 0 only for the very first MMA: it overwrites whatever the freshly
            // allocated columns held (TMEM is not zeroed by tcgen05.alloc).
            tcgen05_mma_f16<kCtaGroup>(tmem_base, ad, bd, idesc, (kt | j | w) != 0);
          }
        }
        // Release stage s when these MMAs have finished reading it. tcgen05.mma → tcgen05.commit
        // by the same thread needs no fence: commit tracks all prior asynchronous tcgen05
        // operations of the thread. For a pair the release goes to both CTAs (both producers
        // refill their halves of stage s).
        if constexpr (kCtaGroup == 1) tcgen05_commit<1>(smem_u32(&empty_bar[s]));
        else tcgen05_commit_multicast<2>(smem_u32(&empty_bar[s]), (u16)0x3);
      }
      // The accumulator is complete when every MMA above has completed: one more commit, to the
      // `done` barrier of this CTA (of both CTAs for a pair: each holds 128 rows of D in its TMEM).
      if constexpr (kCtaGroup == 1) tcgen05_commit<1>(smem_u32(&done_bar));
      else tcgen05_commit_multicast<2>(smem_u32(&done_bar), (u16)0x3);
    }
    __syncwarp();
  } else {
    // Epilogue: warps 2..5; warp w may read TMEM lanes 32·(w % 4) .. + 31 only.
    const u32 quarter = (u32)(warp & 3);
    const int row = m0 + (int)(quarter * 32u) + lane;
    // The commit's arrive completes the phase; the fence orders our tcgen05.ld after it. The
    // outcome is made warp-uniform: tcgen05.ld / wait::ld are .sync.aligned (all 32 threads).
    const bool ok = __all_sync(0xffffffffu, mbarrier_wait_parity_bounded(
                                                smem_u32(&done_bar), 0, kMaxTries, err, TAG_DONE));
    tcgen05_fence_after_thread_sync();
    if (ok) {
      float* crow = c + (size_t)row * (size_t)n;
      const bool vec = (n % 4) == 0;
#pragma unroll 1
      for (int cc = 0; cc < BN; cc += 32) {
        u32 r[32];
        tcgen05_ld_32x32b_x32(r, tmem_addr(tmem_base, quarter * 32u, (u32)cc));
        tcgen05_wait_ld();   // the registers are defined only after wait::ld
        const int col = n0 + cc;
        if (row < m) store_c_row32(crow, col, n, vec, r);
      }
    }
  }

  // ---- tear-down ----------------------------------------------------------------------------
  // Every tcgen05.ld has completed (wait::ld above); order them before the deallocation by warp 1
  // with the same fence / sync / fence pattern. For a pair the sync is cluster-wide: neither CTA
  // frees its columns or exits while the other may still use its shared memory, barriers or TMEM
  // (the leader's MMAs read the peer's shared memory and write the peer's TMEM; the peer's TMA
  // completes on the leader's barriers).
  tcgen05_thread_sync<(kCtaGroup == 2)>();
  if (warp == 1) tcgen05_dealloc<kCtaGroup>(tmem_base, kTmemCols);
}
