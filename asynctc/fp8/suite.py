"""Chapter 07, the "fp8" record suite (``SUITES["fp8"]``, ``tools/gpu_ch07.py --record``):
:func:`measure_fp8` compiles every FP8 variant, runs the accumulation experiment
(:func:`accumulation_experiment`: error vs K with and without promotion, the model's fraction bits
fitted), checks every variant (:func:`asynctc.fp8.launch.check_all`) and times the FP8 GEMM against
cuBLASLt's FP8 (``torch._scaled_mm``) and our fp16 top rung in the same run, then the tile chosen
by the shape on non-square problems (:func:`measure_fp8_nonsquare`); the tables and the summary of
its record (:func:`ratio_rows`, :func:`summary_table`, :func:`experiment_table`,
:func:`nonsquare_fp8_table`, :func:`summarize_fp8`). Medians, never asserted on; no plots here
(those are in :mod:`asynctc.fp8.figures`)."""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from .. import warp_specialization as W
from ..core import runtime
from ..models.fp8 import (ACC_PREDICTION, B_BLOCK, EXPERIMENT_K, EXPERIMENT_PROMOTE, FORMATS,
                          FRAC_BITS, KTILE, block_reference, fit_frac_bits, fit_set,
                          identified_bits, random_fp8,
                          relative_errors, swamp_operands)
from .config import (_fp32_out_config, block_timed_config, correctness_configs, fp8_config,
                     fp8_shape_config, timed_configs)
from .launch import _sampled_fp8_check, check_all, scaled_mm, scaled_mm_blockwise, timing_problem


SIZES = (4096, 8192)
#: Rows checked of the accumulation experiment's model fit (the model holds M·N·K products).
FIT_ROWS, FIT_COLS = 2, 8



def accumulation_experiment(rng, say, ks=None, promotes=None) -> dict:
    """On the GPU: the swamping input (:func:`swamp_operands`, M = 128, N = 256) and fresh
    standard-normal FP8 inputs, for each K and promotion interval, C in fp32 without scales;
    the relative error of every element against float64 (median, max), and the model fitted to
    the measured swamp output (:func:`fit_frac_bits` on :data:`FIT_ROWS` × :data:`FIT_COLS`
    elements) per K and promotion."""
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
                         "fit_frac_bits": fit["best"], "fit_set": fit["fits"],
                         "fit_unique": fit["unique"], "fit_exact": fit["exact"],
                         "fit_residual": fit["residual"], "fit_by_bits": fit["by_bits"],
                         "random_median_err_over_absAB": float(np.median(e2)),
                         "random_max_err_over_absAB": float(np.max(e2))})
            say(f"K={k} promote={p}: swamp median rel err {rows[-1]['swamp_median_rel_err']:.2e}"
                f" (model frac_bits fit {_fits_text(fit['fits'])}, residual {fit['residual']:.1e}); "
                f"random max err/|A||B| {rows[-1]['random_max_err_over_absAB']:.1e}")
            del g, g2
    return {"rows": rows, "prediction": ACC_PREDICTION, "m": m, "n": n}


def _fits_text(fits) -> str:
    """{13} or {8..13}: the f a fit cannot tell apart."""
    fits = sorted(fits)
    if len(fits) > 1 and fits == list(range(fits[0], fits[-1] + 1)):
        return f"{{{fits[0]}..{fits[-1]}}}"
    return "{" + ",".join(map(str, fits)) + "}"


def fitted_bits(exp: dict) -> int | None:
    """The fraction bits the experiment's fits agree on: the smallest f consistent with every row
    fitted bit for bit (:func:`asynctc.models.fp8.identified_bits`; conservative for the bound);
    without such rows, the smallest best fit over the rows; None without rows."""
    rows = exp.get("rows", [])
    if not rows:
        return None
    got = identified_bits([r for r in rows if "fit_by_bits" in r])["consistent"]
    return min(got) if got else min(r["fit_frac_bits"] for r in rows)


def _time_ours(cfg, da, db, dc, dsc, qa, qb, sa, sb, rows_idx, frac_bits, reps, where):
    """Time one FP8 config on the device operands (poisoned output, clock in flight), then check
    its output on the sampled rows; raises :class:`RuntimeError` if they are wrong. Returns
    (timing, check, grid)."""
    from ..core import bench
    dc.poison()
    g = W.make_gemm(cfg, da, db, dc, scales=dsc)
    t = bench.time_gpu(g.launcher(), warmup=3, reps=reps, clock=True)
    g.check_error()
    chk = _sampled_fp8_check(dc, qa, qb, sa, sb, cfg, rows_idx, frac_bits)
    if not chk.passed:
        raise RuntimeError(f"timed run wrong: {cfg.label()} {where}: {chk.as_dict()}")
    return t, chk, g.grid


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
    from ..core import bench
    from ..core.memory import DeviceArray
    from ..models.layout import dtype_of
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
    from ..core import bench, checks, records
    from ..core.memory import DeviceArray
    say = progress or (lambda _s: None)
    sizes = SIZES if sizes is None else sizes
    rng = np.random.default_rng()
    fp16_top = W.RUNG_BY_NAME["raster"].make("float16")   # rung 8, the records' fp16 top rung
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
        qa, qb, sa, sb, da, db, dsc, rows_idx, dc = timing_problem(size, rng)
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


def time_block_scaled(da, db, dc, qa, qb, rows_idx, frac, rng, reps, say, lib) -> list[dict]:
    """At one size (square; ``da`` / ``db`` e4m3 on the device, host copies ``qa`` / ``qb``; ``dc``
    bf16): fresh per-block scales (e^U(−3, 3), float32: sa M × K/128, sb N/128 × K/128),
    :func:`block_timed_config` (its cost is read against the same config with per-tensor scales,
    a row of :func:`timed_configs` at this size), and cuBLASLt with block scales where torch can
    (:func:`scaled_mm_blockwise`; else a row saying why). Every timed output checked on the
    sampled rows ``rows_idx`` (:func:`check_fp8_block`); a wrong one of ours raises."""
    from ..core import bench, checks
    from ..core.memory import DeviceArray
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
    ours with block scales / the same config with per-tensor scales ("block scales cost"); FP8 /
    FP16 of ours takes the best FP8 build under the 128-byte swizzle. A
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
        best = max((r["tflops"] for r in ours8 if not r.get("promote")     # 128-byte swizzle:
                    and r.get("swizzle", 128) == 128), default=None)        # what the seed's 1.5–2× says
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
    lines = ["swamping input: median relative error of C (measured; f∈{...}: every fraction-bit "
             "count that fits best, ~: none bit for bit)",
             f"{'K':>6s} " + " ".join(f"{('promote ' + str(p)) if p else 'no promotion':>24s}"
                                    for p in ps)]
    for k in sorted({r["k"] for r in exp["rows"]}):
        cells = []
        for p in ps:
            r = next(x for x in exp["rows"] if x["k"] == k and x["promote"] == p)
            fs = fit_set(r["fit_by_bits"]) if "fit_by_bits" in r else [r["fit_frac_bits"]]
            exact = min(r["fit_by_bits"].values()) == 0.0 if "fit_by_bits" in r else True
            cells.append(f"{r['swamp_median_rel_err']:.1e} (f∈{_fits_text(fs)}{'' if exact else '~'})"
                         .rjust(24))
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
