# %% [markdown]
# # 07 — FP8: two formats, a scale, and an accumulator that keeps 13 bits
#
# **Learning goal.** Run chapter 06's warp-specialized GEMM on 8-bit floating-point inputs and
# account for the bits. You will be able to
#
# 1. quantise a number to e4m3 by hand and compute the scale of a block;
# 2. check an FP8 GEMM against float64 and read its speed beside FP16 and cuBLASLt;
# 3. say where Hopper's FP8 Tensor Core loses precision as it sums, and how often to *promote*.
#
# FP8 halves the bytes per element again, and wgmma (`m64nNk32`, `.e4m3` / `.e5m2`) does double
# the multiply-adds per instruction; chapter 06's stages, boxes and descriptors stay the same bytes.
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
# sm_90's wgmma takes two FP8 formats (PTX ISA §5.2.5; the OCP FP8 specification): **e4m3**
# (`float8_e4m3fn`: 4 exponent bits, 3 fraction bits, no infinities) for weights and activations,
# **e5m2** (`float8_e5m2`: 5 exponent, 2 fraction bits) for gradients,
# whose range matters more than their resolution. Between two powers of two each has the same
# number of values (8 for e4m3, 4 for e5m2): the gap between neighbours grows with the magnitude.
#
# **Quantising** a value: divide by the scale, **saturate** (clip) to ±max, round to the nearest
# value of the grid (ties to even). Saturation matters: a plain cast turns −500 into NaN in e4m3,
# which has no infinity. Below: all 256 bit patterns of each format (`ml_dtypes`), then x quantised.

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
# One new rule: for FP8 wgmma **both shared-memory operands are K-major** (PTX ISA §9.7.15.5.2),
# so B is stored N×K; the kernel refuses an MN-major B (ways around it: deep dive 07d).
#
# ## 2. Scales
#
# A **dequantisation scale** s maps a tensor's largest magnitude (its *amax*) onto the format's
# largest value: x ≈ q · s with s = amax / 448 (`fp8.amax_scale`, as in `torch._scaled_mm`). One
# scale per tensor is the simplest; large models use one per **1×128** row segment of A and one per
# **128×128** block of B (DeepSeek-V3 §3.3), so an outlier coarsens only its own block. An A whose
# rows differ in magnitude by e^±4, with one outlier of 9000:

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
# The kernel is chapter 06's top rung with its `DT` define set to e4m3 or e5m2. Every variant runs
# on fresh random inputs, output poisoned with NaN, and is compared element by element with
# **float64 of the dequantised inputs**, within a bound derived from the format and the
# accumulator (`fp8.accumulation_bound`). Live, two variants run now.

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
# ## 4. Speed: against cuBLASLt, and against FP16
#
# One GPU run timed cuBLASLt's FP8 GEMM (`torch._scaled_mm`, e4m3, per-tensor scales, bf16 C)
# with **fast accumulation** (the Tensor Core's own sum, never promoted), our FP8 top rung, cuBLAS
# FP16 and our FP16 top rung; medians, every timed output checked on sampled rows. FP8's dense peak
# is 8192 FLOP/clk/SM against FP16's 4096: 2× is a **ceiling** (the seed article says "1.5–2×").

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
# Hopper's FP8 wgmma does not add in full fp32 (DeepSeek-AI: it "retains around 14 bits"). Our
# model (`fp8.tc_dot`, after Fasi, Higham, Mikaitis and Pranesh): per group of 32 products (one k32
# wgmma) the running sum and the products are aligned to the largest exponent among them and
# **truncated** to f fraction bits below it. A product 2^(f+1) times smaller than the sum vanishes:
# **swamping**. The fix (DeepSeek-V3 §3.3.2) is **promotion**: every P k-tiles (`promote=P`; a
# k-tile is 128 fp8 elements) the consumer adds its wgmma accumulators into a second set of fp32
# registers and restarts them. That forces a 128×128 tile and a wait for its own wgmmas (its cost:
# deep dive 07b). The experiment: each element of C sums one product of 1024 (32 · 32), then K − 1
# small ones (below 2^-4), all lost against 2^10 with 13 bits. Lines: the model, written down before the
# first GPU run (`fp8.ACC_PREDICTION`); markers: the GPU.

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
# The seed article also says the right shared-memory swizzle is worth 10–20 %. The `swizzle`
# suite built chapter 06's rung 5 (fp16) with 128-, 64- and 32-byte swizzle and none, checked each
# against float64 and timed it. The bank model reads the same number of bank rows in every layout,
# and wgmma alone runs at full rate on each (deep dive 07c, with Nsight Compute's counters; how
# wgmma fetches shared memory is not documented). A narrow
# layout does make TMA write more, shorter rows; so the suite also ran wgmma alone on stages loaded
# once (`WSConfig.tma_once`, a diagnostic, not a GEMM). Full rate there means the loss is TMA's.

# %% output varies
srec = records.load("swizzle")
tab = [r for r in SW.swizzle_table(srec.results) if r["row_boxes"] == 1]
of = {sw: max(r["of_128"] for r in tab if r["swizzle"] == sw) for sw in (64, 32, 0)}
print(srec.label())
gain = 1 / of[64] - 1
_ = notebook.verdict(0.10 <= gain <= 0.20, f"128-byte over 64-byte swizzle: {gain:.0%}, inside 10–20 %.",
                     f"128-byte over 64-byte swizzle: {gain:.0%}, not 10–20 %; over 32-byte "
                     f"{1 / of[32] - 1:.0%}, over none {1 / of[0] - 1:.0%}.")
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
# **2. The scale of a block.** A 1×128 row segment of A has largest magnitude **37.5**. What is its
# e4m3 dequantisation scale s (x ≈ q · s)? Three significant figures are enough.

# %%
answer = ...
ok = exercises.check("ch07.block_scale", answer, amax=37.5)

# %% [markdown]
# **3. How often to promote.** Per the model (13 fraction bits), on the swamping input at
# **K = 4096**, what is the largest number of k-tiles between promotions that keeps the median
# relative error below **1 %**? (`fp8.predict_swamp(ks=(4096,), promotes=(…))` computes the model's
# errors.)

# %%
answer = ...
ok = exercises.check("ch07.promote_interval", answer, k=4096, target=1e-2)

# %% [markdown]
# <details><summary>Solutions</summary>The cells below are the worked solutions (try the exercises first).</details>

# %%
exercises.check("ch07.quantize", 288.0, value=300.0, solution=True)   # 256·(1 + 1/8): 12 away, 320 is 20
exercises.check("ch07.block_scale", 37.5 / 448, amax=37.5, solution=True)
errors = fp8.predict_swamp(ks=(4096,), promotes=tuple(range(1, 33)))
longest = max(p for p in errors if all(errors[q][4096] < 1e-2 for q in range(1, p + 1)))
ok = exercises.check("ch07.promote_interval", longest, k=4096, target=1e-2, solution=True)
