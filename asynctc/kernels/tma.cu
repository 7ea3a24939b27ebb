// Chapter 03 — TMA and mbarrier: small kernels that each show (and let a test check) one thing.
//
//   tma_load_dump      one TMA box load under a tensor map's swizzle mode; the raw shared memory
//                      (padding and untouched bytes included) is written out, so the host can
//                      compare it with asynctc.models.layout.SmemTile byte by byte; also the OOB-fill test.
//   tma_store_raw      the reverse: threads place a raw shared-memory image (made on the host by
//                      SmemTile.scatter), fence the generic proxy against the async proxy, and one
//                      thread TMA-stores the box to global memory.
//   mbarrier_lifecycle the mbarrier life cycle, recorded: init, arrive.expect_tx, TMA complete_tx,
//                      phase flip, parity waits, stage reuse, a plain arrival count, and a bounded
//                      wait that times out instead of hanging.
//   copy_tma / copy_ldg_sts / copy_cp_async
//                      the copy benchmark: the same tiled global->shared->global copy of a
//                      ROWS x COLS fp32 matrix, box BR x BC per step, done by TMA (one thread per
//                      CTA), by vectorized loads and stores of all threads, or by cp.async.
//
// All waits on mbarriers are bounded (mbarrier_wait_parity_bounded): a wrong expect_tx or parity
// makes the kernel report ASYNCTC_ERR_MBARRIER_TIMEOUT in its error word and exit, never hang.

#include "ptx/common.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/fence.cuh"
#include "ptx/cp_async.cuh"

#ifndef RANK
#define RANK 2          // rank of the tensor map used by tma_load_dump / tma_store_raw (1..5)
#endif
#ifndef TX_PROBE
#define TX_PROBE 0      // 1: tma_load_dump also checks that tx_bytes equalled the bytes written (err[1])
#endif
#ifndef MAX_TRIES
#define MAX_TRIES 10000000u  // try_wait rounds before a bounded wait gives up (also bounded by 2 s)
#endif

// Issue a TMA load / store of rank RANK at coordinates c[0..RANK-1] (innermost first).
struct Coords { int c[5]; };

__device__ __forceinline__ void tma_load_rank(u32 dst, const TmaDesc& d, u32 bar, const Coords& k) {
#if RANK == 1
  tma_load_1d(dst, d, bar, k.c[0]);
#elif RANK == 2
  tma_load_2d(dst, d, bar, k.c[0], k.c[1]);
#elif RANK == 3
  tma_load_3d(dst, d, bar, k.c[0], k.c[1], k.c[2]);
#elif RANK == 4
  tma_load_4d(dst, d, bar, k.c[0], k.c[1], k.c[2], k.c[3]);
#else
  tma_load_5d(dst, d, bar, k.c[0], k.c[1], k.c[2], k.c[3], k.c[4]);
#endif
}

__device__ __forceinline__ void tma_store_rank(const TmaDesc& d, u32 src, const Coords& k) {
#if RANK == 1
  tma_store_1d(d, src, k.c[0]);
#elif RANK == 2
  tma_store_2d(d, src, k.c[0], k.c[1]);
#elif RANK == 3
  tma_store_3d(d, src, k.c[0], k.c[1], k.c[2]);
#elif RANK == 4
  tma_store_4d(d, src, k.c[0], k.c[1], k.c[2], k.c[3]);
#else
  tma_store_5d(d, src, k.c[0], k.c[1], k.c[2], k.c[3], k.c[4]);
#endif
}

// Dynamic shared memory, with the tile placed at the first 1024-byte boundary (the strictest
// swizzle alignment) and the mbarrier(s) in a static array.
extern __shared__ __align__(1024) unsigned char dsmem[];

__device__ __forceinline__ unsigned char* aligned_tile(u32 align) {
  const u32 base = smem_u32(dsmem);
  const u32 pad = (align - (base & (align - 1))) & (align - 1);
  return dsmem + pad;
}

// ------------------------------------------------------------------------------------------------
// tma_load_dump: grid 1, any block size. Shared memory needs dump_bytes + 1024.
//   out[0 .. dump_bytes)  the tile's shared memory after the load (bytes not written by the TMA keep
//                         the sentinel 0xA5 written first)
//   err                   err[0]: 0, or an error code (ASYNCTC_ERR_MBARRIER_TIMEOUT | tag << 8);
//                         err[1] with TX_PROBE=1: 1 if tx_bytes was exact, 2 if not (see below)
// tx_bytes must be the box's bytes (every loaded box dimension × element size; with element
// strides, ceil(box[i] / stride[i]) along each outer dimension): the TMA always signals the whole
// box, out-of-bound part included.
extern "C" __global__ void tma_load_dump(const __grid_constant__ TmaDesc tmap, int c0, int c1,
                                         int c2, int c3, int c4, u32 tx_bytes, unsigned char* __restrict__ out,
                                         u32 dump_bytes, u32* err) {
  __shared__ __align__(8) u64 bar_storage;
  const u32 bar = smem_u32(&bar_storage);
  const Coords coords = {{c0, c1, c2, c3, c4}};
  unsigned char* tile = aligned_tile(1024);
  for (u32 i = threadIdx.x; i < dump_bytes; i += blockDim.x) tile[i] = 0xA5;
  if (threadIdx.x == 0) {
    mbarrier_init(bar, 1);
    fence_mbarrier_init();
  }
  fence_proxy_async_shared_cta();   // the sentinel writes (generic) before the TMA's (async) writes
  __syncthreads();
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(bar, tx_bytes);
    tma_load_rank(smem_u32(tile), tmap, bar, coords);
  }
  const bool ok = mbarrier_wait_parity_bounded(bar, 0, MAX_TRIES, err, 1);
  if (!ok) return;
  for (u32 i = threadIdx.x; i < dump_bytes; i += blockDim.x) out[i] = tile[i];
#if TX_PROBE
  // Was tx_bytes exactly what the TMA wrote? Phase 0 completed above, so the barrier is in phase 1
  // (pending count 1, tx-count 0 if the bytes matched). Bytes the TMA signals after an early
  // completion (tx_bytes too small) land in phase 1 and leave its tx-count negative. After a pause
  // that lets any such complete_tx arrive, one plain arrival must complete phase 1 at once iff its
  // tx-count is 0. err[1] = 1: exact; 2: phase 1 did not complete (tx-count not 0).
  __syncthreads();
  if (threadIdx.x == 0) {
    const u64 t0 = globaltimer();
    while (globaltimer() - t0 < 50000ull) {   // 50 µs
    }
    mbarrier_arrive(bar);
    bool done = false;
    for (int i = 0; i < 1000 && !done; ++i) done = mbarrier_test_wait_parity(bar, 1);
    err[1] = done ? 1u : 2u;
  }
#endif
}

// ------------------------------------------------------------------------------------------------
// tma_store_raw: grid 1. raw[0 .. nbytes) is copied into the (1024-aligned) tile by the threads,
// then one thread stores the box at `coords` through the tensor map.
extern "C" __global__ void tma_store_raw(const __grid_constant__ TmaDesc tmap, int c0, int c1,
                                         int c2, int c3, int c4,
                                         const unsigned char* __restrict__ raw, u32 nbytes) {
  const Coords coords = {{c0, c1, c2, c3, c4}};
  unsigned char* tile = aligned_tile(1024);
  for (u32 i = threadIdx.x; i < nbytes; i += blockDim.x) tile[i] = raw[i];
  fence_proxy_async_shared_cta();   // make the generic writes visible to the TMA (async proxy)
  __syncthreads();
  if (threadIdx.x == 0) {
    tma_store_rank(tmap, smem_u32(tile), coords);
    bulk_commit_group();
    bulk_wait_group<0>();           // the global writes are complete before the thread exits
  }
}

// ------------------------------------------------------------------------------------------------
// mbarrier_lifecycle: grid 1, block 64 (two warps). The tensor map describes a 2-D tensor; two boxes
// of it, at coordinates (0, 0) and (0, box_rows), are loaded one after the other into the *same*
// stage through the *same* mbarrier, as a one-stage pipeline would. Every step appends one record
// to `log` (8 u32 each):
//   [0] step id  [1] test_wait.parity(0)  [2] test_wait.parity(1)  [3] the parity this step waited
//   on (or 0xFFFFFFFF)  [4] wait result (1 ok, 0 timed out, 0xFFFFFFFF no wait)
//   [5] checksum of the stage's first 64 u32 (xor)  [6] low 32 bits of %globaltimer  [7] thread
// Steps: 0 after init(1); 1 after arrive.expect_tx(tx) (phase 0 still open: bytes pending);
//        2 after the first box arrived (wait parity 0 -> phase 0 complete, phase 1 open);
//        3 after the second box arrived in the reused stage (wait parity 1 -> phase 1 complete);
//        4 counter barrier init(64): after 63 arrivals; 5 after the 64th arrival;
//        6 a bounded wait on a phase nobody completes (parity 1 of the counter barrier, now in
//          phase 1): must time out after `timeout_tries` rounds; it reports the timeout in
//          err[1] (= ASYNCTC_ERR_MBARRIER_TIMEOUT | 6 << 8) and returns, instead of hanging.
// err[0] receives any unexpected timeout (steps 2, 3, 5), err[1] the expected one (step 6).
// box_out receives both boxes as they were read from shared memory (2 × tx bytes).
extern "C" __global__ void mbarrier_lifecycle(const __grid_constant__ TmaDesc tmap, int box_rows,
                                              u32 tx_bytes, u32* __restrict__ log,
                                              unsigned char* __restrict__ box_out,
                                              u32 timeout_tries, u32* err) {
  __shared__ __align__(8) u64 full_storage;
  __shared__ __align__(8) u64 count_storage;
  const u32 full = smem_u32(&full_storage), counter = smem_u32(&count_storage);
  unsigned char* stage = aligned_tile(1024);
  const u32* stage32 = reinterpret_cast<const u32*>(stage);
  const int t = threadIdx.x;
  u32 n = 0;   // records written (thread 0 only)
  auto record = [&](u32 step, u32 bar, u32 waited_parity, u32 result) {
    u32 x = 0;
    for (int i = 0; i < 64; ++i) x ^= stage32[i];
    u32* r = log + 8 * n++;
    r[0] = step;
    r[1] = mbarrier_test_wait_parity(bar, 0);
    r[2] = mbarrier_test_wait_parity(bar, 1);
    r[3] = waited_parity;
    r[4] = result;
    r[5] = x;
    r[6] = static_cast<u32>(globaltimer());
    r[7] = t;
  };
  if (t == 0) {
    for (int i = 0; i < 256; ++i) reinterpret_cast<u32*>(stage)[i] = 0;
    mbarrier_init(full, 1);
    mbarrier_init(counter, 64);
    fence_mbarrier_init();
    fence_proxy_async_shared_cta();
  }
  __syncthreads();
  if (t == 0) {
    record(0, full, ~0u, ~0u);
    // --- phase 0 of `full`: one arrival (with the byte count) + the TMA's bytes ---
    mbarrier_arrive_expect_tx(full, tx_bytes);
    record(1, full, ~0u, ~0u);
    tma_load_2d(smem_u32(stage), tmap, full, 0, 0);
    const bool ok0 = mbarrier_wait_parity_bounded(full, 0, MAX_TRIES, err, 2);
    record(2, full, 0, ok0);
    for (u32 i = 0; ok0 && i < tx_bytes; ++i) box_out[i] = stage[i];
    // --- the stage is reused: phase 1, same barrier, next box ---
    // (the TMA is about to overwrite bytes this thread just read through the generic proxy)
    fence_proxy_async_shared_cta();
    mbarrier_arrive_expect_tx(full, tx_bytes);
    tma_load_2d(smem_u32(stage), tmap, full, 0, box_rows);
    const bool ok1 = mbarrier_wait_parity_bounded(full, 1, MAX_TRIES, err, 3);
    record(3, full, 1, ok1);
    for (u32 i = 0; ok1 && i < tx_bytes; ++i) box_out[tx_bytes + i] = stage[i];
  }
  __syncthreads();
  // --- a plain arrival-count barrier: 64 threads must arrive ---
  if (t != 63) mbarrier_arrive(counter);
  __syncthreads();
  if (t == 0) record(4, counter, ~0u, ~0u);
  __syncthreads();
  if (t == 63) mbarrier_arrive(counter);
  const bool ok2 = mbarrier_wait_parity_bounded(counter, 0, MAX_TRIES, err, 5);
  __syncthreads();
  if (t == 0) {
    record(5, counter, 0, ok2);
    // --- a wait that cannot succeed: phase 1 of `counter` has no arrivals ---
    const bool ok3 = mbarrier_wait_parity_bounded(counter, 1, timeout_tries, err + 1, 6);
    record(6, counter, 1, ok3);
  }
}

// ------------------------------------------------------------------------------------------------
// The copy benchmark. src, dst: ROWS x COLS fp32, row-major. A CTA walks tiles t = blockIdx.x,
// blockIdx.x + gridDim.x, ...; tile t covers rows (t / TILES_C) * BR .. +BR-1 and columns
// (t % TILES_C) * BC .. +BC-1. Every kernel moves each byte global -> shared -> global.
#ifndef BR
#define BR 32
#endif
#ifndef BC
#define BC 64
#endif
#ifndef CSTAGES
#define CSTAGES 4       // shared-memory stages per CTA (TMA and cp.async variants)
#endif
constexpr u32 BOX_BYTES = BR * BC * 4;
static_assert(CSTAGES >= 2 && CSTAGES <= 8, "the copy pipelines need 2..8 stages");
static_assert((BC * 4) % 16 == 0, "box rows must be whole 16-byte chunks");

// TMA: one thread per CTA issues everything. Loads run CSTAGES-1 tiles ahead; a stage is refilled
// once the TMA store that read it has finished reading (bulk wait_group.read).
extern "C" __global__ void __launch_bounds__(32)
copy_tma(const __grid_constant__ TmaDesc src, const __grid_constant__ TmaDesc dst, int tiles,
         int tiles_c, u32* err) {
  __shared__ __align__(8) u64 full_storage[CSTAGES];
  unsigned char* buf = aligned_tile(128);
  if (threadIdx.x != 0) return;
  for (int s = 0; s < CSTAGES; ++s) mbarrier_init(smem_u32(&full_storage[s]), 1);
  fence_mbarrier_init();
  tma_prefetch_desc(src);
  tma_prefetch_desc(dst);
  const int my_tiles = tiles > (int)blockIdx.x ? (tiles - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;
  auto issue_load = [&](int i) {        // i-th tile of this CTA into stage i % CSTAGES
    const int tile = blockIdx.x + i * gridDim.x;
    const int s = i % CSTAGES;
    const u32 bar = smem_u32(&full_storage[s]);
    mbarrier_arrive_expect_tx(bar, BOX_BYTES);
    tma_load_2d(smem_u32(buf + s * BOX_BYTES), src, bar, (tile % tiles_c) * BC, (tile / tiles_c) * BR);
  };
  for (int i = 0; i < CSTAGES - 1 && i < my_tiles; ++i) issue_load(i);
  for (int i = 0; i < my_tiles; ++i) {
    const int s = i % CSTAGES;
    const int tile = blockIdx.x + i * gridDim.x;
    if (!mbarrier_wait_parity_bounded(smem_u32(&full_storage[s]), (i / CSTAGES) & 1, MAX_TRIES,
                                      err, 10))
      return;
    tma_store_2d(dst, smem_u32(buf + s * BOX_BYTES), (tile % tiles_c) * BC, (tile / tiles_c) * BR);
    bulk_commit_group();
    // Stage (i + CSTAGES - 1) % CSTAGES was read by the store of tile i - 1: wait until at most the
    // newest group (tile i's store) is still reading, then refill it.
    bulk_wait_group_read<1>();
    if (i + CSTAGES - 1 < my_tiles) issue_load(i + CSTAGES - 1);
  }
  bulk_wait_group<0>();
}

// Vectorized manual copy: all threads, 16-byte loads into registers, 16-byte shared stores,
// barrier, 16-byte shared loads, 16-byte global stores, barrier. One stage; overlap comes from the
// several CTAs per SM.
extern "C" __global__ void __launch_bounds__(128)
copy_ldg_sts(const float* __restrict__ src, float* __restrict__ dst, int tiles, int tiles_c,
             int cols) {
  unsigned char* buf = aligned_tile(128);
  constexpr int CHUNKS = BR * BC / 4;   // 16-byte chunks per tile
  constexpr int PER_THREAD = (CHUNKS + 127) / 128;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int r0 = (tile / tiles_c) * BR, c0 = (tile % tiles_c) * BC;
    uint4 v[PER_THREAD];
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
      const int q = threadIdx.x + j * 128;
      if (q < CHUNKS) {
        const int r = q / (BC / 4), c = (q % (BC / 4)) * 4;
        v[j] = *reinterpret_cast<const uint4*>(src + (size_t)(r0 + r) * cols + c0 + c);
      }
    }
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
      const int q = threadIdx.x + j * 128;
      if (q < CHUNKS) reinterpret_cast<uint4*>(buf)[q] = v[j];
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
      const int q = threadIdx.x + j * 128;
      if (q < CHUNKS) {
        const int r = q / (BC / 4), c = (q % (BC / 4)) * 4;
        *reinterpret_cast<uint4*>(dst + (size_t)(r0 + r) * cols + c0 + c) =
            reinterpret_cast<const uint4*>(buf)[q];
      }
    }
    __syncthreads();
  }
}

// cp.async copy: all threads issue 16-byte cp.async copies CSTAGES-1 tiles ahead; after
// wait_group<CSTAGES-2> and a barrier, they write the oldest stage out with 16-byte stores.
extern "C" __global__ void __launch_bounds__(128)
copy_cp_async(const float* __restrict__ src, float* __restrict__ dst, int tiles, int tiles_c,
              int cols) {
  unsigned char* buf = aligned_tile(128);
  const u32 buf0 = smem_u32(buf);
  constexpr int CHUNKS = BR * BC / 4;
  const int my_tiles = tiles > (int)blockIdx.x ? (tiles - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;
  auto issue = [&](int i) {
    const int tile = blockIdx.x + i * gridDim.x;
    const int r0 = (tile / tiles_c) * BR, c0 = (tile % tiles_c) * BC;
    const u32 stage = buf0 + (i % CSTAGES) * BOX_BYTES;
    for (int q = threadIdx.x; q < CHUNKS; q += 128) {
      const int r = q / (BC / 4), c = (q % (BC / 4)) * 4;
      cp_async_cg_16(stage + q * 16, src + (size_t)(r0 + r) * cols + c0 + c);
    }
  };
  for (int i = 0; i < CSTAGES - 1; ++i) {
    if (i < my_tiles) issue(i);
    cp_async_commit_group();
  }
  for (int i = 0; i < my_tiles; ++i) {
    cp_async_wait_group<CSTAGES - 2>();
    __syncthreads();                       // tile i visible to all; stage of tile i-1 free
    if (i + CSTAGES - 1 < my_tiles) issue(i + CSTAGES - 1);
    cp_async_commit_group();
    const int tile = blockIdx.x + i * gridDim.x;
    const int r0 = (tile / tiles_c) * BR, c0 = (tile % tiles_c) * BC;
    const uint4* stage = reinterpret_cast<const uint4*>(buf + (i % CSTAGES) * BOX_BYTES);
    for (int q = threadIdx.x; q < CHUNKS; q += 128) {
      const int r = q / (BC / 4), c = (q % (BC / 4)) * 4;
      *reinterpret_cast<uint4*>(dst + (size_t)(r0 + r) * cols + c0 + c) = stage[q];
    }
  }
  cp_async_wait_all();
}
