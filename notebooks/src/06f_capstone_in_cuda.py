# %% [markdown]
# # 06f — Deep dive: the capstone in short names first, and what its checks model
#
# ← back to the core lesson [06_warp_specialization](06_warp_specialization.ipynb)
#
# **Assumes** chapter 06 §1's protocol (the two roles, the ring counter, the figure's short names)
# and its exercise 1a. Not the capstone: this is its step 1.
#
# Chapter 06's capstone (exercise 1b) asks for both roles' loops in the course's real calls. This
# deep dive asks the same loops first in short names, one name per step: a warm-up for a learner
# who finds the real calls too much at once. Then it reads the real kernel's build, and says what
# the CPU check does not model. No GPU is needed.
#
# **What it adds:**
# - §1 the warm-up: both roles' loops in short names, drawn as the ring model runs them
# - §2 `setmaxnreg` in the real kernel's build
# - §3 what the CPU run does not model

# %% output varies
import matplotlib.pyplot as plt

from asynctc.core import exercises, notebook
from asynctc import warp_specialization as W
from asynctc.warp_specialization import cuda_kloop as K

notebook.banner("sm_90a", measured=False)

# %% [markdown]
# ## 1. The warm-up: both roles' loops in short names
#
# Chapter 06 §1's table maps each short name to its real calls. The table below gives each step's
# name in chapter 05's kernel and here, with the PTX it issues
# ([06e](06e_your_gemm_on_the_cpu.ipynb)'s names: `W.protocol_names(with_06e=True)`).

# %% output varies
print(W.protocol_names())

# %% [markdown]
# **Warm-up exercise: both roles' loops in short names.** The CTA is
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
# Which stage and consumers' parity does tile 2's first k-tile use?

# %%
whole_kloop = """
// tile 2's first k-tile: stage ?, consumers' full parity ?   (your prediction; declarations below)
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
# Next, write them in real calls: [chapter 06 §1](06_warp_specialization.ipynb), exercise 1b.

# %% output varies
fig = W.whole_kloop.show_loops(whole_kloop, ok)
plt.show()

# %% [markdown]
# ## 2. `setmaxnreg` in the real kernel
#
# Chapter 06's kernel is declared with `__launch_bounds__(384, 1)`, so ptxas knows the
# register budget at entry: 65536 / 384 = 170.7, rounded down to a multiple of 8: 168. Your `dec` and `inc` sit in the
# role branches, so each warpgroup runs only its own. The cell below reads the cubin: two
# `USETMAXREG` instructions, and no C7507 or C7508 warning from ptxas.

# %%
built = K.build(K.solution())
print(built.says())
assert built.setmaxnreg == 2 and not built.warnings

# %% [markdown]
# **Try it.** Swap the two coordinates of A's `tma_load_2d` in your passing text of
# [06's exercise 1b](06_warp_specialization.ipynb), or advance the
# descriptors by 16 bytes a k-step, and run the check again. The hint names the box, or the k-step,
# and the bytes it read.
#
# ## 3. What the CPU run does not model
#
# Chapter 06's check compiles your real-call loops (NVRTC), then runs them on the CPU: the CPU run.
# The CPU run does not model:
#
# - **Time and concurrency.** Each role runs alone, as one thread; a ring model then orders the
#   recorded calls in two schedules: one led by the producer, one led by the consumers. A race that needs another interleaving
#   can pass here. No clock, no bandwidth.
# - **The asynchronous engines.** A TMA box lands when it is issued; a wgmma reads its bytes when it
#   is issued. A release before `wgmma_wait_group` is caught by a rule, not by wrong data. There is
#   no [proxy](../docs/glossary.md#proxy) fence, no L2, no bank conflicts.
# - **The hardware's decoder and adder.** Descriptors are decoded by the course's model (chapter 04).
#   Products are float64, rounded to float32 after each k16 step; the bound allows any addition order.
# - **Registers.** `setmaxnreg` is recorded and its budget summed; ptxas's allocation is the NVRTC build's (§2).
# - **The other 127 threads.** One more thread of each warpgroup runs your text, to check that only
#   the elected thread arrives and loads, and that all issue the same wgmmas.
#
# **What you learned.** Each short name of the warm-up is a few real calls. The CPU check orders
# the roles and moves the bytes, but keeps no time. Back to [chapter 06](06_warp_specialization.ipynb).

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %% output varies
whole_kloop = """
// tile 2's first k-tile: stage 0, consumers' full parity 1   (ring counter 6: 6 mod 2, 6 // 2 mod 2)
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
fig = W.whole_kloop.show_loops(whole_kloop, ok)      # the warm-up's picture, drawn from the solution
plt.show()
