# %% [markdown]
# # 10 — How to read a performance claim
#
# A speed claim ("80 % of [peak](../docs/glossary.md#peak)", "750 TFLOP/s") means little until you
# know how it was measured. Ask four questions:
#
# | ask | why | this course |
# |---|---|---|
# | which clock? | a peak moves with the SM clock | both peaks, the clock's kind |
# | L2 flushed? | else a rerun reads L2, not DRAM | once per sample |
# | median, spread? | one run hides the noise | median, p10–p90 |
# | equal work? | the baseline needs the same shape, dtype, day | cuBLAS, same run |
#
# Here they are asked of the [seed article](../docs/glossary.md#seed-article): a public tutorial on
# asynchronous Tensor Core programming with a "% of peak" per step of its 4096³ GEMM. It stays
# unnamed: the course judges its claims, restated in our words, only by our records; the method is
# the lesson.
#
# **Learning goal.** Ask those questions of a claim from a record; compute a fraction under both
# peaks; judge a "% of peak" claim under both, and say how near a miss is. No kernel runs here.
# Deep dive [10b](10b_claims_in_full.ipynb) sets every other number of the seed article beside ours.

# %% output varies
import matplotlib.pyplot as plt

from asynctc import claims
from asynctc.claims import seed
from asynctc.core import bench, exercises, notebook

notebook.banner("sm_90a")
recs = claims.load_records()
labels = {s: rec.label() if rec else "no record here" for s, rec in recs.items()}
for label in dict.fromkeys(labels.values()):     # grouped by GPU, driver and date
    print(f"{label}: {', '.join(s for s, lab in labels.items() if lab == label)}")

# %% [markdown]
# ## 1. The four questions, asked of our top rung
#
# A fraction of peak divides by a [peak](../docs/glossary.md#peak): SMs × 4096 FLOP/clk/SM × a
# clock. The datasheet's uses the 1830 MHz boost clock (989.4 TFLOP/s); the course's, the SM clock
# measured while the kernel ran (chapter 00 §2). Neither is wrong: the first says how much of the
# rated speed you got, the second how busy the Tensor Cores were. (A row's second clock:
# [00b](00b_clock_kinds.ipynb) §1.) Chapter 06's top rung, worked:

# %% output varies
wrec = recs["warp_specialization"]
sm, boost = wrec.provenance["sm_count"], bench.DATASHEET["boost_mhz"]
top = seed.ladder_row(wrec)[1]
n, mhz, kind = top["size"], top["sm_mhz"], bench.clock_kind(top)
tf = 2 * n**3 / (top["median_ms"] * 1e-3) / 1e12               # 2·M·N·K FLOP / seconds
sheet = bench.DATASHEET["dense_tflops"]["float16"]             # 132 × 4096 × 1830 MHz
peak_at = sm * 4096 * mhz * 1e6 / 1e12                         # the same at the measured clock
f = {"datasheet": tf / sheet, "measured": tf / peak_at}
print(f"chapter 06's top rung at {n}³: 2·{n}³ / {top['median_ms']:.4f} ms = {tf:.0f} TFLOP/s, "
      f"SM clock {bench.clock_text(top)}")
print(f"  datasheet:        {tf:.0f} / {sheet:.1f} = {f['datasheet']:.3f}")
print(f"  measured clock:   {tf:.0f} / ({sm} × 4096 × {mhz:.0f} MHz = {peak_at:.0f}) = {f['measured']:.3f}")
cb = seed.cublas_row(wrec)                                     # cuBLAS, timed in the same run
flushed = {"sample": "once per sample", "launch": "before each launch"}.get(top["flush"], "no")
print(f"  L2 flushed: {flushed} ({top['launches_per_sample']} launches a sample); median of "
      f"{top['reps']} samples, p10–p90 spread {bench.row_spread(top):.1%}")
fc = claims.fractions(cb, sm)
print(f"  equal work: cuBLAS at {n}³ {top['dtype']}, same run: {cb['tflops']:.0f} TFLOP/s = "
      f"{fc['datasheet']:.3f} of the datasheet, {fc['measured']:.3f} at its clock")
_ = notebook.claim(mhz < boost and f["measured"] > f["datasheet"],
                   f"Its clock ({kind}) ran under the datasheet's {boost} MHz, so its fraction at the "
                   f"measured clock is the larger of the two.", sm_mhz=mhz, **f)
after = top.get("sm_mhz_after")                  # the second clock printed
if after and kind in bench.CLOCK_KINDS[:2]:
    fa = tf / (sm * 4096 * after * 1e6 / 1e12)
    _ = notebook.claim(boost < after and fa < f["datasheet"],
                       f"At the second clock ({bench.CLOCK_KINDS[2]}, {after:.0f} MHz, above the boost) it "
                       f"would be {fa:.3f}: not the clock the chip ran at.", after=after, at_after=fa,
                       datasheet=f["datasheet"])

# %% [markdown]
# ## 2. Judging a claim: inside its band, or how near
#
# A claim such as "75–80 % of peak" gives a **band**, 0.75–0.80, read with ±0.005, as the article
# writes its figures to the percent ("85 %": 0.85 ± 0.005); an "about" keeps the digits it gives
# ("~50 %": 45–55 %). Each denominator gives one **part**, which holds inside the band; outside, the chapter
# says how near it came. The claim's verdict follows from its parts: both hold → "holds", one →
# "partly", neither → "does not hold". A band is not a floor: above it is outside too.

# %%
holds, partly, fails = claims.VERDICTS[:3]
print(" / ".join((holds, partly, fails)))
for x in (0.838, 0.73):                          # against "85 %"
    print(f"{x} against 85 %: {claims.near_text(x, 0.85, 0.85, 0.005)}")
assert claims.combine([claims.Part("datasheet", holds), claims.Part("measured clock", fails)]) == partly
assert claims.combine([claims.Part("datasheet", fails), claims.Part("measured clock", fails)]) == fails

# %% [markdown]
# **The worked examples.** The seed's 4096³ FP16 table beside our kernels (which ones: below the
# table), under both denominators:

# %% output varies
cl = claims.evaluate(recs)
_ = claims.check_written(cl, claims.evaluate_anchors(recs))   # the verdicts this text assumes
steps = {"gemm_mma_sync": "mma.sync", "gemm_ws": "warp specialization", "gemm_tuned": "tuned"}
print(claims.percent_text(cl) + "\n\n" + claims.percent_worked(cl, steps))
fig = claims.fractions_figure(cl, title=f"From the records in data/ — {wrec.label()}")
plt.show()

# %% [markdown]
# What the denominator changes:

# %% output varies
rows = {r["key"]: r for r in claims.percent_rows(cl)}
by = {c.key: c for c in cl}
_ = notebook.claim(all(rows[k]["verdict_datasheet"] == claims.FAILS for k in steps),
               "Under the datasheet: " + ", ".join(f"{w} {rows[k]['datasheet']:.3f}" for k, w in steps.items())
               + " — each outside its band.", **{k: rows[k]["datasheet"] for k in steps})
_ = notebook.claim(rows["gemm_ws"]["verdict_measured"] == claims.HOLDS and by["gemm_ws"].verdict == partly
               and by["gemm_mma_sync"].verdict == by["gemm_tuned"].verdict == fails,
               f"At the measured clock warp specialization reaches {rows['gemm_ws']['measured']:.3f}, "
               f"inside 75–80 %: \"partly\". Tuned's {rows['gemm_tuned']['measured']:.3f} "
               f"{rows['gemm_tuned']['near_measured']}; mma.sync {rows['gemm_mma_sync']['near_measured']}.",
               measured=rows["gemm_ws"]["measured"])

# %% [markdown]
# ## Exercises
#
# **1. Both denominators.** The cell below prints chapter 06's rung 3 (two consumer warpgroups,
# setmaxnreg) at **8192³**, a row no table above shows. Compute its fraction of peak under both
# denominators (at the in-flight clock, not the row's second one). Answer
# `(datasheet fraction, measured-clock fraction)`.

# %% output varies
row = seed.ladder_row(wrec, 3, size=8192)[1]
print(f"{row['label']} at 8192³: {row['tflops']:.1f} TFLOP/s, SM clock {bench.clock_text(row)}, {sm} SMs")

# %%
answer = ...
ok = exercises.check("ch10.fraction_both", answer, tflops=row["tflops"], sm_mhz=row["sm_mhz"],
                     sm_count=sm, sm_mhz_after=row.get("sm_mhz_after"))

# %% [markdown]
# **2. The verdict.** By the seed's 75–80 % band (±0.005) for "wgmma + TMA + warp
# specialization", which verdict do your two fractions give this row? One of section 2's three
# verdicts, as a string.

# %%
answer = ...
ok = exercises.check("ch10.verdict", answer, tflops=row["tflops"], sm_mhz=row["sm_mhz"], sm_count=sm,
                     low=0.75, high=0.80)

# %% [markdown]
# **What you learned:** four questions to ask of a speed claim; a "% of peak" needs its clock,
# and a miss its distance. **Next:** deep dive
# [10b](10b_claims_in_full.ipynb): the seed's other claims beside our numbers.

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
                     low=0.75, high=0.80, solution=True)    # section 2's rule over the two parts
