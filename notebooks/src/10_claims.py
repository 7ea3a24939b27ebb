# %% [markdown]
# # 10 — Reproduce and bound a claim
#
# A speed claim such as "our kernel reaches 0.99 of cuBLAS" is one number from one run. This
# chapter treats a claim the course itself made as a careful reader treats anyone's.
#
# **Learning goal.** (1) Say what a claim must fix to be reproduced; (2) bound it from repeated
# runs, each timed beside its baseline; (3) state the verdict as a clause and a number, and what
# would flip it. No kernel runs here. The runs are the records in `data/`.
#
# **Where we are.** From chapter 00 on, the course timed each kernel beside a baseline in the same
# run. It kept each run as a record in `data/`. Chapter 06 ended on a claim: its top rung against
# cuBLAS.
#
# **In plain words.** A measured speed is one sample of a moving target: clocks, runs and
# baselines all shift it. To trust a claim, rerun it the same way, time its baseline beside it,
# and see how far repeated runs spread.
#
# Going further: deep dive [10b](10b_claims_in_full.ipynb), "% of peak" under two denominators,
# judged against bands, and every number of the [seed article](../docs/glossary.md#seed-article) beside ours.

# %% output varies
import numpy as np

from asynctc import claims
from asynctc.claims import bounds, lesson, seed
from asynctc.claims.figures import bound_figure
from asynctc.core import bench, exercises, notebook

notebook.banner("sm_90a")
recs = claims.load_records()
wrec = recs["warp_specialization"]
print(wrec.label())

# %% [markdown]
# ## 1. What must be reproduced
#
# Runs differ. Each record is one run, at its own SM clock. So even cuBLAS's TFLOP/s at one shape
# differs a little between chapters that quote different runs.
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
# The record behind the claim answers the first three. Its `clock:` line gives the SM clock our
# kernel ran at, then, in parentheses, how it was read: [chapter 00](00_why_async.ipynb) §2
# defines these kinds, [in flight](../docs/glossary.md#in-flight) among them. The second clock in
# those parentheses was read once the Tensor Cores rested and the card had clocked up, so it can
# pass the 1830 MHz boost ([00b](00b_clock_kinds.ipynb)); no peak uses it. The ratio is this run's
# cuBLAS time over ours.

# %% output varies
print(lesson.record_answers(wrec))
top, cb = seed.ladder_row(wrec)[1], seed.cublas_row(wrec)
print(f"ratio = {cb['median_ms']:.5f} / {top['median_ms']:.5f} = {cb['median_ms'] / top['median_ms']:.3f}")

# %% [markdown]
# Launches 2–6 of a sample start with what the launch before left in L2, and for this claim that
# matters little: A, B and C at 4096³ fp16 take 96 MiB, more than the L2 holds, each launch re-reads
# every tile many times, and cuBLAS is timed the same way in the same run. What a rerun must fix is
# this protocol, not a cold L2 at every launch.
#
# The ratio has no peak in it: both times come from one run. A "% of peak" has one, and a peak
# has a clock. The course's [peak](../docs/glossary.md#peak) is SMs × FLOP per SM per clock × the
# SM clock measured while the kernel ran. The datasheet's peak uses the 1830 MHz boost clock, one
# number for every run.
#
# This run's SM clock stayed below the boost clock, so its own peak is lower than the datasheet's
# and the fraction of it is higher.

# %% output varies
sms, per_clk, boost = wrec.provenance["sm_count"], bench.FLOP_PER_CLK_PER_SM["float16"], bench.DATASHEET["boost_mhz"]
for name, mhz in (("course (in flight)", top["sm_mhz"]), ("datasheet (boost)", boost)):
    peak = sms * per_clk * mhz / 1e6                  # FLOP per clock × MHz = 10^6 FLOP/s; in TFLOP/s
    print(f"{name:18s} {sms} × {per_clk} × {mhz:.0f} MHz = {peak:.0f} TFLOP/s; ours",
          notebook.ratio(top["tflops"], peak, digits=3))

# %% check
notebook.require(top["sm_mhz"] < boost, "This run's SM clock stayed below the boost clock, so its own peak is "
                 "lower than the datasheet's and the fraction of it is higher.", sm_mhz=top["sm_mhz"], boost=boost)

# %% [markdown]
# ## 2. Bound it: every run that timed both
#
# Three records timed the top rung and cuBLAS in the same run, two of them in three rounds. Each
# row gives one ratio. The bound runs from the lowest ratio to the highest. Inside one row, the
# samples spread too: their **p10–p90** is the range from the 10th to the 90th percentile.
#
# **Predict before you look.** The runs were hours or days apart, at different clocks. Which moves
# more between them: our TFLOP/s, or the ratio to cuBLAS timed beside it? Guess both in %.

# %% output answers a prediction
pairs = bounds.same_run_pairs(recs, 4096, "float16")
print(bounds.table(pairs))                            # one row per run and round that timed both
ours_ms, cublas_ms = bounds.medians_ms(pairs)         # each row's two medians of one run
r = cublas_ms / ours_ms                               # each row's ratio, inside its run
med, lo, hi = np.median(r), min(r), max(r)            # the bound is [lo, hi]: the lowest and highest row
print(f"\nratio (each row's cuBLAS ms / ours ms): median {med:.3f}, interval [{lo:.4f}, {hi:.4f}] "
      f"over {len(pairs)} pairs in {bounds.run_count(pairs)} runs")
spread = [b - a for a, b in map(bounds.rep_interval, pairs)]   # each row's p10–p90 of the ratio over its samples
n = [p["reps"] for p in pairs]                        # each row's sample count
moves = [s / k ** 0.5 for s, k in zip(spread, n)]     # about how far a median of n samples moves
i = int(np.argmax(moves))                             # the row whose median moves most
print(f"widest inside one pair ({pairs[i]['suite']} round {pairs[i]['round']}): {spread[i]:.4f} / √{n[i]} = "
      f"{moves[i]:.4f}, against the pairs' spread {hi:.4f} − {lo:.4f} = {hi - lo:.4f}")
print("verdict:", "the runs, not the reps, set the bound" if moves[i] < hi - lo else "the reps' noise is as wide as the bound")

# %% [markdown]
# **Try it:** change `n` to `[1] * len(pairs)` (one sample a row) and rerun. Predict: do the
# runs or the reps set the bound?
#
# **Derive it.** Our TFLOP/s moves exactly as our time does. The cell reads each pair's two medians,
# `ours_ms` and `cublas_ms`. Each is a record's `median_ms` for that row in that run.

# %% output answers a prediction
print(f"between runs: our time moved {max(ours_ms) / min(ours_ms) - 1:.1%}, the same-run ratio {max(r) / min(r) - 1:.1%}")

# %% answer [markdown]
# Our TFLOP/s moved 2.0 %, about four times as far as the ratio's 0.5 %. The MHz column says why:
# a slower clock slows cuBLAS too, and the ratio cancels most of it. A same-run ratio travels; a
# TFLOP/s does not.
#
# Inside one pair the samples scatter too. But a median of n samples moves about 1/√n as far
# as one sample. The cell's `widest` line takes the pair where that is widest, with its own sample
# count. In the `samples` column, §1's record took 10, the later two 20. Even that widest
# spread stays under the pairs' spread, so the runs, not the reps, set the bound. It bounds these
# runs, not the next one: a new run may land outside it (pairs from one run are not independent).

# %% check
assert lesson.runs_set_the_bound(pairs)

# %% [markdown]
# ## 3. The verdict, and what would flip it
#
# Two kinds of claim, two rules.
#
# * A **value** claim ("0.99") holds when the value, read to its written digits, touches the
#   interval, *even at one end only*: the number itself may lie outside. "0.99" reads 0.985–0.995.
# * An **order** claim, such as "beats cuBLAS" (above 1), holds when the whole interval lies above.
#   It does not hold when the whole lies at or below. It is **not settled** when it straddles.
#
# Why a range? A writer who rounds 0.986 writes "0.99". Fewer digits read wider: the claim holds
# more easily, and says less.
#
# **Predict first:** against §2's bound, which verdict does each claim get, "0.99 of cuBLAS" and "beats cuBLAS"?

# %% output answers a prediction
said = {"0.99 of cuBLAS": bounds.verdict(lo, hi, value=0.99, digits=2),   # reads 0.985–0.995
        "beats cuBLAS": bounds.verdict(lo, hi, above=1.0)}          # needs the whole interval above 1
print(f"bound [{lo:.4f}, {hi:.4f}]:", "; ".join(f'"{k}" {v}' for k, v in said.items()))
x_lo, x_hi = min(cublas_ms) / max(ours_ms), max(cublas_ms) / min(ours_ms)   # cuBLAS's fastest / our slowest, and back
us = 1000                                                   # ms → µs, so the operands show their digits
print("paired across runs:", notebook.ratio(min(cublas_ms) * us, max(ours_ms) * us, "µs", 3), "to",
      notebook.ratio(max(cublas_ms) * us, min(ours_ms) * us, "µs", 3))

# %% check
notebook.require(list(said.values()) == ["holds", "does not hold"] and x_lo < lo - 0.01 and 1 < x_hi,
                 "the answer below: both verdicts and the across-run ends", x_lo=x_lo, x_hi=x_hi)

# %% answer [markdown]
# Here "0.99 of cuBLAS" holds and "beats cuBLAS at 4096³" does not. The `VALUE`/`DIGITS` cell
# further down tries other values.
#
# Paired across runs, the same times read from 0.970, well below the bound's low end, to 1.005,
# above 1. So a baseline from another run can flip either verdict.

# %% [markdown]
# The same, drawn: each pair's ratio with its samples' spread, the bound shaded, the reading of
# "0.99" hatched, a red line at 1, and the two cross-run ends.

# %% output answers a prediction
import matplotlib.pyplot as plt

fig = bound_figure(pairs, value=0.99, digits=2, title="\"0.99 of cuBLAS\" at 4096³ fp16, against its bound")
plt.show()

# %% [markdown]
# **Predict, then change `VALUE` to 0.98 and run the cell:** "0.98" reads 0.975–0.985. Which
# verdict does the cell print? Then set `VALUE, DIGITS = 0.986, 3`, then `DIGITS = 1`. How much
# does each one say?

# %% output answers a prediction
VALUE, DIGITS = 0.99, 2                  # the claim's number, and the decimals it is written with
a, b = bounds.reading(VALUE, DIGITS)     # the value as written, ± half a unit of its last digit
print(f"{VALUE:.{DIGITS}f} reads {a:.{DIGITS + 1}f}–{b:.{DIGITS + 1}f} against the bound "
      f"[{lo:.4f}, {hi:.4f}]: {bounds.verdict(lo, hi, value=VALUE, digits=DIGITS)}")

# %% answer [markdown]
# **So:** a claim written with `DIGITS` decimals cannot tell apart the values whose readings all
# touch the bound. At one digit, 0.986 is "1.0": it reads 0.95–1.05, and says little. Exercise 3
# asks you to list such values by hand.

# %% [markdown]
# **Play** (ungraded). Rebind `pairs = [p for p in pairs if p["suite"] != "ws_limit"]`, recompute
# `lo, hi` with `bounds.bound(p["ratio"] for p in pairs)[1:]` and rerun the lever: which values
# are left? Then take `bounds.same_run_pairs(recs, 8192, "float16")`: what does
# `bounds.verdict(lo, hi, above=1.0)` say there?
#
# On a GPU: `python -m asynctc record ws_limit --no-save` re-measures the `ws_limit` pairs: compare
# its "of cuBLAS" lines with those pairs' `p["ratio"]`.

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
# **3. What it may say.** A value claim writes the ratio with two decimals. Which values so
# written does your interval support? Use §3's value rule, by hand: a written value stands for
# every number that rounds to it. Answer every one, as numbers, in any order.

# %%
answer = ...
ok = exercises.check("ch10.values_hold", answer, pairs=times, digits=2)

# %% [markdown]
# Once it passes, `bounds.values_that_hold(low, high, digits)` does the same listing for any bound.

# %% [markdown]
# **What you learned:** a claim is reproduced at its size, dtype, clock and baseline; bounded by the
# spread of runs, not of reps; and judged as a value or an order, with a number; the fewer digits a
# value claim writes, the more values it admits. **Next:** deep
# dive [10b](10b_claims_in_full.ipynb): "% of peak" claims and the seed article's numbers.

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
r = [c / o for o, c in times]                              # each pair's ratio, inside its run
ok = exercises.check("ch10.bound", (min(r), max(r)), pairs=times, solution=True)
word = "holds" if min(r) > 1 else "does not hold" if max(r) <= 1 else "not settled"
ok = exercises.check("ch10.bound_verdict", word, pairs=times, above=1.0, solution=True)
low, high = min(r), max(r)                                 # exercise 1's interval
held = [v / 100 for v in range(80, 121) if (v + 0.5) / 100 >= low and (v - 0.5) / 100 <= high]   # v ± 0.005 touches it
ok = exercises.check("ch10.values_hold", held, pairs=times, digits=2, solution=True)
