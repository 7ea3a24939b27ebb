// Split-K summed inside the GEMM kernel (SPLIT_K = S > 1 with SPLITK_FIXUP = 1; included by
// kernels/warp_specialization.cu after store_c_clipped and named_barrier_sync). No second launch:
// every split of a tile writes its fp32 partial (the consumer warpgroup's rows) to the workspace
// ws + split · M · N (rows of N floats), and the warpgroup's elected thread then counts the split
// in flags[slot] (one u32 per tile and consumer warpgroup, zero before the launch). The warpgroup
// that brings the count to S — whichever split finished last — reads all S partials back in the
// order 0 .. S − 1 (its own included), adds them in fp32, writes C in its dtype through the
// clipped register epilogue and sets the count back to 0 for the next launch. Which split is last
// varies from run to run; the order of the sum does not, so C's bits do not (deterministic).
//
// Memory order (the CUDA C++ Programming Guide's "Memory Fence Functions" example, one writer per
// thread): each thread's partial stores, then __threadfence() (fence.sc.gpu) before the named
// barrier of the warpgroup; the elected thread's atomicAdd after it; the last warpgroup's threads
// fence again before reading the partials with ld.global.cg (L2, never a stale L1 line).

__device__ __forceinline__ float ld_global_cg(const float* p) {
  float v;
  asm volatile("ld.global.cg.f32 %0, [%1];\n" : "=f"(v) : "l"(p) : "memory");
  return v;
}

// This warpgroup's accumulators → its fp32 partial at w (rows of N floats), clipped to M × N.
__device__ __forceinline__ void store_partial(const float (&acc)[kAtoms][kAcc], float* w, int row0,
                                              int n0, int M, int N) {
  const bool pairs = (N & 1) == 0;
#pragma unroll
  for (int i = 0; i < kAtoms; ++i) {
#pragma unroll
    for (int j = 0; j < kAcc; j += 2) {
      int row, col;
      acc_pair_origin(i, j, row0, n0, row, col);
      if (row >= M || col >= N) continue;
      const size_t at = (size_t)row * N + col;
      if (pairs && col + 1 < N) {
        *reinterpret_cast<float2*>(w + at) = make_float2(acc[i][j], acc[i][j + 1]);
      } else {
        w[at] = acc[i][j];
        if (col + 1 < N) w[at + 1] = acc[i][j + 1];
      }
    }
  }
}

// acc = the sum over s = 0 .. S − 1 of partial s at this thread's fragment positions.
__device__ __forceinline__ void load_sum(float (&acc)[kAtoms][kAcc], const float* ws, int row0,
                                         int n0, int M, int N) {
  const size_t stride = (size_t)M * N;
#pragma unroll
  for (int i = 0; i < kAtoms; ++i) {
#pragma unroll
    for (int j = 0; j < kAcc; j += 2) {
      int row, col;
      acc_pair_origin(i, j, row0, n0, row, col);
      float x = 0.f, y = 0.f;
      if (row < M && col < N) {
        const float* p = ws + (size_t)row * N + col;
#pragma unroll
        for (int s = 0; s < SPLIT_K; ++s) {                  // fixed order: deterministic
          x += ld_global_cg(p + s * stride);
          if (col + 1 < N) y += ld_global_cg(p + s * stride + 1);
        }
      }
      acc[i][j] = x;
      acc[i][j + 1] = y;
    }
  }
}

// One consumer warpgroup's epilogue of one split (see the header). bar_id: the warpgroup's named
// barrier (1 + consumer), slot: its counter.
__device__ __forceinline__ void splitk_fixup(float (&acc)[kAtoms][kAcc], float* ws, u32* flags,
                                             void* c, int ldc, int split, int slot, u32 bar_id,
                                             bool elected, int row0, int n0, int M, int N) {
  __shared__ u32 last[CONSUMERS];
  const int cw = (int)bar_id - 1;
  store_partial(acc, ws + (size_t)split * M * N, row0, n0, M, N);
  __threadfence();
  named_barrier_sync(bar_id, 128);
  if (elected) last[cw] = atomicAdd(flags + slot, 1u) == (u32)(SPLIT_K - 1);
  named_barrier_sync(bar_id, 128);
  if (!last[cw]) return;
  __threadfence();
  load_sum(acc, ws, row0, n0, M, N);
  store_c_clipped(acc, c, ldc, row0, n0, M, N);
  if (elected) flags[slot] = 0u;                             // ready for the next launch
}
