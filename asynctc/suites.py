"""Benchmark suites: what ``python -m asynctc record <suite>`` measures and writes to ``data/``.

Each suite is a function returning JSON-able results; :func:`run_suite` wraps it with provenance
(:func:`asynctc.records.measure`), saves it and prints a ratio table against the baseline that was
timed in the same run. Suites never assert on timings; correctness checks run first and a failed
check stops the suite (a wrong kernel's speed is not recorded).
"""

from __future__ import annotations

import numpy as np

from . import bench, gemm, records, runtime
from .memory import DeviceArray


def _progress(total: int, desc: str):
    from tqdm.auto import tqdm
    return tqdm(total=total, desc=desc, leave=False)


def peak_tflops(sm_count: int, sm_clock_mhz: float, flop_per_clk_per_sm: int = 4096) -> float:
    """Dense fp16/bf16 Tensor Core peak = SMs × FLOP/clk/SM × clock (sm_90: 4096 FLOP/clk/SM for
    dense fp16/bf16 with fp32 accumulate, NVIDIA H100 architecture whitepaper), in TFLOP/s."""
    return sm_count * flop_per_clk_per_sm * sm_clock_mhz * 1e6 / 1e12


# --------------------------------------------------------------------------------------------------
# Chapter 00: ceilings of this GPU
# --------------------------------------------------------------------------------------------------

COPY_MIB = (16, 64, 256, 1024, 4096)
CUBLAS_SIZES = (1024, 2048, 4096, 8192)


def measure_ceilings() -> dict:
    """Device-to-device copy bandwidth by size; cuBLAS fp16/bf16 GEMM by size (random data)."""
    out: dict = {"copy": [], "cublas": [], "baseline_library": bench.baseline_library()}
    bar = _progress(len(COPY_MIB) + 2 * len(CUBLAS_SIZES), "ceilings")
    for mib in COPY_MIB:
        n = mib << 20
        src = DeviceArray.empty(n, np.uint8)
        src.buffer.fill(0xA5, stream=runtime.default_stream())
        dst = DeviceArray.poisoned(n, np.uint8)
        t = bench.time_gpu(bench.device_copy(dst, src), reps=20)
        tail = dst.to_host()[-4096:]
        if not np.all(tail == 0xA5):
            raise RuntimeError("device copy check failed: destination tail not written")
        out["copy"].append({"bytes": n, **t.as_dict(),
                            "gbps_rw": bench.gbps(2 * n, t.median_ms)})
        del src, dst
        bar.update()
    if out["baseline_library"] is None:
        bar.close()
        return out
    for dtype in ("float16", "bfloat16"):
        for s in CUBLAS_SIZES:
            a, b, da, db, dc = gemm.square_problem(s, dtype)
            run = bench.cublas_gemm(da, db, dc)
            t = bench.time_gpu(run, reps=20)
            row = {"dtype": dtype, "m": s, "n": s, "k": s, **t.as_dict(),
                   "tflops": bench.tflops(bench.gemm_flop(s, s, s), t.median_ms)}
            if s == CUBLAS_SIZES[0]:
                chk = gemm.compare(dc.to_host(), gemm.reference(a, b), dtype, (s, s, s))
                row["check"] = chk.as_dict()
            if s == CUBLAS_SIZES[-1]:
                row["clocks_after"] = records.nvidia_smi_clocks()
            out["cublas"].append(row)
            del da, db, dc
            bar.update()
    bar.close()
    return out


def summarize_ceilings(rec: records.Record) -> str:
    r = rec.results
    p = rec.provenance
    lines = [f"{rec.label()}"]
    best = max(r["copy"], key=lambda x: x["gbps_rw"])
    lines.append(f"device-to-device copy: best {best['gbps_rw']:.0f} GB/s (read+write) at "
                 f"{best['bytes'] >> 20} MiB")
    peak = peak_tflops(p["sm_count"], p["max_sm_clock_mhz_attr"])
    lines.append(f"datasheet-style peak: {p['sm_count']} SMs × 4096 FLOP/clk × "
                 f"{p['max_sm_clock_mhz_attr']:.0f} MHz = {peak:.0f} TFLOP/s")
    for row in r["cublas"]:
        lines.append(f"cuBLAS {row['dtype']:8s} {row['m']:5d}³: {row['tflops']:6.0f} TFLOP/s "
                     f"({row['tflops'] / peak:.2f} of peak)")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# Chapter 01: the synchronous model
# --------------------------------------------------------------------------------------------------

MMA_SIZES = (512, 1024, 2048, 4096, 6144, 8192)
CHECK_SHAPES = ((128, 256, 32), (256, 512, 96), (384, 768, 160), (1024, 512, 2048),
                (512, 1280, 416))
SIMT_SIZES = (1024, 2048)
PEAK_CONFIGS = ((4, 1), (4, 2), (8, 2), (8, 4))


def cublas_sweep_row(da, db, dc, dtype: str, size: int) -> dict:
    """cuBLAS timed on the suite's own operands (``size``³): one row of a GEMM suite's sweep."""
    t = bench.time_gpu(bench.cublas_gemm(da, db, dc), reps=20)
    return {"dtype": dtype, "size": size, "kernel": "cuBLAS", **t.as_dict(),
            "tflops": bench.tflops(bench.gemm_flop(size, size, size), t.median_ms)}


def measure_mma_sync() -> dict:
    """Correctness at several shapes, then the mma.sync GEMM (every tile in :data:`gemm.TILES`)
    beside cuBLAS on the same inputs, fp16 and bf16, sizes :data:`MMA_SIZES`; the numba SIMT GEMM
    (fp32) at :data:`SIMT_SIZES`."""
    out: dict = {"sweep": [], "simt": [],
                 "tiles": [dict(name=t.name, bm=t.bm, bn=t.bn, bk=t.bk, wm=t.wm, wn=t.wn,
                                threads=t.threads, smem_bytes=t.smem_bytes) for t in gemm.TILES],
                 "baseline_library": bench.baseline_library()}
    out["checks"] = gemm.check_tiles(gemm.verify_mma_sync, gemm.TILES, CHECK_SHAPES,
                                     what="mma.sync GEMM")
    bar = _progress(len(gemm.DTYPES) * len(MMA_SIZES), "mma_sync")
    for dtype in gemm.DTYPES:
        for s in MMA_SIZES:
            a, b, da, db, dc = gemm.square_problem(s, dtype)
            flop = bench.gemm_flop(s, s, s)
            if out["baseline_library"]:
                out["sweep"].append(cublas_sweep_row(da, db, dc, dtype, s))
            for tile in gemm.TILES:
                try:
                    gemm.check_shapes(s, s, s, tile)
                except ValueError:
                    continue
                ck = gemm.compile_mma_sync(dtype, tile)
                dc.poison()
                run = gemm.launcher(ck, tile, da, db, dc)
                t = bench.time_gpu(run, reps=20)
                err = gemm.check_sampled_rows(dc, a, b, dtype, f"tile {tile.name}",
                                              rng=np.random.default_rng(s))
                out["sweep"].append({"dtype": dtype, "size": s, "kernel": "mma.sync",
                                     "tile": tile.name, **t.as_dict(), "rel_err_rows": err,
                                     "registers": ck.resources.registers,
                                     "spill_bytes": ck.resources.spill_stores,
                                     "tflops": bench.tflops(flop, t.median_ms)})
            del da, db, dc
            bar.update()
    bar.close()
    out["clocks_after"] = records.nvidia_smi_clocks()
    out.update(measure_mma_sync_anatomy())
    # The ceiling of mma.sync itself: register-only kernel, by warps per SM.
    out["peak"] = []
    info = runtime.device_info()
    for dtype in gemm.DTYPES:
        for warps, per_sm in PEAK_CONFIGS:
            p = gemm.MmaSyncPeak(dtype, blocks=info.sm_count * per_sm, warps=warps)
            c = p.check()
            if not c.passed:
                raise RuntimeError(f"mma.sync peak kernel wrong: {c.as_dict()}")
            t = bench.time_gpu(p.launcher(), flush=False)
            out["peak"].append({"dtype": dtype, "warps_per_cta": warps, "ctas_per_sm": per_sm,
                                **t.as_dict(), "tflops": bench.tflops(p.flop, t.median_ms),
                                "check": c.as_dict()})
    out["clocks_after_peak"] = records.nvidia_smi_clocks()
    # The numba SIMT kernel, fp32, for scale.
    from . import simt
    cuda = simt.numba_cuda()
    for s in SIMT_SIZES:
        rng = np.random.default_rng(s)
        a = rng.standard_normal((s, s), dtype=np.float32)
        b = rng.standard_normal((s, s), dtype=np.float32)
        da, db = cuda.to_device(a), cuda.to_device(b)
        dc = cuda.to_device(np.full((s, s), np.nan, np.float32))
        run = simt.simt_launcher(da, db, dc, runtime.default_stream())
        t = bench.time_gpu(run, reps=10)
        c = dc.copy_to_host()
        chk = gemm.compare(c, a.astype(np.float64) @ b, "float32", (s, s, s))
        out["simt"].append({"size": s, **t.as_dict(), "check": chk.as_dict(),
                            "tflops": bench.tflops(bench.gemm_flop(s, s, s), t.median_ms)})
    return out


ABLATION_SIZE = 4096


def measure_mma_sync_anatomy(size: int = ABLATION_SIZE) -> dict:
    """Where the time of the default kernel goes, fp16 ``size``³: the kernel with parts of its data
    path removed (:data:`gemm.ABLATIONS`, timing only) beside cuBLAS in the same run; then cuBLAS
    and the kernel run back to back with the SM clock sampled during the load
    (:func:`bench.sustained`), for TFLOP/s per clock."""
    a, b, da, db, dc = gemm.square_problem(size, "float16")
    flop = bench.gemm_flop(size, size, size)
    tile = gemm.DEFAULT_TILE
    out: dict = {"ablation": [], "sustained": []}
    cub = bench.cublas_gemm(da, db, dc) if bench.baseline_library() else None
    runs = {gemm.ABLATIONS[ab]: gemm.launcher(gemm.compile_mma_sync_ablation(ab, "float16", tile),
                                              tile, da, db, dc) for ab in gemm.ABLATIONS}
    full = runs[gemm.ABLATIONS[0]]
    for what, run in (({"cuBLAS": cub} if cub else {}) | runs).items():
        t = bench.time_gpu(run, reps=30)
        out["ablation"].append({"dtype": "float16", "size": size, "tile": tile.name, "variant": what,
                                **t.as_dict(), "tflops": bench.tflops(flop, t.median_ms)})
    # the full kernel once more, checked, so the ablation's first row is a correct kernel
    dc.poison()
    full()
    gemm.check_sampled_rows(dc, a, b, "float16", f"tile {tile.name}", rng=np.random.default_rng(1))
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


def summarize_mma_sync(rec: records.Record, anatomy: bool = True) -> str:
    r = rec.results
    lines = [rec.label(), f"correctness: {sum(c['passed'] for c in r['checks'])}/"
                          f"{len(r['checks'])} checks passed"]
    for dtype in gemm.DTYPES:
        cb = {x["size"]: x for x in cublas_rows(r, dtype)}
        for row in best_mma_rows(r, dtype):
            base = cb.get(row["size"])
            ratio = f"{row['tflops'] / base['tflops']:.2f} of cuBLAS ({base['tflops']:.0f})" \
                if base else "no baseline"
            if base and row["tflops"] > base["tflops"]:
                ratio += (f"  <- cuBLAS was unusually slow here (p10-p90 {base['p10_ms']:.3f}-"
                          f"{base['p90_ms']:.3f} ms); small sizes vary between runs")
            lines.append(f"mma.sync {dtype:8s} {row['size']:5d}³ tile {row['tile']:18s} "
                         f"{row['tflops']:6.1f} TFLOP/s  {ratio}")
    for row in r["simt"]:
        lines.append(f"numba SIMT fp32 {row['size']:5d}³: {row['tflops']:.2f} TFLOP/s")
    p = rec.provenance
    peak = peak_tflops(p["sm_count"], p["max_sm_clock_mhz_attr"])
    for row in r.get("peak", []):
        lines.append(f"mma.sync register-only {row['dtype']:8s} {row['warps_per_cta']} warps × "
                     f"{row['ctas_per_sm']} CTA/SM: {row['tflops']:.0f} TFLOP/s "
                     f"({row['tflops'] / peak:.2f} of {peak:.0f})")
    if anatomy:
        lines += summarize_anatomy(r, p["sm_count"])
    return "\n".join(lines)


def summarize_anatomy(r: dict, sm_count: int) -> list[str]:
    """The ablation and sustained-clock lines of the mma_sync record (empty for older records)."""
    lines = []
    base = next((x["tflops"] for x in r.get("ablation", []) if x["variant"] == "cuBLAS"), None)
    for x in r.get("ablation", []):
        rel = f"  {x['tflops'] / base:.2f} of cuBLAS" if base else ""
        lines.append(f"anatomy {x['size']}³ fp16 {x['variant']:32s} {x['tflops']:6.1f} TFLOP/s{rel}")
    for x in r.get("sustained", []):
        at_clock = peak_tflops(sm_count, x["sm_mhz"])
        lines.append(f"sustained {x['kernel']:8s} {x['tflops']:6.1f} TFLOP/s at {x['sm_mhz']:.0f} MHz "
                     f"(sampled during the loop, {x['power_w']:.0f} W) = {x['tflops'] / at_clock:.2f} "
                     f"of {sm_count}×4096×that clock")
    return lines


# --------------------------------------------------------------------------------------------------

SUITES = {
    "ceilings": (measure_ceilings, summarize_ceilings, "sm_90a"),
    "mma_sync": (measure_mma_sync, summarize_mma_sync, "sm_90a"),
}

#: Chapter modules that contribute suites: each may define ``SUITES = {name: (measure, summarize,
#: arch)}`` with the same meaning as above.
CHAPTER_MODULES = ("asynctc.cpasync", "asynctc.tmacopy", "asynctc.wgmma", "asynctc.pipeline")


def _collect() -> None:
    import importlib
    for mod in CHAPTER_MODULES:
        try:
            m = importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name == mod:
                continue          # chapter not written yet
            raise
        SUITES.update(getattr(m, "SUITES", {}))


_collect()


def run_suite(name: str, save: bool = True) -> records.Record:
    """Measure suite ``name`` on this GPU, save it under ``data/`` and print its summary."""
    if name not in SUITES:
        raise ValueError(f"suite={name!r}: known suites are {sorted(SUITES)}")
    fn, summary, arch = SUITES[name]
    if not runtime.runs_live(arch):
        raise runtime.NoGPUError(f"suite {name} needs a live {arch} GPU: {runtime.why_not_live(arch)}")
    rec = records.measure(name, fn)
    if save:
        path = records.save(rec)
        print(f"wrote {path.relative_to(records.data_dir().parent) if path.is_relative_to(records.data_dir().parent) else path}")
    print(summary(rec))
    return rec
