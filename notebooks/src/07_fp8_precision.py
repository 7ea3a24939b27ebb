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
# **Deep dives:** [07b — the accumulator](07b_fp8_accumulator.ipynb);
# [07c — swizzle and TMA boxes](07c_swizzle_and_row_boxes.ipynb);
# [07d — block scales, shapes, peak](07d_fp8_scales_shapes_peak.ipynb).

# %% output varies
import numpy as np
import matplotlib.pyplot as plt
import ml_dtypes

from asynctc.core import exercises, notebook, records, runtime
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
# accumulator's 13 fraction bits (section 5) instead of fp32's. Live, two run now.

# %% output varies
if runtime.runs_live("sm_90a"):
    for chk in (fp8.verify_fp8(fp8.fp8_config(), 512, 768, 1024),
                fp8.verify_block_scaled(fp8.block_timed_config(), 512, 768, 1024)):
        print(f"live: {chk.dtype}: worst |C−ref|/bound {chk.max_err:.3f}, passed {chk.passed}")
        assert chk.passed
print(rec.label())
assert all(c["passed"] for c in res["checks"])
print(f"{len(res['checks'])} checks passed (e4m3 and e5m2; with and without promotion and block "
      f"scales), worst |C−ref|/bound {max(c['max_err'] for c in res['checks']):.3f}")

# %% [markdown]
# ## 4. Speed: against cuBLASLt and against FP16
#
# One GPU run timed cuBLASLt's FP8 GEMM (`torch._scaled_mm`, e4m3,
# [fast accumulation](../docs/glossary.md#fast-accumulation), section 5), cuBLAS FP16 and our top
# rung in both. FP8's dense peak is 8192 FLOP/clk/SM, twice FP16's 4096, so 2× is a
# **ceiling**. The [seed article](../docs/glossary.md#seed-article) says "1.5–2×".

# %% output varies
print(rec.label())
print(fp8.speed_table(res))
big = max(r["size"] for r in res["table"])
ours = fp8.table_row(res, big, fp8.fp8_config().label())["tflops"]
lt = fp8.table_row(res, big, "cuBLASLt fp8 fast_accum=True")["tflops"]
said = f"{big}³: ours / cuBLASLt = {ours:.0f} / {lt:.0f} = {ours / lt:.2f}; goal ≥ {fp8.GOAL:.2f}"
notebook.verdict(ours / lt >= fp8.GOAL, f"{said} met.", f"{said} NOT met.")
ours16, cub16 = (fp8.table_row(res, big, k)["tflops"] for k in (W.TOP_RUNG.make("float16").label(), "cuBLAS fp16"))
said = f"FP8 / FP16 at {big}³: ours {ours / ours16:.2f}×, cuBLAS {lt / cub16:.2f}×"
_ = notebook.verdict(all(1.5 <= x <= 2 for x in (ours / ours16, lt / cub16)), f"{said}, inside the seed's 1.5–2×.",
                     f"{said}, not both inside the seed's 1.5–2×.")

# %% [markdown]
# ## 5. The accumulator: swamping, and promotion
#
# Hopper's FP8 wgmma does not add in full fp32. DeepSeek-AI found it "retains around 14 bits". Our
# model, `fp8.tc_dot` (after Fasi et al.), works one k32 wgmma at a time. It lines up the running
# sum and the 32 products on the largest exponent among them. Then it **truncates** each one to f
# fraction bits: it keeps f bits below that exponent's leading 1 and drops the rest. Deep dive 07b
# fits f = 13. DeepSeek's 14 is the same width with the leading 1 counted.
#
# * [Swamping](../docs/glossary.md#swamping): a product 2^(f+1) times smaller than the sum vanishes.
# * **Promotion** is the fix (DeepSeek-V3 §3.3.2). Every P k-tiles (`promote=P`; a k-tile is 128
#   elements of K), the consumer adds its accumulators into fp32 registers of its own and restarts
#   them. Two sets fit a 128×128 tile (2 × 64 registers per thread), not the top rung's 128×256
#   (2 × 128, over a consumer thread's 232), so promotion costs a tile size too.
#
# **The experiment.** Left: each element of C sums one product of 1024, then K − 1 small ones
# (below 2^-4), all lost against 2^10 at f = 13. Lines are the model, frozen before the first GPU
# run; markers are the GPU. Right: standard-normal inputs, the worst error over Σ|a·b|. With
# promotion each truncation comes from a short sum, so the curve falls; without, it stays level.

# %% output varies
assert fp8.prediction_table(fp8.predict_swamp()) == fp8.ACC_PREDICTION     # the model, as written then
fig = fp8.plot_accumulation(res, record=rec)
plt.show()
rows = res["experiment"]["rows"]
pred = fp8.predict_swamp(ks=tuple(sorted({r["k"] for r in rows})))
miss = max(abs(r["swamp_median_rel_err"] / pred[r["promote"]][r["k"]] - 1) for r in rows)
notebook.verdict(miss < 0.05, f"The prediction is within {miss:.1%} of every measured median.",
                 f"The prediction misses a measured median by up to {miss:.0%}: the model needs revisiting.")
ok, table, numbers = fp8.accumulator_table(res, verdict=False)
notebook.claim(ok, table, **numbers)
b = {"promoted": fp8.fp8_config(promote=4), "plain": fp8.fp8_config(bn=128, stages=6), "top": fp8.fp8_config()}
tf = {name: fp8.table_row(res, big, c.label())["tflops"] for name, c in b.items()}     # at the largest size
same = b["promoted"].bn == b["plain"].bn == 128 < b["top"].bn
_ = notebook.claim(same and tf["promoted"] < tf["plain"] <= tf["top"],
                   f"At {big}³, promotion every 4 k-tiles keeps {tf['promoted'] / tf['plain']:.2f} of the same "
                   f"128×128 build's TFLOP/s and {tf['promoted'] / tf['top']:.2f} of the 128×256 top rung's.", **tf)

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
