# %% [markdown]
# # 02 — `cp.async`: copies that run while the warps compute
#
# **Learning goal.** Remove chapter 01's register hop with `cp.async`, keep several k-tiles in
# flight, and measure what that alone buys.
#
# **The story.** With **`cp.async`** (Ampere's asynchronous copy, `LDGSTS` in SASS) each thread
# *issues* 16-byte copies from global straight into shared memory and goes on working. A ring of
# [stages](../docs/glossary.md#stage) (shared-memory buffers, one k-tile each) keeps several copies in flight.
#
# Deep dive: [02b — the Luo et al. microbenchmark](02b_cp_async_microbenchmark.ipynb) (shared
# memory per ring, overlap by k-tile depth, a published microbenchmark repeated).

# %% output varies
import numpy as np
import matplotlib.pyplot as plt

from asynctc import cp_async, mma_sync
from asynctc.core import exercises, notebook, plots, records, sass

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. The instructions
#
# | PTX | what it does |
# |---|---|
# | `cp.async.cg.shared.global [dst], [src], 16` | starts a 16-byte copy; bypasses L1, never touches a register |
# | `cp.async.commit_group` | closes a **group**: the copies this thread issued since its last commit |
# | `cp.async.wait_group N` | waits until at most the N newest groups of this thread are pending |
#
# A wait covers only the calling thread's copies. The CTA still needs a `__syncthreads()` before
# reading what other threads copied. (PTX ISA, *cp.async*.)

# %%
notebook.show_source("ptx/cp_async.cuh", start=r"^// 16 bytes global -> shared, L2 only", end=r"^}")

# %% [markdown]
# ## 2. The multistage GEMM
#
# `asynctc/kernels/cp_async.cu` is chapter 01's kernel with the data path changed:
#
# ```
# chapter 01:  global ──LDG──▶ registers ──STS──▶ shared ──LDSM──▶ fragments ──HMMA──▶ acc
# chapter 02:  global ──────LDGSTS (cp.async)────▶ shared ring of STAGES k-tiles ──LDSM──▶ …
#              copies of k-tile kt+STAGES−1 in flight while k-tile kt is multiplied
# ```
#
# The bookkeeping:
#
# * a *prologue* (before the loop) issues the copies of k-tiles 0 … STAGES−2, one group per k-tile;
# * each iteration commits exactly one more group (k-tile `kt+STAGES-1`, or an empty group near the
#   end);
# * before computing on k-tile `kt`, a thread must know that *its* copies of `kt` have landed — but
#   the copies of later k-tiles should stay in flight, or the ring buys nothing.
#
# **Predict before you read the loop** (this is exercise 1): with 4 stages, which N must the kernel
# pass to `cp.async.wait_group N` before computing on k-tile `kt`? (Count the groups committed before
# that wait, and how many of them may still be in flight.)

# %%
answer = ...
ok = exercises.check("ch02.wait_n", answer, stages=4)

# %% [markdown]
# The main loop, step by step:
#
# 1. wait until this thread's copies of k-tile `kt` have landed;
# 2. meet at the barrier: everyone's copies are now visible, and last iteration's slot is free;
# 3. issue the copies of k-tile `kt+STAGES-1` into that slot, and commit;
# 4. compute.
#
# With one stage (§4's `/s1` rungs) there is nothing to overlap. The kernel then takes its own
# `#if STAGES == 1` loop: copy, `wait_group<0>`, sync, compute, sync. The `wait_group` line below
# answers exercise 1.

# %% output answers a prediction
ck = cp_async.compile_cp_async("float16", cp_async.DEFAULT_TILE)
if exercises.after("ch02.wait_n"):
    display(notebook.show_source(ck, start=r"// Prologue: k-tiles 0", end=r"^  cp_async_wait_all"))

# %% [markdown]
# ### SASS: the register hop is gone
#
# Chapter 01 loads with `LDG` and stores with `STS`. The cp.async kernel has neither for its
# operands. `LDGSTS` does both in one instruction. `LDGDEPBAR` is the commit, and `DEPBAR` the wait.

# %% output varies
keys = ("LDGSTS", "LDGDEPBAR", "DEPBAR", "LDG", "STS", "LDSM", "HMMA", "BAR")
print(notebook.sass_table(mma_sync.compile_mma_sync("float16"), {k: sass.CLASSES[k] for k in keys}))
print(notebook.sass_table(ck, {k: sass.CLASSES[k] for k in keys}))
print(sass.excerpt(ck.sass(), r"LDGSTS|LDGDEPBAR|DEPBAR", context=0, limit=6))
c1, c2 = sass.class_counts(mma_sync.compile_mma_sync("float16").sass()), sass.class_counts(ck.sass())
assert c2["LDGSTS"] > 0 and c2["LDGDEPBAR"] > 0 and "LDG" not in c2 and "STS" not in c2
assert c1["LDG"] > 0 and c1["STS"] > 0 and "LDGSTS" not in c1

# %% [markdown]
# How much shared memory each ring takes, and a tile refused before launch:
# [deep dive 02b §2](02b_cp_async_microbenchmark.ipynb).
#
# **Try it: change `TILE` and re-run.** In a model, each byte a CTA copies feeds BM·BN/(BM+BN) FLOP.
# Set `TILE = (64, 64)`, then `(256, 256)`: how much copying does the same speed need?

# %% output varies
TILE = (128, 128)                         # the CTA tile, BM × BN
print(cp_async.tile_traffic(*TILE))

# %% [markdown]
# ## 3. Correctness first
#
# Every tile and stage count is checked against float64, as in chapter 01 (the
# [elementwise bound](../docs/glossary.md#elementwise-bound)). In replay these are the recorded
# checks.

# %% output varies
rec = records.load_or_measure("cp_async", cp_async.measure_cp_async)
checks = rec.results["checks"]
for c in checks[:: max(1, len(checks) // 8)]:
    print(f"{c['dtype']:8s} M,N,K={str(tuple(c['shape'])):18s} {c['tile']:28s} max |C−ref|/(|A|·|B|) "
          f"{c['max_err']:.1e} (tol {c['tol']:.1e})  {'passed' if c['passed'] else 'FAILED'}")
assert checks and all(c["passed"] for c in checks)

# %% [markdown]
# ## 4. Measured: stages 1–4, beside chapter 01 and cuBLAS
#
# One run, same inputs (median of 20, L2 flushed before each).

# %% output varies
fig = plots.throughput_by_size(cp_async.size_series(rec.results), record=rec,
                               title="cp.async multistage GEMM, fp16")
plt.show()
print(cp_async.best_line(rec.results, "float16", 4096))   # every size and dtype: deep dive 02b §2
rows = cp_async.stage_table(rec.results, "float16", 4096)   # one row per rung: BK, stages, TFLOP/s
base = cp_async.best_rows(rec.results, "float16", "mma.sync")[4096]["tflops"]
fig = plots.ladder([r["tile"] for r in rows], [r["tflops"] for r in rows], baseline=base,
                   baseline_label="chapter 01", record=rec, title="Stages at 4096³ fp16")
plt.show()

# %% [markdown]
# **What moved, and why.** Each row is a rung. The notes below explain the rows numbered 1–3.

# %% output varies
print(cp_async.stage_table_text(rec.results, "float16", 4096))

# %% [markdown]
# 1. **BK = 64, one stage.** Each CTA copies, waits, then computes. Only the SM's second CTA
#    (`/2cta`) computes in the meantime. Chapter 01 also paid a register hop (`LDG`, `STS`).
# 2. **BK = 32, one stage.** It waits twice as often for the same math. A ring in flight helps it most.
# 3. **BK = 64, four stages.** The ring takes 4 × 32 KiB, so only one CTA fits on an SM. No second
#    CTA covers its waits. [02b §2](02b_cp_async_microbenchmark.ipynb) reads the sweep in full.

# %% output varies
for holds, sentence, numbers in cp_async.stage_notes(rec.results, "float16", 4096):
    notebook.claim(holds, sentence, **numbers)        # each note, checked against the record

# %% [markdown]
# **Design it** (no grade). A model with two numbers. A BK = 64 k-tile costs the SM `W` clocks of
# work (a BK = 32 one costs half). Its copies land `L` clocks after they are issued. With S stages
# they have S − 1 k-tiles' time to land; with one stage the CTA copies, waits, then computes.
# Set `BK` (32 or 64) and `S` (1–6). Which one binds, and does the record agree?

# %% output varies
BK, S = 64, 2
print(cp_async.design(bk=BK, stages=S, record=rec))

# %% [markdown]
# **Why not chapter 01's ceiling?** That ceiling is `mma.sync` alone, with no memory traffic.
# Count the clocks one k-tile of the best rung needs. First the math, at the ceiling's pace:

# %% output varies
tile, best, ceil = cp_async.ceiling_rows(rec.results, records.load("mma_sync").results["peak"])
sm = rec.provenance["sm_count"]
per_clk = lambda r: r["tflops"] * 1e12 / (sm * r["sm_mhz"] * 1e6)    # FLOP per clock per SM
flop = 2 * tile.bm * tile.bn * tile.bk                               # one k-tile's math
math = flop / per_clk(ceil)
print(f"{tile.name}: {flop} FLOP / {per_clk(ceil):.0f} FLOP/clk = {math:.0f} clk")

# %% [markdown]
# Then shared memory. It serves 128 bytes per clock. `cp.async` writes each k-tile once, and
# `ldmatrix` reads it twice.

# %% output varies
written = (tile.bm + tile.bn) * tile.bk * 2                          # cp.async: the A and B tiles, once
smem_bytes = written + tile.warps * (tile.wm + tile.wn) * tile.bk * 2  # + ldmatrix: each warp its slices
smem = smem_bytes / 128
assert smem_bytes == 3 * written
print(f"shared memory: {smem_bytes} B / 128 B/clk = {smem:.0f} clk")

# %% [markdown]
# If the math and shared memory overlapped fully, a k-tile would take the longer of the two.
# With no overlap it would take their sum. Measured:

# %% output varies
took = flop / per_clk(best)
print(f"measured: {flop} FLOP / {per_clk(best):.0f} FLOP/clk = {took:.0f} clk")
full, none = max(math, smem), math + smem                            # full overlap, no overlap
_ = notebook.claim(full < took < none and smem > 0.8 * math,
                   f"Verdict: the copies and the math overlap only in part; a k-tile takes "
                   f"{took / full:.2f}× the time of full overlap.", math=math, smem=smem, took=took)

# %% [markdown]
# ## Exercises
#
# (Exercise 1, the prediction, is in section 2.) A wrong answer gets a hint at what is off.
#
# **2.** A ring of stages has to fit in shared memory. An SM has 228 KiB (233472 B), and the
# driver reserves 1 KiB of it per CTA. For 128×64×32 fp16 k-tiles, what is the largest number of
# stages whose ring fits one CTA on an SM? (The kernel itself stops at 4; the question is what
# shared memory allows.)

# %%
answer = ...
ok = exercises.check("ch02.ring_smem", answer, bm=128, bn=64, bk=32, ctas=1)

# %% [markdown]
# <details><summary>Solutions (run in CI)</summary>The cell below is the worked solution.</details>

# %%
# k-tile kt is in group kt (prologue: STAGES-1 groups; one more per iteration); at iteration kt,
# STAGES-1+kt groups are committed, and groups kt+1 .. kt+STAGES-2 may stay in flight.
exercises.check("ch02.wait_n", 4 - 2, stages=4, solution=True)
src = cp_async.compile_cp_async("float16", cp_async.CpAsyncTile(128, 128, 32, 64, 64, stages=4)).source_text()
print("the kernel's wait is wait_group<STAGES - 2>:", "cp_async_wait_group<STAGES - 2>" in src)
stage_bytes = (128 * 32 + 32 * 64) * 2                  # one A tile and one B tile, fp16
exercises.check("ch02.ring_smem", (233472 - 1024) // stage_bytes, bm=128, bn=64, bk=32, ctas=1,
                solution=True)
# 19 stages would be 233472 B, the whole SM: the 1 KiB reservation costs one. With two CTAs per SM
# and 128×128×64 k-tiles (32 KiB a stage) the same sum gives 3: so section 4's 4-stage BK = 64
# tile runs one CTA per SM (no /2cta in its name)
print((233472 // 2 - 1024) // 32768, [t.name for t in cp_async.TILES if t.stages == 4])

# %% output varies tags=["solution"]
print(cp_async.design_survey(record=rec))          # "Design it": every recorded design, model beside record

# %% [markdown]
# ## Worklog

# %% output varies
from asynctc.core import worklog

worklog.show("02")

# %% [markdown]
# **What you learned.** `cp.async` groups and waits, and the ring's bookkeeping.
# **Next:** [chapter 03](03_tma_mbarrier.ipynb).
