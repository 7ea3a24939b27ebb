# %% [markdown]
# # 04 — `wgmma` and the shared-memory matrix descriptor
#
# **Learning goal.** Issue Hopper's asynchronous Tensor Core instruction, describe its operands to
# it correctly, and measure how close it gets to the [peak](../docs/glossary.md#peak).
#
# **The story.** [wgmma](../docs/glossary.md#wgmma) is issued by a [warpgroup](../docs/glossary.md#warpgroup) (four warps, 128 threads) and reads its
# operands from shared memory, each described by a 64-bit [*matrix descriptor*](../docs/glossary.md#matrix-descriptor). You
# take the descriptor apart and follow one element of a [K-major](../docs/glossary.md#k-major)
# tile to the byte wgmma reads. Then you read the kernel and measure it by N.
#
# Deep dive: [04b — wgmma taken apart](04b_wgmma_anatomy.ipynb).

# %% output varies
import numpy as np
import matplotlib.pyplot as plt

from asynctc.models import descriptors, layout
from asynctc.core import exercises, notebook, records, sass
from asynctc import wgmma, wgmma_peak

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. The operands of one `wgmma`
#
# `wgmma.mma_async.sync.aligned.m64nNk16.f32.f16.f16 d, a, b-desc, scale-d, …` (PTX ISA §9.7.15.5.2)
# is issued by **all four warps of a warpgroup** together. It computes D(64×N) = A(64×16)·B(16×N),
# plus D when the predicate `scale-d` is true. N is any multiple of 8 up to 256. K is always 32
# bytes: 16 fp16/bf16 elements, 32 fp8.
#
# * **B** always comes from shared memory, through a 64-bit *descriptor*.
# * **A** comes from shared memory (a second descriptor: "SS") or from registers ("RS": four 32-bit
#   registers per thread, the same fragment as `mma.sync`'s A).
# * **D** lives in registers: N/2 fp32 values per thread (which thread holds each: section 6).
#
# It is *asynchronous*, like `cp.async` in chapter 02. `wgmma.fence` orders earlier register
# writes before it. `wgmma.commit_group` closes a batch. `wgmma.wait_group N` waits until at most N
# batches are in flight.

# %% [markdown]
# ## 2. The descriptor, bit by bit
#
# PTX ISA §9.7.15.5.1.2.2 *Matrix Descriptor Format*: five fields of one 64-bit register.
# Addresses and offsets are stored as `(x & 0x3FFFF) >> 4`, in 16-byte units. Below, the fields
# for the tile every later chapter uses: A, 64×64 fp16, K-major, 128-byte swizzle, at
# shared-memory address 0x2000.

# %%
tile = descriptors.OperandTile(64, 64, "float16", "K", 128)
d0 = tile.descriptor(step=0, base_address=0x2000)
print(d0.table())
assert (d0.sbo, d0.lbo, d0.swizzle, d0.encoded_fields()["sbo"]) == (1024, 16, 128, 64)
assert descriptors.decode(d0.encode()) == d0          # the 64-bit value decodes to the same fields

# %% [markdown]
# * Eight 128-byte rows make one 1024-byte swizzle pattern, so **[SBO](../docs/glossary.md#sbo) =
#   1024**: from one 8-row group to the next.
# * [LBO](../docs/glossary.md#lbo) is unused by K-major swizzled layouts (the ISA "assumes 1"); the library writes 1 (16 B).
# * Each further k16 step starts 32 bytes on, in the same rows: a 128-byte row has room for all
#   four (narrower swizzles: [04b](04b_wgmma_anatomy.ipynb) §5).

# %% [markdown]
# ## 3. One element, from the tile to the byte wgmma reads
#
# wgmma reads an operand in blocks, each a [core matrix](../docs/glossary.md#core-matrix): 8 rows
# of 16 contiguous bytes. Follow A[ROW][K] of §2's tile. First its core matrix: which group of 8 rows,
# which row of the 8, which 16-byte chunk of its 128-byte row.

# %%
ROW, K = 27, 21                        # any row 0..63, any k 0..63
group, r8 = divmod(ROW, 8)
chunk = K * 2 // 16                    # fp16: 2 bytes, 8 elements per chunk
print(f"A[{ROW}][{K}]: row group {group}, row {r8} of its core matrix, chunk {chunk} of 8")

# %% [markdown]
# Its byte offset before the swizzle: SBO (1024 bytes) per group, 128 per row, 2 per element.

# %%
plain = group * d0.sbo + r8 * 128 + K * 2
print(f"unswizzled: {group}·{d0.sbo} + {r8}·128 + {K}·2 = {plain}")

# %% [markdown]
# The 128-byte swizzle XORs the chunk (address bits 4–6) with the row of the 8 (bits 7–9):

# %%
swizzled = plain ^ (r8 << 4)
print(f"chunk {chunk} XOR row {r8} = chunk {chunk ^ r8}: offset {swizzled}")
assert swizzled == layout.swizzle_address(plain, 128)

# %% [markdown]
# Plus the base: the byte TMA wrote A[ROW][K] to, and the byte the descriptor of its k-step makes
# wgmma read (§4 checks every element).

# %%
address = 0x2000 + swizzled
print(f"A[{ROW}][{K}] at {address:#x}")
assert address == tile.tma_addresses(0x2000)[ROW, K] == tile.addresses(0x2000)[ROW, K]

# %% [markdown]
# **Try it** (no grade): change `ROW` and `K` and run the four cells again. Which rows keep their
# chunks in place? Which K of row 27 starts its 128-byte row?
#
# An [MN-major](../docs/glossary.md#mn-major) tile stores B as K×N. Each 128-byte box row is one
# **k-row**, 64 elements of N. Before the swizzle B[k][n] sits at byte k·128 + n·2, so k16 step s
# starts at k-row 16s. Every layout, drawn: [04b](04b_wgmma_anatomy.ipynb) §5.

# %% [markdown]
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
# §3's last step for every element of every swizzle: `layout.SmemTile` (chapter 03) says where TMA
# puts it, `descriptors.read_addresses` (a separate model) which byte wgmma reads.

# %%
tiles = [descriptors.OperandTile(64, 64, "float16", m, sw) for m in ("K", "MN") for sw in (0, 32, 64, 128)]
same = all(np.array_equal(t.addresses(0x2000), t.tma_addresses(0x2000)) for t in tiles)
print(f"{len(tiles)} tiles (both majors, every swizzle): every element is read from the byte TMA wrote it to: {same}")
assert same

# %% [markdown]
# ## 5. The kernel: one warpgroup, one 64×N tile
#
# The threads of `kernels/wgmma.cu` copy the operands into shared memory in section 3's layout,
# make them visible to wgmma's [async proxy](../docs/glossary.md#proxy) (`fence.proxy.async`,
# chapter 03), then run K/16 wgmmas: fence, issue, commit, wait. (`wgmma_fence_operand(d)` emits
# nothing; it keeps the compiler from moving uses of `d` across them.) The loop, PTX and SASS, N = 64:

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
# SASS, `WARPGROUP.ARRIVE` is the fence, `HGMMA` a k-step, `WARPGROUP.DEPBAR.LE gsb0` the wait; the
# last `HGMMA`'s `gsb0` is the commit.

# %% [markdown]
# ## 6. Where the accumulator lives
#
# D's 64×N fp32 values are spread over the 128 threads, N/2 registers each (PTX ISA §9.7.15.5.1.1,
# the D fragment). Write w = thread // 32 (the warp), lane = thread % 32, g = lane // 4, t = lane % 4:
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
# looser for FP8). Live, a sample runs now. The record checked 384 single tiles, 72 TMA-fed ones.

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
# In `kernels/wgmma_peak.cu` each CTA is one warpgroup, two per SM. It loads A (64×64) and B
# (N×64) once, then loops: fence, 4 k-steps, commit, `wait_group 1`. A comes from shared memory
# (SS) or registers (RS). Each point is set against the **per-clock peak**: SMs × 4096 FLOP/clk ×
# the SM clock the kernel read. Our goal is 0.90 of it.
#
# **Why small N is slow.** A wgmma is N/2 clocks of math. SS also reads 2 KiB of A and 32·N
# bytes of B, at 128 bytes per clock. Below N = 64 that read sets the pace. RS reads only B, so
# it is faster there ([04b §4](04b_wgmma_anatomy.ipynb)). The grey crosses are Luo et al.'s
# published H800 wgmma microbenchmark, scaled to this clock.

# %% output varies
fig = wgmma_peak.plot_throughput(rec)
plt.show()
print(wgmma.peak_lines(rec.results, "float16", n=256))
_ = notebook.verdict(*wgmma.goal_note(rec.results, goal=0.90))
assert wgmma_peak.small_n_as_modelled(rec.results)   # "why small N is slow", on the record

# %% [markdown]
# **Design it** (no grade). Set `N` (a multiple of 8, 8–256) and
# `SRC` (`"smem"` for SS, `"registers"` for RS). Where does shared memory stop setting the pace?
# Then try RS at N = 8 and 16, where the model says the Tensor Cores set it. Does the record
# agree?

# %% output varies
N, SRC = 32, "smem"
print(wgmma.design(n=N, source=SRC, record=rec))

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

# %% output varies tags=["solution"]
print(wgmma.design_survey(record=rec))             # §8's "Design it": every recorded shape, model beside record

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
