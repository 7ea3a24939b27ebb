# %% [markdown]
# # 05 — Asynchronous pipelines: TMA, mbarriers and wgmma, overlapped
#
# **Learning goal.** Build one GEMM whose copies and math run *at the same time*, and say why its
# speed stops rising with ring depth.
#
# **The story.** Chapter 03's TMA + mbarrier and chapter 04's `wgmma` go into one kernel. The loads
# of the next k-tiles run under the math of this one. You will
#
# 1. draw the ring of S shared-memory stages with its *full* and *empty* mbarriers, and say who
#    arrives, who waits and on which [phase parity](../docs/glossary.md#phase-parity) at every k-tile;
# 2. read the kernel's loop and check it against float64;
# 3. measure throughput against ring depth, beside cuBLAS, and say why it stops rising.
#
# Every warpgroup here computes, and one of its threads also issues the loads. (Chapter 06 gives the
# loads a warpgroup of their own.)
#
# Deep dives: [05b](05b_pipeline_timeline.ipynb) (a CPU model's prediction beside the GPU's
# timelines) and [05c](05c_pipeline_variants.ipynb) (SASS; the names of CUTLASS, NVIDIA's C++ GEMM
# library; what moved the numbers; the protocol broken on purpose).

# %% output varies
import matplotlib.pyplot as plt

from asynctc.core import exercises, notebook, records, runtime
from asynctc import pipeline as pl
from asynctc.models import pipeline as mp

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. The ring, drawn
#
# The [producer](../docs/glossary.md#producer) is the thread that issues the loads; the
# [consumers](../docs/glossary.md#consumer) are the warpgroups that compute. Each of the S stages
# has two mbarriers:
#
# | barrier | arrivals per phase | completes when | means |
# |---|---|---|---|
# | **full[s]** | 1 (the producer's `arrive.expect_tx(stage bytes)`) | the TMA's bytes have landed | "stage s contains its k-tile" |
# | **empty[s]** | one per consumer warpgroup | each consumer's `wgmma.wait_group` says the wgmmas reading the stage are done | "stage s may be refilled" |
#
# All 128 threads of a consumer execute `wgmma.wait_group`; then one
# [*elected thread*](../docs/glossary.md#elected-thread) arrives for them (CUTLASS's convention,
# not a rule the PTX ISA text states).
#
# **Which parity.** k-tile k lives in stage **k mod S** and is that stage's (k / S)-th fill (`/`
# is integer division):
#
# * a consumer waits on full[k mod S] with parity **(k / S) mod 2**;
# * the producer, before loading k-tile t, waits on empty[t mod S] with parity **(t / S + 1) mod 2**.
#
# On the first pass (t < S) that is parity 1 on a fresh barrier: the phase *before* phase 0
# (chapter 03), so **the first pass over the empty barriers passes at once**.

# %% output varies
fig = mp.plot_ring(stages=4, k_tiles=12, hide_pending=True)
plt.show()

# %% [markdown]
# ## 2. The kernel, from its source
#
# `asynctc/kernels/pipeline.cu`, driven by `asynctc.pipeline`. Per k-tile k, the loop's four
# numbered steps:
#
# 1. wait on full[k mod S] with parity (k / S) mod 2;
# 2. issue the k-tile's wgmmas as one group; `wgmma.wait_group<kPending>` leaves at most kPending
#    groups in flight;
# 3. release k-tile r = k − kPending: one elected thread per warpgroup arrives on empty;
# 4. the producer thread waits on that stage's empty barrier, then refills it with k-tile r + S.
#
# `pos` is k's stage (k mod S) and phase ((k / S) mod 2); `prev` is k − 1's, for step 3. The
# ring header `ring.cuh` (second listing; its i is our k) keeps them without a division:
# `advance()` flips the phase when the stage wraps to 0.

# %%
display(notebook.show_source("pipeline.cu", start=r"^  RingState<STAGES> pos", end=r"^  \}$"))
notebook.show_source("ring.cuh", start=r"^template <int kStages>", end=r"^};")

# %% [markdown]
# **Names**, e.g. `float16 128x256x64/c2 s4 B:K`: CTA tile 128×256×64, 2 consumer warpgroups,
# S = 4 stages, B K-major (`B:MN`: MN-major); `out:float16`: C's dtype; `l2:256B`: TMA fetches L2
# lines in 256-byte units; `waitN`: after Exercise 1. All parts: [05c](05c_pipeline_variants.ipynb) §1.
#
# **Exercise 1 — predict before you look** ([05c](05c_pipeline_variants.ipynb) measures it, so
# answer first). With S = 6 stages and a **single** consumer warpgroup, should the loop's
# `wgmma.wait_group<kPending>` leave 0 or 1 group pending to keep the math going while a stage is
# released and refilled? You may then run `mp.simulate(6, p, 1, 32)` for p = 0 and 1 and compare
# `math_fraction`. Replace `...`:

# %%
answer = ...
ok = exercises.check("ch05.groups_pending", answer, stages=6, consumers=1)

# %% [markdown]
# **The `waitN` part of a name** (now that you have answered): the loop's `wgmma.wait_group(N)`, so
# `wait1` leaves one wgmma group pending and `wait0` none.

# %% [markdown]
# ## 3. Correct first
#
# Fresh standard-normal inputs, NaN-poisoned output, float64 reference, and an elementwise bound
# `|C − ref| ≤ k·2⁻²¹·(|A|·|B|) + 2·u_out·|ref|`: one wrong or unwritten element fails.
#
# Live, two configurations run now. The record checked every combination of dtype, tile, stages,
# consumers, B layout and wait_group, on two shapes.

# %% output varies
rec = records.load("pipeline")
res = rec.results
if runtime.runs_live("sm_90a"):                      # two configurations, checked now
    for cfg in (pl.PipelineConfig(bm=128, bn=256, consumers=2, stages=4),
                pl.PipelineConfig(dtype="bfloat16", bm=128, bn=128, consumers=1, stages=3, b_major="MN")):
        chk = pl.verify_pipeline(cfg, 512, 768, 1024)
        print(f"live: {cfg.label()}: worst |C−ref|/bound {chk.worst:.3f}, wrong {chk.wrong}")
        assert chk.passed
print(f"{rec.label()}:", *pl.checks_lines(res))
assert all(c["passed"] for c in res["checks"])

# %% [markdown]
# ## 4. Measured: the depth sweep beside cuBLAS
#
# The record swept 1–6 stages (as many as fit in shared memory) for three tiles, fp16 and bf16, at
# 4096³ and 8192³, with cuBLAS timed in the same run. Shown: fp16; a dashed series is a `/2cta`
# build (two CTAs per SM asked for).

# %% output varies
fig = pl.plot_depth(res, "float16", record=rec)
plt.show()
print(pl.depth_table(res, dtypes=("float16",)))      # bf16: pl.depth_table(res)

# %% [markdown]
# **The chapter's goal**: the best variant ≥ 0.80 of cuBLAS at 4096³ and ≥ 0.90 at 8192³, fp16
# and bf16 (every untraced variant counts):

# %% output varies
goal = {4096: 0.80, 8192: 0.90}
for size in (4096, 8192):
    for dt in ("float16", "bfloat16"):
        b, cb = pl.best_row(res, dt, size, variants=True), pl.cublas_row(res, dt, size)
        ratio = b["tflops"] / cb["tflops"]
        head = f"{size}³ {pl.row_label(b)}: {ratio:.2f} of cuBLAS, goal {goal[size]:.2f}"
        notebook.verdict(ratio >= goal[size], f"{head} reached.", f"{head} NOT reached.")

# %% [markdown]
# ## 5. Why it stops rising
#
# With one stage every load is exposed: load, wait, compute. Each further stage hides one more load
# under the math, until the loads arrive as fast as the path into the SM delivers them; past that,
# depth adds nothing. From the record (128×256, fp16, 4096³, and the timeline recorded inside the
# *first-wave CTAs*: the first CTAs launched, each on its own SM, which start together before any
# CTA has finished):

# %% output varies
meas = {r["stages"]: r["tflops"] for r in res["sweep"] if r["kernel"] == "pipeline"
        and r["tile"] == "128x256x64/c2" and r["dtype"] == "float16" and r["size"] == 4096}
best_s, gain = max(meas, key=meas.get), meas[4] / meas[3] - 1
m = {t["stages"]: t["metrics"] for t in res["traces"] if t["tile"] == "128x256x64/c2"}[best_s]
per_k, wait_full = m["mean"]["loop_cycles"] / m["k_tiles"], m["mean"]["wait_full_fraction"]
kt_peak = pl.ktile_peak_cycles(pl.PipelineConfig(bm=128, bn=256, consumers=2))
avg = pl.average_ktile_cycles(res, "128x256x64/c2", "float16", 4096, best_s)   # the whole kernel's, at most
notebook.claim(meas[1] < meas[2] < meas[3] and abs(gain) < 0.05 and wait_full > 0.15,
               f"S = 1 → 4: {meas[1]:.0f} → {meas[2]:.0f} → {meas[3]:.0f} → {meas[4]:.0f} TFLOP/s. At "
               f"S = {best_s} the traced consumers still wait on full barriers {wait_full:.0%} of the "
               f"loop, yet S = 4 adds {gain:+.1%} over S = 3: more stages no longer bring the data sooner.",
               s3=meas[3], s4=meas[4], wait_full=wait_full)
_ = notebook.claim(per_k > 1.8 * kt_peak and per_k > avg.cycles,
                   f"A traced k-tile takes {per_k:.0f} cycles where the Tensor Cores need {kt_peak:.0f}; "
                   f"the whole kernel's average k-tile takes at most {avg.cycles:.0f}, so the first wave "
                   "runs slower than the average CTA.", traced=per_k, peak=kt_peak, average=avg.cycles)

# %% [markdown]
# What sets that pace (the L2 → SM path, or wgmmas slowed by the loads) the trace cannot separate.
# Deep dive [05b](05b_pipeline_timeline.ipynb) sets a CPU model's prediction, made before the
# kernel first ran, beside the sweep and fits a cap on the L2 → SM path to it. Why the 128×128
# curves drop after S = 3: [05c](05c_pipeline_variants.ipynb).

# %% [markdown]
# ## 6. Exercises
#
# Exercise 1 is in section 2. Wrong answers get a hint.
#
# **2.** With a ring of **S = 3** stages, which parity does a consumer wait on full[13 mod 3] for
# k-tile **13**?

# %%
answer = ...
ok = exercises.check("ch05.full_parity", answer, k=13, stages=3)

# %% [markdown]
# **3.** With S = 3, which parity does the producer wait on empty[t mod 3] before loading k-tile
# **t = 7**? Then work out, on paper, the parity before k-tile **t = 2** (the first pass); the
# solutions cell checks both.

# %%
answer = ...
ok = exercises.check("ch05.empty_parity", answer, t=7, stages=3)

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
exercises.check("ch05.full_parity", (13 // 3) % 2, k=13, stages=3, solution=True)
exercises.check("ch05.empty_parity", (7 // 3 + 1) % 2, t=7, stages=3, solution=True)
exercises.check("ch05.empty_parity", (2 // 3 + 1) % 2, t=2, stages=3, solution=True)
runs = {p: mp.simulate(6, p, 1, 32) for p in (0, 1)}
ok = exercises.check("ch05.groups_pending", max(runs, key=lambda p: runs[p].math_fraction), stages=6,
                     consumers=1, solution=True)

# %% [markdown]
# **What you learned.** The full/empty ring, the parity every wait uses, a pipelined GEMM checked
# and measured, and why depth stops paying.
# **Next:** [chapter 06](06_warp_specialization.ipynb) gives the loads a warpgroup of their own.
