# %% [markdown]
# # 04 — `wgmma` and the shared-memory matrix descriptor
#
# **Learning goal.** Issue Hopper's asynchronous Tensor Core instruction, describe its operands to
# it correctly, and measure how close it gets to the [peak](../docs/glossary.md#peak).
#
# **In plain words.** A [warpgroup](../docs/glossary.md#warpgroup) (four warps) issues one
# [wgmma](../docs/glossary.md#wgmma) together and moves on; the Tensor Cores fetch its operands
# from shared memory themselves, so a [*matrix descriptor*](../docs/glossary.md#matrix-descriptor)
# must tell them the layout TMA wrote. Told wrong, they read the wrong bytes, with no error. The
# product collects in the threads' registers.
#
# Deep dive: [04b — wgmma taken apart](04b_wgmma_anatomy.ipynb).

# %% output varies
import matplotlib.pyplot as plt

from asynctc.models import descriptors
from asynctc.core import exercises, notebook, records, sass
from asynctc import wgmma, wgmma_peak

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. The operands of one `wgmma`
#
# `wgmma.mma_async.sync.aligned.m64nNk16.f32.f16.f16` (PTX ISA §9.7.15.5.2) is issued by **all
# four warps of a warpgroup** together: D(64×N) = A(64×16)·B(16×N), plus D when the predicate
# `scale-d` is true. N is a multiple of 8 up to 256; K is always 32 bytes.
#
# * **B** always comes from shared memory, through a 64-bit *descriptor*.
# * **A** comes from shared memory too ("SS") or from registers ("RS").
# * **D** lives in registers: N/2 fp32 values per thread (§6).
#
# Like `cp.async` (chapter 02) it is asynchronous: `wgmma.fence` orders register writes before it,
# `wgmma.commit_group` closes a batch, `wgmma.wait_group N` leaves at most N in flight.

# %% [markdown]
# ## 2. Why a descriptor, and its fields
#
# In chapter 01 each thread loaded its own fragment with `ldmatrix`. wgmma has no such step: only
# the descriptor tells the Tensor Cores the layout. Below, A (64×64 fp16, [K-major](../docs/glossary.md#k-major)) was written with 128-byte swizzle. Three descriptors read it. One is right, one's swizzle field says
# 64 bytes, one's stride says 512 bytes instead of 1024. Where wgmma wants A[m][0], what does it get?

# %%
print(wgmma.wrong_reads(rows=(0, 1, 2, 3, 8, 9)))     # asserts what the text says

# %% [markdown]
# The 64-byte field makes wgmma think a row is 64 bytes long, so row 1 lands half-way along row 0.
# With the short stride, row 8 reads row 4. Nothing faults ([04b](04b_wgmma_anatomy.ipynb) §3).
#
# The descriptor is five fields of one 64-bit register (PTX ISA §9.7.15.5.1.2.2), offsets in
# 16-byte units, stepping between blocks of 8 rows × 16 bytes, each a
# [core matrix](../docs/glossary.md#core-matrix). Below, the right descriptor at 0x2000, and the
# tile without and with swizzle (dashed: one k16 step).
#
# * Without swizzle, TMA stores 16-byte-wide boxes. [SBO](../docs/glossary.md#sbo) steps 8 rows
#   down a box, [LBO](../docs/glossary.md#lbo) to the next box along K.
# * With 128-byte swizzle a row is 128 bytes, and 8 rows make one 1024-byte pattern: SBO = 1024.
#   A k16 step stays inside the row, so LBO is unused (the library writes 16 B).

# %%
tile = descriptors.OperandTile(64, 64, "float16", "K", 128)
d0 = tile.descriptor(step=0, base_address=0x2000)     # every later chapter uses this tile
print(d0.table())
fig = wgmma.plot_layouts("float16", "K", swizzles=(0, 128))
plt.show()

# %% [markdown]
# ## 3. One element, from the tile to the byte wgmma reads
#
# Follow A[ROW][K] of §2's tile. First its core matrix: which group of 8 rows, which row of the 8,
# which 16-byte chunk of its 128-byte row.

# %%
ROW, K = 27, 21                        # any row 0..63, any k 0..63
group, r8 = divmod(ROW, 8)
chunk = K * 2 // 16                    # fp16: 2 bytes, 8 elements per chunk
print(f"A[{ROW}][{K}]: row group {group}, row {r8} of its core matrix, chunk {chunk} of 8")

# %% [markdown]
# Its byte offset before the swizzle: SBO (1024 bytes) per group, 128 per row, 2 per element. Then
# the 128-byte swizzle XORs the chunk (address bits 4–6) with the row of the 8 (bits 7–9). Plus the
# base: the byte TMA wrote A[ROW][K] to, which its k-step's descriptor makes wgmma read.

# %%
plain = group * d0.sbo + r8 * 128 + K * 2
swizzled = plain ^ (r8 << 4)
print(f"unswizzled: {group}·{d0.sbo} + {r8}·128 + {K}·2 = {plain}")
print(f"chunk {chunk} XOR row {r8} = chunk {chunk ^ r8}: A[{ROW}][{K}] at {0x2000 + swizzled:#x}")
assert 0x2000 + swizzled == tile.tma_addresses(0x2000)[ROW, K] == tile.addresses(0x2000)[ROW, K]

# %% [markdown]
# **Try it** (no grade): change `ROW` and `K` and rerun the two cells. Which rows keep their chunks
# in place? <details><summary>Answer</summary>Rows 0, 8, 16, …: their row mod 8 is 0, and chunk XOR 0
# is the chunk itself.</details>
#
# An [MN-major](../docs/glossary.md#mn-major) tile stores B as K×N. Each 128-byte box row is one
# **k-row**, 64 elements of N. Before the swizzle B[k][n] sits at byte k·128 + n·2, so k16 step s
# starts at k-row 16s. Every layout, drawn: [04b](04b_wgmma_anatomy.ipynb) §5.
#
# **Exercise: advance the descriptor.** A 64-wide k-tile is four k16 steps, one descriptor each.
# Only the start address moves. Write `kstep_desc(desc0, s, major)`: k-step s's descriptor, from
# k-step 0's, of a 64×64 fp16 tile with 128-byte swizzle, `major` "K" or "MN". The check compares
# the bytes your descriptors read with those TMA wrote.

# %%
def kstep_desc(desc0, s, major):
    ...   # your code: return k-step s's descriptor, an int


ok = exercises.check("ch04.kstep", kstep_desc)

# %% [markdown]
# ## 4. What TMA writes is what the descriptor reads
#
# §3's check, for every element of every swizzle, by two separate models (TMA's, wgmma's).

# %%
tiles = [descriptors.OperandTile(64, 64, "float16", m, sw) for m in ("K", "MN") for sw in (0, 32, 64, 128)]
same = all((t.addresses(0x2000) == t.tma_addresses(0x2000)).all() for t in tiles)
print(f"{len(tiles)} tiles (both majors, every swizzle): every element is read from the byte TMA wrote it to: {same}")
assert same

# %% [markdown]
# ## 5. The kernel: one warpgroup, one 64×N tile
#
# `kernels/wgmma.cu` copies the operands into shared memory in section 3's layout, makes them
# visible to wgmma's [async proxy](../docs/glossary.md#proxy) (`fence.proxy.async`), then runs
# K/16 wgmmas: fence, issue, commit, wait. The loop, PTX and SASS, N = 64:

# %% output varies
display(notebook.show_source("wgmma.cu", start=r"  // fence \(the registers were written above\)",
                             end=r"^  wgmma_wait_group<0>\(\);$",
                             ptx=("wgmma_fence", "wgmma_commit_group", "wgmma_wait_group")))
ck = wgmma.compile_tile(wgmma.TileConfig("float16", 64))             # K-major A and B, 128-byte swizzle
display(notebook.show_ptx(ck))
print(sass.excerpt(sass.kernel_text(ck.sass(), ck.name), r"HGMMA|WARPGROUP", context=0, limit=6))

# %% [markdown]
# The first `wgmma.mma_async`: in braces D, 32 fp32 registers per thread (N/2); the A and B
# descriptors; `p`, scale-d (0: overwrite D, 1: add); `1, 1` no negation; `0, 0` K-major. In the
# SASS, `WARPGROUP.ARRIVE` is the fence, `HGMMA` a k-step, `WARPGROUP.DEPBAR.LE gsb0` the wait;
# the commit is the `gsb0` on the last `HGMMA`.

# %% [markdown]
# ## 6. Where the accumulator lives
#
# D's 64×N fp32 values are spread over the 128 threads, N/2 registers each (PTX ISA
# §9.7.15.5.1.1). With w = thread // 32, lane = thread % 32, g = lane // 4, t = lane % 4:
#
# * warp w holds rows 16w…16w+15;
# * lane 4g + t holds rows g and g + 8 of that block, columns 2t and 2t + 1, and the same again
#   every 8 columns;
# * in register i, i // 4 counts the 8-column blocks, bit 1 picks row g or g + 8, bit 0 the column
#   2t or 2t + 1.
#
# Below, N = 16; thread 37's elements are boxed, with their register index:

# %%
fig = wgmma.plot_accumulator(n=16, thread=37)
plt.show()

# %% [markdown]
# **Exercise: who holds D[27][12]?** Which thread (0–127), and which of its registers? Answer
# `(thread, reg)`.

# %%
answer = ...
ok = exercises.check("ch04.acc_owner", answer, r=27, c=12)

# %% [markdown]
# ## 7. Correct for every combination
#
# Checked against float64 as in chapter 01 ([elementwise bound](../docs/glossary.md#elementwise-bound);
# looser for FP8). Live, a sample runs now; the record checked every combination.

# %% output varies
rec = records.load_or_measure("wgmma", wgmma_peak.measure_wgmma)
if wgmma.runtime.runs_live("sm_90a"):                 # the sample, with its relative error
    for cfg in wgmma.supported_configs(ns=(64,), swizzles=(128,)):
        print(cfg.label(), wgmma.verify_tile(cfg).as_dict()["rel_err"])
checks = rec.results["checks"]
print(f"{rec.label()}: {sum(c['passed'] for c in checks)}/{len(checks)} recorded checks passed")

# %% [markdown]
# ## 8. Throughput by N and by operand source
#
# In `kernels/wgmma_peak.cu` each CTA, one warpgroup (two per SM), loads A and B once, then
# loops: fence, 4 k-steps, commit, `wait_group 1`. The [peak](../docs/glossary.md#peak) is SMs ×
# 4096 FLOP/clk × the SM clock the kernel measured in flight. Our goal is 0.90 of it.
#
# **A model first.** A wgmma is N/2 clocks of Tensor Core math. SS also reads 2 KiB of A and 32·N
# bytes of B from shared memory at 128 B/clk: 16 + N/4 clocks, which sets the pace below N = 64.
# RS reads only B, so the model gives it the full rate at every N.
#
# **Predict** before you run the next cell. At N = 8, what fraction of the peak does SS reach? Does
# RS reach the full rate there?

# %% output answers a prediction
fig = wgmma_peak.plot_throughput(rec)
plt.show()
print(wgmma.peak_lines(rec.results, "float16", n=256))
_ = notebook.verdict(*wgmma.goal_note(rec.results, goal=0.90))

# %% [markdown]
# The two peaks differ only in their clock. Grey dotted: Luo et al.'s (IPDPS 2024) H800 figure,
# scaled ([04b](04b_wgmma_anatomy.ipynb) §6). **Derive it** from the record: the `throughput` row
# (fields `tflops`, `sm_mhz`) for fp16, N = 256, SS, and `sm_count`:

# %% output varies
row = next(x for x in rec.results["throughput"] if (x["n"], x["source"], x["chains"]) == (256, "smem", 1)
           and (x["dtype"], x["ctas_per_sm"]) == ("float16", 2))
peak = rec.results["sm_count"] * 4096 * row["sm_mhz"] / 1e6          # TFLOP/s at the kernel's clock
print(f"{row['tflops']:.0f} / {peak:.0f} = {row['tflops'] / peak:.2f} of the per-clock peak")

# %% [markdown]
# **SS against RS**, in FLOP/clk/SM (4096 is the full rate). SS follows the model within 2 % at
# every N. RS beats SS up to N = 32, since it reads no A, but at N = 8 it reaches only 0.31 of the
# model: each RS wgmma costs a fixed 13 clocks the model lacks ([04b](04b_wgmma_anatomy.ipynb) §4
# fits it). **So:** from N = 64 on, both run at the full rate (within 2 %); below it, shared
# memory limits SS and a fixed issue cost limits RS.

# %% output varies
print(wgmma.small_n_table(rec.results))     # one division per sentence above, each asserted

# %% [markdown]
# ## Exercises
#
# The exercises are in sections 3 and 6. Write the descriptor encoder yourself: [deep dive 04b §7](04b_wgmma_anatomy.ipynb).

# %% [markdown]
# <details><summary>Solutions (run in CI)</summary>The cell below is the worked solution.</details>

# %%
def kstep_desc(desc0, s, major):
    step = 32 if major == "K" else 16 * 128     # bytes per k16 step: along the row, or 16 k-rows
    return desc0 + (s * step >> 4)              # the field counts 16-byte units


ok = exercises.check("ch04.kstep", kstep_desc, solution=True)

r, c = 27, 12
w, g, half = r // 16, r % 8, r % 16 // 8       # warp 1, row g = 3, row g + 8 (half 1)
j, t, odd = c // 8, c % 8 // 2, c % 2          # 8-column block 1, column pair t = 2, even column
ok = exercises.check("ch04.acc_owner", (32 * w + 4 * g + t, 4 * j + 2 * half + odd), r=r, c=c,
                     solution=True)

# %% [markdown]
# ## Worklog

# %% output varies
from asynctc.core import worklog

worklog.show("04")

# %% [markdown]
# **Your GEMM so far.** Chapter 04 added the k-step: your descriptors walk each wgmma along K.
# The tile runs on the CPU as in deep dive [06e](06e_your_gemm_on_the_cpu.ipynb).

# %% output varies
from asynctc.models.gemm_so_far import so_far

so_far("04")

# %% [markdown]
# **What you learned.** What a wgmma reads, where its accumulator lives, its descriptor field by field.
# **Next:** [chapter 05](05_pipelines.ipynb).
