# %% [markdown]
# # 06 — Warp specialization: a producer warpgroup, consumer warpgroups, and the ladder to cuBLAS
#
# **Learning goal.** Split chapter 05's GEMM into roles — a *producer* warpgroup that only issues
# TMA loads, *consumer* warpgroups that only issue `wgmma` — then climb a ladder of kernels, one
# change per rung, each timed beside cuBLAS. You will be able to
#
# 1. write the consumers' k-loop (its wait, phase parity and release) and say why the
#    [seed article](../docs/glossary.md#seed-article)'s version deadlocks;
# 2. work out the register budget that [`setmaxnreg`](../docs/glossary.md#setmaxnreg) moves from the producer to the consumers;
# 3. read the ladder: what each rung bought, and what the split itself bought;
# 4. call the result, `asynctc.matmul(a, b)`, on any shape.
#
# Deep dives: [06b](06b_ws_anatomy.ipynb) the kernel taken apart; [06c](06c_ladder_investigations.ipynb)
# the ladder investigated; [06d](06d_limits_and_gemm.ipynb) Nsight Compute, the
# [raster](../docs/glossary.md#raster) sweep, `matmul` by shape; [06e](06e_your_gemm_on_the_cpu.ipynb) your
# swizzle, descriptor encoder and parities from chapters 03–05 run one Hopper tile on the CPU.

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
# In chapter 05 one thread of a computing warpgroup also issued the loads; while it waited on empty
# before a refill, its warpgroup's next `wgmma` waited too.
# Here the loads get a warpgroup of their own
# ([warp specialization](../docs/glossary.md#warp-specialization)): that wait leaves the math path,
# and the producer's spare registers can go to the consumers (§2). The ring is chapter 05's
# (full[s]: *stage s contains its k-tile*; empty[s]: *stage s may be refilled*).
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
# `setmaxnreg` (PTX ISA; all 128 threads of a warpgroup execute it, with a count that is a multiple
# of 8) moves them (`setmaxnreg_dec` / `setmaxnreg_inc` in the listing):
#
# | warpgroup | instruction | registers |
# |---|---|---:|
# | producer (128 threads) | `setmaxnreg.dec 40` | 128 × 40 = 5120 |
# | 2 consumers (256 threads) | `setmaxnreg.inc 232` | 256 × 232 = 59392 |
# | CTA | | 64512 ≤ 65536 |
#
# Each consumer warpgroup computes 64 rows of the 128×256 tile, so each of its 128 threads carries
# 64 × 256 / 128 = 128 fp32 accumulators (06b reads these counts from the cubin).
#
# ## 3. The ladder
#
# One kernel source; each rung is a set of compile-time switches (`W.RUNGS`), one change from an
# earlier rung. Rungs 5–8 add a [persistent](../docs/glossary.md#persistent) grid (one CTA per SM,
# walking many tiles), [clusters](../docs/glossary.md#cluster) of 2 CTAs with B
# [multicast](../docs/glossary.md#multicast) (one TMA load lands in both), an
# [epilogue](../docs/glossary.md#epilogue) by [TMA store](../docs/glossary.md#tma-store), and a
# wider tile [raster](../docs/glossary.md#raster). Each rung was checked against float64 (06b §5),
# then timed beside cuBLAS in the same run. Orange: the range predicted for the rung before its
# first run (06b §7 holds each rung to it).

# %% output varies
fig = W.plot_ladder(res, 4096, "float16", record=rec, changes=True, predictions=True)
plt.show()
ok, text, numbers = W.rung2_note(res)
ok2, text2, numbers2 = W.split_note(res, records.load("pipeline").results)
print(W.numbers_table(numbers, numbers2, of="rungs 1–3 in all four ladders, as fractions of cuBLAS:"))
_ = notebook.claim(ok, text, **numbers)
_ = notebook.claim(ok2, text2, **numbers2)

# %% [markdown]
# What does a rung add to the code? `W.rung_diff(name)` resolves the kernel's source for that
# rung's build and for the rung it was made from, and prints only the lines that differ (`-` / `+`:
# only in the earlier / the later rung; the number: the line in the file; `-D`: a compile-time
# value). Try rungs 5–8: `persistent` changes one line, the stride `item_step` of the loop over
# tiles that every build has; `cluster` adds the multicast load and a release on the peer CTA's
# barrier; `tma_store` swaps `store_c` for `store_c_tma`; `raster` changes only `GROUP_M`.

# %%
# rungs: ws, ws_setmaxnreg, tile, persistent, cluster, tma_store, raster, pingpong
print(W.rung_diff("persistent"))

# %% [markdown]
# Every rung in every ladder, and every verdict: [deep dive 06c](06c_ladder_investigations.ipynb).
#
# ## 4. Why: what moved the number
#
# **What the split is for.** Not speed by itself (rung 3): it makes room for later steps.
# `setmaxnreg` gives the producer's spare registers to the consumers (§2); on a persistent grid
# the producer loads the next tile during this one's epilogue (rung 5); one consumer's epilogue can
# run under the other's math (rung 9, 06c §8).
#
# **Why rung 7 is the big step.** Until rung 7 each consumer thread stores its accumulators
# straight to C (`store_c`), with no wgmma running. A warp's store covers 8 rows of 16 bytes: each
# 128-byte line of C takes eight requests, each filling half a [sector](../docs/glossary.md#sector).
# Rung 7 first copies C to shared memory ([stmatrix](../docs/glossary.md#stmatrix)), then writes
# whole lines, one TMA store per 8 KiB. Does that pay alone, or only on the persistent grid, where
# the next tile's loads overlap it? An ablation adds the TMA store to rung 3 (one tile per CTA)
# and to rung 5 (persistent):

# %% output varies
srec = records.load("ws_store_ablation")
print(srec.label())
print(f"Predicted on {W.STORE_PREDICTION_DATE}, before the first run: {W.STORE_PREDICTIONS[0]}.")
print(W.numbers_table(W.store_steps(srec.results), of="what the TMA store adds:"))
notebook.verdict(*W.prediction_verdicts(srec.results)[0])
ok, text, numbers = W.epilogue_note(res, sass_counts=False)
_ = notebook.claim(ok, text, **numbers)

# %% [markdown]
# ## 5. Use it: `asynctc.matmul`
#
# The top rung, with edge handling, is `asynctc.matmul(a, b)`: any M, N, K; float16 or bfloat16
# in, fp32 accumulation; numpy, torch or CuPy arrays (B given N×K: `b_layout="NxK"`). Its checks on
# awkward shapes and its speed beside `torch.matmul`: [deep dive 06d §3](06d_limits_and_gemm.ipynb).
#
# ## 6. Exercises
#
# **2. The setmaxnreg budget.** If this kernel's producer warpgroup kept **56** registers per
# thread, what is the most `setmaxnreg.inc` could give each consumer thread?

# %%
answer = ...
ok = exercises.check("ch06.consumer_regs", answer, producer_regs=56, consumers=2)

# %% [markdown]
# **What you learned.** The two roles' loops and parities (yours for the consumers), why the
# seed's swapped waits deadlock, the register budget `setmaxnreg` moves, the ladder's steps, and
# `asynctc.matmul`.
#
# **Try next, without a GPU:** [deep dive 06e](06e_your_gemm_on_the_cpu.ipynb) puts your pieces of
# chapters 03–05 together into one Hopper tile on the CPU and checks it against float64.
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
ok = exercises.check("ch06.consumer_regs", (65536 - 128 * 56) // (128 * 2) // 8 * 8,
                     producer_regs=56, consumers=2, solution=True)
