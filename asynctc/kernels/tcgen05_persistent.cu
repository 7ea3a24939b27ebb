// Chapter 09, deep dive — a persistent, warp-specialized Blackwell (sm_100a) GEMM on tcgen05:
// C (M×N, fp32) = A (M×K) · B (K×N), with TWO accumulators in Tensor Memory so that the epilogue of
// tile i overlaps the MMAs of tile i + 1.
//
//   warp 0        TMA producer: one thread walks the CTA's tiles and their k-tiles, waits for a free
//                 stage (empty mbarrier), loads A, Bᵀ (and, block-scaled, both scale tiles) into it
//                 (full mbarrier, expect_tx). With SCHED = 1 it is also the tile scheduler of the
//                 cluster: rank 0's thread issues clusterlaunchcontrol.try_cancel for the next tile.
//   warp 1        Tensor Memory owner and MMA issuer: the warp allocates 2·BN accumulator columns
//                 (+ the scale columns) and relinquishes the permit; one thread of the (pair's
//                 leader) CTA waits until accumulator a = t % 2 is empty (acc_empty[a]), then for
//                 each k-tile waits full, issues the MMAs into accumulator a, commits the stage's
//                 empty barrier; after the tile's last k-tile it commits acc_full[a].
//   warps 2..5    epilogue: wait acc_full[a], tcgen05.ld their 32-lane quarter, wait::ld, then
//                 tcgen05.fence::before_thread_sync and arrive on acc_empty[a] (the pair leader's),
//                 and only then store fp32 C — the MMA warp may already be writing tile t + 2's
//                 partial sums into the same columns while these stores drain.
//
// Tile schedule (SCHED): 0 — static persistent: the grid holds as many clusters as fit; cluster c
// takes units c, c + clusters, c + 2·clusters, ... 1 — cluster launch control: the grid holds one
// cluster per unit; a running cluster starts with its own unit and then cancels not-yet-launched
// clusters (clusterlaunchcontrol.try_cancel .multicast::cluster::all, the 16-byte response lands
// in every CTA of the cluster, counted on each CTA's clc_full mbarrier) and does their units; the
// first "not cancelled" ends the loop. Responses go to two 16-byte slots (round t: slot t % 2).
// Every reader of a response (producer, MMA thread, the four epilogue warps, of every CTA) arrives
// on rank 0's clc_empty of its slot before rank 0 may issue request t + 2 into the same bytes.
//
// Clusters: CTA_GROUP = 2 runs each MMA on a CTA pair (M = 256: 128 rows of A and D per CTA, BN/2
// rows of Bᵀ per CTA, the even CTA's thread issues tcgen05.mma.cta_group::2). CLUSTER_N = 2 puts
// two MMA groups (two CTAs, or two pairs) side by side along N in one cluster: they need the same
// rows of A, so each CTA loads 128 / CLUSTER_N of its 128 rows and multicasts them to the CTA of
// the same in-pair rank in the other group (cp.async.bulk.tensor .multicast::cluster). A stage of a
// CTA is then written by two producers, so it is free only when the MMAs of BOTH groups are done
// with it: every MMA commit of a stage goes to the empty barrier of every CTA of the cluster (mask
// all), and an empty barrier counts CLUSTER_N arrivals.
//
// Block scaling (KIND = 1): tcgen05.mma.kind::mxf8f6f4.block_scale with E4M3 A and B and one UE8M0
// scale per row of A / column of B per 32 elements of K (scale_vec::1X). Per stage the producer also
// loads a 128 × 16-byte scale tile of A and of B (row r: bytes 0..3 = the four 32-element blocks of
// this k-tile; 4..15 unused padding), and the MMA thread copies them into TMEM with
// tcgen05.cp.128x128b (row r → lane r, 4 columns) before the k-tile's four MMAs, which select byte
// w of the scale cell through the instruction descriptor's scale-factor IDs (PTX ISA "Block
// Scaling"). The stage's commit releases its TMEM scale columns too. Block scaling is built for one
// CTA (CTA_GROUP = 1, CLUSTER_N = 1) and BN = 128 (one scale lane per column of B).
//
// Layouts as in tcgen05.cu: A M×K K-major, B given as Bᵀ N×K K-major, 128-byte-swizzled TMA boxes of
// 128 bytes × rows (64 f16/bf16 or 128 fp8 elements), slabs 1024-byte aligned, descriptor
// templates from the host (start address added per k-step, +32 bytes per k-step in the atom).
// TMEM map: accumulator a at columns a·BN .. a·BN + BN − 1; scales of stage s at 2·BN + 8·s
// (A: 4 columns, B: 4 columns).
//
// Arguments: ta, tb (tensor maps of A and Bᵀ, box 128 bytes × rows), tsa, tsb (KIND 1: tensor maps of
// the scale tiles, uint8 [rows, k_tiles·16], box 16 × 128; otherwise unused), c, m, n, k, a_desc,
// b_desc, idesc (templates; KIND 1: scale IDs 0), sf_desc (template of the scale tiles' no-swizzle
// descriptor), err. Block 192 threads; cluster (CTA_GROUP·CLUSTER_N, 1, 1); grid.x a multiple of
// the cluster size. K a multiple of 8 (16 for fp8: the 16-byte TMA row pitch).
//
// Defines: KIND (0 kind::f16, 1 kind::mxf8f6f4 block-scaled), DT (KIND 0: 0 f16, 1 bf16), CTA_GROUP
// (1, 2), CLUSTER_N (1, 2), BN (multiple of 32 in 32..256), BK (elements per k-tile: a multiple of
// the 128-byte atom), STAGES (1..8), SCHED (0 static, 1 CLC).

#include "ptx/common.cuh"
#include "ptx/cluster.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tcgen05.cuh"
#include "ptx/tma.cuh"
#include "ptx/clc.cuh"
#include "tcgen05_gemm.cuh"

#ifndef KIND
#define KIND 0
#endif
#ifndef DT
#define DT 0
#endif
#ifndef CTA_GROUP
#define CTA_GROUP 1
#endif
#ifndef CLUSTER_N
#define CLUSTER_N 1
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK (KIND == 1 ? 128 : 64)
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef SCHED
#define SCHED 1
#endif

constexpr int kCtaGroup = CTA_GROUP;
constexpr int kClusterN = CLUSTER_N;
constexpr int kClusterSize = CTA_GROUP * CLUSTER_N;
constexpr int kElemBytes = KIND == 1 ? 1 : 2;
constexpr int kAtomK = 128 / kElemBytes;          // elements of K per 128-byte swizzle atom
constexpr int kSlabs = BK / kAtomK;
constexpr int kMmaK = KIND == 1 ? 32 : 16;        // K of one tcgen05.mma (32 bytes either way)
constexpr int kStepsPerSlab = kAtomK / kMmaK;     // 4
constexpr int kRowsCta = 128;
constexpr int kBM = kRowsCta * CTA_GROUP;         // rows of C per MMA
constexpr int kBRowsCta = BN / CTA_GROUP;
constexpr int kARowsLoad = kRowsCta / CLUSTER_N;  // rows of the A box this CTA loads (multicast)
constexpr u32 kASlabBytes = kRowsCta * 128;
constexpr u32 kBSlabBytes = kBRowsCta * 128;
constexpr u32 kSfBytes = KIND == 1 ? 128 * 16 : 0;  // one scale tile (A or B) per stage
constexpr u32 kOpBytes = kSlabs * (kASlabBytes + kBSlabBytes);
constexpr u32 kStageBytes = kOpBytes + 2 * kSfBytes;
constexpr u32 kTxBytes = kStageBytes * CTA_GROUP;   // landing per stage on the (pair leader's) full
constexpr u32 kAccCols = 2 * BN;
constexpr u32 kScaleCol0 = kAccCols;
constexpr u32 kColsNeeded = kAccCols + (KIND == 1 ? 8 * STAGES : 0);
constexpr u32 kTmemCols = kColsNeeded <= 32 ? 32 : kColsNeeded <= 64 ? 64 : kColsNeeded <= 128 ? 128
                          : kColsNeeded <= 256 ? 256 : 512;
constexpr int kThreads = 192;
constexpr u32 kClcReaders = 6;                     // producer, MMA thread, 4 epilogue warps per CTA

static_assert(KIND == 0 || KIND == 1, "KIND: 0 kind::f16, 1 kind::mxf8f6f4 block-scaled");
static_assert(DT == 0 || DT == 1, "DT: 0 f16, 1 bf16");
static_assert(CTA_GROUP == 1 || CTA_GROUP == 2, "CTA_GROUP: 1 or 2");
static_assert(CLUSTER_N == 1 || CLUSTER_N == 2, "CLUSTER_N: 1 or 2");
static_assert(BN % 32 == 0 && BN >= 32 && BN <= 256, "BN: a multiple of 32 in 32..256");
static_assert(BK % kAtomK == 0 && BK >= kAtomK && BK <= 4 * kAtomK, "BK: 1..4 swizzle atoms");
static_assert(STAGES >= 1 && STAGES <= 8, "STAGES: 1..8");
static_assert(kColsNeeded <= 512, "two accumulators (+ scales) must fit the 512 TMEM columns");
static_assert(kBSlabBytes % 1024 == 0, "each slab must keep 1024-byte (8-row atom) alignment");
static_assert((kARowsLoad * 128) % 1024 == 0, "a multicast slice must start on a swizzle pattern");
static_assert(KIND == 0 || (CTA_GROUP == 1 && CLUSTER_N == 1 && BN == 128 && BK == 128),
              "block scaling is built for one CTA, BN = 128, BK = 128 (four K = 32 blocks)");
static_assert(SCHED == 0 || SCHED == 1, "SCHED: 0 static persistent, 1 cluster launch control");

#define TAG_EMPTY 1u      // producer waiting for a free stage
#define TAG_FULL 2u       // MMA issuer waiting for a loaded stage
#define TAG_ACC_FULL 3u   // epilogue waiting for an accumulator
#define TAG_TAIL 4u       // producer draining the last commits before exit
#define TAG_ACC_EMPTY 5u  // MMA issuer waiting for the epilogue to free an accumulator
#define TAG_CLC_FULL 6u   // a role waiting for the scheduler's response
#define TAG_CLC_EMPTY 7u  // the scheduler waiting for every role to have read the last response
#define ERR_BAD_CLUSTER 3u  // launched without a cluster of CTA_GROUP·CLUSTER_N CTAs
constexpr u32 kMaxTries = 1u << 30;

// The schedule every role of every CTA walks in the same order: unit u → (tile_m, tile_n group).
struct Sched {
  int units, tiles_m;
  __device__ __forceinline__ int tm(int u) const { return u % tiles_m; }
  __device__ __forceinline__ int tn(int u) const { return u / tiles_m; }
};

// The next unit after `unit` (round t of the schedule): static stride or the CLC response.
// Returns -1 at the end; *failed on a timed-out wait.
// Round t uses response slot t % 2 (phase parity (t / 2) % 2): two requests may be in flight, so
// the request for the next tile never waits for the epilogue of the tile before.
__device__ __forceinline__ int next_unit(int unit, u32 t, const Sched& sc, u32 clc_full0,
                                         u32 clc_resp0, u32 clc_empty0_rank0, u32* err,
                                         bool* failed, bool arrive) {
  if constexpr (SCHED == 0) {
    const int nxt = unit + (int)(gridDim.x / kClusterSize);
    return nxt < sc.units ? nxt : -1;
  } else {
    const u32 slot = t & 1u;
    if (!mbarrier_wait_parity_bounded(clc_full0 + 8u * slot, (t >> 1) & 1u, kMaxTries, err,
                                      TAG_CLC_FULL)) {
      *failed = true;
      return -1;
    }
    u32 x = 0;
    const bool got = clc_query_cancel(clc_resp0 + 16u * slot, &x);
    if (arrive) mbarrier_arrive_cluster(clc_empty0_rank0 + 8u * slot);  // done with response t
    return got ? (int)(x / kClusterSize) : -1;
  }
}

extern "C" __global__ void __launch_bounds__(kThreads, 1)
    tcgen05_persistent_gemm(const __grid_constant__ TmaDesc ta, const __grid_constant__ TmaDesc tb,
                            const __grid_constant__ TmaDesc tsa, const __grid_constant__ TmaDesc tsb,
                            float* __restrict__ c, int m, int n, int k, u64 a_desc, u64 b_desc,
                            u32 idesc, u64 sf_desc, u32* __restrict__ err) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ alignas(8) u64 full_bar[STAGES];
  __shared__ alignas(8) u64 empty_bar[STAGES];
  __shared__ alignas(8) u64 acc_full[2];      // accumulator a holds a finished tile
  __shared__ alignas(8) u64 acc_empty[2];     // the epilogue has read accumulator a
  __shared__ alignas(8) u64 clc_full[2];      // the scheduler's response in slot i has landed
  __shared__ alignas(8) u64 clc_empty[2];     // (rank 0) every reader is done with slot i
  __shared__ alignas(16) unsigned char clc_resp[2][16];
  __shared__ u32 tmem_slot;

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const u32 raw = smem_u32(smem_raw);
  const u32 base = (raw + 1023u) & ~1023u;
  const u32 rank = kClusterSize > 1 ? cluster_ctarank() : 0u;
  const u32 pair_rank = rank % kCtaGroup;            // rank inside the CTA pair
  const u32 group = rank / kCtaGroup;                // MMA group along N inside the cluster
  const u32 leader_rank = rank - pair_rank;          // the CTA whose thread issues our MMAs
  const bool leader = pair_rank == 0;
  const Sched sc{(((m + kBM - 1) / kBM) * ((n + BN * kClusterN - 1) / (BN * kClusterN))),
                 (m + kBM - 1) / kBM};
  const int k_tiles = (k + BK - 1) / BK;

  if constexpr (kClusterSize > 1) {
    if (cluster_nctarank() != (u32)kClusterSize) {
      if (threadIdx.x == 0 && err) atomicCAS(err, ASYNCTC_ERR_NONE, ERR_BAD_CLUSTER);
      return;
    }
  }

  // ---- set-up ---------------------------------------------------------------------------------
  if (warp == 0 && lane == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbarrier_init(smem_u32(&full_bar[s]), 1);
      mbarrier_init(smem_u32(&empty_bar[s]), kClusterN);   // one commit per MMA group
    }
    for (int a = 0; a < 2; ++a) {
      mbarrier_init(smem_u32(&acc_full[a]), 1);
      mbarrier_init(smem_u32(&acc_empty[a]), 4 * kCtaGroup);  // 4 epilogue warps per CTA of the pair
    }
    for (int i = 0; i < 2; ++i) {
      mbarrier_init(smem_u32(&clc_full[i]), 1);          // this CTA's producer's arrive.expect_tx
      mbarrier_init(smem_u32(&clc_empty[i]), kClcReaders * kClusterSize);
    }
    fence_mbarrier_init();
    tma_prefetch_desc(ta);
    tma_prefetch_desc(tb);
  }
  const u32 tmem_base = tcgen05_alloc_publish<kCtaGroup, (kClusterSize > 1)>(warp, &tmem_slot,
                                                                             kTmemCols);
  const u32 clc_full_a = smem_u32(&clc_full[0]), clc_resp_a = smem_u32(&clc_resp[0][0]);
  const u32 clc_empty_0 = kClusterSize > 1 ? mapa_shared_cluster(smem_u32(&clc_empty[0]), 0)
                                           : smem_u32(&clc_empty[0]);
  const int first = (int)(blockIdx.x / kClusterSize);
  bool failed = false;

  // ---- roles ----------------------------------------------------------------------------------
  if (warp == 0) {
    if (lane == 0) {
      u32 it = 0;                                   // k-tiles loaded so far (the ring position)
      u32 t = 0;
      for (int unit = first < sc.units ? first : -1; unit >= 0 && !failed; ++t) {
        if constexpr (SCHED == 1) {
          // Ask for the next unit now, so the answer is back long before this tile ends: rank 0
          // waits until every reader has consumed response t − 2 (same slot), then issues request
          // t; every CTA counts the 16 response bytes on its own clc_full[t % 2].
          const u32 slot = t & 1u;
          if (rank == 0 && !mbarrier_wait_parity_bounded(smem_u32(&clc_empty[slot]),
                                                         ((t >> 1) & 1u) ^ 1u, kMaxTries, err,
                                                         TAG_CLC_EMPTY)) {
            failed = true;
            break;
          }
          mbarrier_arrive_expect_tx(clc_full_a + 8u * slot, 16);
          if (rank == 0) {
            if constexpr (kClusterSize > 1)
              clc_try_cancel_multicast(clc_resp_a + 16u * slot, clc_full_a + 8u * slot);
            else
              clc_try_cancel(clc_resp_a + 16u * slot, clc_full_a + 8u * slot);
          }
        }
        const int m0 = sc.tm(unit) * kBM + (int)pair_rank * kRowsCta;
        const int n0 = (sc.tn(unit) * kClusterN + (int)group) * BN;
        const int nb0 = n0 + (int)pair_rank * kBRowsCta;
        for (int kt = 0; kt < k_tiles; ++kt, ++it) {
          const u32 s = it % STAGES, round = it / STAGES;
          if (!mbarrier_wait_parity_bounded(smem_u32(&empty_bar[s]), (round & 1u) ^ 1u, kMaxTries,
                                            err, TAG_EMPTY)) {
            failed = true;
            break;
          }
          const u32 full_local = smem_u32(&full_bar[s]);
          const u32 full_leader = kCtaGroup == 2 ? mapa_shared_cluster(full_local, leader_rank)
                                                 : full_local;
          if (leader) mbarrier_arrive_expect_tx(full_local, kTxBytes);
          const u32 st = base + s * kStageBytes;
          for (int j = 0; j < kSlabs; ++j) {
            const int kc = kt * BK + j * kAtomK;
            const u32 a_dst = st + (u32)j * kASlabBytes;
            const u32 b_dst = st + kSlabs * kASlabBytes + (u32)j * kBSlabBytes;
            if constexpr (kClusterN == 2) {
              // my slice of the 128 rows, to me and to the same in-pair rank of the other group
              const u16 mask = (u16)((1u << pair_rank) | (1u << (pair_rank + kCtaGroup)));
              tma_load_2d_multicast_cg<kCtaGroup>(a_dst + group * (u32)kARowsLoad * 128u, ta,
                                                  full_leader, kc, m0 + (int)group * kARowsLoad,
                                                  mask);
            } else if constexpr (kCtaGroup == 2) {
              tma_load_2d_cta_pair(a_dst, ta, full_leader, kc, m0);
            } else {
              tma_load_2d(a_dst, ta, full_local, kc, m0);
            }
            if constexpr (kCtaGroup == 2) tma_load_2d_cta_pair(b_dst, tb, full_leader, kc, nb0);
            else tma_load_2d(b_dst, tb, full_local, kc, nb0);
          }
          if constexpr (KIND == 1) {
            tma_load_2d(st + kOpBytes, tsa, full_local, kt * 16, m0);
            tma_load_2d(st + kOpBytes + kSfBytes, tsb, full_local, kt * 16, nb0);
          }
        }
        if (failed) break;
        unit = next_unit(unit, t, sc, clc_full_a, clc_resp_a, clc_empty_0, err, &failed, true);
      }
      // Tail: the last STAGES commits (possibly from the other group / the pair leader) must have
      // arrived on this CTA's empty barriers before it may exit.
      for (u32 j = it; j < it + STAGES && !failed; ++j) {
        if (!mbarrier_wait_parity_bounded(smem_u32(&empty_bar[j % STAGES]),
                                          ((j / STAGES) & 1u) ^ 1u, kMaxTries, err, TAG_TAIL))
          break;
      }
    }
    __syncwarp();
  } else if (warp == 1) {
    if (lane == 0) {
      u32 it = 0, t = 0;
      for (int unit = first < sc.units ? first : -1; unit >= 0 && !failed; ++t) {
        if (leader) {
          const u32 a = t & 1u;
          const u32 d_tmem = tmem_base + a * (u32)BN;
          // Accumulator a is free once the epilogue warps of tile t − 2 have read it (round 0:
          // parity 1, the completed phase before the first).
          if (!mbarrier_wait_parity_bounded(smem_u32(&acc_empty[a]), ((t >> 1) & 1u) ^ 1u,
                                            kMaxTries, err, TAG_ACC_EMPTY)) {
            failed = true;
            break;
          }
          tcgen05_fence_after_thread_sync();
          for (int kt = 0; kt < k_tiles; ++kt, ++it) {
            const u32 s = it % STAGES, round = it / STAGES;
            if (!mbarrier_wait_parity_bounded(smem_u32(&full_bar[s]), round & 1u, kMaxTries, err,
                                              TAG_FULL)) {
              failed = true;
              break;
            }
            tcgen05_fence_after_thread_sync();
            const u32 st = base + s * kStageBytes;
            u32 sfa_tmem = 0, sfb_tmem = 0;
            if constexpr (KIND == 1) {
              sfa_tmem = tmem_base + kScaleCol0 + 8u * s;
              sfb_tmem = sfa_tmem + 4u;
              tcgen05_cp_128x128b(sfa_tmem, sf_desc + smem_desc_addr(st + kOpBytes));
              tcgen05_cp_128x128b(sfb_tmem, sf_desc + smem_desc_addr(st + kOpBytes + kSfBytes));
            }
            for (int j = 0; j < kSlabs; ++j) {
              const u32 a_addr = st + (u32)j * kASlabBytes;
              const u32 b_addr = st + kSlabs * kASlabBytes + (u32)j * kBSlabBytes;
#pragma unroll
              for (int w = 0; w < kStepsPerSlab; ++w) {
                const u64 ad = a_desc + smem_desc_addr(a_addr + 32u * w);
                const u64 bd = b_desc + smem_desc_addr(b_addr + 32u * w);
                const u32 acc = (kt | j | w) != 0;
                if constexpr (KIND == 1) {
                  // scale-factor B ID (bits 4-5) and A ID (bits 29-30): byte w of the scale cell
                  const u32 id = (u32)(j * kStepsPerSlab + w);
                  tcgen05_mma_mxf8f6f4(d_tmem, ad, bd, idesc | (id << 4) | (id << 29), sfa_tmem,
                                       sfb_tmem, acc);
                } else {
                  tcgen05_mma_f16<kCtaGroup>(d_tmem, ad, bd, idesc, acc);
                }
              }
            }
            // The stage (and its TMEM scale columns) is free when these MMAs complete — for every
            // CTA that any producer of this stage writes into.
            if constexpr (kClusterSize == 1) tcgen05_commit<1>(smem_u32(&empty_bar[s]));
            else tcgen05_commit_multicast<kCtaGroup>(smem_u32(&empty_bar[s]),
                                                     (u16)((1u << kClusterSize) - 1u));
          }
          if (failed) break;
          if constexpr (kCtaGroup == 1) tcgen05_commit<1>(smem_u32(&acc_full[a]));
          else tcgen05_commit_multicast<2>(smem_u32(&acc_full[a]), (u16)(0x3u << leader_rank));
        }
        unit = next_unit(unit, t, sc, clc_full_a, clc_resp_a, clc_empty_0, err, &failed, true);
      }
    }
    __syncwarp();
  } else {
    // Epilogue: warps 2..5, warp w reads TMEM lanes 32·(w % 4) .. + 31.
    const u32 quarter = (u32)(warp & 3);
    const u32 acc_empty_leader = kCtaGroup == 2
        ? mapa_shared_cluster(smem_u32(&acc_empty[0]), leader_rank) : smem_u32(&acc_empty[0]);
    u32 t = 0;
    for (int unit = first < sc.units ? first : -1; unit >= 0; ++t) {
      const u32 a = t & 1u;
      const bool ok = __all_sync(0xffffffffu, mbarrier_wait_parity_bounded(
          smem_u32(&acc_full[a]), (t >> 1) & 1u, kMaxTries, err, TAG_ACC_FULL));
      if (!ok) break;
      tcgen05_fence_after_thread_sync();
      const int row = sc.tm(unit) * kBM + (int)pair_rank * kRowsCta + (int)(quarter * 32u) + lane;
      const int n0 = (sc.tn(unit) * kClusterN + (int)group) * BN;
      float* crow = c + (size_t)row * (size_t)n;
      const bool vec = (n % 4) == 0;
#pragma unroll 1
      for (int cc = 0; cc < BN; cc += 32) {
        u32 r[32];
        tcgen05_ld_32x32b_x32(r, tmem_addr(tmem_base, quarter * 32u, a * (u32)BN + (u32)cc));
        tcgen05_wait_ld();
        if (cc + 32 >= BN) {
          // Every column of accumulator a is in registers: hand it back before storing, so that
          // the MMAs of tile t + 2 may start while these stores drain.
          tcgen05_fence_before_thread_sync();
          __syncwarp();
          if (lane == 0) mbarrier_arrive_cluster(acc_empty_leader + 8u * a);
        }
        const int col = n0 + cc;
        if (row < m) store_c_row32(crow, col, n, vec, r);
      }
      bool f = false;
      unit = next_unit(unit, t, sc, clc_full_a, clc_resp_a, clc_empty_0, err, &f, lane == 0);
      unit = __shfl_sync(0xffffffffu, unit, 0);
    }
  }

  // ---- tear-down --------------------------------------------------------------------------------
  tcgen05_thread_sync<(kClusterSize > 1)>();
  if (warp == 1) tcgen05_dealloc<kCtaGroup>(tmem_base, kTmemCols);
}
