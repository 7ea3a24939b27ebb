"""asynctc — NVIDIA's asynchronous Tensor Core programming, taught with real kernels.

One module per chapter's kernel family, named after what it teaches; each holds compile / run /
verify and its ``record`` suite, beside ``kernels/<name>.cu`` and ``tests/test_<name>.py``:

=====  =======================  ================================================================
ch     module                   kernels
=====  =======================  ================================================================
00     :mod:`why_async`         (cuBLAS and copies: the ceilings of the GPU)
01     :mod:`simt`              numba SIMT GEMM (runs in numba's simulator too)
01     :mod:`mma_sync`          ``mma_sync.cu``, ``mma_sync_peak.cu`` (shared tile: ``gemm_tile.cuh``)
02     :mod:`cp_async`          ``cp_async.cu``, ``cp_async_smem_pipeline.cu``
03     :mod:`tma`               ``tma.cu`` (tensor maps, TMA loads/stores, mbarrier)
04     :mod:`wgmma`             ``wgmma.cu`` (single tiles, mismatch demo)
04     :mod:`wgmma_peak`        ``wgmma_peak.cu`` (throughput)
05     :mod:`pipeline`          ``pipeline.cu`` (TMA + mbarrier ring + wgmma; model: models/pipeline)
06     :mod:`warp_specialization` ``warp_specialization.cu`` (the ladder; :func:`matmul`)
07     :mod:`fp8`               FP8 builds of ``warp_specialization.cu``, quantisation, accumulation
09     :mod:`tcgen05`           ``tcgen05.cu`` (sm_100a; compiled and modelled on the CPU)
=====  =======================  ================================================================

:func:`matmul` (from :mod:`asynctc.warp_specialization`, chapter 06's top rung) is the GEMM to
copy into your own work: fp16/bf16 in, fp32 accumulation, any M, N, K, B given K×N or N×K.

Subpackages: :mod:`asynctc.core` (runtime, memory, bench, checks, records, sass, plots, notebook,
exercises) and :mod:`asynctc.models` (pure-Python hardware models: fragments, layout, tensor_map,
descriptors). :mod:`asynctc.suites` indexes the record suites; :mod:`asynctc.catalog` lists every
kernel file's default build (``COURSE_KERNELS``).
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
