"""The deep dive's persistent tcgen05 GEMM (``kernels/tcgen05_persistent.cu``): configure, compile, SASS, run.

Two TMEM accumulators (the epilogue of tile t overlaps the MMAs of tile t + 1), a static or cluster
launch control (``clusterlaunchcontrol.try_cancel``) tile scheduler, CTA pairs (``cta_group::2``)
with A multicast across two MMA groups of a cluster, and block-scaled ``kind::mxf8f6f4`` with the
scale factors copied into TMEM by ``tcgen05.cp``. :class:`PersistentConfig` validates every rule
(:class:`~asynctc.tcgen05.config.Tcgen05Error` naming field, value, rule);
:func:`compile_persistent` / :func:`persistent_sass_summary` need no GPU; :func:`run_persistent`
refuses before any allocation unless the GPU is compute capability 10.0.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..core import runtime
from ..core.memory import DeviceArray
from ..models.block_scale import SF_DESCRIPTOR, BlockScaledIdesc
from ..models.tcgen05 import InstrDescriptor
from .config import ALIGN_SLACK, ARCH, SMEM_LIMIT, STATIC_SMEM, _fail, _is_int, operand_descriptor
from .launch import _np_dtype, require_sm100

SOURCE = "tcgen05_persistent.cu"
ENTRY = "tcgen05_persistent_gemm"
KINDS = {"f16": 0, "mxf8f6f4": 1}
SCHEDULERS = {"static": 0, "clc": 1}
DTYPES_OF_KIND = {"f16": {"float16": 0, "bfloat16": 1}, "mxf8f6f4": {"float8_e4m3fn": 0}}

#: nvdisasm's names (13.x, sm_100a) of the instructions the persistent kernel is built from, read off
#: its disassembly and pinned by tests/test_tcgen05_persistent.py.
PERSISTENT_SASS_CLASSES = {
    "UTCHMMA": r"^UTCHMMA\b",             # tcgen05.mma kind::f16
    "UTCQMMA": r"^UTCQMMA\b",             # tcgen05.mma kind::mxf8f6f4.block_scale (scale operands)
    "UTCCP": r"^UTCCP\b",                 # tcgen05.cp.128x128b → UTCCP.T.S.128dp128bit
    "UTCBAR": r"^UTCBAR\b",               # tcgen05.commit (.MULTICAST / .2CTA)
    "LDTM": r"^LDTM\b",                   # tcgen05.ld
    "UTCATOMSWS": r"^UTCATOMSWS\b",       # tcgen05.alloc / dealloc
    "UGETNEXTWORKID": r"^UGETNEXTWORKID\b",  # clusterlaunchcontrol.try_cancel (.SELFCAST / .BROADCAST)
    "UTMALDG": r"^UTMALDG\b",             # TMA loads (.MULTICAST, .2CTA)
    "SYNCS": r"^SYNCS\.",                 # mbarrier
    "UCGABAR": r"^UCGABAR",               # barrier.cluster
    "LDL": r"^LDL\b",
    "STL": r"^STL\b",
}
#: What ``python -m asynctc sass`` counts for kernels of ``kernels/tcgen05_persistent.cu``.
SASS_CLASSES = PERSISTENT_SASS_CLASSES


@dataclasses.dataclass(frozen=True)
class PersistentConfig:
    """One compiled variant of the persistent kernel.

    ``kind`` "f16" (``dtype`` float16 / bfloat16) or "mxf8f6f4" (``dtype`` float8_e4m3fn, block-scaled
    with UE8M0 scales per 32 elements of K; one CTA, ``bn`` = ``bk`` = 128); ``cta_group`` 1 or 2 (a
    CTA pair, M = 256 per MMA); ``cluster_n`` 1 or 2 (MMA groups side by side along N in a cluster,
    sharing A by multicast); ``bn`` (N per MMA, a multiple of 32 up to 256: two accumulators of bn
    columns); ``bk`` (elements of K per stage, whole 128-byte atoms); ``stages``; ``sched`` "static"
    or "clc". Raises :class:`~asynctc.tcgen05.config.Tcgen05Error`."""

    kind: str = "f16"
    dtype: str = "float16"
    cta_group: int = 1
    cluster_n: int = 1
    bn: int = 128
    bk: int = 64
    stages: int = 4
    sched: str = "clc"

    def __post_init__(self):
        if self.kind not in KINDS:
            _fail("kind", self.kind, f"one of {sorted(KINDS)} (PTX ISA tcgen05.mma .kind)")
        if self.dtype not in DTYPES_OF_KIND[self.kind]:
            _fail("dtype", self.dtype, f"kind::{self.kind} here takes {sorted(DTYPES_OF_KIND[self.kind])}")
        for f in ("cta_group", "cluster_n", "bn", "bk", "stages"):
            if not _is_int(getattr(self, f)):
                _fail(f, getattr(self, f), "must be an int (it becomes a -D define of the kernel)")
        if self.cta_group not in (1, 2):
            _fail("cta_group", self.cta_group, "1 (one CTA) or 2 (a CTA pair); PTX ISA .cta_group")
        if self.cluster_n not in (1, 2):
            _fail("cluster_n", self.cluster_n, "1 or 2 MMA groups per cluster (A multicast between two)")
        if self.sched not in SCHEDULERS:
            _fail("sched", self.sched, f"one of {sorted(SCHEDULERS)}")
        if not (32 <= self.bn <= 256 and self.bn % 32 == 0):
            _fail("bn", self.bn, "a multiple of 32 in 32..256 (tcgen05.ld.32x32b.x32 chunks)")
        atom = self.atom_k
        if not (self.bk % atom == 0 and atom <= self.bk <= 4 * atom):
            _fail("bk", self.bk, f"1..4 whole 128-byte swizzle atoms of {atom} elements")
        if not 1 <= self.stages <= 8:
            _fail("stages", self.stages, "1..8 stages in the ring")
        if self.kind == "mxf8f6f4" and (self.cta_group, self.cluster_n, self.bn, self.bk) != (1, 1, 128, 128):
            _fail("kind", self.kind, "block scaling is built for one CTA (cta_group=1, cluster_n=1), "
                  "bn=128 (one scale lane per column of B) and bk=128 (four 32-element scale blocks)")
        if self.tmem_needed > 512:
            _fail("bn", self.bn, f"two accumulators need {self.tmem_needed} TMEM columns, above 512")
        total = self.smem_bytes + STATIC_SMEM
        if total > SMEM_LIMIT:
            _fail("stages", self.stages, f"{self.stages} stages × {self.stage_bytes} bytes + "
                  f"{ALIGN_SLACK} + {STATIC_SMEM} = {total} bytes, above the {SMEM_LIMIT}-byte limit")

    # -- derived ----------------------------------------------------------------------------------
    @property
    def elem_bytes(self) -> int:
        return 1 if self.kind == "mxf8f6f4" else 2

    @property
    def atom_k(self) -> int:
        return 128 // self.elem_bytes

    @property
    def bm(self) -> int:
        return 128 * self.cta_group

    @property
    def cluster_size(self) -> int:
        return self.cta_group * self.cluster_n

    @property
    def stage_bytes(self) -> int:
        """Per CTA: its A slab(s) (128 rows), its bn / cta_group rows of Bᵀ, and (block-scaled) two
        128 × 16-byte scale tiles."""
        ops = (128 + self.bn // self.cta_group) * self.bk * self.elem_bytes
        return ops + (2 * 128 * 16 if self.kind == "mxf8f6f4" else 0)

    @property
    def smem_bytes(self) -> int:
        return ALIGN_SLACK + self.stages * self.stage_bytes

    @property
    def tmem_needed(self) -> int:
        return 2 * self.bn + (8 * self.stages if self.kind == "mxf8f6f4" else 0)

    @property
    def tmem_columns(self) -> int:
        c = 32
        while c < self.tmem_needed:
            c *= 2
        return c

    def tmem_map(self) -> list[tuple[str, int, int]]:
        """(what, first column, columns) of the kernel's TMEM allocation."""
        out = [("accumulator 0", 0, self.bn), ("accumulator 1", self.bn, self.bn)]
        if self.kind == "mxf8f6f4":
            for s in range(self.stages):
                out += [(f"scales A, stage {s}", 2 * self.bn + 8 * s, 4),
                        (f"scales B, stage {s}", 2 * self.bn + 8 * s + 4, 4)]
        return out

    @property
    def defines(self) -> dict:
        return dict(KIND=KINDS[self.kind], DT=DTYPES_OF_KIND[self.kind][self.dtype],
                    CTA_GROUP=self.cta_group, CLUSTER_N=self.cluster_n, BN=self.bn, BK=self.bk,
                    STAGES=self.stages, SCHED=SCHEDULERS[self.sched])

    @property
    def idesc(self) -> int:
        """The instruction descriptor template (block-scaled: scale IDs 0; the kernel ORs in k-step
        w's IDs)."""
        if self.kind == "mxf8f6f4":
            return BlockScaledIdesc(self.dtype, self.dtype, 128, self.bn).encode()
        return InstrDescriptor(self.dtype, self.dtype, "float32", self.bm, self.bn,
                               cta_group=self.cta_group).encode()

    @property
    def a_desc(self) -> int:
        return operand_descriptor().encode()

    @property
    def sf_desc(self) -> int:
        return SF_DESCRIPTOR.encode()

    def units(self, m: int, n: int) -> int:
        """Work units: ceil(M / bm) × ceil(N / (bn · cluster_n)), one per cluster launch."""
        return -(-m // self.bm) * -(-n // (self.bn * self.cluster_n))

    def grid(self, m: int, n: int, sm_count: int = 148) -> tuple[int, int, int]:
        """CLC: one cluster per unit (the running ones cancel the rest). Static: as many clusters as
        the SMs hold (one CTA per SM), at most one per unit."""
        u = self.units(m, n)
        if self.sched == "static":
            u = min(u, max(1, sm_count // self.cluster_size))
        return (u * self.cluster_size, 1, 1)

    def label(self) -> str:
        kind = "block-scaled e4m3" if self.kind == "mxf8f6f4" else self.dtype
        pair = "CTA pair" if self.cta_group == 2 else "1 CTA"
        mc = ", A multicast ×2" if self.cluster_n == 2 else ""
        return (f"persistent {kind} {self.bm}x{self.bn}x{self.bk} {self.stages} stages, {pair}{mc}, "
                f"2 accumulators, {self.sched} scheduler")

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


#: The variants the tests compile and the catalogue names.
PERSISTENT_CONFIGS = (
    PersistentConfig("f16", "float16", 1, 1, 128, 64, 4, "clc"),
    PersistentConfig("f16", "bfloat16", 1, 1, 256, 64, 4, "static"),
    PersistentConfig("f16", "float16", 1, 2, 128, 64, 4, "clc"),
    PersistentConfig("f16", "float16", 2, 2, 256, 64, 4, "clc"),
    PersistentConfig("f16", "bfloat16", 2, 1, 256, 64, 5, "static"),
    PersistentConfig("mxf8f6f4", "float8_e4m3fn", 1, 1, 128, 128, 4, "clc"),
)


def compile_persistent(cfg: PersistentConfig, arch: str = ARCH) -> runtime.CompiledKernel:
    """NVRTC → sm_100a cubin for ``cfg`` (no GPU needed); any other ``arch`` is refused."""
    if arch != ARCH:
        _fail("arch", arch, "tcgen05 and clusterlaunchcontrol exist only for architecture-specific "
              "Blackwell targets; the course compiles them for sm_100a")
    return runtime.compile_kernel(SOURCE, ENTRY, arch, defines=cfg.defines)


def persistent_sass_summary(cfg: PersistentConfig, arch: str = ARCH) -> dict:
    """Static instruction-class counts (:data:`PERSISTENT_SASS_CLASSES`), registers, spills and
    ``full`` opcode-with-modifier counts of those classes."""
    from ..core import sass
    ck = compile_persistent(cfg, arch)
    text = sass.disassemble(ck.cubin)
    out: dict = {k: 0 for k in PERSISTENT_SASS_CLASSES}
    out.update(sass.class_counts(text, PERSISTENT_SASS_CLASSES))
    out["registers"] = ck.resources.registers
    out["static_smem"] = ck.resources.shared_bytes
    out["spill_bytes"] = ck.resources.spill_stores + ck.resources.spill_loads
    keep = set(PERSISTENT_SASS_CLASSES) | {"UCGABAR_ARV", "UCGABAR_WAIT"}
    out["full"] = {op: c for op, c in sorted(sass.opcode_counts(text).items())
                   if op.split(".")[0] in keep}
    return out


def check_operands(a: np.ndarray, b: np.ndarray, cfg: PersistentConfig, sfa=None, sfb=None):
    """Validate host operands; returns (M, N, K). A (M×K), B (K×N) of ``cfg.dtype``; K a multiple of
    8 (16-byte TMA row pitch; for block scaling a multiple of 128 and UE8M0 codes ``sfa`` (M × K/32)
    and ``sfb`` (N × K/32) uint8). Raises :class:`~asynctc.tcgen05.config.Tcgen05Error`."""
    dt = _np_dtype(cfg.dtype)
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, np.ndarray):
            _fail(name, type(x).__name__, "must be a numpy array")
        if x.ndim != 2:
            _fail(f"{name}.shape", x.shape, "must be 2-D")
        if np.dtype(x.dtype) != dt:
            _fail(f"{name}.dtype", np.dtype(x.dtype).name, f"must be {dt.name} (cfg.dtype)")
    (m, k), (k2, n) = a.shape, b.shape
    if k2 != k:
        _fail("b.shape", b.shape, f"must be (K, N) with K = a.shape[1] = {k}")
    if min(m, n, k) < 1:
        _fail("a.shape", a.shape, "M, N and K must be ≥ 1")
    step = 128 if cfg.kind == "mxf8f6f4" else 8
    if k % step:
        _fail("K", k, f"must be a multiple of {step} (the TMA row pitch"
              + ("; whole 128-element k-tiles of four scale blocks)" if step == 128 else ")"))
    if cfg.kind == "mxf8f6f4":
        for name, x, rows in (("sfa", sfa, m), ("sfb", sfb, n)):
            if not isinstance(x, np.ndarray) or x.dtype != np.uint8 or x.shape != (rows, k // 32):
                _fail(name, getattr(x, "shape", type(x).__name__),
                      f"a uint8 array of UE8M0 codes, shape ({rows}, {k // 32})")
    return m, n, k


def run_persistent(a: np.ndarray, b: np.ndarray, cfg: PersistentConfig, sfa=None, sfb=None,
                   stream=None) -> np.ndarray:
    """C = a · b (block-scaled: (a·2^(sfa−127)) (b·2^(sfb−127))) with the persistent kernel; returns
    C (M×N float32). Checks the GPU first (:class:`~asynctc.tcgen05.config.WrongGPUError` off
    compute capability 10.0 — nothing allocated or launched), then the operands; the output is
    poisoned; a timed-out wait raises RuntimeError."""
    from .. import tma
    from ..models.block_scale import pack_scales
    info = require_sm100()
    m, n, k = check_operands(a, b, cfg, sfa, sfb)
    da = DeviceArray.from_host(np.ascontiguousarray(a), stream)
    dbt = DeviceArray.from_host(np.ascontiguousarray(b.T), stream)
    dc = DeviceArray.poisoned((m, n), np.float32, stream)
    derr = DeviceArray.from_host(np.zeros(1, np.uint32), stream)
    rows_a = 128 // cfg.cluster_n
    ta, _ = tma.make_tensor_map(da, (rows_a, cfg.atom_k), swizzle=128)
    tb, _ = tma.make_tensor_map(dbt, (cfg.bn // cfg.cta_group, cfg.atom_k), swizzle=128)
    tsa, tsb = ta, tb
    if cfg.kind == "mxf8f6f4":
        dsa = DeviceArray.from_host(pack_scales(sfa), stream)
        dsb = DeviceArray.from_host(pack_scales(sfb), stream)
        tsa, _ = tma.make_tensor_map(dsa, (128, 16), swizzle=0)
        tsb, _ = tma.make_tensor_map(dsb, (128, 16), swizzle=0)
    ck = compile_persistent(cfg)
    grid = cfg.grid(m, n, info.sm_count)
    runtime.check_launch(grid, 192, cfg.smem_bytes, ck)
    cluster = (cfg.cluster_size, 1, 1) if cfg.cluster_size > 1 else None
    runtime.launch(ck, grid, 192, ta, tb, tsa, tsb, dc, np.int32(m), np.int32(n), np.int32(k),
                   np.uint64(cfg.a_desc), np.uint64(cfg.a_desc), np.uint32(cfg.idesc),
                   np.uint64(cfg.sf_desc), derr, shmem_bytes=cfg.smem_bytes, stream=stream,
                   cluster=cluster)
    e = int(derr.to_host(stream)[0])
    if e:
        raise RuntimeError(f"persistent tcgen05 GEMM {cfg.label()} on {m}x{n}x{k}: error word "
                           f"{e:#x} (code {e & 0xFF}, wait tag {e >> 8})")
    return dc.to_host(stream)
