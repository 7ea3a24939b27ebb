"""Chapter 07: FP8 — the formats, scales, quantisation, the Tensor Core's accumulation, the FP8 GEMM.

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
the largest exponent; ``frac_bits`` is a parameter, fitted on the GPU (``tools/gpu_ch07.py``).
**Promotion** (the fix, DeepSeek-V3 §3.3.2): every ``promote`` k-tiles the wgmma sums are added
into fp32 registers and restarted, so the reduced-precision sum never covers more than
promote × 128 products.

:data:`ACC_PREDICTION` is the model's prediction for the swamping experiment, written down before
the first GPU run.

**Per-block scales in the kernel** (``WSConfig(block_scales=True)``, the kernel's BLOCK_SCALES):
a k-tile of 128 fp8 elements is exactly one scale block along K, so with ``promote`` = 1 the
consumer multiplies each k-tile's wgmma sums by sa[row, kt] · sb[n-block, kt] as it adds them
into the fp32 totals — the scales never enter the Tensor Core's reduced-precision sum.
:func:`quantize_blocks` → :func:`verify_block_scaled` (float64 of the dequantised inputs,
:func:`block_scaled_bound`); :func:`model_gemm_block` is the model of that kernel.

**The FP8 GEMM** is chapter 06's warp-specialized kernel with DT = 2 / 3
(:class:`asynctc.warp_specialization.WSConfig` with an fp8 dtype): :func:`verify_fp8` checks it
against float64 of the dequantised inputs with :func:`accumulation_bound`; ``SUITES["fp8"]``
(:func:`measure_fp8`, ``tools/gpu_ch07.py --record``) runs the experiment and times it against
cuBLASLt's FP8 GEMM (``torch._scaled_mm``) and our fp16 top rung in the same run.

Errors: :class:`FP8Error` (a ``ValueError``) naming field, value and rule.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import numpy as np

from .core import runtime


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


def tc_dot(products, frac_bits: int = FRAC_BITS, group: int = GROUP) -> np.ndarray:
    """The model's sum of ``products`` (float64, shape (..., K), exact FP8 × FP8 products) along
    the last axis, starting from 0: per group of ``group`` products, the accumulator and the
    group's products are aligned to the largest exponent among them and truncated toward zero to
    ``frac_bits`` fraction bits below it, summed exactly, and the sum rounded toward zero to
    float32. ``frac_bits`` ≥ 52 reproduces an exact sum (up to the float32 roundings)."""
    p = np.asarray(products, dtype=np.float64)
    if not isinstance(frac_bits, (int, np.integer)) or not 1 <= frac_bits <= 60:
        _fail("frac_bits", frac_bits, "an integer in 1..60")
    if not isinstance(group, (int, np.integer)) or group < 1:
        _fail("group", group, "a positive integer")
    c = np.zeros(p.shape[:-1])
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


def fit_frac_bits(c_measured, qa, qb_nk, promote: int = 0, bits=range(8, 24)) -> dict:
    """Fit the model to a measured (unscaled, fp32) C on the same FP8 inputs (a few rows):
    for each ``frac_bits`` the largest |C_model − C_measured| / |ref|; returns ``{"frac_bits":
    best, "residual": its largest relative mismatch, "by_bits": {bits: mismatch}}``."""
    ref = np.asarray(qa).astype(np.float64) @ np.asarray(qb_nk).astype(np.float64).T
    cm = np.asarray(c_measured, dtype=np.float64)
    by = {}
    for f in bits:
        c = model_gemm(qa, qb_nk, f, promote=promote)
        by[int(f)] = float(np.max(np.abs(c - cm) / np.abs(ref)))
    best = min(by, key=lambda f: (by[f], -f))
    return {"frac_bits": best, "residual": by[best], "by_bits": by}


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
    from .core import checks
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
    from .core import checks
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
                          spread: float = 3.0):
    """Fresh inputs for a BLOCK_SCALES check: float32 A (M×K) and B (N×K), standard normal times
    a magnitude drawn per 1×128 block of A and per 128×128 block of B (e^U(−spread, spread), so
    neighbouring blocks' scales differ and a scale from the wrong row, n-block or k-tile shows),
    quantised per block (:func:`quantize_a`, :func:`quantize_b`, scales not powers of two so the
    kernel's scale product rounds). Returns ``(qa, sa, qb, sb, a, b)``."""
    rng = rng if rng is not None else np.random.default_rng()
    kt = -(-k // KTILE)
    mag_a = np.repeat(np.exp(rng.uniform(-spread, spread, (m, kt))), KTILE, axis=1)[:, :k]
    nb = -(-n // B_BLOCK[0])
    mag_b = np.repeat(np.repeat(np.exp(rng.uniform(-spread, spread, (nb, kt))), B_BLOCK[0], 0),
                      KTILE, 1)[:n, :k]
    a = (rng.standard_normal((m, k)) * mag_a).astype(np.float32)
    b = (rng.standard_normal((n, k)) * mag_b).astype(np.float32)
    qa, sa = quantize_a(a, dtype)
    qb, sb = quantize_b(b, dtype)
    return qa, sa, qb, sb, a, b


def verify_block_scaled(cfg, m: int, n: int, k: int, rng=None, frac_bits: int = FRAC_BITS):
    """Run the ``cfg.block_scales`` config on :func:`block_scaled_operands` (poisoned output) and
    check every element (:func:`check_fp8_block`). Returns :class:`asynctc.core.checks.Check`."""
    from . import warp_specialization as W
    if not cfg.block_scales:
        _fail("cfg.block_scales", False, "verify_block_scaled needs a block_scales config")
    W.check_shapes(m, n, k, cfg)
    qa, sa, qb, sb, _, _ = block_scaled_operands(m, n, k, cfg.dtype, rng)
    g = W.run_ws(qa, qb, cfg, block_scales=(sa, sb))
    return check_fp8_block(g.out.to_host(), qa, qb, sa, sb, cfg.out_dtype, frac_bits, cfg.label())


# --------------------------------------------------------------------------------------------------
# The FP8 GEMM: verify, configs
# --------------------------------------------------------------------------------------------------

def verify_fp8(cfg, m: int, n: int, k: int, rng=None, frac_bits: int = FRAC_BITS,
               scaled: bool = True):
    """Run the fp8 ``cfg`` (:class:`asynctc.warp_specialization.WSConfig`) on fresh random FP8
    inputs (:func:`random_fp8`), with per-tensor scales (``scaled``: random powers of two and
    non-powers of two, so the epilogue's multiply is exercised), poisoned output, and check every
    element (:func:`check_fp8_gemm`); a ``block_scales`` config goes to
    :func:`verify_block_scaled`. Returns :class:`asynctc.core.checks.Check`."""
    from . import warp_specialization as W
    if cfg.block_scales:
        return verify_block_scaled(cfg, m, n, k, rng, frac_bits)
    W.check_shapes(m, n, k, cfg)
    rng = rng if rng is not None else np.random.default_rng()
    qa, qb = random_fp8((m, k), cfg.dtype, rng), random_fp8((n, k), cfg.dtype, rng)
    sa, sb = (np.float32(rng.uniform(0.5, 2.0)), np.float32(2.0 ** -3)) if scaled else (1.0, 1.0)
    g = W.run_ws(qa, qb, cfg, scales=np.array([sa, sb], np.float32) if scaled else None)
    return check_fp8_gemm(g.out.to_host(), qa, qb, sa, sb, cfg.out_dtype, frac_bits, cfg.promote,
                          cfg.label())


def fp8_config(dtype: str = "float8_e4m3fn", promote: int = 0, **kw):
    """The FP8 GEMM configurations of chapter 07: chapter 06's top rung (128×256, two consumers,
    persistent, clusters of 2, TMA-store epilogue, raster groups of 16 tile rows, bf16 C) with an
    fp8 dtype; with ``promote``
    the tile is 128×128 (two sets of accumulators must fit: 2 × 64 per thread)."""
    from . import warp_specialization as W
    base = dict(dtype=dtype, bm=128, bn=256, consumers=2, stages=4, out_dtype="bfloat16",
                persistent=True, cluster=2, tma_store=True, group_m=W.RASTER_GROUP_M)
    if promote:
        base.update(bn=128, stages=6, promote=promote)
    base.update(kw)
    return W.WSConfig(**base)


def fp8_shape_config(m: int, n: int, k: int, dtype: str = "float8_e4m3fn", *,
                     sm_count: int | None = None):
    """The FP8 top rung's schedule for an M×N×K problem with the tile chosen by the shape: what
    :func:`measure_fp8_nonsquare` times.

    Schedule as :func:`fp8_config`: persistent, TMA-store epilogue, C in bf16, B stored N×K
    (K-major: fp8 wgmma has no transpose), per-tensor scales, no ``edges`` (the FP8 builds have
    none). Tile and cluster from :func:`asynctc.warp_specialization.shape_tile` (``sm_count``
    SMs, default the device's, else 132): bm = 64 with one consumer warpgroup for M ≤ 64 (then no
    setmaxnreg: one consumer's ≤ 128 accumulators fit the 248 registers each of 256 threads
    starts with), else 128 with two; bn 256 / 128 / 64 by wave fill; clusters of 2 with ≥ 2 tile
    rows and bn ≥ 128 — and, since this build does not round tile rows up to whole clusters,
    only with an even number of tile rows (else cluster 1). bk = 128 (one 128-byte row of fp8).
    Stages: as many as fit one CTA's shared memory (:func:`~asynctc.warp_specialization.most_stages`;
    128×256 with the store staging: 4, as :func:`fp8_config`). For the square 4096³ / 8192³ (and
    every shape whose waves 128×256 fills) this is :func:`fp8_config` exactly.

    Raises :class:`asynctc.warp_specialization.WarpSpecializationError` naming the rule for a
    shape the exact build cannot do: M, N, K not positive multiples of bm, bn, 128 (e.g. M = 32:
    the thin tile is 64 rows), and for a dtype that is not FP8."""
    from . import warp_specialization as W
    if dtype not in W.FP8_DTYPES:
        W._fail("dtype", dtype, f"fp8_shape_config is for the FP8 builds: one of {W.FP8_DTYPES}")
    for name, v in (("M", m), ("N", n), ("K", k)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not 1 <= v < 2**31:
            W._fail(name, v, "must be an integer in 1 .. 2^31 - 1")
    if sm_count is None:
        info = runtime.device_info()
        sm_count = info.sm_count if info else W.DEFAULT_SM_COUNT
    tile = W.shape_tile(m, n, sm_count)
    if tile["cluster"] == 2 and (m // tile["bm"]) % 2:
        tile["cluster"] = 1
    fields = dict(dtype=dtype, **tile, out_dtype="bfloat16", persistent=True, tma_store=True,
                  group_m=W.RASTER_GROUP_M)
    if tile["consumers"] == 1:
        fields["setmaxnreg"] = False
    cfg = W.most_stages(fields, (m, n, k))
    W.check_shapes(m, n, k, cfg)
    return cfg


#: The non-square FP8 shapes the FP8 top rung could not run before the tile was chosen by the
#: shape (M = 64, 128: the 128-row tile with clusters of 2 needs M a multiple of 256) and the one
#: it ran on half the SMs (M = 256: 2 × 32 tiles of 128×256): problems of these shapes, sized for
#: a quick correctness check (the tiles :func:`fp8_shape_config` picks at N = 8192 are checked on
#: them, :func:`shapes_for`); the last has more tiles than SMs for each of those tiles (64×64:
#: 1024, 128×64: 512, 128×128: 256 tiles), so the persistent loop and the cluster pairs walk
#: several tiles — at an eighth of the float64 cost of :data:`PERSISTENT_SHAPE`.
THIN_CHECK_SHAPES = ((64, 1024, 512), (128, 1024, 512), (256, 1024, 512), (256, 16384, 256))
#: The shapes whose :func:`fp8_shape_config` is added to :func:`correctness_configs`.
THIN_SHAPES = ((64, 8192, 8192), (128, 8192, 8192), (256, 8192, 8192))


def shape_configs(shapes=THIN_SHAPES, dtypes=None, sm_count: int = 132) -> list:
    """:func:`fp8_shape_config` of each shape and FP8 dtype (default e4m3 and e5m2; ``sm_count``
    fixed at the H200's 132 so the list does not depend on the machine), without repeats."""
    from . import warp_specialization as W
    out = []
    for dt in dtypes or W.FP8_DTYPES:
        for shp in shapes:
            c = fp8_shape_config(*shp, dt, sm_count=sm_count)
            if c not in out:
                out.append(c)
    return out


#: Correctness shapes of the FP8 checks: several CTA rows and columns, 8 k-tiles of 128; a short
#: K (3 k-tiles, fewer than the stages; with promote 2 and 4 a partial last interval); and for
#: the persistent / cluster variants more tiles than SMs (256 tiles of 128×256).
CHECK_SHAPES = ((512, 768, 1024), (256, 512, 384))
PERSISTENT_SHAPE = (2048, 4096, 512)
#: Promotion intervals (k-tiles) compiled and checked.
PROMOTES = (1, 2, 4)


def block_configs(dtypes=None) -> list:
    """The per-block-scale variants (``block_scales``, promote 1): per fp8 dtype the plain
    128×128 (C fp32) and the top configuration (persistent, clusters, TMA store, bf16 C); for
    e4m3 also 256×64 (two m64 atoms per consumer: 4 A scales per thread; two tiles per 128-column
    B block)."""
    from . import warp_specialization as W
    out = []
    for dt in dtypes or W.FP8_DTYPES:
        out += [W.WSConfig(dtype=dt, bm=128, bn=128, consumers=2, stages=4, promote=1,
                           block_scales=True),
                fp8_config(dt, promote=1, block_scales=True)]
        if dt == "float8_e4m3fn":
            out.append(W.WSConfig(dtype=dt, bm=256, bn=64, consumers=2, stages=4, promote=1,
                                  block_scales=True))
    return out


def block_timed_config():
    """The per-block-scale variant timed (at the largest size only): the promoted top
    configuration with block scales; the cost of the scales is read against the same config
    without them (promote 1, per-tensor scales), timed in the same run."""
    return fp8_config(promote=1, block_scales=True)


def correctness_configs() -> list:
    """Every FP8 variant: e4m3 and e5m2; chapter 06's rungs 3, 5, 6, 7 with fp8 inputs (C fp32,
    bf16; fp16 for the top); 256×128; the promoted variants (128×128, every 1, 2, 4 k-tiles,
    plain and with persistent + cluster + TMA store); the per-block-scale variants
    (:func:`block_configs`); the tiles the shape picks for thin M (:func:`shape_configs` of
    :data:`THIN_SHAPES`: 64×64 with one consumer, 128×64 without clusters, 128×128 with)."""
    from . import warp_specialization as W
    out = []
    for dt in W.FP8_DTYPES:
        ws2 = W.WSConfig(dtype=dt, bm=128, bn=256, consumers=2, stages=4)
        cands = [ws2, ws2.replace(out_dtype="bfloat16"), ws2.replace(bm=256, bn=128),
                 ws2.replace(persistent=True, out_dtype="bfloat16"),
                 ws2.replace(persistent=True, cluster=2),
                 fp8_config(dt), fp8_config(dt, out_dtype="float16")]
        for p in PROMOTES:
            cands += [ws2.replace(bn=128, promote=p), fp8_config(dt, promote=p)]
        for c in cands:
            if c not in out:
                out.append(c)
    out += block_configs()
    return out + [c for c in shape_configs() if c not in out]


def shapes_for(cfg) -> list[tuple[int, int, int]]:
    """The shapes :func:`correctness_configs` are checked on (those the tile divides):
    :data:`CHECK_SHAPES`, and for persistent or cluster configs :data:`PERSISTENT_SHAPE` — but
    for the thin-M tiles (:func:`shape_configs`) :data:`THIN_CHECK_SHAPES` instead of it."""
    from . import warp_specialization as W
    if cfg in shape_configs():
        shapes = list(CHECK_SHAPES) + list(THIN_CHECK_SHAPES)
    else:
        shapes = list(CHECK_SHAPES) + ([PERSISTENT_SHAPE] if cfg.persistent or cfg.cluster > 1
                                       else [])
    out = []
    for s in shapes:
        try:
            W.check_shapes(*s, cfg)
            out.append(s)
        except W.WarpSpecializationError:
            continue
    return out


def check_all(configs=None, rng=None, progress=None, frac_bits: int = FRAC_BITS) -> list[dict]:
    """:func:`verify_fp8` every config on its shapes; raise :class:`RuntimeError` at the first
    failure (so a wrong kernel's speed is never recorded)."""
    rng = rng if rng is not None else np.random.default_rng()
    say = progress or (lambda _s: None)
    rows = []
    for cfg in configs if configs is not None else correctness_configs():
        for shp in shapes_for(cfg):
            c = verify_fp8(cfg, *shp, rng=rng, frac_bits=frac_bits)
            rows.append({"config": cfg.label(), **cfg.as_dict(), **c.as_dict()})
            if not c.passed:
                raise RuntimeError(f"wrong: {cfg.label()} {shp}: {c.as_dict()}")
        say(f"ok {cfg.label()}")
    return rows


# --------------------------------------------------------------------------------------------------
# Baseline: cuBLASLt's FP8 GEMM through torch._scaled_mm
# --------------------------------------------------------------------------------------------------

def scaled_mm(da, db_nk, dout, scale_a: float, scale_b: float, fast_accum: bool, stream=None):
    """A callable that enqueues cuBLASLt's FP8 GEMM, ``torch._scaled_mm(A, B, scale_a, scale_b,
    out_dtype=..., use_fast_accum=...)``, on the same device memory as our kernel: A (M×K,
    row-major), B given as the transpose view of our N×K array (K×N column-major, which
    _scaled_mm requires for mat2), scales as float32 tensors (per-tensor: one element each),
    C = scale_a · scale_b · A·B in ``dout``'s dtype. ``fast_accum`` False asks cuBLASLt to promote
    (CUBLASLT_MATMUL_DESC_FAST_ACCUM = 0), True lets it accumulate in the Tensor Core alone.
    Schema: aten::_scaled_mm(Tensor self, Tensor mat2, Tensor scale_a, Tensor scale_b,
    Tensor? bias=None, Tensor? scale_result=None, ScalarType? out_dtype=None,
    bool use_fast_accum=False). The ``out=`` overload is used where torch has it; else the result
    is copied into ``dout`` (``run.copies`` is then True: the copy is timed too).
    Needs torch with CUDA (the GPU machine)."""
    import torch
    from .core import bench
    s = stream or runtime.default_stream()
    ta = bench._as_lib_tensor("torch", da)
    tb = bench._as_lib_tensor("torch", db_nk).t()
    to = bench._as_lib_tensor("torch", dout)
    sa = torch.tensor(float(scale_a), dtype=torch.float32, device="cuda")
    sb = torch.tensor(float(scale_b), dtype=torch.float32, device="cuda")
    ts = torch.cuda.ExternalStream(int(s.handle))
    kw = dict(scale_a=sa, scale_b=sb, out_dtype=to.dtype, use_fast_accum=fast_accum)
    state = {"copies": False}
    with torch.cuda.stream(ts):
        try:
            torch._scaled_mm(ta, tb, out=to, **kw)
        except (TypeError, RuntimeError):
            state["copies"] = True
            to.copy_(torch._scaled_mm(ta, tb, **kw))

    def run():
        with torch.cuda.stream(ts):
            if state["copies"]:
                to.copy_(torch._scaled_mm(ta, tb, **kw))
            else:
                torch._scaled_mm(ta, tb, out=to, **kw)
    run.copies = state["copies"]
    return run


# --------------------------------------------------------------------------------------------------
# The "fp8" suite
# --------------------------------------------------------------------------------------------------

SIZES = (4096, 8192)
#: Rows checked of the accumulation experiment's model fit (the model holds M·N·K products).
FIT_ROWS, FIT_COLS = 2, 8


def _fp32_out_config(promote: int, dtype: str = "float8_e4m3fn"):
    from . import warp_specialization as W
    return W.WSConfig(dtype=dtype, bm=128, bn=128 if promote else 256, consumers=2, stages=4,
                      promote=promote)


def accumulation_experiment(rng, say, ks=None, promotes=None) -> dict:
    """On the GPU: the swamping input (:func:`swamp_operands`, M = 128, N = 256) and fresh
    standard-normal FP8 inputs, for each K and promotion interval, C in fp32 without scales;
    the relative error of every element against float64 (median, max), and the model fitted to
    the measured swamp output (:func:`fit_frac_bits` on :data:`FIT_ROWS` × :data:`FIT_COLS`
    elements) per K and promotion."""
    from . import warp_specialization as W
    ks = EXPERIMENT_K if ks is None else ks
    promotes = EXPERIMENT_PROMOTE if promotes is None else promotes
    m, n = 128, 256
    rows = []
    for k in ks:
        qa, qb = swamp_operands(m, n, k, rng)
        ra, rb = random_fp8((m, k), rng=rng), random_fp8((n, k), rng=rng)
        for p in promotes:
            cfg = _fp32_out_config(p)
            g = W.run_ws(qa, qb, cfg)
            c = g.out.to_host()
            err = relative_errors(c, qa, qb)
            fit = fit_frac_bits(c[:FIT_ROWS, :FIT_COLS], qa[:FIT_ROWS], qb[:FIT_COLS], promote=p)
            g2 = W.run_ws(ra, rb, cfg)
            c2 = g2.out.to_host().astype(np.float64)
            ref2 = ra.astype(np.float64) @ rb.astype(np.float64).T
            mag2 = np.abs(ra.astype(np.float64)) @ np.abs(rb.astype(np.float64)).T
            e2 = np.abs(c2 - ref2) / mag2
            rows.append({"k": k, "promote": p, "config": cfg.label(),
                         "swamp_median_rel_err": float(np.median(err)),
                         "swamp_max_rel_err": float(np.max(err)),
                         "fit_frac_bits": fit["frac_bits"], "fit_residual": fit["residual"],
                         "fit_by_bits": fit["by_bits"],
                         "random_median_err_over_absAB": float(np.median(e2)),
                         "random_max_err_over_absAB": float(np.max(e2))})
            say(f"K={k} promote={p}: swamp median rel err {rows[-1]['swamp_median_rel_err']:.2e}"
                f" (model frac_bits fit {fit['frac_bits']}, residual {fit['residual']:.1e}); "
                f"random max err/|A||B| {rows[-1]['random_max_err_over_absAB']:.1e}")
            del g, g2
    return {"rows": rows, "prediction": ACC_PREDICTION, "m": m, "n": n}


def fitted_bits(exp: dict) -> int | None:
    """The fraction bits the experiment's fits agree on: the smallest fitted value over the K and
    promotion rows (conservative for the bound), None without rows."""
    bits = [r["fit_frac_bits"] for r in exp.get("rows", [])]
    return min(bits) if bits else None


def timed_configs() -> list:
    """The FP8 variants timed: the top rung with fp8 (no promotion), the same on the promoted
    variants' 128×128 tile without promotion (so the cost of promotion is read at equal tile),
    promoted every 1 and 4 k-tiles (128×128), and the top rung without clusters."""
    return [fp8_config(), fp8_config(bn=128, stages=6), fp8_config(promote=1),
            fp8_config(promote=4), fp8_config(cluster=1, tma_store=False)]


def _time_ours(cfg, da, db, dc, dsc, qa, qb, sa, sb, rows_idx, frac_bits, reps, where):
    """Time one FP8 config on the device operands (poisoned output, clock in flight), then check
    its output on the sampled rows; raises :class:`RuntimeError` if they are wrong. Returns
    (timing, check, grid)."""
    from . import warp_specialization as W
    from .core import bench
    dc.poison()
    g = W.make_gemm(cfg, da, db, dc, scales=dsc)
    t = bench.time_gpu(g.launcher(), warmup=3, reps=reps, clock=True)
    g.check_error()
    chk = _sampled_fp8_check(dc, qa, qb, sa, sb, cfg, rows_idx, frac_bits)
    if not chk.passed:
        raise RuntimeError(f"timed run wrong: {cfg.label()} {where}: {chk.as_dict()}")
    return t, chk, g.grid


def _sampled_fp8_check(out, qa, qb, sa, sb, cfg, rows_idx, frac_bits):
    host = out.to_host()
    return check_fp8_gemm(host[rows_idx], qa[rows_idx], qb, sa, sb, cfg.out_dtype, frac_bits,
                          cfg.promote, cfg.label())


#: Chapter 06's non-square shapes (and e5m2 at the square sizes) timed by :func:`measure_fp8`:
#: the FP8 top rung (e4m3 and e5m2) beside cuBLASLt FP8 (e4m3, fast accumulation) per shape.
NONSQUARE_SHAPES = None      # None: asynctc.warp_specialization.NONSQUARE_SHAPES


def measure_fp8_nonsquare(shapes, reps, say, rng, frac_bits, lib) -> list[dict]:
    """The FP8 top rung with the tile chosen by the shape (:func:`fp8_shape_config`), e4m3 and
    e5m2 inputs (C in bf16), on each (M, N, K) of ``shapes`` beside cuBLASLt FP8 (e4m3, fast
    accumulation; torch._scaled_mm), each timed output checked on sampled rows (one per 128).
    cuBLASLt is timed on every shape, also where ours cannot run; a shape the exact FP8 build
    cannot do (not a multiple of the chosen tile) gets a ``skipped`` row naming the rule. Each of
    our rows records its config's ``label`` and ``tile`` (bm×bn×bk/consumers)."""
    from . import warp_specialization as W
    from .core import bench
    from .core.memory import DeviceArray
    from .models.layout import dtype_of
    out = []
    for (m, n, k) in shapes:
        base = {"m": m, "n": n, "k": k, "out_dtype": "bfloat16"}
        flop = bench.gemm_flop(m, n, k)
        lt = None
        for dt in ("float8_e4m3fn", "float8_e5m2"):
            try:
                cfg = fp8_shape_config(m, n, k, dt)
            except W.WarpSpecializationError as e:
                cfg, why = None, str(e)
            baseline = lib == "torch" and dt == "float8_e4m3fn"
            if cfg is None:
                out.append({**base, "dtype": dt, "kernel": "ours", "skipped": why})
                if not baseline:
                    continue
            qa, qb = random_fp8((m, k), dt, rng=rng), random_fp8((n, k), dt, rng=rng)
            sa, sb = np.float32(rng.uniform(0.5, 2.0)), np.float32(0.125)
            da, db = DeviceArray.from_host(qa), DeviceArray.from_host(qb)
            dsc = DeviceArray.from_host(np.array([sa, sb], np.float32))
            rows_idx = np.minimum(np.arange(0, m, 128) + rng.integers(0, 128, -(-m // 128)), m - 1)
            dc = DeviceArray.poisoned((m, n), dtype_of("bfloat16"))
            if baseline:
                fn = scaled_mm(da, db, dc, sa, sb, True)
                t = bench.time_gpu(fn, warmup=3, reps=reps, clock=True)
                chk = _sampled_fp8_check(dc, qa, qb, sa, sb, fp8_config(dt), rows_idx, frac_bits)
                lt = {**base, "dtype": dt, "kernel": "cuBLASLt", "fast_accum": True, **t.as_dict(),
                      "tflops": bench.tflops(flop, t.median_ms), "check_rows": chk.as_dict()}
                out.append(lt)
                say(f"{m}x{n}x{k} cuBLASLt e4m3 fast: {lt['tflops']:.0f} TFLOP/s")
            if cfg is not None:
                t, chk, grid = _time_ours(cfg, da, db, dc, dsc, qa, qb, sa, sb, rows_idx,
                                          frac_bits, reps, f"{m}x{n}x{k}")
                tf = bench.tflops(flop, t.median_ms)
                row = {**base, "dtype": dt, "kernel": "ours", "label": cfg.label(),
                       "tile": cfg.tile_name, "cluster": cfg.cluster, "stages": cfg.stages,
                       **t.as_dict(), "tflops": tf, "check_rows": chk.as_dict(), "grid": grid,
                       "of_cublaslt_fast": tf / lt["tflops"] if lt else None}
                out.append(row)
                say(f"{m}x{n}x{k} {dt} {cfg.tile_name} cluster {cfg.cluster}: "
                    f"{row['tflops']:.0f} TFLOP/s"
                    + (f" ({row['of_cublaslt_fast']:.2f} of cuBLASLt e4m3 fast)" if lt else ""))
            del da, db, dc, dsc
    return out


def nonsquare_fp8_table(rows: list[dict]) -> str:
    """The FP8 non-square rows: shape, dtype, kernel, our tile (bm×bn×bk/consumers, then
    "cluster2" with clusters of 2), TFLOP/s, of cuBLASLt (e4m3, fast accum); a skipped row says
    why."""
    lines = [f"{'M×N×K':18s} {'dtype':14s} {'kernel':9s} {'tile':23s} {'TFLOP/s':>7s} "
             f"{'of LtFast':>9s}"]
    for r in rows:
        shape = f"{r['m']}×{r['n']}×{r['k']}"
        lab = r.get("label") or ""               # records before "tile": read it off the label
        got = re.search(r"\d+x\d+x\d+/c\d", lab)
        tile = r.get("tile") or (got.group(0) if got else "")
        tile += " cluster2" if r.get("cluster", 2 if " cluster2" in lab else 1) == 2 else ""
        if r.get("skipped"):
            lines.append(f"{shape:18s} {r['dtype']:14s} {r['kernel']:9s} {tile:23s} {'-':>7s} "
                         f"{'-':>9s}  not run: {r['skipped']}")
            continue
        ratio = r.get("of_cublaslt_fast")
        lines.append(f"{shape:18s} {r['dtype']:14s} {r['kernel']:9s} {tile:23s} "
                     f"{r['tflops']:7.0f} {'' if ratio is None else format(ratio, '9.2f')}")
    return "\n".join(lines)


def measure_fp8(progress=None, sizes=None, check: bool = True, reps: int = 10,
                experiment: bool = True, nonsquare=None) -> dict:
    """The "fp8" suite.

    1. Compile every FP8 variant and the fp16 top rung in parallel; registers and spills per
       variant (the promoted ones hold two accumulator sets).
    2. ``experiment``: :func:`accumulation_experiment` (error vs K with and without promotion,
       the model's fraction bits fitted); ``frac_bits`` for the bounds = min(13, fitted).
    3. ``check``: :func:`check_all` (every FP8 variant against float64 of the dequantised inputs,
       elementwise bound), stopping at the first failure.
    4. Per size: e4m3 operands (random, per-tensor scales), C bf16: cuBLASLt FP8
       (torch._scaled_mm, fast accumulation on and off), each of :func:`timed_configs`; at the
       largest size also :func:`time_block_scaled` (per-block scales); fp16
       operands: cuBLAS fp16 and our fp16 top rung (chapter 06 rung 7) — all in the same run.
       Every timed output checked on one random row per 128 rows. Medians; never asserted on.
    5. ``nonsquare`` (default chapter 06's non-square shapes and the square ``sizes``):
       :func:`measure_fp8_nonsquare` — the FP8 top rung with the tile chosen by the shape
       (:func:`fp8_shape_config`), e4m3 and e5m2, beside cuBLASLt FP8 timed on every shape."""
    from . import warp_specialization as W
    from .core import bench, checks, records
    from .core.memory import DeviceArray
    say = progress or (lambda _s: None)
    sizes = SIZES if sizes is None else sizes
    rng = np.random.default_rng()
    fp16_top = W.RUNGS[-1].make("float16")
    cfgs = correctness_configs() + [c for c in timed_configs()] + [block_timed_config()] + \
        [_fp32_out_config(p) for p in EXPERIMENT_PROMOTE] + [fp16_top]
    jobs = list({repr(W.compile_job(c)): W.compile_job(c) for c in cfgs}.values())
    say(f"compiling {len(jobs)} variants")
    runtime.precompile(jobs)
    out: dict = {"registers": {}, "checks": [], "rows": [], "baseline_library":
                 bench.baseline_library(), "formats": {k: dataclasses.asdict(v)
                                                       for k, v in FORMATS.items()}}
    for c in dict.fromkeys(cfgs):
        ck = W.compile_ws(c)
        sr = W.sass_registers(ck, c)
        out["registers"][c.label()] = {"ptxas": ck.resources.registers,
                                       "spill_bytes": ck.resources.spill_stores,
                                       "spill_loads": ck.resources.spill_loads,
                                       "accumulator_registers": c.accumulator_registers,
                                       "sass_alloc": sr["alloc"], "dropped": sr["dropped"]}
    frac = FRAC_BITS
    if experiment:
        out["experiment"] = accumulation_experiment(rng, say)
        fb = fitted_bits(out["experiment"])
        frac = min(FRAC_BITS, fb) if fb else FRAC_BITS
        say(f"model fraction bits fitted: {fb}; bounds use {frac}")
    out["frac_bits_bound"] = frac
    if check:
        out["checks"] = check_all(rng=rng, progress=say, frac_bits=frac)
        say(f"{len(out['checks'])} checks passed")
    lib = out["baseline_library"]
    for size in sizes:
        flop = bench.gemm_flop(size, size, size)
        qa, qb = random_fp8((size, size), rng=rng), random_fp8((size, size), rng=rng)
        sa, sb = np.float32(rng.uniform(0.5, 2.0)), np.float32(0.125)
        da, db = DeviceArray.from_host(qa), DeviceArray.from_host(qb)
        dsc = DeviceArray.from_host(np.array([sa, sb], np.float32))
        rows_idx = np.minimum(np.arange(0, size, 128) + rng.integers(0, 128, size // 128), size - 1)
        from .models.layout import dtype_of
        dc = DeviceArray.poisoned((size, size), dtype_of("bfloat16"))
        base = {"size": size, "dtype": "float8_e4m3fn", "out_dtype": "bfloat16"}
        if lib == "torch":
            for fast in (True, False):
                dc.poison()
                fn = scaled_mm(da, db, dc, sa, sb, fast)
                t = bench.time_gpu(fn, warmup=3, reps=reps, clock=True)
                chk = _sampled_fp8_check(dc, qa, qb, sa, sb, fp8_config(), rows_idx, frac)
                out["rows"].append({**base, "kernel": "cuBLASLt", "fast_accum": fast,
                                    "copies_output": fn.copies, **t.as_dict(),
                                    "tflops": bench.tflops(flop, t.median_ms),
                                    "check_rows": chk.as_dict()})
                say(f"{size}³ cuBLASLt fp8 fast_accum={fast}: "
                    f"{out['rows'][-1]['tflops']:.0f} TFLOP/s")
        for cfg in timed_configs():
            t, chk, grid = _time_ours(cfg, da, db, dc, dsc, qa, qb, sa, sb, rows_idx, frac, reps,
                                      f"{size}³")
            out["rows"].append({**base, "kernel": "ours", "label": cfg.label(), **cfg.as_dict(),
                                **t.as_dict(), "tflops": bench.tflops(flop, t.median_ms),
                                "check_rows": chk.as_dict(), "grid": grid})
            say(f"{size}³ {cfg.label()}: {out['rows'][-1]['tflops']:.0f} TFLOP/s")
        if size == max(sizes):
            out["rows"] += time_block_scaled(da, db, dc, qa, qb, rows_idx, frac, rng, reps, say,
                                             lib)
        del da, db, dc, dsc
        # fp16: cuBLAS and our chapter-06 top rung on fresh fp16 operands
        a16, b16 = checks.random_operands(size, size, size, "float16", None)
        da16, db16 = DeviceArray.from_host(a16), DeviceArray.from_host(b16)
        dbt16 = DeviceArray.from_host(np.ascontiguousarray(b16.T))
        dc16 = DeviceArray.poisoned((size, size), np.dtype("float16"))
        sref = checks.timed_output_reference(a16, b16, "float16", rng)
        if lib:
            t = bench.time_gpu(bench.cublas_gemm(da16, db16, dc16), warmup=3, reps=reps, clock=True)
            out["rows"].append({"size": size, "dtype": "float16", "out_dtype": "float16",
                                "kernel": "cuBLAS", **t.as_dict(),
                                "tflops": bench.tflops(flop, t.median_ms),
                                "check_rows": sref.check(dc16).as_dict()})
        dc16.poison()
        g = W.make_gemm(fp16_top, da16, dbt16, dc16)
        t = bench.time_gpu(g.launcher(), warmup=3, reps=reps, clock=True)
        g.check_error()
        chk = checks.check_sampled_rows(dc16, a16, b16, "float16", fp16_top.label(), sampled=sref)
        out["rows"].append({"size": size, "dtype": "float16", "out_dtype": "float16",
                            "kernel": "ours", "label": fp16_top.label(), **fp16_top.as_dict(),
                            **t.as_dict(), "tflops": bench.tflops(flop, t.median_ms),
                            "check_rows": chk.as_dict()})
        say(f"{size}³ fp16 {fp16_top.label()}: {out['rows'][-1]['tflops']:.0f} TFLOP/s")
        del g, da16, db16, dbt16, dc16
    out["table"] = ratio_rows(out["rows"])
    shapes = nonsquare if nonsquare is not None else (
        NONSQUARE_SHAPES if NONSQUARE_SHAPES is not None else
        W.NONSQUARE_SHAPES + tuple((s_, s_, s_) for s_ in sizes))
    if shapes:
        out["nonsquare"] = measure_fp8_nonsquare(shapes, reps, say, rng, frac, lib)
    out["clocks_after"] = records.nvidia_smi_clocks()
    return out


def scaled_mm_blockwise(da, db_nk, dout, sa, sb, stream=None):
    """cuBLASLt's FP8 GEMM with per-block scales through ``torch._scaled_mm`` (best effort: torch
    infers 1×128 / 128×128 block scaling from the scale shapes where its build supports it —
    CUDA ≥ 12.9 on sm_90 — and the layout it wants for the scale tensors has changed between
    releases). Tries scale_a M × K/128 column-major then row-major, scale_b (K/128) × (N/128)
    as the transpose view of our ``sb`` then contiguous; returns ``(run, layout)`` for the first
    combination torch accepts, or raises :class:`RuntimeError` listing every refusal. The result
    is copied into ``dout`` (the copy is timed too). The caller checks the output (a scale layout
    torch reads differently shows up as a wrong C)."""
    import torch
    from .core import bench
    s = stream or runtime.default_stream()
    ta = bench._as_lib_tensor("torch", da)
    tb = bench._as_lib_tensor("torch", db_nk).t()
    to = bench._as_lib_tensor("torch", dout)
    ts = torch.cuda.ExternalStream(int(s.handle))
    sa_rm = torch.from_numpy(np.ascontiguousarray(sa, np.float32)).cuda()
    sb_rm = torch.from_numpy(np.ascontiguousarray(sb, np.float32)).cuda()
    cands = {"sa col-major, sb view": (sa_rm.t().contiguous().t(), sb_rm.t()),
             "sa col-major, sb contiguous": (sa_rm.t().contiguous().t(), sb_rm.t().contiguous()),
             "sa row-major, sb view": (sa_rm, sb_rm.t()),
             "sa row-major, sb contiguous": (sa_rm, sb_rm.t().contiguous())}
    errors = []
    for name, (xa, xb) in cands.items():
        kw = dict(scale_a=xa, scale_b=xb, out_dtype=to.dtype, use_fast_accum=False)
        try:
            with torch.cuda.stream(ts):
                to.copy_(torch._scaled_mm(ta, tb, **kw))
            torch.cuda.synchronize()
        except (TypeError, RuntimeError, ValueError) as e:
            errors.append(f"{name}: {(str(e).splitlines() or [''])[0][:200]}")
            continue

        def run(kw=kw):
            with torch.cuda.stream(ts):
                to.copy_(torch._scaled_mm(ta, tb, **kw))
        run.copies = True
        return run, name
    raise RuntimeError("torch._scaled_mm refused per-block scales: " + " | ".join(errors))


def time_block_scaled(da, db, dc, qa, qb, rows_idx, frac, rng, reps, say, lib) -> list[dict]:
    """At one size (square; ``da`` / ``db`` e4m3 on the device, host copies ``qa`` / ``qb``; ``dc``
    bf16): fresh per-block scales (e^U(−3, 3), float32: sa M × K/128, sb N/128 × K/128),
    :func:`block_timed_config` (its cost is read against the same config with per-tensor scales,
    a row of :func:`timed_configs` at this size), and cuBLASLt with block scales where torch can
    (:func:`scaled_mm_blockwise`; else a row saying why). Every timed output checked on the
    sampled rows ``rows_idx`` (:func:`check_fp8_block`); a wrong one of ours raises."""
    from . import warp_specialization as W
    from .core import bench, checks
    from .core.memory import DeviceArray
    size = da.shape[0]
    flop = bench.gemm_flop(size, size, size)
    kt = size // KTILE
    sa = np.exp(rng.uniform(-3, 3, (size, kt))).astype(np.float32)
    sb = np.exp(rng.uniform(-3, 3, (-(-size // B_BLOCK[0]), kt))).astype(np.float32)
    dsa, dsb = DeviceArray.from_host(sa), DeviceArray.from_host(sb)
    base = {"size": size, "dtype": "float8_e4m3fn", "out_dtype": "bfloat16",
            "scales": "block 1x128 / 128x128"}
    rows = []

    ref, bound = block_reference(qa[rows_idx], qb, sa[rows_idx], sb, frac, "bfloat16")

    def chk():
        return checks.compare(dc.to_host()[rows_idx], ref, "block scales (sampled rows)",
                              (len(rows_idx), size, size), scale=bound, tol=1.0)
    cfg = block_timed_config()
    dc.poison()
    g = W.make_gemm(cfg, da, db, dc, block_scales=(dsa, dsb))
    t = bench.time_gpu(g.launcher(), warmup=3, reps=reps, clock=True)
    g.check_error()
    c = chk()
    if not c.passed:
        raise RuntimeError(f"timed run wrong: {cfg.label()} {size}³: {c.as_dict()}")
    rows.append({**base, "kernel": "ours", "label": cfg.label(), **cfg.as_dict(), **t.as_dict(),
                 "tflops": bench.tflops(flop, t.median_ms), "check_rows": c.as_dict(),
                 "grid": g.grid})
    say(f"{size}³ {cfg.label()}: {rows[-1]['tflops']:.0f} TFLOP/s")
    del g
    if lib == "torch":
        try:
            dc.poison()
            fn, layout = scaled_mm_blockwise(da, db, dc, sa, sb)
            c = chk()
            if not c.passed:
                raise RuntimeError(f"output wrong with {layout}: {c.as_dict()}")
            t = bench.time_gpu(fn, warmup=3, reps=reps, clock=True)
            rows.append({**base, "kernel": "cuBLASLt", "fast_accum": False, "block_scales": True,
                         "scale_layout": layout, "copies_output": True, **t.as_dict(),
                         "tflops": bench.tflops(flop, t.median_ms), "check_rows": chk().as_dict()})
            say(f"{size}³ cuBLASLt fp8 block scales ({layout}): {rows[-1]['tflops']:.0f} TFLOP/s")
        except Exception as e:  # noqa: BLE001 - a baseline torch may lack: recorded, not fatal
            rows.append({**base, "kernel": "cuBLASLt", "fast_accum": False, "block_scales": True,
                         "unavailable": str(e)[:1000]})
            say(f"{size}³ cuBLASLt fp8 block scales: unavailable ({str(e)[:160]})")
    del dsa, dsb
    return rows


#: The issue's goal: our FP8 GEMM at ≥ 0.90 of cuBLASLt's FP8 at 8192³.
GOAL = 0.90


def ratio_rows(rows: list[dict]) -> list[dict]:
    """Per size: each kernel's TFLOP/s, its fraction of cuBLASLt FP8 (fast accumulation, and
    default; per-tensor scales), and FP8 / FP16 of ours (best FP8 without promotion / our fp16
    top rung) and of cuBLAS (cuBLASLt fast / cuBLAS fp16); where per-block scales were timed,
    ours with block scales / the same config with per-tensor scales ("block scales cost"). A
    baseline that could not run (``unavailable``) is left out here (the summary says why)."""
    out = []
    for size in sorted({r["size"] for r in rows}):
        rs = [r for r in rows if r["size"] == size and "unavailable" not in r]
        lt = {r["fast_accum"]: r["tflops"] for r in rs
              if r["kernel"] == "cuBLASLt" and not r.get("block_scales")}
        f16 = {r["kernel"]: r["tflops"] for r in rs if r["dtype"] == "float16"}
        ours8 = [r for r in rs if r["kernel"] == "ours" and r["dtype"] != "float16"]
        for r in rs:
            name = ("cuBLASLt fp8 block scales" if r["kernel"] == "cuBLASLt" and
                    r.get("block_scales") else
                    f"cuBLASLt fp8 fast_accum={r['fast_accum']}" if r["kernel"] == "cuBLASLt"
                    else "cuBLAS fp16" if r["kernel"] == "cuBLAS" else r["label"])
            out.append({"size": size, "kernel": name, "tflops": r["tflops"],
                        "of_cublaslt_fast": r["tflops"] / lt[True] if True in lt else None,
                        "of_cublaslt": r["tflops"] / lt[False] if False in lt else None})
        blk = [r for r in ours8 if r.get("block_scales")]
        if blk:
            same = block_timed_config().replace(block_scales=False).label()
            ref = [r for r in ours8 if r["label"] == same]
            out.append({"size": size, "kernel": "block scales cost (ours, promote 1)",
                        "ratio": blk[0]["tflops"] / ref[0]["tflops"] if ref else None})
        best = max((r["tflops"] for r in ours8 if not r.get("promote")), default=None)
        out.append({"size": size, "kernel": "FP8/FP16 ours",
                    "ratio": best / f16["ours"] if best and f16.get("ours") else None})
        out.append({"size": size, "kernel": "FP8/FP16 cuBLAS",
                    "ratio": lt[True] / f16["cuBLAS"] if True in lt and f16.get("cuBLAS") else None})
    return out


def summary_table(results: dict) -> str:
    """The short table: kernel, TFLOP/s, fraction of cuBLASLt FP8 (fast accumulation / default),
    the FP8/FP16 ratios beside the seed's claimed 1.5–2×, and the goal line."""
    lines = [f"{'size':>5s} {'kernel':62s} {'TFLOP/s':>7s} {'of LtFast':>9s} {'of Lt':>6s}"]
    for r in results.get("table", []):
        if "ratio" in r:
            v = f"{r['ratio']:.2f}" if r["ratio"] is not None else "-"
            note = "(seed claims 1.5-2x)" if r["kernel"].startswith("FP8/FP16") else \
                "(block / per-tensor scales, same tile)"
            lines.append(f"{r['size']:5d} {r['kernel']:62s} {v:>7s}   {note}")
            continue
        f = (lambda x: f"{x:.2f}" if x is not None else "-")
        lines.append(f"{r['size']:5d} {r['kernel']:62s} {r['tflops']:7.0f} "
                     f"{f(r['of_cublaslt_fast']):>9s} {f(r['of_cublaslt']):>6s}")
    big = [r for r in results.get("table", []) if r.get("size") == max(SIZES)
           and r.get("of_cublaslt_fast") is not None and not r["kernel"].startswith("cuBLAS")
           and "promote" not in r["kernel"] and "float16" not in r["kernel"]]
    for r in results.get("rows", []):
        if "unavailable" in r:
            lines.append(f"{r['size']:5d} cuBLASLt fp8 block scales: unavailable "
                         f"({r['unavailable'][:200]})")
    if big:
        b = max(big, key=lambda r: r["of_cublaslt_fast"])
        verdict = "met" if b["of_cublaslt_fast"] >= GOAL else "NOT met"
        lines.append(f"goal ≥ {GOAL:.2f} of cuBLASLt FP8 (fast accumulation) at {max(SIZES)}³: "
                     f"{verdict} ({b['of_cublaslt_fast']:.2f}, {b['kernel']})")
    return "\n".join(lines)


def experiment_table(results: dict) -> str:
    """Error vs K of the swamping input, measured, beside the frozen prediction, and the fit."""
    exp = results.get("experiment")
    if not exp:
        return "no accumulation experiment in this record"
    ps = sorted({r["promote"] for r in exp["rows"]})
    lines = ["swamping input: median relative error of C (measured; fitted frac_bits)",
             f"{'K':>6s} " + " ".join(f"{('promote ' + str(p)) if p else 'no promotion':>22s}"
                                    for p in ps)]
    for k in sorted({r["k"] for r in exp["rows"]}):
        cells = []
        for p in ps:
            r = next(x for x in exp["rows"] if x["k"] == k and x["promote"] == p)
            cells.append(f"{r['swamp_median_rel_err']:.1e} (f={r['fit_frac_bits']})".rjust(22))
        lines.append(f"{k:6d} " + " ".join(cells))
    lines.append("prediction (written before the GPU run):")
    lines.append(exp["prediction"].rstrip())
    return "\n".join(lines)


def summarize_fp8(rec) -> str:
    r = rec.results
    lines = [rec.label() if hasattr(rec, "label") else "fp8"]
    lines.append(f"{len(r.get('checks', []))} FP8 checks passed (elementwise, float64 of the "
                 f"dequantised inputs, bound with {r.get('frac_bits_bound')} fraction bits)")
    for lab, v in r.get("registers", {}).items():
        lines.append(f"registers {lab}: ptxas {v['ptxas']}, accumulators {v['accumulator_registers']}"
                     f", spills {v['spill_bytes']}/{v['spill_loads']} B"
                     f"{' — SETMAXNREG DROPPED' if v.get('dropped') else ''}")
    lines.append(experiment_table(r))
    lines.append(summary_table(r))
    if r.get("nonsquare"):
        lines.append(nonsquare_fp8_table(r["nonsquare"]))
    return "\n".join(lines)


SUITES = {"fp8": (measure_fp8, summarize_fp8, "sm_90a")}


# --------------------------------------------------------------------------------------------------
# Notebook 07: the accumulation plot, the seed's 4096³ table beside our rungs
# --------------------------------------------------------------------------------------------------

def plot_accumulation(results: dict, record=None, frac_bits: int = FRAC_BITS):
    """Two panels from an "fp8" record's ``experiment``: left, the swamping input's median relative
    error against K per promotion interval, measured (markers) over the model's prediction at
    ``frac_bits`` (lines, :func:`predict_swamp`, the table frozen in :data:`ACC_PREDICTION`);
    right, fresh random inputs: the largest |C − ref| / (|A|·|B|) per K. Returns the figure."""
    import matplotlib.pyplot as plt
    from .core import plots
    rows = results["experiment"]["rows"]
    ks = sorted({r["k"] for r in rows})
    ps = sorted({r["promote"] for r in rows})
    pred = predict_swamp(ks=tuple(ks), promotes=tuple(ps), frac_bits=frac_bits)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.2), dpi=80, layout="constrained")
    for p, colour in zip(ps, ("tab:red", "tab:blue", "tab:green", "tab:purple")):
        name = "no promotion" if p == 0 else f"promote every {p} k-tile{'s' if p > 1 else ''}"
        got = [next(r for r in rows if r["k"] == k and r["promote"] == p) for k in ks]
        ax.plot(ks, [pred[p][k] for k in ks], "-", color=colour, alpha=0.5,
                label=f"model, {frac_bits} bits: {name}")
        ax.plot(ks, [r["swamp_median_rel_err"] for r in got], "o", color=colour,
                label=f"measured: {name}")
        ax2.plot(ks, [r["random_max_err_over_absAB"] for r in got], "o-", color=colour, label=name)
    for a in (ax, ax2):
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.set_xlabel("K")
        a.grid(True, which="both", alpha=0.3)
    ax.set_ylabel("median |C − ref| / |ref|")
    ax.legend(fontsize=7)
    ax2.set_ylabel("max |C − ref| / (|A|·|B|)")
    ax2.legend(fontsize=7)
    plots._title(ax, "swamping input (one 32·32 product, then small ones)", record)
    plots._title(ax2, "fresh standard-normal FP8 inputs", record)
    return fig


#: The seed article's table at 4096³, fraction of the Tensor Core peak per step: (step, low, high,
#: as the seed writes it). "~50 %" is read as 0.45–0.55.
SEED_4096 = (("mma.sync", 0.45, 0.55, "~50 %"),
             ("wgmma + TMA + warp specialization", 0.75, 0.80, "75–80 %"),
             ("tuned", 0.85, 0.85, "85 %"))


def seed_comparison(mma_rec, ws_rec, fp8_rec=None, size: int = 4096,
                    dtype: str = "float16") -> list[dict]:
    """Our measured GEMMs at ``size``³ in ``dtype`` as fractions of the peak at the SM clock
    measured for each row (:func:`asynctc.core.bench.peak_at_clock`; the clock's kind from the
    row, :func:`~asynctc.core.bench.clock_kind`), one entry per step of :data:`SEED_4096` and a few
    beside them: the best mma.sync kernel of chapter 01 (``mma_sync`` record); chapter 05's
    kernel (rung 1), warp specialization (rung 2) and two consumers + setmaxnreg (rung 3) for the
    seed's "wgmma + TMA + warp specialization"; the record's top rung for "tuned"; cuBLAS of the same
    ``warp_specialization`` run; and, with ``fp8_rec``, our FP8 top rung against the FP8 peak
    (8192 FLOP/clk/SM). Each entry: ``seed`` (the step, or None), ``seed_low``/``seed_high``,
    ``ours``, ``label``, ``tflops``, ``sm_mhz``, ``clock`` (its kind), ``fraction``,
    ``peak_text``, ``suite``."""
    from .core import bench
    out = []

    def add(seed, ours, row, rec, dt=dtype):
        sm = rec.provenance["sm_count"]
        p = bench.peak_at_clock(row, sm, dt)
        step = next((s for s in SEED_4096 if s[0] == seed), None)
        out.append({"seed": seed, "seed_low": step[1] if step else None,
                    "seed_high": step[2] if step else None, "seed_text": step[3] if step else "",
                    "ours": ours, "label": row.get("label", row.get("kernel")),
                    "tflops": row["tflops"], "sm_mhz": p["sm_mhz"], "clock": bench.clock_kind(row),
                    "fraction": p["fraction"], "peak_text": bench.peak_text(row, sm, dt),
                    "suite": rec.suite})
    mma = [r for r in mma_rec.results["sweep"] if r["size"] == size and r["dtype"] == dtype
           and r["kernel"] == "mma.sync"]
    add("mma.sync", "chapter 01: tuned ldmatrix + mma.sync (best tile)",
        max(mma, key=lambda r: r["tflops"]), mma_rec)
    res = ws_rec.results
    lad = {r["rung"]: r for r in res["ladder"] if r["size"] == size and r["dtype"] == dtype}
    timed = [r for r in res["rows"] if r["size"] == size and r["dtype"] == dtype]
    for n, seed in ((1, None), (2, SEED_4096[1][0]), (3, SEED_4096[1][0]), (max(lad), SEED_4096[2][0])):
        row = next(r for r in timed if r.get("label") == lad[n]["label"])
        add(seed, f"chapter 06 rung {n}: {lad[n]['name']}", row, ws_rec)
    add(None, "cuBLAS (same run as chapter 06)", next(r for r in timed if r["kernel"] == "cuBLAS"),
        ws_rec)
    if fp8_rec is not None:
        top = fp8_config().label()
        row = next((r for r in fp8_rec.results["rows"] if r["size"] == size
                    and r.get("label") == top), None)
        if row is not None:
            add(None, "chapter 07: FP8 top rung (e4m3, FP8 peak)", row, fp8_rec, "float8_e4m3fn")
    return out


def seed_table_text(rows: list[dict]) -> str:
    """:func:`seed_comparison` as text: the seed's step and figure, ours, TFLOP/s, the fraction of
    peak at the measured clock and that clock's kind."""
    lines = [f"{'seed step':34s} {'seed':>8s}  {'ours':58s} {'TFLOP/s':>7s} {'of peak':>7s}  clock"]
    for r in rows:
        lines.append(f"{(r['seed'] or ''):34s} {r['seed_text']:>8s}  {r['ours']:58s} "
                     f"{r['tflops']:7.0f} {r['fraction']:7.2f}  {r['sm_mhz']:.0f} MHz ({r['clock']})")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# Exercises (auto-checked in notebooks/07_fp8_precision)
# --------------------------------------------------------------------------------------------------

from .core import exercises as _ex  # noqa: E402


def _grid_neighbours(value: float, fmt: Fp8Format) -> tuple[float, float]:
    """The two values of the format's grid around ``value`` (within range)."""
    v = np.arange(256, dtype=np.uint8).view(fmt.dtype).astype(np.float64)
    g = np.unique(v[np.isfinite(v)])
    i = int(np.clip(np.searchsorted(g, value), 1, len(g) - 1))
    return float(g[i - 1]), float(g[i])


def _quantize_hint(answer, value: float, dtype: str = "float8_e4m3fn"):
    fmt = fp8_format(dtype)
    if isinstance(answer, float) and math.isnan(answer):
        return (f"a bare cast of {value} gives NaN (e4m3) or inf (e5m2) above the range; "
                f"quantize saturates to ±{fmt.max:g}")
    if answer == value:
        return (f"{value} is not on the {fmt.ptx} grid: {fmt.frac_bits} fraction bits, so between "
                "2^e and 2^(e+1) the step is 2^(e - 3) for e4m3 (2^(e - 2) for e5m2)")
    other = "float8_e5m2" if fmt.name == "float8_e4m3fn" else "float8_e4m3fn"
    if answer == float(quantize(np.array([value]), other, scale=1.0)[0][0]):
        return f"that is the {FORMATS[other].ptx} grid's nearest value; this is {fmt.ptx}"
    if abs(value) >= fmt.min_normal and abs(answer) == 2.0 ** math.floor(math.log2(abs(value))) \
            and abs(answer) != abs(value):
        return (f"that keeps only the leading bit of {value}; {fmt.ptx} keeps {fmt.frac_bits} "
                "fraction bits below it")
    if abs(value) <= fmt.max:
        lo, hi = _grid_neighbours(abs(value), fmt)
        if abs(value) - lo == hi - abs(value) and abs(answer) in (lo, hi):
            return (f"{abs(value):g} lies exactly halfway between {lo:g} and {hi:g}: a tie goes to "
                    "the value whose last fraction bit is 0 (ties to even)")
        near = lo if abs(abs(value) - lo) <= abs(hi - abs(value)) else hi
        far = hi if near == lo else lo
        if abs(answer) == far:
            return (f"{far:g} is a neighbour on the grid, but not the nearest: {lo:g} and {hi:g} "
                    f"are {abs(value) - lo:g} and {hi - abs(value):g} away (round to nearest, "
                    "ties to even)")
    elif abs(answer) > fmt.max:
        return f"{fmt.ptx}'s largest finite value is {fmt.max:g}: larger magnitudes saturate"
    if math.isfinite(answer) and abs(answer) <= fmt.max \
            and float(quantize(np.array([float(answer)]), fmt.name, scale=1.0)[0][0]) != answer:
        grid = ""
        if abs(answer) >= fmt.min_normal:
            e = 2.0 ** math.floor(math.log2(abs(answer)))
            grid = (f": between {e:g} and {2 * e:g} its values are {e:g} · (1 + j/"
                    f"{2 ** fmt.frac_bits}), a step of {e / 2 ** fmt.frac_bits:g}")
        # the neighbours themselves would give the answer away: name how to find them
        return (f"{answer:g} is not on the {fmt.ptx} grid{grid}; the answer is the {fmt.ptx} "
                f"value nearest {value:g} — find the two grid values around it")
    return None


@_ex.exercise("ch07.quantize", "The FP8 value (as a number) that `value` becomes when quantised to "
              "`dtype` with scale 1: round to nearest (ties to even), saturating at the largest "
              "finite value.", hint=_quantize_hint)
def _ch07_quantize(value: float, dtype: str = "float8_e4m3fn") -> float:
    return float(quantize(np.array([float(value)]), dtype, scale=1.0)[0][0])


def _block_scale_hint(answer, amax: float, dtype: str = "float8_e4m3fn", pow2: bool = False):
    fmt = fp8_format(dtype)
    want = float(amax_scale(amax, dtype, pow2))
    tries = [(fmt.max / amax, "that is the quantisation factor max / amax; the dequantisation "
                              "scale is its inverse, s = amax / max (x ≈ q · s)"),
             (amax, "the scale maps amax onto the format's largest finite value: divide by it"),
             (amax / 240.0, "240 is the largest value of e4m3fnuz (another FP8 variant); OCP e4m3fn, "
                            "what wgmma takes, goes up to 448"),
             (amax / 57344.0 if fmt.name != "float8_e5m2" else amax / 448.0,
              "that is the other format's largest value")]
    if pow2:
        tries.append((amax / fmt.max, "pow2 asks for the next power of two at or above amax / max"))
        tries.append((2.0 ** math.floor(math.log2(amax / fmt.max)),
                      "rounded down: amax / s would then exceed the largest finite value"))
    else:
        tries.append((2.0 ** math.ceil(math.log2(amax / fmt.max)),
                      "no power of two was asked for: s = amax / max"))
    return _ex.known_mistake(answer, want, tries, rtol=1e-5)


@_ex.exercise("ch07.block_scale", "The dequantisation scale s (x ≈ q · s) of one 1×128 block of A "
              "whose largest magnitude is `amax`, for `dtype` (with `pow2`: rounded up to a power "
              "of two). Within 1e-5 relative.", rtol=1e-5, hint=_block_scale_hint)
def _ch07_block_scale(amax: float, dtype: str = "float8_e4m3fn", pow2: bool = False) -> float:
    return float(amax_scale(amax, dtype, pow2))


def _promote_errors(k: int, most: int) -> dict[int, float]:
    return {p: e[k] for p, e in predict_swamp(ks=(k,), promotes=tuple(range(0, most + 1))).items()}


def _promote_hint(answer, k: int, target: float):
    if not isinstance(answer, int) or answer < 0:
        return "answer a number of k-tiles (0: never promote)"
    tiles = k // KTILE
    want = _ch07_promote(k, target)
    if answer in (4 * want, 128 * want) and answer != want:
        unit = "wgmma k32 steps" if answer == 4 * want else "fp8 elements"
        return f"that counts {unit}; a k-tile is 128 fp8 elements (4 wgmma k32 steps)"
    if answer > tiles:
        return f"K = {k} has only {tiles} k-tiles of 128"
    err = _promote_errors(k, max(answer, 1))[answer]
    if err >= target:
        every = "no promotion" if answer == 0 else \
            f"promotion every {answer} k-tile{'s' if answer != 1 else ''}"
        return f"the model gives {err:.1e} with {every} — not below {target:g}"
    return (f"promotion every {answer} k-tile{'s' if answer != 1 else ''} stays below {target:g} "
            f"({err:.1e}), but a longer interval does too: the question asks for the largest "
            "(promotion costs throughput)")


@_ex.exercise("ch07.promote_interval", "Per the model (13 fraction bits, groups of 32, the swamping "
              "input), the LARGEST number of k-tiles between promotions that keeps the median "
              "relative error below `target` at K = `k` (0 = never promote).", hint=_promote_hint)
def _ch07_promote(k: int, target: float) -> int:
    errs = _promote_errors(k, k // KTILE)
    ok = [p for p, e in errs.items() if e < target and p > 0]
    if errs[0] < target:
        return 0
    if not ok:
        raise ValueError(f"target={target}: even promotion every k-tile gives {errs[1]:.1e}")
    best = 0
    for p in range(1, k // KTILE + 1):           # the longest interval before the first miss
        if errs[p] >= target:
            break
        best = p
    return best
