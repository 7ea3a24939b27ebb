// The stage ring of chapters 05 and 06 (pipeline.cu, warp_specialization.cu): STAGES shared-memory
// stages, each guarded by two mbarriers (PTX ISA "mbarrier"):
//   full[s]  — the producer's arrive.expect_tx(stage bytes) + TMA's complete_tx: the fill landed;
//   empty[s] — one arrival per consumer warpgroup (× CTAs sharing the stage): the stage was read.
// The i-th fill of the ring goes to stage i mod S and is that stage's (i / S)-th fill, so a
// consumer waits on full[s] for parity (i / S) mod 2 and the producer, before refilling, on
// empty[s] for the parity of the previous fill of s, ((i / S) mod 2) xor 1 (on the first pass
// that is 1, which a fresh barrier reports complete: ptx/mbarrier.cuh).
//
// RingState is the position i kept without division (CUTLASS calls its counterpart PipelineState:
// an index and a phase that flips when the index wraps).
#pragma once
#include "ptx/common.cuh"

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
