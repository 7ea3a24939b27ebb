"""Chapter 01 — the record suite ``mma_sync``: correctness first, then the mma.sync GEMM beside
cuBLAS by tile and size, the anatomy of the default kernel (ablations, sustained clock), the
register-only ceiling and the numba SIMT GEMM (:func:`measure_mma_sync`,
:func:`measure_mma_sync_anatomy`); the tables read from its record (:func:`summarize_mma_sync`).
Measures and tabulates; never plots."""

from __future__ import annotations

import numpy as np

from ..core import bench, records, runtime
from ..core.bench import peak_tflops
from ..core.checks import (FULL_CHECK_MAX, check_gemm, check_sampled_rows, square_problem,
                           timed_output_reference)
from .config import ABLATIONS, DEFAULT_TILE, DTYPES, TILES, _defines, check_shapes
from .launch import (check_tiles, compile_mma_sync, compile_mma_sync_ablation, launcher,
                     verify_mma_sync)
from .peak import MmaSyncPeak


# --------------------------------------------------------------------------------------------------
# The record suite ``mma_sync``
# --------------------------------------------------------------------------------------------------

MMA_SIZES = (512, 1024, 2048, 4096, 6144, 8192)
CHECK_SHAPES = ((128, 256, 32), (256, 512, 96), (384, 768, 160), (1024, 512, 2048),
                (512, 1280, 416))
#: The full check of every *timed* binary (output in the input dtype, as timed): 8 whole raster
#: groups of GROUP_M = 8 CTA rows plus a partial group of 3 (M = 67 × 128), 2–4 CTA columns, and
#: K = 384 (6 k-tiles of 64, 12 of 32: a 4-stage ring wraps). Every element against float64.
TIMED_CHECK_SHAPE = ((8 * 8 + 3) * 128, 512, 384)
SIMT_SIZES = (1024, 2048)
PEAK_CONFIGS = ((4, 1), (4, 2), (8, 2), (8, 4))
#: What ``sm_mhz`` means in the register-only peak rows.
IN_KERNEL_CLOCK = "in-kernel clock64/%globaltimer (median over CTAs, last timed launch)"


def check_timed_binaries(verify, tiles, dtypes=tuple(DTYPES), shape=None,
                         what: str = "GEMM") -> list[dict]:
    """Every tile × dtype of the sweep in its timed form (output in the input dtype), on the full
    ``shape`` (default :data:`TIMED_CHECK_SHAPE`) output against float64. Raises
    :class:`RuntimeError` at the first failure."""
    out = check_tiles(verify, tiles, (shape or TIMED_CHECK_SHAPE,), dtypes, what=what)
    return [{**c, "output": c["dtype"], "timed_binary": True} for c in out]


def measure_mma_sync() -> dict:
    """Correctness first: every tile at :data:`CHECK_SHAPES` with fp32 output (the tight bound:
    no output rounding), and every timed binary on the full :data:`TIMED_CHECK_SHAPE`. Then the
    mma.sync GEMM (every tile in :data:`TILES`) beside cuBLAS on the same inputs, fp16 and bf16,
    sizes :data:`MMA_SIZES`, each timed output checked (:func:`timed_output_reference`), the SM
    clock measured by :func:`~asynctc.core.bench.time_gpu` (in flight; ``sm_mhz_source``); the numba SIMT GEMM (fp32) at :data:`SIMT_SIZES`; the anatomy;
    the register-only ceiling with its in-kernel clock."""
    import functools
    out: dict = {"sweep": [], "simt": [],
                 "tiles": [dict(name=t.name, bm=t.bm, bn=t.bn, bk=t.bk, wm=t.wm, wn=t.wn,
                                threads=t.threads, smem_bytes=t.smem_bytes) for t in TILES],
                 "baseline_library": bench.baseline_library(),
                 "check_protocol": "fp32-output path at CHECK_SHAPES and every timed binary on "
                                   f"{TIMED_CHECK_SHAPE} in full; timed outputs in full up to "
                                   f"{FULL_CHECK_MAX}, else one row per 128-row CTA band; "
                                   "elementwise |C-ref| <= tol*(|A|.|B|)"}
    runtime.precompile([("mma_sync.cu", "gemm_mma_sync", _defines(dt, t, f32))
                        for dt in DTYPES for t in TILES for f32 in (False, True)])
    out["checks"] = [{**c, "output": "float32"} for c in check_tiles(
        functools.partial(verify_mma_sync, out_f32=True), TILES, CHECK_SHAPES,
        what="mma.sync GEMM (fp32 output)")]
    out["checks"] += check_timed_binaries(verify_mma_sync, TILES, what="mma.sync GEMM (timed binary)")
    bar = _progress(len(DTYPES) * len(MMA_SIZES), "mma_sync")
    for dtype in DTYPES:
        for s in MMA_SIZES:
            a, b, da, db, dc = square_problem(s, dtype)
            ref = timed_output_reference(a, b, dtype, np.random.default_rng(s))
            flop = bench.gemm_flop(s, s, s)
            if out["baseline_library"]:
                out["sweep"].append(bench.cublas_sweep_row(da, db, dc, dtype, s))
            for tile in TILES:
                try:
                    check_shapes(s, s, s, tile)
                except ValueError:
                    continue
                ck = compile_mma_sync(dtype, tile)
                dc.poison()
                run = launcher(ck, tile, da, db, dc)
                t = bench.time_gpu(run, reps=20, clock=True)
                chk = check_sampled_rows(dc, a, b, dtype, f"tile {tile.name}", sampled=ref)
                out["sweep"].append({"dtype": dtype, "size": s, "kernel": "mma.sync",
                                     "tile": tile.name, **t.as_dict(),
                                     "check_timed": {**chk.as_dict(), "rows": len(ref.rows)},
                                     "registers": ck.resources.registers,
                                     "spill_bytes": ck.resources.spill_stores,
                                     "tflops": bench.tflops(flop, t.median_ms)})
            del da, db, dc
            bar.update()
    bar.close()
    out.update(measure_mma_sync_anatomy())
    # The ceiling of mma.sync itself: register-only kernel, by warps per SM, its clock in-kernel.
    out["peak"] = []
    info = runtime.device_info()
    for dtype in DTYPES:
        for warps, per_sm in PEAK_CONFIGS:
            p = MmaSyncPeak(dtype, blocks=info.sm_count * per_sm, warps=warps)
            c, cd = p.check(), p.check_timing_data()
            if not (c.passed and cd.passed):
                raise RuntimeError(f"mma.sync peak kernel wrong: exact operands {c.as_dict()}, "
                                   f"timing data {cd.as_dict()}")
            t = bench.time_gpu(p.launcher(), flush=False)
            out["peak"].append({"dtype": dtype, "warps_per_cta": warps, "ctas_per_sm": per_sm,
                                **t.as_dict(), "tflops": bench.tflops(p.flop, t.median_ms),
                                "sm_mhz": p.measured_clock_mhz(), "sm_mhz_source": IN_KERNEL_CLOCK,
                                "check": c.as_dict(), "check_timing_data": cd.as_dict()})
    # The numba SIMT kernel, fp32, for scale.
    from .. import simt  # noqa: F811
    cuda = simt.numba_cuda() if SIMT_SIZES else None
    for s in SIMT_SIZES:
        rng = np.random.default_rng(s)
        a = rng.standard_normal((s, s), dtype=np.float32)
        b = rng.standard_normal((s, s), dtype=np.float32)
        da, db = cuda.to_device(a), cuda.to_device(b)
        dc = cuda.to_device(np.full((s, s), np.nan, np.float32))
        run = simt.simt_launcher(da, db, dc, runtime.default_stream())
        t = bench.time_gpu(run, reps=10)
        chk = check_gemm(dc.copy_to_host(), a, b, "float32")
        if not chk.passed:
            raise RuntimeError(f"numba SIMT GEMM wrong: {chk.as_dict()}")
        out["simt"].append({"size": s, **t.as_dict(), "check": chk.as_dict(),
                            "tflops": bench.tflops(bench.gemm_flop(s, s, s), t.median_ms)})
    return out


ABLATION_SIZE = 4096


def measure_mma_sync_anatomy(size: int = ABLATION_SIZE) -> dict:
    """Where the time of the default kernel goes, fp16 ``size``³: the kernel with parts of its data
    path removed (:data:`ABLATIONS`, timing only) beside cuBLAS in the same run; then cuBLAS
    and the kernel run back to back with the SM clock sampled during the load
    (:func:`bench.sustained`), for TFLOP/s per clock."""
    a, b, da, db, dc = square_problem(size, "float16")
    flop = bench.gemm_flop(size, size, size)
    tile = DEFAULT_TILE
    out: dict = {"ablation": [], "sustained": []}
    cub = bench.cublas_gemm(da, db, dc) if bench.baseline_library() else None
    runs = {ABLATIONS[ab]: launcher(compile_mma_sync_ablation(ab, "float16", tile),
                                              tile, da, db, dc) for ab in ABLATIONS}
    full = runs[ABLATIONS[0]]
    for what, run in (({"cuBLAS": cub} if cub else {}) | runs).items():
        t = bench.time_gpu(run, reps=30, clock=True)
        out["ablation"].append({"dtype": "float16", "size": size, "tile": tile.name, "variant": what,
                                **t.as_dict(), "tflops": bench.tflops(flop, t.median_ms)})
    # the full kernel once more, checked, so the ablation's first row is a correct kernel
    dc.poison()
    full()
    check_sampled_rows(dc, a, b, "float16", f"tile {tile.name}", rng=np.random.default_rng(1))
    for kernel, run in (({"cuBLAS": cub} if cub else {}) | {"mma.sync": full}).items():
        r = bench.sustained(run)
        out["sustained"].append({"dtype": "float16", "size": size, "tile": tile.name,
                                 "kernel": kernel, **r, "tflops": bench.tflops(flop, r["ms"])})
    return out


def best_mma_rows(results: dict, dtype: str) -> list[dict]:
    """The fastest mma.sync tile per size for ``dtype``."""
    best: dict[int, dict] = {}
    for r in results["sweep"]:
        if r["kernel"] == "mma.sync" and r["dtype"] == dtype:
            if r["size"] not in best or r["tflops"] > best[r["size"]]["tflops"]:
                best[r["size"]] = r
    return [best[s] for s in sorted(best)]


def cublas_rows(results: dict, dtype: str) -> list[dict]:
    return sorted((r for r in results["sweep"] if r["kernel"] == "cuBLAS" and r["dtype"] == dtype),
                  key=lambda r: r["size"])


def ceiling_row(results: dict, tile=DEFAULT_TILE, dtype: str = "float16") -> dict:
    """The register-only ``mma.sync`` ceiling's row (``results["peak"]``) at ``tile``'s occupancy:
    its warps per CTA and CTAs per SM. Raises ``StopIteration`` when the record has no such row."""
    return next(r for r in results["peak"] if r["dtype"] == dtype and r["warps_per_cta"] == tile.warps
                and r["ctas_per_sm"] == tile.min_blocks)


def sweep_clock(rec: records.Record) -> tuple[float, str]:
    """The SM clock of the ``mma_sync`` record's fp16 sweep (the median of its rows' measured clocks,
    MHz) and its kind: the clock of chapter 01's peak line."""
    sweep16 = [r for r in rec.results["sweep"] if r["dtype"] == "float16"]
    return bench.measured_clock_mhz(sweep16), bench.rows_clock_kind(sweep16)


def vs_cublas_lines(rec: records.Record, tile=DEFAULT_TILE) -> dict:
    """What chapter 01's figure draws (:func:`~asynctc.mma_sync.figures.plot_vs_cublas`), from an
    ``mma_sync`` record: ``series`` (cuBLAS and the best mma.sync tile per size, TFLOP/s by size,
    fp16 and bf16), ``peak`` at the fp16 sweep's median SM clock and its ``peak_label`` (the
    clock's kind), and ``ceilings``: the datasheet's and the register-only ``mma.sync`` ceiling at
    ``tile``'s occupancy (:func:`ceiling_row`, with its own clock), as (TFLOP/s, label)."""
    mhz, kind = sweep_clock(rec)
    series = {}
    for dt in DTYPES:
        cb, ours = cublas_rows(rec.results, dt), best_mma_rows(rec.results, dt)
        series[f"cuBLAS {dt}"] = ([r["size"] for r in cb], [r["tflops"] for r in cb])
        series[f"mma.sync {dt}"] = ([r["size"] for r in ours], [r["tflops"] for r in ours])
    ceil = ceiling_row(rec.results, tile)
    return dict(series=series, peak=peak_tflops(rec.provenance["sm_count"], mhz),
                peak_label=f"SMs×4096×{mhz:.0f} MHz ({kind})",
                ceilings=[(bench.DATASHEET["dense_tflops"]["float16"], "datasheet 132×4096×1830 MHz: 989"),
                          (ceil["tflops"], f"mma.sync ceiling, register-only, {tile.warps} warps × "
                                           f"{tile.min_blocks} CTAs/SM: {ceil['tflops']:.0f}\n(measured; its "
                                           f"clock {bench.clock_text(ceil)})")])


def summarize_mma_sync(rec: records.Record, anatomy: bool = True) -> str:
    r = rec.results
    p = rec.provenance
    n = p["sm_count"]
    lines = [rec.label(), f"correctness: {sum(c['passed'] for c in r['checks'])}/"
                          f"{len(r['checks'])} checks passed"]
    clocked = [x for dtype in DTYPES for x in best_mma_rows(r, dtype)] + list(r.get("peak", []))
    if any(x.get("sm_mhz") is not None for x in clocked):
        lines.append(bench.peak_legend(n, "float16"))   # fp16 and bf16: the same 4096 FLOP/clk/SM
    for dtype in DTYPES:
        cb = {x["size"]: x for x in cublas_rows(r, dtype)}
        for row in best_mma_rows(r, dtype):
            base = cb.get(row["size"])
            ratio = f"{row['tflops'] / base['tflops']:.2f} of cuBLAS ({base['tflops']:.0f})" \
                if base else "no baseline"
            if base and row["tflops"] > base["tflops"]:
                ratio += (f"  <- cuBLAS slower here (p10-p90 {base['p10_ms']:.3f}-"
                          f"{base['p90_ms']:.3f} ms)")
            lines.append(f"mma.sync {dtype:8s} {row['size']:5d}³ tile {row['tile']:18s} "
                         f"{row['tflops']:6.1f} TFLOP/s ±{bench.row_spread(row):.0%}  "
                         f"{ratio}" + _at_clock(row, n, dtype, "; "))
    for row in r["simt"]:
        lines.append(f"numba SIMT fp32 {row['size']:5d}³: {row['tflops']:.2f} TFLOP/s")
    for row in r.get("peak", []):
        lines.append(f"mma.sync register-only {row['dtype']:8s} {row['warps_per_cta']} warps × "
                     f"{row['ctas_per_sm']} CTA/SM: {row['tflops']:.0f} TFLOP/s"
                     + _at_clock(row, n, row["dtype"]))
    shown = [x for dtype in DTYPES for x in best_mma_rows(r, dtype) if x.get("sm_mhz")]
    if shown and bench.clock_caveat(bench.rows_clock_kind(shown)):     # for the fractions above
        lines.append("mma.sync GEMM rows: " + bench.clock_caveat(bench.rows_clock_kind(shown)))
    if anatomy:
        lines += summarize_anatomy(r, n)
    return "\n".join(lines)


def _at_clock(row: dict, sm_count: int, dtype: str, sep: str = " = ") -> str:
    """``" = 0.93 of peak at 1713 MHz (in-kernel), 0.92 at the datasheet's"``
    (:func:`bench.peak_short`; the formula is the table's :func:`bench.peak_legend` line), or
    nothing for rows of older records that carry no measured clock."""
    if row.get("sm_mhz") is None:
        return ""
    return sep + bench.peak_short(row, sm_count, dtype)


def summarize_anatomy(r: dict, sm_count: int) -> list[str]:
    """The ablation and sustained-clock lines of the mma_sync record (empty for older records)."""
    lines = []
    base = next((x["tflops"] for x in r.get("ablation", []) if x["variant"] == "cuBLAS"), None)
    for x in r.get("ablation", []):
        rel = f"  {x['tflops'] / base:.2f} of cuBLAS" if base else ""
        lines.append(f"anatomy {x['size']}³ fp16 {x['variant']:32s} {x['tflops']:6.1f} TFLOP/s{rel}")
    for x in r.get("sustained", []):
        at_clock = peak_tflops(sm_count, x["sm_mhz"])
        sheet = bench.DATASHEET
        lines.append(f"sustained {x['kernel']:8s} {x['tflops']:6.1f} TFLOP/s at {x['sm_mhz']:.0f} MHz "
                     f"(nvidia-smi sampled during the loop, {x['power_w']:.0f} W) = "
                     f"{x['tflops'] / at_clock:.2f} of {sm_count}×4096×that clock (datasheet "
                     f"{sheet['dense_tflops']['float16']:.0f} at {sheet['boost_mhz']} MHz: "
                     f"{x['tflops'] / sheet['dense_tflops']['float16']:.2f})")
    return lines


def _progress(total: int, desc: str):
    from tqdm.auto import tqdm
    return tqdm(total=total, desc=desc, leave=False)


SUITES = {"mma_sync": (measure_mma_sync, summarize_mma_sync, "sm_90a")}
