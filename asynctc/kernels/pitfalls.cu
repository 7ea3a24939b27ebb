// Chapter 08: the bug zoo on the GPU. One small, self-contained kernel — a TMA + mbarrier ring that
// streams `tiles` boxes of 64 × 64 fp16 through STAGES shared-memory stages to a consumer warpgroup,
// which copies each box into an output buffer that one thread writes back with a TMA store — and
// one define per bug (BUG=<n>, asynctc.pitfalls.variants.BUGS names them). Nothing here may hang the
// GPU: every mbarrier wait is bounded (a timeout writes a decoded word and the kernel leaves), and
// the consumers leave together (they pass a named barrier before they look at the abort flag).
//
// Roles (160 threads): warps 0-3 = consumer warpgroup (thread 0 also issues the TMA stores);
// warp 4 lane 0 = producer (TMA loads). Barriers per stage: full[s] (count 1: the producer's
// arrive.expect_tx + TMA complete_tx), empty[s] (count 4: lane 0 of each consumer warp, after a
// __syncwarp, once its warp read the stage).
//
// Error words (u32 err[3]): err[0] the first timeout of the CTA, err[1] the producer's, err[2] the
// consumers'; each word = 1 | tag << 8 | tile << 16, tag = stage << 4 | barrier (1 full, 2 empty).
// The log (u64 log[64]): producer records in 0..31, consumer thread 0's in 32..63; each record =
// (ns since that thread started) << 24 | event << 16 | stage << 8 | tile.
#include "ptx/common.cuh"
#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/named_barrier.cuh"
#include "ptx/setmaxnreg.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"

#ifndef BUG
#define BUG 0
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef WAIT_NS
#define WAIT_NS 500000000ull   // 0.5 s per bounded wait
#endif
#ifndef STRESS_NS
#define STRESS_NS 20000        // the window a racy variant holds open (20 µs)
#endif

#define BUG_WRONG_EMPTY_PARITY 1    // producer waits parity (t / S) % 2 on empty: phase 0 of a fresh barrier
#define BUG_FULL_PARITY_FLIPPED 2   // consumers wait parity (t / S + 1) % 2 on full: "the phase before"
#define BUG_ARRIVE_COUNT_THREADS 3  // empty[s] initialised with 128 (threads) while one lane per warp arrives
#define BUG_EXPECT_TX_TOO_LARGE 4   // expect_tx announces 16 bytes more than the box delivers
#define BUG_NO_INIT_FENCE 5         // no fence.mbarrier_init and no __syncthreads after mbarrier.init
#define BUG_NO_PROXY_FENCE 6        // generic st.shared into the out buffer, then a TMA store, no fence.proxy.async
#define BUG_MISALIGNED_TILE 7       // stage base 128 B past a 1024 B boundary under the 128B swizzle
#define BUG_STORE_BUFFER_REUSED 8   // out buffer rewritten before cp.async.bulk.wait_group.read
#define BUG_LEADER_ARRIVES_EARLY 9  // lane 0 arrives on empty before its warp read the stage
#define BUG_SWIZZLE_MISMATCH 10     // the reader assumes no swizzle; the tensor map writes 128B swizzle

#define ROWS 64
#define ROW_BYTES 128
#define TILE_BYTES (ROWS * ROW_BYTES)
#define CONSUMERS 128
#define THREADS 160

#define EV_EMPTY_WAIT 1
#define EV_EMPTY_PASS 2
#define EV_TMA_LOAD 3
#define EV_FULL_WAIT 4
#define EV_FULL_PASS 5
#define EV_RELEASE 6
#define EV_TMA_STORE 7
#define EV_TIMEOUT 8

__device__ __forceinline__ void log_event(u64* log, u32& n, u32 base, u64 t0, u32 ev, u32 s, u32 t) {
  if (log && n < 32) log[base + n] = ((globaltimer() - t0) << 24) | ((u64)ev << 16) | (s << 8) | (t & 0xFF);
  ++n;
}

// A bounded wait that records who gave up: err[0] (first of the CTA) and err[slot] (this role).
__device__ __forceinline__ bool wait_or_record(u32 bar, u32 parity, u32* err, u32 slot, u32 tag,
                                               u32 tile) {
  if (mbarrier_try_wait_parity(bar, parity)) return true;
  const u64 t0 = globaltimer();
  while (globaltimer() - t0 < WAIT_NS) {
    if (mbarrier_try_wait_parity(bar, parity)) return true;
  }
  const u32 word = ASYNCTC_ERR_MBARRIER_TIMEOUT | (tag << 8) | (tile << 16);
  atomicCAS(err, 0u, word);
  atomicCAS(err + slot, 0u, word);
  return false;
}

__device__ __forceinline__ void spin_ns(u64 ns) {
  const u64 t0 = globaltimer();
  while (globaltimer() - t0 < ns) {
  }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
pitfall_ring(const __grid_constant__ TmaDesc in_map, const __grid_constant__ TmaDesc out_map,
             int tiles, u32* err, u64* log) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) u64 full[STAGES], empty[STAGES];
  __shared__ volatile u32 abort_flag;
  const u32 tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const u64 t_start = globaltimer();
  u32 nlog = 0;

  u32 base = (smem_u32(smem_raw) + 1023u) & ~1023u;      // 1024 B: the 128B swizzle's repeat
#if BUG == BUG_MISALIGNED_TILE
  base += 128;
#endif
  const u32 out_buf = base + STAGES * TILE_BYTES + 128;   // 128 B aligned (TMA store source)

  // Poison the stages and the out buffer, so that a read before the data lands is visible.
  for (u32 off = tid * 16; off < STAGES * TILE_BYTES + 128 + TILE_BYTES; off += THREADS * 16)
    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(base + off), "r"(0x7E007E00u) : "memory");
  fence_proxy_async_shared_cta();        // the poison (generic) before the TMA writes (async)
  if (tid == 0) abort_flag = 0;
  __syncthreads();

  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbarrier_init(smem_u32(&full[s]), 1);
#if BUG == BUG_ARRIVE_COUNT_THREADS
      mbarrier_init(smem_u32(&empty[s]), CONSUMERS);
#else
      mbarrier_init(smem_u32(&empty[s]), CONSUMERS / 32);
#endif
    }
#if BUG != BUG_NO_INIT_FENCE
    fence_mbarrier_init();
#endif
  }
#if BUG != BUG_NO_INIT_FENCE
  __syncthreads();
#endif

  if (warp == 4) {                        // ---- producer
    if (lane != 0) return;
    for (int t = 0; t < tiles; ++t) {
      const u32 s = t % STAGES, pass = t / STAGES;
#if BUG == BUG_WRONG_EMPTY_PARITY
      const u32 pe = pass & 1;
#else
      const u32 pe = (pass + 1) & 1;
#endif
      log_event(log, nlog, 0, t_start, EV_EMPTY_WAIT, s, t);
      if (!wait_or_record(smem_u32(&empty[s]), pe, err, 1, (s << 4) | 2, t)) {
        log_event(log, nlog, 0, t_start, EV_TIMEOUT, s, t);
        return;
      }
      log_event(log, nlog, 0, t_start, EV_EMPTY_PASS, s, t);
#if BUG == BUG_EXPECT_TX_TOO_LARGE
      mbarrier_arrive_expect_tx(smem_u32(&full[s]), TILE_BYTES + 16);
#else
      mbarrier_arrive_expect_tx(smem_u32(&full[s]), TILE_BYTES);
#endif
      tma_load_2d(base + s * TILE_BYTES, in_map, smem_u32(&full[s]), 0, t * ROWS);
      log_event(log, nlog, 0, t_start, EV_TMA_LOAD, s, t);
    }
    return;
  }

  // ---- consumer warpgroup: thread tid copies 64 bytes of row tid / 2
  const u32 r = tid / 2, h = tid % 2;
  for (int t = 0; t < tiles; ++t) {
    const u32 s = t % STAGES, pass = t / STAGES;
#if BUG == BUG_FULL_PARITY_FLIPPED
    const u32 pf = (pass + 1) & 1;
#else
    const u32 pf = pass & 1;
#endif
    if (tid == 0) log_event(log, nlog, 32, t_start, EV_FULL_WAIT, s, t);
    if (!wait_or_record(smem_u32(&full[s]), pf, err, 2, (s << 4) | 1, t)) abort_flag = 1;
#if BUG != BUG_STORE_BUFFER_REUSED
    if (tid == 0) bulk_wait_group_read<0>();   // the previous TMA store has read out_buf
#endif
    named_barrier_sync(1, CONSUMERS);
    if (abort_flag) break;                      // every consumer sees it after the same barrier
    if (tid == 0) log_event(log, nlog, 32, t_start, EV_FULL_PASS, s, t);
#if BUG == BUG_LEADER_ARRIVES_EARLY
    if (lane == 0) mbarrier_arrive(smem_u32(&empty[s]));
    spin_ns(STRESS_NS);                         // hold the window open: the refill is on its way
#endif
    const u32 stage = base + s * TILE_BYTES;
#pragma unroll
    for (u32 j = 0; j < 4; ++j) {
      const u32 q = h * 4 + j;                  // logical 16-byte chunk of the row
#if BUG == BUG_SWIZZLE_MISMATCH
      const u32 phys = q;                       // the reader's layout: no swizzle
#else
      const u32 phys = q ^ (r % 8);             // 128B swizzle, relative to the stage base
#endif
      uint4 v;
      asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(stage + r * ROW_BYTES + phys * 16)
                   : "memory");
      asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n"
                   ::"r"(out_buf + r * ROW_BYTES + q * 16), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                   : "memory");
    }
#if BUG != BUG_LEADER_ARRIVES_EARLY
    __syncwarp();                               // the whole warp has read the stage
    if (lane == 0) mbarrier_arrive(smem_u32(&empty[s]));
#endif
    if (tid == 0) log_event(log, nlog, 32, t_start, EV_RELEASE, s, t);
#if BUG != BUG_NO_PROXY_FENCE
    fence_proxy_async_shared_cta();             // each writer: its st.shared before the TMA store
#endif
    named_barrier_sync(1, CONSUMERS);
    if (tid == 0) {
      tma_store_2d(out_map, out_buf, 0, t * ROWS);
      bulk_commit_group();
      log_event(log, nlog, 32, t_start, EV_TMA_STORE, s, t);
    }
  }
  if (tid == 0) {
    // Drain: no TMA load may still be landing in this CTA's shared memory when it exits (a variant
    // whose consumers ran ahead, e.g. on the flipped parity, would otherwise leave one in flight).
    for (int s = 0; s < STAGES && s < tiles; ++s) {
      const u32 last = (tiles - 1 - s) / STAGES;           // the pass of stage s's last fill
      const u64 t0 = globaltimer();
      while (!mbarrier_try_wait_parity(smem_u32(&full[s]), last & 1) && globaltimer() - t0 < WAIT_NS) {
      }
    }
    bulk_wait_group<0>();                                   // and the last TMA store is written
  }
}

// setmaxnreg dropped: the same register hand-off compiled with and without the launch bounds that
// tell ptxas the register count at entry (-DBOUNDS=1 / 0). Never launched; its SASS is the test.
#ifndef BOUNDS
#define BOUNDS 1
#endif
#if BOUNDS
extern "C" __global__ void __launch_bounds__(256, 1) pitfall_setmaxnreg(float* out, const float* in) {
#else
extern "C" __global__ void pitfall_setmaxnreg(float* out, const float* in) {
#endif
  if (threadIdx.x / 128 == 0) {
    setmaxnreg_dec<40>();
    out[threadIdx.x] = in[threadIdx.x];
  } else {
    setmaxnreg_inc<232>();
    float acc = 0.f;
    for (int i = 0; i < 64; ++i) acc += in[(threadIdx.x + i) % 256] * (float)i;
    out[threadIdx.x] = acc;
  }
}

// Missing wgmma wait: a consumer warpgroup issues the wgmmas of one stage, commits them, and
// releases the stage on empty — with (-DWAIT=1) or without (-DWAIT=0) wgmma.wait_group 0 between
// the commit and the arrive. Never launched (the operands are not set up); its SASS is the test:
// without the wait there is no WARPGROUP.DEPBAR between the HGMMA and the SYNCS.ARRIVE, i.e. the
// stage is handed back while the Tensor Cores may still read it (NVIDIA/Fuser#3561).
#ifndef WAIT
#define WAIT 1
#endif
extern "C" __global__ void __launch_bounds__(128, 1) pitfall_wgmma_release(float* out, u64 desc_a,
                                                                            u64 desc_b) {
  __shared__ __align__(8) u64 empty;
  if (threadIdx.x == 0) mbarrier_init(smem_u32(&empty), 1);
  __syncthreads();
  float d[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) d[i] = 0.f;
  wgmma_fence();
#pragma unroll
  for (int k = 0; k < 4; ++k) Wgmma<64>::ss<0, 0, 0>(d, desc_a + 2 * k, desc_b + 2 * k, 1);
  wgmma_commit_group();
#if WAIT
  wgmma_wait_group<0>();
#endif
  if (threadIdx.x == 0) mbarrier_arrive(smem_u32(&empty));   // "stage may be overwritten"
#if !WAIT
  wgmma_wait_group<0>();                                      // (the registers are read only here)
#endif
#pragma unroll
  for (int i = 0; i < 32; ++i) out[threadIdx.x * 32 + i] = d[i];
}

// ---- The latent variants under stress (asynctc.pitfalls.latent) ---------------------------------
// BUG 5, 6 and 8 end "ok" in the ring above on the H200: its timing hides them. These two kernels
// give each bug the tightest window we can write and many chances per launch; a wrong outcome is
// named by the host (the elementwise check, or the count of lost arrivals), never a hang.

// pitfall_store_stress: 128 threads per CTA; for it = 0 .. iters-1 every thread writes its chunks
// of a changing pattern (pattern(seed, cta, it, word)) into one SROWS × 128 B staging buffer with
// st.shared, then (FENCE=1) fence.proxy.async, bar.sync; thread 0 writes the box's last 16 bytes
// itself (and with FENCE=1 fences them) and TMA-stores the buffer to box
// (cta * iters + it) of the output and (WAIT_READ=1) waits until the store has read it, bar.sync.
// BUG 6 = FENCE 0 (the async proxy may read the buffer before the generic writes are visible to
// it: a stale element is the previous iteration's); BUG 8 = WAIT_READ 0 (the next iteration
// overwrites the buffer while the store may still read it: a wrong element is the next one's).
#ifndef SROWS
#define SROWS 64
#endif
#ifndef FENCE
#define FENCE 1
#endif
#ifndef WAIT_READ
#define WAIT_READ 1
#endif
static_assert(SROWS >= 8 && SROWS <= 256 && SROWS % 8 == 0, "SROWS: 8..256 rows, a multiple of 8");

__device__ __forceinline__ u32 stress_pattern(u32 seed, u32 cta, u32 it, u32 w) {
  u32 x = seed + cta * 0x9E3779B1u + it * 0x85EBCA77u + w * 0xC2B2AE3Du;
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  return x;
}

extern "C" __global__ void __launch_bounds__(128)
pitfall_store_stress(const __grid_constant__ TmaDesc out_map, int iters, u32 seed) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const u32 buf = (smem_u32(smem_raw) + 127u) & ~127u;   // TMA store source: 128 B aligned
  const u32 tid = threadIdx.x, cta = blockIdx.x;
  constexpr u32 CHUNKS = SROWS * ROW_BYTES / 16;
  auto put = [&](u32 q, int it) {                           // 16-byte chunk q of iteration it
    const u32 w = q * 4;                                    // 32-bit word index within the box
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n"
                 ::"r"(buf + q * 16), "r"(stress_pattern(seed, cta, it, w)),
                 "r"(stress_pattern(seed, cta, it, w + 1)), "r"(stress_pattern(seed, cta, it, w + 2)),
                 "r"(stress_pattern(seed, cta, it, w + 3)) : "memory");
  };
  for (int it = 0; it < iters; ++it) {
    for (u32 q = tid; q < CHUNKS - 1; q += 128) put(q, it);
#if FENCE
    fence_proxy_async_shared_cta();
#endif
    __syncthreads();
    if (tid == 0) {
      // The box's last chunk: written by the issuing thread right before the store (the tightest
      // generic-write -> async-read window one thread can make).
      put(CHUNKS - 1, it);
#if FENCE
      fence_proxy_async_shared_cta();
#endif
      tma_store_2d(out_map, buf, 0, (int)((cta * iters + it) * SROWS));
      bulk_commit_group();
#if WAIT_READ
      bulk_wait_group_read<0>();
#endif
    }
    __syncthreads();
  }
  if (tid == 0) bulk_wait_group<0>();                       // every store written before exit
}

// pitfall_init_race: 64 threads per CTA, one mbarrier of count 1. Thread 0 initialises it and
// waits (bounded, wait_ns) on phase 0; lane 0 of warp 1 arrives once. INIT selects the ordering
// between the init and that arrive:
//   0  fence.mbarrier_init + __syncthreads (correct);
//   1  a flag hand-off only: thread 0 writes a volatile flag after the init, warp 1 spins on it,
//      no fence and no bar.sync (BUG 5 as the ring has it). The flag's value is this launch's
//      nonce + the CTA index, so a stale word left in shared memory by an earlier CTA cannot pass
//      for it;
//   2  nothing: warp 1 arrives after a delay of (cta % 64) × step_cycles clocks, racing the init.
// An arrive that lands before the init is erased by it: phase 0 never completes and the wait
// gives up. Per CTA: result[cta] = 1 lost (timed out) / 2 passed.
#ifndef INIT
#define INIT 0
#endif
extern "C" __global__ void __launch_bounds__(64)
pitfall_init_race(u32* result, u32 step_cycles, u32 wait_ns, u32 nonce) {
  __shared__ __align__(8) u64 bar;
  __shared__ volatile u32 flag;
  const u32 tid = threadIdx.x;
#if INIT == 1
  const u32 token = nonce + blockIdx.x;
#else
  (void)nonce;
#endif
  if (tid == 0) {
    mbarrier_init(smem_u32(&bar), 1);
#if INIT == 0
    fence_mbarrier_init();
#elif INIT == 1
    flag = token;
#endif
  }
#if INIT == 0
  __syncthreads();
#endif
  if (tid == 32) {
#if INIT == 1
    const u64 c0 = clock64();
    while (flag != token && clock64() - c0 < 100000000ull) {
    }
#elif INIT == 2
    const u64 c0 = clock64();
    const u64 d = (u64)(blockIdx.x % 64) * step_cycles;
    while (clock64() - c0 < d) {
    }
#endif
    mbarrier_arrive(smem_u32(&bar));
  }
  if (tid == 0) {
    bool ok = mbarrier_try_wait_parity(smem_u32(&bar), 0);
    const u64 t0 = globaltimer();
    while (!ok && globaltimer() - t0 < wait_ns) ok = mbarrier_try_wait_parity(smem_u32(&bar), 0);
    result[blockIdx.x] = ok ? 2u : 1u;
  }
}
