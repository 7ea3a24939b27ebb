# %% [markdown]
# # 06 — Warp specialization: a producer warpgroup, consumer warpgroups, and the ladder to cuBLAS
#
# **Learning goal.** Split chapter 05's GEMM into roles — a *producer* warpgroup that only issues
# TMA loads, *consumer* warpgroups that only issue `wgmma` — then climb a ladder of kernels, each
# timed beside cuBLAS. You will be able to
#
# 1. write the consumers' k-loop (its wait, phase parity and release) and say why the
#    [seed article](../docs/glossary.md#seed-article)'s version deadlocks;
# 2. read the register budget that [`setmaxnreg`](../docs/glossary.md#setmaxnreg) moves from the producer to the consumers;
# 3. read the ladder: what each rung bought beside cuBLAS, and why rungs 5–8 close the gap;
# 4. read a whole Hopper GEMM kernel top to bottom in one file;
# 5. call the top rung, `asynctc.matmul(a, b)`, on any shape.
#
# Deep dives: [06b](06b_ws_anatomy.ipynb) the kernel taken apart; [06c](06c_ladder_investigations.ipynb)
# rungs 5–8 one at a time; [06d](06d_limits_and_gemm.ipynb) Nsight Compute, the
# [raster](../docs/glossary.md#raster) sweep, `matmul` by shape; [06e](06e_your_gemm_on_the_cpu.ipynb) your
# core exercises as one Hopper tile on the CPU.

# %% output varies
import matplotlib.pyplot as plt

from asynctc.core import exercises, notebook, records
from asynctc import warp_specialization as W

notebook.banner("sm_90a")
rec = records.load("warp_specialization")
res = rec.results

# %% [markdown]
# ## 1. Two roles, two barriers per stage
#
# In chapter 05 one thread of a computing warpgroup also issued the loads: while it waited on
# empty, its warpgroup's next `wgmma` waited too. Here the loads get a warpgroup of their own
# ([warp specialization](../docs/glossary.md#warp-specialization)), and the producer's spare
# registers go to the consumers (§2). The ring is chapter 05's.
#
# Both roles walk the same (tile, k-tile) pairs with one **ring counter** i that carries across
# tiles: stage s = i mod S, fill f = i / S, with chapter 05's parities (a consumer waits on full[s]
# with f mod 2, the producer on empty[s] with (f + 1) mod 2). The seed article swaps the waits: its
# consumers wait on "empty" before anything was loaded. Both versions (top: read from the kernel's
# source; bottom: deadlocks at the first k-tile in chapter 05's model, 06b §1):

# %% output varies
fig = W.plot_protocol()
plt.show()

# %% [markdown]
# The kernel's source (`asynctc/kernels/warp_specialization.cu`) resolved for **rung 3** of the
# ladder (§3): a producer, two consumers, `setmaxnreg`, none of the later rungs' additions.
# Warpgroup 0 takes the first branch, the consumers the other. The body of the consumers' k-loop is
# left out: you write it in exercise 1.

# %%
ck = W.compile_ws(W.RUNG_BY_NAME["ws_setmaxnreg"].make("float16"))
notebook.show_source(ck, start=r"^  if \(wg == 0\) \{", end=r"^        finish\(acc\);", variant=True,
                     omit=W.LOOP_LINES)

# %% [markdown]
# `item_step` (tiles between a CTA's tiles), `TILE_ORIGIN` (a tile's first row and column of C)
# and the switches in the last line serve later rungs (§3).
#
# **Exercise 1. Write the consumers' k-loop**, the body the listing left out, in the string
# below. One constraint comes from the listing: after the loop the kernel itself releases the stage
# in `prev`, so your loop releases the stage of k-tile k − 1, not its own (a loop that waits with
# `wgmma_wait_group<0>` and releases its own stage is refused). In scope:
#
# - `full.wait(stage, parity, wg, k)`: a bounded wait, false if it gave up (`broken` may remember that);
# - `pos.stage`, `pos.phase` (f mod 2), `pos.advance()`: the ring counter;
# - `mma_ktile(acc, desc_a, desc_b)`: a k-tile's wgmmas, one group. Its descriptors:
#   `wgmma_desc_advance(da0, bytes)`, `wgmma_desc_advance(db0, bytes)`; stage s starts
#   s × `kStageBytes` bytes after stage 0;
# - `wgmma_wait_group<N>()`: after it, at most N groups still run; `fence_accumulators(acc)`: a
#   compiler barrier for `acc`;
# - `release(empty[s])`: an arrival on empty[s]. Only the `elected` thread of each warpgroup
#   calls it, so a phase completes with C arrivals;
# - `prev`, an `int` to keep the stage of k-tile k − 1 in; `k`, `wg`.
#
# The check compiles your loop into rung 3 with NVRTC (no GPU) and judges its protocol with the
# course's models.

# %%
consumer_loop = """
    // your code: wait for stage pos.stage to hold k-tile k, issue its wgmmas, let one group stay in
    // flight, release the stage of k-tile k − 1 (one elected thread), remember this stage, advance the ring
"""
ok = exercises.check("ch06.consumer_loop", consumer_loop)

# %% output answers a prediction
if exercises.after("ch06.consumer_loop"):
    print(notebook.source_excerpt(ck, variant=True, omit=W.LOOP_LINES, left_out=True))

# %% [markdown]
# ## 2. The register budget
#
# An SM has 65536 32-bit registers. `__launch_bounds__(384, 1)` (3 warpgroups, one CTA per SM)
# gives each thread 65536 / 384 = 170, rounded down to a multiple of 8: **168 at entry**. Then
# `setmaxnreg` (all 128 threads of a warpgroup, a multiple of 8) moves them:
#
# | warpgroup | instruction | registers |
# |---|---|---:|
# | producer (128 threads) | `setmaxnreg.dec 40` | 128 × 40 = 5120 |
# | 2 consumers (256 threads) | `setmaxnreg.inc 232` | 256 × 232 = 59392 |
# | CTA | | 64512 ≤ 65536 |
#
# Each consumer computes 64 rows of the 128×256 tile: 64 × 256 / 128 = 128 fp32 accumulators
# per thread. With the others a thread needs, that still fits under 168 without `setmaxnreg`:
# §3 measures what it buys.
#
# ## 3. The ladder
#
# One kernel source; each rung is a set of compile-time switches (`W.RUNGS`), timed beside cuBLAS.
# Orange: the range predicted before the rung first ran.

# %% output varies
fig = W.plot_ladder(res, 4096, "float16", record=rec, changes=True, predictions=True)
plt.show()
print(W.rung_table(res, range(1, 9)))

# %% [markdown]
# **Rung 2 → rung 3, one change at a time.** Rung 3 changes three things: a second consumer, the
# 128×256 tile, `setmaxnreg`. One run (record `ws_rung3_steps`) timed each step beside cuBLAS:

# %% output varies
steps_rec = records.load("ws_rung3_steps")
print(steps_rec.label())
steps = {d["step"]: d for d in W.rung3_steps(steps_rec.results)}
print(W.rung3_table(list(steps.values())))
consumers, wider, regs = (steps[s]["gain"] for s in ("two consumers", "128x256", "setmaxnreg (rung 3)"))
wide = steps["128x256"]                              # 128×256, two consumers, no setmaxnreg
fits = wide["spill_bytes"] == 0 and wide["regs"] <= wide["entry"]
_ = notebook.claim(abs(consumers) < 0.02 and abs(regs) < 0.02 and wider > 0.10 and fits,
                   f"Rung 3's gain is the tile, {wider:+.1%}: its operands need {wide['smem_share']:.0%} of "
                   f"shared memory's bandwidth, not {steps['rung 2']['smem_share']:.0%}. A second consumer "
                   f"alone: {consumers:+.1%}. setmaxnreg: {regs:+.1%}, because without it the wide tile "
                   f"fits in {wide['regs']} of the {wide['entry']} registers at entry, no spills.")

# %% [markdown]
# The other steps (`W.ladder_ratio(res, a, b)`: rung b's TFLOP/s over rung a's, per size and
# dtype). Rung 6 makes [clusters](../docs/glossary.md#cluster) of 2 CTAs that share B by
# [multicast](../docs/glossary.md#multicast).
#
# **Rung 5, a [persistent](../docs/glossary.md#persistent) grid.** One CTA per SM walks its tiles.
#
# **Rung 7, an [epilogue](../docs/glossary.md#epilogue) by [TMA store](../docs/glossary.md#tma-store).**
# The tile goes to shared memory ([stmatrix](../docs/glossary.md#stmatrix)), then out in 64×64
# chunks, one TMA store each, not eight requests per 128-byte line of C.
#
# **Rung 8, a wider [raster](../docs/glossary.md#raster).** Groups of 16 tile rows, not 8: the 132
# tiles in flight share more of A and B, so more loads hit in L2.

# %% output varies
r2, r3, r5, r7, r8 = (W.ladder_ratio(res, a, b) for a, b in ((1, 2), (1, 3), (3, 5), (6, 7), (7, 8)))
flat = [*W.ladder_ratio(res, 3, 4).values(), *W.ladder_ratio(res, 5, 6).values()]
t5 = W.trace_numbers(next(t for t in res["traces"] if t["rung"] == 5))     # traced at 4096³
first, later = t5["first_wait_cycles"][:2]      # cycles a CTA's 1st and 2nd tile wait for k-tile 0
span = {n: f"{min(r.values()) - 1:+.1%} … {max(r.values()) - 1:+.1%}" for n, r in ((5, r5), (7, r7), (8, r8))}
_ = notebook.claim(max(r2.values()) < 0.97 and all(abs(v - 1) < 0.02 for v in r3.values()),
                   f"Rung 2, half of chapter 05's tile, runs at {min(r2.values()):.2f}–{max(r2.values()):.2f}× "
                   f"rung 1; rung 3, its tile back, at {min(r3.values()):.2f}–{max(r3.values()):.2f}×: "
                   "splitting the roles alone bought nothing measurable.")
_ = notebook.claim(max(abs(v - 1) for v in flat) < 0.015, f"Rungs 4 and 6 moved at most "
                   f"{max(abs(v - 1) for v in flat):.1%} (what they tried: 06c §9).")
_ = notebook.claim(later < 0.5 * first, f"Rung 5: {span[5]} over rung 3. A CTA's first tile waits {first:.0f} "
                   f"cycles for its first k-tile, its later tiles {later:.0f}: their loads ran during the epilogue.")
_ = notebook.claim(min(r7.values()) > max(max(r5.values()), max(r8.values())),
                   f"Rung 7: {span[7]} over rung 6, the biggest step after rung 3; rung 8: {span[8]} over rung 7.")

# %% [markdown]
# Why does rung 7 gain so much? Trace the epilogue (cycles per tile storing C), and time the TMA
# store alone on rung 3 (record `ws_store_ablation`).

# %% output varies
sass_agree, _text, ep = W.epilogue_note(res, sass_counts=False)  # traced at 4096³; SASS store counts checked
reg_store, tma_store, tile = ep["rung6"], ep["rung7"], ep["tile_cycles"]
saved = (reg_store - tma_store) / tile
gain = W.store_findings(records.load("ws_store_ablation").results)["store_alone"] - 1
_ = notebook.claim(sass_agree and 0.5 * gain < saved < 1.5 * gain, f"The TMA store saves ({reg_store:.0f} − "
                   f"{tma_store:.0f}) / {tile:.0f} = {saved:.1%} of a tile, near the {gain:+.1%} it measured "
                   "alone on rung 3.")

# %% [markdown]
# **Design it** (no grade). Set the tile width `BN` (128 or 256), stages `S`, `PERSISTENT`,
# `TMA_STORE`. The model: chapter 05's ring per tile, the traced epilogue, ⌈tiles / SMs⌉ tiles per
# SM; its one fitted number is chapter 05's L2 cap. Which knob pays most? Does the record agree?

# %% output varies
BN, S, PERSISTENT, TMA_STORE = 256, 4, False, False
print(W.design(bn=BN, stages=S, persistent=PERSISTENT, tma_store=TMA_STORE))

# %% [markdown]
# ## 4. The whole kernel, one file
#
# `asynctc/kernels/hopper_gemm.cu` is rung 3 written out whole, with no switches, to read top to
# bottom. It includes only the one-instruction wrappers of `asynctc/kernels/ptx/` that chapters
# 03–05 showed; each part names the chapter that taught it. The consumers' k-loop is exercise 1's
# answer, printed below once your loop passes. To write both roles' loops from a blank page (a
# persistent CTA, three tiles, one ring: stage and phase carry across tiles), do the capstone in
# deep dive [06e](06e_your_gemm_on_the_cpu.ipynb) §5.

# %%
WHOLE_LOOP = (r"^  int stage = 0, prev = 0;", r"^  \}$",
              "the consumers' k-loop: exercise 1, printed below once your loop passes")
notebook.show_source("hopper_gemm.cu", hooks=True, omit=WHOLE_LOOP)

# %% output answers a prediction
if exercises.after("ch06.consumer_loop"):
    print(notebook.source_excerpt("hopper_gemm.cu", hooks=True, omit=WHOLE_LOOP, left_out=True))

# %% [markdown]
# The host side, [`whole.py`](../asynctc/warp_specialization/whole.py) (73 lines), compiles,
# checks the shapes, makes two [tensor maps](../docs/glossary.md#tensor-map), launches one CTA per
# tile (384 threads, 193 KiB of shared memory) and checks every element against float64.
#
# What the GPU said (`tools/gpu_whole_gemm.py`): the checks, then the time beside rung 3 and
# cuBLAS. On a GPU the cell also checks now.

# %% output varies
from asynctc.core import runtime

if runtime.runs_live("sm_90a"):
    c = W.whole.verify_whole(512, 768, 1024)
    _ = notebook.claim(c.passed, f"Checked now at 512×768×1024: every element within its bound "
                                 f"(the worst at {c.worst:.2f} of it).", worst=c.worst)
try:
    wrec = records.load("whole_gemm")
except records.RecordError:
    wrec = None
if wrec is None:
    r3 = W.whole_suite.rung3_of_cublas(res)
    print("Not run on a GPU yet: there is no record whole_gemm. Rung 3, the same design, ran at "
          + " and ".join(f"{v:.2f} of cuBLAS at {n}³" for n, v in sorted(r3.items())) + " (fp16).")
else:
    print(wrec.label())
    for v in W.whole_suite.whole_verdicts(wrec.results):
        _ = notebook.verdict(*v)

# %% [markdown]
# ## Worklog

# %% output varies
from asynctc.core import worklog

worklog.show("06")

# %% [markdown]
# **Your GEMM so far.** The consumer loop completes it: if it compiles to rung 3's SASS, the
# recorded rung-3 run is yours; otherwise the cell says how far yours is.

# %% output varies
from asynctc.models.gemm_so_far import so_far

so_far("06")

# %% [markdown]
# ## 5. Use it: `asynctc.matmul`
#
# The top rung, with edge handling, is `asynctc.matmul(a, b)`: any M, N, K, numpy, torch or CuPy
# arrays ([deep dive 06d §3](06d_limits_and_gemm.ipynb)).
#
# **What you learned.** The two roles' loops and parities, the register budget, what each rung
# bought, the whole kernel in one file, and `asynctc.matmul`.
#
# **Try next, without a GPU:** [deep dive 06e](06e_your_gemm_on_the_cpu.ipynb) runs your five passing
# core exercises as one Hopper tile on the CPU, checked against float64.
#
# **Next:** [chapter 07](07_fp8_precision.ipynb) feeds the same pipeline FP8.

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %% output varies
consumer_loop = """
if (!broken && !full.wait(pos.stage, pos.phase, wg, k)) broken = true;  // this fill: f mod 2
fence_accumulators(acc);
mma_ktile(acc, wgmma_desc_advance(da0, pos.stage * kStageBytes),
          wgmma_desc_advance(db0, pos.stage * kStageBytes));
wgmma_wait_group<1>();                   // k-tile k − 1's group is complete
fence_accumulators(acc);
if (k > 0 && elected) {                  // one thread per warpgroup; at k = 0 no k-tile before
  release(empty[prev]);
}
prev = pos.stage;
pos.advance();
"""
ok = exercises.check("ch06.consumer_loop", consumer_loop, solution=True)

# %% output varies tags=["solution"]
print(W.design_survey())        # §3's "Design it": every recorded design, model beside record
