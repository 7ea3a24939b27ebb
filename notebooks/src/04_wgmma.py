# %% [markdown]
# # 04 — `wgmma` and the shared-memory matrix descriptor
#
# **Learning goal.** Issue Hopper's asynchronous Tensor Core instruction, describe its operands
# correctly, and measure it against the [peak](../docs/glossary.md#peak), the most FLOP/s the
# Tensor Cores can do.
#
# **In plain words.** A [warpgroup](../docs/glossary.md#warpgroup) (four warps) issues one
# [wgmma](../docs/glossary.md#wgmma), an asynchronous matrix multiply, together and moves on. The Tensor Cores fetch its operands
# from shared memory, and a [*matrix descriptor*](../docs/glossary.md#matrix-descriptor) tells
# them the layout TMA wrote. Told wrong, they read wrong bytes, with no error.
#
# Going further: [04b, wgmma taken apart](04b_wgmma_anatomy.ipynb).

# %% output varies
from asynctc.models import descriptors
from asynctc.core import exercises, notebook, records, sass
from asynctc.core.peak import DATASHEET
from asynctc import wgmma, wgmma_peak

notebook.banner("sm_90a")

# %% [markdown]
# ## 1. The operands of one `wgmma`
#
# `wgmma.mma_async.sync.aligned.m64nNk16.f32.f16.f16` (PTX ISA §9.7.15.5.2) computes
# D(64×N) = A(64×16)·B(16×N) + D, for N a multiple of 8 up to 256.
#
# * **B** always comes from shared memory, through a 64-bit *descriptor*.
# * **A** comes from shared memory ("SS") or registers ("RS").
# * **D** lives in registers (§6).
#
# It is asynchronous: `wgmma.fence` before, `wgmma.commit_group` closes a batch,
# `wgmma.wait_group N` leaves at most N in flight.

# %% [markdown]
# ## 2. Why a descriptor, and its fields
#
# Below, A (64×64 fp16, [K-major](../docs/glossary.md#k-major): K contiguous in memory) was written with 128-byte swizzle.
# Three descriptors read it: the right one, one with too narrow a swizzle, one with half the stride. Where wgmma wants A[m][0], what does it get?

# %%
print(wgmma.wrong_reads(rows=(0, 1, 2, 3, 8, 9)))     # asserts what the text says

# %% [markdown]
# Too narrow a swizzle: row 1 lands mid-row 0. Half the stride: row 8 reads row 4.
#
# The descriptor packs five fields into 64 bits (PTX ISA §9.7.15.5.1.2.2). Its unit is the
# [core matrix](../docs/glossary.md#core-matrix), 8 rows × 16 bytes. Two strides step between them:
#
# * [SBO](../docs/glossary.md#sbo): to the next 8 rows.
# * [LBO](../docs/glossary.md#lbo): to the next core matrix along K.
#
# With 128-byte swizzle, 8 rows of 128 bytes make one pattern: SBO is 1024 bytes. A k16 step stays
# inside a row, so LBO is unused. Below, the right descriptor and the tile (dashed: one k16 step).
#
# Going further: [04b §3](04b_wgmma_anatomy.ipynb) breaks each field on purpose.

# %%
tile = descriptors.OperandTile(64, 64, "float16", "K", 128)
d0 = tile.descriptor(step=0, base_address=0x2000)     # every later chapter uses this tile
print(d0.table())
fig = wgmma.plot_layouts("float16", "K", swizzles=(0, 128))

# %% [markdown]
# ## 3. One element, from the tile to the byte wgmma reads
#
# Follow A[ROW][K] of §2's tile to its byte:
#
# 1. Its core matrix: which group of 8 rows, which row of the 8, which 16-byte chunk.
# 2. Before the swizzle: SBO per row group, 128 bytes per row, 2 per element.
# 3. The swizzle XORs the chunk index with the row of the 8.
# 4. Add the base. TMA wrote A[ROW][K] to that byte, and wgmma reads it there.

# %%
ROW, K = 27, 21                        # any row 0..63, any k 0..63
group, r8 = divmod(ROW, 8)
chunk = K * 2 // 16                    # fp16: 2 bytes, 8 elements per chunk
print(f"A[{ROW}][{K}]: row group {group}, row {r8} of its core matrix, chunk {chunk} of 8")
plain = group * d0.sbo + r8 * 128 + K * 2
swizzled = plain ^ (r8 << 4)
print(f"unswizzled: {group}·{d0.sbo} + {r8}·128 + {K}·2 = {plain}")
print(f"chunk {chunk} XOR row {r8} = chunk {chunk ^ r8}: A[{ROW}][{K}] at {0x2000 + swizzled:#x}")
assert 0x2000 + swizzled == tile.tma_addresses(0x2000)[ROW, K] == tile.addresses(0x2000)[ROW, K]

# %% [markdown]
# **Try it:** change `ROW` and `K` and rerun. Which rows keep their chunks in place?
# <details><summary>Answer</summary>Rows 0, 8, 16, …: chunk XOR 0 is the chunk.</details>
#
# **Worked: the K-major k-step.** A 64-wide k-tile is four k16 steps, one descriptor each; only
# the start address moves. In §2's K-major tile, step s starts 16·s elements along each row:
# 16 · 2 = 32 bytes per step. §2's `start_address` field (bits 0–13) counts 16-byte units: +2
# per step.

# %%
for s in range(4):                     # §2's tile
    moved = tile.descriptor(step=s, base_address=0x2000).start_address - 0x2000
    print(f"s = {s}: +{moved:2d} bytes, start_address field +{moved // 16}")

# %% [markdown]
# An [MN-major](../docs/glossary.md#mn-major) tile, M or N contiguous, stores B as K×N: B[k][n]
# sits at byte k·128 + n·2 before the swizzle, so k16 step s starts at row 16s.
#
# **Exercise: advance the descriptor.** Write `kstep_desc(desc0, s, major)`: step s's descriptor
# (an int) from step 0's, `major` "K" (the lines above) or "MN" (its bytes per step, worked the
# same way). The check reads bytes through your descriptors. Going further:
# [04b §5](04b_wgmma_anatomy.ipynb) draws both layouts.

# %%
def kstep_desc(desc0, s, major):
    ...   # your code: return k-step s's descriptor, an int


ok = exercises.check("ch04.kstep", kstep_desc)

# %% [markdown]
# ## 4. What TMA writes is what the descriptor reads
#
# §3's check for every element and swizzle, by two separate models (TMA's, wgmma's).

# %%
tiles = [descriptors.OperandTile(64, 64, "float16", m, sw) for m in ("K", "MN") for sw in (0, 32, 64, 128)]
same = all((t.addresses(0x2000) == t.tma_addresses(0x2000)).all() for t in tiles)
print(f"{len(tiles)} tiles (both majors, every swizzle): every element is read from the byte TMA wrote it to: {same}")
assert same

# %% [markdown]
# ## 5. The kernel: one warpgroup, one 64×N tile
#
# `kernels/wgmma.cu` copies the operands into shared memory in §3's layout, fences them for the
# [async proxy](../docs/glossary.md#proxy) (the path wgmma reads by), then runs K/16 wgmmas. The loop, PTX and SASS, N = 64:

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
# commit is the `gsb0` on the last `HGMMA`.

# %% [markdown]
# ## 6. Where the accumulator lives
#
# D's 64×N fp32 values are spread over the 128 threads, N/2 registers each (PTX ISA
# §9.7.15.5.1.1). With warp w, g = lane // 4 and t = lane % 4:
#
# 1. warp w holds rows 16w to 16w + 15;
# 2. lane 4g + t holds rows g and g + 8 of them, columns 2t and 2t + 1 of each 8-column block;
# 3. in register i, i // 4 is the block, bit 1 the row, bit 0 the column.
#
# Below, N = 16; thread 37's elements are boxed with their register index:

# %%
fig = wgmma.plot_accumulator(n=16, thread=37)

# %% [markdown]
# **Exercise: who holds D[27][12]?** Which thread (0–127), and which of its registers? Answer
# `(thread, reg)`.

# %%
answer = ...
ok = exercises.check("ch04.acc_owner", answer, r=27, c=12)

# %% [markdown]
# ## 7. Correct for every combination
#
# Checked against float64 as in chapter 01, every combination, each element within its
# [elementwise bound](../docs/glossary.md#elementwise-bound), the rounding error allowed (looser for
# FP8).

# %% output varies
rec = records.load_or_measure("wgmma", wgmma_peak.measure_wgmma)
checks = rec.results["checks"]
print(f"{rec.label()}: {sum(c['passed'] for c in checks)}/{len(checks)} recorded checks passed")

# %% [markdown]
# ## 8. Throughput by N and by operand source
#
# `kernels/wgmma_peak.cu` loads A and B once, then loops: fence, 4 k-steps, commit,
# `wait_group 1`. The [peak](../docs/glossary.md#peak) is SMs × 4096 FLOP/clk × the SM clock
# measured in flight. Our goal is 0.90 of it.
#
# **A model first.** A wgmma is N/2 clocks of Tensor Core math. SS also reads A and B from shared
# memory, 16 + N/4 clocks: the pace below N = 64. RS reads only B: the full rate at every N.
#
# **Predict:** at N = 8, what fraction of the peak do SS and RS reach?

# %% output answers a prediction
fig = wgmma_peak.plot_throughput(rec)

# %% [markdown]
# Grey dotted: Luo et al.'s H800 figure ("Benchmarking and Dissecting the Nvidia Hopper GPU
# Architecture", IPDPS 2024), converted per SM and clock at an assumed 1755 MHz.
# **Derive it** from the record: the `throughput`
# row (fields `tflops`, `sm_mhz`) for fp16 SS, and `sm_count`. The datasheet's peak differs only
# in its clock. **Predict, then change `N` to 16 and rerun:** record against model?

# %% output varies
N = 256                                   # 8, 16, 32, 64, 128 or 256
row = next(x for x in rec.results["throughput"] if (x["n"], x["source"], x["chains"]) == (N, "smem", 1)
           and (x["dtype"], x["ctas_per_sm"]) == ("float16", 2))
peak = rec.results["sm_count"] * 4096 * row["sm_mhz"] / 1e6          # TFLOP/s at the kernel's clock
model = (N / 2) / max(N / 2, 16 + N / 4)                              # §8's model
print(f"N = {N}: {notebook.ratio(row['tflops'], peak, 'TFLOP/s')} of the per-clock peak; model {model:.2f}")
print(f"datasheet, at {DATASHEET['boost_mhz']} MHz: {notebook.ratio(row['tflops'], DATASHEET['dense_tflops']['float16'], 'TFLOP/s')}")
_ = notebook.verdict(row["tflops"] / peak >= 0.90, f"N = {N}: goal 0.90 reached.", f"N = {N}: goal 0.90 not reached.")

# %% [markdown]
# **SS against RS**, in FLOP/clk/SM, each run over its model (4096 for RS); each sentence is
# checked:
#
# 1. SS follows the model within 2 % at every N.
# 2. RS outruns SS up to N = 32: it reads no A.
# 3. At N = 8, RS reaches about a third of the model: a fixed cost per wgmma.
#
# **So:** from N = 64 on, both run at the full rate. Below it, shared memory limits SS and a fixed
# cost limits RS. Going further: [04b §4](04b_wgmma_anatomy.ipynb) fits that cost.

# %% output varies
fpc = {(x["n"], x["source"]): x["flop_per_clk_sm"] for x in rec.results["throughput"]
     if (x["dtype"], x["chains"], x["ctas_per_sm"]) == ("float16", 1, 2)}
ss_model = {n: 4096 * (n / 2) / max(n / 2, 16 + n / 4) for n, _ in fpc}            # §8's model
for n in sorted(ss_model): print(f"N = {n:3d}  SS: {notebook.ratio(fpc[n, 'smem'], ss_model[n])}   RS: {notebook.ratio(fpc[n, 'registers'], 4096)}")
notebook.require(all(abs(fpc[n, "smem"] / ss_model[n] - 1) < 0.025 for n in ss_model), "SS follows the model within 2 %")
notebook.require(all(fpc[n, "registers"] > 1.25 * fpc[n, "smem"] for n in (8, 16, 32)), "RS outruns SS up to N = 32")
notebook.require(0.26 < fpc[8, "registers"] / 4096 < 0.36, "at N = 8, RS reaches about a third of the model")
notebook.require(min(fpc[n, s] for n in ss_model if n >= 64 for s in ("smem", "registers")) > 0.975 * 4096, "from N = 64 on, both run at the full rate")

# %% [markdown]
# **Play** (ungraded): `print(wgmma.design(8, "registers"))` shows the model's clocks beside
# the `wgmma` record's run; try N = 64, then `"smem"`. `wgmma.plot_accumulator(n=32, thread=5)`:
# where are thread 5's registers?
# **On a GPU:** `python -m asynctc record wgmma --no-save` re-measures it: compare its N = 8 RS
# TFLOP/s with `design`'s "record:".

# %% [markdown]
# ## Exercises
#
# The exercises are in sections 3 and 6. Going further: write the descriptor encoder yourself in
# [04b §7](04b_wgmma_anatomy.ipynb).

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
