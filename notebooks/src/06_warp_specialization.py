# %% [markdown]
# # 06 — Warp specialization: a producer warpgroup, consumer warpgroups, and the ladder to cuBLAS
#
# **Learning goal.** Split chapter 05's GEMM into roles — a *producer* warpgroup that only issues
# TMA loads, *consumer* warpgroups that only issue `wgmma` — then climb a ladder of kernels, one
# change per rung, each timed beside cuBLAS. You will be able to
#
# 1. write the consumers' k-loop (its wait, phase parity and release) and say why the
#    [seed article](../docs/glossary.md#seed-article)'s version deadlocks;
# 2. read the register budget that [`setmaxnreg`](../docs/glossary.md#setmaxnreg) moves from the producer to the consumers;
# 3. read the ladder rung by rung: what each adds to the code and what it bought;
# 4. call the result, `asynctc.matmul(a, b)`, on any shape.
#
# Deep dives: [06b](06b_ws_anatomy.ipynb) the kernel taken apart; [06c](06c_ladder_investigations.ipynb)
# the ladder investigated; [06d](06d_limits_and_gemm.ipynb) Nsight Compute, the
# [raster](../docs/glossary.md#raster) sweep, `matmul` by shape; [06e](06e_your_gemm_on_the_cpu.ipynb) your
# core exercises (stage fill, swizzle, k-step) run one Hopper tile on the CPU.

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
# registers go to the consumers (§2). The ring is chapter 05's (full[s]: *stage s contains its
# k-tile*; empty[s]: *stage s may be refilled*).
#
# Both roles walk the same (tile, k-tile) pairs with one **ring counter** i that carries across
# tiles: stage s = i mod S, fill f = i / S, with chapter 05's parities (a consumer waits on full[s]
# with f mod 2, the producer on empty[s] with (f + 1) mod 2). The seed article swaps the waits: its
# consumers wait on "empty" before anything was loaded. Both versions (the left read from the
# kernel's source; in chapter 05's model the right deadlocks at the first k-tile, 06b §1):

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
# The comments say what each name is for; the last line lists this build's switches.
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
# Each consumer warpgroup computes 64 rows of the 128×256 tile: 64 × 256 / 128 = 128 fp32
# accumulators per thread (06b reads these counts from the cubin).
#
# ## 3. The ladder
#
# One kernel source; each rung is a set of compile-time switches (`W.RUNGS`), one change from an
# earlier rung. Each rung was checked against float64 (06b §5), then timed beside cuBLAS in the
# same run. Orange: the range predicted for the rung before its first run.

# %% output varies
fig = W.plot_ladder(res, 4096, "float16", record=rec, changes=True, predictions=True)
plt.show()
_ = notebook.claim(*W.rung2_note(res)[:2])
_ = notebook.claim(*W.split_note(res, records.load("pipeline").results)[:2])
_ = notebook.claim(*W.rung34_note(res)[:2])

# %% [markdown]
# ## 4. Rungs 5–8, one at a time
#
# Per rung: what it adds (`W.rung_diff(name)`, `-` / `+`: the earlier / the later build), what it
# should buy, what it bought.
#
# **Rung 5, [persistent](../docs/glossary.md#persistent).** One CTA per SM, each walking the
# tiles `item_step` apart. The producer loads the next tile's first stages while the consumers
# store this one: each tile's start-up wait is hidden. Predicted: +3 to +8 %.

# %% output varies
print(W.rung_diff("persistent", only="item_step", context=1))
_ = notebook.claim(*W.rung_note(res, 5)[:2])

# %% [markdown]
# **Rung 6, [clusters](../docs/glossary.md#cluster) of 2 CTAs, B
# [multicast](../docs/glossary.md#multicast).** The cluster's two tiles lie one above the other
# and share B. Each producer loads its A box and *half* of B, multicast into stage s of both CTAs:
# 32 KiB per stage from L2 per SM, not 48. It pays if the consumers wait on L2. Predicted: +0 to +6 %.

# %% output varies
print(W.rung_diff("cluster", only="tma_load", context=0))
_ = notebook.claim(*W.rung_note(res, 6)[:2])

# %% [markdown]
# **Exercise 2. The cluster's empty barrier.** In rung 5, `mbarrier_init(empty[s], CONSUMERS)`:
# each consumer warpgroup's elected thread arrives once per fill. In rung 6 a multicast also
# writes the *peer* CTA's stage s. How many arrivals must empty[s] count per phase: one of 1, 2,
# 4 or 8? The check runs your count through a model of both CTAs' rings.

# %%
answer = ...
ok = exercises.check("ch06.cluster_arrivals", answer, consumers=2, cluster=2)

# %% output answers a prediction
if exercises.after("ch06.cluster_arrivals"):
    print(W.rung_diff("cluster", only=r"empty\[s\]|remote", context=0))

# %% [markdown]
# **Rung 7, an [epilogue](../docs/glossary.md#epilogue) by [TMA store](../docs/glossary.md#tma-store).**
# Until now each consumer thread stored its accumulators straight to C (`store_c`): a warp's store
# covers 8 rows of 16 bytes, so a 128-byte line of C takes eight requests. Rung 7 writes C into
# shared memory with [stmatrix](../docs/glossary.md#stmatrix), then stores each 64×64 chunk
# with one TMA store. Predicted: +1 to +3 %. An ablation also added it to rungs 3 and 5.
#
# **Rung 8, a wider [raster](../docs/glossary.md#raster).** One compile-time value changes
# (`W.rung_diff("raster")`): `GROUP_M` 8 → 16. The 132 CTAs running at once then touch 16 rows of
# A tiles and about 8 columns of B, not 8 and 16: fewer bytes from DRAM. Predicted: +1 %, from an
# earlier raster sweep (06d).

# %% output varies
print(W.rung_diff("tma_store", only="store_c", context=0))
_ = notebook.claim(*W.rung_note(res, 7)[:2])
srec = records.load("ws_store_ablation")
print(f"{srec.label()}\nPredicted on {W.STORE_PREDICTION_DATE}: {W.STORE_PREDICTIONS[0].split(' (')[0]}.")
_ = notebook.verdict(*W.prediction_verdicts(srec.results)[0])
_ = notebook.claim(*W.rung_note(res, 8)[:2])

# %% [markdown]
# **Exercise 3. Where rung 7's stmatrix puts an accumulator.** A consumer's m64n256 wgmma leaves its
# 64×256 block of C in registers: warp w = thread // 32 has rows 16w … 16w + 15; lane 4g + t
# has, per 8-column block b, accumulators 4b … 4b + 3 = row g, columns 8b + 2t and 8b + 2t + 1,
# then the same columns of row g + 8. stmatrix keeps rows and columns; staging chunk
# q = index // 32 takes columns 64q … 64q + 63. Thread 77 has `acc[0][46]`: which (row, col) of
# its staging chunk?

# %%
answer = ...
ok = exercises.check("ch06.store_position", answer, thread=77, index=46)

# %% [markdown]
# Every rung in every ladder, and every verdict: [deep dive 06c](06c_ladder_investigations.ipynb).
#
# ## 5. Use it: `asynctc.matmul`
#
# The top rung, with edge handling, is `asynctc.matmul(a, b)`: any M, N, K, numpy, torch or CuPy
# arrays ([deep dive 06d §3](06d_limits_and_gemm.ipynb)).
#
# **What you learned.** The two roles' loops and parities (yours for the consumers), why the
# seed's swapped waits deadlock, the register budget `setmaxnreg` moves, what each rung adds and
# bought, and `asynctc.matmul`.
#
# **Try next, without a GPU:** [deep dive 06e](06e_your_gemm_on_the_cpu.ipynb) runs your passing core
# exercises (chapter 03's stage fill and swizzle, chapter 04's k-step, chapter 05's producer step and
# this chapter's consumer loop) as one Hopper tile on the CPU and checks it against float64.
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

# %%
ok = exercises.check("ch06.cluster_arrivals", 2 * 2, consumers=2, cluster=2, solution=True)  # consumers × CTAs

# %%
w, lane = divmod(77, 32)            # warp 2, lane 13 = 4·3 + 1
ok = exercises.check("ch06.store_position", (16 * w + lane // 4 + 8 * ((46 >> 1) & 1),
                                             8 * (46 >> 2) + 2 * (lane % 4) + (46 & 1) - 64 * (46 // 32)),
                     thread=77, index=46, solution=True)

# %% [markdown]
# **Your GEMM so far.** The consumer loop completes it; deep dive [06e](06e_your_gemm_on_the_cpu.ipynb)
# breaks pieces on purpose.

# %% output varies
from asynctc.models.gemm_so_far import so_far

so_far("06")
