# %% [markdown]
# # 06 — Warp specialization: a producer warpgroup, consumer warpgroups, and the ladder to cuBLAS
#
# **Learning goal.** Split chapter 05's GEMM into two roles. A *producer* warpgroup only issues TMA
# loads. *Consumer* warpgroups only issue `wgmma`. Then climb a ladder of kernels timed beside cuBLAS.
#
# **Where we are.** In chapter 05, one thread of a consumer warpgroup issued the loads. While it
# waited for a free stage, its warpgroup's math stalled.
#
# **In plain words.** Two barriers per stage, "full" and "empty", pass work between the roles.
# The split frees registers for the math. The producer also keeps loading into the next tile.

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
# The producer is warpgroup 0. Consumers 0 and 1 are warpgroups 1 and 2. Giving warps different
# jobs is [warp specialization](../docs/glossary.md#warp-specialization).
#
# Both roles count k-tiles with one [ring counter](../docs/glossary.md#ring-counter) j. It keeps
# counting across tiles. A worked example: `STAGES` = 3 and j = 7. The stage is j mod `STAGES` = 1.
# The fill f counts the stage's uses from 0: f = j // `STAGES` = 2. Consumers wait on full with
# parity f mod 2 = 0. Before loading fill 2, the producer waits on empty until fill 1 is released.
# That wait's parity is (f + 1) mod 2 = 1.
#
# The [seed article](../docs/glossary.md#seed-article) is the worklog this course checks. Its
# consumers wait on empty before anything is loaded. Top: this kernel. Bottom: the seed's kernel,
# deadlocked at the first k-tile. Under the figure: each step's name in chapter 05's kernel and in
# your capstone, with the PTX it issues ([06e](06e_your_gemm_on_the_cpu.ipynb)'s names:
# `W.protocol_names(with_06e=True)`).

# %% output varies
fig = W.plot_protocol()
plt.show()
print(W.protocol_names())

# %% [markdown]
# **Exercise 1 (the capstone). Write both roles' loops.** The CTA is
# [persistent](../docs/glossary.md#persistent): it computes `TILES` tiles of `T` k-tiles each. One
# ring of `STAGES` stages serves them all.
#
# Your text runs as each warpgroup's [elected thread](../docs/glossary.md#elected-thread). In scope:
#
# - `wg` (the warpgroup), `acc` (its accumulator), `TILES`, `T`, `STAGES`, `kStageBytes`;
# - `full.wait(stage, parity)`, `empty.wait(stage, parity)`, `empty.arrive(stage)`;
# - `full.arrive_expect_tx(stage, bytes)`: the producer's arrive, with the TMA's bytes;
# - `tma_load(stage, tile, k)`: A's and B's boxes of k-tile `k` of `tile`, landing on `full[stage]`;
# - `mma_ktile(acc, stage)`: the k-tile's wgmmas as one commit group; `wgmma_wait_group<N>()`;
# - `store_tile(acc, tile)` writes the tile's C and zeroes `acc`;
# - at a tile's end, its last k-tile's wgmmas complete before `store_tile`;
# - and that k-tile's stage is released in that tile, not the next.
#
# Declare counters as `int`. The check runs your loops in the ring model against float64.
#
# **Predict (graded), in the cell's first comment.** Each tile has 3 k-tiles, the ring 2 stages.
# Which stage and consumers' parity does tile 1's first k-tile use?

# %%
whole_kloop = """
// tile 1's first k-tile: stage ?, consumers' full parity ?   (your prediction; declarations below)
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
# Once your loops pass, the cell below draws them. In the right answer's picture, the producer mostly
# waits on empty (purple): healthy. The consumers wait on full (red): 2 stages cannot hide the loads' latency.

# %% output varies
fig = W.whole_kloop.show_loops(whole_kloop, ok)
plt.show()

# %% [markdown]
# Next, your loops compiled into a real GPU kernel.

# %% output varies
W.capstone_suite.capstone_cell(whole_kloop, ok)

# %% output answers a prediction
from asynctc.models import pipeline as mp
frac = {(c, n): mp.simulate(4, n, c, 32).math_fraction for c in (1, 2) for n in (0, 1)}  # c consumers, wait_group<n>
if exercises.after("ch06.whole_kloop", held="what wgmma_wait_group<0> and <1> cost"):
    display(notebook.Markdown(
        "**So:** `wgmma_wait_group<0>()` is correct, but the Tensor Cores idle while it waits, every "
        "k-tile. `<1>` keeps one group in flight and releases the previous k-tile's stage. Share of the "
        "loop with a wgmma in flight, ring model (S = 4):"))
    print("; ".join(f"{c} consumer(s): <0> {frac[c, 0]:.0%}, <1> {frac[c, 1]:.0%}" for c in (1, 2)))
    display(notebook.Markdown("Two consumers fill each other's gaps: here `<0>` costs little."))

# %% check
notebook.require(abs(frac[2, 1] - frac[2, 0]) < 0.01 < frac[1, 1] - frac[1, 0], "two consumers fill the gap")

# %% [markdown]
# Going further: [06b §1](06b_ws_anatomy.ipynb) steps through the seed's deadlock.

# %% [markdown]
# ## 2. The register budget
#
# An SM has 65536 32-bit registers.
# `__launch_bounds__(384, 1)` asks for 3 warpgroups and one CTA per SM. So each thread gets
# 65536 / 384 = 170.7 registers, rounded down to a multiple of 8: **168 at entry**.
# [`setmaxnreg`](../docs/glossary.md#setmaxnreg) changes a warpgroup's register limit while it runs.
# The producer drops to 40. The two consumers rise to 232. Together: 128 × 40 + 256 × 232 = 64512,
# within 65536.
#
# Going further: [06c §3](06c_ladder_investigations.ipynb) measures `setmaxnreg` alone.
#
# ## 3. The ladder
#
# The ladder is a row of kernels, each a [rung](../docs/glossary.md#rung), each timed beside
# cuBLAS. Rung 1 is chapter 05's kernel. The later rungs are one kernel source, built with different
# compile-time switches (`W.RUNGS`). Each is built from an earlier rung. Some rungs change more than
# one thing. The cell below lists every change, read from the rungs' configs. Words it uses:
#
# - A [cluster](../docs/glossary.md#cluster) is a group of CTAs that run on nearby SMs. In a
#   [multicast](../docs/glossary.md#multicast), one TMA load lands in each CTA of the cluster.
# - The [epilogue](../docs/glossary.md#epilogue) is the code that writes C. A
#   [TMA store](../docs/glossary.md#tma-store) writes C from shared memory; one thread issues it.
# - The [raster](../docs/glossary.md#raster) is the order CTAs take tiles in. Its **group-M** is
#   the number of tile rows it walks before it moves one column.

# %%
print(W.lesson.rung_changes())   # notebook.how(W.lesson.rung_changes) prints its code

# %% [markdown]
# Rung 2 makes three changes at once: the split, 1 consumer instead of 2, and the 128×128 tile.
# Rung 3 makes three: 2 consumers, the 128×256 tile back, and `setmaxnreg`. The nearest the ladder
# comes to the split alone: rung 3 against rung 1 differs by the split and `setmaxnreg`
# ([06c §3](06c_ladder_investigations.ipynb) times `setmaxnreg` alone).
#
# **Predict before you look.** Which rung buys the most? Does the split buy anything? Orange marks
# each rung's predicted band.

# %% output answers a prediction
fig = W.plot_ladder(res, 4096, "float16", record=rec, changes=True, predictions=True)
plt.show()

# %% answer [markdown]
# **The cause, in words** (fp16, 4096³). Rung 2 split the roles, and with one consumer it halved
# the tile to 128×128: it lost about 15 %. The split is not what cost it: rung 3, which keeps the
# split, put two consumers back on the 128×256 tile and won the 15 % back, so rung 3 runs at
# rung 1's speed. The split and `setmaxnreg` together bought nothing here. The next big step is
# rung 7, +8 %: one thread writes C by TMA store, so the consumers start the next tile sooner.
# The trace's epilogue saving, taken off rung 6's tile, predicts that step
# ([06c §3](06c_ladder_investigations.ipynb) does the sum). Rung 7 missed its band above: its
# model priced storing C from registers too low.

# %% output varies
# The numbers, as plain arithmetic on the record's TFLOP/s: edit any line and run the cell again.
t = W.lesson.tflops_by_rung(res, 4096, "float16")        # the record's TFLOP/s by rung, fp16 4096³
print("recorded TFLOP/s:", ", ".join(f"rung {n} {t[n]:.0f}" for n in t))
rung2 = t[2] / t[1]         # the split, 1 consumer, the 128×128 tile: against rung 1
rung3 = t[3] / t[2]         # 2 consumers, the 128×256 tile back, setmaxnreg: against rung 2
split = t[3] / t[1]         # only the split and setmaxnreg differ
rung7 = t[7] / t[6]         # the epilogue by TMA store: against rung 6
print(f"rung 2 ÷ rung 1 = {rung2:.2f}; rung 3 ÷ rung 2 = {rung3:.2f}; rung 3 ÷ rung 1 = {split:.3f}; "
      f"rung 7 ÷ rung 6 = {rung7:.2f}")
print("verdict:", "the split and setmaxnreg bought nothing; the wide tile won rung 2's loss back"
      if abs(split - 1) < 0.02 else f"the split and setmaxnreg moved the speed × {split:.2f}")

# %% check, output answers a prediction
for sentence, ok, numbers in W.lesson.claims(res, core=True):   # on the record, not on the lines above
    notebook.require(ok, sentence, **numbers)        # bounds: W.lesson's constants, a comment each
    print("✓", sentence)

# %% [markdown]
# **Try it.** In the arithmetic cell above, add the line `t[3] = 750` after the first `print` (a
# split that paid off) and run it again. Expect the verdict to flip to "moved the speed".
# Then delete the line.

# %% [markdown]
# Going further: [06c §3](06c_ladder_investigations.ipynb) sets each rung's band beside its
# measurement, row by row, and runs the ladder's model ("Design it"); §2 derives the steps on all four ladders.

# %% [markdown]
# ## 4. Your kernel, top to bottom
#
# Exercise 1's loops are the middle of a real kernel, `asynctc/kernels/capstone.cu`. Once they pass,
# the cell below shows that kernel with your loops in it: every line but the header comment, in
# blocks. Each block says what it does and where you met it. The column `yours` marks your lines.
#
# A **fence** orders memory accesses: those before it come before those after it. Each block names its fences and what each orders.

# %% output answers a prediction
if exercises.after("ch06.whole_kloop", held="your kernel, top to bottom (its middle is exercise 1's loops)"):
    W.capstone_read.walk_cell(whole_kloop, ok)

# %% [markdown]
# **Next: write it in CUDA.** Exercise 1 used short names (`full.wait`, `tma_load`, `mma_ktile`).
# [Deep dive 06f](06f_capstone_in_cuda.ipynb) asks for the same loops in the course's real calls: your
# `expect_tx` and TMA coordinates from 03, your k-step from 04, `setmaxnreg` for the roles. NVRTC compiles
# them, and a CPU run checks the C tile against float64.
#
# Going further: [`hopper_gemm.cu`](../asynctc/kernels/hopper_gemm.cu) is the same design with
# `setmaxnreg` and the host code ([`whole.py`](../asynctc/warp_specialization/whole.py)), rung 3's
# build written out. [06d §4](06d_limits_and_gemm.ipynb) reads its epilogue.

# %% [markdown]
# ## Worklog

# %% output answers a prediction
from asynctc.core import worklog

worklog.show("06")

# %% [markdown]
# **Your GEMM so far.** Until you write [deep dive 06e](06e_your_gemm_on_the_cpu.ipynb)'s consumer loop,
# the course's stands in.

# %% output varies
from asynctc.models.gemm_so_far import so_far

so_far("06")

# %% [markdown]
# ## 5. Use it: `asynctc.matmul`
#
# `asynctc.matmul(a, b)` is the top rung, with edge handling. It picks a build for the shape.
# On an sm_90a GPU, the cell below runs it and checks it against float64.
#
# Going further: [06d §3](06d_limits_and_gemm.ipynb) times it by shape.

# %% output varies
import numpy as np
import asynctc
from asynctc.core import checks, records, runtime
from asynctc.gemm import matmul_config, recorded_run

a = np.random.default_rng(5).standard_normal((1000, 4096)).astype(np.float16)   # M × K
b = np.random.default_rng(6).standard_normal((4096, 700)).astype(np.float16)    # K × N
print("its build for 1000×700×4096:", matmul_config(1000, 700, 4096, sm_count=132).label(legend=True))
if runtime.runs_live("sm_90a"):
    chk = checks.check_gemm(asynctc.matmul(a, b), a, b, "float16")   # C in float16, fp32 accumulation
    print(f"live: worst |C − float64| / bound {chk.max_err / chk.tol:.2f}")
    assert chk.passed, chk
else:
    print(recorded_run(records.load("matmul"), 1000, 700, 4096))

# %% [markdown]
# **What you learned.** Both roles' loops across tiles, your whole kernel top to bottom, the
# register budget, what each rung bought.
#
# **On a GPU:** `python -m asynctc record warp_specialization --no-save` re-measures the ladder.
#
# **Next:** [chapter 07](07_fp8_precision.ipynb) feeds the same pipeline FP8.

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %% output varies
whole_kloop = """
// tile 1's first k-tile: stage 1, consumers' full parity 1   (ring counter 3: 3 mod 2, 3 // 2 mod 2)
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
