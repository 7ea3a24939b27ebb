# %% [markdown]
# # 02 — `cp.async`: copies that run while the warps compute
#
# **In plain words.** A thread can now start a copy into shared memory and walk away while it
# travels. So the next slices of A and B can be on their way while the warps multiply this one.
# The catch: nothing stops a thread from reading a slot before its copy has landed, so the
# chapter's real subject is knowing when the data is there.
#
# **Learning goal.** Keep several k-tiles' copies in flight while the warps compute, know when each
# one has landed, and measure what that buys.
#
# **The story.** In chapter 01 each warp waits on its own data. It loads a k-tile into registers,
# stores it to shared memory, and only then computes. **`cp.async`** is Ampere's asynchronous
# copy (`LDGSTS` in SASS). With it a thread *issues* a 16-byte copy from global straight into
# shared memory, and goes on working. A ring of [stages](../docs/glossary.md#stage) keeps the copies
# in flight: shared-memory buffers, one k-tile each.
#
# Deep dive: [02b — the Luo et al. microbenchmark](02b_cp_async_microbenchmark.ipynb).

# %% output varies
import math

import numpy as np
import matplotlib.pyplot as plt

from asynctc import cp_async, cp_async_figures, cp_async_ring, cp_async_show, mma_sync
from asynctc.core import exercises, notebook, plots, records, sass

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. The instructions, and when the data is there
#
# `cp.async.cg.shared.global [dst], [src], 16` starts a 16-byte copy. It bypasses L1, the SM's own
# cache, and never touches a register. The course wraps it in one line of inline PTX:

# %%
notebook.show_source("ptx/cp_async.cuh", start=r"^// 16 bytes global -> shared, L2 only", end=r"^}")

# %% [markdown]
# The instruction returns at once. That is the point, and the problem. Below is a
# [CPU model](../asynctc/cp_async_ring.py) of one thread's ring of 4 stages. Like §2's kernel, it
# issues 3 copies before its loop, then one per iteration, and never waits. Each copy lands 1300
# clocks after it is issued. A k-tile's math takes 600. Each read is then multiplied into a small
# GEMM.

# %%
print(cp_async_ring.show(stages=4, wait=None, latency=1300, work=600))   # clocks

# %% [markdown]
# The first three k-tiles were read before anything had landed in their slots. The product is
# wrong, and nothing said so. On a GPU the same race depends on timing, so it can pass a test and
# fail the next run.
#
# Two more instructions tell a thread when its copies are there:
#
# | PTX | what it does |
# |---|---|
# | `cp.async.commit_group` | closes a **commit group**: the copies this thread issued since its last commit |
# | `cp.async.wait_group N` | waits until at most the N newest groups of this thread are pending |
#
# `wait_group 0` is always safe, since it waits for every copy. But it also waits for copies of
# later k-tiles, which should stay in flight. A wait covers only the calling thread's copies. So
# the CTA still needs a `__syncthreads()` before it reads what other threads copied. Source: the
# PTX ISA, *cp.async*.

# %% [markdown]
# ## 2. The multistage GEMM
#
# `asynctc/kernels/cp_async.cu` is chapter 01's kernel with the data path changed:
#
# ```
# chapter 01:  global ──LDG──▶ registers ──STS──▶ shared ──LDSM──▶ fragments ──HMMA──▶ acc
# chapter 02:  global ──────LDGSTS (cp.async)────▶ shared ring of STAGES k-tiles ──LDSM──▶ …
#              copies of k-tile kt+STAGES−1 in flight while k-tile kt is multiplied
# ```
#
# The bookkeeping:
#
# * A *prologue* runs before the loop. It issues the copies of k-tiles 0 … STAGES−2, one group each.
# * Each iteration commits one more group: k-tile `kt+STAGES-1`, or an empty group near the end.
# * Before computing on k-tile `kt`, a thread must know that *its* copies of `kt` have landed. The
#   copies of later k-tiles should stay in flight, or the ring buys nothing.
#
# **Predict before you read the loop.** This is exercise 1. With 4 stages, which N must the kernel
# pass to `cp.async.wait_group N` before computing on k-tile `kt`? Count the groups committed before
# that wait, and how many of them may still be in flight.

# %%
answer = ...
ok = exercises.check("ch02.wait_n", answer, stages=4)

# %% [markdown]
# The main loop, step by step:
#
# 1. Wait until this thread's copies of k-tile `kt` have landed.
# 2. Meet at the barrier. Everyone's copies are now visible, and last iteration's slot is free.
# 3. Issue the copies of k-tile `kt+STAGES-1` into that slot, and commit.
# 4. Compute.
#
# With one stage there is nothing to overlap. The kernel then takes its own `#if STAGES == 1`
# loop: copy, `wait_group<0>`, sync, compute, sync. These are §4's `/s1` rows. The `wait_group`
# line below answers exercise 1, and so does the model's timeline after it, a panel per N. A black
# tick marks when a k-tile lands; its compute may not start before it.

# %% output answers a prediction
ck = cp_async.compile_cp_async("float16", cp_async.DEFAULT_TILE)
if exercises.after("ch02.wait_n"):
    display(notebook.show_source(ck, start=r"// Prologue: k-tiles 0", end=r"^  cp_async_wait_all"))
    runs = {f"wait_group {n}: {why}": cp_async_ring.run(4, n) for n, why in
            ((0, "right, but the copies of later k-tiles are waited for too"),
             (2, "right, and two groups stay in flight under the math"),
             (3, "k-tile 0 is read before it lands"))}
    fig = cp_async_figures.plot_group_timeline(runs, stages=4)
    plt.show()
    print("With N = 2 the compute runs back to back once the ring is full. With N = 0 each thread also\n"
          "waits for the copies it issued one k-tile earlier, so a hatched wait appears at every k-tile. With\n"
          "N = 3 the first read comes too early. In slot 0 the bars only touch: even `wait_group 3` waits for\n"
          "k-tile 0 before k-tile 4's copy into its slot is issued.")

# %% [markdown]
# ### SASS: the register hop is gone
#
# Chapter 01 loads with `LDG` and stores with `STS`. The cp.async kernel has neither. `LDGSTS`
# does both in one instruction. `LDGDEPBAR` is the commit, and `DEPBAR` the wait.

# %% output varies
names = ("LDG", "STS", "LDGSTS", "LDGDEPBAR", "DEPBAR")
print(" " * 10, *(f"{x:>9}" for x in names))
n = {}                                                    # n[kernel][name]: its SASS count
for kernel, k in (("chapter 01", mma_sync.compile_mma_sync("float16")), ("cp.async", ck)):
    ops = [op.split(".")[0] for op in sass.instructions(k.sass())]   # opcodes without modifiers
    n[kernel] = {x: ops.count(x) for x in names}
    print(f"{kernel:10}", *(f"{v:>9}" for v in n[kernel].values()))

# %% check
c1, c2 = n["chapter 01"], n["cp.async"]
notebook.require(c1["LDG"] > 0 and c1["STS"] > 0 and c1["LDGSTS"] == 0,
                 "chapter 01 loads with LDG and stores with STS", **c1)
notebook.require(c2["LDG"] == c2["STS"] == 0 and c2["LDGSTS"] > 0,
                 "the cp.async kernel has neither; LDGSTS does both", **c2)
notebook.require(c2["LDGDEPBAR"] > 0 and c2["DEPBAR"] > 0,
                 "LDGDEPBAR is the commit, and DEPBAR the wait", **c2)

# %% [markdown]
# Going further: [02b §2](02b_cp_async_microbenchmark.ipynb) sizes each ring's shared memory and
# its copy traffic.

# %% [markdown]
# ## 3. Correctness first
#
# Every tile and stage count is checked against float64, as in chapter 01. The tolerance is the
# [elementwise bound](../docs/glossary.md#elementwise-bound), scaled by |A|·|B|.

# %% output varies
rec = records.load_or_measure("cp_async", cp_async.measure_cp_async)
# a sample of the checks; raises if any failed
cp_async_show.checks(rec)   # notebook.how(cp_async_show.checks) prints its code

# %% [markdown]
# ## 4. Measured: stages 1–4, beside chapter 01 and cuBLAS
#
# The k-tile depth BK is 64 or 32, with one to four stages.
#
# **Try it: count.** K is 4096. With one stage, a CTA waits once per k-tile. How many waits is
# that with BK = 64, and with BK = 32? How many FLOP of its 128×128 tile come after each wait?
# <details><summary>Answer</summary>4096 / 64 = 64 waits, and 4096 / 32 = 128. A k-tile is
# 2 × 128 × 128 × BK FLOP: 2.1 M with BK = 64, 1.0 M with BK = 32.</details>
#
# **Exercise 2 — predict before you look.** Past two stages, does another stage help at BK = 64
# (a gain over 1 %)? And which BK gains more from a ring, its best row over its one-stage row?
# Answer `("yes" or "no", 64 or 32)`.
# The check reads the record: on another GPU the answer may differ.

# %% output varies
prediction = ...
ok = exercises.check("ch02.stages", prediction, results=rec.results)

# %% output answers a prediction
at = [r for r in rec.results["sweep"] if (r["size"], r["dtype"]) == (4096, "float16")]   # this run's rows
base = max(r["tflops"] for r in at if r["kernel"] == "mma.sync")   # chapter 01's kernel, TFLOP/s
cb = max(r["tflops"] for r in at if r["kernel"] == "cuBLAS")
tf, tile = {}, {}                     # cp.async by (BK, stages): TFLOP/s, and the configuration's name
for r in at:
    if r["kernel"] == "cp.async":
        tf[r["bk"], r["stages"]], tile[r["bk"], r["stages"]] = r["tflops"], r["tile"]
best, *tied = cp_async.fastest(tf)   # tied: within 1 %
if exercises.after("ch02.stages", held="the stage figure", tried=True):
    fig = plots.ladder(list(tile.values()), list(tf.values()), baseline=base, record=rec, title="Stages at 4096³ fp16",
                       baseline_label="chapter 01", baseline_legend=f"chapter 01's kernel, timed in this run: {base:.0f} TFLOP/s")
    plt.show()
    print(f"best configuration {' and '.join(tile[k] for k in [best, *tied])}{' (a tie)' * bool(tied)}: {notebook.ratio(tf[best], base, 'TFLOP/s')}× chapter 01 "
          f"(its kernel, re-timed in record {rec.suite}), {notebook.ratio(tf[best], cb)} of cuBLAS")

# %% output answers a prediction
note = {(64, 1): "1. copy, wait, compute", (32, 1): "2. BK = 32: twice the waits", (64, 4): "3. one CTA per SM"}
two3 = max(tf[64, 2], tf[64, 3])                                 # BK = 64: the better of two and three stages
r01 = mma_sync.compile_mma_sync("float16").resources.registers   # registers per thread: chapter 01's kernel
r1 = cp_async.compile_cp_async("float16", cp_async.TILES[0]).resources.registers   # and BK = 64, one stage
ring = {bk: max(tf[bk, s] for s in (1, 2, 3, 4)) for bk in (64, 32)}   # each BK's best stage count, TFLOP/s
if exercises.after("ch02.stages", held="the stage table and its notes", tried=True):
    print("BK  stages  CTAs/SM  TFLOP/s  × ch. 01  note")
    for bk, st in sorted(tf, key=lambda k: (-k[0], k[1])):    # BK = 64 first; st: stages
        ctas = 2 if "/2cta" in tile[bk, st] else 1          # a name ending /2cta: two CTAs share an SM
        print(f"{bk:2d} {st:7d} {ctas:8d} {tf[bk, st]:8.0f} {tf[bk, st] / base:9.2f}  {note.get((bk, st), '')}".rstrip())
    print(f"1. {notebook.ratio(tf[64, 1], base, 'TFLOP/s')}× chapter 01, {r1} registers per thread to its {r01}.")
    print(f"2. {notebook.ratio(tf[32, 1], base, 'TFLOP/s')}× chapter 01; "
          f"{notebook.ratio(tf[best], base)}× with {' or '.join(str(k[1]) for k in [best, *tied])} stages, the best.")
    print(f"3. {notebook.ratio(tf[64, 4], two3, 'TFLOP/s')}× the best of two or three stages ({tf[64, 4] / two3 - 1:+.0%}).")
    print("; ".join(f"BK = {bk}: {notebook.ratio(ring[bk], tf[bk, 1], 'TFLOP/s')}" for bk in ring))   # ring / one stage

# %% answer [markdown]
# **What moved, and why.** The table numbers three rows:
#
# 1. **BK = 64, one stage.** Each CTA copies, waits, then computes. Only the SM's second CTA
#    (`/2cta`) computes in the meantime. Chapter 01 also paid a register hop (`LDG`, `STS`).
#
# 2. **BK = 32, one stage.** Its k-tiles are half as deep, so it waits as often again for the
#    same math. A ring in flight helps it most.
#
# 3. **BK = 64, four stages.** The ring is so large that only one CTA fits on an SM. No second
#    CTA covers its waits.

# %% check
notebook.require(tf[64, 1] > 1.03 * base and r1 < r01 and "/2cta" in tile[64, 1] and mma_sync.DEFAULT_TILE.min_blocks == 2,
                 "note 1 under the stage table, and point 1 above",
                 one_stage=tf[64, 1], chapter01=base)
notebook.require(tf[32, 1] < base and all(bk == 32 and st > 1 for bk, st in [best, *tied]),
                 "note 2 under the stage table, and point 2 above",
                 one_stage_bk32=tf[32, 1], best=tf[best])
notebook.require("/2cta" not in tile[64, 4] and tf[64, 4] < 0.95 * two3,
                 "note 3 under the stage table, and point 3 above", four_stages=tf[64, 4], two3=two3)
notebook.require(ring[32] / tf[32, 1] > ring[64] / tf[64, 1], "point 2 above: which BK a ring helps most",
                 gain32=ring[32] / tf[32, 1], gain64=ring[64] / tf[64, 1])

# %% [markdown]
# **How many stages does the latency need?** At BK = 32, do the kernel's 4 stages cover the copy
# latency: yes or no? Decide, then run the cell. The bytes on their way must cover the latency:
# latency × the bytes per clock the math eats. Divide by one stage's bytes, round up, then add
# the stage being computed. The math eats 1 byte per 64 FLOP (00 §4); the rate is §4's best row.
# `latency` = 1300 clocks is §1's model's value. It came from the latency
# [02b §3](02b_cp_async_microbenchmark.ipynb) fits to this record's BK = 32, one-stage row, rounded
# to hundreds and written into §1's model so that §1 runs without a record. The cell prints that
# fit beside it: their agreeing checks the rounding, and is no evidence for it.

# %% output answers a prediction
mhz = next(r["sm_mhz"] for r in at if r["kernel"] == "cp.async" and (r["bk"], r["stages"]) == best)
latency = 1300                                     # clocks from issue to landing: §1's model, 02b §3's fit rounded
fitted = cp_async.design(32, 1, rec).latency      # 02b §3's L, fitted to this record
feed = tf[best] * 1e12 / 64 / (rec.provenance["sm_count"] * mhz * 1e6)   # B/clk per SM the math eats
bk = 32
kt_bytes = (128 + 128) * bk * 2                    # one k-tile: A's 128×BK and B's BK×128, fp16
in_flight = latency * feed / kt_bytes              # stages on their way
stages = math.ceil(in_flight) + 1                  # + the one being computed
if exercises.after("ch02.stages", held="the arithmetic, which uses the best row's rate", tried=True):
    print(f"{latency} clk × {feed:.1f} B/clk / {kt_bytes} B = {in_flight:.1f} stages in flight; ⌈{in_flight:.1f}⌉ + 1 = {stages}")
    print(f"BK = {bk}: {stages} stages,", "within the kernel's 4" if stages <= 4 else "more than the kernel's 4")
    print(f"(latency: §1's model {latency} clk; 02b §3's fit to this record {fitted:.0f} clk)")

# %% [markdown]
# **Try it:** predict, then change `latency` to 2600 and rerun: do the kernel's 4 stages still
# cover it?

# %% check
need = [math.ceil(lat * tf[best] * 1e12 / 64 / (rec.provenance["sm_count"] * mhz * 1e6) / 16384) + 1
        for lat in (1300, 2600)]                   # the record's rate, not the editable `feed`
notebook.require(need[0] <= 4 < need[1], "at BK = 32 the kernel's 4 stages cover 1300 clocks, not 2600",
                 stages_1300=need[0], stages_2600=need[1])
notebook.require(round(fitted, -2) == 1300, "1300 is 02b §3's fitted latency rounded to hundreds", fitted=fitted)

# %% [markdown]
# <details><summary>About these numbers</summary>
#
# One run timed every configuration and cuBLAS on the same inputs, L2 flushed before each sample.
#
# </details>
#
# Going further: [02b §2–§4](02b_cp_async_microbenchmark.ipynb) models this table and asks why
# it stays below chapter 01's ceiling.
#
# **Play** (ungraded, no GPU needed). In a new cell:
#
# * `print(cp_async_ring.show(stages=4, wait=2, latency=2600))` doubles the copy latency. From
#   which k-tile does the [consumer](../docs/glossary.md#consumer) (the math) wait? Try `stages=2`.
# * `cp_async_ring.run(4, 1)[-1].end - cp_async_ring.run(4, 2)[-1].end` gives the clocks a
#   too-strict wait loses. Raise `latency=`, and compare §4's one- and four-stage rows.
#
# On a GPU, `python -m asynctc record cp_async --no-save` reruns §4's stage sweep in about 43 s.
# Compare its 4096³ lines with §4's rows.

# %% [markdown]
# ## Exercises
#
# Exercises 1 and 2 are the predictions in sections 2 and 4. A wrong answer gets a hint.
#
# **3.** A ring of stages has to fit in shared memory. An SM has 228 KiB (233472 B). The driver
# reserves 1 KiB of it per CTA.
#
# For 128×64×32 fp16 k-tiles, what is the largest number of stages whose ring fits one CTA on an
# SM? The kernel itself stops at 4. The question is what shared memory allows.

# %%
answer = ...
ok = exercises.check("ch02.ring_smem", answer, bm=128, bn=64, bk=32, ctas=1)

# %% [markdown]
# **Then, try it:** §4's BK = 64 tile is 128×128×64, a 32 KiB stage, and its table rows show
# `CTAs/SM`. With two CTAs on an SM, how many stages fit each? The table's `CTAs/SM` column
# checks you: a row with more stages than fit runs one CTA per SM.

# %% [markdown]
# <details><summary>Solutions (run in CI)</summary>The cells below are the worked solutions.</details>

# %%
# k-tile kt is in group kt (prologue: STAGES-1 groups; one more per iteration); at iteration kt,
# STAGES-1+kt groups are committed, and groups kt+1 .. kt+STAGES-2 may stay in flight.
exercises.check("ch02.wait_n", 4 - 2, stages=4, solution=True)
src = cp_async.compile_cp_async("float16", cp_async.CpAsyncTile(128, 128, 32, 64, 64, stages=4)).source_text()
print("the kernel's wait is wait_group<STAGES - 2>:", "cp_async_wait_group<STAGES - 2>" in src)
stage_bytes = (128 * 32 + 32 * 64) * 2                  # one A tile and one B tile, fp16
exercises.check("ch02.ring_smem", (233472 - 1024) // stage_bytes, bm=128, bn=64, bk=32, ctas=1,
                solution=True)
# 19 stages would be 233472 B, the whole SM: the 1 KiB reservation costs one. With two CTAs per SM
# and 128×128×64 k-tiles (32 KiB a stage) the same sum gives 3: so section 4's 4-stage BK = 64
# tile runs one CTA per SM (no /2cta in its name)
print((233472 // 2 - 1024) // 32768, [t.name for t in cp_async.TILES if t.stages == 4])

# %% output varies
speed = {(r["bk"], r["stages"]): r["tflops"] for r in cp_async.stage_table(rec.results)}   # TFLOP/s, 4096³ fp16
helps = "yes" if max(speed[64, 3], speed[64, 4]) > 1.01 * speed[64, 2] else "no"   # BK = 64: a stage past two faster?
gain = {bk: max(speed[bk, s] for s in (1, 2, 3, 4)) / speed[bk, 1] for bk in (64, 32)}   # best row / one stage
exercises.check("ch02.stages", (helps, max(gain, key=gain.get)), results=rec.results, solution=True)

# %% [markdown]
# ## Worklog

# %% output answers a prediction
from asynctc.core import worklog

worklog.show("02")

# %% [markdown]
# **What you learned.** `cp.async` groups and waits, and the ring's bookkeeping.
# **Next:** [chapter 03](03_tma_mbarrier.ipynb).
