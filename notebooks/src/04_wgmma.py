# %% [markdown]
# # 04 — `wgmma` and the shared-memory matrix descriptor
#
# **Learning goal.** Issue Hopper's warpgroup-wide, asynchronous Tensor Core instruction and feed it
# correctly. You will
#
# 1. see who supplies what to `wgmma.mma_async.m64nNk16`: A from shared memory or registers, B from
#    shared memory, the 64×N accumulator spread over the 128 threads of a warpgroup;
# 2. take the 64-bit **shared-memory matrix descriptor** apart bit by bit (start address, LBO, SBO,
#    base offset, swizzle mode) and build it from the same tile object that makes the TMA tensor map;
# 3. draw the **canonical layouts** for K-major and MN-major operands under every swizzle mode, and
#    prove on the CPU that what TMA writes is what the descriptor makes wgmma read;
# 4. run a one-warpgroup tile for every supported (dtype, major-ness, swizzle, N) against float64;
# 5. break it on purpose — descriptor and layout disagreeing — and predict the wrong answer exactly;
# 6. measure `wgmma` throughput by N and by operand source, per SM per clock, against the datasheet
#    and against Luo et al.'s H800 measurements.
#
# Story → kernel → check → measure → explain.

# %%
# NBVAL_IGNORE_OUTPUT
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
# is issued by **all four warps of a warpgroup** together and computes D(64×N) = A(64×16)·B(16×N)
# (+ D when the predicate `scale-d` is true). N is any multiple of 8 up to 256; K is 16 for
# fp16/bf16 and 32 for fp8 — always 32 bytes of K.
#
# * **B** always comes from shared memory, through a 64-bit *descriptor*.
# * **A** comes from shared memory (a second descriptor: "SS") or from registers ("RS": four 32-bit
#   registers per thread, the same fragment as `mma.sync`'s A).
# * **D** lives in registers: N/2 fp32 values per thread. Warp *w* owns rows 16w…16w+15; within a
#   warp, lane 4g+t holds rows g and g+8, columns 8j+2t and 8j+2t+1.
#
# It is *asynchronous*: `wgmma.fence` orders earlier register writes before it, `commit_group`
# closes a batch, `wait_group N` waits until at most N batches are in flight. The wrappers, one
# per PTX instruction, live in `kernels/ptx/wgmma.cuh`:

# %%
notebook.show_source("ptx/wgmma.cuh", start=r"^__device__ __forceinline__ void wgmma_fence\(\)",
                     end=r"^__device__ __forceinline__ u64 wgmma_desc_advance")

# %% [markdown]
# The accumulator fragment, drawn for N = 16: the warp (colour block) and lane holding each element.

# %%
# NBVAL_IGNORE_OUTPUT
owner = np.zeros((64, 16), int)
for w in range(4):
    for lane in range(32):
        g, t = divmod(lane, 4)
        for i in range(8):
            owner[16 * w + g + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * t + (i & 1)] = 32 * w + lane
fig, ax = plt.subplots(figsize=(4, 6))
ax.imshow(owner, cmap="tab20c", aspect="auto")
ax.set_title("m64n16: thread (0..127) holding each D element", fontsize=9)
ax.set_xlabel("column n"); ax.set_ylabel("row m")
plt.show()

# %%
assert len(np.unique(owner)) == 128 and np.bincount(owner.ravel()).tolist() == [8] * 128
print("every one of the 128 threads holds exactly N/2 = 8 accumulators:", True)

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
# The tile every later chapter uses: A, 64×64 fp16, K-major, 128-byte swizzle. Eight 128-byte rows
# make one 1024-byte swizzle pattern, so **SBO = 1024** (from one 8-row group to the next); LBO is
# unused by K-major swizzled layouts (the ISA "assumes 1"); each further k16 step starts 32 bytes
# later in the same rows.
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
d0 = tile.descriptor(step=0, base_address=0x0400 * 8)
print(tile.describe())
print(d0.table())
print()
print("k-steps:", ", ".join(f"{d.start_address:#x}" for d in tile.descriptors(0x2000)))

# %%
assert (d0.sbo, d0.lbo, d0.swizzle, d0.encoded_fields()["sbo"]) == (1024, 16, 128, 64)
assert descriptors.decode(d0.encode()) == d0
print("encode → decode round trip:", True)

# %% [markdown]
# Bad values never reach the GPU; each error names the field, the value and the rule:

# %%
for bad in (dict(start_address=0x2008, lbo=16, sbo=1024, swizzle=128),
            dict(start_address=0x2000, lbo=16, sbo=1 << 18, swizzle=128),
            dict(start_address=0x2080, lbo=16, sbo=1024, swizzle=128)):
    try:
        descriptors.WgmmaDescriptor(**bad)
    except descriptors.DescriptorError as e:
        print("DescriptorError:", e, "\n")
try:
    descriptors.OperandTile(128, 64, "float8_e4m3fn", "MN", 128)
except descriptors.DescriptorError as e:
    print("DescriptorError:", e)

# %% [markdown]
# ## 3. Canonical layouts, drawn
#
# With `T` = elements per 16 bytes, the ISA's canonical layouts (§9.7.15.5.1.2.1) in CuTe notation:

# %%
for major in ("K", "MN"):
    for sw in (0, 32, 64, 128):
        print(f"{major:2s}-major {sw:3d}B: {descriptors.canonical_layout(major, sw)}")

# %% [markdown]
# The core matrix is 8 rows × 16 bytes. Without swizzle, core matrices are 128 contiguous bytes and
# LBO/SBO step between them; with a swizzle of S bytes, rows are S bytes long and the 16-byte chunk
# index inside each 128-byte line is XORed with the line index (`Swizzle<B,4,3>`) — the same
# permutation TMA applies when it writes the tile. Each number below is the chunk (a group of four
# banks) where a 16-byte group of elements lands:

# %%
# NBVAL_IGNORE_OUTPUT
fig = wgmma.plot_layouts("K", "float16")
plt.show()
fig = wgmma.plot_layouts("MN", "float16")
plt.show()

# %% [markdown]
# Note the MN-major quirk the ISA tables state: without swizzle SBO steps along M/N and LBO along K;
# with a swizzle it is the other way round.
#
# ## 4. What TMA writes is what the descriptor reads
#
# Two models written independently: `asynctc.models.layout.SmemTile` (chapter 03) says where a TMA box
# puts each element; `asynctc.models.descriptors.read_addresses` says which byte a descriptor makes wgmma
# read. One object, the operand tile, produces both the tensor-map box and the descriptor:

# %%
box = layout.SmemTile(64, 64, "float16", 128)
print("tensor map box:", box.tensor_map_args())
print("descriptor    :", descriptors.descriptor_for_smem_tile(box, "K", k_step=1, base_address=0x2000))

# %% [markdown]
# Now every supported combination, element by element (a test in `tests/test_descriptors.py` does
# the same):

# %%
n_tiles = n_elems = 0
for dt in descriptors.DTYPES:
    for major in ("K", "MN") if descriptors.itemsize(dt) == 2 else ("K",):
        for sw in (0, 32, 64, 128):
            for mn in (8, 64, 256):
                t = descriptors.OperandTile(mn, 4 * descriptors.instruction_k(dt), dt, major, sw)
                assert np.array_equal(t.addresses(0x4000), t.tma_addresses(0x4000)), t.describe()
                n_tiles += 1
                n_elems += t.mn * t.k
print(f"{n_tiles} tiles, {n_elems} elements: TMA's address == the descriptor's address for all")

# %% [markdown]
# ## 5. The kernel: one warpgroup, one 64×N tile
#
# `kernels/wgmma.cu` copies the tile images (or loads them with TMA, `wgmma_tile_tma_*`),
# makes them visible to the async proxy, then runs K/16 wgmmas — fence, issue, commit, wait:

# %%
notebook.show_source("wgmma.cu", start=r"  // fence \(the registers were written above\)",
                     end=r"^  wgmma_fence_operand\(d\);$")

# %% [markdown]
# The SASS: `WARPGROUP.ARRIVE` (`wgmma.fence`), one `HGMMA.64x128x16.F32` per k-step (`.tnspA` /
# `.tnspB` for MN-major operands; an `R` operand instead of `gdesc` when A is in registers),
# `WARPGROUP.DEPBAR.LE gsb0, 0x0` (`wait_group 0`); fp8 compiles to `QGMMA.64xNx32`.

# %%
# NBVAL_IGNORE_OUTPUT
ck = wgmma.compile_tile(wgmma.TileConfig("float16", 128, "MN", "MN", 128))
print(sass.excerpt(ck.sass(), r"wgmma_tile_ss_mm|HGMMA|WARPGROUP", context=0, limit=6))
ck8 = wgmma.compile_tile(wgmma.TileConfig("float8_e4m3fn", 128))
print(sass.excerpt(ck8.sass(), r"QGMMA", context=0, limit=2))

# %%
text = ck.sass()
assert "tnspA.tnspB" in text and "WARPGROUP.ARRIVE" in text and "QGMMA" in ck8.sass()
print("HGMMA with transposes, WARPGROUP.ARRIVE/DEPBAR and QGMMA present:", True)

# %% [markdown]
# ## 6. Correct for every combination
#
# Fresh standard-normal inputs, NaN-poisoned output, float64 reference. Live, a sample runs now;
# the recorded suite (`python -m asynctc record wgmma`) checks all 384 single-tile combinations and
# 72 TMA-fed ones before it times anything.

# %%
# NBVAL_IGNORE_OUTPUT
try:
    rec = records.load_or_measure("wgmma", wgmma_peak.measure_wgmma)
except records.RecordError as e:
    rec = None
    print("No wgmma record yet:", e)
if wgmma.runtime.runs_live("sm_90a"):
    for cfg in wgmma.supported_configs(ns=(64,), swizzles=(128,)):
        print(cfg.label(), wgmma.verify_tile(cfg).as_dict()["rel_err"])
if rec is not None:
    ok = sum(c["passed"] for c in rec.results["checks"])
    print(f"{rec.label()}: {ok}/{len(rec.results['checks'])} recorded checks passed")

# %% [markdown]
# ## 7. Breaking it on purpose
#
# Lay A and B out with 128-byte swizzle, but hand wgmma descriptors that say 64-byte swizzle (same
# start, LBO and SBO). The kernel variant that does this is compiled only by `mismatch_demo`. The
# layout model predicts exactly which element wgmma picks up for every position — and so the wrong
# D, before (or without) any GPU:

# %%
# NBVAL_IGNORE_OUTPUT
res = wgmma.mismatch_demo(n=64, dtype="float16", layout_swizzle=128, descriptor_swizzle=64)
print(res.summary())
fig = wgmma.plot_mismatch(res)
plt.show()

# %%
assert res.a_elements_moved == 64 * 64 * 7 // 8 and res.wrong_predicted > 0.9 * res.reference.size
print("rows 0, 8, 16, … are read correctly (their XOR is 0); 7 of 8 rows are permuted:", True)

# %% [markdown]
# The fix is the matching descriptor — exactly what `OperandTile.descriptor` builds from the tile
# that made the tensor map; section 6's checks are that fix, run for every mode.
#
# ## 8. Throughput by N and by operand source
#
# `kernels/wgmma_peak.cu`: each CTA (one warpgroup, two per SM) loads A (64×64) and B (N×64) once,
# then loops over fence → 4 k-steps × chains wgmmas → commit → `wait_group 1` with no memory
# traffic. The SM clock is measured *inside* the kernel: thread 0 of every CTA reads `clock64()`
# (SM cycles) and `%globaltimer` (ns) before and after the loop, and the median ratio is the clock
# the Tensor Cores actually ran at. (Under this load the H200 clocks well below the 1980 MHz that
# `nvidia-smi` shows a moment later — compare the table's MHz column with the record's
# `clocks_after_nvidia_smi`.) FLOP per SM per clock uses that clock; the datasheet rate is
# SMs × 4096 FLOP/clk × that clock (dense fp16, H100 whitepaper). Luo et al. (IPDPS 2024) measured
# wgmma m64nNk16 f32.f16 (SS, random data) on an H800 PCIe (114 SMs): N = 256/128/64/32/16/8 →
# 665/660/648/472/284/158 TFLOP/s.

# %%
# NBVAL_IGNORE_OUTPUT
if rec is not None and rec.results.get("throughput"):
    fig = wgmma_peak.plot_throughput(rec)
    plt.show()
    print(wgmma_peak.throughput_table(rec.results))
else:
    print("No throughput recorded yet: run `python -m asynctc record wgmma` (or "
          "`python tools/gpu_ch04.py --save`) on an H100/H200.")

# %% [markdown]
# **Why small N is slow.** One wgmma always reads the whole 64×16 A operand; with N = 8 it does
# only 16 384 FLOP for it, so the rate of issuing instructions and reading A — not the Tensor
# Cores — sets the pace. Keeping A in registers (RS) and several independent accumulators in flight
# recovers part of it; a GEMM uses the largest N its registers allow (N = 128–256).
#
# > **What we measured vs what is often claimed.** *"wgmma reaches ~665 TFLOP/s at N = 256 and only
# > ~158 at N = 8"* (Luo et al., H800 PCIe, 114 SMs). Per SM per clock their N = 256 figure is about
# > 3300 FLOP/clk (0.81 of 4096, taking the PCIe card's 1755 MHz boost clock). Our N = 256 fp16 SS
# > figure, its clock and its fraction of the datasheet rate at that clock are in the table above;
# > our goal for it was 0.90 of the datasheet rate at the clock the kernel actually ran at.
#
# ## Exercises
#
# (Exercise 1, the SBO prediction, is in section 2.) A wrong answer gets a hint: a wrong
# descriptor is decoded field by field and the wrong fields are named.
#
# **2.** Encode the full 64-bit descriptor (a Python `int`) for **k-step 2** of a B tile with
# N = 128, K = 64, bf16, **N-major**, 64-byte swizzle, stored as TMA boxes starting at shared
# address 0x4000. Hints: a box is one 64-byte swizzle row wide (32 elements of N) and K = 64 rows
# deep; LBO steps from one box to the next along N, SBO from 8 K-rows to the next; a k16 step is
# 16 K-rows.

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
exercises.check("ch04.descriptor", desc, mn=128, k=64, dtype="bfloat16", major="MN", swizzle=64,
                step=2, base=0x4000, solution=True)
