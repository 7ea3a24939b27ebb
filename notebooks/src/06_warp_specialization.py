# %% [markdown]
# # 06 — Warp specialization: a producer warpgroup, consumer warpgroups, and the ladder to cuBLAS
#
# **Learning goal.** Split chapter 05's GEMM into roles — a *producer* warpgroup that only issues
# TMA loads, *consumer* warpgroups that only issue `wgmma` — then climb a ladder of kernels timed
# beside cuBLAS.
#
# **In plain words.** Two barriers per stage, "full" and "empty", pass work between the roles.
# The split frees the loader's registers for the math and lets loads run on into the next tile.
#
# Deep dives: [06b](06b_ws_anatomy.ipynb) the kernel taken apart; [06c](06c_ladder_investigations.ipynb)
# rungs 5–8; [06d](06d_limits_and_gemm.ipynb) Nsight Compute, the sweep of the
# [raster](../docs/glossary.md#raster) (the order in which CTAs take the output tiles), `matmul` by shape; [06e](06e_your_gemm_on_the_cpu.ipynb) your pieces as one tile on the CPU.

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
# In chapter 05, while the loading thread waited on empty, its warpgroup's next `wgmma` waited
# too. Here the loads get a warpgroup of their own
# ([warp specialization](../docs/glossary.md#warp-specialization): warps given different jobs).
#
# Both roles walk the k-tiles with one ring counter that carries across tiles; fill f is the
# counter divided by S. Consumers wait on full with parity f mod 2, the producer on empty
# with (f + 1) mod 2 (`phase ^ 1`). The [seed article](../docs/glossary.md#seed-article), the public
# worklog this course checks, swaps the waits, so its consumers wait on "empty" before anything was
# loaded. Top, the kernel's version; bottom, the seed's, which deadlocks at the first k-tile:

# %% output varies
fig = W.plot_protocol()
plt.show()

# %% [markdown]
# **Exercise 1 (the capstone). Write both roles' loops.** The CTA is
# [persistent](../docs/glossary.md#persistent): it computes `TILES` tiles in a row, `T` k-tiles
# each, with one ring of `STAGES` stages. One question decides it: with 3 k-tiles a tile on 2
# stages, which stage and parity does tile 1's first k-tile use?
#
# Your text runs as each warpgroup's [elected thread](../docs/glossary.md#elected-thread), the one
# thread that acts for it. In scope:
#
# - `wg` (0 is the producer, 1 and 2 the consumers), `TILES`, `T`, `STAGES`, `kStageBytes`;
# - `full.wait(stage, parity)`, `empty.wait(stage, parity)`, `empty.arrive(stage)`,
#   `full.arrive_expect_tx(stage, bytes)` (the producer's arrive with the TMA's bytes);
# - `tma_load(stage, tile, k)`: A's and B's boxes of k-tile `k` of `tile`, landing on `full[stage]`;
# - `mma_ktile(acc, stage)`: the k-tile's wgmmas as one commit group; `wgmma_wait_group<N>()`;
# - `store_tile(acc, tile)` writes the tile's C and zeroes `acc`.
#
# Declare what you need (C++ `int`, `if`, `for`, `while`); the check runs your text in the ring
# model and checks each tile against float64.

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
# Your loops in chapter 05's ring model. The producer's row is almost all purple: both stages are
# soon busy, and it waits on empty for a slot. That is the healthy state: the producer keeps all S
# stages filled. The consumers' red waits on full: 2 stages hide no latency.
#
# Going further: [06b §1](06b_ws_anatomy.ipynb) steps through the seed's deadlock.

# %% output varies
fig = W.whole_kloop.show_loops(whole_kloop, ok)
plt.show()

# %% [markdown]
# ## 2. The register budget
#
# 1. An SM has 65536 32-bit registers. `__launch_bounds__(384, 1)` (3 warpgroups, one CTA per SM)
#    gives each thread 65536 / 384, rounded down to a multiple of 8: **168 at entry**.
# 2. [`setmaxnreg`](../docs/glossary.md#setmaxnreg), which changes a warpgroup's register limit while
#    it runs, then moves them, a warpgroup at a time:
#
# | warpgroup | instruction | registers |
# |---|---|---:|
# | producer (128 threads) | `setmaxnreg.dec 40` | 128 × 40 = 5120 |
# | 2 consumers (256 threads) | `setmaxnreg.inc 232` | 256 × 232 = 59392 |
# | CTA | | 64512 ≤ 65536 |
#
# Each consumer's thread keeps 64 × 256 / 128 = 128 fp32 accumulators, under 168 even without
# `setmaxnreg`. **So:** the consumers get most of the registers; §3 measures what that buys.
#
# ## 3. The ladder
#
# Each rung is a set of compile-time switches of one kernel (`W.RUNGS`), timed beside cuBLAS in
# the same run.
#
# **Predict before you look.** Rung 2 splits the roles; each later rung adds one change. Which
# change buys the most? Does the split alone buy anything? Orange: each rung's predicted range.

# %% output answers a prediction
fig = W.plot_ladder(res, 4096, "float16", record=rec, changes=True, predictions=True)
plt.show()

# %% [markdown]
# Read the ladder as two big steps and four small ones (fp16, 4096³):
#
# - **Rung 3, the tile back.** Rung 2's split had halved the tile to 128×128 and lost about 15 %.
#   Two consumers on 128×256 and `setmaxnreg` win that back, no further.
# - **Rung 7, an [epilogue](../docs/glossary.md#epilogue) (the code that writes the tile's C) by
#   [TMA store](../docs/glossary.md#tma-store), one bulk copy from shared memory to C: +8 %.**
#   The consumers start the next tile sooner.
#
# The four small ones each moved less than rung 7. Each is one switch:
#
# - **4** sweeps tiles and stages; none beat rung 3's build.
# - **5** makes the grid [persistent](../docs/glossary.md#persistent): one CTA per SM walks many tiles.
# - **6** pairs CTAs in a [cluster](../docs/glossary.md#cluster), CTAs on nearby SMs;
#   one TMA load sends B to both, a [multicast](../docs/glossary.md#multicast).
# - **8** changes the [raster](../docs/glossary.md#raster), the order CTAs take tiles: groups of G tile
#   rows ([group-M](../docs/glossary.md#group-m), 8 → 16), so the B tiles those rows share stay in L2.
#
# **Derive it** from the `ladder` rows: each rung over its parent (rung 5's is rung 3); the table
# adds 8192³.

# %% output varies
t = {r["rung"]: r["tflops"] for r in res["ladder"] if (r["size"], r["dtype"]) == (4096, "float16")}
step = {b: t[b] / t[a] for b, a in W.lesson.OVER.items()}               # fp16, 4096³
for b, a in W.lesson.OVER.items():
    print(f"rung {b} over rung {a}: {notebook.ratio(t[b], t[a], 'TFLOP/s')}")
print(f"rung 3 over rung 1: {notebook.ratio(t[3], t[1], 'TFLOP/s')}")
notebook.require(sorted(step, key=step.get)[-2:] == [7, 3] and 1.06 < step[7] < 1.10,
                 "rung 3 is the biggest step; rung 7 (+8 %) the next", **{f"rung{b}": v for b, v in step.items()})
W.show_ladder_steps(res, steps=False)     # the table; it checks these sentences at every size and dtype

# %% [markdown]
# **So:** the split itself bought nothing (rung 3 is back at rung 1); the TMA store took the
# ladder to cuBLAS's speed.
#
# **Rung 2 → rung 3, one change at a time** (record `ws_rung3_steps`):
#
# 1. A second consumer alone moves under 2 %.
# 2. The 128×256 tile gives +17 %: its operands need less of shared memory's bandwidth.
# 3. `setmaxnreg` then moves under 2 %: the wide tile already fits in the registers at entry.

# %% output varies
s = {d["step"]: d for d in W.rung3_steps(records.load("ws_rung3_steps").results, spills=False)}
for b, a in (("two consumers", "rung 2"), ("128x256", "two consumers"), ("setmaxnreg (rung 3)", "128x256")):
    print(f"{b}: {notebook.ratio(s[b]['tflops'], s[a]['tflops'], '', 3)}; regs {s[b]['regs']}/{s[b]['entry']}, smem {s[b]['smem_share']:.0%}")
g = {b: d["gain"] for b, d in s.items() if d["gain"] is not None}
notebook.require(abs(g["two consumers"]) < 0.02 and 0.14 < g["128x256"] < 0.20 and abs(g["setmaxnreg (rung 3)"]) < 0.015
                 and s["128x256"]["smem_share"] < s["rung 2"]["smem_share"] and s["128x256"]["regs"] <= s["128x256"]["entry"],
                 "two consumers and setmaxnreg move under 2 %; the wide tile +17 %, less smem share, fits at entry", **g)

# %% [markdown]
# **Why does rung 7 gain so much?** The traced cycles it saves storing C are 6 % of a tile, close
# to the 7 % the TMA store bought alone on rung 3 (record `ws_store_ablation`).

# %% output varies
W.show_epilogue(res, records.load("ws_store_ablation").results)   # notebook.how(W.show_epilogue) prints its code

# %% [markdown]
# **Design it** (no grade). The model runs chapter 05's ring per tile plus the traced epilogue;
# its one fitted number is the L2 cap that deep dive 05b §4–5 fits to chapter 05's depth sweep.
#
# **Predict, then change** `TMA_STORE` to True and rerun: does the model gain what rung 7 measured?

# %% output varies
BN, S, PERSISTENT, TMA_STORE = 256, 4, False, False
print(W.design(bn=BN, stages=S, persistent=PERSISTENT, tma_store=TMA_STORE))

# %% [markdown]
# ## 4. The whole kernel, one file
#
# `asynctc/kernels/hopper_gemm.cu` is rung 3 written out whole, with no switches. The host side,
# [`whole.py`](../asynctc/warp_specialization/whole.py), builds the
# [tensor maps](../docs/glossary.md#tensor-map) (the descriptors TMA copies read) and launches
# one CTA of 384 threads per tile. After chapter 03's barrier set-up come three parts.
#
# **The producer's loop.** Warpgroup 0 gives its registers back; one thread stays. Per k-tile it
# waits on empty with `phase ^ 1`, announces the stage's bytes, and issues two TMA loads.

# %%
W.show_kernel_part("producer")

# %% [markdown]
# **The consumers' loop.** Warpgroups 1 and 2 take the registers and compute rows 0–63 and 64–127.
# Per k-tile each waits on full with `phase` and issues the wgmmas as one group;
# `wgmma_wait_group<1>` leaves it in flight, so it releases the *previous* stage on empty.

# %% output answers a prediction
held = "the consumers' k-loop, marked below; the rest of this part is shown"
W.show_kernel_part("consumers", reveal=exercises.after("ch06.whole_kloop", held=held))

# %% [markdown]
# **The epilogue** (chapter 04). Each thread writes its accumulators straight to C; rung 7 uses
# the TMA store instead.
#
# Going further: what the GPU said of this file is in deep dive [06d](06d_limits_and_gemm.ipynb) §4.

# %%
W.show_kernel_part("epilogue")

# %% [markdown]
# ## Worklog

# %% output varies
from asynctc.core import worklog

worklog.show("06")

# %% [markdown]
# **Your GEMM so far.** Deep dive 06e §2's consumer loop completes it; until then the course's
# stands in.

# %% output varies
from asynctc.models.gemm_so_far import so_far

so_far("06")

# %% [markdown]
# ## 5. Use it: `asynctc.matmul`
#
# The top rung, with edge handling, is `asynctc.matmul(a, b)`. Going further:
# [deep dive 06d §3](06d_limits_and_gemm.ipynb) times it by shape.
#
# **What you learned.** Both roles' loops across tiles, the register budget, what each rung
# bought.
#
# **Try next, without a GPU:** [deep dive 06e](06e_your_gemm_on_the_cpu.ipynb), your exercises as
# one Hopper tile on the CPU.
#
# **Play** (ungraded, no GPU), in §3's "Design it" cell:
#
# 1. `S` = 2, 3, 4, then 5: where does the model stop gaining? Why does 5 refuse?
# 2. `BN = 128`: the model's rung 2 tile, beside the ladder's rung 2 row.
# 3. `PERSISTENT = True`: the model's gain beside rung 5's step.
#
# **On a GPU:** `python -m asynctc record warp_specialization --no-save` re-measures the ladder;
# its 4096 float16 rungs 2, 3 and 5 (`ladder` rows' `tflops`) go beside items 2 and 3.
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
