# %% [markdown]
# # 01b — Deep dive: inside the synchronous kernel
#
# ← back to the core lesson [01_synchronous](01_synchronous.ipynb)
#
# **Assumes** chapter 01: the tuned `mma.sync` GEMM (tiles, k-tiles, k16 steps, swizzle), its SASS, the `mma_sync` record.
#
# **What it adds:**
# - §1 who holds what inside one `mma.sync` (the picture of A's fragments, a lane of your choice)
# - §2 the math of one k-tile
# - §3 the tile sweep
# - §4 the kernel taken apart: where the time goes (a prediction exercise)
# - §5 the clock during sustained runs
# - §6 the record's compiler, a refused shape, the L1-path bound model, Luo et al.'s figure

# %% output varies
import numpy as np
import matplotlib.pyplot as plt

from asynctc import mma_sync
from asynctc.core import bench, exercises, notebook, plots, records
from asynctc.models import fragments

notebook.banner("sm_90a")
rng = np.random.default_rng()
rec = records.load_or_measure("mma_sync", mma_sync.measure_mma_sync)
p = rec.provenance
ck = mma_sync.compile_mma_sync("float16")
t = mma_sync.DEFAULT_TILE                 # the ceiling at the kernel's own occupancy (chapter 01, section 4)
ceiling_row = next(r for r in rec.results["peak"] if r["dtype"] == "float16"
                   and r["warps_per_cta"] == t.warps and r["ctas_per_sm"] == t.min_blocks)
ceiling = ceiling_row["tflops"]
print(f"mma.sync ceiling at {t.warps} warps × {t.min_blocks} CTAs/SM: {ceiling:.0f} TFLOP/s ({rec.label()})")

# %% [markdown]
# ## 1. What one `mma.sync.m16n8k16` does, and who holds what
#
# A warp multiplies a 16×16 fp16/bf16 tile of A by a 16×8 tile of B into a 16×8 fp32 tile of C. No
# thread holds a whole row: the 32 lanes each hold a few elements in registers, in a fixed pattern
# (PTX ISA, *Matrix Fragments for mma.m16n8k16*). `asynctc.models.fragments` models that pattern.
# The picture shows which lane, and which of its registers a0–a3, has each element of A.

# %% output varies
lane_a, reg_a = fragments.a_m16n8k16()
fig = plots.bank_map(lane_a, title="mma.m16n8k16: lane and register holding each element of A (16×16)",
                     row_label="row (M)", col_label="column (K)", value_label="lane", regs=reg_a)

# %% [markdown]
# **Try it: predict, then change `LANE` and rerun.** A lane's rows follow g = LANE // 4, its
# columns t = LANE % 4. Lane 0 has rows 0 and 8 of A. Predict which rows of A lane 13 has,
# then set `LANE = 13` and rerun.

# %%
LANE = 0                                  # a lane of the warp, 0..31
print(fragments.lane_table(LANE))

# %% [markdown]
# The four lanes of a quad (lanes 4g … 4g+3) together hold rows g and g+8 of A; the four lanes of
# quad n hold column n of B. The lane that owns C[row, col] is lane 4·(row mod 8) + col / 2: it is in
# the quad holding its *row of A*, but its *column of B* lives in quad `col` — usually another quad.
# So no lane can compute its C elements from its own registers: inside the instruction the hardware
# brings each lane the A values of its quad and the B values of two other quads.
#
# Is the model consistent? Scatter a random A and B into the 32 lanes' registers with the model, let
# every lane compute its four C values *from registers only* by the m16n8k16 rule
# (`fragments.lane_c_fragment`), place them with the C model — and only then compare with A·B:

# %%
fa = rng.standard_normal((16, 16))
fb = rng.standard_normal((16, 8))
a_regs, b_regs = fragments.to_registers(fa, fb)
c_from_regs = fragments.mma_from_fragments(fa, fb)
assert np.allclose(c_from_regs, fa @ fb)
print("C built lane by lane from the fragment registers equals A·B:", np.allclose(c_from_regs, fa @ fb))
print("lane 5 (g = 1, t = 1) reads A from lanes", fragments.quad_sources(5)["a"],
      "and B from lanes", fragments.quad_sources(5)["b"])
a_bad = a_regs.copy()
a_bad[5, [0, 1]] = a_bad[5, [1, 0]]            # one lane's a0 and a1 swapped
c_bad = np.array([fragments.lane_c_fragment(ln, a_bad, b_regs) for ln in range(32)])
lane_c, reg_c = fragments.c_m16n8k16()
print("with lane 5's a0/a1 swapped, wrong C elements:",
      int((~np.isclose(c_bad[lane_c, reg_c], fa @ fb)).sum()), "of 128")

# %% [markdown]
# ## 2. The math of one k-tile

# %% [markdown]
# The math of one k-tile, `mma_ktile`, lives in `kernels/gemm_tile.cuh` because chapter 02's kernel
# runs exactly the same code (what changes there is how k-tiles reach shared memory): per 16-deep
# k step, each warp loads its A fragments with `ldmatrix` and its B fragments with `ldmatrix.trans`,
# then issues MT × NT `mma.sync`:

# %%
notebook.show_source("gemm_tile.cuh", start=r"^__device__ __forceinline__ void load_fragments", end=r"^}")

# %%
notebook.show_source("gemm_tile.cuh", start=r"^template <bool kLoad = true>", end=r"^}")

# %% [markdown]
# The PTX wrapper behind `mma_sync_m16n8k16` is one instruction:

# %%
notebook.show_source("ptx/mma.cuh", start=r"^template <>", end=r"^}")

# %% [markdown]
# ## 3. The tile sweep
#
# The tile sweep at 4096³ fp16 (the default tile is the first row):

# %% output varies
rows = [r for r in rec.results["sweep"] if r["size"] == 4096 and r["dtype"] == "float16"]
base = next(r["tflops"] for r in rows if r["kernel"] == "cuBLAS")
ours = [r for r in rows if r["kernel"] == "mma.sync"]
fig = plots.ladder([r["tile"] for r in ours], [r["tflops"] for r in ours], baseline=base, record=rec,
                   title="mma.sync GEMM tiles at 4096³ fp16")

# %% [markdown]
# The whole record, size by size (the best tile per size, its clock and fractions of peak; the
# register-only ceilings at each occupancy):

# %% output varies
print(mma_sync.summarize_mma_sync(rec, anatomy=False))

# %% [markdown]
# ## 4. Take the kernel apart: where the time goes
#
# The kernel does three kinds of work per k-tile: the threads **copy** the next A and B tiles from
# global memory into shared memory (16-byte loads into registers, then stores), they **load
# fragments** out of shared memory with `ldmatrix`, and they **multiply** with `mma.sync`, with a
# `__syncthreads()` per k-tile. To see what each costs, the same kernel is compiled with parts of
# that work removed (`mma_sync.compile_mma_sync_ablation`, a compile-time switch in the `.cu` file;
# those variants compute a wrong product and are only timed) and timed beside cuBLAS in the same run:
#
# * **no global→shared copy** — the k-tile in shared memory is never refilled;
# * **no ldmatrix** — the fragments of the first k16 step are reused for every step;
# * **mma.sync + `__syncthreads` only** — both removed; only the Tensor Core work and the barriers
#   remain.
#
# **Predict before you look** (exercise 1): which removal gains more, the copy or the
# `ldmatrix`? Per k-tile a CTA copies 32 KiB (its A and B tiles) — a load into registers and a
# store into shared memory, so 64 KiB through the L1/shared-memory data path — and its four warps
# `ldmatrix` 64 KiB. Equal bytes — so what else could differ? Answer `"copy"` or `"ldmatrix"`;
# the check reads the record, so on another GPU the answer may differ.

# %% output varies
prediction = ...
ok = exercises.check("ch01.costliest_part", prediction, ablation=rec.results["ablation"])

# %% output answers a prediction
abl = rec.results["ablation"]
cub = next(x["tflops"] for x in abl if x["variant"] == "cuBLAS")
parts = [x for x in abl if x["variant"] != "cuBLAS"]
fig = plots.ladder([x["variant"] for x in parts], [x["tflops"] for x in parts], baseline=cub, record=rec,
                   title=f"Chapter 01's kernel taken apart, {parts[0]['size']}³ fp16, tile {parts[0]['tile']}")
print("\n".join(mma_sync.summarize_anatomy(rec.results, p["sm_count"])))

# %% [markdown]
# What the H200 measured, and what it means:
#
# * removing the **copy by the threads** gains more than removing `ldmatrix`, although through the
#   L1/shared-memory data path the two move about as many bytes (64 KiB per k-tile each, counting the
#   copy's load and store). The copy also costs the warps that should be issuing `mma.sync` their
#   **issue slots** (each of an SM's four schedulers issues at most one warp instruction per clock,
#   so every load or store instruction takes a clock that an `mma.sync` could have used) and 64
#   staging registers per thread. A hypothesis that fits our runs but is not
#   proven: a global load is staged in L1's storage on its way to the registers, so each copied byte
#   crosses that data path a third time (bypassing L1 with `ld.global.cg` or `.L1::no_allocate`
#   changed nothing; see `docs/NOTES.md`);
# * with both removed, what is left — `mma.sync` and the barriers — is still short of the
#   register-only `mma.sync` ceiling measured at the same occupancy in chapter 01, section 4: the barriers and
#   the [epilogue](../docs/glossary.md#epilogue) (the end of the kernel, which writes C) take the rest.

# %% output varies
speed = {x["variant"]: x["tflops"] for x in abl}
full, no_copy, no_ldsm = speed["full kernel"], speed["no global→shared copy"], speed["no ldmatrix"]
skeleton = speed["mma.sync + __syncthreads only"]
notebook.claim(no_copy > no_ldsm > full,
               f"Without the copy the kernel runs {no_copy / full:.2f}× as fast as the full kernel; "
               f"without ldmatrix {no_ldsm / full:.2f}×: the copy is the larger cost.",
               full=full, no_copy=no_copy, no_ldmatrix=no_ldsm)
_ = notebook.claim(skeleton < ceiling,
                   f"mma.sync + barriers only: {skeleton:.0f} TFLOP/s, {skeleton / ceiling:.2f} of the "
                   f"register-only ceiling at the same occupancy ({ceiling:.0f}).",
                   skeleton=skeleton, ceiling=ceiling)

# %% [markdown]
# ## 5. Clocks of sustained runs
#
# **Clocks.** The two `sustained` lines ran cuBLAS and our kernel back to back for 1.5 s each while
# `nvidia-smi` sampled the SM clock and the board power during the loop (the GPU's clock policy
# decides the clock; the record does not say why it chose what it did). A reading taken *after* a
# run shows the idle clock and says nothing about the run; per-clock figures need the clock sampled
# during it, as here, or measured inside the kernel, as the ceiling kernel and chapter 04 do. The
# timed rows of the anatomy carry `bench.time_gpu`'s clock instead, of a kind deep dive
# [00b](00b_clock_kinds.ipynb) §1 defines; the cell prints it (with the after-sample probe where the record keeps one)
# beside the loops' readings.

# %% output varies
sus = {x["kernel"]: x for x in rec.results["sustained"]}
cb_s, mm_s = sus["cuBLAS"], sus["mma.sync"]
per_clk = {k: x["tflops"] / bench.peak_tflops(p["sm_count"], x["sm_mhz"]) for k, x in sus.items()}
print(f"During the loops cuBLAS ran at {cb_s['sm_mhz']:.0f} MHz ({cb_s['power_w']:.0f} W), our kernel at "
      f"{mm_s['sm_mhz']:.0f} MHz ({mm_s['power_w']:.0f} W).")
ratio_clk = per_clk["cuBLAS"] / per_clk["mma.sync"]
ratio_tflops = cb_s["tflops"] / mm_s["tflops"]
head = f"Per clock cuBLAS does {ratio_clk:.1f}× the work of our kernel"
notebook.verdict(ratio_clk > ratio_tflops,
                 f"{head} — more than the {ratio_tflops:.1f}× of their TFLOP/s, because it ran at the lower clock.",
                 f"{head} — not more than the {ratio_tflops:.1f}× of their TFLOP/s: it did not run at the "
                 "lower clock this time.")
timed = {x["variant"]: x for x in abl}
both = f"sustained {cb_s['tflops']:.0f} and {mm_s['tflops']:.0f} TFLOP/s, timed " \
       f"{timed['cuBLAS']['tflops']:.0f} and {timed['full kernel']['tflops']:.0f} (cuBLAS, ours)"
clocks = f"nvidia-smi read {cb_s['sm_mhz']:.0f} and {mm_s['sm_mhz']:.0f} MHz during the loops; the " \
         f"timed samples' clock: {bench.clock_text(timed['cuBLAS'])} and " \
         f"{bench.clock_text(timed['full kernel'])}"
below = cb_s["tflops"] < timed["cuBLAS"]["tflops"] and mm_s["tflops"] < timed["full kernel"]["tflops"]
_ = notebook.verdict(below, f"Both sustained figures are below the timed ones ({both}); {clocks}.",
                     f"The sustained figures are not both below the timed ones this time ({both}); {clocks}.")
abl_kind = bench.rows_clock_kind([timed["cuBLAS"], timed["full kernel"]])
if bench.clock_caveat(abl_kind):
    print(bench.clock_caveat(abl_kind))

# %% [markdown]
# ## 6. From the core lesson: the compiler, a refused shape, the L1-path model, a literature figure
#
# These extend the core lesson [01](01_synchronous.ipynb), sections 3 and 5.
#
# Variants tried on the synchronous kernel: larger warp
# tiles would need fewer `ldmatrix` bytes per FLOP, but their accumulators do not fit in the
# registers at two CTAs per SM; loading two k-tiles in advance, spreading the
# shared-memory stores over the k-tile, or bypassing L1 for the global loads (`ld.global.cg`,
# `.L1::no_allocate`) all measured within ±2% (see `docs/NOTES.md`).

# %%
from asynctc.core import runtime

# %% [markdown]
# (In [replay](../docs/glossary.md#replay), the SASS and register counts above come from this machine's NVRTC; the measurements
# were made with the kernel compiled by the NVRTC of the machine that measured them:)

# %% output varies
print(f"NVRTC here: {'.'.join(map(str, runtime.nvrtc_version()))}; "
      f"NVRTC of the measurement: {rec.provenance['nvrtc']}")

# %% [markdown]
# Shapes the kernel does not support never reach the GPU — the Python entry point says why:

# %%
try:
    mma_sync.mma_sync_gemm(np.ones((100, 64), np.float16), np.ones((64, 128), np.float16))
except ValueError as e:
    print("ValueError:", e)

# %% [markdown]
# The core lesson's section 5 names two effects; the second: every operand byte crosses the SM's
# L1/shared-memory data path several times. A simple model counts the global load, the
# shared-memory store and the `ldmatrix` for each tile and asks how fast the kernel could go if that
# data path (128 bytes per clock per SM: 32 banks × 4 bytes) were the only limit; the last column
# counts the fourth pass too (the hypothesis of section 4):

# %% output varies
sweep16 = [r for r in rec.results["sweep"] if r["dtype"] == "float16"]
sweep_mhz = bench.measured_clock_mhz(sweep16)           # median clock of the fp16 sweep's samples
sweep_kind = bench.rows_clock_kind(sweep16)             # how it was measured (deep dive 00b §1)
clock = sweep_mhz        # the fp16 sweep's clock (core lesson §4): the model's bound scales with it
print(f"L1-path bound at {clock:.0f} MHz ({sweep_kind}, the fp16 sweep's clock, core lesson §4)")
print(f"{'tile':26s} {'bytes/k-tile (LDG+STS+LDSM)':>28s} {'FLOP/byte':>10s} {'L1-path bound':>17s} "
      f"{'with L1 staging':>19s}")
for t in mma_sync.TILES:
    b = t.l1_bytes_per_ktile()
    tot = b["ldg"] + b["sts"] + b["ldsm"]
    staged = t.l1_bound_tflops(p["sm_count"], clock) * tot / (tot + b["ldg"])
    print(f"{t.name:26s} {tot:28d} {b['flop'] / tot:10.1f} {t.l1_bound_tflops(p['sm_count'], clock):9.0f} TFLOP/s "
          f"{staged:11.0f} TFLOP/s")

# %% [markdown]
# The model's bound is not a prediction — bank timing, barrier stalls and the `mma.sync` issue rate
# all take their share, and Nsight Compute read the L1/TEX unit (the SM's L1 cache, whose
# data path shared memory shares) 76% busy on the default tile (one
# launch at 4096³, 2026-11-29, the kernel of commit a4e1e33; see `docs/NOTES.md`) — but
# it names the resource: with the threads moving every byte, the shared-memory data path and the
# barriers, not the Tensor Cores, set the pace.
#
# > **What we measured vs what is often claimed.** *"mma.sync reaches about 63% of peak on
# > Hopper"* (Luo et al., IPDPS 2024, H800 microbenchmarks). The register-only ceiling we measured is
# > printed below as a fraction of SMs × 4096 × its own in-kernel clock and of the datasheet figure;
# > the full synchronous GEMM reaches the fraction of cuBLAS printed in the core lesson's section 5,
# > against the goal of half of cuBLAS at 4096³.

# %% output varies
best = max((r for r in rec.results["peak"] if r["dtype"] == "float16"), key=lambda r: r["tflops"])
print(f"register-only mma.sync ceiling, best configuration ({best['warps_per_cta']} warps × "
      f"{best['ctas_per_sm']} CTAs/SM): {best['tflops']:.0f} TFLOP/s = "
      f"{bench.peak_text(best, p['sm_count'], 'float16')}")
print("Luo et al.: about 0.63 of the H800's peak (their own peak figure; not comparable per clock)")

# %% [markdown]
# <details><summary>Solutions (run in CI)</summary>The cell below is the worked solution.</details>

# %% output varies
speed = {x["variant"]: x["tflops"] for x in rec.results["ablation"]}
costliest = "copy" if speed["no global→shared copy"] > speed["no ldmatrix"] else "ldmatrix"
ok = exercises.check("ch01.costliest_part", costliest, ablation=rec.results["ablation"], solution=True)
