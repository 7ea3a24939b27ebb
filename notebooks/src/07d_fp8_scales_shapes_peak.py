# %% [markdown]
# # 07d — Deep dive: block scales, other shapes, and the percent of peak
#
# ← back to the core lesson [07_fp8_precision](07_fp8_precision.ipynb)
#
# **Assumes** chapter 07: the formats, a scale (x ≈ q · s, s = amax / 448), `promote=P`, the fp8 record.
#
# **What it adds:**
# - §1 FP8 wgmma's operand rules and the ways around them
# - §2 per-tensor against per-block scales, element by element
# - §3 how the kernel applies per-block scales, from its source and SASS
# - §4 what per-block scales cost
# - §5 the FP8 kernel on non-square and thin-M shapes, beside cuBLASLt
# - §6 the [seed article](../docs/glossary.md#seed-article)'s 4096³ table beside our rungs, under two peaks

# %% output varies
import re

import numpy as np

from asynctc.core import bench, notebook, records
from asynctc import fp8
from asynctc import warp_specialization as W

notebook.banner("sm_90a")
rec = records.load("fp8")
res = rec.results
table = res["table"]


def row_of(size, kernel):
    return next(r for r in table if r["size"] == size and r["kernel"] == kernel)


# %% [markdown]
# ## 1. Two rules of FP8 wgmma that chapter 06's kernel did not meet
#
# * **B must be K-major.** The transpose immediates `imm-trans-a` / `imm-trans-b` of
#   `wgmma.mma_async` exist only in its `.f16` / `.bf16` forms (PTX ISA §9.7.15.5.2): for `.e4m3` /
#   `.e5m2` both shared-memory operands must be K-major, so B is stored N×K (chapter 06 could take
#   B as K×N, MN-major, in 16 bits). The usual ways around it when B comes K×N: a **transpose
#   pass** (a separate kernel that writes Bᵀ once — worth it when B is reused, as weights are), an
#   **in-kernel transpose** of each stage in shared memory before its wgmmas, or swapping the roles
#   (Cᵀ = Bᵀ·Aᵀ) and feeding the MN-major operand as **A from registers** (`wgmma` with a register
#   A fragment, which the warpgroup may build in any order) while the other stays K-major in shared
#   memory. This course's FP8 kernel takes B stored N×K and refuses MN-major B in Python.
# * **Mixed operands.** wgmma itself accepts A and B of different FP8 types (`.e4m3.e5m2`, e.g.
#   activations × gradients in a backward pass). Our kernel takes B's type from its own define
#   (`DT_B`, `fp8_config(..., b_dtype=...)`): both mixed orders build and were checked against
#   float64 element by element (record `fp8_swizzle`); none was timed. What the Python side still
#   refuses, it names:

# %%
for a_dt, b_dt in (("e4m3", "e4m3"), ("e4m3", "e5m2")):
    try:
        print(f"A {a_dt}, B {b_dt}: builds as {fp8.operand_dtype(a_dt, b_dt)}")
    except W.WarpSpecializationError as refused:
        print(f"A {a_dt}, B {b_dt}: refused — {refused}")

# %% [markdown]
# ## 2. Scales: per tensor or per block, element by element
#
# (Moved here from chapter 07 §2.) An A with rows of very different magnitudes (e^±4) and one
# outlier of 9000, with one scale and with one per 1×`BLOCK` segment.
#
# **Predict, then change `BLOCK` to 512 (one scale per row) and rerun:** what happens to the
# outlier's neighbours? Then try 32, and add a second outlier (`a[3, 40] = -9000.0`).
# <details><summary>Answer</summary>At 512 they flush to 0 (worst error 1). At 32 the worst error
# falls fivefold.</details>

# %%
BLOCK = 128                               # elements of a row per scale: divides 512
rng = np.random.default_rng(7)
a = (rng.standard_normal((256, 512)) * np.exp(rng.uniform(-4, 4, (256, 1)))).astype(np.float32)
a[3, 200] = 9000.0
print(fp8.block_error_table(a, BLOCK))

# %% [markdown]
# That table counts only the elements that became zero. Here: the relative error of every
# element, and the subnormals — the values below e4m3's smallest normal 2^-6, where the step no
# longer shrinks with the value.

# %%
q_tensor, s_tensor = fp8.quantize(a)
q_block, s_block = fp8.quantize_a(a)
print(f"per tensor: one scale {float(s_tensor):.4g}; per block: {s_block.shape} scales "
      f"(M × K/128), from {s_block.min():.3g} to {s_block.max():.3g}")
e4m3 = fp8.FORMATS["float8_e4m3fn"]
quant = {}
for what, q, d in (("per tensor", q_tensor, fp8.dequantize(q_tensor, s_tensor)),
                   ("per 1x128 block", q_block, fp8.dequantize(q_block, s_block, fp8.A_BLOCK))):
    rel = np.abs(d - a) / np.abs(a)
    mag = np.abs(q.astype(np.float64))
    quant[what] = dict(median=np.median(rel), q99=np.quantile(rel, 0.99), zero=np.count_nonzero(d == 0),
                       sub=np.count_nonzero((mag > 0) & (mag < e4m3.min_normal)))
    print(f"{what:16s}: relative error median {quant[what]['median']:.3f}, 99th percentile "
          f"{quant[what]['q99']:.3f}; elements that became 0: {quant[what]['zero']}, subnormal: "
          f"{quant[what]['sub']}, of {a.size}")
t, b = quant["per tensor"], quant["per 1x128 block"]
half_step = 2.0 ** -(e4m3.frac_bits + 1)
_ = notebook.claim(b["zero"] < t["zero"] and b["sub"] < t["sub"] and b["median"] < t["median"]
                   and b["q99"] <= half_step,
                   f"With one scale the outlier sets it, and the small rows fall into the subnormals "
                   f"({t['sub']} elements, where the step no longer shrinks with the value) or to zero "
                   f"({t['zero']}: their information is gone). Per block, every 128 values get their own "
                   f"range: {b['zero']} elements become 0, {b['sub']} subnormal, and 99 % of them stay "
                   f"within {b['q99']:.3f} — under e4m3's worst case for a normal value, half a step: "
                   f"2^-{e4m3.frac_bits + 1} = {half_step:.2%}. The medians move less ({t['median']:.3f} "
                   f"per tensor, {b['median']:.3f} per block): what a per-tensor scale loses is "
                   "concentrated in the elements it flushes or makes subnormal.", **quant)

# %% [markdown]
# ## 3. Per-block scales inside the GEMM
#
# C = Σₖ sa[r, k/128] · sb[c/128, k/128] · A[r, k] · B[c, k]: the scales change every 128 elements
# of K. The kernel's k-tile is one 128-byte swizzle row: **128 fp8 elements — exactly one block
# along K**. So the scales can be applied where the Tensor Core's sums of one k-tile are *promoted*
# into fp32 registers (**promotion**, the core lesson's section 5). With `promote=1`, each consumer
# thread multiplies its k-tile's wgmma accumulators by sa · sb and adds them into its fp32 totals
# with one `fma`. The scales never enter the Tensor Core's own sum.
#
# Which scales does a thread need? The wgmma accumulator fragment (PTX ISA, *wgmma.mma_async*,
# register fragments of D): in an m64 atom, warp w of the warpgroup owns rows 16w … 16w + 15, and
# lane l owns rows 16w + l/4 and 16w + l/4 + 8, across all N columns. So per k-tile a thread
# loads **two** A scales per atom and **one** B scale (a tile of ≤ 128 columns lies inside one
# 128-column block of B). It loads them at the top of the k-tile, before waiting for the stage, so
# the global loads overlap the wait and the wgmmas (`BLOCK_SCALES`, in the kernel's FP8 header
# `kernels/fp8_promote.cuh`):

# %%
notebook.show_source("fp8_promote.cuh", start=r"^// This k-tile's scale products",
                     end=r"^}$")

# %% [markdown]
# and at the promotion:

# %%
notebook.show_source("fp8_promote.cuh", start=r"// promotion into fp32 registers",
                     end=r"^\s+acc\[i\]\[j\] = 0\.f;")

# %% [markdown]
# Compiled, the promotion's 64 `FADD`s per thread (a 128×128 tile, two consumers) become 64
# `FFMA`s, and three more global loads appear (two rows of A, one block of B):

# %% output varies
blk = fp8.block_timed_config()
counts = {}
for cfg in (blk.replace(block_scales=False), blk):
    text = W.compile_ws(cfg).sass()
    counts[cfg.block_scales] = {op: len(re.findall(rf"\b{op}\b", text)) for op in ("FADD", "FFMA")}
    counts[cfg.block_scales]["LDG"] = len(re.findall(r"\bLDG\.E", text))
    print(f"{cfg.label():100s} {counts[cfg.block_scales]}")
assert counts[True]["FFMA"] - counts[False]["FFMA"] == blk.accumulators
assert counts[True]["LDG"] - counts[False]["LDG"] == 1 + 2 * blk.atoms

# %% [markdown]
# The rules are checked in Python before anything reaches the GPU, each refusal naming the rule:

# %%
for knobs in (dict(bn=128, promote=4), dict(bn=256, promote=1), dict(dtype="float16", bn=128)):
    try:
        W.WSConfig(**{"dtype": "float8_e4m3fn", "block_scales": True, **knobs})
    except W.WarpSpecializationError as refused:
        print(f"{knobs}: {refused}")
qa_demo, sa_demo, qb_demo, sb_demo, _, _ = fp8.block_scaled_operands(256, 384, 512, rng=rng)
for bad in ((sa_demo.astype(np.float64), sb_demo), (sa_demo, sb_demo[:2].copy())):
    try:
        W.check_operands(qa_demo, qb_demo, blk, block_scales=bad)
    except W.WarpSpecializationError as refused:
        print(f"block_scales: {refused}")

# %% [markdown]
# ## 4. What per-block scales cost
#
# Per-block scales ride on promotion every k-tile (section 3); what they add on top of it — one
# FFMA instead of an FADD per accumulator and three loads per k-tile — is timed at 8192³ against
# the same kernel with per-tensor scales, and beside cuBLASLt with block scales where the GPU
# machine's torch can run it:


# %% output varies
tile128 = fp8.fp8_config(bn=128, stages=6).label()
cost = {(s, 1): row_of(s, fp8.fp8_config(promote=1).label())["tflops"] / row_of(s, tile128)["tflops"]
        for s in fp8.SIZES}
blk_rows = [r for r in res["rows"] if r.get("block_scales")]
if not blk_rows:
    print("not measured yet: this record was made before the per-block-scale kernel "
          "(tools/gpu_ch07.py --record adds it)")
else:
    print(rec.label())
    for r in blk_rows:
        if "unavailable" in r:
            print(f"{r['size']}³ cuBLASLt with block scales: unavailable — {r['unavailable'][:160]}")
        else:
            print(f"{r['size']}³ {r.get('label', 'cuBLASLt with block scales')}: {r['tflops']:.0f} TFLOP/s")
    bc = next((r for r in table if r["kernel"] == "block scales cost (ours, promote 1)"), None)
    if bc and bc["ratio"] is not None:
        # two ratios, each at equal tile: promotion every k-tile against none (per-tensor scales),
        # and block scales against per-tensor scales (both promoting every k-tile)
        p1 = cost[(bc["size"], 1)]
        head = (f"At {bc['size']}³, promotion every k-tile alone keeps {p1:.2f} of the unpromoted "
                f"128×128 kernel's throughput; per-block scales on top of it keep {bc['ratio']:.2f} "
                f"of the per-tensor-scaled kernel promoting every k-tile (together "
                f"{p1 * bc['ratio']:.2f} of the unpromoted kernel)")
        notebook.verdict(bc["ratio"] >= 0.95,
                         f"{head}: once promotion is paid for, the scales are nearly free.",
                         f"{head}: their loads and FFMAs cost a further {1 - bc['ratio']:.0%}, "
                         + ("less than the promotion's own " if bc["ratio"] > p1 else
                            "no less than the promotion's own ")
                         + f"{1 - p1:.0%}.")
    lt_blk = next((r for r in blk_rows if r.get("kernel") == "cuBLASLt" and "unavailable" not in r), None)
    ours_blk = next((r for r in blk_rows if r.get("kernel") == "ours"), None)
    if lt_blk and ours_blk:
        ratio_blk = ours_blk["tflops"] / lt_blk["tflops"]
        head = (f"Against cuBLASLt with the same per-block scales at {ours_blk['size']}³: ours "
                f"{ours_blk['tflops']:.0f} TFLOP/s = {ratio_blk:.2f} of its {lt_blk['tflops']:.0f}"
                + (" (its time includes one extra copy of C, which favours ours)"
                   if lt_blk.get("copies_output") else ""))
        _ = notebook.verdict(ratio_blk >= 0.9, f"{head}: close to the library.",
                             f"{head}. The core lesson's ≥ 0.90 goal is for per-tensor scales; with block scales "
                             "our kernel, which promotes every k-tile (what that costs: deep dive 07b; its cause is "
                             "open), is far behind — how cuBLASLt hides its promotion is not in the record.")

# %% [markdown]
# ## 5. On the shapes a user meets
#
# Square cubes flatter a GEMM. The same run timed the FP8 kernel (e4m3 and e5m2 inputs, bf16 C) on
# chapter 06's non-square shapes — short K, thin M, long K — beside cuBLASLt's FP8 GEMM (e4m3, fast
# accumulation) on the same operands, each timed output checked on sampled rows. The schedule is the
# top rung's (persistent, TMA-store epilogue, raster groups of 16 tile rows); the tile is chosen by
# the shape (`fp8.fp8_shape_config`, chapter 06's `shape_tile` rule): 64 rows with one consumer
# warpgroup for M ≤ 64, else 128 rows with two; N tiles of 256, else 128, else 64 — the widest
# whose tiles still fill the 132 SMs' rounds (deep dive [06d](06d_limits_and_gemm.ipynb) §3); clusters of 2 only where there are tile rows to pair.
# The tile column says which one ran:

# %% output varies
ns = res.get("nonsquare") or []
if not ns:
    print("not measured yet: this record was made before the non-square step "
          "(tools/gpu_ch07.py --record adds it)")
else:
    print(rec.label())
    print(fp8.nonsquare_fp8_table(ns))
    ran = [r for r in ns if r["kernel"] == "ours" and r.get("of_cublaslt_fast") is not None]
    square = {(s, s, s) for s in fp8.SIZES}
    shaped = [r for r in ran if (r["m"], r["n"], r["k"]) not in square and r["dtype"] == "float8_e4m3fn"]
    if shaped:
        lo = min(shaped, key=lambda r: r["of_cublaslt_fast"])
        hi = max(shaped, key=lambda r: r["of_cublaslt_fast"])

        def spread(rs):
            lo_s, hi_s = (f"{f(rs, key=lambda r: r['of_cublaslt_fast'])['of_cublaslt_fast']:.2f}"
                          for f in (min, max))
            return lo_s if lo_s == hi_s else f"{lo_s}–{hi_s}"
        thin = [r for r in shaped if r["m"] <= 256]
        wide = [r for r in shaped if r["m"] > 256]
        bm, bn = lo["tile"].split("x")[:2]
        head = (f"e4m3 on the non-square shapes: {lo['of_cublaslt_fast']:.2f}–{hi['of_cublaslt_fast']:.2f} "
                f"of cuBLASLt with fast accumulation (lowest at {lo['m']}×{lo['n']}×{lo['k']}, "
                f"{bm}×{bn} tile)")
        parts = ([f"{spread(wide)} on " + ", ".join(f"{r['m']}×{r['n']}×{r['k']}" for r in wide)] if wide else []) + \
                ([f"{spread(thin)} on thin M (M = {', '.join(str(r['m']) for r in thin)}), where "
                  "there are a few tile rows only and the tile shrinks to give the SMs work"]
                 if thin else [])
        notebook.verdict(lo["of_cublaslt_fast"] >= 0.90,
                         f"{head}: at least 0.90 of cuBLASLt on every shape — " + "; ".join(parts) + ".",
                         f"{head}: below 0.90 of cuBLASLt where the tiles cannot fill "
                         f"{res.get('sm_count', 132)} SMs — the case split-K exists for (built for the "
                         "16-bit GEMM, chapter 06d; not for FP8).")

# %% [markdown]
# ## 6. The seed's 4096³ table, beside our rungs
#
# The seed article gives fractions of the Tensor Core peak at 4096³: mma.sync ~50 %, wgmma + TMA +
# warp specialization 75–80 %, tuned 85 %. It does not say of which peak; the likeliest reading is
# the datasheet's (989 TFLOP/s dense fp16 on an H100/H200 SXM, at its 1830 MHz boost clock). So
# every row below is given under **two denominators**: the datasheet peak ("of sheet"), and the peak
# at the SM clock **measured during that run** ("of clock": SMs × 4096 FLOP/clk/SM × clock for
# fp16; 8192 for fp8), which is what the kernel could have reached at the clock it actually ran —
# the clock's kind printed with each row (`bench.clock_kind`:
# "in flight" is a probe on a second stream while the kernel runs, "in-kernel" the kernel's own
# clock64). Every row but the last is fp16 (fp16 inputs, fp32 accumulation); the last is chapter 07's
# FP8 top rung (e4m3 inputs, C in bf16), against the FP8 peak.

# %% output varies
seed_rows = fp8.seed_comparison(records.load("mma_sync"), records.load("warp_specialization"), rec)
print(fp8.seed_table_text(seed_rows))
print()
for r in seed_rows:
    print(f"{r['ours']}: {r['peak_text']}")
kinds = sorted({r["clock"] for r in seed_rows})
caveat = bench.clock_caveat(" / ".join(kinds))
if caveat:
    print(caveat)

# %% output varies
cub = next((c for c in seed_rows if c["ours"].startswith("cuBLAS")), None)
for r in seed_rows:
    if r["seed"] is None:
        continue
    for key, denom in (("fraction_of_datasheet", "of the datasheet peak"),
                      ("fraction", f"of the peak at the measured ({r['clock']}) clock")):
        head = (f"{r['ours']}: {r[key]:.2f} {denom} against the seed's {r['seed_text']} for "
                f"{r['seed']}")
        if r["seed"] == "tuned" and cub:
            head += f" (cuBLAS in the same run: {cub[key]:.2f})"
        inside = r["seed_low"] - 0.005 <= r[key] <= r["seed_high"] + 0.005
        notebook.verdict(inside, f"{head} — inside it.",
                         f"{head} — {'above' if r[key] > r['seed_high'] else 'below'} it.")
seed_fp16 = [r for r in seed_rows if "FP8" not in r["ours"]]
best_sheet = max(seed_fp16, key=lambda r: r["fraction_of_datasheet"])


def seed_inside(r, key):
    return r["seed_low"] - 0.005 <= r[key] <= r["seed_high"] + 0.005


flips = [r for r in seed_rows if r["seed"] and seed_inside(r, "fraction") != seed_inside(r, "fraction_of_datasheet")]
_ = notebook.claim(all(r["fraction_of_datasheet"] < r["fraction"] for r in seed_rows)
                   and best_sheet["fraction_of_datasheet"] < 0.85,
                   f"Every row is a smaller fraction of the datasheet peak than of the peak at its measured "
                   f"clock (the GPU ran below the datasheet's 1830 MHz). The denominator changes "
                   f"{len(flips)} verdict{'s' if len(flips) != 1 else ''}"
                   + (": " + "; ".join(f"{r['ours']} is inside the seed's {r['seed_text']} at the measured "
                                       f"clock, {'above' if r['fraction_of_datasheet'] > r['seed_high'] else 'below'} "
                                       "it under the datasheet" for r in flips) if flips else "")
                   + f". Under the datasheet nothing here reaches the seed's 85 % — the best fp16 row, "
                   f"{best_sheet['ours']}, is {best_sheet['fraction_of_datasheet']:.2f}.",
                   best=best_sheet["fraction_of_datasheet"], flips=[r["ours"] for r in flips],
                   rows={r["ours"]: [round(r["fraction_of_datasheet"], 3), round(r["fraction"], 3)]
                         for r in seed_rows})

