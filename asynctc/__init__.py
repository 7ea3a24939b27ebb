"""asynctc — NVIDIA's asynchronous Tensor Core programming, taught with real kernels.

One package (or small module) per chapter's kernel family, named after what it teaches, beside
``kernels/<name>.cu`` and ``tests/test_<name>.py``. A chapter package is split by role — config,
launch, trace, suite (measures, never plots), figures (plots, never measures), exercises — and its
``__init__`` names its files and re-exports its names:

=====  ===========================  ============================================================
ch     package                      kernels
=====  ===========================  ============================================================
00     :mod:`why_async`             (cuBLAS and copies: the ceilings of the GPU)
01     :mod:`simt`                  numba SIMT GEMM (runs in numba's simulator too)
01     :mod:`mma_sync`              ``mma_sync.cu``, ``mma_sync_peak.cu`` (shared tile: ``gemm_tile.cuh``)
02     :mod:`cp_async`              ``cp_async.cu``, ``cp_async_smem_pipeline.cu``
03     :mod:`tma`                   ``tma.cu`` (tensor maps, TMA loads/stores, mbarrier)
04     :mod:`wgmma`                 ``wgmma.cu`` (single tiles, mismatch demo)
04     :mod:`wgmma_peak`            ``wgmma_peak.cu`` (throughput)
05     :mod:`pipeline`              ``pipeline.cu`` + ``ring.cuh`` (model: models/pipeline)
06     :mod:`warp_specialization`   ``warp_specialization.cu`` (the ladder of rungs)
GEMM   :mod:`gemm`                  :func:`matmul`: its config choice, operands, interop, plan
07     :mod:`fp8`, :mod:`swizzle`   FP8 and swizzle builds of ``warp_specialization.cu``
08     :mod:`pitfalls`              ``pitfalls.cu`` (the bug zoo; :func:`asynctc.pitfalls.diagnose`)
09     :mod:`tcgen05`               ``tcgen05.cu``, ``tcgen05_persistent.cu`` (sm_100a; compiled and modelled)
10     :mod:`claims`                (no kernels: the seed article's statements against the records)
=====  ===========================  ============================================================

:func:`matmul` (from :mod:`asynctc.gemm`, built on chapter 06's top rung; its tile choice is
``asynctc/gemm/config.py``) is the GEMM to copy into your own work: fp16/bf16 in, fp32
accumulation, any M, N, K, B given K×N or N×K; numpy arrays, torch tensors, CuPy arrays or any
``__cuda_array_interface__`` / ``__dlpack__`` device array.

Subpackages: :mod:`asynctc.core` (runtime, memory, bench, peak, checks, records, ncu, sass, plots,
notebook, exercises, progress), :mod:`asynctc.models` (pure-Python hardware models) and
:mod:`asynctc.teaching` (course runner, builds, grading, slides, site). :mod:`asynctc.suites`
indexes the record suites; :mod:`asynctc.catalog` lists every kernel file's default build
(``COURSE_KERNELS``). Command line: ``python -m asynctc doctor | record | course | sass | warm |
reset | grade | slides | site | diagnose``.
"""

__version__ = "0.1.0"

from .core.runtime import (  # noqa: F401
    AsyncTCError, CompileError, LaunchConfigError, NoGPUError, PerformanceWarning, compile_kernel,
    device_info, mode, runs_live, why_not_live,
)


def __getattr__(name):
    # asynctc.matmul, the public GEMM, imported on first use: `import asynctc` stays light (the
    # chapter modules load only when a chapter or the GEMM is used)
    if name == "matmul":
        from .gemm import matmul
        globals()["matmul"] = matmul      # later lookups find it without this call (host cost)
        return matmul
    raise AttributeError(f"module 'asynctc' has no attribute {name!r}")


__all__ = ["matmul", "AsyncTCError", "CompileError", "LaunchConfigError", "NoGPUError",
           "PerformanceWarning", "compile_kernel", "device_info", "mode", "runs_live",
           "why_not_live"]
