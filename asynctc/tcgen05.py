"""Chapter 09's Blackwell GEMM on tcgen05 (``kernels/tcgen05.cu``): compile, run, verify, SASS.

``C = A · B`` with A (M×K) and B (K×N) fp16 or bf16, C (M×N) fp32, the accumulator in Tensor Memory
(TMEM). One CTA (``cta_group=1``, an M=128 MMA) or a CTA pair (``cta_group=2``, a cluster of two
CTAs, an M=256 MMA issued by the even CTA). TMA loads a ring of ``stages`` shared-memory stages
(full / empty mbarriers); one thread issues ``tcgen05.mma.kind::f16`` with shared-memory
descriptors and an instruction descriptor; ``tcgen05.commit`` releases each stage and finally
hands the accumulator to four epilogue warps, which read it with ``tcgen05.ld`` and store fp32 C.
The kernel's comments give the ordering rule (PTX ISA section) behind every fence and barrier.

The verbs, as in every kernel family of the course:

* :func:`compile_gemm` — NVRTC → sm_100a cubin; works on any machine, with or without a GPU;
* :func:`run_gemm` — validate, then launch; **refuses** before touching the GPU unless the GPU is
  compute capability 10.0 (an sm_100a cubin runs nowhere else; an H200 is 9.0);
* :func:`verify_gemm` — fresh random inputs, poisoned output, an elementwise bound against float64;
* :func:`sass_summary` — what the GPU would execute: UTCHMMA, UTCBAR, LDTM, UTCATOMSWS, UTMALDG, ...

``SUITES["tcgen05"]`` (``python -m asynctc record tcgen05``, compute capability 10.0 only) checks
every configuration of :data:`SUITE_CONFIGS`, then times them beside cuBLAS in the same run.

Descriptors. The 32-bit instruction descriptor and the 64-bit sm_100 shared-memory descriptor are
encoded here by :func:`_idesc` and :func:`_smem_desc`, small private encoders with their bit
layouts cited; the lead engineer switches them to ``asynctc.models.tcgen05`` (the chapter's model
of both descriptors) when the two branches meet. They travel as kernel parameters, so the cubin and
its SASS do not depend on their values.

PTX ISA references (8.6+, "TensorCore 5th Generation Family Instructions"): "Tensor Memory",
"Matrix Descriptors" (shared memory descriptor), "Instruction descriptor", "tcgen05.alloc",
"tcgen05.mma", "tcgen05.commit", "tcgen05.ld", "tcgen05.wait", "tcgen05.fence", "Memory
Consistency Model for 5th generation of TensorCore operations"; "cp.async.bulk.tensor" (.cta_group).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .core import runtime
from .core.memory import DeviceArray
from .models.tcgen05 import InstrDescriptor, Tcgen05Descriptor

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


# --------------------------------------------------------------------------------------------------
# Compile, SASS
# --------------------------------------------------------------------------------------------------

def compile_gemm(cfg: GemmConfig, arch: str = ARCH) -> runtime.CompiledKernel:
    """Compile the tcgen05 GEMM for ``cfg`` to cubin (no GPU needed).

    Raises :class:`Tcgen05Error` for an ``arch`` other than ``sm_100a`` (tcgen05 is an
    architecture-specific feature: sm_100a, not plain sm_100 or sm_90a), and
    :class:`~asynctc.core.runtime.CompileError` when NVRTC rejects the source.
    """
    if arch != ARCH:
        _fail("arch", arch, "tcgen05 instructions exist only for architecture-specific Blackwell "
              "targets; the course compiles them for sm_100a (PTX ISA, tcgen05 'Target ISA notes')")
    cfg.validate()
    return runtime.compile_kernel(SOURCE, ENTRY, arch, defines=cfg.defines)


#: Instruction classes of a tcgen05 GEMM in nvdisasm's names (nvdisasm 13.5, sm_100a).
SASS_CLASSES = {
    "UTCHMMA": r"^UTCHMMA\b",         # tcgen05.mma kind::f16 (.2CTA for cta_group::2)
    "UTCQMMA": r"^UTCQMMA\b",         # tcgen05.mma kind::f8f6f4 (not in this kernel)
    "UTCBAR": r"^UTCBAR\b",           # tcgen05.commit (.MULTICAST with a cta mask)
    "LDTM": r"^LDTM\b",               # tcgen05.ld
    "UTCATOMSWS": r"^UTCATOMSWS\b",   # tcgen05.alloc (FIND_AND_SET) / dealloc (AND)
    "UVIRTCOUNT": r"^UVIRTCOUNT\b",   # tcgen05.relinquish_alloc_permit (.DEALLOC.SMPOOL)
    "UTMALDG": r"^UTMALDG\b",         # TMA loads (.2CTA for the pair's form)
    "UTMACCTL": r"^UTMACCTL\b",       # prefetch.tensormap
    "SYNCS": r"^SYNCS\.",             # mbarrier init / arrive / try_wait
    "UCGABAR": r"^UCGABAR",           # barrier.cluster arrive / wait
    "BAR": r"^BAR\b",                 # __syncthreads
    "LDL": r"^LDL\b",                 # local memory: spills
    "STL": r"^STL\b",
}


def sass_summary(cfg: GemmConfig, arch: str = ARCH) -> dict:
    """Instruction-class counts of the compiled kernel (static counts in the SASS, not executed
    counts) plus ptxas's registers and spill bytes: ``{"UTCHMMA": 4, ..., "registers": 48,
    "spill_bytes": 0, "full": {opcode-with-modifiers: count}}``. No GPU needed."""
    from .core import sass
    ck = compile_gemm(cfg, arch)
    text = sass.disassemble(ck.cubin)
    out: dict = {k: 0 for k in SASS_CLASSES}
    out.update(sass.class_counts(text, SASS_CLASSES))
    out["registers"] = ck.resources.registers
    out["static_smem"] = ck.resources.shared_bytes
    out["spill_bytes"] = ck.resources.spill_stores + ck.resources.spill_loads
    full = sass.opcode_counts(text)
    out["full"] = {op: c for op, c in sorted(full.items())
                   if op.split(".")[0] in set(SASS_CLASSES) | {"UCGABAR_ARV", "UCGABAR_WAIT"}}
    return out


# --------------------------------------------------------------------------------------------------
# Run
# --------------------------------------------------------------------------------------------------

def require_sm100() -> runtime.DeviceInfo:
    """Return the GPU's :class:`~asynctc.core.runtime.DeviceInfo` if it runs sm_100a code; otherwise
    raise :class:`WrongGPUError` with the reason. Makes no driver call beyond
    :func:`runtime.device_info`'s probe (so it is safe on any machine)."""
    info = runtime.device_info()
    if info is None:
        raise WrongGPUError("tcgen05 needs sm_100 (compute capability 10.0); no GPU is usable here ("
                            + (runtime.why_not_live(ARCH) or "none found") + ")")
    if tuple(info.cc) != runtime.ARCH_CC[ARCH]:
        extra = ""
        if info.cc[0] == 10:
            extra = (": sm_100a cubins run only on 10.0 (architecture-specific 'a' targets are not "
                     "forward compatible)")
        raise WrongGPUError(f"tcgen05 needs sm_100 (compute capability 10.0); this GPU is "
                            f"{info.cc[0]}.{info.cc[1]} ({info.name}){extra}")
    return info


def _np_dtype(name: str) -> np.dtype:
    if name == "float16":
        return np.dtype(np.float16)
    import ml_dtypes
    return np.dtype(getattr(ml_dtypes, name))


def check_operands(a: np.ndarray, b: np.ndarray, cfg: GemmConfig) -> tuple[int, int, int]:
    """Validate the host operands of :func:`run_gemm`; returns (M, N, K).

    ``a`` M×K and ``b`` K×N, both of ``cfg.dtype``; K a multiple of 8 (the TMA global row pitch,
    K × 2 bytes, must be a multiple of 16: cuTensorMapEncodeTiled). Raises :class:`Tcgen05Error`.
    """
    dt = _np_dtype(cfg.dtype)
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, np.ndarray):
            _fail(f"{name}", type(x).__name__, "must be a numpy array")
        if x.ndim != 2:
            _fail(f"{name}.shape", x.shape, "must be 2-D")
        if np.dtype(x.dtype) != dt:
            _fail(f"{name}.dtype", np.dtype(x.dtype).name, f"must be {dt.name} (cfg.dtype)")
    m, k = a.shape
    k2, n = b.shape
    if k2 != k:
        _fail("b.shape", b.shape, f"must be (K, N) with K = a.shape[1] = {k}")
    if min(m, n, k) < 1:
        _fail("a.shape", a.shape, "M, N and K must be ≥ 1")
    if k % 8:
        _fail("K", k, "must be a multiple of 8: each row of A and Bᵀ is a TMA global stride of "
              "K × 2 bytes, which must be a multiple of 16 (cuTensorMapEncodeTiled)")
    gx, gy, _ = cfg.grid(m, n)
    if gy > 65535:
        _fail("N", n, f"needs {gy} CTA columns; grid.y is limited to 65535")
    return m, n, k


def _decode_error(word: int) -> str:
    """The kernel's error word as a sentence: code (bits 0..7) and, for a timed-out wait, which."""
    code, tag = word & 0xFF, word >> 8
    if code == 2:
        return (f"error word {word:#x}: a CTA-pair kernel (cta_group=2) ran without a cluster of two "
                "CTAs; launch it with cluster=(2, 1, 1)")
    what = WAIT_TAGS.get(tag, f"tag {tag}")
    return f"error word {word:#x}: code {code} (1 = mbarrier wait timed out), {what}"


def launcher(cfg: GemmConfig, da: DeviceArray, dbt: DeviceArray, dc: DeviceArray,
             derr: DeviceArray, stream=None):
    """A callable that launches the kernel on device operands: ``da`` (M×K), ``dbt`` (Bᵀ, N×K),
    ``dc`` (M×N fp32), ``derr`` (one uint32). Checks the device first (:func:`require_sm100`)."""
    from . import tma
    require_sm100()
    m, k = da.shape
    n = dbt.shape[0]
    ck = compile_gemm(cfg)
    ta, _ = tma.make_tensor_map(da, (cfg.rows_per_cta, 64), swizzle=SWIZZLE_BYTES)
    tb, _ = tma.make_tensor_map(dbt, (cfg.b_rows_per_cta, 64), swizzle=SWIZZLE_BYTES)
    grid = cfg.grid(m, n)
    runtime.check_launch(grid, THREADS, cfg.smem_bytes, ck)
    args = (ta, tb, dc, np.int32(m), np.int32(n), np.int32(k), np.uint64(cfg.a_desc),
            np.uint64(cfg.b_desc), np.uint32(cfg.idesc), derr)

    def run():
        runtime.launch(ck, grid, THREADS, *args, shmem_bytes=cfg.smem_bytes, stream=stream,
                       cluster=cfg.cluster)
    return run


def run_gemm(a: np.ndarray, b: np.ndarray, cfg: GemmConfig, stream=None) -> np.ndarray:
    """C = a · b on the GPU with the tcgen05 kernel; returns C (M×N float32, host).

    ``a`` (M×K) and ``b`` (K×N) numpy arrays of ``cfg.dtype``; any M, N ≥ 1 and K a multiple of 8
    (edges are zero-filled by TMA and not stored). Order of checks: the GPU first
    (:class:`WrongGPUError` on anything but compute capability 10.0 — nothing is allocated or
    launched), then the operands (:class:`Tcgen05Error`). The output is poisoned (NaN) before the
    launch. Raises :class:`RuntimeError` when the kernel reports a timed-out mbarrier wait.
    """
    require_sm100()
    check_operands(a, b, cfg)
    m, k = a.shape
    n = b.shape[1]
    da = DeviceArray.from_host(np.ascontiguousarray(a), stream)
    dbt = DeviceArray.from_host(np.ascontiguousarray(b.T), stream)
    dc = DeviceArray.poisoned((m, n), np.float32, stream)
    derr = DeviceArray.from_host(np.zeros(1, np.uint32), stream)
    launcher(cfg, da, dbt, dc, derr, stream)()
    e = int(derr.to_host(stream)[0])
    if e:
        raise RuntimeError(f"tcgen05 GEMM {cfg.label()} on {m}x{n}x{k}: {_decode_error(e)}")
    return dc.to_host(stream)


# --------------------------------------------------------------------------------------------------
# Verify
# --------------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------------
# Record suite (compute capability 10.0 only)
# --------------------------------------------------------------------------------------------------

SUITE_SIZES = (2048, 4096, 8192)


def measure_tcgen05(progress=None) -> dict:
    """The "tcgen05" suite: every :data:`SUITE_CONFIGS` variant checked on every
    :func:`check_shapes` shape (a failure stops the suite: a wrong kernel is never timed), then
    each variant and cuBLAS timed on the same s×s×s operands for s in :data:`SUITE_SIZES` (cuBLAS
    writes C in the input dtype, this kernel fp32). Timed outputs are checked on sampled rows."""
    from .core import bench, records
    say = progress or (lambda _s: None)
    info = require_sm100()
    out: dict = {"checks": [], "sweep": [], "sass": [], "baseline_library": bench.baseline_library(),
                 "sm_count": info.sm_count}
    rng = np.random.default_rng()
    for cfg in SUITE_CONFIGS:
        s = sass_summary(cfg)
        s.pop("full")
        out["sass"].append({**cfg.as_dict(), **s})
        for shp in check_shapes(cfg):
            chk = verify_gemm(cfg, shp, rng)
            out["checks"].append(chk.as_dict())
            if not chk.passed:
                raise RuntimeError(f"tcgen05 GEMM wrong: {cfg.label()} {shp}: {chk.as_dict()}")
        say(f"checked {cfg.label()}")
    for size in SUITE_SIZES:
        for dtype in DTYPES:
            a, b = random_operands(size, size, size, dtype, rng)
            da, db = DeviceArray.from_host(a), DeviceArray.from_host(b)
            dbt = DeviceArray.from_host(np.ascontiguousarray(b.T))
            flop = 2.0 * size ** 3
            if out["baseline_library"]:
                dc16 = DeviceArray.poisoned((size, size), a.dtype)
                t = bench.time_gpu(bench.cublas_gemm(da, db, dc16), reps=20)
                out["sweep"].append({"dtype": dtype, "size": size, "kernel": "cuBLAS",
                                     **t.as_dict(), "tflops": bench.tflops(flop, t.median_ms)})
                del dc16
            for cfg in SUITE_CONFIGS:
                if cfg.dtype != dtype:
                    continue
                dc = DeviceArray.poisoned((size, size), np.float32)
                derr = DeviceArray.from_host(np.zeros(1, np.uint32))
                run = launcher(cfg, da, dbt, dc, derr)
                t = bench.time_gpu(run, reps=20)
                e = int(derr.to_host()[0])
                if e:
                    raise RuntimeError(f"tcgen05 GEMM {cfg.label()} {size}³: {_decode_error(e)}")
                rows = rng.choice(size, size=8, replace=False)
                got = dc.to_host()[rows]
                chk = compare(got, a[rows], b, cfg)
                if not chk.passed:
                    raise RuntimeError(f"timed run wrong: {cfg.label()} {size}³: {chk.as_dict()}")
                out["sweep"].append({"dtype": dtype, "size": size, "kernel": "tcgen05",
                                     "config": cfg.as_dict(), "label": cfg.label(), **t.as_dict(),
                                     "tflops": bench.tflops(flop, t.median_ms),
                                     "sampled_rows_max_ratio": chk.max_ratio})
                say(f"{size}³ {cfg.label()}: {out['sweep'][-1]['tflops']:.0f} TFLOP/s")
            del da, db, dbt
    out["clocks_after"] = records.nvidia_smi_clocks()
    return out


def summarize_tcgen05(rec) -> str:
    """The record as text: checks passed, then TFLOP/s per variant and size with the ratio to the
    cuBLAS run of the same record."""
    r = rec.results
    ok = sum(c["passed"] for c in r["checks"])
    lines = [rec.label(), f"correctness: {ok}/{len(r['checks'])} checks passed"]
    base = {(x["dtype"], x["size"]): x["tflops"] for x in r["sweep"] if x["kernel"] == "cuBLAS"}
    for x in r["sweep"]:
        if x["kernel"] != "tcgen05":
            continue
        b = base.get((x["dtype"], x["size"]))
        ratio = f"{x['tflops'] / b:.2f} of cuBLAS ({b:.0f})" if b else "no baseline"
        lines.append(f"{x['size']:5d}³ {x['label']:44s} {x['tflops']:7.1f} TFLOP/s  {ratio}")
    return "\n".join(lines)


SUITES = {"tcgen05": (measure_tcgen05, summarize_tcgen05, ARCH)}
