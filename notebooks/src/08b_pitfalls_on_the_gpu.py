# %% [markdown]
# # 08b — Deep dive: the bugs in compiled code and on the GPU
#
# ← back to the core lesson [08_pitfalls](08_pitfalls.ipynb)
#
# **Assumes** chapter 08: the kernel its variants break, the ring and layout models, the ordering checker.
#
# **What it adds:**
# - §1 the zoo, class by class and report by report
# - §2 what each bug removes from the SASS
# - §3 the late-blocking hang, the expect_tx hang
# - §4 other variants on the H200 (races: "ok" means *latent*)
# - §5 ptxas dropping `setmaxnreg`
# - §6 the in-kernel trace
# - §7 what compute-sanitizer saw
# - §8 `diagnose`
# - Exercises: one more repair, one more layout

# %% output varies
from IPython.display import display

from asynctc import pitfalls as F
from asynctc.core import exercises, notebook, records, runtime
from asynctc.pitfalls import diagnosis as D, figures, ordering, variants as V, zoo

notebook.banner("sm_90a")
LIVE = runtime.runs_live("sm_90a")
gpu_outcome = D.gpu_outcome          # the variant run now (live), else its recorded outcome

# %% [markdown]
# ## 1. The zoo, report by report
#
# First, one row per bug class (moved here from the core lesson). The *init count* is the number
# of arrivals per phase that `mbarrier.init` sets. `F.diagnose(key)` takes one class from symptom
# to fix.

# %%
display(notebook.Markdown(zoo.table_markdown(compact=True, reports=False)))

# %% [markdown]
# Then one row per report, with what its reporter saw (in our words), the CPU model that
# diagnoses it (`family:variant`, a key of `D.MODELS`) and the GPU variant.

# %%
display(notebook.Markdown(zoo.table_markdown()))

# %% [markdown]
# ## 2. What each bug removes, in the SASS
#
# All eleven builds of `asynctc/kernels/pitfalls.cu` compile here to sm_90a cubin (NVRTC needs no
# GPU); the synchronisation instructions of each, against the correct kernel's:

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
display(notebook.Markdown("| BUG | class | change | SASS vs the correct kernel |\n|---|---|---|---|\n" + "\n".join(rows)))

# %% [markdown]
# Note the init-fence row: `fence.mbarrier_init.release.cluster` leaves no instruction of its own in
# this (cluster-less) kernel's SASS — what the variant visibly loses is the `__syncthreads` after the
# init. The fence still belongs there: it is what the PTX ISA asks for before TMA's complete_tx or
# another CTA touches the barrier.
#
# The missing wgmma wait shows in compiled code too: `pitfall_wgmma_release` releases a stage after
# its wgmmas, with and without `wgmma.wait_group 0` before the arrive. The order of the Tensor Core
# instruction, the wait and the arrive says it all:

# %% output varies
for wait in (True, False):
    print(f"WAIT={int(wait)}:", " → ".join(V.release_order(V.compile_wgmma_release(wait))))

# %% [markdown]
# ## 3. Two more hangs
#
# A bug that blocks later than the wrong parity leaves a timeline to read: with empty barriers
# expecting 128 arrivals (threads) where 1 per warpgroup comes (arrive_count), the first pass runs
# and the refill of stage 0 never starts:

# %%
print(D.pipeline_diagnosis("arrive_count_too_big").text)
fig = figures.plot_broken_timeline("arrive_count_too_big")

# %% [markdown]
# The same symptom with the other barrier: expect_tx bytes no copy delivers. The consumers block
# on `full[0]`, whose tx-count never returns to zero — which is why the diagnosis has to name the
# barrier. Any excess hangs the same way: chapter 05's model announces 1024 bytes too many, the
# kernel variant (BUG=4) 16:

# %%
print(D.pipeline_diagnosis("expect_tx_too_large").text)

# %% output varies
print("BUG=4:", gpu_outcome(4))

# %% [markdown]
# ## 4. The other variants on the H200
#
# The misaligned tile (BUG=7) and a reader that assumes *no* swizzle (BUG=10, a descriptor or
# address formula that disagrees with the tensor map). With no swizzle assumed, row 0 XORs with 0
# and agrees by accident — one reason such bugs survive a test that looks at the first row:

# %% output varies
print("BUG=7: ", gpu_outcome(7))
print("BUG=10:", gpu_outcome(10), "  (reader assumes no swizzle)")

# %% [markdown]
# The races: BUG=8 store reuse, BUG=6 no proxy fence, BUG=9 early leader with a 20 µs window held
# open, BUG=5 no init fence; then BUG=2 and BUG=3. "ok" for a variant that passed is a *latent* bug,
# not a correct kernel:

# %% output varies
for bug in (8, 6, 9, 5, 2, 3):
    print(f"BUG={bug} ({V.BUGS[bug][0]}):", gpu_outcome(bug))

# %% [markdown]
# Three of those ran "ok" once, so they were run again under stress (`tools/gpu_ch08.py
# --latent-only`): dozens of runs each at several sizes, with kernels built to widen the window —
# a TMA store of a box whose pattern changes every iteration (BUG=8 without the bulk group's read
# wait, BUG=6 without the proxy fence), and an mbarrier initialised by one thread and used by
# another warp with no fence or sync (BUG=5). What the H200 showed, from the record:

# %% output varies
from asynctc.pitfalls import latent
for bug in (8, 6, 5, "5_fence_only", "5_no_order"):
    print(f"BUG={bug}:", latent.recorded_verdict(bug))
lat = records.load("pitfalls").results["latent"]
for s in lat["sanitizer"]:
    print(f"  compute-sanitizer {s['tool']:9s} on BUG={s['bug']} ({s.get('kernel', 'pitfall_ring')}): "
          f"{s['summary']}")
v = lat["verdicts"]
race5 = sum(s["errors"] for s in lat["sanitizer"] if s["bug"] == 5 and s["tool"] == "racecheck")
_ = notebook.claim(v["8"].startswith("manifest") and all(v[k].startswith("latent") for k in ("5", "6"))
                   and race5 > 0,
                   "Only the store-buffer reuse (BUG=8) showed on the H200; the missing proxy and "
                   "init fences stayed latent in every run; racecheck flagged the init that no thread sync orders "
                   f"({race5} hazards; the fence-only variant was not put to racecheck).", bug8=v["8"][:40], bug5=v["5"], bug6=v["6"], race5=race5)

# %% [markdown]
# When the reuse shows, the check names the first wrong element and says its value is the *next*
# iteration's: the buffer was overwritten while the TMA engine was still reading it. A test that
# passes is not a proof — and a tool can see an ordering the hardware happened to keep.

# %% [markdown]
# ## 5. Slow, not wrong: setmaxnreg dropped
#
# Compiled here, without and with `__launch_bounds__(256, 1)`:

# %% output varies
print(D.ptxas_diagnosis().text)

# %% [markdown]
# ## 6. The trace is the log
#
# `printf` in a kernel that hangs prints nothing; a few u64 words per event in global memory survive
# the timeout. The variants log, per role, "waiting on empty[s] for tile t", "passed", "TMA issued",
# "released"; chapter 05's trace is the same idea at scale. The last event of each role is where it
# stopped:

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
# ## 7. compute-sanitizer, and what it misses
#
# | tool | sees | misses |
# |---|---|---|
# | memcheck | out-of-bounds and misaligned global/shared accesses, launch errors (the misaligned-address crash of Fuser#3023) | anything that stays in bounds: wrong parity, wrong swizzle, races |
# | racecheck | shared-memory hazards between threads of a CTA (read-after-write, write-after-read without a barrier) | global memory (it covers shared memory only); races whose other side is TMA or wgmma (the async proxy) are what the record below puts to it — Fuser#3561's missing wgmma wait went unreported by that project's sanitizer runs |
# | synccheck | barrier misuse: divergent `__syncthreads`, wrong thread counts on [named barriers](../docs/glossary.md#named-barrier) | mbarrier phases: a wait on the wrong parity is legal code |
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
# ## 8. One screen per bug: `diagnose`
#
# `F.diagnose(class)` (or `python -m asynctc diagnose <class>` in a terminal) runs the class's
# protocol through its model and, on a GPU, its kernel variant, and prints everything in one screen:

# %% output varies
r = F.diagnose("arrive_count")

# %% [markdown]
# ## Exercises
#
# **1. Repair another.** The broken program of the missing proxy fence (`rule="proxy"`): insert the
# step(s) that make `ordering.check` find no hazard (keep its steps, in order; the cell prints the
# ops as you write them); the check runs your program.

# %%
program = list(ordering.PROGRAMS["proxy"]["broken"])
print(program)
print(ordering.describe_ops())
# program.insert(..., (..., ...))
ok = exercises.check("ch08.repair", program, rule="proxy")

# %% [markdown]
# **2. Where does it go wrong first?** A 64 × 64 fp16 box lands with the 128B swizzle in a stage
# that starts on a 1024 B boundary, but the reader assumes the **64B** swizzle. Which (row, col) is
# the first, in row-major order, it reads from the wrong place? (Compare which address bits each
# mode XORs; `D.layout_mismatch` would tell you, so work it out first.)

# %%
answer = ...
ok = exercises.check("ch08.first_misplaced", answer, base_offset=0, reader_swizzle=64)

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
fixed = list(ordering.PROGRAMS["proxy"]["broken"])
fixed.insert(1, ("fence_proxy", None))          # every writer fences before the barrier
ok = exercises.check("ch08.repair", fixed, rule="proxy", solution=True)
# 128B XORs chunk bits [0, 3) with row % 8, 64B only bits [0, 2) with row % 4: they part at row 4
ok = exercises.check("ch08.first_misplaced", [4, 0], base_offset=0, reader_swizzle=64, solution=True)
