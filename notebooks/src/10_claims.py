# %% [markdown]
# # 10 — Reproduce and bound a claim
#
# A speed claim such as "our kernel reaches 0.99 of cuBLAS" is one number from one run. This
# chapter treats a claim the course itself made as a careful reader treats anyone's.
#
# **Learning goal.** (1) Say what a claim must fix to be reproduced; (2) bound it from repeated
# runs, each timed beside its baseline; (3) state the verdict as a clause and a number, and what
# would flip it. No kernel runs here; the runs are the records in `data/`.
# Deep dive [10b](10b_claims_in_full.ipynb): "% of peak" under two denominators, judged against
# bands, and every number of the [seed article](../docs/glossary.md#seed-article) beside ours.

# %% output varies
from asynctc import claims
from asynctc.claims import bounds, seed
from asynctc.claims.figures import bound_figure
from asynctc.core import bench, exercises, notebook

notebook.banner("sm_90a")
recs = claims.load_records()
wrec = recs["warp_specialization"]
print(wrec.label())

# %% [markdown]
# ## 1. What must be reproduced
#
# The claim: *chapter 06's top rung reaches 0.99 of cuBLAS at 4096³ (fp16).* A rerun must fix
# what moves the number. Four questions:
#
# | ask | why |
# |---|---|
# | same size, dtype, what is timed? | kernel time only, L2 flushed, or a rerun reads L2 |
# | which clock? | times move with the SM clock; a [peak](../docs/glossary.md#peak) too |
# | baseline in the same run? | cuBLAS's own time moves between runs |
# | median, spread, how many runs? | one run hides the noise |
#
# The record behind the claim answers the first three:

# %% output varies
top, cb = seed.ladder_row(wrec)[1], seed.cublas_row(wrec)
n = top["size"]
flushed = {"sample": "once per sample", "launch": "before each launch"}.get(top["flush"], "no")
print(f"size, dtype: {n}³ {top['dtype']}; timed: {top['launches_per_sample']} launches a sample, "
      f"L2 flushed {flushed}, median of {top['reps']} samples")
print(f"clock: {bench.clock_text(top)}")
print(f"baseline: cuBLAS at {n}³, same run: {cb['median_ms']:.5f} ms against ours {top['median_ms']:.5f} ms")
print(f"  ratio = {cb['median_ms']:.5f} / {top['median_ms']:.5f} = {cb['median_ms'] / top['median_ms']:.3f}")
tf = 2 * n**3 / (top["median_ms"] * 1e-3) / 1e12               # 2·M·N·K FLOP / seconds
peak_at = wrec.provenance["sm_count"] * 4096 * top["sm_mhz"] * 1e6 / 1e12   # SMs × FLOP/clk/SM × clock
sheet = bench.DATASHEET["dense_tflops"]["float16"]             # 132 × 4096 × 1830 MHz
print(f"as a % of peak: {tf:.0f} TFLOP/s / {sheet:.1f} (datasheet) = {tf / sheet:.3f}; "
      f"/ {peak_at:.0f} (at its clock) = {tf / peak_at:.3f}")

# %% [markdown]
# The two "% of peak" differ by the clock alone: the datasheet's 1830 MHz, or the one the kernel
# ran at (10b judges claims under both). The second clock in that line is read once the work has
# stopped ([chapter 00](00_why_async.ipynb) §2), so it reads above the in-flight one. The
# datasheet's boost is no cap on either. The ratio to cuBLAS has no peak in it: both times come
# from one run.
#
# ## 2. Bound it: every run that timed both
#
# Three records timed the top rung and cuBLAS in the same run, two of them in three rounds. Each
# row gives one ratio, cuBLAS's median time over ours (above 1, ours is faster). The bound runs
# from the lowest ratio to the highest.

# %% output varies
pairs = bounds.same_run_pairs(recs, 4096, "float16")
print(bounds.table(pairs))
ratios = [p["cublas_ms"] / p["ours_ms"] for p in pairs]
med, lo, hi = bounds.bound(ratios)
runs = len({p["suite"] for p in pairs})
print(f"\nratio: median {med:.3f}, interval [{lo:.4f}, {hi:.4f}] over {len(pairs)} pairs in {runs} runs")
rep = max(b - a for a, b in map(bounds.rep_interval, pairs))     # one pair: the reps' p10–p90
rep_med = max((b - a) / p["reps"] ** 0.5 for (a, b), p in zip(map(bounds.rep_interval, pairs), pairs))
tfl, tfh = min(p["tflops"] for p in pairs), max(p["tflops"] for p in pairs)
_ = notebook.claim(tfh / tfl > 2 * (hi / lo - 1) + 1,
                   f"Between runs our TFLOP/s moved {tfh / tfl - 1:.1%}, the same-run ratio only {hi / lo - 1:.1%}. "
                   f"A same-run ratio travels; a TFLOP/s does not.", tf_move=tfh / tfl - 1, ratio_move=hi / lo - 1)
_ = notebook.claim(rep_med < hi - lo,
                   f"Inside one pair the samples scatter by up to {rep:.3f} of the ratio (p10–p90). A median of "
                   f"n samples spreads about 1/√n as much: at most {rep_med:.3f} here (n = 10–20). So the runs, not the reps, "
                   f"set the bound.", rep=rep, rep_med=rep_med)

# %% [markdown]
# ## 3. The verdict, and what would flip it
#
# * A **value** claim ("0.99") holds when the value, to the digits it is written with
#   (0.985–0.995), meets the interval.
# * An **order** claim ("beats cuBLAS", i.e. above 1) holds when the whole interval lies above,
#   does not when the whole lies at or below, and is **not settled** when it straddles.
#
# The value rule is lenient. A number written with fewer digits reads as a wider range, so it holds
# more easily and claims less.

# %% output varies
v = bounds.verdict(lo, hi, value=0.99, digits=2)
_ = notebook.claim(v == claims.HOLDS,
                   f"\"0.99 of cuBLAS\" {v}: {med:.3f} [{lo:.4f}, {hi:.4f}] of cuBLAS over {len(pairs)} pairs.",
                   lo=lo, hi=hi)
_ = notebook.claim(bounds.verdict(lo, hi, above=1.0) == claims.FAILS,
                   f"\"Beats cuBLAS at 4096³\" does not hold: the highest pair reads {hi:.3f}.", hi=hi)
x_lo, x_hi = bounds.cross_run_extremes(pairs)
_ = notebook.claim(x_hi > 1.0 and x_lo < lo - 0.01,
                   f"Paired across runs, the same times read {x_lo:.3f} to {x_hi:.3f}: a baseline from another "
                   f"run can flip either verdict.",
                   x_lo=x_lo, x_hi=x_hi)

# %% [markdown]
# The same, drawn: each pair's ratio with its samples' spread as a bar, the bound shaded, the
# reading of "0.99" hatched, a red line at 1, and the two ends a baseline from another run gives.

# %% output varies
import matplotlib.pyplot as plt

fig = bound_figure(pairs, value=0.99, digits=2, title="\"0.99 of cuBLAS\" at 4096³ fp16, against its bound")
plt.show()

# %% [markdown]
# **Try it: change `VALUE` and `DIGITS` and re-run.** The cell judges `VALUE`, then lists every
# value written with `DIGITS` decimals that holds. Try `DIGITS = 3`, then 1. How many values hold
# each time, and how much does each one say?

# %% output varies
VALUE, DIGITS = 0.99, 2                  # the claim's number, and the decimals it is written with
h = 0.5 * 10 ** -DIGITS                  # half a unit of its last digit
print(f"{VALUE:.{DIGITS}f} reads {VALUE - h:.{DIGITS + 1}f}–{VALUE + h:.{DIGITS + 1}f} against the bound "
      f"[{lo:.4f}, {hi:.4f}]: {bounds.verdict(lo, hi, value=VALUE, digits=DIGITS)}")
print(f"every value with {DIGITS} decimals that holds: {', '.join(bounds.values_that_hold(lo, hi, DIGITS))}")

# %% [markdown]
# ## Exercises
#
# **1. Bound a second claim:** *"the top rung beats cuBLAS at 8192³ in bf16."* The cell below
# prints every same-run pair at that size and dtype. Answer `(lowest, highest)` of the ratio
# cuBLAS ms / ours ms over the pairs.

# %% output varies
pairs2 = bounds.same_run_pairs(recs, 8192, "bfloat16")
times = [(p["ours_ms"], p["cublas_ms"]) for p in pairs2]           # (ours ms, cuBLAS ms)
for p in pairs2:
    print(f"{p['suite']:20s} round {p['round']}: ours {p['ours_ms']:.5f} ms, cuBLAS {p['cublas_ms']:.5f} ms")

# %%
answer = ...
ok = exercises.check("ch10.bound", answer, pairs=times)

# %% [markdown]
# **2. The verdict.** Which verdict does your interval give the claim: `"holds"`,
# `"does not hold"` or `"not settled"`?

# %%
answer = ...
ok = exercises.check("ch10.bound_verdict", answer, pairs=times, above=1.0)

# %% [markdown]
# **What you learned:** a claim is reproduced at its size, dtype, clock and baseline; bounded by the
# spread of runs, not of reps; and judged as a value or an order, with a number. **Next:** deep
# dive [10b](10b_claims_in_full.ipynb): "% of peak" claims and the seed article's numbers.

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
r = [c / o for o, c in times]                              # each pair's ratio, inside its run
ok = exercises.check("ch10.bound", (min(r), max(r)), pairs=times, solution=True)
word = "holds" if min(r) > 1 else "does not hold" if max(r) <= 1 else "not settled"
ok = exercises.check("ch10.bound_verdict", word, pairs=times, above=1.0, solution=True)
