# %% [markdown]
# # 04 — `wgmma` and the shared-memory matrix descriptor
#
# **Learning goal.** Issue Hopper's asynchronous Tensor Core instruction, describe its operands to
# it correctly, and measure how close it gets to the peak.
#
# **The story.** [wgmma](../docs/glossary.md#wgmma) is issued by a [warpgroup](../docs/glossary.md#warpgroup) (four warps, 128 threads) and reads its
# operands from shared memory (B always, A usually). Each is described by a 64-bit
# [*matrix descriptor*](../docs/glossary.md#matrix-descriptor). Get one field wrong and wgmma reads the wrong bytes. You will
#
# 1. see who supplies what to `wgmma.mma_async.m64nNk16`;
# 2. take the descriptor apart bit by bit: start address, [LBO](../docs/glossary.md#lbo), [SBO](../docs/glossary.md#sbo), base offset, swizzle mode;
# 3. draw the **canonical layouts** (the tile layouts wgmma can read) for [K-major](../docs/glossary.md#k-major) and
#    [MN-major](../docs/glossary.md#mn-major) operands, and prove on the CPU that what TMA writes is what wgmma reads;
# 4. run a one-warpgroup tile for every supported combination against float64;
# 5. measure `wgmma` throughput by N and by operand source, per SM per clock.
#
# Deep dive: [04b — wgmma taken apart](04b_wgmma_anatomy.ipynb) (the accumulator fragment drawn,
# the descriptor broken on purpose, why small N is slow, a literature figure).

# %% output varies
import numpy as np
import matplotlib.pyplot as plt

from asynctc.models import descriptors, layout
from asynctc.core import exercises, notebook, records
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
# * **D** lives in registers: N/2 fp32 values per thread. Warp *w* owns rows 16w…16w+15; within a
#   warp, lane 4g+t holds rows g and g+8, columns 8j+2t and 8j+2t+1 (g = 0…7, t = 0…3, every
#   j < N/8).
#
# It is *asynchronous*, like `cp.async` in chapter 02:
#
# | PTX | what it does |
# |---|---|
# | `wgmma.fence` | orders earlier register writes before the wgmma |
# | `wgmma.commit_group` | closes a batch of wgmmas |
# | `wgmma.wait_group N` | waits until at most N batches are in flight |
#
# The wrappers, one per PTX instruction, are in `kernels/ptx/wgmma.cuh` ([04b §6](04b_wgmma_anatomy.ipynb)).

# %% [markdown]
# ## 2. The descriptor, bit by bit
#
# PTX ISA §9.7.15.5.1.2.2 *Matrix Descriptor Format*: five fields of one 64-bit register; addresses
# and offsets are stored as `(x & 0x3FFFF) >> 4`, i.e. in 16-byte units below 256 KiB.
#
# | bits | field | meaning |
# |---|---|---|
# | 0–13 | start address | shared-memory address of the operand's first element |
# | 16–29 | LBO | leading dimension byte offset |
# | 32–45 | SBO | stride dimension byte offset |
# | 49–51 | base offset | row phase of a swizzle pattern not starting on its boundary |
# | 62–63 | swizzle | 0 none, 1 128-byte, 2 64-byte, 3 32-byte |
#
# The tile every later chapter uses: A, 64×64 fp16, K-major, 128-byte swizzle.
#
# * Eight 128-byte rows make one 1024-byte swizzle pattern, so **SBO = 1024** (from one 8-row group
#   to the next).
# * LBO is unused by K-major swizzled layouts: the hardware ignores the field (the ISA "assumes 1"),
#   so the library writes 1 into it: the table below shows `lbo` as 16 B, encoded 1 (1 × 16 bytes).
# * Each further k16 step starts 32 bytes later in the same rows.
#
# **Predict before you look** (this is exercise 1; section 3's figures show the answer): what is
# SBO, in bytes, for a K-major operand tile with **64-byte** swizzle? Replace `...`.

# %%
answer = ...
ok = exercises.check("ch04.sbo", answer, swizzle=64)

# %% [markdown]
# The default tile's descriptor, field by field:

# %%
tile = descriptors.OperandTile(64, 64, "float16", "K", 128)
d0 = tile.descriptor(step=0, base_address=0x2000)
print(tile.describe())
print(d0.table())
print("k-steps:", ", ".join(f"{d.start_address:#x}" for d in tile.descriptors(0x2000)))
assert (d0.sbo, d0.lbo, d0.swizzle, d0.encoded_fields()["sbo"]) == (1024, 16, 128, 64)
assert descriptors.decode(d0.encode()) == d0          # the 64-bit value decodes to the same fields

# %% [markdown]
# Bad values never reach the GPU; each error names the field, the value and the rule (examples in
# [deep dive 04b §6](04b_wgmma_anatomy.ipynb)).

# %% [markdown]
# ## 3. Canonical layouts, drawn
#
# (Deep dive [04b §5](04b_wgmma_anatomy.ipynb) writes the same layouts as the ISA's tables do, in
# the `shape:stride` notation of CuTe, NVIDIA's layout library.)
#
# The [core matrix](../docs/glossary.md#core-matrix) is 8 rows × 16 bytes.
#
# * Without swizzle, a core matrix is 128 contiguous bytes, and LBO/SBO step between them.
# * With a swizzle of S bytes, rows are S bytes long and the 16-byte chunk index is XORed with the
#   line index — the same permutation TMA applies when it writes the tile (chapter 03).
#
# Each number below is the chunk (a group of four banks) where a 16-byte group of elements lands:

# (The MN-major figure leaves out LBO and SBO of the 64-byte mode: exercise 2 asks for them.)

# %% output answers a prediction
fig = wgmma.plot_layouts("K", "float16")
plt.show()
fig = wgmma.plot_layouts("MN", "float16", hide_offsets=(64,))
plt.show()

# %% [markdown]
# Note the MN-major quirk the ISA tables state: without swizzle SBO steps along M/N and LBO along K;
# with a swizzle it is the other way round.
#
# ## 4. What TMA writes is what the descriptor reads
#
# Two models, written independently:
#
# * `asynctc.models.layout.SmemTile` (chapter 03) says where a TMA box puts each element;
# * `asynctc.models.descriptors.read_addresses` says which byte a descriptor makes wgmma read.
#
# One object, the operand tile, produces both the tensor-map box and the descriptor. Then the two
# models are compared element by element, for both majors and every swizzle mode:

# %%
box = layout.SmemTile(64, 64, "float16", 128)
print("tensor map box:", box.tensor_map_args())
print("descriptor    :", descriptors.descriptor_for_smem_tile(box, "K", k_step=1, base_address=0x2000))
tiles = [descriptors.OperandTile(64, 64, "float16", m, sw) for m in ("K", "MN") for sw in (0, 32, 64, 128)]
same = all(np.array_equal(t.addresses(0x2000), t.tma_addresses(0x2000)) for t in tiles)
print(f"{len(tiles)} tiles: every element is read from the byte TMA wrote it to: {same}")
assert same

# %% [markdown]
# ## 5. The kernel: one warpgroup, one 64×N tile
#
# `kernels/wgmma.cu` copies the tile images (or loads them with TMA, `wgmma_tile_tma_*`), makes
# them visible to the async proxy, then runs K/16 wgmmas: fence, issue, commit, wait.
#
# Recall the [proxies](../docs/glossary.md#proxy) of chapter 03: bytes that threads wrote with `st.shared` become
# visible to wgmma only after a `fence.proxy.async`. Data that TMA wrote is already in the async
# proxy; the mbarrier wait makes it visible.

# %%
notebook.show_source("wgmma.cu", start=r"  // fence \(the registers were written above\)",
                     end=r"^  wgmma_wait_group<0>\(\);$")

# %% [markdown]
# The SASS — `WARPGROUP.ARRIVE`, one `HGMMA` per k-step, `WARPGROUP.DEPBAR`; fp8's `QGMMA` — is in
# [deep dive 04b §6](04b_wgmma_anatomy.ipynb).

# %% [markdown]
# ## 6. Correct for every combination
#
# Fresh standard-normal inputs, NaN-poisoned output, float64 reference. Live, a sample runs now.
# The recorded suite checks all 384 single-tile combinations and 72 TMA-fed ones before it times
# anything.

# %% output varies
rec = records.load_or_measure("wgmma", wgmma_peak.measure_wgmma)
if wgmma.runtime.runs_live("sm_90a"):                 # the sample, with its relative error
    for cfg in wgmma.supported_configs(ns=(64,), swizzles=(128,)):
        print(cfg.label(), wgmma.verify_tile(cfg).as_dict()["rel_err"])
checks = rec.results["checks"]
print(f"{rec.label()}: {sum(c['passed'] for c in checks)}/{len(checks)} recorded checks passed")

# %% [markdown]
# ## 7. Throughput by N and by operand source
#
# `kernels/wgmma_peak.cu`: each CTA (one warpgroup, two per SM) loads A (64×64) and B (N×64) once.
# Then it loops over fence → 4 k-steps × chains wgmmas → commit → `wait_group 1`, with no memory
# traffic.
#
# A **chain** is one accumulator and the wgmmas that add into it. Each must wait for the previous
# one's result, so with c chains (c separate accumulators) c independent wgmmas can be in flight.
#
# The SM clock is measured *inside* the kernel: thread 0 of every CTA reads `clock64()` (SM cycles)
# and `%globaltimer` (ns) around the loop. The table prints two fractions:
#
# | column | denominator |
# |---|---|
# | `of clk` | the **per-clock peak**: SMs × 4096 FLOP/clk × the in-kernel clock |
# | `of sheet` | the **datasheet figure**: the same at the 1830 MHz boost clock, 989 TFLOP/s |
#
# (`nvidia-smi`, read a moment after the run, shows an idle GPU's clock; the cell compares the two.)

# %% output varies
fig = wgmma_peak.plot_throughput(rec)
plt.show()
print(wgmma_peak.throughput_table(rec.results, all_chains=False))
_ = notebook.verdict(*wgmma.clock_note(rec.results))    # the in-kernel clock beside nvidia-smi's

# %% [markdown]
# Why small N is slow: [04b §4](04b_wgmma_anatomy.ipynb). Luo et al.'s figures (the table's last
# column) set beside ours at the same kind of clock: [04b §6](04b_wgmma_anatomy.ipynb).
#
# Our goal for this kernel: ≥ 0.90 of the per-clock peak.

# %% output varies
print(wgmma.peak_lines(rec.results, "float16", n=256))
_ = notebook.verdict(*wgmma.goal_note(rec.results, goal=0.90))

# %% [markdown]
# ## Exercises
#
# (Exercise 1, the SBO prediction, is in section 2.) A wrong answer gets a hint: a wrong
# descriptor is decoded field by field and the wrong fields are named.
#
# **2.** Encode the full 64-bit descriptor (a Python `int`) for **k-step 2** of a B tile with
# N = 128, K = 64, bf16, **MN-major** (N contiguous), 64-byte swizzle, stored as TMA boxes starting at shared
# address 0x4000. Hints: a box is one 64-byte swizzle row wide (32 elements of N) and K = 64 rows
# deep; LBO steps from one box to the next along N, SBO from 8 K-rows to the next; a k16 step is
# 16 K-rows. Work it out by hand from this chapter's table and figures;
# `descriptors.OperandTile(...).descriptor(...).encode()` would print the answer, so use the library
# only afterwards, to check your reasoning.

# %%
answer = ...
ok = exercises.check("ch04.descriptor", answer, mn=128, k=64, dtype="bfloat16", major="MN",
                     swizzle=64, step=2, base=0x4000)

# %% [markdown]
# <details><summary>Solutions (run in CI)</summary>The cells below are the worked solutions.</details>

# %%
exercises.check("ch04.sbo", 8 * 64, swizzle=64, solution=True)
box_pitch = 64 * 64                      # K rows × 64-byte rows
lbo, sbo = box_pitch, 8 * 64             # next box along N; next 8 K-rows
start = 0x4000 + 2 * 16 * 64             # k-step 2 = 32 K-rows down
desc = (start >> 4) | (lbo >> 4) << 16 | (sbo >> 4) << 32 | 2 << 62   # 64-byte swizzle = mode 2
ok = exercises.check("ch04.descriptor", desc, mn=128, k=64, dtype="bfloat16", major="MN", swizzle=64,
                step=2, base=0x4000, solution=True)

# %% [markdown]
# **What you learned.** What a warpgroup's wgmma reads and where its accumulator lives, the matrix
# descriptor field by field, and how close one wgmma stream gets to the peak.
# **Next:** [chapter 05](05_pipelines.ipynb) puts TMA, mbarriers and wgmma in one pipelined GEMM.
