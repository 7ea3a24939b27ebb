# %% [markdown]
# # 05 — Asynchronous pipelines: TMA, mbarriers and wgmma, overlapped
#
# **In plain words.** Shared memory becomes a ring of slots. One thread fills free slots with A and
# B while the Tensor Cores multiply the filled ones.
#
# **Learning goal.** Build that GEMM. See why its ring needs
# [phase parity](../docs/glossary.md#phase-parity), the low bit that names which barrier phase a
# wait means. Say why depth, the number of stages S, stops paying.
#
# **Where we are.** In chapter 03, one thread moved a tile with a TMA copy and an mbarrier. In
# chapter 04, `wgmma` multiplied tiles straight from shared memory. So far they took turns: a copy,
# a wait, then the math. This chapter joins them in a ring of stages.
#
# Deep dives: [05b](05b_pipeline_timeline.ipynb), [05c](05c_pipeline_variants.ipynb).

# %% output varies
import matplotlib.pyplot as plt

from asynctc.core import exercises, notebook, records
from asynctc import pipeline as pl
from asynctc.models import pipeline as mp

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. The ring, drawn
#
# The [producer](../docs/glossary.md#producer), thread 0, issues the loads. The
# [consumers](../docs/glossary.md#consumer) are warpgroups that compute. Each stage has two mbarriers:
#
# | barrier | arrivals per phase | completes when | who waits |
# |---|---|---|---|
# | **full[s]** | 1 (`arrive.expect_tx(stage bytes)`) | the TMA's bytes landed | consumers |
# | **empty[s]** | one per consumer warpgroup | its wgmmas on the stage are done | producer |
#
# On empty, each warpgroup arrives once, through one [*elected thread*](../docs/glossary.md#elected-thread):
# a thread that acts for its group. That is a convention of [CUTLASS](../docs/glossary.md#cutlass),
# NVIDIA's GEMM library. It is not a rule the PTX ISA text states.
#
# **Phase parity** tells a wait which fill it means. Each load of a stage is one
# [*fill*](../docs/glossary.md#fill-of-a-stage). K-tile k, the [ring counter](../docs/glossary.md#ring-counter),
# is fill **f = k / S** (rounded down) of stage **k mod S**. Fill f completes phase f. A wait for
# fill f names **f mod 2**; for the phase before, **(f + 1) mod 2**.
# Without parity, a wait can only ask "is this barrier complete?". On a stage's second fill, that
# wait passes at once. [05c §5](05c_pipeline_variants.ipynb) runs that wait.
#
# Which parity does each panel's wait name?

# %% output varies
fig = pl.plot_ring_steps(stages=2, k_tiles=4)
plt.show()

# %% [markdown]
# **Exercise 1 — predict before you look.** Each k-tile's wgmmas form one committed group.
# `wgmma.wait_group N` waits until at most N groups are **pending** (in flight): N = 2 lets two
# run on. S = 6, one consumer: N = 0 or 1?

# %%
answer = ...
ok = exercises.check("ch05.groups_pending", answer, stages=6, consumers=1)

# %% [markdown]
# **Then try it:** `mp.simulate(6, 0, 1, 32).math_fraction` is the share of time a wgmma is in
# flight. Arguments: stages, pending, consumers, k-tiles. Change 0 to 1.

# %% [markdown]
# ## 2. The kernel, from its source
#
# Below is the k-loop of `gemm_pipeline` in `kernels/pipeline.cu`. This build has a 128×256 tile,
# two consumers and S = 4. Per k-tile k:
#
# 1. **wait** on full;
# 2. **issue** `mma_ktile`, then wait until `kPending` groups remain (exercise 1);
# 3. **release** k-tile r = k − kPending on empty;
# 4. **refill** that stage (exercise 2).
#
# `pos` is k's stage and phase parity. `prev` is k − 1's.

# %% output answers a prediction
if exercises.after("ch05.groups_pending"):             # the listing answers exercise 1
    display(notebook.show_source("pipeline.cu", start=r'^extern "C" __global__ void', end=r"^}",
                                 variant=True, omit=pl.producer_step.SKELETON))

# %% [markdown]
# **Exercise 2 — write the producer's refill step** in CUDA C++. Every thread runs it after k-tile
# r's release. [Before fill f](../docs/glossary.md#ring-counter), thread 0 waits on empty[rs] until
# r's fill is released. §1's panels give the parity. Then it refills stage rs with k-tile
# r + STAGES, if r + STAGES < T. In scope:
#
# - `producer`: true on thread 0; `r`; `rs`: r's stage; `rp`: the parity of k-tile r's fill on
#   full; `STAGES`; `T`: k-tiles in K; `wg`: this warpgroup; `broken`: set when a wait gave up;
# - `empty.wait(stage, parity, wg, kt)`: a bounded loop on `mbarrier.try_wait.parity`; false if it
#   gave up; `kt` = r + STAGES labels a timeout;
# - `load_stage(ta, tb, base + rs * kStageBytes, full[rs], kt, m0, n0)`: `mbarrier.arrive.expect_tx`
#   on full, then the TMA copies; `ta`, `tb` are the tensor maps; `m0`, `n0` the CTA's C origin;
# - around your step, listed above: `full.wait`, `mma_ktile`, `wgmma_wait_group`, `empty.arrive`
#   (`mbarrier.arrive`), and `pos`, `prev`.

# %%
producer_step = """
// your step
"""
ok = exercises.check("ch05.producer_step", producer_step)

# %% [markdown]
# Once yours passes, [05c §2](05c_pipeline_variants.ipynb) shows the kernel's own step.

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
# The record swept S = 1–6 for three tiles. cuBLAS ran in the same run. A tile's name is
# BM×BN×BK, then `/cN` for N consumer warpgroups.
#
# **Predict before you look.** Each extra stage starts a load one k-tile earlier. Where does the
# 128×256 curve end? Is it still rising at its last S? The goals are 0.80 of cuBLAS at 4096³ and
# 0.90 at 8192³. Does it reach them? The folded box below says why the curve ends; §5, why it flattens.

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

# %% answer [markdown]
# **Why the 128×256 curve ends at S = 4.** A stage stores one k-tile of A and of B:
# (128 + 256) × 64 × 2 bytes = 48 KiB. All S stages, plus 2 KiB of alignment and barriers, must fit
# in the 227 KiB of shared memory a CTA may have. S = 4 takes 194 KiB; S = 5 would take 242 KiB.
# The sweep builds only the depths that fit.

# %% answer [markdown]
# **Why 128×128 drops at S = 4.** The extra stage leaves shared memory for one CTA per SM, not two.
# The record's occupancy query says so, not a model. Our reading: with one CTA, no other CTA's math
# hides its [epilogue](../docs/glossary.md#epilogue), its final write of C.
# Going further: [05c §4](05c_pipeline_variants.ipynb).

# %% output answers a prediction
tile, n = "128x128x64/c2", 4096
tf, occ = pl.depth_sweep(res, tile, size=n), pl.resident_by_depth(res, tile, size=n)
print(f"{tile} {n}³, this run, S = 3 → 4: CTAs per SM {occ[3]} → {occ[4]}, TFLOP/s {tf[3]:.0f} → {tf[4]:.0f}")

# %% check
for t, size in [(t, size) for t in ("128x128x64/c1", "128x128x64/c2") for size in (8192, 4096)]:
    t_tf, t_occ = pl.depth_sweep(res, t, size=size), pl.resident_by_depth(res, t, size=size)
    notebook.require(t_occ[3] == 2 and t_occ[4] == 1 and t_tf[4] < t_tf[3],
                     "128×128 drops at S = 4: two CTAs per SM become one", tile=t, size=size)

# %% [markdown]
# ## 5. Why it stops rising
#
# Top: the trace of CTA 0 (128×256, S = 4). Bottom: the ring model. Red bars are waits on full.
# Where do they stop?
#
# The blue bars are drawn differently. A GPU bar runs from a group's issue to the `wait_group`
# one k-tile later that proves it done, so the bars overlap. A model bar is the group's math only.
# The two consumers take turns on the Tensor Cores, so each model lane has gaps.
#
# Under the figure, three lines in clocks:
#
# 1. *the trace's cost*: clocks per k-tile, traced ÷ untraced. Reading the clock at each event
#    slows the traced k-tiles.
# 2. Consumer 0's waits on full at k-tiles 4–11, GPU and model.
# 3. Clocks per k-tile, untraced ÷ the model's.

# %% output varies
trace = pl.trace_of(res, "128x256x64/c2", stages=4)
ring = mp.simulate(4, 1, 2, 64)
fig = pl.plot_trace_beside_model(trace, ring, record=rec)
plt.show()
tf = pl.depth_sweep(res, "128x256x64/c2")[4] * 1e12                  # untraced FLOP/s, S = 4
hz = res["sm_count"] * mp.HardwareParams.from_records().clock_mhz * 1e6   # SM clocks per second
untraced = 2 * 128 * 256 * 64 * hz / tf                              # clocks per k-tile, untraced
traced = trace["metrics"]["ctas"]["cta0"]["loop_cycles"] / 64        # CTA 0's loop, 64 k-tiles
model = ring.total_cycles / 64
gpu_w, model_w = pl.ktile_waits(trace)[0], pl.ktile_waits(ring)[0]   # consumer 0's waits on full
late = [gpu_w.get(k, 0) for k in range(4, 12)]                       # clocks, k-tiles 4–11, GPU
free = [model_w.get(k, 0) for k in range(4, 12)]                     # the same, in the model
print("1. the trace's cost, clocks per k-tile traced / untraced:", notebook.ratio(traced, untraced))
print("2. consumer 0's waits on full, k-tiles 4–11, clocks: GPU (traced)",
      *[f"{w:.0f}" for w in late], "| model", *[f"{w:.0f}" for w in free])
print("3. clocks per k-tile, untraced GPU / model:", notebook.ratio(untraced, model))

# %% check
notebook.require(1.40 < traced / untraced < 1.65,
                 "reading the clock at each event slows the traced loop about 1.5×",
                 traced=traced, untraced=untraced)
notebook.require(min(late) > 50 and not any(free),
                 "from k-tile 4 on the model never waits on full, the GPU waits at every k-tile",
                 gpu=late, model=free)
notebook.require(1.10 < untraced / model < 1.35,
                 "untraced, a k-tile still takes about 1.2× as long as in the model",
                 untraced=untraced, model=model)

# %% [markdown]
# **The model** never waits on full from k-tile 4 on. **The trace** waits at every k-tile.
# Untraced (line 3), a k-tile still takes about 1.2× as long as in the model. So the trace's cost is not the gap.
#
# **So:** past S = 3, depth no longer sets the speed. The loads arrive later than the model's fixed
# load latency. The likely cause is supply: every SM loads from one shared L2.
# Going further: [05b §4–6](05b_pipeline_timeline.ipynb) fits an L2 bandwidth cap on four runs and
# tests it on ten others.

# %% [markdown]
# **Play** (ungraded, no GPU).
#
# 1. `mp.simulate(S, 1, 2, 64).math_fraction`, S = 2, 3, 4, 6: where does it stop rising?
# 2. `story = pl.show_parity_story(stages=3, k_tiles=6)`: which k-tile reads too early now?
# 3. `mp.simulate(4, 0, 2, 64).math_fraction` beside `(4, 1, 2, 64)`: what does one pending group buy?
#
# **On a GPU:** `python -m asynctc record pipeline --no-save` re-measures §4's table. Put its
# 4096 float16 128x256x64/c2 `tflops` by S beside item 1.

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
