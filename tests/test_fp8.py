"""Chapter 07's FP8 groundwork: formats and quantisation against ml_dtypes and float64, the
accumulation model and its frozen prediction, the elementwise bound (it holds for the model and
fails a wrong k-step), the FP8 configs' rules, every FP8 variant compiled to sm_90a with QGMMA
SASS, and (GPU) every variant against float64."""
import re
import warnings

import ml_dtypes
import numpy as np
import pytest

from asynctc import fp8
from asynctc import warp_specialization as W
from asynctc.core import runtime

FMTS = list(fp8.FORMATS)


def _grid(name):
    """Every finite value of the format, sorted (from its 256 bit patterns)."""
    v = np.arange(256, dtype=np.uint8).view(getattr(ml_dtypes, name)).astype(np.float64)
    return np.unique(v[np.isfinite(v)])


def _rne_reference(x, name):
    """Round float64 ``x`` to the nearest value of the grid, ties to the even significand —
    written from the grid, independently of ml_dtypes' cast."""
    g = _grid(name)
    i = np.clip(np.searchsorted(g, x), 1, len(g) - 1)
    lo, hi = g[i - 1], g[i]
    dl, dh = x - lo, hi - x
    bits_lo = np.array(lo, dtype=np.float64).astype(getattr(ml_dtypes, name)).view(np.uint8)
    even_lo = (bits_lo & 1) == 0
    return np.where(dl < dh, lo, np.where(dh < dl, hi, np.where(even_lo, lo, hi)))


# ---- formats --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", FMTS)
def test_format_limits_match_ml_dtypes(name):
    f, fi = fp8.FORMATS[name], ml_dtypes.finfo(getattr(ml_dtypes, name))
    assert f.max == float(fi.max) and f.min_normal == float(fi.smallest_normal)
    assert f.min_subnormal == float(fi.smallest_subnormal) and f.frac_bits == fi.nmant
    # e4m3fn: the top exponent code (15) is finite, only S.1111.111 is NaN: 1.75 · 2^(15 - 7);
    # e5m2: the top code (31) is inf/NaN, so the largest is 1.75 · 2^(30 - 15)
    top = 2 ** f.exp_bits - 1 - (0 if name == "float8_e4m3fn" else 1)
    assert f.max == 1.75 * 2.0 ** (top - f.bias)
    assert f.min_normal == 2.0 ** (1 - f.bias) and f.min_subnormal == 2.0 ** (1 - f.bias - f.frac_bits)
    assert {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0}[name] == f.max
    assert fp8.fp8_format(name.split("_")[1][:4]).name == name


def test_unknown_format_is_refused():
    with pytest.raises(fp8.FP8Error, match=r"^dtype='float16': an FP8 format"):
        fp8.fp8_format("float16")


# ---- quantisation ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", FMTS)
@pytest.mark.parametrize("src", ["float16", "bfloat16", "float32"])
def test_quantize_with_unit_scale_is_the_ml_dtypes_cast(name, src, rng):
    fmt = fp8.FORMATS[name]
    x = (rng.standard_normal(4096) * fmt.max / 8).astype(np.float32)
    x = x.astype(ml_dtypes.bfloat16 if src == "bfloat16" else src)
    q, s = fp8.quantize(x, name, scale=1.0)
    assert s == 1.0 and q.dtype == fmt.dtype
    want = x.astype(np.float32).astype(fmt.dtype)
    np.testing.assert_array_equal(q.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("name", FMTS)
def test_quantize_rounds_to_nearest_even_on_the_grid(name, rng):
    fmt = fp8.FORMATS[name]
    x = rng.uniform(-fmt.max, fmt.max, 20000)
    g = _grid(name)
    mids = (g[1:] + g[:-1]) / 2                     # exact ties, both directions
    x = np.concatenate([x, mids, rng.uniform(-4 * fmt.min_normal, 4 * fmt.min_normal, 2000)])
    q, _ = fp8.quantize(x, name, scale=1.0)
    np.testing.assert_array_equal(q.astype(np.float64), _rne_reference(x, name))


@pytest.mark.parametrize("name", FMTS)
def test_quantize_saturates_instead_of_nan_or_inf(name):
    fmt = fp8.FORMATS[name]
    x = np.array([fmt.max * 1.04, fmt.max * 3, -fmt.max * 1e3, 1e30], np.float64)
    assert not np.all(np.isfinite(x.astype(fmt.dtype).astype(np.float64)))   # the bare cast
    q, _ = fp8.quantize(x, name, scale=1.0)
    np.testing.assert_array_equal(q.astype(np.float64), [fmt.max, fmt.max, -fmt.max, fmt.max])


@pytest.mark.parametrize("name", FMTS)
@pytest.mark.parametrize("pow2", [False, True])
def test_tensor_scale_maps_amax_into_range(name, pow2, rng):
    fmt = fp8.FORMATS[name]
    x = (rng.standard_normal((64, 256)) * 37.0).astype(np.float32)
    q, s = fp8.quantize(x, name, pow2=pow2)
    amax = float(np.max(np.abs(x)))
    assert amax / float(s) <= fmt.max
    if pow2:
        assert float(s) == 2.0 ** np.round(np.log2(float(s)))
        assert amax / float(s) > fmt.max / 2               # the smallest power of two that fits
    else:
        assert np.max(np.abs(q.astype(np.float64))) == fmt.max   # amax lands on the maximum
    # dequantised error: half an ulp of the format relative to |x| in the normal range
    d = fp8.dequantize(q, s)
    y = np.abs(x.astype(np.float64)) / float(s)
    normal = y >= fmt.min_normal
    rel = np.abs(d - x)[normal] / np.abs(x)[normal]
    assert rel.max() <= 2.0 ** -(fmt.frac_bits + 1) * (1 + 1e-12)
    assert np.all(np.abs(d - x)[~normal] <= fmt.min_subnormal / 2 * float(s) * (1 + 1e-12))


def test_block_scales_a_1x128_and_b_128x128_against_float64(rng):
    a = (rng.standard_normal((256, 512)) * np.exp(rng.uniform(-4, 4, (256, 1)))).astype(np.float16)
    a[3, 200] = 9000.0                                           # one outlier in one block
    qa, sa = fp8.quantize_a(a)
    assert sa.shape == (256, 4) and sa.dtype == np.float32
    amax = np.abs(a.astype(np.float64)).reshape(256, 4, 128).max(axis=2)
    np.testing.assert_allclose(sa, (amax / 448.0).astype(np.float32), rtol=2 ** -23)
    assert sa[3, 1] > 10 * np.median(sa[3])                      # only its own block is coarse
    d = fp8.dequantize(qa, sa, fp8.A_BLOCK)
    s_full = fp8.expand_scales(sa, fp8.A_BLOCK, a.shape)
    normal = np.abs(a.astype(np.float64)) / s_full >= 2.0 ** -6
    rel = np.abs(d - a.astype(np.float64))[normal] / np.abs(a.astype(np.float64))[normal]
    assert rel.max() <= 2.0 ** -4 * (1 + 1e-12)
    b = rng.standard_normal((384, 256)).astype(ml_dtypes.bfloat16)   # N×K
    qb, sb = fp8.quantize_b(b, pow2=True)
    assert sb.shape == (3, 2)
    assert np.all(np.log2(sb) == np.round(np.log2(sb)))
    blocks = np.abs(b.astype(np.float64)).reshape(3, 128, 2, 128).max(axis=(1, 3))
    assert np.all(blocks / sb <= 448.0) and np.all(blocks / sb > 224.0)


def test_quantize_refuses_bad_input():
    with pytest.raises(fp8.FP8Error, match=r"^x=.*finite"):
        fp8.quantize(np.array([1.0, np.nan]))
    with pytest.raises(fp8.FP8Error, match=r"^x.dtype='int32'"):
        fp8.quantize(np.arange(4, dtype=np.int32))
    with pytest.raises(fp8.FP8Error, match=r"^block=\(0, 128\)"):
        fp8.quantize(np.ones((2, 128)), block=(0, 128))
    with pytest.raises(fp8.FP8Error, match=r"^scales.shape=\(1, 1\)"):
        fp8.quantize(np.ones((2, 256)), block=(1, 128), scale=np.ones((1, 1)))
    with pytest.raises(fp8.FP8Error, match=r"^scale=0.0"):
        fp8.quantize(np.ones(4), scale=0.0)
    with pytest.raises(fp8.FP8Error, match=r"^amax=-1.0"):
        fp8.amax_scale(-1.0)
    assert fp8.amax_scale(0.0) == 1.0


# ---- the accumulation model -----------------------------------------------------------------------

def test_model_with_many_bits_is_the_exact_sum(rng):
    qa, qb = fp8.random_fp8((4, 512), rng=rng), fp8.random_fp8((6, 512), rng=rng)
    exact = qa.astype(np.float64) @ qb.astype(np.float64).T
    c = fp8.model_gemm(qa, qb, frac_bits=52)
    np.testing.assert_allclose(c, exact, rtol=2.0 ** -22, atol=0)
    c13 = fp8.model_gemm(qa, qb, frac_bits=13)
    assert np.any(c13 != c)                                   # 13 bits do lose something


def test_swamping_loses_the_small_products_and_promotion_restores_them(rng):
    k = 4096
    qa, qb = fp8.swamp_operands(2, 3, k, rng)
    small = (qa.astype(np.float64)[:, 1:] @ qb.astype(np.float64)[:, 1:].T)
    c0 = fp8.model_gemm(qa, qb, 13)
    np.testing.assert_array_equal(c0, 1024.0)                 # every small product vanished
    c1 = fp8.model_gemm(qa, qb, 13, promote=1)
    lost1 = 1024.0 + small - c1
    first = qa.astype(np.float64)[:, 1:128] @ qb.astype(np.float64)[:, 1:128].T
    assert np.all(lost1 <= first * (1 + 1e-6)) and np.all(lost1 >= 0)   # only k-tile 0's
    e = [np.median(fp8.relative_errors(fp8.model_gemm(qa, qb, 13, promote=p), qa, qb))
         for p in (0, 4, 1)]
    assert e[0] > e[1] > e[2]


def test_frozen_prediction_is_what_the_model_says():
    assert fp8.prediction_table(fp8.predict_swamp()) == fp8.ACC_PREDICTION


def test_fit_recovers_the_bits_of_a_modelled_output(rng):
    qa, qb = fp8.swamp_operands(2, 4, 1024, rng)
    qa[:, 1:] = fp8.random_fp8((2, 1023), rng=rng)               # mixed signs: every bit shows
    for bits in (11, 13, 16):
        fit = fp8.fit_frac_bits(fp8.model_gemm(qa, qb, bits), qa, qb, bits=range(8, 24))
        assert fit["frac_bits"] == bits and fit["residual"] == 0.0


# ---- the bound ------------------------------------------------------------------------------------

@pytest.mark.parametrize("promote", [0, 1, 4])
def test_bound_holds_for_the_model_and_fails_a_missing_k_step(promote, rng):
    qa, qb = fp8.random_fp8((8, 1024), rng=rng), fp8.random_fp8((16, 1024), rng=rng)
    c = fp8.model_gemm(qa, qb, 13, promote=promote).astype(np.float32)
    assert fp8.check_fp8_gemm(c, qa, qb, promote=promote).passed
    for lo, hi in ((64, 96), (384, 512)):                     # one k32 step, one k-tile missing
        q2 = qa.copy()
        q2[:, lo:hi] = 0
        bad = fp8.model_gemm(q2, qb, 13, promote=promote).astype(np.float32)
        r = fp8.check_fp8_gemm(bad, qa, qb, promote=promote)
        assert not r.passed and r.n_bad > 0
    one = c.copy()                  # one element taken from the row above (where that differs most)
    i, j = np.unravel_index(np.argmax(np.abs(c[1:] - c[:-1])), (7, 16))
    one[i + 1, j] = c[i, j]
    r = fp8.check_fp8_gemm(one, qa, qb, promote=promote)
    assert not r.passed and r.worst == (i + 1, j) and r.n_bad == 1
    hole = c.copy()
    hole[2, 3] = np.nan
    assert fp8.check_fp8_gemm(hole, qa, qb, promote=promote).unwritten == 1


def test_bound_covers_scales_and_bf16_output(rng):
    qa, qb = fp8.random_fp8((8, 512), rng=rng), fp8.random_fp8((16, 512), rng=rng)
    sa, sb = np.float32(1.37), np.float32(0.125)
    c = (fp8.model_gemm(qa, qb, 13) * np.float32(sa * sb)).astype(np.float32)
    assert fp8.check_fp8_gemm(c.astype(ml_dtypes.bfloat16), qa, qb, sa, sb, "bfloat16").passed
    # a scale applied twice (or forgotten) fails; the bound is a worst case (~K · 40 · 2^-13 of
    # the partial sums), so it does not catch a 1 % error of every element
    assert not fp8.check_fp8_gemm(c * sa, qa, qb, sa, sb, "float32").passed
    assert not fp8.check_fp8_gemm(c / sb, qa, qb, sa, sb, "float32").passed


# ---- per-block scales (BLOCK_SCALES) ---------------------------------------------------------------

def _swap_cols(x, i, j):
    y = x.copy()
    y[:, [i, j]] = y[:, [j, i]]
    return y


def _swap_rows(x, i, j):
    y = x.copy()
    y[[i, j]] = y[[j, i]]
    return y


@pytest.mark.parametrize("out_dtype", ["float32", "bfloat16"])
def test_block_model_is_within_the_bound_and_a_misplaced_scale_fails(out_dtype, rng):
    qa, sa, qb, sb, a, b = fp8.block_scaled_operands(8, 384, 512, rng=rng)
    assert sa.shape == (8, 4) and sb.shape == (3, 4) and sa.dtype == sb.dtype == np.float32
    c = fp8.model_gemm_block(qa, qb, sa, sb)
    # the reference is float64 of the dequantised inputs; it is close to the unquantised A·Bᵀ
    ref = fp8.dequantize(qa, sa, fp8.A_BLOCK) @ fp8.dequantize(qb, sb, fp8.B_BLOCK).T
    exact = a.astype(np.float64) @ b.astype(np.float64).T
    assert np.max(np.abs(ref - exact) / (np.abs(a) @ np.abs(b).T)) < 2.0 ** -3
    out = c.astype(ml_dtypes.bfloat16) if out_dtype == "bfloat16" else c
    assert fp8.check_fp8_block(out, qa, qb, sa, sb, out_dtype).passed
    # the kernel's possible indexing mistakes: another k-tile's, row's or n-block's scale, the
    # B scale forgotten, the scale applied per tensor (its mean) instead of per block
    wrong = {"k-tile": (_swap_cols(sa, 0, 1), sb), "row": (_swap_rows(sa, 2, 5), sb),
             "n-block": (sa, _swap_rows(sb, 0, 2)),
             "no sb": (sa, np.ones_like(sb)),
             "per tensor": (np.full_like(sa, sa.mean()), np.full_like(sb, sb.mean()))}
    for what, (sa2, sb2) in wrong.items():
        bad = fp8.model_gemm_block(qa, qb, sa2, sb2)
        r = fp8.check_fp8_block(bad, qa, qb, sa, sb, out_dtype)
        assert not r.passed and r.n_bad > 0, what
    one = c.copy()                                       # one element from the row above
    i, j = np.unravel_index(np.argmax(np.abs(c[1:] - c[:-1])), (7, 384))
    one[i + 1, j] = c[i, j]
    r = fp8.check_fp8_block(one, qa, qb, sa, sb)
    assert not r.passed and r.worst == (i + 1, j) and r.n_bad == 1
    hole = c.copy()
    hole[4, 300] = np.nan
    assert fp8.check_fp8_block(hole, qa, qb, sa, sb).unwritten == 1


def test_block_model_with_unit_scales_is_promote_1(rng):
    qa, qb = fp8.random_fp8((4, 512), rng=rng), fp8.random_fp8((130, 512), rng=rng)
    ones_a, ones_b = np.ones((4, 4), np.float32), np.ones((2, 4), np.float32)
    np.testing.assert_array_equal(fp8.model_gemm_block(qa, qb, ones_a, ones_b),
                                  fp8.model_gemm(qa, qb, 13, promote=1))
    # and the block bound is no looser there than the promote-1 bound by more than its fma terms
    bb = fp8.block_scaled_bound(qa, qb, ones_a, ones_b)
    pb = fp8.accumulation_bound(qa, qb, 13, promote=1)
    assert np.all(bb <= pb * (1 + 1e-3))


def test_block_helpers_refuse_bad_scales(rng):
    qa, sa, qb, sb, _, _ = fp8.block_scaled_operands(4, 128, 256, rng=rng)
    with pytest.raises(fp8.FP8Error, match=r"^sa.dtype='float64': per-block scales are float32"):
        fp8.check_fp8_block(np.zeros((4, 128)), qa, qb, sa.astype(np.float64), sb)
    with pytest.raises(fp8.FP8Error, match=r"^sb.shape=\(2, 2\): ceil\(N/128\) × K/128 = \(1, 2\)"):
        fp8.block_scaled_bound(qa, qb, sa, np.ones((2, 2), np.float32))
    with pytest.raises(fp8.FP8Error, match=r"^K=192: .*multiple of 128"):
        fp8.model_gemm_block(qa[:, :192], qb[:, :192], sa, sb)


@pytest.mark.parametrize("kw, field, rule", [
    (dict(dtype="float16", bn=128), "block_scales", "per-block scales are for fp8 inputs"),
    (dict(bn=128), "promote", "promote must be 1"),
    (dict(bn=128, promote=2), "promote", "promote must be 1"),
    (dict(bn=256, promote=1), "bn", "one 128-column block of B's scales"),
    (dict(bn=128, promote=1, edges=True), "edges", "multiples of the tile"),
    (dict(bn=128, promote=1, block_scales=1), "block_scales", "must be a bool"),
])
def test_block_scale_config_rules_are_named(kw, field, rule):
    kw = {"dtype": "float8_e4m3fn", "block_scales": True, **kw}
    with pytest.raises(W.WarpSpecializationError, match=rf"^{field}=.*{rule}"):
        W.WSConfig(**kw)


def test_block_scales_define_only_when_on():
    for cfg in fp8.correctness_configs():
        assert ("BLOCK_SCALES" in cfg.defines) == cfg.block_scales
        assert (" block_scales" in cfg.label()) == cfg.block_scales
    cfg = fp8.block_timed_config()
    assert cfg.defines["BLOCK_SCALES"] == 1 and cfg.defines["PROMOTE"] == 1
    assert {k: v for k, v in cfg.defines.items() if k != "BLOCK_SCALES"} == \
        cfg.replace(block_scales=False).defines


def test_block_scale_operands_are_checked_before_the_gpu(rng):
    cfg = fp8.block_timed_config()
    qa, sa, qb, sb, _, _ = fp8.block_scaled_operands(256, 384, 512, rng=rng)
    assert W.check_operands(qa, qb, cfg, block_scales=(sa, sb)) == (256, 384, 512)
    bad = [((sa.astype(np.float64), sb), r"^sa.dtype='float64': per-block scales are float32"),
           ((sa[:, :3].copy(), sb), r"^sa.shape=\(256, 3\): one scale per 1×128 row segment"),
           ((sa, sb[:2].copy()), r"^sb.shape=\(2, 4\): one scale per 128×128 block .* = \(3, 4\)"),
           ((sa.T.copy().T, sb), r"^sa='non-contiguous'"),
           ((np.zeros_like(sa), sb), r"^sa='non-positive or non-finite values'"),
           ((sa, np.full_like(sb, np.inf)), r"^sb='non-positive or non-finite values'"),
           (sa, r"^block_scales='ndarray': cfg.block_scales needs \(sa, sb\)"),
           (None, r"^block_scales='NoneType': cfg.block_scales needs \(sa, sb\)")]
    for bs, msg in bad:
        with pytest.raises(W.WarpSpecializationError, match=msg):
            W.check_operands(qa, qb, cfg, block_scales=bs)
    with pytest.raises(W.WarpSpecializationError, match=r"^scales='given': a block_scales config"):
        W.check_operands(qa, qb, cfg, scales=np.ones(2, np.float32), block_scales=(sa, sb))
    with pytest.raises(W.WarpSpecializationError, match=r"^block_scales='given': this config has"):
        W.check_operands(qa, qb, cfg.replace(block_scales=False), block_scales=(sa, sb))


@pytest.mark.parametrize("cfg", fp8.block_configs(), ids=lambda c: c.label())
def test_block_scales_load_and_fma_in_sass(cfg):
    """The scales come from global memory (LDG) and the promotion becomes one FFMA per
    accumulator, where the same config without block scales has an FADD per accumulator."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", runtime.PerformanceWarning)
        text = W.compile_ws(cfg).sass()
        plain = W.compile_ws(cfg.replace(block_scales=False)).sass()
    acc = cfg.accumulators
    ldg = len(re.findall(r"\bLDG\.E", text)) - len(re.findall(r"\bLDG\.E", plain))
    assert ldg == 1 + 2 * cfg.atoms                  # sb, and 2 rows of A per m64 atom
    assert len(re.findall(r"\bFFMA\b", text)) >= acc > len(re.findall(r"\bFFMA\b", plain))
    assert len(re.findall(r"\bFADD\b", plain)) >= acc


# ---- the FP8 configs ------------------------------------------------------------------------------

@pytest.mark.parametrize("kw, field, rule", [
    (dict(b_major="MN"), "b_major", "fp8 wgmma has no transpose"),
    (dict(bk=64), "bk", "128 float8_e4m3fn elements"),
    (dict(out_dtype="float8_e4m3fn"), "out_dtype", "'float32', 'bfloat16' or 'float16'"),
    (dict(promote=1), "promote", "2 × 128 = 256 accumulator registers"),
    (dict(promote=-1), "promote", "0 \\(none\\) or ≥ 1"),
    (dict(tma_store=True, out_dtype="float32"), "out_dtype", "tma_store writes C in a 16-bit"),
    (dict(bn=128, promote=1, consumer_regs=128, setmaxnreg=True), "consumer_regs",
     "setmaxnreg.inc must not lower"),
])
def test_fp8_config_rules_are_named(kw, field, rule):
    with pytest.raises(W.WarpSpecializationError, match=rf"^{field}=.*{rule}"):
        W.WSConfig(dtype="float8_e4m3fn", **kw)


def test_promote_is_refused_for_16_bit_inputs():
    with pytest.raises(W.WarpSpecializationError, match=r"^promote=1: promotion is for fp8"):
        W.WSConfig(dtype="float16", bn=128, promote=1)


def _ml(name):
    return np.dtype(ml_dtypes.float8_e4m3fn if "e4m3" in name else ml_dtypes.float8_e5m2)


@pytest.mark.parametrize("cfg", fp8.correctness_configs(), ids=lambda c: c.label())
def test_fp8_layout_is_the_16_bit_layout_in_bytes(cfg):
    assert cfg.a_box.dtype == _ml(cfg.dtype) and cfg.b_load_box.dtype == _ml(cfg.dtype_b)
    d = cfg.defines
    assert d["DT"] == W.INPUT_DTYPES[cfg.dtype] and d["BK"] == 128 and d["PROMOTE"] == cfg.promote
    assert d.get("DT_B") == (W.INPUT_DTYPES[cfg.b_dtype] if cfg.b_dtype else None)
    if cfg.swizzle != 128:
        # the narrower swizzles: the fp16 build of the same tile and swizzle (verified on the
        # H200 by chapter 07's swizzle suite) has the same bytes, boxes, descriptors and k-steps
        twin = W.WSConfig(dtype="float16", bm=cfg.bm, bn=cfg.bn, consumers=cfg.consumers,
                          stages=cfg.stages, persistent=cfg.persistent, swizzle=cfg.swizzle)
        assert cfg.descriptor_templates() == twin.descriptor_templates()
        assert cfg.stage_bytes == twin.stage_bytes == (cfg.bm + cfg.bn) * 128
        mine, theirs = cfg.swizzle_defines(), twin.swizzle_defines()
        assert mine.pop("K_BOX_ELEMS") == 2 * theirs.pop("K_BOX_ELEMS")     # elements, not bytes
        assert mine == theirs and mine["SWIZZLE"] == cfg.swizzle
        span = cfg.swizzle or 16                # no swizzle: one 16-byte core-matrix column
        assert cfg.a_box.inner_bytes == cfg.b_load_box.inner_bytes == span
        assert cfg.k_boxes == 128 // span and d["K_BOXES"] == 128 // span
        return
    twin = cfg.pipeline_config()
    assert cfg.descriptor_templates() == twin.descriptor_templates()
    assert cfg.stage_bytes == twin.stage_bytes == (cfg.bm + cfg.bn) * 128
    assert cfg.bk == 128 and cfg.a_box.inner_bytes == 128 and cfg.b_load_box.inner_bytes == 128
    assert d["A_KSTEP_BYTES"] == d["B_KSTEP_BYTES"] == 32


def test_16_bit_defines_are_unchanged():
    d = W.WSConfig().defines
    assert "PROMOTE" not in d and "C_DT" not in d and d["BK"] == 64


def test_operands_are_checked_before_the_gpu(rng):
    cfg = fp8.fp8_config()
    qa, qb = fp8.random_fp8((256, 256), rng=rng), fp8.random_fp8((256, 256), rng=rng)
    with pytest.raises(W.WarpSpecializationError, match=r"^a.dtype='float16'"):
        W.check_operands(qa.astype(np.float16), qb, cfg)
    with pytest.raises(W.WarpSpecializationError, match=r"^K=192: .*multiple of 128"):
        W.check_operands(np.ascontiguousarray(qa[:, :192]), np.ascontiguousarray(qb[:, :192]),
                         cfg)
    with pytest.raises(W.WarpSpecializationError, match=r"^scales=\(\(3,\)"):
        W.check_operands(qa, qb, cfg, scales=np.ones(3, np.float32))
    with pytest.raises(W.WarpSpecializationError, match=r"^scales='given'"):
        W.check_operands(np.zeros((256, 256), np.float16), np.zeros((256, 256), np.float16),
                         W.WSConfig(out_dtype="float16"), scales=np.ones(2, np.float32))
    assert W.check_operands(qa, qb, cfg, scales=np.ones(2, np.float32)) == (256, 256, 256)


# ---- the tile chosen by the shape (CPU) ------------------------------------------------------------

SQUARE = ((4096, 4096, 4096), (8192, 8192, 8192))


@pytest.mark.parametrize("dt", W.FP8_DTYPES)
def test_shape_config_is_the_top_rung_where_128x256_fills_the_waves(dt):
    for shp in SQUARE + tuple(s for s in W.NONSQUARE_SHAPES if s[0] >= 1024):
        assert fp8.fp8_shape_config(*shp, dt, sm_count=132) == fp8.fp8_config(dt), shp


@pytest.mark.parametrize("dt", W.FP8_DTYPES)
@pytest.mark.parametrize("m, tile, cluster, ctas", [
    (64, "64x64x128/c1", 1, 128), (128, "128x64x128/c2", 1, 128),
    (256, "128x128x128/c2", 2, 128)])
def test_shape_config_runs_thin_m_on_most_sms(dt, m, tile, cluster, ctas):
    c = fp8.fp8_shape_config(m, 8192, 8192, dt, sm_count=132)
    assert (c.tile_name, c.cluster) == (tile, cluster)
    assert c.persistent and c.tma_store and c.out_dtype == "bfloat16" and c.b_major == "K"
    assert not c.edges and not c.promote and c.bk == 128
    assert c.setmaxnreg == (c.consumers == 2)
    W.check_shapes(m, 8192, 8192, c)
    assert W.grid_size(c, m, 8192, sm_count=132) == ctas      # was 64 (M=256) or not run
    assert c.stages == max(s for s in W.STAGE_RANGE if _fits(c, s))
    assert c in fp8.correctness_configs()
    assert any(s[0] == m for s in fp8.shapes_for(c))          # checked on a thin problem


def _fits(cfg, stages):
    try:
        cfg.replace(stages=stages).validate(227 * 1024)
        return True
    except W.WarpSpecializationError:
        return False


def test_shape_config_pairs_only_an_even_number_of_tile_rows(monkeypatch):
    from asynctc.gemm import config as _GC
    monkeypatch.setattr(_GC, "DECISIONS", {c: {} for c in _GC.SHAPE_CLASSES})   # the rule alone
    c = fp8.fp8_shape_config(640, 8192, 1024, sm_count=132)      # 5 rows × 64 columns of 128
    assert (c.bm, c.bn, c.cluster) == (128, 128, 1)
    from asynctc import gemm as G
    assert G.matmul_config(640, 8192, 1024, "float16", "NxK", sm_count=132).cluster == 2  # EDGES
    assert fp8.fp8_shape_config(768, 8192, 1024, sm_count=132).cluster == 2


@pytest.mark.parametrize("args, match", [
    ((32, 8192, 8192), r"^M=32: tile 64x64x128/c1 needs M to be a positive multiple of 64"),
    ((96, 8192, 8192), r"^M=96: tile 128x64x128/c2 needs M to be a positive multiple of 128"),
    ((4096, 4000, 4096), r"^N=4000: tile 128x256x128/c2 needs N to be a positive multiple of 256"),
    ((4096, 4096, 200), r"^K=200: .* multiple of 128"),
    ((0, 8192, 8192), r"^M=0: must be an integer"),
    ((64, 8192, 8192, "float16"), r"^dtype='float16': fp8_shape_config is for the FP8 builds"),
])
def test_shape_config_refuses_what_the_exact_build_cannot_do(args, match):
    with pytest.raises(W.WarpSpecializationError, match=match):
        fp8.fp8_shape_config(*args, sm_count=132)


# ---- compile + SASS (CPU) -------------------------------------------------------------------------

@pytest.mark.parametrize("cfg", fp8.correctness_configs(), ids=lambda c: c.label())
def test_fp8_variant_compiles_to_qgmma(cfg):
    runtime._memo.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", runtime.PerformanceWarning)
        ck = W.compile_ws(cfg)
    text = ck.sass()
    ta, tb = ("E4M3" if "e4m3" in d else "E5M2" for d in (cfg.dtype, cfg.dtype_b))
    shapes = re.findall(r"QGMMA\.64x(\d+)x32\.F32\.(E4M3|E5M2)\.(E4M3|E5M2)\b", text)
    assert set(shapes) == {(str(cfg.bn), ta, tb)}           # A's type, then B's
    assert len(shapes) == 4 * cfg.atoms                     # one k-tile: 4 k32 steps × atoms
    assert "HGMMA" not in text
    assert ck.resources.spill_stores == 0 and ck.resources.spill_loads == 0
    assert not W.sass_registers(ck, cfg)["dropped"]
    assert bool(re.findall(r"USETMAXREG", text)) == cfg.setmaxnreg
    waits = set(re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x[0-9a-f]+)", text))
    assert waits == {"0x1", "0x0"}


# ---- GPU -----------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("cfg", fp8.correctness_configs(), ids=lambda c: c.label())
def test_fp8_variant_matches_float64(cfg, rng):
    for shp in fp8.shapes_for(cfg):
        c = fp8.verify_fp8(cfg, *shp, rng=rng)
        assert c.passed, c.as_dict()


@pytest.mark.gpu
@pytest.mark.parametrize("a,b", fp8.MIXED_PAIRS)
@pytest.mark.parametrize("shape", [(256, 512, 384), (512, 768, 1024)])
def test_mixed_fp8_matches_float64_and_reads_b_in_its_own_format(a, b, shape, rng):
    """Both mixed orders on fresh random inputs (poisoned C, every element within the bound of
    |A|·|B|): C = A·Bᵀ with B read as ``b``; read as A's format instead, the same output fails."""
    m, n, k = shape
    cfg = W.WSConfig(dtype=a, b_dtype=b, bm=128, bn=256, consumers=2, stages=4)
    qa, qb = fp8.random_fp8((m, k), a, rng), fp8.random_fp8((n, k), b, rng)
    g = W.run_ws(qa, qb, cfg)
    out = g.out.to_host()
    ok = fp8.check_fp8_gemm(out, qa, qb, label=cfg.label())
    assert ok.passed, ok.as_dict()
    wrong = fp8.check_fp8_gemm(out, qa, qb.view(np.uint8).view(_ml(a)), label="B as A's format")
    assert not wrong.passed
    top = fp8.fp8_config(a, b_dtype=b)
    for shp in fp8.shapes_for(top):
        c = fp8.verify_fp8(top, *shp, rng=rng)
        assert c.passed, c.as_dict()


# ---- a CPU dry run of the "fp8" suite -----------------------------------------------------------

class _FakeTiming:
    median_ms = 1.0

    def as_dict(self):
        return {"median_ms": 1.0, "sm_mhz": 1700.0}


def _emulate(ck, grid, block, *args, shmem_bytes=0, stream=None, cluster=None):
    """gemm_warp_specialized as documented: C = scale_a · scale_b · A · Bᵀ (B stored N×K) in
    float64, then the output dtype (the FP8 products are exact; the model's truncation is not
    emulated: the bound must hold for an exact sum too)."""
    assert ck.name == "gemm_warp_specialized" and ck.defines["B_MAJOR"] == 0
    blocks = ck.defines.get("BLOCK_SCALES", 0)
    assert len(args) == 12 + 2 * blocks
    ta, tb, tc, out, m, n, k, da, db, err, trace, scales = args[:12]
    # A's and B's tensor maps have boxes of their own dtype, and the build's wgmma types (DT for
    # A, DT_B for B, default DT) are the operands' formats
    code = {np.dtype(ml_dtypes.float8_e4m3fn): 2, np.dtype(ml_dtypes.float8_e5m2): 3,
            np.dtype(np.float16): 0, np.dtype(ml_dtypes.bfloat16): 1}
    assert ta[1].dtype == np.dtype(ta[0].dtype) and tb[1].dtype == np.dtype(tb[0].dtype)
    assert ck.defines["DT"] == code[np.dtype(ta[0].dtype)]
    assert ck.defines.get("DT_B", ck.defines["DT"]) == code[np.dtype(tb[0].dtype)]
    a, b = ta[0].h.astype(np.float64), tb[0].h.astype(np.float64)
    assert (int(m), int(n), int(k)) == (a.shape[0], b.shape[0], a.shape[1])
    if blocks:       # per-block scales: sa[r, kt] · sb[c / 128, kt] per k-tile of 128
        assert isinstance(scales, np.integer)            # no per-tensor scales beside them
        sa, sb = args[12].h, args[13].h
        c = sum(np.outer(sa[:, t], np.repeat(sb[:, t], 128)[:b.shape[0]]) *
                (a[:, 128 * t:128 * t + 128] @ b[:, 128 * t:128 * t + 128].T)
                for t in range(a.shape[1] // 128))
    else:
        c = a @ b.T
    if not isinstance(scales, np.integer):
        c *= float(scales.h[0]) * float(scales.h[1])
    out.h[...] = c.astype(np.float32).astype(out.dtype)


def _fake_gpu(monkeypatch):
    """Patch compile, launch and device memory so the suite's host code runs here: launches go to
    :func:`_emulate`, timings are a fixed 1 ms, no baseline library."""
    from fakes import FakeArray
    from asynctc import tma
    from asynctc.core import bench, memory, records

    class FakeKernel:
        def __init__(self, source, name, arch="sm_90a", defines=None, extra_options=None):
            self.name, self.defines = name, dict(defines or {})
            self.resources = runtime.Resources(registers=168)

        def sass(self):
            return "USETMAXREG.DEALLOC 0x28\nUSETMAXREG.TRY_ALLOC P0, 0xe8"
    monkeypatch.setattr(runtime, "compile_kernel", FakeKernel)
    monkeypatch.setattr(runtime, "precompile", lambda jobs: None)
    monkeypatch.setattr(runtime, "launch", _emulate)
    monkeypatch.setattr(runtime, "check_launch", lambda *a, **k: None)
    monkeypatch.setattr(runtime, "device_info", lambda: None)
    monkeypatch.setattr(W.launch, "DeviceArray", FakeArray)      # WSGemm's buffers
    monkeypatch.setattr(memory, "DeviceArray", FakeArray)
    monkeypatch.setattr(tma, "tensor_map_for_tile", lambda arr, tile, **k: ((arr, tile), None))
    monkeypatch.setattr(bench, "time_gpu", lambda fn, **k: (fn(), _FakeTiming())[1])
    monkeypatch.setattr(bench, "baseline_library", lambda: None)
    monkeypatch.setattr(records, "nvidia_smi_clocks", lambda: {})


def test_fp8_suite_dry_run(monkeypatch):
    from asynctc.core import records
    _fake_gpu(monkeypatch)
    # set where they are read: the experiment's K in fp8/suite.py, the check shapes in launch.py
    monkeypatch.setattr(fp8.suite, "EXPERIMENT_K", (256, 512))
    monkeypatch.setattr(fp8.launch, "CHECK_SHAPES", ((256, 256, 256),))
    monkeypatch.setattr(fp8.launch, "PERSISTENT_SHAPE", (512, 512, 384))
    monkeypatch.setattr(fp8.launch, "THIN_CHECK_SHAPES", ((64, 512, 256), (128, 512, 256),
                                                          (256, 512, 256)))
    res = fp8.measure_fp8(sizes=(512,), reps=2,
                          nonsquare=((512, 512, 256), (128, 512, 512), (64, 512, 512)))
    assert len(res["checks"]) >= len(fp8.correctness_configs())
    assert all(c["passed"] for c in res["checks"])
    exp = res["experiment"]["rows"]
    assert {(r["k"], r["promote"]) for r in exp} == {(k, p) for k in (256, 512)
                                                     for p in fp8.EXPERIMENT_PROMOTE}
    # an exact sum is what a model with many bits gives: the fit says so
    assert all(r["fit_frac_bits"] >= 20 for r in exp)
    assert res["frac_bits_bound"] == fp8.FRAC_BITS
    kinds = {(r["kernel"], r["dtype"]) for r in res["rows"]}
    assert ("ours", "float8_e4m3fn") in kinds and ("ours", "float16") in kinds
    assert {c["config"] for c in res["checks"]} >= {c.label() for c in fp8.block_configs()}
    thin = {(c["config"], c["shape"][0]) for c in res["checks"]}
    for c in fp8.shape_configs():          # each thin tile checked on a problem of its thin M
        assert (c.label(), 64 if c.bm == 64 else 128 if c.cluster == 1 else 256) in thin
    blk = [r for r in res["rows"] if r.get("block_scales")]
    assert [r["label"] for r in blk] == [fp8.block_timed_config().label()]   # once, at 512³
    assert any(r["kernel"] == "block scales cost (ours, promote 1)" and r["ratio"] == 1.0
               for r in res["table"])
    assert all(r["check_rows"]["passed"] for r in res["rows"])
    # the non-square step: e4m3 and e5m2 on every shape, thin M on the tile the shape picks
    ns = res["nonsquare"]
    ran = {(r["m"], r["n"], r["k"], r["dtype"]): r for r in ns if r["kernel"] == "ours"
           and not r.get("skipped")}
    assert set(ran) == {(m, 512, k, d) for m, k in ((512, 256), (128, 512), (64, 512))
                        for d in W.FP8_DTYPES}
    assert not [r for r in ns if r.get("skipped")]
    for (m, n, k, d), r in ran.items():
        cfg = fp8.fp8_shape_config(m, n, k, d, sm_count=132)
        assert r["label"] == cfg.label() and r["tile"] == cfg.tile_name
    assert ran[(64, 512, 512, "float8_e4m3fn")]["tile"] == "64x64x128/c1"
    assert ran[(128, 512, 512, "float8_e4m3fn")]["tile"] == "128x64x128/c2"
    assert all(r["check_rows"]["passed"] for r in ns if "check_rows" in r)
    text = fp8.summarize_fp8(records.Record("fp8", {"gpu": "fake"}, res))
    assert "FP8 checks passed" in text and "prediction" in text and "FP8/FP16 ours" in text
    assert "512×512×256" in text and "64×512×512" in text and "not run" not in text
    import json
    json.dumps(res)                                   # the record is JSON-able


def test_fp8_swizzle_suite_dry_run(monkeypatch):
    """The "fp8_swizzle" suite (tools/gpu_ch07.py --swizzle) end to end on the CPU: the mixed
    builds and every swizzle checked first, e4m3 timed under 128/64/32/0 B beside the fp16 top
    rung, rows chapter 10 reads (each swizzle against the 128-byte row of the same run)."""
    from asynctc.core import records
    from asynctc.claims import seed as S
    _fake_gpu(monkeypatch)
    monkeypatch.setattr(fp8.launch, "CHECK_SHAPES", ((256, 256, 256),))
    monkeypatch.setattr(fp8.launch, "PERSISTENT_SHAPE", (512, 512, 384))
    res = fp8.measure_fp8_swizzle(sizes=(512,), reps=2)
    want = {c.label() for c in fp8.mixed_configs()} | {fp8.swizzle_config(s).label()
                                                       for s in fp8.FP8_SWIZZLES}
    assert {c["config"] for c in res["checks"]} == want and all(c["passed"] for c in res["checks"])
    assert {(c["config"], tuple(c["shape"])) for c in res["checks"]} >= {
        (c.label(), (512, 512, 384)) for c in fp8.mixed_configs() if c.persistent}
    fp8_rows = [r for r in res["rows"] if "float8" in r["dtype"]]
    assert sorted(r["swizzle"] for r in fp8_rows) == sorted(fp8.FP8_SWIZZLES)
    assert all(r["check_rows"]["passed"] and r["cluster"] == 1 and not r["tma_store"]
               for r in fp8_rows)
    assert [r["dtype"] for r in res["rows"] if r not in fp8_rows] == ["float16"]
    assert [(t["swizzle"], t["of_128"], t["of_fp16"]) for t in res["table"]] == \
        [(s, 1.0, 1.0) for s in (128, 64, 32, 0)]
    assert [t["predicted"] for t in res["table"]] == [None, True, False, False]  # 1.0 vs bands
    text = fp8.summarize_fp8_swizzle(records.Record("fp8_swizzle", {"gpu": "fake"}, res))
    assert "none" in text and "64 B" in text and "OUTSIDE" in text and "prediction" in text
    rec = records.Record("fp8_swizzle", {"gpu": "fake"}, res)
    assert S._fp8_swizzle_ratios({"fp8_swizzle": rec}) == {
        512: ("fp8_swizzle", {64: 1.0, 32: 1.0, 0: 1.0})}
    import json
    json.dumps(res)


def test_swizzle_configs_are_the_fp8_top_rung_without_clusters():
    base = fp8.fp8_config(cluster=1, tma_store=False)
    assert fp8.swizzle_config(128) == base and base in fp8.timed_configs()
    for s, c in zip((64, 32, 0), fp8.swizzle_configs()):
        assert c == base.replace(swizzle=s) and c in fp8.timed_configs()
        assert c in fp8.correctness_configs() and c.defines["SWIZZLE"] == s
    with pytest.raises(W.WarpSpecializationError, match=r"^swizzle=16: 0 \(none\), 32, 64 or 128"):
        fp8.swizzle_config(16)
    with pytest.raises(W.WarpSpecializationError, match=r"^swizzle=64: .*cluster=1 only"):
        fp8.fp8_config(swizzle=64)                   # the top rung's clusters of 2: refused


def test_nonsquare_times_cublaslt_on_every_shape_and_skips_ours_by_rule(monkeypatch, rng):
    _fake_gpu(monkeypatch)
    timed = []

    def fake_scaled_mm(da, db, dc, sa, sb, fast, stream=None):
        def run():
            c = da.h.astype(np.float64) @ db.h.astype(np.float64).T * float(sa) * float(sb)
            dc.h[...] = c.astype(np.float32).astype(dc.dtype)
            timed.append(da.shape[0])
        run.copies = False
        return run
    monkeypatch.setattr(fp8.suite, "scaled_mm", fake_scaled_mm)     # measure_fp8_nonsquare's
    rows = fp8.measure_fp8_nonsquare(((32, 512, 256), (64, 512, 256)), 2, lambda _s: None, rng,
                                     fp8.FRAC_BITS, "torch")
    lt = [r for r in rows if r["kernel"] == "cuBLASLt"]
    assert [(r["m"], r["check_rows"]["passed"]) for r in lt] == [(32, True), (64, True)]
    assert set(timed) == {32, 64}
    skipped = [r for r in rows if r.get("skipped")]
    assert [(r["m"], r["dtype"]) for r in skipped] == [(32, d) for d in W.FP8_DTYPES]
    assert all(r["skipped"].startswith("M=32: tile 64x64x128/c1") for r in skipped)
    ours = [r for r in rows if r["kernel"] == "ours" and not r.get("skipped")]
    assert [(r["m"], r["tile"]) for r in ours] == [(64, "64x64x128/c1")] * 2
    assert ours[0]["of_cublaslt_fast"] == 1.0 and ours[1]["of_cublaslt_fast"] == 1.0
    text = fp8.nonsquare_fp8_table(rows)
    assert "not run: M=32" in text and text.count("cuBLASLt") == 2


# ---- notebook 07 helpers on the committed records ----------------------------------------------

def test_seed_comparison_reads_every_step_from_the_records():
    from asynctc.core import bench, records
    try:
        mma, ws, rec = (records.load(s) for s in ("mma_sync", "warp_specialization", "fp8"))
    except records.RecordError as e:
        pytest.skip(str(e))
    rows = fp8.seed_comparison(mma, ws, rec)
    assert {r["seed"] for r in rows if r["seed"]} == {s[0] for s in fp8.SEED_4096}
    for r in rows:
        assert 0 < r["fraction"] < 1 and r["clock"] in bench.CLOCK_KINDS[:2], r
        assert f"({r['clock']})" in r["peak_text"]
    fp8_row = rows[-1]
    assert "FP8" in fp8_row["ours"] and "×8192×" in fp8_row["peak_text"]
    assert len(fp8.seed_table_text(rows).splitlines()) == len(rows) + 1


# ---- which runs identify the fraction bits (issue: "13 fraction bits is partly a tie-break") -----

def test_fit_reports_every_f_at_the_smallest_mismatch():
    """fit_frac_bits never breaks a tie: on the swamping input without promotion the model's sums
    are the same for every f ≤ 13, so a run matching f = 13 fits all of 8..13 (not unique); only
    the probe input pins it."""
    rng = np.random.default_rng(3)
    qa, qb = fp8.swamp_operands(2, 4, 512, rng)
    fit = fp8.fit_frac_bits(fp8.model_gemm(qa, qb, 13), qa, qb)
    assert fit["fits"] == list(range(8, 14)) and not fit["unique"] and fit["exact"]
    assert fit["frac_bits"] is None and fit["best"] == 13
    qa, qb = fp8.probe_operands(2, 4, 512, rng)
    for p in (0, 1, 4):
        fit = fp8.fit_frac_bits(fp8.model_gemm(qa, qb, 13, promote=p), qa, qb, promote=p)
        assert fit["fits"] == [13] and fit["unique"] and fit["exact"] and fit["frac_bits"] == 13


def test_which_recorded_runs_identify_f():
    """The fp8 record, read with fit_set: no-promotion rows fit every f in 8..13, promote-4 rows at
    K ≥ 1024 fit 13 only, promote-1 rows fit no f bit for bit; together they are consistent with
    13 only (what notebook 07 §5 says, from the record)."""
    from asynctc.core import records
    rows = records.load("fp8").results["experiment"]["rows"]
    for r in rows:
        fs, exact = fp8.fit_set(r["fit_by_bits"]), min(r["fit_by_bits"].values()) == 0
        if r["promote"] == 0:
            assert fs == list(range(8, 14)) and exact
        elif r["promote"] == 4:
            assert exact and (fs == [13] if r["k"] >= 1024 else fs == list(range(8, 14)))
        else:
            assert fs == [13] and not exact
    got = fp8.identified_bits(rows)
    assert got["consistent"] == [13] and got["identified"]
    assert {(r["k"], r["promote"]) for r in got["unique_rows"]} == \
        {(k, 4) for k in fp8.EXPERIMENT_K if k >= 1024}
    assert fp8.fitted_bits(records.load("fp8").results["experiment"]) == 13


@pytest.mark.parametrize("make", ["probe_operands", "group_operands"])
def test_identification_inputs_are_fp8_never_zero_or_one(make):
    qa, qb = getattr(fp8, make)(4, 8, 256, np.random.default_rng(5))
    for q in (qa, qb):
        assert q.dtype == fp8.FORMATS["float8_e4m3fn"].dtype
        v = np.abs(q.astype(np.float64))
        assert v.min() >= 0.25 and not np.any(v == 1.0)
    prods = qa.astype(np.float64)[:, None, :] * qb.astype(np.float64)[None, :, :]
    for g in range(256 // 32):
        grp = prods[..., 32 * g:32 * g + 32]
        big = np.abs(grp) == 1024.0
        assert np.all(big.sum(axis=-1) == 2) and np.all(grp.sum(axis=-1, where=big) == 0)
    with pytest.raises(fp8.FP8Error, match="K=100"):
        getattr(fp8, make)(2, 2, 100)


def test_group_input_tells_32_from_smaller_groups():
    rng = np.random.default_rng(6)
    qa, qb = fp8.group_operands(2, 4, 1024, rng)
    outs = {g: fp8.model_gemm(qa, qb, 13, group=g) for g in fp8.FIT_GROUPS}
    assert len({o.tobytes() for o in outs.values()}) == len(fp8.FIT_GROUPS)
    fit = fp8.fit_group(outs[32], qa, qb)
    assert fit["fits"] == [(32, 13)] and fit["unique"] and fit["exact"]
    fit = fp8.fit_group(outs[16], qa, qb)
    assert fit["fits"] == [(16, 13)]


def test_fit_prediction_frozen_is_what_the_model_computes():
    """FIT_PREDICTION (frozen 2026-12-01 before any GPU run) is predict_identification's table."""
    table = fp8.identification_table(fp8.predict_identification())
    assert fp8.FIT_PREDICTION.endswith(table)
    assert fp8.FIT_PREDICTION.startswith("Prediction (2026-12-01, before any GPU run")
    assert "fits == [13]" in fp8.FIT_PREDICTION and "(group 32, f = 13)" in fp8.FIT_PREDICTION


def _model_run_ws(frac_bits=13, group=32):
    """run_ws as if the GPU were the model: C = model_gemm(A, B, f, promote, group) in fp32."""
    from fakes import FakeArray
    import types

    def run_ws(qa, qb, cfg):
        c = fp8.model_gemm(qa[:fp8.ID_ROWS], qb[:fp8.ID_COLS], frac_bits, promote=cfg.promote,
                           group=group)
        full = np.full((qa.shape[0], qb.shape[0]), np.nan, np.float32)
        full[:fp8.ID_ROWS, :fp8.ID_COLS] = c
        return types.SimpleNamespace(out=FakeArray(full))
    return run_ws


def test_fp8_fit_suite_dry_run(monkeypatch):
    """The "fp8_fit" suite (tools/gpu_ch07.py --fit) end to end on the CPU: compile, launch,
    memory and timing faked (the fp8 dry run's fakes), the identification runs answered by the
    model at f = 13 (so the fit must find 13, unique and exact, and group 32), the promotion-cost
    timings by the emulator; the record is JSON-able and its summary prints."""
    import json
    from asynctc.core import records
    _fake_gpu(monkeypatch)
    monkeypatch.setattr(W, "run_ws", _model_run_ws())
    monkeypatch.setattr(fp8.identify, "sass_counts", lambda cfg: {"FADD": 64 if cfg.promote else 0})
    monkeypatch.setattr(fp8.identify, "FIT_K", (256, 1024))
    monkeypatch.setattr(fp8.identify, "GROUP_K", (256,))
    monkeypatch.setattr(fp8.identify, "COST_SIZE", 256)
    exp = fp8.identification_experiment(np.random.default_rng(1), lambda s: None, ks=(256, 1024),
                                        group_ks=(256,))
    assert exp["identified"] == [13] and exp["inexact_runs"] == 0
    assert all(r["fit_set"] == [13] and r["fit_exact"] for r in exp["rows"])
    assert all(r["group_fits"] == [[32, 13]] for r in exp["rows"] if r["input"] == "group")
    assert {(r["input"], r["k"], r["promote"]) for r in exp["rows"]} == \
        {("probe", k, p) for k in (256, 1024) for p in (0, 1, 4)} | {("group", 256, p) for p in (0, 1, 4)}
    pc = fp8.promotion_cost(np.random.default_rng(2), lambda s: None, size=256, reps=1)
    assert {(r["consumers"], r["promote"]) for r in pc["rows"]} == {(1, 0), (1, 1), (2, 0), (2, 1)}
    assert all(r["check_rows"]["passed"] for r in pc["rows"])
    assert [r["tile"] for r in pc["rows"] if r["promote"] == 1] == ["128x128x128/c2", "64x128x128/c1"]
    assert set(pc["kept"]) == {1, 2}
    res = {"identification": exp, "promotion_cost": pc}
    json.dumps(res)
    text = fp8.summarize_fp8_fit(records.Record("fp8_fit", {"gpu": "fake"}, res))
    assert "consistent with every bit-exact run: [13]" in text and "keeps" in text
    # and the whole suite, as the script runs it (its K and size shortened)
    monkeypatch.setattr(fp8.identify, "identification_experiment",
                        lambda rng, say: exp)
    monkeypatch.setattr(fp8.identify, "promotion_cost",
                        lambda rng, say: fp8.promotion_cost(rng, say, size=256, reps=1))
    out = fp8.measure_fp8_fit()
    assert set(out) == {"identification", "promotion_cost", "clocks_after"}


def test_fit_suite_would_see_a_wrong_f_or_group(monkeypatch):
    """If the GPU kept 12 bits, or aligned per 16 products, the identification runs say so."""
    _fake_gpu(monkeypatch)
    for f, g, want_f, want_g in ((12, 32, [12], [32, 12]), (13, 16, None, [16, 13])):
        monkeypatch.setattr(W, "run_ws", _model_run_ws(f, g))
        exp = fp8.identification_experiment(np.random.default_rng(4), lambda s: None, ks=(256,),
                                            group_ks=(256,), promotes=(0,))
        probe = next(r for r in exp["rows"] if r["input"] == "probe")
        group = next(r for r in exp["rows"] if r["input"] == "group")
        if want_f:
            assert probe["fit_set"] == want_f and probe["fit_exact"]
        else:
            assert probe["fit_set"] != [13] or not probe["fit_exact"]
        assert group["group_fits"] == [want_g] and group["group_exact"]


def test_promotion_prediction_written_before_the_run():
    assert fp8.PROMOTION_PREDICTION.startswith("Hypothesis (2026-12-01, before any GPU run")
    assert "64 FADD" in fp8.PROMOTION_PREDICTION and "one consumer" in fp8.PROMOTION_PREDICTION
    cfgs = fp8.identify._configs()
    assert cfgs[(1, 1)].consumers == 1 and cfgs[(1, 1)].bm == 64 and cfgs[(2, 1)].bm == 128
    assert all(c.bn == 128 and c.cluster == 1 for c in cfgs.values())
    assert cfgs[(1, 1)].promote == cfgs[(2, 1)].promote == 1


@pytest.mark.parametrize("a,b", [("float8_e4m3fn", "float8_e5m2"), ("e5m2", "e4m3")])
def test_mixed_fp8_operands_build_with_dt_b(a, b):
    """wgmma allows .e4m3 × .e5m2 in either order: the build sets DT (A) and DT_B (B), B's tensor
    map box is in B's dtype, and the launch checks B against cfg.b_dtype, naming it."""
    an, bn = fp8.operand_dtypes(a, b)
    assert (an, bn) == (fp8.fp8_format(a).name, fp8.fp8_format(b).name) and an != bn
    want = fp8.MIXED_FP8_DEFINES[(an, bn)]
    assert want["DT"] != want["DT_B"] and (an, bn) in fp8.MIXED_PAIRS
    assert fp8.operand_dtype(a, b) == f"{an} × {bn} (DT={want['DT']}, DT_B={want['DT_B']})"
    for cfg in (fp8.fp8_config(an, b_dtype=bn), W.WSConfig(dtype=an, b_dtype=bn, bn=128)):
        d = cfg.defines
        assert (d["DT"], d["DT_B"]) == (want["DT"], want["DT_B"]) and cfg.dtype_b == bn
        assert cfg.label().endswith(f"b_dtype:{bn}") or f" b_dtype:{bn} " in cfg.label()
        assert {k: v for k, v in d.items() if k != "DT_B"} == cfg.replace(b_dtype=None).defines
    assert sum(c.dtype == an and c.b_dtype == bn for c in fp8.correctness_configs()) == 2
    qa = fp8.random_fp8((256, 128), an, rng=np.random.default_rng(0))
    qb = fp8.random_fp8((256, 128), bn, rng=np.random.default_rng(1))
    cfg = fp8.fp8_config(an, b_dtype=bn)
    assert W.check_operands(qa, qb, cfg) == (256, 256, 128)
    # B of A's format against a mixed config, and a mixed B against one of A's format: refused
    with pytest.raises(W.WarpSpecializationError, match=rf"^b.dtype='{an}': must be {bn} "
                                                        r"\(cfg.b_dtype\)"):
        W.check_operands(qa, qb.astype(np.float32).astype(_ml(an)), cfg)
    with pytest.raises(W.WarpSpecializationError, match=rf"^b.dtype='{bn}': must be {an} "
                                                        r"\(cfg.dtype\)"):
        W.check_operands(qa, qb, fp8.fp8_config(an))


def test_one_format_sets_no_dt_b():
    for dt in W.FP8_DTYPES:
        cfg = fp8.fp8_config(dt, b_dtype=dt)
        assert cfg.b_dtype is None and cfg == fp8.fp8_config(dt) and "DT_B" not in cfg.defines
    assert "DT_B" not in W.WSConfig().defines and W.WSConfig().dtype_b == "float16"
    assert all("DT_B" not in c.defines for c in fp8.correctness_configs() if not c.b_dtype)


@pytest.mark.parametrize("kw, rule", [
    (dict(dtype="float16", b_dtype="bfloat16"), r"B of another type than A \(float16\) only for "
                                                r"FP8 A and B .*\.f16/\.bf16 they are the same"),
    (dict(dtype="float8_e4m3fn", b_dtype="float16", out_dtype="bfloat16"),
     r"B of another type than A \(float8_e4m3fn\) only for FP8 A and B \(PTX ISA"),
    (dict(dtype="bfloat16", b_dtype="float8_e5m2"), r"B of another type than A \(bfloat16\)"),
    (dict(dtype="float8_e4m3fn", b_dtype="float8_e4m3"), r"B's input dtype: None \(A's\) or one of"),
    (dict(dtype="float8_e4m3fn", b_dtype=3), r"B's input dtype: None \(A's\) or one of"),
])
def test_what_mixed_operands_still_cannot_be_is_refused(kw, rule):
    with pytest.raises(W.WarpSpecializationError, match=rf"^b_dtype={kw['b_dtype']!r}: {rule}"):
        W.WSConfig(**kw)
    # and fp8 B stays K-major in a mixed build (no fp8 transpose)
    with pytest.raises(W.WarpSpecializationError, match=r"^b_major='MN': fp8 wgmma has no "
                                                        r"transpose"):
        W.WSConfig(dtype="float8_e4m3fn", b_dtype="float8_e5m2", b_major="MN")


def test_operand_dtype_same_format_and_non_fp8():
    assert fp8.operand_dtype("e4m3", ml_dtypes.float8_e4m3fn) == "float8_e4m3fn"
    assert fp8.operand_dtype("e5m2", "float8_e5m2") == "float8_e5m2"
    with pytest.raises(W.WarpSpecializationError, match="a_dtype='float16'"):
        fp8.operand_dtype("float16", "e4m3")
    with pytest.raises(W.WarpSpecializationError, match=r"^b_dtype='bfloat16': the FP8 GEMM takes "
                                                        r"FP8 operands.*16-bit A and B are one"):
        fp8.operand_dtypes("e5m2", "bfloat16")
    with pytest.raises(W.WarpSpecializationError, match=r"^b_dtype='float16'"):
        fp8.operand_dtype("e4m3", np.float16)
    assert fp8.MIXED_FP8_DEFINES[("float8_e4m3fn", "float8_e5m2")] == {"DT": 2, "DT_B": 3}
    assert fp8.MIXED_FP8_DEFINES[("float8_e5m2", "float8_e4m3fn")] == {"DT": 3, "DT_B": 2}


# ---- the figure and lines notebook 07 prints (CPU; the committed records, then edited copies) ----

def test_positive_values_and_plot_formats():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    for f in fp8.FORMATS.values():
        v = fp8.positive_values(f)
        assert v.max() == f.max == float(ml_dtypes.finfo(f.dtype).max) and v.min() > 0
        assert np.all(np.diff(v) > 0)
    assert fp8.positive_values(fp8.fp8_format("e4m3")).size == 126
    fig = fp8.plot_formats()
    try:
        labels = [t.get_text() for t in fig.get_axes()[0].get_yticklabels()]
        assert labels == ["e4m3: 126 values\nup to 448, 3 fraction bits",
                          "e5m2: 123 values\nup to 57344, 2 fraction bits"]
    finally:
        plt.close(fig)


def _records(*names):
    from asynctc.core import records
    try:
        return [records.load(n).results for n in names]
    except records.RecordError as e:
        pytest.skip(str(e))


def test_the_speed_tables_rows_read_the_fp8_record():
    (res,) = _records("fp8")
    top = fp8.table_row(res, 8192, fp8.fp8_config().label())
    lt = fp8.table_row(res, 8192, "cuBLASLt fp8 fast_accum=True")   # 07 §4 divides these in view
    assert top["of_cublaslt_fast"] == pytest.approx(top["tflops"] / lt["tflops"])
    with pytest.raises(KeyError, match="no table row"):
        fp8.table_row(res, 1024, "cuBLAS fp16")


def test_tc_dot_continues_from_an_accumulator():
    """tc_dot(…, acc=) carries the accumulator across k-tiles: two k-tiles from acc equal one
    sum over both (ch07.promotion's loop relies on it)."""
    from asynctc.models import fp8 as m
    qa, qb = m.swamp_operands(3, 2, 256, np.random.default_rng(3))
    p = qa.astype(np.float64)[:, None, :] * qb.astype(np.float64)[None, :, :]
    first = m.tc_dot(p[..., :128])
    np.testing.assert_array_equal(m.tc_dot(p[..., 128:], acc=first), m.tc_dot(p))


def test_07_5_lookups_give_the_inline_expressions_values():
    """07 §5's named lookups return what the cell's inline record-digging gave before them."""
    from asynctc import fp8
    from asynctc.core import records
    res = records.load("fp8").results
    row = {(r["k"], r["promote"]): r for r in res["experiment"]["rows"]}
    assert fp8.swamp_errors(res) == {kp: r["swamp_median_rel_err"] for kp, r in row.items()}
    assert fp8.normal_errors(res) == {kp: r["random_max_err_over_absAB"] for kp, r in row.items()}
    tf = {(r["kernel"], r["size"]): r["tflops"] for r in res["table"] if "tflops" in r}
    speed = {p: tf[fp8.fp8_config(promote=p).label(), 8192] for p in (4, 1)}
    speed[0] = tf[fp8.fp8_config(promote=4).label().replace(" promote:4", ""), 8192]
    assert fp8.promote_tflops(res) == speed


def test_07_names_each_fp8_speed_it_quotes_once():
    """Round 54: 07 quotes the top rung at 8192³, the 128×128 build (unpromoted and every 4) at 8192³
    and the worklog's 4096³ figures; the worklog's table names each row's build, shape and fraction of
    cuBLASLt FP8 at that shape, from the record, and they are the numbers §4, §5 and the worklog print."""
    from asynctc import fp8
    from asynctc.core import records
    res = records.load("fp8").results
    tf = {(r["kernel"], r["size"]): r["tflops"] for r in res["table"] if "tflops" in r}
    text = fp8.speed_names(res)
    rows = [line.split() for line in text.splitlines()[1:]]
    assert len(rows) == 5 and [r[-3] for r in rows] == ["8192³"] * 3 + ["4096³"] * 2, text
    speed = fp8.promote_tflops(res)
    top = tf[fp8.fp8_config().label(), 8192]
    assert [float(r[-2]) for r in rows[:3]] == [round(top), round(speed[0]), round(speed[4])], text
    lt = tf["cuBLASLt fp8 fast_accum=True", 4096]
    assert rows[3][-1] == f"{tf[fp8.fp8_config().label(), 4096] / lt:.2f}", text
    assert rows[4][:2] == ["128×128", "build"] and rows[4][-4] == "4", text       # "every 4"
