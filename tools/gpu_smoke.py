"""First contact with a GPU machine: exercise every runtime path once, report each step.

Run on the GPU machine from the repository root: python tools/gpu_smoke.py
Each step prints ok/FAIL with the exception, so one call finds every API mismatch at once.
"""
import sys
import time
import traceback

import numpy as np

steps = []


def step(fn):
    t = time.time()
    try:
        r = fn()
        print(f"ok    {fn.__name__:28s} {time.time() - t:6.1f}s {'' if r is None else r}", flush=True)
        steps.append(True)
    except Exception:  # noqa: BLE001
        print(f"FAIL  {fn.__name__}", flush=True)
        traceback.print_exc()
        steps.append(False)


def detect():
    from asynctc.core import runtime
    return runtime.device_info(), runtime.mode(), runtime.runs_live("sm_90a")


def roundtrip():
    from asynctc.core.memory import DeviceArray
    x = np.random.default_rng(0).standard_normal((123, 77)).astype(np.float32)
    d = DeviceArray.from_host(x)
    y = d.to_host()
    assert np.array_equal(x, y)
    d.poison()
    assert np.isnan(d.to_host()).all()
    return d


def mma_verify():
    from asynctc import mma_sync
    out = []
    for dt in mma_sync.DTYPES:
        for t in mma_sync.TILES:
            c = mma_sync.verify_mma_sync(256, 512, 96, dt, t)
            out.append((dt, t.name, round(c.rel_err, 6), c.passed))
            assert c.passed, c
    return out


def mma_f32():
    from asynctc import mma_sync
    c = mma_sync.verify_mma_sync(384, 768, 160, "float16", out_f32=True)
    assert c.passed, c
    return c.rel_err


def timing():
    from asynctc.core import bench
    from asynctc import mma_sync
    s = 4096
    a, b, da, db, dc = mma_sync.square_problem(s, "float16")
    ck = mma_sync.compile_mma_sync("float16")
    t = bench.time_gpu(mma_sync.launcher(ck, mma_sync.DEFAULT_TILE, da, db, dc), reps=10)
    ours = bench.tflops(2 * s**3, t.median_ms)
    tb = bench.time_gpu(bench.cublas_gemm(da, db, dc), reps=10)
    base = bench.tflops(2 * s**3, tb.median_ms)
    return f"mma.sync {ours:.0f} TFLOP/s, cuBLAS {base:.0f}, ratio {ours / base:.2f}"


def simt_gpu():
    from asynctc import simt
    rng = np.random.default_rng(3)
    a = rng.standard_normal((300, 200), dtype=np.float32)
    b = rng.standard_normal((200, 170), dtype=np.float32)
    c = simt.simt_gemm(a, b)
    ref = a.astype(np.float64) @ b
    e = np.linalg.norm(c - ref) / np.linalg.norm(ref)
    assert e < 1e-5, e
    return (e, simt.simulated())


def provenance():
    from asynctc.core import records
    return records.provenance_start()


for f in (detect, roundtrip, mma_verify, mma_f32, timing, simt_gpu, provenance):
    step(f)
sys.exit(0 if all(steps) else 1)
