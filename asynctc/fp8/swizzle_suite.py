"""Chapter 07 for chapter 10, the "fp8_swizzle" record suite (``SUITES["fp8_swizzle"]``,
``tools/gpu_ch07.py --swizzle``): the seed's "128-byte swizzle best for FP16, 64 or 32 bytes
possibly better for FP8", measured. :func:`measure_fp8_swizzle` checks the mixed-operand builds
(:func:`~asynctc.fp8.config.mixed_configs`) and the FP8 builds under each swizzle against float64
first (:func:`asynctc.fp8.launch.check_all`: a wrong kernel's speed is never recorded), then times
FP8 e4m3 under the 128-, 64-, 32- and no swizzle (:func:`~asynctc.fp8.config.swizzle_config`)
beside our fp16 top rung (128 B) in the same run; :func:`swizzle_table` and
:func:`summarize_fp8_swizzle` read its record beside :data:`PREDICTION`. The full "fp8" suite times
the same builds (they are in :func:`~asynctc.fp8.config.timed_configs`); this one is the
three-minute slice. Medians, never asserted on; no plots here."""

from __future__ import annotations

import numpy as np

from .. import warp_specialization as W
from ..core import runtime
from ..models.fp8 import FRAC_BITS, accumulation_bound
from .config import FP8_SWIZZLES, mixed_configs, swizzle_config
from .launch import check_all, timing_problem

SIZES = (4096, 8192)

#: Written before the first GPU run (docs/NOTES.md, same words): FP8 e4m3 throughput under each
#: swizzle as a fraction of the same build at 128 bytes, {swizzle: (low, high)} — from chapter 07's
#: fp16 swizzle record (64 B 0.96, 32 B 0.48–0.51, none 0.29–0.31 of 128 B): FP8 moves the same
#: bytes per stage at twice the wgmma rate, so the narrow TMA boxes should cost at least as much.
PREDICTION = {64: (0.93, 1.00), 32: (0.45, 0.75), 0: (0.25, 0.45)}
PREDICTION_TEXT = ("FP8 e4m3 / the same build at 128 B: 64 B 0.93–1.00, 32 B 0.45–0.75, none "
                   "0.25–0.45 — no narrower mode beats 128 B (the seed's 'possibly better for FP8' "
                   "not expected to hold), 128 B over the next-best 1.00–1.08 (not 10–20 %)")


def _sampled(qa, qb, rows_idx, scale: float, out_dtype: str):
    """(float64 reference, elementwise bound) of the sampled rows — computed once per size: every
    swizzle build runs the same operands with the same epilogue (no promotion, bf16 C)."""
    a64, b64 = qa[rows_idx].astype(np.float64), qb.astype(np.float64)
    bound = accumulation_bound(qa[rows_idx], qb, FRAC_BITS, 0, out_dtype, scale)
    return scale * (a64 @ b64.T), np.maximum(bound, np.finfo(np.float32).tiny)


def measure_fp8_swizzle(progress=None, sizes=None, reps: int = 10, check: bool = True) -> dict:
    """The "fp8_swizzle" suite.

    1. Compile the mixed-operand builds, the four swizzle builds and the fp16 top rung in
       parallel; registers and spills per build.
    2. ``check``: :func:`check_all` of the mixed builds (both orders) and the swizzle builds on
       their shapes (fresh random inputs, poisoned C, every element against float64 of the
       dequantised inputs), stopping at the first failure.
    3. Per size: e4m3 operands (random, per-tensor scales), C bf16: each swizzle build timed, its
       output checked on one random row per 128; fp16 operands: our fp16 top rung (128 B), timed
       and checked the same way — all in the same run. Rows as the "fp8" suite's (``swizzle`` is
       a field of every FP8 row), and ``table``: :func:`swizzle_table`."""
    from ..core import bench, checks
    from ..core.memory import DeviceArray
    say = progress or (lambda _s: None)
    sizes = SIZES if sizes is None else sizes
    rng = np.random.default_rng()
    fp16_top = W.TOP_RUNG.make("float16")
    timed = [swizzle_config(s) for s in FP8_SWIZZLES]
    checked = mixed_configs() + timed
    jobs = list({repr(W.compile_job(c)): W.compile_job(c) for c in checked + [fp16_top]}.values())
    say(f"compiling {len(jobs)} builds")
    runtime.precompile(jobs)
    out: dict = {"registers": {}, "checks": [], "rows": [], "swizzles": list(FP8_SWIZZLES),
                 "prediction": {str(k): v for k, v in PREDICTION.items()},
                 "prediction_text": PREDICTION_TEXT}
    for c in checked + [fp16_top]:
        ck = W.compile_ws(c)
        out["registers"][c.label()] = {"ptxas": ck.resources.registers,
                                       "spill_bytes": ck.resources.spill_stores}
    if check:
        out["checks"] = check_all(checked, rng=rng, progress=say)
        say(f"{len(out['checks'])} checks passed (mixed FP8 and every swizzle)")
    for size in sizes:
        flop = bench.gemm_flop(size, size, size)
        qa, qb, sa, sb, da, db, dsc, rows_idx, dc = timing_problem(size, rng)
        ref, bound = _sampled(qa, qb, rows_idx, float(np.float64(sa) * np.float64(sb)), "bfloat16")
        for cfg in timed:
            dc.poison()
            g = W.make_gemm(cfg, da, db, dc, scales=dsc)
            t = bench.time_gpu(g.launcher(), warmup=3, reps=reps, clock=True)
            g.check_error()
            chk = checks.compare(dc.to_host()[rows_idx], ref, cfg.label() + " (sampled rows)",
                                 (len(rows_idx), size, size), scale=bound, tol=1.0)
            if not chk.passed:
                raise RuntimeError(f"timed run wrong: {cfg.label()} {size}³: {chk.as_dict()}")
            out["rows"].append({"size": size, "dtype": cfg.dtype, "out_dtype": cfg.out_dtype,
                                "kernel": "ours", "label": cfg.label(), **cfg.as_dict(),
                                **t.as_dict(), "tflops": bench.tflops(flop, t.median_ms),
                                "check_rows": chk.as_dict(), "grid": g.grid})
            say(f"{size}³ e4m3 swizzle {cfg.swizzle}: {out['rows'][-1]['tflops']:.0f} TFLOP/s")
            del g
        del da, db, dc, dsc
        a16, b16 = checks.random_operands(size, size, size, "float16", None)
        da16 = DeviceArray.from_host(a16)
        dbt16 = DeviceArray.from_host(np.ascontiguousarray(b16.T))
        dc16 = DeviceArray.poisoned((size, size), np.dtype("float16"))
        sref = checks.timed_output_reference(a16, b16, "float16", rng)
        g = W.make_gemm(fp16_top, da16, dbt16, dc16)
        t = bench.time_gpu(g.launcher(), warmup=3, reps=reps, clock=True)
        g.check_error()
        chk = checks.check_sampled_rows(dc16, a16, b16, "float16", fp16_top.label(), sampled=sref)
        out["rows"].append({"size": size, "dtype": "float16", "out_dtype": "float16",
                            "kernel": "ours", "label": fp16_top.label(), **fp16_top.as_dict(),
                            **t.as_dict(), "tflops": bench.tflops(flop, t.median_ms),
                            "check_rows": chk.as_dict()})
        say(f"{size}³ fp16 {fp16_top.label()}: {out['rows'][-1]['tflops']:.0f} TFLOP/s")
        del g, da16, dbt16, dc16
    out["table"] = swizzle_table(out["rows"])
    return out


def swizzle_table(rows: list[dict]) -> list[dict]:
    """Per size and FP8 swizzle: TFLOP/s, the fraction of the same build at 128 B (``of_128``),
    FP8 / our fp16 top rung of the same run (``of_fp16``), and the prediction's band with
    ``predicted`` True / False (None at 128 B)."""
    out = []
    for size in sorted({r["size"] for r in rows}):
        rs = [r for r in rows if r["size"] == size and r.get("kernel") == "ours"]
        f16 = max((r["tflops"] for r in rs if r["dtype"] == "float16"), default=None)
        fp8 = {r.get("swizzle", 128): r for r in rs if "float8" in r["dtype"]}
        base = fp8.get(128)
        for s in sorted(fp8, reverse=True):
            v = fp8[s]["tflops"]
            of = v / base["tflops"] if base else None
            band = PREDICTION.get(s)
            out.append({"size": size, "swizzle": s, "tflops": v, "of_128": of,
                        "of_fp16": v / f16 if f16 else None, "band": band,
                        "predicted": (band[0] <= of <= band[1]) if band and of is not None
                        else None})
    return out


def summarize_fp8_swizzle(rec) -> str:
    r = rec.results
    lines = [rec.label() if hasattr(rec, "label") else "fp8_swizzle",
             f"{len(r.get('checks', []))} checks passed (mixed e4m3 × e5m2 both orders, e4m3 under "
             "each swizzle; elementwise against float64)",
             f"{'size':>5s} {'swizzle':>7s} {'TFLOP/s':>7s} {'of 128 B':>8s} {'of fp16':>7s}  "
             "prediction"]
    for t in r.get("table", []):
        f = (lambda x: f"{x:.2f}" if x is not None else "-")
        band = (f"{t['band'][0]:.2f}–{t['band'][1]:.2f} "
                f"{'inside' if t['predicted'] else 'OUTSIDE'}" if t.get("band") else "")
        lines.append(f"{t['size']:5d} {str(t['swizzle']) + ' B' if t['swizzle'] else 'none':>7s} "
                     f"{t['tflops']:7.0f} {f(t['of_128']):>8s} {f(t['of_fp16']):>7s}  {band}")
    lines.append("prediction (written before the run): " + r.get("prediction_text", PREDICTION_TEXT))
    return "\n".join(lines)


SUITES = {"fp8_swizzle": (measure_fp8_swizzle, summarize_fp8_swizzle, "sm_90a")}
