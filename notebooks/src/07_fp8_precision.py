# %% [markdown]
# # 07 — FP8: two formats, a scale, and an accumulator that keeps 13 fraction bits
#
# **Learning goal.** Run chapter 06's warp-specialized GEMM on 8-bit floats and account for the
# bits they lose. By the end you can
#
# 1. quantise a number to [e4m3](../docs/glossary.md#e4m3) by hand and compute a block's scale;
# 2. check an FP8 GEMM against float64 and read its speed beside FP16 and
#    [cuBLASLt](../docs/glossary.md#cublaslt);
# 3. say where Hopper's FP8 Tensor Core loses precision as it sums, and how often to *promote*.
#
# FP8 halves the bytes per element again; FP8 wgmma (`m64nNk32`) does double FP16's multiply-adds
# per instruction. Stages, boxes and descriptors keep chapter 06's byte sizes.
#
# **Deep dives:** [07b — the accumulator taken apart](07b_fp8_accumulator.ipynb);
# [07c — swizzle, TMA boxes and wgmma](07c_swizzle_and_row_boxes.ipynb);
# [07d — block scales, other shapes, the percent of peak](07d_fp8_scales_shapes_peak.ipynb).

# %% output varies
import numpy as np
import matplotlib.pyplot as plt
import ml_dtypes

from asynctc.core import exercises, notebook, records, runtime
from asynctc import fp8, swizzle as SW
from asynctc import warp_specialization as W

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
# * **e5m2** (`float8_e5m2`): 5 and 2 bits; 4 values per power of two. For gradients, whose range
#   matters more than their resolution.
#
# **Quantising** x: divide by the scale, **saturate** (clip to ± the largest value), round to the
# nearest value (ties to even). Saturation matters: e4m3 has no infinity, so a plain cast turns
# −500 into NaN. Below: each format's positive values, and four values quantised.

# %% output varies
fig, ax = plt.subplots(figsize=(12, 2), dpi=80, layout="constrained")
for y, f in enumerate(fp8.FORMATS.values()):
    v = np.unique(np.arange(256, dtype=np.uint8).view(f.dtype).astype(np.float64))
    v = v[np.isfinite(v) & (v > 0)]
    assert f.max == v.max() == float(ml_dtypes.finfo(f.dtype).max)
    print(f"{f.ptx}: {v.size} positive finite values, up to {f.max:g}; {f.frac_bits} fraction bits")
    ax.plot(v, np.full(v.size, y), "|", markersize=14)
ax.set(xscale="log", yticks=[0, 1], yticklabels=[f.ptx for f in fp8.FORMATS.values()])
plt.show()
x = np.array([13.5, 0.1, -500.0, 1e-4])
print("fp8.quantize, e4m3", fp8.quantize(x, "e4m3", scale=1.0)[0].astype(np.float64))
print("plain cast, e4m3  ", x.astype(ml_dtypes.float8_e4m3fn).astype(np.float64))
print("fp8.quantize, e5m2", fp8.quantize(x, "e5m2", scale=1.0)[0].astype(np.float64))

# %% [markdown]
# One new rule: FP8 wgmma reads **both** shared-memory operands K-major (PTX ISA §9.7.15.5.2), so
# B is stored N×K. The kernel refuses an MN-major B (ways around it: deep dive 07d).
#
# ## 2. Scales
#
# A tensor's [dequantisation scale](../docs/glossary.md#dequantisation-scale) s (x ≈ q · s) maps its
# largest magnitude, its *amax*, onto the format's largest value: s = amax / 448 for e4m3
# (`fp8.amax_scale`). One scale per tensor is simplest. Large models keep
# one per **1×128** row segment of A and one per **128×128** block of B (DeepSeek-V3 §3.3), so an
# outlier coarsens only its own block. The test: rows differing in magnitude by up to e^±4, one
# outlier of 9000.

# %%
rng = np.random.default_rng(7)
a = (rng.standard_normal((256, 512)) * np.exp(rng.uniform(-4, 4, (256, 1)))).astype(np.float32)
a[3, 200] = 9000.0
q_t, s_t = fp8.quantize(a)           # one scale for the tensor
q_b, s_b = fp8.quantize_a(a)         # one scale per 1×128 block
zero = {"per tensor": np.count_nonzero(fp8.dequantize(q_t, s_t) == 0),
        "per block": np.count_nonzero(fp8.dequantize(q_b, s_b, fp8.A_BLOCK) == 0)}
_ = notebook.claim(zero["per block"] < zero["per tensor"],
                   f"Elements that become 0, of {a.size}: {zero['per tensor']} with one scale (the "
                   f"outlier sets it), {zero['per block']} with a scale per block.", **zero)

# %% [markdown]
# ## 3. The FP8 GEMM, checked against float64
#
# The kernel is chapter 06's top rung with `DT` = e4m3 or e5m2. Each variant runs on fresh random
# inputs into a NaN-poisoned output. C is compared element by element with float64 of
# the *dequantised* inputs (q · s), within a bound from the format and the accumulator
# (`fp8.accumulation_bound`). On an sm_90 GPU two also run live.

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
# One GPU run timed cuBLASLt's FP8 GEMM (`torch._scaled_mm`: e4m3, per-tensor scales, bf16 C, with
# [fast accumulation](../docs/glossary.md#fast-accumulation), section 5), our FP8 top rung, and
# chapter 06's two FP16 kernels; medians, every timed output checked on sampled rows. FP8's dense
# peak is 8192 FLOP/clk/SM, FP16's 4096: 2× is a **ceiling**. The seed article
# ([chapter 10](10_claims.ipynb) says what it is) says "1.5–2×".

# %% output varies
top, top16 = fp8.fp8_config().label(), W.TOP_RUNG.make("float16").label()


def row(size, kernel):
    return next(r for r in res["table"] if r["size"] == size and r["kernel"] == kernel)


print(rec.label(), "\nTFLOP/s at", " and ".join(f"{s}³" for s in fp8.SIZES))
for name, kernel in (("cuBLASLt FP8, fast accumulation", "cuBLASLt fp8 fast_accum=True"),
                     ("our FP8 top rung", top), ("cuBLAS FP16", "cuBLAS fp16"), ("our FP16 top rung", top16)):
    print(f"  {name:32s}" + "".join(f"{row(s, kernel)['tflops']:6.0f}" for s in fp8.SIZES))
big = max(fp8.SIZES)
of_lt = row(big, top)["of_cublaslt_fast"]
notebook.verdict(of_lt >= fp8.GOAL,
                 f"At {big}³ ours is {of_lt:.2f} of cuBLASLt (fast): goal ≥ {fp8.GOAL:.2f} met.",
                 f"At {big}³ ours is {of_lt:.2f} of cuBLASLt (fast): goal ≥ {fp8.GOAL:.2f} NOT met.")
r = {(w, s): row(s, f"FP8/FP16 {w}")["ratio"] for w in ("ours", "cuBLAS") for s in fp8.SIZES}
said = "; ".join(f"{w} {v:.2f}× at {s}³" for (w, s), v in r.items())
_ = notebook.verdict(all(1.5 <= v <= 2.0 for v in r.values()), f"FP8/FP16: {said} — inside 1.5–2×.",
                     f"FP8/FP16: {said} — not all inside 1.5–2×.")

# %% [markdown]
# ## 5. The accumulator: swamping, and promotion
#
# Hopper's FP8 wgmma does not add in full fp32 (DeepSeek-AI: it "retains around 14 bits"). Our model
# (`fp8.tc_dot`, after Fasi, Higham, Mikaitis and Pranesh): per group of 32 products (one k32
# wgmma), the running sum and the products are aligned to their largest exponent and **truncated**
# to f fraction bits below it.
#
# * [Swamping](../docs/glossary.md#swamping): a product 2^(f+1) times smaller than the sum vanishes.
# * **Promotion**, the fix (DeepSeek-V3 §3.3.2): every P k-tiles (`promote=P`; a k-tile is 128 FP8
#   elements of K) the consumer adds its wgmma accumulators into fp32 registers of its own and
#   restarts them. It needs a 128×128 tile and a wait for its own wgmmas (cost: deep dive 07b).
#
# **13 or 14 bits?** The two count different things. f counts the *fraction* bits kept below the
# leading bit: f = 13 is what deep dive 07b fits bit for bit, from the runs with promotion every 4
# k-tiles at K ≥ 1024 (07b §1) and the identification runs of the `fp8_fit` record (07b §2);
# DeepSeek's "around 14 bits" also counts the leading bit (13 + 1).
#
# **The experiment.** Each element of C sums one product of 1024 (32 · 32), then K − 1 small ones
# (below 2^-4), all lost against 2^10 with f = 13. Lines: the model, written before the first GPU
# run (`fp8.ACC_PREDICTION`); markers: the GPU.

# %% output varies
assert fp8.prediction_table(fp8.predict_swamp()) == fp8.ACC_PREDICTION     # the model, as written then
fig = fp8.plot_accumulation(res, record=rec)
plt.show()
rows = res["experiment"]["rows"]
pred = fp8.predict_swamp(ks=tuple(sorted({r["k"] for r in rows})))
worst = max(abs(r["swamp_median_rel_err"] / pred[r["promote"]][r["k"]] - 1) for r in rows)
notebook.verdict(worst < 0.05, f"The prediction is within {worst:.1%} of every measured median.",
                 f"The prediction misses a measured median by up to {worst:.0%}: the model needs revisiting.")
err = {(r["k"], r["promote"]): r["swamp_median_rel_err"] for r in rows}
kmax = max(r["k"] for r in rows)
notebook.claim(err[(kmax, 0)] > 10 * err[(kmax, 4)] and err[(kmax, 4)] > err[(kmax, 1)]
               and fp8.identified_bits(rows)["consistent"] == [fp8.FRAC_BITS],
               f"At K = {kmax}: no promotion loses {err[(kmax, 0)]:.0%} of the sum, promotion every 4 "
               f"k-tiles {err[(kmax, 4)]:.1%}, every k-tile {err[(kmax, 1)]:.2%}. Fitted bit for bit, f = "
               f"{fp8.FRAC_BITS} is the one count every exact run agrees on.",
               p0=err[(kmax, 0)], p4=err[(kmax, 4)])
tile128 = row(big, fp8.fp8_config(bn=128, stages=6).label())["tflops"]
kept = {p: row(big, fp8.fp8_config(promote=p).label())["tflops"] / tile128 for p in (1, 4)}
_ = notebook.claim(kept[1] < kept[4] < 1.0,
                   f"At {big}³, promotion every k-tile keeps {kept[1]:.2f} of the throughput, every 4 "
                   f"k-tiles {kept[4]:.2f}, of the same 128×128 kernel without it.",
                   **{f"p{p}": v for p, v in kept.items()})

# %% [markdown]
# ## 6. Swizzle: the seed's "10–20 %"
#
# The seed article says the right shared-memory swizzle is worth 10–20 %. The `swizzle` suite
# built chapter 06's rung 5 (fp16) with 128-, 64-, 32-byte and no swizzle, checked and timed each.
#
# The bank model reads the same number of bank rows in every layout, and wgmma alone runs at full
# rate on each (deep dive 07c; how wgmma reads shared memory is not documented). But a narrow
# layout makes TMA write more, shorter rows. So the suite also ran wgmma alone on stages loaded once
# (`WSConfig.tma_once`, a diagnostic, not a GEMM): full rate there means the loss is TMA's.

# %% output varies
srec = records.load("swizzle")
tab = [r for r in SW.swizzle_table(srec.results) if r["row_boxes"] == 1]
of = {sw: max(r["of_128"] for r in tab if r["swizzle"] == sw) for sw in (64, 32, 0)}
print(srec.label())
gain = 1 / of[64] - 1
_ = notebook.verdict(0.10 <= gain <= 0.20, f"128-byte over 64-byte swizzle: {gain:.0%}, inside 10–20 %.",
                     f"128-byte over 64-byte swizzle: {gain:.0%}, not 10–20 %; over 32-byte "
                     f"{1 / of[32] - 1:.0%}, over none {1 / of[0] - 1:.0%}.")

# %% [markdown]
# So the modes are not evenly spaced: at every size 64-byte keeps at least 0.9 of 128-byte's rate,
# 32-byte and none at most 0.6 (the assert below). This lesson can say where the loss sits, not why: the cell
# below runs wgmma without TMA in the loop, and deep dive 07c takes TMA's part apart (rows per box,
# bytes per row).

# %% output varies
assert min(r["of_128"] for r in tab if r["swizzle"] == 64) >= 0.9 and max(of[32], of[0]) <= 0.6, of
once = SW.tma_once_outcome(srec.results)
kept_once = min(r["of_128"] for r in SW.tma_once_rows(srec.results) if r["swizzle"] in (32, 0))
_ = notebook.verdict(once["outcome"] == "tma",
                     f"Without TMA, 32-byte and no swizzle keep at least {kept_once:.2f} of 128-byte: "
                     "the loss is TMA's (which part of its work: deep dive 07c).",
                     f"Without TMA the outcome is '{once['outcome']}', not TMA's alone (deep dive 07c).")

# %% [markdown]
# ## 7. Exercises
#
# Wrong answers get a hint that names the mistake.
#
# **1. Quantise by hand.** What does **300** become in e4m3 (scale 1)? (Between 256 and 512 the
# e4m3 values are 256 · (1 + j/8).)

# %%
answer = ...
ok = exercises.check("ch07.quantize", answer, value=300.0)

# %% [markdown]
# **2. An element's round trip.** A 1×128 row segment of A has largest magnitude **37.5**; one of
# its elements is **10.0**. Quantise it to e4m3 with the segment's scale (section 2), then
# dequantise (q · s). What value comes back? Four significant figures are enough. (Between 64 and
# 128 the e4m3 values are 64 · (1 + j/8).)

# %%
answer = ...
ok = exercises.check("ch07.round_trip", answer, value=10.0, amax=37.5)

# %% [markdown]
# **3. How often to promote.** Per the model (13 fraction bits), on the swamping input at
# **K = 4096**, what is the largest number of k-tiles between promotions that keeps the median
# relative error below **1 %**? (`fp8.predict_swamp(ks=(4096,), promotes=(…))` computes the model's
# errors.)

# %%
answer = ...
ok = exercises.check("ch07.promote_interval", answer, k=4096, target=1e-2)

# %% [markdown]
# **What you learned:** FP8 is a format plus a scale; its accumulator keeps 13 fraction bits;
# promotion buys precision back for some throughput. **Next:** [chapter 08](08_pitfalls.ipynb), asynchronous pitfalls.

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
exercises.check("ch07.quantize", 288.0, value=300.0, solution=True)   # 256·(1 + 1/8): 12 away, 320 is 20
s = 37.5 / 448                                                        # the segment's scale
exercises.check("ch07.round_trip", 120 * s, value=10.0, amax=37.5, solution=True)   # 10/s ≈ 119.5: 120
errors = fp8.predict_swamp(ks=(4096,), promotes=tuple(range(1, 33)))
longest = max(p for p in errors if all(errors[q][4096] < 1e-2 for q in range(1, p + 1)))
ok = exercises.check("ch07.promote_interval", longest, k=4096, target=1e-2, solution=True)
