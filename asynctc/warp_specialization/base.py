"""Chapter 06's kernel constants and its error, shared by the configuration (:mod:`.config`) and
the variants' rules (:mod:`.variants`): dtypes, swizzle spans, stage range, register limits,
:class:`WarpSpecializationError` (naming field, value and rule) and :func:`_fail`. Re-exported by
:mod:`.config`.
"""

from __future__ import annotations

from typing import Any

from .. import pipeline as P

#: Chapter 06's ladder dtypes (16-bit).
DTYPES = P.DTYPES
#: Every input dtype the kernel takes → its DT define: the 16-bit types and chapter 07's fp8
#: (wgmma m64nNk32 .e4m3 / .e5m2, PTX ISA §9.7.15.5.2).
INPUT_DTYPES = {**P.DTYPES, "float8_e4m3fn": 2, "float8_e5m2": 3}
FP8_DTYPES = ("float8_e4m3fn", "float8_e5m2")
B_MAJORS = P.B_MAJORS
BK = P.BK
#: Bytes of K per k-tile row: one 128-byte swizzle row (64 16-bit or 128 fp8 elements).
ROW_BYTES = 128
#: Swizzle spans (bytes) the kernel builds: 128 (the ladder's), and chapter 07's 64, 32 and 0.
SWIZZLES = (128, 64, 32, 0)
#: Stages a warp-specialized ring may have: a consumer keeps one wgmma group pending on the
#: previous stage while it waits for the next, so one stage would deadlock.
STAGE_RANGE = range(2, 7)
#: Registers per SM (sm_90) and the per-thread limits of setmaxnreg (PTX ISA "setmaxnreg": a
#: multiple of 8 in 24..256).
REGS_PER_SM = P.REGS_PER_SM
SETMAXNREG_RANGE = (24, 256)
#: Registers a consumer needs beside its accumulators (descriptors, addresses, loop state).
REG_OVERHEAD = P.REG_OVERHEAD
#: Shared memory of one consumer's C staging buffers with ``tma_store``: two 64×64 16-bit chunks.
STORE_STAGING = 2 * 64 * 64 * 2
#: Registers the producer's loop needs (one thread: tensor maps' addresses, coordinates, ring
#: counter, trace pointer). Measured with NVRTC 13: at 24 the traced cluster + TMA-store build
#: spills (10 bytes stored, 26 loaded), at 40 no build does.
PRODUCER_MIN_REGS = 40
#: Split-K counts the kernel builds (``SPLIT_K``; 1 = no split, sets no define).
SPLIT_K_RANGE = range(1, 17)


def is_fp8(dtype: str) -> bool:
    return dtype in FP8_DTYPES


def itemsize(dtype: str) -> int:
    """Bytes per element of an input dtype (2 for fp16/bf16, 1 for fp8)."""
    return 1 if is_fp8(dtype) else 2


def default_bk(dtype: str) -> int:
    """K elements per k-tile: one 128-byte swizzle row (64 for 16-bit inputs, 128 for fp8)."""
    return ROW_BYTES // itemsize(dtype) if dtype in INPUT_DTYPES else BK


class WarpSpecializationError(P.PipelineError):
    """A configuration or input the warp-specialized GEMM cannot take; the message names field,
    value and rule. Raised before anything reaches the GPU."""


def _fail(field: str, value: Any, rule: str):
    raise WarpSpecializationError(f"{field}={value!r}: {rule}")


def _launch_regs(threads: int) -> int:
    """Registers per thread ptxas allows at entry with ``__launch_bounds__(threads, 1)``: the SM's
    64K divided by the threads, rounded down to the allocation granule of 8."""
    return min(255, REGS_PER_SM // threads) // 8 * 8


#: Persistent tile orders: group-M raster (no define), Hilbert table (TILE_ORDER 1; tile_order.cuh).
TILE_ORDERS = ("raster", "hilbert")
