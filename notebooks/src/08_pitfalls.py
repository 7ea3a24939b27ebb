# %% [markdown]
# # 08 — Pitfalls and debugging: one hang taken apart, then the method
#
# **Learning goal.** Turn "it hangs" or "it is sometimes wrong" into a named bug, barrier, stage and
# k-tile. One bug goes from symptom to a one-line fix. Then comes the method for the rest.
#
# **Where we are.** Chapters 03–06 built the parts of every asynchronous kernel here: 03's
# mbarrier with its bounded waits, 05's ring of stages, 06's producer and consumer roles. Each part
# is a promise between agents. Break one, and the kernel hangs or is silently wrong.
#
# **In plain words.** Agents hand stages to each other through barriers. Each bug is one broken
# promise between them. A CPU model of the same protocol names the line to fix.
#
# Going further: deep dive [08b](08b_pitfalls_on_the_gpu.ipynb), every variant on the GPU and
# *compute-sanitizer*, NVIDIA's race and memory checker.

# %% output varies
from IPython.display import display

from asynctc import pitfalls as F
from asynctc.core import exercises, notebook
from asynctc.pitfalls import diagnosis as D, figures, ordering, zoo

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. Why these bugs are hard
#
# A wrong synchronous kernel is wrong every time. An asynchronous one can also:
#
# * **hang**: a wait names a phase that never completes;
# * be **wrong sometimes**: a stage is read before it lands;
# * be **wrong always**: a layout bug;
# * run right but **slow**.
#
# Every wait here is **bounded** (row 6 of chapter 03's life-cycle table). So a hang ends in an
# error word (§3).
#
# ## 2. The kernel the variants break
#
# One CTA streams 64 × 64 fp16 boxes, one per k-tile, through two stages. The **producer** (warp
# 4, lane 0) issues TMA loads. The **consumers** (warps 0–3) copy each box to a buffer, undoing the
# swizzle; `named_barrier_sync(1, CONSUMERS)`, a [named barrier](../docs/glossary.md#named-barrier),
# syncs only them. Thread 0 stores the buffer with TMA.
# Below: the consumers' loop. Each `BUG=` build of `kernels/pitfalls.cu` breaks one line.

# %%
notebook.show_source("pitfalls.cu", start=r"^  // ---- consumer warpgroup", end=r"^  \}$",
                     omit=F.exercises.LISTING_OMIT)   # exercise 2's step left out; two asm blocks folded

# %% [markdown]
# ## 3. One hang, from symptom to fix
#
# **The symptom.** A wait on phase 0 looped forever while phase 1 worked
# ([flash-attention#1317](https://github.com/Dao-AILab/flash-attention/issues/1317)). Our BUG=1
# build makes the same mistake. Its bounded waits give up with error words.

# %% output varies
outcome = D.show_outcome(1,   # notebook.how(D.show_outcome) prints its code
                         expect="producer timed out on empty[0] at k-tile 0")

# %% [markdown]
# **The first wait that stuck.** Both words name k-tile 0, stage 0. Nothing was loaded, so the
# producer's wait on `empty[0]` stuck first.
#
# A phase completes when all its arrivals come and all its bytes land. A
# [phase parity](../docs/glossary.md#phase-parity) is the bit naming which of a barrier's
# alternating phases a wait expects. A wait passes once that phase has completed.
#
# **Predict first:** which parity must the producer's first wait name to pass, and which one does
# BUG=1's name? The cell below gives BUG=1's arithmetic: k-tile k of S stages is fill
# f = k // S.

# %% output answers a prediction
from asynctc.models.pipeline.ring import Mbarrier

S, k = 2, 0                    # two stages; the producer's first k-tile
f = k // S                     # k-tile k's fill of stage k mod S
parity = f % 2                 # the parity BUG=1's producer waits on
fresh = Mbarrier(count=1)      # chapter 03's barrier model, just initialised
FRESH_DONE = next(p for p in (0, 1) if fresh.test_wait(p))   # the parity it counts as complete: the model answers
print(f"k-tile {k}, fill {f}: the producer waits on empty[{k % S}] with parity {parity}")
print("verdict:", "passes: it loads k-tile 0" if parity == FRESH_DONE else
      "hangs: that phase needs the consumers' release of a load never issued")

# %% answer [markdown]
# **The hypothesis.** A fresh barrier counts parity 1 as complete: its phase 0 is still under way.
# So the first wait must name parity 1. BUG=1's names parity 0.

# %% [markdown]
# **Try it:** change `parity = f % 2` above to `parity = (f + 1) % 2` and rerun. Predict:
# passes or hangs?

# %% [markdown]
# **Pin it in a model.** The correct producer waits on parity (f + 1) mod 2. Chapter 05's ring
# model runs the protocol with f mod 2, one arrival per release (`pitfalls.cu` counts 4). Does it
# stop where the GPU stopped?

# %% output answers a prediction
print(D.pipeline_diagnosis("wrong_empty_parity").text, end="\n\n")
print(notebook.build_diff("pitfalls.cu", {"BUG": 1}, context=1))
print(D.pipeline_diagnosis("correct").text)

# %% [markdown]
# The model stops at the same barrier and k-tile. Parity 0 waits for the consumers' first
# release. That release needs a load the producer never issues. **The fix** is the diff's one
# line: `-` right, `+` broken.

# %% [markdown]
# ## 4. The method
#
# 1. **Name the symptom.**
# 2. **Find the first thing wrong**: the first wait that stuck, or the first wrong element.
# 3. **Hypothesize from a checklist**: a phase needs parity, arrivals and bytes; an order, its
#    fence or wait; a layout, writer and reader agreeing.
# 4. **Reproduce it in a model**: the ring model, the layout model or the ordering checker (section 5).
# 5. **Fix one line**; rerun the model and the kernel.
#
# The table gives steps 2 and 3 per symptom. One row names
# [setmaxnreg](../docs/glossary.md#setmaxnreg), the instruction that moves registers between
# warpgroups. [ptxas](../docs/glossary.md#ptxas), the assembler that turns PTX into SASS, warns
# C7508 when it ignored it.
#
# Going further: [06b §3](06b_ws_anatomy.ipynb) shows C7508.

# %%
table = zoo.decision_markdown(classes=False)
display({"text/markdown": table, "text/plain": table}, raw=True)   # a table, rendered or as plain text

# %% [markdown]
# ## 5. Two more kinds of bug
#
# ### 5a. Wrong every time: a tile 128 bytes off its swizzle repeat
#
# Step 2 finds a wrong element, the same every run: a layout bug. TMA's 128B swizzle takes its
# row bits from the **absolute** shared-memory address. So its pattern repeats every 1024 bytes. A
# stage 128 bytes past such a boundary starts one row into the pattern. A reader that swizzles from
# the stage base then reads the wrong 16-byte chunk
# ([tilelang#2379](https://github.com/tile-ai/tilelang/issues/2379)). BUG=7 shifts the stage:

# %%
print(notebook.build_diff("pitfalls.cu", {"BUG": 7}, context=0))
m = D.show_misplaced(tma_swizzle=128, reader_swizzle=128,   # notebook.how(D.show_misplaced) prints its code
                    base_offset=128)
ax = figures.plot_misplaced(128, 128, 128)

# %% [markdown]
# **The figure** shows how many columns off each element was read: red from its right, blue from
# its left. No cell is white, the colour of a right read: every element is misplaced. Whole 16-byte
# chunks swap, repeating every 8 rows, the same way each run. That is a layout bug's fingerprint.
#
# ### 5b. Wrong only sometimes: what the ring model cannot see
#
# The ring model sees only barriers and bytes. It misses:
#
# * [proxies](../docs/glossary.md#proxy), the generic and async paths into memory, which need a
#   fence;
# * [bulk groups](../docs/glossary.md#bulk-group), a thread's TMA copies closed by one commit;
# * lanes: a *leader* is the one lane that arrives for its warp.
#
# The *ordering checker* runs `(op, arg)` steps and names the first rule broken. The cell breaks
# two rules, then deletes step `DROP`.
#
# **Predict, then run:** which rule breaks, if any, with `DROP` = 6? Then change `DROP` to 1, then
# to 3, predict again and rerun.

# %% output answers a prediction
for rule in ("wgmma", "leader"):
    ordering.show_rule(rule)   # notebook.how(ordering.show_rule) prints its code
DROP = 6                                  # the number of a step to delete, 0–8; None keeps all
program = ordering.PROGRAMS["init"]["correct"] + ordering.PROGRAMS["proxy"]["correct"]
report = ordering.drop_report(program, DROP)
print(report)

# %% [markdown]
# On the GPU these are races. A variant that passes is [latent](../docs/glossary.md#latent): wrong
# but not yet caught.

# %% [markdown]
# **Play** (ungraded, no GPU). Run `print(D.pipeline_diagnosis(name).text)` with `name` =
# `"arrive_count_too_big"`, then `"missing_empty_wait"`: the first hangs, the second finishes.
# Is the second correct? Add `consumers=2` to the call. <details><summary>Answer</summary>Only
# for one consumer warpgroup: the producer is in it, so its own `wgmma.wait_group` orders its
# reads before the refill. With `consumers=2` the model finds a race: nothing orders the second
# warpgroup's reads before the TMA overwrites the stage.</details>
# `F.diagnose("arrive_count")` prints the recorded GPU outcome beside the model's. Its names are
# `sorted(F.zoo.BY_KEY)`.
#
# On a GPU: `python -m asynctc record pitfalls --no-save` reruns every variant. Compare its
# `BUG= 3 arrive_count` line with the model's diagnosis.
#
# Going further: [08b §1](08b_pitfalls_on_the_gpu.ipynb), the zoo: one row per bug class, then
# per public report.

# %% [markdown]
# ## 6. Exercises
#
# **1. Name the bug.** A run hung. Below: its bounded wait's report. The cause is one of
# `phase_parity`, `arrive_count` or `expect_tx`. Which? Check the three things a phase needs.

# %%
print(F.exercises.mystery_symptom())
answer = ...
ok = exercises.check("ch08.name_bug", answer)     # it runs the ring model on this hang itself

# %% [markdown]
# **2. Repair a protocol.** A [TMA store](../docs/glossary.md#tma-store), a bulk copy from shared
# to global memory, reads its shared-memory source *after* the instruction returns.
# `cp.async.bulk.commit_group` closes a bulk group. `cp.async.bulk.wait_group.read N` waits until
# at most N groups still read their source. Insert the one step that makes `ordering.check` find
# no hazard in the broken epilogue below: which argument, and where? Two places look right; in this
# program only one is. In the table, `st` is a store to shared memory: `st.shared` or
# [`stmatrix`](../docs/glossary.md#stmatrix).

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
exercises.check("ch08.name_bug", "expect_tx", solution=True)
fixed = list(ordering.PROGRAMS["store"]["broken"])
fixed.insert(5, ("bulk_wait_read", 0))          # after the commit, before the barrier and the rewrite
ok = exercises.check("ch08.repair", fixed, rule="store", solution=True)

# %% [markdown]
# ## Worklog
#
# What this chapter saw, one line per bug kind, read from the cells above:

# %% output varies
saw = {"a hang (BUG=1, on the GPU)": outcome.split(" (code")[0],
       "its first stuck wait, in the ring model": D.pipeline_diagnosis("wrong_empty_parity").text.split(";")[0],
       "a layout bug (BUG=7)": f"{m['wrong']} of {m['total']} elements misplaced, the same every run",
       f"an ordering bug (step {DROP} deleted)": report.splitlines()[-1]}
for what, line in saw.items():
    print(f"- {what}: {line}")

# %% [markdown]
# ## 7. What to take away
#
# * **Debug in order**: symptom, first thing wrong, hypothesis, model, one-line fix.
# * **Hangs** are barrier bookkeeping; **races** are ordering; **layout bugs** repeat exactly.
# * **Read the ptxas log**: C7508 means your register split is not there.
#
# **Next:** [chapter 09](09_blackwell.ipynb): the same protocols on Blackwell, the accumulator in
# [TMEM](../docs/glossary.md#tmem).
