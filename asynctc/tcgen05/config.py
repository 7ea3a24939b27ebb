"""Chapter 09's tcgen05 GEMM (``kernels/tcgen05.cu``): its configuration, constants and errors.

:class:`GemmConfig` (validated on construction, :class:`Tcgen05Error` naming field, value and
rule), the descriptors it is launched with (:func:`instruction_descriptor`,
:func:`operand_descriptor`, from :mod:`asynctc.models.tcgen05`), the k-step addressing the kernel
uses (:func:`kstep_offsets`) and the variants tested and timed (:data:`SUITE_CONFIGS`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..core import runtime
from ..models.tcgen05 import InstrDescriptor, Tcgen05Descriptor

ARCH = "sm_100a"
SOURCE = "tcgen05.cu"
ENTRY = "tcgen05_gemm"
#: Input dtype name → the kernel's ``DT`` define (and the instruction descriptor's a/b format).
DTYPES = {"float16": 0, "bfloat16": 1}
THREADS = 192                 # warp 0 TMA, warp 1 TMEM + MMA, warps 2..5 epilogue
#: Largest shared memory one CTA may use on sm_100 (opt-in), bytes (CUDA C++ Programming Guide,
#: "Technical Specifications per Compute Capability": 227 KiB for 9.0 and 10.0).
SMEM_LIMIT = 227 * 1024
#: Static shared memory ptxas reports for the kernel (mbarriers, the TMEM address slot and the
#: compiler's own TMEM-allocation bookkeeping), bytes; checked against the cubin in the tests.
STATIC_SMEM = 1024
ALIGN_SLACK = 1024            # the kernel aligns its stage ring to 1024 bytes at run time
TMEM_COLUMNS = 512            # Tensor Memory per SM: 128 lanes × 512 columns of 32 bits
SWIZZLE_BYTES = 128
BK_VALUES = (64, 128, 192, 256)
MAX_STAGES = 8
WAIT_TAGS = {1: "producer waiting for a free stage (empty mbarrier)",
             2: "MMA issuer waiting for a loaded stage (full mbarrier)",
             3: "epilogue waiting for the accumulator (done mbarrier)",
             4: "producer draining the last commits before exit"}


class Tcgen05Error(runtime.AsyncTCError, ValueError):
    """A tcgen05 GEMM configuration or input breaks a rule; raised before anything reaches a GPU."""


class WrongGPUError(runtime.NoGPUError):
    """The GPU here cannot run sm_100a code (tcgen05 needs compute capability 10.0)."""


def _fail(field: str, value: Any, rule: str) -> None:
    raise Tcgen05Error(f"{field}={value!r}: {rule}")


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


# --------------------------------------------------------------------------------------------------
# Descriptors (private encoders; the chapter's model is asynctc.models.tcgen05)
# --------------------------------------------------------------------------------------------------

def instruction_descriptor(cfg: "GemmConfig") -> "InstrDescriptor":
    """The ``tcgen05.mma.kind::f16`` instruction descriptor of ``cfg``'s MMA (fp32 accumulator,
    both operands K-major, M = ``cfg.bm`` — 256 for a CTA pair —, N = ``cfg.bn``), from the model
    :class:`asynctc.models.tcgen05.InstrDescriptor` (PTX ISA, "Instruction descriptor")."""
    return InstrDescriptor(cfg.dtype, cfg.dtype, "float32", cfg.bm, cfg.bn, cta_group=cfg.cta_group)


def operand_descriptor() -> "Tcgen05Descriptor":
    """The shared-memory descriptor template of A's and Bᵀ's K-major 128B-swizzled slabs (start
    address 0; the kernel adds its shared address >> 4): SBO = 1024 bytes (eight 128-byte rows),
    LBO unused by the hardware for this layout and conventionally 16
    (:class:`asynctc.models.tcgen05.Tcgen05Descriptor`; PTX ISA, "Shared memory descriptor")."""
    return Tcgen05Descriptor(0, 16, 1024, "128B")


# --------------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class GemmConfig:
    """One compiled variant of the tcgen05 GEMM.

    ``dtype`` "float16" | "bfloat16" (inputs; C is fp32). ``bm``: rows of C per MMA — 128 with
    ``cta_group=1``, 256 with ``cta_group=2`` (128 rows per CTA of the pair). ``bn``: columns of C
    per MMA (the instruction's N; also the Tensor Memory columns used). ``bk``: elements of K per
    stage (a multiple of the 64-element, 128-byte swizzle atom). ``stages``: depth of the
    shared-memory ring. ``cta_group``: 1 (one CTA) or 2 (a CTA pair in a cluster of two).
    Construction validates (:meth:`validate`) and raises :class:`Tcgen05Error`.
    """

    dtype: str = "float16"
    bm: int = 128
    bn: int = 128
    bk: int = 64
    stages: int = 4
    cta_group: int = 1

    def __post_init__(self):
        self.validate()

    def validate(self) -> None:
        """Check every rule; the message names the field, the value and the rule."""
        if self.dtype not in DTYPES:
            _fail("dtype", self.dtype, f"tcgen05.mma.kind::f16 takes {sorted(DTYPES)} inputs "
                                       "(PTX ISA, tcgen05.mma, .kind::f16)")
        for f in ("bm", "bn", "bk", "stages", "cta_group"):
            if not _is_int(getattr(self, f)):
                _fail(f, getattr(self, f), "must be an int (it becomes a -D define of the kernel)")
        if self.cta_group not in (1, 2):
            _fail("cta_group", self.cta_group, "1 (one CTA) or 2 (a CTA pair); PTX ISA .cta_group")
        want_m = 128 * self.cta_group
        if self.bm != want_m:
            if self.cta_group == 1:
                _fail("bm", self.bm, "with cta_group=1 this kernel issues M=128 MMAs (bm=128). "
                      "PTX also allows M=64, but its accumulator occupies TMEM lanes in another "
                      "pattern ('Data path layout' of tcgen05.mma) than the row-i-is-lane-i "
                      "layout this epilogue reads")
            _fail("bm", self.bm, "with cta_group=2 this kernel issues M=256 MMAs (bm=256: 128 rows "
                  "per CTA of the pair). PTX also allows M=128 for a pair, with 64 rows per CTA in "
                  "a different TMEM layout that this epilogue does not read")
        if not (32 <= self.bn <= 256 and self.bn % 32 == 0):
            _fail("bn", self.bn, "a multiple of 32 in 32..256: the MMA's N (PTX: a multiple of 16 "
                  "up to 256 for M=128 and M=256) and the epilogue reads 32 TMEM columns per "
                  "tcgen05.ld.32x32b.x32")
        if self.bk not in BK_VALUES:
            _fail("bk", self.bk, f"one of {BK_VALUES}: whole 128-byte swizzle atoms of 64 "
                  "fp16/bf16 elements along K (one TMA box each; a box's inner extent must not "
                  "exceed the 128-byte swizzle span, cuTensorMapEncodeTiled)")
        if not 1 <= self.stages <= MAX_STAGES:
            _fail("stages", self.stages, f"1..{MAX_STAGES} stages in the ring")
        cols = self.tmem_columns
        if not (32 <= cols <= TMEM_COLUMNS and cols & (cols - 1) == 0):
            _fail("tmem_columns", cols, f"tcgen05.alloc takes a power of two in 32..{TMEM_COLUMNS} "
                  "columns (PTX ISA, tcgen05.alloc)")
        total = self.smem_bytes + STATIC_SMEM
        if total > SMEM_LIMIT:
            _fail("stages", self.stages, f"{self.stages} stages × {self.stage_bytes} bytes + "
                  f"{ALIGN_SLACK} alignment + {STATIC_SMEM} static = {total} bytes of shared memory "
                  f"per CTA, above the {SMEM_LIMIT}-byte (227 KiB) limit of sm_100")

    # -- derived sizes -------------------------------------------------------------------------
    @property
    def rows_per_cta(self) -> int:
        """Rows of A (and of C) one CTA holds: 128."""
        return self.bm // self.cta_group

    @property
    def b_rows_per_cta(self) -> int:
        """Rows of Bᵀ (columns of B) one CTA loads: bn / cta_group."""
        return self.bn // self.cta_group

    @property
    def stage_bytes(self) -> int:
        """Shared memory of one stage in one CTA: its A and Bᵀ boxes, bytes."""
        return (self.rows_per_cta + self.b_rows_per_cta) * self.bk * 2

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory per CTA (bytes): alignment slack + the stage ring."""
        return ALIGN_SLACK + self.stages * self.stage_bytes

    @property
    def tmem_columns(self) -> int:
        """Columns tcgen05.alloc asks for: bn fp32 accumulators, rounded up to a power of two."""
        c = 32
        while c < self.bn:
            c *= 2
        return c

    @property
    def cluster(self) -> tuple[int, int, int] | None:
        return (2, 1, 1) if self.cta_group == 2 else None

    def grid(self, m: int, n: int) -> tuple[int, int, int]:
        """(cta_group · ceil(M/bm), ceil(N/bn), 1): one MMA tile per CTA (pair)."""
        return (self.cta_group * -(-m // self.bm), -(-n // self.bn), 1)

    @property
    def defines(self) -> dict:
        return dict(DT=DTYPES[self.dtype], BM=self.bm, BN=self.bn, BK=self.bk, STAGES=self.stages,
                    CTA_GROUP=self.cta_group)

    @property
    def idesc(self) -> int:
        return instruction_descriptor(self).encode()

    @property
    def a_desc(self) -> int:
        """Descriptor template of A's K-major 128B-swizzled slabs (start address 0)."""
        return operand_descriptor().encode()

    @property
    def b_desc(self) -> int:
        """Descriptor template of Bᵀ's K-major 128B-swizzled slabs (start address 0)."""
        return operand_descriptor().encode()

    def label(self) -> str:
        pair = "CTA pair" if self.cta_group == 2 else "1 CTA"
        return f"{self.dtype} {self.bm}x{self.bn}x{self.bk} {self.stages} stages, {pair}"

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def kstep_offsets(cfg: GemmConfig, operand: str) -> list[int]:
    """Byte offset, from the operand's part of a stage, of the first element each tcgen05.mma of
    one k-tile reads — the kernel's formula, mirrored: slab j = s // 4 (one 64-element, 128-byte
    swizzle atom column of ``rows`` × 128 bytes, one TMA box) at j × rows × 128, then the k-step
    s % 4 inside the atom at 32 · (s % 4) bytes (16 elements × 2 bytes). ``operand`` "A" (rows =
    128 per CTA) or "B" (rows = bn / cta_group per CTA). The chapter checks these against where
    TMA puts each element (tests/test_tcgen05.py, with :mod:`asynctc.models.descriptors`' layout model)."""
    rows = {"A": cfg.rows_per_cta, "B": cfg.b_rows_per_cta}[operand]
    return [(s // 4) * rows * SWIZZLE_BYTES + 32 * (s % 4) for s in range(cfg.bk // 16)]


#: The variants the tests compile and the suite runs.
SUITE_CONFIGS = (
    GemmConfig("float16", 128, 128, 64, 4, 1),
    GemmConfig("bfloat16", 128, 128, 64, 4, 1),
    GemmConfig("float16", 128, 256, 64, 4, 1),
    GemmConfig("float16", 128, 64, 128, 4, 1),
    GemmConfig("float16", 256, 256, 64, 4, 2),
    GemmConfig("bfloat16", 256, 256, 64, 4, 2),
    GemmConfig("float16", 256, 128, 64, 6, 2),
)
