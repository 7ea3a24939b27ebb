# %% [markdown]
# # 06 — Warp specialization: a producer warpgroup, consumer warpgroups, and the ladder to cuBLAS
#
# **Learning goal.** Split chapter 05's GEMM into roles — a *producer* warpgroup that only issues
# TMA loads, *consumer* warpgroups that only issue `wgmma` — then climb a ladder of kernels timed
# beside cuBLAS. You will
#
# 1. write both roles' k-loops over several tiles and say why the
#    [seed article](../docs/glossary.md#seed-article)'s version deadlocks;
# 2. read the register budget that [`setmaxnreg`](../docs/glossary.md#setmaxnreg) moves to the consumers;
# 3. read what each rung of the ladder bought;
# 4. read a whole Hopper GEMM kernel in one file, and call the top rung, `asynctc.matmul(a, b)`.
#
# **In plain words.** Loading and computing are two different jobs. Here one warpgroup only
# loads and the others only compute; two barriers per stage say "full" and "empty" between them.
# The split frees the loader's registers for the math and lets loads run on into the next tile.
#
# Deep dives: [06b](06b_ws_anatomy.ipynb) the kernel taken apart; [06c](06c_ladder_investigations.ipynb)
# rungs 5–8; [06d](06d_limits_and_gemm.ipynb) Nsight Compute, the [raster](../docs/glossary.md#raster)
# sweep, `matmul` by shape; [06e](06e_your_gemm_on_the_cpu.ipynb) your pieces as one tile on the CPU.

# %% output varies
import matplotlib.pyplot as plt

from asynctc.core import exercises, notebook, records
from asynctc import warp_specialization as W

notebook.banner("sm_90a")
rec = records.load("warp_specialization")
res = rec.results

# %% [markdown]
# ## 1. Two roles, two barriers per stage
#
# In chapter 05 one thread of a computing warpgroup also issued the loads; while it waited on
# empty, its warpgroup's next `wgmma` waited too. Here the loads get a warpgroup of their own
# ([warp specialization](../docs/glossary.md#warp-specialization)) on chapter 05's ring.
#
# Both roles walk the same k-tiles with one ring counter that carries across tiles. Fill f of a
# stage is the counter divided by S. Consumers wait on full with parity f mod 2, the producer on
# empty with (f + 1) mod 2; kernels write it as `phase ^ 1`. The seed article swaps the waits: its
# consumers wait on "empty" before anything was loaded. Top, the kernel's version; bottom, the
# seed's, which deadlocks at the first k-tile (06b §1):

# %% output varies
fig = W.plot_protocol()
plt.show()

# %% [markdown]
# **Exercise 1 (the capstone). Write both roles' loops.** The CTA is
# [persistent](../docs/glossary.md#persistent): it computes `TILES` tiles in a row, `T` k-tiles
# each, with one ring of `STAGES` stages. One question decides it: with 3 k-tiles a tile on 2
# stages, which stage and parity does tile 1's first k-tile use?
#
# Your text runs once per role, as the [elected thread](../docs/glossary.md#elected-thread) of
# each warpgroup (one arrival each on `empty`). In scope:
#
# - `wg` (0 is the producer, 1 and 2 the consumers), `TILES`, `T`, `STAGES`, `kStageBytes`;
# - `full.wait(stage, parity)`, `empty.wait(stage, parity)`, `empty.arrive(stage)`, and
#   `full.arrive_expect_tx(stage, bytes)`, the producer's arrive with the bytes the TMA brings;
# - `tma_load(stage, tile, k)`: A's box and B's box of k-tile `k` of `tile`, landing on `full[stage]`;
# - `mma_ktile(acc, stage)`: the k-tile's wgmmas as one commit group; `wgmma_wait_group<N>()`;
# - `store_tile(acc, tile)` writes the tile's C and zeroes `acc`.
#
# Declare what you need (C++ ints, `if`, `for`, `while`). The check runs your text as each role in
# chapter 05's ring model over every tile, then moves the bytes with deep dive 06e's emulator and
# checks each tile against float64: 3 tiles of 3 k-tiles on 2 stages, then 2 tiles of 4 on 3.

# %%
whole_kloop = """
if (wg == 0) {                 // the producer warpgroup
  for (int tile = 0; tile < TILES; ++tile) {
    for (int k = 0; k < T; ++k) {
      // your producer's k-tile
    }
  }
} else {                       // consumer warpgroups 1 and 2
  for (int tile = 0; tile < TILES; ++tile) {
    for (int k = 0; k < T; ++k) {
      // your consumers' k-tile
    }
    // the tile's C
  }
}
"""
ok = exercises.check("ch06.whole_kloop", whole_kloop)

# %% [markdown]
# Your loops in chapter 05's ring model, drawn as its timeline:

# %% output varies
fig = W.whole_kloop.show_loops(whole_kloop, ok)
plt.show()

# %% [markdown]
# ## 2. The register budget
#
# An SM has 65536 32-bit registers. `__launch_bounds__(384, 1)` (3 warpgroups, one CTA per SM)
# gives each thread 65536 / 384 = 170, rounded down to a multiple of 8: **168 at entry**. Then
# `setmaxnreg` (all 128 threads of a warpgroup, a multiple of 8) moves them:
#
# | warpgroup | instruction | registers |
# |---|---|---:|
# | producer (128 threads) | `setmaxnreg.dec 40` | 128 × 40 = 5120 |
# | 2 consumers (256 threads) | `setmaxnreg.inc 232` | 256 × 232 = 59392 |
# | CTA | | 64512 ≤ 65536 |
#
# Each consumer computes 64 rows of the 128×256 tile: 64 × 256 / 128 = 128 fp32 accumulators
# per thread, which still fit under 168 without `setmaxnreg`. §3 measures what the move buys.
#
# ## 3. The ladder
#
# One kernel source; each rung is a set of compile-time switches (`W.RUNGS`), timed beside cuBLAS
# in the same run, not against a [peak](../docs/glossary.md#peak), so the SM clock cancels out.
#
# **Predict before you look.** Rung 2 splits the roles; each later rung adds one change. Which
# change buys the most over the rung it was built from? Does the split alone buy anything? In the
# figure, orange is each rung's range, predicted before it first ran.

# %% output answers a prediction
fig = W.plot_ladder(res, 4096, "float16", record=rec, changes=True, predictions=True)
plt.show()

# %% [markdown]
# Two steps carry the ladder (fp16, 4096³):
#
# - **Rung 3, the tile back: × 1.16.** Rung 2's split had halved the tile to 128×128 and ran at
#   0.85 of rung 1. Two consumers on 128×256 and `setmaxnreg` bring it back to rung 1, no further.
# - **Rung 7, an [epilogue](../docs/glossary.md#epilogue) by [TMA store](../docs/glossary.md#tma-store): +8 %.**
#   C leaves through shared memory by TMA, so the consumers start the next tile sooner.
#
# The other four each moved less than rung 7 ([06c §9](06c_ladder_investigations.ipynb) takes them
# one at a time): 4, a sweep of tiles and stages, which asks whether another tile beats rung 3's:
# none did, so its row is rung 3's own build; 5, a [persistent](../docs/glossary.md#persistent) grid; 6,
# [clusters](../docs/glossary.md#cluster) with B by [multicast](../docs/glossary.md#multicast);
# 8, a wider [raster](../docs/glossary.md#raster): its [group-M](../docs/glossary.md#group-m)
# G, 8 → 16. Tiles are visited in groups of G rows of tiles, so the B tiles those rows share stay in L2.

# %% output varies
W.show_ladder_steps(res)

# %% [markdown]
# **Derive it.** Rung 3's and rung 7's steps from the record, reading each ladder row's `rung`,
# `size`, `dtype` and `tflops` (the table above has every rung and both sizes):

# %% output varies
t = {r["rung"]: r["tflops"] for r in res["ladder"] if (r["size"], r["dtype"]) == (4096, "float16")}
print(f"rung 3 / rung 2 = {t[3]:.0f} / {t[2]:.0f} = {t[3] / t[2]:.2f}")
print(f"rung 7 / rung 6 = {t[7]:.0f} / {t[6]:.0f} = {t[7] / t[6]:.2f}")

# %% [markdown]
# So: the split itself bought nothing. Rung 2 halved the tile for it and lost about 15 %; rung 3
# won that back and no more. The TMA store (rung 7) took the ladder to cuBLAS's speed.
#
# **Rung 2 → rung 3, one change at a time** (record `ws_rung3_steps`). The 128×256 tile gives
# +17 %: its operands need less of shared memory's bandwidth. A second consumer alone and
# `setmaxnreg` each move under 2 %; the wide tile already fits in the 168 registers at entry.

# %% output varies
W.show_rung3_steps(records.load("ws_rung3_steps").results)

# %% [markdown]
# **Why does rung 7 gain so much?** The trace counts the cycles per tile spent storing C (rungs 6
# and 7); record `ws_store_ablation` times the TMA store alone, on rung 3. The cycles saved are 6 %
# of a tile, close to the 7 % the store bought alone: the saved epilogue time accounts for the gain.

# %% output varies
W.show_epilogue(res, records.load("ws_store_ablation").results)

# %% [markdown]
# **Design it** (no grade). Set the tile width `BN` (128 or 256), stages `S`, `PERSISTENT`,
# `TMA_STORE`. The model runs chapter 05's ring per tile, adds the traced epilogue, and gives each
# SM ⌈tiles / SMs⌉ tiles. Its one fitted number is chapter 05's L2 cap. Which knob pays most? Does
# the record agree?

# %% output varies
BN, S, PERSISTENT, TMA_STORE = 256, 4, False, False
print(W.design(bn=BN, stages=S, persistent=PERSISTENT, tma_store=TMA_STORE))

# %% [markdown]
# ## 4. The whole kernel, one file
#
# `asynctc/kernels/hopper_gemm.cu` is rung 3 written out whole, with no switches, to read top to
# bottom, using only the wrappers of `asynctc/kernels/ptx/` that chapters 03–05 showed. The host
# side, [`whole.py`](../asynctc/warp_specialization/whole.py), builds A's and B's
# [tensor maps](../docs/glossary.md#tensor-map) and launches one CTA of 384 threads per tile. In
# the kernel, after chapter 03's barrier set-up (full expects the producer's one arrival, empty one
# per consumer warpgroup), come three parts.
#
# **The producer's loop** (chapters 05 and 03). Warpgroup 0 gives its registers back, and one
# thread stays. Per k-tile it waits on empty with parity `phase ^ 1`, announces the stage's bytes,
# and issues two TMA loads that complete on full. It is your producer's k-tile, for one tile.

# %%
W.show_kernel_part("producer")

# %% [markdown]
# **The consumers' loop** (chapters 06 and 04). Warpgroups 1 and 2 take the registers and compute
# rows 0–63 and 64–127 (`cw = wg − 1`). Per k-tile each waits on full with parity `phase` and
# issues the k-tile's wgmmas as one commit group; `wgmma_wait_group<1>` leaves it in flight, so
# the consumer releases the *previous* stage on empty.

# %% output answers a prediction
held = "the consumers' k-loop, marked below; the rest of this part is shown"
W.show_kernel_part("consumers", reveal=exercises.after("ch06.whole_kloop", held=held))

# %% [markdown]
# **The epilogue** (chapter 04). Each thread writes its accumulators straight to C, two halves at
# a time, where chapter 04's fragment layout puts them. Rung 7 replaces this with the TMA store.
#
# What the GPU said of this file: deep dive [06d](06d_limits_and_gemm.ipynb) §4.

# %%
W.show_kernel_part("epilogue")

# %% [markdown]
# ## Worklog

# %% output varies
from asynctc.core import worklog

worklog.show("06")

# %% [markdown]
# **Your GEMM so far.** The consumer loop of deep dive 06e §2 completes it. Until you write it
# there, the course's stands in; once it compiles to rung 3's SASS, the recorded rung-3 run is yours.

# %% output varies
from asynctc.models.gemm_so_far import so_far

so_far("06")

# %% [markdown]
# ## 5. Use it: `asynctc.matmul`
#
# The top rung, with edge handling, is `asynctc.matmul(a, b)`: any M, N, K, numpy, torch or CuPy
# arrays ([deep dive 06d §3](06d_limits_and_gemm.ipynb)).
#
# **What you learned.** Both roles' loops across tiles, the register budget, what each rung
# bought, the whole kernel in one file.
#
# **Try next, without a GPU:** [deep dive 06e](06e_your_gemm_on_the_cpu.ipynb) runs your passing
# core exercises as one Hopper tile on the CPU and asks for rung 3's consumer loop, compared by SASS.
#
# **Next:** [chapter 07](07_fp8_precision.ipynb) feeds the same pipeline FP8.

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %% output varies
whole_kloop = """
int stage = 0, phase = 0;                // the ring position: set once, before the tile loop
if (wg == 0) {                           // the producer warpgroup
  for (int tile = 0; tile < TILES; ++tile) {
    for (int k = 0; k < T; ++k) {
      empty.wait(stage, phase ^ 1);      // (f + 1) mod 2: the stage's last fill was released
      full.arrive_expect_tx(stage, kStageBytes);
      tma_load(stage, tile, k);          // A's box and B's box; they land on full[stage]
      if (++stage == STAGES) { stage = 0; phase ^= 1; }
    }
  }
} else {                                 // consumer warpgroups 1 and 2
  for (int tile = 0; tile < TILES; ++tile) {
    for (int k = 0; k < T; ++k) {
      full.wait(stage, phase);           // f mod 2: the TMA's bytes have landed
      mma_ktile(acc, stage);
      wgmma_wait_group<0>();             // the wgmmas are done reading the stage
      empty.arrive(stage);
      if (++stage == STAGES) { stage = 0; phase ^= 1; }
    }
    store_tile(acc, tile);
  }
}
"""
ok = exercises.check("ch06.whole_kloop", whole_kloop, solution=True)

# %% output varies tags=["solution"]
fig = W.whole_kloop.show_loops(whole_kloop, ok)      # exercise 1's picture, drawn from the solution
plt.show()

# %% output varies tags=["solution"]
print(W.design_survey())        # §3's "Design it": every recorded design, model beside record
