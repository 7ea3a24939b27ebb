# %% [markdown]
# # 03 — TMA and mbarrier: one thread moves a whole tile
#
# **Learning goal.** Copy a tile with the Tensor Memory Accelerator; wait for it with an mbarrier.
#
# **In plain words.** The [Tensor Memory Accelerator (TMA)](../docs/glossary.md#tma) is a copy
# engine beside each SM. A [*tensor map*](../docs/glossary.md#tensor-map) describes a global tensor
# to it; one thread asks for a tile, a [*box*](../docs/glossary.md#box). An
# [*mbarrier*](../docs/glossary.md#mbarrier), a barrier in shared memory, counts the bytes in.
# Deep dive: [03b](03b_tma_boxes.ipynb).

# %% output varies
from asynctc.core import exercises, notebook, records, worklog
from asynctc import tma

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. Tensor maps: which order?
#
# The driver answers a bad tensor map with a bare `CUDA_ERROR_INVALID_VALUE`; `tma.validate`
# checks every field first and names the one that is wrong.
#
# 1. `tma.validate` takes `shape` and `box` rows first: `box=(128, 64)` is 128 rows × 64 columns.
# 2. The copy names the column first: (c0, c1) = (column, row).
#
# Rows past the edge (orange) arrive as zeros; their bytes still count. More edges:
# [03b §1](03b_tma_boxes.ipynb).

# %% output varies
spec = tma.validate(address=0x7F0000000000, shape=(4096, 4096), dtype="float16",
                    box=(128, 64), swizzle=128)               # box: (rows, columns)
fig = tma.plot_box_over_tensor(spec, at=(256, 512), edge=(1024, 4032))   # (c0, c1) = (column, row)

# %% [markdown]
# ## 2. Swizzle modes as bank maps
#
# Two lanes reading different words of one bank wait: a
# [bank conflict](../docs/glossary.md#bank-conflict). `ldmatrix` reads one 16-byte chunk from each
# of 8 rows. Below, 8 rows of a box, each chunk coloured by its 4 banks. Unswizzled, a column is one
# colour: 8-way. **128B [swizzle](../docs/glossary.md#swizzle)** XORs a chunk's index with the row
# index mod 8: 8 colours, no conflict.

# %% output varies
fig = tma.plot_chunk_maps(swizzles=(0, 128))

# %% [markdown]
# ## 3. The mbarrier life cycle
#
# No thread carries TMA's bytes: `__syncthreads` cannot wait for them. One fill:
#
# 1. `init`: the barrier expects one arrival.
# 2. One thread arrives with [`expect_tx`](../docs/glossary.md#expect_tx), the bytes to come
#    (the **tx-count**), and starts the copy. Bytes landing lower it.
# 3. At zero arrivals and zero bytes, the barrier's *phase* completes; the next opens.
# 4. Readers wait on its [*phase parity*](../docs/glossary.md#phase-parity), the phase number
#    mod 2: a wait on parity P passes unless the open phase has parity P.
#
# Why numbered phases: one barrier serves every fill, so a "ready" flag would still be set from the
# last one. Why mod 2 is enough: a waiter wants the open phase or the one before, never older
# ([03b §5](03b_tma_boxes.ipynb)).
#
# Below, steps 2–4 in `kernels/tma.cu` (whole, with PTX: [03b §3](03b_tma_boxes.ipynb)), then the GPU: would
# a wait on parity 0 or 1 pass? A ✓ marks what the PTX ISA's rule predicts. Step 6 waits for a
# phase that never completes, on purpose: the wait gives up after a bound instead of hanging.

# %% output varies
display(notebook.show_source("tma.cu", start=r"^  fence_proxy_async_shared_cta\(\);   // the sentinel", end=r"if \(!ok\) return;"))
crec = records.load_or_measure("tma_checks", tma.measure_tma_checks)
tma.checks.show_lifecycle(crec)
notebook.require(all(s["as_expected"] for s in crec.results["lifecycle"]["steps"]), "✓ at every step")

# %% [markdown]
# The fence orders threads' writes before TMA's [*async proxy*](../docs/glossary.md#proxy) path
# ([03b §4](03b_tma_boxes.ipynb)).
#
# **Parity, fill by fill.** From chapter 05, a stage has barriers *full* (bytes landed) and
# *empty* (readers done). Fill f completes phase f of each:
#
# | fill f | consumer waits on full with | producer, before fill f, waits on empty with |
# |---:|---:|---:|
# | 0 | 0 | 1 (fresh: passes) |
# | 1 | 1 | 0 |
# | f | f mod 2 | (f + 1) mod 2 |
#
# Later code names the columns: 05's `pos.phase` and `rp`, 06's `phase` and `phase ^ 1`.

# %% [markdown]
# **Play** (ungraded): in §2, `swizzles=(64,)`: colours in column 0?
# **On a GPU:** `python -m asynctc record tma_checks --no-save` re-measures the life cycle above.

# %% [markdown]
# ## Exercises
#
# **Worked, a smaller box:** 64 rows × 32 fp16, k-tile 3, rows from 192: `tma_load_2d(dst, map,
# bar, 96, 192)`, 4096 bytes; a second box goes at `dst + 4096`.
#
# **1. Fill one stage** with k-tile `kt`: A's `BM`×`BK` box of map `ta` (rows from `m0`), then
# B's `BN`×`BK` box of `tb` (B stored N×K, rows from `n0`). fp16, `BM` = `BN` = 128, `BK` = 64.
# Write `fill_stage(ta, tb, stage, full_bar, kt, m0, n0)`; one barrier, `full_bar`, covers both.
# `stage` and `full_bar` are shared-memory byte addresses; B's box follows A's.

# %%
lines = """...   // mbarrier_arrive_expect_tx(full_bar, ?); then tma_load_2d(?, ?, full_bar, ?, ?) twice"""
ok = exercises.check("ch03.stage_fill", lines)

# %% [markdown]
# **2. Write the 128-byte swizzle** `swizzle_128b(offset)`: where TMA puts byte `offset` of a box
# with 128-byte rows in a 1024-byte aligned buffer (§2's rule). Use `def`: later chapters run it.

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
# **Predict first.** Per box of chapter 05, cp.async needs 1024 instructions, TMA one. More GB/s
# for TMA, or the same? *We measured* answers ([03b §2](03b_tma_boxes.ipynb)).

# %% output answers a prediction
print(worklog.entry("03"))

# %% [markdown]
# **Your GEMM so far**: your two pieces in one tile on the CPU, checked against float64
# ([06e](06e_your_gemm_on_the_cpu.ipynb)).

# %% output varies
from asynctc.models.gemm_so_far import so_far

so_far("03")

# %% [markdown]
# **What you learned.** Tensor maps, swizzle, an mbarrier's bytes and parity.
# **Next:** [chapter 04](04_wgmma.ipynb).
