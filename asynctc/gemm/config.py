"""Where :func:`asynctc.matmul` chooses its configuration: shape → tile, cluster, epilogue, stages.

:func:`matmul_config` is the rule, in its docstring and in :func:`choose_config`'s few lines: the
ladder's top rung (chapter 06's rung 8) with the ``EDGES`` build, the CTA tile and cluster from
:func:`asynctc.warp_specialization.shape_tile` (how full the SMs' waves are), the TMA-store
epilogue where C allows it, the most stages that fit
(:func:`asynctc.warp_specialization.most_stages`). :data:`B_LAYOUTS` and :func:`b_major_of` (the
one check of ``b_layout``) say how B is given.

On top of that rule, per shape class (:func:`shape_class`: decode, thin, small, large), the
decision table :data:`DECISIONS` says what to change — split-K, another tile, fewer stages, a
non-persistent grid — once a measurement has shown it wins (``tools/gpu_matmul_shapes.py`` prints
the winner per shape). Its entries are empty until then: today's rule everywhere.
"""

from __future__ import annotations

from ..core import runtime
from ..warp_specialization.config import (DEFAULT_SM_COUNT, DTYPES, WSConfig, _fail, default_bk,
                                          most_stages, shape_tile)
from ..warp_specialization.ladder import RASTER_GROUP_M

B_MAJOR_NAMES = ("K", "MN")

#: b_layout → how B is stored: "KxN" (numpy's ``a @ b``: MN-major B) or "NxK" (K-major, B^T stored).
B_LAYOUTS = {"KxN": "MN", "NxK": "K"}


def b_major_of(b_layout: str) -> str:
    """How B is stored for ``b_layout`` (:data:`B_LAYOUTS`): "MN" for "KxN", "K" for "NxK" — the
    one place ``b_layout`` is checked. Raises :class:`WarpSpecializationError`."""
    if b_layout not in B_LAYOUTS:
        _fail("b_layout", b_layout, f"one of {sorted(B_LAYOUTS)}: 'KxN' (b is K×N, as in a @ b) "
                                    "or 'NxK' (b is N×K, i.e. B transposed)")
    return B_LAYOUTS[b_layout]


def operand_rules(dt: str, b_dt: str, a_shape, b_shape, b_layout: str, out_dtype: str | None,
                  out: tuple | None = None) -> tuple[int, int, int, str]:
    """The rules every :func:`asynctc.matmul` call shares, whatever kind its arrays are: ``dt`` /
    ``b_dt`` (dtype names) 16-bit and equal, K agreeing for ``b_layout``, and C — ``out`` given as
    (dtype name, shape, read-only) or None — of ``out_dtype`` (a name or None) and M×N. Returns
    (M, N, K, the output dtype name). Raises :class:`WarpSpecializationError` naming the field."""
    if dt not in DTYPES:
        _fail("a.dtype", dt, f"one of {sorted(DTYPES)} (wgmma .f16 / .bf16 inputs, PTX ISA "
                             "§9.7.15.5)")
    if b_dt != dt:
        _fail("b.dtype", b_dt, f"must equal a.dtype {dt!r}")
    m, k = a_shape
    n, kb = tuple(b_shape)[::-1] if b_layout == "KxN" else tuple(b_shape)
    if kb != k:
        _fail("b.shape", tuple(b_shape), f"b_layout={b_layout!r} reads b as "
                                         f"{'K×N' if b_layout == 'KxN' else 'N×K'}: its K is {kb}, "
                                         f"a.shape={tuple(a_shape)} has K={k}")
    field = "out_dtype"
    if out is not None:
        if out_dtype is not None and out[0] != out_dtype:
            _fail("out.dtype", out[0], f"must be out_dtype={out_dtype!r}")
        out_dtype, field = out[0], "out.dtype"
    out_dtype = out_dtype or dt
    if out_dtype not in ("float32", dt):
        _fail(field, out_dtype, f"'float32' or the input dtype {dt!r} (fp32 accumulation)")
    if out is not None:
        if tuple(out[1]) != (m, n):
            _fail("out.shape", tuple(out[1]), f"must be (M, N) = {(m, n)}")
        if out[2]:
            _fail("out", "read-only", "must be writeable")
    return m, n, k, out_dtype


#: The shape classes of :func:`shape_class`, in the order it tries them.
SHAPE_CLASSES = ("decode", "decode_wide", "thin", "tiny", "small", "large")
#: Fields a :data:`DECISIONS` entry may set (any other is refused by :func:`check_decisions`):
#: the CTA tile (``bm`` with ``consumers``, ``bn``), ``cluster``, ``stages`` (fixed; else the most
#: that fit), ``persistent``, ``split_k`` (clipped to the k-tiles K has; > 1 turns the TMA-store
#: epilogue off: the partials are fp32), ``splitk_fixup`` (the splits summed in the GEMM kernel by
#: the last to finish, no second launch; ignored where split_k ends up 1), ``group_m``.
DECISION_FIELDS = ("bm", "consumers", "bn", "cluster", "stages", "persistent", "split_k",
                   "splitk_fixup", "group_m")

#: The decision table: key → {field: value} overriding :func:`choose_config`'s rule for the shapes
#: of the key. A key is a class of :data:`SHAPE_CLASSES`, or (class, b_major) with b_major "K"
#: (B stored N×K) / "MN" (K×N), or (class, b_major, dtype); the most specific key present wins,
#: its fields only (no merging); :func:`check_decisions` checks it. The entries are the winners of
#: the shape sweep (record ``matmul_shapes``, ``tools/gpu_matmul_shapes.py``, H200, 2026-12-02),
#: kept where one entry beat today's rule on every swept shape of its class, both B layouts
#: (tests/test_gemm.py checks each entry against the record): "tiny" (512³) one consumer
#: warpgroup on 64-row tiles (0.82 → 0.86 of cuBLAS); "small" (up to 2048³) no cluster (2048³:
#: 0.95 → 0.98; 1024³ already ran without one); "decode_wide" (M ≤ 16, N·K ≥ 2^25) split-K of 4
#: on 64×256 tiles summed in the kernel (M = 1, 4 at 8192: 0.54–0.58 → 0.80–0.82). Empty where
#: nothing beat the rule beyond the run's noise (thin M, decode at N = K = 4096, large).
DECISIONS: dict = {
    "decode": {},
    "decode_wide": {"bn": 256, "split_k": 4, "splitk_fixup": True},
    "thin": {},
    "tiny": {"bm": 64, "consumers": 1},
    "small": {"cluster": 1},
    "large": {},
}


def shape_class(m: int, n: int, k: int) -> str:
    """The class of an M×N×K problem for :data:`DECISIONS`: "decode" (M ≤ 16), "decode_wide"
    (M ≤ 16 with N · K ≥ 2^25, e.g. 8192 × 8192), "thin" (M ≤ 256 with N, K ≥ 2048: a few tile
    rows across many columns), "tiny" (M · N · K ≤ 768³), "small" (≤ 2048³), else "large"."""
    if m <= 16:
        return "decode_wide" if n * k >= 2 ** 25 else "decode"
    if m <= 256 and n >= 2048 and k >= 2048:
        return "thin"
    if m * n * k <= 768 ** 3:
        return "tiny"
    return "small" if m * n * k <= 2048 ** 3 else "large"


def check_decisions(table: dict) -> None:
    """Raise :class:`WarpSpecializationError` unless ``table`` is a decision table: a dict whose
    keys are a class, (class, b_major) or (class, b_major, dtype), and whose values are dicts of
    :data:`DECISION_FIELDS` (the values themselves are checked by :class:`WSConfig` when a
    configuration is made)."""
    if not isinstance(table, dict):
        raise TypeError(f"decisions={type(table).__name__}: must be a dict (see DECISIONS)")
    for key, entry in table.items():
        parts = key if isinstance(key, tuple) else (key,)
        if not (1 <= len(parts) <= 3 and parts[0] in SHAPE_CLASSES
                and (len(parts) < 2 or parts[1] in B_MAJOR_NAMES)
                and (len(parts) < 3 or parts[2] in DTYPES)):
            _fail("decisions key", key, f"a class of {SHAPE_CLASSES}, or (class, b_major) with "
                                        f"b_major in {B_MAJOR_NAMES}, or (class, b_major, dtype)")
        if not isinstance(entry, dict):
            _fail(f"decisions[{key!r}]", entry, "must be a dict {field: value}")
        for f, v in entry.items():
            if f not in DECISION_FIELDS:
                _fail(f"decisions[{key!r}]", f, f"a field of {DECISION_FIELDS}")
            if f == "split_k" and (isinstance(v, bool) or not isinstance(v, int)):
                _fail(f"decisions[{key!r}]['split_k']", v, "must be an integer (1..16)")


def decision(m: int, n: int, k: int, dtype: str, b_major: str, table: dict | None = None) -> dict:
    """The overrides ``table`` (default :data:`DECISIONS`) gives an M×N×K problem: the entry of
    the most specific key present — (class, b_major, dtype), (class, b_major), class — or {}."""
    table = DECISIONS if table is None else table
    cls = shape_class(m, n, k)
    for key in ((cls, b_major, dtype), (cls, b_major), cls):
        if key in table:
            return dict(table[key])
    return {}


def matmul_config(m: int, n: int, k: int, dtype: str = "float16", b_layout: str = "KxN", *,
                  out_dtype: str | None = None, c_rows_aligned: bool = True,
                  sm_count: int | None = None) -> WSConfig:
    """The configuration :func:`asynctc.matmul` runs for an M×N×K problem (always the ``edges``
    build).

    * B given N×K (``b_layout="NxK"``, K-major) or K×N (MN-major): the ladder's top rung —
      persistent, clusters of 2 CTAs multicasting B, TMA-store epilogue, raster groups of 16 tile
      rows (rung 8).
    * Tile and cluster: :func:`~asynctc.warp_specialization.shape_tile` (``sm_count`` SMs, default
      the device's, else 132): 128 × 256 with two consumer warpgroups (64 rows each); thin M
      (M ≤ 64) 64 rows with one consumer warpgroup and no setmaxnreg (one consumer's 128
      accumulators fit the 248 registers 256 threads start with); bn 256 / 128 / 64 by wave fill
      (:data:`~asynctc.warp_specialization.WAVE_FILL`); clusters of 2 only with at least two tile
      rows and bn ≥ 128.
    * TMA-store epilogue only when C is written in the input dtype (``out_dtype`` None or
      ``dtype``) and C's rows are a multiple of 16 bytes (``c_rows_aligned``; cuTensorMapEncodeTiled
      globalStrides), else the register epilogue (clipped per element pair).
    * Stages: as many as fit the shared memory of one CTA (2..6; 227 KiB on sm_90).

    Raises :class:`WarpSpecializationError` for a bad ``dtype`` / ``b_layout`` / ``out_dtype`` or
    M, N, K outside 1 .. 2^31 − 1."""
    b_major = b_major_of(b_layout)
    if dtype not in DTYPES:
        _fail("dtype", dtype, f"one of {sorted(DTYPES)}")
    odt = dtype if out_dtype is None else out_dtype
    if odt not in ("float32", dtype):
        _fail("out_dtype", odt, f"'float32' or the input dtype {dtype!r}")
    return choose_config(m, n, k, dtype, b_major, odt, c_rows_aligned, sm_count)


def choose_config(m: int, n: int, k: int, dtype: str, b_major: str, out_dtype: str,
                  c_rows_aligned: bool = True, sm_count: int | None = None,
                  decisions: dict | None = None) -> WSConfig:
    """:func:`matmul_config`'s choice for arguments already checked (``dtype`` 16-bit, ``b_major``
    "K" / "MN", ``out_dtype`` "float32" or ``dtype``): what :class:`~asynctc.gemm.MatmulPlan`
    calls after checking its operands, then the shape class's entry of ``decisions`` (default
    :data:`DECISIONS`; :func:`decision`) applied on top. M, N, K must be in 1 .. 2^31 − 1 (32-bit
    TMA coordinates; :class:`WarpSpecializationError` otherwise, as for a bad table entry)."""
    for name, v in (("M", m), ("N", n), ("K", k)):
        if not 1 <= v < 2**31:
            _fail(name, v, "must be in 1 .. 2^31 - 1")
    if sm_count is None:
        info = runtime.device_info()
        sm_count = info.sm_count if info else DEFAULT_SM_COUNT
    tile = shape_tile(m, n, sm_count)                      # bm, consumers, bn, cluster
    tma_store = out_dtype == dtype and (c_rows_aligned or m == 1)
    base = dict(dtype=dtype, **tile, b_major=b_major, out_dtype=out_dtype,
                persistent=True, tma_store=tma_store, edges=True, group_m=RASTER_GROUP_M)
    check_decisions(DECISIONS if decisions is None else decisions)   # the table as it stands
    over = decision(m, n, k, dtype, b_major, decisions)
    if over.get("split_k", 1) > 1:
        over["split_k"] = min(over["split_k"], -(-k // default_bk(dtype)))  # no empty slice
        if over["split_k"] > 1:
            base["tma_store"] = False                      # the partials are fp32
    if over.get("split_k", 1) == 1:
        over.pop("splitk_fixup", None)                     # nothing to sum
    stages = over.pop("stages", None)
    base.update(over)
    if base["consumers"] == 1:
        base["setmaxnreg"] = False
    if stages is not None:
        return WSConfig(stages=stages, **base)
    return most_stages(base, (m, n, k))                    # the most stages that fit
