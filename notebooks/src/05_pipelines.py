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
# **Which parity.** k-tile k lives in stage **k mod S** and is that stage's fill **k / S** (integer
# division). Each fill completes one phase of full[s] when its bytes land and one of empty[s] when
# the consumers release it: phase f of either barrier is fill f's. `try_wait.parity(P)` waits while
# the open phase has parity P (chapter 03 §3); on a fresh barrier (phase 0 open) parity 1 names the
# phase before phase 0, which counts as completed.

# %% output varies
fig = mp.plot_ring(stages=4, k_tiles=12, hide_pending=True, parities=False)
plt.show()

# %% [markdown]
# **Exercise 1 — write the parities** (`//` is integer division): `full_parity(k, S)`, the parity
# a consumer waits on full[k mod S] for k-tile k, and `empty_parity(t, S)`, the parity the producer
# waits on empty[t mod S] before loading k-tile t (it needs the release of the stage's previous
# fill; the first pass has none). The check runs the ring model (S = 1 to 4) with your pair; a wrong
# one gets its diagnosis: the wait that never ends, or the read that races the copy.

# %%
def full_parity(k, S):
    ...
def empty_parity(t, S):
    ...
ok = exercises.check("ch05.ring_parities", (full_parity, empty_parity))

# %% [markdown]
# ## 2. The kernel, from its source
#
# `asynctc/kernels/pipeline.cu`, driven by `asynctc.pipeline`. Per k-tile k, the loop takes four
# numbered steps (the listing's comments): wait on full; issue the k-tile's wgmmas as one group and
# wait until at most `kPending` groups are in flight; release k-tile r = k − kPending (one elected
# thread per warpgroup arrives on empty); the producer thread refills that stage with k-tile
# t = r + S. It waits on empty with `rp`, r's phase (r / S) mod 2: exercise 1's `empty_parity(t, S)`.
#
# `pos` is k's stage (k mod S) and phase ((k / S) mod 2); `prev` is k − 1's, for step 3. The
# ring header `ring.cuh` (second listing; its i is our k) keeps them without a division:
# `advance()` flips the phase when the stage wraps to 0.

# %%
display(notebook.show_source("pipeline.cu", start=r"^  RingState<STAGES> pos", end=r"^  \}$"))
notebook.show_source("ring.cuh", start=r"^template <int kStages>", end=r"^};")

# %% [markdown]
# `fence_accumulators(acc)` stops the compiler moving reads or writes of the accumulator registers
# across a wgmma, which writes them asynchronously. `full.wait`'s last two arguments, `wg` and `k`,
# only label the wait: one that times out writes them into the kernel's error word.
#
# **Names**, e.g. `float16 128x256x64/c2 s4 B:K`: CTA tile 128×256×64, 2 consumer warpgroups,
# S = 4 stages, B K-major; every part: [05c](05c_pipeline_variants.ipynb) §1.
#
# **Exercise 2 — predict before you look** ([05c](05c_pipeline_variants.ipynb) measures it, so
# answer first). With S = 6 stages and a **single** consumer warpgroup, should the loop's
# `wgmma.wait_group<kPending>` leave 0 or 1 group pending to keep the math going while a stage is
# released and refilled? Then try `mp.simulate(6, p, 1, 32)` (the ring model: S = 6, p groups
# pending, 1 consumer, 32 k-tiles) for p = 0 and 1 and compare their `math_fraction`, the share of
# the loop with a wgmma in flight:

# %%
answer = ...
ok = exercises.check("ch05.groups_pending", answer, stages=6, consumers=1)

# %% [markdown]
# **The `waitN` part of a name** (now that you have answered): the loop's `wgmma.wait_group(N)`, so
# `wait1` leaves one wgmma group pending and `wait0` none.

# %% [markdown]
# ## 3. Correct first
#
# Checked as in chapter 01, against the [elementwise bound](../docs/glossary.md#elementwise-bound)
# `|C − ref| ≤ K·2⁻²¹·(|A|·|B|) + 2·u_out·|ref|` (the glossary defines each term): one wrong or
# unwritten element fails.
#
# Live, two configurations run now; the record checked every combination of dtype, tile, stages,
# consumers, B layout and wait_group on two shapes.

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
r128 = {(r["tile"][-2:], r["stages"]): r for r in res["sweep"] if r["kernel"] == "pipeline"
        and r["tile"] in ("128x128x64/c1", "128x128x64/c2") and r["dtype"] == "float16" and r["size"] == 4096}
drops = {c: (r128[c, 3], r128[c, 4]) for c in ("c1", "c2")}
_ = notebook.claim(all(b["tflops"] < a["tflops"] and a["resident_ctas"] == 2 and b["resident_ctas"] == 1
                       for a, b in drops.values()),
                   "Both 128×128 tiles drop at S = 4 (" + ", ".join(
                       f"{c} {a['tflops']:.0f} → {b['tflops']:.0f}" for c, (a, b) in drops.items())
                   + " TFLOP/s): at S = 3 two CTAs share an SM, at S = 4 only one fits in shared memory.")

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
# With one stage every load is exposed: load, wait, compute. Each further stage issues a load one
# k-tile earlier, so it has longer to land under the math. From the record (128×256, fp16, 4096³,
# and the timeline recorded inside the *first-wave CTAs*: the first CTAs launched, one per SM, which
# start together):

# %% output varies
meas = {r["stages"]: r["tflops"] for r in res["sweep"] if r["kernel"] == "pipeline"
        and r["tile"] == "128x256x64/c2" and r["dtype"] == "float16" and r["size"] == 4096}
best_s, gain = max(meas, key=meas.get), meas[4] / meas[3] - 1
m = {t["stages"]: t["metrics"] for t in res["traces"] if t["tile"] == "128x256x64/c2"}[best_s]
per_k, wait_full = m["mean"]["loop_cycles"] / m["k_tiles"], m["mean"]["wait_full_fraction"]
kcfg = pl.PipelineConfig(bm=128, bn=256, consumers=2)
kt_peak = pl.ktile_peak_cycles(kcfg)
avg = pl.average_ktile_cycles(res, "128x256x64/c2", "float16", 4096, best_s)   # the whole kernel's, at most
notebook.claim(meas[1] < meas[2] < meas[3] and abs(gain) < 0.05,
               f"S = 1 → 4: {meas[1]:.0f} → {meas[2]:.0f} → {meas[3]:.0f} → {meas[4]:.0f} TFLOP/s; "
               f"S = 4 adds {gain:+.1%} over S = 3.", s3=meas[3], s4=meas[4])
notebook.claim(wait_full > 0.15 and per_k > 1.8 * kt_peak and per_k > avg.cycles,
               f"At S = {best_s} the traced consumers still waited on full barriers {wait_full:.0%} of the "
               f"loop, and a k-tile took them {per_k:.0f} cycles where the Tensor Cores need {kt_peak:.0f} "
               f"(2·{kcfg.bm}·{kcfg.bn}·{kcfg.bk} FLOP / {pl.FLOP_PER_CLK_SM} FLOP per clock). These "
               f"first-wave CTAs ran slower than the kernel as a whole, whose k-tiles average at most "
               f"{avg.cycles:.0f} cycles.", wait_full=wait_full, traced=per_k, peak=kt_peak, average=avg.cycles)
_ = notebook.claim(abs(gain) < 0.05 and wait_full > 0.15,
                   "Bottom line: from S = 3 on, each load is issued stages ahead, yet the data still "
                   "arrive late; they come only as fast as the path into the SM delivers them, and "
                   "more stages do not change that rate.", gain=gain, wait_full=wait_full)

# %% [markdown]
# **Not known:** which part of that path sets the rate, the L2 → SM bandwidth or wgmmas slowed by
# the loads. The trace cannot separate them. Deep dive [05b](05b_pipeline_timeline.ipynb) sets a
# CPU model's prediction, made before the kernel first ran, beside the sweep and fits a cap on the
# L2 → SM path to it.

# %% [markdown]
# ## 6. Exercises
#
# Exercise 1 is in section 1, exercise 2 in section 2.

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
def full_parity(k, S):
    return (k // S) % 2          # the (k / S)-th fill of stage k mod S
def empty_parity(t, S):
    return (t // S + 1) % 2      # the phase before that fill: a fresh barrier passes at once
exercises.check("ch05.ring_parities", (full_parity, empty_parity), solution=True)
runs = {p: mp.simulate(6, p, 1, 32) for p in (0, 1)}
ok = exercises.check("ch05.groups_pending", max(runs, key=lambda p: runs[p].math_fraction), stages=6,
                     consumers=1, solution=True)

# **What you learned.** The full/empty ring, the parity every wait uses, a pipelined GEMM checked
# and measured, and why depth stops paying.
# **Next:** [chapter 06](06_warp_specialization.ipynb) gives the loads a warpgroup of their own.
