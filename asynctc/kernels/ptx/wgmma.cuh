// wgmma: warpgroup-wide, asynchronous Tensor Core matrix multiply-accumulate (sm_90a).
// PTX ISA 8.x/9.x, §9.7.15 "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions":
//   wgmma.fence.sync.aligned          §9.7.15.7.1  order prior register accesses before wgmma reads
//                                                  the accumulators / A fragments. Required before
//                                                  the first wgmma of a warpgroup and after any
//                                                  ordinary write to those registers (accumulator
//                                                  accesses between wgmmas of the same shape are
//                                                  ordered without it).
//   wgmma.mma_async.sync.aligned      §9.7.15.5.2  D = A·B (+ D when scale-d is true); A is 64×K
//                                                  from a shared-memory descriptor or from
//                                                  registers, B is K×N from a descriptor.
//   wgmma.commit_group.sync.aligned   §9.7.15.7.2  close the uncommitted wgmmas into one group.
//   wgmma.wait_group.sync.aligned N   §9.7.15.7.3  wait until at most N groups are pending. Reading
//                                                  the accumulators (or rewriting the A registers)
//                                                  before the wait that covers their wgmma is UB.
// Shared memory written by ordinary stores must be made visible to the async proxy
// (fence.proxy.async.shared::cta) before a wgmma reads it (§9.7.15.7.1, last paragraph).
//
// Shapes wrapped here: m64nNk16 with f16/bf16 inputs and m64nNk32 with e4m3/e5m2 inputs, fp32
// accumulators, N in {8, 16, 32, 64, 128, 256}. kDtype: 0 f16, 1 bf16, 2 e4m3, 3 e5m2 (A's type; the
// SS form takes B's as kDtypeB, default A's: mixed .e4m3.e5m2 / .e5m2.e4m3).
// kTransA / kTransB: 0 = K-major, 1 = MN-major (imm-trans-a / imm-trans-b; only f16/bf16 allow 1).
//
// Register fragments (§9.7.15.5.1.1; warp w = warp index in the warpgroup, g = lane/4, t = lane%4):
//   accumulator d[i], i in [0, N/2):   row 16w + g + 8*((i>>1)&1),  col 8*(i>>2) + 2t + (i&1)
//   A from registers, 16-bit (4 × b32): a[r] holds (row, k) and (row, k+1) with
//       row = 16w + g + 8*(r&1), k = 2t + 8*(r>>1)                    (the mma.m16n8k16 A layout)
//   A from registers, 8-bit (4 × b32):  a[r] holds (row, k .. k+3) with
//       row = 16w + g + 8*(r&1), k = 4t + 16*(r>>1)
// The shared-memory descriptor (64-bit) is built on the host by asynctc.models.descriptors; see its
// docstring for the bit fields (§9.7.15.5.1.2.2 "Matrix Descriptor Format").
#pragma once
#include "ptx/common.cuh"

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit_group() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int kPending>
__device__ __forceinline__ void wgmma_wait_group() {
  static_assert(kPending >= 0, "wgmma.wait_group takes a non-negative immediate");
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

// Not a PTX instruction: an empty asm that the compiler must assume reads and writes every
// accumulator register, so that no ordinary access to them is moved across a wgmma, commit or wait.
template <int R>
__device__ __forceinline__ void wgmma_fence_operand(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// A descriptor advanced by `bytes` (a multiple of 16): the start-address field is bits 0-13 in
// 16-byte units, so adding bytes >> 4 moves the start address. For an offset, or an address of a
// launch without clusters (below 256 KiB); an address from smem_u32 in a cluster launch goes through
// wgmma_desc_at, which masks it (ptx/common.cuh smem_desc_addr).
__device__ __forceinline__ u64 wgmma_desc_advance(u64 desc, u32 bytes) {
  return desc + (u64)(bytes >> 4);
}
// The descriptor template `desc` (start address 0) pointed at shared-memory address `addr`.
__device__ __forceinline__ u64 wgmma_desc_at(u64 desc, u32 addr) {
  return desc + smem_desc_addr(addr);
}

// ---- operand lists -------------------------------------------------------------------------
// Accumulators are the asm outputs %0 .. %(N/2-1); the inputs (descriptors, A registers, scale-d,
// transpose immediates) follow them, so their operand numbers depend on N: each shape below states
// them once. The strings of the accumulator operand numbers, eight at a time:
#define WGMMA_R8_0 "%0, %1, %2, %3, %4, %5, %6, %7"
#define WGMMA_R8_1 "%8, %9, %10, %11, %12, %13, %14, %15"
#define WGMMA_R8_2 "%16, %17, %18, %19, %20, %21, %22, %23"
#define WGMMA_R8_3 "%24, %25, %26, %27, %28, %29, %30, %31"
#define WGMMA_R8_4 "%32, %33, %34, %35, %36, %37, %38, %39"
#define WGMMA_R8_5 "%40, %41, %42, %43, %44, %45, %46, %47"
#define WGMMA_R8_6 "%48, %49, %50, %51, %52, %53, %54, %55"
#define WGMMA_R8_7 "%56, %57, %58, %59, %60, %61, %62, %63"
#define WGMMA_R8_8 "%64, %65, %66, %67, %68, %69, %70, %71"
#define WGMMA_R8_9 "%72, %73, %74, %75, %76, %77, %78, %79"
#define WGMMA_R8_10 "%80, %81, %82, %83, %84, %85, %86, %87"
#define WGMMA_R8_11 "%88, %89, %90, %91, %92, %93, %94, %95"
#define WGMMA_R8_12 "%96, %97, %98, %99, %100, %101, %102, %103"
#define WGMMA_R8_13 "%104, %105, %106, %107, %108, %109, %110, %111"
#define WGMMA_R8_14 "%112, %113, %114, %115, %116, %117, %118, %119"
#define WGMMA_R8_15 "%120, %121, %122, %123, %124, %125, %126, %127"

#define WGMMA_D4 "%0, %1, %2, %3"
#define WGMMA_D8 WGMMA_R8_0
#define WGMMA_D16 WGMMA_D8 ", " WGMMA_R8_1
#define WGMMA_D32 WGMMA_D16 ", " WGMMA_R8_2 ", " WGMMA_R8_3
#define WGMMA_D64 WGMMA_D32 ", " WGMMA_R8_4 ", " WGMMA_R8_5 ", " WGMMA_R8_6 ", " WGMMA_R8_7
#define WGMMA_D128 WGMMA_D64 ", " WGMMA_R8_8 ", " WGMMA_R8_9 ", " WGMMA_R8_10 ", " WGMMA_R8_11 \
  ", " WGMMA_R8_12 ", " WGMMA_R8_13 ", " WGMMA_R8_14 ", " WGMMA_R8_15

// The matching output constraints: "+f"(d[i]) .. "+f"(d[i + count - 1]).
#define WGMMA_F4(d, i) "+f"(d[(i)]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3])
#define WGMMA_F8(d, i) WGMMA_F4(d, i), WGMMA_F4(d, (i) + 4)
#define WGMMA_F16(d, i) WGMMA_F8(d, i), WGMMA_F8(d, (i) + 8)
#define WGMMA_F32(d, i) WGMMA_F16(d, i), WGMMA_F16(d, (i) + 16)
#define WGMMA_F64(d, i) WGMMA_F32(d, i), WGMMA_F32(d, (i) + 32)
#define WGMMA_F128(d, i) WGMMA_F64(d, i), WGMMA_F64(d, (i) + 64)

#define WGMMA_STR(x) #x
#define WGMMA_XSTR(x) WGMMA_STR(x)

// One asm statement. SHAPE e.g. "m64n256k16", TYPES e.g. ".f32.f16.f16", DL/FL the accumulator
// lists above, AOP the A operand text ("%R" descriptor or "{%R, %R+1, %R+2, %R+3}" registers),
// BOP the B descriptor operand, PRED the operand number of scale-d, TAIL the immediates after
// "p" (imm-scale-a, imm-scale-b, then imm-trans-a/-b where the form has them), INS the inputs.
#define WGMMA_ASM(SHAPE, TYPES, DL, FL, AOP, BOP, PRED, TAIL, ...)                              \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" PRED ", 0;\n"                               \
               "wgmma.mma_async.sync.aligned." SHAPE TYPES " {" DL "}, " AOP ", " BOP ", p" TAIL \
               ";\n}\n"                                                                          \
               : FL                                                                              \
               : __VA_ARGS__)

template <int kN>
struct Wgmma;  // specialised below for N = 8, 16, 32, 64, 128, 256

// Defines Wgmma<N>::ss (A and B from shared memory) and Wgmma<N>::rs (A from registers).
// R = N/2 accumulators; I0..I6 = R..R+6 as literal numbers (the operand numbers after the
// accumulators).
#define WGMMA_DEFINE_N(N, R, DL, FL, I0, I1, I2, I3, I4, I5, I6)                                   \
  template <>                                                                                      \
  struct Wgmma<N> {                                                                                \
    template <int kDtype, int kTransA, int kTransB, int kDtypeB = kDtype>                          \
    static __device__ __forceinline__ void ss(float (&d)[R], u64 desc_a, u64 desc_b, int scale_d) { \
      static_assert(kDtype >= 0 && kDtype <= 3, "kDtype: 0 f16, 1 bf16, 2 e4m3, 3 e5m2");         \
      static_assert(kDtypeB == kDtype || (kDtype >= 2 && kDtypeB >= 2 && kDtypeB <= 3),           \
                    "kDtypeB (B's type): A's for f16/bf16; e4m3 (2) or e5m2 (3) beside fp8 A");    \
      static_assert((kTransA == 0 || kTransA == 1) && (kTransB == 0 || kTransB == 1),             \
                    "imm-trans-a/-b are 0 (K-major) or 1 (MN-major)");                             \
      static_assert(kDtype < 2 || (kTransA == 0 && kTransB == 0),                                  \
                    "fp8 wgmma has no transpose: both operands must be K-major");                  \
      if constexpr (kDtype == 0)                                                                   \
        WGMMA_ASM("m64n" #N "k16", ".f32.f16.f16", DL, FL(d, 0), "%" #I0, "%" #I1, #I2,          \
                  ", 1, 1, %" #I3 ", %" #I4, "l"(desc_a), "l"(desc_b), "r"(scale_d),              \
                  "n"(kTransA), "n"(kTransB));                                                     \
      else if constexpr (kDtype == 1)                                                              \
        WGMMA_ASM("m64n" #N "k16", ".f32.bf16.bf16", DL, FL(d, 0), "%" #I0, "%" #I1, #I2,        \
                  ", 1, 1, %" #I3 ", %" #I4, "l"(desc_a), "l"(desc_b), "r"(scale_d),              \
                  "n"(kTransA), "n"(kTransB));                                                     \
      else if constexpr (kDtype == 2 && kDtypeB == 2)                                              \
        WGMMA_ASM("m64n" #N "k32", ".f32.e4m3.e4m3", DL, FL(d, 0), "%" #I0, "%" #I1, #I2,        \
                  ", 1, 1", "l"(desc_a), "l"(desc_b), "r"(scale_d));                               \
      else if constexpr (kDtype == 3 && kDtypeB == 3)                                              \
        WGMMA_ASM("m64n" #N "k32", ".f32.e5m2.e5m2", DL, FL(d, 0), "%" #I0, "%" #I1, #I2,        \
                  ", 1, 1", "l"(desc_a), "l"(desc_b), "r"(scale_d));                               \
      else if constexpr (kDtype == 2)                                                              \
        WGMMA_ASM("m64n" #N "k32", ".f32.e4m3.e5m2", DL, FL(d, 0), "%" #I0, "%" #I1, #I2,        \
                  ", 1, 1", "l"(desc_a), "l"(desc_b), "r"(scale_d));                               \
      else                                                                                         \
        WGMMA_ASM("m64n" #N "k32", ".f32.e5m2.e4m3", DL, FL(d, 0), "%" #I0, "%" #I1, #I2,        \
                  ", 1, 1", "l"(desc_a), "l"(desc_b), "r"(scale_d));                               \
    }                                                                                              \
    template <int kDtype, int kTransB>                                                             \
    static __device__ __forceinline__ void rs(float (&d)[R], const u32 (&a)[4], u64 desc_b,        \
                                              int scale_d) {                                       \
      static_assert(kDtype >= 0 && kDtype <= 3, "kDtype: 0 f16, 1 bf16, 2 e4m3, 3 e5m2");         \
      static_assert(kTransB == 0 || kTransB == 1, "imm-trans-b is 0 (K-major) or 1 (N-major)");   \
      static_assert(kDtype < 2 || kTransB == 0, "fp8 wgmma has no transpose: B must be K-major"); \
      if constexpr (kDtype == 0)                                                                   \
        WGMMA_ASM("m64n" #N "k16", ".f32.f16.f16", DL, FL(d, 0),                                  \
                  "{%" #I0 ", %" #I1 ", %" #I2 ", %" #I3 "}", "%" #I4, #I5, ", 1, 1, %" #I6,       \
                  "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d),          \
                  "n"(kTransB));                                                                   \
      else if constexpr (kDtype == 1)                                                              \
        WGMMA_ASM("m64n" #N "k16", ".f32.bf16.bf16", DL, FL(d, 0),                                \
                  "{%" #I0 ", %" #I1 ", %" #I2 ", %" #I3 "}", "%" #I4, #I5, ", 1, 1, %" #I6,       \
                  "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d),          \
                  "n"(kTransB));                                                                   \
      else if constexpr (kDtype == 2)                                                              \
        WGMMA_ASM("m64n" #N "k32", ".f32.e4m3.e4m3", DL, FL(d, 0),                                \
                  "{%" #I0 ", %" #I1 ", %" #I2 ", %" #I3 "}", "%" #I4, #I5, ", 1, 1",              \
                  "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));         \
      else                                                                                         \
        WGMMA_ASM("m64n" #N "k32", ".f32.e5m2.e5m2", DL, FL(d, 0),                                \
                  "{%" #I0 ", %" #I1 ", %" #I2 ", %" #I3 "}", "%" #I4, #I5, ", 1, 1",              \
                  "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));         \
    }                                                                                              \
  };

WGMMA_DEFINE_N(8, 4, WGMMA_D4, WGMMA_F4, 4, 5, 6, 7, 8, 9, 10)
WGMMA_DEFINE_N(16, 8, WGMMA_D8, WGMMA_F8, 8, 9, 10, 11, 12, 13, 14)
WGMMA_DEFINE_N(32, 16, WGMMA_D16, WGMMA_F16, 16, 17, 18, 19, 20, 21, 22)
WGMMA_DEFINE_N(64, 32, WGMMA_D32, WGMMA_F32, 32, 33, 34, 35, 36, 37, 38)
WGMMA_DEFINE_N(128, 64, WGMMA_D64, WGMMA_F64, 64, 65, 66, 67, 68, 69, 70)
WGMMA_DEFINE_N(256, 128, WGMMA_D128, WGMMA_F128, 128, 129, 130, 131, 132, 133, 134)

// The names kernels use: one wgmma.mma_async, SS (both operands from shared memory) or RS (A from
// registers). scale_d = 0: D = A·B (the accumulators' old values are ignored); 1: D = A·B + D.
// kDtypeB: B's type where it differs from A's — FP8 only (PTX ISA "wgmma.mma_async": .atype and
// .btype are each .e4m3 or .e5m2, any pair; for .f16/.bf16 they are the same). SS form only.
template <int kN, int kDtype, int kTransA, int kTransB, int kDtypeB = kDtype>
__device__ __forceinline__ void wgmma_mma_async_ss(float (&d)[kN / 2], u64 desc_a, u64 desc_b,
                                                   int scale_d) {
  Wgmma<kN>::template ss<kDtype, kTransA, kTransB, kDtypeB>(d, desc_a, desc_b, scale_d);
}

template <int kN, int kDtype, int kTransB>
__device__ __forceinline__ void wgmma_mma_async_rs(float (&d)[kN / 2], const u32 (&a)[4], u64 desc_b,
                                                   int scale_d) {
  Wgmma<kN>::template rs<kDtype, kTransB>(d, a, desc_b, scale_d);
}
