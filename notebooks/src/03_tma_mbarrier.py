# %% [markdown]
# # 03 — TMA and mbarrier: one thread moves a whole tile
#
# **Learning goal.** Copy a tile with the Tensor Memory Accelerator; wait for it with an mbarrier.
#
# **In plain words.** The [Tensor Memory Accelerator (TMA)](../docs/glossary.md#tma) is a copy
# engine beside each SM. You describe a global tensor to it once, in a
# [*tensor map*](../docs/glossary.md#tensor-map). Then one thread asks it for a tile, a
# [*box*](../docs/glossary.md#box), and it writes the box into shared memory. An
# [*mbarrier*](../docs/glossary.md#mbarrier), a barrier object in shared memory, counts the bytes
# in. Chapter 02 needed many threads' copies per stage; TMA needs one instruction.
#
# Going further: [03b, TMA at the edges](03b_tma_boxes.ipynb).

# %% output varies
from asynctc.core import exercises, notebook, records
from asynctc import tma

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. Tensor maps, validated before the driver sees them
#
# The driver answers a bad argument with a bare `CUDA_ERROR_INVALID_VALUE`; `tma.validate` names
# the field. **Which order?**
#
# 1. `tma.validate` takes `shape` and `box` rows first, like numpy: `box=(128, 64)` is 128 rows
#    × 64 columns.
# 2. The copy instruction names the contiguous dimension first: a box starts at (c0, c1) =
#    (column, row).
#
# Rows past the edge (orange) arrive as zeros; their bytes still count. Going further:
# [03b §1](03b_tma_boxes.ipynb), boxes past every edge.

# %% output varies
spec = tma.validate(address=0x7F0000000000, shape=(4096, 4096), dtype="float16",
                    box=(128, 64), swizzle=128)               # box: (rows, columns)
fig = tma.plot_box_over_tensor(spec, at=(256, 512), edge=(1024, 4032))   # (c0, c1) = (column, row)

# %% [markdown]
# ## 2. Swizzle modes as bank maps
#
# Shared memory has 32 banks of 4 bytes. Two lanes reading different words of one bank wait for
# each other: a [bank conflict](../docs/glossary.md#bank-conflict). A 16-byte chunk covers 4 banks,
# a *bank group*.
#
# `ldmatrix` (chapter 01) reads one chunk from each of 8 rows. Below, 8 rows of a box coloured by
# bank group: a column of one colour is an 8-way conflict, of 8 colours none.
#
# * **No swizzle.** Every row starts at bank 0: each column is one colour.
# * **128B [swizzle](../docs/glossary.md#swizzle)** XORs a chunk's index with the row index mod 8:
#   column 0 meets every bank group. 32B and 64B swizzle do the same for narrower boxes.
#
# Going further: [03b §3](03b_tma_boxes.ipynb), the same on the GPU.

# %% output varies
fig = tma.plot_chunk_maps(swizzles=(0, 32, 64, 128))

# %% [markdown]
# **Predict, then change it.** Set `swizzles=(64,)` and rerun: how many colours in column 0, so
# how many ways does `ldmatrix` conflict? Then try `(0,)`. <details><summary>Answer</summary>
# 64B: 8 colours, none. No swizzle: 1 colour, 8-way.</details>

# %% [markdown]
# ## 3. The mbarrier life cycle
#
# No thread carries these bytes, so `__syncthreads` cannot wait for them; an mbarrier counts them.
# One fill:
#
# 1. `init`: the barrier expects one arrival.
# 2. One thread arrives with [`expect_tx`](../docs/glossary.md#expect_tx), setting the pending
#    bytes, the **tx-count**.
# 3. It starts the copy. Landing bytes lower the tx-count.
# 4. At zero arrivals and zero bytes, the barrier's *phase* completes; the next opens.
# 5. Consumers wait on its [*phase parity*](../docs/glossary.md#phase-parity) (number mod 2), then
#    read.
#
# Phases are numbered because one barrier serves every fill: a "ready" flag would still be set from
# the last one. A wait names a parity, not a phase number, because a waiter never lags by two
# phases: it wants the open phase or the one before, and mod 2 tells them apart.
#
# **The rule** (PTX ISA, *mbarrier.test_wait/try_wait*). A wait on parity P passes unless the open
# phase has parity P.

# %% [markdown]
# **The code.** `tma_load_dump` (`kernels/tma.cu`) runs steps 1–5 for one box; below it, its
# PTX. Its `.shared::cluster` names a [cluster](../docs/glossary.md#cluster),
# a group of CTAs that read each other's shared memory; a CTA alone is a cluster of one. Then
# `mbarrier_lifecycle` on the GPU: after each step, would a wait on parity 0 or 1 pass? ✓ marks the
# PTX ISA's answer. Step 6 waits in vain, on purpose.

# %% output varies
display(notebook.show_source("tma.cu", start=r'^extern "C" __global__ void tma_load_dump', end=r"if \(!ok\) return;",
    ptx=("mbarrier_init", "mbarrier_arrive_expect_tx", "tma_load_2d", "mbarrier_try_wait_parity"),
    more=(("ptx/mbarrier.cuh", r"for \(u32 i = 1; i < max_tries", r"atomicCAS"),)))
crec = records.load_or_measure("tma_checks", tma.measure_tma_checks)
tma.checks.show_lifecycle(crec)
notebook.require(all(s["as_expected"] for s in crec.results["lifecycle"]["steps"]), "✓ at every step")

# %% [markdown]
# * The wait is **bounded**: a wrong byte count cannot hang the GPU.
# * **A proxy fence.** Threads write shared memory through the *generic proxy*, TMA through the
#   [*async proxy*](../docs/glossary.md#proxy), a separate path into memory;
#   `fence_proxy_async_shared_cta` orders the two.
#
# **One ring stage, fill by fill.** From chapter 05 on, a stage has two barriers: *full* (bytes
# landed) and *empty* (readers done). Fill f completes phase f of each. Every later chapter's rule:
#
# | fill f | consumer waits on full with | producer, before fill f, waits on empty with | why |
# |---:|---:|---:|---|
# | 0 | 0 | 1 | empty is fresh: 1 passes |
# | 1 | 1 | 0 | fill 0's release completed phase 0 |
# | 2 | 0 | 1 | repeats every two fills |
# | f | f mod 2 | (f + 1) mod 2 | waits for phase f − 1 |
#
# **So:** 05's `rp`, 06's `phase ^ 1` and 08's (f + 1) mod 2 are all this producer column.
#
# Going further: [03b §4](03b_tma_boxes.ipynb), the proxy fence, modelled.

# %% [markdown]
# **Play** (ungraded): in §1, `at=(4000, 1000)` pushes the box past the right edge: which
# columns turn orange? Then `print(*tma.checks.swizzle_lines(crec.results), sep="\n")`: the
# record's verdict on §2's maps. **On a GPU:** `python -m asynctc record tma_checks --no-save`
# re-measures it; compare its summary's swizzle count with the first of these lines.

# %% [markdown]
# ## Exercises
#
# **Worked first, a smaller box** (not the exercise's): fp16, 64 rows × 32 columns, k-tile 3,
# rows from 192. `tma_load_2d(dst, map, bar, c0, c1)` names the column first:
#
# * c0 = 3 · 32 = 96, the first column (along K); c1 = 192, the first row.
# * The box is 64 · 32 · 2 = 4096 bytes: that is `expect_tx`'s count, and a second box goes at
#   `dst + 4096`.
#
# **1. Fill one stage.** Stage k-tile `kt`: A's `BM`×`BK` box of map `ta` (rows from `m0`), then
# B's `BN`×`BK` box of `tb` (B stored N×K, rows from `n0`). fp16, `BM` = `BN` = 128,
# `BK` = 64. One barrier, `full_bar`, covers both. Write
# `fill_stage(ta, tb, stage, full_bar, kt, m0, n0)`. `stage` and `full_bar` are `u32`
# shared-memory byte addresses; B's box goes right after A's.

# %%
lines = """...   // mbarrier_arrive_expect_tx(full_bar, ?); then tma_load_2d(?, ?, full_bar, ?, ?) twice"""
ok = exercises.check("ch03.stage_fill", lines)

# %% [markdown]
# **2. Write the 128-byte swizzle** `swizzle_128b(offset)`: where TMA puts byte `offset` of a box
# with 128-byte rows in a 1024-byte aligned buffer (§2's rule). Write it with `def` (a lambda
# passes but is not kept for the later chapters that run your pieces).

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
# **Predict first.** For chapter 05's box, cp.async needs a thousand instructions, TMA one. More
# GB/s for TMA, or about the same? The *we measured* line answers, from the record `tma_equal`.
# Going further: [03b §2](03b_tma_boxes.ipynb).

# %% output answers a prediction
from asynctc.core import worklog

worklog.show("03")
gb = {c["variant"]: c["gbps"] for c in records.load("tma_equal").results["copies"]
      if c["fp16_box"] == "128x64" and "loads" in c["kinds"]}      # the 16 KiB box, equal loads in flight
print(f"TMA / cp.async: {notebook.ratio(gb['tma'], gb['cp_async'], 'GB/s')}")
notebook.require(abs(gb["tma"] / gb["cp_async"] - 1) < 0.05, "the same bandwidth within 5 %", **gb)

# %% [markdown]
# **Your GEMM so far**, with your stage fill and swizzle: one tile on the CPU, checked against
# float64 (read it in deep dive [06e](06e_your_gemm_on_the_cpu.ipynb)).

# %% output varies
from asynctc.models.gemm_so_far import so_far

so_far("03")

# %% [markdown]
# **What you learned.** Tensor maps, swizzle, an mbarrier's bytes and parity.
# **Next:** [chapter 04](04_wgmma.ipynb).
