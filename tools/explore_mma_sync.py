"""Exploration run (GPU): mma.sync tile variants at 4096³ fp16 against cuBLAS, and the mma.sync
register-only ceiling by warps per SM. Prints a table; not a record (see `asynctc record`)."""
import warnings

import numpy as np

from asynctc import bench, gemm, runtime
from asynctc.gemm import MmaSyncTile as T
from asynctc.memory import DeviceArray

warnings.simplefilter("ignore")
info = runtime.device_info()
s = 4096
a, b = gemm.random_operands(s, s, s, "float16")
da, db = DeviceArray.from_host(a), DeviceArray.from_host(b)
dc = DeviceArray.poisoned((s, s), a.dtype)
base = bench.tflops(2 * s**3, bench.time_gpu(bench.cublas_gemm(da, db, dc)).median_ms)
print(f"cuBLAS fp16 {s}^3: {base:.0f} TFLOP/s")
for t in gemm.TILES:
    for dt in gemm.DTYPES:
        c = gemm.verify_mma_sync(512, 1280, 448, dt, t)
        assert c.passed, (t.name, c)
print("checks passed")
variants = [T(128, 128, 64, 64, 64, min_blocks=2), T(128, 128, 64, 64, 64, min_blocks=2, group_m=4),
            T(128, 128, 64, 64, 64, min_blocks=2, group_m=16), T(128, 256, 64, 64, 64),
            T(256, 128, 64, 64, 64), T(128, 128, 64, 64, 32, min_blocks=2)]
for t in variants:
    for dt in gemm.DTYPES:
        c = gemm.verify_mma_sync(256, 512, 192, dt, t)
        assert c.passed, (t.name, c)
for t in variants:
    ck = gemm.compile_mma_sync("float16", t)
    dc.poison()
    tm = bench.time_gpu(gemm.launcher(ck, t, da, db, dc))
    rows = np.arange(0, s, 509)
    ref = a[rows].astype(np.float64) @ b.astype(np.float64)
    got = dc.to_host()[rows].astype(np.float64)
    err = np.linalg.norm(np.nan_to_num(got, nan=1e30) - ref) / np.linalg.norm(ref)
    tf = bench.tflops(2 * s**3, tm.median_ms)
    print(f"{t.name:26s} g{t.group_m:<3d} regs {ck.resources.registers:3d} spill "
          f"{ck.resources.spill_stores:3d}  {tf:6.1f} TFLOP/s  {tf / base:.3f} of cuBLAS  "
          f"spread {tm.spread:.3f}  err {err:.1e}")
for dt in ():
    for warps, per_sm in ((4, 1), (4, 2), (4, 4), (8, 2), (8, 4), (16, 2)):
        p = gemm.MmaSyncPeak(dt, blocks=info.sm_count * per_sm, warps=warps)
        c = p.check()
        tm = bench.time_gpu(p.launcher(), flush=False)
        tf = bench.tflops(p.flop, tm.median_ms)
        print(f"peak {dt:8s} {warps:2d} warps x {per_sm} CTA/SM: {tf:6.1f} TFLOP/s "
              f"check {c.passed} ({c.rel_err:.1e})")
