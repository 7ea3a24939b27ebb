# %% [markdown]
# # 08 — Pitfalls and debugging: a zoo of real bugs
#
# **Learning goal.** Turn "it hangs" or "it is sometimes wrong" into a named bug, barrier, stage and
# k-tile: place a bug report in one of eleven classes, reproduce it in a CPU model, and debug in
# order (one stage first, then a hangs / wrong / slow table).
#
# Deep dive [08b](08b_pitfalls_on_the_gpu.ipynb): every variant on the GPU, and *compute-sanitizer*
# (NVIDIA's checker of memory accesses and races).

# %% output varies
from IPython.display import Markdown, display

from asynctc import pitfalls as F
from asynctc.core import exercises, notebook
from asynctc.pitfalls import diagnosis as D, figures, ordering, zoo

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. Why these bugs are hard
#
# A wrong synchronous kernel is usually wrong every time. An asynchronous one can also **hang** (a
# wait names a phase that never completes), be **wrong sometimes** (a stage read before its bytes
# land, or overwritten while still read), be **wrong always**, in a fixed pattern (writer and
# reader disagree on the layout), or be **slow** but right (ptxas dropped `setmaxnreg`).
#
# Every wait here is **bounded** (chapter 03), so each hang below ends in an error word.
#
# ## 2. The zoo
#
# One row per class of bug, with its key (exercise 1 answers with one), the `BUG=` build of
# `kernels/pitfalls.cu` that reproduces it and its public reports (08b §1). The *init count* is the arrivals per phase that `mbarrier.init` sets;
# [proxies](../docs/glossary.md#proxy) are chapter 03's.

# %%
display(Markdown(zoo.table_markdown(compact=True)))

# %% [markdown]
# ## 3. The kernel the variants break
#
# One CTA streams 64 × 64 fp16 boxes through 2 stages. Warp 4's lane 0, the producer, issues the
# TMA loads. Warps 0–3, the consumers, copy each box into a buffer (undoing the 128B swizzle);
# thread 0 stores the buffer with TMA. `named_barrier_sync(1, CONSUMERS)` is a *named barrier*: a
# `__syncthreads` for the 128 consumers. Below, the consumers' loop as the correct build
# compiles it; each bug below is shown as a diff against it (`-` right, `+` broken).

# %%
notebook.show_source("pitfalls.cu", start=r"^  // ---- consumer warpgroup", end=r"^  \}$",
                     omit=(r"^    if \(tid == 0\) b\w+<0>", r"<0>", "exercise 2 asks for it"))

# %% [markdown]
# ## 4. Three bugs, in the model and on the GPU
#
# ### 4a. A hang: the producer waits on the wrong parity
#
# In a ring of S stages, k-tile k is its stage's fill f = k / S (the course's
# [phase parity](../docs/glossary.md#phase-parity) notation; this kernel names them `t` and `pass`).
# The producer waits on `empty[s]` with parity (f + 1) mod 2, the phase before, which a fresh
# barrier counts as complete. BUG=1 waits on f mod 2, phase 0 of a barrier nobody has arrived on yet
# ([flash-attention#1317](https://github.com/Dao-AILab/flash-attention/issues/1317)). The ring model
# runs it with BUG=1's one line:

# %%
print(notebook.build_diff("pitfalls.cu", {"BUG": 1}, context=1))
d = D.pipeline_diagnosis("wrong_empty_parity")
print(d.text)

# %% [markdown]
# The GPU variant (BUG=1) stops at the same barrier, then the starved consumers give up on
# `full[0]`. Below, each error word taken apart:

# %% output varies
outcome = D.gpu_outcome(1)
print("BUG=1:", outcome)
assert "producer timed out on empty[0] at tile 0" in outcome or outcome.startswith("not recorded")
for word in F.variants.words_in(outcome):
    print("  ", F.variants.explain_word(word))

# %% [markdown]
# ### 4b. Wrong every time: a tile 128 bytes off its swizzle repeat
#
# TMA's 128B swizzle XORs address bits [4, 7) with bits [7, 10) of the **absolute** shared-memory
# address. A stage that starts 128 bytes past a 1024 B boundary shifts every row's pattern by one
# row, and a reader that swizzles relative to the stage base reads every element from the wrong
# 16-byte chunk ([tilelang#2379](https://github.com/tile-ai/tilelang/issues/2379)). BUG=7 adds one line:

# %%
print(notebook.build_diff("pitfalls.cu", {"BUG": 7}, context=0))
m = D.layout_mismatch(tma_swizzle=128, reader_swizzle=128, base_offset=128)
print(D.layout_diagnosis("misaligned").text)
assert m["wrong"] == m["total"] and D.layout_mismatch(128, 128, 1024) is None
ax = figures.plot_misplaced(128, 128, 128)
off = D.misplaced_offsets(128, 128, 128)["cols"]
assert not D.misplaced_offsets(128, 128, 128)["rows"].any() and not (off % 8).any() and (off[8:] == off[:-8]).all()

# %% [markdown]
# **Reading the figure.** The colour: how many columns off the reader fetched each element (white
# is right). Whole 16-byte chunks swapped inside rows, repeating every 8 rows: a layout bug's
# fingerprint.

# %% [markdown]
# ### 4c. Wrong only sometimes: what the ring model cannot see
#
# Chapter 05's ring model tracks barriers and bytes. It does not track proxies,
# [bulk groups](../docs/glossary.md#bulk-group) (TMA stores committed and waited for together) or
# lanes (a *leader* is the one lane that arrives for its warp). The *ordering checker*
# (`asynctc.pitfalls.ordering`) does. It runs a program of `(op, arg)` steps and names the first
# rule broken. Two of its five rules are below, two in the *Try it* cell, the fifth in exercise 2.

# %%
for rule in ("wgmma", "leader"):
    broken, fixed = ordering.PROGRAMS[rule]["broken"], ordering.PROGRAMS[rule]["correct"]
    h = ordering.check(broken)[0]
    fix = ordering.fix_text(broken, fixed)
    print(f"{rule:6s} {ordering.program_text(broken)}\n       step {h.step}: {h.why}\n       fix: {fix}")
    assert ordering.check(fixed) == []

# %% [markdown]
# **Try it: change `DROP` and re-run.** The correct init and proxy programs back to back, checked
# without step 5. Set `DROP` to 6, then 1 or 2, then 3 or 8: which steps do the rules need?

# %%
DROP = 5                                  # the number of a step to delete, 0–8; None keeps all
program = ordering.PROGRAMS["init"]["correct"] + ordering.PROGRAMS["proxy"]["correct"]
print(ordering.drop_report(program, DROP))

# %% [markdown]
# On the GPU these bugs are races: a variant that passes is [latent](../docs/glossary.md#latent)
# (never seen failing), not correct (08b: what the H200 did).
#
# ## 5. The method
#
# **Depth 1 first.** Run the pipeline with one stage (and `wgmma.wait_group 0`: no wgmma in
# flight) before any overlap. Wrong at depth 1: the barriers are wrong. Right at depth 1, wrong at
# depth 3: the parities or the releases are ([tilelang#3087](https://github.com/tile-ai/tilelang/pull/3087) showed up from 3 stages on).
#
# **Then the error word, a trace, the models.** compute-sanitizer finds crashes and thread races,
# not a wrong parity, swizzle or proxy race. `F.diagnose(class)` prints one class.
#
# **The decision table** starts from the symptom ([setmaxnreg](../docs/glossary.md#setmaxnreg):
# chapter 06):

# %%
display(Markdown(zoo.decision_markdown(compact=True)))

# %% [markdown]
# ## 6. Exercises
#
# **1. Name the bug.** A run hung. Below: its bounded wait's report. The cause is one of
# `phase_parity`, `arrive_count` or `expect_tx`. Which? Check what a phase needs (chapter 03):
# the right parity, the arrivals, the bytes.

# %%
print(F.exercises.mystery_symptom())
mystery = F.exercises.mystery_diagnosis()      # the model's Deadlock, for the check
answer = ...
ok = exercises.check("ch08.name_bug", answer, diagnosis=mystery)

# %% [markdown]
# **2. Repair a protocol.** A [TMA store](../docs/glossary.md#tma-store) reads its shared-memory
# source *after* the instruction returns. `cp.async.bulk.commit_group` closes a **bulk group** of
# the thread's stores; `cp.async.bulk.wait_group.read N` waits until at most N of its groups still
# read their source ([03b §2](03b_tma_boxes.ipynb)). Below, the broken epilogue. Insert the one step that makes
# `ordering.check` find no hazard, keeping its steps in order. Which argument, and where? Two places
# look right; one is.

# %%
program = list(ordering.PROGRAMS["store"]["broken"])
print(program)
print(ordering.describe_ops())
# program.insert(..., (..., ...))
ok = exercises.check("ch08.repair", program, rule="store")

# %% [markdown]
# Section 3's listing left this line out (run after exercise 2): BUG=8 is the build without it.

# %% output answers a prediction
if exercises.after("ch08.repair"):
    print(notebook.build_diff("pitfalls.cu", {"BUG": 8}, context=1))

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions.</details>

# %%
# parity 0 is right (f = 0 / 2 = 0); the one arrival came; the boxes deliver (128 + 256) × 64 × 2 = 49152
# bytes, 1024 fewer than announced, so the tx-count never reaches 0
exercises.check("ch08.name_bug", "expect_tx", diagnosis=mystery, solution=True)
fixed = list(ordering.PROGRAMS["store"]["broken"])
fixed.insert(5, ("bulk_wait_read", 0))          # after the commit, before the barrier and the rewrite
ok = exercises.check("ch08.repair", fixed, rule="store", solution=True)

# %% [markdown]
# ## 7. What to take away
#
# * **Hangs** are barrier bookkeeping: count arrivals and bytes per phase, one parity formula,
#   bound every wait.
# * **Races** are ordering; passing runs and racecheck can miss them, a model of the rules names them.
# * **Layout bugs** are deterministic: the first wrong element and its pattern name them.
# * **Read the ptxas log**: C7508 means your register split is not there.
#
# **Next:** [chapter 09](09_blackwell.ipynb): the same protocols on Blackwell's tcgen05, with the accumulator in
# [TMEM](../docs/glossary.md#tmem) and the MMA's completion on an mbarrier too.
