# %% [markdown]
# # 03 — TMA and mbarrier: one thread moves a whole tile
#
# **Learning goal.** Describe a tile copy to the Tensor Memory Accelerator, know where its bytes land
# in shared memory, and wait for them with an mbarrier.
#
# **The story.** [TMA](../docs/glossary.md#tma) is a copy engine. A [*tensor map*](../docs/glossary.md#tensor-map) describes a tensor in global memory and
# the [*box*](../docs/glossary.md#box) (tile) one copy moves. One thread issues `cp.async.bulk.tensor`, and an
# [*mbarrier*](../docs/glossary.md#mbarrier) (a barrier object in shared memory) counts the bytes as they land. You will
#
# 1. make tensor maps, validated in Python first;
# 2. see where a box's bytes land under each [swizzle](../docs/glossary.md#swizzle) mode, then write the 128-byte one;
# 3. read the load path in CUDA and PTX, and follow the mbarrier life cycle;
# 4. measure TMA against vectorized loads and `cp.async`.
#
# Deep dive: [03b — TMA at the edges and by box size](03b_tma_boxes.ipynb).

# %% output varies
import matplotlib.pyplot as plt

from asynctc.core import exercises, notebook, records
from asynctc import tma
from asynctc.models.layout import SmemTile

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. Tensor maps, validated before the driver sees them
#
# `asynctc.tma.make_tensor_map(array, box, swizzle=…)` ends in the driver's
# `cuTensorMapEncodeTiled`. The driver answers a bad argument with a bare
# `CUDA_ERROR_INVALID_VALUE`. So every rule is checked in Python first, and the error names the
# field, the value and the rule. No GPU needed:

# %%
good = dict(address=0x7F0000000000, shape=(4096, 4096), dtype="bfloat16", box=(64, 64), swizzle=128)
spec = tma.validate(**good)
print(spec.smem_tile().describe(), "| expect_tx:", spec.box_bytes, "bytes")
for bad in (dict(box=(64, 128)), dict(box=(300, 64)), dict(strides=(8200, 2))):
    try:
        tma.validate(**{**good, **bad})                 # one field changed at a time
    except tma.TensorMapError as e:
        print("TensorMapError:", e)

# %% [markdown]
# ## 2. Swizzle modes as bank maps
#
# Shared memory has 32 banks of 4 bytes, so a 128-byte line covers each bank once.
#
# Without swizzle, 128-byte rows all start in bank 0. Reading one 16-byte chunk down 8 rows hits the
# same 4 banks 8 times: an 8-way [bank conflict](../docs/glossary.md#bank-conflict).
#
# **The 128-byte swizzle:** within a 128-byte row, the 16-byte chunk index is XORed with the row
# index mod 8; the byte inside a chunk keeps its place. (In bits of the byte offset: bits 4–6 XOR
# bits 7–9.) Then those 8 reads land in 8 different bank groups. The 64-byte mode does the same on
# 64-byte spans: a chunk's index in its span (0–3) is XORed with the 128-byte line's index mod 4,
# so the pattern repeats every 512 bytes. The 32-byte mode: index 0–1, line mod 2, every 256 bytes.
#
# `SmemTile` is the model (checked byte for byte on the GPU in [03b §3](03b_tma_boxes.ipynb)). The
# map shows, for each 16-byte chunk of each row, which of the 8 four-bank groups it lands in.

# %% output varies
fig = tma.plot_chunk_maps(swizzles=(0, 32, 64, 128))
plt.show()

# %% [markdown]
# The same model counts bank conflicts: 8 lanes reading the 16-byte chunk at column 0 of rows 0–7
# (one `ldmatrix` phase), and 32 lanes reading one 4-byte word down a column:

# %%
for sw in (0, 128):
    t = SmemTile(64, 64, "float16", sw)
    print(f"swizzle {sw:3d}: 16-byte column read {t.conflicts(range(8), [0] * 8, 16)}-way, "
          f"4-byte column read {t.conflicts(range(32), [0] * 32, 4)}-way, "
          f"base alignment {t.required_alignment} B")

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
# A wait names not a phase but a [*phase parity*](../docs/glossary.md#phase-parity) P: a phase's
# number mod 2.
#
# **An example.** A barrier has completed phases 0 and 1; phase 2 is open.
#
# * A wait on parity 1 passes: phase 1 is complete.
# * A wait on parity 0 waits: parity 0 now means the open phase 2, though phase 0 completed long ago.
#
# **The rule** (PTX ISA, *mbarrier.test_wait/try_wait*): a wait on parity P passes unless the open
# phase has parity P.

# %% [markdown]
# **The load path in code.** `tma_load_dump` (`kernels/tma.cu`) loads one box the way chapters 05
# and 06 load every stage. Under it: the PTX each wrapper issues, and the wait. Last, the step of
# section 4's copy kernel `copy_tma` that writes a tile back: a [TMA store](../docs/glossary.md#tma-store).

# %%
notebook.show_source("tma.cu", start=r'^extern "C" __global__ void tma_load_dump', end=r"if \(!ok\) return;",
    ptx=("mbarrier_init", "fence_mbarrier_init", "fence_proxy_async_shared_cta", "mbarrier_arrive_expect_tx",
         "tma_load_2d", "mbarrier_try_wait_parity", "tma_store_2d", "bulk_commit_group", "bulk_wait_group_read"),
    more=(("ptx/mbarrier.cuh", r"bool mbarrier_wait_parity_bounded", r"^}"),
          ("tma.cu", r"^    tma_store_2d\(dst,", r"issue_load\(i \+ CSTAGES - 1\);")))

# %% [markdown]
# Reading the listing:
#
# * The tensor map is a kernel parameter (`__grid_constant__`: the host's 128 bytes, by value).
#   `tma_load_rank` picks the wrapper for the box's rank: here `tma_load_2d(dst, map, bar, c0, c1)`,
#   whose PTX is shown. Its coordinates are innermost first (`c0` the column, `c1` the row); Python's
#   `box=` and `start=` are outermost first (rows, then columns).
#   Thread 0 initialises the barrier with an arrival count of 1: its own `expect_tx`.
# * Threads' loads and stores reach shared memory by the *generic proxy*, TMA and wgmma by the
#   [*async proxy*](../docs/glossary.md#proxy). Only a fence orders the two: `fence.mbarrier_init`
#   hands the new barrier to the async proxy, `fence.proxy.async` puts the 0xA5 fill before TMA's
#   writes.
# * `shared::cluster`: a CTA launched alone is a [cluster](../docs/glossary.md#cluster) of one
#   (chapter 06).
# * Every thread waits on parity 0, **bounded**: after `max_tries` rounds of `try_wait` or 2 s it
#   writes an error word and gives up. A wrong byte count or parity cannot hang the GPU.
# * The copy kernel: its i-th tile (`tile`) sits in stage `s` of a ring of `CSTAGES` (4) buffers.
#   The store writes it to tensor map `dst` at its element column and row (boxes of `BR` × `BC`,
#   `tiles_c` per row). `issue_load(j)` loads its j-th tile.
# * A TMA store reads its shared-memory source *after* the instruction returns. `commit_group`
#   closes a [bulk group](../docs/glossary.md#bulk-group) of stores. `wait_group.read N` waits
#   until at most N groups still *read* shared memory; only then may their buffers be written again
#   (the listing's comment says why N = 1 here).

# %% [markdown]
# `mbarrier_lifecycle` runs the cycle on the GPU: two boxes through one barrier, a 64-thread
# arrival barrier, and (step 6, on purpose) a wait nobody can satisfy. After each step it records
# whether a wait on parity 0 and a wait on parity 1 would pass. `open` is the phase in progress;
# ✓: as the PTX ISA expects.

# %% output varies
crec = records.load_or_measure("tma_checks", tma.measure_tma_checks)
lc = crec.results["lifecycle"]
print(crec.label())
print(tma.lifecycle_table(lc["steps"]))
assert lc["passed"] and lc["boxes_ok"]                # every step as expected, the boxes read back intact

# %% [markdown]
# Step 3 is the example above: phase 2 is open, so wait(0) waits. Step 0: on a fresh
# barrier the open phase 0 has parity 0, so wait(1) passes. A producer waiting for an empty stage
# starts on parity 1 and passes at once. A wrong initial parity deadlocks a pipeline (chapters
# [05](05_pipelines.ipynb), [08](08_pitfalls.ipynb)). In SASS: [03b §3](03b_tma_boxes.ipynb).

# %% [markdown]
# ## 4. Measured: TMA vs manual loads vs cp.async, by box size
#
# The same tiled copy of a 512 MiB fp32 matrix, global → shared → global, three ways: **TMA**
# (`tma`: `copy_tma` above, one thread issuing into a ring of up to 4 stages), **vectorized loads**
# (`ldg_sts`: 128 threads, 16-byte loads and stores, one stage) and **cp.async** (`cp_async`: 128
# threads, a ring of `LDGSTS` copies). Boxes of 1–32 KB, rows of 256 bytes (64 fp32), as many CTAs
# per SM as shared memory allows; bytes read + written, against the same run's device-to-device
# copy. The three also differ in **bytes in flight** per SM (stages × box × CTAs), so read a
# difference as "this configuration against that one" (equal bytes in flight:
# [03b §2](03b_tma_boxes.ipynb)).

# %% output varies
rec = records.load_or_measure("tma_copy", tma.measure_tma_copy)
print(tma.summarize_tma_copy(rec, row_bytes=256))

# %% [markdown]
# **What TMA buys besides bandwidth.** One thread issues a whole box: no other thread computes an
# address, no data passes through registers. So chapter 06's consumer warpgroups never issue a
# load, and its producer gets by on 40 registers per thread. The box lands swizzled, as wgmma reads
# it ([chapter 04](04_wgmma.ipynb)), and one wait covers it, where chapter 02's `cp.async` ring
# needs every thread's own wait and a `__syncthreads`.

# %% [markdown]
# ## Exercises
#
# A wrong answer gets a hint at what is off.
#
# **1.** A TMA load of a 48×32 box of float32: what byte count must `mbarrier.arrive.expect_tx`
# announce?

# %%
answer = ...
ok = exercises.check("ch03.expect_tx", answer, rows=48, cols=32, dtype="float32")

# %% [markdown]
# **2. Write the 128-byte swizzle.** A box with 128-byte rows lands in a 1024-byte aligned buffer.
# Write `swizzle_128b(offset)`: the byte offset at which TMA stores byte `offset` of the box, by
# the rule of section 2. The check runs it on every byte of two 1024-byte patterns against
# `SmemTile`'s model and names the first byte it puts elsewhere.

# %%
def swizzle_128b(offset):
    ...   # your code: return the swizzled byte offset, an int


ok = exercises.check("ch03.swizzle_128b", swizzle_128b)

# %% [markdown]
# <details><summary>Solutions (run in CI)</summary>The cell below is the worked solution.</details>

# %%
exercises.check("ch03.expect_tx", 48 * 32 * 4, rows=48, cols=32, dtype="float32", solution=True)


def swizzle_128b(offset):
    row, chunk, byte = offset // 128, offset % 128 // 16, offset % 16
    return row * 128 + (chunk ^ row % 8) * 16 + byte


ok = exercises.check("ch03.swizzle_128b", swizzle_128b, solution=True)  # in bits: offset ^ ((offset >> 7) & 7) << 4

# %% [markdown]
# **What you learned.** A tensor map and its box, where swizzled bytes land, and the mbarrier's
# arrivals, bytes and parity.
# **Next:** [chapter 04](04_wgmma.ipynb) feeds those shared-memory tiles to `wgmma`.
