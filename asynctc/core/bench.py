"""Timing with CUDA events, the one definition of Tensor Core peak, and the baselines every
benchmark is compared with in the same run.

Protocol of :func:`time_gpu`: ``warmup`` untimed calls (their host enqueue time is measured); one
launch timed alone, to choose the launches per sample (enough that a sample lasts at least
``min_sample_ms``, 1 ms by default: a single launch of a 10 µs kernel between two events is mostly
event and launch jitter); then ``reps`` samples. Each sample is: an L2 flush (a fill of a buffer
twice the L2 size) when the flush mode asks for one, a *delay kernel* (``kernels/bench_clock.cu``)
that keeps the GPU busy long enough for the host to enqueue the whole sample, a start event, the
``n`` launches back to back, an end event, and (``clock=True``) a 0.2 ms clock probe that reads the
SM clock right after the launches; with ``clock=True`` a few untimed samples follow with a clock
probe *in flight* beside the launches (below). A sample's value is (end − start) / n. The result keeps every
sample and reports the median and the 10th/90th percentiles. Events are cuda.core's
(``Stream.record(options=EventOptions(timing_enabled=True))``; elapsed time in milliseconds).

Why a delay kernel and not a CUDA graph: cuda.core 1.2 has stream capture (``GraphBuilder``), but
the cuBLAS baseline runs through PyTorch or CuPy on a wrapped stream, whose capture we cannot check
without a GPU here; the delay kernel gives the same property (no host gap between timed launches)
for any callable, and a sample whose host enqueue outlasted the delay is counted in
``host_gaps``.

Flush modes (``flush=``): ``"sample"`` (``True``; the default) flushes L2 once before each sample,
so the first launch of a sample finds a cold L2 and the others find what the previous launch left —
right for GEMMs (operands are re-read many times per launch; from 4096³ fp16 they exceed L2 anyway)
and for copies far larger than L2; ``"launch"`` flushes before every launch and times one launch per
sample — for a kernel whose working set fits in L2 and whose cold-L2 cost is the point (then the
sample is one launch; report its spread); ``"none"`` (``False``) never flushes (register-only peak
kernels).

Peak (:data:`DATASHEET`, :func:`peak_at_clock`): every "fraction of peak" in the course divides by
SMs × dense FLOP/clk/SM × an SM clock measured on the GPU — never by the 1980 MHz attribute or a
post-run ``nvidia-smi`` reading — and prints the datasheet fraction (989.4 TFLOP/s at 1830 MHz)
beside it. The row's ``sm_mhz_source`` says which of three clocks it is (:func:`clock_kind`),
:func:`peak_text` prints that with every fraction, and :func:`clock_caveat` gives the sentence the
third needs beside it:

* **in-kernel** — the kernel reads ``clock64`` against ``%globaltimer`` itself (the peak kernels of
  chapters 01 and 04): the clock *during* the timed work.
* **in flight** — for a kernel that cannot clock itself (cuBLAS, the course's GEMMs),
  :func:`time_gpu` runs a few more (untimed) samples of the same launches with a one-warp clock
  probe on a second, high-priority stream: it starts beside the delay kernel (so it holds an SM
  slot before a persistent grid fills every SM), waits until 20 µs after the delay's end and
  measures over 0.6 of a sample; a probe counts only when its window lies inside the sample
  (:func:`in_flight_clocks`). All SMs share one graphics clock, so the probe reads the clock the
  launches ran at. Checked on the H200 (2026-11-30, ``tools/gpu_clock_inflight.py``;
  :data:`INFLIGHT_CHECK`): beside the wgmma peak kernel, which clocks itself, the in-flight probe
  read 1654 and 1641 MHz against the kernel's own 1658 and 1643 MHz.
* **probed after the sample** — the same probe launched right *after* a timed sample (kept in the
  record as ``sm_mhz_after``, and the row's clock only when no in-flight probe counted; records
  made before the in-flight probe carry only this clock, as ``sm_mhz``). In the
  same check it read 1964–1980 MHz after every workload: the clock recovers within microseconds
  once the Tensor Cores stop, so a probe after the sample reads an **upper bound** on the clock
  during it, and a fraction of peak at that clock a **lower bound**. (``nvidia-smi`` sampled
  during 1.5 s of back-to-back cuBLAS 8192³ read 1440 MHz; the in-flight probe 1535.)

Baselines: :func:`cublas_gemm` runs cuBLAS through PyTorch, else CuPy, whichever the GPU machine
has; the package itself never needs either. :func:`device_copy` times a device-to-device copy
(``cuMemcpyAsync`` through :meth:`cuda.core.Buffer.copy_from`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import statistics
import sys
import time
from typing import Callable

import numpy as np

from . import runtime

# Peak: one definition, in core/peak.py (pure arithmetic; re-exported here)
from .peak import (  # noqa: F401
    DATASHEET, FLOP_PER_CLK_PER_SM, peak_tflops, peak_at_clock, measured_clock_mhz, clock_kind,
    CLOCK_KINDS, INFLIGHT_CHECK, rows_clock_kind, clock_caveat, clock_text, peak_text,
    peak_short, peak_legend,
)


# --------------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Timing:
    """Per-launch samples in milliseconds (each the mean of ``launches_per_sample`` back-to-back
    launches); ``median_ms``, ``p10_ms``, ``p90_ms`` summarise them. ``sm_mhz_samples``: the SM
    clock of the samples (MHz, :func:`time_gpu` with ``clock=True``: the in-flight probes', else
    the after-sample probes'; empty without ``clock=True``).
    ``host_gaps``: samples whose host enqueue took longer than the delay kernel (the GPU may have
    waited for the host inside them)."""

    samples_ms: list[float]
    launches_per_sample: int = 1
    flush: str = "sample"
    sm_mhz_samples: list[float] = dataclasses.field(default_factory=list)
    host_gaps: int = 0
    delay_ms: float = 0.0
    #: the clock probed right after each timed sample (kept beside the in-flight clock)
    sm_mhz_after_samples: list[float] = dataclasses.field(default_factory=list)
    #: :data:`CLOCK_INFLIGHT_SOURCE` when ``sm_mhz_samples`` come from in-flight probes, else
    #: :data:`CLOCK_PROBE_SOURCE`
    sm_mhz_source: str = ""
    #: in-flight probes whose window lay inside their sample, of those launched
    clock_in_flight: tuple[int, int] = (0, 0)

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

    @property
    def sm_mhz(self) -> float:
        """Median SM clock of the samples (NaN without ``clock=True``)."""
        return float(statistics.median(self.sm_mhz_samples)) if self.sm_mhz_samples else float("nan")

    def as_dict(self) -> dict:
        """The record fields: ``median_ms``, ``p10_ms``, ``p90_ms``, ``reps`` (as before), plus
        ``spread``, ``launches_per_sample``, ``flush``, ``host_gaps`` and, when the clock was
        probed, ``sm_mhz`` (median), ``sm_mhz_p10``, ``sm_mhz_p90``, ``sm_mhz_source``."""
        d = {"median_ms": self.median_ms, "p10_ms": self.p10_ms, "p90_ms": self.p90_ms,
             "reps": len(self.samples_ms), "spread": self.spread,
             "launches_per_sample": self.launches_per_sample, "flush": self.flush,
             "host_gaps": self.host_gaps}
        if self.sm_mhz_samples:
            d.update(sm_mhz=self.sm_mhz, sm_mhz_p10=float(np.percentile(self.sm_mhz_samples, 10)),
                     sm_mhz_p90=float(np.percentile(self.sm_mhz_samples, 90)),
                     sm_mhz_source=self.sm_mhz_source or CLOCK_PROBE_SOURCE)
        if self.sm_mhz_after_samples:
            d["sm_mhz_after"] = float(statistics.median(self.sm_mhz_after_samples))
        if self.clock_in_flight[1]:
            d["clock_in_flight"] = f"{self.clock_in_flight[0]}/{self.clock_in_flight[1]}"
        return d


#: What ``sm_mhz`` means in a row timed with ``clock=True`` when no in-flight probe lay inside its
#: sample (the caveat: module docstring, "probed after the sample").
CLOCK_PROBE_SOURCE = "clock probe after each sample (clock64/%globaltimer over 0.2 ms)"
#: What ``sm_mhz`` means in a row timed with ``clock=True``: see the module docstring, "in flight".
CLOCK_INFLIGHT_SOURCE = ("clock probe in flight (second stream, during the launches; "
                         "clock64/%globaltimer)")
#: Length of the clock probe after each sample, ns.
PROBE_NS = 200_000
#: How long after the delay kernel's end an in-flight probe starts measuring, ns.
PROBE_MARGIN_NS = 20_000
FLUSH_MODES = ("sample", "launch", "none")


def row_spread(row: dict) -> float:
    """(p90 − p10) / median of a record row (its ``spread``, or from ``p10_ms``/``p90_ms``/
    ``median_ms`` for records written before the field existed); NaN when neither is there."""
    if "spread" in row:
        return row["spread"]
    try:
        return (row["p90_ms"] - row["p10_ms"]) / row["median_ms"]
    except (KeyError, ZeroDivisionError, TypeError):
        return float("nan")


def launches_per_sample(single_ms: float, min_sample_ms: float = 1.0, max_launches: int = 256) -> int:
    """How many back-to-back launches make one sample: ceil(``min_sample_ms`` / ``single_ms``),
    at least 1 and at most ``max_launches`` (``max_launches`` when ``single_ms`` is 0 or NaN)."""
    if max_launches < 1:
        raise ValueError(f"max_launches={max_launches}: must be ≥ 1")
    if not single_ms > 0:
        return max_launches
    return int(min(max_launches, max(1, math.ceil(min_sample_ms / single_ms))))


def delay_ns(host_ms_per_launch: float, n: int) -> int:
    """Length of the delay kernel before a sample of ``n`` launches: twice the host's measured
    enqueue time of ``n`` launches plus 50 µs, between 0.1 ms and 50 ms."""
    ms = 2.0 * n * max(host_ms_per_launch, 0.0) + 0.05
    return int(1e6 * min(50.0, max(0.1, ms)))


def _flush_mode(flush) -> str:
    if flush is True:
        return "sample"
    if flush is False or flush is None:
        return "none"
    if flush not in FLUSH_MODES:
        raise ValueError(f"flush={flush!r}: must be True/False or one of {FLUSH_MODES}")
    return flush


@functools.lru_cache(maxsize=1)
def _flush_buffer():
    info = runtime.device_info()
    nbytes = 2 * (info.l2_bytes if info else 64 << 20)
    return runtime.device().allocate(nbytes, stream=runtime.default_stream())


def flush_l2(stream=None) -> None:
    """Evict the L2 cache by writing a buffer twice its size (asynchronously on ``stream``)."""
    _flush_buffer().fill(0x5A, stream=stream or runtime.default_stream())


class _CudaTimer:
    """The GPU side of :func:`time_gpu`: events, L2 flush, the delay/clock kernel. A test passes
    an object with the same methods (``event``, ``elapsed_ms``, ``sync``, ``flush``, ``spin``,
    ``clock_mhz``) to exercise the sampling logic without a GPU."""

    def __init__(self, stream, slots: int):
        from cuda.core import EventOptions

        from .memory import DeviceArray
        self.s = stream
        self.opts = EventOptions(timing_enabled=True)
        self.ck = runtime.compile_kernel("bench_clock.cu", "clock_probe", runtime.device_info().arch)
        self.rec = DeviceArray.poisoned((slots, 4), np.uint64, stream)
        self._side = None

    def side_stream(self):
        """A second stream of the highest priority (CUDA clamps an out-of-range priority to the
        greatest one): its probe CTA is scheduled before waiting CTAs of the timed kernel."""
        if self._side is None:
            from cuda.core import StreamOptions
            try:
                self._side = runtime.device().create_stream(options=StreamOptions(priority=-5))
            except Exception:  # noqa: BLE001 - a priority the driver refuses: default priority
                self._side = runtime.device().create_stream()
        return self._side

    def event(self):
        return self.s.record(options=self.opts)

    def elapsed_ms(self, e0, e1) -> float:
        return float(e1 - e0)

    def sync(self) -> None:
        self.s.sync()

    def flush(self) -> None:
        flush_l2(self.s)

    def spin(self, slot: int, ns: int) -> None:
        runtime.launch(self.ck, 1, 32, self.rec, np.uint32(slot), np.uint64(ns), np.uint64(0),
                       stream=self.s)

    def probe_in_flight(self, slot: int, ns: int, skip_ns: int) -> None:
        """The clock probe on the side stream, ordered after everything enqueued so far on the
        timing stream — call it right before the delay kernel is enqueued: it starts beside the
        delay, waits ``skip_ns`` (the delay's length and a margin) and then measures ``ns``."""
        side = self.side_stream()
        side.wait(self.s.record())
        runtime.launch(self.ck, 1, 32, self.rec, np.uint32(slot), np.uint64(ns),
                       np.uint64(skip_ns), stream=side)

    def records(self, slots) -> list:
        """(c0, c1, t0, t1) of each probe/delay slot (clock64 cycles, %globaltimer ns), None for a
        slot never written (poison)."""
        c = self.rec.to_host()[list(slots)]
        return [None if int(r[0]) >= 2**63 else tuple(int(x) for x in r) for r in c]

    def clock_mhz(self, slots) -> list[float]:
        out = []
        for r in self.records(slots):
            if r and r[3] > r[2] and r[1] > r[0]:
                out.append((r[1] - r[0]) / (r[3] - r[2]) * 1e3)
        return out


def time_gpu(fn: Callable[[], None], *, warmup: int = 3, reps: int = 20, flush=True,
             stream=None, min_sample_ms: float = 1.0, max_launches: int = 256,
             launches: int | None = None, clock: bool = False, clock_reps: int = 5,
             timer=None) -> Timing:
    """Time ``fn`` (which enqueues GPU work on ``stream``) with CUDA events, many launches per sample.

    ``warmup`` untimed calls; one launch timed alone to choose ``n`` = :func:`launches_per_sample`
    (so a sample lasts ≥ ``min_sample_ms``; ``launches`` fixes ``n``; ``flush="launch"`` forces 1);
    then ``reps`` samples of ``n`` back-to-back launches behind a delay kernel (see the module
    docstring; ``flush``: ``True``/``"sample"``, ``"launch"``, ``False``/``"none"``). With
    ``clock=True`` the SM clock is measured *in flight*: ``clock_reps`` further (untimed) samples of
    the same launches run with a clock probe on a second stream (:func:`in_flight_clocks`), and it
    is also probed right after each timed sample (``sm_mhz_after``; an upper bound). See the module
    docstring.
    Returns :class:`Timing` (per-launch milliseconds). Raises :class:`ValueError` for a bad
    ``flush``/``reps``/``launches`` and :class:`~asynctc.core.runtime.NoGPUError` without a GPU.
    """
    mode = _flush_mode(flush)
    if reps < 1:
        raise ValueError(f"reps={reps}: must be ≥ 1")
    if launches is not None and launches < 1:
        raise ValueError(f"launches={launches}: must be ≥ 1")
    if clock_reps < 0:
        raise ValueError(f"clock_reps={clock_reps}: must be ≥ 0")
    tm = timer or _CudaTimer(stream or runtime.default_stream(), 2 * reps + 2 + 2 * clock_reps)
    host = []
    for _ in range(warmup):
        h0 = time.perf_counter()
        fn()
        host.append((time.perf_counter() - h0) * 1e3)
    host_ms = float(statistics.median(host)) if host else 0.05    # host enqueue time per launch
    tm.sync()
    if mode == "launch":
        n = 1
    elif launches is not None:
        n = launches
    else:
        if mode == "sample":
            tm.flush()
        tm.spin(2 * reps, delay_ns(host_ms, 1))
        e0 = tm.event()
        fn()
        e1 = tm.event()
        tm.sync()
        n = launches_per_sample(tm.elapsed_ms(e0, e1), min_sample_ms, max_launches)
    d_ns = delay_ns(host_ms, n)
    marks = []
    for i in range(reps):
        if mode != "none":
            tm.flush()
        tm.spin(2 * i, d_ns)
        h = time.perf_counter()
        e0 = tm.event()
        for _ in range(n):
            fn()
        e1 = tm.event()
        marks.append((e0, e1, (time.perf_counter() - h) * 1e9))
        if clock:
            tm.spin(2 * i + 1, PROBE_NS)
    tm.sync()
    samples = [tm.elapsed_ms(e0, e1) / n for e0, e1, _ in marks]
    gaps = sum(1 for *_, host_ns in marks if host_ns > d_ns)
    after = tm.clock_mhz([2 * i + 1 for i in range(reps)]) if clock else []
    inflight: list[float] = []
    if clock and clock_reps:
        # untimed samples of the same n launches with a probe in flight on a second stream
        sample_ns = float(statistics.median(samples)) * n * 1e6
        probe_ns = int(min(50e6, max(PROBE_NS, 0.6 * sample_ns)))
        base = 2 * reps + 2
        for j in range(clock_reps):
            if mode != "none":
                tm.flush()
            # the probe starts beside the delay kernel (a slot is free then, even for a timed
            # kernel whose persistent grid later fills every SM) and measures after it
            tm.probe_in_flight(base + 2 * j + 1, probe_ns, d_ns + PROBE_MARGIN_NS)
            tm.spin(base + 2 * j, d_ns)
            for _ in range(n):
                fn()
        tm.sync()
        inflight = in_flight_clocks(tm.records(range(base, base + 2 * clock_reps)), sample_ns)
    src = CLOCK_INFLIGHT_SOURCE if inflight else (CLOCK_PROBE_SOURCE if after else "")
    return Timing(samples, launches_per_sample=n, flush=mode, sm_mhz_samples=inflight or after,
                  host_gaps=gaps, delay_ms=d_ns / 1e6, sm_mhz_after_samples=after,
                  sm_mhz_source=src, clock_in_flight=(len(inflight), clock_reps if clock else 0))


def in_flight_clocks(recs, sample_ns: float) -> list[float]:
    """SM clocks (MHz) of the in-flight probes whose window lay inside their sample.

    ``recs``: (c0, c1, t0, t1) or None per slot, in pairs (the delay kernel before the sample, the
    probe launched on the second stream when the delay ended); ``sample_ns``: the length of a
    timed sample. A probe counts when it started measuring within 0.2 · sample after the delay's
    end (not before it, and not left waiting for the timed kernel's CTAs to retire) and ended
    before the sample did (+5 %): then every cycle it counted was a cycle of the timed launches."""
    out = []
    for j in range(0, len(recs) - 1, 2):
        d, p = recs[j], recs[j + 1]
        if not d or not p or not (p[3] > p[2] and p[1] > p[0]):
            continue
        lag = p[2] - d[3]
        if 0 <= lag <= 0.2 * sample_ns and p[3] - d[3] <= 1.05 * sample_ns:
            out.append((p[1] - p[0]) / (p[3] - p[2]) * 1e3)
    return out


def sustained(fn: Callable[[], None], *, seconds: float = 1.5, stream=None) -> dict:
    """Run ``fn`` back to back (no L2 flush) for about ``seconds`` while ``nvidia-smi`` samples the
    SM clock and board power every 50 ms; returns ``{"ms", "sm_mhz", "power_w", "samples"}`` (median
    of the samples taken during the loop; ``sm_mhz`` is NaN where ``nvidia-smi`` is missing).

    The clock a kernel runs at depends on the power it draws, and a reading taken *after* a run
    (:func:`asynctc.core.records.nvidia_smi_clocks`) shows the clock the idle GPU returns to, not the
    one it ran at; per-clock efficiencies need the clock sampled during the load.
    """
    import subprocess
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


def round_ratio(rows, name: str, base: str) -> float | None:
    """Two kernels timed in the same rounds: the median over rounds of ``name``'s TFLOP/s ÷
    ``base``'s in that round (``rows``: dicts with "kernel", "round", "tflops"); None when ``base``
    has no row."""
    if not any(r["kernel"] == base for r in rows):
        return None
    tf = {(r["kernel"], r["round"]): r["tflops"] for r in rows}
    return float(np.median([tf[name, k] / tf[base, k] for k in sorted({r["round"] for r in rows})]))


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


#: torch's switches that let cuBLAS reduce split-K partial sums in 16 bits (torch's default: True
#: for both); the fp16/bf16 baseline pins them to False, so cuBLAS accumulates in fp32 as our
#: kernels do (torch docs, "Reduced Precision Reduction in FP16 GEMMs" / "... BF16 GEMMs").
REDUCED_PRECISION_FLAGS = ("allow_fp16_reduced_precision_reduction",
                           "allow_bf16_reduced_precision_reduction")


def pin_fp32_reduction() -> dict:
    """Set torch's cuBLAS reduced-precision-reduction switches (:data:`REDUCED_PRECISION_FLAGS`)
    to False, process-wide; returns their values before (empty when torch is not imported)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {}
    before = {}
    for f in REDUCED_PRECISION_FLAGS:
        if hasattr(torch.backends.cuda.matmul, f):
            before[f] = bool(getattr(torch.backends.cuda.matmul, f))
            setattr(torch.backends.cuda.matmul, f, False)
    return before


def reduction_settings() -> dict:
    """The current values of :data:`REDUCED_PRECISION_FLAGS` (``"torch.backends.cuda.matmul.<flag>"``
    → bool), for a record's provenance; empty when torch is not imported."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {}
    return {f"torch.backends.cuda.matmul.{f}": bool(getattr(torch.backends.cuda.matmul, f))
            for f in REDUCED_PRECISION_FLAGS if hasattr(torch.backends.cuda.matmul, f)}


def cublas_gemm(a, b, out, stream=None) -> Callable[[], None]:
    """A callable that enqueues cuBLAS ``out = a @ b`` on ``stream`` (torch, else cupy).

    ``a`` (M×K), ``b`` (K×N), ``out`` (M×N) are :class:`~asynctc.core.memory.DeviceArray` in fp16/bf16;
    the baseline reads the same memory as our kernels. Through torch, the reduced-precision
    (16-bit) split-K reduction torch allows by default is switched off first
    (:func:`pin_fp32_reduction`, process-wide; records carry the setting in their provenance,
    ``cublas_reduction``). Raises :class:`RuntimeError` when neither library is available.
    """
    lib = baseline_library()
    s = stream or runtime.default_stream()
    if lib is None:
        raise RuntimeError("no cuBLAS baseline: neither torch (with CUDA) nor cupy imports here")
    ta, tb, to = (_as_lib_tensor(lib, x) for x in (a, b, out))
    if lib == "torch":
        import torch
        pin_fp32_reduction()
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


def rotating(fns) -> Callable[[], None]:
    """A callable that runs ``fns[0]``, then ``fns[1]``, … cyclically, one per call: launches of a
    small-working-set kernel on rotating buffers, so that a sample of many launches does not
    re-read what the previous launch left in L2."""
    fns = list(fns)
    if not fns:
        raise ValueError("fns: must not be empty")
    state = {"i": 0}

    def run():
        fns[state["i"] % len(fns)]()
        state["i"] += 1
    return run


def device_copy(dst, src, stream=None) -> Callable[[], None]:
    """A callable that enqueues a device-to-device copy of ``src`` into ``dst`` (same size)."""
    if dst.nbytes != src.nbytes:
        raise ValueError(f"dst.nbytes={dst.nbytes} != src.nbytes={src.nbytes}")
    s = stream or runtime.default_stream()
    return lambda: dst.buffer.copy_from(src.buffer, stream=s)


def cublas_sweep_row(da, db, dc, dtype: str, size: int) -> dict:
    """cuBLAS timed on the suite's own operands (``size``³): one row of a GEMM suite's sweep, with
    the SM clock measured by :func:`time_gpu` (``sm_mhz`` and ``sm_mhz_source``, for
    :func:`peak_at_clock`; ``sm_mhz_after`` beside it)."""
    t = time_gpu(cublas_gemm(da, db, dc), reps=20, clock=True)
    return {"dtype": dtype, "size": size, "kernel": "cuBLAS", **t.as_dict(),
            "tflops": tflops(gemm_flop(size, size, size), t.median_ms)}


#: Two runs of one configuration closer than this are one speed ("within noise", the 03 worklog's word
#: for 0.2 %): ch02.stages counts a stage as helping only when it is faster by more.
NOISE = 0.01


def fastest(tf: dict) -> list:
    """The keys of ``tf`` (speed by configuration) within :data:`NOISE` of the best, fastest first."""
    top = max(tf.values())
    return sorted((k for k in tf if tf[k] >= (1 - NOISE) * top), key=lambda k: -tf[k])
