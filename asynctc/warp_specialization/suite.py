"""Chapter 06's record suite ``warp_specialization``: the ladder checked, then timed beside cuBLAS.

:func:`measure_ladder` (compile, every rung's correctness matrix, the broken variant, every rung
at the ladder's sizes beside cuBLAS, the traced rungs, the non-square shapes:
:func:`measure_nonsquare`) and the text its record is read back as (:func:`ladder_rows`, :func:`ladder_table`,
:func:`ladder_predictions`, :func:`nonsquare_table`, :func:`summarize_ladder`). Writes records
(through :mod:`asynctc.suites`), never plots (:mod:`.figures` does).
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from .. import pipeline as P
from ..core import checks, runtime
from ..core.memory import DeviceArray
from .config import WSConfig
from .ladder import RUNGS, TRACED_RUNGS, _ws2, config_label, parse_rungs, rung_configs, rung_of, \
    tile_sweep_configs
from .launch import BREAKS, CHECK_SHAPES, check_all, check_shapes, compile_job, compile_ws, \
    correctness_configs, make_gemm, register_split, run_broken, sass_registers, verify
from .trace import decode_trace, pingpong_overlap, trace_metrics

LADDER_SIZES = (4096, 8192)
LADDER_DTYPES = ("float16", "bfloat16")
#: Shapes a user meets that are not cubes (M, N, K): a short K, a short M, a long K, thin M; then
#: two *wave-aligned* shapes (:data:`WAVE_ALIGNED_SHAPES`).
NONSQUARE_SHAPES = ((8192, 8192, 1024), (1024, 8192, 8192), (4096, 4096, 16384),
                    (64, 8192, 8192), (128, 8192, 8192), (256, 8192, 8192))
#: Shapes whose 128×256 tile count is a whole number of rounds of 132 CTAs: 8448×2048 = 66×8 = 528
#: tiles = 4 rounds (4096³ has 512 = 3.88 rounds), 8448×8192 = 66×32 = 2112 = 16 rounds (8192³:
#: 2048 = 15.5). A persistent grid of 132 CTAs loses up to 1 − 3.88/4 = 3 % at 4096³ and 1 − 15.5/16
#: = 3 % at 8192³ to the last, partly idle round; these shapes measure the rungs without that loss.
WAVE_ALIGNED_SHAPES = ((8448, 2048, 4096), (8448, 8192, 8192))
#: Rungs timed on the non-square shapes (beside cuBLAS).
NONSQUARE_RUNGS = (3, 5, 6, 7, 8)


def measure_ladder(progress=None, sizes=LADDER_SIZES, dtypes=LADDER_DTYPES, check: bool = True,
                   reps: int = 10, rungs=None,
                   nonsquare=NONSQUARE_SHAPES + WAVE_ALIGNED_SHAPES) -> dict:
    """The "warp_specialization" suite.

    1. Compile every config in parallel (:func:`asynctc.core.runtime.precompile`).
    2. Correctness (``check``): :func:`correctness_configs` on their shapes, stopping at the first
       failure; the broken variant must end in an error, not a hang.
    3. For each size and dtype (square, fresh random inputs, B K-major, C in the input dtype):
       cuBLAS, then every config of :func:`rung_configs`, each output checked on sampled rows
       against float64 (:class:`asynctc.pipeline.SampledRows`). Rung 4's row is the fastest of its
       sweep for that size and dtype. Medians; timings are never asserted on.
    4. ``nonsquare``: cuBLAS and rungs :data:`NONSQUARE_RUNGS` on each shape
       (:func:`measure_nonsquare`).
    Every timing measures the SM clock in flight (:func:`asynctc.core.bench.time_gpu`, clock=True).
    ``rungs``: only these rung numbers (:func:`parse_rungs`; default all), checks and timings."""
    import time
    from ..core import bench, records
    say = progress or (lambda _s: None)
    rng = np.random.default_rng()
    info = runtime.device_info()
    out: dict = {"checks": [], "rows": [], "ladder": [], "baseline_library": bench.baseline_library(),
                 "sm_count": info.sm_count if info else None,
                 "rungs": [{"number": r.number, "name": r.name, "what": r.what,
                            "prediction": r.prediction} for r in RUNGS],
                 "registers": {}}
    rungs = parse_rungs(rungs) if not isinstance(rungs, tuple) else rungs
    out["rungs_run"] = list(rungs)
    cfgs = [c for dt in dtypes for c in rung_configs(dt) if rung_of(c) in rungs]
    check_cfgs = [c for c in correctness_configs() if rung_of(c) in rungs] if check else []
    jobs = list({repr(compile_job(c)): compile_job(c) for c in cfgs + check_cfgs}.values())
    say(f"compiling {len(jobs)} variants")
    runtime.precompile(jobs)
    for c in cfgs:
        if isinstance(c, WSConfig):
            res = compile_ws(c).resources
            split = register_split(c)
            if not c.setmaxnreg:     # every warpgroup keeps what ptxas allocated
                split.update(producer=res.registers, consumer=res.registers,
                             total=res.registers * c.threads)
            sr = sass_registers(compile_ws(c), c)
            out["registers"][c.label()] = {**split, "ptxas": res.registers,
                                           "spill_bytes": res.spill_stores,
                                           "sass_dealloc": sr["dealloc"], "sass_alloc": sr["alloc"],
                                           "setmaxnreg_dropped": sr["dropped"]}
            if sr["dropped"]:
                say(f"SETMAXNREG DROPPED in {c.label()}: no USETMAXREG in the SASS")
    if check:
        out["checks"] = check_all(check_cfgs, rng=rng, progress=say)
        say(f"{len(out['checks'])} checks passed")
        t0 = time.perf_counter()
        err = run_broken(1, rng=rng)
        out["broken"] = {"what": BREAKS[1], "error": err, "seconds": time.perf_counter() - t0}
        say(f"broken variant ended in {out['broken']['seconds']:.1f} s: {err}")
        if 9 in rungs:                   # the ping-pong order barrier's bounded wait
            t0 = time.perf_counter()
            err = run_broken(2, rng=rng)
            out["broken_pingpong"] = {"what": BREAKS[2], "error": err,
                                      "seconds": time.perf_counter() - t0}
            say(f"broken ping-pong variant ended in {out['broken_pingpong']['seconds']:.1f} s: {err}")
        c = verify(_ws2("float16"), *CHECK_SHAPES[0], rng=rng)
        if not c.passed:
            raise RuntimeError(f"a correct kernel after the broken variant is wrong: {c.as_dict()}")
    for size in sizes:
        for dt in dtypes:
            a, b, da, db, dbt = P.device_problem(size, dt, rng)
            rows = checks.timed_output_reference(a, b, dt, rng)
            flop = bench.gemm_flop(size, size, size)
            dc = DeviceArray.poisoned((size, size), checks.np_dtype(dt))
            cb = None
            if out["baseline_library"]:
                t = bench.time_gpu(bench.cublas_gemm(da, db, dc), warmup=3, reps=reps, clock=True)
                err = rows.check(dc).as_dict()   # recorded, not raised (split-K rounding)
                cb = {"kernel": "cuBLAS", "dtype": dt, "size": size, **t.as_dict(),
                      "tflops": bench.tflops(flop, t.median_ms), "rel_err_rows": err}
                out["rows"].append(cb)
            for cfg in [c for c in rung_configs(dt) if rung_of(c) in rungs]:
                dc.poison()
                g = make_gemm(cfg, da, dbt, dc)
                t = bench.time_gpu(g.launcher(), warmup=3, reps=reps, clock=True)
                g.check_error()
                err = checks.check_sampled_rows(dc, a, b, dt, config_label(cfg),
                                               sampled=rows).as_dict()
                row = {"kernel": "ch05" if isinstance(cfg, P.PipelineConfig) else "ws",
                       "label": config_label(cfg), "dtype": dt, "size": size, **cfg.as_dict(),
                       **t.as_dict(), "tflops": bench.tflops(flop, t.median_ms),
                       "rel_err_rows": err, "registers": g.ck.resources.registers,
                       "grid": g.grid, "active_clusters": getattr(g, "active_clusters", None)}
                out["rows"].append(row)
                say(f"{size}³ {row['label']}: {row['tflops']:.0f} TFLOP/s")
                del g
            if size == sizes[0] and dt == "float16":
                for rung in [r for r in RUNGS if r.number in TRACED_RUNGS and r.number in rungs]:
                    cfg = rung.make(dt).replace(trace=True)
                    dc.poison()
                    g = make_gemm(cfg, da, dbt, dc)
                    t = bench.time_gpu(g.launcher(), warmup=1, reps=3)
                    g.check_error()
                    checks.check_sampled_rows(dc, a, b, dt, config_label(cfg), sampled=rows)
                    tr = decode_trace(g.trace_buffer(), cfg.consumers, g.k_tiles, cfg.stages)
                    out.setdefault("traces", []).append(
                        {"rung": rung.number, "name": rung.name, "label": cfg.label(),
                         "size": size, "tflops_traced": bench.tflops(flop, t.median_ms),
                         "metrics": trace_metrics(tr, cfg), "cta0": tr.as_dict(cta=0),
                         "overlap": pingpong_overlap(tr.as_dict(cta=0))})
                    m = out["traces"][-1]["metrics"]["mean"]
                    say(f"trace rung {rung.number}: Tensor Core use "
                        f"{m.get('tensor_utilization', float('nan')):.2f}, math in flight "
                        f"{m.get('math_in_flight', float('nan')):.2f}, waiting on full "
                        f"{m.get('wait_full_fraction', float('nan')):.2f}")
                    del g
            out["ladder"] += ladder_rows(out["rows"], dt, size, cb)
            del da, db, dbt, dc
    if nonsquare:
        out["nonsquare"] = measure_nonsquare(nonsquare, dtypes, rungs, reps, say, rng)
    out["clocks_after"] = records.nvidia_smi_clocks()
    return out


def measure_nonsquare(shapes, dtypes, rungs, reps, say, rng) -> list[dict]:
    """cuBLAS and the rungs of :data:`NONSQUARE_RUNGS` on each (M, N, K) of ``shapes``: one row
    per (shape, dtype, kernel) with TFLOP/s, ``of_cublas``, and ``skipped`` (the rule that refused
    the shape) where a rung cannot run it."""
    from ..core import bench
    out = []
    for (m, n, k) in shapes:
        for dt in dtypes:
            a, b = P.random_operands(m, n, k, P.PipelineConfig(dtype=dt), rng)[:2]
            rows = checks.timed_output_reference(a, b, dt, rng)
            da, db = DeviceArray.from_host(a), DeviceArray.from_host(b)
            dbt = DeviceArray.from_host(np.ascontiguousarray(b.T))
            dc = DeviceArray.poisoned((m, n), checks.np_dtype(dt))
            flop = bench.gemm_flop(m, n, k)
            base = {"m": m, "n": n, "k": k, "dtype": dt}
            cb = None
            if bench.baseline_library():
                t = bench.time_gpu(bench.cublas_gemm(da, db, dc), warmup=3, reps=reps, clock=True)
                cb = {**base, "kernel": "cuBLAS", **t.as_dict(),
                      "tflops": bench.tflops(flop, t.median_ms),
                      "rel_err_rows": rows.check(dc).as_dict()}
                out.append(cb)
            for rung in [r for r in RUNGS if r.number in NONSQUARE_RUNGS and r.number in rungs]:
                cfg = rung.make(dt)
                try:
                    check_shapes(m, n, k, cfg)
                except P.PipelineError as e:
                    out.append({**base, "kernel": "ws", "rung": rung.number,
                                "label": config_label(cfg), "skipped": str(e)})
                    continue
                dc.poison()
                g = make_gemm(cfg, da, dbt, dc)
                t = bench.time_gpu(g.launcher(), warmup=3, reps=reps, clock=True)
                g.check_error()
                row = {**base, "kernel": "ws", "rung": rung.number, "label": config_label(cfg),
                       **t.as_dict(), "tflops": bench.tflops(flop, t.median_ms),
                       "rel_err_rows": checks.check_sampled_rows(dc, a, b, dt, config_label(cfg),
                                                                 sampled=rows).as_dict(),
                       "grid": g.grid}
                row["of_cublas"] = row["tflops"] / cb["tflops"] if cb else None
                out.append(row)
                say(f"{m}x{n}x{k} {dt} rung {rung.number}: {row['tflops']:.0f} TFLOP/s"
                    + (f" ({row['of_cublas']:.2f} of cuBLAS)" if cb else ""))
                del g
            del da, db, dbt, dc
    return out


def _same(row: dict, cfg) -> bool:
    d = cfg.as_dict()
    # a field added later (promote) is absent from older records: there it had its default
    defaults = {f.name: f.default for f in dataclasses.fields(cfg)}
    return all(row.get(k, defaults.get(k)) == v for k, v in d.items()) and \
        row["kernel"] == ("ch05" if isinstance(cfg, P.PipelineConfig) else "ws")


def ladder_rows(rows: list[dict], dtype: str, size: int, cublas: dict | None) -> list[dict]:
    """One row per rung for (dtype, size): TFLOP/s, ratio to cuBLAS, prediction; rung 4 takes the
    fastest config of its sweep (rung 4's default included)."""
    mine = [r for r in rows if r["dtype"] == dtype and r["size"] == size and r["kernel"] != "cuBLAS"]
    out = []
    for rung in RUNGS:
        if rung.name == "tile":
            cands = [rung.make(dtype)] + tile_sweep_configs(dtype)
            pool = [r for r in mine if any(_same(r, c) for c in cands)]
            r = max(pool, key=lambda x: x["tflops"]) if pool else None
        else:
            r = next((x for x in mine if _same(x, rung.make(dtype))), None)
        if r is None:
            continue
        out.append({"rung": rung.number, "name": rung.name, "dtype": dtype, "size": size,
                    "label": r["label"], "tflops": r["tflops"],
                    "of_cublas": r["tflops"] / cublas["tflops"] if cublas else None,
                    "prediction": rung.prediction})
    return out


def ladder_table(results: dict) -> str:
    """The ladder: rung, TFLOP/s, cuBLAS, fraction of cuBLAS, config — per size and dtype (the
    predictions, the same for every size and dtype, are listed once by :func:`ladder_predictions`)."""
    lines = [f"{'size':>5s} {'dtype':9s} {'rung':17s} {'TFLOP/s':>7s} {'cuBLAS':>7s} "
             f"{'of cuBLAS':>9s}  config"]
    cbs = {(r["dtype"], r["size"]): r["tflops"] for r in results["rows"] if r["kernel"] == "cuBLAS"}
    for r in results["ladder"]:
        ratio = f"{r['of_cublas']:9.2f}" if r["of_cublas"] is not None else f"{'-':>9s}"
        lines.append(f"{r['size']:5d} {r['dtype']:9s} {str(r['rung']) + ' ' + r['name']:17s} "
                     f"{r['tflops']:7.0f} {cbs.get((r['dtype'], r['size']), float('nan')):7.0f} "
                     f"{ratio}  {r['label']}")
    return "\n".join(lines)


def ladder_predictions(rungs=None) -> str:
    """Each rung's prediction (written before the first H200 run), one line per rung."""
    return "\n".join(f"rung {r.number} {r.name}: {r.prediction}" for r in (rungs or RUNGS))


def summarize_ladder(rec) -> str:
    r = rec.results
    lines = [rec.label() if hasattr(rec, "label") else "warp_specialization"] + P.checks_lines(r)
    if r.get("broken"):
        lines.append(f"broken variant: ended after {r['broken']['seconds']:.1f} s with: "
                     f"{r['broken']['error'].split(': ', 1)[-1]}")
    for lab, v in r.get("registers", {}).items():
        sass_txt = (f"; SASS USETMAXREG dealloc {v['sass_dealloc']} alloc {v['sass_alloc']}"
                    if v.get("sass_dealloc") or v.get("sass_alloc") else "")
        lines.append(f"registers {lab}: entry {v['entry']} (ptxas {v['ptxas']}), producer "
                     f"{v['producer']}, consumers {v['consumer']}, CTA {v['total']}, spills "
                     f"{v['spill_bytes']} B{sass_txt}"
                     f"{' — SETMAXNREG DROPPED (C7508)' if v.get('setmaxnreg_dropped') else ''}")
    for t in r.get("traces", []):
        m = t["metrics"]["mean"]
        if m:
            lines.append(f"trace rung {t['rung']} {t['label']} {t['size']}³: Tensor Core use "
                         f"{m.get('tensor_utilization', float('nan')):.2f} of the datasheet rate, "
                         f"math in flight ≤ {m['math_in_flight']:.2f}, waiting on full barriers "
                         f"{m['wait_full_fraction']:.2f}")
    lines.append(ladder_table(r))
    if r.get("nonsquare"):
        lines.append(nonsquare_table(r["nonsquare"]))
    return "\n".join(lines)


def nonsquare_table(rows: list[dict]) -> str:
    """The non-square shapes, one line per (shape, dtype): cuBLAS's TFLOP/s, then each rung's
    TFLOP/s and fraction of cuBLAS ("-" where the rung could not run the shape); below it, one line
    per reason a rung was refused, with how many (shape, dtype, rung) cells it covers and which."""
    rungs = sorted({r["rung"] for r in rows if r["kernel"] != "cuBLAS"})
    keys, cells, skipped = [], {}, {}
    for r in rows:
        key = (f"{r['m']}×{r['n']}×{r['k']}", r["dtype"])
        if key not in keys:
            keys.append(key)
        who = "cuBLAS" if r["kernel"] == "cuBLAS" else r["rung"]
        if r.get("skipped"):
            reason = r["skipped"]
            skipped.setdefault(reason, []).append((key, who))
            cells[key, who] = "-"
        elif who == "cuBLAS":
            cells[key, who] = f"{r['tflops']:.0f}"
        else:
            frac = f" {r['of_cublas']:.2f}" if r.get("of_cublas") is not None else ""
            cells[key, who] = f"{r['tflops']:.0f}{frac}"
    lines = [f"{'M×N×K':16s} {'dtype':9s} {'cuBLAS':>6s}" + "".join(f" {f'rung {n}':>9s}" for n in rungs),
             f"{'':26s} {'TFLOP/s':>6s}  (each rung: TFLOP/s and its fraction of cuBLAS)"]
    for key in keys:
        lines.append(f"{key[0]:16s} {key[1]:9s} {cells.get((key, 'cuBLAS'), ''):>6s}"
                     + "".join(f" {cells.get((key, n), ''):>9s}" for n in rungs))
    n_skipped = sum(len(v) for v in skipped.values())
    if skipped:
        n_runs = sum(1 for r in rows if r["kernel"] != "cuBLAS")
        lines.append(f"- : not run, {n_skipped} of {n_runs} (shape, dtype, rung) runs "
                     "(the rungs have no edge handling):")
    for reason, where in skipped.items():
        shapes = sorted({k[0] for k, _ in where})
        who = sorted({w for _, w in where}, key=str)
        lines.append(f"  {len(where)} × {reason} ({', '.join(shapes)}; "
                     f"{', '.join(f'rung {w}' if w != 'cuBLAS' else w for w in who)})")
    return "\n".join(lines)


def pingpong_table(results: dict, top: int = 8, pingpong: int = 9) -> str:
    """Rung ``pingpong`` beside rung ``top`` and cuBLAS, per size and dtype, from a
    :func:`measure_ladder` result (``tools/gpu_ch06.py --pingpong``): TFLOP/s, each over cuBLAS,
    ping-pong over the top rung; then each traced rung's epilogue overlap
    (:func:`pingpong_overlap`) and the broken ping-pong variant's error."""
    lines = [f"{'size':>5s} {'dtype':9s} {'cuBLAS':>7s} {f'rung {top}':>8s} {f'rung {pingpong}':>8s} "
             f"{f'{top}/cuBLAS':>9s} {f'{pingpong}/cuBLAS':>9s} {f'{pingpong}/{top}':>6s}"]
    lad = {(r["size"], r["dtype"], r["rung"]): r for r in results.get("ladder", [])}
    cbs = {(r["size"], r["dtype"]): r["tflops"] for r in results["rows"] if r["kernel"] == "cuBLAS"}
    for size, dt in sorted({(r["size"], r["dtype"]) for r in results.get("ladder", [])}):
        a, b, c = lad.get((size, dt, top)), lad.get((size, dt, pingpong)), cbs.get((size, dt))

        def f(x, fmt):
            return format(x, fmt) if x is not None else "-"
        ta, tb = (a or {}).get("tflops"), (b or {}).get("tflops")
        lines.append(f"{size:5d} {dt:9s} {f(c, '7.0f'):>7s} {f(ta, '8.0f'):>8s} {f(tb, '8.0f'):>8s} "
                     f"{f(ta / c if ta and c else None, '9.3f'):>9s} "
                     f"{f(tb / c if tb and c else None, '9.3f'):>9s} "
                     f"{f(tb / ta if ta and tb else None, '6.3f'):>6s}")
    for t in results.get("traces", []):
        o = t.get("overlap") or pingpong_overlap(t["cta0"])
        lines.append(f"trace rung {t['rung']} {t['size']}³: epilogue time under the other "
                     f"consumer's wgmmas {o['epilogue_covered']:.2f}, math in flight "
                     f"{o['math_busy']:.2f} of the k-loop, "
                     + (f"order wait {o['wait_order_cycles']:.0f} cycles/tile" if o["wait_order_cycles"] ==
                        o["wait_order_cycles"] else "no order barrier")
                     + f" (CTA 0, {o['epilogues']} epilogues)")
    if results.get("broken_pingpong"):
        err = results["broken_pingpong"]["error"].split(": ", 1)[-1]
        word = re.search(r"error word (0x[0-9a-f]+)\)", err)      # decoded again: today's names
        if word:
            err = P.decode_error(int(word.group(1), 16), producer_warpgroup=True) + err[word.end():]
        lines.append("broken ping-pong variant: " + err)
    return "\n".join(lines)


SUITES = {"warp_specialization": (measure_ladder, summarize_ladder, "sm_90a")}
