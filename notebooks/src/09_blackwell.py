# %% [markdown]
# # 09 — Blackwell: `tcgen05` and Tensor Memory
#
# **Learning goal.** Carry a Hopper GEMM's mental model to Blackwell (sm_100a), where
# `tcgen05.mma` takes wgmma's place: why the accumulator left the register file for **Tensor
# Memory** ([TMEM](../docs/glossary.md#tmem)); `tcgen05.mma`'s two descriptors, the 32-bit
# [instruction descriptor](../docs/glossary.md#instruction-descriptor) and the 64-bit
# **shared-memory descriptor**; allocating TMEM; writing the MMA thread's k-tile.
#
# **In plain words.** On Hopper a big tile's accumulator fills the register file. Blackwell gives
# it a separate memory per SM. One thread issues the MMA, which writes there; a barrier says when
# it is done; the epilogue reads it out.
#
# No sm_100 GPU stands behind this chapter: §1–4 are **models** of the PTX ISA, §5–6 compile and
# disassemble the kernel.

# %% output varies
from asynctc import tcgen05 as kernels
from asynctc.core import exercises, notebook
from asynctc.models import descriptors, tmem
from asynctc.models import tcgen05 as tc
from asynctc.tcgen05 import figures, lesson

notebook.banner("sm_100a", measured=False)

# %% [markdown]
# ## 1. Why Tensor Memory: the register bill of an accumulator
#
# [Chapter 06](06_warp_specialization.ipynb) §2 paid Hopper's register bill. In steps:
#
# 1. An SM has 65536 32-bit registers for its three [warpgroups](../docs/glossary.md#warpgroup).
# 2. [`setmaxnreg`](../docs/glossary.md#setmaxnreg) gives each consumer thread a budget of 232.
# 3. The 128×256 fp32 accumulator, spread over the consumers' 256 threads, is 128 per thread.
# 4. Addresses, descriptors and loop state add 26 (ptxas's count in chapter 05).
#
# **So:** a consumer needs 154 of its 232. The table charges that need, not the budget. (06's
# rung-3 table shows ptxas's 156 for the 128×256 build alone, and 168, the cap at entry, once
# `setmaxnreg` is in.)
#
# The next step is a second accumulator (one tile's [epilogue](../docs/glossary.md#epilogue)
# runs while the MMAs fill the next) or a 256×256 tile (half of B's bytes per FLOP). Either needs
# 65536 accumulator registers: the whole register file. The last lines print each sum; the cell
# also asserts ptxas's counts from chapter 06's `ws_rung3_steps` record.

# %%
bill = lesson.register_bill()          # chapter 06's split
print(lesson.bill_table(bill))
fig = figures.accumulator_homes(bill)

# %% [markdown]
# Neither step fits, however the 65536 values are split among threads: on Hopper the register file
# is the accumulator's limit.
#
# Blackwell moves the accumulator into **Tensor Memory** ([TMEM](../docs/glossary.md#tmem)),
# **per SM**, shared by the CTAs resident on it. It is a grid of 32-bit cells: 128 lanes by 512
# columns.
#
# Lane i is row i of D; a column keeps one fp32 of every row. So a 128×256 accumulator takes 256
# columns, and two of them take all 512 (the figure's right panel).
#
# A 256×256 tile belongs to a [CTA pair](../docs/glossary.md#cta-pair) (§2): each SM keeps its
# 128 rows.

# %% [markdown]
# ## 2. The instruction descriptor, bit by bit
#
# `tcgen05.mma.cta_group::1.kind::f16 [d_tmem], a_desc, b_desc, idesc, enable_input_d;`
#
# One thread issues it. `enable_input_d` false overwrites D instead of adding to it.
#
# `cta_group::1` is one CTA's MMA. `cta_group::2` is a [CTA pair](../docs/glossary.md#cta-pair)'s:
# two CTAs of a cluster share one MMA, each keeping its own rows of A and D and part of B.
#
# Shape and types sit in the 32-bit `idesc` (PTX ISA §9.7.16.4.2). The model `tc.InstrDescriptor`
# prints it field by field.

# %%
idesc = tc.InstrDescriptor("bfloat16", "bfloat16", "float32", m=128, n=256)
print(idesc.table())
assert idesc.encode() == 0x08400490 and tc.InstrDescriptor.decode(idesc.encode()) == idesc

# %% [markdown]
# ## 3. The sm_100 shared-memory descriptor, and how it differs from wgmma's
#
# The 64-bit layout (PTX ISA §9.7.16.4.1) is printed below from the model's field list.
#
# The canonical layouts are chapter 04's, so an operand tile gets the same start, LBO, SBO and
# swizzle bits as for wgmma. Two things differ:
#
# * the swizzle field starts one bit lower, so the same bits read as different codes;
# * a version bit (bit 46) is set.
#
# **So:** one tile's two descriptors differ in bit 46 alone; the cell checks it.

# %%
print(tc.sdesc_layout(), end="\n\n")
tile = descriptors.OperandTile(128, 64, "float16", "K", 128)
w = tile.descriptor(step=1, base_address=0x2000)
t = tc.Tcgen05Descriptor.from_operand_tile(tile, step=1, base_address=0x2000)
print(f"wgmma   descriptor = {w.encode():#018x}")
print(f"tcgen05 descriptor = {t.encode():#018x}   (xor = {w.encode() ^ t.encode():#x} = bit 46)")
assert t.encode() ^ w.encode() == 1 << 46

# %% [markdown]
# ## 4. Tensor Memory: allocation and who may read what
#
# TMEM is **per SM**; a CTA uses the columns it allocated, addressed `lane << 16 | column`:
#
# * `tcgen05.alloc` (one warp) takes whole columns in powers of two from 32 to 512, writes the
#   address to shared memory, and **blocks** while they are taken; `tcgen05.dealloc` (the same
#   warp) gives them back.
# * Warp *w* reads only lanes 32·(w mod 4) … +31, so the epilogue needs four warps.
#
# `tmem.TmemAllocator` models them:

# %%
alloc = tmem.TmemAllocator()
acc, extra = alloc.alloc(256, warp=1), alloc.alloc(128, warp=1)
print(f"alloc(256) → {acc:#010x}, alloc(128) → {extra:#010x}; {alloc.free_columns()} columns free")
for ncols in (256, 48):                       # too many; not a power of two
    try:
        alloc.alloc(ncols, warp=1)
    except tmem.TmemError as e:
        print("TmemError:", e)
alloc.dealloc(extra, 128, warp=1)
alloc.dealloc(acc, 256, warp=1)
alloc.check_all_freed()

# %% [markdown]
# **Predict, then try:** change the first `alloc(256, …)` to `alloc(512, …)` (§1's two
# accumulators as one request) and rerun. Does `alloc(128, …)` still succeed?
# <details><summary>Answer</summary>No: 512 takes every column, so it raises `TmemError`
# (0 free).</details>

# %% [markdown]
# ## 5. The kernel: compiled for sm_100a, disassembled here
#
# The chapter's GEMM (`kernels/tcgen05.cu`, sm_100 only): a TMA producer warp, one MMA-issuing
# thread, TMEM allocated by one warp, four epilogue warps reading it with `tcgen05.ld`.
#
# **Exercise 1 — write one k-tile of the MMA thread.** `issue_ktile(t, kt, s)` runs on each of
# warp 1's threads for k-tile kt in stage s (of `t.stages`). Only `t.elected` issues. What each
# call guarantees:
#
# * `t.wait(barrier, parity)` returns once that phase has completed. `t.full[s]` completes when
#   stage s's bytes have landed, `t.empty[s]` hands stage s back to the producer (`t.done` is
#   committed once, after the loop). K-tile kt is stage s's fill f = kt // `t.stages`; its
#   [phase parity](../docs/glossary.md#phase-parity) is f mod 2.
# * `t.fence_after()` (`tcgen05.fence::after_thread_sync`) orders the `tcgen05` operations after it
#   behind the waits before it. A wait alone orders only ordinary loads and stores.
# * `t.mma(s, j, accumulate)` issues k-step j < `t.steps` from stage s (`accumulate` is §2's
#   `enable_input_d`).
# * `t.commit(barrier)` (`tcgen05.commit`) arrives once on the barrier when every MMA the thread
#   issued has completed.
#
# Choose the calls, their barriers and their order; the kernel's loop appears once they pass.

# %%
def issue_ktile(t, kt, s):
    ...   # your code


ok = exercises.check("ch09.mma_issue", issue_ktile)

# %% output answers a prediction
if exercises.after("ch09.mma_issue"):
    display(notebook.show_source("tcgen05.cu", start=r"if \(lane == 0 && leader\) \{",
                                 end=r"tcgen05_commit_multicast<2>\(smem_u32\(&empty_bar"))

# %% [markdown]
# Names in the listing: `lane == 0` is the elected thread. A **slab** is 64 elements of K, one
# 128-byte swizzle atom of fp16; `kStepsPerSlab` MMAs cover it. In a CTA pair
# `tcgen05_commit_multicast<2>` arrives on both CTAs' barriers.
#
# In the SASS, `tcgen05.mma` is `UTCHMMA` (BK/16 of them, unrolled) and `tcgen05.commit` is
# `UTCBAR` ([09c §5](09c_blackwell_datapath.ipynb)). The cell counts both and checks the kernels'
# descriptors against §2–3's models:

# %% output varies
assert lesson.show_sass([kernels.GemmConfig("float16", 128, 256, 64, 4, 1),
                         kernels.GemmConfig("float16", 256, 256, 64, 4, 2)])

# %% [markdown]
# ## 6. Hopper → Blackwell
#
# The same GEMM, concept by concept: Hopper's PTX, then Blackwell's, each with its SASS.

# %%
print(tc.migration_text(slice(tc.MIGRATION_CORE_ROWS)))

# %% [markdown]
# `wgmma.fence` has no counterpart (`tcgen05.mma` reads no registers); the
# `tcgen05.fence::*_thread_sync` pair does a different job: exercise 1's fence, around a sync.
#
# ## Exercises
#
# **2.** Which of 96, 128 or 256 columns must `tcgen05.alloc` request for a 128×96 fp32
# accumulator (one CTA)? §4's rules decide.

# %%
answer = ...
ok = exercises.check("ch09.tmem_columns", answer, m=128, n=96)

# %% [markdown]
# **What you learned:** the accumulator lives in TMEM; one thread issues the MMA; an mbarrier says
# when it is done.
#
# **Deep dives:** [09c — where the accumulator lands, one tile emulated](09c_blackwell_datapath.ipynb);
# [09b — a persistent Blackwell GEMM](09b_blackwell_persistent.ipynb).
#
# **Next:** [chapter 10](10_claims.ipynb), the seed article's claims.

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
exercises.check("ch09.tmem_columns", 128, m=128, n=96, solution=True)  # lane = row; 96 columns → 2^k ≥ 32


def issue_ktile(t, kt, s):
    if t.elected:                                      # one thread issues (tcgen05.mma is not .sync.aligned)
        t.wait(t.full[s], (kt // t.stages) & 1)        # fill kt // stages: its phase's parity
        t.fence_after()                                # tcgen05 ops after the wait, not before it
        for j in range(t.steps):
            t.mma(s, j, accumulate=(kt > 0 or j > 0))  # only the k-loop's first MMA overwrites D
        t.commit(t.empty[s])                           # after the MMAs: the stage is free once they completed


ok = exercises.check("ch09.mma_issue", issue_ktile, solution=True)
