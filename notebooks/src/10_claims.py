# %% [markdown]
# # 10 — Claims checked: the seed article's numbers beside ours
#
# The **seed article** is the public tutorial on asynchronous Tensor Core programming that this
# course was asked to check: we restate its claims in our own words (`asynctc.claims.seed`), and
# neither name nor quote it. Checking such claims is a skill worth a lesson, because "80 % of peak"
# means little until you know which peak it divides by, and the two usual peaks can give one kernel
# two verdicts.
#
# **Learning goal.** Read a performance claim the way this course reads its own. You will be able to
#
# 1. take each claim to the chapter and record that test it, and read the verdict;
# 2. compute a fraction of peak under **both** denominators, the datasheet's 989 TFLOP/s (dense
#    FP16) and SMs × 4096 FLOP/clk/SM × the SM clock measured during the run, and say why their
#    verdicts can differ;
# 3. say what the course has not measured, and what would measure it.
#
# This chapter runs no kernel: it reads the records the other chapters wrote (`data/<gpu>/*.json`),
# so live and replay print the same. Deep dive [10b](10b_claims_in_full.ipynb): the public numbers
# the course cites (its *anchors*) beside ours, and every part of every claim.

# %% output varies
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from asynctc import claims
from asynctc.claims import seed
from asynctc.core import bench, exercises, notebook

notebook.banner("sm_90a")
recs = claims.load_records()
by_label = {}                                    # grouped by GPU, driver and date
for suite, rec in recs.items():
    by_label.setdefault(rec.label() if rec else "no record here", []).append(suite)
for label, suites in by_label.items():
    print(f"{label}: {', '.join(suites)}")

# %% [markdown]
# ## 1. How a verdict is made
#
# Each statement is cut into **parts**. A part tests one number from one record against a
# **band**: the one the statement gives ("30–50 %", "1.5–2×"), or, for a vague word, the reading
# printed beside it ("a few cycles" as at most 10, "tens of KB" as 10–99 KiB). Each part gets one of
# the words below. A statement whose parts are all in their band gets the first word, none in
# band the third, a mix "partly".

# %%
print(" / ".join(claims.VERDICTS))
assert claims.combine([claims.Part("a", claims.HOLDS), claims.Part("b", claims.FAILS)]) == claims.PARTLY
assert claims.combine([claims.Part("a", claims.FAILS), claims.Part("b", claims.NOT_MEASURED)]) == claims.FAILS

# %% [markdown]
# A part the course has not measured is marked so, with what would measure it. Parts that need a
# Blackwell GPU say so: the records here are Hopper's. Nothing is guessed.
#
# **Two denominators.** The seed writes "% of peak" without saying which peak:
#
# * the **datasheet** peak (`bench.DATASHEET`): 989.4 TFLOP/s, 132 SMs at a 1830 MHz boost clock;
# * the peak **at the measured clock**: SMs × 4096 FLOP/clk/SM × the SM clock read during that
#   run, printed with the clock's kind (deep dive [00b](00b_clock_kinds.ipynb) §1).
#
# Under load the H200's clock runs below 1830 MHz, so one TFLOP/s figure is a larger fraction of
# the second. Every "% of peak" statement below is judged under both.

# %% output varies
wrec = recs["warp_specialization"]
sm, boost = wrec.provenance["sm_count"], bench.DATASHEET["boost_mhz"]
top = seed.ladder_row(wrec)[1]
f = claims.fractions(top, sm)
print(f"chapter 06's top rung at 4096³: {top['tflops']:.0f} TFLOP/s, SM clock {bench.clock_text(top)}")
_ = notebook.claim(f["sm_mhz"] < boost and f["measured"] > f["datasheet"],
                   f"Its clock ({f['clock']}) ran under the datasheet's {boost} MHz, so its fraction at the "
                   f"measured clock ({f['measured']:.3f}) is the larger of the two (datasheet: {f['datasheet']:.3f}).",
                   sm_mhz=f["sm_mhz"], measured=f["measured"], datasheet=f["datasheet"])
after = top.get("sm_mhz_after")                  # the second clock printed
if after and f["clock"] in bench.CLOCK_KINDS[:2]:
    fa = top["tflops"] / bench.peak_tflops(sm, after)
    _ = notebook.claim(boost < after and fa < f["datasheet"],
                       f"The second clock ({bench.CLOCK_KINDS[2]}) read {after:.0f} MHz, above the boost clock: "
                       f"at that clock the fraction would be {fa:.3f}, the smallest of the three. The first is "
                       "what the chip ran at.", after=after, at_after=fa,
                       datasheet=f["datasheet"])

# %% [markdown]
# ## 2. The summary: every claim, what we measured, the verdict
#
# One row per claim, in the seed's order; in "partly: 2 of 3 …" the numbers count its parts. A
# fraction of peak is the datasheet's, then (in brackets) the one at the measured clock. Deep dive
# [10b](10b_claims_in_full.ipynb) lists every part, with the chapter and record it comes from.

# %% output varies
cl = claims.evaluate(recs)
an = claims.evaluate_anchors(recs)
_ = claims.check_written(cl, an)      # the verdicts the text below assumes
display(Markdown(claims.summary_markdown(cl)))

# %% [markdown]
# ## 3. The "% of peak" statements, under both denominators
#
# The seed's 4096³ FP16 table gives mma.sync ~50 %, wgmma + TMA + warp specialization 75–80 %,
# ~85 % after swizzle and depth tuning, above 90 % on Blackwell; and "30–50 % busy" for
# synchronous kernels. Bands are read with ±0.005 (as deep dive 07d reads them). Per statement:
# our kernel, its fraction of the datasheet, its fraction at its measured clock, and the clock's
# kind.

# %% output varies
print(claims.percent_text(cl))
print()
print(bench.clock_caveat(" / ".join(sorted({r["clock"] for r in claims.percent_rows(cl) if r["clock"]}))) or
      "(every measured clock above was read during the work)")

# %% [markdown]
# What the denominator changes:

# %% output varies
rows = {r["key"]: r for r in claims.percent_rows(cl)}
steps = ("gemm_mma_sync", "gemm_ws", "gemm_tuned")
notebook.claim(all(rows[k]["verdict_datasheet"] == claims.FAILS for k in steps),
               "Datasheet denominator: " + ", ".join(f"{k} {rows[k]['datasheet']:.3f}" for k in steps)
               + " — each outside its band.", **{k: rows[k]["datasheet"] for k in steps})
notebook.claim(rows["gemm_ws"]["verdict_measured"] == claims.HOLDS,
               f"Measured clock: the warp-specialized rung at {rows['gemm_ws']['measured']:.3f} of "
               f"the peak at its clock ({rows['gemm_ws']['clock']}), inside 75–80 %.",
               measured=rows["gemm_ws"]["measured"])
cub = claims.fractions(seed.cublas_row(wrec), wrec.provenance["sm_count"])
_ = notebook.claim(cub["datasheet"] < 0.85 - 0.005,
               f"cuBLAS in the same run: {cub['datasheet']:.3f} of the datasheet, below the seed's 85 % "
               f"(at its measured clock: {cub['measured']:.3f}).", cublas_datasheet=cub["datasheet"])

# %% [markdown]
# ## 4. The picture
#
# Every claim's band (grey) beside our number, in two figures. First the fractions of peak: ●
# under the datasheet, ▲ at the measured clock; ✕ marks an anchor's own number.

# %% output varies
fig = claims.fractions_figure(cl, an, title=f"From the records in data/ — {wrec.label()} (and the "
                              "other suites' records listed at the top)")
plt.show()

# %% [markdown]
# Then the ratios, one row per part: green when ours is inside the statement's band (or matches the
# anchor within its tolerance), red when outside, purple when above or below the anchor's ✕.

# %% output varies
fig = claims.ratios_figure(cl, an)
plt.show()

# %% [markdown]
# The public numbers the course cites as anchors (Gluon, fast.cu, Luo et al., DeepGEMM) beside ours,
# and every part of every statement in full: deep dive [10b](10b_claims_in_full.ipynb).

# %% [markdown]
# ## 5. What could not be measured here
#
# Each part below is "not measured here" or needs Blackwell. Each says what would measure it and,
# where a suite exists, the defines to run it with. Until then the course takes no side.

# %% output varies
print(claims.not_measured_text(cl, an))

# %% [markdown]
# ## Exercises
#
# Wrong answers get a hint that names the mistake.
#
# **1. Both denominators.** The cell below prints one row of the `warp_specialization` record that
# no table above shows: chapter 06's rung 3 (two consumer warpgroups and setmaxnreg) at **8192³**.
# Compute its fraction of peak under both denominators: the datasheet's 989.4 TFLOP/s, and 132 SMs ×
# 4096 FLOP/clk/SM × its measured clock — the in-flight one, read while the kernel ran, not the
# second clock the row prints (deep dive 00b §1 defines both). Answer `(datasheet fraction,
# measured-clock fraction)`.

# %% output varies
row = seed.ladder_row(wrec, 3, size=8192)[1]
print(f"{row['label']} at 8192³: {row['tflops']:.1f} TFLOP/s, SM clock {bench.clock_text(row)}, {sm} SMs")

# %%
answer = ...
ok = exercises.check("ch10.fraction_both", answer, tflops=row["tflops"], sm_mhz=row["sm_mhz"],
                     sm_count=sm, sm_mhz_after=row.get("sm_mhz_after"))

# %% [markdown]
# **2. The verdict.** Judge this 8192³ row by the seed's band for "wgmma + TMA + warp
# specialization", 75–80 % of peak, judged within ±0.005 as section 3 judges. From your two
# fractions of exercise 1, which verdict does this chapter give? Answer with one of the first three
# verdicts printed in section 1, as a string. (The check recomputes the fractions from the row.)

# %%
answer = ...
ok = exercises.check("ch10.verdict", answer, tflops=row["tflops"], sm_mhz=row["sm_mhz"], sm_count=sm,
                     low=0.75, high=0.80)

# %% [markdown]
# **What you learned:** a "% of peak" needs its denominator; a verdict comes from a record and its
# band. **Next:** deep dive [10b](10b_claims_in_full.ipynb) (the public anchors, every part in
# full), or section 5's open parts, each with what would measure it.

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
d = row["tflops"] / 989.4                                  # the datasheet's dense FP16 peak
m = row["tflops"] / (sm * 4096 * row["sm_mhz"] * 1e-6)     # SMs × FLOP/clk/SM × clock, in TFLOP/s
ok = exercises.check("ch10.fraction_both", (d, m), tflops=row["tflops"], sm_mhz=row["sm_mhz"],
                     sm_count=sm, sm_mhz_after=row.get("sm_mhz_after"), solution=True)
inside = [0.75 - 0.005 <= x <= 0.80 + 0.005 for x in (d, m)]
word = "holds" if all(inside) else "does not hold" if not any(inside) else "partly"
ok = exercises.check("ch10.verdict", word, tflops=row["tflops"], sm_mhz=row["sm_mhz"], sm_count=sm,
                     low=0.75, high=0.80, solution=True)    # section 1's rule over the two parts
