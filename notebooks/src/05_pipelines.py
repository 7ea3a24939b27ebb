# %% [markdown]
# # 05 — Asynchronous pipelines: TMA, mbarriers and wgmma, overlapped
#
# **In plain words.** Shared memory becomes a ring of slots. One thread copies the next slices of
# A and B into free slots while the Tensor Cores multiply the ones already there. Two barriers per
# slot say "data landed" and "math done", and must tell one lap of the ring from the next.
#
# **Learning goal.** Build a GEMM whose copies and math overlap; say why depth stops paying.
#
# **The story.** Chapters 03 and 04 in one kernel: you watch a ring without
# [phase parity](../docs/glossary.md#phase-parity) go wrong, fix it, write the producer's step and
# measure by depth.
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
# The [producer](../docs/glossary.md#producer) issues the loads (thread 0 of warpgroup 0); the
# [consumers](../docs/glossary.md#consumer), warpgroups, compute. Each stage has two mbarriers:
#
# | barrier | arrivals per phase | completes when | who waits |
# |---|---|---|---|
# | **full[s]** | 1 (the producer's `arrive.expect_tx(stage bytes)`) | the TMA's bytes have landed | the consumers |
# | **empty[s]** | one per consumer warpgroup | each consumer's wgmmas reading the stage are done | the producer |
#
# One [*elected thread*](../docs/glossary.md#elected-thread) of a consumer arrives on empty for
# its 128 threads (a convention of [CUTLASS](../docs/glossary.md#cutlass), NVIDIA's C++ template
# library for GEMMs, not a rule the PTX ISA text states).
#
# k-tile k goes into stage **k mod S** as that stage's fill **f = k / S** (integer division).
#
# **A ring without parity goes wrong.** Suppose each wait asks only "has this barrier
# completed?", a plain flag. The ring model runs S = 2, one consumer, with parity waits and with
# flag waits. Where does the flag run read too early?

# %% output varies
story = pl.show_parity_story(stages=2, k_tiles=4)     # cycles; the model stops at the first race

# %% [markdown]
# k-tile 2 is stage 0's fill 1. Its flag wait passes at once, because fill 0 completed full[0]:
# the consumer reads bytes still landing. In longer rings the timing hides this race.
#
# **Parity is the fix.** Fill f completes phase f of full[s] and of empty[s].
# `try_wait.parity(P)` waits while the open phase has parity P (chapter 03 §3). A waiter's phase is
# the open one or the one just completed, so the low bit of f is enough: the wait for fill f names
# **f mod 2**, the wait for the phase before **(f + 1) mod 2**. On a fresh barrier parity 1 passes
# at once. In the kernel, the consumer's parity is `pos.phase` (f mod 2), which `pos.advance()`
# flips when the ring wraps; the producer's refill waits with `rp`, the parity of the k-tile it just
# released, which is (f + 1) mod 2 for the fill it starts (chapter 03's table).
#
# The parity run, one panel per moment. Follow stage 0 through fills 0 and 1: which parity does
# each wait name?

# %% output varies
fig = pl.plot_ring_steps(stages=2, k_tiles=4)
plt.show()

# %% [markdown]
# **Exercise 1 — predict before you look.**
# A consumer issues each k-tile's wgmmas as one group (chapter 04), then waits with
# `wgmma.wait_group`. With S = 6 stages and a **single** consumer warpgroup, should that wait
# leave 0 or 1 group pending to keep the math going while a stage is released and refilled?
#
# **Try it** with the ring model: in a new cell print `mp.simulate(6, 0, 1, 32).math_fraction`
# (S, pending groups, consumers, k-tiles), the share of the loop with a wgmma in flight; change
# the 0 to 1 and rerun: you will see which answer keeps the Tensor Cores busier.

# %%
answer = ...
ok = exercises.check("ch05.groups_pending", answer, stages=6, consumers=1)

# %% [markdown]
# ## 2. The kernel, from its source
#
# The k-loop of `gemm_pipeline` (`kernels/pipeline.cu`), build `128x256x64/c2 s4`: a 128×256
# tile, 2 consumer warpgroups, S = 4. Each k-tile k takes four steps. **Wait** on full.
# **Issue** `mma_ktile`, then wait until `kPending` groups remain (exercise 1). **Release** k-tile r = k − 1
# on empty. **Refill** its stage (exercise 2).
#
# In the listing (shown once exercise 1 passes) `pos` is k's stage and parity, `prev` k − 1's;
# `pos.advance()` steps to the next stage, flipping the parity on wrap. `fence_accumulators(acc)`
# keeps the compiler from moving accumulator accesses across a wgmma. Folded lines:
# [05c](05c_pipeline_variants.ipynb) §2.

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
# - `empty.wait(stage, parity, wg, kt)`: false if it gave up; `kt` (r + STAGES) labels a timeout;
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
# Against the [elementwise bound](../docs/glossary.md#elementwise-bound), every combination of the
# build's settings on two shapes (live, two builds run now).

# %% output varies
rec = records.load("pipeline")
res = rec.results
pl.show_checks(rec)                                  # live: two builds checked now, too

# %% [markdown]
# ## 4. Measured: the depth sweep beside cuBLAS
#
# The record swept 1–6 stages for three tiles, two dtypes, two sizes, with cuBLAS in the same run.
#
# **Predict before you look.** Each added stage lets a load start one k-tile earlier. For the
# 128×256 tile, at which S do you expect the curve to stop rising? Will it reach cuBLAS?

# %% output answers a prediction
fig = pl.plot_depth(res, "float16", record=rec)
plt.show()
goals = pl.show_goals(res)                           # best variant ÷ cuBLAS, against the goal

# %% [markdown]
# **Derive it** from the record's `sweep` rows (fields `kernel`, `trace`, `tile`, `dtype`, `size`,
# `stages`, `tflops`): the 128×256 fp16 4096³ curve.

# %% output varies
wide = {r["stages"]: r["tflops"] for r in res["sweep"] if r["kernel"] == "pipeline" and not r["trace"]
        and (r["tile"], r["dtype"], r["size"]) == ("128x256x64/c2", "float16", 4096)}
print({S: round(t) for S, t in sorted(wide.items())}, f"TFLOP/s; S = 4 ÷ S = 3 = {wide[4] / wide[3]:.3f}")

# %% [markdown]
# The curve rises until S = 3; S = 4 adds about 1.6 %. It ends at S = 4 because a stage is
# (128 + 256)·64·2 bytes = 48 KiB, and five would pass the 227 KiB a CTA may opt in to
# (`PipelineConfig` refuses them). Why the wide tile? A wider tile does more math per
# byte, so it needs a smaller share of shared memory's 128 B/clk. 128×128 drops after S = 3:
# at S = 4 only one of its CTAs fits per SM, so none hides another's prologue and epilogue.

# %% output varies
widths = pl.show_widths(res)                         # asserts the two sentences above

# %% [markdown]
# ## 5. Why it stops rising
#
# A deeper ring starts each load earlier, so why no gain? Below, CTA 0 of the 128×256 kernel at
# S = 4, traced, above the ring model (rows wg0 and wg1: the two consumers; thread 0 of wg0
# issues the loads). Where do the red bars, the waits on full, stop?

# %% output varies
trace = pl.trace_of(res, "128x256x64/c2", stages=4)
ring = mp.simulate(4, 1, 2, 64)    # S = 4, wait_group(1), 2 consumers, 64 k-tiles
fig = pl.plot_trace_beside_model(trace, ring, record=rec)
plt.show()
waits = pl.show_trace_waits(res, trace, ring)       # cycles per k-tile; waits on full, k-tiles 4–11

# %% [markdown]
# **The model** never waits on full from k-tile 4 on. **The trace** waits at every k-tile: the
# data arrive late. Untraced, a k-tile still takes about 1.2× as long as in the model (tracing
# itself costs about 1.5×, above).
#
# **So:** past S = 3 the ring depth no longer sets the speed: the consumers wait for data that the
# model has ready. Late loads, or slowed wgmmas that free each stage late? The trace cannot say.
# Deep dive [05b §4–6](05b_pipeline_timeline.ipynb) fits an L2 cap and measures what the ring
# alone brings.

# %% [markdown]
# ## 6. Exercises
#
# Exercises 1 and 2 are above; "Design it" is in [05b §6](05b_pipeline_timeline.ipynb).

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
# pipelined GEMM measured, why depth stops paying (past S = 3 the consumers wait for data the model has ready). **Next:** [chapter 06](06_warp_specialization.ipynb).
