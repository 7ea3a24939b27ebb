# %% [markdown]
# # 08 — Pitfalls and debugging: a zoo of real bugs
#
# **Learning goal.** Recognise the handful of ways asynchronous Tensor Core code goes wrong, from
# the symptom alone, and have a method that turns "it hangs" or "it is sometimes wrong" into a named
# barrier, stage and k-tile. You will be able to
#
# 1. place a public bug report in one of eleven classes (phase parity, arrive count, init fence,
#    proxy fence, expect_tx, misaligned tile, missing wgmma wait, TMA-store buffer reuse, setmaxnreg
#    dropped, swizzle mismatch, early leader) and say what its fix is;
# 2. reproduce a class in a CPU model (chapter 05's ring, an ordering checker, the layout model)
#    and read its diagnosis;
# 3. run the same bug as a kernel variant that ends with a decoded error — never a hung GPU;
# 4. debug in order: depth 1 first, the in-kernel log, compute-sanitizer (knowing what it misses),
#    and a hangs / wrong / slow table that points into the zoo.
#
# Chapters 03–06 built the protocols correctly. This one breaks them, on purpose and as others
# broke them by accident.

# %% output varies
import numpy as np
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from asynctc import pitfalls as F
from asynctc.core import exercises, notebook, records, runtime
from asynctc.models import pipeline as mp
from asynctc.pitfalls import diagnosis as D, figures, ordering, variants as V, zoo

notebook.banner("sm_90a")
LIVE = runtime.runs_live("sm_90a")


def gpu_outcome(bug):
    """Variant `bug` on the GPU now (live), else its recorded outcome, else 'not recorded yet'."""
    if LIVE:
        return V.run_variant(bug).words + "  [measured now]"
    return D.recorded_outcome(bug)


# %% [markdown]
# ## 1. The story: why these bugs are hard
#
# A synchronous kernel that is wrong is usually wrong every time. An asynchronous one has three
# extra ways to fail, and none of them announces itself:
#
# * **it hangs** — a wait names a phase that never completes (a parity from the wrong counter,
#   one arrival too many expected, expect_tx bytes no copy delivers). The GPU spins until the
#   process is killed; nothing says which barrier.
# * **it is wrong, sometimes** — a stage is read before its bytes landed or overwritten while a
#   wgmma or a TMA store still reads it. Whether that shows depends on timing: most such bugs in
#   the zoo below were found by *reading* the code, and one went unreported by its project's
#   sanitizer pipeline.
# * **it is wrong, always, in a pattern** — the tensor map writes one swizzle and the reader
#   assumes another, or a tile sits off its swizzle repeat: every wait succeeds, the values are
#   permuted inside 128-byte rows.
#
# And one way to be *slow* without being wrong: ptxas dropping `setmaxnreg` with one line in a
# log nobody reads.
#
# Every kernel of this course waits with a **bounded** wait (chapter 03): after a time limit the
# waiting thread writes an error word and the kernel leaves. That one decision turns every hang
# below into a sentence.
#
# ## 2. The zoo
#
# Public reports from CUTLASS, Triton, TileLang, flash-attention, DeepEP, DeepGEMM, nvFuser,
# sglang, cuDNN's frontend and others, by class. "What the reporter saw" is in our words; the
# report is cited by repository and number. The *model* column names the CPU model that diagnoses
# the class (section 3), the *GPU variant* the define of `asynctc/kernels/pitfalls.cu` that
# reproduces it.

# %%
display(Markdown(zoo.table_markdown()))
print(f"{len(zoo.reports())} reports in {len(zoo.CLASSES)} classes; symptoms:",
      {sym: sum(rep.symptom == sym for _, rep in zoo.reports()) for sym in zoo.SYMPTOMS})

# %% [markdown]
# Two things stand out. Many reports are **latent** — found by an audit against the PTX memory
# model, never seen failing — so "my tests pass" proves little for this kind of code. And no public
# report of an expect_tx byte mismatch turned up in the threads we searched, although it is the
# first bug most people write (chapter 05's `run_broken(1)` is one): it hangs at once, so it is
# fixed before anyone files it.
#
# ## 3. The kernel the variants break
#
# One CTA streams boxes of 64 × 64 fp16 through a ring of 2 stages: warp 4's lane 0 is the
# producer (TMA loads on `full[s]`), warps 0–3 the consumers, which copy each box (reading it through
# the 128B swizzle) into an output buffer that thread 0 writes back with a TMA store. Every wait is
# bounded at 0.5 s; on a timeout the thread records *who* gave up, on *which* barrier, stage and
# tile. The consumers' half of one iteration:

# %%
notebook.show_source("pitfalls.cu", start=r"^  // ---- consumer warpgroup", end=r"^  if \(tid == 0\) \{$")

# %% [markdown]
# Each `#if BUG == …` is one zoo class. All eleven builds compile here to sm_90a cubin (NVRTC needs
# no GPU); what a bug removes is visible in the SASS:

# %% output varies
base = V.sass_ops(V.compile_variant(0))
rows = []
for bug, (key, what) in V.BUGS.items():
    if bug == 0:
        continue
    ops = V.sass_ops(V.compile_variant(bug))
    diff = {k: ops.get(k, 0) - base.get(k, 0) for k in set(ops) | set(base)
            if ops.get(k, 0) != base.get(k, 0) and k.split(".")[0] in ("BAR", "FENCE", "DEPBAR", "SYNCS", "MEMBAR", "UTMALDG", "UTMASTG")}
    rows.append(f"| {bug} | {key} | {what} | {', '.join(f'{k} {v:+d}' for k, v in sorted(diff.items())) or 'same instructions, other operands'} |")
display(Markdown("| BUG | class | change | SASS vs the correct kernel |\n|---|---|---|---|\n" + "\n".join(rows)))

# %% [markdown]
# Note the init-fence row: `fence.mbarrier_init.release.cluster` leaves no instruction of its own in
# this (cluster-less) kernel's SASS — what the variant visibly loses is the `__syncthreads` after the
# init. The fence still belongs there: it is what the PTX ISA asks for before TMA's complete_tx or
# another CTA touches the barrier.
#
# ## 4. Four bugs, in the model and on the GPU
#
# ### 4a. A hang: the producer waits on the wrong parity
#
# The producer's first pass waits on `empty[s]` with parity `(t / S + 1) % 2` = 1, "the preceding
# phase", which a fresh barrier counts as complete. Compute it as `(t / S) % 2` instead and it waits
# for phase 0 of a barrier nobody has arrived on yet (the reporter of flash-attention#1317 saw
# phase 0 loop forever where phase 1 worked). Chapter 05's ring model runs the broken protocol on
# the kernel's schedule:

# %%
d = D.pipeline_diagnosis("wrong_empty_parity")
print(d.text)

# %% [markdown]
# The GPU variant (BUG=1) ends the same way: the producer's bounded wait on `empty[0]` at tile 0
# gives up first; the consumers, starved, give up on `full[0]`.

# %% output varies
print("BUG=1:", gpu_outcome(1))

# %% [markdown]
# The model stops at k-tile 0, before anything ran. A bug that blocks later leaves a timeline to read:
# with empty barriers expecting 128 arrivals (threads) where 1 per warpgroup comes (arrive_count),
# the first pass runs and the refill of stage 0 never starts:

# %%
print(D.pipeline_diagnosis("arrive_count_too_big").text)
fig = figures.plot_broken_timeline("arrive_count_too_big")

# %% [markdown]
# ### 4b. A hang with the other barrier: expect_tx bytes no copy delivers
#
# Same symptom, other cause — which is why the diagnosis has to name the barrier. Here the consumers
# block on `full[0]`, whose tx-count never returns to zero. Any excess hangs the same way: chapter
# 05's model announces 1024 bytes too many, the kernel variant (BUG=4) 16:

# %%
print(D.pipeline_diagnosis("expect_tx_too_large").text)

# %% output varies
print("BUG=4:", gpu_outcome(4))

# %% [markdown]
# ### 4c. Wrong every time: a tile 128 bytes off its swizzle repeat
#
# TMA's 128B swizzle XORs address bits [4, 7) with bits [7, 10) of the **absolute** shared-memory
# address. A stage that starts 128 bytes past a 1024 B boundary (say, behind 128 bytes of mbarriers)
# is written with every row's pattern shifted by one row; a reader that swizzles relative to the
# stage base reads every element from the wrong 16-byte chunk (tilelang#2379):

# %%
m = D.layout_mismatch(tma_swizzle=128, reader_swizzle=128, base_offset=128)
print(D.layout_diagnosis("misaligned").text)
assert m["wrong"] == m["total"] and D.layout_mismatch(128, 128, 1024) is None
ax = figures.plot_misplaced(128, 128, 128)

# %% output varies
print("BUG=7: ", gpu_outcome(7))
print("BUG=10:", gpu_outcome(10), "  (reader assumes no swizzle)")

# %% [markdown]
# With the reader assuming *no* swizzle (BUG=10, a descriptor or address formula that disagrees with
# the tensor map) the first misplaced element is (1, 0) instead: row 0 XORs with 0, so it agrees by
# accident — one reason such bugs survive a test that looks at the first row.
#
# ### 4d. Wrong only sometimes: what the ring model cannot see
#
# Chapter 05's model tracks barriers and bytes, not proxies, bulk groups or lanes. The ordering
# checker (`asynctc.pitfalls.ordering`) covers those rules as a short program of steps; here the
# TMA-store buffer rewritten before `cp.async.bulk.wait_group.read` (DeepEP#657):

# %%
for rule in ("store", "proxy", "wgmma", "leader", "init"):
    broken, fixed = ordering.PROGRAMS[rule]["broken"], ordering.PROGRAMS[rule]["correct"]
    h = ordering.check(broken)[0]
    print(f"{rule:6s} broken: step {h.step} {h.op}: {h.why}")
    assert ordering.check(fixed) == []

# %% [markdown]
# The missing wgmma wait is also visible in compiled code: `pitfall_wgmma_release` releases a stage
# after its wgmmas, with and without `wgmma.wait_group 0` before the arrive. In the SASS the order of
# the Tensor Core instruction, the wait and the arrive says it all:

# %% output varies
for wait in (True, False):
    print(f"WAIT={int(wait)}:", " → ".join(V.release_order(V.compile_wgmma_release(wait))))

# %% [markdown]
# On the GPU these are races: whether a run shows them depends on timing. The record says what the
# H200 did with each (BUG=8 store reuse, BUG=6 no proxy fence, BUG=9 early leader with a 20 µs
# window held open, BUG=5 no init fence) — "ok" for a variant that passed is a *latent* bug, not a
# correct kernel:

# %% output varies
for bug in (8, 6, 9, 5, 2, 3):
    print(f"BUG={bug} ({V.BUGS[bug][0]}):", gpu_outcome(bug))

# %% [markdown]
# ### 4e. Slow, not wrong: setmaxnreg dropped
#
# Compiled here, without and with `__launch_bounds__(256, 1)`:

# %% output varies
print(D.ptxas_diagnosis().text)

# %% [markdown]
# ## 5. The method
#
# **Depth 1 first.** Run the pipeline with one stage (and `wait_group 0`) before any overlap. A
# protocol that is wrong at depth 1 is wrong in its barriers; one that is right at depth 1 and wrong
# at depth 3 is wrong in its parities or its releases (tilelang#3087 showed up from 3 stages on).
#
# **The trace is the log.** `printf` in a kernel that hangs prints nothing; a few u64 words per
# event in global memory survive the timeout. The variants log, per role, "waiting on empty[s] for
# tile t", "passed", "TMA issued", "released"; chapter 05's trace is the same idea at scale. The last
# event of each role is where it stopped:

# %% output varies
if LIVE:
    log = V.run_variant(1, tiles=4).log
else:
    try:
        log = next(v["log"] for v in records.load("pitfalls").results["variants"] if v["bug"] == 1)
    except (records.RecordError, StopIteration):
        log = []
        print("not recorded yet: the log of BUG=1 appears here once the pitfalls suite has run on a GPU")
for r in log:
    print(f"{r['role']:9s} {r['ns']:>10d} ns  {r['event']:10s} stage {r['stage']} tile {r['tile']}")

# %% [markdown]
# **compute-sanitizer, and what it misses.**
#
# | tool | sees | misses |
# |---|---|---|
# | memcheck | out-of-bounds and misaligned global/shared accesses, launch errors (the misaligned-address crash of Fuser#3023) | anything that stays in bounds: wrong parity, wrong swizzle, races |
# | racecheck | shared-memory hazards between threads of a CTA (read-after-write, write-after-read without a barrier) | global memory (it covers shared memory only); races whose other side is TMA or wgmma (the async proxy) are what the record below puts to it — Fuser#3561's missing wgmma wait went unreported by that project's sanitizer runs |
# | synccheck | barrier misuse: divergent `__syncthreads`, wrong thread counts on named barriers | mbarrier phases: a wait on the wrong parity is legal code |
#
# The sanitizer is for crashes and for shared-memory races between threads; the models are for the
# protocol. The sanitizer runs of the record (the correct kernel, BUG=1 and BUG=9):

# %% output varies
try:
    san = records.load("pitfalls").results.get("sanitizer", [])
except records.RecordError:
    san = []
    print("not recorded yet: the sanitizer runs appear here once the pitfalls suite has run on a GPU")
for s in san:
    print(f"BUG={s['bug']} {s['tool']:9s} {s['summary'] or s['rc']}")
    for ln in s["excerpt"][:2]:
        print("     ", ln[:150])

# %% [markdown]
# **cuda-gdb** helps once you know *where*: attach to the hung process, `info cuda kernels`, switch
# to a blocked warp and read its PC against the SASS of the wait. With bounded waits you rarely need
# it: the error word already says where.
#
# **The decision table.** Start from the symptom:

# %%
display(Markdown(zoo.decision_markdown()))

# %% [markdown]
# ## 6. One screen per bug: `diagnose`
#
# `F.diagnose(class)` (or `python -m asynctc diagnose <class>` in a terminal) runs the class's
# protocol through its model and, on a GPU, its kernel variant, and prints everything in one screen:

# %% output varies
r = F.diagnose("arrive_count")

# %% [markdown]
# ## 7. Exercises
#
# Wrong answers get a hint.
#
# **1. Name the bug.** A run ended with the diagnosis below (from one of the zoo's ring-protocol
# classes). Which class is it? Answer with a key of `zoo.BY_KEY`; you may run
# `D.model_diagnosis(key)` on candidates.

# %%
mystery = F.exercises.mystery_diagnosis()
print(mystery)
answer = ...
ok = exercises.check("ch08.name_bug", answer, diagnosis=mystery)

# %% [markdown]
# **2. Repair a protocol.** Here is the broken TMA-store epilogue as a program. Insert the step(s)
# that make `ordering.check` find no hazard (keep the program's own steps, in order), then check
# with answer 0 — the hazards left. The hint names the first hazard still there.

# %%
program = list(ordering.PROGRAMS["store"]["broken"])
print(program)
# program.insert(..., (..., ...))
ok = exercises.check("ch08.repair", 0, rule="store", program=program)

# %% [markdown]
# **3. Repair another.** The same for the missing proxy fence (`rule="proxy"`).

# %%
program = list(ordering.PROGRAMS["proxy"]["broken"])
ok = exercises.check("ch08.repair", 0, rule="proxy", program=program)

# %% [markdown]
# **4. Where does it go wrong first?** A 64 × 64 fp16 box lands with the 128B swizzle in a stage that
# starts **128 B** past a 1024 B boundary; the reader swizzles relative to the stage. Which
# (row, col) is the first, in row-major order, it reads from the wrong place?

# %%
answer = ...
ok = exercises.check("ch08.first_misplaced", answer, base_offset=128)

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
exercises.check("ch08.name_bug", "expect_tx", diagnosis=mystery, solution=True)
fixed = list(ordering.PROGRAMS["store"]["broken"])
fixed.insert(5, ("bulk_wait_read", 0))          # after the commit, before the barrier and the rewrite
exercises.check("ch08.repair", 0, rule="store", program=fixed, solution=True)
fixed = list(ordering.PROGRAMS["proxy"]["broken"])
fixed.insert(1, ("fence_proxy", None))          # every writer fences before the barrier
exercises.check("ch08.repair", 0, rule="proxy", program=fixed, solution=True)
ok = exercises.check("ch08.first_misplaced", [0, 0], base_offset=128, solution=True)

# %% [markdown]
# ## 8. What to take away
#
# * Hangs are barrier bookkeeping: count arrivals and bytes per phase, derive parities from one
#   formula, and make every wait bounded so that a hang becomes "consumers timed out on full[0] at
#   tile 0".
# * Races are ordering: proxies (fence.proxy.async), bulk groups (wait_group.read), wgmma groups
#   (wait_group before release), leaders (__syncwarp before the arrive). Tests and sanitizers miss
#   most of them; a model of the rules does not.
# * Layout bugs are deterministic: the first wrong element and its pattern name them.
# * Read the ptxas log: C7508 means your register split is not there.
#
# Next: chapter 09 takes the same protocols to Blackwell's tcgen05, where the accumulator moves to
# [TMEM](../docs/glossary.md#tmem) and the MMA's completion arrives on an mbarrier too.
