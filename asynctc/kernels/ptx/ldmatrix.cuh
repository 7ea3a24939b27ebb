// ldmatrix: warp-collective load of 8x8 b16 matrices from shared memory into registers, laid out
// as the mma.sync fragments expect (PTX ISA: "Warp-level matrix load instruction: ldmatrix").
// Each of the 32 lanes supplies the shared address of one 16-byte row: lanes 0-7 the rows of
// matrix 0, lanes 8-15 matrix 1, 16-23 matrix 2, 24-31 matrix 3. Thread t receives, from each
// matrix, the two b16 elements (row t/4, cols 2*(t%4) .. +1); with .trans, (rows 2*(t%4) .. +1, col t/4).
#pragma once
#include "ptx/common.cuh"

__device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], u32 smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(u32 (&r)[4], u32 smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr));
}
