# %% [markdown]
# # 02b — Deep dive: the Luo et al. microbenchmark
#
# ← back to the core lesson [02_cp_async](02_cp_async.ipynb)
#
# **Assumes** chapter 02: `cp.async`, commit and wait groups, the ring of stages, the `cp_async` record.
#
# **What it adds:**
# - §1 Luo et al.'s microbenchmark (IPDPS 2024), pipelined vs synchronous copy, rerun beside theirs
# - §2 `wait_group`'s source, the ring's footprint, the CTA tile's copy traffic (a lever), the stage sweep read in full
# - §3 Design it: a two-number model of the stage sweep
# - §4 why the best [rung](../docs/glossary.md#rung) stays under chapter 01's `mma.sync` ceiling: shared memory, counted per k-tile

# %% output varies
import numpy as np
import matplotlib.pyplot as plt

from asynctc import cp_async
from asynctc.core import notebook, plots, records

notebook.banner("sm_90a")
rec = records.load_or_measure("cp_async", cp_async.measure_cp_async)

# %% [markdown]
# ## 1. The Luo et al. microbenchmark: a pipelined vs a synchronous shared-memory copy
#
# Luo et al. (IPDPS 2024) time a block of threads streaming tiles through shared memory, once with
# ordinary loads and stores and a barrier per tile, once pipelined with asynchronous copies, and
# report **+39.5% / +9.7% / −1.8%** for 8×8 / 16×16 / 32×32 blocks on an H800. Our equivalent is
# `kernels/cp_async_smem_pipeline.cu` (each thread reads its neighbour's element, so the barrier is needed):

# %%
notebook.show_source("cp_async_smem_pipeline.cu", start=r"smem_copy_async\(const", end=r"^}")

# %% output varies
smem = rec.results["smem"]
for row in smem:
    print(f"{row['b']:2d}×{row['b']:<2d} ({row['threads']:4d} threads): sync "
          f"{row['sync']['gbps']:6.0f} GB/s, pipelined {row['async']['gbps']:6.0f} GB/s, "
          f"gain {row['gain']:+.1%}   (Luo et al. H800: {cp_async.LUO_GAIN[row['b']]:+.1%})")
fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
x = np.arange(len(smem))
ax.bar(x - 0.2, [r["gain"] * 100 for r in smem], 0.4, label="measured here (see title)")
ax.bar(x + 0.2, [cp_async.LUO_GAIN[r["b"]] * 100 for r in smem], 0.4, label="Luo et al., H800")
ax.set_xticks(x, [f"{r['b']}×{r['b']} ({r['threads']} threads)" for r in smem])
ax.set_xlabel("thread block")
ax.set_ylabel("pipelined vs synchronous, %")
ax.axhline(0, color="k", lw=0.8)
fig.legend(fontsize=8, loc="outside lower center", ncols=2)
ax.set_title(f"Pipelined vs synchronous shared-memory copy\n{rec.label()}", fontsize=9)
plt.show()

# %% [markdown]
# Luo et al. found the gain shrinking as blocks grow, and explain it by latency: with few warps,
# overlapping the next tile's copy with this tile's use hides latency that nothing else would,
# while a 1024-thread block already keeps many loads in flight. We repeated the measurement with our
# own kernel on another GPU (an H200, not their H800); it need not agree, even in sign, and the
# cell below says plainly where it does not. We have not measured why our pipelined copy behaves as
# it does: the record shows the difference, not its cause, and the notebook shows both results and
# picks neither.

# %% output varies
gains = {r["b"]: r["gain"] for r in smem}
same_sign = [b for b in gains if (gains[b] > 0) == (cp_async.LUO_GAIN[b] > 0)]
shown = ", ".join(f"{b}×{b} {gains[b]:+.1%} (Luo {cp_async.LUO_GAIN[b]:+.1%})" for b in sorted(gains))
notebook.verdict(len(same_sign) == len(gains),
                 f"Pipelined vs synchronous here: {shown} — the same sign as Luo et al. at every size.",
                 f"Pipelined vs synchronous here: {shown} — the sign differs from Luo et al. at "
                 f"{len(gains) - len(same_sign)} of {len(gains)} sizes.")
_ = notebook.verdict(all(gains[a] >= gains[b] for a, b in zip(sorted(gains), sorted(gains)[1:])),
                     "Here too the gain shrinks (or the loss grows) as blocks grow.",
                     "Here the gain does not shrink steadily as blocks grow.")

# %% [markdown]
# What else the record shows: how fast the *synchronous* copy already streams, against the
# device-to-device copy of chapter 00's record (the kernel's writes are one value per thread, so
# its traffic is almost all reads).

# %% output varies
dev = max(c["gbps_rw"] for c in records.load("ceilings").results["copy"])
sync_frac = {r["b"]: r["sync"]["gbps"] / dev for r in smem}
async_vs_sync = {r["b"]: r["async"]["gbps"] / r["sync"]["gbps"] for r in smem}
lo, hi = min(sync_frac.values()), max(sync_frac.values())
_ = notebook.verdict(
    lo >= 0.75,
    f"The synchronous copy already streams at {lo:.2f}–{hi:.2f} of the device copy ({dev:.0f} GB/s): "
    f"DRAM is nearly saturated without any overlap, so there is little latency for the pipeline to "
    f"hide, and the pipelined copy runs at {min(async_vs_sync.values()):.2f}–"
    f"{max(async_vs_sync.values()):.2f} of the synchronous one. Why it is slower rather than equal "
    "is not in this record (it holds times, not stall reasons).",
    f"The synchronous copy reaches only {lo:.2f}–{hi:.2f} of the device copy ({dev:.0f} GB/s), so "
    "latency was left to hide, and the pipeline did not hide it on this GPU.")

# %% [markdown]
# ## 2. From the core lesson: `wait_group`, the ring's footprint, and the stage sweep read in full
#
# These extend the core lesson [02](02_cp_async.ipynb), sections 1–4. The wait for all but the
# newest kN groups of copies:

# %%
from asynctc import mma_sync

# %%
notebook.show_source("ptx/cp_async.cuh", start=r"^template <int kN>", end=r"^}")

# %% [markdown]
# How much shared memory each ring takes, and whether two CTAs still fit on one SM (228 KiB):

# %%
for t in cp_async.TILES:
    print(f"{t.name:28s} {t.smem_bytes // 1024:4d} KiB per CTA, {t.min_blocks} CTA(s) per SM")

# %% [markdown]
# A tile that cannot be launched never reaches the GPU:

# %%
try:
    cp_async.CpAsyncTile(128, 128, 64, 64, 64, min_blocks=2, stages=4).validate()
except ValueError as e:
    print("ValueError:", e)

# %% [markdown]
# **Try it: predict, then change `TILE` and rerun.** In a model, each byte a CTA copies feeds
# BM·BN/(BM+BN) FLOP. Predict: does `TILE = (64, 64)` need more or less copying for the same speed?
# Then set it, and `(256, 256)`, and rerun.

# %% output varies
TILE = (128, 128)                         # the CTA tile, BM × BN
print(cp_async.tile_traffic(*TILE))

# %% [markdown]
# Every size and dtype: the best rung beside chapter 01 and cuBLAS, and its share of the peak under both clocks (chapter 00).

# %% output varies
fig = plots.throughput_by_size(cp_async.size_series(rec.results), record=rec,
                               title="cp.async multistage GEMM, fp16")
plt.show()
print(cp_async.summarize_cp_async(rec, microbench=False, cross_check=False))

# %% [markdown]
# The stage sweep at 4096³ fp16 (core lesson, section 4), read in full.
#
# Overlap then adds what it can: from two stages on, the copy of a later k-tile runs while the
# current one is multiplied. With 32-deep k-tiles a single stage exposes the copy latency twice as
# often per FLOP, and there the stages matter more. The ring's shared memory caps the gain: four
# 64-deep stages (32 KiB each) leave room for one CTA per SM, and one CTA's barriers then stall the
# whole SM. So the one-stage 64-deep rung is not the slowest rung: the rungs with half-deep k-tiles
# and little overlap, and the four 64-deep stages at one CTA per SM, can measure below it — the cell
# lists exactly which did. Whatever the ring, the best rung stays under chapter 01's register-only
# `mma.sync` ceiling: cp.async changes how data reaches shared memory, not how the Tensor Cores are
# fed from it — that is chapter 04's wgmma.

# %% output varies
rows = cp_async.stage_table(rec.results, "float16", 4096)
st = {(r["bk"], r["stages"]): r for r in rows}
s1 = st[(64, 1)]["tflops"]
slower = [r for r in rows if r["tflops"] < s1]
notebook.claim({(32, 1), (64, 4)} <= {(r["bk"], r["stages"]) for r in slower}
               and all(r["bk"] == 32 or "/2cta" not in r["tile"] for r in slower),
               "Rungs at 4096³ slower than one 64-deep stage: " + ", ".join(
                   f"{r['tile']} ({r['tflops']:.0f})" for r in slower) + ".",
               slower=[r["tile"] for r in slower])
gain = {}
for bk in (64, 32):
    two_ctas = [st[(bk, n)] for n in (2, 3, 4) if (bk, n) in st and "/2cta" in st[(bk, n)]["tile"]]
    best = max(two_ctas, key=lambda r: r["tflops"])
    gain[bk] = best["tflops"] / st[(bk, 1)]["tflops"] - 1
    notebook.claim(gain[bk] > 0,
                   f"BK = {bk}: overlap adds {gain[bk]:.0%} over one stage "
                   f"(best: {best['stages']} stages, {best['tflops']:.0f} TFLOP/s).",
                   best=best["tflops"], one_stage=st[(bk, 1)]["tflops"])
notebook.claim(gain[32] > gain[64],
               f"The stages matter more with 32-deep k-tiles ({gain[32]:.0%}) than with 64-deep ones ({gain[64]:.0%}).",
               gain_bk32=gain[32], gain_bk64=gain[64])
notebook.claim(st[(32, 1)]["tflops"] < st[(64, 1)]["tflops"],
               f"One stage at BK = 32: {st[(32, 1)]['tflops']:.0f} TFLOP/s, below one stage at BK = 64 "
               f"({st[(64, 1)]['tflops']:.0f}): half-deep k-tiles expose the copy twice as often.",
               bk32=st[(32, 1)]["tflops"], bk64=st[(64, 1)]["tflops"])
one_cta = st[(64, 4)]
notebook.claim("/2cta" not in one_cta["tile"] and one_cta["tflops"] < max(st[(64, 2)]["tflops"], st[(64, 3)]["tflops"]),
               f"Four 64-deep stages, one CTA per SM: {one_cta['tflops']:.0f} TFLOP/s, below two or three "
               f"stages at two CTAs per SM ({max(st[(64, 2)]['tflops'], st[(64, 3)]['tflops']):.0f}).",
               four_stages=one_cta["tflops"])
mma_rec = records.load("mma_sync")             # chapter 01's record, for its ceiling
print(f"chapter 01's mma.sync ceiling at the same occupancy: {mma_rec.label()}")
t1 = mma_sync.DEFAULT_TILE
ceiling = next(r["tflops"] for r in mma_rec.results["peak"] if r["dtype"] == "float16"
               and r["warps_per_cta"] == t1.warps and r["ctas_per_sm"] == t1.min_blocks)
top = max(r["tflops"] for r in rows)
_ = notebook.claim(top < ceiling,
                   f"The best rung, {top:.0f} TFLOP/s, stays below chapter 01's mma.sync ceiling ({ceiling:.0f}).",
                       best=top, ceiling=ceiling)

# %% [markdown]
# **Why does the overlap stay partial?** Core lesson 02 ends on a partial overlap. The best rung's
# k-tile time lies between full overlap (the longer of its math and its shared-memory traffic) and
# none (the two in series). A hypothesis, since the records keep times, not stall reasons: each
# k-tile's `__syncthreads` stops every warp, so the next k-tile's `ldmatrix` reads wait for the
# slowest warp's math. The "Design
# it" survey (§3) points the same way. Its widest miss is the one design with one CTA per SM, where no
# second CTA computes while the first waits at its barrier. Chapter 04's `wgmma` removes the
# `ldmatrix` reads: it reads shared memory once per warpgroup.

# %% [markdown]
# ## 3. Design it: a two-number model of the stage sweep
#
# No grade. A BK = 64 k-tile costs the SM `W` clocks of work (BK = 32: half). Its copies land `L`
# clocks after issue. With S stages they have S − 1 k-tiles' time to land; with one stage the CTA
# copies, waits, then computes. BK = 64 with 3 stages gives `W` (the copies never bind there);
# BK = 32 with 1 stage then gives `L`. Every other run of the stage table is held out. Set `BK`
# (32 or 64) and `S` (1–6): which one binds, and does the record agree?

# %% output varies
BK, S = 32, 2
print(cp_async.design(bk=BK, stages=S, record=rec))

# %% [markdown]
# <details><summary>Solutions</summary>Every recorded design, model beside record.</details>

# %% output varies tags=["solution"]
print(cp_async.design_survey(record=rec))          # "Design it": every recorded design, model beside record

# %% [markdown]
# ## 4. Why not chapter 01's ceiling?
#
# Chapter 01's ceiling is `mma.sync` alone, with no memory traffic.
# Count the clocks one k-tile of the best rung needs. The math runs at the ceiling's pace.
# Shared memory serves 128 bytes per clock (chapter 00 §4). `cp.async` writes each k-tile once, and `ldmatrix`
# reads it two more times, since the four warps sit in two rows and two columns on the tile: both
# warps of a row read its A slice, both of a column its B slice. Each rate is per SM per clock, at
# its own run's measured SM clock, so a [peak](../docs/glossary.md#peak) (SMs × 4096 FLOP per
# clock) from another clock never enters.
#
# Full overlap would take the longer of the two; none, their sum. The `measured` line sits
# between.

# %% output varies
from asynctc import cp_async_show

tile, b, ceil = cp_async.ceiling_rows(rec.results, records.load("mma_sync").results["peak"])
print("TFLOP/s per GHz of SM clock, best rung / ceiling:",           # the clocks cancel
      notebook.ratio(b["tflops"] / b["sm_mhz"] * 1e3, ceil["tflops"] / ceil["sm_mhz"] * 1e3), "\n")
cp_async_show.overlap(rec, records.load("mma_sync").results["peak"])
