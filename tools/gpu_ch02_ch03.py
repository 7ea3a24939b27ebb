"""One GPU run of everything chapters 02-03 need checked (H200, ~1-2 minutes).

    .venv/bin/python tools/gpu_ch02_ch03.py            # checks + a small bandwidth preview
    .venv/bin/python tools/gpu_ch02_ch03.py --no-bench # checks only
    .venv/bin/python tools/gpu_ch02_ch03.py --equal-bytes --out $OUT [--record]

``--equal-bytes`` runs only the ``tma_equal`` suite (asynctc.tma.equal_bytes, well under 2 minutes
on an H200): TMA beside the cp.async and ld+st copies at the same bytes in flight per SM, small and
large fp16 boxes, each row checked byte for byte before it is timed; results.json under --out, and
with --record data/<gpu>/tma_equal.json (copied into --out), which chapter 10 judges.

Runs the logic of the ``gpu`` tests in tests/test_cp_async.py and tests/test_tma.py on fresh random data and
prints one compact line per check (PASS/FAIL/ERROR and the detail that matters), then a table. Every
check runs even if an earlier one failed; the exit status is 1 if any did. mbarrier waits in the
kernels are bounded, so a protocol error shows up as "mbarrier wait timed out", not as a hang.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from asynctc.core import bench, runtime  # noqa: E402
from asynctc import cp_async, tma  # noqa: E402
from asynctc.models.layout import SmemTile  # noqa: E402

RESULTS: list[tuple[str, str, str]] = []


ONLY = None   # a regular expression: run only the checks whose name matches (--only)


def check(name: str, fn) -> None:
    import re
    if ONLY and not re.search(ONLY, name):
        return
    t0 = time.perf_counter()
    try:
        ok, detail = fn()
        status = "PASS" if ok else "FAIL"
    except Exception as e:  # noqa: BLE001 - report and go on
        status, detail = "ERROR", f"{type(e).__name__}: {e}"
        traceback.print_exc(limit=3)
    RESULTS.append((status, name, detail))
    print(f"{status:5s} {name:60s} {detail[:160]}  [{time.perf_counter() - t0:.1f}s]", flush=True)


def equal_bytes(out: str, save: bool) -> int:
    """The tma_equal suite alone, through the record machinery the other scripts use."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gpu_common import record_suite, start
    from asynctc.tma import equal_bytes as E
    started = start(out, long_header=False)
    if started is None:
        return 2
    out_dir, say = started
    return record_suite("tma_equal", lambda: E.measure_equal_bytes(progress=say),
                        E.summarize_equal_bytes, out_dir, say, save=save)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--equal-bytes", action="store_true",
                    help="only the tma_equal suite (TMA vs manual copies at equal bytes in flight)")
    ap.add_argument("--out", default=os.environ.get("OUT", "out_tma_equal"),
                    help="folder for results.json with --equal-bytes (default: $OUT)")
    ap.add_argument("--record", action="store_true",
                    help="with --equal-bytes: write data/<gpu>/tma_equal.json")
    ap.add_argument("--only", help="regular expression: run only the checks whose names match "
                    "(a fault ends the process's CUDA context, so isolate suspects in their own run)")
    args = ap.parse_args()
    global ONLY
    ONLY = args.only
    if args.equal_bytes:
        return equal_bytes(args.out, args.record)
    if not runtime.runs_live("sm_90a"):
        print("no live sm_90a GPU:", runtime.why_not_live("sm_90a"))
        return 2
    info = runtime.device_info()
    print(f"{info.name}, {info.sm_count} SMs, driver {info.driver_version}")
    rng = np.random.default_rng()

    # --- chapter 03: swizzle model, loads and stores, OOB, mbarrier --------------------------
    for tile in tma.swizzle_tiles():
        def ld(tile=tile):
            c = tma.load_box(tile, shape=(64, 4 * tile.cols + 48 // tile.itemsize),
                                 start=(int(rng.integers(0, 64 - tile.rows)), tile.cols), rng=rng)
            return c.passed, f"{c.mismatches}/{c.nbytes} bytes differ, first at {c.first} {c.note}"
        check(f"TMA load  {tile!r}", ld)
    for tile in tma.swizzle_tiles():
        def st(tile=tile):
            c = tma.store_box(tile, shape=(48, 3 * tile.cols), start=(5, tile.cols), rng=rng)
            return c.passed, f"{c.mismatches}/{c.nbytes} bytes differ, first at {c.first}"
        check(f"TMA store {tile!r}", st)
    for tile in (SmemTile(16, 64, "float16", 128), SmemTile(16, 32, "float32", 0),
                 SmemTile(24, 64, "uint8", 64)):
        for start in ((-3, -16), (40, 112), (-20, 120), (100, 0)):
            if start[1] * np.dtype(tile.dtype).itemsize % 16:
                continue                    # refused before the GPU (check_box_start)
            def oob(tile=tile, start=start):
                a = tma.load_box(tile, shape=(48, 128), start=start, rng=rng)
                if min(start) < 0:          # negative store starts are refused (they fault)
                    return a.passed, f"load {a.mismatches} bytes differ (no store: negative start)"
                b = tma.store_box(tile, shape=(48, 128), start=start, rng=rng)
                return a.passed and b.passed, f"load {a.mismatches} / store {b.mismatches} bytes differ"
            check(f"OOB {tile!r} at {start}", oob)

    def nan():
        c = tma.load_box(SmemTile(16, 64, "float16", 128), shape=(40, 96), start=(32, 64),
                             oob_fill="nan", rng=rng)
        return c.passed, f"{c.mismatches} elements wrong"
    check("OOB NaN fill (NAN_REQUEST_ZERO_FMA)", nan)

    def life():
        run = tma.mbarrier_lifecycle(rng=rng)
        print(tma.lifecycle_table(run))
        return run.passed, f"err={run.err} boxes_ok={run.boxes_ok}"
    check("mbarrier life cycle", life)

    for box in ((8, 32), (32, 64), (16, 256)):
        def cp(box=box):
            cb = tma.CopyBench(rows=1024, cols=2048)
            bad = []
            for v in tma.VARIANTS:
                cfg = tma.copy_config(v, *box)
                cb.dst.poison()
                cb.launcher(cfg)()
                c = cb.check(cfg.name)
                if not c.passed:
                    bad.append(f"{v}: {c.mismatches} bytes")
            return not bad, "; ".join(bad) or "tma, ldg_sts, cp_async all equal the source"
        check(f"copy kernels, box {box}", cp)

    # --- chapter 02: the cp.async GEMM and the shared-memory pipeline ----------------------------
    for tile in cp_async.TILES:
        for dtype in ("float16", "bfloat16"):
            def g(tile=tile, dtype=dtype):
                errs = []
                for shp in ((256, 384, 640), (384, 256, 1024), (1024, 1024, 1024)):
                    c = cp_async.verify_cp_async(*shp, dtype=dtype, tile=tile)
                    errs.append(c)
                worst = max(errs, key=lambda c: (not c.passed, c.rel_err if np.isfinite(c.rel_err) else 9))
                return all(c.passed for c in errs), f"worst rel_err {worst.rel_err:.2e} (tol {worst.tol}), " \
                                                    f"unwritten {worst.unwritten}"
            check(f"cp.async GEMM {tile.name} {dtype}", g)
    for b in cp_async.SMEM_BLOCKS:
        def sp(b=b):
            p = cp_async.SmemPipeline(b, blocks=264, iters=32)
            cs = [p.check(k) for k in ("sync", "async")]
            return all(c.passed for c in cs), " / ".join(f"{c.rel_err:.1e}" for c in cs)
        check(f"smem pipeline {b}x{b} sync/async", sp)

    if not args.no_bench:
        # a preview of the bandwidth figures (the real numbers come from `record tma_copy`)
        def prev():
            cb = tma.CopyBench()
            t = bench.time_gpu(bench.device_copy(cb.dst, cb.src), reps=10)
            ceil = bench.gbps(2 * cb.nbytes, t.median_ms)
            parts = [f"device copy {ceil:.0f} GB/s"]
            for br, bc in ((16, 64), (64, 64), (32, 256)):
                for v in tma.VARIANTS:
                    cfg = tma.copy_config(v, br, bc)
                    run = cb.launcher(cfg)
                    tt = bench.time_gpu(run, reps=10)
                    parts.append(f"{v} {cfg.box_bytes >> 10}KB {bench.gbps(2 * cb.nbytes, tt.median_ms) / ceil:.2f}")
            print("   " + "\n   ".join(parts))
            return True, "ratios to the device copy printed above"
        check("bandwidth preview", prev)

    n_bad = sum(1 for s, _, _ in RESULTS if s != "PASS")
    print(f"\n{len(RESULTS) - n_bad}/{len(RESULTS)} checks passed")
    for s, name, detail in RESULTS:
        if s != "PASS":
            print(f"  {s}: {name}: {detail}")
    return 1 if n_bad else 0


if __name__ == "__main__":
    sys.exit(main())
