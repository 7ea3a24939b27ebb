# %% [markdown]
# # 05 — Asynchronous pipelines: TMA, mbarriers and wgmma, overlapped
#
# **Learning goal.** Build one GEMM whose copies and math run *at the same time*, and say why its
# speed stops rising with ring depth.
#
# **The story.** Chapter 03's TMA + mbarrier and chapter 04's `wgmma` go into one kernel. You step
# through its ring of S stages and the [phase parity](../docs/glossary.md#phase-parity) each wait
# names, write the producer's step, and measure the kernel by ring depth beside cuBLAS.
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
# warpgroup 0). The [consumers](../docs/glossary.md#consumer) are the warpgroups that compute.
# Each of the S stages has two mbarriers:
#
# | barrier | arrivals per phase | completes when | who waits |
# |---|---|---|---|
# | **full[s]** | 1 (the producer's `arrive.expect_tx(stage bytes)`) | the TMA's bytes have landed | the consumers |
# | **empty[s]** | one per consumer warpgroup | each consumer's wgmmas reading the stage are done | the producer |
#
# All 128 threads of a consumer execute `wgmma.wait_group`. Then one
# [*elected thread*](../docs/glossary.md#elected-thread) arrives for them (a CUTLASS convention,
# not a rule the PTX ISA text states).
#
# **Which parity.** k-tile k goes into stage **k mod S** as that stage's fill **f = k / S**
# (integer division). Fill f completes phase f of full[s] (its bytes land) and phase f of empty[s]
# (the consumers release it). `try_wait.parity(P)` waits while the open phase has parity P (chapter
# 03 §3). So a wait for fill f's own phase names parity **f mod 2**. A wait for the phase before
# it names **(f + 1) mod 2**. On a fresh barrier phase 0 is open, so parity 1 passes at once.
#
# Below, the ring model's run, one panel per moment. Follow stage 0 through fills 0 and 1
# (k-tiles 0 and 2): which parity does each wait name, and why does it pass or block?

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
# `pos` is k's stage and parity, `prev` k − 1's. `advance()` flips the parity when the
# stage wraps. `fence_accumulators` is a compiler barrier. Folded lines: [05c](05c_pipeline_variants.ipynb) §2.

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
if runtime.runs_live("sm_90a"):                      # two builds, checked now
    print(*pl.check_now(), sep="\n")
print(f"{rec.label()}:", *pl.checks_lines(res))
assert all(c["passed"] for c in res["checks"])

# %% [markdown]
# ## 4. Measured: the depth sweep beside cuBLAS
#
# The record swept 1–6 stages for three tiles, fp16 and bf16, 4096³ and 8192³,
# with cuBLAS timed in the same run. Under the figure: the goal, and why the tile is 128×256.
# Each k-tile's bytes pass through shared memory twice (TMA writes them, wgmma reads them).

# %% output varies
fig = pl.plot_depth(res, "float16", record=rec)
plt.show()
for size, goal in ((4096, 0.80), (8192, 0.90)):
    got = pl.of_cublas(res, size)                    # {dtype: best variant ÷ cuBLAS}
    head = f"{size}³: fp16 {got['float16']:.2f}, bf16 {got['bfloat16']:.2f} of cuBLAS, goal {goal:.2f}"
    notebook.verdict(min(got.values()) >= goal, f"{head}: reached.", f"{head}: NOT reached.")


def smem_share(bn, smem=128):                        # shared memory: 128 B/clk per SM
    moved = 2 * (128 + bn) * 64 * 2                  # A and B of one k-tile, written and read
    clocks = 2 * 128 * bn * 64 / 4096                # its math at 4096 FLOP/clk
    return moved / clocks / smem

best = pl.best_by_width(res)                         # {BN: best 128×BN ÷ cuBLAS}, fp16 4096³
_ = notebook.claim(best[256] > best[128], f"128×128 needs {smem_share(128):.0%} of shared memory's bandwidth "
                   f"and reaches {best[128]:.2f} of cuBLAS. 128×256 needs {smem_share(256):.0%} and reaches "
                   f"{best[256]:.2f}.")
d128, occ = pl.depth_sweep(res, "128x128x64/c2"), pl.resident_by_depth(res, "128x128x64/c2")
_ = notebook.claim(d128[4] < d128[3] and occ[3] > occ[4] == 1,
                   f"128×128 drops after S = 3: at S = 4 only {occ[4]} CTA "
                   f"fits per SM, not {occ[3]}, so none hides another's prologue and epilogue.")

# %% [markdown]
# ## 5. Why it stops rising
#
# Each further stage issues a load one k-tile earlier, yet §4's curves stop rising. Below,
# CTA 0 of the 128×256 kernel at S = 4 is traced, above the ring model. Where do the red bars,
# the waits on full, stop?

# %% output varies
trace = pl.trace_of(res, "128x256x64/c2", stages=4)
ring = mp.simulate(4, 1, 2, 64)    # S = 4, wait_group(1), 2 consumers, 64 k-tiles
fig = pl.plot_trace_beside_model(trace, ring, record=rec)
plt.show()

# %% [markdown]
# **First, the trace's own cost.** Each traced event reads and stores the clock, slowing the
# loop. Below: cycles per k-tile traced, untraced and in the model; then warpgroup 0's waits.

# %% output varies
timed = pl.depth_sweep(res, "128x256x64/c2")[4]               # TFLOP/s at S = 4, untraced
mhz = mp.HardwareParams.from_records().clock_mhz
flop_per_clk = timed * 1e12 / (res["sm_count"] * mhz * 1e6)  # per SM
untraced = 2 * 128 * 256 * 64 / flop_per_clk                   # a k-tile's FLOP ÷ FLOP per clock
traced, model = trace["metrics"]["ctas"]["cta0"]["loop_cycles"] / 64, ring.total_cycles / 64
_ = notebook.claim(traced > 1.2 * untraced and untraced > model,
                   f"A k-tile takes {traced:.0f} cycles traced and {untraced:.0f} untraced: the trace costs "
                   f"{traced / untraced - 1:.0%}. Untraced, it still takes {untraced / model:.1f}× the model's {model:.0f}.")
gpu_wait, _ = pl.ktile_waits(trace)                # {k-tile: cycles waited}, k-tiles 0–11
ring_wait, _ = pl.ktile_waits(ring)
late = [gpu_wait.get(k, 0) for k in range(4, 12)]
_ = notebook.claim(min(late) > 50 and not any(ring_wait.get(k) for k in range(4, 12)),
                   f"From k-tile 4 on, the model never waits on full. The GPU waits at every k-tile "
                   f"({min(late):.0f}–{max(late):.0f} cycles): the data arrive late.")

# %% [markdown]
# **Design it** (no grade). Set stages `S`, wait_group depth `P` (0 or 1), consumers `C` (1 or 2),
# tile width `BN` (128 or 256) and `L2_CAP`, L2's bytes per clock per SM (None: no limit; below,
# a fitted one). Which design does the model call fastest? The record?

# %% output varies
S, P, C, BN, L2_CAP = 4, 1, 2, 256, None
d = pl.show_design(stages=S, wait_pending=P, consumers=C, bn=BN, l2_cap=L2_CAP, record=rec)

# %% [markdown]
# The depth sweep, beside the model with unlimited L2 bandwidth:

# %% output varies
meas = pl.depth_sweep(res, "128x256x64/c2")        # {S: TFLOP/s}, fp16 4096³
free = {r["stages"]: r["tflops"] for r in mp.predict_depth_sweep(stages=sorted(meas))}
top, (cap, worst) = max(meas), pl.fitted_cap(res)  # 05b §5's L2 cap
_ = notebook.claim(pl.flat_from(free) == pl.flat_from(meas) and free[top] > 1.05 * meas[top] and worst < 0.15,
                   f"Both flatten from S = {pl.flat_from(meas)}, so depth is not the limit. TFLOP/s, record / "
                   f"model: {', '.join(f'{meas[S]:.0f} / {free[S]:.0f}' for S in meas)} at S = {min(meas)}–{top}. "
                   f"S = 2 misses most ({free[2] / meas[2] - 1:+.0%}): the model lets L2 feed each SM as fast "
                   f"as the math asks; capped at {cap} B/clk/SM it is within {worst:.0%} everywhere.")

# %% [markdown]
# **Is it L2, then?** The same kernel built with `LOADS_ONLY=1` keeps the grid, the tile order and
# the ring, but issues no wgmma and stores no C. Timed in one run, bytes per clock per SM:

# %% output varies
sup = records.load("l2_supply")
print(sup.label())
print(pl.supply.supply_table(sup.results))
rows = pl.supply.supply_rows(sup.results)
small = max((r for r in rows if r["bn"] == 128), key=lambda r: r["loads_only"])   # 128×128, its best depth
big = next(r for r in rows if (r["bn"], r["stages"]) == (256, 4))
_ = notebook.claim(small["loads_only"] < small["need"] and big["gemm"] < big["need"] < big["loads_only"],
                   f"For 128×128 the ring alone brings {small['loads_only']:.0f}, less than the {small['need']:.0f} "
                   f"it needs, so L2 and TMA set its pace. For 128×256 it brings {big['loads_only']:.0f}, more "
                   f"than the {big['need']:.0f} it needs, yet the GEMM moves {big['gemm']:.0f}. There the limit is "
                   f"the wgmmas, their waits and the store of C (chapter 06).")

# %% [markdown]
# ## 6. Exercises
#
# Exercises 1 and 2 are above; the solution notebook answers §5's "Design it".

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

# %% output varies tags=["solution"]
print(pl.design_survey(record=rec))                # §5's "Design it": every design, model beside record

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
# **What you learned.** The ring's parities, a pipelined GEMM measured, why depth stops
# paying. **Next:** [chapter 06](06_warp_specialization.ipynb).
