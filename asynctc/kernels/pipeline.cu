// Chapter 05 — a pipelined GEMM: a ring of STAGES shared-memory stages filled by TMA, guarded by
// two mbarriers per stage, consumed by wgmma.  C (M×N fp32, or the input dtype) = A (M×K) · B (K×N).
//
//   A: M×K row-major (K-major), one TMA box of BM rows × 64 columns per stage.
//   B: B_MAJOR 0: stored N×K row-major (K-major), one box of BN rows × 64 columns per stage;
//      B_MAJOR 1: stored K×N row-major (N-major = MN-major), BN/64 boxes of 64 K-rows × 64 columns.
//   Every box is 128 bytes wide with the 128-byte swizzle, so a stage is (BM + BN) · 128 bytes and
//   each wgmma reads it through a descriptor (start + LBO/SBO + swizzle mode) made on the host
//   (asynctc.pipeline: the descriptor of stage 0, k-step 0, at shared address 0) and advanced here
//   by byte offsets (wgmma_desc_advance).
//
// The ring protocol (what the chapter's diagram draws; names from the PTX ISA):
//   full[s]  — arrive count 1: the producer's mbarrier.arrive.expect_tx(stage bytes); the phase
//              completes when TMA's complete_tx has delivered all those bytes.
//   empty[s] — arrive count CONSUMERS: one elected thread per consumer warpgroup arrives once the
//              wgmmas that read stage s have completed (wgmma.wait_group).
//   k-tile k lives in stage k mod S and is the (k / S)-th fill of that stage, so its full-barrier
//   phase has parity (k / S) mod 2. The producer refills a stage for fill f ≥ 1 after the
//   (f−1)-th release: it waits on empty[s] with parity (f−1) mod 2 = ((k / S) mod 2) xor 1. For the
//   first pass (f = 0) that parity is 1, and a fresh barrier (in phase 0) reports the "preceding"
//   phase 1 as complete, so the wait passes at once (ptx/mbarrier.cuh).
//
//   prologue:  the producer fills min(S, T) stages (T = K / 64 k-tiles): k-tiles 0 .. S−1.
//   k-tile k:  every thread waits full[k mod S]; the warpgroup issues BK/16 k-steps of wgmma
//              (× its m64 atoms), commits them as one group and waits until at most WAIT_PENDING
//              groups are pending. Then r = k − WAIT_PENDING (the k-tile whose wgmmas are now
//              known complete) is released: thread 0 of each warpgroup arrives on empty[r mod S].
//              Then the producer (thread 0 of warpgroup 0) refills that stage with k-tile
//              t = r + S: it waits on empty[t mod S] with t's phase xor 1 (all CONSUMERS
//              releases of r), arrive.expect_tx on full[t mod S] and issues the TMA boxes.
//              With WAIT_PENDING = 1 that is k-tile k + S − 1 (one group stays in flight while
//              the next k-tile is waited for); with WAIT_PENDING = 0 it is k + S. STAGES = 1
//              forces WAIT_PENDING = 0 (the only stage is still being read by the pending
//              group): load, wait, compute, release, load next — fully serial.
//
// Why the producer, which is also a consumer, cannot deadlock on empty[r mod S]: it needs the other
// warpgroup's release of k-tile r, made by that warpgroup at the end of *its* iteration k (= r +
// WAIT_PENDING). To get there the other warpgroup needs (a) full[k mod S] complete — k-tile k was
// loaded by the producer in the prologue or at the end of iteration k − S + WAIT_PENDING ≤ k − 1
// (S ≥ 1 with WAIT_PENDING = 0, S ≥ 2 with WAIT_PENDING = 1), i.e. strictly before the producer's
// current wait — and (b) its own wgmma groups to complete, which needs nothing from any thread.
// No other wait (no __syncthreads) sits in the loop. So every wait the producer makes depends only
// on work already issued, and the other warpgroup never waits on the producer's current iteration.
// The producer's own warpgroup released r before the producer waits (program order).
//
// Proxies: TMA writes and wgmma reads of the stages both go through the async proxy, ordered by
// the mbarriers (complete_tx → try_wait acquire; wait_group → arrive release → try_wait → TMA), so
// no fence.proxy.async is needed; the epilogue writes C from registers straight to global memory
// (no shared-memory staging, hence no generic→async proxy crossing either).
//
// Every wait is bounded (StageBarriers::wait, ring.cuh): a broken variant writes an error word
// that names the wait (barrier, stage, k-tile, warpgroup: ring_wait_tag) and finishes instead of
// hanging the GPU; asynctc.pipeline raises it as an error (decode_error).
//
// Trace (TRACE = 1): thread 0 of each consumer warpgroup of CTAs blockIdx.x < TRACE_CTAS writes
// fixed-size events (clock64, %globaltimer, kind | stage | k-tile) into its own slot of `trace`
// (no atomics; the first CTAs are the first wave, each on its own SM, SM id in the header).
// Layout per (CTA, warpgroup) slot, in u64: [0] %globaltimer at start, [1] clock64 at start,
// [2] %smid | blockIdx.x << 32, [3] events attempted, then TRACE_EVENTS records of 2 u64:
// clock64, (%globaltimer low 32 bits) << 32 | kind | stage << 4 | k << 8. Decoded by
// asynctc.pipeline.decode_trace.
//
// Defines: DT (0 f16, 1 bf16), BM, BN, BK (64), STAGES (1..6), CONSUMERS (1, 2), B_MAJOR (0, 1),
// WAIT_PENDING (0, 1), TRACE (0, 1), TRACE_CTAS, TRACE_EVENTS, OUT_F32 (1: fp32 C; 0: C in DT),
// GROUP_M (CTA rows per raster group), MIN_BLOCKS (__launch_bounds__ minimum of resident CTAs,
// 1 or 2), A_KSTEP_BYTES / B_KSTEP_BYTES / B_BOX_BYTES (the layout model's byte offsets, from
// asynctc.pipeline; checked against this file's own by static_assert), BREAK (0; 1 and 2 break
// the protocol on purpose to show the bounded waits, see above), LOADS_ONLY (0; 1: the consumers
// issue no wgmma and store no C — the same ring moves the same tiles and nothing reads them: the
// rate at which L2 and TMA feed one SM in this access pattern, asynctc.pipeline.supply_suite).
// Arguments: ta, tb (tensor maps of A and B), c (M×N), M, N, K, desc_a0, desc_b0 (descriptors of
// stage 0, k-step 0 at shared address 0), err (one u32, 0 = ok), trace (u64 buffer or null).
// Dynamic shared memory: 1024 (alignment slack) + STAGES · (BM + BN) · 128 bytes.

#include "ptx/common.cuh"
#include "ptx/cvt.cuh"
#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"
#include "ring.cuh"

#include "ring_defaults.cuh"   // DT, BM, BN, BK, STAGES, CONSUMERS, B_MAJOR, OUT_F32, GROUP_M, TRACE*,
                               // BREAK, the layout model's byte offsets (shared with chapter 06)
#ifndef WAIT_PENDING
#define WAIT_PENDING 1
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#ifndef LOADS_ONLY
#define LOADS_ONLY 0
#endif
// BREAK: deliberate protocol errors (asynctc.pipeline.run_broken only): 1 expect_tx 16 bytes more
// than the boxes deliver; 2 warpgroup 1 never releases a stage.

static_assert(DT == 0 || DT == 1, "DT: 0 f16, 1 bf16");
static_assert(BK == 64, "BK = 64: one 128-byte swizzle row of K per box row");
static_assert(STAGES >= 1 && STAGES <= 6, "STAGES: 1..6");
static_assert(CONSUMERS == 1 || CONSUMERS == 2, "CONSUMERS: 1 or 2 warpgroups");
static_assert(BM % (64 * CONSUMERS) == 0 && BM <= 256, "each warpgroup owns whole m64 atoms");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN: 64, 128 or 256 (one wgmma n = BN)");
static_assert(WAIT_PENDING == 0 || WAIT_PENDING == 1, "WAIT_PENDING: 0 or 1");

constexpr int kThreads = 128 * CONSUMERS;
constexpr int kWgRows = BM / CONSUMERS;           // C rows per consumer warpgroup
constexpr int kAtoms = kWgRows / 64;              // m64 wgmma rows per warpgroup
constexpr int kAcc = BN / 2;                      // fp32 accumulators per thread per atom
constexpr int kKSteps = BK / 16;                  // m64nBNk16 instructions along one k-tile
constexpr u32 kRowBytes = 128;                    // one swizzled box row: 64 × 2 bytes
constexpr u32 kATileBytes = BM * kRowBytes;
constexpr u32 kBTileBytes = BN * kRowBytes;
constexpr u32 kStageBytes = kATileBytes + kBTileBytes;
constexpr u32 kAtomBytes = 64 * kRowBytes;        // A: next m64 atom = 64 rows further
constexpr int kPending = STAGES == 1 ? 0 : WAIT_PENDING;
static_assert(kAtoms * kAcc <= 128, "accumulators per thread above the 128-register budget");
static_assert(A_KSTEP_BYTES == 32, "A K-major: a k16 step is 32 bytes along the swizzled row");
static_assert(B_KSTEP_BYTES == (B_MAJOR ? 16 * kRowBytes : 32),
              "B: a k16 step is 16 K-rows (N-major) or 32 bytes (K-major)");
static_assert(B_BOX_BYTES == (B_MAJOR ? 64 * kRowBytes : BN * kRowBytes), "B box size");
static_assert(kStageBytes % 1024 == 0, "stage bases must stay on the 1024-byte swizzle repeat");

// ---- trace -----------------------------------------------------------------------------------
enum TraceKind : u32 {
  EV_TMA_ISSUED = 0,      // producer: both operands' TMA issued for k-tile k into stage s
  EV_EMPTY_BEGIN = 1,     // producer: empty-barrier wait begun
  EV_EMPTY_END = 2,       //           ... ended
  EV_FULL_BEGIN = 3,      // full-barrier wait begun
  EV_FULL_END = 4,        // ... ended (k-tile k is in shared memory)
  EV_MMA_ISSUE = 5,       // about to issue k-tile k's wgmmas
  EV_WAIT_DONE = 6,       // wgmma.wait_group returned in iteration k (k − WAIT_PENDING complete)
  EV_RELEASE = 7,         // arrived on empty[s] for k-tile k
  EV_LOOP_END = 8,        // after the final wait_group 0 (k = T)
  EV_STORE_END = 9,       // epilogue stores issued
};

struct Trace {
  u64* slot;   // this lane's slot, or null when this thread does not trace
  u32 n;
  __device__ __forceinline__ void event(u32 kind, u32 stage, u32 k) {
    if constexpr (TRACE) {
      if (slot) {
        if (n < TRACE_EVENTS) {
          const u64 c = clock64();
          const u64 g = globaltimer();
          slot[4 + 2 * n] = c;
          slot[5 + 2 * n] = (g << 32) | (u64)(kind | (stage << 4) | (k << 8));
        }
        ++n;
      }
    }
  }
};

// ---- raster: group-M swizzle for L2 reuse (as chapter 01's kernel) ----------------------------
__device__ __forceinline__ void cta_origin(int M, int N, int& m0, int& n0) {
  const int tiles_m = M / BM, tiles_n = N / BN;
  const int bid = blockIdx.x;
  const int first_m = bid / (GROUP_M * tiles_n) * GROUP_M;
  const int rows_in_group = min(tiles_m - first_m, GROUP_M);
  m0 = (first_m + (bid % (GROUP_M * tiles_n)) % rows_in_group) * BM;
  n0 = (bid % (GROUP_M * tiles_n)) / rows_in_group * BN;
}

// ---- the producer's half: fill one stage with k-tile kt -----------------------------------------
__device__ __forceinline__ void load_stage(const TmaDesc& ta, const TmaDesc& tb, u32 stage_addr,
                                           u32 full_bar, int kt, int m0, int n0) {
  mbarrier_arrive_expect_tx(full_bar, kStageBytes + (BREAK == 1 ? 16 : 0));
  tma_load_2d(stage_addr, ta, full_bar, kt * BK, m0);                       // A: BM × 64
  if constexpr (B_MAJOR == 0) {
    tma_load_2d(stage_addr + kATileBytes, tb, full_bar, kt * BK, n0);        // B: BN × 64
  } else {
#pragma unroll
    for (int j = 0; j < BN / 64; ++j)                                        // B: 64 K-rows × 64
      tma_load_2d(stage_addr + kATileBytes + j * B_BOX_BYTES, tb, full_bar, n0 + 64 * j, kt * BK);
  }
}

#include "wgmma_ring.cuh"   // fence_accumulators, mma_ktile, store_c

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS)
    gemm_pipeline(const __grid_constant__ TmaDesc ta, const __grid_constant__ TmaDesc tb,
                  void* __restrict__ c, int M, int N, int K, u64 desc_a0, u64 desc_b0,
                  u32* __restrict__ err, u64* __restrict__ trace) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ alignas(8) u64 full_storage[STAGES];
  __shared__ alignas(8) u64 empty_storage[STAGES];
  const u32 raw = smem_u32(smem_raw);
  const u32 base = (raw + 1023u) & ~1023u;       // stage s at base + s · kStageBytes
  const StageBarriers full{smem_u32(full_storage), WAIT_FULL, err};      // the ring (ring.cuh)
  const StageBarriers empty{smem_u32(empty_storage), WAIT_EMPTY, err};
  const int tid = threadIdx.x;
  const int wg = tid >> 7;                        // consumer warpgroup
  const bool producer = tid == 0;                 // thread 0 of warpgroup 0 issues every TMA
  const bool elected = (tid & 127) == 0;          // one releasing thread per warpgroup
  const int T = K / BK;
  int m0, n0;
  cta_origin(M, N, m0, n0);

  Trace tr{nullptr, 0};
  if constexpr (TRACE) {
    if (trace && elected && blockIdx.x < TRACE_CTAS) {
      tr.slot = trace + (size_t)(blockIdx.x * CONSUMERS + wg) * (4 + 2 * TRACE_EVENTS);
      tr.slot[0] = globaltimer();
      tr.slot[1] = clock64();
      tr.slot[2] = (u64)smid() | ((u64)blockIdx.x << 32);
    }
  }

  if (producer) {
    tma_prefetch_desc(ta);
    tma_prefetch_desc(tb);
    for (int s = 0; s < STAGES; ++s) {
      mbarrier_init(full[s], 1);
      mbarrier_init(empty[s], CONSUMERS);
    }
    fence_mbarrier_init();   // the inits, visible to the async proxy (complete_tx) and all threads
  }
  __syncthreads();

  bool broken = false;
  // Prologue: fill min(S, T) stages; the first pass needs no empty wait (see the header).
  if (producer) {
    for (int kt = 0; kt < STAGES && kt < T; ++kt) {
      load_stage(ta, tb, base + kt * kStageBytes, full[kt], kt, m0, n0);
      tr.event(EV_TMA_ISSUED, kt, kt);
    }
  }

  float acc[kAtoms][kAcc];
#pragma unroll
  for (int i = 0; i < kAtoms; ++i)
#pragma unroll
    for (int j = 0; j < kAcc; ++j) acc[i][j] = 0.f;

  // This warpgroup's A rows start kWgRows · wg rows into the stage's A tile.
  const u64 da0 = wgmma_desc_advance(desc_a0, base + wg * kWgRows * kRowBytes);
  const u64 db0 = wgmma_desc_advance(desc_b0, base + kATileBytes);

  RingState<STAGES> pos{0, 0u};     // k-tile k: stage k mod S, phase (k / S) mod 2
  RingState<STAGES> prev{0, 0u};    // k − 1, for WAIT_PENDING = 1
  for (int k = 0; k < T; ++k) {
    // 1. wait until k-tile k is in shared memory
    tr.event(EV_FULL_BEGIN, pos.stage, k);
    if (!broken && !full.wait(pos.stage, pos.phase, wg, k)) broken = true;
    tr.event(EV_FULL_END, pos.stage, k);

    // 2. issue its wgmmas as one group; wait until at most kPending groups are in flight
    tr.event(EV_MMA_ISSUE, pos.stage, k);
    fence_accumulators(acc);
    if constexpr (!LOADS_ONLY)
      mma_ktile(acc, wgmma_desc_advance(da0, pos.stage * kStageBytes),
                wgmma_desc_advance(db0, pos.stage * kStageBytes));
    wgmma_wait_group<kPending>();
    fence_accumulators(acc);
    tr.event(EV_WAIT_DONE, pos.stage, k);

    // 3. release k-tile r = k − kPending (its wgmmas are complete) ... One elected thread per
    //    warpgroup arrives, once its own wgmma.wait_group has returned.
    const int r = k - kPending;                                // the released k-tile
    const int ts = kPending ? prev.stage : pos.stage;          // its stage (and its refill's)
    const u32 tp = (kPending ? prev.phase : pos.phase) ^ 1u;   // t's phase: f mod 2 of t's fill, f = t / S
    if (r >= 0) {
      if (elected && !(BREAK == 2 && wg == CONSUMERS - 1)) {
        empty.arrive(ts);
        tr.event(EV_RELEASE, ts, r);
      }
      // 4. ... and the producer refills the stage with k-tile t = r + S, the stage's next fill
      //    (its phase tp = (t / S) mod 2), once every warpgroup released r
      const int t = r + STAGES;
      if (producer && t < T && !broken) {
        tr.event(EV_EMPTY_BEGIN, ts, t);
        if (empty.wait(ts, tp ^ 1u, wg, t)) {      // the previous fill was read
          tr.event(EV_EMPTY_END, ts, t);
          load_stage(ta, tb, base + ts * kStageBytes, full[ts], t, m0, n0);
          tr.event(EV_TMA_ISSUED, ts, r + STAGES);   // = t (this spelling keeps the traced build's SASS)
        } else {
          broken = true;
        }
      }
      __syncwarp();
    }
    prev = pos;
    pos.advance();
  }
  wgmma_wait_group<0>();
  fence_accumulators(acc);
  tr.event(EV_LOOP_END, pos.stage, T);

  if constexpr (!LOADS_ONLY) store_c(acc, c, N, m0 + wg * kWgRows, n0);
  tr.event(EV_STORE_END, 0, T);
  if constexpr (TRACE) {
    if (tr.slot) tr.slot[3] = tr.n;
  }
}
