# %% [markdown]
# # 05c — Deep dive: what moved the numbers, and the protocol broken on purpose
#
# ← back to the core lesson [05_pipelines](05_pipelines.ipynb)
#
# **Assumes** chapter 05: the ring, its parities, the kernel's loop, the `pipeline` record.
#
# **What it adds:**
# - §1 the configuration names, in full
# - §2 the producer's half of a refill; each measured tile's SASS, registers, shared memory
# - §3 the same ring in CUTLASS's names
# - §4 what moved the numbers: `wait_group` 0 vs 1, tracing, the tile, occupancy; where each curve ends
# - §5 the protocol broken on purpose: the CPU model diagnoses, a bounded GPU wait ends it
# - §6 the kernel set beside a published claim
# - Exercise 4 (end): find the bug

# %% output varies
import numpy as np

from asynctc.core import exercises, notebook, records, runtime, sass
from asynctc import pipeline as pl
from asynctc.models import pipeline as mp

notebook.banner("sm_90a")
rec = records.load("pipeline")
res = rec.results
hw = mp.HardwareParams.from_records()        # the model's inputs, from today's records
K_TILES = 64                                 # k-tiles of a 4096³ GEMM's CTA tile

# %% [markdown]
# ## 1. The names, in full
#
# How the tables and figures name a configuration, e.g. `float16 128x256x64/c2 s4 B:K wait1`:
#
# * `128x256x64` — the CTA tile BM×BN×BK (BK = 64: one k-tile); `c1` / `c2` — one or two consumer
#   warpgroups share it, each computing BM / c rows of C.
# * `/2cta` — the kernel's `__launch_bounds__` ask for **two resident CTAs per SM**
#   (`ctas_per_sm=2`, so [ptxas](../docs/glossary.md#ptxas), PTX's assembler, keeps registers low enough for two): two independent CTAs on one SM,
#   *not* a [CTA pair](../docs/glossary.md#cta-pair) or a [cluster](../docs/glossary.md#cluster) (those share data; these do not).
# * `s4` — S = 4 stages in the ring. `B:K` / `B:MN` — B stored K-major (N×K) or MN-major (K×N).
# * `wait1` / `wait0` — the loop's `wgmma.wait_group(1)` or `(0)`: one wgmma group left pending,
#   or none.
# * `l2:256B` — **L2 promotion** of 256 bytes: the tensor maps ask the TMA unit to fetch L2 lines
#   in 256-byte units (`CU_TENSOR_MAP_L2_PROMOTION_L2_256B`; host side only, same cubin).
# * `trace` — the in-kernel timeline recording (05b §3) is on; `out:float16` — C's dtype.
# * `(2)` or `(3)` after a TFLOP/s number — that many CTAs were resident per SM (the driver's
#   occupancy query for that kernel); no mark: one.

# %% [markdown]
# ## 2. The producer's half, and the SASS
#
# Chapter 05 §2 folded the set-up, the prologue and the epilogue; here they are, then the helpers
# they call: `load_stage` (one `arrive.expect_tx` with the stage's bytes, then its TMA boxes; a B
# stored K×N needs BN/64), `RingState`, `mma_ktile`, and each wrapper's PTX. The refill step, 05's
# exercise 2, shows once that exercise passes.

# %%
SKELETON = pl.producer_step.SKELETON
folded = notebook.source_excerpt("pipeline.cu", start=r'^extern "C" __global__ void', end=r"^}",
                                 variant=True, omit=SKELETON[:2] + SKELETON[3:], left_out=True)
helpers = notebook.source_excerpt(
    "pipeline.cu", start=r"^// ---- the producer's half", end=r"^}", variant=True, ptx_last=True,
    more=(("ring.cuh", r"^template <int", r"^};"), ("wgmma_ring.cuh", r"^// ---- the consumers' half", r"^}")),
    ptx=("mbarrier_init", "fence_mbarrier_init", "mbarrier_arrive_expect_tx", "tma_load_2d",
         "mbarrier_arrive", "mbarrier_try_wait_parity", "wgmma_fence", "wgmma_commit_group", "wgmma_wait_group"))
print(folded, helpers, sep="\n\n")

# %% output answers a prediction
if exercises.after("ch05.producer_step", "the kernel's own refill step"):
    print(notebook.source_excerpt("pipeline.cu", variant=True, omit=pl.producer_step.OMIT, left_out=True))

# %% [markdown]
# In SASS: `UTMALDG` (TMA loads), `SYNCS.*` (mbarrier init / arrive / try_wait), `HGMMA` (wgmma;
# static count, the loop body is not unrolled over k-tiles) and `WARPGROUP.ARRIVE` /
# `WARPGROUP.DEPBAR` (`wgmma.fence` / `wait_group`). Registers per thread and shared memory per CTA
# for the tiles the chapter measures (registers from this NVRTC):

# %% output varies
SASS_CLASSES = {k: sass.CLASSES[k] for k in ("HGMMA", "UTMALDG", "SYNCS", "WARPGROUP", "BAR", "STG")}
shown = {}
for cfg in (pl.PipelineConfig(bm=128, bn=256, consumers=2, stages=4),
            pl.PipelineConfig(bm=128, bn=128, consumers=2, stages=3),
            pl.PipelineConfig(bm=128, bn=128, consumers=1, stages=3)):
    ck = pl.compile_pipeline(cfg)
    counts = sass.class_counts(ck.sass(), SASS_CLASSES)
    shown[cfg.tile_name] = (ck, counts)
    print(f"{cfg.label():38s} {ck.resources.registers:3d} regs/thread, {cfg.smem_total // 1024:3d} KiB smem, "
          + ", ".join(f"{k} {v}" for k, v in counts.items()))
ck = shown["128x256x64/c2"][0]
print(sass.excerpt(ck.sass(), r"UTMALDG|HGMMA|WARPGROUP.DEPBAR|SYNCS.ARRIVE", context=0, limit=6))

# %%
for tile, (ck, counts) in shown.items():
    assert all(counts.get(c, 0) > 0 for c in ("HGMMA", "UTMALDG", "SYNCS", "WARPGROUP")), tile
print("every variant has HGMMA, UTMALDG, SYNCS and WARPGROUP instructions:", True)
print("shared memory per CTA = stages × (BM + BN) × 128 B + 1 KiB alignment + 1 KiB barriers:")
for s in range(1, 7):
    row = []
    for bm, bn, c in ((128, 256, 2), (128, 128, 2)):
        try:
            cfg = pl.PipelineConfig(bm=bm, bn=bn, consumers=c, stages=s)
            row.append(f"{cfg.tile_name} {cfg.smem_total // 1024:4d} KiB")
        except pl.PipelineError:
            row.append(f"{bm}x{bn}x64/c{c}  does not fit")
    print(f"  S = {s}: " + " | ".join(row))
try:
    pl.PipelineConfig(bm=128, bn=256, consumers=2, stages=5)
except pl.PipelineError as e:
    print("PipelineError:", e)

# %% [markdown]
# The record keeps the registers ptxas gave each timed variant:

# %% output varies
print(rec.label())
regs = sorted({(r["tile"], r["registers"], r["spill_bytes"]) for r in res["sweep"] if r["kernel"] == "pipeline"})
for tile, nreg, spill in regs:
    print(f"  {tile:20s} {nreg:3d} registers/thread, {spill} bytes spilled")
for nf in res.get("not_fitting", []):
    print(f"  not built: {nf['bm']}x{nf['bn']} stages={nf['stages']}: {nf['reason'].split(': ', 1)[1]}")

# %% [markdown]
# ## 3. From this chapter's names to CUTLASS's
#
# CUTLASS (NVIDIA/cutlass, `include/cutlass/pipeline/
# sm90_pipeline.hpp`, `include/cutlass/arch/barrier.h`, `include/cute/`) builds the same ring; to
# read it next:
#
# | here | CUTLASS (sm90) |
# |---|---|
# | the ring of S stages with full[s] / empty[s] | `PipelineTmaAsync<Stages>` (full: `ClusterTransactionBarrier`, empty: `ClusterBarrier`) |
# | stage k mod S and its phase parity (k / S) mod 2 | `PipelineState` (`index()`, `phase()`; `++` advances and flips the phase at the wrap) |
# | the producer's first pass on parity 1 ("the preceding phase") | `make_producer_start_state()`: stage 0, phase 1 |
# | wait empty[s], then `arrive.expect_tx` on full[s] | `producer_acquire(state)` (the wait, then the leader's `arrive_and_expect_tx`) |
# | the TMA's `complete_tx` completing full[s] | `producer_commit` — a no-op for TMA: the copy completes the transaction |
# | wait full[s] on parity (k / S) mod 2 | `consumer_wait(state)` |
# | arrive on empty[s] after `wgmma.wait_group` | `consumer_release(state)` (one signalling thread per warpgroup per destination CTA) |
# | `wgmma.wait_group<kPending>` | `warpgroup_wait<N>()` (the mainloop releases after `warpgroup_wait<K_PIPE_MMAS>`) |
# | the wgmma shared-memory descriptor (chapter 04) | `make_gmma_desc<Major::K / Major::MN>` (`cute/atom/mma_traits_sm90_gmma.hpp`) |
# | one elected thread issues TMA / arrives | `cute::elect_one_sync()` (`elect.sync`) |
#
# (Checked against CUTLASS's source; none of its code is used here.)

# %% [markdown]
# ## 4. What moved and why
#
# The record, fp16 4096³, by tile and depth: `wait_group` 1 and 0, traced (the full table:
# `pl.variants_table(res)`).

# %% output varies
SIZE, DT = 4096, "float16"


def row(tile, S, **kw):
    want = dict(wait_pending=1 if S > 1 else 0, trace=False, l2_promotion=0) | kw
    pool = res["sweep"] + res["variants"]
    return next((r for r in pool if r["kernel"] == "pipeline" and r["tile"] == tile and r["stages"] == S
                 and r["size"] == SIZE and r["dtype"] == DT
                 and all(r.get(k, 0) == v for k, v in want.items())), None)


tiles_measured = ("128x256x64/c2", "128x128x64/c2", "128x128x64/c1")
print(f"{rec.label()}, {DT}, {SIZE}³:")
print(f"{'tile':16s} {'S':>2s} {'wait1':>6s} {'wait0':>6s} {'w0/w1':>6s} {'trace':>6s} {'trace cost':>10s}")
for tile in tiles_measured:
    for S in range(1, 7):
        b = row(tile, S)
        if b is None:
            continue
        w0 = row(tile, S, wait_pending=0) if S > 1 else None
        tr = row(tile, S, trace=True)
        cells = (f"{w0['tflops']:6.0f}" if w0 else f"{'-':>6s}", f"{w0['tflops'] / b['tflops']:6.2f}" if w0
                 else f"{'-':>6s}", f"{tr['tflops']:6.0f}" if tr else f"{'-':>6s}",
                 f"{b['tflops'] / tr['tflops'] - 1:10.1%}" if tr else f"{'-':>10s}")
        print(f"{tile:16s} {S:2d} {b['tflops']:6.0f} " + " ".join(cells))
best = {tile: max((row(tile, S) for S in range(1, 7) if row(tile, S)), key=lambda r: r["tflops"])
        for tile in tiles_measured}
for tile, b in best.items():
    print(f"best depth of {tile}: S = {b['stages']} ({b['tflops']:.0f} TFLOP/s)")

# %% [markdown]
# What the table says:

# %% output varies
big = "128x256x64/c2"
w2, w2_0 = row(big, 2), row(big, 2, wait_pending=0)
w4, w4_0 = row(big, 4), row(big, 4, wait_pending=0)
notebook.claim(w2_0["tflops"] > 1.15 * w2["tflops"] and abs(w4_0["tflops"] / w4["tflops"] - 1) < 0.02,
               f"wait_group 0 vs 1, {big}: at S = 2, wait_group(0) is ahead ({w2_0['tflops']:.0f} vs "
               f"{w2['tflops']:.0f}). A candidate explanation: with one group pending, a ring of 2 refills "
               f"the stage of k−1 with k-tile k + 1, the very next one, so each load has a single k-tile "
               f"of math to hide behind; with none pending it refills with k + 2 — but the kernel-schedule "
               f"model does not reproduce the size of the gap (deep dive 05b). At S = 4 the two are within "
               f"{abs(w4_0['tflops'] / w4['tflops'] - 1):.1%}.",
               s2_w0=w2_0["tflops"], s2_w1=w2["tflops"], s4_w0=w4_0["tflops"], s4_w1=w4["tflops"])
m2 = {p: mp.simulate(2, p, 2, K_TILES, hw).math_fraction for p in (0, 1)}
m2_old = {p: mp.simulate(2, p, 2, K_TILES, hw, schedule="model_v1").math_fraction for p in (0, 1)}
notebook.claim(m2[0] > m2[1] and w2_0["tflops"] > w2["tflops"] and m2_old[1] > m2_old[0],
               f"The model, on the kernel's schedule, agrees in direction, not in size: at S = 2 it keeps "
               f"the math in flight {m2[0]:.3f} of the loop with wait_group(0) and {m2[1]:.3f} with "
               f"wait_group(1) ({m2[0] / m2[1]:.2f}×; the GPU: {w2_0['tflops'] / w2['tflops']:.2f}× in "
               "throughput). The old model had them the other way round "
               f"({m2_old[1]:.2f} with wait_group(1), {m2_old[0]:.2f} with 0) because its wait_group(0) "
               "producer loaded k + S − 1, not the kernel's k + S: a difference between model and "
               "kernel, not a lesson about the hardware.",
               model_p0=m2[0], model_p1=m2[1], old_model_p0=m2_old[0], old_model_p1=m2_old[1],
               gpu_ratio=w2_0["tflops"] / w2["tflops"])
lone = [(S, row("128x128x64/c1", S), row("128x128x64/c1", S, wait_pending=0)) for S in (4, 5, 6)]
pair = [(row(t, 3), row(t, 3, wait_pending=0)) for t in ("128x128x64/c1", "128x128x64/c2")]
notebook.claim(all(w0["tflops"] < 0.85 * w1["tflops"] for _, w1, w0 in lone)
               and all(abs(w0["tflops"] / w1["tflops"] - 1) < 0.05 for w1, w0 in pair),
               "wait_group 0 vs 1, 128x128x64/c1 at S ≥ 4 (one warpgroup, one CTA per SM): wait_group(0) "
               "is slower (" + ", ".join(f"S = {S}: {w0['tflops']:.0f} vs {w1['tflops']:.0f}"
                                         for S, w1, w0 in lone) +
               "): nothing else keeps the Tensor Cores busy while the only warpgroup waits for its own "
               "wgmma. At S = 3, where two 128×128 CTAs share an SM (below), the two settings are "
               "within 5 %.", ratios=[round(w0["tflops"] / w1["tflops"], 3) for _, w1, w0 in lone])
cost_big = row(big, 4)["tflops"] / row(big, 4, trace=True)["tflops"] - 1
cost_small = [row("128x128x64/c1", S)["tflops"] / row("128x128x64/c1", S, trace=True)["tflops"] - 1
              for S in (4, 5, 6)]
grid = (SIZE // row(big, 4)["bm"]) * (SIZE // row(big, 4)["bn"])     # CTAs: one per tile of C
notebook.claim(abs(cost_big) < 0.03 and min(cost_small) > 0.10,
               f"Trace cost: {cost_big:+.1%} for {big} at S = 4 (docs/NOTES.md predicted < 3 %): thread 0 "
               f"of each consumer in {pl.TRACE_CTAS} of the grid's {grid} CTAs reads the clock, so 05 §5's slowed "
               f"CTA 0 leaves the kernel's TFLOP/s alone. But {min(cost_small):.0%}–{max(cost_small):.0%} for "
               "128x128x64/c1 at S ≥ 4, with as few traced. Both run one CTA per SM, so the CTA count alone does "
               "not explain it; the record does not say what the recording costs there (an open question).",
               big=cost_big, small=cost_small)
ktile = {bn: (pl.PipelineConfig(bm=128, bn=bn, consumers=2).stage_bytes, 2 * 128 * bn * pl.BK)
         for bn in (256, 128)}                      # bytes loaded, FLOP computed per k-tile
per_flop = {bn: b / f for bn, (b, f) in ktile.items()}
ok = notebook.claim(best[big]["tflops"] > 1.05 * max(best[t]["tflops"] for t in tiles_measured[1:]),
               f"Tile: 128×256 reaches {best[big]['tflops']:.0f} TFLOP/s, 128×128 at best "
               f"{max(best[t]['tflops'] for t in tiles_measured[1:]):.0f}: per k-tile 128×256 loads "
               f"{ktile[256][0] // 1024} KiB for {ktile[256][1] / 1e6:.1f} MFLOP, 128×128 "
               f"{ktile[128][0] // 1024} KiB for {ktile[128][1] / 1e6:.1f} MFLOP — "
               f"{per_flop[128] / per_flop[256]:.2f}× the bytes per FLOP, on the L2 → SM path deep dive 05b's fit "
               "suspects (a suspect, not a proof).",
               big=best[big]["tflops"])

# %% [markdown]
# **Depth mixed with occupancy.** The 128×128 curves do not plateau: they peak at S = 3 and drop at
# S = 4. Two CTAs fit on one SM only while 2 × (their shared memory + 1 KiB reserved) ≤ 228 KiB and
# 2 × registers × threads ≤ 64 K (registers allocated in units of 8 per thread). The record keeps,
# for every pipelined row, the driver's occupancy query (`resident_ctas`; the cuBLAS rows have none:
# their kernel is not ours to query). The cell computes the fit from shared memory and registers,
# then checks it against that query and every 128×128 curve:

# %% output varies
def two_fit(S, tile):
    bn, consumers = int(tile.split("x")[1]), int(tile.split("/c")[1][0])
    nreg = next(r["registers"] for r in res["sweep"] if r.get("tile") == tile)
    smem_total = pl.ALIGN_SLACK + S * (128 + bn) * pl.BK * 2 + pl.STATIC_SMEM   # as PipelineConfig
    return (2 * (smem_total + pl.RESERVED_SMEM_PER_CTA) <= pl.SMEM_PER_SM
            and 2 * (-(-nreg // 8) * 8) * 128 * consumers <= pl.REGS_PER_SM)


print(rec.label())
for tile in tiles_measured:
    print(f"{tile}: two CTAs per SM at S =", [S for S in range(1, 7) if two_fit(S, tile)], "| resident "
          "CTAs per SM (record, fp16 4096³):", {r["stages"]: r["resident_ctas"] for r in res["sweep"]
                                                if r["kernel"] == "pipeline" and r["tile"] == tile
                                                and r["dtype"] == "float16" and r["size"] == 4096})
pipe_rows = [r for r in res["sweep"] if r["kernel"] == "pipeline" and "/2cta" not in r["tile"]]
assert all(r.get("resident_ctas") is not None for r in pipe_rows)
assert all(r.get("resident_ctas") is None for r in res["sweep"] if r["kernel"] == "cuBLAS")
assert all((r["resident_ctas"] >= 2) == two_fit(r["stages"], r["tile"]) for r in pipe_rows), \
    "the shared-memory/register fit disagrees with the driver's occupancy query"
last_two = max(S for S in range(1, 7) if two_fit(S, "128x128x64/c2"))
assert last_two == max(S for S in range(1, 7) if two_fit(S, "128x128x64/c1"))
assert not any(two_fit(S, big) for S in range(1, 5))
drops = []
for size in (4096, 8192):
    for dt in ("float16", "bfloat16"):
        for tile in ("128x128x64/c1", "128x128x64/c2"):
            by = {r["stages"]: r["tflops"] for r in res["sweep"] if r["kernel"] == "pipeline"
                  and r["tile"] == tile and r["dtype"] == dt and r["size"] == size}
            drops.append((size, dt, tile, by[last_two], by[last_two + 1]))
ok = notebook.claim(all(b < a for *_, a, b in drops),
               f"In all {len(drops)} 128×128 curves of the record, S = {last_two + 1} is slower than "
               f"S = {last_two} (by {min(1 - b / a for *_, a, b in drops):.0%}–"
               f"{max(1 - b / a for *_, a, b in drops):.0%}): the extra stage costs the second CTA per SM, "
               "so this curve measures occupancy as much as depth.",
               drops=[round(1 - b / a, 3) for *_, a, b in drops])
sweep = {(r["size"], r["dtype"], r["tile"], r["stages"]): r for r in res["sweep"] if r["kernel"] == "pipeline"}
two = [(r, sweep[k[:2] + (k[2].removesuffix("/2cta"), k[3])]) for k, r in sweep.items() if k[2].endswith("/2cta")]
gap = max(abs(r["tflops"] / b["tflops"] - 1) for r, b in two)
ok = notebook.claim(all(r["resident_ctas"] == b["resident_ctas"] and r["stages"] <= last_two for r, b in two)
                    and two and gap < 0.03,
                    f"Asking for two CTAs per SM (the {len(two)} /2cta builds, S ≤ {last_two}) changes nothing: "
                    f"each gets its base build's resident CTAs and runs within {gap:.1%} of it.", gap=gap)

# %% [markdown]
# **Where each curve ends**, asserted by `show_widths`:
#
# - The 128×256 curve ends at S = 4: five 48 KiB stages pass the 227 KiB a CTA may opt in to.
# - The wide tile does more math per byte, so it needs a smaller share of shared memory's bandwidth.
# - 128×128 drops after S = 3: from S = 4 one CTA fits per SM, and none hides another's
#   [epilogue](../docs/glossary.md#epilogue) (the tile's final write of C).

# %% output varies
widths = pl.show_widths(res)   # notebook.how(pl.show_widths) prints its code

# %% [markdown]
# ## 5. Breaking the protocol on purpose
#
# **A ring without phase parity.** Suppose each wait asks only
# "has this barrier completed?", a plain flag. The ring model runs S = 2 both ways. Where does the
# flag run read too early?

# %% output varies
story = pl.show_parity_story(stages=2, k_tiles=4)     # cycles

# %% [markdown]
# k-tile 2 (stage 0's second fill) passes its flag wait at once and reads bytes still landing.
#
# The model runs named broken protocols and ends each with a diagnosis — a `Deadlock` (no actor
# can progress: which barrier, which k-tile, who waits, why) or a `Race` (a stage read before its
# bytes landed, or overwritten while a wgmma still read it) — instead of hanging. Seven of the eight
# (the eighth is exercise 4's):

# %%
print(f"{'variant':22s} {'diagnosis':9s} {'k-tile':>6s} {'barrier':8s} {'stage':>5s}  what")
for name, what in mp.shown_variants(hold=True).items():
    d = mp.simulate(**mp.BUG_HUNT, protocol=name).diagnosis
    barrier = d.barrier if isinstance(d, mp.Deadlock) else "-"
    print(f"{name:22s} {type(d).__name__:9s} {d.iteration:6d} {barrier:8s} {d.stage:5d}  {what}")
d = mp.simulate(**mp.BUG_HUNT, protocol="missing_release").diagnosis
print("\nmissing_release, in full:", d.why)
assert mp.simulate(**mp.BUG_HUNT).diagnosis is None

# %% output answers a prediction
if exercises.after("ch05.producer_step", "wrong_empty_parity's parity"):
    print("wrong_empty_parity:", mp.VARIANTS["wrong_empty_parity"])

# %% [markdown]
# `wrong_empty_parity` stops at k-tile 0, 05's check at 4: here every load waits on empty; 05's
# prologue loads stages 0 … S − 1 without a wait.

# %% [markdown]
# On the GPU every mbarrier wait is bounded (`kernels/ring.cuh`: `try_wait.parity` until
# `ASYNCTC_WAIT_MAX_NS` of `%globaltimer` pass). A broken variant ends with an error word naming
# the barrier, stage, k-tile and warpgroup, never a hung GPU. `pl.run_broken(kind)` compiles the
# two deliberate breaks (`pl.BREAKS`) and, live, runs them; in replay the cell prints each one's
# error and seconds to give up from the `pipeline` record.

# %% output varies
for kind, what in pl.BREAKS.items():
    print(f"BREAK={kind}: {what}")
    if runtime.runs_live("sm_90a"):
        print("   GPU:", pl.run_broken(kind))
if not runtime.runs_live("sm_90a"):
    print(f"\nthe record's run ({rec.label()}):")
    for broken in res["broken"]:
        print(f"BREAK={broken['kind']}, after {broken['seconds']:.1f} s: {broken['error']}")

# %% [markdown]
# ## 6. What we measured vs what is often claimed
#
# > **Claim.** Triton's Gluon tutorials report that a pipelined TMA + async wgmma kernel *without*
# > warp specialization reaches parity with cuBLAS on an H100 (8192 × 8192, K = 16384, 3 buffers),
# > against about 0.71 of cuBLAS for a synchronous TMA + wgmma loop.
# >
# > **Ours.** The same structure (no warp specialization, one elected thread loading), on an H200,
# > at 8192³ (K = 8192, not 16384), from the record — generated below. Chapter 06 adds warp
# > specialization.

# %% output varies
print(rec.label())
for dt in ("float16", "bfloat16"):
    b, cb = pl.best_row(res, dt, 8192, variants=True), pl.cublas_row(res, dt, 8192)
    ratio = b["tflops"] / cb["tflops"]
    s1 = next(r for r in res["sweep"] if r["kernel"] == "pipeline" and r["dtype"] == dt and r["size"] == 8192
              and r["tile"] == b["tile"] and r["stages"] == 1)
    head = f"{dt} 8192³: best {ratio:.2f} of cuBLAS, one stage {s1['tflops'] / cb['tflops']:.2f}"
    notebook.verdict(ratio >= 0.97, f"{head}: at parity, as the tutorial reports.",
                     f"{head}: short of the tutorial's parity (another GPU, K and kernel).")

# %% [markdown]
# ## Exercise
#
# **4. Find the bug.** The cell below runs one of `mp.VARIANTS` — the one section 5's table left
# out — on the `mp.BUG_HUNT` schedule (`mp.mystery_diagnosis()`) and prints only its diagnosis. Which variant is it? Answer with
# its name (you may run the model on candidates: `mp.simulate(**mp.BUG_HUNT, protocol=name)`).

# %%
mystery = mp.mystery_diagnosis()
print(mystery)
answer = ...
ok = exercises.check("ch05.find_bug", answer, diagnosis=mystery)

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
ok = exercises.check("ch05.find_bug", "arrive_count_too_big", diagnosis=mystery, solution=True)

# %% [markdown]
# Back to [chapter 05](05_pipelines.ipynb); the model's prediction and the GPU's timeline are the
# other deep dive, [05b](05b_pipeline_timeline.ipynb). Chapter 06 gives the loads a warpgroup of
# their own.
