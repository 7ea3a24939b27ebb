# %% [markdown]
# # 05 — Asynchronous pipelines: TMA, mbarriers and wgmma, overlapped
#
# **In plain words.** Shared memory becomes a ring of slots. One thread fills free slots with A and
# B. The Tensor Cores multiply the filled ones.
#
# **Learning goal.** Build that GEMM. See why its ring needs
# [phase parity](../docs/glossary.md#phase-parity): the low bit that says which barrier phase a wait
# means. Say why depth stops paying. Depth is the number of stages, S.
#
# **Where we are.** Chapter 03 moved a tile with TMA and an mbarrier. Chapter 04 multiplied tiles in
# shared memory with `wgmma`. They took turns: copy, wait, math. Here they overlap.
#
# Going further: deep dives [05b](05b_pipeline_timeline.ipynb) and [05c](05c_pipeline_variants.ipynb).

# %% output varies
import matplotlib.pyplot as plt

from asynctc.core import exercises, notebook, records
from asynctc import pipeline as pl
from asynctc.models import pipeline as mp

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. The ring, drawn
#
# The [producer](../docs/glossary.md#producer), thread 0 (of consumer warpgroup 0: it computes
# too), issues the loads. The [consumers](../docs/glossary.md#consumer) are warpgroups that compute. Each stage has two mbarriers:
#
# | barrier | arrivals per phase | completes when | who waits |
# |---|---|---|---|
# | **full[s]** | 1 (`arrive.expect_tx`) | the TMA's bytes landed | consumers |
# | **empty[s]** | one per consumer warpgroup | its wgmmas on s are done | producer |
#
# One [*elected thread*](../docs/glossary.md#elected-thread) per warpgroup arrives on empty: a
# [CUTLASS](../docs/glossary.md#cutlass) convention, not a rule the PTX ISA text states.
#
# Each load of a stage is one [*fill*](../docs/glossary.md#fill-of-a-stage). Fill f completes phase f.
# **Phase parity**, f mod 2, tells a wait which fill it means. Without parity, a refilled stage's
# wait passes at once.
#
# Table and figure show one ring, S = 2. Column k is the [**ring counter**](../docs/glossary.md#ring-counter).
# Follow stage 1 (k = 1, 3, 5): each fill flips the parity. A dash means no wait: the prologue loads
# fill 0. The figure steps through k = 0–3.

# %% output varies
S = 2
print("k | stage k mod S | fill f = k div S | consumers wait on full: f mod 2 | producer waits on empty: (f + 1) mod 2")
for k in range(6):
    f = k // S
    print(f"{k} | {k % S:<13} | {f:<16} | {f % 2:<31} | {(f + 1) % 2 if f else '—'}")
fig = pl.plot_ring_steps(stages=S, k_tiles=4)
plt.show()

# %% [markdown]
# **Exercise 1 — predict before you look.** Each k-tile's wgmmas form one committed group.
# `wgmma.wait_group N` waits until at most N groups are **pending**, still running. S = 6, one
# consumer: which N keeps the Tensor Cores busier, 0 or 1?

# %%
answer = ...
ok = exercises.check("ch05.groups_pending", answer, stages=6, consumers=1)

# %% [markdown]
# **Then try it:** `mp` is the [ring model](../docs/glossary.md#ring-model) (`asynctc.models.pipeline`). Change 0 to 1 in
# `mp.simulate(6, 0, 1, 32).math_fraction`, the wgmmas' share of time. Arguments: stages, pending,
# consumers, k-tiles.
#
# Going further: [05c §5](05c_pipeline_variants.ipynb) runs a parity-free wait.

# %% [markdown]
# ## 2. The kernel, from its source
#
# Per k-tile k, `gemm_pipeline`'s k-loop (`kernels/pipeline.cu`) does:
#
# 1. **wait** on full;
# 2. **issue** `mma_ktile`, then `wgmma.wait_group kPending` (kPending: exercise 1's N);
# 3. **release** k-tile r = k − kPending on empty;
# 4. **refill** that stage.

# %% output answers a prediction
if exercises.after("ch05.groups_pending"):             # the listing answers exercise 1
    display(notebook.show_source("pipeline.cu", start=r'^extern "C" __global__ void', end=r"^}",
                                 variant=True, omit=pl.producer_step.SKELETON,
                                 comments=pl.producer_step.LISTING_COMMENTS))

# %% [markdown]
# **Say it back.** K-tile k is fill f = k div S of stage k mod S. Its `phase` is f mod 2.
# Consumers wait on full for the k-tile's `phase`.
#
# **Exercise 2 — fill the producer's refill step** in CUDA C++. Every thread reaches it after r's
# release. Only the producer refills: it waits until empty[ts] releases r's fill, then loads k-tile
# t into stage ts. Fill the four blanks. Write the parity from `t` with §1's rule.
# In scope:
#
# - `producer`: thread 0; `r`; `t` = r + STAGES; `ts`: t's stage, also r's; `STAGES`;
# - `T`: k-tiles in K; `wg`: this warpgroup; `broken`: an earlier wait gave up;
# - `empty.wait(stage, parity, wg, kt)`: false if it gave up; `kt` = t;
# - `load_stage(ta, tb, base + ts * kStageBytes, full[ts], kt, m0, n0)`: `mbarrier.arrive.expect_tx`
#   on full, then the TMA copies;
# - around it, in the listing (not yours to write): `full.wait`, `mma_ktile`, `wgmma_wait_group`,
#   `empty.arrive`, `pos`, `prev`, `tp`.

# %%
producer_step = """
if (producer && ___ && !broken) {     // who refills, and when
  if (empty.wait(ts, ___, wg, t)) {  // the parity: §1's rule, from t
    ___;                             // load k-tile t into stage ts
  } else {
    ___;                             // the wait gave up
  }
}
"""
ok = exercises.check("ch05.producer_step", producer_step)

# %% output answers a prediction
if exercises.after("ch05.producer_step", held="the producer's parity, said back"):
    display(notebook.Markdown(pl.producer_step.SAID_BACK))

# %% [markdown]
# ## 3. Correct first
#
# Every combination of the build's settings passed on two shapes. The check is the
# [elementwise bound](../docs/glossary.md#elementwise-bound): a limit on each element's error.

# %% output varies
rec = records.load("pipeline")
res = rec.results
bad = [c["config"] for c in res["checks"] if not c["passed"]]
notebook.require(not bad, "every combination of the build's settings passed", failed=str(bad[:3]))
pl.show_checks(rec)   # notebook.how(pl.show_checks) prints its code

# %% [markdown]
# ## 4. Measured: the depth sweep beside cuBLAS
#
# The record swept S = 1–6 for three tiles, with cuBLAS in the same run. A tile's name is BM×BN×BK,
# then `/cN` for N consumer warpgroups.
#
# **Predict before you look.** Each extra stage starts a load one k-tile earlier. Where does the
# 128×256 curve end? Still rising there? And 128×128 at S = 4? The goals are 0.80 of cuBLAS at
# 4096³ and 0.90 at 8192³. Does it reach them?

# %% output answers a prediction
fig = pl.plot_depth(res, "float16", record=rec)
plt.show()
for size, goal in ((4096, 0.80), (8192, 0.90)):                     # the chapter's goals
    tf = {dt: (pl.best_row(res, dt, size, variants=True)["tflops"],   # our best, TFLOP/s
               pl.cublas_row(res, dt, size)["tflops"])                # cuBLAS in the same run
          for dt in ("float16", "bfloat16")}
    head = f"{size}³ best ÷ cuBLAS: " + ", ".join(f"{dt} {notebook.ratio(*tf[dt])}" for dt in tf)
    notebook.verdict(min(b / c for b, c in tf.values()) >= goal,
                     f"{head}; goal {goal:.2f}: reached.", f"{head}; goal {goal:.2f}: NOT reached.")

# %% answer [markdown]
# **Why the 128×256 curve ends at S = 4.** A stage stores one k-tile of A and of B:
# (128 + 256) × 64 × 2 bytes = 48 KiB. A CTA may have 227 KiB of shared memory. All S stages must
# fit in it, with 2 KiB more for alignment and barriers. S = 4 takes 194 KiB; S = 5 would take 242 KiB.
# It is barely still rising: S = 3 → 4 gains under 2 % at 4096³ and 8192³, fp16 and bf16.

# %% check
cfg, limit = pl.PipelineConfig(bm=128, bn=256, stages=1), res["smem_limit"]   # bytes a CTA may have
need = {S: pl.ALIGN_SLACK + S * cfg.stage_bytes + pl.STATIC_SMEM for S in (4, 5)}   # bytes
swept = sorted(pl.depth_sweep(res, "128x256x64/c2"))
KiB = 1024
notebook.require((cfg.stage_bytes, pl.ALIGN_SLACK + pl.STATIC_SMEM, limit, need[4], need[5])
                 == (48 * KiB, 2 * KiB, 227 * KiB, 194 * KiB, 242 * KiB)
                 and cfg.max_stages(limit) == 4 == swept[-1],
                 "a 48 KiB stage, 2 KiB more; of 227 KiB, S = 4 takes 194, S = 5 would take 242",
                 stage=cfg.stage_bytes, limit=limit, need=need, swept=swept)
gain = [(t := pl.depth_sweep(res, "128x256x64/c2", dt, n))[4] / t[3] - 1 for n in (4096, 8192) for dt in pl.DTYPES]
notebook.require(all(0 <= g < 0.02 for g in gain), "S = 3 → 4 gains under 2 % in every size and type",
                 gain=gain)

# %% output answers a prediction
tile, n = "128x128x64/c2", 4096
tf, occ = pl.depth_sweep(res, tile, size=n), pl.resident_by_depth(res, tile, size=n)
print(f"{tile} {n}³, this run, S = 3 → 4: CTAs per SM {occ[3]} → {occ[4]}, TFLOP/s {tf[3]:.0f} → {tf[4]:.0f}")

# %% answer [markdown]
# **Why 128×128 drops at S = 4.** At S = 4, shared memory fits one CTA per SM, not two. The record's
# occupancy query shows it. Our reading: with one CTA per SM, no other CTA's math hides its
# [epilogue](../docs/glossary.md#epilogue), its final write of C.
# Going further: [05c §4](05c_pipeline_variants.ipynb).

# %% check
for t, size in [(t, size) for t in ("128x128x64/c1", "128x128x64/c2") for size in (8192, 4096)]:
    t_tf, t_occ = pl.depth_sweep(res, t, size=size), pl.resident_by_depth(res, t, size=size)
    notebook.require(t_occ[3] == 2 and t_occ[4] == 1 and t_tf[4] < t_tf[3],
                     "128×128 drops at S = 4: two CTAs per SM become one", tile=t, size=size)

# %% [markdown]
# ## 5. Why it stops rising
#
# **The question.** The 128×256 curve went flat after S = 3. Did the ring run out of stages, or
# does the time go somewhere else?
#
# Top: the [trace](../docs/glossary.md#trace) of CTA 0 (128×256, S = 4), its clock read at every
# event. Bottom: the [ring model](../docs/glossary.md#ring-model) of the
# same loop, with the same waits, `wait_group(1)` and releases. Red bars are waits on full. A blue
# bar runs from a k-tile's issue to the `wait_group` that proves it done.

# %% output varies
trace = pl.trace_of(res, "128x256x64/c2", stages=4)    # CTA 0's traced k-loop, S = 4
ring = mp.simulate(4, 1, 2, 64)                         # the model: S = 4, wait_group(1), 2 consumers, 64 k-tiles
fig = pl.plot_trace_beside_model(trace, ring, record=rec, causes=True)
plt.show()
clocks = pl.show_ktile_clocks(res, trace, ring)   # notebook.how(pl.show_ktile_clocks) prints its code

# %% [markdown]
# **The answer.** Four stages are enough: after its first loads the model never waits on full.
# Yet the kernel, untraced, takes about 1.2× as long per k-tile as the model (the line above; the
# clock reads slow the figure's GPU row 1.5× more). That is work the model leaves out. A guess:
# consumer 0's thread 0 also issues every refill, so consumer 0 reaches each wait late; consumer 1
# waits out each load. More stages cannot hide that work.
#
# [05b §3](05b_pipeline_timeline.ipynb) works it out clock by clock; [05b §5](05b_pipeline_timeline.ipynb)
# shows that the loads alone bring more than the math needs. [06 §3](06_warp_specialization.ipynb)
# tests the guess: rung 3 moves the refills to a producer warpgroup; compare it with rung 1.

# %% check
clocks = pl.ktile_clocks(res, trace, ring)   # clocks per k-tile: traced, untraced (from TFLOP/s), model
for sentence, ok, numbers in pl.trace_claims(**clocks, late=pl.full_waits(trace), free=pl.full_waits(ring),
                                              floor=pl.wait_floor(trace), ahead=pl.full_waits(trace, consumer=1)):
    notebook.require(ok, sentence, **numbers)
big = next(r for r in pl.supply.supply_rows(records.load("l2_supply").results) if (r["bn"], r["stages"]) == (256, 4))
notebook.require(big["gemm"] < big["need"] < big["loads_only"], "the ring alone brings more than the math needs",
                 **big)   # 128×256, S = 4, 4096³, bytes per clock per SM (05b §5 prints the table)

# %% [markdown]
# **Play** (ungraded, no GPU).
#
# 1. `mp.simulate(S, 1, 2, 64).math_fraction`, S = 2, 3, 4, 6: where does it stop rising?
# 2. `story = pl.show_parity_story(stages=3, k_tiles=6)`: which k-tile reads too early now?
# 3. `mp.simulate(4, 0, 2, 64).math_fraction` beside `(4, 1, 2, 64)`: what does one pending group buy?
#    (Equal: [06 §2](06_warp_specialization.ipynb) says why.)
#
# **On a GPU:** `python -m asynctc record pipeline --no-save` re-measures the depth sweep. Set its
# 128x256x64/c2 rows beside item 1.

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
runs = {p: mp.simulate(6, p, 1, 32) for p in (0, 1)}
ok = exercises.check("ch05.groups_pending", max(runs, key=lambda p: runs[p].math_fraction), stages=6,
                     consumers=1, solution=True)
producer_step = pl.producer_step.kernel_step()   # the kernel's own (tr.event: the trace, off here)
ok = exercises.check("ch05.producer_step", producer_step, solution=True)

# %% output varies tags=["solution"]
# exercise 2 with the refill's phase parity flipped: panel 5's wait names the open phase, and never passes
fig = pl.plot_ring_steps(stages=2, k_tiles=4, parities=pl.flipped_refill_parities(),
                         broken="the refill of fill f waits on empty with parity f mod 2")
plt.show()

# %% [markdown]
# ## Worklog

# %% output answers a prediction
from asynctc.core import worklog

worklog.show("05")

# %% [markdown]
# **Your GEMM so far**: if your step compiles to the course kernel's SASS, the recorded run is
# yours. [06e](06e_your_gemm_on_the_cpu.ipynb) runs the CPU tile.

# %% output varies
from asynctc.models.gemm_so_far import so_far

so_far("05")

# %% [markdown]
# **What you learned.** Why a ring needs phase parity; why depth stops paying. **Next:** [chapter 06](06_warp_specialization.ipynb).
