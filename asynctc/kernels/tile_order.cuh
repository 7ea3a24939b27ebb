// Chapter 06's opt-in tile orders and L2 cache hint (asynctc.warp_specialization.tile_order).
// Included by warp_specialization.cu after tile_origin; with TILE_ORDER = 0 and L2_HINT = 0 (the
// defaults: no define set) it adds nothing, so the ladder's cubins stay as they were.
//
// TILE_ORDER = 1 (tile_order="hilbert"): the persistent CTAs walk the work items (tiles, or with
// CLUSTER = 2 pairs of tiles along M) in the order of a table the host made
// (asynctc.warp_specialization.tile_order.order_table): entry `item` is (cluster row << 16) | tile
// column, the item-th cell of a Hilbert curve over the enclosing power-of-two square of the item
// grid, cells outside the grid skipped. A table, not the curve computed here, because the rank of
// a cell among the *valid* cells of a curve over a larger square has no closed form: a CTA would
// have to walk the curve from its start (thousands of d → (x, y) steps on the producer's single
// thread). The table costs one 4-byte load per tile per thread (L2-resident: ≤ 16 KiB).
//
// L2_HINT = 1 (l2_hint=True): A's TMA loads carry .L2::cache_hint with an L2::evict_last policy
// (PTX ISA "createpolicy", "cp.async.bulk.tensor" .L2::cache_hint): within a raster group the
// same A tile rows are re-read round after round of tile columns, while a B column of tiles is
// used by one round only.
#ifndef TILE_ORDER
#define TILE_ORDER 0
#endif
#ifndef L2_HINT
#define L2_HINT 0
#endif
static_assert(TILE_ORDER == 0 || TILE_ORDER == 1, "TILE_ORDER: 0 group-M raster, 1 order table");
static_assert(L2_HINT == 0 || L2_HINT == 1, "L2_HINT: 0 none, 1 A evict_last");

#if TILE_ORDER
// The origin of work item `item` from the host-made order table (see above).
__device__ __forceinline__ void tile_from_table(const int* __restrict__ order, int item, u32 rank,
                                                int& m0, int& n0) {
  const int e = __ldg(order + item);
  m0 = ((e >> 16) * CLUSTER + (int)rank) * BM;
  n0 = (e & 0xFFFF) * BN;
}
#define TILE_ORIGIN(item, m0, n0) tile_from_table(order, item, rank, m0, n0)
#else
#define TILE_ORIGIN(item, m0, n0) tile_origin(item, tiles_m, tiles_n, rank, m0, n0)
#endif

#if L2_HINT
__device__ __forceinline__ u64 l2_evict_last_policy() {
  u64 p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}
// tma_load_2d with an L2 cache-policy operand (PTX ISA "cp.async.bulk.tensor": .L2::cache_hint).
__device__ __forceinline__ void tma_load_2d_hint(u32 dst, const TmaDesc& d, u32 bar, int c0,
                                                 int c1, u64 policy) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               ".L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;\n"
               ::"r"(dst), "l"(tma_desc_addr(d)), "r"(c0), "r"(c1), "r"(bar), "l"(policy)
               : "memory");
}
#define TMA_LOAD_A(dst, d, bar, c0, c1) tma_load_2d_hint(dst, d, bar, c0, c1, l2_evict_last_policy())
#else
#define TMA_LOAD_A(dst, d, bar, c0, c1) tma_load_2d(dst, d, bar, c0, c1)
#endif
