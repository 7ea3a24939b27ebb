"""The FP8 numerics of chapter 07, pure Python (numpy, ml_dtypes; no GPU): the formats, scales,
saturating quantisation, a model of the Tensor Core's reduced-precision accumulation, and the
elementwise bounds the FP8 GEMM is checked against. The GEMM itself, its configurations, suite,
plots and exercises are in :mod:`asynctc.fp8`, which re-exports every name here.

**Formats** (:data:`FORMATS`; OCP "8-bit Floating Point Specification (OFP8)" rev. 1.0, 2023, and
PTX ISA §5.2.5 "Alternate Floating-Point Data Formats" for .e4m3 / .e5m2):

* e4m3 (``float8_e4m3fn``): 1 sign, 4 exponent (bias 7), 3 fraction bits; largest finite 448
  (1.75 · 2^8), smallest normal 2^-6, smallest subnormal 2^-9; no infinities, S.1111.111 is NaN.
* e5m2 (``float8_e5m2``): 1 sign, 5 exponent (bias 15), 2 fraction bits; largest finite 57344
  (1.75 · 2^15), smallest normal 2^-14, smallest subnormal 2^-16; IEEE-style infinities and NaNs.

**Scales.** A scale here is the *dequantisation* factor ``s``: ``x ≈ q · s`` (torch._scaled_mm's
``scale_a`` / ``scale_b`` mean the same). :func:`amax_scale` maps the largest magnitude to the
format's largest finite value, s = amax / max (``pow2``: rounded up to a power of two, so that
scaling is exact). :func:`quantize` divides by the scale in float64, **saturates** to ±max (a cast
alone would give NaN for e4m3 and ±inf for e5m2 above the range) and rounds to nearest even with
ml_dtypes. Granularity: one scale per tensor, or per block — 1×128 (a row segment of A, M×K) and
128×128 (a block of B stored N×K), the blocking used to train and serve large models in FP8
(DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, §3.3).

**Accumulation** (:func:`tc_dot`, :func:`model_gemm`): Hopper's FP8 wgmma does not accumulate in
full fp32. DeepSeek-V3 (§3.3.2, on H800) reports that the accumulation "retains around 14 bits";
for the FP16/BF16 Tensor Cores of earlier GPUs, Fasi, Higham, Mikaitis and Pranesh ("Numerical
behavior of NVIDIA tensor cores", PeerJ CS 2021) found that a block's products are aligned to the
largest exponent of the block (accumulator included) and truncated. Our model does that per group
of ``group`` products (32 = one m64nNk32 wgmma) with ``frac_bits`` fraction bits kept relative to
the largest exponent; ``frac_bits`` is a parameter, fitted on the GPU (:func:`fit_frac_bits`,
``tools/gpu_ch07.py``). **Promotion** (the fix, DeepSeek-V3 §3.3.2): every ``promote`` k-tiles the
wgmma sums are added into fp32 registers and restarted, so the reduced-precision sum never covers
more than promote × 128 products.

:data:`ACC_PREDICTION` is the model's prediction for the swamping experiment, written down before
the first GPU run.

**Bounds.** :func:`accumulation_bound` (per-tensor scales) and :func:`block_scaled_bound` (the
kernel's BLOCK_SCALES: each k-tile's wgmma sums multiplied by sa[row, kt] · sb[n-block, kt] as
they are added into the fp32 totals, so the scales never enter the Tensor Core's reduced-precision
sum) bound every element against float64 of the dequantised inputs; :func:`check_fp8_gemm` and
:func:`check_fp8_block` apply them; :func:`model_gemm_block` is the model of the BLOCK_SCALES
kernel.

Errors: :class:`FP8Error` (a ``ValueError``) naming field, value and rule.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..core import runtime


class FP8Error(runtime.AsyncTCError, ValueError):
    """An input the FP8 helpers cannot take; the message names field, value and rule."""


def _fail(field: str, value: Any, rule: str):
    raise FP8Error(f"{field}={value!r}: {rule}")


@dataclasses.dataclass(frozen=True)
class Fp8Format:
    """One FP8 format: ``name`` (ml_dtypes / numpy name), ``ptx`` type, ``exp_bits``,
    ``frac_bits``, exponent ``bias``, ``max`` (largest finite), ``min_normal``, ``min_subnormal``,
    ``has_inf``."""

    name: str
    ptx: str
    exp_bits: int
    frac_bits: int
    bias: int
    max: float
    min_normal: float
    min_subnormal: float
    has_inf: bool

    @property
    def dtype(self) -> np.dtype:
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, self.name))


#: The two FP8 formats of sm_90 wgmma (OCP OFP8 rev. 1.0; PTX ISA §5.2.5).
FORMATS = {
    "float8_e4m3fn": Fp8Format("float8_e4m3fn", "e4m3", 4, 3, 7, 448.0, 2.0 ** -6, 2.0 ** -9, False),
    "float8_e5m2": Fp8Format("float8_e5m2", "e5m2", 5, 2, 15, 57344.0, 2.0 ** -14, 2.0 ** -16, True),
}
_ALIAS = {"e4m3": "float8_e4m3fn", "fp8": "float8_e4m3fn", "float8_e4m3": "float8_e4m3fn",
          "fp8_e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "fp8_e5m2": "float8_e5m2"}

#: Block shapes of the per-block scales: A (M×K) in 1×128 row segments, B (stored N×K) in
#: 128×128 blocks (DeepSeek-V3 §3.3.1).
A_BLOCK = (1, 128)
B_BLOCK = (128, 128)


def fp8_format(dtype: Any) -> Fp8Format:
    """The :class:`Fp8Format` of a name ("float8_e4m3fn", "e4m3", "float8_e5m2", "e5m2", ...) or an
    ml_dtypes dtype. Raises :class:`FP8Error`."""
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    name = _ALIAS.get(name.strip().lower(), name.strip().lower()) if isinstance(name, str) else name
    if name not in FORMATS:
        _fail("dtype", dtype, f"an FP8 format of sm_90 wgmma: {sorted(FORMATS)}")
    return FORMATS[name]


# --------------------------------------------------------------------------------------------------
# Scales and quantisation
# --------------------------------------------------------------------------------------------------

def amax_scale(amax, dtype: Any = "float8_e4m3fn", pow2: bool = False):
    """The dequantisation scale(s) for magnitude(s) ``amax`` (scalar or array, ≥ 0, finite):
    s = amax / fmt.max, so that amax maps onto the largest finite value; ``pow2``: the next power
    of two at or above (then x / s is exact in binary and amax / s ≤ max still holds). amax = 0
    gives 1 (an all-zero block needs no scale). Returns float32 (what the kernel and
    torch._scaled_mm take). Raises :class:`FP8Error` for a negative or non-finite amax."""
    fmt = fp8_format(dtype)
    a = np.asarray(amax, dtype=np.float64)
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        _fail("amax", "non-finite or negative" if a.ndim else float(a),
              "must be finite and ≥ 0 (quantise finite inputs only)")
    s = np.where(a > 0, a / fmt.max, 1.0)
    if pow2:
        s = np.exp2(np.ceil(np.log2(s)))
    s32 = s.astype(np.float32)
    # float32 rounding of s must not push amax / s above max: round the scale up where it did
    s32 = np.where(s32.astype(np.float64) < s, np.nextafter(s32, np.float32(np.inf)), s32)
    return s32 if s32.ndim else np.float32(s32)


def _as_f64(x) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype.kind not in "f" and x.dtype.name != "bfloat16":
        _fail("x.dtype", x.dtype.name, "must be a floating type (float16, bfloat16, float32, "
                                        "float64)")
    x64 = x.astype(np.float64)
    if not np.all(np.isfinite(x64)):
        _fail("x", "non-finite values", "quantise finite inputs only (no NaN/inf)")
    return x64


def _check_block(shape, block) -> tuple[int, int]:
    if len(shape) != 2:
        _fail("x.shape", tuple(shape), "per-block scales need a 2-D array")
    if (not isinstance(block, (tuple, list)) or len(block) != 2
            or not all(isinstance(b, (int, np.integer)) and b >= 1 for b in block)):
        _fail("block", block, "two positive integers (rows, cols), e.g. (1, 128) or (128, 128)")
    return int(block[0]), int(block[1])


def block_amax(x, block) -> np.ndarray:
    """max |x| over each ``block`` (rows × cols) of the 2-D ``x``; a partial block at the edge
    counts what it holds. Shape: (ceil(R / rows), ceil(C / cols))."""
    x64 = np.abs(_as_f64(x))
    br, bc = _check_block(x64.shape, block)
    r, c = x64.shape
    gr, gc = -(-r // br), -(-c // bc)
    pad = np.zeros((gr * br, gc * bc))
    pad[:r, :c] = x64
    return pad.reshape(gr, br, gc, bc).max(axis=(1, 3))


def expand_scales(scales, block, shape) -> np.ndarray:
    """Per-block ``scales`` (gr × gc) repeated to every element of ``shape`` (float64)."""
    br, bc = _check_block(shape, block)
    s = np.asarray(scales, dtype=np.float64)
    want = (-(-shape[0] // br), -(-shape[1] // bc))
    if s.shape != want:
        _fail("scales.shape", s.shape, f"{shape} in blocks of {block} needs {want} scales")
    return np.repeat(np.repeat(s, br, axis=0), bc, axis=1)[:shape[0], :shape[1]]


def quantize(x, dtype: Any = "float8_e4m3fn", *, block=None, scale=None, pow2: bool = False):
    """Quantise ``x`` (float16 / bfloat16 / float32 / float64) to FP8 with saturation.

    ``block`` None: one scale for the tensor; (rows, cols): one per block of the 2-D ``x``
    (:data:`A_BLOCK`, :data:`B_BLOCK`). ``scale``: given scale(s) (a scalar, or gr × gc for
    blocks), else :func:`amax_scale` of the tensor / each block (``pow2`` as there). Each element:
    q = RNE(clip(x / s, −max, max)) in the format (x / s in float64; ml_dtypes rounds a float64 to
    the nearest FP8 value, ties to even — tested against the enumerated grid).

    Returns ``(q, scale)``: ``q`` the FP8 array (ml_dtypes dtype, ``x``'s shape), ``scale`` float32
    (scalar or gr × gc). Raises :class:`FP8Error` (non-float or non-finite input, bad block or
    scale shape, non-positive scale)."""
    fmt = fp8_format(dtype)
    x64 = _as_f64(x)
    if block is None:
        s = amax_scale(np.max(np.abs(x64)) if x64.size else 0.0, fmt.name, pow2) \
            if scale is None else np.float32(scale)
        if not (np.isfinite(s) and s > 0):
            _fail("scale", float(s), "must be finite and > 0")
        full = np.float64(s)
    else:
        s = amax_scale(block_amax(x64, block), fmt.name, pow2) if scale is None \
            else np.asarray(scale, dtype=np.float32)
        if not (np.all(np.isfinite(s)) and np.all(s > 0)):
            _fail("scale", "non-positive or non-finite values", "must be finite and > 0")
        full = expand_scales(s, block, x64.shape)
    y = np.clip(x64 / full, -fmt.max, fmt.max)
    return y.astype(fmt.dtype), s


def dequantize(q, scale, block=None) -> np.ndarray:
    """q · s in float64 (exact: a 4-bit FP8 significand times a 24-bit float32 one fits in 53
    bits), with ``scale`` a scalar (``block`` None) or per block."""
    q64 = np.asarray(q).astype(np.float64)
    if block is None:
        return q64 * np.float64(scale)
    return q64 * expand_scales(scale, block, q64.shape)


def quantize_a(a, dtype: Any = "float8_e4m3fn", pow2: bool = False):
    """A (M×K) with one scale per 1×128 row segment: ``(q, scales M × ceil(K/128))``."""
    return quantize(a, dtype, block=A_BLOCK, pow2=pow2)


def quantize_b(b_nk, dtype: Any = "float8_e4m3fn", pow2: bool = False):
    """B stored N×K (K-major, as FP8 wgmma needs) with one scale per 128×128 block:
    ``(q, scales ceil(N/128) × ceil(K/128))``."""
    return quantize(b_nk, dtype, block=B_BLOCK, pow2=pow2)


def random_fp8(shape, dtype: Any = "float8_e4m3fn", rng=None) -> np.ndarray:
    """Fresh standard-normal values rounded to FP8, magnitudes below the smallest normal moved up
    to it (so no zeros; never ±1 by construction of the distribution)."""
    fmt = fp8_format(dtype)
    rng = rng if rng is not None else np.random.default_rng()
    x = rng.standard_normal(shape)
    x = np.where(np.abs(x) < fmt.min_normal, np.copysign(fmt.min_normal, x), x)
    return np.clip(x, -fmt.max, fmt.max).astype(fmt.dtype)


# --------------------------------------------------------------------------------------------------
# The Tensor Core's reduced-precision accumulation: a model
# --------------------------------------------------------------------------------------------------

#: Fraction bits the model keeps by default: DeepSeek-V3's "around 14 bits" read as 13 fraction
#: bits + the leading bit. To be fitted on the GPU.
FRAC_BITS = 13
#: Products the model adds per alignment step: one m64nNk32 wgmma.
GROUP = 32
#: K elements per k-tile (one 128-byte row of fp8): the unit of ``promote``.
KTILE = 128


def _trunc_to(x: np.ndarray, ulp: np.ndarray) -> np.ndarray:
    """x truncated toward zero to a multiple of ``ulp`` (elementwise, broadcast)."""
    return np.trunc(x / ulp) * ulp


def _fp32_rz(x: np.ndarray) -> np.ndarray:
    """Round float64 values toward zero to float32."""
    f = x.astype(np.float32)
    over = np.abs(f.astype(np.float64)) > np.abs(x)
    f = np.where(over, np.nextafter(f, np.float32(0)), f)
    return f.astype(np.float64)


def tc_dot(products, frac_bits: int = FRAC_BITS, group: int = GROUP, acc=0.0) -> np.ndarray:
    """The model's sum of ``products`` (float64, shape (..., K), exact FP8 × FP8 products) along
    the last axis, starting from ``acc`` (the accumulator's value so far, fp32): per group of ``group`` products, the accumulator and the
    group's products are aligned to the largest exponent among them and truncated toward zero to
    ``frac_bits`` fraction bits below it, summed exactly, and the sum rounded toward zero to
    float32. ``frac_bits`` ≥ 52 reproduces an exact sum (up to the float32 roundings)."""
    p = np.asarray(products, dtype=np.float64)
    if not isinstance(frac_bits, (int, np.integer)) or not 1 <= frac_bits <= 60:
        _fail("frac_bits", frac_bits, "an integer in 1..60")
    if not isinstance(group, (int, np.integer)) or group < 1:
        _fail("group", group, "a positive integer")
    c = np.zeros(p.shape[:-1]) + np.asarray(acc, dtype=np.float64)
    for g0 in range(0, p.shape[-1], group):
        terms = np.concatenate([c[..., None], p[..., g0:g0 + group]], axis=-1)
        mx = np.max(np.abs(terms), axis=-1, keepdims=True)
        e = np.floor(np.log2(np.where(mx > 0, mx, 1.0)))
        ulp = np.exp2(e - frac_bits)
        c = _fp32_rz(_trunc_to(terms, ulp).sum(axis=-1))
    return c


def model_gemm(qa, qb_nk, frac_bits: int = FRAC_BITS, promote: int = 0, group: int = GROUP,
               ktile: int = KTILE) -> np.ndarray:
    """The model's C = A · B (unscaled) for FP8 ``qa`` (M×K) and ``qb_nk`` (B stored N×K), fp32
    result: without ``promote`` one :func:`tc_dot` over all of K; with ``promote`` = P, one
    :func:`tc_dot` per P · ``ktile`` products, each added into an fp32 sum (round to nearest), as
    the kernel's PROMOTE does. Memory M·N·K·8 bytes: use it on a few rows."""
    a = np.asarray(qa).astype(np.float64)
    b = np.asarray(qb_nk).astype(np.float64)
    prods = a[:, None, :] * b[None, :, :]
    k = a.shape[1]
    if not promote:
        return tc_dot(prods, frac_bits, group)
    span = promote * ktile
    tot = np.zeros(prods.shape[:2], np.float32)
    for k0 in range(0, k, span):
        tot = tot + tc_dot(prods[..., k0:k0 + span], frac_bits, group).astype(np.float32)
    return tot.astype(np.float64)


def swamp_operands(m: int, n: int, k: int, rng=None, big: float = 32.0,
                   dtype: Any = "float8_e4m3fn"):
    """The swamping input: A (M×K) and B stored N×K in FP8 with ``big`` at k = 0 of every row of A
    and of B (so every C element starts with one product big² = 1024) and fresh random *positive*
    small values elsewhere (e4m3 values in [1/8, 1/4): products in [2^-6, 2^-4)). Aligned to
    2^10 with 13 fraction bits the small products fall below the last kept bit (2^-3) and vanish:
    the sum of K − 1 small ones (≈ 0.033 · K) is lost without promotion. Returns (qa, qb_nk)."""
    fmt = fp8_format(dtype)
    rng = rng if rng is not None else np.random.default_rng()

    def small(shape):
        return rng.uniform(0.125, 0.25, size=shape).astype(fmt.dtype)
    qa, qb = small((m, k)), small((n, k))
    qa[:, 0] = big
    qb[:, 0] = big
    return qa, qb


def relative_errors(c, qa, qb_nk) -> np.ndarray:
    """|C − ref| / |ref| elementwise, ref = float64 A·B of the FP8 values."""
    ref = np.asarray(qa).astype(np.float64) @ np.asarray(qb_nk).astype(np.float64).T
    return np.abs(np.asarray(c, dtype=np.float64) - ref) / np.abs(ref)


#: K values of the accumulation experiment, and the promotion intervals (k-tiles) compared.
EXPERIMENT_K = (256, 512, 1024, 2048, 4096, 8192, 16384)
EXPERIMENT_PROMOTE = (0, 1, 4)

#: The model's prediction for the swamping experiment (:func:`swamp_operands`, frac_bits = 13,
#: groups of 32), written down BEFORE the first GPU run (2026-11-30: frozen in commit c50752c at
#: 11:11 UTC; the first fp8 record, committed in 4ad47c0, was measured at 11:23 UTC): median
#: relative error of C against float64 per K, without promotion and with promotion every 1 and 4
#: k-tiles. Kept as written; the GPU run fits ``frac_bits`` and sets its measurement beside this.
ACC_PREDICTION = """\
frac_bits = 13, group = 32, swamping input (one 32·32 product first, then positive products in [2^-6, 2^-4))
| K | no promotion | promote 1 | promote 4 |
|---|---|---|---|
| 256 | 8.7e-03 | 4.3e-03 | 8.7e-03 |
| 512 | 1.7e-02 | 4.3e-03 | 1.7e-02 |
| 1024 | 3.4e-02 | 4.1e-03 | 1.7e-02 |
| 2048 | 6.6e-02 | 4.1e-03 | 1.7e-02 |
| 4096 | 1.2e-01 | 3.8e-03 | 1.6e-02 |
| 8192 | 2.2e-01 | 3.4e-03 | 1.5e-02 |
| 16384 | 3.6e-01 | 2.8e-03 | 1.3e-02 |
"""


def predict_swamp(ks=EXPERIMENT_K, promotes=EXPERIMENT_PROMOTE, frac_bits: int = FRAC_BITS,
                  rows: int = 4, cols: int = 4, seed: int = 7) -> dict:
    """The model's median relative error on :func:`swamp_operands` (``rows`` × ``cols`` elements,
    fixed ``seed``) per K and promotion: ``{promote: {K: error}}`` (:data:`ACC_PREDICTION` is its
    table at frac_bits = 13)."""
    out: dict = {p: {} for p in promotes}
    for k in ks:
        qa, qb = swamp_operands(rows, cols, k, np.random.default_rng(seed))
        for p in promotes:
            c = model_gemm(qa, qb, frac_bits, promote=p)
            out[p][k] = float(np.median(relative_errors(c, qa, qb)))
    return out


def prediction_table(pred: dict, frac_bits: int = FRAC_BITS) -> str:
    """:func:`predict_swamp`'s result as the markdown table of :data:`ACC_PREDICTION`."""
    ps = sorted(pred)
    head = ["no promotion" if p == 0 else f"promote {p}" for p in ps]
    lines = [f"frac_bits = {frac_bits}, group = {GROUP}, swamping input (one 32·32 product first, "
             "then positive products in [2^-6, 2^-4))",
             "| K | " + " | ".join(head) + " |", "|---" * (len(ps) + 1) + "|"]
    for k in sorted(pred[ps[0]]):
        lines.append(f"| {k} | " + " | ".join(f"{pred[p][k]:.1e}" for p in ps) + " |")
    return "\n".join(lines) + "\n"


def fit_set(by_bits: dict, tol: float = 0.0) -> list[int]:
    """The fraction-bit counts whose mismatch is the smallest of ``by_bits`` ({f: mismatch}, as
    :func:`fit_frac_bits` returns), within ``tol`` of it: every f the run cannot tell apart.
    Sorted; keys may be str (a record read from JSON)."""
    if not by_bits:
        return []
    best = min(by_bits.values())
    return sorted(int(f) for f, v in by_bits.items() if v <= best + tol)


def fit_frac_bits(c_measured, qa, qb_nk, promote: int = 0, bits=range(8, 24),
                  group: int = GROUP) -> dict:
    """Fit the model to a measured (unscaled, fp32) C on the same FP8 inputs (a few rows):
    for each ``frac_bits`` the largest |C_model − C_measured| / |ref|. Returns ``{"fits": every f
    at the smallest mismatch (:func:`fit_set`), "unique": one f only, "exact": that mismatch is 0
    (bit for bit), "frac_bits": the f if unique else None (no tie is broken), "best": the largest
    f of ``fits`` (what the fit reported before 2026-12-01, by breaking the tie that way),
    "residual": the smallest mismatch, "by_bits": {f: mismatch}}``."""
    ref = np.asarray(qa).astype(np.float64) @ np.asarray(qb_nk).astype(np.float64).T
    cm = np.asarray(c_measured, dtype=np.float64)
    by = {}
    for f in bits:
        c = model_gemm(qa, qb_nk, f, promote=promote, group=group)
        by[int(f)] = float(np.max(np.abs(c - cm) / np.abs(ref)))
    fits = fit_set(by)
    return {"fits": fits, "unique": len(fits) == 1, "exact": by[fits[0]] == 0.0,
            "frac_bits": fits[0] if len(fits) == 1 else None, "best": max(fits),
            "residual": by[fits[0]], "by_bits": by}


def identified_bits(rows) -> dict:
    """What a set of fitted runs says about f: ``rows`` carry ``fit_by_bits`` ({f: mismatch}, as
    recorded). Returns ``{"exact_rows": rows fitted bit for bit by some f, "inexact_rows": the
    others, "unique_rows": exact rows with one f only, "consistent": the f every exact row fits
    (the intersection of their :func:`fit_set`), "identified": that intersection has one f}``."""
    exact = [r for r in rows if min(r["fit_by_bits"].values()) == 0.0]
    sets = [set(fit_set(r["fit_by_bits"])) for r in exact]
    both = sorted(set.intersection(*sets)) if sets else []
    return {"exact_rows": exact, "inexact_rows": [r for r in rows if r not in exact],
            "unique_rows": [r for r, st in zip(exact, sets) if len(st) == 1],
            "consistent": both, "identified": len(both) == 1}


# ---- inputs that identify f, and the group size -------------------------------------------------

#: The anchor of the identification inputs: A = 32, B = ±32, one product ±2^10 per anchor.
ANCHOR = 32.0


def _signed_smalls(shape, rng, fmt, lo: float = 0.25, hi: float = 2.0):
    """Fresh random-sign FP8 values with |x| in [lo, hi) (never 0 or ±1 by construction: a value
    that rounds to ±1 is moved one FP8 step up)."""
    x = rng.uniform(lo, hi, size=shape) * rng.choice((-1.0, 1.0), size=shape)
    q = x.astype(fmt.dtype).astype(np.float64)
    q = np.where(np.abs(q) == 1.0, np.sign(q) * (1.0 + 2.0 ** -fmt.frac_bits), q)
    return q.astype(fmt.dtype)


def _anchored(m, n, k, positions, rng, dtype):
    fmt = fp8_format(dtype)
    if k % GROUP:
        _fail("K", k, f"the identification inputs need K a multiple of {GROUP} (one k32 group)")
    qa, qb = _signed_smalls((m, k), rng, fmt), _signed_smalls((n, k), rng, fmt)
    for g, (p_plus, p_minus) in enumerate(positions):
        qa[:, g * GROUP + p_plus] = ANCHOR
        qa[:, g * GROUP + p_minus] = ANCHOR
        qb[:, g * GROUP + p_plus] = ANCHOR
        qb[:, g * GROUP + p_minus] = -ANCHOR
    return qa, qb


def probe_operands(m: int, n: int, k: int, rng=None, dtype: Any = "float8_e4m3fn"):
    """An input on which the model's sum depends on ``frac_bits`` in every configuration: in every
    group of 32 products (one k32 wgmma) two anchors, +2^10 and −2^10 (A = 32 and B = ±32 at two
    positions of the group drawn at random, the same for every row and column), and fresh
    random-sign products elsewhere, |A|, |B| in [1/4, 2) (products in [2^-4, 4), up to 8
    significant bits, so bits 2^1 … 2^-11 occur). The anchors cancel exactly, so the accumulator
    stays a random walk far below 2^10 (≈ √K) and every group is aligned to 2^10 — with or without
    promotion: the products are truncated at 2^(10 − f), and f = 8 … 21 give different sums.
    Returns (qa, qb_nk)."""
    rng = rng if rng is not None else np.random.default_rng()
    pos = [tuple(rng.choice(GROUP, size=2, replace=False)) for _ in range(k // GROUP)]
    return _anchored(m, n, k, pos, rng, dtype)


def group_operands(m: int, n: int, k: int, rng=None, dtype: Any = "float8_e4m3fn"):
    """The group-size input: products of alternating magnitude inside each k32 — the anchor pair
    ±2^10 at positions 0, 1 of even groups and 30, 31 of odd ones, random-sign products in
    [2^-4, 4) elsewhere (as :func:`probe_operands`). Aligned per 32 products, every small product
    is truncated at 2^(10 − f); aligned per 16 (8, 4), the half (three quarters, seven eighths) of
    the group without the anchors is aligned to its own largest exponent and keeps more bits: the
    model's sums for group = 4, 8, 16, 32 differ. (Groups of 64 or more align like 32 here: every
    k32 holds its anchors.) Returns (qa, qb_nk)."""
    rng = rng if rng is not None else np.random.default_rng()
    pos = [(0, 1) if g % 2 == 0 else (30, 31) for g in range(k // GROUP)]
    return _anchored(m, n, k, pos, rng, dtype)


#: The group sizes the group input is fitted over.
FIT_GROUPS = (4, 8, 16, 32)
#: K and promotion intervals of the identification experiment.
FIT_K = (256, 1024, 4096, 16384)
GROUP_K = (1024, 4096)


def fit_group(c_measured, qa, qb_nk, promote: int = 0, groups=FIT_GROUPS,
              bits=(12, 13, 14)) -> dict:
    """Fit (group, frac_bits) to a measured C: the largest relative mismatch for each pair.
    Returns ``{"fits": [(group, f)] at the smallest mismatch, "unique", "exact", "residual",
    "by_group": {"group/f": mismatch}}``."""
    by = {}
    for g in groups:
        for f, v in fit_frac_bits(c_measured, qa, qb_nk, promote, bits, group=g)["by_bits"].items():
            by[f"{g}/{f}"] = v
    best = min(by.values())
    fits = sorted((int(x.split("/")[0]), int(x.split("/")[1])) for x, v in by.items() if v == best)
    return {"fits": fits, "unique": len(fits) == 1, "exact": best == 0.0, "residual": best,
            "by_group": by}


def predict_identification(rows: int = 4, cols: int = 8, seed: int = 11) -> dict:
    """What the model says the identification runs can tell, on :func:`probe_operands` and
    :func:`group_operands` (``rows`` × ``cols`` elements, fixed ``seed``): per input, K and
    promotion, the model's output at f = 13 (group 32) taken as the "measurement" and fitted back —
    ``fits`` (must be [13] / [(32, 13)]), and the ``margin``: the smallest mismatch of any other f
    (or group), the size of the difference a run can see. ``{(input, K, promote): {...}}``."""
    out = {}
    rng = np.random.default_rng(seed)
    for name, make, ks in (("probe", probe_operands, FIT_K), ("group", group_operands, GROUP_K)):
        for k in ks:
            qa, qb = make(rows, cols, k, rng)
            for p in EXPERIMENT_PROMOTE:
                c = model_gemm(qa, qb, FRAC_BITS, promote=p)
                if name == "probe":
                    fit = fit_frac_bits(c, qa, qb, p)
                    others = [v for f, v in fit["by_bits"].items() if f != FRAC_BITS]
                else:
                    fit = fit_group(c, qa, qb, p)
                    others = [v for x, v in fit["by_group"].items() if x != f"{GROUP}/{FRAC_BITS}"]
                out[(name, k, p)] = {"fits": fit["fits"], "margin": min(others)}
    return out


def identification_table(pred: dict) -> str:
    """:func:`predict_identification` as the markdown table of :data:`FIT_PREDICTION` (which has
    the three predictions written above it)."""
    lines = ["| input | K | promote | model f = 13 (group 32) fitted back | smallest mismatch of any "
             "other f (group) |", "|---|---|---|---|---|"]
    for (name, k, p), v in pred.items():
        fits = ", ".join(f"{g}/{f}" if isinstance(g, int) and name == "group" else str(g)
                         for g, f in [(x if isinstance(x, tuple) else (x, None)) for x in v["fits"]])
        lines.append(f"| {name} | {k} | {p} | {fits} | {v['margin']:.1e} |")
    return "\n".join(lines) + "\n"


#: The prediction for the identification runs (``tools/gpu_ch07.py --fit``), written down on
#: 2026-12-01 BEFORE any GPU run of them. The model predicts that, on the GPU:
#:
#: 1. probe input, every K in FIT_K and promotion 0, 1, 4: the measured C matches the model at
#:    f = 13 (group 32) bit for bit on every fitted element, and f = 13 is the only f that does
#:    (fit_frac_bits: fits == [13], exact) — including promotion every k-tile, whose swamp rows
#:    were not bit-exact (there a k-tile without a dominant product sets the alignment; here the
#:    anchors do);
#: 2. group input, K in GROUP_K, promotion 0, 1, 4: (group 32, f = 13) is the only pair of
#:    FIT_GROUPS × {12, 13, 14} that fits, bit for bit;
#: 3. the table: the model's own output at f = 13 fitted back (so "fits" is what a perfect run
#:    gives), and the smallest mismatch of any other f or group — every one far above 0, so each
#:    run can tell them apart.
FIT_PREDICTION = """\
Prediction (2026-12-01, before any GPU run of these inputs; model: f = 13, groups of 32):
1. probe input, every K and promotion 0, 1, 4: C matches the model at f = 13 bit for bit on every fitted element, and no other f does (fits == [13], exact) - promotion every k-tile included.
2. group input: (group 32, f = 13) is the only pair of groups 4/8/16/32 x f 12/13/14 that fits, bit for bit.
3. Below, the model's own f = 13 output fitted back, and the smallest mismatch (of |ref|) of any other f or group: what a run must resolve.
| input | K | promote | model f = 13 (group 32) fitted back | smallest mismatch of any other f (group) |
|---|---|---|---|---|
| probe | 256 | 0 | 13 | 1.7e+00 |
| probe | 256 | 1 | 13 | 1.7e+00 |
| probe | 256 | 4 | 13 | 1.7e+00 |
| probe | 1024 | 0 | 13 | 6.3e-01 |
| probe | 1024 | 1 | 13 | 6.3e-01 |
| probe | 1024 | 4 | 13 | 6.3e-01 |
| probe | 4096 | 0 | 13 | 3.6e-01 |
| probe | 4096 | 1 | 13 | 3.6e-01 |
| probe | 4096 | 4 | 13 | 3.6e-01 |
| probe | 16384 | 0 | 13 | 8.8e-01 |
| probe | 16384 | 1 | 13 | 8.8e-01 |
| probe | 16384 | 4 | 13 | 8.8e-01 |
| group | 1024 | 0 | 32/13 | 8.9e-01 |
| group | 1024 | 1 | 32/13 | 9.3e-01 |
| group | 1024 | 4 | 32/13 | 8.1e-01 |
| group | 4096 | 0 | 32/13 | 3.9e-01 |
| group | 4096 | 1 | 32/13 | 3.7e-01 |
| group | 4096 | 4 | 32/13 | 3.6e-01 |
"""


# --------------------------------------------------------------------------------------------------
# The elementwise bound of an FP8 GEMM
# --------------------------------------------------------------------------------------------------

#: Addend truncations charged per group of 32 products: the 32 products and the accumulator,
#: plus 7 more accumulator truncations in case the hardware aligns in groups as small as 4.
TRUNCATIONS_PER_GROUP = GROUP + 8
#: float32's unit roundoff (round to nearest).
U32 = 2.0 ** -24
U_OUT = {"float32": 0.0, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}


def _add_group(s, err, ag, bg, u: float):
    """One group of :data:`GROUP` FP8 products (``ag`` M×32, ``bg`` N×32, float64) added to the
    exact partial sum ``s`` and its error bound ``err`` (both M×N, updated in place), charged as
    :func:`accumulation_bound`'s derivation says (``u`` = 2^-frac_bits). Returns the group's exact
    sum (M×N)."""
    part = ag @ bg.T
    mt = np.maximum(np.abs(s), np.abs(s + part)) + np.abs(ag) @ np.abs(bg).T + err
    err += (TRUNCATIONS_PER_GROUP * u + 2 * U32) * mt
    s += part
    return part


def accumulation_bound(qa, qb_nk, frac_bits: int = FRAC_BITS, promote: int = 0,
                       out_dtype: str = "float32", scale: float = 1.0,
                       ktile: int = KTILE) -> np.ndarray:
    """Elementwise bound on |C − scale · A·B| for the FP8 GEMM (A, B exact FP8 values; the
    reference is float64 of the dequantised inputs, scale = scale_a · scale_b).

    Derivation. Group t (32 products p, accumulator c_t on entry): every addend is truncated to a
    multiple of 2^(e − f), e = the largest exponent among c_t and p, so each loses < 2^(e − f) ≤
    2^-f · M_t with M_t = max(|c_t|, max |p|) ≤ |S_t| + Σ_group |p| + (error so far); charged
    :data:`TRUNCATIONS_PER_GROUP` times (32 products + accumulator realignments), plus the float32
    rounding of the group's sum (2^-24 · M_t, twice). S_t are the exact partial sums (with
    promotion, of the current interval: the wgmma sum restarts at 0). Promotion adds each
    interval's sum into fp32: 2^-24 of the running total per interval. Then the epilogue: the
    fp32 product of the scales and the multiply (2 · 2^-24 · |C|), and the output rounding
    (u_out · |C|, bf16 2^-8, fp16 2^-11). Every term is a worst case; an element from the wrong
    k-tile or row is off by ~√128 products, well above it (tests check that).
    Returns an M×N float64 array (in the units of C)."""
    a = np.asarray(qa).astype(np.float64)
    b = np.asarray(qb_nk).astype(np.float64)
    if out_dtype not in U_OUT:
        _fail("out_dtype", out_dtype, f"one of {sorted(U_OUT)}")
    m, k = a.shape
    span = promote * ktile if promote else k
    u = 2.0 ** -frac_bits
    bound = np.zeros((m, b.shape[0]))
    s_int = np.zeros_like(bound)        # exact partial sum of the current interval
    total = np.zeros_like(bound)        # exact partial sum of all K so far
    for g0 in range(0, k, GROUP):
        if g0 % span == 0:
            if g0:
                bound += U32 * (np.abs(total) + bound)       # promotion add into fp32
            s_int[:] = 0
        total += _add_group(s_int, bound, a[:, g0:g0 + GROUP], b[:, g0:g0 + GROUP], u)
    if promote:
        bound += U32 * (np.abs(total) + bound)
    c_mag = abs(scale) * (np.abs(total) + bound)
    return abs(scale) * bound + (2 * U32 + U_OUT[out_dtype]) * c_mag


def check_fp8_gemm(out, qa, qb_nk, scale_a: float = 1.0, scale_b: float = 1.0,
                   out_dtype: str = "float32", frac_bits: int = FRAC_BITS, promote: int = 0,
                   label: str = ""):
    """``out`` (M×N) against float64 of the dequantised inputs (scale_a · A) · (scale_b · B)ᵀ,
    element by element within :func:`accumulation_bound` (tol 1 on that scale): one element
    outside fails, poison left (NaN) counts as unwritten. Returns
    :class:`asynctc.core.checks.Check`."""
    from ..core import checks
    a64 = np.asarray(qa).astype(np.float64)
    b64 = np.asarray(qb_nk).astype(np.float64)
    s = float(np.float64(np.float32(scale_a)) * np.float64(np.float32(scale_b)))
    ref = s * (a64 @ b64.T)
    bound = accumulation_bound(qa, qb_nk, frac_bits, promote, out_dtype, s)
    # a zero bound (all-zero rows) would divide by zero: floor it at the smallest fp32 step
    bound = np.maximum(bound, np.finfo(np.float32).tiny)
    m, k = a64.shape
    return checks.compare(np.asarray(out), ref, label or "fp8", (m, b64.shape[0], k),
                          scale=bound, tol=1.0)


def _block_sigma(sa, sb, n: int, kt: int) -> np.ndarray:
    """M × N float64: sa[:, kt] · sb[col // 128, kt] (exact: two float32 significands fit in 53
    bits)."""
    return (np.asarray(sa, np.float64)[:, kt][:, None] *
            np.repeat(np.asarray(sb, np.float64)[:, kt], B_BLOCK[0])[None, :n])


def _check_block_args(qa, qb_nk, sa, sb):
    m, k = np.shape(qa)
    n = np.shape(qb_nk)[0]
    if k % KTILE:
        _fail("K", k, f"per-block scales along K need K a multiple of {KTILE} (one k-tile = one "
                      "1×128 / 128×128 block)")
    kt = k // KTILE
    for name, x, want in (("sa", sa, (m, kt)), ("sb", sb, (-(-n // B_BLOCK[0]), kt))):
        x = np.asarray(x)
        if x.dtype != np.float32:
            _fail(f"{name}.dtype", x.dtype.name, "per-block scales are float32")
        if x.shape != want:
            _fail(f"{name}.shape", x.shape, f"{'M' if name == 'sa' else 'ceil(N/128)'} × K/128 = "
                                            f"{want}")
    return m, n, k


def model_gemm_block(qa, qb_nk, sa, sb, frac_bits: int = FRAC_BITS, group: int = GROUP,
                     ktile: int = KTILE) -> np.ndarray:
    """The model of the BLOCK_SCALES kernel: per k-tile kt a :func:`tc_dot` W (fp32) of its 128
    products, then tot = fp32(tot + W · fp32(sa[r, kt] · sb[c / 128, kt])) — one fma, as the
    kernel's ``__fmaf_rn``. ``qa`` M×K and ``qb_nk`` N×K FP8, ``sa`` M × K/128 and ``sb``
    ceil(N/128) × K/128 float32. Returns M×N float32. Memory M·N·K·8 bytes: a few rows."""
    m, n, k = _check_block_args(qa, qb_nk, sa, sb)
    a = np.asarray(qa).astype(np.float64)
    b = np.asarray(qb_nk).astype(np.float64)
    s32 = (np.asarray(sa, np.float32)[:, None, :] *
           np.repeat(np.asarray(sb, np.float32), B_BLOCK[0], axis=0)[None, :n, :])   # fp32 product
    tot = np.zeros((m, n), np.float32)
    for kt in range(k // ktile):
        sl = slice(kt * ktile, (kt + 1) * ktile)
        w = tc_dot(a[:, None, sl] * b[None, :, sl], frac_bits, group).astype(np.float32)
        # fma: W · s exact in float64 (24 + 24 bits), + tot, one rounding to float32
        tot = (tot.astype(np.float64) + w.astype(np.float64) *
               s32[:, :, kt].astype(np.float64)).astype(np.float32)
    return tot


def block_scaled_bound(qa, qb_nk, sa, sb, frac_bits: int = FRAC_BITS,
                       out_dtype: str = "float32", ktile: int = KTILE) -> np.ndarray:
    """Elementwise bound on |C − ref| for the BLOCK_SCALES kernel, ref = float64 of the
    dequantised inputs = Σ_kt σ_kt · S_kt with σ_kt = sa[r, kt] · sb[c / 128, kt] and S_kt the
    exact sum of k-tile kt's 128 FP8 products.

    Derivation. k-tile kt alone is one promotion interval of :func:`accumulation_bound`: its
    wgmma sum W = S + e with |e| ≤ b_kt, charged per group of 32 as there ((40 · 2^-f + 2 · 2^-24)
    · M_t, M_t = max(|partial|, |partial + group|) + Σ_group |p| + b so far). The kernel forms
    fl(σ) = σ(1 + δ1) (float32 product of the two scales) and tot' = fl(tot + W · fl(σ)) (one fma,
    (1 + δ2)), |δ| ≤ 2^-24: per k-tile the error grows by σ · b_kt (the Tensor Core's sum, scaled)
    + 2^-24 · σ · (|S| + b_kt) (the scale product) + 2^-24 · (|running exact total| + bound) (the
    fma). The epilogue applies no further scale (the per-tensor ``scales`` are null); the output
    rounding adds u_out · |C| (bf16 2^-8, fp16 2^-11, fp32 0). Every term is a worst case; a scale
    from the wrong row, n-block or k-tile moves an element by |S_kt| · Δσ, typically ~√128 products
    times a scale, far above it (tests check that). Returns an M×N float64 array."""
    m, n, k = _check_block_args(qa, qb_nk, sa, sb)
    if out_dtype not in U_OUT:
        _fail("out_dtype", out_dtype, f"one of {sorted(U_OUT)}")
    a = np.asarray(qa).astype(np.float64)
    b = np.asarray(qb_nk).astype(np.float64)
    u = 2.0 ** -frac_bits
    bound = np.zeros((m, n))
    total = np.zeros((m, n))
    for kt in range(k // ktile):
        sig = _block_sigma(sa, sb, n, kt)
        b_t = np.zeros((m, n))
        s_t = np.zeros((m, n))
        for g0 in range(kt * ktile, (kt + 1) * ktile, GROUP):
            _add_group(s_t, b_t, a[:, g0:g0 + GROUP], b[:, g0:g0 + GROUP], u)
        bound += sig * b_t + U32 * sig * (np.abs(s_t) + b_t)
        total += sig * s_t
        bound += U32 * (np.abs(total) + bound)
    return bound + U_OUT[out_dtype] * (np.abs(total) + bound)


def check_fp8_block(out, qa, qb_nk, sa, sb, out_dtype: str = "float32",
                    frac_bits: int = FRAC_BITS, label: str = ""):
    """``out`` (M×N) of a BLOCK_SCALES run against float64 of the dequantised inputs,
    (sa ⊙ A) · (sb ⊙ B)ᵀ with the scales expanded to their 1×128 / 128×128 blocks, element by
    element within :func:`block_scaled_bound` (tol 1): one element outside fails, poison left
    (NaN) counts as unwritten. Returns :class:`asynctc.core.checks.Check`."""
    from ..core import checks
    m, n, k = _check_block_args(qa, qb_nk, sa, sb)
    ref, bound = block_reference(qa, qb_nk, sa, sb, frac_bits, out_dtype)
    return checks.compare(np.asarray(out), ref, label or "fp8 block scales", (m, n, k),
                          scale=bound, tol=1.0)


def block_reference(qa, qb_nk, sa, sb, frac_bits: int = FRAC_BITS, out_dtype: str = "float32"):
    """``(ref, bound)`` of :func:`check_fp8_block`: float64 of the dequantised inputs and the
    elementwise :func:`block_scaled_bound` (floored at the smallest normal float32), both M×N —
    computed once where one output is checked several times."""
    ref = dequantize(qa, sa, A_BLOCK) @ dequantize(qb_nk, sb, B_BLOCK).T
    bound = np.maximum(block_scaled_bound(qa, qb_nk, sa, sb, frac_bits, out_dtype),
                       np.finfo(np.float32).tiny)
    return ref, bound


def block_scaled_operands(m: int, n: int, k: int, dtype: Any = "float8_e4m3fn", rng=None,
                          spread: float = 3.0, b_dtype: Any = None):
    """Fresh inputs for a BLOCK_SCALES check: float32 A (M×K) and B (N×K), standard normal times
    a magnitude drawn per 1×128 block of A and per 128×128 block of B (e^U(−spread, spread), so
    neighbouring blocks' scales differ and a scale from the wrong row, n-block or k-tile shows),
    quantised per block (:func:`quantize_a`, :func:`quantize_b`, scales not powers of two so the
    kernel's scale product rounds); B in ``b_dtype`` where given (mixed FP8), else ``dtype``.
    Returns ``(qa, sa, qb, sb, a, b)``."""
    rng = rng if rng is not None else np.random.default_rng()
    kt = -(-k // KTILE)
    mag_a = np.repeat(np.exp(rng.uniform(-spread, spread, (m, kt))), KTILE, axis=1)[:, :k]
    nb = -(-n // B_BLOCK[0])
    mag_b = np.repeat(np.repeat(np.exp(rng.uniform(-spread, spread, (nb, kt))), B_BLOCK[0], 0),
                      KTILE, 1)[:n, :k]
    a = (rng.standard_normal((m, k)) * mag_a).astype(np.float32)
    b = (rng.standard_normal((n, k)) * mag_b).astype(np.float32)
    qa, sa = quantize_a(a, dtype)
    qb, sb = quantize_b(b, dtype if b_dtype is None else b_dtype)
    return qa, sa, qb, sb, a, b
