"""Exploration run (GPU): chapter 01's mma.sync GEMM tiles at 4096³ fp16 against cuBLAS in the same
run, the anatomy (the kernel with parts of its data path removed), and the SM clock sampled during
sustained loops. Prints a table, and writes it to ``$OUT/explore_mma_sync.txt`` when ``OUT`` is set;
not a record (``python -m asynctc record mma_sync`` is).

    python tools/explore_mma_sync.py            # tiles + anatomy + clocks (~30 s on an H200)
    python tools/explore_mma_sync.py --ablate   # anatomy + clocks only

Every tile is checked against float64 (fp16 and bf16, two small shapes) before it is timed, and its
timed output on sampled rows. Compiles run in parallel (the cubin cache is shared on disk). The
load-schedule variants of the second session (cache operators, store placement, loads two k-tiles
ahead; see docs/NOTES.md) are in this script's history at commits 88ce65d and a364434.
"""
import concurrent.futures as cf
import multiprocessing as mp
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from asynctc.core import bench, runtime  # noqa: E402
from asynctc import mma_sync  # noqa: E402
from asynctc.mma_sync import MmaSyncTile as T  # noqa: E402


def variants():
    vs = list(mma_sync.TILES)
    vs += [T(128, 128, 64, 64, 64, min_blocks=2, group_m=g) for g in (4, 16)]
    vs += [T(128, 256, 64, 64, 64), T(256, 128, 64, 64, 64)]
    return vs


def label(t):
    return t.name + (f"/g{t.group_m}" if t.group_m != 8 else "")


def _compile(args):
    dt, t = args
    ck = mma_sync.compile_mma_sync(dt, t)
    return label(t), dt, ck.resources.registers, ck.resources.spill_stores


def main():
    warnings.simplefilter("ignore")
    lines = []
    only_ablate = "--ablate" in sys.argv

    def say(msg):
        print(msg, flush=True)
        lines.append(msg)

    info = runtime.device_info()
    if info is None:
        raise SystemExit("no GPU on this machine: this script times kernels on an sm_90 GPU")
    say(f"{info.name} driver {info.driver_version} NVRTC {runtime.nvrtc_version()}")
    vs = [] if only_ablate else variants()
    t0 = time.time()
    jobs = [(dt, t) for t in vs for dt in mma_sync.DTYPES]
    with cf.ProcessPoolExecutor(min(16, os.cpu_count() or 2), mp_context=mp.get_context("spawn")) as ex:
        regs = {(n, dt): (r, sp) for n, dt, r, sp in ex.map(_compile, jobs)}
    say(f"compiled {len(jobs)} kernels in {time.time() - t0:.0f} s")
    for t in vs:
        for dt in mma_sync.DTYPES:
            for shp in ((256, 512, 192), (512, 1280, 448), (t.bm * 2, t.bn * 3, t.bk * 5)):
                try:
                    mma_sync.check_shapes(*shp, t)
                except ValueError:
                    continue
                c = mma_sync.verify_mma_sync(*shp, dt, t)
                assert c.passed, (label(t), dt, c)
    say("all tiles correct against float64 (fp16 + bf16)")

    s = 4096
    a, b, da, db, dc = mma_sync.square_problem(s, "float16")
    flop = 2 * s**3
    cub = bench.cublas_gemm(da, db, dc)
    base = [bench.tflops(flop, bench.time_gpu(cub, reps=30).median_ms)]
    results = {label(t): [] for t in vs}
    for _ in range(2 if vs else 0):            # two rounds, cuBLAS between, to see drift
        for t in vs:
            dc.poison()
            tm = bench.time_gpu(mma_sync.launcher(mma_sync.compile_mma_sync("float16", t), t, da, db, dc), reps=30)
            mma_sync.check_sampled_rows(dc, a, b, "float16", label(t))
            results[label(t)].append(bench.tflops(flop, tm.median_ms))
        base.append(bench.tflops(flop, bench.time_gpu(cub, reps=30).median_ms))
    cb = statistics.median(base)
    say(f"cuBLAS fp16 {s}^3: {' / '.join(f'{x:.0f}' for x in base)} TFLOP/s (median {cb:.0f})")
    if vs:
        say(f"{'tile':36s} regs spill   round1  round2   best  of cuBLAS")
    for t in vs:
        r, sp = regs[(label(t), "float16")]
        x = results[label(t)]
        say(f"{label(t):36s} {r:4d} {sp:5d}  {x[0]:7.1f} {x[1]:7.1f} {max(x):6.1f}  {max(x) / cb:.3f}")

    for line in mma_sync.summarize_anatomy(mma_sync.measure_mma_sync_anatomy(s), info.sm_count):
        say(line)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "explore_mma_sync.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
