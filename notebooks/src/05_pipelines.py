# %% [markdown]
# # 05 — Asynchronous pipelines: TMA, mbarriers and wgmma, overlapped
#
# **In plain words.** Shared memory becomes a ring of slots: one thread copies the next slices of
# A and B into free slots while the Tensor Cores multiply those already there.
#
# **Learning goal.** Build that GEMM; see why its ring needs
# [phase parity](../docs/glossary.md#phase-parity), the low bit naming which barrier phase a wait means;
# say why depth stops paying.
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
# The [producer](../docs/glossary.md#producer) (thread 0) issues the loads; the
# [consumers](../docs/glossary.md#consumer), warpgroups, compute. Each stage has two mbarriers:
#
# | barrier | arrivals per phase | completes when | who waits |
# |---|---|---|---|
# | **full[s]** | 1 (the producer's `arrive.expect_tx(stage bytes)`) | the TMA's bytes have landed | the consumers |
# | **empty[s]** | one per consumer warpgroup | each consumer's wgmmas reading the stage are done | the producer |
#
# One [*elected thread*](../docs/glossary.md#elected-thread), a single thread acting for its group,
# arrives on empty for its consumer's 128 threads: a [CUTLASS](../docs/glossary.md#cutlass)
# (NVIDIA's C++ GEMM library) convention, not a rule the PTX ISA text states.
# k-tile k goes into stage **k mod S** as that stage's fill **f = k / S** (rounded down).
#
# **A ring without parity goes wrong.** Suppose each wait asks only "has this barrier completed?",
# a plain flag. The ring model runs S = 2 both ways. Where does the flag run read too early?

# %% output varies
story = pl.show_parity_story(stages=2, k_tiles=4)     # cycles

# %% [markdown]
# k-tile 2 (stage 0's second fill) passes its flag wait at once and reads bytes still landing.
#
# **Parity is the fix**, in four steps (chapter 03 §3):
#
# 1. Fill f of a stage completes phase f of its full and of its empty barrier.
# 2. `try_wait.parity(P)` waits while the open phase has parity P.
# 3. A waiter only meets the open phase or the one just completed, so the low bit is enough:
#    wait for fill f with **f mod 2**, for the phase before with **(f + 1) mod 2**.
# 4. The kernel's consumer waits with `pos.phase` (f mod 2); the producer's refill with `rp`,
#    (f + 1) mod 2.
#
# One panel per moment: which parity does each wait name?

# %% output varies
fig = pl.plot_ring_steps(stages=2, k_tiles=4)
plt.show()

# %% [markdown]
# **Exercise 1 — predict before you look.** A consumer issues each k-tile's wgmmas as one group,
# then waits with `wgmma.wait_group`. With S = 6 and a **single** consumer
# warpgroup, should that wait leave 0 or 1 group pending to keep the math going?
#
# **Try it:** print `mp.simulate(6, 0, 1, 32).math_fraction` (stages, pending, consumers, k-tiles),
# the share of time with a wgmma in flight; then the 0 to 1.

# %%
answer = ...
ok = exercises.check("ch05.groups_pending", answer, stages=6, consumers=1)

# %% [markdown]
# ## 2. The kernel, from its source
#
# The k-loop of `gemm_pipeline` (`kernels/pipeline.cu`), build `128x256x64/c2 s4`: a 128×256
# tile, two consumers, S = 4. Each k-tile k takes four steps:
#
# 1. **Wait** on full.
# 2. **Issue** `mma_ktile`, then wait until `kPending` groups remain (exercise 1).
# 3. **Release** k-tile r = k − 1 on empty.
# 4. **Refill** its stage (exercise 2).
#
# In the listing `pos` is k's stage and parity, `prev` k − 1's.

# %% output answers a prediction
if exercises.after("ch05.groups_pending"):             # the listing answers exercise 1
    display(notebook.show_source("pipeline.cu", start=r'^extern "C" __global__ void', end=r"^}",
                                 variant=True, omit=pl.producer_step.SKELETON))

# %% [markdown]
# **Worked first: the consumer's side, S = 2.**
#
# | k-tile k | stage k mod 2 | fill f = k / 2 | full's parity, f mod 2 (`pos.phase`) |
# |---:|---:|---:|---:|
# | 0 | 0 | 0 | 0 |
# | 1 | 1 | 0 | 0 |
# | 2 | 0 | 1 | 1 |
# | 3 | 1 | 1 | 1 |
#
# k-tile 2 is 03's table's row "fill 1", consumer column. The producer's refill of that
# stage is its next fill; find its parity in 03's table's producer column.
#
# **Exercise 2 — write the producer's refill step** (CUDA C++, run by every thread after k-tile r's
# release): thread 0 waits on empty[rs] with the right parity, then refills stage rs with k-tile r + S while
# r + STAGES < T. In scope:
#
# - `producer` (thread 0), `r`, `rs` (r's stage), `rp` (the parity k-tile r's fill used on full:
#   as §1 step 4 says, already the producer column's value for the refill), `STAGES`, `T` (k-tiles in K),
#   `wg` (this warpgroup), `broken` (set when a wait gave up);
# - `empty.wait(stage, parity, wg, kt)`: false if it gave up; `kt` (r + STAGES) labels a timeout;
# - `load_stage(ta, tb, base + rs * kStageBytes, full[rs], kt, m0, n0)`: tensor maps `ta`, `tb`,
#   `m0`, `n0` the CTA's C origin.

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
# Against the [elementwise bound](../docs/glossary.md#elementwise-bound), a limit on each element's
# error, every combination of the build's settings passed on two shapes.

# %% output varies
rec = records.load("pipeline")
res = rec.results
bad = [c["config"] for c in res["checks"] if not c["passed"]]
print(f"{len(res['checks'])} checks, worst |C−ref| ÷ bound {max(c['worst_ratio'] for c in res['checks']):.3f}")
notebook.require(not bad, "every combination of the build's settings passed", failed=str(bad[:3]))
pl.show_checks(rec)   # notebook.how(pl.show_checks) prints its code

# %% [markdown]
# ## 4. Measured: the depth sweep beside cuBLAS
#
# The record swept S = 1–6 for three tiles, with cuBLAS in the same run.
#
# **Predict before you look.** Each added stage starts a load one k-tile earlier. At which S does
# the 128×256 curve stop rising? Will it reach cuBLAS?

# %% output answers a prediction
fig = pl.plot_depth(res, "float16", record=rec)
plt.show()
goals = pl.show_goals(res)   # notebook.how(pl.show_goals) prints its code

# %% [markdown]
# **Derive it** from the `sweep` rows: the 128×256 fp16 4096³ curve flattens after S = 3; S = 4
# adds only a few percent. Then the ring model's, with today's records and the kernel's schedule
# (05b §1's prediction, made with an earlier schedule, sits a few percent higher). **Predict,
# then change** `stages=[1, 2, 3, 4]` to `[1, 2, 3, 4, 5, 6]`: the model has no shared-memory
# limit; does it flatten where the record does?

# %% output varies
wide = {r["stages"]: r["tflops"] for r in res["sweep"] if r["kernel"] == "pipeline" and not r["trace"]
        and (r["tile"], r["dtype"], r["size"]) == ("128x256x64/c2", "float16", 4096)}
print({S: round(t) for S, t in sorted(wide.items())}, "TFLOP/s; S = 4 ÷ S = 3:", notebook.ratio(wide[4], wide[3], "", 3))
notebook.require(max(wide, key=wide.get) >= 3 and 0.005 < wide[4] / wide[3] - 1 < 0.03,
                 "the 128×256 curve flattens after S = 3; S = 4 adds only a few percent", S4_over_S3=wide[4] / wide[3])
print({r["stages"]: round(r["tflops"]) for r in mp.predict_depth_sweep(stages=[1, 2, 3, 4])}, "TFLOP/s, model")

# %% [markdown]
# Asserted by `show_widths`:
#
# - The curve ends at S = 4: five 48 KiB stages pass the 227 KiB a CTA may opt in to.
# - The wide tile does more math per byte, so it needs a smaller share of shared memory's bandwidth.
# - 128×128 drops after S = 3: from S = 4 one CTA fits per SM, and none hides another's
#   [epilogue](../docs/glossary.md#epilogue) (the tile's final write of C).

# %% output varies
widths = pl.show_widths(res)   # notebook.how(pl.show_widths) prints its code

# %% [markdown]
# ## 5. Why it stops rising
#
# Below, CTA 0 of the 128×256 kernel at S = 4, traced, above the ring model. Where do the red
# bars, the waits on full, stop?

# %% output varies
trace = pl.trace_of(res, "128x256x64/c2", stages=4)
ring = mp.simulate(4, 1, 2, 64)    # stages, pending, consumers, k-tiles
fig = pl.plot_trace_beside_model(trace, ring, record=rec)
plt.show()
waits = pl.show_trace_waits(res, trace, ring)   # notebook.how(pl.show_trace_waits) prints its code

# %% [markdown]
# **The model** never waits on full from k-tile 4 on; **the trace** waits at every k-tile.
# Untraced, a k-tile still takes about 1.2× as long as in the model.
#
# **So:** past S = 3 the ring depth no longer sets the speed: the consumers wait for data the
# model has ready. Why: the model gives each load a fixed latency; on the GPU all SMs load
# from one shared L2, which cannot keep up.
#
# Going further: [05b §4–6](05b_pipeline_timeline.ipynb) fits an L2 cap to this gap.

# %% [markdown]
# **Play** (ungraded, no GPU).
#
# 1. `mp.simulate(S, 1, 2, 64).math_fraction`, S = 2, 3, 4, 6: where does it stop rising?
# 2. `story = pl.show_parity_story(stages=3, k_tiles=6)`: which k-tile reads too early now?
# 3. `mp.simulate(4, 0, 2, 64).math_fraction` beside `(4, 1, 2, 64)`: what does one pending group buy?
#
# **On a GPU:** `python -m asynctc record pipeline --no-save` re-measures §4's table: put its
# 4096 float16 128x256x64/c2 row (`tflops` by S) beside item 1.

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
# **Your GEMM so far**: if your step compiles to the course kernel's SASS, the recorded run is
# yours ([06e](06e_your_gemm_on_the_cpu.ipynb): the CPU tile).

# %% output varies
from asynctc.models.gemm_so_far import so_far

so_far("05")

# %% [markdown]
# **What you learned.** Why a ring needs phase parity; why depth stops paying. **Next:** [chapter 06](06_warp_specialization.ipynb).
