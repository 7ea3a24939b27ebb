"""The "pipeline" suite (``python -m asynctc record pipeline``): :func:`measure_pipeline` checks
every configuration, then sweeps the ring depth against cuBLAS timed in the same run and decodes
traces; the tables (:func:`depth_table`, :func:`variants_table`, :func:`checks_lines`) and
:func:`summarize_pipeline` read the record. Never plots (the figures: :mod:`.figures`)."""

from __future__ import annotations

import json
import time

import numpy as np

from ..core import checks, runtime
from ..core.memory import DeviceArray
from .config import STAGE_RANGE, PipelineConfig, PipelineError, np_dtype, smem_limit_bytes
from .launch import (BREAKS, CHECK_SHAPES, SWEEP_B_MAJOR, SWEEP_DTYPES, SWEEP_SIZES, SWEEP_TILES,
                     PipelineGemm, check_matrix, compile_job, correctness_configs, device_problem,
                     run_broken, sweep_configs, verify_pipeline)
from .results import best_row, cublas_row, row_label
from .trace import TraceResult, decode_trace, ktile_peak_cycles, trace_metrics


def _time(g: PipelineGemm, reps: int = 10):
    from ..core import bench
    t = bench.time_gpu(g.launcher(), warmup=3, reps=reps)
    g.check_error()
    return t


def measure_pipeline(progress=None, sizes=SWEEP_SIZES, dtypes=SWEEP_DTYPES, check: bool = True,
                     trace_dir=None) -> dict:
    """The "pipeline" suite.

    1. Correctness: :func:`correctness_configs` × :data:`CHECK_SHAPES` (stops at the first failure);
       the deliberately broken variants (:func:`run_broken`) must end in an error, not a hang.
    2. Depth sweep: for each dtype and size (square, fresh random inputs), cuBLAS and every
       :data:`SWEEP_TILES` tile at stages 1..6 (those that fit; the others are listed with the
       reason), wait_pending 1 (0 for one stage), B K-major, C in the input dtype. Each timed
       output is checked on sampled rows against float64.
    3. wait_pending 0 vs 1 and trace on vs off for every (tile, stages) of the sweep.
    4. Traces (fp16, 4096³, tile 128×256/c2 and the fastest config): depth 1, 2 and the best depth,
       decoded and reduced to :func:`trace_metrics`; CTA 0's spans kept in the record.
    ``trace_dir``: also write every decoded trace (all traced CTAs) there as JSON and the raw buffers
    as .npz. Timings are never asserted on."""
    from ..core import bench, records
    say = progress or (lambda _s: None)
    rng = np.random.default_rng()
    info = runtime.device_info()
    limit = smem_limit_bytes()
    out: dict = {"checks": [], "sweep": [], "variants": [], "traces": [], "not_fitting": [],
                 "baseline_library": bench.baseline_library(), "smem_limit": limit,
                 "sm_count": info.sm_count if info else None}
    jobs = list({repr(j): j for j in (compile_job(c) for c in
                                      (correctness_configs(limit) if check else []) +
                                      sweep_configs(limit))}.values())
    say(f"compiling {len(jobs)} variants")
    runtime.precompile(jobs)
    if check:
        say("correctness matrix")
        out["checks"] = check_matrix(correctness_configs(limit), rng=rng)
        say(f"{len(out['checks'])} checks passed")
        out["broken"] = []
        for kind, what in BREAKS.items():
            t0 = time.perf_counter()
            err = run_broken(kind, rng=rng)
            out["broken"].append({"kind": kind, "what": what, "error": err,
                                  "seconds": time.perf_counter() - t0})
            say(f"broken variant {kind} ({what}) ended in {time.perf_counter() - t0:.1f} s: {err}")
        c = verify_pipeline(PipelineConfig(), *CHECK_SHAPES[0], rng=rng)
        if not c.passed:
            raise RuntimeError(f"a correct kernel after the broken variants is wrong: {c.as_dict()}")
    for dt in dtypes:
        for bm, bn, c in SWEEP_TILES:
            for s in STAGE_RANGE:
                kw = dict(dtype=dt, bm=bm, bn=bn, consumers=c, stages=s, b_major=SWEEP_B_MAJOR,
                          out_dtype=dt, wait_pending=1 if s > 1 else 0)
                try:
                    PipelineConfig(**kw).validate(limit)
                except PipelineError as e:
                    if dt == dtypes[0]:
                        out["not_fitting"].append({**kw, "reason": str(e)})
    for size in sizes:
        for dt in dtypes:
            a, b, da, db, dbt = device_problem(size, dt, rng)
            rows = checks.timed_output_reference(a, b, dt, rng)   # one row per 128-row band
            flop = bench.gemm_flop(size, size, size)
            dc = DeviceArray.poisoned((size, size), np_dtype(dt))
            if out["baseline_library"]:
                t = bench.time_gpu(bench.cublas_gemm(da, db, dc), warmup=3, reps=10)
                # recorded, not raised: cuBLAS may reduce split-K partial sums in the output dtype,
                # which the bound does not model (as in the ceilings suite)
                c = rows.check(dc)
                out["sweep"].append({"kernel": "cuBLAS", "dtype": dt, "size": size, **t.as_dict(),
                                     "tflops": bench.tflops(flop, t.median_ms),
                                     "check_rows": c.as_dict()})
            for cfg in sweep_configs(limit):
                if cfg.dtype != dt:
                    continue
                dc.poison()
                try:
                    g = PipelineGemm(cfg, da, dbt, dc)
                except (TypeError, AttributeError) as e:
                    if not cfg.l2_promotion:
                        raise
                    # an older cuda.core without as_tensor_map(l2_promotion=): skip the variant
                    out.setdefault("skipped", []).append({**cfg.as_dict(), "size": size,
                                                          "reason": f"{type(e).__name__}: {e}"})
                    continue
                t = _time(g)
                c = checks.check_sampled_rows(dc, a, b, dt, cfg.label(), sampled=rows)
                row = {"kernel": "pipeline", "size": size, **cfg.as_dict(), "tile": cfg.tile_name,
                       **t.as_dict(), "tflops": bench.tflops(flop, t.median_ms),
                       "max_err_rows": c.max_err, "registers": g.ck.resources.registers,
                       "spill_bytes": g.ck.resources.spill_stores,
                       "resident_ctas": g.resident_ctas()}
                is_depth = (cfg.wait_pending == (1 if cfg.stages > 1 else 0) and not cfg.trace
                            and not cfg.l2_promotion)
                (out["sweep"] if is_depth else out["variants"]).append(row)
                say(f"{size}³ {cfg.label()}: {row['tflops']:.0f} TFLOP/s")
                if cfg.trace and size == sizes[0] and dt == "float16":
                    tr = decode_trace(g.trace_buffer(), cfg.consumers, g.k_tiles, cfg.stages,
                                      cfg.wait_pending)
                    met = trace_metrics(tr, ktile_peak_cycles(cfg))
                    out["traces"].append({**cfg.as_dict(), "size": size, "tile": cfg.tile_name,
                                          "metrics": met, "cta0": tr.as_dict(cta=0)})
                    if trace_dir is not None:
                        _dump_trace(trace_dir, cfg, size, tr, g.trace_buffer())
                del g
            del da, db, dbt, dc
    out["clocks_after"] = records.nvidia_smi_clocks()
    _keep_trace_spans(out)
    return out


def _trace_name(cfg: PipelineConfig, size: int) -> str:
    return (f"trace_{cfg.dtype}_{cfg.bm}x{cfg.bn}c{cfg.consumers}_s{cfg.stages}"
            f"_w{cfg.wait_pending}_{size}")


def _dump_trace(trace_dir, cfg, size, tr: TraceResult, raw: np.ndarray) -> None:
    from pathlib import Path
    d = Path(trace_dir)
    d.mkdir(parents=True, exist_ok=True)
    name = _trace_name(cfg, size)
    (d / f"{name}.json").write_text(json.dumps({"config": cfg.as_dict(), "size": size,
                                                **tr.as_dict(),
                                                "metrics": trace_metrics(tr, ktile_peak_cycles(cfg))}))
    np.savez_compressed(d / f"{name}.npz", raw=raw)



def _keep_trace_spans(out: dict) -> None:
    """Keep CTA 0's spans (what the notebook draws) only for depth 1, 2 and the best depth of the
    128×256 tile and of the fastest tile (fp16, first size); the metrics of every trace stay."""
    if not out["traces"]:
        return
    size = out["traces"][0]["size"]
    traced = {t["tile"] for t in out["traces"]}
    keep = set()
    bests = [best_row(out, "float16", size, tile) for tile in sorted(traced)]
    bests = [b for b in bests if b]
    for best in [b for b in bests if b["tile"] == "128x256x64/c2"] + \
            ([max(bests, key=lambda r: r["tflops"])] if bests else []):
        keep |= {(best["tile"], s) for s in (1, 2, best["stages"])}
    for t in out["traces"]:
        if (t["tile"], t["stages"]) not in keep:
            t.pop("cta0", None)



def _occupancy_mark(resident: int | None) -> str:
    """Four characters after a TFLOP/s cell: " (n)" when n ≥ 2 CTAs were resident per SM (the
    driver's occupancy query), blanks otherwise (one CTA, or no query in the record)."""
    return f" ({resident})" if resident and resident > 1 else "    "


def depth_table(results: dict, dtypes=SWEEP_DTYPES) -> str:
    """TFLOP/s by stages (columns) for every tile, dtype (of ``dtypes``) and size, with cuBLAS and the
    best ratio ("-" where a stage count was not built or the run timed no cuBLAS)."""
    lines = [f"{'size':>5s} {'dtype':9s} {'tile':20s} " +
             " ".join(f"{'s' + str(s):>8s}" for s in STAGE_RANGE) + f" {'cuBLAS':>7s} {'best/cuBLAS':>11s}"]
    for size in sorted({r["size"] for r in results["sweep"]}):
        for dt in dtypes:
            cb = cublas_row(results, dt, size)
            tiles = sorted({r["tile"] for r in results["sweep"] if r["kernel"] == "pipeline"
                            and r["dtype"] == dt and r["size"] == size})
            for tile in tiles:
                rows = {r["stages"]: r for r in results["sweep"] if r["kernel"] == "pipeline"
                        and r["dtype"] == dt and r["size"] == size and r["tile"] == tile}
                by = {s: r["tflops"] for s, r in rows.items()}
                cells = " ".join(
                    (f"{by[s]:4.0f}" + _occupancy_mark(rows[s].get("resident_ctas")))
                    if s in by else f"{'-':>4s}    " for s in STAGE_RANGE)
                best = max(by.values())
                ratio = f"{best / cb['tflops']:11.2f}" if cb else f"{'':11s}"
                cublas = f"{cb['tflops']:7.0f}" if cb else f"{'-':>7s}"
                lines.append(f"{size:5d} {dt:9s} {tile:20s} {cells} {cublas} {ratio}")
    if any((r.get("resident_ctas") or 1) > 1 for r in results["sweep"]):
        lines.append("(n): n CTAs resident per SM (the driver's occupancy query for that kernel); "
                     "no mark: one. /2cta: launch bounds asking for 2 resident CTAs per SM")
    return "\n".join(lines)


def variants_table(results: dict) -> str:
    """wait_pending 0 and trace-on beside the depth sweep's row for the same (tile, stages)."""
    lines = [f"{'size':>5s} {'dtype':9s} {'tile':20s} {'st':>2s} {'wait1':>6s} {'wait0':>6s} "
             f"{'l2:256':>6s} {'trace':>6s} {'trace cost':>10s}"]
    keyf = lambda r: (r["size"], r["dtype"], r["tile"], r["stages"])  # noqa: E731

    def cell(x):
        return f"{x['tflops']:6.0f}" if x else f"{'-':>6s}"
    base = {keyf(r): r for r in results["sweep"] if r["kernel"] == "pipeline"}
    for k in sorted(base):
        w0 = next((v for v in results["variants"] if keyf(v) == k and v["wait_pending"] == 0
                   and not v["trace"] and not v.get("l2_promotion")), None)
        l2 = next((v for v in results["variants"] if keyf(v) == k and v.get("l2_promotion")), None)
        tr = next((v for v in results["variants"] if keyf(v) == k and v["trace"]), None)
        b = base[k]["tflops"]
        cost = f"{b / tr['tflops'] - 1:10.1%}" if tr else f"{'-':>10s}"
        lines.append(f"{k[0]:5d} {k[1]:9s} {k[2]:20s} {k[3]:2d} {b:6.0f} {cell(w0)} {cell(l2)} "
                     f"{cell(tr)} {cost}")
    return "\n".join(lines)


def checks_lines(results: dict) -> list[str]:
    """The correctness line of a GEMM suite's summary (chapters 05 and 06): checks passed of run and
    the worst |C − ref| / bound (the elementwise bound of :func:`compare_elementwise`)."""
    if not results.get("checks"):
        return []
    c = results["checks"]
    return [f"correctness: {sum(x['passed'] for x in c)}/{len(c)} checks passed "
            f"(worst |C−ref|/bound {max(x['worst_ratio'] for x in c):.3f})"]


def summarize_pipeline(rec) -> str:
    r = rec.results
    lines = [rec.label() if hasattr(rec, "label") else "pipeline"] + checks_lines(r)
    for b in r.get("broken", []):
        lines.append(f"broken variant {b['kind']}: ended after {b['seconds']:.1f} s with: "
                     f"{b['error'].split(': ', 1)[-1]}")
    for nf in r.get("not_fitting", []):
        lines.append(f"not built: {nf['bm']}x{nf['bn']} stages={nf['stages']}: {nf['reason']}")
    lines.append(depth_table(r))
    for t in r.get("traces", []):
        m = t["metrics"]["mean"]
        if m:
            lines.append(f"trace {t['dtype']} {t['bm']}x{t['bn']}/c{t['consumers']} s{t['stages']} "
                         f"wait{t['wait_pending']} {t['size']}³: Tensor Core use "
                         f"{m.get('tensor_utilization', float('nan')):.2f} of the datasheet rate, "
                         f"math in flight {m['math_in_flight']:.2f} of the loop"
                         f"{' (upper bound)' if t['wait_pending'] else ''}, waiting on full "
                         f"barriers {m['wait_full_fraction']:.2f}")
    for size in sorted({x["size"] for x in r["sweep"]}):
        for dt in SWEEP_DTYPES:
            b, cb = best_row(r, dt, size, variants=True), cublas_row(r, dt, size)
            if b and cb:
                lines.append(f"best {dt} {size}³: {row_label(b)}: {b['tflops']:.0f} TFLOP/s = "
                             f"{b['tflops'] / cb['tflops']:.2f} of cuBLAS ({cb['tflops']:.0f})")
    return "\n".join(lines)


SUITES = {"pipeline": (measure_pipeline, summarize_pipeline, "sm_90a")}
