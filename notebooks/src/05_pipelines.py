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
# timelines) and [05c](05c_pipeline_variants.ipynb) (SASS, the names of CUTLASS — NVIDIA's C++ GEMM library — what moved the numbers,
# the protocol broken on purpose).

# %% output varies
import matplotlib.pyplot as plt

from asynctc.core import exercises, notebook, records, runtime
from asynctc import pipeline as pl
from asynctc.models import pipeline as mp

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. The ring, drawn
#
# The [producer](../docs/glossary.md#producer) is the thread that issues the loads; the [consumers](../docs/glossary.md#consumer) are the warpgroups
# that compute. S stages; stage s has two mbarriers (PTX ISA, *mbarrier*):
#
# | barrier | arrivals per phase | completes when | means |
# |---|---|---|---|
# | **full[s]** | 1 (the producer's `arrive.expect_tx(stage bytes)`) | the TMA's bytes have landed | "stage s contains its k-tile" |
# | **empty[s]** | one per consumer warpgroup | each consumer's `wgmma.wait_group` says the wgmmas reading the stage are done | "stage s may be refilled" |
#
# All 128 threads of a consumer execute `wgmma.wait_group`; then one chosen (*elected*) thread arrives for them
# (the convention CUTLASS uses too, not a rule the PTX ISA text states).
#
# **Which parity.** k-tile k lives in stage **k mod S** and is that stage's (k / S)-th fill (`/`
# is integer division here):
#
# * a consumer waits on full[k mod S] with parity **(k / S) mod 2**;
# * the producer, before loading k-tile t, waits on empty[t mod S] with parity **(t / S + 1) mod 2**.
#
# On the first pass (t < S) the producer waits for parity 1 on a fresh barrier. As chapter 03
# showed, that is the phase *before* phase 0, so **the first pass over the empty barriers passes at
# once**.

# %% output varies
fig = mp.plot_ring(stages=4, k_tiles=12, hide_pending=True)
plt.show()

# %% [markdown]
# The CPU model's `Mbarrier` follows the PTX ISA's rules; on a fresh barrier:

# %%
bar = mp.Mbarrier(2, "empty[0]")
print("fresh barrier:", bar, "| test_wait(parity 1):", bar.test_wait(1), "| test_wait(parity 0):",
      bar.test_wait(0))
bar.arrive()
bar.arrive()
print("after 2 arrivals:", bar, "| test_wait(parity 0):", bar.test_wait(0))
assert bar.test_wait(0) and not bar.test_wait(1) and bar.phase == 1

# %% [markdown]
# ## 2. The kernel, from its source
#
# `asynctc/kernels/pipeline.cu`, driven by `asynctc.pipeline`. The steady state, per k-tile k:
#
# 1. wait on full;
# 2. issue the k-tile's wgmmas as one group;
# 3. `wgmma.wait_group<kPending>` (leave kPending groups in flight);
# 4. release k-tile r = k − kPending on empty;
# 5. in the producer thread, refill that stage with k-tile r + S.

# %%
notebook.show_source("pipeline.cu", start=r"^  for \(int k = 0; k < T; \+\+k\) \{",
                     end=r"^      __syncwarp\(\);")

# %% [markdown]
# **Names**, e.g. `float16 128x256x64/c2 s4 B:K`: CTA tile 128×256×64 (BK = 64, one
# k-tile), 2 consumer warpgroups, S = 4 stages, B K-major (`B:MN`: MN-major). Every name then ends
# in a `waitN` part, which is Exercise 1's subject and is explained just after it. The rarer parts,
# which section 4's verdicts use:
#
# | part | means |
# |---|---|
# | `/2cta` | built for two resident CTAs per SM (registers kept low enough); two independent CTAs, not a [cluster](../docs/glossary.md#cluster) |
# | `l2:256B` | the tensor maps ask TMA to fetch L2 lines in 256-byte units (*L2 promotion*: the tensor map's `CUtensorMapL2promotion` field) |
# | `out:float16` | C's dtype (fp32 otherwise) |
# | `(2)` after a TFLOP/s number | that many CTAs were resident per SM (no mark: one) |
#
# The full legend: [05c](05c_pipeline_variants.ipynb) §1.
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
if runtime.runs_live("sm_90a"):
    for cfg in (pl.PipelineConfig(bm=128, bn=256, consumers=2, stages=4),
                pl.PipelineConfig(dtype="bfloat16", bm=128, bn=128, consumers=1, stages=3, b_major="MN")):
        chk = pl.verify_pipeline(cfg, 512, 768, 1024)
        print(f"live: {cfg.label():40s} worst |C−ref|/bound {chk.worst:.3f}, wrong {chk.wrong}, "
              f"unwritten {chk.unwritten}")
        assert chk.passed
checks = res["checks"]
print(f"{rec.label()}: {sum(c['passed'] for c in checks)}/{len(checks)} recorded checks passed, "
      f"{len({(c['bm'], c['bn'], c['consumers']) for c in checks})} tiles, worst |C−ref|/bound "
      f"{max(c['worst_ratio'] for c in checks):.3f}")
assert all(c["passed"] for c in checks)

# %% [markdown]
# ## 4. Measured: the depth sweep beside cuBLAS
#
# The record swept 1–6 stages (as many as fit in shared memory) for three tiles, fp16 and bf16, at
# 4096³ and 8192³, with cuBLAS timed in the same run. The plot shows fp16; a hollow, dashed series is
# a `/2cta` build in its base tile's colour.

# %% output varies
fig = pl.plot_depth(res, "float16", record=rec)
plt.show()
print(rec.label())
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
        head = f"{size}³ {dt}: {pl.row_label(b)}, {ratio:.2f} of cuBLAS"
        notebook.verdict(ratio >= goal[size], f"{head}: goal {goal[size]:.2f} reached.",
                         f"{head}: goal {goal[size]:.2f} NOT reached.")

# %% [markdown]
# ## 5. Why it stops rising
#
# With one stage every load is exposed: load, wait, compute. Each further stage puts one more load
# under the math.
#
# That works until the loads arrive as fast as the path into the SM delivers them. Past that, depth
# adds nothing. From the record (128×256, fp16, 4096³, and the timeline recorded inside the
# *first-wave CTAs*: the first CTAs launched, each on its own SM, which start together before any
# CTA has finished):

# %% output varies
meas = {r["stages"]: r["tflops"] for r in res["sweep"] if r["kernel"] == "pipeline"
        and r["tile"] == "128x256x64/c2" and r["dtype"] == "float16" and r["size"] == 4096}
best_s = max(meas, key=meas.get)
metrics = {t["stages"]: t["metrics"] for t in res["traces"] if t["tile"] == "128x256x64/c2"}[best_s]
per_k = metrics["mean"]["loop_cycles"] / metrics["k_tiles"]
kt_peak = pl.ktile_peak_cycles(pl.PipelineConfig(bm=128, bn=256, consumers=2))
wait_full = metrics["mean"]["wait_full_fraction"]
notebook.claim(meas[1] < meas[2] < meas[3] and abs(meas[4] / meas[3] - 1) < 0.05,
               f"Depth: {meas[1]:.0f} → {meas[2]:.0f} → {meas[3]:.0f} → {meas[4]:.0f} TFLOP/s for S = 1 → 4; "
               f"S = 4 adds {meas[4] / meas[3] - 1:+.1%}.", m1=meas[1], m2=meas[2], m3=meas[3], m4=meas[4])
_ = notebook.claim(per_k > 1.8 * kt_peak and wait_full > 0.15,
                   f"At S = {best_s}, in the traced first-wave CTAs, a k-tile takes {per_k:.0f} cycles "
                   f"against {kt_peak:.0f} of Tensor Core work, and the consumers wait on full barriers "
                   f"{wait_full:.0%} of the loop, while a wgmma group is nearly always outstanding.",
                   cycles=per_k, peak=kt_peak, wait_full=wait_full)
ms = next(r["median_ms"] for r in res["sweep"] if r["kernel"] == "pipeline" and r["tile"] == "128x256x64/c2"
          and r["dtype"] == "float16" and r["size"] == 4096 and r["stages"] == best_s)
avg_k = (ms * 1e-3 * res["clocks_after"]["max_sm_mhz"] * 1e6
         / (-(-(4096 // 128) * (4096 // 256) // res["sm_count"]) * (4096 // 64)))   # at most, per SM
_ = notebook.claim(abs(meas[4] / meas[3] - 1) < 0.05 and wait_full > 0.15 and per_k > avg_k,
                   f"So what this record supports: at S = {best_s} the consumers still wait on full "
                   f"barriers {wait_full:.0%} of the loop, yet S = 4 adds only {meas[4] / meas[3] - 1:+.1%} "
                   "over S = 3: more stages no longer make the data arrive sooner. What sets that pace "
                   "(the L2 → SM path, or wgmmas slowed by the loads) the trace cannot separate, and the "
                   "traced first-wave CTAs, which start together, run slower than the kernel's average "
                   "k-tile; deep dive 05b compares the two and fits a cap on the L2 → SM path to the "
                   "sweep.", s3=meas[3], s4=meas[4], wait_full=wait_full, traced=per_k, average=avg_k)

# %% [markdown]
# A CPU model predicted this curve before the kernel first ran; how it fared:
# [05b](05b_pipeline_timeline.ipynb). Why the 128×128 curves drop after S = 3:
# [05c](05c_pipeline_variants.ipynb).

# %% [markdown]
# ## 6. Exercises
#
# (Exercise 1, groups pending, is in section 2.) Wrong answers get a hint.
#
# **2.** With a ring of **S = 3** stages, which parity does a consumer wait on full[13 mod 3] for
# k-tile **13**?

# %%
answer = ...
ok = exercises.check("ch05.full_parity", answer, k=13, stages=3)

# %% [markdown]
# **3.** With S = 3, which parity does the producer wait on empty[t mod 3] before loading k-tile
# **t = 7**? Give that parity (0 or 1) as your answer. Then work out, on paper, the parity before
# k-tile **t = 2** (the first pass); the solutions cell checks both.

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
