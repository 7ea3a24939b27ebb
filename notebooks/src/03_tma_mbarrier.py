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
# 2. see where each element of a box lands under each [swizzle](../docs/glossary.md#swizzle) mode, as bank maps from a
#    Python model;
# 3. follow the mbarrier life cycle, step by step;
# 4. measure TMA against vectorized loads and `cp.async`.
#
# Deep dive: [03b — TMA at the edges and by box size](03b_tma_boxes.ipynb) (boxes past the tensor's
# edge, the copies box size by box size, the swizzle model checked on the GPU).

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
# Element strides: every 2nd row of the 64-row box, so 32 rows land and expect_tx halves. An
# innermost stride is refused: the driver ignores it and would load the whole row.
strided = tma.validate(**good, element_strides=(2, 1))
print(strided.smem_tile().describe(), "| expect_tx:", strided.box_bytes, "bytes")
for bad in (dict(box=(64, 128)), dict(box=(300, 64)), dict(strides=(8200, 2)),
            dict(address=0x7F0000000008), dict(element_strides=(1, 2))):
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
# A swizzle mode XORs each row's 16-byte chunk index with its *line index* (which 128-byte line of
# shared memory the row is in, mod 8). Then those 8 reads land in 8 different bank groups.
# `SmemTile` is the model. The map shows, for each 16-byte chunk of each row, which of the 8
# four-bank groups it lands in.

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
# Is the model right? A GPU check loads every swizzle mode's box and compares the raw shared
# memory with the model byte for byte: [deep dive 03b §3](03b_tma_boxes.ipynb).

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
# When both reach zero the phase completes and the next one begins. Phases alternate *parity*
# 0, 1, 0, 1, … `try_wait.parity(P)` asks "has the phase with parity P completed?" (PTX ISA,
# *mbarrier*).

# %% [markdown]
# `mbarrier_lifecycle` runs the whole cycle on one stage. After each step it records whether
# parity 0 and parity 1 count as completed (`test_wait.parity`, which never blocks).
#
# Every wait in the course's kernels is *bounded*: after a number of tries it writes an error word
# and returns. A wrong byte count or parity then shows up as an error message, not a hung GPU.
# Step 6 does it on purpose.
#
# The listing also has a `fence.proxy.async`. Threads reach shared memory through the **generic
# [proxy](../docs/glossary.md#proxy)**, TMA and wgmma through the **async proxy**. Only a
# `fence.proxy.async` orders the two; here it comes before the TMA overwrites bytes a thread has just read.

# %%
notebook.show_source("tma.cu", start=r"    record\(0, full", end=r"record\(3, full")

# %% [markdown]
# The cell below runs the kernel and compares what it recorded after each step with the
# **expected** sequence (`tma.LIFECYCLE`, written from the PTX ISA); ✓ marks a step that matched.
# Live it runs now; in replay it shows the `tma_checks` record of the GPU run.

# %% output varies
crec = records.load_or_measure("tma_checks", tma.measure_tma_checks)
print(crec.label())
print("\n".join(tma.checks.lifecycle_lines(crec.results)))
assert crec.results["lifecycle"]["passed"]

# %% [markdown]
# Read the two parity columns: right after `init`, parity 1 already counts as "completed" — it is
# the phase *before* phase 0.
#
# So a producer waiting for an empty slot can start with parity 1 and pass at once. Getting the
# initial parity wrong deadlocks a pipeline ([chapter 05](05_pipelines.ipynb) builds the ring;
# [chapter 08](08_pitfalls.ipynb) debugs such deadlocks). The PTX wrappers (`mbarrier_arrive_expect_tx`,
# `tma_load_2d`) and the same cycle in SASS: [03b §3](03b_tma_boxes.ipynb).

# %% [markdown]
# ## 4. Measured: TMA vs manual loads vs cp.async, by box size
#
# The same tiled copy of a 512 MiB fp32 matrix, global → shared → global, three ways
# (`kernels/tma.cu`):
#
# | variant (column) | threads per CTA | how | stages |
# |---|---|---|---|
# | **TMA** (`tma`) | 32 (one issues) | TMA loads into a ring, [TMA stores](../docs/glossary.md#tma-store) out of it | up to 4 |
# | **vectorized loads** (`ldg_sts`) | 128 | 16-byte `LDG`/`STS`/`LDS`/`STG` | 1 |
# | **cp.async** (`cp_async`) | 128 | `LDGSTS` ring | up to 4 |
#
# Boxes of 1–32 KB (rows × fp32 columns) with 128-byte, 256-byte and 1 KB rows; as many CTAs per SM
# as shared memory allows (≤ 16). Bandwidth counts bytes read + written, against the
# device-to-device copy of the same run.
#
# Caution: the three differ in **bytes in flight** per SM (stages × box × CTAs per SM), not only in
# mechanism. Read each difference as "this configuration against that one". A second record,
# `tma_equal`, gives them equal bytes in flight (two definitions: global loads outstanding, or
# shared memory held); the last cell of this section states its result ([chapter 10](10_claims.ipynb)
# weighs it).

# %% output varies
rec = records.load_or_measure("tma_copy", tma.measure_tma_copy)
print(tma.summarize_tma_copy(rec))

# %% output varies
eq = records.load("tma_equal")
print("tma_equal:", eq.label())
ok, text, numbers = tma.equal_bytes.equal_note(eq.results)
_ = notebook.claim(ok, text, **numbers)

# %% [markdown]
# **What TMA buys besides bandwidth.** One thread issues a whole box; no other thread computes an
# address, and no data passes through registers as it does with vectorized loads. That is why
# chapter 06's consumer warpgroups never issue a load and its producer warpgroup gets by on 40
# registers per thread. The box lands already swizzled, in the layout wgmma reads
# ([chapter 04](04_wgmma.ipynb)), and the mbarrier counts its bytes, so one wait covers the whole
# box, where chapter 02's `cp.async` ring needs every thread's own wait and a `__syncthreads`.
#
# The three copies side by side at every box size, and the common claim about small boxes:
# [03b §2](03b_tma_boxes.ipynb).

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
# **2.** In a 64×64 fp16 tile loaded with 128-byte swizzle into a 1024-byte aligned buffer, which
# bank holds element (row 3, column 20)? (Row pitch 128 bytes; the 16-byte chunk index is XORed with
# row % 8.)

# %%
answer = ...
ok = exercises.check("ch03.bank_128B", answer, row=3, col=20)

# %% [markdown]
# <details><summary>Solutions (run in CI)</summary>The cell below is the worked solution.</details>

# %%
exercises.check("ch03.expect_tx", 48 * 32 * 4, rows=48, cols=32, dtype="float32", solution=True)
row, col = 3, 20
chunk, within = divmod(col * 2, 16)
offset = row * 128 + ((chunk ^ (row % 8)) * 16) + within
exercises.check("ch03.bank_128B", (offset // 4) % 32, row=row, col=col, solution=True)
print("byte offset", offset, "= SmemTile model:", SmemTile(64, 64, "float16", 128).byte_offset(row, col))

# %% [markdown]
# **What you learned.** A tensor map and its box, where swizzled bytes land, and the mbarrier's
# arrivals, bytes and parity.
# **Next:** [chapter 04](04_wgmma.ipynb) feeds those shared-memory tiles to `wgmma`.
