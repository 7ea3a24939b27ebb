// The stage ring of chapters 05 and 06 (pipeline.cu, warp_specialization.cu): STAGES shared-memory
// stages, each guarded by two mbarriers (PTX ISA "mbarrier"):
//   full[s]  — the producer's arrive.expect_tx(stage bytes) + TMA's complete_tx: the fill landed;
//   empty[s] — one arrival per consumer warpgroup (× CTAs sharing the stage): the stage was read.
// The i-th fill of the ring goes to stage i mod S and is that stage's (i / S)-th fill, so a
// consumer waits on full[s] for parity (i / S) mod 2 and the producer, before refilling, on
// empty[s] for the parity of the previous fill of s, ((i / S) mod 2) xor 1 (on the first pass
// that is 1, which a fresh barrier reports complete: ptx/mbarrier.cuh).
//
// What is here, and its counterpart in CUTLASS (include/cutlass/pipeline/sm90_pipeline.hpp):
//   RingState       the position i kept without division: stage and phase, advance() flips the
//                   phase when the stage wraps (PipelineState and its operator++);
//   StageBarriers   the ring's full or empty barriers: the address of barrier s, a bounded wait on
//                   one of its phases (the producer's wait on empty is producer_acquire, the
//                   consumers' wait on full is consumer_wait) and an arrive (on empty: a
//                   consumer's consumer_release). The producer's arrive.expect_tx on full with
//                   its TMA loads (producer_acquire's second half in CUTLASS) is each kernel's
//                   load_stage.
// Unlike CUTLASS's waits, every wait here is bounded: a broken protocol ends in an error word that
// names the wait (ring_wait_tag) instead of a hung GPU.
#pragma once
#include "ptx/common.cuh"
#include "ptx/mbarrier.cuh"

// The barrier field of the error tag (asynctc.pipeline.WAIT_TAGS).
#define WAIT_FULL 1u
#define WAIT_EMPTY 2u

// The tag a timed-out ring wait records, derived from the wait itself: the barrier (WAIT_FULL /
// WAIT_EMPTY), its stage, the warpgroup that waited and the k-tile it waited for (of its tile,
// modulo 4096). The error word is ASYNCTC_ERR_MBARRIER_TIMEOUT | tag << 8, i.e. bits 0-7 the code,
// 8-11 the barrier, 12-15 the stage, 16-19 the warpgroup, 20-31 the k-tile
// (asynctc.pipeline.ERROR_FIELDS, decode_error).
__device__ __forceinline__ u32 ring_wait_tag(u32 barrier, int stage, int warpgroup, int k_tile) {
  return barrier | ((u32)stage << 4) | ((u32)warpgroup << 8) | (((u32)k_tile & 0xFFFu) << 12);
}

// Wait for the phase with parity `parity` of `bar`. Fast path: one try_wait. Slow path: keep
// trying until it passes, until ASYNCTC_WAIT_MAX_NS of %globaltimer have passed (then record
// ASYNCTC_ERR_MBARRIER_TIMEOUT | tag << 8 in *err, first error wins), or until another thread has
// already recorded an error (then give up at once, so a broken launch ends in about one timeout,
// not one per wait). Returns false when it gave up; the caller then skips its later waits and
// TMA issues. err may be null (then nothing is recorded, and only the timeout ends the wait).
__device__ __forceinline__ bool ring_wait_bounded(u32 bar, u32 parity, u32* err, u32 tag) {
  if (mbarrier_try_wait_parity(bar, parity)) return true;
  const u64 t0 = globaltimer();
  for (u32 i = 1;; ++i) {
    if (mbarrier_try_wait_parity(bar, parity)) return true;
    if ((i & 63) == 0) {
      if (err && *reinterpret_cast<volatile u32*>(err) != ASYNCTC_ERR_NONE) return false;
      if (globaltimer() - t0 > ASYNCTC_WAIT_MAX_NS) break;
    }
  }
  if (err) atomicCAS(err, ASYNCTC_ERR_NONE, ASYNCTC_ERR_MBARRIER_TIMEOUT | (tag << 8));
  return false;
}

template <int kStages>
struct RingState {
  int stage;   // i mod S
  u32 phase;   // (i / S) mod 2: the parity of this fill of `stage`
  // i → i + 1
  __device__ __forceinline__ void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

// The ring's full (or empty) barriers: barrier s at shared address base + 8 s.
struct StageBarriers {
  u32 base;    // shared address of barrier 0
  u32 kind;    // WAIT_FULL or WAIT_EMPTY (the error tag's barrier field)
  u32* err;    // the kernel's error word (may be null)
  __device__ __forceinline__ u32 operator[](int s) const { return base + 8u * (u32)s; }
  // Bounded wait (ring_wait_bounded) for the phase with `parity` of barrier `stage`, made by
  // `warpgroup` for `k_tile`: those name the wait in the error word.
  __device__ __forceinline__ bool wait(int stage, u32 parity, int warpgroup, int k_tile) const {
    return ring_wait_bounded((*this)[stage], parity, err,
                             ring_wait_tag(kind, stage, warpgroup, k_tile));
  }
  // Arrive once on barrier `stage` (release semantics, CTA scope).
  __device__ __forceinline__ void arrive(int stage) const { mbarrier_arrive((*this)[stage]); }
};
