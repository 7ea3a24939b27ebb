# %% [markdown]
# # 03 — TMA and mbarrier: one thread moves a whole tile
#
# **Learning goal.** Describe a tile copy to the Tensor Memory Accelerator, know where its bytes land
# in shared memory, and wait for them with an mbarrier.
#
# **The story.** [TMA](../docs/glossary.md#tma) is a copy engine. A [*tensor map*](../docs/glossary.md#tensor-map) describes a tensor in global memory and
# the [*box*](../docs/glossary.md#box) (tile) one copy moves. One thread issues `cp.async.bulk.tensor`, and an
# [*mbarrier*](../docs/glossary.md#mbarrier) (a barrier object in shared memory) counts the bytes as they land.
#
# Deep dive: [03b — TMA at the edges and by box size](03b_tma_boxes.ipynb).

# %% output varies
from IPython.display import Markdown

from asynctc.core import exercises, notebook, records
from asynctc import tma
from asynctc.models import banks

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. Tensor maps, validated before the driver sees them
#
# The driver's `cuTensorMapEncodeTiled` answers any bad argument with a bare
# `CUDA_ERROR_INVALID_VALUE`, so `asynctc.tma` checks every rule in Python first. Below: chapter
# 05's A map, the driver's arguments for it, then one field broken. The driver lists dimensions
# innermost (contiguous) first, so `globalDim` is (columns, rows).

# %%
good = dict(address=0x7F0000000000, shape=(4096, 4096), dtype="float16", box=(128, 64), swizzle=128)
spec = tma.validate(**good)
print(spec.smem_tile().describe(), "| expect_tx:", spec.box_bytes, "bytes\n")
print(tma.driver_args_table(spec))
try:
    tma.validate(**{**good, "box": (128, 128)})         # one field changed
except tma.TensorMapError as e:
    print("\nTensorMapError:", e)

# %% [markdown]
# ## 2. Swizzle modes as bank maps
#
# Shared memory has 32 banks of 4 bytes, so a 128-byte row covers each bank once. Read one
# 16-byte chunk down 8 such rows and you hit the same 4 banks 8 times. That is an 8-way
# [bank conflict](../docs/glossary.md#bank-conflict).
#
# The 128-byte [swizzle](../docs/glossary.md#swizzle) XORs a chunk's index in its row with the
# row index mod 8. Bytes keep their place inside a chunk. The 8 reads now hit 8 different bank
# groups (checked on the GPU in [03b §3](03b_tma_boxes.ipynb)).

# %% output varies
fig = tma.plot_chunk_maps(swizzles=(0, 32, 64, 128))

# %% [markdown]
# **Try it: change `SWIZZLE` and `ROW_BYTES` and re-run.** `SWIZZLE = 0` brings back the 8-way
# conflict; then try `ROW_BYTES = 64`.

# %%
SWIZZLE = 128                             # 0, 32, 64 or 128
ROW_BYTES = 128                           # 16 … 128
print(banks.chunk_columns(SWIZZLE, ROW_BYTES))

# %% [markdown]
# ## 3. The mbarrier life cycle
#
# An mbarrier counts two things per *phase* (one round of use):
#
# | counter | set by | lowered by |
# |---|---|---|
# | pending arrivals | `init` | each thread's `arrive` |
# | pending bytes, the **tx-count** | [`expect_tx`](../docs/glossary.md#expect_tx) | each TMA copy's `complete_tx` |
#
# When both reach zero, the phase completes and the next one opens. Phases are numbered 0, 1, 2, …
# A wait does not name a phase. It names a [*phase parity*](../docs/glossary.md#phase-parity) P,
# a phase's number mod 2.
#
# **An example.** A barrier has completed phases 0 and 1. Phase 2 is open.
#
# * A wait on parity 1 passes, because phase 1 is complete.
# * A wait on parity 0 waits, because parity 0 now means the open phase 2.
#
# **The rule** (PTX ISA, *mbarrier.test_wait/try_wait*). A wait on parity P passes unless the open
# phase has parity P.

# %% [markdown]
# **The load path in code.** `tma_load_dump` (`kernels/tma.cu`) loads one box as chapters 05 and 06
# load each stage; under it, the wrappers' PTX.

# %%
notebook.show_source("tma.cu", start=r'^extern "C" __global__ void tma_load_dump', end=r"if \(!ok\) return;",
    ptx=("mbarrier_init", "mbarrier_arrive_expect_tx",
         "tma_load_2d", "mbarrier_try_wait_parity"),
    more=(("ptx/mbarrier.cuh", r"bool mbarrier_wait_parity_bounded", r"^}"),))

# %% [markdown]
# Reading the listing:
#
# * The tensor map is passed by value (`__grid_constant__`). Thread 0 initialises the barrier with
#   1 arrival, its own `expect_tx`.
# * Threads reach shared memory by the *generic proxy*, TMA and wgmma by the
#   [*async proxy*](../docs/glossary.md#proxy). Only a fence orders the two.
# * The wait is **bounded** (`max_tries` rounds or 2 s), so a wrong byte count or parity cannot
#   hang the GPU.

# %% [markdown]
# `mbarrier_lifecycle` runs the cycle on the GPU. After each step, would a wait on parity 0 and on
# parity 1 pass? ✓ marks the PTX ISA's answer. Step 6 waits in vain, on purpose.

# %% output varies
crec = records.load_or_measure("tma_checks", tma.measure_tma_checks)
lc = crec.results["lifecycle"]
print(crec.label())
print(tma.lifecycle_table(lc["steps"]))
assert lc["passed"] and lc["boxes_ok"]                # every step as expected, the boxes read back intact

# %% [markdown]
# Step 3 is the example above. At step 0, on a fresh barrier, wait(1) passes. So a producer that
# waits for an empty stage starts on parity 1 (chapters [05](05_pipelines.ipynb), [08](08_pitfalls.ipynb)).

# %% [markdown]
# ## 4. TMA against cp.async, the same tiles
#
# In chapter 02, 128 threads fill a stage with 16-byte `cp.async` copies. TMA needs one instruction
# from one thread. The table counts both per box and compares bandwidth. The record
# `tma_equal` ([03b §2](03b_tma_boxes.ipynb)) copied 256 MiB box by box both ways.

# %% output varies
eq = records.load("tma_equal")
rows = tma.equal_bytes.same_tiles(eq.results)     # per box: instructions and GB/s, both ways
print(eq.label())
display(Markdown(tma.equal_bytes.same_tiles_table(rows)))
_ = notebook.verdict(*tma.equal_bytes.same_tiles_verdict(rows))

# %% [markdown]
# **Design it** (no grade). Little's law: bandwidth = bytes in flight ÷ their round trip time.
# How many KiB in flight per SM reach 90 % of the device copy?

# %% output varies
BOX, S, CTAS = (128, 64), 2, 6           # fp16 box, stages, CTAs/SM (§4's run)
print(tma.design(box=BOX, stages=S, ctas=CTAS, equal=eq))

# %% [markdown]
# ## Exercises
#
# **1. Fill one stage.** A stage of chapter 05's ring contains k-tile `kt` of A and of B. A is a
# `BM`×`BK` box of tensor map `ta`, rows from `m0`. B's `BN`×`BK` box of `tb` (B stored N×K)
# follows right after, rows from `n0`. All fp16, `BM` = `BN` = 128, `BK` = 64. One barrier,
# `full_bar`, covers both. `stage` and `full_bar` are `u32` shared-memory addresses.
#
# Write the lines of `fill_stage(ta, tb, stage, full_bar, kt, m0, n0)` with
# `tma_load_2d(dst, map, bar, c0, c1)`. As in section 1, **c0 is the innermost (contiguous)
# coordinate**, here the column along K. c1 is the row.

# %%
lines = """...   // mbarrier_arrive_expect_tx(full_bar, ?); then tma_load_2d(?, ?, full_bar, ?, ?) twice"""
ok = exercises.check("ch03.stage_fill", lines)

# %% [markdown]
# **2. Write the 128-byte swizzle.** A box with 128-byte rows lands in a 1024-byte aligned buffer.
# Write `swizzle_128b(offset)`: the byte offset at which TMA puts byte `offset` of the box, by
# the rule of section 2.

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

# %% output varies tags=["solution"]
print(tma.design_survey(equal=eq))                 # §4's "Design it": every recorded TMA design, model beside record

# %% [markdown]
# ## Worklog

# %% output varies
from asynctc.core import worklog

worklog.show("03")

# %% [markdown]
# **Your GEMM so far**, with your stage fill and swizzle: one tile on the CPU, checked against float64.
# Deep dive [06e](06e_your_gemm_on_the_cpu.ipynb) runs this tile, and shows how to read it.

# %% output varies
from asynctc.models.gemm_so_far import so_far

so_far("03")

# %% [markdown]
# **What you learned.** Tensor maps, swizzle, an mbarrier's bytes and parity.
# **Next:** [chapter 04](04_wgmma.ipynb).
