"""asynctc — NVIDIA's asynchronous Tensor Core programming, taught with real kernels.

Modules: :mod:`runtime` (device detection, modes, NVRTC → cubin, launches), :mod:`memory`
(device arrays), :mod:`sass` (disassembly, instruction-class counts), :mod:`bench` (CUDA-event
timing, baselines), :mod:`records` (measurements with provenance, live or replayed), :mod:`plots`,
:mod:`gemm` (chapter 01 kernels), :mod:`simt` (numba SIMT kernels), :mod:`ceilings` (chapter 00).
"""

__version__ = "0.1.0"

from .runtime import (  # noqa: F401
    AsyncTCError, CompileError, LaunchConfigError, NoGPUError, compile_kernel, device_info, mode,
    runs_live, why_not_live,
)
