// The defaults of the defines chapter 05's ring kernel (pipeline.cu) and chapter 06's
// warp-specialized kernel (warp_specialization.cu) share: the tile, the ring, the output, the raster,
// the trace, the deliberate breaks and the layout model's byte offsets. Python (asynctc.pipeline,
// asynctc.warp_specialization) passes every one of them that differs from the default; each kernel
// checks them with static_assert and adds its own defines after including this file.
//
//   DT            input dtype: 0 f16, 1 bf16 (chapter 06 also 2 e4m3, 3 e5m2: fp8_promote.cuh)
//   BM, BN, BK    CTA tile rows, columns, and elements of K per k-tile (one 128-byte box row)
//   STAGES        shared-memory stages of the ring
//   CONSUMERS     consumer warpgroups (1, 2)
//   B_MAJOR       0: B stored N×K (K-major); 1: stored K×N (MN-major)
//   OUT_F32       1: C in fp32; 0: C in a 16-bit type
//   GROUP_M       tile rows per raster group (L2 reuse)
//   TRACE, TRACE_CTAS, TRACE_EVENTS   event trace (0 off), CTAs traced, events per slot
//   BREAK         0; the deliberate protocol errors (each kernel's header says which)
//   A_KSTEP_BYTES, B_KSTEP_BYTES, B_BOX_BYTES, A_ATOM_BYTES   the layout model's byte offsets: a
//                 k16 step of A and of B, one TMA box of B, one m64 atom of A (chapter 06 reads
//                 A_ATOM_BYTES; chapter 05's atoms are always 64 rows × 128 bytes apart)
#pragma once

#ifndef DT
#define DT 0
#endif
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 64
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef CONSUMERS
#define CONSUMERS 2
#endif
#ifndef B_MAJOR
#define B_MAJOR 0
#endif
#ifndef OUT_F32
#define OUT_F32 1
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef TRACE
#define TRACE 0
#endif
#ifndef TRACE_CTAS
#define TRACE_CTAS 4
#endif
#ifndef TRACE_EVENTS
#define TRACE_EVENTS 2048
#endif
#ifndef BREAK
#define BREAK 0
#endif
#ifndef A_KSTEP_BYTES
#define A_KSTEP_BYTES 32
#endif
#ifndef B_KSTEP_BYTES
#define B_KSTEP_BYTES (B_MAJOR ? 2048 : 32)
#endif
#ifndef B_BOX_BYTES
#define B_BOX_BYTES (B_MAJOR ? 8192 : BN * 128)
#endif
#ifndef A_ATOM_BYTES
#define A_ATOM_BYTES (64 * 128)
#endif
