# %% [markdown]
# # 08 — Pitfalls and debugging: a zoo of real bugs
#
# **Learning goal.** Recognise the handful of ways asynchronous Tensor Core code goes wrong from
# the symptom alone, and turn "it hangs" or "it is sometimes wrong" into a named barrier, stage and
# k-tile. You will be able to
#
# 1. place a public bug report in one of eleven classes (phase parity, arrive count, init fence,
#    proxy fence, expect_tx, misaligned tile, missing wgmma wait, TMA-store buffer reuse, setmaxnreg
#    dropped, swizzle mismatch, early leader) and say what its fix is;
# 2. reproduce a class in a CPU model and read its diagnosis; see its kernel variant end with a
#    decoded error — never a hung GPU;
# 3. debug in order: depth 1 first, then a hangs / wrong / slow table that points into the zoo.
#
# Chapters 03–06 built the protocols correctly; this one breaks them. The deep dive
# [08b](08b_pitfalls_on_the_gpu.ipynb) has the rest of the evidence (SASS, the other variants on the
# H200, ptxas, the in-kernel trace, compute-sanitizer).

# %% output varies
from IPython.display import Markdown, display

from asynctc import pitfalls as F
from asynctc.core import exercises, notebook, runtime
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
#   the zoo below were found by *reading* the code.
# * **it is wrong, always, in a pattern** — the tensor map writes one swizzle and the reader
#   assumes another, or a tile sits off its swizzle repeat: every wait succeeds, the values are
#   permuted inside 128-byte rows.
#
# And one way to be *slow* without being wrong: ptxas dropping `setmaxnreg` with one line in a
# log nobody reads.
#
# Every kernel of this course waits with a **bounded** wait (chapter 03): after a time limit the
# waiting thread writes an error word and leaves. That turns every hang below into a sentence.
#
# ## 2. The zoo
#
# Public reports (CUTLASS, Triton, TileLang, flash-attention, DeepEP, DeepGEMM, nvFuser, sglang,
# cuDNN's frontend, …) by class, in our words, cited by repository and number. *Model* names the CPU
# model that diagnoses the class, *GPU variant* the define of `asynctc/kernels/pitfalls.cu` that
# reproduces it.

# %%
display(Markdown(zoo.table_markdown()))
print(f"{len(zoo.reports())} reports in {len(zoo.CLASSES)} classes; symptoms:",
      {sym: sum(rep.symptom == sym for _, rep in zoo.reports()) for sym in zoo.SYMPTOMS})

# %% [markdown]
# Many reports are **latent** — found by an audit against the PTX memory model, never seen failing
# — so "my tests pass" proves little here. And no public report of an expect_tx byte mismatch
# turned up, although it is a common first bug — our guess at why: it hangs at once, so it is
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
# Each `#if BUG == …` is one zoo class; all eleven builds compile here to sm_90a cubin (the deep dive
# sets each one's SASS beside the correct kernel's).
#
# ## 4. Three bugs, in the model and on the GPU
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
# ### 4b. Wrong every time: a tile 128 bytes off its swizzle repeat
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

# %% [markdown]
# ### 4c. Wrong only sometimes: what the ring model cannot see
#
# Chapter 05's model tracks barriers and bytes, not proxies, **bulk groups** (TMA stores committed
# together, waited for with `cp.async.bulk.wait_group`) or lanes. The ordering checker
# (`asynctc.pitfalls.ordering`) covers those rules as a short program of `(op, arg)` steps and
# names the first broken one — here the five programs of its rules:

# %%
for rule in ("store", "proxy", "wgmma", "leader", "init"):
    broken, fixed = ordering.PROGRAMS[rule]["broken"], ordering.PROGRAMS[rule]["correct"]
    h = ordering.check(broken)[0]
    print(f"{rule:6s} broken: step {h.step} {h.op}: {h.why}")
    assert ordering.check(fixed) == []

# %% [markdown]
# On the GPU these are races: whether a run shows them depends on timing, and "ok" for a variant
# that passed is a *latent* bug, not a correct kernel (the deep dive prints what the H200 did with
# each).
#
# ## 5. The method
#
# **Depth 1 first.** Run the pipeline with one stage (and `wait_group 0`) before any overlap. A
# protocol that is wrong at depth 1 is wrong in its barriers; one that is right at depth 1 and wrong
# at depth 3 is wrong in its parities or its releases (tilelang#3087 showed up from 3 stages on).
#
# **Bounded waits, a log, then the models.** The error word says who gave up where; an in-kernel
# trace in global memory survives a timeout; compute-sanitizer finds crashes and shared-memory
# races between threads, not a wrong parity, swizzle or async-proxy race. `F.diagnose(class)` (or
# `python -m asynctc diagnose <class>`) prints one class on one screen.
#
# **The decision table.** Start from the symptom:

# %%
display(Markdown(zoo.decision_markdown()))

# %% [markdown]
# ## 6. Exercises
#
# Wrong answers get a hint.
#
# **1. Name the bug.** A run ended with the diagnosis below, from one of the zoo's three
# ring-protocol classes (`phase_parity`, `arrive_count`, `expect_tx`). Which of them is it? Run
# `D.model_diagnosis(key)` on the candidates and compare the barrier and the why.

# %%
mystery = F.exercises.mystery_diagnosis()
print(mystery)
answer = ...
ok = exercises.check("ch08.name_bug", answer, diagnosis=mystery)

# %% [markdown]
# **2. Repair a protocol.** Here is the broken TMA-store epilogue as a program. Insert the step(s)
# that make `ordering.check` find no hazard (keep the program's own steps, in order), then check
# with answer 0 — the hazards left. A step is `(op, arg)` with `op` a name in `ordering.OPS` (printed
# below; the module's docstring, `help(ordering)`, says what each does). The hint names the first
# hazard still there.

# %%
program = list(ordering.PROGRAMS["store"]["broken"])
print(program)
print(ordering.OPS)
# program.insert(..., (..., ...))
if program == list(ordering.PROGRAMS["store"]["broken"]):
    print("[ch08.repair] not answered yet: insert the missing step, then run this cell again")
else:
    ok = exercises.check("ch08.repair", 0, rule="store", program=program)

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
exercises.check("ch08.name_bug", "expect_tx", diagnosis=mystery, solution=True)
fixed = list(ordering.PROGRAMS["store"]["broken"])
fixed.insert(5, ("bulk_wait_read", 0))          # after the commit, before the barrier and the rewrite
ok = exercises.check("ch08.repair", 0, rule="store", program=fixed, solution=True)

# %% [markdown]
# ## 7. What to take away
#
# * Hangs are barrier bookkeeping: count arrivals and bytes per phase, derive parities from one
#   formula, and make every wait bounded so that a hang becomes "consumers timed out on full[0] at
#   tile 0".
# * Races are ordering: proxies (fence.proxy.async), bulk groups (wait_group.read), wgmma groups
#   (wait_group before release), leaders (__syncwarp before the arrive). A passing test does not
#   clear them — on the H200 the missing proxy fence never showed in 48 stressed runs, and racecheck
#   did not see it either (deep dive 08b); a model of the rules names it.
# * Layout bugs are deterministic: the first wrong element and its pattern name them.
# * Read the ptxas log: C7508 means your register split is not there.
#
# **Deep dive:** [08b — the bugs in compiled code and on the GPU](08b_pitfalls_on_the_gpu.ipynb).
#
# Next: chapter 09 takes the same protocols to Blackwell's tcgen05, where the accumulator moves to
# [TMEM](../docs/glossary.md#tmem) and the MMA's completion arrives on an mbarrier too.
