# %% [markdown]
# # 07 — FP8: two formats, a scale, and an accumulator that keeps 13 fraction bits
#
# **Learning goal.** Run chapter 06's GEMM on 8-bit floats. Quantise to
# [e4m3](../docs/glossary.md#e4m3), an 8-bit float with 3 fraction bits, using a scale. Time it beside
# [cuBLASLt](../docs/glossary.md#cublaslt), NVIDIA's tuned GEMM library. Then write the *promotion*
# that buys back what Hopper's FP8 Tensor Core loses as it sums.
#
# **Where we are.** Chapter 06 built a GEMM in fp16 and bf16. Here it runs on 8-bit floats. They
# lose precision in rounding and in the Tensor Core's sums.
#
# **In plain words.** An 8-bit float needs a scale per tensor. Section 4 times an FP8 GEMM against
# FP16. The adder drops small products, so fp32 registers take over the sum.
#
# Going further: deep dives [07b](07b_fp8_accumulator.ipynb) the accumulator,
# [07c](07c_swizzle_and_row_boxes.ipynb) swizzle and TMA boxes, [07d](07d_fp8_scales_shapes_peak.ipynb)
# block scales, shapes, peak.

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
# A float is a sign, *exponent bits* and *fraction bits*. The exponent picks a power of two. The
# fraction picks a place between two powers. sm_90's wgmma takes two 8-bit formats (PTX ISA §5.2.5;
# the FP8 specification of OCP, the Open Compute Project, a standards group):
#
# * **e4m3** (`float8_e4m3fn`): 4 exponent and 3 fraction bits, no infinities; for weights and
#   activations.
# * **e5m2** (`float8_e5m2`): 5 and 2 bits, more range; for gradients.
#
# To **quantise** x, divide it by the scale, **saturate** it and round to nearest, ties to even.
# Saturating clips to ± the largest value. e4m3 has no infinity, so a plain cast turns −500 into NaN.

# %% output varies
fig = fp8.plot_formats()
plt.show()
x = np.array([13.5, 0.1, -500.0, 1e-4])
np.set_printoptions(precision=5, suppress=True)
print("x                 ", x)
print("fp8.quantize, e4m3", fp8.quantize(x, "e4m3", scale=1.0)[0].astype(np.float64))
print("plain cast, e4m3  ", x.astype(ml_dtypes.float8_e4m3fn).astype(np.float64))

# %% [markdown]
# FP8 wgmma reads **both** operands K-major, so B is stored N×K. (PTX ISA §9.7.15.5.2; 07d §1.)
#
# ## 2. Scales
#
# A tensor's [dequantisation scale](../docs/glossary.md#dequantisation-scale) s turns q back into
# x ≈ q · s. It maps the tensor's largest magnitude, its *amax*, onto the format's largest value.
# For e4m3, s = amax / 448 (`fp8.amax_scale`).
#
# Large models keep one scale per **1×128** row segment of A and one per **128×128** block
# of B. An outlier then coarsens only its own block. (DeepSeek-AI, "DeepSeek-V3 Technical Report",
# [arXiv:2412.19437](https://arxiv.org/abs/2412.19437), 2024, §3.3.)
#
# Going further: [07d §2](07d_fp8_scales_shapes_peak.ipynb) — one outlier, one scale or block
# scales.

# %% [markdown]
# ## 3. The FP8 GEMM, checked against float64
#
# Chapter 06's top rung ran with `DT` = e4m3 or e5m2. The float64 reference multiplies the
# *dequantised* inputs, q · s. Each element of C is checked against its
# [elementwise bound](../docs/glossary.md#elementwise-bound), the largest error it may have. The
# bound counts the FP8 accumulator's 13 fraction bits, not fp32's (section 5).

# %% output varies
fp8.show_checks(res, record=rec)   # notebook.how(fp8.show_checks) prints its code
worst = max(res["checks"], key=lambda c: c["max_err"])          # closest to its bound
print("worst |C − ref| / bound:", notebook.ratio(worst["max_err"], worst["tol"]))
notebook.require(worst["max_err"] <= worst["tol"], "every element stays inside its bound", worst=worst["max_err"])

# %% [markdown]
# ## 4. Speed: against cuBLASLt and against FP16
#
# One GPU run timed four GEMMs: our top rung in FP8 and in FP16, cuBLAS FP16, and cuBLASLt FP8,
# the last through `torch._scaled_mm` with [fast accumulation](../docs/glossary.md#fast-accumulation).
# Neither FP8 GEMM promotes (§5); the last ratio below is our build that does. A
# [peak](../docs/glossary.md#peak) is the most FLOP per clock the Tensor Cores can do (its glossary
# entry gives FP16's and FP8's per SM). Two GEMMs timed in one run share a clock. The
# [seed article](../docs/glossary.md#seed-article), the public worklog this course checks, says
# "1.5–2×".
#
# **Exercise 1 — predict.** Will our FP8 rung run about 2×, about 1.5× or about 1× our FP16
# rung's TFLOP/s at 8192³? The check takes the choice nearest the measured ratio. Any answer
# opens the table.

# %% output varies
answer = ...                  # "about 2×", "about 1.5×" or "about 1×" ("2x" works too)
ok = exercises.check("ch07.fp8_speedup", answer, results=res)

# %% output answers a prediction
names = {"cuBLASLt FP8, fast accumulation": "cuBLASLt fp8 fast_accum=True", "our FP8 top rung": fp8.fp8_config().label(),
         "cuBLAS FP16": "cuBLAS fp16", "our FP16 top rung": W.TOP_RUNG.make("float16").label()}
sizes = sorted({r["size"] for r in res["table"]})
tf = {(r["kernel"], r["size"]): r["tflops"] for r in res["table"] if "tflops" in r}   # TFLOP/s
lt8, ours8, cb16, ours16 = (tf[kernel, 8192] for kernel in names.values())   # at 8192³
if exercises.after("ch07.fp8_speedup", held="the speed table", tried=True):
    print("TFLOP/s at", " and ".join(f"{n}³" for n in sizes))
    for name, kernel in names.items():
        print(f"  {name:32s}" + "".join(f"{tf[kernel, n]:6.0f}" for n in sizes))

# %% output answers a prediction
if exercises.after("ch07.fp8_speedup", held="the four ratios at 8192³", tried=True):
    print("ours FP8 / ours FP16         ", notebook.ratio(ours8, ours16, "TFLOP/s", digits=3))
    print("cuBLASLt FP8 / cuBLAS FP16   ", notebook.ratio(lt8, cb16, "TFLOP/s", digits=3))
    print("ours FP8 / cuBLASLt FP8      ", notebook.ratio(ours8, lt8, "TFLOP/s", digits=3))
    print("ours FP8 promoted (128×128) / ours FP16 (128×256)", notebook.ratio(fp8.promote_tflops(res)[4], ours16, "TFLOP/s", digits=3))

# %% answer [markdown]
# So: FP8's dense peak is twice FP16's, and the two GEMMs share a clock, so 2× is their ratio's
# **ceiling**. At 8192³, ours and cuBLAS both come within 2 % of it; promoted, ours falls short (last
# line). FP8 also halves the bytes per element, so the doubled math did not starve. Ours against
# cuBLASLt is the third line: one run's ratio, which chapter 10 bounds.

# %% check
promoted = fp8.promote_tflops(res)[4] / ours16   # §5's 128×128 build, every 4 k-tiles (speed_names)
notebook.require(1.96 <= ours8 / ours16 <= 2.02 and 1.96 <= lt8 / cb16 <= 2.02 and promoted < 1.96,
                 "the So: sentence above (after exercise 1)", ours=ours8 / ours16, cublas=lt8 / cb16,
                 promoted=promoted)

# %% [markdown]
# ## 5. The accumulator: a sum that stops growing
#
# **The failure first.** Add 4096 products of 1/16 to one of 1024. The exact sum is 1280, and fp32
# gets it. Our model of the FP8 Tensor Core, `fp8.tc_dot`, says the GPU returns 1024. The cell
# compares the adder's last kept place with a small product.
#
# **Try it:** change `SMALL` to `2.0**-3` and rerun. Predict: lost or kept?

# %%
BIG, SMALL, K = 1024.0, 2.0**-4, 4096     # one big product, then K small ones
FRAC_BITS = 13                            # fraction bits the FP8 adder keeps
e = int(np.floor(np.log2(BIG)))           # the sum's leading 1 is at 2^e
last_place = 2.0 ** (e - FRAC_BITS)       # the adder's last kept place there
print(f"last kept place 2^({e} − {FRAC_BITS}) = {last_place}; a small product {SMALL}:",
      "swamped, truncated to 0" if SMALL < last_place else "kept")
products = np.concatenate([[BIG], np.full(K, SMALL)])
print("exact           ", products.sum())
print("fp32, in order  ", products.astype(np.float32).cumsum(dtype=np.float32)[-1])
print("FP8 wgmma, model", fp8.tc_dot(products, frac_bits=FRAC_BITS))

# %% [markdown]
# **Why.** An FP8 wgmma is k32: it takes 32 of K per instruction (fp16's takes 16). For each one:
#
# 1. The adder aligns the sum and the 32 products on their largest exponent: here 2^10.
# 2. It keeps 13 **fraction bits** below the leading 1, so its last place is 2^-3. (DeepSeek-AI:
#    Hopper "retains around 14 bits": 13 plus the leading 1.)
# 3. Every place below is **truncated**: each 1/16 becomes 0.
#
# fp32 keeps 23 fraction bits, so 1/16 survives there. This is [swamping](../docs/glossary.md#swamping): a
# product below the adder's last kept place, 2^(e − 13) for a sum at 2^e, vanishes.
#
# **The fix: promotion.** An FP8 k-tile is 128 elements deep (128 bytes per row, as in 03–06).
# Every P k-tiles, the consumer adds its wgmma accumulators into fp32 registers and restarts them
# at 0. The build option is `promote=P` (DeepSeek-V3 §3.3.2). Two sets of accumulators per
# consumer thread: 2 × 64 = 128 fp32 registers at 128×128; at 128×256, 2 × 128 = 256, over the 255 a thread may hold.
#
# **Predict first:** promoting every 4 k-tiles divides the swamping error at K = 16384 by about 2, 5 or 30, and keeps what share of the throughput?
#
# After a restart the accumulator sums just P k-tiles. Its last place there:

# %% output answers a prediction
acc = {bn: fp8.fp8_config(bn=bn).accumulators for bn in (128, 256)}   # per consumer thread
notebook.require(acc == {128: 64, 256: 128} and fp8.fp8_config(promote=4).bn == 128, "two sets: 2 × 64, not 2 × 128")
P, KTILE = 4, 128                         # promote every P k-tiles of KTILE products
restart = P * KTILE * SMALL               # the accumulator's largest value before it restarts
place = 2.0 ** (np.floor(np.log2(restart)) - FRAC_BITS)   # its last kept place there
print(f"promote every {P}: the accumulator reaches {restart:g}, last place {place:g}:",
      "small products kept after the first interval (the one holding the 1024)" if SMALL >= place else "swamped")

# %% [markdown]
# **On the GPU.** Lines are the 13-bit model, frozen before the GPU ran; markers, the GPU. Left:
# 1024, then K − 1 small products. Right: standard-normal inputs.

# %% output answers a prediction
fig = fp8.plot_accumulation(res, record=rec)
plt.show()
swamp = fp8.swamp_errors(res)     # by (K, P), P = promotion interval (0: none): median |C − ref| / |ref|
normal = fp8.normal_errors(res)   # by (K, P): worst |C − ref| / (|A|·|B|), standard-normal inputs
speed = fp8.promote_tflops(res)   # by P: TFLOP/s, 128×128 build
k0, k = min(swamp)[0], max(swamp)[0]                                # shortest and longest K
pred = fp8.predict_swamp(ks=tuple(sorted({kk for kk, _ in swamp})))   # the 13-bit model's medians, frozen first
gap = max(abs(swamp[kk, p] / pred[p][kk] - 1) for kk, p in swamp)   # worst measured / model − 1
_ = notebook.verdict(gap < 0.05, f"The prediction is within {gap:.1%} of every measured median.",
                     f"The prediction misses a measured median by up to {gap:.0%}: the model needs revisiting.")
print(f"promotion       swamping, K = {k}   normal, K = {k0} → {k}   TFLOP/s at 8192³, 128×128 build")
for name, p in (("none", 0), ("every 4 k-tiles", 4), ("every k-tile", 1)):   # last column: over unpromoted
    print(f"{name:16}{swamp[k, p]:>11.2%}{normal[k0, p]:>16.1e} → {normal[k, p]:.1e}  ",
          notebook.ratio(speed[p], speed[0], "TFLOP/s"))
print("swamping, none / every 4:", notebook.ratio(100 * swamp[k, 0], 100 * swamp[k, 4], "%", digits=0))

# %% check, output answers a prediction
claims = fp8.accumulator_claims(res)            # notebook.how(fp8.accumulator_claims) prints its code
for sentence, ok, numbers in claims:            # bounds: named constants beside it
    notebook.require(ok, sentence, **numbers)
    print("✓", sentence)

# %% answer [markdown]
# Promoting every 4 k-tiles cuts the swamping error 28× and keeps 0.90 of the same 128×128 build's
# throughput. The cost: each promotion first waits for every wgmma in flight (`wgmma_wait_group<0>`).

# %% [markdown]
# **In the kernel** (`PROMOTE = 1`), `mma_ktile` issues one k-tile's k32 wgmmas. `promote` folds
# them into fp32 totals (shown after exercise 3).

# %% [markdown]
# **Play** (ungraded). After exercise 3, compare `promoted_sum(products[:K], P)` for P = 1, 4, 16.
#
# On a GPU: `python -m asynctc record fp8 --no-save` prints a fresh swamping table.
#
# Going further: [07b §4](07b_fp8_accumulator.ipynb) draws the places each adder keeps.

# %% [markdown]
# ## 6. Exercises
#
# Exercise 1 is the check in section 4.
#
# **2. An element's round trip** (it needs only section 2's scale). A 1×128 row segment of A has
# largest magnitude **37.5**. One of its elements is **10.0**. Quantise it to e4m3 with the
# segment's scale, s = amax / 448. Then dequantise it as q · s. What value comes back, to four
# significant figures? Hint: between 64 and 128, the e4m3 values are 64 · (1 + j/8).

# %%
answer = ...
ok = exercises.check("ch07.round_trip", answer, value=10.0, amax=37.5)

# %% [markdown]
# **3. Write the promotion.** `products` are the K exact products a·b of one element of C, 128
# per k-tile. The wgmma accumulator sums one k-tile at a time:
# `acc = fp8.tc_dot(products[t*128:(t+1)*128], acc=acc)`. Write `promoted_sum(products, interval)`:
# every `interval` k-tiles, and after the last, add `acc` into an fp32 total and restart it at 0.

# %%
def promoted_sum(products, interval):
    ...   # your code: loop over the k-tiles; return the fp32 total


ok = exercises.check("ch07.promotion", promoted_sum)

# %% [markdown]
# The kernel's `promote` (after exercise 3):

# %% output answers a prediction
ck = W.compile_ws(fp8.fp8_config(promote=1))         # the FP8 build with PROMOTE = 1
if exercises.after("ch07.promotion"):
    display(notebook.show_source(ck, start=r"promote\(acc, tot", end=r"prev = pos\.stage;", variant=True,
                                 more=(("fp8_promote.cuh", r"^__device__ __forceinline__ void promote", r"^}"),)))

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %% output varies
# FP8 halves the bytes per element, and the Tensor Core does twice the math per clock: about 2×
ok = exercises.check("ch07.fp8_speedup", "about 2×", results=res, solution=True)

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

# %% [markdown]
# ## Worklog
#
# The table names each FP8 speed quoted here; the worklog's entry is at 4096³.

# %% output answers a prediction
from asynctc.core import worklog

worklog.show("07")
print(fp8.speed_names(res))

# %% [markdown]
# The worklog's 4096³ gain over our FP16 rung is smaller than exercise 1's 8192³ gain: the 2×
# ceiling is reached only at the larger size.

# %% check
gain = {n: tf[names["our FP8 top rung"], n] / tf[names["our FP16 top rung"], n] for n in (4096, 8192)}
notebook.require(gain[4096] < gain[8192] and gain[4096] < 1.96 <= gain[8192],
                 "the 4096³ gain is smaller than the 8192³ gain", gain_4096=gain[4096], gain_8192=gain[8192])

# %% [markdown]
# **Your GEMM so far**: the fp16 tile on the CPU ([06e](06e_your_gemm_on_the_cpu.ipynb)), and
# whether your promotion (exercise 3) passed.

# %% output varies
from asynctc.models.gemm_so_far import so_far

so_far("07")

# %% [markdown]
# **What you learned:** FP8 is a format plus a scale; its accumulator keeps 13 fraction bits;
# promotion buys precision back for throughput. **Next:** [chapter 08](08_pitfalls.ipynb), asynchronous pitfalls.
