# %% [markdown]
# # 03 — TMA and mbarrier: one thread moves a whole tile
#
# **Learning goal.** Describe a tile copy to the Tensor Memory Accelerator, see where its bytes
# land, and wait for them with an mbarrier.
#
# **In plain words.** The [Tensor Memory Accelerator (TMA)](../docs/glossary.md#tma) is a copy
# engine beside each SM. You describe a global tensor to it once, in a
# [*tensor map*](../docs/glossary.md#tensor-map); then one thread asks it for a tile, a
# [*box*](../docs/glossary.md#box), and it writes the box into shared memory in a bank-friendly
# order. No thread carries those bytes, so an [*mbarrier*](../docs/glossary.md#mbarrier), a
# barrier object in shared memory, counts them in, and the threads wait on it.
#
# **The story.** Chapter 02 filled a stage with 128 threads' 16-byte copies; TMA needs one
# instruction. Deep dive: [03b — TMA at the edges and by box size](03b_tma_boxes.ipynb).

# %% output varies
from asynctc.core import exercises, notebook, records
from asynctc import tma

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. Tensor maps, validated before the driver sees them
#
# The driver answers any bad argument with a bare `CUDA_ERROR_INVALID_VALUE`, so `tma.validate`
# checks every rule first and names the field it refuses ([03b §1](03b_tma_boxes.ipynb)). Below,
# chapter 05's A map.
#
# **Which order?** `tma.validate` takes `shape` and `box` rows first, as numpy does:
# `box=(128, 64)` is 128 rows × 64 columns. The driver (`cuTensorMapEncodeTiled`) and the copy's
# coordinates name the contiguous dimension first: `boxDim` = (64, 128), and a box starts at
# (c0, c1) = (column, row). Box 2 hangs 64 rows past the edge; TMA fills them with zeros and still
# counts their bytes.

# %% output varies
spec = tma.validate(address=0x7F0000000000, shape=(4096, 4096), dtype="float16",
                    box=(128, 64), swizzle=128)               # box: (rows, columns), numpy's order
fig = tma.plot_box_over_tensor(spec, at=(256, 512), edge=(1024, 4032))   # (c0, c1) = (column, row)

# %% [markdown]
# ## 2. Swizzle modes as bank maps
#
# Shared memory has 32 banks of 4 bytes. Two lanes reading different words of one bank wait for
# each other, a [bank conflict](../docs/glossary.md#bank-conflict). A 16-byte chunk spans 4 banks,
# a *bank group*, and a 128-byte line has 8 groups.
#
# `ldmatrix` (chapter 01) reads one chunk from each of 8 rows. Each panel shows 8 rows of a box,
# coloured by bank group: a column of one colour is an 8-way conflict, 8 colours none.
#
# * **No swizzle.** Every 128-byte row starts at bank 0, so a column is one colour.
# * **128B [swizzle](../docs/glossary.md#swizzle)** XORs a chunk's index with the row index mod 8.
#   Bytes keep their place in the chunk. Column 0 covers groups 0 to 7, all 32 banks.
# * **32B and 64B swizzle** serve narrow boxes the same way.
#
# The GPU agrees byte for byte ([03b §3](03b_tma_boxes.ipynb)).

# %% output varies
fig = tma.plot_chunk_maps(swizzles=(0, 32, 64, 128))

# %% [markdown]
# ## 3. The mbarrier life cycle
#
# **Why a new barrier.** `__syncthreads` waits for threads, and no thread carries these bytes.
# An mbarrier is told how many bytes to expect, and the copy engine counts them off. One barrier
# guards every fill of a stage, so it numbers its rounds, its *phases*: a plain "ready" flag
# would still say "ready" from the last fill.
#
# A phase counts pending arrivals (set by `init`, lowered by each `arrive`) and pending bytes, the
# **tx-count** (set by [`expect_tx`](../docs/glossary.md#expect_tx), lowered by each copy's
# `complete_tx`). When both reach zero, the phase completes and the next opens. A wait names a
# [*phase parity*](../docs/glossary.md#phase-parity) P, the phase's number mod 2.
#
# **The rule** (PTX ISA, *mbarrier.test_wait/try_wait*). A wait on parity P passes unless the open
# phase has parity P. With phases 0 and 1 complete and 2 open, a wait on 1 passes and a wait on 0
# waits.

# %% [markdown]
# **The load path in code.** `tma_load_dump` (`kernels/tma.cu`) loads one box as chapter 05 loads
# a stage; under it, the wrappers' PTX. Its `.shared::cluster` names a
# [cluster](../docs/glossary.md#cluster), a group of CTAs that can address each other's shared
# memory (chapter 06); a CTA on its own is a cluster of one, so here it is the CTA's own.

# %%
notebook.show_source("tma.cu", start=r'^extern "C" __global__ void tma_load_dump', end=r"if \(!ok\) return;",
    ptx=("mbarrier_init", "mbarrier_arrive_expect_tx",
         "tma_load_2d", "mbarrier_try_wait_parity"),
    more=(("ptx/mbarrier.cuh", r"bool mbarrier_wait_parity_bounded", r"^}"),))

# %% [markdown]
# Thread 0's `expect_tx` is the barrier's one arrival. The wait is **bounded** (`max_tries`
# rounds or 2 s), so a wrong byte count or parity cannot hang the GPU.
#
# **Why a proxy fence.** Threads reach shared memory by the *generic proxy*, TMA and wgmma by the
# [*async proxy*](../docs/glossary.md#proxy); `__syncthreads` orders threads, not proxies. Without
# `fence_proxy_async_shared_cta` the sentinel bytes could land after TMA's
# ([03b §4](03b_tma_boxes.ipynb)).
#
# `mbarrier_lifecycle` runs the cycle on the GPU. After each step, would a wait on parity 0 and on
# parity 1 pass? ✓ marks the PTX ISA's answer. Step 6 waits in vain, on purpose.

# %% output varies
crec = records.load_or_measure("tma_checks", tma.measure_tma_checks)
tma.checks.show_lifecycle(crec)          # raises if a step or a box read back differs from the PTX ISA

# %% [markdown]
# Step 3 is the rule's example. On a fresh barrier (step 0) wait(1) passes, so a producer waiting
# for an empty stage starts on parity 1 (chapters [05](05_pipelines.ipynb), [08](08_pitfalls.ipynb)).
#
# **One ring stage, fill by fill.** From chapter 05 on, a stage has two barriers: *full* (its
# bytes landed) and *empty* (its readers are done). Fill f of the stage completes phase f of each.
# This table is the whole parity rule of every later chapter:
#
# | fill f | the consumer waits on full with | the producer, before fill f, waits on empty with | why |
# |---:|---:|---:|---|
# | 0 | 0 | 1 | empty is fresh: parity 1 passes at once |
# | 1 | 1 | 0 | empty's phase 0 completed when fill 0 was released |
# | 2 | 0 | 1 | the parities repeat every two fills |
# | f | f mod 2 | (f + 1) mod 2 | the phase before fill f is f − 1 |
#
# The kernels name the producer's column differently: 05's `rp`, 06's `phase ^ 1`, 08's
# (f + 1) mod 2. They are one column of this table.

# %% [markdown]
# ## Exercises
#
# **1. Fill one stage.** A stage of chapter 05's ring contains k-tile `kt` of A, A's `BM`×`BK` box of
# tensor map `ta` (rows from `m0`), then right after it B's `BN`×`BK` box of `tb` (B stored N×K,
# rows from `n0`). fp16, `BM` = `BN` = 128, `BK` = 64. One barrier, `full_bar`, covers both;
# `stage` and `full_bar` are `u32` shared-memory addresses. Write the lines of
# `fill_stage(ta, tb, stage, full_bar, kt, m0, n0)` with `tma_load_2d(dst, map, bar, c0, c1)`:
# **c0 is the column** (along K), c1 the row.

# %%
lines = """...   // mbarrier_arrive_expect_tx(full_bar, ?); then tma_load_2d(?, ?, full_bar, ?, ?) twice"""
ok = exercises.check("ch03.stage_fill", lines)

# %% [markdown]
# **2. Write the 128-byte swizzle** `swizzle_128b(offset)`: where TMA puts byte `offset` of a box
# with 128-byte rows in a 1024-byte aligned buffer (section 2's rule).

# %%
def swizzle_128b(offset):
    ...   # your code: return the swizzled byte offset, an int


ok = exercises.check("ch03.swizzle_128b", swizzle_128b)

# %% [markdown]
# <details><summary>Solutions (run in CI)</summary>The cell below is the worked solution.</details>

# %%
lines = """
mbarrier_arrive_expect_tx(full_bar, (BM + BN) * BK * 2);      // both boxes: 16384 + 16384 bytes
tma_load_2d(stage, ta, full_bar, kt * BK, m0);                // A: column kt*BK, row m0
tma_load_2d(stage + BM * BK * 2, tb, full_bar, kt * BK, n0);  // B: right after A's 16384 bytes
"""
ok = exercises.check("ch03.stage_fill", lines, solution=True)


def swizzle_128b(offset):
    row, chunk, byte = offset // 128, offset % 128 // 16, offset % 16
    return row * 128 + (chunk ^ row % 8) * 16 + byte


ok = exercises.check("ch03.swizzle_128b", swizzle_128b, solution=True)  # in bits: offset ^ ((offset >> 7) & 7) << 4

# %% [markdown]
# ## Worklog
#
# **Predict first.** At chapter 05's 128×64 box cp.async needs 1024 instructions, TMA one. More
# GB/s for TMA, or about the same? The worklog's *we measured* line answers from the record
# `tma_equal`; [03b §2](03b_tma_boxes.ipynb) runs every box size.

# %% output answers a prediction
from asynctc.core import worklog

worklog.show("03")

# %% [markdown]
# **Your GEMM so far**, with your stage fill and swizzle: one tile on the CPU, checked against
# float64 (read it in deep dive [06e](06e_your_gemm_on_the_cpu.ipynb)).

# %% output varies
from asynctc.models.gemm_so_far import so_far

so_far("03")

# %% [markdown]
# **What you learned.** Tensor maps, swizzle, an mbarrier's bytes and parity.
# **Next:** [chapter 04](04_wgmma.ipynb).
