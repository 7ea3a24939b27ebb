"""The course's kernels, one default configuration per kernel file, by name.

:data:`COURSE_KERNELS` maps a short name to a zero-argument function that compiles that kernel
(for sm_90a, no GPU needed) and returns its :class:`~asynctc.core.runtime.CompiledKernel`. It is the
list ``python -m asynctc sass <kernel>`` offers and the list the installed-wheel test compiles (so
every header a kernel includes must ship with the package). Every ``kernels/*.cu`` file of the
course appears here once; new kernel families add their entry.
"""

from __future__ import annotations

from typing import Callable

from .core import runtime


def _probe() -> runtime.CompiledKernel:
    return runtime.compile_kernel("probe.cu", "probe", "sm_90a")


def _mma_sync() -> runtime.CompiledKernel:
    from . import mma_sync
    return mma_sync.compile_mma_sync()


def _mma_sync_peak() -> runtime.CompiledKernel:
    from . import mma_sync
    return mma_sync.compile_mma_sync_peak()


def _cp_async() -> runtime.CompiledKernel:
    from . import cp_async
    return cp_async.compile_cp_async()


def _cp_async_smem_pipeline() -> runtime.CompiledKernel:
    from . import cp_async
    return runtime.compile_kernel("cp_async_smem_pipeline.cu", "smem_copy_async", "sm_90a",
                                  defines=dict(B=cp_async.SMEM_BLOCKS[0], ITERS=cp_async.SMEM_ITERS))


def _tma() -> runtime.CompiledKernel:
    from . import tma
    return tma.compile_tma("tma_load_dump", RANK=2)


def _wgmma() -> runtime.CompiledKernel:
    from . import wgmma
    return wgmma.compile_tile(wgmma.TileConfig())


def _wgmma_peak() -> runtime.CompiledKernel:
    from . import wgmma_peak
    return wgmma_peak.compile_peak()


#: name → zero-argument function returning the kernel's default :class:`CompiledKernel` (sm_90a).
#: The name is the kernel file's stem (``kernels/<name>.cu``).
COURSE_KERNELS: dict[str, Callable[[], runtime.CompiledKernel]] = {
    "probe": _probe,
    "mma_sync": _mma_sync,
    "mma_sync_peak": _mma_sync_peak,
    "cp_async": _cp_async,
    "cp_async_smem_pipeline": _cp_async_smem_pipeline,
    "tma": _tma,
    "wgmma": _wgmma,
    "wgmma_peak": _wgmma_peak,
}

#: Kernel files that are not course kernels (compiled only by tests).
TEST_ONLY_SOURCES = ("diagnostics.cu",)


def compile_all() -> dict[str, runtime.CompiledKernel]:
    """Compile every entry of :data:`COURSE_KERNELS`; {name: CompiledKernel}."""
    return {name: fn() for name, fn in COURSE_KERNELS.items()}
