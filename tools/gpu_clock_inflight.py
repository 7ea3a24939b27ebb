"""Issue 9: is the in-flight clock probe (bench.time_gpu, clock=True) the clock the work ran at?

One GPU call (~1 min). For each workload: the in-flight probe's clock (a 1-CTA clock64/%globaltimer
probe on a high-priority second stream, during untimed samples of the same launches), the clock
probed right after each timed sample (the old method), and where the workload can clock itself
(the wgmma peak kernel) its in-kernel clock — the check of the method: in-flight and in-kernel must
agree. Then nvidia-smi sampled during 1.5 s of back-to-back cuBLAS. Prints a table; writes
data/<gpu>/clock_inflight.json (copied to $OUT) — the record ``bench.INFLIGHT_CHECK`` cites.

Run from the repository root on an sm_90 machine:

    python tools/gpu_clock_inflight.py
"""
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from asynctc import pipeline as P  # noqa: E402
from asynctc import wgmma_peak  # noqa: E402
from asynctc.core import bench, records  # noqa: E402
from asynctc.core.memory import DeviceArray  # noqa: E402


def row(name, t, flop, in_kernel=None):
    d = t.as_dict()
    r = {"workload": name, "ms": d["median_ms"], "tflops": flop / d["median_ms"] / 1e9,
         "in_flight_mhz": d.get("sm_mhz") if d.get("sm_mhz_source") == bench.CLOCK_INFLIGHT_SOURCE
         else None, "after_mhz": d.get("sm_mhz_after"), "in_flight_valid": d.get("clock_in_flight"),
         "in_kernel_mhz": in_kernel, "launches_per_sample": d["launches_per_sample"]}
    print(f"{name:34s} {r['tflops']:7.1f} TFLOP/s  in-flight {r['in_flight_mhz'] or float('nan'):6.0f}"
          f" ({r['in_flight_valid']})  after {r['after_mhz'] or float('nan'):6.0f}  in-kernel "
          f"{in_kernel or float('nan'):6.0f}", flush=True)
    return r


def main():
    out = Path(os.environ.get("OUT", "out_clock"))
    out.mkdir(parents=True, exist_ok=True)
    rec = records.measure("clock_inflight", measure)
    path = records.save(rec)
    (out / path.name).write_text(path.read_text())
    print("wrote", path)
    return 0


def measure():
    rows = []
    rng = np.random.default_rng(0)
    for n in (256, 128):
        pk = wgmma_peak.WgmmaPeak("float16", n, "smem", 1, ctas_per_sm=2)
        fn = pk.launcher()
        t = bench.time_gpu(fn, warmup=3, reps=10, flush=False, clock=True)
        fn()
        rows.append(row(f"wgmma peak N={n} (in-kernel clock)", t, pk.flop, pk.measured_clock_mhz()))
    for s in (4096, 8192):
        a = rng.standard_normal((s, s)).astype(np.float16)
        b = rng.standard_normal((s, s)).astype(np.float16)
        da, db = DeviceArray.from_host(a), DeviceArray.from_host(b)
        dc = DeviceArray.poisoned((s, s), np.float16)
        fn = bench.cublas_gemm(da, db, dc)
        t = bench.time_gpu(fn, warmup=3, reps=10, clock=True)
        rows.append(row(f"cuBLAS fp16 {s}^3", t, 2 * s**3))
        cfg = P.PipelineConfig(dtype="float16", bm=128, bn=256, bk=64, stages=4, consumers=2,
                               b_major="K")
        g = P.PipelineGemm(cfg, da, DeviceArray.from_host(np.ascontiguousarray(b.T)))
        t = bench.time_gpu(g.launcher(), warmup=3, reps=10, clock=True)
        g.check_error()
        rows.append(row(f"pipeline 128x256 s4 fp16 {s}^3", t, 2 * s**3))
        if s == 8192:
            su = bench.sustained(fn, seconds=1.5)
            print(f"nvidia-smi during 1.5 s of cuBLAS {s}^3: {su['sm_mhz']:.0f} MHz, "
                  f"{su['power_w']:.0f} W ({su['samples']} samples)", flush=True)
            rows.append({"workload": f"cuBLAS fp16 {s}^3 sustained (nvidia-smi)", **su})
    return {"rows": rows, "what": __doc__.strip().splitlines()[0]}


if __name__ == "__main__":
    sys.exit(main())
