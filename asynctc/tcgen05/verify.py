"""Chapter 09's tcgen05 GEMM checked against float64: fresh random inputs (never zeros or ±1), a
poisoned output, an elementwise bound relative to |A|·|B| (:func:`compare`, :func:`error_bound`,
:func:`verify_gemm` on the shapes of :func:`check_shapes`)."""

from __future__ import annotations

import dataclasses

import numpy as np

from .config import GemmConfig
from .launch import _np_dtype, require_sm100, run_gemm


@dataclasses.dataclass
class GemmCheck:
    """One check against float64. ``max_ratio``: the largest |C − ref| / (|A|·|B|) over all
    elements (the elementwise error relative to the magnitude the sum could cancel from);
    ``bound``: the allowed value; ``unwritten``: elements left NaN (poison); ``bad``: elements
    above the bound (one is enough to fail)."""

    config: dict
    shape: tuple[int, int, int]
    max_ratio: float
    bound: float
    unwritten: int
    bad: int

    @property
    def passed(self) -> bool:
        return self.unwritten == 0 and self.bad == 0 and np.isfinite(self.max_ratio)

    def as_dict(self) -> dict:
        return {"config": self.config, "shape": list(self.shape), "max_ratio": self.max_ratio,
                "bound": self.bound, "unwritten": self.unwritten, "bad": self.bad,
                "passed": bool(self.passed)}


def error_bound(k: int) -> float:
    """Allowed |C − A·B| / (|A|·|B|) per element for fp32 accumulation of K exact products
    (fp16/bf16 products are exact in fp32): K additions, each off by at most 2⁻²³ relative even
    under round-toward-zero, so K · 2⁻²³ (at least 16 · 2⁻²³)."""
    return max(k, 16) * 2.0 ** -23


def compare(c: np.ndarray, a: np.ndarray, b: np.ndarray, cfg: GemmConfig) -> GemmCheck:
    """Elementwise check of ``c`` against the float64 product of the (rounded) inputs."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = a64 @ b64
    mag = np.abs(a64) @ np.abs(b64)
    c64 = c.astype(np.float64)
    unwritten = int(np.count_nonzero(~np.isfinite(c64)))
    ratio = np.abs(np.nan_to_num(c64, nan=np.inf) - ref) / np.maximum(mag, np.finfo(float).tiny)
    bound = error_bound(a.shape[1])
    return GemmCheck(cfg.as_dict(), (a.shape[0], b.shape[1], a.shape[1]),
                     float(ratio.max()) if unwritten == 0 else float("nan"), bound, unwritten,
                     int(np.count_nonzero(~(ratio <= bound))))


def random_operands(m: int, n: int, k: int, dtype: str, rng=None):
    """Fresh standard-normal A (M×K) and B (K×N) rounded to ``dtype`` (never zeros or ±1)."""
    rng = rng if rng is not None else np.random.default_rng()
    dt = _np_dtype(dtype)
    return (rng.standard_normal((m, k), dtype=np.float32).astype(dt),
            rng.standard_normal((k, n), dtype=np.float32).astype(dt))


def check_shapes(cfg: GemmConfig) -> list[tuple[int, int, int]]:
    """Problem shapes a check of ``cfg`` covers: whole tiles with more k-tiles than stages (the ring
    wraps, phase parity flips), ragged M / N / K edges (TMA zero fill, guarded stores, scalar
    stores when N is not a multiple of 4), and a single k-tile."""
    bm, bn, bk, s = cfg.bm, cfg.bn, cfg.bk, cfg.stages
    return [(2 * bm, 2 * bn, bk * (2 * s + 1)),
            (bm + 40, bn + 24, bk * s + 40),
            (bm - 3, bn + 5, 8),
            (3 * bm + 1, 2 * bn - 32, bk)]


def verify_gemm(cfg: GemmConfig, shape: tuple[int, int, int] | None = None, rng=None) -> GemmCheck:
    """Run ``cfg`` on fresh random inputs of ``shape`` (default: the first of
    :func:`check_shapes`) with a poisoned output and check every element against float64.
    Refuses (:class:`WrongGPUError`) unless the GPU is compute capability 10.0."""
    require_sm100()
    m, n, k = shape or check_shapes(cfg)[0]
    a, b = random_operands(m, n, k, cfg.dtype, rng)
    return compare(run_gemm(a, b, cfg), a, b, cfg)
