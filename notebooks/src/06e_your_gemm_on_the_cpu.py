# %% [markdown]
# # 06e — Deep dive: your pieces make a Hopper GEMM tile, on the CPU
#
# ← back to the core lesson [06_warp_specialization](06_warp_specialization.ipynb)
#
# **Assumes** your passing core exercises: 03 (stage fill, `swizzle_128b`), 04 (`kstep_desc`), 05 (producer step).
#
# Chapters 03–06 end with this run of one tile of a Hopper [GEMM](../docs/glossary.md#gemm) ("your GEMM so far").
# No GPU is needed: this is a model of the hardware, not a run on it. Chapter 09c does the same for Blackwell.
#
# **What it adds:**
# - §1 the goal
# - §2 optional practice: the capstone's consumer loop again, under rung 3's names. Rung 3 is the
#   third kernel of chapter 06 §3's ladder: a producer warpgroup and two consumer warpgroups
# - §3 your pieces, plus 04b's `encode` and 05b's parities
# - §4 the tile, run step by step, then in the order of the capstone's loops in short names (06f §1)
# - §5 one piece broken on purpose
# - §6 what this emulation does not model

# %% output varies
import matplotlib.pyplot as plt

from asynctc.core import exercises, notebook
from asynctc.models import descriptors, emulate_sm90
from asynctc import warp_specialization as W

notebook.banner("sm_90a", measured=False)

# %% [markdown]
# ## 1. The goal
#
# One CTA computes a 128 × 128 tile of C = A·B, with K = 256, fp16 in and fp32 out. A and B are
# [K-major](../docs/glossary.md#k-major), with the 128-byte [swizzle](../docs/glossary.md#swizzle).
# Two consumer [warpgroups](../docs/glossary.md#warpgroup) own 64 rows each. The ring has 2
# [stages](../docs/glossary.md#stage); each stage takes one 64-deep [k-tile](../docs/glossary.md#k-tile). Your
# pieces do these jobs:
#
# | step | what happens | whose piece |
# |---|---|---|
# | ring | chapter 05's ring model orders the loads and reads | producer step (05), consumer loop (§2), parities (05b); or, in §4's last step, your short-name capstone loops (06f §1) |
# | TMA | where the A and B [boxes](../docs/glossary.md#box) land; full completes when the [expect_tx](../docs/glossary.md#expect_tx) bytes have landed | stage fill (03) |
# | swizzle | byte `o` of a box goes to `swizzle_128b(o)` | swizzle (03) |
# | wgmma | the [mbarrier](../docs/glossary.md#mbarrier)-ordered reads, through descriptors packed by `encode` and moved by `kstep_desc` | k-step (04), encode (04b) |
# | math, epilogue | float64 products added to a float32 accumulator; registers into C, which starts as NaN | the course's |

# %% [markdown]
# ## 2. Rung 3's consumer loop, in the kernel's own words
#
# Chapter 06's capstone used the real calls; 06f's warm-up, short names. Rung 3's source (`asynctc/kernels/warp_specialization.cu`)
# keeps a ring position `pos`, waits with a bound, and leaves one wgmma group in flight. It is the
# ladder's file, where each rung is a setting of compile-time switches; 06 §4's `hopper_gemm.cu` is
# rung 3's design written out once, without the switches (the same wgmmas, TMA loads and barriers
# in its SASS). Here is rung 3's build, less two parts: the consumers' loop body (the exercise) and
# the producer's k-tile (06 §4 shows it once its capstone passes).

# %%
ck = W.compile_ws(W.RUNG_BY_NAME["ws_setmaxnreg"].make("float16"))
notebook.show_source(ck, start=r"^  if \(wg == 0\) \{", end=r"^        finish\(acc\);", variant=True,
                     omit=W.LISTING_OMIT)

# %% [markdown]
# **Optional exercise: the capstone's consumer loop again, under rung 3's names.** Chapter 06's
# capstone asked for it in real calls; here one wgmma group stays in flight. After your loop, the kernel waits for every
# wgmma and releases the stage in `prev`. So your loop releases the stage of k-tile k − 1 and then
# sets `prev` to this k-tile's stage. A loop that releases its own last stage too would release it
# a second time, and is refused. In scope:
#
# - `full.wait(stage, parity, wg, k)`: a bounded loop on `mbarrier.try_wait.parity`, false if it
#   gave up (`broken` may remember that);
# - `pos.stage`, `pos.phase` (f mod 2 for fill f), `pos.advance()`: the [ring counter](../docs/glossary.md#ring-counter);
# - `mma_ktile(acc, desc_a, desc_b)`: a k-tile's wgmmas, one group (`wgmma.mma_async`s, then
#   `wgmma.commit_group`). Its descriptors are
#   `wgmma_desc_advance(da0, bytes)` and `wgmma_desc_advance(db0, bytes)`; stage s starts
#   s × `kStageBytes` bytes after stage 0;
# - `wgmma_wait_group<N>()` leaves at most N groups running; `fence_accumulators(acc)` is a
#   compiler barrier for `acc`;
# - `empty.arrive(s)`: an arrival on empty[s] (`mbarrier.arrive`). Only the `elected` thread of
#   each warpgroup calls it, so a phase completes with C arrivals;
# - `prev`, an `int` to keep the stage of k-tile k − 1 in; `k`, `wg`.
#
# The short names for the same steps: [06f §1's table](06f_capstone_in_cuda.ipynb).
#
# The check compiles your loop into rung 3 with NVRTC (no GPU), compares its SASS with the
# course's, and judges its protocol with the course's models.

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
# ## 3. Your pieces
#
# A passing code exercise keeps your code beside your progress file; `exercises.my_answer(name)`
# gives it back. A piece you have not passed yet is None: the run uses the course's piece and says
# so. To try another version, assign it to `pieces["kstep"]` (or `"stage_fill"`, `"swizzle"`,
# `"encode"`, `"parities"`, `"producer_step"`, `"consumer_loop"`) after this cell.

# %% output varies
pieces, lines = emulate_sm90.your_pieces()     # exercises.my_answer("ch04.kstep"), …
print("\n".join(lines))

# %% [markdown]
# ## 4. Run the tile
#
# First, one valid order: the ring model's. A line is a load landing in stage `t % 2`, or a
# consumer starting a read. k-tile 1's load is issued at once; it lands after both reads of k-tile 0
# have started, while they run. A load reuses a stage after both reads of it:

# %% output varies
for line in emulate_sm90.ring_order(parities=pieces["parities"], producer_step=pieces["producer_step"],
                                    consumer_loop=pieces["consumer_loop"]):
    print(line)

# %% [markdown]
# Now the whole tile, on fresh random inputs. The check is the course's
# [elementwise bound](../docs/glossary.md#elementwise-bound): every element within
# K · 2⁻²¹ · (|A|·|B|) of the float64 result, and written exactly once.

# %% output varies
result = emulate_sm90.emulate(**pieces)
print(result.summary())

# %% output varies
assert result.passed or any(p is not None for p in pieces.values()), result.summary()
print(f"worst |C - float64| / bound: {result.check.worst:.2g}" if result.check else "no result")

# %% [markdown]
# If a piece of yours is wrong, the summary names it and says where the wrong elements are. The
# next section shows what that looks like.

# %% [markdown]
# ### Your short-name capstone loops as the ring
#
# The ring model runs 06f's warm-up loops (the capstone in short names; yours once passed) for the
# order; your other pieces move the data:

# %% output varies
mine = exercises.my_answer("ch06.whole_kloop")      # None: not passed yet
order = W.whole_kloop.timeline(mine or W.whole_kloop.SOLUTION, stages=2, k_tiles=4, tiles=1)
print("\n".join(emulate_sm90.ring_order(schedule=order)) if order.diagnosis is None else "")
whose = {} if mine else {"whole_kloop": "the course's"}
print(emulate_sm90.emulate(**pieces, schedule=order, on_purpose=whose).summary())

# %% [markdown]
# ## 5. Break one piece on purpose
#
# **A swizzle that does nothing.** TMA then writes plain rows. The wgmma still reads them as
# swizzled. The printed rule is the pattern; the count falls a few short of it where a wrong sum
# lands inside its bound:

# %% output varies
broken = emulate_sm90.emulate(swizzle=lambda offset: offset,     # counts vary a little with the inputs
                              on_purpose="swizzle")
print(broken.summary())
assert broken.blame == ["swizzle"] and "right only where row % 8 == column % 8" in broken.summary()

# %% [markdown]
# Some elements are still right. Row `i` of A is read with its 16-byte chunks permuted by `i % 8`,
# and column `j` of B by `j % 8`. When `i % 8 == j % 8`, both sides are permuted the same way, so
# the dot product only changes order. The picture shows it:

# %%
fig, ax = plt.subplots(figsize=(3.2, 3.2))
ax.imshow(broken.bad[:32, :32], cmap="Greys", interpolation="nearest")
ax.set_title("wrong elements (black), C[:32, :32]", fontsize=9)
ax.set_xlabel("column")
ax.set_ylabel("row")
plt.show()

# %% [markdown]
# **A k-step counted in elements.** A `kstep_desc` that moves the start by 16 fp16 elements, not
# 32 bytes. The summary quotes chapter 04's diagnosis:

# %% output varies
def kstep_in_elements(desc0, s, major):
    return desc0 + (s * 16 >> 4)


elements = emulate_sm90.emulate(kstep=kstep_in_elements, on_purpose="kstep")
print(elements.summary())
assert elements.blame == ["kstep"]

# %% [markdown]
# **A wrong [phase parity](../docs/glossary.md#phase-parity).** A consumer that waits on full with
# parity k mod 2. The producer keeps the course's parity. At k-tile 1 that parity lets a consumer
# pass before the stage's bytes land; the ring model stops the tile at that read, before the wgmma
# could use them:

# %%
print(emulate_sm90.emulate(parities=(lambda k, S: k % 2, emulate_sm90.course_empty_parity),
                          on_purpose="parities").summary())

# %% [markdown]
# **Predict before you run.** An `encode` that always stores
# [LBO](../docs/glossary.md#lbo) = 0. Does the tile pass or fail? Write your answer down, then
# run the cell.

# %% output answers a prediction
def encode_no_lbo(start_address, lbo, sbo, swizzle):
    return descriptors.encode(start_address, 0, sbo, swizzle)


no_lbo = emulate_sm90.emulate(encode=encode_no_lbo, on_purpose={"encode": "LBO = 0 on purpose"})
print(no_lbo.summary())
assert no_lbo.passed
print(emulate_sm90.why(no_lbo))            # why it passed or failed (kept out of sight until you run)

# %% [markdown]
# ## 6. What this emulation does not model
#
# - **Time.** The ring model only fixes the order of events. No clock, no bandwidth, no latency:
#   chapter 05b models those.
# - **The real asynchronous engines.** TMA here is a byte copy. There is no L2, no bank conflict,
#   no [proxy](../docs/glossary.md#proxy) fence, no `wgmma.fence` or `commit_group`.
# - **The hardware's decoder and adder.** The descriptor decoder is the course's, written from the
#   PTX ISA (chapter 04's kernels use it and pass on the GPU). The bound allows for any addition order.
# - **One CTA.** There is no grid, no edges, no cluster, no epilogue through shared memory.
#
# **What you learned.** Your pieces (stage fill, swizzle, k-step, producer step, consumer loop,
# encoder, parities; the course's for any not passed yet) move the right bytes to the right wgmma, in the ring's order.
# Your short-name capstone loops can give that order too.
# A wrong piece shows up as a pattern of wrong elements, and the pattern points at the piece. Back to
# [chapter 06](06_warp_specialization.ipynb).

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
  empty.arrive(prev);
}
prev = pos.stage;
pos.advance();
"""
ok = exercises.check("ch06.consumer_loop", consumer_loop, solution=True)
