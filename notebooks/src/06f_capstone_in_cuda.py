# %% [markdown]
# # 06f — Deep dive: your capstone in CUDA
#
# ← back to the core lesson [06_warp_specialization](06_warp_specialization.ipynb)
#
# **Assumes** chapter 06's capstone (`ch06.whole_kloop`), chapter 03's tensor-map coordinates and
# chapter 04's `kstep_desc`.
#
# Chapter 06's capstone asked for both roles' loops in short names: `full.wait(stage, parity)`,
# `tma_load(stage, tile, k)`, `mma_ktile(acc, stage)`. Here you write the same loops as one piece of
# CUDA, with the wrappers the course's kernels call. No GPU is needed for the first two checks.
#
# **What it adds:**
# - §1 the goal
# - §2 what each short name of 06 stands for
# - §3 the exercise: both roles in real CUDA
# - §4 the result: compiled, run on the CPU against float64, and on a GPU where one is present
# - §5 what the CPU run does not model

# %% output varies
from asynctc.core import exercises, notebook
from asynctc.warp_specialization import cuda_kloop as K

notebook.banner("sm_90a", measured=False)

# %% [markdown]
# ## 1. The goal
#
# One [persistent](../docs/glossary.md#persistent) CTA of three
# [warpgroups](../docs/glossary.md#warpgroup) walks several 128 × 128 tiles of C = A·B (fp16 in,
# fp32 out). Warpgroup 0 is the producer: its [elected thread](../docs/glossary.md#elected-thread)
# fills a ring of stages with TMA. Warpgroups 1 and 2 are the consumers: each multiplies its 64 rows
# with [wgmma](../docs/glossary.md#wgmma). Your text becomes the body of a real kernel,
# `asynctc/kernels/capstone_cuda.cu`. Its set-up is the capstone kernel's (`capstone.cu`).
#
# Three checks read it:
#
# | check | what it does | needs |
# |---|---|---|
# | A | NVRTC compiles the kernel with your text to an sm_90a cubin; errors name your lines | nothing |
# | B | g++ compiles your text for the CPU, with stand-ins that record each call; a ring model orders the roles; the loads and wgmmas are replayed and C is compared with float64 | g++ |
# | C | the kernel runs on fresh random inputs, C against float64 | a Hopper GPU |
#
# Without g++, the check says so and stays compile-only.

# %% [markdown]
# ## 2. What changes from 06's short names
#
# | 06's short name | the real calls it stands for |
# |---|---|
# | `full.wait(stage, parity)` | `ring_wait(full_bar(stage), parity)`: a bounded loop on `mbarrier.try_wait.parity` |
# | `empty.wait(stage, parity)` | `ring_wait(empty_bar(stage), parity)` |
# | `full.arrive_expect_tx(stage, bytes)` | `mbarrier_arrive_expect_tx(full_bar(stage), bytes)`, by the elected thread |
# | `tma_load(stage, tile, k)` | two `tma_load_2d(dst, map, full_bar(stage), c0, c1)`: A's box into `smem_a(stage)`, B's into `smem_b(stage)`, with chapter 03's coordinates |
# | `mma_ktile(acc, stage)` | `wgmma_fence()`, four `wgmma_mma_async_ss<128, 0, 0, 0>(acc, da, db, 1)` with descriptors moved by `wgmma_desc_advance`, `wgmma_commit_group()` |
# | `wgmma_wait_group<N>()` | the same call |
# | `empty.arrive(stage)` | `mbarrier_arrive(empty_bar(stage))`, by the elected thread of each consumer |
# | (none) | `setmaxnreg_dec<R>()` / `setmaxnreg_inc<R>()` in the role branches |
#
# The k-step is chapter 04's `kstep_desc`, done by hand: `wgmma_desc_advance(desc, bytes)` adds
# `bytes >> 4` to the descriptor's start-address field. The bytes are the stage's offset plus the
# k-step's offset in the swizzled row.

# %% [markdown]
# ## 3. The exercise: both roles in real CUDA
#
# **Exercise.** Fill the skeleton's holes. In scope (the kernel defines them before your text):
#
# - `wg` (0 the producer, 1 and 2 the consumers), `elected` (thread 0 of this warpgroup);
# - `TILES` (this CTA's tiles), `T` (k-tiles per tile), `STAGES`, `BM`, `BN`, `BK` (128, 128, 64),
#   `kStageBytes` (one stage: A's box, then B's box);
# - `tile_m0(tile)`, `tile_n0(tile)`: the first row of A, and the first row of stored B (the first
#   column of C), of this CTA's tile number `tile`;
# - `full_bar(s)`, `empty_bar(s)`: the shared addresses of stage s's barriers. full counts 1
#   arrival plus the bytes; empty counts one arrival per consumer warpgroup;
# - `smem_a(s)`, `smem_b(s)`: the shared addresses of stage s's A box and B box;
# - `ta`, `tb`: the [tensor maps](../docs/glossary.md#tensor-map) of A (M × K) and of B stored
#   N × K. Each box is 64 elements of K by 128 rows, with the 128-byte swizzle;
# - `desc_a0`, `desc_b0`: this consumer's [descriptors](../docs/glossary.md#matrix-descriptor) of
#   stage 0, k-step 0 (A's points at its own 64 rows);
# - `acc`: this consumer's 64 fp32 accumulators; `store_tile(acc, tile)` stores them and zeroes them.
#
# The wrappers, with their signatures:
#
# - `bool ring_wait(u32 bar, u32 parity)`: gives up after 2 s and records which wait it was;
# - `mbarrier_arrive_expect_tx(u32 bar, u32 bytes)` ([expect_tx](../docs/glossary.md#expect_tx)),
#   `mbarrier_arrive(u32 bar)`;
# - `tma_load_2d(u32 dst, const TmaDesc& map, u32 bar, int c0, int c1)`;
# - `u64 wgmma_desc_advance(u64 desc, u32 bytes)`;
# - `wgmma_fence()`, `wgmma_mma_async_ss<128, 0, 0, 0>(acc, u64 desc_a, u64 desc_b, 1)`,
#   `wgmma_commit_group()`, `wgmma_wait_group<N>()`;
# - `setmaxnreg_dec<R>()`, `setmaxnreg_inc<R>()` ([setmaxnreg](../docs/glossary.md#setmaxnreg)):
#   R is a multiple of 8, and the three warpgroups' budgets must fit 65536 registers.
#
# The [phase parity](../docs/glossary.md#phase-parity) of each wait and the coordinates of each box
# are yours to work out. The ring's position carries on across tiles, as in 06.

# %%
cuda_kloop = """
int stage = 0; u32 phase = 0;                 // the ring position, once, before the tile loop
if (wg == 0) {                                // the producer warpgroup
  // setmaxnreg: give registers back
  if (elected) {
    for (int tile = 0; tile < TILES; ++tile)
      for (int k = 0; k < T; ++k) {
        // wait for the stage to be free; announce its bytes; load A's box and B's box
        // advance the ring
      }
  }
} else {                                      // consumer warpgroups 1 and 2
  // setmaxnreg: take registers
  for (int tile = 0; tile < TILES; ++tile) {
    for (int k = 0; k < T; ++k) {
      // wait for the stage's bytes; fence; 4 k-steps of wgmma; commit; wait; release (one thread)
      // advance the ring
    }
    store_tile(acc, tile);
  }
}
"""
ok = exercises.check("ch06.cuda_kloop", cuda_kloop)

# %% [markdown]
# ## 4. The result
#
# The cell below runs the three checks on your text once it passes, else on the course's answer.
# Each line comes from its check: the compile (NVRTC), the CPU run (its worst element as a fraction
# of its bound), and the GPU run where one is present.

# %% output varies
text = cuda_kloop if ok else K.solution()
v = K.verdict(text, seed=0)
print("yours" if ok else "the course's answer (yours has not passed yet)")
for line in (v.compile, v.cpu, v.gpu or "GPU: no Hopper GPU here, check C left out"):
    print(" ", line)

# %% [markdown]
# **setmaxnreg is kept.** The kernel is declared with `__launch_bounds__(384, 1)`, so ptxas knows the
# register budget at entry: 65536 / 384 = 170, rounded down to 168. Your `dec` and `inc` sit in the
# role branches, so each warpgroup runs only its own. The cell below reads the cubin: two
# `USETMAXREG` instructions, and no C7507 or C7508 warning from ptxas.

# %%
built = K.build(K.solution())
print(built.says())
assert built.setmaxnreg == 2 and not built.warnings

# %% [markdown]
# **Try it.** Swap the two coordinates of A's `tma_load_2d` in your passing text, or advance the
# descriptors by 16 bytes a k-step, and run the check again. The hint names the box, or the k-step,
# and the bytes it read.
#
# ## 5. What the CPU run does not model
#
# - **Time and concurrency.** Each role runs alone, as one thread; a ring model then orders the
#   recorded calls in two schedules: one led by the producer, one led by the consumers. A race that needs another interleaving
#   can pass here. No clock, no bandwidth.
# - **The asynchronous engines.** A TMA box lands when it is issued; a wgmma reads its bytes when it
#   is issued. A release before `wgmma_wait_group` is caught by a rule, not by wrong data. There is
#   no [proxy](../docs/glossary.md#proxy) fence, no L2, no bank conflicts.
# - **The hardware's decoder and adder.** Descriptors are decoded by the course's model (chapter 04).
#   Products are float64, rounded to float32 after each k16 step; the bound allows any addition order.
# - **Registers.** `setmaxnreg` is recorded and its budget summed; ptxas's allocation is check A's.
# - **The other 127 threads.** One more thread of each warpgroup runs your text, to check that only
#   the elected thread arrives and loads, and that all issue the same wgmmas.
#
# **What you learned.** The capstone's short names are a few real calls each. The parities,
# coordinates and descriptor offsets you worked out in 03–06 are the kernel's arguments. Back to
# [chapter 06](06_warp_specialization.ipynb).

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %% output varies
cuda_kloop = """
int stage = 0; u32 phase = 0;                 // the ring position: set once, before the tile loop
if (wg == 0) {                                // the producer warpgroup
  setmaxnreg_dec<40>();
  if (elected) {
    for (int tile = 0; tile < TILES; ++tile)
      for (int k = 0; k < T; ++k) {
        ring_wait(empty_bar(stage), phase ^ 1);   // the stage's last fill was released
        mbarrier_arrive_expect_tx(full_bar(stage), kStageBytes);
        tma_load_2d(smem_a(stage), ta, full_bar(stage), k * BK, tile_m0(tile));   // K, then rows
        tma_load_2d(smem_b(stage), tb, full_bar(stage), k * BK, tile_n0(tile));
        if (++stage == STAGES) { stage = 0; phase ^= 1; }
      }
  }
} else {                                      // consumer warpgroups 1 and 2
  setmaxnreg_inc<232>();
  for (int tile = 0; tile < TILES; ++tile) {
    for (int k = 0; k < T; ++k) {
      ring_wait(full_bar(stage), phase);      // the TMA's bytes have landed
      wgmma_fence();
      for (int j = 0; j < 4; ++j)             // k-step j: 16 fp16 = 32 bytes along the swizzled row
        wgmma_mma_async_ss<128, 0, 0, 0>(acc, wgmma_desc_advance(desc_a0, stage * kStageBytes + 32 * j),
                                         wgmma_desc_advance(desc_b0, stage * kStageBytes + 32 * j), 1);
      wgmma_commit_group();
      wgmma_wait_group<0>();                  // the wgmmas are done reading the stage
      if (elected) mbarrier_arrive(empty_bar(stage));
      if (++stage == STAGES) { stage = 0; phase ^= 1; }
    }
    store_tile(acc, tile);
  }
}
"""
ok = exercises.check("ch06.cuda_kloop", cuda_kloop, solution=True)
