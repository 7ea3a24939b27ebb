# %% [markdown]
# # 04 — `wgmma` and the shared-memory matrix descriptor
#
# **Learning goal.** Issue Hopper's asynchronous Tensor Core instruction. Describe its operands
# correctly. Measure it against the [peak](../docs/glossary.md#peak).
#
# **Where we are.** Chapter 03 landed swizzled tiles in shared memory with TMA. Here the Tensor
# Cores read them directly.
#
# **In plain words.** A [warpgroup](../docs/glossary.md#warpgroup) is four warps. It issues one
# [wgmma](../docs/glossary.md#wgmma), an asynchronous matrix multiply, and moves on. A
# [*matrix descriptor*](../docs/glossary.md#matrix-descriptor) tells the Tensor Cores the layout
# TMA wrote. A wrong one reads wrong bytes, silently.
#
# Going further: deep dive [04b](04b_wgmma_anatomy.ipynb).

# %% output varies
from asynctc.models import descriptors
from asynctc.core import exercises, notebook, records, sass, worklog
from asynctc import wgmma, wgmma_peak

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. The operands of one `wgmma`
#
# One wgmma computes D(64×N) = A(64×16)·B(16×N) + D. N is a multiple of 8, up to 256. In PTX:
# `wgmma.mma_async.sync.aligned.m64nNk16.f32.f16.f16`.
#
# * **B** always comes from shared memory, through a 64-bit descriptor.
# * **A** comes from shared memory ("SS") or registers ("RS").
# * **D** lives in registers.
#
# `wgmma.fence` goes first: it orders the warpgroup's register accesses (D, A) before the async
# wgmma reads them. `wgmma.commit_group` closes a group. `wgmma.wait_group N` waits until at most N
# groups are in flight.

# %% [markdown]
# ## 2. Why a descriptor, and its fields
#
# A is 64×64 fp16, written with 128-byte swizzle. It is [K-major](../docs/glossary.md#k-major): K
# is contiguous in memory. A descriptor carries its swizzle and a *stride*: 8 rows' bytes, 1024 here
# ([SBO](../docs/glossary.md#sbo)). Three descriptors read it: the right one, too narrow a swizzle,
# half the stride (512 B). Where wgmma wants A[m][0], what does it get?

# %% output answers a prediction
print(wgmma.wrong_reads(rows=(0, 1, 2, 3, 8, 9)))     # asserts the text

# %% answer [markdown]
# Too narrow a swizzle puts row 1 mid-row 0. Half the stride makes row 8 read row 4.

# %% [markdown]
# **The picture.** TMA lands a swizzled tile as *boxes*. A box's rows are as wide as the swizzle:
# 128 bytes here. wgmma reads a box one [core matrix](../docs/glossary.md#core-matrix) at a time:
# 8 rows × 16 bytes. The swizzle field places each 16-byte piece in its row. Two strides locate
# the core matrices:
#
# * [SBO](../docs/glossary.md#sbo): from one group of 8 rows to the next, within a box.
# * [LBO](../docs/glossary.md#lbo): from one box to the next.
#
# **One tile, all the way through.** B for N = 128 is [MN-major](../docs/glossary.md#mn-major): N
# is contiguous. One k-row's 64 n fill a 128-byte row. So 128 n take two boxes. Core matrix
# (i, j) starts at k-row 8i of box j, at `start + i·SBO + j·LBO`.

# %%
B = descriptors.OperandTile(128, 64, "float16", "MN", 128)      # n × k
start = 0x4000
dB = B.descriptor(step=0, base_address=start)
SBO, LBO = dB.sbo, dB.lbo
at = B.addresses(start)                                         # at[n, k]: B[k][n]'s address
print(f"SBO = 8 k-rows × {B.row_pitch} B = {SBO} B; LBO = {B.box_rows} k-rows × {B.row_pitch} B = {LBO} B")
for i, j in ((1, 0), (0, 1)):                                   # red, then blue
    cm = start + i * SBO + j * LBO
    print(f"({i}, {j}): start + {i}·SBO + {j}·LBO = 0x{start:x} + {i * SBO} + {j * LBO} = 0x{cm:x}, B[{8 * i}][{64 * j}]")
    notebook.require(cm == at[64 * j, 8 * i], "start + i·SBO + j·LBO is where B[8i][64j] lies")
fig = wgmma.plot_layouts(B.dtype, B.major, (B.swizzle,), mn=B.mn, operand="B", names=True)

# %% [markdown]
# The figure draws each k-row as a column. SBO (red) steps right to (1, 0), 8 k-rows on. LBO
# (blue) steps down to (0, 1), in box 1. One m64n128k16 reads both boxes, drawn dashed.
#
# **The descriptor, by hand.** Byte counts go in 16-byte units (>> 4). The swizzle goes in as
# its mode code. Each field is shifted to its first bit (`descriptors.FIELDS`).

# %%
sa, lbo, sbo = dB.start_address >> 4, dB.lbo >> 4, dB.sbo >> 4   # bytes → 16-byte units
mode = descriptors.LAYOUT_TYPE[dB.swizzle]                        # 128-byte swizzle → code 1
print(f"start_address 0x{dB.start_address:4x} >> 4 = {sa:4d} << 0  = 0x{sa << 0:016x}")
print(f"LBO           {dB.lbo:6d} >> 4 = {lbo:4d} << 16 = 0x{lbo << 16:016x}")
print(f"SBO           {dB.sbo:6d} >> 4 = {sbo:4d} << 32 = 0x{sbo << 32:016x}")
print(f"swizzle {dB.swizzle} B: mode    {mode:4d} << 62 = 0x{mode << 62:016x}")
word = sa << 0 | lbo << 16 | sbo << 32 | mode << 62              # base_offset (bits 49-51) is 0
print(f"OR of the four                         = 0x{word:016x}")
assert word == dB.encode()                                        # the encoder's value
print(dB.table())

# %% [markdown]
# `base_offset` stays 0 while a tile starts on its swizzle pattern's 1024-byte repeat;
# [08 §5a](08_pitfalls.ipynb) shows a stage 128 bytes off it.
# Going further: [04b §5, §3](04b_wgmma_anatomy.ipynb) draws and breaks the descriptor.

# %% [markdown]
# ## 3. The k-step
#
# A k-step moves only `start`, by the bytes to the next 16 k; its field, in 16-byte units, by
# those bytes >> 4. Every core matrix, at `start + i·SBO + j·LBO`, moves with it. The hardware
# swizzles every address it forms from `start`.
#
# **Worked: fp16, 64-byte swizzle.**
#
# * **K-major** A, 64×32: a row holds 32 k. The next 16 k lie 16 × 2 = 32 bytes on, in the same
#   swizzled row: field + 2.
# * **MN-major** B, 64×64: a k-row holds 32 n. The next 16 k lie 16 k-rows down: 16 × 64 =
#   1024 bytes, field + 64.
#
# **Why K-major needs no LBO.** One k-step reads 32 bytes of each row, inside one box, so the
# hardware ignores its LBO. The encoder writes 1, as the ISA assumes.

# %%
swizzle = 64                                    # bytes per box row
tiles = {"K": (64, 32), "MN": (64, 64)}         # (m or n, k)
step = {"K": 16 * 2,                            # 16 k along the row, 2 B each
        "MN": 16 * swizzle}                     # 16 k-rows down
for major, (mn, k) in tiles.items():
    t = descriptors.OperandTile(mn, k, "float16", major, swizzle)   # the encoder's
    d0, d1 = (t.descriptor(step=s, base_address=0x2000) for s in (0, 1))
    enc = d1.start_address - d0.start_address
    verdict = "matches the encoder" if step[major] == enc else f"the encoder disagrees: +{enc} B"
    print(f"{major}-major: a k-step +{step[major]} B, start_address field +{step[major] >> 4}: {verdict}")

# %% [markdown]
# **Try it:** change `step["K"]` to `16 * swizzle`, the MN-major step, and rerun. Predict:
# which line's verdict changes?

# %% [markdown]
# **Exercise: advance the descriptor.** Write `kstep_desc(desc0, s, major)`: from step 0's
# descriptor, an int, return step s's. The tile: 64×64 fp16, 128-byte swizzle, one box. `major`
# is "K" (§2's A) or "MN" (§2's B cut to 64 n). Step each as worked above, with 128-byte rows.

# %%
def kstep_desc(desc0, s, major):
    ...   # your code: return k-step s's descriptor, an int


ok = exercises.check("ch04.kstep", kstep_desc)

# %% [markdown]
# ## 4. What TMA writes is what the descriptor reads
#
# Nothing converts between TMA and wgmma. So both must describe the same bytes: the same
# swizzle and strides. [04b §2](04b_wgmma_anatomy.ipynb) checks this with the course's model, for
# every element, major and swizzle.

# %% [markdown]
# ## 5. The kernel: one warpgroup, one 64×N tile
#
# `kernels/wgmma.cu` stores both operands K-major with 128-byte swizzle: [§3](#3.-The-k-step)'s
# K-major case. SBO steps 8 rows, LBO goes unused, and each k-step adds 32 bytes to `start`. The
# kernel fences them for the [async proxy](../docs/glossary.md#proxy). Then it runs K/16 wgmmas. The
# host encodes the descriptors as above. The kernel adds its shared-memory base >> 4. Below: its
# loop, PTX and SASS for N = 64.

# %% output varies
display(notebook.show_source("wgmma.cu", start=r"  // fence \(the registers were written above\)",
                             end=r"^  wgmma_wait_group<0>\(\);$",
                             ptx=("wgmma_fence", "wgmma_commit_group", "wgmma_wait_group")))
cfg = wgmma.TileConfig("float16", 64)
notebook.require((cfg.a_major, cfg.b_major, cfg.a_swizzle, cfg.b_swizzle) == ("K", "K", 128, 128), "both K-major, 128-byte swizzle")
ck = wgmma.compile_tile(cfg)
display(notebook.show_ptx(ck))
print(sass.excerpt(sass.kernel_text(ck.sass(), ck.name), r"HGMMA|WARPGROUP", context=0, limit=6))

# %% [markdown]
# The first `wgmma.mma_async`'s operands:
#
# * in braces, D: N/2 = 32 fp32 registers;
# * A's descriptor, then B's;
# * `p`, D's scale: 0 overwrites D, 1 adds;
# * `1, 1`: A and B not negated; `0, 0`: both K-major.
#
# In the SASS, `WARPGROUP.ARRIVE` is the fence. Each `HGMMA` is one k-step. `gdesc[UR8]` reads its
# descriptors from uniform registers. Each `UR` keeps one value for the whole warp. The wgmma
# **scoreboard** `gsb0` is a hardware counter of the warp's groups still running. `DEPBAR.LE gsb0`
# waits until at most N of them remain.

# %% [markdown]
# ## 6. Where the accumulator lives
#
# **Each of the 128 threads keeps N/2 of D's 64×N fp32 values.** Take thread 37 at N = 16. It is
# lane 5 of warp 1.
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
# [elementwise bound](../docs/glossary.md#elementwise-bound): the rounding error allowed.

# %% output varies
rec = records.load_or_measure("wgmma", wgmma_peak.measure_wgmma)
checks = rec.results["checks"]
print(f"{rec.label()}: {sum(c['passed'] for c in checks)}/{len(checks)} recorded checks passed")

# %% [markdown]
# ## 8. Throughput by N and by operand source
#
# `kernels/wgmma_peak.cu` runs wgmma in a loop. The [peak](../docs/glossary.md#peak) is SMs ×
# 4096 FLOP/clk × the SM clock, read as the kernel runs: an
# [in-kernel](../docs/glossary.md#in-kernel) clock. Our goal is 0.90 of it.
#
# **A model first.** A wgmma does 64·N·16·2 FLOP: N/2 clocks of math at 4096 FLOP per clock. SS
# also reads A (2048 bytes) and B (32·N bytes) from shared memory, at 128 bytes per clock. Below
# N = 64, these 16 + N/4 clocks of reads set SS's pace. RS reads only B, and B never sets its pace.
# A fixed cost per wgmma might. The model leaves it out.
#
# **Predict:** at N = 8, what fraction of the peak does the model give SS? Is RS nearer SS or the
# full rate? Then run the cell. Each point is a fraction of the peak at its own clock. Short blue
# bars: the model's SS. Grey crosses: a published H800 measurement of SS (Luo et al., IPDPS 2024).
# Green, on the right axis: the datasheet's TFLOP/s, at its boost clock, so above 1.0 of our peak
# whenever the clock in flight runs lower.

# %% output answers a prediction
fig = wgmma_peak.plot_throughput(rec)
fpc = [x["flop_per_clk_sm"] for x in rec.results["throughput"]          # FLOP/clk per SM, N ≥ 64
       if x["n"] >= 64 and (x["dtype"], x["chains"], x["ctas_per_sm"]) == ("float16", 1, 2)]
head = f"N ≥ 64, SS and RS, slowest: {notebook.ratio(min(fpc), 4096, 'FLOP/clk')} of the peak"
_ = notebook.verdict(min(fpc) >= 0.90 * 4096, f"{head}; goal 0.90: reached.", f"{head}; goal 0.90: NOT reached.")

# %% check
notebook.require(min(fpc) > 0.975 * 4096, "from N = 64 on, both run at the full rate")
notebook.require(wgmma_peak.small_n_as_modelled(rec.results), "below it, shared memory limits SS, a fixed cost RS")
notebook.require(max(wgmma_peak.luo_per_sm_clock(n) for n in (64, 128, 256)) < min(fpc), "Luo et al.'s crosses plateau lower")

# %% answer [markdown]
# **So:** from N = 64 on, SS and RS both run at the full rate. Below it, shared memory limits SS.
# The model at N = 8 gives 4 clocks of math in 16 + 2 of reads: 0.22. A fixed cost limits RS.
# Luo et al.'s H800 crosses plateau lower: another board, converted at an assumed clock; not examined here.
# Going further: [04b §4 and §6](04b_wgmma_anatomy.ipynb) model small N and tabulate the record.
# %% [markdown]
# **Play** (ungraded): `print(wgmma.design(8, "registers"))` prints the model's clocks beside the
# record's. Try N = 64, then `"smem"`.
# **On a GPU:** `python -m asynctc record wgmma --no-save` re-measures. Compare its N = 8 RS
# TFLOP/s with `design`'s "record:".

# %% [markdown]
# ## Exercises
#
# Both are above: `ch04.kstep` and `ch04.acc_owner`.
#
# Going further: the encoder by hand, [04b §7](04b_wgmma_anatomy.ipynb).

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
