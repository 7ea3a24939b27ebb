"""Exploration run (GPU): chapter 01's mma.sync GEMM schedule variants at 4096³ fp16 against cuBLAS
in the same run, with the SM clock sampled *during* the timed loops. Prints a table and writes it to
``$OUT/explore_mma_sync.txt`` when ``OUT`` is set; not a record (``asynctc record mma_sync`` is).

Variants: the cache operator of the global loads (``ldg``) × where the stores of the next k-tile
into shared memory go (``sts_from``), for the default tile and its neighbours. Every variant is
checked against float64 (both dtypes, two small shapes) before it is timed, and its timed output is
checked on sampled rows. Compiles run in parallel (the cubin cache is shared on disk).
"""
import concurrent.futures as cf
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from asynctc import bench, gemm, runtime  # noqa: E402
from asynctc.gemm import MmaSyncTile as T  # noqa: E402
from asynctc.memory import DeviceArray  # noqa: E402


def variants():
    d = dict(min_blocks=2)
    vs = [T(128, 128, 64, 64, 64, **d), T(128, 128, 64, 64, 64, ahead=2, **d)]
    vs += [T(128, 128, 64, 64, 64, ldg=ldg, ahead=2, **d) for ldg in ("cg", "nc_noalloc")]
    vs += [T(128, 128, 64, 64, 64, ahead=2, group_m=g, **d) for g in (4, 16)]
    vs += [T(128, 128, 32, 64, 64, ahead=a, **d) for a in (1, 2)]
    vs += [T(bm, bn, 64, 64, 64, ahead=a) for bm, bn in ((128, 256), (256, 128)) for a in (1, 2)]
    return vs


def label(t):
    return t.name + (f"/g{t.group_m}" if t.group_m != 8 else "")


def _compile(args):
    dt, t = args
    ck = gemm.compile_mma_sync(dt, t)
    return label(t), dt, ck.resources.registers, ck.resources.spill_stores


class ClockSampler:
    """nvidia-smi sampling the SM clock and power every 50 ms while a loop runs."""

    def __enter__(self):
        self.p = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
             "-lms", "50"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        time.sleep(0.3)
        return self

    def __exit__(self, *exc):
        self.p.terminate()
        out = self.p.communicate(timeout=5)[0]
        rows = [r.split(",") for r in out.strip().splitlines() if r.count(",") == 1]
        vals = [(float(a), float(b)) for a, b in rows if a.strip().replace(".", "").isdigit()]
        vals = vals[2:-2] if len(vals) > 6 else vals   # drop samples taken before/after the loop
        self.mhz = statistics.median(v[0] for v in vals) if vals else float("nan")
        self.watts = statistics.median(v[1] for v in vals) if vals else float("nan")


def sustained(fn, seconds=1.5):
    """Run ``fn`` back to back for ``seconds`` under the clock sampler; returns (ms per call, MHz, W)."""
    s = runtime.default_stream()
    fn()
    s.sync()
    with ClockSampler() as cs:
        t0, n = time.perf_counter(), 0
        while time.perf_counter() - t0 < seconds:
            for _ in range(20):
                fn()
            s.sync()
            n += 20
        dt = (time.perf_counter() - t0) / n * 1e3
    return dt, cs.mhz, cs.watts


ABLATIONS = {0: "full kernel", 1: "no global loads / shared stores", 2: "no ldmatrix",
             3: "mma.sync + __syncthreads only"}


def ablation(t, ab, dtype="float16"):
    """The kernel with parts of its data path removed (``ABLATE`` define): timing only, the result is
    wrong by construction."""
    d = gemm.kernel_defines(dtype, t)
    return runtime.compile_kernel("gemm_mma_sync.cu", "gemm_mma_sync", "sm_90a", defines={**d, "ABLATE": ab})


def main():
    warnings.simplefilter("ignore")
    lines = []
    only_ablate = "--ablate" in sys.argv

    def say(msg):
        print(msg, flush=True)
        lines.append(msg)

    info = runtime.device_info()
    say(f"{info.name} driver {info.driver_version} NVRTC {runtime.nvrtc_version()}")
    vs = variants() if not only_ablate else []
    t0 = time.time()
    jobs = [(dt, t) for t in vs for dt in gemm.DTYPES]
    with cf.ProcessPoolExecutor(min(16, os.cpu_count() or 2), mp_context=mp.get_context("spawn")) as ex:
        res = list(ex.map(_compile, jobs))
    say(f"compiled {len(jobs)} kernels in {time.time() - t0:.0f} s")
    regs = {(n, dt): (r, sp) for n, dt, r, sp in res}

    for t in vs:
        for dt in gemm.DTYPES:
            for shp in ((256, 512, 192), (512, 1280, 448)):
                try:
                    gemm.check_shapes(*shp, t)
                except ValueError:
                    shp = (t.bm * 2, t.bn * 3, t.bk * 5)
                c = gemm.verify_mma_sync(*shp, dt, t)
                assert c.passed, (t.name, dt, c)
    say("all variants correct against float64 (fp16 + bf16, two shapes each)")

    s = 4096
    a, b = gemm.random_operands(s, s, s, "float16")
    da, db = DeviceArray.from_host(a), DeviceArray.from_host(b)
    dc = DeviceArray.poisoned((s, s), a.dtype)
    flop = 2 * s**3
    cub = bench.cublas_gemm(da, db, dc)
    base = [bench.tflops(flop, bench.time_gpu(cub, reps=30).median_ms)]
    results = {label(t): [] for t in vs}
    for rnd in range(2):                      # two rounds, cuBLAS between, to see drift
        for t in vs:
            ck = gemm.compile_mma_sync("float16", t)
            dc.poison()
            fn = gemm.launcher(ck, t, da, db, dc)
            tm = bench.time_gpu(fn, reps=30)
            gemm.check_sampled_rows(dc, a, b, "float16", t.name)
            results[label(t)].append(bench.tflops(flop, tm.median_ms))
        base.append(bench.tflops(flop, bench.time_gpu(cub, reps=30).median_ms))
    cb = statistics.median(base)
    say(f"cuBLAS fp16 {s}^3: {' / '.join(f'{x:.0f}' for x in base)} TFLOP/s (median {cb:.0f})")
    say(f"{'variant':42s} regs spill   round1  round2   best  of cuBLAS")
    for t in vs:
        r, sp = regs[(label(t), "float16")]
        x = results[label(t)]
        say(f"{label(t):42s} {r:4d} {sp:5d}  {x[0]:7.1f} {x[1]:7.1f} {max(x):6.1f}  {max(x) / cb:.3f}")

    for t in (gemm.DEFAULT_TILE, T(128, 256, 64, 64, 64)):
        for ab, what in ABLATIONS.items():
            ck = ablation(t, ab)
            tm = bench.time_gpu(gemm.launcher(ck, t, da, db, dc), reps=30)
            tf = bench.tflops(flop, tm.median_ms)
            say(f"ablation {t.name:26s} {what:32s} regs {ck.resources.registers:3d} {tf:6.1f} TFLOP/s "
                f"{tf / cb:.3f} of cuBLAS")
    if only_ablate:
        vs = [gemm.DEFAULT_TILE]
        results = {label(gemm.DEFAULT_TILE): [0.0]}
    best = max(vs, key=lambda t: max(results[label(t)]))
    for what, fn in (("cuBLAS", cub), (f"default {gemm.DEFAULT_TILE.name}",
                                        gemm.launcher(gemm.compile_mma_sync("float16"), gemm.DEFAULT_TILE, da, db, dc)),
                      (f"best {label(best)}", gemm.launcher(gemm.compile_mma_sync("float16", best), best, da, db, dc))):
        ms, mhz, w = sustained(fn)
        say(f"sustained {what:44s} {bench.tflops(flop, ms):6.1f} TFLOP/s (no flush)  SM clock "
            f"{mhz:.0f} MHz  {w:.0f} W  -> {bench.tflops(flop, ms) / (info.sm_count * 4096 * mhz * 1e6 / 1e12):.3f}"
            " of 132x4096xclock")
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "explore_mma_sync.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
