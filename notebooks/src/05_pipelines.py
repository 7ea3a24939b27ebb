# %% [markdown]
# # 05 — Asynchronous pipelines: TMA, mbarriers and wgmma, overlapped
#
# **In plain words.** Shared memory becomes a ring of slots. One thread copies the next slices of
# A and B into free slots while the Tensor Cores multiply the ones already there. Two barriers per
# slot say "data landed" and "math done", and must tell one lap of the ring from the next. Past a
# few slots, how fast the data arrive sets the speed, not how many slots there are.
#
# **Learning goal.** Build one GEMM whose copies and math run *at the same time*, and say why its
# speed stops rising with ring depth.
#
# **The story.** Chapter 03's TMA + mbarrier and chapter 04's `wgmma` go into one kernel, with a
# ring of S stages. You watch a ring without [phase parity](../docs/glossary.md#phase-parity) go
# wrong, fix it, write the producer's step and measure the kernel by depth.
#
# Deep dives: [05b](05b_pipeline_timeline.ipynb) (timelines, model beside GPU),
# [05c](05c_pipeline_variants.ipynb) (SASS, variants, broken protocols).

# %% output varies
import matplotlib.pyplot as plt

from asynctc.core import exercises, notebook, records
from asynctc import pipeline as pl
from asynctc.models import pipeline as mp

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. The ring, drawn
#
# The [producer](../docs/glossary.md#producer) is the thread that issues the loads (thread 0 of
# warpgroup 0). The [consumers](../docs/glossary.md#consumer) are the warpgroups that compute.
# Each of the S stages has two mbarriers:
#
# | barrier | arrivals per phase | completes when | who waits |
# |---|---|---|---|
# | **full[s]** | 1 (the producer's `arrive.expect_tx(stage bytes)`) | the TMA's bytes have landed | the consumers |
# | **empty[s]** | one per consumer warpgroup | each consumer's wgmmas reading the stage are done | the producer |
#
# One [*elected thread*](../docs/glossary.md#elected-thread) of a consumer arrives on empty for
# its 128 threads (a CUTLASS convention, not a rule the PTX ISA text states).
#
# k-tile k goes into stage **k mod S** as that stage's fill **f = k / S** (integer division).
#
# **A ring without parity goes wrong.** Suppose each wait asks only "has this barrier
# completed?", a plain ready flag. Below, the ring model runs S = 2, `wgmma.wait_group(1)`, one
# consumer: once with parity waits, once with flag waits. Where does the flag run read too early?

# %% output varies
story = pl.show_parity_story(stages=2, k_tiles=4)     # cycles; the model stops at the first race

# %% [markdown]
# k-tile 2 is stage 0's fill 1. Its flag wait passes at once, because fill 0 completed full[0].
# The consumer reads stage 0 while k-tile 2's bytes are still landing. The flag cannot say
# *which* fill completed. In longer rings the model's timing hides this race: a test passes by luck.
#
# **Parity is the fix.** Fill f completes phase f of full[s] and of empty[s].
# `try_wait.parity(P)` waits while the open phase has parity P (chapter 03 §3). A waiter's phase is
# always the open one or the one just completed (the next fill needs its release). So the low bit
# of f is enough. The wait for fill f names **f mod 2**; the
# wait for the phase before names **(f + 1) mod 2**. A fresh barrier's phase 0 is open, so parity 1
# passes at once. The kernel keeps the parity in `rp` and flips it with `phase ^= 1`.
#
# Below, the parity run, one panel per moment. Follow stage 0 through fills 0 and 1: which parity
# does each wait name, and why does it pass or block?

# %% output varies
fig = pl.plot_ring_steps(stages=2, k_tiles=4)
plt.show()

# %% [markdown]
# **Exercise 1 — predict before you look.**
# A consumer issues each k-tile's wgmmas as one group (chapter 04), then waits with
# `wgmma.wait_group`. With S = 6 stages and a **single** consumer warpgroup, should that wait
# leave 0 or 1 group pending to keep the math going while a stage is released and refilled? Then
# try `mp.simulate(6, p, 1, 32).math_fraction` (S, p, consumers, k-tiles) for p = 0 and 1. It is
# the share of the loop with a wgmma in flight.

# %%
answer = ...
ok = exercises.check("ch05.groups_pending", answer, stages=6, consumers=1)

# %% [markdown]
# ## 2. The kernel, from its source
#
# Below, the k-loop of `gemm_pipeline` (`kernels/pipeline.cu`), build `128x256x64/c2 s4`: a
# 128×256 tile, 2 consumer warpgroups, S = 4. Each k-tile k takes four steps. **Wait** on full.
# **Issue** `mma_ktile`, then wait until kPending = 1 group remains. **Release** k-tile r = k − 1
# on empty. **Refill** its stage (exercise 2).
#
# Four names in the listing (shown once exercise 1 passes): `pos` is k's stage and parity,
# `prev` is k − 1's (the k-tile to release). `pos.advance()` steps to the next stage, wrapping
# to 0 with the parity flipped. `fence_accumulators(acc)` stops the compiler from moving accumulator
# reads or writes across a wgmma or its wait. Folded lines: [05c](05c_pipeline_variants.ipynb) §2.

# %% output answers a prediction
if exercises.after("ch05.groups_pending"):             # the listing answers exercise 1
    display(notebook.show_source("pipeline.cu", start=r'^extern "C" __global__ void', end=r"^}",
                                 variant=True, omit=pl.producer_step.SKELETON))

# %% [markdown]
# **Exercise 2 — write the producer's refill step** in CUDA C++. Every thread runs it after the
# release of k-tile r. Thread 0 waits on empty[rs] with the right parity. Then it refills stage rs
# with k-tile r + S, while r + STAGES < T. In scope:
#
# - `producer` (thread 0), `r` (the released k-tile), `rs`, `rp` (r's stage and parity),
#   `STAGES`, `T` (k-tiles in K), `wg` (this warpgroup), `broken` (set when a wait gave up);
# - `empty.wait(stage, parity, wg, kt)`: false if it gave up. `kt` only labels a timeout: pass
#   the k-tile the refill loads, r + STAGES;
# - `load_stage(ta, tb, base + rs * kStageBytes, full[rs], kt, m0, n0)`: tensor maps `ta`, `tb`,
#   stages `kStageBytes` apart from `base`, `m0`, `n0` the CTA's C origin.

# %%
producer_step = """
// your step
"""
ok = exercises.check("ch05.producer_step", producer_step)

# %% output answers a prediction
if exercises.after("ch05.producer_step"):             # the kernel's own step, once yours is in
    print(pl.producer_step.PARITY_NOTE)
    print(notebook.source_excerpt("pipeline.cu", start=r"^      if \(producer && r \+ STAGES < T",
                                  end=r"^      \}$"))

# %% [markdown]
# ## 3. Correct first
#
# Checked as in chapter 01, against the [elementwise bound](../docs/glossary.md#elementwise-bound).
# The record checked every combination of the build's settings on two shapes. Live, two builds
# run now.

# %% output varies
rec = records.load("pipeline")
res = rec.results
pl.show_checks(rec)                                  # live: two builds checked now, too

# %% [markdown]
# ## 4. Measured: the depth sweep beside cuBLAS
#
# The record swept 1–6 stages for three tiles, fp16 and bf16, 4096³ and 8192³. cuBLAS was timed
# in the same run.
#
# **Predict before you look.** Each added stage lets a load start one k-tile earlier. For the
# 128×256 tile, at which S do you expect the curve to stop rising? Will it reach cuBLAS?

# %% output answers a prediction
fig = pl.plot_depth(res, "float16", record=rec)
plt.show()
goals = pl.show_goals(res)                           # best variant ÷ cuBLAS, against the goal

# %% [markdown]
# The 128×256 curve rises until S = 3 and is flat after. Why the wide tile? TMA writes each
# k-tile's bytes into shared memory and wgmma reads them back. A wider tile does more math
# per byte, so it needs a smaller share of shared memory's 128 B/clk. 128×128 also drops after
# S = 3. At S = 4 only one of its CTAs fits per SM, so none hides another's prologue and epilogue.

# %% output varies
widths = pl.show_widths(res)                         # asserts the two sentences above

# %% [markdown]
# ## 5. Why it stops rising
#
# Each further stage issues a load one k-tile earlier, yet §4's curves stop rising. Below,
# CTA 0 of the 128×256 kernel at S = 4 is traced, above the ring model. Where do the red bars,
# the waits on full, stop? Rows wg0 and wg1 are the two consumers; this kernel has no producer
# warpgroup (thread 0 of wg0 issues the loads). Chapter 06 adds one as wg 0, consumers wg 1 and 2.

# %% output varies
trace = pl.trace_of(res, "128x256x64/c2", stages=4)
ring = mp.simulate(4, 1, 2, 64)    # S = 4, wait_group(1), 2 consumers, 64 k-tiles
fig = pl.plot_trace_beside_model(trace, ring, record=rec)
plt.show()
waits = pl.show_trace_waits(res, trace, ring)       # cycles per k-tile; waits on full, k-tiles 4–11

# %% [markdown]
# Reading the clock at each event slows the traced loop about 1.5× (traced ÷ untraced, above).
# Untraced, a k-tile still takes about 1.2× as long as in the model. From k-tile 4 on, the model
# never waits on full, but the GPU waits at every k-tile: its data arrive late. So the supply, not
# the ring depth, is what limits. A deeper ring only starts the same slow supply earlier. (Deep
# dive [05b §6](05b_pipeline_timeline.ipynb) fits one number to this, a cap on L2's bytes per clock
# per SM, and tests it on ten runs it never saw.)
#
# **Is it L2, then?** A number that fits is not yet a cause. The same kernel built with
# `LOADS_ONLY=1` keeps the grid, the tile order and the ring, but issues no wgmma and stores no C.
# Timed in one run, bytes per clock per SM:

# %% output varies
supply = pl.show_supply(records.load("l2_supply"))   # asserts the two sentences below

# %% [markdown]
# For 128×128 the ring alone brings less than the math needs: L2 and TMA set its pace. For
# 128×256 it brings more, yet the GEMM moves less. So an L2 cap fits (05b §6) but is not the
# whole cause. There the wgmmas, their waits and the store of C set the pace (chapter 06).

# %% [markdown]
# ## 6. Exercises
#
# Exercises 1 and 2 are above. The ring model's "Design it" (no grade) is in deep dive
# [05b §6](05b_pipeline_timeline.ipynb), beside the fitted L2 cap it uses.

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
runs = {p: mp.simulate(6, p, 1, 32) for p in (0, 1)}
ok = exercises.check("ch05.groups_pending", max(runs, key=lambda p: runs[p].math_fraction), stages=6,
                     consumers=1, solution=True)
producer_step = pl.producer_step.kernel_step()   # the kernel's own (tr.event: the trace, off here)
ok = exercises.check("ch05.producer_step", producer_step, solution=True)

# %% output varies tags=["solution"]
# exercise 2 with the refill's parity flipped: panel 5's wait names the open phase, and never passes
fig = pl.plot_ring_steps(stages=2, k_tiles=4, parities=pl.flipped_refill_parities(),
                         broken="the refill of fill f waits on empty with parity f mod 2")
plt.show()

# %% [markdown]
# ## Worklog

# %% output varies
from asynctc.core import worklog

worklog.show("05")

# %% [markdown]
# **Your GEMM so far**, with your producer step: if it compiles to the course kernel's SASS, the
# recorded run is yours; otherwise the cell says how far yours is. The CPU tile: deep dive [06e](06e_your_gemm_on_the_cpu.ipynb).

# %% output varies
from asynctc.models.gemm_so_far import so_far

so_far("05")

# %% [markdown]
# **What you learned.** Why a ring needs phase parity (a plain flag reads a stage too early), a
# pipelined GEMM measured, why depth stops paying (the supply, not the depth, sets the pace), what
# the ring alone brings. **Next:** [chapter 06](06_warp_specialization.ipynb).
