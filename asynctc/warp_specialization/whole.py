"""The host side of chapter 06's whole kernel, ``kernels/hopper_gemm.cu``: read it top to bottom.

Compile (NVRTC, cached), check the shapes, make the two tensor maps, launch one CTA per 128×256
tile with 384 threads, read the error word, and check every element against float64.
"""

from __future__ import annotations

import numpy as np

from .. import tma
from ..core import checks, runtime
from ..core.memory import DeviceArray
from ..models.layout import SmemTile
from ..pipeline import decode_error
from .config import _fail

SOURCE, ENTRY = "hopper_gemm.cu", "hopper_gemm"
BM, BN, BK, STAGES = 128, 256, 64, 4             # the kernel's CTA tile and ring
THREADS = 128 * 3                                # a producer and two consumer warpgroups
SMEM_BYTES = 1024 + STAGES * (BM + BN) * BK * 2  # alignment slack + 4 stages of 48 KiB
DTYPES = {"float16": 0, "bfloat16": 1}           # the kernel's one define, DT


def compile_whole(dtype: str = "float16") -> runtime.CompiledKernel:
    """The kernel as an sm_90a cubin (NVRTC; no GPU needed, cached on disk)."""
    if dtype not in DTYPES:
        _fail("dtype", dtype, f"the kernel takes {sorted(DTYPES)}")
    return runtime.compile_kernel(SOURCE, ENTRY, "sm_90a", defines={"DT": DTYPES[dtype]})


def check_shapes(m: int, n: int, k: int) -> None:
    """The kernel has no edge handling: M, N, K must be whole tiles."""
    for name, v, tile in (("M", m, BM), ("N", n, BN), ("K", k, BK)):
        if not 0 < v < 2**31 or v % tile:
            _fail(name, v, f"must be a positive multiple of {tile} below 2^31 (whole tiles)")


def launcher(a: DeviceArray, b_nk: DeviceArray, c: DeviceArray, stream=None):
    """Set up C = A · B for the GPU: ``a`` M×K, ``b_nk`` B stored N×K, ``c`` M×N, one dtype.
    Returns ``(run, err)``: ``run()`` launches, ``err`` holds the error word (0 = ok)."""
    (m, k), (n, kb) = a.shape, b_nk.shape
    if kb != k or b_nk.dtype != a.dtype:
        _fail("b_nk", (b_nk.shape, b_nk.dtype.name), f"B stored N×K, K = {k}, dtype {a.dtype.name}")
    if c.shape != (m, n) or c.dtype != a.dtype:
        _fail("c", (c.shape, c.dtype.name), f"must be ({m}, {n}) of {a.dtype.name}")
    check_shapes(m, n, k)
    ck = compile_whole(a.dtype.name)
    # TMA copies a box of 64 columns of K (128 bytes: one swizzle row) × 128 rows of A or 256 of B.
    ta = tma.tensor_map_for_tile(a, SmemTile(BM, BK, a.dtype.name, 128))[0]
    tb = tma.tensor_map_for_tile(b_nk, SmemTile(BN, BK, a.dtype.name, 128))[0]
    err = DeviceArray.from_host(np.zeros(1, np.uint32), stream)
    grid = (m // BM) * (n // BN)                 # one CTA per tile, not persistent
    args = (ta, tb, c, np.int32(m), np.int32(n), np.int32(k), err)

    def run():
        runtime.launch(ck, grid, THREADS, *args, shmem_bytes=SMEM_BYTES, stream=stream)
    return run, err


def verify_whole(m: int, n: int, k: int, dtype: str = "float16", rng=None) -> checks.ElementCheck:
    """Fresh random A and B, C poisoned (NaN), one launch, every element against float64 within a
    bound relative to |A|·|B|. Raises RuntimeError if a wait timed out."""
    rng = rng if rng is not None else np.random.default_rng()
    a = rng.standard_normal((m, k), dtype=np.float32).astype(checks.np_dtype(dtype))
    b = rng.standard_normal((k, n), dtype=np.float32).astype(checks.np_dtype(dtype))
    dc = DeviceArray.poisoned((m, n), a.dtype)
    run, err = launcher(DeviceArray.from_host(a), DeviceArray.from_host(b.T), dc)
    run()
    word = int(err.to_host()[0])
    if word:
        raise RuntimeError(f"hopper_gemm {m}x{n}x{k} {dtype}: {decode_error(word, producer_warpgroup=True)}")
    return checks.compare_elementwise(dc.to_host(), a, b, dtype, f"hopper_gemm {dtype}")
