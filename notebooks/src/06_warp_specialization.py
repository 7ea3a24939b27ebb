# %% [markdown]
# # 06 — Warp specialization: a producer warpgroup, consumer warpgroups, and the ladder to cuBLAS
#
# **Learning goal.** Split chapter 05's GEMM into roles — a *producer* warpgroup that only issues
# TMA loads, *consumer* warpgroups that only issue `wgmma` — then climb a ladder of kernels, each
# timed beside cuBLAS. You will be able to
#
# 1. write both roles' k-loops over several tiles (waits, phase parities, releases) and say why
#    the [seed article](../docs/glossary.md#seed-article)'s version deadlocks;
# 2. read the register budget that [`setmaxnreg`](../docs/glossary.md#setmaxnreg) moves from the producer to the consumers;
# 3. read the ladder: what each rung bought beside cuBLAS, and when warp specialization pays;
# 4. read a whole Hopper GEMM kernel top to bottom in one file;
# 5. call the top rung, `asynctc.matmul(a, b)`, on any shape.
#
# Deep dives: [06b](06b_ws_anatomy.ipynb) the kernel taken apart; [06c](06c_ladder_investigations.ipynb)
# rungs 5–8 one at a time; [06d](06d_limits_and_gemm.ipynb) Nsight Compute, the
# [raster](../docs/glossary.md#raster) sweep, `matmul` by shape; [06e](06e_your_gemm_on_the_cpu.ipynb) your
# pieces as one Hopper tile on the CPU, and rung 3's consumer loop in the kernel's own words.

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
# In chapter 05 one thread of a computing warpgroup also issued the loads. While it waited on
# empty, its warpgroup's next `wgmma` waited too. Here the loads get a warpgroup of their own
# ([warp specialization](../docs/glossary.md#warp-specialization)), and the producer's spare
# registers go to the consumers (§2). The ring is chapter 05's.
#
# Both roles walk the same k-tiles with one ring counter that carries across tiles. Fill f of a
# stage is the counter divided by S. Consumers wait on full with parity f mod 2, the producer on
# empty with (f + 1) mod 2; kernels write it as `phase ^ 1`. The seed article swaps the waits: its
# consumers wait on "empty" before anything was loaded. Top, the kernel's version; bottom, the
# seed's, which deadlocks at the first k-tile (06b §1):

# %% output varies
fig = W.plot_protocol()
plt.show()

# %% [markdown]
# **Exercise 1 (the capstone). Write both roles' loops.** The CTA is
# [persistent](../docs/glossary.md#persistent): it computes `TILES` tiles in a row, `T` k-tiles
# each, with one ring of `STAGES` stages. One question decides it: with 3 k-tiles a tile on 2
# stages, which stage and parity does tile 1's first k-tile use?
#
# Your text runs once per role, as the [elected thread](../docs/glossary.md#elected-thread) of
# each warpgroup (one arrival each on `empty`). In scope:
#
# - `wg` (0 is the producer, 1 and 2 the consumers), `TILES`, `T`, `STAGES`, `kStageBytes`;
# - `full.wait(stage, parity)`, `empty.wait(stage, parity)`, `empty.arrive(stage)`, and
#   `full.arrive_expect_tx(stage, bytes)`, the producer's arrive with the bytes the TMA brings;
# - `tma_load(stage, tile, k)`: A's box and B's box of k-tile `k` of `tile`, landing on `full[stage]`;
# - `mma_ktile(acc, stage)`: the k-tile's wgmmas as one commit group; `wgmma_wait_group<N>()`;
# - `store_tile(acc, tile)` writes the tile's C and zeroes `acc`.
#
# Declare what you need; C++ ints, `if`, `for` and `while` work. The check reads your text as each
# role and runs chapter 05's ring model over every tile. Then the emulator of deep dive 06e moves
# the bytes, and each tile is checked against float64. It tries 3 tiles of 3 k-tiles on 2 stages,
# then 2 tiles of 4 on 3.

# %%
whole_kloop = """
if (wg == 0) {                 // the producer warpgroup
  for (int tile = 0; tile < TILES; ++tile) {
    for (int k = 0; k < T; ++k) {
      // your producer's k-tile
    }
  }
} else {                       // consumer warpgroups 1 and 2
  for (int tile = 0; tile < TILES; ++tile) {
    for (int k = 0; k < T; ++k) {
      // your consumers' k-tile
    }
    // the tile's C
  }
}
"""
ok = exercises.check("ch06.whole_kloop", whole_kloop)

# %% [markdown]
# Your loops in chapter 05's ring model, drawn as its timeline:

# %% output varies
fig = W.whole_kloop.show_loops(whole_kloop, ok)
plt.show()

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
# per thread. With the others a thread needs, that still fits under 168 without `setmaxnreg`.
# §3 measures what the move buys.
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
n = W.rung3_numbers(steps_rec.results)         # each step's gain over the one before; the wide tile's row
print(n["table"])
wide = n["wide"]                               # 128×256, two consumers, no setmaxnreg
_ = notebook.claim(abs(n["consumers"]) < 0.02 and abs(n["regs"]) < 0.02 and n["wider"] > 0.10 and n["fits"],
                   f"Rung 3's gain is the tile, {n['wider']:+.1%}. Its operands need {wide['smem_share']:.0%} of "
                   f"shared memory's bandwidth, not {n['share2']:.0%}. A second consumer alone: "
                   f"{n['consumers']:+.1%}. setmaxnreg: {n['regs']:+.1%}, since the wide tile already fits in "
                   f"{wide['regs']} of the {wide['entry']} registers at entry.")

# %% [markdown]
# The other steps (`W.ladder_ratio(res, a, b)` is rung b's TFLOP/s over rung a's). Rung 6 makes
# [clusters](../docs/glossary.md#cluster) of 2 CTAs that share B by
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
L = W.ladder_steps(res)                # ladder ratios; a rung-5 CTA's first-k-tile waits (traced at 4096³)
r2, r3, r5, r7, r8, flat, span = (L[k] for k in ("r2", "r3", "r5", "r7", "r8", "flat", "span"))
first, later = L["first"], L["later"]  # cycles a CTA's 1st and 2nd tile wait for k-tile 0
_ = notebook.claim(max(r2.values()) < 0.97 and all(abs(v - 1) < 0.02 for v in r3.values()),
                   f"Rung 2, half of chapter 05's tile, runs at {min(r2.values()):.2f}–{max(r2.values()):.2f}× "
                   f"rung 1; rung 3, its tile back, at {min(r3.values()):.2f}–{max(r3.values()):.2f}×. "
                   "Splitting the roles alone bought nothing measurable.")
_ = notebook.claim(max(abs(v - 1) for v in flat) < 0.015, f"Rungs 4 and 6 moved at most "
                   f"{max(abs(v - 1) for v in flat):.1%} (what they tried: 06c §9).")
_ = notebook.claim(later < 0.5 * first, f"Rung 5: {span[5]} over rung 3. A CTA's first tile waits {first:.0f} "
                   f"cycles for its first k-tile, its later tiles {later:.0f}. Their loads ran during the epilogue.")
_ = notebook.claim(min(r7.values()) > max(max(r5.values()), max(r8.values())),
                   f"Rung 7: {span[7]} over rung 6, the biggest step after rung 3; rung 8: {span[8]} over rung 7.")

# %% [markdown]
# **When does warp specialization pay?** Not by itself, here. Chapter 05's kernel already
# overlapped loads with math through the ring, so a producer warpgroup of its own had nothing left
# to hide. The split pays through what it makes possible. A producer that only loads keeps
# loading across tiles: on a persistent grid it loads tile t + 1 while the consumers store tile t
# (rung 5). A producer that needs few registers can give them away (`setmaxnreg`). Consumers that
# hand their stores to TMA start the next k-loop sooner (rung 7).
#
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
# `TMA_STORE`. The model runs chapter 05's ring per tile, adds the traced epilogue, and gives each
# SM ⌈tiles / SMs⌉ tiles. Its one fitted number is chapter 05's L2 cap. Which knob pays most? Does
# the record agree?

# %% output varies
BN, S, PERSISTENT, TMA_STORE = 256, 4, False, False
print(W.design(bn=BN, stages=S, persistent=PERSISTENT, tma_store=TMA_STORE))

# %% [markdown]
# ## 4. The whole kernel, one file
#
# `asynctc/kernels/hopper_gemm.cu` is rung 3 of the ladder written out whole, with no switches, to
# read top to bottom. Its loops are yours for one tile, with a bounded wait and one wgmma group
# left in flight. It includes only the one-instruction wrappers of `asynctc/kernels/ptx/` that
# chapters 03–05 showed; each part names the chapter that taught it. Its consumers' k-loop is
# printed below once your loops pass. Deep dive [06e](06e_your_gemm_on_the_cpu.ipynb) §2 asks you
# to write that loop's body in the kernel's own words, compiled into rung 3.

# %%
WHOLE_LOOP = (r"^  int stage = 0, prev = 0;", r"^  \}$",
              "the consumers' k-loop: printed below once exercise 1 passes")
notebook.show_source("hopper_gemm.cu", hooks=True, omit=WHOLE_LOOP)

# %% output answers a prediction
if exercises.after("ch06.whole_kloop"):
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
wrec = W.whole_suite.load_or_none()        # the record "whole_gemm", None before its first GPU run
if wrec is None:
    print(W.whole_suite.not_run_yet(res))
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
# **Your GEMM so far.** The consumer loop of deep dive 06e §2 completes it. Until you write it
# there, the course's stands in; once it compiles to rung 3's SASS, the recorded rung-3 run is yours.

# %% output varies
from asynctc.models.gemm_so_far import so_far

so_far("06")

# %% [markdown]
# ## 5. Use it: `asynctc.matmul`
#
# The top rung, with edge handling, is `asynctc.matmul(a, b)`: any M, N, K, numpy, torch or CuPy
# arrays ([deep dive 06d §3](06d_limits_and_gemm.ipynb)).
#
# **What you learned.** Both roles' loops and their parities across tiles, the register budget,
# what each rung bought and why the split pays only through them, the whole kernel in one file.
#
# **Try next, without a GPU:** [deep dive 06e](06e_your_gemm_on_the_cpu.ipynb) runs your passing
# core exercises as one Hopper tile on the CPU, checked against float64, and asks for rung 3's
# consumer loop, compiled and compared by SASS.
#
# **Next:** [chapter 07](07_fp8_precision.ipynb) feeds the same pipeline FP8.

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %% output varies
whole_kloop = """
int stage = 0, phase = 0;                // the ring position: set once, before the tile loop
if (wg == 0) {                           // the producer warpgroup
  for (int tile = 0; tile < TILES; ++tile) {
    for (int k = 0; k < T; ++k) {
      empty.wait(stage, phase ^ 1);      // (f + 1) mod 2: the stage's last fill was released
      full.arrive_expect_tx(stage, kStageBytes);
      tma_load(stage, tile, k);          // A's box and B's box; they land on full[stage]
      if (++stage == STAGES) { stage = 0; phase ^= 1; }
    }
  }
} else {                                 // consumer warpgroups 1 and 2
  for (int tile = 0; tile < TILES; ++tile) {
    for (int k = 0; k < T; ++k) {
      full.wait(stage, phase);           // f mod 2: the TMA's bytes have landed
      mma_ktile(acc, stage);
      wgmma_wait_group<0>();             // the wgmmas are done reading the stage
      empty.arrive(stage);
      if (++stage == STAGES) { stage = 0; phase ^= 1; }
    }
    store_tile(acc, tile);
  }
}
"""
ok = exercises.check("ch06.whole_kloop", whole_kloop, solution=True)

# %% output varies tags=["solution"]
fig = W.whole_kloop.show_loops(whole_kloop, ok)      # exercise 1's picture, drawn from the solution
plt.show()

# %% output varies tags=["solution"]
print(W.design_survey())        # §3's "Design it": every recorded design, model beside record
