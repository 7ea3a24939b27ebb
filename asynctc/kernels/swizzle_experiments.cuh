// Chapter 07's experiments on chapter 06's kernel (warp_specialization.cu), compile-time switches
// that leave every other build byte for byte as it was: the narrower swizzles (SWIZZLE = 64, 32, 0),
// the 128-byte layout loaded as more boxes (ROW_BOXES), and wgmma without TMA in the loop
// (TMA_ONCE). Included by warp_specialization.cu after its tile constants (kRowBytes, kATileBytes,
// kStageBytes, kAtomBytes, kKSteps) and before wgmma_ring.cuh (which reads A_KSTEP_OFFSET /
// B_KSTEP_OFFSET). asynctc.swizzle builds and checks these variants; asynctc.warp_specialization
// WSConfig validates their fields and sets the defines.
#pragma once

// The swizzle experiment (SWIZZLE = 64, 32, 0; K-major A and B, CLUSTER = 1): a k-tile row
// of 128 bytes is K_BOXES TMA boxes of K_BOX_ELEMS elements along K (one per swizzle span, per 16
// bytes without swizzle), A_KBOX_BYTES / B_BOX_BYTES apart in the stage; a consumer's m64 atom
// starts A_ATOM_BYTES after the previous one; k-step s of a k-tile starts A_KSTEP_OFFSETS[s] /
// B_KSTEP_OFFSETS[s] bytes into the operand. Every one of these numbers comes from the layout
// model (asynctc.warp_specialization.WSConfig.swizzle_defines: asynctc.models.descriptors
// OperandTile), as do the descriptor templates desc_a0 / desc_b0 (layout type, LBO, SBO) and the
// tensor maps' boxes and swizzle. SWIZZLE = 128 (the default) sets none of them: the ladder's
// cubins stay byte for byte.
#ifndef SWIZZLE
#define SWIZZLE 128
#endif
#ifndef K_BOXES
#define K_BOXES 1
#endif
#ifndef K_BOX_ELEMS
#define K_BOX_ELEMS BK
#endif
#ifndef A_KBOX_BYTES
#define A_KBOX_BYTES (BM * 128)
#endif
// (A_ATOM_BYTES: ring_defaults.cuh.)
// ROW_BOXES = R > 1 (chapter 07: the TMA box count without the layout change): the 128-byte
// swizzle layout, byte for byte, but A and B each loaded as R boxes along the rows (BM/R rows of
// A, BN/R rows of B, one 128-byte row of K each), box r landing r · rows · 128 bytes into its
// tile — so a stage takes 2R cp.async.bulk.tensor issues like SWIZZLE = 64 / 32 / 0 with
// R = 2 / 4 / 8, while wgmma reads exactly the layout of R = 1. The layout stays identical
// because the TMA unit derives the 128-byte swizzle from the shared-memory destination address
// itself (bits [4,7) ^= bits [7,10): the XOR uses the address's 128-byte line index mod 8, CUDA
// C++ Programming Guide, "Tensor Memory Access", swizzle patterns and their pointer-offset
// formula (smem_ptr / 128) % 8; CUtensorMapSwizzle in the driver API's cuTensorMapEncodeTiled),
// and the pattern repeats every 8 rows = 1024 bytes: a box of a multiple of 8 rows starting on a
// 1024-byte boundary writes each element where the single box would have put it (checked on the
// CPU by asynctc.swizzle.stage_dry_run, whose TMA model is asynctc.models.layout.SmemTile).
// Every box counts towards the same complete_tx: expect_tx stays kStageBytes. 1 (the default)
// compiles warp_specialization.cu's load_stage unchanged (the ladder's and the swizzle variants' cubins stay byte for
// byte). asynctc.warp_specialization.WSConfig.row_boxes validates R and sets the tensor maps' box.
#ifndef ROW_BOXES
#define ROW_BOXES 1
#endif
// TMA_ONCE = 1 (chapter 07: wgmma without TMA in the loop — a diagnostic, NOT a GEMM): the
// producer loads only the CTA's first STAGES k-tiles (ring counter i < STAGES: k-tiles 0..S-1 of
// its first tile; Python requires K ≥ STAGES · BK) and, for every later k-tile, waits on empty[s]
// as always and then makes a plain mbarrier.arrive on full[s] — no expect_tx, no copy. full[s]'s
// arrival count stays 1: that one arrival with a tx-count of 0 completes the phase (PTX ISA
// "mbarrier": a phase completes when the pending arrival count and the tx-count are both zero;
// arrive.expect_tx is expect-tx(bytes) followed by the same arrive-on). The consumers are
// unchanged, so their wgmmas read stage i mod S over and over: C of each tile is
// Σ_k A₀(i_k mod S)·B₀(i_k mod S)ᵀ over the stages' contents (asynctc.swizzle.tma_once_reference).
// 0 (the default) compiles the producer unchanged (every other cubin stays byte for byte).
#ifndef TMA_ONCE
#define TMA_ONCE 0
#endif

static_assert(SWIZZLE == 128 || SWIZZLE == 64 || SWIZZLE == 32 || SWIZZLE == 0,
              "SWIZZLE: 128, 64, 32 or 0 bytes (CUtensorMapSwizzle)");
static_assert(SWIZZLE == 128 || (B_MAJOR == 0 && CLUSTER == 1),
              "SWIZZLE other than 128: K-major B and CLUSTER = 1 only");
static_assert(K_BOXES * K_BOX_ELEMS == BK, "the K boxes of a k-tile cover BK");
static_assert(ROW_BOXES == 1 || (SWIZZLE == 128 && B_MAJOR == 0 && CLUSTER == 1),
              "ROW_BOXES > 1: 128-byte swizzle, K-major B, CLUSTER = 1 only");
static_assert(ROW_BOXES >= 1 && BM % (8 * ROW_BOXES) == 0 && BN % (8 * ROW_BOXES) == 0,
              "ROW_BOXES: divides BM and BN into boxes of a multiple of 8 rows (the 1024-byte "
              "repeat of the 128-byte swizzle)");
static_assert(TMA_ONCE == 0 || (TMA_ONCE == 1 && PERSISTENT == 1 && CLUSTER == 1 && B_MAJOR == 0 &&
                                ROW_BOXES == 1 && EDGES == 0 && DT < 2),
              "TMA_ONCE: 0 or 1; built for the swizzle variants' base only (persistent, CLUSTER = 1, "
              "K-major B, ROW_BOXES = 1, no EDGES, 16-bit inputs)");

#if SWIZZLE == 128
static_assert(A_KSTEP_BYTES == 32, "A K-major: a k16 step is 32 bytes along the swizzled row");
static_assert(B_KSTEP_BYTES == (B_MAJOR ? 16 * kRowBytes : 32), "B k16 step");
static_assert(B_BOX_BYTES == (B_MAJOR ? 64 * kRowBytes : BN * kRowBytes), "B box size");
#else
// k-step offsets from the layout model (braced lists of kKSteps byte offsets), used by mma_ktile
__device__ __forceinline__ constexpr u32 a_kstep_offset(int s) {
  constexpr u32 off[kKSteps] = A_KSTEP_OFFSETS;
  return off[s];
}
__device__ __forceinline__ constexpr u32 b_kstep_offset(int s) {
  constexpr u32 off[kKSteps] = B_KSTEP_OFFSETS;
  return off[s];
}
#define A_KSTEP_OFFSET(s) a_kstep_offset(s)
#define B_KSTEP_OFFSET(s) b_kstep_offset(s)
static_assert(A_KBOX_BYTES * K_BOXES == kATileBytes && B_BOX_BYTES * K_BOXES == kBTileBytes,
              "the K boxes of A and of B fill their tiles (no padding: expect_tx = stage bytes)");
static_assert(kAtomBytes * (BM / 64) == A_KBOX_BYTES, "the m64 atoms of A split each K box");
#endif

// ---- ROW_BOXES = R > 1: the stage's A and B as R boxes each along the rows (see above) ---------
// The producer's arrive.expect_tx (kStageBytes) comes first, in load_stage.
__device__ __forceinline__ void load_row_boxes(const TmaDesc& ta, const TmaDesc& tb, u32 stage_addr,
                                               u32 full_bar, int kt, int m0, int n0) {
  constexpr int kARows = BM / ROW_BOXES, kBRows = BN / ROW_BOXES;   // rows per box (≥ 8)
#pragma unroll
  for (int r = 0; r < ROW_BOXES; ++r)                                       // A: BM/R × 64, R×
    tma_load_2d(stage_addr + r * kARows * kRowBytes, ta, full_bar, kt * BK, m0 + r * kARows);
#pragma unroll
  for (int r = 0; r < ROW_BOXES; ++r)                                       // B: BN/R × 64, R×
    tma_load_2d(stage_addr + kATileBytes + r * kBRows * kRowBytes, tb, full_bar, kt * BK,
                n0 + r * kBRows);
}
