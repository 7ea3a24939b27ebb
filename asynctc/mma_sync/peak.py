"""Chapter 01 — the ceiling of mma.sync alone (``kernels/mma_sync_peak.cu``): register-only
mma.sync with no memory traffic (:class:`MmaSyncPeak`), checked exactly and on its timing data, its
SM clock read inside the kernel (:func:`clock_record_mhz`)."""

from __future__ import annotations

import numpy as np

from ..core import runtime
from ..core.checks import (U_ACC, Check, abs_reference, compare, exact_operands, gamma, np_dtype,
                           reference)
from ..core.memory import DeviceArray
from .config import DTYPES


# --------------------------------------------------------------------------------------------------
# The ceiling of mma.sync alone (kernels/mma_sync_peak.cu)
# --------------------------------------------------------------------------------------------------

PEAK_CHAINS = 8
PEAK_ITERS = 4096


def compile_mma_sync_peak(dtype: str = "float16", arch: str = "sm_90a") -> runtime.CompiledKernel:
    """Compile the register-only mma.sync throughput kernel. No GPU needed."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype={dtype!r}: must be one of {sorted(DTYPES)}")
    return runtime.compile_kernel("mma_sync_peak.cu", "mma_sync_peak", arch,
                                  defines=dict(DT=DTYPES[dtype], CHAINS=PEAK_CHAINS,
                                               ITERS=PEAK_ITERS))


class MmaSyncPeak:
    """Set-up for timing mma.sync with no memory traffic: ``blocks`` CTAs of ``warps`` warps.

    ``flop`` per launch = warps·blocks·ITERS·CHAINS·4096; :meth:`launcher` enqueues one launch
    (the timed binary, on uniform(-1, 1) timing data); :meth:`check` runs that same binary on
    exact-arithmetic operands with a poisoned output and requires every warp's every output tile to
    equal ITERS·(A·B) exactly; :meth:`check_timing_data` checks it on the timing data within a
    conservative bound; :meth:`measured_clock_mhz` reads the SM clock the last launch ran at
    (clock64 over %globaltimer, inside the kernel).
    """

    def __init__(self, dtype: str = "float16", blocks: int = 132 * 4, warps: int = 4, seed=None):
        if not 1 <= warps <= 32:
            raise ValueError(f"warps={warps}: must be 1..32")
        if blocks < 1:
            raise ValueError(f"blocks={blocks}: must be ≥ 1")
        self.dtype, self.blocks, self.warps = dtype, blocks, warps
        self.ck = compile_mma_sync_peak(dtype)
        rng = np.random.default_rng(seed)
        dt = np_dtype(dtype)
        self.a = rng.uniform(-1, 1, (16, 16)).astype(np.float32).astype(dt)
        self.b = rng.uniform(-1, 1, (16, 8)).astype(np.float32).astype(dt)
        self.flop = warps * blocks * PEAK_ITERS * PEAK_CHAINS * 2 * 16 * 8 * 16
        self.da = DeviceArray.from_host(self.a)
        self.db = DeviceArray.from_host(self.b)
        self.out = DeviceArray.poisoned((blocks * warps, PEAK_CHAINS, 16, 8), np.float32)
        self.clk = DeviceArray.poisoned((blocks, 4), np.uint64)

    def launcher(self, stream=None, operands=None):
        """One launch of the timed binary; ``operands`` = (da, db) replaces the timing data."""
        da, db = operands or (self.da, self.db)

        def run():
            runtime.launch(self.ck, self.blocks, self.warps * 32, da, db, self.out, self.clk,
                           stream=stream)
        return run

    def measured_clock_mhz(self) -> float:
        """The SM clock during the last launch: median over CTAs of Δclock64 / Δ%globaltimer (MHz).
        Raises :class:`RuntimeError` if no launch wrote the clock record."""
        return clock_record_mhz(self.clk.to_host())

    @staticmethod
    def tolerance() -> float:
        """Elementwise bound of the timed binary's output on the timing data (uniform(-1, 1)),
        relative to ITERS·(|A|·|B|), deliberately conservative: every mma.sync adds 16 products
        to an accumulator that grows to ITERS·(A·B); if each product lost up to one unit in the
        last place of the accumulator when the Tensor Core aligns and truncates them (Fasi et al.
        2021's model), the error is below γ_{17·ITERS}(2^-23) = 8.4e-3 for ITERS = 4096 — still
        far below a wrong element's ~0.3. The measured drift is ~1e-4 (one rounding per mma); the
        exact check (:meth:`check`) is the sharp one."""
        return gamma(17 * PEAK_ITERS, U_ACC)

    def check(self, rng=None) -> Check:
        """The timed binary (ITERS = :data:`PEAK_ITERS`, the timed launch configuration) on
        exact-arithmetic operands (:func:`asynctc.core.checks.exact_operands`: ±1/4, ±1/2, ±3/4,
        so every partial sum of the 4096 accumulations is exact in fp32) with a poisoned output:
        every element of every warp's every chain must equal ITERS·(A·B) exactly (tolerance 0).
        Raises :class:`RuntimeError` if the operands would not be exact (they always are here)."""
        a, b, exact = exact_operands((16, 16), (16, 8), self.dtype, PEAK_ITERS, rng=rng)
        if not exact:
            raise RuntimeError(f"exact operands do not fit fp32 for ITERS={PEAK_ITERS}")
        ops = (DeviceArray.from_host(a), DeviceArray.from_host(b))
        return self._run_and_compare(a, b, 0.0, ops)

    def check_timing_data(self) -> Check:
        """The timed binary on the timing data itself, elementwise within :meth:`tolerance`."""
        return self._run_and_compare(self.a, self.b, self.tolerance(), None)

    def _run_and_compare(self, a, b, tol: float, ops) -> Check:
        self.out.poison()
        self.launcher(operands=ops)()
        got = self.out.to_host().reshape(-1, 16, 8)
        ref = np.broadcast_to(PEAK_ITERS * reference(a, b), got.shape)
        scale = PEAK_ITERS * abs_reference(a, b)
        return compare(got, ref, self.dtype, (16, 8, 16 * PEAK_ITERS), scale=scale, tol=tol)


def clock_record_mhz(c: np.ndarray) -> float:
    """SM clock in MHz from a per-CTA record {c0, c1, t0, t1} (clock64 and %globaltimer before and
    after a loop): median over CTAs of (c1 − c0) / (t1 − t0) × 1000. Raises :class:`RuntimeError`
    when no CTA wrote a usable record (poison left)."""
    c = np.asarray(c, dtype=np.float64).reshape(-1, 4)
    dc, dt = c[:, 1] - c[:, 0], c[:, 3] - c[:, 2]
    ok = (dt > 0) & (dc > 0) & (c[:, 0] < 2.0**63)
    if not ok.any():
        raise RuntimeError("the clock record was not written")
    return float(np.median(dc[ok] / dt[ok]) * 1e3)
