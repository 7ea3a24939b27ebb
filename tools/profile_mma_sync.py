"""Two launches of the default mma.sync GEMM at 4096³ fp16, for Nsight Compute to profile:
ncu --clock-control none --section WarpStateStats --section SpeedOfLight -k gemm_mma_sync -c 1 \\
    python3 tools/profile_mma_sync.py"""
from asynctc import mma_sync
from asynctc.core import runtime

s = 4096
a, b, da, db, dc = mma_sync.square_problem(s, "float16")
run = mma_sync.launcher(mma_sync.compile_mma_sync("float16"), mma_sync.DEFAULT_TILE, da, db, dc)
run()
run()
runtime.default_stream().sync()
