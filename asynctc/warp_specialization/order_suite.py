"""Chapter 06's record suite ``ws_orders``: the top rung's L2 and tile-order variants (issue 20 §2)
timed beside cuBLAS and beside the top rung itself, in one run.

The top rung (rung 8, "raster") asks L2 for ~18 % more read sectors than cuBLAS (record
``ws_limit``). :data:`VARIANTS` are opt-in :class:`WSConfig` fields on rung 8's config:
``l2_promotion`` 128 / 256 on A's and B's tensor maps, ``l2_hint`` (A loads with an L2 evict_last
policy) and ``tile_order="hilbert"`` (:mod:`.tile_order`). :func:`measure_orders`: per size of
:data:`SIZES` and dtype, :data:`ROUNDS` rounds of cuBLAS then every variant (``bench.time_gpu``,
clock in flight, every output checked on sampled rows against float64); each variant's ratio is
its median over the rounds against cuBLAS's median and against rung 8's (:func:`order_summary`).
Writes records, never plots; medians, never asserted on. Predictions: docs/NOTES.md, "Chapter
06: L2 promotion, an A cache hint and a Hilbert tile order".
"""

from __future__ import annotations

import statistics

import numpy as np

from ..core import bench
from .config import WSConfig
from .ladder import RUNG_BY_NAME
from .launch import compile_job
from .limit_suite import time_rounds

SIZES = (4096, 8192)
DTYPES = ("float16", "bfloat16")
ROUNDS = 3
#: (name, fields over rung 8's config); "top" is rung 8 as the ladder runs it.
VARIANTS = (("top", {}), ("l2:128", {"l2_promotion": 128}), ("l2:256", {"l2_promotion": 256}),
            ("l2_hint", {"l2_hint": True}), ("hilbert", {"tile_order": "hilbert"}))


def variant(name: str, dtype: str = "float16") -> WSConfig:
    """Rung 8's config for ``dtype`` with variant ``name``'s fields (:data:`VARIANTS`)."""
    return RUNG_BY_NAME["raster"].make(dtype).replace(**dict(VARIANTS)[name])


def order_jobs() -> list:
    """Every compile job of the suite (the l2_promotion variants share rung 8's cubin)."""
    jobs = {}
    for dt in DTYPES:
        for name, _ in VARIANTS:
            j = compile_job(variant(name, dt))
            jobs[repr(j)] = j
    return list(jobs.values())


def measure_orders(progress=None, reps: int = 20, sizes=SIZES, dtypes=DTYPES,
                   rounds: int = ROUNDS) -> dict:
    """The "ws_orders" suite (see the module docstring)."""
    say = progress or (lambda _s: None)
    rng = np.random.default_rng()
    out = {"sizes": list(sizes), "dtypes": list(dtypes), "variants": [n for n, _ in VARIANTS],
           "rounds": rounds, "rows": [], "baseline_library": bench.baseline_library()}
    for size in sizes:
        for dt in dtypes:
            out["rows"] += time_rounds(size, dt, {name: variant(name, dt) for name, _ in VARIANTS},
                                       "variant", rounds, reps, rng)
            s = order_summary(out["rows"], size, dt, out["variants"])
            say(f"{size}³ {dt}: cuBLAS {s[0]['tflops']:.0f} TFLOP/s; " + ", ".join(
                f"{r['variant']} {r['of_cublas']:.3f} ({r['of_top']:.3f} of top)" for r in s[1:]))
    out["summary"] = [r for size in sizes for dt in dtypes
                      for r in order_summary(out["rows"], size, dt, out["variants"])]
    return out


def order_summary(rows: list[dict], size: int, dt: str, variants) -> list[dict]:
    """For one (size, dtype): cuBLAS's row, then one per variant — median TFLOP/s and in-flight
    clock over the rounds, ``of_cublas`` and ``of_top`` (against rung 8's median)."""
    sel = [r for r in rows if (r["size"], r["dtype"]) == (size, dt)]

    def med(rs, k):
        return statistics.median(r.get(k) or 0.0 for r in rs)
    cb = [r for r in sel if r["kernel"] == "cuBLAS"]
    cbt, cbc = med(cb, "tflops"), med(cb, "sm_mhz")
    top = med([r for r in sel if r.get("variant") == "top"], "tflops")
    out = [{"size": size, "dtype": dt, "kernel": "cuBLAS", "tflops": cbt, "sm_mhz": cbc}]
    for v in variants:
        rs = [r for r in sel if r.get("variant") == v]
        t, c = med(rs, "tflops"), med(rs, "sm_mhz")
        out.append({"size": size, "dtype": dt, "kernel": "ours", "variant": v, "tflops": t,
                    "sm_mhz": c, "of_cublas": t / cbt, "of_top": t / top,
                    "clock_of_cublas": c / cbc if cbc else None})
    return out


def summarize_orders(rec) -> str:
    """The record as text: per size and dtype, cuBLAS's medians, then each variant's with its
    ratios to cuBLAS and to rung 8."""
    res = rec.results
    lines = [rec.label(), f"rung 8's L2 / tile-order variants (medians of {res['rounds']} rounds):"]
    for r in res["summary"]:
        what = "cuBLAS" if r["kernel"] == "cuBLAS" else r["variant"]
        ratio = (f"  {r['of_cublas']:.3f} of cuBLAS, {r['of_top']:.3f} of top"
                 if "of_cublas" in r else "")
        lines.append(f"  {r['size']}³ {r['dtype']:8s} {what:8s} {r['tflops']:6.0f} TFLOP/s "
                     f"{r['sm_mhz']:5.0f} MHz{ratio}")
    return "\n".join(lines)


SUITES = {"ws_orders": (measure_orders, summarize_orders, "sm_90a")}
