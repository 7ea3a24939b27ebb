"""asynctc.core.checks: the elementwise bound relative to |A|·|B| fails ONE wrong element, for every
output dtype; poison left unwritten fails; the tolerance is the derivation in the module docstring
and holds for a truncating fp32 accumulator (emulated here), also for the long sums of the timed
peak kernels."""
import numpy as np
import pytest

from asynctc.core import checks
from asynctc.core.checks import gamma, gemm_tolerance

OUT_DTYPES = ("float16", "bfloat16", "float32")


def _kernel_like(a, b, out_dtype):
    """What a correct kernel returns: an fp32-accumulated product rounded to the output dtype."""
    c = a.astype(np.float32) @ b.astype(np.float32)
    return c.astype(checks.np_dtype(out_dtype))


def _truncating_sum(terms: np.ndarray) -> np.ndarray:
    """Sequential fp32 accumulation rounding toward zero (the Tensor Core worst case): terms has
    the summation index first."""
    s = np.zeros(terms.shape[1:], np.float32)
    for p in terms:
        exact = s.astype(np.float64) + p.astype(np.float64)
        r = exact.astype(np.float32)
        over = np.abs(r.astype(np.float64)) > np.abs(exact)
        r[over] = np.nextafter(r[over], np.float32(0))
        s = r
    return s


@pytest.mark.parametrize("out_dtype", OUT_DTYPES)
@pytest.mark.parametrize("in_dtype", ("float16", "bfloat16"))
def test_one_wrong_element_fails(rng, in_dtype, out_dtype):
    m, n, k = 128, 256, 64                                   # a 128×256 CTA tile's output
    a, b = checks.random_operands(m, n, k, in_dtype, int(rng.integers(1 << 31)))
    good = _kernel_like(a, b, out_dtype)
    c = checks.check_gemm(good, a, b, in_dtype)
    assert c.passed and c.n_bad == 0, c
    i, j = int(rng.integers(m)), int(rng.integers(n))
    ref = checks.reference(a, b)
    prod = a[i].astype(np.float64) * b[:, j].astype(np.float64)
    kmax = int(np.argmax(np.abs(prod)))
    # wrong values whose error is above the bound by construction (an error below it cannot be
    # told from rounding): another column's / row's value (the farthest one), a k-term left out
    # (the largest of the dot product), the sign flipped
    j2 = int(np.argmax(np.abs(ref[i] - ref[i, j])))
    i2 = int(np.argmax(np.abs(ref[:, j] - ref[i, j])))
    wrong_values = {
        "from another column": ref[i, j2],
        "from another row": ref[i2, j],
        "one k-term missing": ref[i, j] - prod[kmax],
        "sign flipped": -ref[i, j] if abs(ref[i, j]) > 1 else ref[i, j] + 2.0,
    }
    for what, v in wrong_values.items():
        bad = good.copy()
        bad[i, j] = v
        if float(bad[i, j]) == float(good[i, j]):
            continue                                        # the rounding made it right again
        cb = checks.check_gemm(bad, a, b, in_dtype)
        assert not cb.passed, (what, cb)
        assert cb.worst == (i, j) and cb.n_bad == 1, (what, cb)


def test_frobenius_norm_would_have_passed_it(rng):
    """The issue's finding: one wrong element of a 128×256 bf16 output passes a relative
    Frobenius norm of 1e-2; the elementwise bound fails it."""
    a, b = checks.random_operands(128, 256, 64, "bfloat16", int(rng.integers(1 << 31)))
    good = _kernel_like(a, b, "bfloat16")
    ref = checks.reference(a, b)
    prod = a[5].astype(np.float64) * b[:, 7].astype(np.float64)
    bad = good.copy()
    bad[5, 7] = ref[5, 7] - prod[np.argmax(np.abs(prod))]  # one k-term left out of one element
    frob = np.linalg.norm(bad.astype(np.float64) - ref) / np.linalg.norm(ref)
    assert frob < 1e-2                                      # the old check: passed
    assert not checks.check_gemm(bad, a, b, "bfloat16").passed


@pytest.mark.parametrize("out_dtype", OUT_DTYPES)
def test_unwritten_poison_fails(rng, out_dtype):
    a, b = checks.random_operands(128, 256, 32, "float16", int(rng.integers(1 << 31)))
    out = _kernel_like(a, b, out_dtype)
    out[17, 200] = np.nan                                   # POISON_BYTE 0xFF reads as NaN
    c = checks.check_gemm(out, a, b, "float16")
    assert not c.passed and c.unwritten == 1 and c.worst == (17, 200)
    d = c.as_dict()
    assert d["passed"] is False and d["worst"] == [17, 200] and "max_err" in d
    out[:] = np.nan
    assert checks.check_gemm(out, a, b, "float16").unwritten == out.size


def test_tolerance_derivation():
    u = 2.0 ** -23
    for k in (16, 128, 8192):
        g = k * u / (1 - k * u)
        ref = gamma(k, 2.0 ** -53)
        assert gemm_tolerance(k, "float32") == pytest.approx(g + ref, rel=1e-12)
        assert gemm_tolerance(k, "float16") == pytest.approx(g + 2.0 ** -11 * (1 + g) + ref, rel=1e-12)
        assert gemm_tolerance(k, "bfloat16") == pytest.approx(g + 2.0 ** -8 * (1 + g) + ref, rel=1e-12)
        g1 = (k + 1) * u / (1 - (k + 1) * u)                 # fp32 inputs: products round once
        assert gemm_tolerance(k, "float32", exact_products=False) == pytest.approx(g1 + ref, rel=1e-12)
    assert gemm_tolerance(8192, "float32") == pytest.approx(9.77e-4, rel=1e-2)  # the docstring's
    with pytest.raises(ValueError, match="n·u ≥ 1"):
        gamma(1 << 23, u)
    with pytest.raises(ValueError, match="k=0"):
        gemm_tolerance(0)
    with pytest.raises(ValueError, match="out_dtype"):
        gemm_tolerance(64, "float8")


@pytest.mark.parametrize("positive", (False, True))
def test_bound_holds_for_a_truncating_accumulator(rng, positive):
    """The worst case the tolerance is derived for: K sequential fp32 additions rounding toward
    zero, here with all-positive inputs too (every rounding drifts the same way)."""
    k = 2048
    a, b = checks.random_operands(4, 4, k, "float16", int(rng.integers(1 << 31)))
    if positive:
        a, b = np.abs(a), np.abs(b)
    terms = a.astype(np.float32)[:, :, None] * b.astype(np.float32)[None, :, :]   # exact products
    out = _truncating_sum(np.moveaxis(terms, 1, 0))
    c = checks.check_gemm(out, a, b, "float16")
    assert c.passed, c
    assert c.max_err > 0                                    # the emulation really rounded


def test_peak_kernel_bounds_hold_for_the_timed_iteration_count(rng):
    """mma.sync peak: ITERS = 4096 sequential additions of one 16-term product into fp32, with
    truncation, stays within MmaSyncPeak.tolerance() of ITERS·(A·B) relative to ITERS·(|A|·|B|)."""
    from asynctc import mma_sync
    a = rng.uniform(-1, 1, (16, 16)).astype(np.float16)
    b = rng.uniform(-1, 1, (16, 8)).astype(np.float16)
    p = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float32)
    got = _truncating_sum(np.broadcast_to(p, (mma_sync.PEAK_ITERS,) + p.shape))
    c = checks.compare(got, mma_sync.PEAK_ITERS * checks.reference(a, b), "float16",
                       (16, 8, 16 * mma_sync.PEAK_ITERS),
                       scale=mma_sync.PEAK_ITERS * checks.abs_reference(a, b),
                       tol=mma_sync.MmaSyncPeak.tolerance())
    assert c.passed, c
    assert c.max_err > 1e-5                                  # the drift is real, and bounded


def test_wgmma_peak_bound_holds_for_the_longest_timed_loop(rng):
    """wgmma peak, N=8 with one chain: 65536 iterations × 4 k-steps accumulate 262144 partial
    products into fp32 — the truncating sum drifts, and stays inside WgmmaPeak.tolerance()."""
    from asynctc import wgmma_peak as WP
    iters = WP.peak_iters(8, 1)
    assert iters == 65536
    tol = (lambda m: gamma(m, checks.U_ACC))(iters * WP.PEAK_K_STEPS + 16)
    a = rng.uniform(-1, 1, (2, 64)).astype(np.float16)
    b = rng.uniform(-1, 1, (64, 2)).astype(np.float16)
    parts = [(a[:, 16 * s:16 * s + 16].astype(np.float32) @ b[16 * s:16 * s + 16].astype(np.float32))
             for s in range(4)]
    got = _truncating_sum(np.array(parts * iters))
    c = checks.compare(got, iters * checks.reference(a, b), "float16", (2, 2, 64 * iters),
                       scale=iters * checks.abs_reference(a, b), tol=tol)
    assert c.passed, c


def test_sampled_reference_covers_every_cta_row_band(rng):
    a, b = checks.random_operands(1024, 128, 64, "float16", int(rng.integers(1 << 31)))
    ref = checks.SampledReference(a, b, "float16", row_block=128, rng=rng)
    assert len(ref.rows) == 8 and sorted(ref.rows // 128) == list(range(8))
    good = _kernel_like(a, b, "float16")
    assert ref.check(good).passed
    bad = good.copy()
    bad[ref.rows[3], 77] = bad[ref.rows[3], 78]
    with pytest.raises(RuntimeError, match="timed run wrong: t float16"):
        checks.check_sampled_rows(bad, a, b, "float16", "t", sampled=ref)
    assert len(checks.timed_output_reference(a[:512], b, "float16").rows) == 512   # small: in full


def test_compare_without_scale_is_still_elementwise(rng):
    ref = rng.standard_normal((64, 64)) * 10
    out = ref.astype(np.float16)
    assert checks.compare(out, ref, "float16", (64, 64, 16)).passed
    out[3, 3] = out[3, 4]
    assert not checks.compare(out, ref, "float16", (64, 64, 16)).passed
    with pytest.raises(ValueError, match="shape"):
        checks.compare(out[:3], ref, "float16", (64, 64, 16))


def test_exact_operands_make_long_sums_exact(rng):
    """The peak kernels' sharp check: on these operands a truncating fp32 accumulator returns
    repeats·(A·B) exactly, so the timed binary is compared with tolerance 0."""
    a, b, exact = checks.exact_operands((4, 16), (16, 3), "float16", 4096, rng=rng)
    assert exact
    vals = np.unique(np.abs(np.concatenate([a.astype(np.float32).ravel(),
                                            b.astype(np.float32).ravel()])))
    assert set(vals) <= set(checks.EXACT_VALUES) and len(vals) > 1     # never 0 or ±1
    p = a.astype(np.float32) @ b.astype(np.float32)
    terms = np.broadcast_to(p, (4096,) + p.shape)
    got = _truncating_sum(terms)
    assert np.array_equal(got.astype(np.float64), 4096 * checks.reference(a, b))
    c = checks.compare(got, 4096 * checks.reference(a, b), "float16", (4, 3, 16 * 4096),
                       scale=4096 * checks.abs_reference(a, b), tol=0.0)
    assert c.passed and c.max_err == 0.0
    got[1, 2] = np.nextafter(got[1, 2], np.float32(np.inf))          # one bit off: fails
    assert not checks.compare(got, 4096 * checks.reference(a, b), "float16", (4, 3, 16 * 4096),
                              scale=4096 * checks.abs_reference(a, b), tol=0.0).passed
    # where the sums would not fit, the function says so (wgmma N=8 with one chain; fp8)
    assert not checks.exact_operands((64, 64), (64, 8), "float16", 65536, rng=rng)[2]
    assert not checks.exact_operands((64, 128), (128, 256), "float8_e4m3fn", 2048, 13, rng=rng)[2]
    with pytest.raises(ValueError, match="repeats"):
        checks.exact_operands((2, 2), (2, 2), "float16", 0)


def test_element_check_is_a_check_in_the_per_element_bound_form(rng):
    """compare_elementwise's result is a Check (tol 1, max_err = the worst ratio) under chapter 05's
    names; one wrong element and one poisoned element both fail it, each counted where it belongs."""
    a = rng.standard_normal((128, 96)).astype(np.float16)
    b = rng.standard_normal((96, 64)).astype(np.float16)
    out = _kernel_like(a, b, "float32")
    ok = checks.compare_elementwise(out, a, b, "float32", "cfg")
    assert isinstance(ok, checks.Check) and ok.passed and ok.tol == 1.0
    assert ok.worst == ok.max_err < 1 and ok.wrong == ok.n_bad == 0 and ok.rel_frobenius == ok.rel_err
    assert ok.as_dict()["config"] == "cfg" and ok.as_dict()["worst_ratio"] == ok.worst
    bad = out.copy()
    bad[70, 5] += 0.5
    bad[3, 9] = np.nan
    c = checks.compare_elementwise(bad, a, b, "float32")
    assert not c.passed and c.wrong == 1 and c.unwritten == 1 and c.first_wrong == (3, 9)
    assert c.worst == np.inf


def test_operand_rules_raise_the_callers_error_naming_field_value_and_rule():
    class MyError(ValueError):
        pass
    a, b = np.zeros((128, 64), np.float16), np.zeros((32, 64), np.float16)
    assert checks.operand_dims(a, b, np.dtype(np.float16), "float16", "K") == (128, 32, 64)
    assert checks.b_shape(64, 32, "K") == (32, 64) and checks.b_shape(64, 32, "MN") == (64, 32)
    with pytest.raises(MyError, match=r"b.shape=\(32, 64\): B stored K×N"):
        checks.operand_dims(a, b, np.dtype(np.float16), "float16", "MN", error=MyError)
    with pytest.raises(MyError, match=r"a.dtype='float32': must be float16"):
        checks.operand_dims(a.astype(np.float32), b, np.dtype(np.float16), "float16", "K",
                            error=MyError)
    with pytest.raises(MyError, match=r"out=\(\(128, 16\), 'float32'\): must be \(128, 32\)"):
        checks.check_out(np.zeros((128, 16), np.float32), 128, 32, np.dtype(np.float32), MyError)
