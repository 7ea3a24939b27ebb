# %% [markdown]
# # 05 — Asynchronous pipelines: TMA, mbarriers and wgmma, overlapped
#
# **Learning goal.** Build one GEMM whose copies and math run *at the same time*, and say why its
# speed stops rising with ring depth.
#
# **The story.** Chapter 03's TMA + mbarrier and chapter 04's `wgmma` go into one kernel. You will
# step through its ring of S stages (who arrives, who waits, on which
# [phase parity](../docs/glossary.md#phase-parity)), write the producer's step, check the kernel
# against float64, and measure it by ring depth beside cuBLAS and the ring model.
#
# Deep dives: [05b](05b_pipeline_timeline.ipynb) (timelines, model beside GPU),
# [05c](05c_pipeline_variants.ipynb) (SASS, variants, broken protocols).

# %% output varies
import matplotlib.pyplot as plt

from asynctc.core import exercises, notebook, records, runtime
from asynctc import pipeline as pl
from asynctc.models import pipeline as mp

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. The ring, drawn
#
# The [producer](../docs/glossary.md#producer) is the thread that issues the loads (thread 0 of
# warpgroup 0); the [consumers](../docs/glossary.md#consumer) are the warpgroups that compute.
# Each of the S stages has two mbarriers:
#
# | barrier | arrivals per phase | completes when | means | who waits |
# |---|---|---|---|---|
# | **full[s]** | 1 (the producer's `arrive.expect_tx(stage bytes)`) | the TMA's bytes have landed | "stage s contains its k-tile" | the consumers |
# | **empty[s]** | one per consumer warpgroup | each consumer's wgmmas reading the stage are done | "stage s may be refilled" | the producer |
#
# All 128 threads of a consumer execute `wgmma.wait_group`; then one
# [*elected thread*](../docs/glossary.md#elected-thread) arrives for them (a CUTLASS convention,
# not a rule the PTX ISA text states).
#
# **Which parity.** k-tile k goes into stage **k mod S** as that stage's fill **k / S** (integer
# division). Fill f completes phase f of full[s] (its bytes land) and phase f of empty[s] (the
# consumers release it). `try_wait.parity(P)` waits while the open phase has parity P (chapter 03
# §3). A fresh barrier has phase 0 open; parity 1 then names the phase before it, which counts as
# completed.
#
# Below, the ring model's run, one panel per moment (its producer waits on empty even for the
# first fills, parity 1, which pass at once; the kernel's prologue skips those waits: the same
# effect). Follow stage 0 through fill 0 (k-tile 0) and fill 1 (k-tile 2): which parity does each
# wait name, and why does it pass or block?

# %% output varies
fig = pl.plot_ring_steps(stages=2, k_tiles=4)
plt.show()

# %% [markdown]
# **Exercise 1 — predict before you look.**
# A consumer issues each k-tile's wgmmas as one group (chapter 04), then waits with
# `wgmma.wait_group`. With S = 6 stages and a **single** consumer warpgroup, should that wait
# leave 0 or 1 group pending to keep the math going while a stage is released and refilled? Then
# try `mp.simulate(6, p, 1, 32).math_fraction` (the ring model: S = 6, p groups pending, 1
# consumer, 32 k-tiles) for p = 0 and 1: the share of the loop with a wgmma in flight.

# %%
answer = ...
ok = exercises.check("ch05.groups_pending", answer, stages=6, consumers=1)

# %% [markdown]
# ## 2. The kernel, from its source
#
# `gemm_pipeline` (`kernels/pipeline.cu`), default build `128x256x64/c2 s4` (CTA tile 128×256×64,
# 2 consumer warpgroups, S = 4). First its k-loop. Per k-tile k, four steps: **wait** on full;
# **issue** `mma_ktile`, then wait until kPending = 1 group remains; **release** k-tile r = k − 1
# on empty; **refill** (exercise 2). `pos` is k's stage and phase, `prev` k − 1's; `advance()`
# flips the phase on a wrap. `fence_accumulators`: a compiler barrier for `acc`. The folded lines
# and the helpers, with their PTX: [05c](05c_pipeline_variants.ipynb) §2.

# %% output answers a prediction
if exercises.after("ch05.groups_pending"):             # the listing answers exercise 1
    display(notebook.show_source("pipeline.cu", start=r'^extern "C" __global__ void', end=r"^}",
                                 variant=True, omit=pl.producer_step.SKELETON))

# %% [markdown]
# **Exercise 2 — write the producer's refill step** in CUDA C++. Every thread runs it after the
# release of k-tile r: thread 0 waits on empty[rs] with the right parity, then refills stage rs
# with k-tile r + S while r + STAGES < T. In scope:
#
# - `producer` (thread 0), `r` (the released k-tile), `rs`, `rp` (its stage and phase f
#   mod 2), `STAGES`, `T` (k-tiles in K), `wg` (this warpgroup), `broken` (set when a wait gave up);
# - `empty.wait(stage, parity, wg, k-tile)`: false if it gave up (the k-tile labels the error);
# - `load_stage(ta, tb, base + rs * kStageBytes, full[rs], k-tile, m0, n0)`: tensor maps `ta`,
#   `tb`; stage 0 at `base`, `kStageBytes` apart; `full` barriers; `m0`, `n0` the CTA's C origin.

# %%
producer_step = """
// your step
"""
ok = exercises.check("ch05.producer_step", producer_step)

# %% output answers a prediction
if exercises.after("ch05.producer_step"):             # the kernel's own step, once yours is in
    print(notebook.source_excerpt("pipeline.cu", start=r"^      if \(producer && r \+ STAGES < T",
                                  end=r"^      \}$"))

# %% [markdown]
# ## 3. Correct first
#
# Checked as in chapter 01, against the [elementwise bound](../docs/glossary.md#elementwise-bound)
# `|C − ref| ≤ K·2⁻²¹·(|A|·|B|) + 2·u_out·|ref|`: one wrong or unwritten element fails.
#
# The record checked every combination of dtype, tile, stages, consumers, B layout and wait_group
# on two shapes; live, two run now.

# %% output varies
rec = records.load("pipeline")
res = rec.results
if runtime.runs_live("sm_90a"):                      # two builds, checked now
    print(*pl.check_now(), sep="\n")
print(f"{rec.label()}:", *pl.checks_lines(res))
assert all(c["passed"] for c in res["checks"])

# %% [markdown]
# ## 4. Measured: the depth sweep beside cuBLAS
#
# The record swept 1–6 stages (as many as fit) for three tiles, fp16 and bf16, 4096³ and 8192³,
# cuBLAS timed in the same run (why the 128×128 curves peak early: [05c](05c_pipeline_variants.ipynb)
# §4). Under the figure, the chapter's goal: the best variant at ≥ 0.80 of cuBLAS at 4096³, ≥ 0.90
# at 8192³.

# %% output varies
fig = pl.plot_depth(res, "float16", record=rec)
plt.show()
for size, goal in ((4096, 0.80), (8192, 0.90)):                # the best variant, fp16 and bf16
    got = [pl.best_row(res, dt, size, variants=True)["tflops"] / pl.cublas_row(res, dt, size)["tflops"]
           for dt in ("float16", "bfloat16")]
    head = f"{size}³: fp16 {got[0]:.2f}, bf16 {got[1]:.2f} of cuBLAS, goal {goal:.2f}"
    notebook.verdict(min(got) >= goal, f"{head}: reached.", f"{head}: NOT reached.")

# %% [markdown]
# ## 5. Why it stops rising
#
# Each further stage issues a load one k-tile earlier, yet section 4's curves stop rising. Below:
# CTA 0 of the 128×256 kernel at S = 4, traced, above the ring model. Where do the red bars, the
# waits on full, stop?

# %% output varies
trace = next(t for t in res["traces"] if (t["tile"], t["stages"]) == ("128x256x64/c2", 4))
ring = mp.simulate(4, 1, 2, 64)    # S = 4, wait_group(1), 2 consumers, 64 k-tiles
fig = pl.plot_trace_beside_model(trace, ring, record=rec)
plt.show()
notebook.claim(*pl.waits_beside_model(trace, ring))
_ = notebook.claim(*pl.waits_under_wgmma(trace))

# %% [markdown]
# **The trace has a cost**: each event reads and stores the clock. Cycles per k-tile, one number a
# cell. The ring model:

# %% output varies
ring_kt = ring.total_cycles / 64
print(f"model: {ring_kt:.0f} cycles per k-tile")

# %% [markdown]
# The kernel untraced, from its timed TFLOP/s:

# %% output varies
timed = next(r for r in res["sweep"] if r["kernel"] == "pipeline" and not r["trace"]   # S = 4, untraced
             and (r["tile"], r["stages"], r["dtype"], r["size"]) == ("128x256x64/c2", 4, "float16", 4096))
mhz = mp.HardwareParams.from_records().clock_mhz     # the model's clock: read inside the wgmma kernel
untraced = 2 * 128 * 256 * 64 / (timed["tflops"] * 1e12 / (res["sm_count"] * mhz * 1e6))   # k-tile FLOP ÷ FLOP/clk/SM
print(f"kernel, untraced: {untraced:.0f} cycles per k-tile at the model's {mhz:.0f} MHz")

# %% [markdown]
# Traced CTA 0 (its loop ÷ 64 k-tiles), then what the three say:

# %% output varies
traced = trace["metrics"]["ctas"]["cta0"]["loop_cycles"] / 64
print(f"traced CTA 0: {traced:.0f} cycles per k-tile")
_ = notebook.claim(traced > 1.2 * untraced and untraced > ring_kt, f"The trace costs {traced / untraced - 1:.0%}; "
                   f"untraced, the kernel is still {untraced / ring_kt:.1f}× the model.")

# %% [markdown]
# So read the trace for the order of events, not their lengths.
#
# **Design it** (no grade). Set stages `S`, wait_group depth `P` (0 or 1), consumers `C` (1 or 2),
# tile width `BN` (128 or 256) and `L2_CAP`, L2's bytes per clock per SM (None: no limit;
# [05b](05b_pipeline_timeline.ipynb) §5 fits one). Which design does the model call fastest? The record?

# %% output varies
S, P, C, BN, L2_CAP = 4, 1, 2, 256, None
print(pl.design(stages=S, wait_pending=P, consumers=C, bn=BN, l2_cap=L2_CAP, record=rec))

# %% [markdown]
# What the depth sweep establishes:

# %% output varies
meas = {r["stages"]: r["tflops"] for r in res["sweep"] if r["kernel"] == "pipeline"
        and r["tile"] == "128x256x64/c2" and r["dtype"] == "float16" and r["size"] == 4096}
_ = notebook.claim(*pl.conclusion(meas, record=rec))

# %% [markdown]
# **Is it L2, then?** Measure it. The same kernel built with `LOADS_ONLY=1` keeps the grid, the
# tile order, the ring and its mbarriers, but issues no wgmma and stores no C: the tiles arrive and
# nothing reads them. Both builds, timed in one run, in bytes per clock per SM. What the math needs
# is chapter 00's arithmetic: a k-tile's bytes over the clocks its wgmmas take at peak
# (48 KiB / 1024 clocks for 128×256).

# %% output varies
sup = records.load("l2_supply")
print(sup.label())
print(pl.supply.supply_table(sup.results))

# %% output varies
_ = notebook.claim(*pl.supply.conclusion(sup.results))

# %% [markdown]
# ## 6. Exercises
#
# Exercises 1 and 2 are in sections 1 and 2; the solution notebook answers §5's "Design it".

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
                         broken="the refill waits on empty with parity (t / S) mod 2")
plt.show()

# %% output varies tags=["solution"]
print(pl.design_survey(record=rec))                # §5's "Design it": every design, model beside record

# %% [markdown]
# ## Worklog

# %% output varies
from asynctc.core import worklog

worklog.show("05")

# %% [markdown]
# **Your GEMM so far**, with your producer step: if it compiles to the course kernel's SASS, the
# recorded run is yours; otherwise the cell says how far yours is.

# %% output varies
from asynctc.models.gemm_so_far import so_far

so_far("05")

# %% [markdown]
# **What you learned.** The ring and its parities, a pipelined GEMM measured, why depth stops
# paying. **Next:** [chapter 06](06_warp_specialization.ipynb).
