"""A SIMT tiled GEMM written in Python with numba-cuda (chapter 01's starting point).

Each thread computes one element of C; a block of ``TILE``×``TILE`` threads stages ``TILE``×``TILE``
tiles of A and B in shared memory, with ``cuda.syncthreads()`` before and after using them. No Tensor
Cores: every multiply-add is an FFMA on one CUDA core. Where this machine has no GPU the same kernel
runs in numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, set here before numba.cuda is imported),
which executes every thread in Python: correct, and slow, so keep the sizes small there. numba.cuda
picks its mode once, at its first import: :func:`simulated` reports the mode of the module actually
imported, and a numba.cuda imported in device mode before this module on a GPU-less machine makes
the kernels raise :class:`SimulatorModeError` with the fix.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings

import numpy as np

from .core import runtime

#: Threads per block side, and the side of the shared-memory tiles.
TILE = 16

cuda = None      # numba.cuda, bound by _kernel() once the simulator choice is made
float32 = None


# Where it is cheap and certain — no loadable libcuda, so no GPU — choose the simulator as soon as
# this module is imported, so that a numba.cuda imported after it (by anyone) is the simulator.
if "numba.cuda" not in sys.modules and not runtime._driver_library_loadable():
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")


class SimulatorModeError(runtime.AsyncTCError):
    """numba.cuda was imported in the wrong mode for this machine (see :func:`numba_cuda`)."""


def _is_simulator(cuda_module) -> bool:
    """Whether a ``numba.cuda`` module object is numba's CUDA simulator: its ``jit`` comes from
    ``numba.cuda.simulator`` (numba.cuda picks the simulator or the device API once, when it is
    first imported, from ``NUMBA_ENABLE_CUDASIM``)."""
    return getattr(getattr(cuda_module, "jit", None), "__module__", "").startswith(
        "numba.cuda.simulator")


@functools.lru_cache(maxsize=1)
def numba_cuda():
    """``numba.cuda``, in the simulator when this machine has no usable GPU.

    If numba.cuda is not imported yet, ``NUMBA_ENABLE_CUDASIM=1`` is set first where there is no
    GPU. If it was imported earlier (before asynctc) in device mode on a machine without a GPU,
    that cannot be undone in this process: raises :class:`SimulatorModeError` with the one-line
    fix instead of letting numba fail later with "CUDA driver library cannot be found".
    """
    want_sim = runtime.device_info() is None
    if want_sim and "numba.cuda" not in sys.modules:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    from numba import cuda
    if want_sim and not _is_simulator(cuda):
        raise SimulatorModeError(
            "numba.cuda was imported (in device mode) before asynctc chose numba's CUDA simulator, "
            "and this machine has no GPU; fix: set NUMBA_ENABLE_CUDASIM=1 before starting Python, "
            "or import asynctc.simt before numba.cuda")
    return cuda


def simulated() -> bool:
    """True when numba kernels run in numba's CUDA simulator (on the CPU).

    Decided from the ``numba.cuda`` module this process actually imported, never from the
    environment alone, so it is right whatever the import order (importing numba.cuda through
    :func:`numba_cuda` if nothing has yet)."""
    mod = sys.modules.get("numba.cuda")
    if mod is None:
        try:
            mod = numba_cuda()
        except SimulatorModeError:
            mod = sys.modules["numba.cuda"]
    return _is_simulator(mod)


@functools.lru_cache(maxsize=1)
def _kernel():
    # ``cuda`` must be a module global of this file: the simulator swaps the name ``cuda`` in the
    # kernel's globals for its own implementation of shared memory, syncthreads and friends.
    global cuda, float32
    cuda = numba_cuda()
    from numba import float32

    @cuda.jit
    def simt_gemm_kernel(A, B, C):
        """C = A @ B, fp32. One thread per output element; TILE×TILE shared-memory tiles."""
        sA = cuda.shared.array((TILE, TILE), float32)
        sB = cuda.shared.array((TILE, TILE), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row = cuda.blockIdx.y * TILE + ty
        col = cuda.blockIdx.x * TILE + tx
        M, K = A.shape
        N = B.shape[1]
        acc = float32(0.0)
        for k0 in range(0, K, TILE):
            # Stage one tile of A and one of B; zero-fill past the edges.
            sA[ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else float32(0.0)
            sB[ty, tx] = B[k0 + ty, col] if k0 + ty < K and col < N else float32(0.0)
            cuda.syncthreads()          # the tiles are complete before anyone reads them
            for kk in range(TILE):
                acc += sA[ty, kk] * sB[kk, tx]
            cuda.syncthreads()          # everyone is done reading before the next tile lands
        if row < M and col < N:
            C[row, col] = acc

    return simt_gemm_kernel


def grid_for(m: int, n: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """(grid, block) for an M×N output: one thread per element, TILE×TILE blocks."""
    return ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE), (TILE, TILE)


def simt_gemm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """fp32 ``a @ b`` on the GPU, or in the simulator without one. Shapes need not be multiples of
    ``TILE``. Raises :class:`ValueError` for non-2-D or mismatched shapes, or a non-float32 dtype."""
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"shapes {a.shape} @ {b.shape}: need (M, K) @ (K, N)")
    if a.dtype != np.float32 or b.dtype != np.float32:
        raise ValueError(f"dtypes {a.dtype}, {b.dtype}: the SIMT kernel is float32")
    cuda = numba_cuda()
    m, n = a.shape[0], b.shape[1]
    grid, block = grid_for(m, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # NumbaPerformanceWarning on small grids
        da, db = cuda.to_device(np.ascontiguousarray(a)), cuda.to_device(np.ascontiguousarray(b))
        dc = cuda.to_device(np.full((m, n), np.nan, np.float32))   # poisoned output
        _kernel()[grid, block](da, db, dc)
        return dc.copy_to_host()


def simt_launcher(a_dev, b_dev, c_dev, stream):
    """A zero-argument callable that enqueues the SIMT kernel on a cuda.core ``stream`` (timing)."""
    cuda = numba_cuda()
    ns = cuda.external_stream(int(stream.handle))
    m, n = c_dev.shape
    grid, block = grid_for(m, n)
    k = _kernel()

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            k[grid, block, ns](a_dev, b_dev, c_dev)
    return run
