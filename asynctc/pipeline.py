"""Chapter 05's kernel: a pipelined TMA + mbarrier + wgmma GEMM — compile, run, verify, trace, measure.

``kernels/pipeline.cu`` computes ``C = A · B`` (A M×K, B K×N, fp16 or bf16; C M×N fp32, or the
input dtype) with a ring of ``stages`` shared-memory stages. One thread issues TMA
(``cp.async.bulk.tensor``) loads of 64-wide k-tiles into the ring; every consumer warpgroup waits on
the stage's *full* mbarrier, runs ``wgmma.mma_async`` on it and, once ``wgmma.wait_group`` says its
wgmmas are complete, arrives on the stage's *empty* mbarrier so the stage can be refilled. The
protocol (phase parity, prologue, release order, why the producer cannot deadlock) is written out
at the top of the kernel source (:func:`source`).

The three verbs, as in every kernel family of the course:

* :func:`compile_pipeline` — NVRTC → cubin for sm_90a (works without a GPU);
* :func:`run_pipeline` — validate in Python, then launch (needs an sm_90 GPU);
* :func:`verify_pipeline` — fresh random inputs, poisoned output, float64 reference, an
  elementwise bound relative to ``|A|·|B|`` (:func:`compare_elementwise`).

:class:`PipelineConfig` holds the compile-time knobs (dtype, tile BM×BN×64, stages, consumer
warpgroups, B's major-ness, the ``wgmma.wait_group`` argument, tracing, output dtype) and checks
them (:class:`PipelineError` names the field, the value and the rule). With ``trace=True`` the
kernel records timestamped events; :func:`decode_trace` turns them into spans and
:func:`trace_metrics` into "math in flight" and "waiting on full barriers" fractions.

``SUITES["pipeline"]`` (``python -m asynctc record pipeline``, or ``tools/gpu_ch05.py --record``)
checks every configuration, then sweeps the ring depth against cuBLAS timed in the same run.

PTX ISA references: "cp.async.bulk.tensor" (TMA loads), "mbarrier" (init, arrive, expect_tx,
try_wait.parity, phase completion, tx-count), "fence.mbarrier_init", §9.7.15.5.2 wgmma.mma_async,
§9.7.15.5.1.2 shared-memory matrix layouts and descriptor, §9.7.15.7 wgmma fence / commit_group /
wait_group; tensor maps: CUDA driver API cuTensorMapEncodeTiled.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import numpy as np

from .models import descriptors as dsc
from .core import checks, runtime
from .models import pipeline as _model
from .core.memory import DeviceArray

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
               "wait_done", "release", "loop_end", "store_end")
#: The error word's barrier field (kernels/ring.cuh: WAIT_FULL / WAIT_EMPTY).
WAIT_TAGS = {1: "full", 2: "empty"}
#: Who waits on which barrier of the ring (chapters 05 and 06): the consumers on full, the producer
#: on empty.
WAIT_ROLES = {1: "a consumer", 2: "the producer"}
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


def np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


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
        from .models.layout import SmemTile
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


def source() -> str:
    """The kernel's CUDA C++ source (for the notebook)."""
    return (runtime.KERNEL_DIR / SOURCE).read_text()


def compile_pipeline(cfg: PipelineConfig, arch: str = "sm_90a") -> runtime.CompiledKernel:
    """Compile ``kernels/pipeline.cu`` for ``cfg`` (no GPU needed). Raises
    :class:`~asynctc.core.runtime.CompileError` with NVRTC's log."""
    cfg.validate()
    return runtime.compile_kernel(SOURCE, ENTRY, arch, defines=cfg.defines)


def compile_job(cfg: PipelineConfig) -> tuple[str, str, dict]:
    """(source, entry, defines) for :func:`asynctc.core.runtime.precompile`."""
    return (SOURCE, ENTRY, cfg.defines)


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


def b_shape(k: int, n: int, b_major: str) -> tuple[int, int]:
    """How B (K×N mathematically) is stored: (N, K) for K-major, (K, N) for MN-major."""
    return (n, k) if b_major == "K" else (k, n)


def operand_dims(a, b, dt, dtype_name: str, b_major: str) -> tuple[int, int, int]:
    """(M, N, K) of ``a`` (M×K) and ``b`` (stored N×K for ``b_major`` "K", K×N for "MN"), after the
    rules every TMA-fed GEMM of the course shares: dtype ``dt`` (named ``dtype_name``), 2-D,
    C-contiguous host arrays, 16-byte aligned device addresses (cuTensorMapEncodeTiled
    globalAddress), K agreeing. Raises :class:`PipelineError`."""
    for what, x in (("a", a), ("b", b)):
        if np.dtype(x.dtype) != dt:
            _fail(f"{what}.dtype", str(np.dtype(x.dtype)), f"must be {dtype_name} (cfg.dtype)")
        if len(x.shape) != 2:
            _fail(f"{what}.shape", tuple(x.shape), "must be 2-D")
        if isinstance(x, DeviceArray) and x.ptr % 16:
            _fail(f"{what} address", hex(x.ptr), "must be 16-byte aligned (TMA globalAddress)")
        if isinstance(x, np.ndarray) and not x.flags.c_contiguous:
            _fail(f"{what}", "non-contiguous", "must be C-contiguous (row-major)")
    m, k = a.shape
    n, k2 = b.shape if b_major == "K" else b.shape[::-1]
    if k2 != k:
        layout = "N×K (b_major='K')" if b_major == "K" else "K×N (b_major='MN')"
        _fail("b.shape", tuple(b.shape), f"B stored {layout} must have K={k} to match "
                                         f"a.shape={tuple(a.shape)}")
    return m, n, k


def check_out(out, m: int, n: int, odt) -> None:
    """``out`` is None or M×N of dtype ``odt`` at a 16-byte aligned address; raises
    :class:`PipelineError`."""
    if out is None:
        return
    if tuple(out.shape) != (m, n) or np.dtype(out.dtype) != odt:
        _fail("out", (tuple(out.shape), str(out.dtype)), f"must be {(m, n)} {odt}")
    if getattr(out, "ptr", 0) % 16:
        _fail("out address", hex(out.ptr), "must be 16-byte aligned")


def check_operands(a, b, cfg: PipelineConfig, out=None) -> tuple[int, int, int]:
    """Validate ``a`` (M×K), ``b`` (stored per ``cfg.b_major``) and ``out``; return (M, N, K).
    Rules: :func:`operand_dims` with ``cfg.dtype``; shapes multiples of the tile
    (:func:`check_shapes`); ``out`` per :func:`check_out`."""
    m, n, k = operand_dims(a, b, np_dtype(cfg.dtype), cfg.dtype, cfg.b_major)
    check_shapes(m, n, k, cfg)
    check_out(out, m, n, np_dtype(cfg.out_dtype))
    return m, n, k


# --------------------------------------------------------------------------------------------------
# Launch
# --------------------------------------------------------------------------------------------------

def trace_words(cfg: PipelineConfig) -> int:
    """u64 words of the trace buffer: TRACE_CTAS × consumers slots of header + records."""
    return TRACE_CTAS * cfg.consumers * (TRACE_HEADER + 2 * TRACE_EVENTS)


def error_fields(word: int) -> dict:
    """The error word of chapter 05's or 06's kernel split into :data:`ERROR_FIELDS`."""
    return {k: (int(word) >> shift) & ((1 << width) - 1) for k, (shift, width) in ERROR_FIELDS.items()}


def decode_error(word: int) -> str:
    """The kernel's error word as text: which mbarrier wait timed out — the barrier, its stage, the
    k-tile waited for (of its tile, modulo 4096) and the warpgroup that waited (kernels/ring.cuh)."""
    if word == 0:
        return "ok"
    f = error_fields(word)
    what = WAIT_TAGS.get(f["barrier"], f"tag {f['barrier']}")
    who = WAIT_ROLES.get(f["barrier"], "a thread")
    return (f"mbarrier wait timed out (code {f['code']}) on the {what} barrier of stage {f['stage']}"
            f" for k-tile {f['k_tile']}, waited on by warpgroup {f['warpgroup']} ({who}) "
            f"(error word {word:#x})")


class PipelineGemm:
    """One problem set up for launching: ``cfg``, device operands ``a`` (M×K) and ``b`` (stored per
    ``cfg.b_major``), output ``out`` (M×N, ``cfg.out_dtype``), tensor maps, error word and (with
    ``cfg.trace``) trace buffer. :meth:`launcher` returns a zero-argument callable for timing
    loops; :meth:`check_error` raises :class:`RuntimeError` when a wait timed out."""

    def __init__(self, cfg: PipelineConfig, a: DeviceArray, b: DeviceArray,
                 out: DeviceArray | None = None, stream=None):
        from . import tma
        self.cfg, self.a, self.b, self.stream = cfg, a, b, stream
        self.m, self.n, self.k = check_operands(a, b, cfg, out)
        self.ck = compile_pipeline(cfg)
        self.out = out if out is not None else DeviceArray.poisoned((self.m, self.n),
                                                                    np_dtype(cfg.out_dtype), stream)
        self.ta = tma.tensor_map_for_tile(a, cfg.a_box, l2_promotion=cfg.l2_promotion)[0]
        self.tb = tma.tensor_map_for_tile(b, cfg.b_box, l2_promotion=cfg.l2_promotion)[0]
        self.err = DeviceArray.from_host(np.zeros(1, np.uint32), stream)
        self.trace = (DeviceArray.from_host(np.zeros(trace_words(cfg), np.uint64), stream)
                      if cfg.trace else None)
        self.grid = (self.m // cfg.bm) * (self.n // cfg.bn)
        self.desc_a0, self.desc_b0 = cfg.descriptor_templates()
        runtime.check_launch(self.grid, cfg.threads, cfg.shmem_bytes, self.ck)

    @property
    def k_tiles(self) -> int:
        return self.k // self.cfg.bk

    @property
    def flop(self) -> int:
        return 2 * self.m * self.n * self.k

    def launcher(self):
        i32, u64 = np.int32, np.uint64
        args = (self.ta, self.tb, self.out, i32(self.m), i32(self.n), i32(self.k),
                u64(self.desc_a0), u64(self.desc_b0), self.err,
                self.trace if self.trace is not None else u64(0))

        def run():
            runtime.launch(self.ck, self.grid, self.cfg.threads, *args,
                           shmem_bytes=self.cfg.shmem_bytes, stream=self.stream)
        return run

    def resident_ctas(self) -> int | None:
        """CTAs of this kernel that fit on one SM at once (the driver's occupancy query,
        cuOccupancyMaxActiveBlocksPerMultiprocessor, for this block size and dynamic shared
        memory; call after a launch, which set the kernel's dynamic shared-memory limit). None
        where cuda.core cannot ask. Two resident CTAs overlap one's prologue and epilogue with
        the other's main loop — a 128×128 tile with ≤ 3 stages gets that even with
        ``ctas_per_sm=1``."""
        try:
            k = self.ck.kernel()
            n = k.occupancy.max_active_blocks_per_multiprocessor(self.cfg.threads,
                                                                 self.cfg.shmem_bytes)
            return int(n)
        except Exception:  # noqa: BLE001 - an informative extra, never a failure
            return None

    def check_error(self) -> None:
        word = int(self.err.to_host(self.stream)[0])
        if word:
            raise RuntimeError(f"pipelined GEMM {self.cfg.label()} {self.m}x{self.n}x{self.k}: "
                               f"{decode_error(word)}; the kernel gave up instead of hanging")

    def trace_buffer(self) -> np.ndarray:
        if self.trace is None:
            raise PipelineError("cfg.trace=False: this launch records no trace")
        return self.trace.to_host(self.stream)


#: The deliberate protocol errors of :func:`run_broken` (the kernel's ``BREAK`` define).
BREAKS = {1: "expect_tx announces 16 bytes more than the TMA boxes deliver: the full barrier's "
             "phase never completes",
          2: "the last consumer warpgroup never arrives on the empty barrier: the producer's "
             "refill waits forever"}


def run_broken(kind: int, cfg: PipelineConfig | None = None, rng=None) -> str:
    """Run a deliberately broken variant (:data:`BREAKS`) on a small problem and return the error
    it ends with — the bounded waits turn a would-be hang into an error word within about
    ``ASYNCTC_WAIT_MAX_NS`` (2 s). Raises :class:`RuntimeError` if the variant did *not* fail (then
    the bounded-wait path is untested) and :class:`PipelineError` for an unknown ``kind``. The only
    place the ``BREAK`` define is ever set."""
    if kind not in BREAKS:
        _fail("kind", kind, f"one of {sorted(BREAKS)}")
    cfg = cfg or PipelineConfig(bm=128, bn=128, consumers=2, stages=2)
    m, n, k = 2 * cfg.bm, cfg.bn, 8 * cfg.bk
    a, b, bs = random_operands(m, n, k, cfg, rng)
    ck = runtime.compile_kernel(SOURCE, ENTRY, "sm_90a", defines={**cfg.defines, "BREAK": kind})
    g = PipelineGemm(cfg, DeviceArray.from_host(a), DeviceArray.from_host(bs))
    g.ck = ck
    g.launcher()()
    try:
        g.check_error()
    except RuntimeError as e:
        return str(e)
    raise RuntimeError(f"broken variant {kind} ({BREAKS[kind]}) finished without an error")


def run_pipeline(a, b, cfg: PipelineConfig, out: DeviceArray | None = None, stream=None,
                 ) -> PipelineGemm:
    """``out = a @ B`` with the pipelined kernel; returns the :class:`PipelineGemm` (its ``out``
    holds C, its :meth:`~PipelineGemm.trace_buffer` the trace when ``cfg.trace``).

    ``a``: M×K; ``b``: B stored N×K (``cfg.b_major`` "K") or K×N ("MN"); numpy arrays or
    :class:`DeviceArray` of ``cfg.dtype``, C-contiguous, 16-byte aligned. ``out``: M×N of
    ``cfg.out_dtype`` (poisoned and allocated when None). Raises :class:`PipelineError` /
    :class:`~asynctc.tma.TensorMapError` before launching, :class:`RuntimeError` when an mbarrier
    wait timed out, :class:`~asynctc.core.runtime.NoGPUError` without an sm_90 GPU.
    """
    check_operands(a, b, cfg, out)
    da = a if isinstance(a, DeviceArray) else DeviceArray.from_host(a, stream)
    db = b if isinstance(b, DeviceArray) else DeviceArray.from_host(b, stream)
    g = PipelineGemm(cfg, da, db, out, stream)
    g.launcher()()
    g.check_error()
    return g


# --------------------------------------------------------------------------------------------------
# Verification
# --------------------------------------------------------------------------------------------------

def random_operands(m: int, n: int, k: int, cfg: PipelineConfig, rng=None):
    """Fresh standard-normal A (M×K) and B (K×N), rounded to ``cfg.dtype`` (never zeros or ±1).
    Returns ``(a, b, b_stored)`` with ``b_stored`` laid out per ``cfg.b_major``."""
    rng = rng if rng is not None else np.random.default_rng()
    dt = np_dtype(cfg.dtype)
    a = rng.standard_normal((m, k), dtype=np.float32).astype(dt)
    b = rng.standard_normal((k, n), dtype=np.float32).astype(dt)
    return a, b, np.ascontiguousarray(b.T if cfg.b_major == "K" else b)


#: Output rounding (relative, round to nearest: half an ulp) per output dtype.
OUT_ROUNDING = {"float32": 2.0 ** -24, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}


@dataclasses.dataclass
class ElementCheck:
    """Elementwise comparison with the float64 reference: every element must satisfy
    ``|C − ref| ≤ bound`` with ``bound = k · 2^-21 · (|A|·|B|) + 2 · u_out · |ref|``; ``worst`` is
    the largest ``|C − ref| / bound`` (≤ 1 passes), ``wrong`` the count above 1, ``first_wrong``
    the (row, col) of the first, ``unwritten`` poison (NaN/inf) left in the output."""

    shape: tuple[int, int, int]
    label: str
    worst: float
    wrong: int
    unwritten: int
    first_wrong: tuple[int, int] | None
    rel_frobenius: float

    @property
    def passed(self) -> bool:
        return self.unwritten == 0 and self.wrong == 0 and bool(np.isfinite(self.worst))

    def as_dict(self) -> dict:
        return {"shape": list(self.shape), "config": self.label, "worst_ratio": self.worst,
                "wrong": self.wrong, "unwritten": self.unwritten,
                "first_wrong": list(self.first_wrong) if self.first_wrong else None,
                "rel_frobenius": self.rel_frobenius, "passed": bool(self.passed)}


def compare_elementwise(out: np.ndarray, a: np.ndarray, b: np.ndarray, out_dtype: str,
                        label: str = "") -> ElementCheck:
    """Compare ``out`` (M×N) with ``a @ b`` in float64, element by element.

    The bound per element: fp32 accumulation of K products has an error below γ_K·(|A|·|B|) with
    γ_K ≈ K·2^-24 (recursive summation, Higham); we allow 8× that (K·2^-21) for the Tensor Core's
    internal accumulation order, plus twice the output's rounding. A missing k-step shifts an
    element by ~√16 standard deviations of a product, far above the bound; an element never
    written stays NaN (poison) and is counted as unwritten."""
    ref = a.astype(np.float64) @ b.astype(np.float64)
    # |A|·|B| only scales the bound: float32 is ample (and halves the host work)
    mag = (np.abs(a.astype(np.float32)) @ np.abs(b.astype(np.float32))).astype(np.float64)
    k = a.shape[1]
    bound = k * 2.0 ** -21 * mag + 2 * OUT_ROUNDING[out_dtype] * np.abs(ref)
    o = np.asarray(out).astype(np.float64)
    finite = np.isfinite(o)
    unwritten = int(np.count_nonzero(~finite))
    ratio = np.where(finite, np.abs(o - ref) / bound, np.inf)
    bad = ratio > 1.0
    wrong = int(np.count_nonzero(bad & finite))
    first = tuple(int(x) for x in np.argwhere(bad)[0]) if bad.any() else None
    rel = float(np.linalg.norm(np.where(finite, o, 0.0) - ref) / np.linalg.norm(ref))
    return ElementCheck((a.shape[0], b.shape[1], k), label, float(ratio.max()), wrong, unwritten,
                        first, rel)


def verify_pipeline(cfg: PipelineConfig, m: int, n: int, k: int, rng=None) -> ElementCheck:
    """Run ``cfg`` on fresh random inputs (poisoned output) and compare every element with float64
    (:func:`compare_elementwise`). Raises what :func:`run_pipeline` raises."""
    check_shapes(m, n, k, cfg)
    a, b, bs = random_operands(m, n, k, cfg, rng)
    g = run_pipeline(a, bs, cfg)
    out = g.out.to_host()
    return compare_elementwise(out, a, b, cfg.out_dtype, cfg.label())


#: Shapes of the correctness matrix: several CTA rows and columns and 16 k-tiles (512 = 2 rows of
#: 256 or 4 of 128; 768 = 3 columns of 256 or 6 of 128), and a short K (3 k-tiles: fewer k-tiles
#: than stages for stages ≥ 4, the prologue alone fills the ring).
CHECK_SHAPES = ((512, 768, 1024), (256, 256, 192))


def tile_configs(**kw) -> list[PipelineConfig]:
    """One config per tile of :data:`TILES` (other fields from ``kw``)."""
    return [PipelineConfig(bm=bm, bn=bn, consumers=c, **kw) for bm, bn, c in TILES]


def fits(cfg_kwargs: dict, limit: int | None = None) -> bool:
    try:
        PipelineConfig(**cfg_kwargs).validate(limit)
        return True
    except PipelineError:
        return False


def correctness_configs(limit: int | None = None) -> list[PipelineConfig]:
    """The correctness matrix: every dtype × tile × stages (that fit) × B layout × wait_pending
    (0, and 1 where stages ≥ 2), fp32 output; then the input-dtype output and the traced kernel
    (wait_pending 0 and 1) for every tile at 3 stages; then two CTAs per SM where they fit."""
    out = []
    for dt in DTYPES:
        for bm, bn, c in TILES:
            for s in STAGE_RANGE:
                for bmaj in B_MAJORS:
                    for wp in (0, 1):
                        kw = dict(dtype=dt, bm=bm, bn=bn, consumers=c, stages=s, b_major=bmaj,
                                  wait_pending=wp)
                        if fits(kw, limit):
                            out.append(PipelineConfig(**kw))
    for dt in DTYPES:
        for bm, bn, c in TILES:
            for bmaj in B_MAJORS:
                out.append(PipelineConfig(dtype=dt, bm=bm, bn=bn, consumers=c, stages=3,
                                          b_major=bmaj, out_dtype=dt))
    for bm, bn, c in TILES:
        for wp in (0, 1):
            out.append(PipelineConfig(bm=bm, bn=bn, consumers=c, stages=3, wait_pending=wp,
                                      trace=True))
    for dt in DTYPES:
        for bm, bn, c in TILES:
            for s in (2, 3):
                kw = dict(dtype=dt, bm=bm, bn=bn, consumers=c, stages=s, ctas_per_sm=2,
                          out_dtype=dt)
                if fits(kw, limit):
                    out.append(PipelineConfig(**kw))
    return out


def check_matrix(configs=None, shapes=CHECK_SHAPES, rng=None, progress=None) -> list[dict]:
    """Verify every config on every shape that is a whole number of its tiles; return the checks
    as dicts. Raises :class:`RuntimeError` at the first failure (with the check's details)."""
    rng = rng if rng is not None else np.random.default_rng()
    say = progress or (lambda _s: None)
    rows = []
    for cfg in configs if configs is not None else correctness_configs():
        for shp in shapes:
            try:
                check_shapes(*shp, cfg)
            except PipelineError:
                continue
            c = verify_pipeline(cfg, *shp, rng=rng)
            rows.append({**cfg.as_dict(), **c.as_dict()})
            if not c.passed:
                raise RuntimeError(f"pipelined GEMM wrong: {cfg.label()} {shp}: {c.as_dict()}")
        say(f"ok {cfg.label()}")
    return rows


# --------------------------------------------------------------------------------------------------
# Trace
# --------------------------------------------------------------------------------------------------

#: One interval of a lane, in SM clock cycles relative to the CTA's first event (lanes like
#: "cta0/wg1", "cta0/tma"; a release is a point, start = end): the same record the CPU model's
#: schedules use, so one plotting function draws both.
Span = _model.Span


@dataclasses.dataclass
class TraceResult:
    """Decoded trace: ``spans`` (list of :class:`Span`); ``ctas`` per traced CTA: block, SM id,
    %globaltimer at its start (ns, for aligning CTAs across SMs), the SM clock during the
    recording (``sm_mhz``, to turn cycles into time), events recorded and dropped;
    ``k_tiles``, ``stages``, ``wait_pending`` of the run."""

    spans: list[Span]
    ctas: list[dict]
    k_tiles: int
    stages: int
    wait_pending: int

    def lanes(self) -> list[str]:
        return sorted({s.lane for s in self.spans})

    def as_dict(self, cta: int | None = None) -> dict:
        sp = [s._asdict() for s in self.spans if cta is None or s.lane.startswith(f"cta{cta}/")]
        return {"spans": sp, "ctas": self.ctas, "k_tiles": self.k_tiles, "stages": self.stages,
                "wait_pending": self.wait_pending}


def decode_trace(buf: np.ndarray, consumers: int, k_tiles: int, stages: int,
                 wait_pending: int, events: int = TRACE_EVENTS) -> TraceResult:
    """Decode the kernel's trace buffer (u64, :func:`trace_words` long) into spans.

    Per lane (CTA c, warpgroup w) the records give: ``wait_full`` = full-barrier wait begun → ended;
    ``mma`` = k-tile k's wgmmas issued → the ``wgmma.wait_group`` after which they are known
    complete (iteration k + wait_pending, or the final wait; an upper bound of the group's end);
    ``release`` = the arrive on the empty barrier (a point); ``epilogue`` = loop end → stores
    issued. Warpgroup 0's thread 0 is also the producer; its records give the lane "cta{c}/tma":
    ``wait_empty`` (empty-barrier wait) and ``tma`` = TMA issued → the end of warpgroup 0's
    full-barrier wait for that k-tile (the earliest moment the data was seen; an upper bound of
    its arrival). Raises :class:`PipelineError` for a buffer of the wrong size."""
    slot_words = TRACE_HEADER + 2 * events
    buf = np.asarray(buf, dtype=np.uint64).ravel()
    if buf.size % slot_words or buf.size // slot_words % consumers:
        _fail("buf.size", buf.size, f"must be a multiple of consumers × {slot_words} words")
    slots = buf.reshape(-1, slot_words)
    n_ctas = slots.shape[0] // consumers
    spans: list[Span] = []
    ctas = []
    for c in range(n_ctas):
        lanes = slots[c * consumers:(c + 1) * consumers]
        if not any(int(h[1]) for h in lanes):      # CTA not launched / not traced
            continue
        t0 = min(int(h[1]) for h in lanes if int(h[1]))
        ctas.append({"cta": c, "block": int(lanes[0][2]) >> 32, "smid": int(lanes[0][2]) & 0xFFFFFFFF,
                     "globaltimer_ns": int(min(int(h[0]) for h in lanes if int(h[1]))),
                     "sm_mhz": _clock_mhz(lanes[0], events),
                     "events": [int(h[3]) for h in lanes],
                     "dropped": [max(0, int(h[3]) - events) for h in lanes]})
        for w, h in enumerate(lanes):
            n = min(int(h[3]), events)
            rec = h[TRACE_HEADER:TRACE_HEADER + 2 * n].reshape(n, 2)
            clk = rec[:, 0].astype(np.int64) - t0
            packed = (rec[:, 1] & np.uint64(0xFFFFFFFF)).astype(np.int64)
            kind, stage, kk = packed & 0xF, (packed >> 4) & 0xF, packed >> 8
            spans += _lane_spans(f"cta{c}/wg{w}", f"cta{c}/tma", kind, stage, kk, clk.astype(float),
                                 k_tiles, wait_pending if stages > 1 else 0, producer=(w == 0))
    return TraceResult(spans, ctas, k_tiles, stages, wait_pending)


def _clock_mhz(slot: np.ndarray, events: int) -> float:
    """The SM clock over a lane's recording: Δclock64 / Δ%globaltimer from the header to the last
    record (the records keep the timer's low 32 bits: ~4.3 s before they wrap, unwrapped here).
    NaN without records. %globaltimer ticks coarsely (about 1 µs on some GPUs), so this is only
    good for lanes that record for tens of µs or more."""
    n = min(int(slot[3]), events)
    if n < 1:
        return float("nan")
    g0, c0 = int(slot[0]), int(slot[1])
    clk, word = int(slot[TRACE_HEADER + 2 * (n - 1)]), int(slot[TRACE_HEADER + 2 * (n - 1) + 1])
    g = (g0 & ~0xFFFFFFFF) | (word >> 32)
    if g < g0:
        g += 1 << 32
    return (clk - c0) / (g - g0) * 1e3 if g > g0 else float("nan")


def _lane_spans(lane, tma_lane, kind, stage, kk, clk, k_tiles, pending, producer):
    ev: dict[tuple[str, int], tuple[float, int]] = {}
    for kd, s, k, t in zip(kind.tolist(), stage.tolist(), kk.tolist(), clk.tolist()):
        ev.setdefault((EVENT_KINDS[kd] if kd < len(EVENT_KINDS) else f"kind{kd}", k), (t, s))
    out = []

    def get(name, k):
        return ev.get((name, k))

    for k in range(k_tiles):
        b, e = get("full_begin", k), get("full_end", k)
        if b and e:
            out.append(Span(lane, "wait_full", k, b[1], b[0], e[0]))
        i = get("mma_issue", k)
        done = get("wait_done", k + pending) if k + pending < k_tiles else get("loop_end", k_tiles)
        if i and done:
            out.append(Span(lane, "mma", k, i[1], i[0], done[0]))
        r = get("release", k)
        if r:
            out.append(Span(lane, "release", k, r[1], r[0], r[0]))
        if producer:
            eb, ee = get("empty_begin", k), get("empty_end", k)
            if eb and ee:
                out.append(Span(tma_lane, "wait_empty", k, eb[1], eb[0], ee[0]))
            ti = get("tma_issued", k)
            if ti and e:
                out.append(Span(tma_lane, "tma", k, ti[1], ti[0], e[0]))
    le, se = get("loop_end", k_tiles), get("store_end", k_tiles)
    if le and se:
        out.append(Span(lane, "epilogue", k_tiles, 0, le[0], se[0]))
    return out


def _union_length(intervals) -> float:
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


#: Dense fp16/bf16 Tensor Core rate of one sm_90 SM (H100 whitepaper): FLOP per clock.
FLOP_PER_CLK_SM = 4096


def ktile_peak_cycles(cfg: PipelineConfig) -> float:
    """SM clock cycles one CTA's k-tile (2·bm·bn·64 FLOP) takes at the datasheet rate."""
    return 2 * cfg.bm * cfg.bn * cfg.bk / FLOP_PER_CLK_SM


def trace_metrics(tr: TraceResult, ktile_cycles: float | None = None) -> dict:
    """What the trace says about the main loop, per lane, per CTA and averaged.

    Per consumer lane: ``loop_cycles`` (first full-barrier wait begun → last wgmma known complete);
    ``math_in_flight`` = union of the ``mma`` spans / loop length — exact with wait_pending 0, an
    *upper bound* with wait_pending 1 (a group is only known complete at the next wait_group);
    ``wait_full_cycles`` and ``wait_full_fraction`` (time blocked on full barriers). Per producer
    lane: ``wait_empty_cycles``. Per CTA, when ``ktile_cycles`` (:func:`ktile_peak_cycles`) is
    given: ``tensor_utilization`` = k_tiles · ktile_cycles / the CTA's loop length, the loop's
    Tensor Core use relative to the datasheet rate (SM clock cycles, so independent of the clock).
    """
    lanes = {}
    for lane in tr.lanes():
        sp = [s for s in tr.spans if s.lane == lane]
        if lane.endswith("/tma"):
            lanes[lane] = {"wait_empty_cycles": float(sum(s.end - s.start for s in sp
                                                          if s.kind == "wait_empty"))}
            continue
        mma = [(s.start, s.end) for s in sp if s.kind == "mma"]
        wf = [s for s in sp if s.kind == "wait_full"]
        if not mma or not wf:
            continue
        start = min(s.start for s in wf)
        end = max(e for _, e in mma)
        length = max(end - start, 1.0)
        wait = float(sum(s.end - s.start for s in wf))
        lanes[lane] = {"loop_start": start, "loop_end": end, "loop_cycles": length,
                       "math_in_flight": _union_length(mma) / length,
                       "wait_full_cycles": wait, "wait_full_fraction": wait / length}
    cons = [v for v in lanes.values() if "loop_cycles" in v]
    mean = {key: float(np.mean([v[key] for v in cons])) for key in
            ("loop_cycles", "math_in_flight", "wait_full_cycles", "wait_full_fraction")} if cons else {}
    ctas = {}
    for c in {lane.split("/")[0] for lane in lanes}:
        cl = [v for k, v in lanes.items() if k.startswith(c + "/") and "loop_cycles" in v]
        if not cl:
            continue
        loop = max(v["loop_end"] for v in cl) - min(v["loop_start"] for v in cl)
        ctas[c] = {"loop_cycles": loop}
        if ktile_cycles:
            ctas[c]["tensor_utilization"] = tr.k_tiles * ktile_cycles / max(loop, 1.0)
    if ktile_cycles and ctas:
        mean["tensor_utilization"] = float(np.mean([v["tensor_utilization"] for v in ctas.values()]))
    return {"lanes": lanes, "ctas": ctas, "mean": mean, "stages": tr.stages,
            "wait_pending": tr.wait_pending, "k_tiles": tr.k_tiles, "ktile_cycles": ktile_cycles}


def synthetic_trace(consumers: int, k_tiles: int, stages: int, wait_pending: int,
                    mma_cycles: int = 100, load_cycles: int = 300, events: int = TRACE_EVENTS,
                    ctas: int = TRACE_CTAS) -> np.ndarray:
    """A trace buffer as the kernel would write it for an idealised run (the producer's loads take
    ``load_cycles``, each k-tile's wgmmas ``mma_cycles``, the SM clock runs at 1500 MHz), for
    testing :func:`decode_trace`."""
    slot_words = TRACE_HEADER + 2 * events
    buf = np.zeros(ctas * consumers * slot_words, np.uint64)
    pend = wait_pending if stages > 1 else 0
    for c in range(ctas):
        for w in range(consumers):
            base = (c * consumers + w) * slot_words
            t0 = 1_000_000 + 17 * c
            buf[base:base + 3] = [5_000_000_000 + c, t0, c | (c << 32)]
            recs = []

            def ev(kind, stage, k, t):
                recs.append((t0 + t, (kind | (stage << 4) | (k << 8))))
            arrive = {}
            if w == 0:
                for k in range(min(stages, k_tiles)):
                    ev(0, k % stages, k, 1)
                    arrive[k] = 1 + load_cycles
            t = 2
            for k in range(k_tiles):
                s = k % stages
                ev(3, s, k, t)
                t = max(t, arrive.get(k, t)) + 1
                ev(4, s, k, t)
                ev(5, s, k, t)
                t += mma_cycles
                ev(6, s, k, t)
                r = k - pend
                if r >= 0:
                    ev(7, r % stages, r, t)
                    if w == 0 and r + stages < k_tiles:
                        ev(1, r % stages, r + stages, t)
                        ev(2, r % stages, r + stages, t)
                        ev(0, r % stages, r + stages, t + 1)
                        arrive[r + stages] = t + 1 + load_cycles
            t += mma_cycles
            ev(8, 0, k_tiles, t)
            ev(9, 0, k_tiles, t + 50)
            buf[base + 3] = len(recs)
            for i, (clk, packed) in enumerate(recs[:events]):
                buf[base + TRACE_HEADER + 2 * i] = clk
                g = 5_000_000_000 + c + (clk - t0) * 2 // 3        # a 1500 MHz SM clock
                buf[base + TRACE_HEADER + 2 * i + 1] = (g & 0xFFFFFFFF) << 32 | packed
    return buf


# --------------------------------------------------------------------------------------------------
# The "pipeline" suite
# --------------------------------------------------------------------------------------------------

#: The depth sweep: tiles (BM, BN, consumers), square sizes, dtypes.
SWEEP_TILES = ((128, 128, 2), (128, 256, 2), (128, 128, 1))
#: Extra rows of the sweep: two CTAs per SM (tiles whose stages fit twice in an SM).
SWEEP_TWO_CTAS = ((128, 128, 2), (128, 128, 1))
SWEEP_SIZES = (4096, 8192)
SWEEP_DTYPES = ("float16", "bfloat16")
#: B's layout and the output dtype in the timed runs: K-major B, C in the input dtype (as cuBLAS
#: writes it).
SWEEP_B_MAJOR = "K"


def sweep_configs(limit: int | None = None) -> list[PipelineConfig]:
    """Every config the timing part of the suite runs: the depth sweep (wait_pending 1, or 0 for
    one stage), then per (tile, stages) wait_pending 0, the traced kernel and L2 promotion 256 B,
    then two CTAs per SM."""
    out = []
    for dt in SWEEP_DTYPES:
        for bm, bn, c in SWEEP_TILES:
            for s in STAGE_RANGE:
                for wp, tr, l2 in ((1, False, 0), (0, False, 0), (1, True, 0), (1, False, 256)):
                    kw = dict(dtype=dt, bm=bm, bn=bn, consumers=c, stages=s, b_major=SWEEP_B_MAJOR,
                              out_dtype=dt, wait_pending=wp if s > 1 else 0, trace=tr,
                              l2_promotion=l2)
                    if fits(kw, limit):
                        cfg = PipelineConfig(**kw)
                        if cfg not in out:
                            out.append(cfg)
        for bm, bn, c in SWEEP_TWO_CTAS:
            for s in STAGE_RANGE:
                kw = dict(dtype=dt, bm=bm, bn=bn, consumers=c, stages=s, b_major=SWEEP_B_MAJOR,
                          out_dtype=dt, wait_pending=1 if s > 1 else 0, ctas_per_sm=2)
                if fits(kw, limit):
                    out.append(PipelineConfig(**kw))
    return out


def device_problem(s: int, dtype: str, rng):
    """A fresh random s×s×s problem (chapter 01's operands, rounded to ``dtype``) on the host and
    the device: ``(a, b, da, db, dbt)`` with ``dbt`` = Bᵀ (N×K) for kernels that read B K-major."""
    from . import mma_sync
    a, b = mma_sync.random_operands(s, s, s, dtype, int(rng.integers(2**31)))
    bt = np.ascontiguousarray(b.T)
    return a, b, DeviceArray.from_host(a), DeviceArray.from_host(b), DeviceArray.from_host(bt)


def _time(g: PipelineGemm, reps: int = 10):
    from .core import bench
    t = bench.time_gpu(g.launcher(), warmup=3, reps=reps)
    g.check_error()
    return t


def measure_pipeline(progress=None, sizes=SWEEP_SIZES, dtypes=SWEEP_DTYPES, check: bool = True,
                     trace_dir=None) -> dict:
    """The "pipeline" suite.

    1. Correctness: :func:`correctness_configs` × :data:`CHECK_SHAPES` (stops at the first failure);
       the deliberately broken variants (:func:`run_broken`) must end in an error, not a hang.
    2. Depth sweep: for each dtype and size (square, fresh random inputs), cuBLAS and every
       :data:`SWEEP_TILES` tile at stages 1..6 (those that fit; the others are listed with the
       reason), wait_pending 1 (0 for one stage), B K-major, C in the input dtype. Each timed
       output is checked on sampled rows against float64.
    3. wait_pending 0 vs 1 and trace on vs off for every (tile, stages) of the sweep.
    4. Traces (fp16, 4096³, tile 128×256/c2 and the fastest config): depth 1, 2 and the best depth,
       decoded and reduced to :func:`trace_metrics`; CTA 0's spans kept in the record.
    ``trace_dir``: also write every decoded trace (all traced CTAs) there as JSON and the raw buffers
    as .npz. Timings are never asserted on."""
    from .core import bench, records
    say = progress or (lambda _s: None)
    rng = np.random.default_rng()
    info = runtime.device_info()
    limit = smem_limit_bytes()
    out: dict = {"checks": [], "sweep": [], "variants": [], "traces": [], "not_fitting": [],
                 "baseline_library": bench.baseline_library(), "smem_limit": limit,
                 "sm_count": info.sm_count if info else None}
    jobs = list({repr(j): j for j in (compile_job(c) for c in
                                      (correctness_configs(limit) if check else []) +
                                      sweep_configs(limit))}.values())
    say(f"compiling {len(jobs)} variants")
    runtime.precompile(jobs)
    if check:
        say("correctness matrix")
        out["checks"] = check_matrix(correctness_configs(limit), rng=rng)
        say(f"{len(out['checks'])} checks passed")
        out["broken"] = []
        for kind, what in BREAKS.items():
            t0 = time.perf_counter()
            err = run_broken(kind, rng=rng)
            out["broken"].append({"kind": kind, "what": what, "error": err,
                                  "seconds": time.perf_counter() - t0})
            say(f"broken variant {kind} ({what}) ended in {time.perf_counter() - t0:.1f} s: {err}")
        c = verify_pipeline(PipelineConfig(), *CHECK_SHAPES[0], rng=rng)
        if not c.passed:
            raise RuntimeError(f"a correct kernel after the broken variants is wrong: {c.as_dict()}")
    for dt in dtypes:
        for bm, bn, c in SWEEP_TILES:
            for s in STAGE_RANGE:
                kw = dict(dtype=dt, bm=bm, bn=bn, consumers=c, stages=s, b_major=SWEEP_B_MAJOR,
                          out_dtype=dt, wait_pending=1 if s > 1 else 0)
                try:
                    PipelineConfig(**kw).validate(limit)
                except PipelineError as e:
                    if dt == dtypes[0]:
                        out["not_fitting"].append({**kw, "reason": str(e)})
    for size in sizes:
        for dt in dtypes:
            a, b, da, db, dbt = device_problem(size, dt, rng)
            rows = checks.timed_output_reference(a, b, dt, rng)   # one row per 128-row band
            flop = bench.gemm_flop(size, size, size)
            dc = DeviceArray.poisoned((size, size), np_dtype(dt))
            if out["baseline_library"]:
                t = bench.time_gpu(bench.cublas_gemm(da, db, dc), warmup=3, reps=10)
                # recorded, not raised: cuBLAS may reduce split-K partial sums in the output dtype,
                # which the bound does not model (as in the ceilings suite)
                c = rows.check(dc)
                out["sweep"].append({"kernel": "cuBLAS", "dtype": dt, "size": size, **t.as_dict(),
                                     "tflops": bench.tflops(flop, t.median_ms),
                                     "check_rows": c.as_dict()})
            for cfg in sweep_configs(limit):
                if cfg.dtype != dt:
                    continue
                dc.poison()
                try:
                    g = PipelineGemm(cfg, da, dbt, dc)
                except (TypeError, AttributeError) as e:
                    if not cfg.l2_promotion:
                        raise
                    # an older cuda.core without as_tensor_map(l2_promotion=): skip the variant
                    out.setdefault("skipped", []).append({**cfg.as_dict(), "size": size,
                                                          "reason": f"{type(e).__name__}: {e}"})
                    continue
                t = _time(g)
                c = checks.check_sampled_rows(dc, a, b, dt, cfg.label(), sampled=rows)
                row = {"kernel": "pipeline", "size": size, **cfg.as_dict(), "tile": cfg.tile_name,
                       **t.as_dict(), "tflops": bench.tflops(flop, t.median_ms),
                       "max_err_rows": c.max_err, "registers": g.ck.resources.registers,
                       "spill_bytes": g.ck.resources.spill_stores,
                       "resident_ctas": g.resident_ctas()}
                is_depth = (cfg.wait_pending == (1 if cfg.stages > 1 else 0) and not cfg.trace
                            and not cfg.l2_promotion)
                (out["sweep"] if is_depth else out["variants"]).append(row)
                say(f"{size}³ {cfg.label()}: {row['tflops']:.0f} TFLOP/s")
                if cfg.trace and size == sizes[0] and dt == "float16":
                    tr = decode_trace(g.trace_buffer(), cfg.consumers, g.k_tiles, cfg.stages,
                                      cfg.wait_pending)
                    met = trace_metrics(tr, ktile_peak_cycles(cfg))
                    out["traces"].append({**cfg.as_dict(), "size": size, "tile": cfg.tile_name,
                                          "metrics": met, "cta0": tr.as_dict(cta=0)})
                    if trace_dir is not None:
                        _dump_trace(trace_dir, cfg, size, tr, g.trace_buffer())
                del g
            del da, db, dbt, dc
    out["clocks_after"] = records.nvidia_smi_clocks()
    _keep_trace_spans(out)
    return out


def _trace_name(cfg: PipelineConfig, size: int) -> str:
    return (f"trace_{cfg.dtype}_{cfg.bm}x{cfg.bn}c{cfg.consumers}_s{cfg.stages}"
            f"_w{cfg.wait_pending}_{size}")


def _dump_trace(trace_dir, cfg, size, tr: TraceResult, raw: np.ndarray) -> None:
    from pathlib import Path
    d = Path(trace_dir)
    d.mkdir(parents=True, exist_ok=True)
    name = _trace_name(cfg, size)
    (d / f"{name}.json").write_text(json.dumps({"config": cfg.as_dict(), "size": size,
                                                **tr.as_dict(),
                                                "metrics": trace_metrics(tr, ktile_peak_cycles(cfg))}))
    np.savez_compressed(d / f"{name}.npz", raw=raw)


def best_row(results: dict, dtype: str, size: int, tile: str | None = None,
             variants: bool = False) -> dict | None:
    """The fastest pipelined row of the depth sweep (with ``variants``: of every untraced row,
    wait_pending 0 and L2 promotion included) for ``dtype``, ``size`` (and ``tile``)."""
    pool = results["sweep"] + ([v for v in results.get("variants", []) if not v.get("trace")]
                               if variants else [])
    rows = [r for r in pool if r["kernel"] == "pipeline" and r["dtype"] == dtype
            and r["size"] == size and (tile is None or r["tile"] == tile)]
    return max(rows, key=lambda r: r["tflops"]) if rows else None


def row_label(r: dict) -> str:
    """A result row's configuration, as :meth:`PipelineConfig.label`."""
    keys = {f.name for f in dataclasses.fields(PipelineConfig)}
    return PipelineConfig(**{k: v for k, v in r.items() if k in keys}).label()


def _keep_trace_spans(out: dict) -> None:
    """Keep CTA 0's spans (what the notebook draws) only for depth 1, 2 and the best depth of the
    128×256 tile and of the fastest tile (fp16, first size); the metrics of every trace stay."""
    if not out["traces"]:
        return
    size = out["traces"][0]["size"]
    traced = {t["tile"] for t in out["traces"]}
    keep = set()
    bests = [best_row(out, "float16", size, tile) for tile in sorted(traced)]
    bests = [b for b in bests if b]
    for best in [b for b in bests if b["tile"] == "128x256x64/c2"] + \
            ([max(bests, key=lambda r: r["tflops"])] if bests else []):
        keep |= {(best["tile"], s) for s in (1, 2, best["stages"])}
    for t in out["traces"]:
        if (t["tile"], t["stages"]) not in keep:
            t.pop("cta0", None)


def cublas_row(results: dict, dtype: str, size: int) -> dict | None:
    return next((r for r in results["sweep"] if r["kernel"] == "cuBLAS" and r["dtype"] == dtype
                 and r["size"] == size), None)


def _occupancy_mark(resident: int | None) -> str:
    """Four characters after a TFLOP/s cell: " (n)" when n ≥ 2 CTAs were resident per SM (the
    driver's occupancy query), blanks otherwise (one CTA, or no query in the record)."""
    return f" ({resident})" if resident and resident > 1 else "    "


def depth_table(results: dict) -> str:
    """TFLOP/s by stages (columns) for every tile, dtype and size, with cuBLAS and the best ratio."""
    lines = [f"{'size':>5s} {'dtype':9s} {'tile':20s} " +
             " ".join(f"{'s' + str(s):>8s}" for s in STAGE_RANGE) + f" {'cuBLAS':>7s} {'best/cuBLAS':>11s}"]
    for size in sorted({r["size"] for r in results["sweep"]}):
        for dt in SWEEP_DTYPES:
            cb = cublas_row(results, dt, size)
            tiles = sorted({r["tile"] for r in results["sweep"] if r["kernel"] == "pipeline"
                            and r["dtype"] == dt and r["size"] == size})
            for tile in tiles:
                rows = {r["stages"]: r for r in results["sweep"] if r["kernel"] == "pipeline"
                        and r["dtype"] == dt and r["size"] == size and r["tile"] == tile}
                by = {s: r["tflops"] for s, r in rows.items()}
                cells = " ".join(
                    (f"{by[s]:4.0f}" + _occupancy_mark(rows[s].get("resident_ctas")))
                    if s in by else f"{'-':>4s}    " for s in STAGE_RANGE)
                best = max(by.values())
                ratio = f"{best / cb['tflops']:11.2f}" if cb else f"{'':11s}"
                lines.append(f"{size:5d} {dt:9s} {tile:20s} {cells} "
                             f"{cb['tflops'] if cb else float('nan'):7.0f} {ratio}")
    if any((r.get("resident_ctas") or 1) > 1 for r in results["sweep"]):
        lines.append("(n): n CTAs resident per SM (the driver's occupancy query for that kernel); "
                     "no mark: one. /2cta: launch bounds asking for 2 resident CTAs per SM")
    return "\n".join(lines)


def variants_table(results: dict) -> str:
    """wait_pending 0 and trace-on beside the depth sweep's row for the same (tile, stages)."""
    lines = [f"{'size':>5s} {'dtype':9s} {'tile':20s} {'st':>2s} {'wait1':>6s} {'wait0':>6s} "
             f"{'l2:256':>6s} {'trace':>6s} {'trace cost':>10s}"]
    keyf = lambda r: (r["size"], r["dtype"], r["tile"], r["stages"])  # noqa: E731

    def cell(x):
        return f"{x['tflops']:6.0f}" if x else f"{'-':>6s}"
    base = {keyf(r): r for r in results["sweep"] if r["kernel"] == "pipeline"}
    for k in sorted(base):
        w0 = next((v for v in results["variants"] if keyf(v) == k and v["wait_pending"] == 0
                   and not v["trace"] and not v.get("l2_promotion")), None)
        l2 = next((v for v in results["variants"] if keyf(v) == k and v.get("l2_promotion")), None)
        tr = next((v for v in results["variants"] if keyf(v) == k and v["trace"]), None)
        b = base[k]["tflops"]
        cost = f"{b / tr['tflops'] - 1:10.1%}" if tr else f"{'-':>10s}"
        lines.append(f"{k[0]:5d} {k[1]:9s} {k[2]:20s} {k[3]:2d} {b:6.0f} {cell(w0)} {cell(l2)} "
                     f"{cell(tr)} {cost}")
    return "\n".join(lines)


def checks_lines(results: dict) -> list[str]:
    """The correctness line of a GEMM suite's summary (chapters 05 and 06): checks passed of run and
    the worst |C − ref| / bound (the elementwise bound of :func:`compare_elementwise`)."""
    if not results.get("checks"):
        return []
    c = results["checks"]
    return [f"correctness: {sum(x['passed'] for x in c)}/{len(c)} checks passed "
            f"(worst |C−ref|/bound {max(x['worst_ratio'] for x in c):.3f})"]


def summarize_pipeline(rec) -> str:
    r = rec.results
    lines = [rec.label() if hasattr(rec, "label") else "pipeline"] + checks_lines(r)
    for b in r.get("broken", []):
        lines.append(f"broken variant {b['kind']}: ended after {b['seconds']:.1f} s with: "
                     f"{b['error'].split(': ', 1)[-1]}")
    for nf in r.get("not_fitting", []):
        lines.append(f"not built: {nf['bm']}x{nf['bn']} stages={nf['stages']}: {nf['reason']}")
    lines.append(depth_table(r))
    for t in r.get("traces", []):
        m = t["metrics"]["mean"]
        if m:
            lines.append(f"trace {t['dtype']} {t['bm']}x{t['bn']}/c{t['consumers']} s{t['stages']} "
                         f"wait{t['wait_pending']} {t['size']}³: Tensor Core use "
                         f"{m.get('tensor_utilization', float('nan')):.2f} of the datasheet rate, "
                         f"math in flight {m['math_in_flight']:.2f} of the loop"
                         f"{' (upper bound)' if t['wait_pending'] else ''}, waiting on full "
                         f"barriers {m['wait_full_fraction']:.2f}")
    for size in sorted({x["size"] for x in r["sweep"]}):
        for dt in SWEEP_DTYPES:
            b, cb = best_row(r, dt, size, variants=True), cublas_row(r, dt, size)
            if b and cb:
                lines.append(f"best {dt} {size}³: {row_label(b)}: {b['tflops']:.0f} TFLOP/s = "
                             f"{b['tflops'] / cb['tflops']:.2f} of cuBLAS ({cb['tflops']:.0f})")
    return "\n".join(lines)


SUITES = {"pipeline": (measure_pipeline, summarize_pipeline, "sm_90a")}


# --------------------------------------------------------------------------------------------------
# Figures for the chapter (matplotlib; data in, figure out — never measures)
# --------------------------------------------------------------------------------------------------

#: Colours of the span kinds in :func:`plot_trace`.
SPAN_COLORS = {"tma": "tab:blue", "wait_empty": "tab:gray", "wait_full": "tab:red",
               "mma": "tab:green", "release": "k", "epilogue": "tab:purple"}


def plot_trace(trace: dict, title: str = "", record=None, k_max: int | None = None,
               time_unit: str = "cycles"):
    """Gantt chart of one CTA's trace: a row per lane ("tma", "wg0", "wg1"), one bar per span
    (colour = kind, the k-tile written in the bar when wide enough), releases as ticks.

    ``trace``: a :meth:`TraceResult.as_dict` (e.g. the ``cta0`` entry of a record's
    ``traces`` row, or a decoded dump); ``k_max``: draw only k-tiles < k_max (the start of a long
    loop is the interesting part). Returns the figure."""
    import matplotlib.pyplot as plt
    spans = [Span(**x) if isinstance(x, dict) else Span(*x) for x in trace["spans"]]
    if k_max is not None:
        spans = [s for s in spans if s.k < k_max or s.kind == "epilogue"]
        if any(s.kind != "epilogue" for s in spans):
            spans = [s for s in spans if s.kind != "epilogue"]
    lanes = sorted({s.lane for s in spans}, key=lambda x: (x.split("/")[0], x.endswith("wg1"),
                                                           not x.endswith("tma")))
    fig, ax = plt.subplots(figsize=(11, 0.7 + 0.55 * len(lanes) * 2), dpi=80, layout="constrained")
    rows = {}
    for i, lane in enumerate(lanes):
        for j, kind in enumerate(("tma", "wait_empty") if lane.endswith("tma") else
                                 ("wait_full", "mma")):
            rows[(lane, kind)] = 2 * i + j * 0.9
    t_end = max((s.end for s in spans), default=1.0) or 1.0
    stages = max(int(trace.get("stages") or 1), max((s.stage + 1 for s in spans), default=1))
    for s in spans:
        if s.kind == "release":
            y = rows.get((s.lane, "mma"), 0)
            ax.plot([s.start, s.start], [y - 0.4, y + 0.4], color="k", lw=0.8)
            continue
        if s.kind == "epilogue":
            y = rows.get((s.lane, "mma"), 0)
        else:
            y = rows.get((s.lane, s.kind), rows.get((s.lane, "mma"), 0))
        # spans of one row may overlap (several TMA loads in flight; with wait_group 1 two k-tiles'
        # wgmmas): TMA bars get a sub-row per stage, wgmma bars one per k parity
        h, dy = 0.8, 0.0
        if s.kind == "tma":
            h = 0.8 / stages
            dy = -0.4 + h * (s.stage + 0.5)
        elif s.kind == "mma":
            h, dy = 0.4, (-0.2 if s.k % 2 == 0 else 0.2)
        ax.barh(y + dy, max(s.end - s.start, t_end * 1e-3), left=s.start, height=h,
                color=SPAN_COLORS.get(s.kind, "tab:orange"), alpha=0.8, edgecolor="white", lw=0.3)
        if s.kind in ("tma", "mma") and s.end - s.start > t_end / 60 and h >= 0.2:
            ax.text((s.start + s.end) / 2, y + dy, str(s.k), ha="center", va="center", fontsize=6)
    ax.set_yticks(list(rows.values()), [("producer" if lane.endswith("/tma") else lane.split("/")[1])
                                        + f" {kind}" for lane, kind in rows])
    ax.set_xlabel(f"SM clock {time_unit} since the CTA's first event")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in SPAN_COLORS.values()]
    ax.legend(handles, list(SPAN_COLORS), fontsize=7, ncol=6, loc="lower center",
              bbox_to_anchor=(0.5, 1.0), frameon=False)
    ax.invert_yaxis()
    t = title or (f"{trace.get('stages', '?')} stages, wait_group {trace.get('wait_pending', '?')}, "
                  f"{trace.get('k_tiles', '?')} k-tiles")
    ax.set_title(t + (f"\n{record.label()}" if record is not None else ""), fontsize=10, pad=22)
    return fig


#: Markers and line styles of the tiles in :func:`plot_depth` (a /2cta variant shares its base
#: tile's colour, with hollow markers and a dashed line, so that it is not hidden under it).
_TILE_MARKERS = {"128x128x64/c1": "o", "128x128x64/c2": "s", "128x256x64/c2": "D", "256x128x64/c2": "^"}


def plot_depth(results: dict, dtype: str = "float16", record=None):
    """TFLOP/s against the number of stages: one panel per GEMM size, one line per tile (distinct
    marker and colour; a ``/2cta`` variant — launch bounds asking for two resident CTAs per SM — in
    its base tile's colour, hollow markers, dashed), the panel's cuBLAS (``dtype``, that size) as a
    labelled horizontal line — from a ``pipeline`` record's results. Returns the figure."""
    import matplotlib.pyplot as plt
    sizes = sorted({r["size"] for r in results["sweep"]})
    fig, axes = plt.subplots(1, len(sizes), figsize=(5.2 * len(sizes) + 2.2, 4.2), dpi=80,
                             layout="constrained", sharey=True, squeeze=False)
    bases = sorted({r["tile"].split("/2cta")[0] for r in results["sweep"] if r["kernel"] == "pipeline"})
    colour = {b: f"C{j}" for j, b in enumerate(bases)}
    for ax, size in zip(axes[0], sizes):
        tiles = sorted({r["tile"] for r in results["sweep"] if r["kernel"] == "pipeline"
                        and r["size"] == size and r["dtype"] == dtype})
        for tile in tiles:
            base = tile.split("/2cta")[0]
            two = tile.endswith("/2cta")
            pts = sorted((r["stages"], r["tflops"]) for r in results["sweep"]
                         if r["kernel"] == "pipeline" and r["size"] == size and r["dtype"] == dtype
                         and r["tile"] == tile)
            ax.plot(*zip(*pts), marker=_TILE_MARKERS.get(base, "v"), ms=8 if two else 5,
                    mfc="white" if two else colour[base], mew=1.5, ls="--" if two else "-",
                    color=colour[base], label=tile + (" (2 CTAs/SM asked)" if two else ""))
        cb = cublas_row(results, dtype, size)
        if cb:
            ax.axhline(cb["tflops"], color="k", ls=":", lw=1.2,
                       label=f"cuBLAS {dtype}: {cb['tflops']:.0f}")
            ax.annotate(f"cuBLAS {dtype} {size}³", (1, cb["tflops"]), xytext=(0, 3),
                        textcoords="offset points", fontsize=7)
        ax.set_xlabel("stages in the ring")
        ax.set_xticks(list(STAGE_RANGE))
        ax.set_title(f"{size}³", fontsize=10)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("TFLOP/s")
    handles, labels = axes[0][-1].get_legend_handles_labels()
    axes[0][-1].legend(handles, [lab.split(":")[0] if lab.startswith("cuBLAS") else lab for lab in labels],
                       fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(f"Pipelined TMA + wgmma GEMM, {dtype}: throughput by ring depth" +
                 (f"\n{record.label()}" if record is not None else ""), fontsize=10)
    return fig
