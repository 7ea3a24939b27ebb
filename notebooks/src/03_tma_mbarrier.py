# %% [markdown]
# # 03 — TMA and mbarrier: one thread moves a whole tile
#
# **In plain words.** The [Tensor Memory Accelerator (TMA)](../docs/glossary.md#tma) is a copy
# engine beside each SM. A [*tensor map*](../docs/glossary.md#tensor-map) describes a global tensor
# to it. One thread asks TMA for a tile, called a [*box*](../docs/glossary.md#box). An
# [*mbarrier*](../docs/glossary.md#mbarrier) is a barrier in shared memory that counts arriving bytes.
#
# **Learning goal.** Copy a tile with TMA; wait for it with an mbarrier.
#
# **Where we are.** In chapter 02 every thread issued 16-byte copies. Here one thread
# copies a whole tile; the mbarrier tells the others when it lands.

# %% output varies
from asynctc.core import exercises, notebook, records, worklog
from asynctc import tma

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. Tensor maps: which order?
#
# A tensor map holds a tensor's address, shape and box size. Each copy names the map and a
# corner. The table gives each place's order:
#
# | what | order | this tile's numbers |
# |---|---|---|
# | `shape`, `box` in `tma.validate` | rows first | `box=(128, 64)`: 128 rows × 64 columns |
# | driver's `cuTensorMapEncodeTiled` | columns first | (64, 128) |
# | a copy's corner (c0, c1) | columns first | (256, 512): column 256, row 512 |
#
# For a bad map, the driver says only `CUDA_ERROR_INVALID_VALUE`. `tma.validate` names the field.
# The orange box's hatched rows lie past the edge. They arrive as zeros, and their bytes count
# ([03b](03b_tma_boxes.ipynb)).

# %% output varies
spec = tma.validate(address=0x7F0000000000, shape=(4096, 4096), dtype="float16",
                    box=(128, 64), swizzle=128)
print(tma.map_fields(spec))
fig = tma.plot_box_over_tensor(spec, at=(256, 512), edge=(1024, 4032))

# %% [markdown]
# ## 2. Swizzle modes as bank maps
#
# Lanes that read different words of one bank wait in turn: a
# [bank conflict](../docs/glossary.md#bank-conflict). `ldmatrix` reads a 16-byte chunk from each
# of 8 rows. A chunk spans 4 banks, its *bank group*, drawn below as one colour. Unswizzled, a
# column is one colour: an 8-way conflict. **128B [swizzle](../docs/glossary.md#swizzle)** XORs a
# chunk's index with the row index mod 8. Each column then covers all 32 banks.

# %% output varies
fig = tma.plot_chunk_maps(swizzles=(0, 128))

# %% [markdown]
# **Worked: follow one byte, 64-byte swizzle.** Here a row is 64 bytes: 4 chunks of 16. Take byte 3
# of chunk 2 in row 5, in a 512-byte aligned buffer. The model XORs the offset's chunk bits, 4–5,
# with its bits 7–8. Bit 6 is the row's lowest bit, so bits 7–8 are row // 2.

# %%
from asynctc.models.layout import swizzle_address

row, chunk, byte = 5, 2, 3
offset = row * 64 + chunk * 16 + byte                  # before the swizzle
key = offset >> 7 & 0b11                               # bits 7-8 = row // 2, mod 4
print(f"offset {offset} = 0b{offset:09b} = row 0b{row:03b} | chunk 0b{chunk:02b} | byte 0b{byte:04b}")
print(f"chunk {chunk:02b} XOR bits 8-7 {key:02b} = {chunk ^ key:02b}: chunk {chunk} → chunk {chunk ^ key}, same row")
swizzled = row * 64 + (chunk ^ key) * 16 + byte
print(f"swizzled: {row}·64 + {chunk ^ key}·16 + {byte} = {swizzled} = 0b{swizzled:09b}")
assert swizzled == swizzle_address(offset, 64)         # the model agrees

# %% [markdown]
# ## 3. The mbarrier life cycle
#
# No thread carries TMA's bytes, so `__syncthreads` cannot wait for them. An mbarrier can. Its
# **tx-count** is the bytes still to come. One [fill](../docs/glossary.md#fill-of-a-stage):
#
# 1. `init` expects one arrival. *Pending* counts those still expected.
# 2. One thread arrives with [`expect_tx`](../docs/glossary.md#expect_tx): the tx-count rises by
#    the bytes to come. Then it starts the copies: no box lands before its bytes are announced.
# 3. Each landing byte lowers the tx-count (the PTX ISA's *complete_tx*).
# 4. When pending and tx-count reach zero, the first round completes: *phase* 0. Phase 1 opens
#    with *pending* back at the count.
#
# A wait names a [*phase parity*](../docs/glossary.md#phase-parity) P, a phase number mod 2. It
# passes unless the open phase has parity P. A CPU model runs the steps. Fill 0
# brings boxes A and B; `expect` sums their rows × bytes per row. Fill 1 reuses the barrier.

# %%
from asynctc.models.pipeline.ring import Mbarrier


def show(step):
    print(f"{step:<24}{bar.phase:>5}{bar.pending:>8}{bar.tx:>7}{bar.test_wait(0)!s:>16}{bar.test_wait(1)!s:>16}")


print(f"{'step':<24}{'open':>5}{'pending':>8}{'tx':>7}{'wait(0) passes':>16}{'wait(1) passes':>16}")
boxes = {"A": (64, 128), "B": (64, 128)}   # each box: rows, bytes per row (64 fp16)
expect = sum(rows * row_bytes for rows, row_bytes in boxes.values())
bar = Mbarrier(count=1);              show("init(count=1)")
bar.arrive_expect_tx(expect);         show(f"arrive_expect_tx({expect})")
bar.complete_tx(8192);                show("complete_tx(8192): A")   # the bytes TMA lands
bar.complete_tx(8192);                show("complete_tx(8192): B")
if done := bar.test_wait(0):
    bar.arrive_expect_tx(16384);      show("fill 1: arrive_expect_tx")
    bar.complete_tx(16384);           show("fill 1: both boxes land")
print("fill 0:", "complete, its reader passes" if done else "incomplete, its reader waits forever")

# %% [markdown]
# **Try it:** make B's box `(128, 128)`. Predict: does fill 0 complete?

# %% [markdown]
# **Read the wait columns.** Fill 0's reader waits on parity 0: False until B lands, then True.
# Fill 1's waits on parity 1; fill f's, on parity f mod 2. At init, wait(1)
# is already True: the phase before phase 0 counts as complete. One bit is enough: a waiter asks
# only about the open phase or the one before.
#
# The GPU's table takes the same steps. ✓ marks the PTX ISA's answer. Rows 4–6 use a
# *counter barrier*: 64 arrivals, no bytes. Row 6's wait, on a phase nobody completes,
# gives up.

# %% output varies
display(notebook.show_source("tma.cu", start=r"^  fence_proxy_async_shared_cta\(\);   // the sentinel", end=r"if \(!ok\) return;"))
crec = records.load_or_measure("tma_checks", tma.measure_tma_checks)
tma.checks.show_lifecycle(crec)   # notebook.how(tma.checks.show_lifecycle) prints its code
notebook.require(all(s["as_expected"] for s in crec.results["lifecycle"]["steps"]), "✓ at every step")

# %% [markdown]
# The listing fills the tile with a *sentinel* byte, 0xA5. A byte TMA skips keeps that value.
# TMA writes through the [*async proxy*](../docs/glossary.md#proxy), a separate path. The fence orders the threads' writes before TMA's.
#
# **Parity, fill by fill.** In chapter 05 each stage has two barriers: *full* (its bytes landed)
# and *empty* (its readers, the [consumers](../docs/glossary.md#consumer), are done). Before fill f
# the [producer](../docs/glossary.md#producer), which issues the copies, waits on empty with parity
# (f + 1) mod 2, which a fresh barrier passes.
# [In code](../docs/glossary.md#ring-counter), chapters 05 and 06 wait on `phase` on full, `phase ^ 1` on empty.
#
# **Worked: a 2-stage ring.** Tile t goes to stage t mod 2, as its fill t // 2. Which parity does
# tile 3's reader wait on?

# %%
tile = 3
stage, fill = tile % 2, tile // 2
full = Mbarrier(count=1)                  # its full barrier
for _ in range(fill):                     # earlier fills
    full.arrive_expect_tx(16384); full.complete_tx(16384)
before = [full.test_wait(p) for p in (0, 1)]
full.arrive_expect_tx(16384); full.complete_tx(16384)
P = [p for p in (0, 1) if not before[p] and full.test_wait(p)][0]
print(f"tile {tile}, stage {stage}'s fill {fill}: parity {P} passes only once it lands; {1 - P} passed before.")

# %% [markdown]
# ## 4. The instructions underneath
#
# Each wrapper above is one PTX instruction (`kernels/ptx/*.cuh`). Below, the life-cycle
# kernel's SASS, counted.

# %% output varies
from asynctc.core import sass

print(notebook.ptx_instructions("mbarrier_arrive_expect_tx", "tma_load_2d", "mbarrier_try_wait_parity"))
ck = tma.compile_tma("mbarrier_lifecycle")
ops = sass.opcode_counts(tma.kernel_sass(ck))
print({op: n for op, n in sorted(ops.items()) if op.startswith(("SYNCS", "UTMA"))})
for op in ("UTMALDG.2D", "SYNCS.EXCH.64", "SYNCS.ARRIVE.TRANS64", "SYNCS.PHASECHK.TRANS64.TRYWAIT"):
    notebook.require(op in ops, f"the life-cycle kernel issues {op}")

# %% [markdown]
# `shared::cluster` is this CTA's shared memory, addressed as its
# [cluster](../docs/glossary.md#cluster)'s. `UTMALDG.2D` is the TMA load. `SYNCS.EXCH.64` is
# `init`. `SYNCS.ARRIVE.TRANS64` is an mbarrier arrive with a transaction count (expect_tx's
# bytes); `.A1T0`: arrive count 1, tx 0, a plain arrive. `SYNCS.PHASECHK.TRANS64` is
# `test_wait`, which answers at once. `.TRYWAIT` marks `try_wait`.

# %% [markdown]
# ## Exercises
#
# `tma_load_2d(dst, map, bar, c0, c1)` copies `map`'s box at column c0, row c1 to shared address
# `dst`. Its bytes land on `bar`. **Worked: a smaller box.** For 64 rows × 32 fp16 at k-tile 3, from
# row 192, call `tma_load_2d(dst, map, bar, 96, 192)`. The column, 3·32, comes first. The box
# is 4096 bytes, so the next box goes at `dst + 4096`.
#
# **1. Fill one stage.** Write the body of `fill_stage(ta, tb, stage, full_bar, kt, m0, n0)`: three
# lines of CUDA in a string. It loads A's `BM`×`BK` box of map `ta` from row `m0`, then
# B's `BN`×`BK` box of `tb` from row `n0`. B is stored N×K. `BM` = `BN` = 128 and `BK` = 64, in
# fp16. One barrier, `full_bar`, covers both. `stage` and `full_bar` are shared-memory byte
# addresses. B follows A.

# %%
lines = """...   // mbarrier_arrive_expect_tx(full_bar, ?); then tma_load_2d(?, ?, full_bar, ?, ?) twice"""
ok = exercises.check("ch03.stage_fill", lines)

# %% [markdown]
# **2. Write the 128-byte swizzle.** `swizzle_128b(offset)` returns where TMA puts byte `offset` of
# a box with 128-byte rows, in a 1024-byte aligned buffer (section 2's rule). Use `def`:
# later chapters run it.

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
# **Predict first.** For a 16 KiB box, cp.async needs 1024 instructions, TMA one.
# Does TMA reach more GB/s, or the same? *We measured* answers.

# %% output answers a prediction
print(worklog.entry("03"))

# %% [markdown]
# **Your GEMM so far**: your two [pieces](../docs/glossary.md#piece) in one tile on the CPU, checked against float64
# ([06e](06e_your_gemm_on_the_cpu.ipynb)).

# %% output varies
from asynctc.models.gemm_so_far import so_far

so_far("03")

# %% [markdown]
# **What you learned.** Tensor maps, swizzle, an mbarrier's bytes and parity.
# Going further: [03b](03b_tma_boxes.ipynb): box sizes, SASS, proxy fence, parity.
# **Next:** [chapter 04](04_wgmma.ipynb).
