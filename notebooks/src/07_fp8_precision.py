# %% [markdown]
# # 07 — FP8: two formats, a scale, and an accumulator that keeps 13 fraction bits
#
# **Learning goal.** Run chapter 06's warp-specialized GEMM on 8-bit floats and account for the
# bits they lose: quantise to [e4m3](../docs/glossary.md#e4m3) with a scale, time the FP8 GEMM
# beside [cuBLASLt](../docs/glossary.md#cublaslt), and write the *promotion* that buys back the
# precision Hopper's FP8 Tensor Core loses as it sums.
#
# FP8 halves the bytes per element again; FP8 wgmma (`m64nNk32`) does double FP16's multiply-adds
# per instruction.
#
# **In plain words.** An 8-bit float keeps few bits, so each tensor carries a scale that maps its
# values onto the format's range. The Tensor Core multiplies them at double rate, but its adder
# keeps too few bits: small products added to a large sum vanish. The fix hands
# the sum to fp32 registers every few steps.
#
# **Deep dives:** [07b — the accumulator](07b_fp8_accumulator.ipynb);
# [07c — swizzle and TMA boxes](07c_swizzle_and_row_boxes.ipynb);
# [07d — block scales, shapes, peak](07d_fp8_scales_shapes_peak.ipynb).

# %% output varies
import numpy as np
import matplotlib.pyplot as plt
import ml_dtypes

from asynctc.core import exercises, notebook, records
from asynctc import fp8, warp_specialization as W

notebook.banner("sm_90a")
rec = records.load("fp8")
res = rec.results

# %% [markdown]
# ## 1. Two formats
#
# A float is a sign, *exponent bits* (which power of two) and *fraction bits* (where between two
# powers). sm_90's wgmma takes two 8-bit formats (PTX ISA §5.2.5; the OCP FP8 specification):
#
# * **e4m3** (`float8_e4m3fn`): 4 exponent and 3 fraction bits, no infinities; 8 values between two
#   powers of two. For weights and activations.
# * **e5m2** (`float8_e5m2`): 5 and 2 bits; 4 values per power of two. For gradients, where range
#   matters most.
#
# To **quantise** x, divide it by the scale, **saturate** it (clip to ± the largest value) and
# round to nearest (ties to even). Saturation matters because e4m3 has no infinity, so a plain cast
# turns −500 into NaN. Below are each format's positive values and four values quantised.

# %% output varies
fig = fp8.plot_formats()
plt.show()
x = np.array([13.5, 0.1, -500.0, 1e-4])
np.set_printoptions(precision=5, suppress=True)
print("x                 ", x)
print("fp8.quantize, e4m3", fp8.quantize(x, "e4m3", scale=1.0)[0].astype(np.float64))
print("plain cast, e4m3  ", x.astype(ml_dtypes.float8_e4m3fn).astype(np.float64))
print("fp8.quantize, e5m2", fp8.quantize(x, "e5m2", scale=1.0)[0].astype(np.float64))

# %% [markdown]
# FP8 wgmma reads **both** shared-memory operands K-major (PTX ISA §9.7.15.5.2), so B is stored
# N×K. The kernel refuses an MN-major B (deep dive 07d works around it).
#
# ## 2. Scales
#
# A tensor's [dequantisation scale](../docs/glossary.md#dequantisation-scale) s (x ≈ q · s) maps its
# largest magnitude, its *amax*, onto the format's largest value. For e4m3, s = amax / 448
# (`fp8.amax_scale`). Large models keep one per **1×128** row segment of A and one per **128×128**
# block of B (DeepSeek-V3 §3.3), so an outlier coarsens only its own block. The test input is a
# 256×512 A whose rows differ in magnitude by up to e^±4, with one outlier of 9000.
#
# **Try it: change `BLOCK` and re-run.** The table quantises A with one scale, and with one per
# 1×`BLOCK` segment. Try 512 (one per row), then 32. The larger the outlier's block, the more of its
# neighbours lose their bits (a worst error of 1 means flushed to 0).

# %%
BLOCK = 128                               # elements of a row per scale: divides 512
rng = np.random.default_rng(7)
a = (rng.standard_normal((256, 512)) * np.exp(rng.uniform(-4, 4, (256, 1)))).astype(np.float32)
a[3, 200] = 9000.0
print(fp8.block_error_table(a, BLOCK))

# %% [markdown]
# ## 3. The FP8 GEMM, checked against float64
#
# Chapter 06's top rung with `DT` = e4m3 or e5m2. The float64 reference takes the *dequantised*
# inputs (q · s), and the [elementwise bound](../docs/glossary.md#elementwise-bound) counts the FP8
# accumulator's 13 fraction bits (section 5) instead of fp32's. Live, two more run now.

# %% output varies
fp8.show_checks(res, record=rec)

# %% [markdown]
# ## 4. Speed: against cuBLASLt and against FP16
#
# One GPU run timed cuBLASLt's FP8 GEMM (`torch._scaled_mm`, e4m3,
# [fast accumulation](../docs/glossary.md#fast-accumulation), section 5), cuBLAS FP16 and our top
# rung in both. FP8's dense [peak](../docs/glossary.md#peak) is 8192 FLOP/clk/SM, twice FP16's 4096.
# At the datasheet's boost clock that is 1979 TFLOP/s against FP16's 989. A ratio of two GEMMs timed in one run needs no clock: twice the work per clock makes 2× a
# **ceiling**. The
# [seed article](../docs/glossary.md#seed-article) says "1.5–2×".
#
# **Predict before you run.** Will our FP8 rung reach 2× our FP16 rung at 8192³, or stop near the
# seed's 1.5×? Will it beat cuBLASLt? Write your guesses down, then run the cell.

# %% output answers a prediction
print(rec.label())
fp8.show_speed(res)

# %% [markdown]
# At 8192³ our FP8 rung reaches 1.99× our FP16 rung and cuBLAS 1.98×: both within 1 % of the
# ceiling. Doubling the work per instruction did not leave them waiting for bytes, because FP8 also
# halves the bytes per element.
#
# ## 5. The accumulator: a sum that stops growing
#
# **The failure first.** Add 4096 products of 1/16 to one product of 1024. The exact sum is
# 1024 + 256 = 1280. fp32 gets it right. Our model of the FP8 Tensor Core, `fp8.tc_dot` (after
# Fasi et al.), says the GPU returns 1024: the sum never moves.

# %%
products = np.concatenate([[1024.0], np.full(4096, 2.0**-4)])   # one big product, then small ones
print("exact         ", products.sum())
print("fp32, in order", products.astype(np.float32).cumsum(dtype=np.float32)[-1])
print("FP8 wgmma     ", fp8.tc_dot(products))

# %% [markdown]
# **Why.** Per k32 wgmma, the adder lines up the running sum and 32 products on the largest
# exponent among them, here the sum's 2^10.
# fp32 keeps 23 binary places below that leading 1, so 2^-4 fits. Hopper's FP8 wgmma keeps fewer.
# DeepSeek-AI found it "retains around 14 bits": 13 **fraction bits** plus the leading 1. Every
# place below 2^-3 is **truncated**, so each 1/16 becomes 0. This is
# [swamping](../docs/glossary.md#swamping): a product 2^(f+1) times smaller than the sum vanishes.

# %%
fig = fp8.plot_bits_kept()
plt.show()

# %% [markdown]
# **The fix: promotion** (DeepSeek-V3 §3.3.2). Every P k-tiles (`promote=P`; a k-tile is 128
# elements of K), the consumer adds its wgmma accumulators into fp32 registers of its own and
# restarts them at 0. No Tensor Core sum then spans more than P k-tiles. The price is registers.
# Two accumulator sets fit a 128×128 tile (2 × 64 registers per thread). They do not fit the top
# rung's 128×256 (2 × 128, over a consumer thread's 232), so promotion also costs the bigger tile.
#
# **The test on the GPU.** The model's width, 13, came from DeepSeek's report, not from this run.
# The lines below were computed with it and frozen before the first GPU run. The markers are the
# GPU on inputs the model never saw. Left: each element sums one product of 1024, then K − 1
# small ones (below 2^-4). Right: standard-normal inputs, the worst error over Σ|a·b|. Deep dive
# 07b then fits f on probe inputs of its own and finds 13 again. With promotion the right-hand
# curves fall, since each truncation comes from a short sum; without, the curve stays level.
#
# Promoting every 4 k-tiles cuts the swamping error 28×. It keeps 0.90 of the same 128×128
# build's throughput, and 0.83 of the top rung's. The cell prints the division behind each and
# checks them against the record.

# %% output varies
fig = fp8.plot_accumulation(res, record=rec)
plt.show()
fp8.show_accumulator(res)

# %% [markdown]
# **In the kernel** (`PROMOTE = 1`, PTX first), one consumer k-tile. `mma_ktile` issues the k32
# wgmmas; `promote` folds them into fp32 totals (its body comes after exercise 2).

# %% output varies
ck = W.compile_ws(fp8.fp8_config(promote=1))
print(notebook.ptx_listing(ck, r"wgmma\.mma_async", full=0))
notebook.show_source(ck, start=r"float bs\[kAtoms\]\[2\];", end=r"promote\(acc, tot", variant=True)

# %% [markdown]
# ## 6. Exercises
#
# **1. An element's round trip.** A 1×128 row segment of A has largest magnitude **37.5**; one of
# its elements is **10.0**. Quantise it to e4m3 with the segment's scale (section 2), then
# dequantise (q · s). What value comes back? Four significant figures are enough. (Between 64 and
# 128 the e4m3 values are 64 · (1 + j/8).)

# %%
answer = ...
ok = exercises.check("ch07.round_trip", answer, value=10.0, amax=37.5)

# %% [markdown]
# **2. Write the promotion.** `products` are the K exact products a·b of one element of C, 128
# per k-tile. The wgmma accumulator sums them a k-tile at a time:
# `acc = fp8.tc_dot(products[t*128:(t+1)*128], acc=acc)`. Write `promoted_sum(products, interval)`:
# every `interval` k-tiles, and after the last, add `acc` into an fp32 total and restart it at 0.
# The check runs it on fresh inputs against the model and float64.

# %%
def promoted_sum(products, interval):
    ...   # your code: loop over the k-tiles; return the fp32 total


ok = exercises.check("ch07.promotion", promoted_sum)

# %% [markdown]
# The kernel's `promote` (after exercise 2):

# %% output answers a prediction
if exercises.after("ch07.promotion"):
    display(notebook.show_source(ck, start=r"promote\(acc, tot", end=r"prev = pos\.stage;", variant=True,
                                 more=(("fp8_promote.cuh", r"^__device__ __forceinline__ void promote", r"^}"),)))

# %% [markdown]
# **What you learned:** FP8 is a format plus a scale; its accumulator keeps 13 fraction bits;
# promotion buys precision back for some throughput. **Next:** [chapter 08](08_pitfalls.ipynb), asynchronous pitfalls.

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
s = 37.5 / 448                                                        # the segment's scale
exercises.check("ch07.round_trip", 120 * s, value=10.0, amax=37.5, solution=True)   # 10/s ≈ 119.5: 120


def promoted_sum(products, interval):
    total, acc = np.float32(0.0), 0.0            # the fp32 registers; the wgmma accumulator
    tiles = len(products) // 128
    for t in range(tiles):
        acc = fp8.tc_dot(products[t * 128:(t + 1) * 128], acc=acc)
        if (t + 1) % interval == 0 or t == tiles - 1:
            total, acc = np.float32(total + np.float32(acc)), 0.0
    return total


ok = exercises.check("ch07.promotion", promoted_sum, solution=True)
