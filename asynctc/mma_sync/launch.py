"""Chapter 01 — compile, run and verify the mma.sync GEMM (``kernels/mma_sync.cu``):
:func:`compile_mma_sync` (and its ablations), :func:`mma_sync_gemm` / :func:`run_gemm` (validate in
Python, then launch), :func:`launcher` (one enqueued launch, for timing loops), :func:`verify_mma_sync`
and :func:`check_tiles` (fresh random inputs, poisoned output, float64 reference)."""

from __future__ import annotations

import numpy as np

from ..core import runtime
from ..core.checks import Check, check_gemm, random_operands
from ..core.memory import DeviceArray
from .config import ABLATIONS, DEFAULT_TILE, DTYPES, MmaSyncTile, _defines, check_shapes


def compile_mma_sync(dtype: str = "float16", tile: MmaSyncTile = DEFAULT_TILE, out_f32: bool = False,
                     arch: str = "sm_90a") -> runtime.CompiledKernel:
    """Compile the mma.sync GEMM for ``dtype`` ("float16" | "bfloat16") and ``tile``. No GPU needed."""
    return runtime.compile_kernel("mma_sync.cu", "gemm_mma_sync", arch,
                                  defines=_defines(dtype, tile, out_f32))


def compile_mma_sync_ablation(ablate: int, dtype: str = "float16", tile: MmaSyncTile = DEFAULT_TILE,
                              arch: str = "sm_90a") -> runtime.CompiledKernel:
    """The chapter-01 kernel with parts of its data path removed, to measure what each part costs:
    ``ablate`` 1 drops the global loads and shared-memory stores after the first k-tile, 2 the
    ``ldmatrix`` after the first k16 step (fragments reused), 3 both (see :data:`ABLATIONS`; 0 is
    the kernel itself). Launch with :func:`launcher`; never use its output."""
    if ablate not in ABLATIONS:
        raise ValueError(f"ablate={ablate!r}: must be one of {sorted(ABLATIONS)}")
    return runtime.compile_kernel("mma_sync.cu", "gemm_mma_sync", arch,
                                  defines={**_defines(dtype, tile, False), "ABLATE": ablate})


def _check_operand(x, what: str, dtype: np.dtype) -> None:
    if x.dtype != dtype:
        raise ValueError(f"{what}.dtype={x.dtype}: expected {dtype} (same as A)")
    if len(x.shape) != 2:
        raise ValueError(f"{what}.shape={x.shape}: must be 2-D")
    if isinstance(x, DeviceArray) and x.ptr % 16:
        raise ValueError(f"{what} address {x.ptr:#x}: must be 16-byte aligned (16-byte vector loads)")


def mma_sync_gemm(a, b, *, tile: MmaSyncTile = DEFAULT_TILE, out: DeviceArray | None = None,
                  out_f32: bool = False, stream=None) -> DeviceArray:
    """``out = a @ b`` with the chapter-01 kernel; returns ``out`` (a :class:`DeviceArray`).

    ``a`` (M×K), ``b`` (K×N): fp16 or bf16 numpy arrays or :class:`DeviceArray` (C-contiguous,
    16-byte aligned). ``out``: M×N in the input dtype (fp32 when ``out_f32``), allocated when None.
    Raises :class:`ValueError` for bad dtypes, shapes or alignment, before anything reaches the GPU;
    :class:`~asynctc.core.runtime.NoGPUError` without an sm_90 GPU.
    """
    return run_gemm(a, b, tile, lambda dt: compile_mma_sync(dt, tile, out_f32), launcher, out,
                    out_f32, stream)


def run_gemm(a, b, tile, compile_fn, launcher_fn, out=None, out_f32=False, stream=None):
    """Shared body of the GEMM entry points (chapters 01–02): validate dtypes, shapes, alignment and
    ``out`` in Python (raising :class:`ValueError` naming the field), compile with
    ``compile_fn(dtype_name)``, upload host operands, poison a new output, launch once."""
    dt = np.dtype(a.dtype)
    if dt.name not in DTYPES:
        raise ValueError(f"a.dtype={dt}: must be float16 or bfloat16")
    _check_operand(a, "a", dt)
    _check_operand(b, "b", dt)
    (m, k), (k2, n) = a.shape, b.shape
    if k2 != k:
        raise ValueError(f"b.shape={b.shape}: b must have K={k} rows to match a.shape={a.shape}")
    tile.validate()
    check_shapes(m, n, k, tile)
    odt = np.dtype(np.float32) if out_f32 else dt
    if out is not None and (out.shape != (m, n) or out.dtype != odt):
        raise ValueError(f"out: shape {out.shape} / dtype {out.dtype}, expected {(m, n)} / {odt}")
    ck = compile_fn(dt.name)
    da = a if isinstance(a, DeviceArray) else DeviceArray.from_host(a, stream)
    db = b if isinstance(b, DeviceArray) else DeviceArray.from_host(b, stream)
    if out is None:
        out = DeviceArray.poisoned((m, n), odt, stream)
    launcher_fn(ck, tile, da, db, out, stream)()
    return out


def launcher(ck: runtime.CompiledKernel, tile: MmaSyncTile, a: DeviceArray, b: DeviceArray,
             out: DeviceArray, stream=None):
    """A zero-argument callable that enqueues one launch (for timing loops); inputs pre-validated."""
    m, k = a.shape
    n = b.shape[1]
    grid = (m // tile.bm) * (n // tile.bn)
    i32 = np.int32
    runtime.check_launch(grid, tile.threads, tile.smem_bytes, ck)

    def run():
        runtime.launch(ck, grid, tile.threads, a, b, out, i32(m), i32(n), i32(k),
                       shmem_bytes=tile.smem_bytes, stream=stream)
    return run


# --------------------------------------------------------------------------------------------------
# Verification
# --------------------------------------------------------------------------------------------------


def check_tiles(verify, tiles, shapes, dtypes=tuple(DTYPES), what: str = "GEMM") -> list[dict]:
    """Run ``verify(m, n, k, dtype=, tile=)`` for every dtype × shape × tile whose shape is a whole
    number of tiles; return the checks as dicts (with the tile name). Raises :class:`RuntimeError`
    at the first failure, so a suite never times a wrong kernel."""
    out = []
    for dtype in dtypes:
        for shp in shapes:
            for tile in tiles:
                try:
                    check_shapes(*shp, tile)
                except ValueError:
                    continue
                c = verify(*shp, dtype=dtype, tile=tile)
                out.append({**c.as_dict(), "tile": tile.name})
                if not c.passed:
                    raise RuntimeError(f"{what} wrong: {c.as_dict()} tile {tile.name}")
    return out


def verify_mma_sync(m: int, n: int, k: int, dtype: str = "float16",
                    tile: MmaSyncTile = DEFAULT_TILE, seed: int | None = None,
                    out_f32: bool = False) -> Check:
    """Run the kernel on fresh random inputs with a poisoned output; compare every element with
    float64 under the elementwise bound relative to |A|·|B| (:func:`asynctc.core.checks.check_gemm`)."""
    a, b = random_operands(m, n, k, dtype, seed)
    out = mma_sync_gemm(a, b, tile=tile, out_f32=out_f32).to_host()
    return check_gemm(out, a, b, dtype)
