# %% [markdown]
# # 06 — Warp specialization: a producer warpgroup, consumer warpgroups, and the ladder to cuBLAS
#
# **Learning goal.** Split chapter 05's GEMM into two roles. A *producer* warpgroup only issues TMA
# loads. *Consumer* warpgroups only issue `wgmma`. Then climb a ladder of kernels timed beside cuBLAS.
#
# **Where we are.** In chapter 05, one thread of a consumer warpgroup issued the loads. While it
# waited for a free stage, its warpgroup's math stalled.
#
# **In plain words.** Two barriers per stage, "full" and "empty", pass work between the roles.
# The split can free registers for the math (§3: when that pays). The producer also keeps loading
# into the next tile.

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
# The producer is warpgroup 0. Consumers 0 and 1 are warpgroups 1 and 2 (in chapter 05,
# warpgroup 0 was consumer 0 and also loaded). Giving warps different jobs is
# [warp specialization](../docs/glossary.md#warp-specialization).
#
# Both roles count k-tiles with one [ring counter](../docs/glossary.md#ring-counter) j, across
# tiles. Load j fills stage j mod `STAGES` as its fill f = j // `STAGES` (from 0). Worked, the
# consumers' side: `STAGES` = 3, j = 7 is stage 1, fill 2; consumers wait on full with parity
# f mod 2 = 0. The producer's side is exercise 1a's: before loading fill f, it waits on empty for
# fill f − 1's release: [03 §3](03_tma_mbarrier.ipynb)'s parity rule.
#
# The [seed article](../docs/glossary.md#seed-article) is the worklog this course checks. Its
# consumers wait on empty before anything is loaded. Top: this kernel. Bottom: the seed's kernel,
# deadlocked at the first k-tile.

# %% output varies
fig = W.plot_protocol()
plt.show()

# %% [markdown]
# The figure's short names, and the real calls your kernel makes:
#
# | short name | the real calls |
# |---|---|
# | `full.wait(stage, parity)` | `ring_wait(full_bar(stage), parity)`: a bounded loop on `mbarrier.try_wait.parity` |
# | `empty.wait(stage, parity)` | `ring_wait(empty_bar(stage), parity)` |
# | `full.arrive_expect_tx(stage, bytes)` | `mbarrier_arrive_expect_tx(full_bar(stage), bytes)`, by the elected thread |
# | `tma_load(stage, tile, k)` | two `tma_load_2d(dst, map, full_bar(stage), c0, c1)`: A's box into `smem_a(stage)`, B's into `smem_b(stage)` |
# | `mma_ktile(acc, stage)` | `wgmma_fence()`, four `wgmma_mma_async_ss<BN, 0, 0, 0>(acc, da, db, 1)`, `wgmma_commit_group()` |
# | `empty.arrive(stage)` | `mbarrier_arrive(empty_bar(stage))`, by the elected thread of each consumer |
#
# `wgmma_wait_group<N>()` is the same call in both. The real calls add
# [`setmaxnreg`](../docs/glossary.md#setmaxnreg) for the roles: the register budget, next.
#
# **The register budget.** An SM has 65536 32-bit registers. `__launch_bounds__(384, 1)` asks for
# 3 warpgroups and one CTA per SM. So each thread gets 65536 / 384 = 170.7 registers, rounded down
# to a multiple of 8: **168 at entry**. `setmaxnreg` changes a warpgroup's register limit while it
# runs. The producer only issues loads: it drops to 40 (`setmaxnreg_dec<40>()`). The accumulators
# live in the consumers' registers: both rise to 232 (`setmaxnreg_inc<232>()`). Together:
# 128 × 40 + 256 × 232 = 64512, within 65536. Going further: [06c §3](06c_ladder_investigations.ipynb) measures
# `setmaxnreg` alone.

# %% [markdown]
# **Exercise 1a (predict, graded).** Each tile has 3 k-tiles; the ring has 2 stages. The producer is
# about to load tile 1's first k-tile (both counted from 0). Which stage does it fill, and which
# parity does it wait on empty? Answer `(stage, parity)`.

# %%
answer = ...
ok = exercises.check("ch06.producer_wait", answer, tile=1, k=0, k_tiles=3, stages=2)

# %% [markdown]
# **Step 1 (optional, about 17 minutes):** [06f §1](06f_capstone_in_cuda.ipynb)'s
# short-name loops (`ch06.whole_kloop`): the same loops, one short name per step, drawn as the ring
# model runs them. Then come back for exercise 1b; or go straight to it.
#
# **Exercise 1b (the capstone). Write both roles' loops in CUDA.** The CTA is
# [persistent](../docs/glossary.md#persistent): it walks `TILES` tiles of 128 × 128, `T` k-tiles
# each. One ring of `STAGES` stages serves them all (2 in the check; the timing also runs 4). In scope:
#
# - `wg` (0 the producer, 1 and 2 the consumers), `elected` (this warpgroup's
#   [elected thread](../docs/glossary.md#elected-thread), its thread 0);
# - `TILES`, `T`, `STAGES`, `BM`, `BN`, `BK` (128, 128, 64), `kStageBytes` (a stage: A's box, then B's; also the stride between stages);
# - `tile_m0(tile)`, `tile_n0(tile)`: the first row of A and of stored B of this CTA's tile `tile`;
# - `full_bar(s)`, `empty_bar(s)`, `smem_a(s)`, `smem_b(s)`: stage s's barriers and boxes;
# - `ta`, `tb`: the [tensor maps](../docs/glossary.md#tensor-map) of A (M × K) and B (stored
#   N × K): boxes of 64 elements of K by 128 rows, 128-byte swizzle;
# - `desc_a0`, `desc_b0`: this consumer's [descriptors](../docs/glossary.md#matrix-descriptor) of
#   stage 0, k-step 0; `acc`: its accumulators, zero at the start; `store_tile(acc, tile)` stores them, then zeroes them;
# - `bool ring_wait(u32 bar, u32 parity)` (gives up after 2 s), `mbarrier_arrive_expect_tx(u32 bar, u32 bytes)`,
#   `mbarrier_arrive(u32 bar)`, `tma_load_2d(u32 dst, const TmaDesc& map, u32 bar, int c0, int c1)`;
# - `u64 wgmma_desc_advance(u64 desc, u32 bytes)`, `wgmma_fence()`,
#   `wgmma_mma_async_ss<BN, 0, 0, 0>(acc, desc_a, desc_b, 1)` (N = `BN` columns), `wgmma_commit_group()`, `wgmma_wait_group<N>()`;
# - `setmaxnreg_dec<R>()`, `setmaxnreg_inc<R>()`: R a multiple of 8 (the register budget above).
#
# What you need not guess:
#
# - `wgmma_desc_advance(desc, bytes)` takes **bytes**: it adds bytes >> 4 to the descriptor's start
#   field.
# - Stage s's descriptors are `desc_a0` and `desc_b0` advanced by s · `kStageBytes`. `desc_b0`
#   already points at B's box, past A's.
# - The k-step, the bytes to the next 16 k, is chapter 04's (§3, `ch04.kstep`).
#
# The [phase parity](../docs/glossary.md#phase-parity) of each wait, each box's coordinates (chapter
# 03) and that k-step are yours. The ring position carries on across tiles (exercise 1a). The check
# compiles your text (NVRTC), runs it on the CPU against float64, and on a Hopper GPU where one is
# present.

# %%
cuda_kloop = """
int stage = 0; u32 phase = 0;                 // the ring position, once, before the tile loop
if (wg == 0) {                                // the producer warpgroup
  // setmaxnreg: give registers back
  if (elected) {
    for (int tile = 0; tile < TILES; ++tile)
      for (int k = 0; k < T; ++k) {
        // wait for the stage to be free; announce its bytes; load A's box and B's box
        // advance the ring
      }
  }
} else {                                      // consumer warpgroups 1 and 2
  // setmaxnreg: take registers
  for (int tile = 0; tile < TILES; ++tile) {
    for (int k = 0; k < T; ++k) {
      // wait for the stage's bytes; fence; 4 k-steps of wgmma; commit; wait; release (one thread)
      // advance the ring
    }
    store_tile(acc, tile);
  }
}
"""
ok = exercises.check("ch06.cuda_kloop", cuda_kloop)

# %% [markdown]
# Once your loops pass, the cell below prints each check's line and counts your kernel's protocol
# instructions in its SASS beside the course's answer's.

# %% output answers a prediction
W.cuda_kloop.capstone_cell(cuda_kloop, ok)

# %% [markdown]
# Its speed: on a Hopper GPU the cell below times your loops at 4096³ now, also built at rung 3's
# tile (`BN` = 256, 4 stages, fp16 C), beside the ladder's kernel at your shape, rungs 1 and 3, and cuBLAS. Without one: the record's run of the
# course's answer, else the nearest timed build.

# %% output answers a prediction
W.capstone_speed.speed_cell(cuda_kloop, ok)

# %% [markdown]
# ## 2. What `wgmma_wait_group<0>` costs
#
# Once your loops pass, the cell below compares `wgmma_wait_group<0>()` with `<1>` in the ring model.

# %% output answers a prediction
from asynctc.models import pipeline as mp
frac = {(c, n): mp.simulate(4, n, c, 32).math_fraction for c in (1, 2) for n in (0, 1)}  # c consumers, wait_group<n>
if exercises.after("ch06.cuda_kloop", held="what wgmma_wait_group<0> and <1> cost"):
    display(notebook.Markdown(
        "**So:** `wgmma_wait_group<0>()` is correct, but the Tensor Cores idle while it waits, every "
        "k-tile. `<1>` keeps one group in flight and releases the previous k-tile's stage. Share of the "
        "loop with a wgmma in flight, ring model (S = 4):"))
    print("; ".join(f"{c} consumer(s): <0> {frac[c, 0]:.0%}, <1> {frac[c, 1]:.0%}" for c in (1, 2)))
    display(notebook.Markdown("Two consumers fill each other's gaps: here `<0>` costs little."))

# %% check
notebook.require(abs(frac[2, 1] - frac[2, 0]) < 0.01 < frac[1, 1] - frac[1, 0], "two consumers fill the gap")

# %% [markdown]
# Going further: [06b §1](06b_ws_anatomy.ipynb) steps through the seed's deadlock.
# [06f](06f_capstone_in_cuda.ipynb) asks the loops in short names and draws them as the ring model
# runs them, shows [ptxas](../docs/glossary.md#ptxas) keeping your `setmaxnreg`, and says what the CPU run does not model.

# %% [markdown]
# ## 3. The ladder
#
# The ladder is a row of kernels, each a [rung](../docs/glossary.md#rung), timed beside cuBLAS.
# What each changes:
#
# 1. chapter 05's kernel: every warpgroup computes
# 2. a producer warpgroup + 1 consumer, 128×128
# 3. 2 consumers on 128×256, setmaxnreg 40/232
# 4. the fastest tile and stage count of a sweep
# 5. a persistent grid (one CTA per SM)
# 6. clusters of 2 CTAs, B multicast
# 7. the epilogue through shared memory + TMA store
# 8. a wider raster of tiles (16 rows per group)
#
# Its terms: a [cluster](../docs/glossary.md#cluster) is a group of CTAs on nearby SMs; a
# [multicast](../docs/glossary.md#multicast) lands one TMA load in each of its CTAs. The
# [epilogue](../docs/glossary.md#epilogue) writes C; a [TMA store](../docs/glossary.md#tma-store)
# writes C from shared memory, issued by one thread. The [raster](../docs/glossary.md#raster) is the
# order CTAs take tiles in.
#
# **Predict before you look.** Which rung buys the most, one change at a time? Count the split as
# one change: rung 3 against rung 1 (rung 2 is half of it). Count each later
# rung against the rung it was built from. Orange marks each rung's predicted band.

# %% output answers a prediction
fig = W.plot_ladder(res, 4096, "float16", record=rec, changes=True, predictions=True)
plt.show()

# %% answer [markdown]
# **In one sentence** (fp16, 4096³): rung 7 buys the most, +8 % over rung 6, where one thread
# writes C by TMA store; the split and `setmaxnreg` together bought nothing (rung 3 runs within 2 %
# of rung 1). [06c §3](06c_ladder_investigations.ipynb) reads every rung's change, with the arithmetic.

# %% check, output answers a prediction
for sentence, ok, numbers in W.lesson.claims(res, core=True):   # on the record
    notebook.require(ok, sentence, **numbers)        # bounds: W.lesson's constants, a comment each
    print("✓", sentence)

# %% [markdown]
# **What the split buys.** Here, no speed by itself (printed below). So 05 §5's suspect, consumer 0
# also issuing the refills, does not explain its 1.2×: moving the refills to a producer changed
# nothing measurable (unless the split costs what it saves). Part of it lies outside the loop the
# model runs (printed below): the last, partly empty wave, and each tile's fill and epilogue, which
# rungs 5 and 7 shrink. The rest is not traced here. The split
# is what rungs 4–8 are built on. CUTLASS and DeepGEMM (DeepSeek's open-source FP8 GEMM library) use it
# where the consumers' registers are the limit (fp8 promotion, chapter 07;
# [09 §1](09_blackwell.ipynb)'s register bill): their finding, not a measurement here.

# %% output varies
W.lesson.split_bought(res, records.load("ws_rung3_steps").results, records.load("ws_store_ablation").results,
                      sms=rec.provenance["sm_count"])

# %% [markdown]
# ## 4. Your kernel, top to bottom
#
# Exercise 1b's loops are the middle of a real kernel, `asynctc/kernels/capstone_cuda.cu`. Once they pass,
# the cell below shows that kernel with your loops in it: every line but the header comment, in
# blocks. Each block says what it does and where you met it. The column `yours` marks your lines.
#
# A **fence** orders memory accesses: those before it come before those after it. Each block names its fences and what each orders.

# %% output answers a prediction
if exercises.after("ch06.cuda_kloop", held="your kernel, top to bottom (its middle is exercise 1b's loops)"):
    W.capstone_read.walk_cell(cuda_kloop, ok, cuda=True)

# %% [markdown]
# Going further: [`hopper_gemm.cu`](../asynctc/kernels/hopper_gemm.cu) is the same design with
# `setmaxnreg` and the host code ([`whole.py`](../asynctc/warp_specialization/whole.py)), rung 3's
# build written out. [06d §4](06d_limits_and_gemm.ipynb) reads its epilogue.

# %% [markdown]
# ## Worklog

# %% output answers a prediction
from asynctc.core import worklog

worklog.show("06")

# %% [markdown]
# **Your GEMM so far.** Until you write [deep dive 06e](06e_your_gemm_on_the_cpu.ipynb)'s consumer loop,
# the course's stands in.

# %% output varies
from asynctc.models.gemm_so_far import so_far

so_far("06")

# %% [markdown]
# **Use it.** `asynctc.matmul(a, b)` is the top rung, with edge handling: [06d §3](06d_limits_and_gemm.ipynb)
# runs it and times it by shape.

# %% [markdown]
# **What you learned.** Both roles' loops across tiles, your whole kernel top to bottom, the
# register budget, what each rung bought.
#
# **On a GPU:** `python -m asynctc record warp_specialization --no-save` re-measures the ladder.
#
# **Next:** [chapter 07](07_fp8_precision.ipynb) feeds the same pipeline FP8.

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
answer = (1, 0)    # ring counter 1 × 3 + 0 = 3: stage 3 mod 2 = 1; fill f = 3 // 2 = 1, empty parity (f + 1) mod 2 = 0
ok = exercises.check("ch06.producer_wait", answer, tile=1, k=0, k_tiles=3, stages=2, solution=True)

# %% output varies
cuda_kloop = """
int stage = 0; u32 phase = 0;                 // the ring position: set once, before the tile loop
if (wg == 0) {                                // the producer warpgroup
  setmaxnreg_dec<40>();
  if (elected) {
    for (int tile = 0; tile < TILES; ++tile)
      for (int k = 0; k < T; ++k) {
        ring_wait(empty_bar(stage), phase ^ 1);   // the stage's last fill was released
        mbarrier_arrive_expect_tx(full_bar(stage), kStageBytes);
        tma_load_2d(smem_a(stage), ta, full_bar(stage), k * BK, tile_m0(tile));   // K, then rows
        tma_load_2d(smem_b(stage), tb, full_bar(stage), k * BK, tile_n0(tile));
        if (++stage == STAGES) { stage = 0; phase ^= 1; }
      }
  }
} else {                                      // consumer warpgroups 1 and 2
  setmaxnreg_inc<232>();
  for (int tile = 0; tile < TILES; ++tile) {
    for (int k = 0; k < T; ++k) {
      ring_wait(full_bar(stage), phase);      // the TMA's bytes have landed
      wgmma_fence();
      for (int j = 0; j < 4; ++j)             // k-step j: 16 fp16 = 32 bytes along the swizzled row
        wgmma_mma_async_ss<BN, 0, 0, 0>(acc, wgmma_desc_advance(desc_a0, stage * kStageBytes + 32 * j),
                                        wgmma_desc_advance(desc_b0, stage * kStageBytes + 32 * j), 1);
      wgmma_commit_group();
      wgmma_wait_group<0>();                  // the wgmmas are done reading the stage
      if (elected) mbarrier_arrive(empty_bar(stage));
      if (++stage == STAGES) { stage = 0; phase ^= 1; }
    }
    store_tile(acc, tile);
  }
}
"""
ok = exercises.check("ch06.cuda_kloop", cuda_kloop, solution=True)
