"""Timing with CUDA events, and the baselines every benchmark is compared with in the same run.

Protocol of :func:`time_gpu` (following the course's measurement method): ``warmup`` untimed runs;
then ``reps`` timed runs, each preceded by an L2 flush (a fill of a buffer twice the L2 size) outside
the timed region, each bracketed by two timing events recorded on the same stream; the result keeps
every sample and reports the median and the 10th/90th percentiles. Events are cuda.core's
(``Stream.record(options=EventOptions(timing_enabled=True))``; elapsed time in milliseconds).

Baselines: :func:`cublas_gemm` runs cuBLAS through PyTorch, else CuPy, whichever the GPU machine
has; the package itself never needs either. :func:`device_copy` times a device-to-device copy
(``cuMemcpyAsync`` through :meth:`cuda.core.Buffer.copy_from`).
"""

from __future__ import annotations

import dataclasses
import functools
import statistics
from typing import Callable

import numpy as np

from . import runtime


@dataclasses.dataclass
class Timing:
    """Samples in milliseconds; ``median_ms``, ``p10_ms``, ``p90_ms`` summarise them."""

    samples_ms: list[float]

    @property
    def median_ms(self) -> float:
        return float(statistics.median(self.samples_ms))

    @property
    def p10_ms(self) -> float:
        return float(np.percentile(self.samples_ms, 10))

    @property
    def p90_ms(self) -> float:
        return float(np.percentile(self.samples_ms, 90))

    @property
    def spread(self) -> float:
        """(p90 − p10) / median: the run-to-run noise, as a fraction."""
        return (self.p90_ms - self.p10_ms) / self.median_ms if self.median_ms > 0 else float("nan")

    def as_dict(self) -> dict:
        return {"median_ms": self.median_ms, "p10_ms": self.p10_ms, "p90_ms": self.p90_ms,
                "reps": len(self.samples_ms)}


@functools.lru_cache(maxsize=1)
def _flush_buffer():
    info = runtime.device_info()
    nbytes = 2 * (info.l2_bytes if info else 64 << 20)
    return runtime.device().allocate(nbytes, stream=runtime.default_stream())


def flush_l2(stream=None) -> None:
    """Evict the L2 cache by writing a buffer twice its size (asynchronously on ``stream``)."""
    _flush_buffer().fill(0x5A, stream=stream or runtime.default_stream())


def time_gpu(fn: Callable[[], None], *, warmup: int = 3, reps: int = 20, flush: bool = True,
             stream=None) -> Timing:
    """Time ``fn`` (which enqueues GPU work on ``stream``) with CUDA events.

    ``warmup`` untimed calls, then ``reps`` timed calls with an L2 flush before each (outside the
    timed region when ``flush``). Returns :class:`Timing` (milliseconds). Raises
    :class:`~asynctc.core.runtime.NoGPUError` without a GPU.
    """
    from cuda.core import EventOptions
    s = stream or runtime.default_stream()
    opts = EventOptions(timing_enabled=True)
    for _ in range(warmup):
        fn()
    s.sync()
    pairs = []
    for _ in range(reps):
        if flush:
            flush_l2(s)
        e0 = s.record(options=opts)
        fn()
        e1 = s.record(options=opts)
        pairs.append((e0, e1))
    s.sync()
    return Timing([float(e1 - e0) for e0, e1 in pairs])


def sustained(fn: Callable[[], None], *, seconds: float = 1.5, stream=None) -> dict:
    """Run ``fn`` back to back (no L2 flush) for about ``seconds`` while ``nvidia-smi`` samples the
    SM clock and board power every 50 ms; returns ``{"ms", "sm_mhz", "power_w", "samples"}`` (median
    of the samples taken during the loop; ``sm_mhz`` is NaN where ``nvidia-smi`` is missing).

    The clock a kernel runs at depends on the power it draws, and a reading taken *after* a run
    (:func:`asynctc.core.records.nvidia_smi_clocks`) shows the clock the idle GPU returns to, not the
    one it ran at; per-clock efficiencies need the clock sampled during the load.
    """
    import statistics
    import subprocess
    import time
    s = stream or runtime.default_stream()
    fn()
    s.sync()
    try:
        proc = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw",
                                 "--format=csv,noheader,nounits", "-lms", "50"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except OSError:
        proc = None
    time.sleep(0.3)                     # let the sampler start before the load
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            fn()
        s.sync()
        n += 10
    ms = (time.perf_counter() - t0) / n * 1e3
    samples = []
    if proc is not None:
        proc.terminate()
        out = proc.communicate(timeout=10)[0]
        for line in out.strip().splitlines():
            try:
                mhz, w = (float(v) for v in line.split(","))
            except ValueError:
                continue
            samples.append((mhz, w))
        samples = samples[6:-2] if len(samples) > 12 else samples   # drop the edges of the loop
    nan = float("nan")
    return {"ms": ms, "samples": len(samples),
            "sm_mhz": statistics.median(v[0] for v in samples) if samples else nan,
            "power_w": statistics.median(v[1] for v in samples) if samples else nan}


def tflops(flop: float, ms: float) -> float:
    """FLOP over milliseconds, in TFLOP/s."""
    return flop / (ms * 1e-3) / 1e12


def gbps(nbytes: float, ms: float) -> float:
    """Bytes over milliseconds, in GB/s (10^9 bytes per second)."""
    return nbytes / (ms * 1e-3) / 1e9


def gemm_flop(m: int, n: int, k: int) -> int:
    """FLOP of C = A·B for M×K by K×N: 2·M·N·K (one multiply and one add per term)."""
    return 2 * m * n * k


# --------------------------------------------------------------------------------------------------
# Baselines
# --------------------------------------------------------------------------------------------------

def baseline_library() -> str | None:
    """Which library provides cuBLAS here: ``"torch"``, ``"cupy"`` or ``None``."""
    for name in ("torch", "cupy"):
        try:
            mod = __import__(name)
        except Exception:  # noqa: BLE001
            continue
        if name == "torch" and not mod.cuda.is_available():
            continue
        return name
    return None


def library_versions() -> dict[str, str]:
    """Versions of the baseline libraries that import here (for records' provenance)."""
    out = {}
    for name in ("torch", "cupy"):
        try:
            out[name] = __import__(name).__version__
        except Exception:  # noqa: BLE001
            pass
    return out


def _as_lib_tensor(lib: str, arr):
    """Wrap a :class:`~asynctc.core.memory.DeviceArray` (fp16/bf16/fp32/fp8) for torch or cupy, no copy."""
    name = arr.dtype.name
    if lib == "torch":
        import torch
        tdt = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
               "float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}[name]
        raw = torch.as_tensor(_RawView(arr), device="cuda")  # uint8 view of the bytes
        return raw.view(tdt).view(arr.shape)
    import cupy
    if name == "bfloat16" or "float8" in name:
        raise RuntimeError(f"cupy baseline does not support {name}")
    return cupy.ndarray(arr.shape, dtype=arr.dtype,
                        memptr=cupy.cuda.MemoryPointer(
                            cupy.cuda.UnownedMemory(arr.ptr, arr.nbytes, arr), 0))


class _RawView:
    def __init__(self, arr):
        self._arr = arr
        self.__cuda_array_interface__ = {"shape": (arr.nbytes,), "typestr": "|u1",
                                         "data": (arr.ptr, False), "version": 3, "strides": None}


def cublas_gemm(a, b, out, stream=None) -> Callable[[], None]:
    """A callable that enqueues cuBLAS ``out = a @ b`` on ``stream`` (torch, else cupy).

    ``a`` (M×K), ``b`` (K×N), ``out`` (M×N) are :class:`~asynctc.core.memory.DeviceArray` in fp16/bf16;
    the baseline reads the same memory as our kernels. Raises :class:`RuntimeError` when neither
    library is available.
    """
    lib = baseline_library()
    s = stream or runtime.default_stream()
    if lib is None:
        raise RuntimeError("no cuBLAS baseline: neither torch (with CUDA) nor cupy imports here")
    ta, tb, to = (_as_lib_tensor(lib, x) for x in (a, b, out))
    if lib == "torch":
        import torch
        ts = torch.cuda.ExternalStream(int(s.handle))

        def run():
            with torch.cuda.stream(ts):
                torch.matmul(ta, tb, out=to)
        return run
    import cupy
    cs = cupy.cuda.ExternalStream(int(s.handle))

    def run_cp():
        with cs:
            cupy.matmul(ta, tb, out=to)
    return run_cp


def device_copy(dst, src, stream=None) -> Callable[[], None]:
    """A callable that enqueues a device-to-device copy of ``src`` into ``dst`` (same size)."""
    if dst.nbytes != src.nbytes:
        raise ValueError(f"dst.nbytes={dst.nbytes} != src.nbytes={src.nbytes}")
    s = stream or runtime.default_stream()
    return lambda: dst.buffer.copy_from(src.buffer, stream=s)


def peak_tflops(sm_count: int, sm_clock_mhz: float, flop_per_clk_per_sm: int = 4096) -> float:
    """Dense fp16/bf16 Tensor Core peak = SMs × FLOP/clk/SM × clock (sm_90: 4096 FLOP/clk/SM for
    dense fp16/bf16 with fp32 accumulate, NVIDIA H100 architecture whitepaper), in TFLOP/s."""
    return sm_count * flop_per_clk_per_sm * sm_clock_mhz * 1e6 / 1e12


def cublas_sweep_row(da, db, dc, dtype: str, size: int) -> dict:
    """cuBLAS timed on the suite's own operands (``size``³): one row of a GEMM suite's sweep."""
    t = time_gpu(cublas_gemm(da, db, dc), reps=20)
    return {"dtype": dtype, "size": size, "kernel": "cuBLAS", **t.as_dict(),
            "tflops": tflops(gemm_flop(size, size, size), t.median_ms)}
