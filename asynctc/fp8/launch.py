"""Chapter 07, running and checking the FP8 GEMM: :func:`verify_fp8` (fresh random FP8 inputs,
poisoned output, every element against float64 of the dequantised inputs within
:func:`asynctc.models.fp8.accumulation_bound`; a ``block_scales`` config goes to
:func:`verify_block_scaled`), the shapes each config is checked on (:func:`shapes_for`),
:func:`check_all`, and the baseline: cuBLASLt's FP8 GEMM through ``torch._scaled_mm``
(:func:`scaled_mm`, :func:`scaled_mm_blockwise`)."""

from __future__ import annotations

import numpy as np

from .. import warp_specialization as W
from ..core import runtime
from ..models.fp8 import (FRAC_BITS, _fail, block_scaled_operands, check_fp8_block,
                          check_fp8_gemm, random_fp8)
from .config import correctness_configs, shape_configs


def verify_block_scaled(cfg, m: int, n: int, k: int, rng=None, frac_bits: int = FRAC_BITS):
    """Run the ``cfg.block_scales`` config on :func:`block_scaled_operands` (poisoned output) and
    check every element (:func:`check_fp8_block`). Returns :class:`asynctc.core.checks.Check`."""
    if not cfg.block_scales:
        _fail("cfg.block_scales", False, "verify_block_scaled needs a block_scales config")
    W.check_shapes(m, n, k, cfg)
    qa, sa, qb, sb, _, _ = block_scaled_operands(m, n, k, cfg.dtype, rng, b_dtype=cfg.dtype_b)
    g = W.run_ws(qa, qb, cfg, block_scales=(sa, sb))
    return check_fp8_block(g.out.to_host(), qa, qb, sa, sb, cfg.out_dtype, frac_bits, cfg.label())


def verify_fp8(cfg, m: int, n: int, k: int, rng=None, frac_bits: int = FRAC_BITS,
               scaled: bool = True):
    """Run the fp8 ``cfg`` (:class:`asynctc.warp_specialization.WSConfig`) on fresh random FP8
    inputs (:func:`random_fp8`; B in ``cfg.dtype_b``, the other format for a mixed build), with per-tensor scales (``scaled``: random powers of two and
    non-powers of two, so the epilogue's multiply is exercised), poisoned output, and check every
    element (:func:`check_fp8_gemm`); a ``block_scales`` config goes to
    :func:`verify_block_scaled`. Returns :class:`asynctc.core.checks.Check`."""
    if cfg.block_scales:
        return verify_block_scaled(cfg, m, n, k, rng, frac_bits)
    W.check_shapes(m, n, k, cfg)
    rng = rng if rng is not None else np.random.default_rng()
    qa, qb = random_fp8((m, k), cfg.dtype, rng), random_fp8((n, k), cfg.dtype_b, rng)
    sa, sb = (np.float32(rng.uniform(0.5, 2.0)), np.float32(2.0 ** -3)) if scaled else (1.0, 1.0)
    g = W.run_ws(qa, qb, cfg, scales=np.array([sa, sb], np.float32) if scaled else None)
    return check_fp8_gemm(g.out.to_host(), qa, qb, sa, sb, cfg.out_dtype, frac_bits, cfg.promote,
                          cfg.label())


#: The non-square FP8 shapes the FP8 top rung could not run before the tile was chosen by the
#: shape (M = 64, 128: the 128-row tile with clusters of 2 needs M a multiple of 256) and the one
#: it ran on half the SMs (M = 256: 2 × 32 tiles of 128×256): problems of these shapes, sized for
#: a quick correctness check (the tiles :func:`fp8_shape_config` picks at N = 8192 are checked on
#: them, :func:`shapes_for`); the last has more tiles than SMs for each of those tiles (64×64:
#: 1024, 128×64: 512, 128×128: 256 tiles), so the persistent loop and the cluster pairs walk
#: several tiles — at an eighth of the float64 cost of :data:`PERSISTENT_SHAPE`.
THIN_CHECK_SHAPES = ((64, 1024, 512), (128, 1024, 512), (256, 1024, 512), (256, 16384, 256))
#: Correctness shapes of the FP8 checks: several CTA rows and columns, 8 k-tiles of 128; a short
#: K (3 k-tiles, fewer than the stages; with promote 2 and 4 a partial last interval); and for
#: the persistent / cluster variants more tiles than SMs (256 tiles of 128×256).
CHECK_SHAPES = ((512, 768, 1024), (256, 512, 384))
PERSISTENT_SHAPE = (2048, 4096, 512)


def shapes_for(cfg) -> list[tuple[int, int, int]]:
    """The shapes :func:`correctness_configs` are checked on (those the tile divides):
    :data:`CHECK_SHAPES`, and for persistent or cluster configs :data:`PERSISTENT_SHAPE` — but
    for the thin-M tiles (:func:`shape_configs`) :data:`THIN_CHECK_SHAPES` instead of it."""
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
    from ..core import bench
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
    from ..core import bench
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


def _sampled_fp8_check(out, qa, qb, sa, sb, cfg, rows_idx, frac_bits):
    host = out.to_host()
    return check_fp8_gemm(host[rows_idx], qa[rows_idx], qb, sa, sb, cfg.out_dtype, frac_bits,
                          cfg.promote, cfg.label())


def timing_problem(size: int, rng) -> tuple:
    """The FP8 problem every timed suite uses, on fresh random inputs: ``(qa, qb, sa, sb, da, db,
    dsc, rows_idx, dc)`` — e4m3 operands A and B (stored N×K) on the host and the device, per-tensor
    scales (sa random in 0.5..2, sb 1/8) on both, one random row per 128 to check a timed output
    on, and a poisoned bf16 C."""
    from ..core.memory import DeviceArray
    from ..models.fp8 import random_fp8
    from ..models.layout import dtype_of
    qa, qb = random_fp8((size, size), rng=rng), random_fp8((size, size), rng=rng)
    sa, sb = np.float32(rng.uniform(0.5, 2.0)), np.float32(0.125)
    da, db = DeviceArray.from_host(qa), DeviceArray.from_host(qb)
    dsc = DeviceArray.from_host(np.array([sa, sb], np.float32))
    rows_idx = np.minimum(np.arange(0, size, 128) + rng.integers(0, 128, size // 128), size - 1)
    dc = DeviceArray.poisoned((size, size), dtype_of("bfloat16"))
    return qa, qb, sa, sb, da, db, dsc, rows_idx, dc



def show_checks(results: dict, record=None) -> None:
    """Chapter 07 §3 in one call. Live on an sm_90a GPU, first check two GEMMs now (:func:`verify_fp8`
    on the e4m3 top rung and :func:`verify_block_scaled` on the block-scaled build, 512×768×1024)
    and print each one's worst |C − ref| / bound. Then print the record's label and its checks:
    how many, and the worst ratio. Raises :class:`AssertionError` when a live check or a recorded
    one did not pass."""
    from ..core import runtime
    from .config import block_timed_config, fp8_config
    if runtime.runs_live("sm_90a"):
        for chk in (verify_fp8(fp8_config(), 512, 768, 1024),
                    verify_block_scaled(block_timed_config(), 512, 768, 1024)):
            print(f"live: {chk.dtype}: worst |C−ref|/bound {chk.max_err:.3f}, passed {chk.passed}")
            assert chk.passed, f"live FP8 check failed: {chk}"
    if record is not None:
        print(record.label())
    checks = results["checks"]
    assert all(c["passed"] for c in checks), "a recorded FP8 check did not pass"
    print(f"{len(checks)} checks passed (e4m3 and e5m2; with and without promotion and block "
          f"scales), worst |C−ref|/bound {max(c['max_err'] for c in checks):.3f}")
