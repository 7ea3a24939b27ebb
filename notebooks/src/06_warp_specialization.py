# %% [markdown]
# # 06 — Warp specialization: a producer warpgroup, consumer warpgroups, and the ladder to cuBLAS
#
# **Learning goal.** Split chapter 05's GEMM into roles: one *producer* warpgroup that only issues
# TMA loads and *consumer* warpgroups that only issue `wgmma`, synchronised by the ring's full and
# empty mbarriers; then climb a ladder of kernels, each changing one thing, timed beside
# cuBLAS in the same run. You will be able to
#
# 1. draw the producer/consumer protocol — who waits on which barrier, on which phase parity, who
#    arrives where — and say why the seed article's version cannot run;
# 2. work out the register budget that [`setmaxnreg`](../docs/glossary.md#setmaxnreg) moves from the producer to the consumers;
# 3. read the ladder: what each rung changed, what it bought;
# 4. (deep dive [06b §7](06b_ws_anatomy.ipynb)) check each rung's prediction, and read a timeline
#    measured inside the top rung;
# 5. call the result, `asynctc.matmul(a, b)`, on any shape.
#
# The investigations are three deep dives: [06b — the kernel taken apart](06b_ws_anatomy.ipynb)
# (the seed's deadlock, the loops in the source, registers from the cubin, a descriptor bug, the
# rungs' predictions and the top rung's timeline);
# [06c — the ladder investigated](06c_ladder_investigations.ipynb) (every verdict in full, the last
# round, shared-memory bytes); [06d — asking the hardware, and the GEMM by shape](06d_limits_and_gemm.ipynb)
# (Nsight Compute, the [raster](../docs/glossary.md#raster) sweep, `matmul` timed by shape).

# %% output varies
import matplotlib.pyplot as plt

from asynctc.core import exercises, notebook, records
from asynctc import pipeline as pl
from asynctc import warp_specialization as W

notebook.banner("sm_90a")
rec = records.load("warp_specialization")
res = rec.results

# %% [markdown]
# ## 1. Two roles, two barriers per stage
#
# Chapter 05's kernel overlapped loads and math, with one thread of a computing warpgroup also
# loading. Here that thread gets a warpgroup of its own: **warp specialization**. The ring is
# chapter 05's: S stages, each with two mbarriers (PTX ISA, *mbarrier*).
#
# * **full[s]** — arrival count 1: the producer's `mbarrier.arrive.expect_tx(stage bytes)`; the
#   phase completes when the TMA has delivered those bytes. Meaning: *stage s contains its k-tile*.
# * **empty[s]** — arrival count = consumer warpgroups: each arrives once `wgmma.wait_group` says
#   its wgmmas on stage s are complete. Meaning: *stage s may be refilled*. All 128 threads execute
#   `wait_group`, then one elected thread arrives for the warpgroup: the convention CUTLASS uses,
#   not a rule the PTX ISA text states.
#
# Producer and consumers walk the same (tile, k-tile) pairs with one **ring counter** i that
# carries across tiles: stage i mod S, fill f = i / S. The producer waits on empty[s] with parity
# (f + 1) mod 2 — on the first pass that is the "preceding phase" of a fresh barrier, which counts
# as complete, so it passes at once; a consumer waits on full[s] with parity f mod 2.
#
# The seed article (the tutorial this course checks, see README) names its barriers backwards:
# its producer waits on "full", its consumers on "empty". Read with the meanings above it cannot
# run: the consumers wait for a phase of empty that only their own arrivals could complete. Both
# versions, drawn from the same tables — the left one read from the kernel's source:

# %% output varies
fig = W.plot_protocol()
plt.show()

# %% [markdown]
# Chapter 05's CPU model runs both: ours finishes, the seed's ends in a diagnosed deadlock at the
# first k-tile (deep dive 06b, section 1).
#
# ## 2. The register budget
#
# An SM has 65536 32-bit registers. With `__launch_bounds__(384, 1)` (one producer and two
# consumer warpgroups of 128 threads, one CTA per SM) each thread may have 65536 / 384 = 170,
# rounded down to the allocation unit of 8: **168 at entry**. `setmaxnreg` (PTX ISA, *setmaxnreg*;
# the whole warpgroup executes it, and its count is a multiple of 8) then moves registers between
# warpgroups: the producer's `setmaxnreg.dec 40` gives back 128 × (168 − 40), the consumers'
# `setmaxnreg.inc 232` takes them — 128 × 40 + 256 × 232 = 64512 ≤ 65536. A consumer thread of
# the 128×256 tile carries 64 × 256 / 128 = 128 fp32 accumulators. (Deep dive 06b reads these
# counts from the cubin.)
#
# ## 3. The ladder
#
# One kernel source, `asynctc/kernels/warp_specialization.cu`; each rung is a set of compile-time
# switches (`W.RUNGS`), built from an earlier rung by one change, its prediction written before
# the first timing. Rung 6 launches **clusters** of 2 CTAs that share B by
# [multicast](../docs/glossary.md#multicast) (one TMA load delivered into both CTAs' shared
# memory). The record timed every rung at 4096³ and 8192³, fp16 and bf16, beside cuBLAS in the
# same run; every rung was first checked against float64 (deep dive 06b, section 5).

# %% output varies
print(rec.label())
print(W.ladder_summary(res))
fig = W.plot_ladder(res, 4096, "float16", record=rec)
plt.show()

# %% [markdown]
# Each rung's step beside its prediction is checked in [deep dive 06b §7](06b_ws_anatomy.ipynb)
# (06c gives each verdict in full).
#
# ## 4. Inside the top rung
#
# The top rung's measured timeline — the producer's loads, the consumers' waits and wgmma groups,
# the epilogue, around a tile boundary — is drawn and checked in
# [deep dive 06b §7](06b_ws_anatomy.ipynb).

# %% [markdown]
# **Why.** Splitting the roles bought little by itself (deep dive 06c sets rung 3 beside rung 1);
# it is what the later rungs build on. The steps that moved the number
# (section 3) removed time the consumers issue no wgmma: the epilogue shrinks when C goes out
# through shared memory and a TMA store that drains under the next tile's k-loop (rung 7), and the
# order the [persistent](../docs/glossary.md#persistent) CTAs walk the tiles in sets the bytes read from DRAM (rung 8). What limits
# the rest — the last round of a persistent grid, shared-memory bytes per k-tile, what cuBLAS does
# differently — is deep dives 06c and 06d.
#
# ## 5. Use it: `asynctc.matmul`
#
# The top rung, with edge handling, is a function you can call:
#
# ```python
# import asynctc
# c = asynctc.matmul(a, b)                    # a: M×K, b: K×N; float16 or bfloat16 (numpy / ml_dtypes)
# c = asynctc.matmul(a, bt, b_layout="NxK")   # B given transposed, N×K
# ```
#
# Any M, N, K ≥ 1 (the TMA fills what hangs past the matrix with zeros, stores are clipped);
# products accumulate in fp32, C comes back in the input dtype or, with `out_dtype="float32"`, in
# fp32. It is checked like every rung, against float64, on awkward shapes (every size from 1, 7,
# 129, 1000, 4095 in every position), both B layouts and both output dtypes:

# %% output varies
mrec = records.load("matmul")
print(mrec.label())
for line in pl.checks_lines(mrec.results):
    print(line)

# %% [markdown]
# On torch tensors, beside `torch.matmul` (cuBLAS, with torch's defaults: a reduced-precision
# split-K reduction allowed, as a user's call gets it) in the same run, by shape: kernel time and
# back-to-back calls from the host, each as torch's time over ours (record `matmul_host`; the red
# marks are the goals the GEMM was built to, `asynctc.gemm.goals`; in the table below the host row
# is the other way round, ours over torch's, so ≤ 1 means ours is cheaper). How it picks its tile is deep
# dive 06d, section 3.

# %% output varies
from asynctc.gemm import figures as gfig, goals
hrec = records.load("matmul_host")
print(hrec.label())
gfig.plot_matmul_ratios(hrec.results["rows"])
plt.show()
print(goals.goals_table(hrec.results["rows"]))

# %% [markdown]
# ## 6. Exercises
#
# Wrong answers get a hint that names the mistake.
#
# **1. The setmaxnreg budget.** A kernel like this one (one producer and two consumer warpgroups,
# one CTA per SM) lets the producer keep **56** registers per thread. What is the most registers
# per thread `setmaxnreg.inc` may give each consumer thread?

# %%
answer = ...
ok = exercises.check("ch06.consumer_regs", answer, producer_regs=56, consumers=2)

# %% [markdown]
# **2. The producer's wait.** A persistent CTA works on tiles of **5** k-tiles each, with a ring of
# **S = 4** stages. Its producer is about to load k-tile **2** of its tile number **1** (its second
# tile). Which stage does it fill, and on which parity does it wait on that stage's empty barrier?
# Answer `(stage, parity)`.

# %%
answer = ...
ok = exercises.check("ch06.producer_wait", answer, tile=1, k=2, k_tiles=5, stages=4)

# %% [markdown]
# **3. Which barrier.** After `wgmma.wait_group` reports its wgmmas on stage s complete, a consumer
# warpgroup arrives on one of the stage's barriers. Choose one of `"full"` or `"empty"`. (The check
# reads the answer from the kernel's source.)

# %%
answer = ...
ok = exercises.check("ch06.which_barrier", answer, event="consumer arrives")

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
exercises.check("ch06.consumer_regs", (65536 - 128 * 56) // (128 * 2) // 8 * 8, producer_regs=56,
                consumers=2, solution=True)
i = 1 * 5 + 2                                        # the ring counter carries across tiles
exercises.check("ch06.producer_wait", (i % 4, (i // 4 + 1) % 2), tile=1, k=2, k_tiles=5, stages=4,
                solution=True)
for event, barrier in W.protocol_from_source().items():
    exercises.check("ch06.which_barrier", barrier, event=event, solution=True)
