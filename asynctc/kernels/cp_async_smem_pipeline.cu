// Chapter 02 — a synchronous vs a pipelined shared-memory copy (our equivalent of the Luo et al.
// microbenchmark, "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture", IPDPS 2024,
// which compares a pipelined asynchronous copy with a synchronous one for 8x8, 16x16 and 32x32
// blocks).
//
// A CTA of B x B threads streams ITERS tiles of B x B fp32 through shared memory. Each thread
// reads the element of its right-hand neighbour (row ty, column (tx+1) % B), so the data really is
// shared and a barrier is needed, and accumulates it; dst[thread] = the sum over its tiles.
//   smem_copy_sync : ld.global -> st.shared -> __syncthreads -> ld.shared -> __syncthreads
//                    (the load latency of every tile is exposed to the whole CTA)
//   smem_copy_async: cp.async (4 bytes, .ca) of tile i+1 is issued before tile i is consumed;
//                    two stages, wait_group<1> (the copy of tile i+1 stays in flight)
// src: gridDim.x * ITERS tiles, tile (blockIdx.x * ITERS + i) at offset ((blockIdx.x * ITERS + i)
// * B * B) floats, row-major; dst: gridDim.x * B * B floats.
#include "ptx/common.cuh"
#include "ptx/cp_async.cuh"

#ifndef B
#define B 16
#endif
#ifndef ITERS
#define ITERS 64
#endif

extern "C" __global__ void __launch_bounds__(B * B)
smem_copy_sync(const float* __restrict__ src, float* __restrict__ dst) {
  __shared__ float s[B][B];
  const int tx = threadIdx.x % B, ty = threadIdx.x / B;
  const float* p = src + (size_t)blockIdx.x * ITERS * B * B + threadIdx.x;
  float acc = 0.f;
  for (int i = 0; i < ITERS; ++i) {
    s[ty][tx] = p[(size_t)i * B * B];
    __syncthreads();
    acc += s[ty][(tx + 1) % B];
    __syncthreads();
  }
  dst[(size_t)blockIdx.x * B * B + threadIdx.x] = acc;
}

extern "C" __global__ void __launch_bounds__(B * B)
smem_copy_async(const float* __restrict__ src, float* __restrict__ dst) {
  __shared__ __align__(16) float s[2][B][B];
  const int tx = threadIdx.x % B, ty = threadIdx.x / B;
  const float* p = src + (size_t)blockIdx.x * ITERS * B * B + threadIdx.x;
  float acc = 0.f;
  cp_async_ca_4(smem_u32(&s[0][ty][tx]), p);
  cp_async_commit_group();
  for (int i = 0; i < ITERS; ++i) {
    if (i + 1 < ITERS) cp_async_ca_4(smem_u32(&s[(i + 1) & 1][ty][tx]), p + (size_t)(i + 1) * B * B);
    cp_async_commit_group();
    cp_async_wait_group<1>();   // tile i has landed (tile i+1 may still be in flight)
    __syncthreads();
    acc += s[i & 1][ty][(tx + 1) % B];
    __syncthreads();            // stage i & 1 is refilled in the next iteration but one
  }
  dst[(size_t)blockIdx.x * B * B + threadIdx.x] = acc;
}
