"""Checking GEMM results against float64: operands, the reference, an elementwise comparison.

Shared by every GEMM chapter. Operands are fresh standard-normal values rounded to the input dtype
(never zeros or ±1); outputs are poisoned (NaN) before a run, so an element that was never written
shows as non-finite; the reference is ``float64`` ``A @ B`` of the rounded inputs.

The bound (:func:`compare`, :func:`gemm_tolerance`) is elementwise and relative to |A|·|B|::

    |C[i, j] − C_ref[i, j]|  ≤  tol · (|A|·|B|)[i, j]      for every i, j

so that ONE wrong element fails (a relative Frobenius norm lets a wrong element of a large output
through). Derivation of ``tol`` for an fp32-accumulated product of length K (Higham, *Accuracy and
Stability of Numerical Algorithms*, §3.1, inner products):

* Input rounding is not an error here: the reference multiplies the *rounded* inputs.
* Products: an fp16×fp16 (11+11 significand bits) or bf16×bf16 (8+8) product is exact in fp32
  (24 bits). fp32×fp32 products (the SIMT kernel) round once: one more term of u.
* Accumulation: any order of K fp32 additions gives |S − C| ≤ γ_K · (|A|·|B|), γ_n = n·u/(1 − n·u).
  We take u = 2^-23, twice fp32's round-to-nearest unit roundoff, because Tensor Cores are not
  IEEE adders: they align the block's products to the largest exponent and truncate (round toward
  zero) — Fasi, Higham, Mikaitis, Pranesh, "Numerical behavior of NVIDIA tensor cores", PeerJ CS
  2021 — and a truncating adder's unit roundoff is 2^-23.
* Output: rounding S to fp16 (u = 2^-11) or bf16 (2^-8) adds u_out·|S| ≤ u_out·(1 + γ_K)·(|A|·|B|);
  0 for fp32 output.
* The float64 reference itself: γ_K with u = 2^-53 (negligible; counted).

So ``tol = γ_{K+e}(2^-23) + u_out·(1 + γ_{K+e}(2^-23)) + γ_K(2^-53)``, e = 0 for fp16/bf16
inputs and 1 for fp32 inputs: 9.8e-4 at K = 8192 for fp32
output, 1.5e-5 at K = 128; + 4.9e-4 for fp16 output, + 3.9e-3 for bf16. It is a worst-case bound
(real errors grow like √K·u), and it still fails an element taken from the wrong row, column or
k-tile: such an error is of the order of √K (standard-normal inputs), while tol·(|A|·|B|) ≈
tol·0.64·K is 5 at K = 8192 (fp32 output) against a typical |error| of 128.

The TMA-fed GEMMs of chapters 05-07 use a second, looser per-element bound,
K·2^-21·(|A|·|B|) + 2·u_out·|C_ref| (:func:`compare_elementwise`, :func:`compare_to_bound`); its
result, :class:`ElementCheck`, is a :class:`Check` with tol = 1 under the names those chapters'
records use. They share the operand rules here too: :func:`operand_dims`, :func:`check_out`,
:func:`b_shape` (each raises the caller's error class).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .memory import DeviceArray

#: fp32's unit roundoff (round to nearest).
U_FP32 = 2.0 ** -24
#: The unit roundoff assumed for Tensor Core fp32 accumulation: round toward zero, 2^-23.
U_ACC = 2.0 ** -23
#: float64's unit roundoff, for the reference.
U_FP64 = 2.0 ** -53
#: Unit roundoff of the output dtype (rounding to nearest): fp16 2^-11, bf16 2^-8, fp32 none.
U_OUT = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 0.0, "float64": 0.0}


def np_dtype(name: str) -> np.dtype:
    """numpy dtype for a course dtype name ("float16", "float32"; "bfloat16", "float8_e4m3fn" and
    "float8_e5m2" via ml_dtypes)."""
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def random_operands(m: int, n: int, k: int, dtype: str, seed: int | None = None):
    """Fresh standard-normal A (M×K) and B (K×N) rounded to ``dtype`` (never zeros or ±1)."""
    rng = np.random.default_rng(seed)
    dt = np_dtype(dtype)
    a = rng.standard_normal((m, k), dtype=np.float32).astype(dt)
    b = rng.standard_normal((k, n), dtype=np.float32).astype(dt)
    return a, b


def square_problem(s: int, dtype: str, seed: int | None = None):
    """An s×s×s problem on the GPU: ``(a, b, da, db, dc)`` — fresh :func:`random_operands` on the
    host, their device copies, and a poisoned s×s output in the input dtype."""
    a, b = random_operands(s, s, s, dtype, seed)
    return a, b, DeviceArray.from_host(a), DeviceArray.from_host(b), DeviceArray.poisoned((s, s), a.dtype)


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float64 ``a @ b`` of the (already rounded) inputs."""
    return a.astype(np.float64) @ b.astype(np.float64)


def abs_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float64 ``|a| @ |b|``: the scale of the elementwise bound (see the module docstring)."""
    return np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))


def gamma(n: int, u: float) -> float:
    """Higham's γ_n = n·u / (1 − n·u): the relative error bound of n rounded operations of unit
    roundoff ``u``. Raises :class:`ValueError` when n·u ≥ 1 (no bound)."""
    if n < 0:
        raise ValueError(f"n={n}: must be ≥ 0")
    if n * u >= 1:
        raise ValueError(f"n={n}, u={u:g}: n·u ≥ 1, γ_n gives no bound")
    return n * u / (1 - n * u)


def gemm_tolerance(k: int, out_dtype: str = "float32", *, u_acc: float = U_ACC,
                   exact_products: bool = True, u_ref: float = U_FP64) -> float:
    """The elementwise tolerance of a K-long fp32-accumulated product, relative to |A|·|B|:
    γ_{K+e}(u_acc) + u_out·(1 + γ_{K+e}(u_acc)) + γ_K(u_ref), e = 0 when products are exact
    (fp16/bf16 inputs) and 1 otherwise (fp32 inputs). Derivation: the module docstring.
    ``u_ref`` is the unit roundoff of the reference (2^-53 for float64, 2^-24 for a float32
    reference). Raises :class:`ValueError` for an unknown ``out_dtype`` or K < 1."""
    if k < 1:
        raise ValueError(f"k={k}: must be ≥ 1")
    if out_dtype not in U_OUT:
        raise ValueError(f"out_dtype={out_dtype!r}: must be one of {sorted(U_OUT)}")
    g = gamma(k + (0 if exact_products else 1), u_acc)
    return g + U_OUT[out_dtype] * (1 + g) + gamma(k, u_ref)


@dataclasses.dataclass
class Check:
    """Outcome of one correctness check against the float64 reference — the one result class of
    the course's checks (:class:`ElementCheck` is this class in the per-element-bound form).

    ``rel_err``: relative Frobenius error (information only). ``max_err``: the largest normalised
    elementwise error max |C − C_ref| / scale (scale = |A|·|B| for a GEMM), compared with ``tol``;
    ``worst``: the index of that element; ``n_bad``: elements above the bound; ``unwritten``:
    non-finite elements (poison left). A Check built without ``max_err`` (older callers) passes
    on ``rel_err ≤ tol``. ``label`` names the configuration checked, ``first_wrong`` the first
    element (row-major order) above the bound, when the caller records them.
    """

    shape: tuple[int, int, int]
    dtype: str
    rel_err: float
    tol: float
    unwritten: int
    max_err: float | None = None
    worst: tuple[int, ...] | None = None
    n_bad: int = 0
    label: str = ""
    first_wrong: tuple[int, ...] | None = None

    @property
    def passed(self) -> bool:
        if self.unwritten:
            return False
        if self.max_err is not None:
            return bool(np.isfinite(self.max_err) and self.max_err <= self.tol and self.n_bad == 0)
        return bool(np.isfinite(self.rel_err) and self.rel_err <= self.tol)

    def as_dict(self) -> dict:
        d = {"shape": list(self.shape), "dtype": self.dtype, "rel_err": self.rel_err,
             "tol": self.tol, "unwritten": self.unwritten, "passed": bool(self.passed)}
        if self.max_err is not None:
            d.update(max_err=self.max_err, worst=list(self.worst) if self.worst else None,
                     n_bad=self.n_bad, bound="elementwise |C-ref| <= tol*(|A|.|B|)")
        return d


def compare(out: np.ndarray, ref: np.ndarray, dtype: str, shape, *, scale=None,
            tol: float | None = None) -> Check:
    """Elementwise comparison of ``out`` with the float64 ``ref``: passes when every element is
    finite and |out − ref| ≤ ``tol`` · ``scale`` elementwise.

    ``scale``: |A|·|B| (:func:`abs_reference`) for a GEMM, broadcastable to ``ref``; when None,
    max(|ref|, RMS of ``ref``) elementwise (covers the output rounding; still elementwise: one
    element off by more than tol·scale fails). ``tol``: when
    None, :func:`gemm_tolerance` for K = ``shape[2]`` and the dtype of ``out`` (fp32-input products
    when ``dtype`` is "float32"). ``dtype``: the input dtype name; ``shape``: (M, N, K) for the
    record. Returns :class:`Check`.
    """
    o = np.asarray(out).astype(np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if o.shape != ref.shape:
        raise ValueError(f"out.shape={o.shape} != ref.shape={ref.shape}")
    if tol is None:
        out_name = np.dtype(np.asarray(out).dtype).name
        out_name = out_name if out_name in U_OUT else "float32"
        tol = gemm_tolerance(int(shape[2]), out_name, exact_products=dtype != "float32")
    if scale is None:
        rms = np.sqrt(np.mean(ref * ref)) if ref.size else 1.0
        scale = np.maximum(np.abs(ref), rms)
    bad_fin = ~np.isfinite(o)
    unwritten = int(np.count_nonzero(bad_fin))
    diff = np.abs(np.where(bad_fin, np.inf, o - ref))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = diff / np.broadcast_to(scale, ref.shape)
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(ratio)), ratio.shape)) \
        if ratio.size else ()
    max_err = float(ratio[worst]) if ratio.size else 0.0
    n_bad = int(np.count_nonzero(ratio > tol))
    rel = float(np.linalg.norm(o - ref) / np.linalg.norm(ref)) if unwritten == 0 else float("nan")
    return Check(tuple(int(x) for x in shape), dtype, rel, float(tol), unwritten, max_err, worst,
                 n_bad)


def check_gemm(out: np.ndarray, a: np.ndarray, b: np.ndarray, dtype: str) -> Check:
    """``out`` (M×N, any output dtype) against float64 ``a @ b`` with the elementwise bound
    relative to |A|·|B| (:func:`compare`, tolerance from :func:`gemm_tolerance`)."""
    (m, k), n = a.shape, b.shape[1]
    return compare(out, reference(a, b), dtype, (m, n, k), scale=abs_reference(a, b))


class SampledReference:
    """The float64 reference of chosen rows of a large product, for checking a *timed* output.

    A full float64 reference of an 8192³ product takes minutes on the host, so a timed output is
    checked on ``rows``: one random row in every band of ``row_block`` rows (the CTA tile height,
    128 by default), so every CTA row of the grid — hence every raster group — is sampled, each on
    its full width (every CTA column). Built once per problem, it checks every kernel timed on it.
    The timed binary is checked in full, on a mid-size problem with several raster groups, by the
    suites (:func:`check_gemm`).
    """

    def __init__(self, a: np.ndarray, b: np.ndarray, dtype: str, row_block: int = 128, rng=None):
        rng = rng if rng is not None else np.random.default_rng()
        m = a.shape[0]
        starts = np.arange(0, m, row_block)
        self.rows = np.minimum(starts + rng.integers(0, row_block, size=len(starts)), m - 1)
        self.dtype = dtype
        self.shape = (m, b.shape[1], a.shape[1])
        b64 = b.astype(np.float64)
        ar = a[self.rows].astype(np.float64)
        self.ref = ar @ b64
        self.scale = np.abs(ar) @ np.abs(b64)

    def check(self, out) -> Check:
        """Compare the sampled rows of ``out`` (a :class:`DeviceArray` or numpy array, M×N)."""
        host = out.to_host() if hasattr(out, "to_host") else np.asarray(out)
        return compare(host[self.rows], self.ref, self.dtype, self.shape, scale=self.scale)


#: The values of :func:`exact_operands`: ±1/4, ±1/2, ±3/4 (never 0 or ±1).
EXACT_VALUES = (0.25, 0.5, 0.75)
#: Their products are multiples of 1/16.
EXACT_GRANULE = 1.0 / 16


def exact_operands(a_shape, b_shape, dtype: str, repeats: int = 1, acc_bits: int = 24, rng=None):
    """Random operands for which a repeated product is computed *exactly* by any accumulation order
    and any rounding: A (``a_shape``) and B (``b_shape``) with random values ±1/4, ±1/2, ±3/4
    (never 0 or ±1; exact in fp16, bf16 and fp8 e4m3/e5m2), so every product is a multiple of 1/16.
    When ``repeats``·max((|A|·|B|)) / (1/16) < 2^``acc_bits``, every partial sum of ``repeats``
    copies of A·B is a multiple of 1/16 below 2^acc_bits / 16 in magnitude, i.e. representable in
    an accumulator with an ``acc_bits``-bit significand (24 for fp32) — nothing is lost when the
    Tensor Core aligns and truncates its addends, and the result must equal repeats·(A·B) exactly.

    Returns ``(a, b, exact)``: ``exact`` says whether that condition holds (else use a rounding
    bound). Raises :class:`ValueError` for a non-positive ``repeats``.
    """
    if repeats < 1:
        raise ValueError(f"repeats={repeats}: must be ≥ 1")
    rng = rng if rng is not None else np.random.default_rng()
    dt = np_dtype(dtype) if dtype in ("float16", "bfloat16", "float32") else _fp8_dtype(dtype)

    def draw(shape):
        v = rng.choice(EXACT_VALUES, size=shape) * rng.choice((-1.0, 1.0), size=shape)
        return v.astype(np.float32).astype(dt)
    a, b = draw(a_shape), draw(b_shape)
    worst = repeats * float(abs_reference(a, b).max()) / EXACT_GRANULE
    return a, b, worst < 2.0 ** acc_bits


def _fp8_dtype(name: str) -> np.dtype:
    import ml_dtypes
    return np.dtype(getattr(ml_dtypes, name))


#: Up to this size a timed s×s output is checked in full; above it, one random row per 128-row CTA
#: band (:class:`SampledReference`): every CTA row and raster group, on its full width.
FULL_CHECK_MAX = 2048


def timed_output_reference(a, b, dtype: str, rng=None) -> SampledReference:
    """The reference a timed output is checked against: every row when M ≤ :data:`FULL_CHECK_MAX`,
    else one random row per 128-row CTA band."""
    return SampledReference(a, b, dtype, 1 if a.shape[0] <= FULL_CHECK_MAX else 128, rng)


def check_sampled_rows(out, a: np.ndarray, b: np.ndarray, dtype: str, what: str, rng=None,
                       row_block: int = 128, sampled: SampledReference | None = None) -> Check:
    """Check a *timed* output on one random row per ``row_block`` rows (:class:`SampledReference`;
    pass ``sampled`` to reuse one) with the elementwise bound. Returns the :class:`Check`; raises
    :class:`RuntimeError` naming ``what`` when it fails (poison left unwritten fails)."""
    sampled = sampled or SampledReference(a, b, dtype, row_block, rng)
    c = sampled.check(out)
    if not c.passed:
        raise RuntimeError(f"timed run wrong: {what} {dtype} {sampled.shape}: {c.as_dict()}")
    return c


# --------------------------------------------------------------------------------------------------
# The per-element bound of the TMA-fed GEMMs (chapters 05-07), and their operand rules
# --------------------------------------------------------------------------------------------------

#: Output rounding (relative, round to nearest: half an ulp) per output dtype.
OUT_ROUNDING = {"float32": 2.0 ** -24, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}


class ElementCheck(Check):
    """A :class:`Check` against a per-element bound (:func:`compare_to_bound`): every element
    must satisfy ``|C − ref| ≤ bound``, so the check is a Check with scale = bound and
    ``tol`` = 1, under the names chapters 05-07 and their records use: ``worst`` = the largest
    ``|C − ref| / bound`` (≤ 1 passes; :attr:`Check.max_err`), ``wrong`` = the finite elements above
    1 (:attr:`Check.n_bad`), ``first_wrong`` = the (row, col) of the first element above 1 (poison
    included), ``unwritten`` = poison (NaN/inf) left in the output, ``rel_frobenius`` = the relative
    Frobenius error of the written elements (:attr:`Check.rel_err`). Built as
    ``ElementCheck(shape, label, worst, wrong, unwritten, first_wrong, rel_frobenius)``;
    :meth:`as_dict` writes the records' keys (``config``, ``worst_ratio``, ``wrong``, …)."""

    def __init__(self, shape, label: str, worst: float, wrong: int, unwritten: int,
                 first_wrong, rel_frobenius: float):
        super().__init__(shape, "", rel_frobenius, 1.0, unwritten, worst, None, wrong, label,
                         first_wrong)

    # ``worst`` is Check's index of the worst element; here (the chapters' name) the worst ratio
    @property
    def worst(self) -> float:
        return self.max_err

    @worst.setter
    def worst(self, index) -> None:          # Check.__init__ stores the (unrecorded) index here
        self.worst_index = index

    @property
    def wrong(self) -> int:
        return self.n_bad

    @property
    def rel_frobenius(self) -> float:
        return self.rel_err

    def as_dict(self) -> dict:
        return {"shape": list(self.shape), "config": self.label, "worst_ratio": self.worst,
                "wrong": self.wrong, "unwritten": self.unwritten,
                "first_wrong": list(self.first_wrong) if self.first_wrong else None,
                "rel_frobenius": self.rel_frobenius, "passed": bool(self.passed)}


def compare_to_bound(out: np.ndarray, ref: np.ndarray, bound: np.ndarray, k: int,
                     label: str = "") -> ElementCheck:
    """Compare ``out`` (M×N) with the float64 ``ref`` element by element against ``bound``
    (M×N, or broadcastable): an element passes when ``|out − ref| ≤ bound``; an element left
    non-finite (poison) counts as unwritten. ``k`` is recorded in the shape (M, N, K)."""
    o = np.asarray(out).astype(np.float64)
    finite = np.isfinite(o)
    unwritten = int(np.count_nonzero(~finite))
    ratio = np.where(finite, np.abs(o - ref) / bound, np.inf)
    bad = ratio > 1.0
    wrong = int(np.count_nonzero(bad & finite))
    first = tuple(int(x) for x in np.argwhere(bad)[0]) if bad.any() else None
    rel = float(np.linalg.norm(np.where(finite, o, 0.0) - ref) / np.linalg.norm(ref))
    return ElementCheck((ref.shape[0], ref.shape[1], k), label, float(ratio.max()), wrong,
                        unwritten, first, rel)


def element_bound(k: int, mag: np.ndarray, ref: np.ndarray, out_dtype: str) -> np.ndarray:
    """The per-element bound of a K-long fp32-accumulated product: ``k · 2^-21 · mag +
    2 · u_out · |ref|`` with ``mag`` = |A|·|B| (:func:`compare_elementwise`)."""
    return k * 2.0 ** -21 * mag + 2 * OUT_ROUNDING[out_dtype] * np.abs(ref)


def compare_elementwise(out: np.ndarray, a: np.ndarray, b: np.ndarray, out_dtype: str,
                        label: str = "") -> ElementCheck:
    """Compare ``out`` (M×N) with ``a @ b`` in float64, element by element.

    The bound per element: fp32 accumulation of K products has an error below γ_K·(|A|·|B|) with
    γ_K ≈ K·2^-24 (recursive summation, Higham); we allow 8× that (K·2^-21) for the Tensor Core's
    internal accumulation order, plus twice the output's rounding (:func:`element_bound`). A
    missing k-step shifts an element by ~√16 standard deviations of a product, far above the bound;
    an element never written stays NaN (poison) and is counted as unwritten
    (:func:`compare_to_bound`)."""
    ref = a.astype(np.float64) @ b.astype(np.float64)
    # |A|·|B| only scales the bound: float32 is ample (and halves the host work)
    mag = (np.abs(a.astype(np.float32)) @ np.abs(b.astype(np.float32))).astype(np.float64)
    k = a.shape[1]
    return compare_to_bound(out, ref, element_bound(k, mag, ref, out_dtype), k, label)


def _refuse(error: type, field: str, value, rule: str):
    raise error(f"{field}={value!r}: {rule}")


def b_shape(k: int, n: int, b_major: str) -> tuple[int, int]:
    """How B (K×N mathematically) is stored: (N, K) for K-major, (K, N) for MN-major."""
    return (n, k) if b_major == "K" else (k, n)


def operand_dims(a, b, dt, dtype_name: str, b_major: str,
                 error: type = ValueError, b_dt=None, b_dtype_name: str | None = None
                 ) -> tuple[int, int, int]:
    """(M, N, K) of ``a`` (M×K) and ``b`` (stored N×K for ``b_major`` "K", K×N for "MN"), after the
    rules every TMA-fed GEMM of the course shares: dtype ``dt`` (named ``dtype_name``; B's
    ``b_dt`` / ``b_dtype_name`` where it differs, chapter 07's mixed FP8), 2-D,
    C-contiguous host arrays, 16-byte aligned device addresses (cuTensorMapEncodeTiled
    globalAddress), K agreeing. Raises ``error`` (the chapter's error class) naming field, value
    and rule."""
    want = {"a": (dt, f"{dtype_name} (cfg.dtype)"),
            "b": (dt, f"{dtype_name} (cfg.dtype)") if b_dt is None else
                 (b_dt, f"{b_dtype_name} (cfg.b_dtype)")}
    for what, x in (("a", a), ("b", b)):
        if np.dtype(x.dtype) != want[what][0]:
            _refuse(error, f"{what}.dtype", str(np.dtype(x.dtype)), f"must be {want[what][1]}")
        if len(x.shape) != 2:
            _refuse(error, f"{what}.shape", tuple(x.shape), "must be 2-D")
        if isinstance(x, DeviceArray) and x.ptr % 16:
            _refuse(error, f"{what} address", hex(x.ptr), "must be 16-byte aligned (TMA globalAddress)")
        if isinstance(x, np.ndarray) and not x.flags.c_contiguous:
            _refuse(error, f"{what}", "non-contiguous", "must be C-contiguous (row-major)")
    m, k = a.shape
    n, k2 = b.shape if b_major == "K" else b.shape[::-1]
    if k2 != k:
        layout = "N×K (b_major='K')" if b_major == "K" else "K×N (b_major='MN')"
        _refuse(error, "b.shape", tuple(b.shape), f"B stored {layout} must have K={k} to match "
                                                  f"a.shape={tuple(a.shape)}")
    return m, n, k


def check_out(out, m: int, n: int, odt, error: type = ValueError) -> None:
    """``out`` is None or M×N of dtype ``odt`` at a 16-byte aligned address; raises ``error``."""
    if out is None:
        return
    if tuple(out.shape) != (m, n) or np.dtype(out.dtype) != odt:
        _refuse(error, "out", (tuple(out.shape), str(out.dtype)), f"must be {(m, n)} {odt}")
    if getattr(out, "ptr", 0) % 16:
        _refuse(error, "out address", hex(out.ptr), "must be 16-byte aligned")
