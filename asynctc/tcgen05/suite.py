"""The "tcgen05" record suite (compute capability 10.0 only): every variant checked, then timed beside
cuBLAS in the same run; the record's summary. Never plots."""

from __future__ import annotations

import numpy as np

from ..core.memory import DeviceArray
from .config import ARCH, DTYPES, SUITE_CONFIGS
from .launch import _decode_error, launcher, require_sm100, sass_summary
from .verify import check_shapes, compare, random_operands, verify_gemm


SUITE_SIZES = (2048, 4096, 8192)


def measure_tcgen05(progress=None) -> dict:
    """The "tcgen05" suite: every :data:`SUITE_CONFIGS` variant checked on every
    :func:`check_shapes` shape (a failure stops the suite: a wrong kernel is never timed), then
    each variant and cuBLAS timed on the same s×s×s operands for s in :data:`SUITE_SIZES` (cuBLAS
    writes C in the input dtype, this kernel fp32). Timed outputs are checked on sampled rows."""
    from ..core import bench, records
    say = progress or (lambda _s: None)
    info = require_sm100()
    out: dict = {"checks": [], "sweep": [], "sass": [], "baseline_library": bench.baseline_library(),
                 "sm_count": info.sm_count}
    rng = np.random.default_rng()
    for cfg in SUITE_CONFIGS:
        s = sass_summary(cfg)
        s.pop("full")
        out["sass"].append({**cfg.as_dict(), **s})
        for shp in check_shapes(cfg):
            chk = verify_gemm(cfg, shp, rng)
            out["checks"].append(chk.as_dict())
            if not chk.passed:
                raise RuntimeError(f"tcgen05 GEMM wrong: {cfg.label()} {shp}: {chk.as_dict()}")
        say(f"checked {cfg.label()}")
    for size in SUITE_SIZES:
        for dtype in DTYPES:
            a, b = random_operands(size, size, size, dtype, rng)
            da, db = DeviceArray.from_host(a), DeviceArray.from_host(b)
            dbt = DeviceArray.from_host(np.ascontiguousarray(b.T))
            flop = 2.0 * size ** 3
            if out["baseline_library"]:
                dc16 = DeviceArray.poisoned((size, size), a.dtype)
                t = bench.time_gpu(bench.cublas_gemm(da, db, dc16), reps=20)
                out["sweep"].append({"dtype": dtype, "size": size, "kernel": "cuBLAS",
                                     **t.as_dict(), "tflops": bench.tflops(flop, t.median_ms)})
                del dc16
            for cfg in SUITE_CONFIGS:
                if cfg.dtype != dtype:
                    continue
                dc = DeviceArray.poisoned((size, size), np.float32)
                derr = DeviceArray.from_host(np.zeros(1, np.uint32))
                run = launcher(cfg, da, dbt, dc, derr)
                t = bench.time_gpu(run, reps=20)
                e = int(derr.to_host()[0])
                if e:
                    raise RuntimeError(f"tcgen05 GEMM {cfg.label()} {size}³: {_decode_error(e)}")
                rows = rng.choice(size, size=8, replace=False)
                got = dc.to_host()[rows]
                chk = compare(got, a[rows], b, cfg)
                if not chk.passed:
                    raise RuntimeError(f"timed run wrong: {cfg.label()} {size}³: {chk.as_dict()}")
                out["sweep"].append({"dtype": dtype, "size": size, "kernel": "tcgen05",
                                     "config": cfg.as_dict(), "label": cfg.label(), **t.as_dict(),
                                     "tflops": bench.tflops(flop, t.median_ms),
                                     "sampled_rows_max_ratio": chk.max_ratio})
                say(f"{size}³ {cfg.label()}: {out['sweep'][-1]['tflops']:.0f} TFLOP/s")
            del da, db, dbt
    out["clocks_after"] = records.nvidia_smi_clocks()
    return out


def summarize_tcgen05(rec) -> str:
    """The record as text: checks passed, then TFLOP/s per variant and size with the ratio to the
    cuBLAS run of the same record."""
    r = rec.results
    ok = sum(c["passed"] for c in r["checks"])
    lines = [rec.label(), f"correctness: {ok}/{len(r['checks'])} checks passed"]
    base = {(x["dtype"], x["size"]): x["tflops"] for x in r["sweep"] if x["kernel"] == "cuBLAS"}
    for x in r["sweep"]:
        if x["kernel"] != "tcgen05":
            continue
        b = base.get((x["dtype"], x["size"]))
        ratio = f"{x['tflops'] / b:.2f} of cuBLAS ({b:.0f})" if b else "no baseline"
        lines.append(f"{x['size']:5d}³ {x['label']:44s} {x['tflops']:7.1f} TFLOP/s  {ratio}")
    return "\n".join(lines)


SUITES = {"tcgen05": (measure_tcgen05, summarize_tcgen05, ARCH)}
