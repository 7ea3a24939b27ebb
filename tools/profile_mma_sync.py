"""Two launches of the default mma.sync GEMM at 4096³ fp16, for Nsight Compute to profile:
ncu --clock-control none --section WarpStateStats --section SpeedOfLight -k gemm_mma_sync -c 1 \\
    python3 tools/profile_mma_sync.py"""
from asynctc import gemm, runtime
from asynctc.memory import DeviceArray

s = 4096
a, b = gemm.random_operands(s, s, s, "float16")
da, db = DeviceArray.from_host(a), DeviceArray.from_host(b)
dc = DeviceArray.poisoned((s, s), a.dtype)
run = gemm.launcher(gemm.compile_mma_sync("float16"), gemm.DEFAULT_TILE, da, db, dc)
run()
run()
runtime.default_stream().sync()
