# %% [markdown]
# # 10 — Reproduce and bound a claim
#
# A speed claim such as "our kernel reaches 0.99 of cuBLAS" is one number from one run. This
# chapter treats a claim the course itself made as a careful reader treats anyone's.
#
# **Learning goal.** (1) Say what a claim must fix to be reproduced; (2) bound it from repeated
# runs, each timed beside its baseline; (3) state the verdict as a clause and a number, and what
# would flip it. No kernel runs here; the runs are the records in `data/`.
#
# **In plain words.** A measured speed is one sample of a moving target: clocks, runs and
# baselines all shift it. To trust a claim, rerun it the same way, time its baseline beside it,
# and see how far repeated runs spread. Then give the verdict with a number, and say what would
# change it.
#
# Deep dive [10b](10b_claims_in_full.ipynb): "% of peak" under two denominators, judged against
# bands, and every number of the [seed article](../docs/glossary.md#seed-article) beside ours.

# %% output varies
from asynctc import claims
from asynctc.claims import bounds, lesson, seed
from asynctc.claims.figures import bound_figure
from asynctc.core import exercises, notebook

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
# The record behind the claim answers the first three. The ratio is cuBLAS's time over ours. A
# second clock, read once the Tensor Cores stop, can pass the 1830 MHz rated under load ([00b](00b_clock_kinds.ipynb)).

# %% output varies
print(lesson.record_answers(wrec))
top, cb = seed.ladder_row(wrec)[1], seed.cublas_row(wrec)
print(f"ratio = {cb['median_ms']:.5f} / {top['median_ms']:.5f} = {cb['median_ms'] / top['median_ms']:.3f}")

# %% [markdown]
# The ratio has no peak in it: both times come from one run. A "% of peak" has one, and a peak
# has a clock. The course's [peak](../docs/glossary.md#peak) is 132 SMs × 4096 FLOP per SM per
# clock × the SM clock measured while the kernel ran. The datasheet's is the same product at the 1830 MHz
# boost clock, one number for every run. The course's moves with each run's clock, so chapter
# 06's peaks differ from this one: its rows ran at their own clocks.
#
# This run's SM clock stayed below the boost clock, so its own peak is lower than the datasheet's
# and the fraction of it is higher. The second clock on the `clock:` line above was read once the
# work had stopped ([chapter 00](00_why_async.ipynb) §2): not the kernel's clock, so no peak
# uses it.

# %% output varies
assert lesson.show_peaks(wrec)

# %% [markdown]
# ## 2. Bound it: every run that timed both
#
# Three records timed the top rung and cuBLAS in the same run, two of them in three rounds. Each
# row gives one ratio. The bound runs from the lowest ratio to the highest.
#
# **Predict before you look.** The runs were hours or days apart, at different clocks. Which moves
# more between them: our TFLOP/s, or the ratio to cuBLAS timed beside it? Guess both in %.

# %% output answers a prediction
pairs = bounds.same_run_pairs(recs, 4096, "float16")
med, lo, hi = lesson.show_bound(pairs)

# %% [markdown]
# **Derive it.** Our TFLOP/s moves exactly as our time does. The cell reads each pair's two medians,
# `ours_ms` and `cublas_ms` (each record's `median_ms` for our row and cuBLAS's row in that run).

# %% output varies
ours = [p["ours_ms"] for p in pairs]
r = [p["cublas_ms"] / p["ours_ms"] for p in pairs]
print(f"between runs: our time moved {max(ours) / min(ours) - 1:.1%}, the same-run ratio {max(r) / min(r) - 1:.1%}")

# %% [markdown]
# Our TFLOP/s moved 2.0 %, about four times as far as the ratio's 0.5 %. The MHz column says why:
# a slower clock slows cuBLAS too, and the ratio cancels most of it. A same-run ratio travels; a
# TFLOP/s does not.
#
# Inside one pair the samples scatter too, but a median of n samples moves about 1/√n as far as
# one sample. The table's last line takes the pair where that is widest, with its own sample count
# (the `samples` column: §1's record took 10, the later two 20). It stays under the pairs' spread,
# so the runs, not the reps, set the bound.

# %%
assert lesson.runs_set_the_bound(pairs)

# %% [markdown]
# ## 3. The verdict, and what would flip it
#
# Two kinds of claim, two rules.
#
# * A **value** claim ("0.99") holds when the value, read to the digits it is written with, meets
#   the interval. Written "0.99", it reads 0.985–0.995.
# * An **order** claim ("beats cuBLAS", i.e. above 1) holds when the whole interval lies above.
#   It does not hold when the whole lies at or below. It is **not settled** when it straddles.
#
# Why a range: a writer who rounds 0.986 writes "0.99". Fewer digits read as a wider range: the
# claim holds more easily and says less. So write as many digits as the bound supports.
#
# Here: "0.99 of cuBLAS" holds. "Beats cuBLAS at 4096³" does not hold.
#
# Paired across runs, the same times read from 0.970, well below the bound's low end, to 1.005,
# above 1. So a baseline from another run can flip either verdict. The last line prints the two
# divisions behind that range.

# %% output varies
assert lesson.show_verdicts(pairs, value=0.99, digits=2)

# %% [markdown]
# The same, drawn: each pair's ratio with its samples' spread as a bar, the bound shaded, the
# reading of "0.99" hatched, a red line at 1, and the two ends a baseline from another run gives.

# %% output varies
import matplotlib.pyplot as plt

fig = bound_figure(pairs, value=0.99, digits=2, title="\"0.99 of cuBLAS\" at 4096³ fp16, against its bound")
plt.show()

# %% [markdown]
# **Predict, then change `VALUE` to 0.98 and rerun:** which verdict does the cell print? Then
# set `VALUE, DIGITS = 0.986, 3`, then `DIGITS = 1`. The cell also lists every value written with
# `DIGITS` decimals that holds: how much does each one say?

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
