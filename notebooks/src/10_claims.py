# %% [markdown]
# # 10 — "% of peak": which peak?
#
# Papers and tutorials, the [seed article](../docs/glossary.md#seed-article) among them, often give
# a kernel's speed as "% of peak" without saying which peak. There are two (chapter 00 §2), and one
# kernel can meet a claim under one and miss it under the other.
#
# **Learning goal.** You will be able to
#
# 1. compute a kernel's fraction of peak under both denominators: the datasheet's 989.4 TFLOP/s
#    (dense FP16) and SMs × 4096 FLOP/clk/SM × the SM clock measured while it ran;
# 2. say why the two differ on this GPU, and which of a row's clocks goes in the second;
# 3. judge a claim stated as "% of peak" under both; the worked examples are the seed's 4096³ table.
#
# No kernel runs here: the cells read the other chapters' records. Deep dive
# [10b](10b_claims_in_full.ipynb) sets every other number of the seed article beside ours.

# %% output varies
import matplotlib.pyplot as plt

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
# ## 1. Two peaks
#
# A fraction of peak is the achieved rate over SMs × FLOP/clk/SM × an SM clock (the cell below
# computes both). The two peaks differ only in that clock:
#
# | peak | clock | H200, dense FP16 |
# |---|---|---|
# | **datasheet** | the boost clock, 1830 MHz | 989.4 TFLOP/s |
# | **at the measured clock** | the SM clock read while the kernel ran | 132 × 4096 × that clock |
#
# Neither is wrong: the datasheet says how much of the rated speed you got; the measured clock,
# how busy the Tensor Cores were. (A row's second clock:
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
_ = notebook.claim(mhz < boost and f["measured"] > f["datasheet"],
                   f"Its clock ({kind}) ran under the datasheet's {boost} MHz, so its fraction at the "
                   f"measured clock is the larger of the two.", sm_mhz=mhz, **f)
after = top.get("sm_mhz_after")                  # the second clock printed
if after and kind in bench.CLOCK_KINDS[:2]:
    fa = tf / (sm * 4096 * after * 1e6 / 1e12)
    _ = notebook.claim(boost < after and fa < f["datasheet"],
                       f"The second clock ({bench.CLOCK_KINDS[2]}) read {after:.0f} MHz, above the boost clock: "
                       f"at that clock the fraction would be {fa:.3f}, the smallest of the three. The first is "
                       "what the chip ran at.", after=after, at_after=fa,
                       datasheet=f["datasheet"])

# %% [markdown]
# ## 2. Judging a "% of peak" claim under both
#
# A claim such as "75–80 % of peak" gives a **band**, 0.75–0.80, read here with ±0.005. Each
# denominator gives one **part**: inside the band it holds, outside it does not. The claim's
# verdict follows from its parts: both hold → "holds", one → "partly", neither → "does not hold".
# Above the band is outside too: a band is not a floor.

# %%
holds, partly, fails = claims.VERDICTS[:3]
print(" / ".join((holds, partly, fails)))
assert claims.combine([claims.Part("datasheet", holds), claims.Part("measured clock", fails)]) == partly
assert claims.combine([claims.Part("datasheet", fails), claims.Part("measured clock", fails)]) == fails

# %% [markdown]
# **The worked examples.** Each claim of the seed's 4096³ FP16 table beside our kernel under both
# denominators, then the three 4096³ steps worked (which kernel, both divisions):

# %% output varies
cl = claims.evaluate(recs)
_ = claims.check_written(cl, claims.evaluate_anchors(recs))   # the verdicts this text assumes
steps = {"gemm_mma_sync": "mma.sync", "gemm_ws": "warp specialization", "gemm_tuned": "tuned"}
print(claims.percent_text(cl))
print()
print(claims.percent_worked(cl, steps))
kinds = sorted({r["clock"] for r in claims.percent_rows(cl) if r["clock"]})
if bench.clock_caveat(" / ".join(kinds)):
    print(bench.clock_caveat(" / ".join(kinds)))
fig = claims.fractions_figure(cl, title=f"From the records in data/ — {wrec.label()}")
plt.show()

# %% [markdown]
# What the denominator changes:

# %% output varies
rows = {r["key"]: r for r in claims.percent_rows(cl)}
by = {c.key: c for c in cl}
notebook.claim(all(rows[k]["verdict_datasheet"] == claims.FAILS for k in steps),
               "Under the datasheet: " + ", ".join(f"{w} {rows[k]['datasheet']:.3f}" for k, w in steps.items())
               + " — each outside its band.", **{k: rows[k]["datasheet"] for k in steps})
notebook.claim(rows["gemm_ws"]["verdict_measured"] == claims.HOLDS and by["gemm_ws"].verdict == partly
               and by["gemm_mma_sync"].verdict == by["gemm_tuned"].verdict == fails,
               f"At the measured clock warp specialization reaches {rows['gemm_ws']['measured']:.3f}, "
               "inside 75–80 %: that claim gets \"partly\"; the ~50 % and ~85 % ones do not hold.",
               measured=rows["gemm_ws"]["measured"])
cub = claims.fractions(seed.cublas_row(wrec), wrec.provenance["sm_count"])
_ = notebook.claim(cub["datasheet"] < 0.85 - 0.005,
               f"cuBLAS in the same run: {cub['datasheet']:.3f} of the datasheet, below the seed's 85 % "
               f"(at its measured clock: {cub['measured']:.3f}).", cublas_datasheet=cub["datasheet"])

# %% [markdown]
# ## Exercises
#
# Wrong answers get a hint that names the mistake.
#
# **1. Both denominators.** The cell below prints one row of the `warp_specialization` record that
# no table above shows: chapter 06's rung 3 (two consumer warpgroups and setmaxnreg) at **8192³**.
# Compute its fraction of peak under both denominators (the measured clock: the in-flight one, not
# the row's second clock). Answer `(datasheet fraction, measured-clock fraction)`.

# %% output varies
row = seed.ladder_row(wrec, 3, size=8192)[1]
print(f"{row['label']} at 8192³: {row['tflops']:.1f} TFLOP/s, SM clock {bench.clock_text(row)}, {sm} SMs")

# %%
answer = ...
ok = exercises.check("ch10.fraction_both", answer, tflops=row["tflops"], sm_mhz=row["sm_mhz"],
                     sm_count=sm, sm_mhz_after=row.get("sm_mhz_after"))

# %% [markdown]
# **2. The verdict.** Judge this 8192³ row by the seed's band for "wgmma + TMA + warp
# specialization", 75–80 % of peak, within ±0.005 as section 2 judges. From your two fractions of
# exercise 1, which verdict does this chapter give? Answer with one of the three verdicts printed
# in section 2, as a string. (The check recomputes the fractions from the row.)

# %%
answer = ...
ok = exercises.check("ch10.verdict", answer, tflops=row["tflops"], sm_mhz=row["sm_mhz"], sm_count=sm,
                     low=0.75, high=0.80)

# %% [markdown]
# **What you learned:** a "% of peak" needs its denominator; the datasheet's and the measured
# clock's can give one kernel two verdicts, so judge a claim under both. **Next:** deep dive
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
