"""Checking GEMM results against float64: operands, the reference, the comparison.

Shared by every GEMM chapter. Operands are fresh standard-normal values rounded to the input dtype
(never zeros or ±1); outputs are poisoned (NaN) before a run, so an element that was never written
shows as non-finite; the reference is ``float64`` ``A @ B`` of the rounded inputs.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .memory import DeviceArray


def np_dtype(name: str) -> np.dtype:
    """numpy dtype for a course dtype name ("float16", "bfloat16" via ml_dtypes, "float32")."""
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def random_operands(m: int, n: int, k: int, dtype: str, seed: int | None = None):
    """Fresh standard-normal A (M×K) and B (K×N) rounded to ``dtype`` (never zeros or ±1)."""
    rng = np.random.default_rng(seed)
    dt = np_dtype(dtype)
    a = rng.standard_normal((m, k), dtype=np.float32).astype(dt)
    b = rng.standard_normal((k, n), dtype=np.float32).astype(dt)
    return a, b


def square_problem(s: int, dtype: str, seed: int | None = None):
    """An s×s×s problem on the GPU: ``(a, b, da, db, dc)`` — fresh :func:`random_operands` on the
    host, their device copies, and a poisoned s×s output in the input dtype."""
    a, b = random_operands(s, s, s, dtype, seed)
    return a, b, DeviceArray.from_host(a), DeviceArray.from_host(b), DeviceArray.poisoned((s, s), a.dtype)


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float64 ``a @ b`` of the (already rounded) inputs."""
    return a.astype(np.float64) @ b.astype(np.float64)


#: Relative Frobenius error allowed per output dtype: fp32 accumulation is far below these; the
#: output's own rounding (2^-11 fp16, 2^-8 bf16, relative) sets them.
TOLERANCE = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 1e-4}


@dataclasses.dataclass
class Check:
    """Outcome of one correctness check against the float64 reference."""

    shape: tuple[int, int, int]
    dtype: str
    rel_err: float
    tol: float
    unwritten: int

    @property
    def passed(self) -> bool:
        return self.unwritten == 0 and np.isfinite(self.rel_err) and self.rel_err <= self.tol

    def as_dict(self) -> dict:
        return {"shape": list(self.shape), "dtype": self.dtype, "rel_err": self.rel_err,
                "tol": self.tol, "unwritten": self.unwritten, "passed": bool(self.passed)}


def compare(out: np.ndarray, ref: np.ndarray, dtype: str, shape) -> Check:
    """Relative Frobenius error of ``out`` against ``ref``; NaNs (poison left unwritten) counted."""
    o = out.astype(np.float64)
    unwritten = int(np.count_nonzero(~np.isfinite(o)))
    err = float(np.linalg.norm(np.nan_to_num(o, nan=0.0) - ref) / np.linalg.norm(ref)) \
        if unwritten == 0 else float("nan")
    return Check(tuple(shape), dtype, err, TOLERANCE[np.dtype(out.dtype).name
                                                      if np.dtype(out.dtype).name in TOLERANCE
                                                      else dtype], unwritten)


def check_sampled_rows(out: DeviceArray, a: np.ndarray, b: np.ndarray, dtype: str, what: str,
                       rng=None, n_rows: int = 8) -> float:
    """Check a *timed* output on ``n_rows`` random rows against float64 (a full reference of an
    8192³ product on the host would take minutes). Returns the relative error; raises
    :class:`RuntimeError` above :data:`TOLERANCE` (poison left unwritten counts as a huge error)."""
    s = a.shape[0]
    rows = (rng if rng is not None else np.random.default_rng()).choice(s, size=n_rows, replace=False)
    got = out.to_host()[rows].astype(np.float64)
    ref = a[rows].astype(np.float64) @ b.astype(np.float64)
    err = float(np.linalg.norm(np.nan_to_num(got, nan=1e30) - ref) / np.linalg.norm(ref))
    if not err <= TOLERANCE[dtype]:
        raise RuntimeError(f"timed run wrong: {what} {dtype} {s}³ rel_err {err}")
    return err
