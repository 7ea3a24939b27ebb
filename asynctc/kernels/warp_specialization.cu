// Chapter 06 — a warp-specialized GEMM: one producer warpgroup loads, consumer warpgroups compute.
// C (M×N fp32, or the input dtype) = A (M×K) · B (K×N), fp16 / bf16 inputs, fp32 accumulation.
// The ring of STAGES shared-memory stages, the TMA boxes, the swizzle and the wgmma descriptors are
// chapter 05's (kernels/pipeline.cu, asynctc.pipeline: same stage layout, same host-made
// descriptor templates); what changes is who does what, rung by rung (asynctc.warp_specialization
// RUNGS):
//
//   warpgroup 0            the producer: after the barrier init its thread 0 alone issues every
//                          TMA load; the other 127 threads leave — with CLUSTER = 2 they wait at
//                          the final cluster barrier instead (with SETMAXNREG they first give
//                          their registers back: setmaxnreg.dec is .sync.aligned, the whole
//                          warpgroup executes it).
//   warpgroups 1..CONSUMERS  consumers: each computes BM / CONSUMERS rows × BN of the CTA tile with
//                          wgmma (m64nBNk16, BM / CONSUMERS / 64 atoms) and never loads.
//
// The ring protocol (PTX ISA "mbarrier": arrive, expect_tx, try_wait.parity, phase completion):
//   full[s]  — arrive count 1: the producer's arrive.expect_tx(stage bytes); the phase completes
//              when TMA's complete_tx has delivered those bytes.
//   empty[s] — arrive count CONSUMERS: one elected thread per consumer warpgroup arrives
//              (empty.arrive(s), EmptyBarriers) after wgmma.wait_group has reported that
//              warpgroup's wgmmas on stage s complete.
// Producer and consumers walk the same sequence of (tile, k-tile) pairs and keep the same ring
// counter i (i-th load = i-th k-tile consumed): stage i mod S, fill f = i / S. The producer waits on
// empty[s] with parity (f − 1) mod 2 = (f mod 2) xor 1: on the first pass (f = 0) that is 1, and a
// fresh barrier (phase 0 in progress) reports the preceding phase 1 as complete, so it passes at
// once (ptx/mbarrier.cuh). A consumer waits on full[s] with parity f mod 2. The counter carries
// across tiles: with PERSISTENT the producer runs into the next tile's k-tiles while the consumers
// are still computing (and storing) the current one — the epilogue of tile t overlaps the loads of
// tile t + 1, bounded only by the S free stages.
//
// Release order: a consumer issues k-tile i's wgmmas as one group, waits until at most 1 group is
// pending (k-tile i − 1 is complete) and releases i − 1's stage; after a tile's last k-tile it
// waits for 0 pending and releases that stage too, then stores C from registers. No deadlock: the
// producer's only wait (empty) depends on consumer progress on loads it issued earlier; a
// consumer's only wait (full) depends on loads the producer issues after S releases that precede
// it in the same sequence. There is no __syncthreads after the barrier init (the producer's idle
// threads have left).
//
// Registers (SETMAXNREG = 1, PTX ISA "setmaxnreg"): the kernel is declared with
// __launch_bounds__(128 · (1 + CONSUMERS), 1), so ptxas knows the per-thread count at entry
// (65536 / 384 → 168 for two consumers); the producer warpgroup drops to PRODUCER_REGS and the
// consumers raise to CONSUMER_REGS (multiples of 8 in 24..256; producer + consumers within the
// SM's 64K registers, checked in Python). Without launch bounds ptxas cannot know the count at
// entry and ignores setmaxnreg (C7508: asynctc.core.runtime raises PerformanceWarning) — the
// LAUNCH_BOUNDS = 0 variant exists only to show that.
//
// Clusters (CLUSTER = 2, PTX ISA "cp.async.bulk.tensor" .multicast::cluster, "mbarrier" remote
// arrive on a .shared::cluster address, "mapa", "barrier.cluster"): two CTAs of a cluster take the
// tiles (2p, n) and (2p + 1, n) — the same B tile. Each CTA's producer loads its own A box and one
// half of B (rank r: B rows r · BN/2 .. of the tile) and multicasts that half into both CTAs'
// shared memory at the same offset, completing on both CTAs' full[s] at the same offset. So each
// CTA's full[s] still expects the whole stage (A + all of B), half of B arriving from the peer
// (the peer's complete_tx may come before the local expect_tx: the tx-count may go transiently
// negative, and the phase cannot complete while the local arrival is pending). A producer may
// refill stage s only when *both* CTAs' consumers released it (its multicast writes into the
// peer's stage too): empty[s] counts CONSUMERS · 2 arrivals, each consumer arriving on its own and
// the peer's empty[s]. The barrier inits are made visible to the peer by a cluster barrier before
// any load, and no thread leaves before a final cluster barrier (a peer may still arrive on this
// CTA's barriers).
//
// Epilogue through shared memory (TMA_STORE = 1; C in the input dtype only): each consumer
// warpgroup owns two 64×64 staging buffers (8 KiB each, 128-byte swizzle) after the ring. Per
// 64×64 chunk of its C rows (atom i, columns 64q ..): the elected thread waits until at most one
// of its bulk store groups still reads shared memory (cp.async.bulk.wait_group.read 1, so the
// buffer used two chunks ago is free); a named barrier of the warpgroup (bar.sync 1 + consumer,
// 128) passes that on; every warp writes its 16 rows with stmatrix (PTX ISA "stmatrix": 8×8 b16
// matrices, each lane one 16-byte row address, the fragment pair (row lane/4, cols 2·(lane%4)..)
// is the wgmma accumulator pair) into the swizzled layout TMA expects (16-byte chunk c of row r
// at r · 128 + ((c xor r mod 8) · 16)); fence.proxy.async.shared::cta makes the generic writes
// visible to the async proxy; a second named barrier; the elected thread issues the TMA store
// (cp.async.bulk.tensor ... bulk_group) and commits it. The stores drain while the consumer starts
// the next tile's k-loop; before exiting it waits for all of them (wait_group 0).
//
// Trace (TRACE = 1; chapter 05's format, asynctc.warp_specialization.decode_trace): thread 0 of
// every warpgroup (producer = slot 0, consumer w = slot w) of CTAs blockIdx.x < TRACE_CTAS writes
// a header (%globaltimer, clock64, %smid | blockIdx.x << 32, events attempted) and TRACE_EVENTS
// records (clock64, %globaltimer low 32 << 32 | kind | stage << 4 | i << 8), where i is the ring
// counter (the CTA's i-th k-tile over all its tiles). Kinds as chapter 05's; EV_LOOP_END and
// EV_STORE_END carry the tile's last i.
//
// Proxies: TMA writes and wgmma reads of the stages both go through the async proxy, ordered by
// the mbarriers; the epilogue writes C from registers to global memory (no proxy crossing).
// Every wait is bounded (StageBarriers::wait, ring.cuh, as chapter 05's): a broken variant writes
// the error word naming the wait (barrier, stage, k-tile, warpgroup: ring_wait_tag) and finishes.
//
// Edges (EDGES = 1; asynctc.matmul's build — 0 keeps the ladder's cubins byte for byte): any M, N,
// K ≥ 1. The tile counts round up (tiles_n = ceil(N / BN); tiles_m = ceil(M / BM), with CLUSTER = 2
// rounded up to whole clusters) and so does the k-loop (T = ceil(K / 64)). Nothing in the ring
// changes: every box is loaded whole, and where it hangs past the tensor TMA fills the missing
// elements with zeros and still counts the whole box towards complete_tx, so expect_tx stays
// kStageBytes (PTX ISA §5.5.3 "Tiled mode", "Out of Boundary Access"; driver API
// cuTensorMapEncodeTiled, oobFill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: zeros; measured on the H200
// by chapter 03: tests/test_tma.py test_tma_oob_zero_fill loads boxes partly and wholly outside the
// tensor on a barrier armed with the whole box's bytes, and gets zeros without a timeout). Zeros in
// A or B add nothing to C. A cluster rank whose tile lies wholly past M still loads (zeros) and
// multicasts its half of B — its peer needs it — and its consumers store nothing. Stores are
// clipped to M × N: the register epilogue checks each element pair (a float2 / 2 × 16-bit store
// when the pair is inside N and C's row pitch keeps it aligned, else one element at a time), the
// TMA-store epilogue relies on TMA, which never writes the part of a box outside the tensor map's
// dims (same PTX ISA section; chapter 03's store_box checks it). C's row pitch is the argument ldc
// (elements, ≥ N), so C may live in a padded buffer (the TMA store reads it from the tensor map tc,
// whose row stride is ldc).
//
// Ping-pong (PINGPONG = 1; issue 20 §1; 0 keeps every other build's cubin byte for byte): the two
// consumer warpgroups own different output tiles, each a whole BM × BN tile (kAtoms = BM / 64 atoms
// per consumer: 128 × 128 is 2 × 64 accumulators per thread, the same 128 as the cooperative
// 64 × 256 half; a 128 × 256 tile per consumer would be 256, above what a thread can hold). The
// producer is unchanged: it walks the CTA's tiles in order, T k-tiles each, through the one ring.
// Consumer cw takes the CTA's tiles with local index j ≡ cw (mod 2); for the other consumer's
// tiles it only moves its ring counter on by T (stage and phase of i = j · T + k are the
// producer's). Stage ownership follows the tile: the k-tiles of tile j are read and released by
// consumer j mod 2 alone, so empty[s] counts one arrival per CTA (× CLUSTER: the peer CTA's
// consumer of the same tile arrives too). The ordered barrier is an mbarrier pair, order[0..1]
// (arrive count 1): consumer cw, before the wgmmas of its n-th tile, waits on order[cw] for parity
// (n mod 2) xor (cw == 0) — consumer 0's first wait passes on the fresh barrier, as the producer's
// first empty waits do — and after issuing that tile's last k-tile (before its final
// wait_group 0) its elected thread arrives on order[cw xor 1]. So the k-loops alternate, tile j's
// wgmmas then tile j + 1's, and each consumer's epilogue (its last wait_group, the stores) runs
// while the other's wgmmas run. The order barrier only orders issue; correctness rests on the ring
// alone (different tiles, different stages). mbarriers, not a named bar.sync / bar.arrive pair: a
// bar.sync cannot time out, and every wait here is bounded (ring_wait_bounded, tag WAIT_ORDER,
// stage field = the barrier 0 / 1, k-tile field = the consumer's tile count n). No deadlock: the
// producer fills tile j's k-tiles before tile j + 1's, consumer j mod 2 needs only those and (for
// j ≥ 1) the end of tile j − 1's k-loop, which needs nothing of tile j. BREAK = 2: consumer 1
// never arrives on order[0] (consumer 0's second tile waits forever: the bounded wait's error).
// Trace: EV_ORDER_BEGIN / EV_ORDER_END around the order wait (stage = cw, i = the tile's first
// ring counter).
//
// Split-K (SPLIT_K = S > 1; EDGES builds with the register epilogue and OUT_F32 = 1 only): the
// work items are (tile, split) pairs, item = tile · S + split, so each tile's K range is cut into
// S slices of whole k-tiles (split s takes k-tiles s · T / S .. (s + 1) · T / S − 1; S ≤ T, checked
// in Python, so none is empty). Producer and consumers walk the same items, so the ring protocol
// is unchanged. Split s writes its fp32 partial tile at c + s · M · ldc (c is then a workspace of
// S · M rows of ldc floats); kernels/gemm_splitk.cu sums the S partials of each element in the
// fixed order 0 .. S − 1 (deterministic) and writes C in its dtype. With SPLITK_FIXUP = 1 the sum
// is done in this kernel instead, by the last split of each tile to finish (splitk_fixup.cuh; C in
// its own dtype, arguments ws and flags after ldc). SPLIT_K unset (1) leaves every other build byte
// for byte.
//
// Defines: CLUSTER (1, 2: see above), TMA_STORE (0, 1: see above), EDGES (0, 1: see above), DT (0
// f16, 1 bf16; 2 e4m3, 3 e5m2: chapter 07, fp8_promote.cuh; A's type), DT_B (B's: default DT;
// with fp8 A also the other fp8 type — mixed .e4m3.e5m2 / .e5m2.e4m3 wgmma), BM, BN, BK (elements of K per k-tile:
// 128 bytes, i.e. 64 16-bit or 128 fp8), STAGES (2..6), CONSUMERS (1, 2), B_MAJOR (0 K-major, 1
// MN-major; fp8: K-major only), OUT_F32, C_DT (the 16-bit type of C when OUT_F32 = 0: 0 f16, 1
// bf16; default the input dtype, bf16 for fp8), GROUP_M (tile rows per raster group), TRACE,
// TRACE_CTAS, TRACE_EVENTS, SETMAXNREG (0, 1), PRODUCER_REGS, CONSUMER_REGS, LAUNCH_BOUNDS (1; 0
// only for the C7508 demonstration), PERSISTENT (0: one tile per CTA, grid = tiles; 1: grid ≤ SMs,
// CTA b takes tiles b, b + gridDim.x, ... in group-M order), MULTICAST (CLUSTER = 2; 0 diagnostic),
// A_KSTEP_BYTES / B_KSTEP_BYTES / B_BOX_BYTES / A_ATOM_BYTES (the layout model's byte offsets from
// asynctc; defaults shared with chapter 05 in ring_defaults.cuh), BREAK (0; 1: the last consumer
// never releases a stage, to show the bounded wait; 2 with PINGPONG: see above), PINGPONG (0, 1).
// Chapter 07's switches live in their own headers and leave every other build byte for byte:
// PROMOTE, BLOCK_SCALES (fp8_promote.cuh); SWIZZLE with K_BOXES, K_BOX_ELEMS, A_KBOX_BYTES,
// A_KSTEP_OFFSETS, B_KSTEP_OFFSETS, and ROW_BOXES, TMA_ONCE (swizzle_experiments.cuh).
// Issue 20's opt-in switches, same rule: TILE_ORDER (1: the argument `order`, last), L2_HINT
// (tile_order.cuh).
// Arguments: ta, tb (tensor maps), tc (tensor map of C, 64×64 box, 128-byte swizzle; only read
// with TMA_STORE), c (M×N), M, N, K, desc_a0, desc_b0 (descriptors of stage 0,
// k-step 0 at shared address 0), err (one u32, 0 = ok), trace (u64 buffer or null),
// scales (fp8 only: null, or two fp32 per-tensor dequantisation scales {scale_a, scale_b}; the
// epilogue multiplies the accumulators by scale_a · scale_b); with EDGES also ldc (C's row pitch
// in elements); with BLOCK_SCALES also sa, sb (per-block scales,
// fp8_promote.cuh; after ldc with EDGES, which BLOCK_SCALES refuses).
//
// Dynamic shared memory: 1024 (alignment slack) + STAGES · (BM + BN) · 128 bytes
// (+ CONSUMERS · 2 · 8192 staging bytes with TMA_STORE).

#include "ptx/cluster.cuh"
#include "ptx/common.cuh"
#include "ptx/cvt.cuh"
#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"
#include "ring.cuh"

#include "ring_defaults.cuh"   // DT, BM, BN, BK, STAGES, CONSUMERS, B_MAJOR, OUT_F32, GROUP_M, TRACE*,
                               // BREAK, the layout model's byte offsets (shared with chapter 05)
#ifndef C_DT
#define C_DT (DT >= 2 ? 1 : DT)   // 16-bit C: 0 f16, 1 bf16
#endif
#ifndef SETMAXNREG
#define SETMAXNREG 1
#endif
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 40
#endif
#ifndef CONSUMER_REGS
#define CONSUMER_REGS 232
#endif
#ifndef LAUNCH_BOUNDS
#define LAUNCH_BOUNDS 1
#endif
#ifndef PERSISTENT
#define PERSISTENT 0
#endif
#ifndef CLUSTER
#define CLUSTER 1
#endif
#ifndef TMA_STORE
#define TMA_STORE 0
#endif
#ifndef MULTICAST
#define MULTICAST 1   // CLUSTER = 2 only; 0: each CTA loads all of B itself (diagnostic)
#endif
#ifndef EDGES
#define EDGES 0
#endif
#ifndef DT_B
#define DT_B DT   // B's input dtype (wgmma_ring.cuh); mixed only for fp8
#endif
#ifndef PINGPONG
#define PINGPONG 0
#endif
#define WAIT_ORDER 3u   // the error tag's barrier field of the ping-pong order wait
#ifndef SPLIT_K
#define SPLIT_K 1
#endif
#ifndef SPLITK_FIXUP
#define SPLITK_FIXUP 0
#endif
#if SPLIT_K > 1
static_assert(EDGES == 1 && TMA_STORE == 0 && (OUT_F32 == 1 || SPLITK_FIXUP) && DT < 2,
              "SPLIT_K: 16-bit EDGES builds writing fp32 partials with the register epilogue");
#endif

static_assert(DT >= 0 && DT <= 3, "DT: 0 f16, 1 bf16, 2 e4m3, 3 e5m2");
static_assert(DT_B == DT || (DT >= 2 && (DT_B == 2 || DT_B == 3)),
              "DT_B: B's dtype equals A's for f16/bf16; fp8 A takes e4m3 (2) or e5m2 (3) B");
static_assert(BK * (DT >= 2 ? 1 : 2) == 128, "BK: one 128-byte swizzle row of K per box row");
static_assert(C_DT == 0 || C_DT == 1, "C_DT: 0 f16, 1 bf16");
static_assert(STAGES >= 2 && STAGES <= 6,
              "STAGES: 2..6 (a consumer keeps one wgmma group pending on the previous stage)");
static_assert(CONSUMERS == 1 || CONSUMERS == 2, "CONSUMERS: 1 or 2 warpgroups");
static_assert(BM % (64 * (PINGPONG ? 1 : CONSUMERS)) == 0 && BM <= 256,
              "each consumer owns whole m64 atoms");
static_assert(PINGPONG == 0 || (PINGPONG == 1 && CONSUMERS == 2 && PERSISTENT == 1 && DT < 2),
              "PINGPONG: two consumers, a persistent grid, 16-bit inputs");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN: 64, 128 or 256 (one wgmma n = BN)");
static_assert(CLUSTER == 1 || CLUSTER == 2, "CLUSTER: 1 or 2 CTAs along M");
static_assert(EDGES == 0 || EDGES == 1, "EDGES: 0 (M, N, K multiples of the tile) or 1 (any)");
static_assert(TMA_STORE == 0 || OUT_F32 == 0, "the TMA-store epilogue writes C in the input dtype");
static_assert(CLUSTER == 1 || BN >= 128, "a multicast half of B is whole 64-column boxes");
static_assert(PRODUCER_REGS % 8 == 0 && PRODUCER_REGS >= 24 && PRODUCER_REGS <= 256,
              "setmaxnreg: a multiple of 8 in 24..256");
static_assert(CONSUMER_REGS % 8 == 0 && CONSUMER_REGS >= 24 && CONSUMER_REGS <= 256,
              "setmaxnreg: a multiple of 8 in 24..256");

constexpr int kThreads = 128 * (1 + CONSUMERS);
static_assert(kThreads <= 1024, "threads per CTA");
constexpr int kWgRows = PINGPONG ? BM : BM / CONSUMERS;   // C rows per consumer warpgroup
constexpr int kAtoms = kWgRows / 64;              // m64 wgmma rows per consumer
constexpr int kAcc = BN / 2;                      // fp32 accumulators per thread per atom
constexpr u32 kRowBytes = 128;
constexpr int kKSteps = kRowBytes / 32;           // one wgmma reads 32 bytes of K (k16 / k32)
constexpr u32 kATileBytes = BM * kRowBytes;
constexpr u32 kBTileBytes = BN * kRowBytes;
constexpr u32 kStageBytes = kATileBytes + kBTileBytes;
constexpr u32 kAtomBytes = A_ATOM_BYTES;           // A: from one m64 atom to the next
constexpr u32 kBHalfBytes = kBTileBytes / 2;      // the B rows one CTA of a cluster loads
constexpr u32 kChunkBytes = 64 * 128;             // one 64×64 staging buffer of C (16-bit)
constexpr int kChunksN = BN / 64;                 // 64-column chunks of a consumer's rows
static_assert(kAtoms * kAcc <= 128, "accumulators per thread above the 128-register budget");
// chapter 07: SWIZZLE's k-step offsets, ROW_BOXES' loads, TMA_ONCE (after the tile constants)
#include "swizzle_experiments.cuh"
static_assert(kStageBytes % 1024 == 0, "stage bases must stay on the 1024-byte swizzle repeat");

// ---- trace (chapter 05's record format) ---------------------------------------------------------
enum TraceKind : u32 {
  EV_TMA_ISSUED = 0, EV_EMPTY_BEGIN = 1, EV_EMPTY_END = 2, EV_FULL_BEGIN = 3, EV_FULL_END = 4,
  EV_MMA_ISSUE = 5, EV_WAIT_DONE = 6, EV_RELEASE = 7, EV_LOOP_END = 8, EV_STORE_END = 9,
  EV_ORDER_BEGIN = 10, EV_ORDER_END = 11,   // PINGPONG only
};

struct Trace {
  u64* slot;   // this warpgroup's slot, or null when this thread does not trace
  u32 n;
  __device__ __forceinline__ void open(u64* trace, int wg) {
    if constexpr (TRACE) {
      if (trace && (threadIdx.x & 127) == 0 && blockIdx.x < TRACE_CTAS) {
        slot = trace + (size_t)(blockIdx.x * (1 + CONSUMERS) + wg) * (4 + 2 * TRACE_EVENTS);
        slot[0] = globaltimer();
        slot[1] = clock64();
        slot[2] = (u64)smid() | ((u64)blockIdx.x << 32);
      }
    }
  }
  __device__ __forceinline__ void event(u32 kind, u32 stage, u32 i) {
    if constexpr (TRACE) {
      if (slot) {
        if (n < TRACE_EVENTS) {
          const u64 c = clock64();
          const u64 g = globaltimer();
          slot[4 + 2 * n] = c;
          slot[5 + 2 * n] = (g << 32) | (u64)(kind | (stage << 4) | (i << 8));
        }
        ++n;
      }
    }
  }
  __device__ __forceinline__ void close() {
    if constexpr (TRACE) {
      if (slot) slot[3] = n;
    }
  }
};

// ---- setmaxnreg (PTX ISA "setmaxnreg", sm_90a): .sync.aligned, the whole warpgroup executes it ----
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

// ---- multicast TMA and remote arrive (CLUSTER = 2) ----------------------------------------------
// The box lands at offset dst of every CTA in cta_mask, and complete_tx goes to the mbarrier at
// offset bar of each of them (PTX ISA "cp.async.bulk.tensor", .multicast::cluster).
__device__ __forceinline__ void tma_load_2d_multicast(u32 dst, const TmaDesc& d, u32 bar, int c0,
                                                      int c1, u16 cta_mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n"
               ::"r"(dst), "l"(tma_desc_addr(d)), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask)
               : "memory");
}
// Arrive on the mbarrier at shared::cluster address `bar` (a peer's, from mapa). Default
// semantics (.release, .cta scope): what must be ordered before the peer's next TMA into our
// stage is our wgmmas' reads of it, already complete (wgmma.wait_group); a .cluster-scope
// release would cost a MEMBAR.ALL.GPU per arrive in SASS.
__device__ __forceinline__ void mbarrier_arrive_remote(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// The ring's empty barriers (ring.cuh's StageBarriers) as the consumers release a stage:
// empty.arrive(s) arrives on barrier s and, with CLUSTER = 2, on barrier s of the peer CTA (rank
// ^ 1), whose producer's multicast also wrote the stage.
struct EmptyBarriers : StageBarriers {
  u32 rank;    // this CTA's rank in its cluster (set once known; 0 with CLUSTER = 1)
  __device__ __forceinline__ void arrive(int stage) const {
    mbarrier_arrive((*this)[stage]);
    if constexpr (CLUSTER == 2) mbarrier_arrive_remote(mapa_shared_cluster((*this)[stage], rank ^ 1u));
  }
};

// ---- tile order: group-M raster (GROUP_M tile rows walked column by column, for L2 reuse) -------
// With CLUSTER = 2 the raster walks pairs of tile rows (a cluster's two tiles share n0).
__device__ __forceinline__ void tile_origin(int tile, int tiles_m, int tiles_n, u32 rank, int& m0,
                                            int& n0) {
  constexpr int kGroup = GROUP_M / CLUSTER > 0 ? GROUP_M / CLUSTER : 1;
  const int rows_m = tiles_m / CLUSTER;             // rows of clusters
  const int per_group = kGroup * tiles_n;
  const int first_m = tile / per_group * kGroup;
  const int rows = min(rows_m - first_m, kGroup);
  const int in_group = tile % per_group;
  m0 = ((first_m + in_group % rows) * CLUSTER + (int)rank) * BM;
  n0 = in_group / rows * BN;
}
#include "tile_order.cuh"   // opt-in TILE_ORDER (order table), L2_HINT (A evict_last)

// ---- producer: fill one stage with k-tile kt of the tile at (m0, n0) ----------------------------
__device__ __forceinline__ void load_stage(const TmaDesc& ta, const TmaDesc& tb, u32 stage_addr,
                                           u32 full_bar, int kt, int m0, int n0) {
  mbarrier_arrive_expect_tx(full_bar, kStageBytes);
  if constexpr (ROW_BOXES > 1) {                           // chapter 07: R boxes along the rows
    load_row_boxes(ta, tb, stage_addr, full_bar, kt, m0, n0);
    return;
  }
#pragma unroll
  for (int j = 0; j < K_BOXES; ++j)                   // A: BM × 64 (K_BOXES = 1 but in chapter 07)
    TMA_LOAD_A(stage_addr + j * A_KBOX_BYTES, ta, full_bar, kt * BK + j * K_BOX_ELEMS, m0);
  if constexpr (CLUSTER == 2 && MULTICAST) {                               // half of B, to both
    const u32 r = cluster_ctarank();
    if constexpr (B_MAJOR == 0) {
      tma_load_2d_multicast(stage_addr + kATileBytes + r * kBHalfBytes, tb, full_bar, kt * BK,
                            n0 + (int)r * (BN / 2), 0x3);                   // B: BN/2 × 64
    } else {
#pragma unroll
      for (int j = 0; j < BN / 128; ++j) {
        const int box = (int)r * (BN / 128) + j;
        tma_load_2d_multicast(stage_addr + kATileBytes + box * B_BOX_BYTES, tb, full_bar,
                              n0 + 64 * box, kt * BK, 0x3);
      }
    }
  } else if constexpr (B_MAJOR == 0) {
#pragma unroll
    for (int j = 0; j < K_BOXES; ++j)                                        // B: BN × 64
      tma_load_2d(stage_addr + kATileBytes + j * B_BOX_BYTES, tb, full_bar,
                  kt * BK + j * K_BOX_ELEMS, n0);
  } else {
#pragma unroll
    for (int j = 0; j < BN / 64; ++j)                                        // B: 64 K-rows × 64
      tma_load_2d(stage_addr + kATileBytes + j * B_BOX_BYTES, tb, full_bar, n0 + 64 * j, kt * BK);
  }
}

#include "wgmma_ring.cuh"   // fence_accumulators, mma_ktile, store_c (shared with pipeline.cu)
#include "fp8_promote.cuh"  // chapter 07: PROMOTE, BLOCK_SCALES, per-tensor fp8 scales

#if EDGES
// ---- epilogue clipped to M × N (EDGES = 1): store_c's fragment walk, C row pitch ldc ------------
// An element pair (row, col), (row, col + 1) — col is even — goes out as one 8-byte (fp32) or
// 4-byte (16-bit) store when both columns are inside N and ldc is even (then row · ldc + col is
// even and the pair is aligned: C's base is 256-byte aligned); otherwise element by element.
__device__ __forceinline__ void store_c_clipped(const float (&acc)[kAtoms][kAcc], void* c, int ldc,
                                                int row0, int n0, int M, int N) {
  const bool pairs = (ldc & 1) == 0;
#pragma unroll
  for (int i = 0; i < kAtoms; ++i) {
#pragma unroll
    for (int j = 0; j < kAcc; j += 2) {
      int row, col;
      acc_pair_origin(i, j, row0, n0, row, col);
      if (row >= M || col >= N) continue;
      const size_t at = (size_t)row * ldc + col;
      if (pairs && col + 1 < N) {
        store_c_pair(c, at, acc[i][j], acc[i][j + 1]);
      } else {                                   // odd pitch, or the pair straddles N
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          if (col + e >= N) break;
          if constexpr (OUT_F32)
            static_cast<float*>(c)[at + e] = acc[i][j + e];
          else
            static_cast<u16*>(c)[at + e] = (u16)(cvt_rn_x2_f32<C_DT>(acc[i][j + e], 0.f) & 0xFFFFu);
        }
      }
    }
  }
}
#endif

// ---- epilogue through shared memory + TMA store (TMA_STORE = 1) ---------------------------------
__device__ __forceinline__ void stmatrix_x4(u32 addr, u32 r0, u32 r1, u32 r2, u32 r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n"
               ::"r"(addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
}
// bar.sync on a named barrier with `count` threads (PTX ISA "bar.sync"; id 0 is __syncthreads).
__device__ __forceinline__ void named_barrier_sync(u32 id, u32 count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// One consumer warpgroup's C rows → shared memory → global, chunk by chunk (see the header).
// `chunk` counts this warpgroup's chunks across tiles (buffer = chunk mod 2).
__device__ __forceinline__ void store_c_tma(const float (&acc)[kAtoms][kAcc], const TmaDesc& tc,
                                            u32 cbuf, u32 bar_id, bool elected, int row0, int n0,
                                            u32& chunk) {
  const int w = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
  const int m = lane >> 3;                                   // the 8×8 matrix this lane addresses
  const int row = 16 * w + (lane & 7) + 8 * (m & 1);         // its row in the 64-row chunk
#pragma unroll
  for (int i = 0; i < kAtoms; ++i) {
#pragma unroll
    for (int q = 0; q < kChunksN; ++q, ++chunk) {
      const u32 buf = cbuf + (chunk & 1u) * kChunkBytes;
      if (elected) bulk_wait_group_read<1>();              // the buffer's previous store read it
      named_barrier_sync(bar_id, 128);
#pragma unroll
      for (int jl = 0; jl < 8; jl += 2) {                    // two 8-column blocks per stmatrix
        const int j = 4 * (8 * q + jl);                      // accumulator index of block 8q + jl
        const u32 cl = (u32)(jl + (m >> 1));                 // 16-byte column of this lane's row
        const u32 addr = buf + row * 128 + ((cl ^ (u32)(row & 7)) << 4);
        stmatrix_x4(addr, cvt_rn_x2_f32<C_DT>(acc[i][j], acc[i][j + 1]),
                    cvt_rn_x2_f32<C_DT>(acc[i][j + 2], acc[i][j + 3]),
                    cvt_rn_x2_f32<C_DT>(acc[i][j + 4], acc[i][j + 5]),
                    cvt_rn_x2_f32<C_DT>(acc[i][j + 6], acc[i][j + 7]));
      }
      fence_proxy_async_shared_cta();                        // generic writes → async proxy
      named_barrier_sync(bar_id, 128);
      if (elected) {
        tma_store_2d(tc, buf, n0 + 64 * q, row0 + 64 * i);
        bulk_commit_group();
      }
    }
  }
}

#if PINGPONG
// Move ring position `pos` on by n ≥ 0 k-tiles (the other consumer's tile): the phase flips once
// per wrap of the stage index.
__device__ __forceinline__ void ring_skip(RingState<STAGES>& pos, int n) {
  const int s = pos.stage + n;
  pos.phase ^= (u32)((s / STAGES) & 1);
  pos.stage = s % STAGES;
}
#endif

#if SPLIT_K > 1 && SPLITK_FIXUP
#include "splitk_fixup.cuh"   // the split-K sum inside this kernel
#endif

#if LAUNCH_BOUNDS
#define WS_LAUNCH_BOUNDS __launch_bounds__(kThreads, 1)
#else
#define WS_LAUNCH_BOUNDS
#endif

extern "C" __global__ void WS_LAUNCH_BOUNDS
    gemm_warp_specialized(const __grid_constant__ TmaDesc ta, const __grid_constant__ TmaDesc tb,
                          const __grid_constant__ TmaDesc tc, void* __restrict__ c, int M, int N,
                          int K, u64 desc_a0, u64 desc_b0, u32* __restrict__ err,
                          u64* __restrict__ trace, const float* __restrict__ scales
#if EDGES
                          , int ldc
#endif
#if SPLIT_K > 1 && SPLITK_FIXUP
                          , float* __restrict__ ws, u32* __restrict__ flags
#endif
#if BLOCK_SCALES
                          , const float* __restrict__ sa, const float* __restrict__ sb
#endif
#if TILE_ORDER
                          , const int* __restrict__ order   // tile_order.cuh: the order table
#endif
                          ) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ alignas(8) u64 full_storage[STAGES];
  __shared__ alignas(8) u64 empty_storage[STAGES];
#if PINGPONG
  __shared__ alignas(8) u64 order_storage[2];                // the consumers' ordered barrier
#endif
  const u32 base = (smem_u32(smem_raw) + 1023u) & ~1023u;   // stage s at base + s · kStageBytes
  const StageBarriers full{smem_u32(full_storage), WAIT_FULL, err};      // the ring (ring.cuh)
  EmptyBarriers empty{{smem_u32(empty_storage), WAIT_EMPTY, err}, 0u};
  const int wg = threadIdx.x >> 7;                           // 0 producer, 1.. consumers
#if EDGES
  // Round up: the last k-tile, tile row and tile column may hang past K, M, N (TMA zero-fills);
  // with CLUSTER = 2 whole clusters of tile rows.
  const int T = (K + BK - 1) / BK;
  const int tiles_m = (M + BM * CLUSTER - 1) / (BM * CLUSTER) * CLUSTER;
  const int tiles_n = (N + BN - 1) / BN;
#else
  const int T = K / BK;
  const int tiles_m = M / BM, tiles_n = N / BN;
#endif
  // Work items (tiles, or with CLUSTER = 2 pairs of tiles) of this CTA: its cluster's index, then
  // (PERSISTENT) + the number of clusters, ... (uniform across the CTA and its cluster).
#if SPLIT_K > 1
  const int n_items = tiles_m / CLUSTER * tiles_n * SPLIT_K;     // (tile, split) pairs
#else
  const int n_items = tiles_m / CLUSTER * tiles_n;
#endif
  const int first_item = blockIdx.x / CLUSTER;
  const int item_step = PERSISTENT ? (int)gridDim.x / CLUSTER : n_items;
  const u32 rank = CLUSTER == 2 ? cluster_ctarank() : 0u;
  empty.rank = rank;

  if (threadIdx.x == 0) {
    tma_prefetch_desc(ta);
    tma_prefetch_desc(tb);
    if constexpr (TMA_STORE) tma_prefetch_desc(tc);
    for (int s = 0; s < STAGES; ++s) {
      mbarrier_init(full[s], 1);
      mbarrier_init(empty[s], (PINGPONG ? 1 : CONSUMERS) * CLUSTER);
    }
#if PINGPONG
    mbarrier_init(smem_u32(&order_storage[0]), 1);
    mbarrier_init(smem_u32(&order_storage[1]), 1);
#endif
    fence_mbarrier_init();
  }
  if constexpr (CLUSTER == 2)
    cluster_sync();                  // both CTAs' barriers initialised before any multicast/arrive
  else
    __syncthreads();

  Trace tr{nullptr, 0};
  if (wg == 0) {
    // ---------------- producer warpgroup ----------------
    if constexpr (SETMAXNREG) setmaxnreg_dec<PRODUCER_REGS>();
    if (threadIdx.x == 0) {                                  // one thread issues every TMA
      tr.open(trace, 0);
      RingState<STAGES> pos{0, 0u};                          // stage, phase of ring counter i
      u32 ring = 0;                                          // ring counter
      bool ok = true;
      for (int item = first_item; ok && item < n_items; item += item_step) {   // this CTA's tiles
        int m0, n0;
#if SPLIT_K > 1
        const int split = item % SPLIT_K;
        TILE_ORIGIN(item / SPLIT_K, m0, n0);
        for (int k = split * T / SPLIT_K; k < (split + 1) * T / SPLIT_K; ++k, ++ring) {
#else
        TILE_ORIGIN(item, m0, n0);                           // the tile's first row and column of C
        for (int k = 0; k < T; ++k, ++ring) {
#endif
          tr.event(EV_EMPTY_BEGIN, pos.stage, ring);
          if (!empty.wait(pos.stage, pos.phase ^ 1u, 0, k)) {    // the previous fill was read
            ok = false;                                      // error recorded; stop loading
            break;
          }
          tr.event(EV_EMPTY_END, pos.stage, ring);
          if (TMA_ONCE && ring >= (u32)STAGES)               // chapter 07's wgmma-only diagnostic:
            full.arrive(pos.stage);                          // the stage keeps its first fill
          else
            load_stage(ta, tb, base + pos.stage * kStageBytes, full[pos.stage], k, m0, n0);
          tr.event(EV_TMA_ISSUED, pos.stage, ring);
          pos.advance();
        }
      }
    }
    tr.close();
    if constexpr (CLUSTER == 1) return;                      // the idle producer threads leave
    __syncwarp();
  } else {
    // ---------------- consumer warpgroups ----------------
    if constexpr (SETMAXNREG) setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = wg - 1;
    const bool elected = (threadIdx.x & 127) == 0;
    const bool releases = !(BREAK == 1 && cw == CONSUMERS - 1);
    const int wrow = PINGPONG ? 0 : cw * kWgRows;          // this consumer's first row of the tile
    // Descriptors of stage 0: this consumer's rows of A (da0) and B, which follows A (db0).
    const u64 da0 = wgmma_desc_at(desc_a0, base + (PINGPONG ? 0 : cw) * kAtoms * kAtomBytes);
    const u64 db0 = wgmma_desc_at(desc_b0, base + kATileBytes);
    float acc[kAtoms][kAcc];  // kAtoms 64-row wgmma blocks × kAcc fp32 accumulators per thread
    float tot[kAtoms][kAcc];                 // PROMOTE: the fp32 sums (fp8_promote.cuh; else unused)
    RingState<STAGES> pos{0, 0u};                            // stage, phase of ring counter i
    bool broken = false;                                     // a wait gave up: skip the later waits
    u32 chunk = 0;                                           // TMA_STORE: chunks stored so far
    u32 ring = 0;                                            // ring counter
    tr.open(trace, wg);
    const u32 cbuf = base + STAGES * kStageBytes + cw * 2 * kChunkBytes;
#if PINGPONG
    int local = 0, mine = 0;                                 // the CTA's tiles, this consumer's
#endif
    // This CTA's tiles: one; with PERSISTENT, one in every item_step (the grid's size in clusters).
    for (int item = first_item; item < n_items; item += item_step) {
#if PINGPONG
      if ((local++ & 1) != cw) {                             // the other consumer's tile
        ring_skip(pos, T);
        ring += T;
        continue;
      }
      {                                                      // wait for the other's k-loop
        const u32 ob = smem_u32(&order_storage[cw]);
        tr.event(EV_ORDER_BEGIN, cw, ring);
        if (!broken && !ring_wait_bounded(ob, (u32)(mine & 1) ^ (cw == 0 ? 1u : 0u), err,
                                          ring_wait_tag(WAIT_ORDER, cw, wg, mine)))
          broken = true;
        tr.event(EV_ORDER_END, cw, ring);
        ++mine;
      }
#endif
      int m0, n0;
#if SPLIT_K > 1
      const int split = item % SPLIT_K;
      const int k_lo = split * T / SPLIT_K, k_hi = (split + 1) * T / SPLIT_K;
      TILE_ORIGIN(item / SPLIT_K, m0, n0);
#else
      TILE_ORIGIN(item, m0, n0);                             // the tile's first row and column of C
#endif
#pragma unroll
      for (int i = 0; i < kAtoms; ++i)
#pragma unroll
        for (int j = 0; j < kAcc; ++j) acc[i][j] = 0.f;
      clear_totals(tot);
      int prev = 0;                                          // k-tile k − 1's stage: the one released
#if SPLIT_K > 1
      for (int k = k_lo; k < k_hi; ++k, ++ring) {
#else
      for (int k = 0; k < T; ++k, ++ring) {
#endif
        float bs[kAtoms][2];                 // BLOCK_SCALES: this k-tile's scale products (else unused)
#if BLOCK_SCALES
        load_block_scales(bs, sa, sb, m0 + wrow, n0, k, T);
#endif
        tr.event(EV_FULL_BEGIN, pos.stage, ring);
        if (!broken && !full.wait(pos.stage, pos.phase, wg, k)) broken = true;
        tr.event(EV_FULL_END, pos.stage, ring);
        tr.event(EV_MMA_ISSUE, pos.stage, ring);
        fence_accumulators(acc);
        mma_ktile(acc, wgmma_desc_advance(da0, pos.stage * kStageBytes),
                  wgmma_desc_advance(db0, pos.stage * kStageBytes));
        wgmma_wait_group<1>();                               // k-tile k − 1 is complete
        fence_accumulators(acc);
        tr.event(EV_WAIT_DONE, pos.stage, ring);
#if SPLIT_K > 1
        if (k > k_lo && elected && releases) {
#else
        if (k > 0 && elected && releases) {
#endif
          empty.arrive(prev);                          // one elected thread per consumer
          tr.event(EV_RELEASE, prev, ring - 1);
        }
        promote(acc, tot, bs, k, T);                         // PROMOTE only (fp8_promote.cuh)
        prev = pos.stage;
        pos.advance();
      }
#if PINGPONG
      // the last k-tile is issued: the other consumer's k-loop may start (BREAK 2: never from wg 2)
      if (elected && !(BREAK == 2 && cw == 1)) mbarrier_arrive(smem_u32(&order_storage[cw ^ 1]));
#endif
      wgmma_wait_group<0>();
      fence_accumulators(acc);
      tr.event(EV_LOOP_END, prev, ring - 1);
      if (elected && releases) {
        empty.arrive(prev);                            // the tile's last k-tile
        tr.event(EV_RELEASE, prev, ring - 1);
      }
      __syncwarp();
      auto finish = [&](float (&res)[kAtoms][kAcc]) {
        apply_tensor_scales(res, scales);                    // fp8 only
#if EDGES
        // Rows past M (a cluster rank's whole tile, or a consumer's half of it): nothing to store.
        // The TMA store clips the rest at the tensor map's dims; the register epilogue per element.
        if (m0 + wrow < M) {
#if SPLIT_K > 1
          (void)cbuf;                                        // no TMA store: unused
          (void)chunk;
#if SPLITK_FIXUP
          splitk_fixup(res, ws, flags, c, ldc, split,
                       ((item / SPLIT_K) * CLUSTER + (int)rank) * CONSUMERS + cw, 1 + cw, elected,
                       m0 + wrow, n0, M, N);
#else
          store_c_clipped(res, static_cast<float*>(c) + (size_t)split * M * ldc, ldc,
                          m0 + wrow, n0, M, N);              // this split's fp32 partial
#endif
#else
          if constexpr (TMA_STORE)
            store_c_tma(res, tc, cbuf, 1 + cw, elected, m0 + wrow, n0, chunk);
          else
            store_c_clipped(res, c, ldc, m0 + wrow, n0, M, N);
#endif
        }
#else
        if constexpr (TMA_STORE)
          store_c_tma(res, tc, cbuf, 1 + cw, elected, m0 + wrow, n0, chunk);
        else
          store_c(res, c, N, m0 + wrow, n0);
#endif
      };
      if constexpr (PROMOTE > 0)
        finish(tot);
      else
        finish(acc);
      tr.event(EV_STORE_END, 0, ring - 1);
    }
    tr.close();
    if constexpr (TMA_STORE) {
      if (elected) bulk_wait_group<0>();                     // every store written
    }
    // barrier.cluster.*.aligned below: the warp reconverges after the elected-thread code first
    if constexpr (CLUSTER == 2) __syncwarp();
  }
  if constexpr (CLUSTER == 2) cluster_sync();   // no CTA leaves while its peer may still arrive
}
