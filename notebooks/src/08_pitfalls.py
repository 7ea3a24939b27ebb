# %% [markdown]
# # 08 — Pitfalls and debugging: one hang taken apart, then the zoo
#
# **Learning goal.** Turn "it hangs" or "it is sometimes wrong" into a named bug, barrier, stage and
# k-tile. Follow one real bug from its symptom to a one-line fix, turn those steps into a method,
# then use the zoo of eleven classes as a reference.
#
# **In plain words.** An asynchronous kernel is a set of agents that hand stages to each other
# through barriers; each bug is one broken promise between them. It shows up as a hang, a wrong
# answer every time, or one only some of the time. A CPU model of the same protocol names the
# line to fix.
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
# ## 2. The kernel the variants break
#
# One CTA streams 64 × 64 fp16 boxes through 2 stages. Warp 4's lane 0, the producer, issues the
# TMA loads. Warps 0–3, the consumers, copy each box into a buffer (undoing the 128B swizzle);
# thread 0 stores the buffer with TMA. `named_barrier_sync(1, CONSUMERS)` is a *named barrier*: a
# `__syncthreads` for the 128 consumers. Below, the consumers' loop as the correct build
# compiles it. Each `BUG=` build of `kernels/pitfalls.cu` breaks one line of it.

# %%
notebook.show_source("pitfalls.cu", start=r"^  // ---- consumer warpgroup", end=r"^  \}$",
                     omit=(r"^    if \(tid == 0\) b\w+<0>", r"<0>", "exercise 2 asks for it"))

# %% [markdown]
# ## 3. One hang, from symptom to fix
#
# **The symptom.** [flash-attention#1317](https://github.com/Dao-AILab/flash-attention/issues/1317)
# reported a kernel that hangs: a wait on phase 0 looped forever while phase 1 worked. Our BUG=1
# build makes the same mistake. Its bounded waits give up and leave error words, taken apart below.

# %% output varies
outcome = D.show_outcome(1, expect="producer timed out on empty[0] at tile 0")

# %% [markdown]
# **The first wait that stuck.** Both words name tile 0 and stage 0. The consumers waited on
# `full[0]` because nothing was loaded. The producer loads only once its wait on `empty[0]`
# passes. So the producer's wait stuck first, before any consumer had a stage to release.
#
# **The hypothesis.** A phase completes when three things are true (chapter 03). The waiter
# names the right parity, every arrival comes, every byte lands. At tile 0 no consumer has had a
# stage to release, so a wait that needs an arrival names the wrong phase. A fresh barrier is in
# phase 0 and counts the phase before (parity 1) as complete. The producer's first wait should
# name parity 1 and pass at once. Hypothesis: it names parity 0.
#
# **Pin it in a model.** In [phase parity](../docs/glossary.md#phase-parity) notation, k-tile k is
# its stage's fill f = k / S in a ring of S stages (the kernel names them `t` and `pass`). The
# right producer waits on parity (f + 1) mod 2. Chapter 05's ring model runs the protocol on the
# CPU with the producer waiting on f mod 2 instead. Does it stop where the GPU stopped?

# %% output answers a prediction
print(D.pipeline_diagnosis("wrong_empty_parity").text)

# %% [markdown]
# Same barrier, same k-tile, and the reason: parity 0 waits for the consumers' first release,
# which needs the load the producer never issues. compute-sanitizer would not catch it: no access
# is out of bounds and no threads race (08b §7).
#
# **The fix** is one line. The diff is the broken build against the right one (`-` right,
# `+` broken). With the right line, the model runs every k-tile.

# %%
print(notebook.build_diff("pitfalls.cu", {"BUG": 1}, context=1))
print(D.pipeline_diagnosis("correct").text)

# %% [markdown]
# ## 4. The method
#
# The hang took five steps. They work for every bug here.
#
# 1. **Name the symptom**: hangs, wrong always, wrong sometimes, slow (section 1).
# 2. **Find the first thing that went wrong**: the first wait that stuck (its error word or
#    08b §6's trace), or the first wrong element.
# 3. **Form a hypothesis from a checklist.** A phase needs its parity, arrivals and bytes. An
#    order needs its fence or wait. A layout needs writer and reader to agree.
# 4. **Reproduce it in a model** that names the cause: the ring model, the ordering checker
#    (section 5b) or the layout model (section 5a).
# 5. **Fix one line**, then rerun the model and the kernel.
#
# **Depth 1 first.** Run the pipeline with one stage and `wgmma.wait_group 0`. Wrong at depth 1:
# the barriers are wrong. Right at depth 1 but wrong at depth 3: the parities or the releases are
# ([tilelang#3087](https://github.com/tile-ai/tilelang/pull/3087) showed up from 3 stages on).
# compute-sanitizer finds crashes and thread races, not a wrong parity, swizzle or proxy race.
#
# For step 3, this table maps a symptom to where to look
# ([setmaxnreg](../docs/glossary.md#setmaxnreg): chapter 06):

# %%
display(Markdown(zoo.decision_markdown(compact=True)))

# %% [markdown]
# ## 5. Two more kinds of bug
#
# ### 5a. Wrong every time: a tile 128 bytes off its swizzle repeat
#
# Step 2 finds a wrong element, the same every run: a layout bug. TMA's 128B swizzle
# XORs address bits [4, 7) with bits [7, 10) of the **absolute** shared-memory address. A stage
# that starts 128 bytes past a 1024 B boundary shifts every row's pattern by one row. A reader
# that swizzles relative to the stage base then reads every element from the wrong 16-byte chunk
# ([tilelang#2379](https://github.com/tile-ai/tilelang/issues/2379)). BUG=7 adds one line, and the
# layout model finds every element misplaced:

# %%
print(notebook.build_diff("pitfalls.cu", {"BUG": 7}, context=0))
m = D.show_misplaced(tma_swizzle=128, reader_swizzle=128, base_offset=128)
ax = figures.plot_misplaced(128, 128, 128)

# %% [markdown]
# **Reading the figure.** The colour: how many columns off the reader fetched each element (white
# is right). Whole 16-byte chunks swapped inside rows, repeating every 8 rows: a layout bug's
# fingerprint.
#
# ### 5b. Wrong only sometimes: what the ring model cannot see
#
# Chapter 05's ring model tracks barriers and bytes. It does not track proxies,
# [bulk groups](../docs/glossary.md#bulk-group) (TMA stores committed and waited for together) or
# lanes (a *leader* is the one lane that arrives for its warp). The *ordering checker*
# (`asynctc.pitfalls.ordering`) does. It runs a program of `(op, arg)` steps and names the first
# rule broken. Two of its five rules are below, two in the *Try it* cell, the fifth in exercise 2.

# %%
for rule in ("wgmma", "leader"):
    ordering.show_rule(rule)

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
# ## 6. The zoo, for reference
#
# The eleven classes, the ones above included, one row each: its key (exercise 1 answers with one), the
# `BUG=` build that reproduces it, where the course shows it and its public reports. The
# *init count* is the arrivals per phase that `mbarrier.init` sets;
# [proxies](../docs/glossary.md#proxy) are chapter 03's. `F.diagnose(key)` prints one class on
# one screen, from symptom to fix.

# %%
display(Markdown(zoo.table_markdown(compact=True)))

# %% [markdown]
# ## 7. Exercises
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
# Section 2's listing left this line out (run after exercise 2): BUG=8 is the build without it.

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
# ## 8. What to take away
#
# * **Debug in order**: the symptom, the first thing wrong, a hypothesis from a checklist, a
#   model that reproduces it, a one-line fix.
# * **Hangs** are barrier bookkeeping: count arrivals and bytes per phase, one parity formula,
#   bound every wait.
# * **Races** are ordering; passing runs and racecheck can miss them, a model of the rules names them.
# * **Layout bugs** are deterministic: the first wrong element and its pattern name them.
# * **Read the ptxas log**: C7508 means your register split is not there.
#
# **Next:** [chapter 09](09_blackwell.ipynb): the same protocols on Blackwell's tcgen05, with the accumulator in
# [TMEM](../docs/glossary.md#tmem) and the MMA's completion on an mbarrier too.
