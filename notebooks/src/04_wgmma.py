# %% [markdown]
# # 04 — `wgmma` and the shared-memory matrix descriptor
#
# **Learning goal.** Issue Hopper's asynchronous Tensor Core instruction, describe its operands
# correctly, and measure it against the [peak](../docs/glossary.md#peak).
#
# **Where we are.** Chapter 03 landed swizzled tiles in shared memory with TMA. In chapter 01,
# warps loaded their operands from shared memory into registers for `mma.sync`. Here the Tensor
# Cores read the tiles from shared memory themselves.
#
# **In plain words.** A [warpgroup](../docs/glossary.md#warpgroup) is four warps. It issues one
# [wgmma](../docs/glossary.md#wgmma), an asynchronous matrix multiply, and moves on. The Tensor
# Cores fetch its operands from shared memory. A
# [*matrix descriptor*](../docs/glossary.md#matrix-descriptor) tells them the layout TMA wrote. A
# wrong one makes them read wrong bytes, silently. Deep dive: [04b](04b_wgmma_anatomy.ipynb).

# %% output varies
from asynctc.models import descriptors
from asynctc.core import exercises, notebook, records, sass, worklog
from asynctc import wgmma, wgmma_peak

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. The operands of one `wgmma`
#
# One wgmma computes D(64×N) = A(64×16)·B(16×N) + D, for N a multiple of 8 up to 256. In PTX:
# `wgmma.mma_async.sync.aligned.m64nNk16.f32.f16.f16` (PTX ISA §9.7.15.5.2).
#
# * **B** always comes from shared memory, through a 64-bit *descriptor*.
# * **A** comes from shared memory ("SS") or registers ("RS").
# * **D** lives in registers.
#
# `wgmma.fence` goes first. `wgmma.commit_group` closes a batch. `wgmma.wait_group N` waits until
# at most N batches are in flight.

# %% [markdown]
# ## 2. Why a descriptor, and its fields
#
# A is 64×64 fp16, written with 128-byte swizzle. It is [K-major](../docs/glossary.md#k-major): K
# is contiguous in memory. Three descriptors read it: the right one, one with too narrow a
# swizzle, one with half the stride. Where wgmma wants A[m][0], what does it get?

# %%
print(wgmma.wrong_reads(rows=(0, 1, 2, 3, 8, 9)))     # asserts the text

# %% [markdown]
# Too narrow a swizzle: row 1 lands mid-row 0. Half the stride: row 8 reads row 4.
#
# **The picture.** TMA lands a swizzled tile as *boxes*. A box's rows are as wide as the swizzle:
# 128 contiguous bytes here. wgmma reads a box one [core matrix](../docs/glossary.md#core-matrix)
# at a time. A core matrix is 8 rows × 16 bytes. The descriptor's swizzle field says where each
# 16-byte piece sits in its row. Two strides locate the next core matrix:
#
# * [SBO](../docs/glossary.md#sbo): from one group of 8 rows to the next, within a box (halved above).
# * [LBO](../docs/glossary.md#lbo): from one box to the next.
#
# **Worked: a tile with two boxes.** Take B for N = 128, stored
# [MN-major](../docs/glossary.md#mn-major): N is contiguous. One k-row's 64 n fill a 128-byte row.
# So 128 n take two boxes.

# %%
B = descriptors.OperandTile(128, 64, "float16", "MN", 128)
dB = B.descriptor(step=0, base_address=0x4000)
at = B.addresses(0x4000) - 0x4000                 # at[n, k]: byte offset of B[k][n]
print(f"SBO = 8 k-rows × {B.row_pitch} B = {dB.sbo} B (field {dB.sbo >> 4}): B[8][0] at +{at[0, 8]}")
print(f"LBO = {B.box_rows} k-rows × {B.row_pitch} B = {dB.lbo} B (field {dB.lbo >> 4}): B[0][64] at +{at[64, 0]}")
notebook.require(dB.sbo == 8 * B.row_pitch == at[0, 8] and dB.lbo == B.box_pitch == at[64, 0], "SBO: 8 k-rows; LBO: one box")
fig = wgmma.plot_layouts(B.dtype, B.major, (B.swizzle,), mn=B.mn, operand="B")

# %% [markdown]
# In the figure, SBO (red) steps along K: 8 k-rows on, to the right. LBO (blue) steps along N, to
# box 1: n = 64–127. One m64n128k16 reads both boxes (dashed), so it needs both strides.
#
# **Why A needs no LBO.** A is K-major: one m's 64 k fill a 128-byte row. So A's tile is one box.
# Below is A's whole descriptor: five fields in 64 bits (PTX ISA §9.7.15.5.1.2.2).

# %%
tile = descriptors.OperandTile(64, 64, "float16", "K", 128)
d0 = tile.descriptor(step=0, base_address=0x2000)     # later chapters use this tile
print(d0.table())
print(f"boxes: {tile.n_boxes}; a k16 step reads {tile.instruction_k * tile.itemsize} B of each {tile.row_pitch} B row")

# %% [markdown]
# A k16 step stays inside one 128-byte row. It never reaches a next box, so the hardware ignores
# LBO. The encoder still writes 1 (16 bytes), the value the ISA assumes.
# [04b §5, §3](04b_wgmma_anatomy.ipynb) draws and breaks it.

# %% [markdown]
# **By hand: the 64-bit word.** Each field of `d0` is shifted to its first bit, as
# `descriptors.FIELDS` lists. Byte values go in 16-byte units, the swizzle as its mode code.

# %%
sa, lbo, sbo = d0.start_address >> 4, d0.lbo >> 4, d0.sbo >> 4   # bytes → 16-byte units
mode = descriptors.LAYOUT_TYPE[d0.swizzle]                        # 128-byte swizzle → code 1
print(f"start_address {d0.start_address:#6x} >> 4 = {sa:3d} << 0  = {sa << 0:#018x}")
print(f"LBO           {d0.lbo:6d} >> 4 = {lbo:3d} << 16 = {lbo << 16:#018x}")
print(f"SBO           {d0.sbo:6d} >> 4 = {sbo:3d} << 32 = {sbo << 32:#018x}")
print(f"swizzle {d0.swizzle} B: mode    {mode:3d} << 62 = {mode << 62:#018x}")
word = sa << 0 | lbo << 16 | sbo << 32 | mode << 62              # base_offset (bits 49-51) is 0
print(f"OR of the four                        = {word:#018x}")
assert word == d0.encode()                                        # the encoder's value

# %% [markdown]
# ## 3. The k-step
#
# **Worked: a K-major k-step, fp8.** fp8 wgmmas are k32: a 128-wide k-tile is four steps, one
# descriptor each. Only the start address moves, by 32 one-byte elements. The `start_address`
# field counts 16-byte units.

# %%
f8 = descriptors.OperandTile(64, 128, "float8_e4m3fn", "K", 128)
for s in range(4):
    moved = f8.descriptor(step=s, base_address=0x2000).start_address - 0x2000
    print(f"s = {s}: +{moved:2d} bytes, start_address field +{moved // 16}")
w0, w1 = (f8.descriptor(step=s, base_address=0x2000).encode() for s in (0, 1))
print(f"the word's bits 13-0, s = 0: {w0 & 0x3FFF:014b}")
print(f"the word's bits 13-0, s = 1: {w1 & 0x3FFF:014b}, the word +{w1 - w0}")

# %% [markdown]
# **Worked: an MN-major k-step, 64-byte swizzle.** Take B at N = 64. A box's k-row is 64 bytes:
# 32 n. So the tile is two boxes, LBO apart. In box 0,
# B[k][n] sits at byte k·64 + n·2 before the swizzle. A k16 step moves 16 k-rows on. Only the
# start address moves. Box 1 is read LBO past the start, so it moves too.

# %%
B64 = descriptors.OperandTile(64, 64, "float16", "MN", 64)    # MN-major, 64-byte swizzle, 2 boxes
for s in range(4):
    moved = B64.descriptor(step=s, base_address=0x2000).start_address - 0x2000
    print(f"s = {s}: +{moved:4d} bytes = {moved // B64.row_pitch} k-rows, start_address field +{moved // 16}")

# %% [markdown]
# **Exercise: advance the descriptor.** Write `kstep_desc(desc0, s, major)`. It takes step 0's
# descriptor, an int, and returns step s's. The tile is 64×64 fp16 with 128-byte swizzle: one box
# row is 128 bytes. `major` is "K" or "MN". The check reads bytes through your descriptors.

# %%
def kstep_desc(desc0, s, major):
    ...   # your code: return k-step s's descriptor, an int


ok = exercises.check("ch04.kstep", kstep_desc)

# %% [markdown]
# ## 4. What TMA writes is what the descriptor reads
#
# Nothing converts between TMA and wgmma, so both must describe the same bytes. A tile TMA
# loaded with 128B swizzle needs a descriptor that says 128B. Its strides are §2's. The course's model
# checks this for every element, both majors and every swizzle ([04b §5](04b_wgmma_anatomy.ipynb)).

# %% [markdown]
# ## 5. The kernel: one warpgroup, one 64×N tile
#
# `kernels/wgmma.cu` stores the operands in §2's layout. It fences them for the
# [async proxy](../docs/glossary.md#proxy), then runs K/16 wgmmas. Below are its loop, PTX and
# SASS for N = 64.

# %% output varies
display(notebook.show_source("wgmma.cu", start=r"  // fence \(the registers were written above\)",
                             end=r"^  wgmma_wait_group<0>\(\);$",
                             ptx=("wgmma_fence", "wgmma_commit_group", "wgmma_wait_group")))
ck = wgmma.compile_tile(wgmma.TileConfig("float16", 64))
display(notebook.show_ptx(ck))
print(sass.excerpt(sass.kernel_text(ck.sass(), ck.name), r"HGMMA|WARPGROUP", context=0, limit=6))

# %% [markdown]
# The first `wgmma.mma_async`'s operands, in order:
#
# * in braces, D: N/2 = 32 fp32 registers;
# * the A, then the B descriptor;
# * `p`, D's scale: 0 overwrites D, 1 adds;
# * `1, 1`: A and B not negated; `0, 0`: both K-major.
#
# In the SASS, `WARPGROUP.ARRIVE` is the fence. Each `HGMMA` is one k-step. Its `gdesc[UR8]` reads
# the A and B descriptors from `UR` registers: uniform registers, one value shared by the whole warp.
# `DEPBAR.LE gsb0` waits until at most N groups remain on `gsb0`, the warpgroup's wgmma scoreboard.

# %% [markdown]
# ## 6. Where the accumulator lives
#
# **Each of the 128 threads keeps N/2 of D's 64×N fp32 values** (PTX ISA §9.7.15.5.1.1). Take
# thread 37, lane 5 of warp 1, at N = 16:
#
# 1. Warp w: rows 16w to 16w + 15.
# 2. Lane = 4g + t: g its four-lane group, t its place. Lane 5: g = 1, t = 1.
# 3. Rows 16w + g and 16w + g + 8: 17 and 25.
# 4. Columns 2t and 2t + 1 of each 8-column block: 2, 3, 10, 11.
# 5. Register i: i // 4 is the block, bit 1 the row, bit 0 the column. Register 6 = 0b110 is D[25][10].

# %%
fig = wgmma.plot_accumulator(n=16, thread=37)

# %% [markdown]
# **Exercise: who holds D[43][20] at N = 32?** Which thread, which of its 16 registers? Answer
# `(thread, reg)`.

# %%
answer = ...
ok = exercises.check("ch04.acc_owner", answer, r=43, c=20)

# %% [markdown]
# ## 7. Correct for every combination
#
# Every combination runs against float64. Each element must lie within its
# [elementwise bound](../docs/glossary.md#elementwise-bound), the rounding error allowed.

# %% output varies
rec = records.load_or_measure("wgmma", wgmma_peak.measure_wgmma)
checks = rec.results["checks"]
print(f"{rec.label()}: {sum(c['passed'] for c in checks)}/{len(checks)} recorded checks passed")

# %% [markdown]
# ## 8. Throughput by N and by operand source
#
# `kernels/wgmma_peak.cu` runs wgmma in a loop. The [peak](../docs/glossary.md#peak) is SMs ×
# 4096 FLOP/clk × the SM clock. The kernel reads that clock itself as it runs: an
# [in-kernel](../docs/glossary.md#in-kernel) clock, as chapter 00's peak card lists it. Our goal is
# 0.90 of it.
#
# **A model first.** A wgmma does 64·N·16·2 FLOP. At 4096 FLOP per clock, that is N/2 clocks of
# math. SS also reads A and B from shared memory, at chapter 00's 128 bytes per clock. A (64×16
# fp16, 2048 bytes) takes 16 clocks. B (16×N, 32·N bytes) takes N/4. Below N = 64, these 16 + N/4
# clocks of reads set SS's pace. RS reads only B, which never sets its pace. A fixed cost per wgmma
# might; the model leaves it out.
#
# **Predict:** at N = 8, what fraction of the peak does the model give SS? Is RS nearer SS or
# the full rate? Then run the cell. Every point is a fraction of the per-clock peak at its own
# clock. The short blue bars are the model's SS fraction at each N. The grey crosses are a published
# H800 measurement of SS (Luo et al., IPDPS 2024), per SM and clock.

# %% output answers a prediction
fig = wgmma_peak.plot_throughput(rec)
fpc = [x["flop_per_clk_sm"] for x in rec.results["throughput"]          # FLOP/clk per SM, N ≥ 64
       if x["n"] >= 64 and (x["dtype"], x["chains"], x["ctas_per_sm"]) == ("float16", 1, 2)]
head = f"N ≥ 64, SS and RS, slowest: {notebook.ratio(min(fpc), 4096, 'FLOP/clk')} of the peak"
_ = notebook.verdict(min(fpc) >= 0.90 * 4096, f"{head}; goal 0.90: reached.", f"{head}; goal 0.90: NOT reached.")

# %% check
notebook.require(min(fpc) > 0.975 * 4096, "from N = 64 on, both run at the full rate")
notebook.require(wgmma_peak.small_n_as_modelled(rec.results), "below it, shared memory limits SS, a fixed cost RS")

# %% answer [markdown]
# **So:** from N = 64 on, SS and RS both run at the full rate. Below it, shared memory limits SS.
# The model at N = 8 gives 4 clocks of math in 16 + 2 of reads: 0.22. A fixed cost limits RS.
# More: [04b §4, §6](04b_wgmma_anatomy.ipynb).
# %% [markdown]
# **Play** (ungraded): `print(wgmma.design(8, "registers"))` prints the model's clocks beside the
# record's. Try N = 64, then `"smem"`.
# **On a GPU:** `python -m asynctc record wgmma --no-save` re-measures it. Compare its N = 8 RS
# TFLOP/s with `design`'s "record:".

# %% [markdown]
# ## Exercises
#
# They are in §3 (`ch04.kstep`) and §6 (`ch04.acc_owner`).
# The encoder by hand: [04b §7](04b_wgmma_anatomy.ipynb).

# %% [markdown]
# <details><summary>Solutions (run in CI)</summary>The cell below is the worked solution.</details>

# %%
def kstep_desc(desc0, s, major):
    step = 32 if major == "K" else 16 * 128     # bytes per k16 step: along the row, or 16 k-rows
    return desc0 + (s * step >> 4)              # the field counts 16-byte units


ok = exercises.check("ch04.kstep", kstep_desc, solution=True)

r, c = 43, 20
w, g, half = r // 16, r % 8, r % 16 // 8       # warp 2, row g = 3, row g + 8 (half 1)
j, t, odd = c // 8, c % 8 // 2, c % 2          # 8-column block 2, column pair t = 2, even column
ok = exercises.check("ch04.acc_owner", (32 * w + 4 * g + t, 4 * j + 2 * half + odd), r=r, c=c,
                     solution=True)

# %% [markdown]
# ## Worklog

# %% output answers a prediction
worklog.show("04")

# %% [markdown]
# **Your GEMM so far**, now with your k-step: one tile on the CPU
# ([06e](06e_your_gemm_on_the_cpu.ipynb)).

# %% output varies
from asynctc.models.gemm_so_far import so_far

so_far("04")

# %% [markdown]
# **What you learned.** What a wgmma reads, where its accumulator lives, its descriptor field by field.
# **Next:** [chapter 05](05_pipelines.ipynb).
