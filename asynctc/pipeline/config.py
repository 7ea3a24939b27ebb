"""Chapter 05's kernel configuration: the constants of ``kernels/pipeline.cu``, :class:`RingTile`
(the geometry a ring of wgmma consumers shares, also chapter 06's), :class:`PipelineConfig` and its
validation (:class:`PipelineError` names the field, the value and the rule), the shared-memory
budget (:func:`smem_limit_bytes`), the descriptors the kernel computes, and the shape and operand
rules of a launch (:func:`check_shapes`, :func:`check_operands`; the generic rules live in
:mod:`asynctc.core.checks`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..core import checks, runtime
from ..core.checks import b_shape, np_dtype  # noqa: F401  (re-exported: asynctc.pipeline.np_dtype)
from ..models import descriptors as dsc

SOURCE = "pipeline.cu"
ENTRY = "gemm_pipeline"

#: Input dtype name → the kernel's ``DT`` code.
DTYPES = {"float16": 0, "bfloat16": 1}
#: B's storage: "K" = N×K row-major (K-major, ``B_MAJOR`` 0); "MN" = K×N row-major (N-major, 1).
B_MAJORS = ("K", "MN")
#: The tiles the course builds: (BM, BN, consumer warpgroups).
TILES = ((128, 128, 1), (128, 128, 2), (128, 256, 2), (256, 128, 2))
BK = 64
STAGE_RANGE = range(1, 7)
#: fp32 accumulators a thread may hold (of the 255 registers sm_90 allows per thread at
#: 1 CTA/SM, the rest is left for descriptors, addresses and the loop).
ACC_BUDGET = 128
#: Shared memory the kernel declares statically (the 2·STAGES mbarriers, padded by the compiler
#: to 1024 bytes because the dynamic array is 1024-aligned; ptxas reports it).
STATIC_SMEM = 1024
#: Shared memory of one SM on sm_90 (228 KiB) and what the driver reserves per CTA (1 KiB,
#: cudaDevAttrReservedSharedMemoryPerBlock): two CTAs per SM need 2 × (their shared memory + 1 KiB)
#: ≤ 228 KiB (CUDA C++ Programming Guide, "Compute Capabilities" table).
SMEM_PER_SM = 228 * 1024
RESERVED_SMEM_PER_CTA = 1024
#: Alignment slack of the dynamic shared memory: stage bases sit on 1024 bytes (the 128-byte
#: swizzle pattern's repeat, PTX ISA §9.7.15.5.1.2.2 base offset 0).
ALIGN_SLACK = 1024
#: Trace geometry (must match the kernel's TRACE_CTAS / TRACE_EVENTS defaults, passed explicitly).
TRACE_CTAS = 4
TRACE_EVENTS = 2048
TRACE_HEADER = 4
#: Event kinds, in the kernel's numbering (enum TraceKind).
EVENT_KINDS = ("tma_issued", "empty_begin", "empty_end", "full_begin", "full_end", "mma_issue",
               "wait_done", "release", "loop_end", "store_end",
               "order_begin", "order_end")   # 10, 11: chapter 06's ping-pong order wait
#: The error word's barrier field (kernels/ring.cuh: WAIT_FULL / WAIT_EMPTY).
WAIT_TAGS = {1: "full", 2: "empty", 3: "order"}   # 3: chapter 06's ping-pong (WAIT_ORDER)
#: Who waits on which barrier of the ring (chapters 05 and 06): the consumers on full, the producer
#: on empty.
WAIT_ROLES = {1: "a consumer", 2: "the producer", 3: "a ping-pong consumer waiting its turn"}
#: Bits of the error word a timed-out ring wait records (kernels/ring.cuh ring_wait_tag), as
#: (shift, width): the error code, the barrier, the stage, the waiting warpgroup, the k-tile waited
#: for (of its tile; modulo 2**12).
ERROR_FIELDS = {"code": (0, 8), "barrier": (8, 4), "stage": (12, 4), "warpgroup": (16, 4),
                "k_tile": (20, 12)}


class PipelineError(runtime.AsyncTCError, ValueError):
    """A configuration or input the pipelined GEMM cannot take; the message names field, value and
    rule. Raised before anything reaches the GPU."""


def _fail(field: str, value: Any, rule: str):
    raise PipelineError(f"{field}={value!r}: {rule}")


def smem_limit_bytes() -> int:
    """Dynamic + static shared memory one CTA may opt in to: the device's
    ``max_shared_memory_per_block_optin`` (:class:`asynctc.core.runtime.DeviceInfo`), else sm_90's
    227 KiB (CUDA C++ Programming Guide, "Compute Capabilities" table)."""
    info = runtime.device_info()
    return info.smem_optin_bytes if info else 227 * 1024


# --------------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------------

#: 64K 32-bit registers per SM (sm_90); registers the main loop needs beside the accumulators
#: (descriptors, addresses, loop state: ptxas asked for 154 with 128 accumulators on NVRTC 13.0).
REGS_PER_SM = 65536
REG_OVERHEAD = 26


class RingTile:
    """The geometry a ring of wgmma consumers shares (chapter 05's ring and chapter 06's ladder):
    needs ``bm``, ``bn``, ``bk`` (elements) and ``consumers`` (warpgroups)."""

    @property
    def atoms(self) -> int:
        """m64 wgmma rows per consumer warpgroup."""
        return self.bm // self.consumers // 64

    @property
    def accumulators(self) -> int:
        """fp32 accumulator registers per thread."""
        return self.atoms * self.bn // 2

    @property
    def stage_bytes(self) -> int:
        """Bytes of one stage: an A tile (bm × bk) and a B tile (bn × bk), 2-byte elements."""
        return (self.bm + self.bn) * self.bk * 2


@dataclasses.dataclass(frozen=True)
class PipelineConfig(RingTile):
    """The compile-time knobs of ``kernels/pipeline.cu``.

    ``dtype`` "float16" | "bfloat16"; CTA tile ``bm`` × ``bn`` × ``bk`` (bk = 64: one 128-byte
    swizzled row of K per box row); ``stages`` 1..6 shared-memory stages in the ring;
    ``consumers`` 1 or 2 warpgroups, each computing ``bm / consumers`` rows of C (every warpgroup
    computes; one of its threads also issues the TMA loads); ``b_major`` "K" (B stored N×K) or
    "MN" (B stored K×N); ``wait_pending`` the ``wgmma.wait_group`` argument in the loop (0 or 1;
    1 keeps one group in flight while the next k-tile is waited for, and needs ``stages`` ≥ 2;
    default: 1, or 0 for one stage);
    ``trace`` records events (:func:`decode_trace`); ``out_dtype`` "float32" or the input dtype;
    ``group_m`` CTA rows per raster group (L2 reuse); ``ctas_per_sm`` 1 or 2: the kernel's
    ``__launch_bounds__`` minimum of resident CTAs (2 lets one CTA's prologue and epilogue overlap
    another's main loop, if two fit in the SM's shared memory and registers); ``l2_promotion``
    0/64/128/256: the tensor maps' L2 fetch granularity in bytes (host side only, same cubin).

    Registers: each thread holds (bm / consumers / 64) · bn / 2 fp32 accumulators, at most
    :data:`ACC_BUDGET`. Shared memory: ``stages`` · (bm + bn) · 128 bytes + alignment slack +
    static barriers ≤ :func:`smem_limit_bytes`. :meth:`validate` raises :class:`PipelineError`.
    """

    dtype: str = "float16"
    bm: int = 128
    bn: int = 256
    bk: int = BK
    stages: int = 4
    consumers: int = 2
    b_major: str = "K"
    wait_pending: int | None = None
    trace: bool = False
    out_dtype: str = "float32"
    group_m: int = 8
    ctas_per_sm: int = 1
    l2_promotion: int = 0

    def __post_init__(self):
        if self.wait_pending is None:
            object.__setattr__(self, "wait_pending", 1 if self.stages != 1 else 0)
        self.validate()

    def validate(self, smem_limit: int | None = None) -> None:
        """Check every rule; raise :class:`PipelineError` naming the field, value and rule."""
        def is_int(v):
            return isinstance(v, (int, np.integer)) and not isinstance(v, bool)
        if self.dtype not in DTYPES:
            _fail("dtype", self.dtype, f"must be one of {sorted(DTYPES)} (wgmma .f16/.bf16 with the "
                                       "B transpose bit, PTX ISA §9.7.15.5.2)")
        if self.out_dtype not in ("float32", self.dtype):
            _fail("out_dtype", self.out_dtype, f"must be 'float32' or the input dtype {self.dtype!r}")
        if self.bk != BK:
            _fail("bk", self.bk, "must be 64: one k-tile row is one 128-byte swizzle row")
        for f in ("bm", "bn", "stages", "consumers", "wait_pending", "group_m", "ctas_per_sm"):
            if not is_int(getattr(self, f)):
                _fail(f, getattr(self, f), "must be an integer")
        if self.consumers not in (1, 2):
            _fail("consumers", self.consumers, "1 or 2 consumer warpgroups")
        if self.bm not in (64, 128, 256):
            _fail("bm", self.bm, "64, 128 or 256 (whole m64 wgmma rows; one TMA box has ≤ 256 rows)")
        if self.bm % (64 * self.consumers):
            _fail("bm", self.bm, f"with consumers={self.consumers} each warpgroup needs whole m64 "
                                 f"rows: bm must be a multiple of {64 * self.consumers}")
        if self.bn not in (64, 128, 256):
            _fail("bn", self.bn, "64, 128 or 256 (one wgmma m64nNk16 covers the CTA's N)")
        if self.accumulators > ACC_BUDGET:
            _fail("bn", self.bn, f"tile {self.bm}x{self.bn} with consumers={self.consumers}: each "
                                 f"thread would hold {self.accumulators} fp32 accumulators "
                                 f"({self.bm // self.consumers // 64} m64 rows × {self.bn}/2), "
                                 f"above the budget of {ACC_BUDGET} registers; use more consumers "
                                 "or a smaller tile")
        if self.b_major not in B_MAJORS:
            _fail("b_major", self.b_major, f"must be one of {B_MAJORS}")
        if self.stages not in STAGE_RANGE:
            _fail("stages", self.stages, "1..6 stages in the ring")
        if self.wait_pending not in (0, 1):
            _fail("wait_pending", self.wait_pending, "the loop's wgmma.wait_group argument is 0 or 1")
        if self.wait_pending == 1 and self.stages == 1:
            _fail("wait_pending", 1, "needs stages ≥ 2: with one stage the pending wgmma group still "
                                     "reads the only stage, so it cannot be refilled")
        if self.group_m < 1:
            _fail("group_m", self.group_m, "must be ≥ 1")
        if self.l2_promotion not in (0, 64, 128, 256):
            _fail("l2_promotion", self.l2_promotion, "0 (none), 64, 128 or 256 bytes "
                                                     "(CUtensorMapL2promotion)")
        if self.ctas_per_sm not in (1, 2):
            _fail("ctas_per_sm", self.ctas_per_sm, "1 or 2 resident CTAs per SM")
        limit = smem_limit if smem_limit is not None else smem_limit_bytes()
        if self.smem_total > limit:
            _fail("stages", self.stages, f"{self.stages} stages × {self.stage_bytes} bytes "
                                         f"(+{ALIGN_SLACK} alignment, +{STATIC_SMEM} static) = "
                                         f"{self.smem_total} bytes of shared memory; a CTA may opt "
                                         f"in to at most {limit} (at most "
                                         f"{self.max_stages(limit)} stages for this tile)")
        acc = (self.bm // (64 * self.consumers)) * (self.bn // 2)
        cap = min(255, REGS_PER_SM // (self.ctas_per_sm * self.threads))
        if acc + REG_OVERHEAD > cap:
            _fail("ctas_per_sm", self.ctas_per_sm, f"{self.ctas_per_sm} CTA(s) of {self.threads} "
                                                   f"threads leave {cap} registers per thread; the "
                                                   f"{acc} fp32 accumulators per thread plus the "
                                                   f"loop's ~{REG_OVERHEAD} do not fit (ptxas: "
                                                   f"'Insufficient registers')")
        per_sm = self.ctas_per_sm * (self.smem_total + RESERVED_SMEM_PER_CTA)
        if self.ctas_per_sm > 1 and per_sm > SMEM_PER_SM:
            _fail("ctas_per_sm", self.ctas_per_sm, f"{self.ctas_per_sm} CTAs × ({self.smem_total} + "
                                                   f"{RESERVED_SMEM_PER_CTA} reserved) = {per_sm} "
                                                   f"bytes, above the {SMEM_PER_SM} bytes of shared "
                                                   f"memory of one SM; use fewer stages")

    # -- geometry ---------------------------------------------------------------------------------
    @property
    def threads(self) -> int:
        return 128 * self.consumers

    @property
    def shmem_bytes(self) -> int:
        """Dynamic shared memory of one launch."""
        return ALIGN_SLACK + self.stages * self.stage_bytes

    @property
    def smem_total(self) -> int:
        return self.shmem_bytes + STATIC_SMEM

    def max_stages(self, limit: int | None = None) -> int:
        limit = limit if limit is not None else smem_limit_bytes()
        return (limit - ALIGN_SLACK - STATIC_SMEM) // self.stage_bytes

    @property
    def effective_wait_pending(self) -> int:
        return 0 if self.stages == 1 else self.wait_pending

    def schedule(self, k_tiles: int):
        """Which k-tile the kernel loads when, for ``k_tiles`` = K / 64: the
        :class:`asynctc.models.pipeline.RingSchedule` of pipeline.cu's loop (prologue of
        min(S, T) k-tiles; iteration k releases r = k − P and refills r + S), the same object the
        ring model simulates (one source for both)."""
        from ..models.pipeline.schedule import ring_schedule
        return ring_schedule(self.stages, self.effective_wait_pending, k_tiles)

    # -- the layout model the kernel uses ---------------------------------------------------------
    @property
    def a_tile(self) -> dsc.OperandTile:
        """One m64 atom of A's stage tile (K-major, 128-byte swizzle): what one wgmma reads."""
        return dsc.OperandTile(64, self.bk, self.dtype, "K", 128)

    @property
    def b_tile(self) -> dsc.OperandTile:
        """B's stage tile (N = bn, K = 64; K- or MN-major, 128-byte swizzle)."""
        return dsc.OperandTile(self.bn, self.bk, self.dtype, self.b_major, 128)

    @property
    def a_box(self):
        """The TMA box of A (an :class:`asynctc.models.layout.SmemTile`): bm rows × 64 columns."""
        from ..models.layout import SmemTile
        return SmemTile(self.bm, self.bk, self.dtype, 128)

    @property
    def b_box(self):
        """The TMA box of B: bn rows × 64 (K-major) or 64 K-rows × 64 columns (MN-major)."""
        return self.b_tile.smem_tile()

    @property
    def b_boxes(self) -> int:
        return self.b_tile.n_boxes

    def descriptor_templates(self) -> tuple[int, int]:
        """(desc_a0, desc_b0): the wgmma descriptors of A's first atom and of B, k-step 0, for a
        stage at shared address 0 (:mod:`asynctc.models.descriptors`). The kernel adds byte offsets
        (stage base, atom, k-step) >> 4 to the start-address field."""
        return (self.a_tile.descriptor(0, 0).encode(), self.b_tile.descriptor(0, 0).encode())

    @property
    def kstep_bytes(self) -> tuple[int, int]:
        """Bytes from one k16 step to the next in A's and B's tile (descriptor start address)."""
        return self.a_tile.step_offset(1), self.b_tile.step_offset(1)

    @property
    def defines(self) -> dict:
        ak, bkk = self.kstep_bytes
        d = dict(DT=DTYPES[self.dtype], BM=self.bm, BN=self.bn, BK=self.bk, STAGES=self.stages,
                 CONSUMERS=self.consumers, B_MAJOR=int(self.b_major == "MN"),
                 WAIT_PENDING=self.wait_pending, TRACE=int(self.trace),
                 OUT_F32=int(self.out_dtype == "float32"), GROUP_M=self.group_m,
                 MIN_BLOCKS=self.ctas_per_sm,
                 A_KSTEP_BYTES=ak, B_KSTEP_BYTES=bkk, B_BOX_BYTES=self.b_tile.box_pitch)
        if self.trace:
            d.update(TRACE_CTAS=TRACE_CTAS, TRACE_EVENTS=TRACE_EVENTS)
        return d

    @property
    def tile_name(self) -> str:
        return (f"{self.bm}x{self.bn}x{self.bk}/c{self.consumers}" +
                ("/2cta" if self.ctas_per_sm == 2 else ""))

    def label(self) -> str:
        out = "" if self.out_dtype == "float32" else f" out:{self.out_dtype}"
        l2 = f" l2:{self.l2_promotion}B" if self.l2_promotion else ""
        return (f"{self.dtype} {self.tile_name} s{self.stages} B:{self.b_major} "
                f"wait{self.wait_pending}{' trace' if self.trace else ''}{out}{l2}")

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def replace(self, **kw) -> "PipelineConfig":
        return dataclasses.replace(self, **kw)


def device_descriptor(cfg: PipelineConfig, operand: str, base: int, stage: int, k_step: int,
                      warpgroup: int = 0, atom: int = 0) -> int:
    """The descriptor the kernel computes for ``operand`` ("A" or "B"): the host template plus
    (base + stage · stage_bytes [+ A: warpgroup rows + atom · 64 rows | B: A-tile bytes] + k_step ·
    k-step bytes) >> 4 — the same arithmetic as ``wgmma_desc_advance`` in the kernel. Tested against
    :meth:`asynctc.models.descriptors.OperandTile.descriptor` at the same address."""
    da0, db0 = cfg.descriptor_templates()
    ak, bkk = cfg.kstep_bytes
    stage_base = base + stage * cfg.stage_bytes
    if operand == "A":
        off = stage_base + (warpgroup * (cfg.bm // cfg.consumers) + 64 * atom) * 128 + k_step * ak
        return da0 + (off >> 4)
    off = stage_base + cfg.bm * 128 + k_step * bkk
    return db0 + (off >> 4)


# --------------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------------

def check_shapes(m: int, n: int, k: int, cfg: PipelineConfig) -> None:
    """Raise :class:`PipelineError` unless M, N, K are positive multiples of the tile (bm, bn, 64):
    this kernel has no edge handling (general shapes come in chapter 06)."""
    for name, v, t in (("M", m, cfg.bm), ("N", n, cfg.bn), ("K", k, cfg.bk)):
        if v <= 0 or v % t:
            _fail(name, v, f"tile {cfg.tile_name} needs {name} to be a positive multiple of {t}")
        if v >= 2**31:
            _fail(name, v, "must be < 2^31 (32-bit coordinates)")



def operand_dims(a, b, dt, dtype_name: str, b_major: str) -> tuple[int, int, int]:
    """:func:`asynctc.core.checks.operand_dims` (dtype, 2-D, C-contiguous, 16-byte aligned, K
    agreeing), raising :class:`PipelineError`."""
    return checks.operand_dims(a, b, dt, dtype_name, b_major, error=PipelineError)


def check_out(out, m: int, n: int, odt) -> None:
    """:func:`asynctc.core.checks.check_out` (None, or M×N of ``odt`` 16-byte aligned), raising
    :class:`PipelineError`."""
    checks.check_out(out, m, n, odt, error=PipelineError)


def check_operands(a, b, cfg: PipelineConfig, out=None) -> tuple[int, int, int]:
    """Validate ``a`` (M×K), ``b`` (stored per ``cfg.b_major``) and ``out``; return (M, N, K).
    Rules: :func:`operand_dims` with ``cfg.dtype``; shapes multiples of the tile
    (:func:`check_shapes`); ``out`` per :func:`check_out`."""
    m, n, k = operand_dims(a, b, np_dtype(cfg.dtype), cfg.dtype, cfg.b_major)
    check_shapes(m, n, k, cfg)
    check_out(out, m, n, np_dtype(cfg.out_dtype))
    return m, n, k

