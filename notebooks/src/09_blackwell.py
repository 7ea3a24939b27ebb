# %% [markdown]
# # 09 — Blackwell: `tcgen05` and Tensor Memory
#
# **Learning goal.** Carry a Hopper GEMM to Blackwell (sm_100a), where `tcgen05.mma` replaces
# wgmma. See why the accumulator moved to **Tensor Memory** ([TMEM](../docs/glossary.md#tmem)).
# Read the 32-bit [instruction descriptor](../docs/glossary.md#instruction-descriptor) (shape and
# types) and the 64-bit **shared-memory descriptor**. Allocate TMEM and write the MMA thread's
# k-tile.
#
# **Where we are.** Chapters 04–06 built Hopper's GEMM, with its accumulator in registers.
# Blackwell keeps TMA and the mbarrier ring. It adds `tcgen05.mma`.
#
# **In plain words.** Blackwell gives the accumulator its own memory per SM. One thread issues
# the MMA. A barrier says when it is done. The epilogue reads the result out.
#
# No sm_100 GPU stands behind this chapter. Sections 1–4 are **models** of the PTX ISA. Section 5
# compiles and disassembles the kernel. Section 6 lists what changed from Hopper.

# %% output varies
from asynctc import tcgen05 as kernels
from asynctc.core import exercises, notebook, records
from asynctc.models import descriptors, tmem
from asynctc.models import tcgen05 as tc
from asynctc.pipeline.config import REG_OVERHEAD, REGS_PER_SM
from asynctc.tcgen05 import figures, lesson
from asynctc.warp_specialization.config import WSConfig
from asynctc.warp_specialization.rung3_split import rung3_steps

notebook.banner("sm_100a", measured=False)

# %% [markdown]
# ## 1. Why Tensor Memory: the register bill of an accumulator
#
# On Hopper the accumulator lives in registers. One SM's register file has room for one 128×256
# fp32 accumulator, not two. [Chapter 06's register budget](06_warp_specialization.ipynb) paid
# this bill. Here it is in three steps for one consumer thread. The cell below works them out for
# `ACCUMULATORS` tiles; its figure draws the three layouts side by side.
#
# 1. **What a consumer thread needs.** Chapter 06's kernel has a producer and two consumer
#    [warpgroups](../docs/glossary.md#warpgroup) (four warps each): 384 threads. The consumers'
#    256 threads share the accumulator, 128 fp32 values each. Addresses, descriptors and loop
#    state add 26 (`REG_OVERHEAD`): chapter 05's record gives its 128×256 kernel 154 registers
#    per thread, 128 of them accumulators (the cell's first line). So a consumer thread needs 154.
# 2. **What it is given.** An SM has 65536 32-bit registers. Each of the 384 threads starts
#    with 168. [`setmaxnreg`](../docs/glossary.md#setmaxnreg) then moves registers between
#    warpgroups: the producer's threads drop to 40, the consumers' rise to 232. The total stays
#    64512. A need of 154 fits in 232.
# 3. **What does not fit.** The next step is a second 128×256 accumulator, or one 256×256 tile.
#    A second accumulator lets one tile's [epilogue](../docs/glossary.md#epilogue), the code that
#    writes C out, run while the MMAs fill the next. Either is 65536 values: the whole register
#    file. With the producer's and the other registers, the SM needs 77312. No split between
#    threads fits that into 65536. Blackwell splits a 256×256 tile over a
#    [CTA pair](../docs/glossary.md#cta-pair): two CTAs on two SMs, 128 rows each.
#
# The last line cross-checks with ptxas, from chapter 06's rung-3 record. ptxas gives 156 for the
# tile alone, near our 154. With `setmaxnreg`, ptxas reports 168. That is its one count for the
# whole kernel: what every thread starts with in step 2, not a consumer's 232.
#
# **Try it:** change `ACCUMULATORS` to 2 and rerun. Predict: by how many registers per consumer thread is it over?

# %% output varies
p05 = next(r["registers"] for r in records.load("pipeline").results["sweep"] if r.get("tile") == "128x256x64/c2")
print(f"REG_OVERHEAD: chapter 05's 128x256 kernel has {p05} registers/thread - 128 accumulators = {p05 - 128}")
ws = WSConfig()                                  # chapter 06: 128 producer + 256 consumer threads
entry = REGS_PER_SM // 384 // 8 * 8             # 65536 / 384, rounded down to a multiple of 8
given = 128 * ws.producer_regs + 256 * ws.consumer_regs
print(f"given: 384 × {entry} = {384 * entry} at entry; after setmaxnreg 128 × {ws.producer_regs} + 256 × {ws.consumer_regs} = {given}")
ACC_M, ACC_N, ACCUMULATORS = 128, 256, 1     # the fp32 accumulator tile, and how many one SM keeps
per_thread = ACC_M * ACC_N * ACCUMULATORS // 256 + REG_OVERHEAD   # over 256 consumer threads, plus loop state
sm_needs = 128 * ws.producer_regs + 256 * per_thread               # the producer's registers and the consumers'
cols = ACC_N * ACCUMULATORS                                        # TMEM: a column holds one fp32 of each row
print(f"{ACCUMULATORS} × {ACC_M}×{ACC_N}: a consumer thread needs {per_thread} of {ws.consumer_regs}; "
      f"the SM needs {sm_needs} of {REGS_PER_SM}")
print("verdict:", "fits in registers" if sm_needs <= REGS_PER_SM else "does not fit in registers",
      f"| Blackwell: {cols} of {tmem.COLUMNS} TMEM columns")
bill = lesson.register_bill()          # the figure's three accumulator layouts
steps = {d["step"]: d["regs"] for d in rung3_steps(records.load("ws_rung3_steps").results)}
print(f"cross-check, ptxas (06): {steps['128x256']} for the tile alone, {steps['setmaxnreg (rung 3)']} with setmaxnreg (the count at entry)")
notebook.require(p05 - 128 == REG_OVERHEAD and (entry, given) == (168, 384 * entry) and (steps["128x256"], steps["setmaxnreg (rung 3)"]) == (156, 168)
                 and bill[0]["per_thread"] == 154 < ws.consumer_regs == 232 < min(r["per_thread"] for r in bill[1:]),
                 "384 × 168 = 64512 = 128 × 40 + 256 × 232; a consumer needs 154 of its 232, more than 232 with a second accumulator; ptxas gives 156, and 168 with setmaxnreg", given=given)
fig = figures.accumulator_homes(bill)

# %% [markdown]
# Blackwell moves the accumulator into **Tensor Memory**. There is one TMEM **per SM**,
# shared by the CTAs resident on it. Its cells are 32-bit, 128 lanes by 512 columns. Lane i is
# row i of D. A column keeps one fp32 of every row. So a 128×256 accumulator takes 256 columns,
# and two take all 512 (the figure's right panel).

# %% [markdown]
# ## 2. The instruction descriptor, bit by bit
#
# `tcgen05.mma.cta_group::1.kind::f16 [d_tmem], a_desc, b_desc, idesc, enable_input_d;`
#
# One thread issues it. `enable_input_d` false overwrites D instead of adding to it.
# `cta_group::2` is a CTA pair's MMA: two CTAs of a [cluster](../docs/glossary.md#cluster) share it.
# Each keeps its own rows of A and D and part of B.
#
# Shape and types sit in the 32-bit `idesc` (PTX ISA §9.7.16.4.2). `tc.InstrDescriptor` prints it
# field by field.

# %%
idesc = tc.InstrDescriptor("bfloat16", "bfloat16", "float32", m=128, n=256)
print(idesc.table())
assert idesc.encode() == 0x08400490 and tc.InstrDescriptor.decode(idesc.encode()) == idesc
assert (idesc.n >> 3, idesc.m >> 4) == (32, 8)    # n_dim and m_dim as encoded

# %% [markdown]
# The shape is stored scaled down: `n_dim` is N >> 3 (256 / 8 = 32) and `m_dim` is M >> 4
# (128 / 16 = 8).

# %% [markdown]
# ## 3. The sm_100 shared-memory descriptor, and how it differs from wgmma's
#
# The tile layouts are chapter 04's, so a tile gets the same start, LBO, SBO and swizzle bits as
# for wgmma. Two things differ in the 64-bit layout (PTX ISA §9.7.16.4.1):
#
# * the swizzle field starts one bit lower, at bit 61. So 128B is 1 in wgmma's field and 2 in
#   tcgen05's: two codes, the same bit of the word;
# * a version bit (bit 46) is set.
#
# **So:** one tile's two descriptors differ in bit 46 alone.

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
# TMEM is **per SM**. A CTA uses the columns it allocated, addressed `lane << 16 | column`.
#
# * One warp runs `tcgen05.alloc`. It takes columns in powers of two from 32 to 512 and writes the
#   address to shared memory. It **blocks** while they are taken. `tcgen05.dealloc` gives them
#   back. Allocated columns are **not zeroed**.
# * Warp *w* reads only lanes 32·(w mod 4) … +31, so the epilogue needs four warps.
#
# `tmem.TmemAllocator` models these rules:

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
# **Predict, then try:** change the first `alloc(256, …)` to `alloc(512, …)` and rerun. Does `alloc(128, …)` still succeed?
# <details><summary>Answer</summary>No: 512 takes every column, so it raises `TmemError`
# (0 free).</details>

# %% [markdown]
# **One case, worked.** Take three elements D[r][c] of the second 128×256 accumulator. It
# starts at column 256. The cell prints each one's address and the epilogue warp that may
# `tcgen05.ld` it. The kernel's epilogue warps are 2–5 (`kernels/tcgen05.cu`).

# %%
two, lay = tmem.TmemAllocator(), tmem.AccumulatorLayout(128, 256)
base = [two.alloc(256, warp=1) for _ in range(2)][1]
for r, c in [(0, 0), (37, 200), (127, 255)]:
    lane, col = int(lay.lane(r, c)), tmem.split_address(base)[1] + int(lay.column(r, c))
    addr, w = tmem.address(lane, col), tmem.reader_warp(lane, warps=range(2, 6))
    notebook.claim(addr == base + (r << 16) + c and w % 4 == r // 32, f"D[{r}][{c}]: lane {lane}, column {col} → {addr:#010x}, warp {w}")

# %% [markdown]
# Row r fills the top 16 bits; column base + c fills the low 16. So D[37][200] is
# 37 << 16 = 0x250000, plus 456 = 0x1c8. The reader is the warp whose number mod 4 is the lane's
# quarter: warp 4 reads rows 0–31. Any four consecutive warps cover the 128 rows.

# %% [markdown]
# ## 5. The kernel: compiled for sm_100a, disassembled here
#
# The chapter's GEMM (`kernels/tcgen05.cu`) has a TMA producer warp, one thread that issues the
# MMAs, and four epilogue warps that read TMEM with `tcgen05.ld`.
#
# **Exercise 1 — write one k-tile of the MMA thread.** `issue_ktile(t, kt, s)` runs on each of
# warp 1's threads for k-tile kt in stage s (of `t.stages`). The calls:
#
# * `t.elected` is true on lane 0 only: one thread of the warp.
# * `t.wait(barrier, parity)` returns once that phase has completed. `t.full[s]` completes when
#   stage s's bytes have landed. `t.empty[s]` hands stage s back to the producer.
# * `t.fence_after()` (`tcgen05.fence::after_thread_sync`) orders the `tcgen05` operations after it
#   behind the waits before it. A wait alone does not.
# * `t.mma(s, j, accumulate)` issues k-step j < `t.steps` from stage s. `accumulate` is PTX's
#   `enable_input_d`.
# * `t.commit(barrier)` (`tcgen05.commit`) arrives once on the barrier when every MMA the thread
#   issued has completed.
#
# **The rules one k-tile keeps.** The order of your calls is yours to find.
#
# * *Who:* one thread issues a CTA's `tcgen05` work.
# * *Data:* no MMA may read stage s before its bytes have landed. The MMA thread is the ring's
#   consumer: the course's [phase parity](../docs/glossary.md#phase-parity) rule names its parity.
# * *Order:* a wait does not order the `tcgen05` operations that follow it.
# * *Accumulate:* TMEM is not zeroed, and the whole k-loop sums into one accumulator.
# * *Release:* stage s goes back to the producer only when every MMA that reads it has completed.
#
# The kernel's loop appears once yours passes.

# %%
def issue_ktile(t, kt, s):
    ...   # your code


ok = exercises.check("ch09.mma_issue", issue_ktile)

# %% [markdown]
# In the loop below, **`leader`** is true in the CTA that issues for its pair (cluster rank 0's),
# and always without a pair. A **slab** is 64 elements of K: in fp16 one
# [swizzle](../docs/glossary.md#swizzle) atom, the pattern's repeating unit of 8 rows × 128 bytes.

# %% output answers a prediction
if exercises.after("ch09.mma_issue"):
    display(notebook.show_source("tcgen05.cu", start=r"if \(lane == 0 && leader\) \{",
                                 end=r"tcgen05_commit_multicast<2>\(smem_u32\(&empty_bar"))

# %% [markdown]
# In the listing: `lane == 0` is `t.elected`. Only the leader's thread issues. Its one
# `tcgen05.mma` does the pair's whole tile: it reads both CTAs' shared memory and writes both
# CTAs' TMEM.
# In a CTA pair `tcgen05_commit_multicast<2>` arrives on both CTAs' barriers.
#
# In the SASS, `tcgen05.mma` is `UTCHMMA` (BK/16 of them) and `tcgen05.commit` is `UTCBAR`. The
# cell counts both and checks the descriptors against the models above. Going further:
# [09c §5](09c_blackwell_datapath.ipynb) reads the SASS around them.

# %% output varies
configs = [kernels.GemmConfig("float16", 128, 256, 64, 4, 1), kernels.GemmConfig("float16", 256, 256, 64, 4, 2)]
assert lesson.show_sass(configs)   # notebook.how(lesson.show_sass) prints its code

# %% [markdown]
# ## 6. Hopper → Blackwell
#
# Who issues: a warpgroup → one thread. The accumulator: registers → TMEM. Waiting: wait_group →
# `tcgen05.commit` and an mbarrier. `wgmma.fence` has no counterpart, because `tcgen05.mma` reads
# no registers. The `tcgen05.fence::*_thread_sync` pair does a different job: exercise 1's fence,
# around a sync.
#
# **Play** (ungraded). With `TmemAllocator`, make sixteen `alloc(32, warp=1)`, dealloc two that
# are not neighbours, then `alloc(64, warp=1)`. 64 columns are free: does it fit? With
# `InstrDescriptor`, set `n=96`: which field changes, and to what? Then `n=264`: what does the
# descriptor say, and why?
#
# **On a GPU:** only a Blackwell one (sm_100a) runs
# `python -m asynctc record tcgen05 --no-save`. It checks every build, then times each beside
# cuBLAS. This course has no such record.
#
# Going further: [09c §6](09c_blackwell_datapath.ipynb) gives the table concept by concept, with
# each side's SASS.

# %% [markdown]
# ## Exercises
#
# **2.** A kernel with 128×96 fp32 tiles of D keeps **two** accumulators in TMEM, side by side
# in one allocation. The MMAs sum the next tile into one while the epilogue reads the other out.
# How many columns must `tcgen05.alloc` request (one CTA)? TMEM's columns and its allocation
# rules decide.

# %%
answer = ...
ok = exercises.check("ch09.tmem_columns", answer, m=128, n=96, accumulators=2)

# %% [markdown]
# **What you learned:** the accumulator lives in TMEM; one thread issues the MMA; an mbarrier says
# when it is done.
#
# Going further: deep dives [09c — where the accumulator lands, one tile emulated](09c_blackwell_datapath.ipynb);
# [09b — a persistent Blackwell GEMM](09b_blackwell_persistent.ipynb).
#
# **Next:** [chapter 10](10_claims.ipynb), the seed article's claims.

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
exercises.check("ch09.tmem_columns", 256, m=128, n=96, accumulators=2, solution=True)  # lane = row: 96 columns each; 2 × 96 = 192 → 2^k ≥ 32


def issue_ktile(t, kt, s):
    if t.elected:                                      # one thread issues (tcgen05.mma is not .sync.aligned)
        t.wait(t.full[s], (kt // t.stages) & 1)        # fill kt // stages: its phase's parity
        t.fence_after()                                # tcgen05 ops after the wait, not before it
        for j in range(t.steps):
            t.mma(s, j, accumulate=(kt > 0 or j > 0))  # only the k-loop's first MMA overwrites D
        t.commit(t.empty[s])                           # after the MMAs: the stage is free once they completed


ok = exercises.check("ch09.mma_issue", issue_ktile, solution=True)
