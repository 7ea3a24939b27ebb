"""Chapter 06's kernel ladder: warp specialization past chapter 05 — compile, run, verify, measure.

``kernels/warp_specialization.cu`` computes ``C = A · B`` (A M×K, B K×N, fp16 or bf16; C M×N fp32,
or the input dtype) with chapter 05's ring of TMA-filled stages (same boxes, swizzle, descriptors:
:mod:`asynctc.pipeline`), but the warpgroups specialise: warpgroup 0 is the *producer* (one of its
threads issues every TMA load, the others leave), warpgroups 1..``consumers`` are *consumers*
(wgmma only). The protocol (full/empty mbarriers per stage, phase parity from a ring counter that
carries across tiles, release order, why it cannot deadlock) is written out at the top of the
kernel source (:func:`source`).

Each rung of the chapter's ladder is a compile-time switch of that one file, listed in
:data:`RUNGS` with what changes and the prediction written before the run:

1. ``ch05`` — chapter 05's best configuration, run through :mod:`asynctc.pipeline` (the reference);
2. ``ws`` — one producer, one consumer warpgroup (128×128 tile: the consumer owns two m64 atoms);
3. ``ws_setmaxnreg`` — two consumers (128×256, 64 rows each), ``setmaxnreg`` 40 / 232,
   ``__launch_bounds__(384, 1)``;
4. ``tile`` — the fastest (tile, stages) of :data:`TILE_SWEEP` within the shared-memory budget;
5. ``persistent`` — grid = SMs, static group-M tile order, the producer runs ahead across tiles;
6. ``cluster`` — clusters of 2 CTAs along M, each multicasting half of the shared B tile;
7. ``tma_store`` — the epilogue through shared memory (stmatrix) and a TMA store.

The verbs, as in every kernel family: :func:`compile_ws` (NVRTC → cubin for sm_90a, no GPU),
:func:`run_ws` (validate in Python, then launch), :func:`verify_ws` (fresh random inputs,
poisoned output, float64, elementwise bound — :func:`asynctc.pipeline.compare_elementwise`).
:class:`WSConfig` validates every knob (:class:`WarpSpecializationError` names field, value and
rule). ``SUITES["warp_specialization"]`` (``tools/gpu_ch06.py --record``) checks every rung, then
times the ladder beside cuBLAS.

PTX ISA references: "setmaxnreg" (register reconfiguration per warpgroup; the count must be known
at entry: ``__launch_bounds__`` / ``.maxnreg``), "mbarrier" (arrive, expect_tx, try_wait.parity),
"cp.async.bulk.tensor", §9.7.15 wgmma; CUDA C++ Programming Guide "Compute Capabilities" (64K
registers and 228 KiB shared memory per SM, 227 KiB per CTA).
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Callable, NamedTuple

import numpy as np

from . import pipeline as P
from .core import checks, runtime
from .core.memory import DeviceArray

SOURCE = "warp_specialization.cu"
ENTRY = "gemm_warp_specialized"

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


@dataclasses.dataclass(frozen=True)
class WSConfig(P.RingTile):
    """The compile-time knobs of ``kernels/warp_specialization.cu``.

    ``dtype`` "float16" | "bfloat16" | "float8_e4m3fn" | "float8_e5m2"; CTA tile ``bm`` × ``bn`` ×
    ``bk``, bk = one 128-byte swizzle row of K (64 16-bit or 128 fp8 elements; None picks it);
    ``stages`` 2..6; ``consumers``
    1 or 2 consumer warpgroups (each computes ``bm / consumers`` rows × ``bn``), plus one producer
    warpgroup: ``threads`` = 128 · (1 + consumers); ``b_major`` "K" (B stored N×K) or "MN" (K×N);
    ``out_dtype`` "float32" or the input dtype; ``group_m`` tile rows per raster group;
    ``setmaxnreg`` with ``producer_regs`` / ``consumer_regs`` (PTX ISA "setmaxnreg": multiples of 8
    in 24..256, the producer's ≤ the count at entry ≤ the consumers', and 128 · producer_regs +
    128 · consumers · consumer_regs ≤ 65536); ``persistent``: grid = min(SMs, tiles), each CTA
    walks tiles blockIdx.x, + grid, ... (else grid = tiles); ``cluster`` 1 or 2: with 2, the two
    CTAs of a thread-block cluster take tiles (2p, n) and (2p + 1, n) and each loads half of the
    shared B tile with a TMA multicast into both (needs bn ≥ 128 and M a multiple of 2 · bm;
    CUDA C++ Programming Guide "Thread Block Clusters", PTX ISA cp.async.bulk.tensor
    .multicast::cluster); ``tma_store``: C goes registers → shared memory (stmatrix, two 64×64
    buffers of 8 KiB per consumer, 128-byte swizzle) → global (TMA store), needs ``out_dtype`` =
    ``dtype`` (fp8: a 16-bit ``out_dtype``) and :data:`STORE_STAGING` more bytes of shared memory
    per consumer; ``trace`` records timestamped events of the producer and every consumer
    (:func:`decode_trace`).

    FP8 (chapter 07, :mod:`asynctc.fp8`): ``b_major`` must be "K" (PTX ISA §9.7.15.5.2
    "wgmma.mma_async": the transpose is only supported for .f16/.bf16, so fp8 A and B are both
    K-major); ``out_dtype`` "float32", "bfloat16" or "float16"; ``promote`` P > 0 adds the wgmma
    accumulators into a second set of fp32 registers every P k-tiles (the kernel's ``PROMOTE``),
    which doubles the accumulator registers: 2 · accumulators + overhead must fit
    ``consumer_regs`` (128×256 with two consumers does not; 128×128 does). ``promote`` is refused
    for 16-bit inputs (their wgmma accumulates in fp32 already). ``block_scales`` (the kernel's
    ``BLOCK_SCALES``): per-block dequantisation scales, 1×128 for A and 128×128 for B (stored N×K),
    applied where each k-tile's wgmma sums are promoted; needs fp8, ``promote`` = 1 (a k-tile of
    128 fp8 elements is one scale block along K), ``bn`` ≤ 128 (one B block per tile) and no
    ``edges``; the launch then takes the scale tensors (:func:`check_block_scales`) instead of the
    per-tensor ``scales``.
    ``edges``: the ``EDGES`` build (any M, N, K ≥ 1: tile counts and the k-loop round up, TMA
    zero-fills what hangs past the tensor, stores are clipped, C has a row pitch ``ldc``) — what
    :func:`matmul` runs; the ladder's rungs leave it off (their cubins do not change).
    ``swizzle`` (chapter 07, :mod:`asynctc.swizzle`): the swizzle span of the operand tiles, 128
    (the ladder's; sets no define) or 64, 32, 0 bytes — K-major B and ``cluster=1`` only. A
    128-byte K row of a k-tile is then :attr:`k_boxes` TMA boxes (2, 4, 8), and the boxes, the
    tensor maps' swizzle, the descriptor templates and the atom / k-step offsets all come from
    :meth:`stage_tiles` (:meth:`swizzle_defines`).
    ``row_boxes`` (chapter 07): R > 1 loads the 128-byte-swizzle A and B tiles as R TMA boxes each
    along the rows (bm/R and bn/R rows; the ``ROW_BOXES`` define, 1 sets none) — the same
    shared-memory layout byte for byte with 2R box issues per stage, to tell the box count from
    the layout. Needs swizzle=128, K-major B, cluster=1, no edges; R must divide bm and bn into
    boxes of a multiple of 8 rows (the 128-byte swizzle repeats every 8 rows = 1024 bytes), at most
    256 (cuTensorMapEncodeTiled: every boxDim ≤ 256).
    ``tma_once`` (chapter 07, a diagnostic — the result is NOT A·B): the producer fills the ring's
    stages once (the CTA's first ``stages`` k-tiles) and for every later k-tile only arrives on the
    stage's full barrier (plain ``mbarrier.arrive``, no expect_tx, no copy: PTX ISA "mbarrier",
    phase completion), so the consumers' wgmmas read the same stages again and again — wgmma
    throughput on reused stages, without TMA in the loop (the ``TMA_ONCE`` define; False sets
    none). What C then holds: :func:`asynctc.swizzle.tma_once_reference`. Needs the swizzle
    variants' base: persistent, cluster=1, K-major B, row_boxes=1, no edges, 16-bit inputs (any
    swizzle); launches need K ≥ stages · bk (:func:`check_shapes`).

    Shared memory and the accumulator budget are chapter 05's (:meth:`pipeline_config`: same stage
    layout): stages · (bm + bn) · 128 + 1024 slack + 1024 static ≤ the opt-in limit, and
    ≤ 128 fp32 accumulators per consumer thread. :meth:`validate` raises
    :class:`WarpSpecializationError`.
    """

    dtype: str = "float16"
    bm: int = 128
    bn: int = 256
    bk: int | None = None
    stages: int = 4
    consumers: int = 2
    b_major: str = "K"
    out_dtype: str = "float32"
    group_m: int = 8
    setmaxnreg: bool = True
    producer_regs: int = 40
    consumer_regs: int = 232
    persistent: bool = False
    cluster: int = 1
    tma_store: bool = False
    trace: bool = False
    promote: int = 0
    edges: bool = False
    block_scales: bool = False
    swizzle: int = 128
    row_boxes: int = 1
    tma_once: bool = False

    def __post_init__(self):
        if self.bk is None:
            object.__setattr__(self, "bk", default_bk(self.dtype))
        self.validate()

    def validate(self, smem_limit: int | None = None) -> None:
        """Check every rule; raise :class:`WarpSpecializationError` naming field, value and rule."""
        def is_int(v):
            return isinstance(v, (int, np.integer)) and not isinstance(v, bool)
        for f in ("setmaxnreg", "persistent", "tma_store", "trace", "edges", "block_scales",
                  "tma_once"):
            if not isinstance(getattr(self, f), bool):
                _fail(f, getattr(self, f), "must be a bool")
        for f in ("stages", "producer_regs", "consumer_regs", "cluster", "promote", "bk",
                  "row_boxes"):
            if not is_int(getattr(self, f)):
                _fail(f, getattr(self, f), "must be an integer")
        if self.dtype not in INPUT_DTYPES:
            _fail("dtype", self.dtype, f"must be one of {sorted(INPUT_DTYPES)} (wgmma .f16/.bf16 k16, "
                                       ".e4m3/.e5m2 k32; PTX ISA §9.7.15.5.2)")
        fp8 = is_fp8(self.dtype)
        if self.bk != default_bk(self.dtype):
            _fail("bk", self.bk, f"one k-tile row is one 128-byte swizzle row: "
                                 f"{default_bk(self.dtype)} {self.dtype} elements")
        if self.promote < 0:
            _fail("promote", self.promote, "k-tiles between promotions: 0 (none) or ≥ 1")
        if fp8:
            if self.b_major != "K":
                _fail("b_major", self.b_major, "fp8 wgmma has no transpose (PTX ISA §9.7.15.5.2 "
                                               "'wgmma.mma_async': imm-trans-a/-b only for "
                                               ".f16/.bf16): B must be K-major, stored N×K")
            if self.out_dtype not in ("float32", "bfloat16", "float16"):
                _fail("out_dtype", self.out_dtype, "fp8 GEMMs write C as 'float32', 'bfloat16' or "
                                                   "'float16'")
        elif self.promote:
            _fail("promote", self.promote, f"promotion is for fp8 inputs: {self.dtype} wgmma "
                                           "accumulates in fp32 already")
        if self.block_scales:
            if not fp8:
                _fail("block_scales", True, f"per-block scales are for fp8 inputs, not {self.dtype}")
            if self.promote != 1:
                _fail("promote", self.promote, "block_scales applies each k-tile's scales where its "
                                               "wgmma sums are promoted: promote must be 1 (one "
                                               "k-tile = one 128-element scale block along K)")
            if self.bn > 128:
                _fail("bn", self.bn, "block_scales: a tile must lie inside one 128-column block of "
                                     "B's scales (bn ≤ 128)")
            if self.edges:
                _fail("edges", True, "block_scales needs M, N, K multiples of the tile (no edges)")
        if isinstance(self.swizzle, bool) or self.swizzle not in SWIZZLES:
            _fail("swizzle", self.swizzle, "0 (none), 32, 64 or 128: the swizzle span in bytes of "
                                           "the operand tiles (CUtensorMapSwizzle; the wgmma "
                                           "descriptor's layout type, PTX ISA §9.7.15.5.1.2.2)")
        if self.swizzle != 128:
            if self.b_major != "K":
                _fail("swizzle", self.swizzle, "a swizzle other than 128 is built for K-major B only "
                                               "(b_major='K': B stored N×K)")
            if self.cluster != 1:
                _fail("swizzle", self.swizzle, "a swizzle other than 128 is built with cluster=1 "
                                               "only (the multicast halves of B are 128-byte rows)")
        if self.row_boxes != 1:
            self._validate_row_boxes()
        if self.tma_once:
            self._validate_tma_once()
        if self.stages not in STAGE_RANGE:
            _fail("stages", self.stages, "2..6: a consumer keeps one wgmma group pending on the "
                                         "previous stage while it waits for the next one, so a "
                                         "one-stage ring would deadlock")
        if self.cluster not in (1, 2):
            _fail("cluster", self.cluster, "1 or 2 CTAs per cluster (along M, sharing B)")
        if self.cluster == 2 and self.bn < 128:
            _fail("bn", self.bn, "with cluster=2 each CTA multicasts half of B: bn must be ≥ 128 "
                                 "(whole 64-column boxes when B is MN-major)")
        try:
            self.pipeline_config().validate(smem_limit)
        except WarpSpecializationError:
            raise
        except P.PipelineError as e:
            raise WarpSpecializationError(str(e)) from None
        if self.tma_store:
            if self.out_dtype != self.dtype and not (fp8 and self.out_dtype != "float32"):
                _fail("out_dtype", self.out_dtype, f"tma_store writes C in a 16-bit dtype (64-column "
                                                   f"boxes of 128 bytes): the input dtype "
                                                   f"{self.dtype!r}, or bfloat16/float16 for fp8")
            limit = smem_limit if smem_limit is not None else P.smem_limit_bytes()
            if self.smem_total > limit:
                _fail("stages", self.stages,
                      f"{self.stages} stages × {self.stage_bytes} + {self.consumers} × "
                      f"{STORE_STAGING} staging bytes (+{P.ALIGN_SLACK} alignment, "
                      f"+{P.STATIC_SMEM} static) = {self.smem_total} bytes of shared memory; a "
                      f"CTA may opt in to at most {limit}")
        lo, hi = SETMAXNREG_RANGE
        entry = _launch_regs(self.threads)
        need = self.accumulator_registers + REG_OVERHEAD
        if self.promote and self.accumulator_registers > P.ACC_BUDGET:
            _fail("promote", self.promote,
                  f"tile {self.bm}x{self.bn} with consumers={self.consumers}: promotion keeps a "
                  f"second fp32 set, 2 × {self.accumulators} = {self.accumulator_registers} "
                  f"accumulator registers per thread, above the budget of {P.ACC_BUDGET}; use a "
                  "128x128 tile (or smaller)")
        if self.setmaxnreg:
            for f in ("producer_regs", "consumer_regs"):
                v = getattr(self, f)
                if v % 8 or not lo <= v <= hi:
                    _fail(f, v, f"setmaxnreg takes a multiple of 8 in {lo}..{hi} (PTX ISA "
                                "'setmaxnreg')")
            if self.producer_regs > entry:
                _fail("producer_regs", self.producer_regs,
                      f"setmaxnreg.dec must not raise the count: {self.threads} threads at 1 CTA/SM "
                      f"start with {entry} registers each")
            if self.producer_regs < PRODUCER_MIN_REGS:
                _fail("producer_regs", self.producer_regs,
                      f"the producer's loop needs about {PRODUCER_MIN_REGS} registers")
            if self.consumer_regs < entry:
                _fail("consumer_regs", self.consumer_regs,
                      f"setmaxnreg.inc must not lower the count: the kernel starts with {entry}")
            total = 128 * self.producer_regs + 128 * self.consumers * self.consumer_regs
            if total > REGS_PER_SM:
                _fail("consumer_regs", self.consumer_regs,
                      f"128 × {self.producer_regs} (producer) + {128 * self.consumers} × "
                      f"{self.consumer_regs} (consumers) = {total} registers, above the SM's "
                      f"{REGS_PER_SM}; setmaxnreg.inc would wait forever for registers")
            if self.consumer_regs < need:
                _fail("consumer_regs", self.consumer_regs,
                      f"a consumer thread holds {self.accumulator_registers} fp32 accumulators "
                      f"plus ~{REG_OVERHEAD} others = {need}")
        elif need > entry:
            _fail("setmaxnreg", False, f"without setmaxnreg every thread gets {entry} registers "
                                       f"({self.threads} threads), below the consumers' {need}")

    def _validate_row_boxes(self) -> None:
        r = self.row_boxes
        if r < 1:
            _fail("row_boxes", r, "TMA boxes per operand along the rows: ≥ 1")
        for field, why in (("swizzle", self.swizzle != 128), ("b_major", self.b_major != "K"),
                           ("cluster", self.cluster != 1), ("edges", self.edges)):
            if why:
                _fail("row_boxes", r, f"row boxes are built for the 128-byte swizzle, K-major B, "
                                      f"cluster=1, no edges (here {field}={getattr(self, field)!r})")
        for field, rows in (("bm", self.bm), ("bn", self.bn)):
            if rows % r or (rows // r) % 8:
                _fail("row_boxes", r, f"must divide {field}={rows} into boxes of a multiple of 8 "
                                      "rows (the 128-byte swizzle repeats every 8 rows = 1024 "
                                      "bytes, so each box must start on that repeat)")
            if rows // r > 256:
                _fail("row_boxes", r, f"{field}={rows} / {r} = {rows // r} rows per box; a TMA box "
                                      "has at most 256 rows (cuTensorMapEncodeTiled: boxDim ≤ 256)")

    def _validate_tma_once(self) -> None:
        for field, bad, want in (("persistent", not self.persistent, "True"),
                                 ("cluster", self.cluster != 1, "1"),
                                 ("b_major", self.b_major != "K", "'K'"),
                                 ("row_boxes", self.row_boxes != 1, "1"),
                                 ("edges", self.edges, "False"),
                                 ("dtype", is_fp8(self.dtype), "float16 or bfloat16")):
            if bad:
                _fail("tma_once", True, f"the stages-loaded-once variant is built for the swizzle "
                                        f"variants' base (persistent, cluster=1, K-major B, "
                                        f"row_boxes=1, no edges, 16-bit inputs): needs {field}="
                                        f"{want}, here {field}={getattr(self, field)!r}")

    # -- geometry (chapter 05's stage layout) ---------------------------------------------------
    def pipeline_config(self) -> P.PipelineConfig:
        """The chapter-05 configuration with the same stage layout (tile, stages, consumer rows,
        B layout): its shared-memory budget, descriptor templates and byte offsets are this
        kernel's. For fp8 it is the *byte twin*: the fp16 configuration whose stages hold the same
        bytes (a 128-byte row of 64 fp16 is a row of 128 fp8; K-major, 128-byte swizzle: the
        descriptors do not depend on the element type — checked in tests against the fp8 model);
        the tensor-map boxes come from :attr:`a_box` / :attr:`b_load_box` in the real dtype."""
        if is_fp8(self.dtype):
            return P.PipelineConfig(dtype="float16", bm=self.bm, bn=self.bn, bk=BK,
                                    stages=self.stages, consumers=self.consumers, b_major="K",
                                    out_dtype="float32", group_m=self.group_m)
        return P.PipelineConfig(dtype=self.dtype, bm=self.bm, bn=self.bn, bk=self.bk,
                                stages=self.stages, consumers=self.consumers,
                                b_major=self.b_major, out_dtype=self.out_dtype,
                                group_m=self.group_m)

    @property
    def stage_bytes(self) -> int:
        """Bytes of one stage: an A tile (bm × bk) and a B tile (bn × bk): (bm + bn) · 128."""
        return (self.bm + self.bn) * self.bk * itemsize(self.dtype)

    @property
    def accumulator_registers(self) -> int:
        """fp32 accumulator registers per consumer thread: the wgmma accumulators, twice that
        with ``promote`` (the second, promoted set)."""
        return self.accumulators * (2 if self.promote else 1)

    @property
    def a_box(self):
        """The TMA box of A (:class:`asynctc.models.layout.SmemTile`): bm rows × bk (128-byte
        swizzle), in the input dtype; with a narrower :attr:`swizzle` bm rows × one swizzle span
        (16 bytes without swizzle), loaded :attr:`k_boxes` times along K
        (:meth:`stage_tiles`); with :attr:`row_boxes` R > 1, bm/R rows × bk, loaded R times along
        M."""
        if self.swizzle == 128:
            from .models.layout import SmemTile
            return SmemTile(self.bm // self.row_boxes, self.bk, self.dtype, 128)
        return self.stage_tiles()[0].smem_tile()

    def operand_tiles(self):
        """(A atom, B tile) as :class:`asynctc.models.descriptors.OperandTile` in the input dtype:
        what one consumer's wgmmas read per k-tile."""
        from .models import descriptors as dsc
        return (dsc.OperandTile(64, self.bk, self.dtype, "K", self.swizzle),
                dsc.OperandTile(self.bn, self.bk, self.dtype, self.b_major, self.swizzle))

    def stage_tiles(self):
        """(A, B) of one stage as :class:`asynctc.models.descriptors.OperandTile`: A bm × bk
        K-major, B bn × bk, under :attr:`swizzle` — the one layout model every swizzle-dependent
        number of the kernel comes from (:meth:`swizzle_defines`, :meth:`descriptor_templates`,
        :attr:`a_box`, :attr:`b_load_box`). Each tile is ``n_boxes`` TMA boxes along K of
        ``box_rows`` × ``box_cols`` elements, ``box_pitch`` bytes apart."""
        from .models import descriptors as dsc
        return (dsc.OperandTile(self.bm, self.bk, self.dtype, "K", self.swizzle),
                dsc.OperandTile(self.bn, self.bk, self.dtype, self.b_major, self.swizzle))

    @property
    def k_boxes(self) -> int:
        """TMA boxes along K per operand per k-tile: 1 (128-byte swizzle), 2 (64), 4 (32),
        8 (none: one 16-byte column of core matrices per box)."""
        return self.stage_tiles()[0].n_boxes

    def descriptor_templates(self) -> tuple[int, int]:
        """(desc_a0, desc_b0) for a stage at shared address 0, k-step 0, from the descriptor
        model in the input dtype (:meth:`stage_tiles`: layout type, LBO and SBO of the stage's A
        and B tiles; for the 128-byte swizzle they equal :meth:`operand_tiles`' — LBO and SBO of
        a swizzled K-major tile do not depend on its rows)."""
        ta, tb = self.stage_tiles() if self.swizzle != 128 else self.operand_tiles()
        return ta.descriptor(0, 0).encode(), tb.descriptor(0, 0).encode()

    def swizzle_defines(self) -> dict:
        """The kernel's swizzle-dependent defines, all from :meth:`stage_tiles` (empty for the
        128-byte swizzle, whose layout the kernel's defaults are): ``SWIZZLE``; ``K_BOXES`` and
        ``K_BOX_ELEMS`` (TMA boxes along K per k-tile, elements of K per box); ``A_KBOX_BYTES`` /
        ``B_BOX_BYTES`` (bytes from one K box to the next in the stage); ``A_ATOM_BYTES`` (bytes
        from one m64 atom of A to the next: 8 core-matrix rows of SBO each); ``A_KSTEP_OFFSETS``
        / ``B_KSTEP_OFFSETS`` (braced lists: byte offset of each k-step's start address,
        :meth:`~asynctc.models.descriptors.OperandTile.step_offset`)."""
        if self.swizzle == 128:
            return {}
        ta, tb = self.stage_tiles()
        assert ta.n_boxes == tb.n_boxes and ta.box_cols == tb.box_cols

        def offsets(t):
            return "{" + ",".join(str(t.step_offset(s)) for s in range(t.k_steps)) + "}"
        return dict(SWIZZLE=self.swizzle, K_BOXES=ta.n_boxes, K_BOX_ELEMS=ta.box_cols,
                    A_KSTEP_BYTES=ta.step_offset(1), B_KSTEP_BYTES=tb.step_offset(1),
                    A_KBOX_BYTES=ta.box_pitch, B_BOX_BYTES=tb.box_pitch,
                    A_ATOM_BYTES=(64 // 8) * ta.sbo, A_KSTEP_OFFSETS=offsets(ta),
                    B_KSTEP_OFFSETS=offsets(tb))

    @property
    def threads(self) -> int:
        return 128 * (1 + self.consumers)

    @property
    def shmem_bytes(self) -> int:
        """Dynamic shared memory of one launch: slack + ring (+ the C staging buffers)."""
        return (P.ALIGN_SLACK + self.stages * self.stage_bytes +
                (self.consumers * STORE_STAGING if self.tma_store else 0))

    @property
    def smem_total(self) -> int:
        return self.shmem_bytes + P.STATIC_SMEM

    @property
    def defines(self) -> dict:
        pc = self.pipeline_config()
        ak, bkk = pc.kstep_bytes
        d = dict(DT=INPUT_DTYPES[self.dtype], BM=self.bm, BN=self.bn, BK=self.bk, STAGES=self.stages,
                    CONSUMERS=self.consumers, B_MAJOR=int(self.b_major == "MN"),
                    OUT_F32=int(self.out_dtype == "float32"), GROUP_M=self.group_m,
                    SETMAXNREG=int(self.setmaxnreg), PRODUCER_REGS=self.producer_regs,
                    CONSUMER_REGS=self.consumer_regs, PERSISTENT=int(self.persistent),
                    CLUSTER=self.cluster, TMA_STORE=int(self.tma_store),
                    A_KSTEP_BYTES=ak, B_KSTEP_BYTES=bkk, B_BOX_BYTES=pc.b_tile.box_pitch)
        if is_fp8(self.dtype):       # 16-bit builds keep chapter 06's defines (same cache keys)
            d.update(C_DT=int(self.out_dtype == "bfloat16" or self.out_dtype == "float32"),
                     PROMOTE=self.promote)
            if self.block_scales:    # only when on: the other fp8 cubins stay as they were
                d["BLOCK_SCALES"] = 1
        if self.trace:
            d.update(TRACE=1, TRACE_CTAS=P.TRACE_CTAS, TRACE_EVENTS=P.TRACE_EVENTS)
        if self.edges:       # only when on: the ladder's defines (and cubins) stay as they were
            d["EDGES"] = 1
        d.update(self.swizzle_defines())    # nothing for the default 128-byte swizzle
        if self.row_boxes != 1:             # only when on (chapter 07): other cubins stay
            d["ROW_BOXES"] = self.row_boxes
        if self.tma_once:                   # only when on (chapter 07): other cubins stay
            d["TMA_ONCE"] = 1
        return d

    @property
    def tile_name(self) -> str:
        return f"{self.bm}x{self.bn}x{self.bk}/c{self.consumers}"

    def label(self) -> str:
        out = "" if self.out_dtype == "float32" else f" out:{self.out_dtype}"
        regs = f" regs:{self.producer_regs}/{self.consumer_regs}" if self.setmaxnreg else ""
        return (f"ws {self.dtype} {self.tile_name} s{self.stages} B:{self.b_major}{regs}"
                f"{' persistent' if self.persistent else ''}"
                f"{' cluster2' if self.cluster == 2 else ''}"
                f"{' tma_store' if self.tma_store else ''}{' trace' if self.trace else ''}"
                f"{' edges' if self.edges else ''}{out}"
                f"{f' promote:{self.promote}' if self.promote else ''}"
                f"{' block_scales' if self.block_scales else ''}"
                f"{'' if self.swizzle == 128 else f' swizzle:{self.swizzle}'}"
                f"{f' row_boxes:{self.row_boxes}' if self.row_boxes != 1 else ''}"
                f"{' tma_once' if self.tma_once else ''}"
                f"{'' if self.group_m == 8 else f' group_m:{self.group_m}'}")

    @property
    def b_load_box(self):
        """The TMA box one CTA loads of B: chapter 05's, except K-major B with ``cluster=2``,
        where each CTA loads bn/2 rows (its multicast half), and with :attr:`row_boxes` R > 1,
        bn/R rows (loaded R times)."""
        from .models.layout import SmemTile
        if self.swizzle != 128:
            return self.stage_tiles()[1].smem_tile()
        if self.row_boxes != 1:
            return SmemTile(self.bn // self.row_boxes, self.bk, self.dtype, 128)
        if self.cluster == 2 and self.b_major == "K":
            return SmemTile(self.bn // 2, self.bk, self.dtype, 128)
        if is_fp8(self.dtype):
            return SmemTile(self.bn, self.bk, self.dtype, 128)
        return self.pipeline_config().b_box

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def replace(self, **kw) -> "WSConfig":
        return dataclasses.replace(self, **kw)


def source() -> str:
    """The kernel's CUDA C++ source (for the notebook)."""
    return (runtime.KERNEL_DIR / SOURCE).read_text()


def compile_ws(cfg: WSConfig, arch: str = "sm_90a") -> runtime.CompiledKernel:
    """Compile ``kernels/warp_specialization.cu`` for ``cfg`` (no GPU needed). Raises
    :class:`~asynctc.core.runtime.CompileError`; ptxas's performance diagnostics (a dropped
    setmaxnreg, C7508; spills) come as :class:`~asynctc.core.runtime.PerformanceWarning`."""
    cfg.validate()
    return runtime.compile_kernel(SOURCE, ENTRY, arch, defines=cfg.defines)


def compile_without_launch_bounds(cfg: WSConfig) -> runtime.CompiledKernel:
    """The deliberately wrong variant: ``cfg`` compiled without ``__launch_bounds__``, so ptxas
    cannot know the register count at entry and ignores every setmaxnreg (C7508, surfaced as
    :class:`~asynctc.core.runtime.PerformanceWarning`). Compile-only: never launched. The only
    place the ``LAUNCH_BOUNDS`` define is set."""
    cfg.validate()
    return runtime.compile_kernel(SOURCE, ENTRY, "sm_90a", defines={**cfg.defines, "LAUNCH_BOUNDS": 0})


def compile_job(cfg) -> tuple[str, str, dict]:
    """(source, entry, defines) for :func:`asynctc.core.runtime.precompile` (chapter 05's configs
    too, for rung 1)."""
    if isinstance(cfg, P.PipelineConfig):
        return P.compile_job(cfg)
    return (SOURCE, ENTRY, cfg.defines)


def c_store_box(cfg: WSConfig):
    """The staging layout of one 64×64 chunk of C (an :class:`asynctc.models.layout.SmemTile`,
    128-byte swizzle): what the TMA store reads and :func:`stmatrix_offsets` writes."""
    from .models.layout import SmemTile
    return SmemTile(64, 64, cfg.out_dtype, 128)


def stmatrix_offsets(warp: int, lane: int, block: int) -> int:
    """Byte offset in a 64×64 staging chunk that ``lane`` of ``warp`` (0..3 in the warpgroup)
    gives ``stmatrix.x4`` for the pair of 8-column blocks (``block``, ``block`` + 1), block even —
    the kernel's arithmetic in ``store_c_tma``: matrix m = lane / 8 is (row half m mod 2, column
    block ``block`` + m / 2), the lane addresses row lane mod 8 of it; 16-byte chunk c of row r
    sits at r · 128 + ((c xor r mod 8) · 16)."""
    m = lane >> 3
    row = 16 * warp + (lane & 7) + 8 * (m & 1)
    cl = block + (m >> 1)
    return row * 128 + ((cl ^ (row & 7)) << 4)


def sass_registers(ck: runtime.CompiledKernel, cfg: WSConfig | None = None) -> dict:
    """The register counts the cubin itself states: ``ptxas`` (per thread at entry, from ptxas's
    report), ``dealloc`` / ``alloc`` (the immediates of USETMAXREG.DEALLOC / .TRY_ALLOC in the
    SASS: what setmaxnreg.dec / .inc became), and ``dropped`` — True when ``cfg`` asks for
    setmaxnreg but the SASS has no USETMAXREG (ptxas ignored it, C7508), so a lost setmaxnreg is
    reported, never silent."""
    import re
    text = ck.sass()
    dealloc = sorted({int(v, 16) for v in re.findall(r"USETMAXREG\.DEALLOC\S*\s+(0x[0-9a-f]+)", text)})
    alloc = sorted({int(v, 16) for v in
                    re.findall(r"USETMAXREG\.TRY_ALLOC\S*\s+(?:\w+,\s*)?(0x[0-9a-f]+)", text)})
    want = bool(cfg and cfg.setmaxnreg)
    return {"ptxas": ck.resources.registers, "dealloc": dealloc, "alloc": alloc,
            "dropped": want and not (dealloc and alloc)}


def register_split(cfg: WSConfig) -> dict:
    """Registers per thread by role: at entry (ptxas's count, the launch bound), the producer's
    and the consumers' after setmaxnreg, and the CTA's total (what the SM must hold)."""
    entry = _launch_regs(cfg.threads)
    p = cfg.producer_regs if cfg.setmaxnreg else entry
    c = cfg.consumer_regs if cfg.setmaxnreg else entry
    return {"entry": entry, "producer": p, "consumer": c,
            "total": 128 * p + 128 * cfg.consumers * c}


# --------------------------------------------------------------------------------------------------
# Launch
# --------------------------------------------------------------------------------------------------

def check_shapes(m: int, n: int, k: int, cfg: WSConfig) -> None:
    """M, N, K positive multiples of (bm, bn, bk) (the rungs have no edge handling), M of 2 · bm
    with ``cluster=2``; with ``cfg.edges`` any M, N, K in 1 .. 2^31 − 1 (32-bit coordinates).
    Raises :class:`WarpSpecializationError`."""
    if cfg.edges:
        for name, v in (("M", m), ("N", n), ("K", k)):
            if not 1 <= v < 2**31:
                _fail(name, v, "must be in 1 .. 2^31 - 1 (TMA coordinates are signed 32-bit)")
        return
    for name, v, t in (("M", m, cfg.bm), ("N", n, cfg.bn), ("K", k, cfg.bk)):
        if v <= 0 or v % t:
            _fail(name, v, f"tile {cfg.tile_name} needs {name} to be a positive multiple of {t}")
        if v >= 2**31:
            _fail(name, v, "must be < 2^31 (32-bit coordinates)")
    if cfg.cluster == 2 and m % (2 * cfg.bm):
        _fail("M", m, f"cluster=2 pairs tiles along M: M must be a multiple of 2 · {cfg.bm}")
    if getattr(cfg, "tma_once", False) and k < cfg.stages * cfg.bk:
        _fail("K", k, f"tma_once fills the {cfg.stages} stages with the first tile's first "
                      f"{cfg.stages} k-tiles: K must be ≥ {cfg.stages} · {cfg.bk}")


def tile_counts(cfg: WSConfig, m: int, n: int, k: int) -> tuple[int, int, int]:
    """(tile rows, tile columns, k-tiles) the kernel walks: exact quotients, or with ``cfg.edges``
    rounded up (tile rows to whole clusters), as the kernel computes them."""
    if not cfg.edges:
        return m // cfg.bm, n // cfg.bn, k // cfg.bk
    rows = -(-m // (cfg.bm * cfg.cluster)) * cfg.cluster
    return rows, -(-n // cfg.bn), -(-k // cfg.bk)


def grid_size(cfg: WSConfig, m: int, n: int, sm_count: int | None = None) -> int:
    """CTAs of a launch: the tile count, or (persistent) min(tiles, SMs), rounded down to whole
    clusters."""
    rows, cols, _ = tile_counts(cfg, m, n, cfg.bk)
    tiles = rows * cols
    if not cfg.persistent:
        return tiles
    if sm_count is None:
        info = runtime.device_info()
        sm_count = info.sm_count if info else 132
    return min(tiles, sm_count) // cfg.cluster * cfg.cluster


def check_block_scales(block_scales, m: int, n: int, k: int, cfg: WSConfig) -> None:
    """The per-block scales of a ``cfg.block_scales`` launch: ``(sa, sb)``, numpy arrays or
    :class:`DeviceArray`, float32, 2-D, C-contiguous (row-major): ``sa`` M × K/128 (one per 1×128
    row segment of A), ``sb`` ceil(N/128) × K/128 (one per 128×128 block of B stored N×K). Values
    (finite, > 0) are checked for host arrays. Raises :class:`WarpSpecializationError` naming the
    field, the value and the rule; also when a config without ``block_scales`` is given them."""
    if not cfg.block_scales:
        if block_scales is not None:
            _fail("block_scales", "given", f"this config has block_scales=False ({cfg.label()})")
        return
    if not isinstance(block_scales, (tuple, list)) or len(block_scales) != 2:
        _fail("block_scales", type(block_scales).__name__,
              "cfg.block_scales needs (sa, sb): sa M × K/128, sb ceil(N/128) × K/128, float32")
    kt = k // cfg.bk
    for name, x, want in (("sa", block_scales[0], (m, kt)),
                          ("sb", block_scales[1], (-(-n // 128), kt))):
        if np.dtype(x.dtype) != np.float32:
            _fail(f"{name}.dtype", str(np.dtype(x.dtype)), "per-block scales are float32")
        if tuple(x.shape) != want:
            rule = ("one scale per 1×128 row segment of A: M × K/128" if name == "sa" else
                    "one scale per 128×128 block of B (stored N×K): ceil(N/128) × K/128")
            _fail(f"{name}.shape", tuple(x.shape), f"{rule} = {want}")
        if isinstance(x, np.ndarray):
            if not x.flags.c_contiguous:
                _fail(name, "non-contiguous", "must be C-contiguous (row-major)")
            if not (np.all(np.isfinite(x)) and np.all(x > 0)):
                _fail(name, "non-positive or non-finite values", "dequantisation scales are "
                                                                 "finite and > 0")
        elif isinstance(x, DeviceArray) and x.ptr % 4:
            _fail(f"{name} address", hex(x.ptr), "must be 4-byte aligned (float32)")


def check_operands(a, b, cfg: WSConfig, out=None, scales=None,
                   block_scales=None) -> tuple[int, int, int]:
    """Validate ``a`` (M×K), ``b`` (stored N×K for b_major "K", K×N for "MN"), ``out`` (M×N in
    ``cfg.out_dtype``) and, for fp8, ``scales`` (None or 2 float32: scale_a, scale_b) or, with
    ``cfg.block_scales``, ``block_scales`` (:func:`check_block_scales`); return (M, N, K). Rules as :func:`asynctc.pipeline.check_operands` (dtype, 2-D, C-contiguous, 16-byte
    aligned device addresses — cuTensorMapEncodeTiled) with this config's dtype and k-tile.
    Raises :class:`WarpSpecializationError`."""
    from .models.layout import dtype_of
    try:
        m, n, k = P.operand_dims(a, b, dtype_of(cfg.dtype), cfg.dtype, cfg.b_major)
        check_shapes(m, n, k, cfg)
        P.check_out(out, m, n, dtype_of(cfg.out_dtype))
    except WarpSpecializationError:
        raise
    except P.PipelineError as e:
        raise WarpSpecializationError(str(e)) from None
    if scales is not None:
        if not is_fp8(cfg.dtype):
            _fail("scales", "given", f"per-tensor scales are for fp8 inputs, not {cfg.dtype}")
        if tuple(scales.shape) != (2,) or np.dtype(scales.dtype) != np.float32:
            _fail("scales", (tuple(scales.shape), str(scales.dtype)),
                  "must be 2 float32 values (scale_a, scale_b)")
        if cfg.block_scales:
            _fail("scales", "given", "a block_scales config takes per-block scales "
                                     "(block_scales=(sa, sb)), not per-tensor ones")
    check_block_scales(block_scales, m, n, k, cfg)
    return m, n, k


class WSGemm:
    """One problem set up for launching (as :class:`asynctc.pipeline.PipelineGemm`): ``cfg``, device
    operands, output (poisoned when not given), tensor maps, error word, and for fp8 the optional
    per-tensor ``scales`` (a :class:`DeviceArray` of 2 float32, scale_a and scale_b: C = scale_a ·
    scale_b · A·B) or, with ``cfg.block_scales``, ``block_scales`` = (sa, sb) as
    :class:`DeviceArray` (:func:`check_block_scales`). :meth:`launcher` returns a zero-argument
    callable; :meth:`check_error` raises :class:`RuntimeError` when a wait timed out."""

    def __init__(self, cfg: WSConfig, a: DeviceArray, b: DeviceArray,
                 out: DeviceArray | None = None, stream=None, ck=None, scales=None,
                 block_scales=None):
        self.cfg, self.a, self.b, self.stream = cfg, a, b, stream
        if cfg.edges:
            self.m, self.n, self.k, self.ldc = check_edge_operands(a, b, cfg, out)
        else:
            self.m, self.n, self.k = check_operands(a, b, cfg, out, scales, block_scales)
            self.ldc = self.n
        self.scales = scales
        self.block_scales = tuple(block_scales) if block_scales is not None else None
        self.ck = ck or compile_ws(cfg)
        self.out = out if out is not None else DeviceArray.poisoned((self.m, self.n),
                                                                    P.np_dtype(cfg.out_dtype), stream)
        self.ta = _tile_map(a, cfg.a_box)
        self.tb = _tile_map(b, cfg.b_load_box)
        # C's tensor map (64×64 box, 128-byte swizzle) for the TMA-store epilogue; other builds
        # never read their third tensor-map argument, and get A's map there
        self.tc = _tile_map(self.out, c_store_box(cfg)) if cfg.tma_store else self.ta
        self.err = DeviceArray.from_host(np.zeros(1, np.uint32), stream)
        self.trace = (DeviceArray.from_host(np.zeros(trace_words(cfg), np.uint64), stream)
                      if cfg.trace else None)
        self.grid = grid_size(cfg, self.m, self.n)
        self.desc_a0, self.desc_b0 = cfg.descriptor_templates()
        self.cluster = cfg.cluster if cfg.cluster > 1 else None
        self.active_clusters = None
        if cfg.persistent and self.cluster:
            # a persistent grid must be co-resident: clusters need SMs of one GPC, so fewer than
            # SMs / 2 clusters may fit at once (the driver's cuOccupancyMaxActiveClusters)
            self.active_clusters = max_active_clusters(self.ck, cfg, stream)
            if self.active_clusters:
                self.grid = min(self.grid, self.active_clusters * cfg.cluster)
        runtime.check_launch(self.grid, cfg.threads, cfg.shmem_bytes, self.ck, cluster=self.cluster)

    @property
    def flop(self) -> int:
        return 2 * self.m * self.n * self.k

    def launcher(self) -> Callable[[], None]:
        i32, u64 = np.int32, np.uint64
        out = self.out.array if isinstance(self.out, Pitched) else self.out
        args = (self.ta, self.tb, self.tc, out, i32(self.m), i32(self.n), i32(self.k),
                u64(self.desc_a0), u64(self.desc_b0), self.err,
                self.trace if self.trace is not None else u64(0),
                self.scales if self.scales is not None else u64(0))
        if self.cfg.edges:
            args += (i32(self.ldc),)
        if self.cfg.block_scales:
            args += self.block_scales

        def run():
            runtime.launch(self.ck, self.grid, self.cfg.threads, *args,
                           shmem_bytes=self.cfg.shmem_bytes, stream=self.stream,
                           cluster=self.cluster)
        return run

    @property
    def k_tiles(self) -> int:
        return tile_counts(self.cfg, self.m, self.n, self.k)[2]

    def trace_buffer(self) -> np.ndarray:
        if self.trace is None:
            _fail("cfg.trace", False, "this launch records no trace")
        return self.trace.to_host(self.stream)

    def check_error(self) -> None:
        word = int(self.err.to_host(self.stream)[0])
        if word:
            raise RuntimeError(f"warp-specialized GEMM {self.cfg.label()} {self.m}x{self.n}x{self.k}:"
                               f" {P.decode_error(word)}; the kernel gave up instead of hanging")


def max_active_clusters(ck: runtime.CompiledKernel, cfg: WSConfig, stream=None) -> int | None:
    """Clusters of ``cfg.cluster`` CTAs of this kernel that can run at once on the device
    (cuda.core ``Kernel.occupancy.max_active_clusters``, i.e. cuOccupancyMaxActiveClusters, after
    setting the kernel's dynamic shared-memory limit); None where it cannot be asked."""
    try:
        from cuda.core import LaunchConfig
        k = ck.kernel()
        runtime._set_max_dynamic_smem(k, int(cfg.shmem_bytes))
        lc = LaunchConfig(**runtime.launch_config_kwargs(cfg.cluster * 64, cfg.threads,
                                                         cfg.shmem_bytes, cluster=cfg.cluster))
        n = int(k.occupancy.max_active_clusters(lc, stream=stream or runtime.default_stream()))
        return n if n > 0 else None
    except Exception:  # noqa: BLE001 - an optimisation of the grid size, never a failure
        return None


def make_gemm(cfg, a: DeviceArray, b: DeviceArray, out: DeviceArray | None = None, stream=None,
              scales=None, block_scales=None):
    """A launchable problem for any rung's config: :class:`WSGemm` for :class:`WSConfig`,
    :class:`asynctc.pipeline.PipelineGemm` for rung 1's :class:`~asynctc.pipeline.PipelineConfig`."""
    if isinstance(cfg, P.PipelineConfig):
        return P.PipelineGemm(cfg, a, b, out, stream)
    return WSGemm(cfg, a, b, out, stream, scales=scales, block_scales=block_scales)


def run_ws(a, b, cfg: WSConfig, out: DeviceArray | None = None, stream=None,
           scales=None, block_scales=None) -> WSGemm:
    """``out = a @ B`` with the warp-specialized kernel; returns the :class:`WSGemm` (``.out``).

    ``a``: M×K; ``b``: B stored N×K (``cfg.b_major`` "K") or K×N ("MN"); numpy arrays or
    :class:`DeviceArray` of ``cfg.dtype``, C-contiguous, 16-byte aligned, M, N, K multiples of the
    tile. Raises :class:`WarpSpecializationError` / :class:`~asynctc.tma.TensorMapError` before
    launching, :class:`RuntimeError` when an mbarrier wait timed out,
    :class:`~asynctc.core.runtime.NoGPUError` without an sm_90 GPU. ``scales`` (fp8): None, or
    2 float32 (scale_a, scale_b), numpy or :class:`DeviceArray`: C = scale_a · scale_b · A·B.
    ``block_scales`` (``cfg.block_scales``): (sa, sb), numpy or :class:`DeviceArray`
    (:func:`check_block_scales`; host arrays are checked before they are copied)."""
    da = a if isinstance(a, DeviceArray) else DeviceArray.from_host(a, stream)
    db = b if isinstance(b, DeviceArray) else DeviceArray.from_host(b, stream)
    if scales is not None and not isinstance(scales, DeviceArray):
        scales = DeviceArray.from_host(np.ascontiguousarray(scales, dtype=np.float32), stream)
    if block_scales is not None:
        check_operands(da, db, cfg, out, scales, block_scales)    # host values before the copy
        block_scales = tuple(x if isinstance(x, DeviceArray) else DeviceArray.from_host(x, stream)
                             for x in block_scales)
    g = WSGemm(cfg, da, db, out, stream, scales=scales, block_scales=block_scales)
    g.launcher()()
    g.check_error()
    return g


def verify(cfg, m: int, n: int, k: int, rng=None) -> P.ElementCheck:
    """Run any rung's ``cfg`` on fresh random inputs (poisoned output) and compare every element
    with float64 (:func:`asynctc.pipeline.compare_elementwise`)."""
    if isinstance(cfg, P.PipelineConfig):
        return P.verify_pipeline(cfg, m, n, k, rng)
    if is_fp8(cfg.dtype):
        from . import fp8
        return fp8.verify_fp8(cfg, m, n, k, rng)
    check_shapes(m, n, k, cfg)
    a, b, bs = P.random_operands(m, n, k, cfg.pipeline_config(), rng)
    g = run_ws(a, bs, cfg)
    return P.compare_elementwise(g.out.to_host(), a, b, cfg.out_dtype, cfg.label())


verify_ws = verify


#: The deliberate protocol error of :func:`run_broken` (the kernel's ``BREAK`` define).
BREAKS = {1: "the last consumer warpgroup never arrives on the empty barrier: the producer's "
             "refill waits forever"}


def run_broken(kind: int = 1, cfg: WSConfig | None = None, rng=None) -> str:
    """Run a deliberately broken variant (:data:`BREAKS`) and return the error it ends with (the
    bounded waits turn the hang into an error word). Raises :class:`RuntimeError` if it did not
    fail. The only place the ``BREAK`` define is set."""
    if kind not in BREAKS:
        _fail("kind", kind, f"one of {sorted(BREAKS)}")
    cfg = cfg or WSConfig(stages=2)
    m, n, k = 2 * cfg.bm, cfg.bn, 8 * cfg.bk
    a, _, bs = P.random_operands(m, n, k, cfg.pipeline_config(), rng)
    ck = runtime.compile_kernel(SOURCE, ENTRY, "sm_90a", defines={**cfg.defines, "BREAK": kind})
    g = WSGemm(cfg, DeviceArray.from_host(a), DeviceArray.from_host(bs), ck=ck)
    g.launcher()()
    try:
        g.check_error()
    except RuntimeError as e:
        return str(e)
    raise RuntimeError(f"broken variant {kind} ({BREAKS[kind]}) finished without an error")


# --------------------------------------------------------------------------------------------------
# Trace (chapter 05's record format; one slot per warpgroup, the producer's first)
# --------------------------------------------------------------------------------------------------

def trace_words(cfg: WSConfig) -> int:
    """u64 words of the trace buffer: TRACE_CTAS × (1 + consumers) slots of header + records."""
    return P.TRACE_CTAS * (1 + cfg.consumers) * (P.TRACE_HEADER + 2 * P.TRACE_EVENTS)


def decode_trace(buf: np.ndarray, consumers: int, k_tiles: int, stages: int,
                 events: int = P.TRACE_EVENTS) -> P.TraceResult:
    """Decode the kernel's trace into :class:`asynctc.pipeline.Span` lanes "cta{c}/tma" (the
    producer: ``wait_empty``, and ``tma`` = issued → the first consumer's full-barrier wait for
    it ended, an upper bound of its arrival) and "cta{c}/wg{w}" (consumer w ≥ 1: ``wait_full``,
    ``mma`` = issued → the wait_group after which it is known complete, i.e. the next k-tile's
    wait or the tile's final wait, ``release`` points, ``epilogue`` = last wait → stores issued).
    Span ``k`` is the ring counter (the CTA's k-tile over all its tiles; tile = k // k_tiles).
    Raises :class:`WarpSpecializationError` for a buffer of the wrong size."""
    slot_words = P.TRACE_HEADER + 2 * events
    per = 1 + consumers
    buf = np.asarray(buf, dtype=np.uint64).ravel()
    if buf.size % (slot_words * per):
        _fail("buf.size", buf.size, f"must be a multiple of (1 + consumers) × {slot_words} words")
    slots = buf.reshape(-1, slot_words)
    spans: list[P.Span] = []
    ctas = []
    for c in range(slots.shape[0] // per):
        lanes = slots[c * per:(c + 1) * per]
        if not any(int(h[1]) for h in lanes):
            continue
        t0 = min(int(h[1]) for h in lanes if int(h[1]))
        ev = []
        for h in lanes:
            n = min(int(h[3]), events)
            rec = h[P.TRACE_HEADER:P.TRACE_HEADER + 2 * n].reshape(n, 2)
            packed = (rec[:, 1] & np.uint64(0xFFFFFFFF)).astype(np.int64)
            d = {}
            for kd, st, kk, t in zip((packed & 0xF).tolist(), ((packed >> 4) & 0xF).tolist(),
                                     (packed >> 8).tolist(),
                                     (rec[:, 0].astype(np.int64) - t0).astype(float).tolist()):
                d.setdefault((P.EVENT_KINDS[kd] if kd < len(P.EVENT_KINDS) else f"kind{kd}", kk),
                             (t, st))
            ev.append(d)
        ctas.append({"cta": c, "block": int(lanes[0][2]) >> 32,
                     "smid": int(lanes[0][2]) & 0xFFFFFFFF,
                     "globaltimer_ns": int(min(int(h[0]) for h in lanes if int(h[1]))),
                     "sm_mhz": P._clock_mhz(lanes[1], events) if per > 1 else float("nan"),
                     "events": [int(h[3]) for h in lanes],
                     "dropped": [max(0, int(h[3]) - events) for h in lanes]})
        prod, tma_lane = ev[0], f"cta{c}/tma"
        items = sorted(k for (name, k) in prod if name == "tma_issued")
        for k in items:
            eb, ee, ti = prod.get(("empty_begin", k)), prod.get(("empty_end", k)), \
                prod.get(("tma_issued", k))
            if eb and ee:
                spans.append(P.Span(tma_lane, "wait_empty", k, eb[1], eb[0], ee[0]))
            seen = [e[("full_end", k)][0] for e in ev[1:] if ("full_end", k) in e]
            if ti and seen:
                spans.append(P.Span(tma_lane, "tma", k, ti[1], ti[0], min(seen)))
        for w in range(1, per):
            e, lane = ev[w], f"cta{c}/wg{w}"
            for k in sorted(k for (name, k) in e if name == "mma_issue"):
                b, f = e.get(("full_begin", k)), e.get(("full_end", k))
                if b and f:
                    spans.append(P.Span(lane, "wait_full", k, b[1], b[0], f[0]))
                last = ("loop_end", k) in e
                done = e.get(("loop_end", k)) if last else e.get(("wait_done", k + 1))
                i = e[("mma_issue", k)]
                if done:
                    spans.append(P.Span(lane, "mma", k, i[1], i[0], done[0]))
                r = e.get(("release", k))
                if r:
                    spans.append(P.Span(lane, "release", k, r[1], r[0], r[0]))
                if last and ("store_end", k) in e:
                    spans.append(P.Span(lane, "epilogue", k, 0, e[("loop_end", k)][0],
                                        e[("store_end", k)][0]))
    return P.TraceResult(spans, ctas, k_tiles, stages, 1)


def trace_metrics(tr: P.TraceResult, cfg: WSConfig) -> dict:
    """:func:`asynctc.pipeline.trace_metrics` for this kernel, with each CTA's Tensor Core use
    counted from the k-tiles it ran (a persistent CTA runs several tiles): k-tiles ×
    :func:`asynctc.pipeline.ktile_peak_cycles` / the CTA's loop length. "math in flight" is an
    upper bound (a group is known complete only at the next wait_group)."""
    kc = P.ktile_peak_cycles(cfg)
    met = P.trace_metrics(tr, kc)
    for c, v in met["ctas"].items():
        n = len({s.k for s in tr.spans if s.lane == f"{c}/wg1" and s.kind == "mma"})
        v["k_tiles"] = n
        v["tensor_utilization"] = n * kc / max(v["loop_cycles"], 1.0)
    if met["ctas"]:
        met["mean"]["tensor_utilization"] = float(np.mean([v["tensor_utilization"]
                                                           for v in met["ctas"].values()]))
    return met


def synthetic_trace(cfg: WSConfig, tiles: int, k_tiles: int, mma_cycles: int = 100,
                    load_cycles: int = 300) -> np.ndarray:
    """A trace buffer as the kernel would write it for one idealised CTA (for testing
    :func:`decode_trace`): the producer issues k-tile i once stage i mod S is free, loads take
    ``load_cycles``, each consumer's k-tile ``mma_cycles``, the epilogue 50."""
    slot_words = P.TRACE_HEADER + 2 * P.TRACE_EVENTS
    per = 1 + cfg.consumers
    buf = np.zeros(trace_words(cfg), np.uint64)
    S, n = cfg.stages, tiles * k_tiles
    t0 = 1_000_000
    recs = {w: [] for w in range(per)}

    def ev(w, kind, stage, i, t):
        recs[w].append((t0 + t, kind | (stage << 4) | (i << 8)))
    arrive = [0] * n
    release = {}
    t_prod = 1
    done_at = {w: 0 for w in range(1, per)}
    # simple list schedule: producer then consumers in item order
    for i in range(n):
        ready = release.get(i - S, 0) if i >= S else 0
        ev(0, 1, i % S, i, t_prod)
        t_prod = max(t_prod, ready) + 1
        ev(0, 2, i % S, i, t_prod)
        ev(0, 0, i % S, i, t_prod)
        arrive[i] = t_prod + load_cycles
        t_prod += 1
        for w in range(1, per):
            t = done_at[w]
            ev(w, 3, i % S, i, t)
            t = max(t, arrive[i]) + 1
            ev(w, 4, i % S, i, t)
            ev(w, 5, i % S, i, t)
            t += mma_cycles
            ev(w, 6, i % S, i, t)
            if i % k_tiles:
                ev(w, 7, (i - 1) % S, i - 1, t)
            if i % k_tiles == k_tiles - 1:
                t += mma_cycles
                ev(w, 8, i % S, i, t)
                ev(w, 7, i % S, i, t)
                ev(w, 9, 0, i, t + 50)
                t += 50
            done_at[w] = t
            release[i] = max(release.get(i, 0), t)
    for w in range(per):
        base = w * slot_words
        buf[base:base + 3] = [5_000_000_000, t0, 7 | (0 << 32)]
        buf[base + 3] = len(recs[w])
        for j, (clk, packed) in enumerate(recs[w][:P.TRACE_EVENTS]):
            buf[base + P.TRACE_HEADER + 2 * j] = clk
            g = 5_000_000_000 + (clk - t0) * 2 // 3
            buf[base + P.TRACE_HEADER + 2 * j + 1] = (g & 0xFFFFFFFF) << 32 | packed
    return buf


# --------------------------------------------------------------------------------------------------
# The ladder
# --------------------------------------------------------------------------------------------------

class Rung(NamedTuple):
    """One rung: ``name``, ``number``, ``what`` changes from the rung before (one line),
    ``prediction`` (written before the first H200 run), and ``make(dtype)`` → its config."""

    number: int
    name: str
    what: str
    prediction: str
    make: Callable[[str], Any]


def _ch05(dt):
    return P.PipelineConfig(dtype=dt, bm=128, bn=256, consumers=2, stages=4, out_dtype=dt)


def _ws(dt):
    return WSConfig(dtype=dt, bm=128, bn=128, consumers=1, stages=4, setmaxnreg=False,
                    out_dtype=dt)


def _ws2(dt):
    return WSConfig(dtype=dt, bm=128, bn=256, consumers=2, stages=4, out_dtype=dt)


def _persistent(dt):
    return _ws2(dt).replace(persistent=True)


def _cluster(dt):
    return _persistent(dt).replace(cluster=2)


def _tma_store(dt):
    return _cluster(dt).replace(tma_store=True)


#: Tile rows per raster group of rung 8 (rungs 5-7 walk groups of 8): the widest of 4, 8, 16, 32
#: at 8192³ in tools/gpu_ch06_limit.py's run (record ``ws_limit``: fewer DRAM bytes, a higher clock).
RASTER_GROUP_M = 16


def _raster(dt):
    return _tma_store(dt).replace(group_m=RASTER_GROUP_M)


#: (bm, bn, consumers, stages) of rung 4's sweep: every stage count that fits 227 KiB.
#: 128×256 and 256×128 stages are 48 KiB (≤ 4 fit), 128×128 ones 32 KiB (≤ 6).
TILE_SWEEP = tuple((bm, bn, 2, s) for bm, bn in ((128, 256), (256, 128)) for s in (3, 4)) + \
    tuple((128, 128, 2, s) for s in (4, 5, 6))


def tile_sweep_configs(dtype: str = "float16", limit: int | None = None) -> list[WSConfig]:
    """Rung 4's candidates (:data:`TILE_SWEEP`) that fit the shared-memory ``limit``."""
    out = []
    for bm, bn, c, s in TILE_SWEEP:
        try:
            cfg = WSConfig(dtype=dtype, bm=bm, bn=bn, consumers=c, stages=s, out_dtype=dtype)
            cfg.validate(limit)
        except WarpSpecializationError:
            continue
        out.append(cfg)
    return out


def _tile_default(dt):
    return WSConfig(dtype=dt, bm=256, bn=128, consumers=2, stages=4, out_dtype=dt)


RUNGS: tuple[Rung, ...] = (
    Rung(1, "ch05", "chapter 05's best: 128×256×64, 2 warpgroups that all compute, 4 stages, "
                    "one thread of warpgroup 0 also loads",
         "0.89 of cuBLAS at 4096³, 0.95 at 8192³ (chapter 05's record)", _ch05),
    Rung(2, "ws", "warp specialization: a producer warpgroup (one thread issues TMA) and one "
                  "consumer warpgroup on a 128×128 tile (two m64 atoms), 4 stages",
         "below rung 1 (~0.75 of cuBLAS): one warpgroup's wgmma stream with half the tile; "
         "the producer no longer stalls a consumer", _ws),
    Rung(3, "ws_setmaxnreg", "two consumer warpgroups on 128×256 (64 rows each), setmaxnreg "
                             "producer 40 / consumers 232, __launch_bounds__(384, 1)",
         "at or just above rung 1 (0.90-0.97): same tile, loads off the consumers' path", _ws2),
    Rung(4, "tile", "the fastest (tile, stages) of a sweep (128×256 / 256×128 at 3-4 stages, "
                    "128×128 at 4-6) within 227 KiB",
         "within ±3% of rung 3; 256×128 may win (B read once per 256 rows)", _tile_default),
    Rung(5, "persistent", "persistent grid (min(SMs, tiles) CTAs), group-M tile order (tiles "
                          "walked column by column within groups of 8 tile rows, so that CTAs "
                          "running at once share A and B tiles in L2), the producer loads tile "
                          "t+1 while the consumers store tile t",
         "+3-8% over rung 3 (prologue and epilogue hidden; 4096³ has 3.9 waves of 128×256 tiles)",
         _persistent),
    Rung(6, "cluster", "clusters of 2 CTAs along M: each loads half of the shared 256×64 B box and "
                       "multicasts it to both (32 KiB per stage from L2 per SM instead of 48)",
         "+0-6% over rung 5 if the consumers wait on full barriers (L2→SM bandwidth); no gain "
         "if they do not", _cluster),
    Rung(7, "tma_store", "epilogue through shared memory: stmatrix (a warp's store of 8×8 "
                         "matrix fragments from registers into shared memory) into two swizzled "
                         "64×64 buffers per consumer, TMA store, drained while the next tile's "
                         "k-loop runs",
         "+1-3% over rung 6 (coalesced 128-byte stores off the consumers' critical path)",
         _tma_store),
    Rung(8, "raster", "a wider group-M raster (the order in which the persistent CTAs walk the "
                      "tiles, chapter 06 section 8): 16 tile rows per group instead of 8, so the 132 "
                      "CTAs running at once touch 16 rows of A tiles and about 8 columns of B "
                      "tiles (not 8 and 16): fewer bytes from DRAM when A and B do not fit L2",
         "+1% over rung 7 at 4096³ and 8192³ — from tools/gpu_ch06_limit.py's run (record "
         "ws_limit), made before this rung joined the ladder: 0.987 / 1.01 of cuBLAS against "
         "rung 7's 0.977 / 0.99 in the same run, DRAM reads at 8192³ 1.33 GB against 1.51",
         _raster),
)

#: Rung name → rung.
RUNG_BY_NAME = {r.name: r for r in RUNGS}


def rung_configs(dtype: str) -> list:
    """Every config the ladder runs for ``dtype``: each rung's default, then rung 4's sweep."""
    out = [r.make(dtype) for r in RUNGS]
    for c in tile_sweep_configs(dtype):
        if c not in out:
            out.append(c)
    return out


def rung_of(cfg) -> int:
    """The rung a config belongs to (the highest step it uses): 1 chapter 05, 2 one consumer,
    8 TMA store with rung 8's raster width, 7 TMA store, 6 cluster, 5 persistent, 3 rung 3's tile
    (128×256, 4 stages), else 4 (sweep)."""
    if isinstance(cfg, P.PipelineConfig):
        return 1
    if cfg.consumers == 1:
        return 2
    if cfg.tma_store:
        return 8 if cfg.group_m == RASTER_GROUP_M else 7
    if cfg.cluster > 1:
        return 6
    if cfg.persistent:
        return 5
    return 3 if (cfg.bm, cfg.bn, cfg.stages) == (128, 256, 4) else 4


def rung_of_record(row: dict) -> int:
    """:func:`rung_of` for a row of a ``warp_specialization`` record (a check or a timing: the
    config's fields flattened into the row); chapter 05's rows (no ``setmaxnreg`` field) are rung 1."""
    if "setmaxnreg" not in row:
        return 1
    names = {f.name for f in dataclasses.fields(WSConfig)}
    return rung_of(WSConfig(**{k: v for k, v in row.items() if k in names}))


def parse_rungs(text: str | None) -> tuple[int, ...]:
    """"1-5" or "1,3,5" → rung numbers (None or "" → all); raises :class:`WarpSpecializationError`."""
    every = tuple(r.number for r in RUNGS)
    if not text:
        return every
    out = set()
    for part in str(text).split(","):
        try:
            lo, _, hi = part.partition("-")
            out |= set(range(int(lo), int(hi or lo) + 1))
        except ValueError:
            _fail("rungs", text, "comma-separated rung numbers or ranges, e.g. '1-5' or '1,3,5'")
    if not out <= set(every):
        _fail("rungs", text, f"rungs are {every[0]}..{every[-1]}")
    return tuple(sorted(out))


def config_label(cfg) -> str:
    return cfg.label() if isinstance(cfg, WSConfig) else "ch05 " + cfg.label()


#: Correctness shapes: several tiles in M and N for every rung's tile (lcm of 256 rows/columns),
#: 16 k-tiles; a short K (3 k-tiles, fewer than the stages); and for the persistent rung more
#: tiles than SMs (2048×4096 / 128×256 = 256 tiles) — each CTA walks two or more tiles and the
#: ring counter crosses tile boundaries.
CHECK_SHAPES = ((512, 768, 1024), (256, 512, 192))
PERSISTENT_SHAPE = (2048, 4096, 512)


def correctness_configs() -> list:
    """Every rung × dtype × B layout; fp32 and input-dtype outputs (input dtype only with
    tma_store); rung 4's whole sweep; more persistent / cluster / tma_store tiles; the traced
    rungs (fp16)."""
    out = []

    def add(make):
        try:
            c = make()
        except WarpSpecializationError:      # a combination validation refuses (e.g. cluster + MN B)
            return
        if c not in out:
            out.append(c)
    for dt in DTYPES:
        for r in RUNGS:
            base = r.make(dt)
            for bmaj in B_MAJORS:
                for odt in (("float32", dt) if not getattr(base, "tma_store", False) else (dt,)):
                    add(lambda: dataclasses.replace(base, b_major=bmaj, out_dtype=odt))
        for c in tile_sweep_configs(dt):
            add(lambda: c)
        add(lambda: _persistent(dt).replace(bm=256, bn=128))
        add(lambda: _cluster(dt).replace(persistent=False))
        add(lambda: _cluster(dt).replace(bm=256, bn=128))
        add(lambda: _persistent(dt).replace(tma_store=True))
        add(lambda: _ws2(dt).replace(tma_store=True, bm=256, bn=128))
        add(lambda: _tma_store(dt).replace(bm=256, bn=128))
    out += [RUNGS[n - 1].make("float16").replace(trace=True) for n in TRACED_RUNGS]
    return out


def shapes_for(cfg) -> list[tuple[int, int, int]]:
    shapes = list(CHECK_SHAPES)
    if isinstance(cfg, WSConfig) and (cfg.persistent or cfg.cluster > 1):
        shapes.append(PERSISTENT_SHAPE)
    out = []
    for s in shapes:
        try:
            (check_shapes(*s, cfg) if isinstance(cfg, WSConfig) else P.check_shapes(*s, cfg))
            out.append(s)
        except P.PipelineError:
            continue
    return out


def check_all(configs=None, rng=None, progress=None) -> list[dict]:
    """Verify every config on its shapes; raise :class:`RuntimeError` at the first failure."""
    rng = rng if rng is not None else np.random.default_rng()
    say = progress or (lambda _s: None)
    rows = []
    for cfg in configs if configs is not None else correctness_configs():
        for shp in shapes_for(cfg):
            c = verify(cfg, *shp, rng=rng)
            rows.append({"config": config_label(cfg), **cfg.as_dict(), **c.as_dict()})
            if not c.passed:
                raise RuntimeError(f"wrong: {config_label(cfg)} {shp}: {c.as_dict()}")
        say(f"ok {config_label(cfg)}")
    return rows


# --------------------------------------------------------------------------------------------------
# asynctc.matmul: the top rung as a public GEMM for any shape (the EDGES build)
# --------------------------------------------------------------------------------------------------

#: TMA's row rule (CUDA driver API cuTensorMapEncodeTiled: globalAddress 16-byte aligned, every
#: globalStride a multiple of 16 bytes): the alignment of a base address and of a row pitch, bytes.
TMA_ALIGN = 16
#: b_layout → how B is stored: "KxN" (numpy's ``a @ b``: MN-major B) or "NxK" (K-major, B^T stored).
B_LAYOUTS = {"KxN": "MN", "NxK": "K"}
#: SMs assumed by :func:`matmul_config` where none can be asked (the H200 has 132).
DEFAULT_SM_COUNT = 132


@dataclasses.dataclass(frozen=True)
class Pitched:
    """A ``rows`` × ``cols`` row-major matrix inside the device array ``array`` (rows × pitch
    elements): row r starts ``pitch`` elements after row r − 1, the ``pitch − cols`` elements
    after each row are padding that no kernel reads or writes. The tensor map gets the true dims
    (rows, cols) and the padded stride, so TMA zero-fills past ``cols`` and clips stores there."""

    array: DeviceArray
    rows: int
    cols: int

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    @property
    def ptr(self) -> int:
        return self.array.ptr

    @property
    def pitch(self) -> int:
        """Elements from one row to the next."""
        return self.array.shape[1]

    def to_host(self, stream=None) -> np.ndarray:
        """The rows × cols matrix (the padding dropped)."""
        return np.ascontiguousarray(self.array.to_host(stream)[:, :self.cols])


def row_pitch(cols: int, itemsize: int) -> int:
    """Elements per padded row: ``cols`` rounded up so that a row is a multiple of
    :data:`TMA_ALIGN` bytes (cuTensorMapEncodeTiled: globalStrides multiples of 16)."""
    per = TMA_ALIGN // math.gcd(TMA_ALIGN, itemsize)
    return max(per, -(-cols // per) * per)


def pitched_host(x: np.ndarray) -> np.ndarray:
    """``x`` (2-D) copied into a C-contiguous rows × :func:`row_pitch` array, zeros in the padding
    (the layout :func:`matmul` uploads); ``x`` itself (made contiguous) when its rows are already
    a multiple of 16 bytes."""
    rows, cols = x.shape
    pitch = row_pitch(cols, x.dtype.itemsize)
    if pitch == cols:
        return np.ascontiguousarray(x)
    out = np.zeros((rows, pitch), x.dtype)
    out[:, :cols] = x
    return out


def upload_pitched(x: np.ndarray, stream=None) -> Pitched:
    """Copy host matrix ``x`` to the device in the :func:`pitched_host` layout."""
    return Pitched(DeviceArray.from_host(pitched_host(x), stream), *x.shape)


def _dims(x) -> tuple[tuple[int, int], int]:
    """((rows, cols), row pitch in elements) of a :class:`Pitched` or a C-contiguous array."""
    if isinstance(x, Pitched):
        return x.shape, x.pitch
    return tuple(x.shape), x.shape[1]


def _tile_map(x, tile):
    """The tensor map of :class:`DeviceArray` or :class:`Pitched` ``x`` whose box fills ``tile``."""
    from . import tma
    if not isinstance(x, Pitched):
        return tma.tensor_map_for_tile(x, tile)[0]
    a = tile.tensor_map_args()
    size = x.dtype.itemsize
    return tma.make_tensor_map(x.array, a["box_dim"], swizzle=a["swizzle"], shape=x.shape,
                               strides=(x.pitch * size, size))[0]


def check_tma_rows(x, what: str) -> None:
    """Raise :class:`WarpSpecializationError` unless TMA can read/write ``x`` (a DeviceArray or
    :class:`Pitched`) as it is: base address 16-byte aligned and, when it has more than one row,
    a row pitch that is a multiple of 16 bytes (CUDA driver API cuTensorMapEncodeTiled:
    globalAddress aligned to 16 bytes, globalStrides multiples of 16; the stride of a dimension of
    size 1 is never used)."""
    (rows, cols), pitch = _dims(x)
    size = np.dtype(x.dtype).itemsize
    if x.ptr % TMA_ALIGN:
        _fail(f"{what} address", hex(x.ptr), "TMA needs a 16-byte aligned base address "
                                             "(cuTensorMapEncodeTiled globalAddress)")
    if rows > 1 and (pitch * size) % TMA_ALIGN:
        field = f"{what}.shape[1]" if not isinstance(x, Pitched) else f"{what}.pitch"
        _fail(field, pitch, f"rows of {pitch} × {size} = {pitch * size} bytes; TMA needs every row "
                            f"pitch to be a multiple of 16 bytes (cuTensorMapEncodeTiled "
                            f"globalStrides), i.e. a multiple of {TMA_ALIGN // math.gcd(TMA_ALIGN, size)} "
                            f"elements — pass a numpy array to have it padded")


def check_edge_operands(a, b, cfg: WSConfig, out) -> tuple[int, int, int, int]:
    """Operands of the ``edges`` build: ``a`` (M×K) and ``b`` (N×K with ``b_major`` "K", K×N with
    "MN") in ``cfg.dtype``, ``out`` (M×N, ``cfg.out_dtype``), each a :class:`DeviceArray` or a
    :class:`Pitched`, readable by TMA as they are (:func:`check_tma_rows`; ``out`` only with
    ``tma_store``, else its base 16-byte aligned). Returns (M, N, K, ldc) with ldc = C's row pitch
    in elements. Raises :class:`WarpSpecializationError`."""
    dt = P.np_dtype(cfg.dtype)
    for what, x in (("a", a), ("b", b)):
        if np.dtype(x.dtype) != dt:
            _fail(f"{what}.dtype", str(np.dtype(x.dtype)), f"must be {cfg.dtype} (cfg.dtype)")
        if len(x.shape) != 2:
            _fail(f"{what}.shape", tuple(x.shape), "must be 2-D")
        check_tma_rows(x, what)
    m, k = a.shape
    n, k2 = b.shape if cfg.b_major == "K" else b.shape[::-1]
    if k2 != k:
        _fail("b.shape", tuple(b.shape), f"B stored {'N×K' if cfg.b_major == 'K' else 'K×N'} must "
                                         f"have K={k} to match a.shape={tuple(a.shape)}")
    check_shapes(m, n, k, cfg)
    if out is None:
        return m, n, k, n
    (rows, cols), ldc = _dims(out)
    odt = P.np_dtype(cfg.out_dtype)
    if (rows, cols) != (m, n) or np.dtype(out.dtype) != odt:
        _fail("out", ((rows, cols), str(np.dtype(out.dtype))), f"must be {(m, n)} {odt}")
    if cfg.tma_store:
        check_tma_rows(out, "out")
    elif out.ptr % TMA_ALIGN:
        _fail("out address", hex(out.ptr), "must be 16-byte aligned (the epilogue stores element "
                                           "pairs as one 8-byte / 4-byte access)")
    return m, n, k, ldc


#: The least fraction of the SMs' last wave of tiles :func:`matmul_config` accepts before it
#: takes a narrower tile.
WAVE_FILL = 0.75


def wave_fill(tiles: int, sm_count: int) -> float:
    """tiles / (waves · SMs), waves = ceil(tiles / SMs): how full the CTA waves are."""
    return tiles / (-(-tiles // sm_count) * sm_count)


def shape_tile(m: int, n: int, sm_count: int) -> dict:
    """The CTA tile chosen by the shape (what :func:`matmul_config` and
    :func:`asynctc.fp8.fp8_shape_config` run): ``{"bm", "consumers", "bn", "cluster"}``.

    * M ≤ 64 (thin M): bm = 64 with one consumer warpgroup (one m64 wgmma atom), so no half-empty
      tile is computed; else bm = 128 with two consumers (64 rows each).
    * bn: the largest of 256, 128 whose tiles, ceil(M / bm) · ceil(N / bn), fill the SMs' waves to
      at least :data:`WAVE_FILL` (:func:`wave_fill` with ``sm_count`` SMs), else 64 (64 × 8192
      with bn = 256 would keep 32 of 132 SMs busy, with bn = 64 128 of them).
    * cluster = 2 (two CTAs along M sharing B by TMA multicast) only with at least two tile rows
      (else one CTA of each pair computes nothing) and bn ≥ 128 (a multicast half of B is whole
      64-column boxes; :class:`WSConfig`'s rule); else 1.

    M, N ≥ 1 and ``sm_count`` ≥ 1 integers; raises :class:`WarpSpecializationError` otherwise.
    The tile rows are not rounded to whole clusters here (the caller's build decides: EDGES rounds
    them up, the exact builds need M a multiple of 2 · bm)."""
    for name, v in (("M", m), ("N", n), ("sm_count", sm_count)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            _fail(name, v, "must be a positive integer")
    bm, consumers = (64, 1) if m <= 64 else (128, 2)
    rows = -(-m // bm)
    bn = next((bn for bn in (256, 128) if wave_fill(rows * -(-n // bn), sm_count) >= WAVE_FILL),
              64)
    cluster = 2 if (rows >= 2 and bn >= 128) else 1
    return {"bm": bm, "consumers": consumers, "bn": bn, "cluster": cluster}


def matmul_config(m: int, n: int, k: int, dtype: str = "float16", b_layout: str = "KxN", *,
                  out_dtype: str | None = None, c_rows_aligned: bool = True,
                  sm_count: int | None = None) -> WSConfig:
    """The configuration :func:`matmul` runs for an M×N×K problem (always the ``edges`` build).

    * B given N×K (``b_layout="NxK"``, K-major) or K×N (MN-major): the ladder's top rung —
      persistent, clusters of 2 CTAs multicasting B, TMA-store epilogue, raster groups of 16 tile
      rows (rung 8).
    * Tile and cluster: :func:`shape_tile` (``sm_count`` SMs, default the device's, else 132):
      128 × 256 with two consumer warpgroups (64 rows each); thin M (M ≤ 64) 64 rows with one
      consumer warpgroup and no setmaxnreg (one consumer's 128 accumulators fit the 248
      registers 256 threads start with); bn 256 / 128 / 64 by wave fill (:data:`WAVE_FILL`);
      clusters of 2 only with at least two tile rows and bn ≥ 128.
    * TMA-store epilogue only when C is written in the input dtype (``out_dtype`` None or
      ``dtype``) and C's rows are a multiple of 16 bytes (``c_rows_aligned``; cuTensorMapEncodeTiled
      globalStrides), else the register epilogue (clipped per element pair).
    * Stages: as many as fit the shared memory of one CTA (2..6; 227 KiB on sm_90).

    Raises :class:`WarpSpecializationError` for a bad ``dtype`` / ``b_layout`` / ``out_dtype``."""
    if b_layout not in B_LAYOUTS:
        _fail("b_layout", b_layout, f"one of {sorted(B_LAYOUTS)} (how B is stored)")
    if dtype not in DTYPES:
        _fail("dtype", dtype, f"one of {sorted(DTYPES)}")
    odt = dtype if out_dtype is None else out_dtype
    if odt not in ("float32", dtype):
        _fail("out_dtype", odt, f"'float32' or the input dtype {dtype!r}")
    for name, v in (("M", m), ("N", n), ("K", k)):
        if not 1 <= v < 2**31:
            _fail(name, v, "must be in 1 .. 2^31 - 1")
    if sm_count is None:
        info = runtime.device_info()
        sm_count = info.sm_count if info else DEFAULT_SM_COUNT
    b_major = B_LAYOUTS[b_layout]
    tile = shape_tile(m, n, sm_count)
    tma_store = odt == dtype and (c_rows_aligned or m == 1)
    base = dict(dtype=dtype, **tile, b_major=b_major, out_dtype=odt,
                persistent=True, tma_store=tma_store, edges=True, group_m=RASTER_GROUP_M)
    if tile["consumers"] == 1:
        base["setmaxnreg"] = False
    return most_stages(base, (m, n, k))


def most_stages(fields: dict, shape=None) -> WSConfig:
    """``WSConfig(**fields)`` with the most stages (6 down to 2) that fit one CTA's shared memory
    (227 KiB on sm_90; the device's opt-in limit where there is one). Any other rule ``fields``
    break raises :class:`WarpSpecializationError` at once; ``shape`` only names the problem in
    the error if no stage count fits."""
    for stages in range(max(STAGE_RANGE), min(STAGE_RANGE) - 1, -1):
        try:
            return WSConfig(stages=stages, **fields)
        except WarpSpecializationError as e:
            if not str(e).startswith("stages="):
                raise
    _fail("shape", shape, "no stage count fits (cannot happen for the tiles chosen here)")


def _is_device(x) -> bool:
    return isinstance(x, (DeviceArray, Pitched))


def _dtype_name(x) -> str:
    return np.dtype(x).name


class MatmulPlan:
    """One :func:`matmul` call set up: operands on the device (host ones uploaded, padded), the
    output, the configuration and the launchable :class:`WSGemm` (``.gemm``). :meth:`run` launches
    and returns the result as :func:`matmul` does; ``.gemm.launcher()`` is what a timing calls."""

    def __init__(self, a, b, out=None, *, b_layout: str = "KxN", out_dtype=None, config=None,
                 stream=None):
        if b_layout not in B_LAYOUTS:
            _fail("b_layout", b_layout, f"one of {sorted(B_LAYOUTS)}: 'KxN' (b is K×N, as in a @ b) "
                                        "or 'NxK' (b is N×K, i.e. B transposed)")
        for what, x in (("a", a), ("b", b), ("out", out)):
            if x is None and what == "out":
                continue
            if not isinstance(x, (np.ndarray, DeviceArray)):
                _fail(what, type(x).__name__, "must be a numpy array or an asynctc DeviceArray")
            if len(x.shape) != 2:
                _fail(f"{what}.shape", tuple(x.shape), "must be 2-D (a matrix)")
        dt = _dtype_name(a.dtype)
        if dt not in DTYPES:
            _fail("a.dtype", dt, f"one of {sorted(DTYPES)} (wgmma .f16 / .bf16 inputs, PTX ISA "
                                 "§9.7.15.5)")
        if _dtype_name(b.dtype) != dt:
            _fail("b.dtype", _dtype_name(b.dtype), f"must equal a.dtype {dt!r}")
        m, k = a.shape
        n, kb = b.shape[::-1] if b_layout == "KxN" else b.shape
        if kb != k:
            _fail("b.shape", tuple(b.shape), f"b_layout={b_layout!r} reads b as "
                                             f"{'K×N' if b_layout == 'KxN' else 'N×K'}: its K is "
                                             f"{kb}, a.shape={tuple(a.shape)} has K={k}")
        if out_dtype is not None:
            try:
                out_dtype = _dtype_name(P.np_dtype(out_dtype) if isinstance(out_dtype, str)
                                        else out_dtype)
            except TypeError:
                _fail("out_dtype", out_dtype, "not a dtype: 'float32' or the input dtype")
        if out is not None:
            odt = _dtype_name(out.dtype)
            if out_dtype is not None and odt != out_dtype:
                _fail("out.dtype", odt, f"must be out_dtype={out_dtype!r}")
            out_dtype = odt
        out_dtype = out_dtype or dt
        if out_dtype not in ("float32", dt):
            _fail("out_dtype", out_dtype, f"'float32' or the input dtype {dt!r} (fp32 accumulation)")
        if out is not None and tuple(out.shape) != (m, n):
            _fail("out.shape", tuple(out.shape), f"must be (M, N) = {(m, n)}")
        if isinstance(out, np.ndarray) and not out.flags.writeable:
            _fail("out", "read-only", "must be writeable")
        for what, x in (("a", a), ("b", b)):
            if isinstance(x, DeviceArray) and x.nbytes:
                check_tma_rows(x, what)
        self.m, self.n, self.k, self.stream = m, n, k, stream
        self.dtype, self.out_dtype, self.b_layout = dt, out_dtype, b_layout
        self.user_out = out
        #: the result comes back as numpy unless a DeviceArray went in (or is the output)
        self.host_result = (out is None and not _is_device(a) and not _is_device(b)) or \
            isinstance(out, np.ndarray)
        self.gemm = None
        if m == 0 or n == 0 or k == 0:
            self.config = None                      # nothing to launch
            return
        device_c = isinstance(out, DeviceArray) or (out is None and not self.host_result)
        c_aligned = not device_c or (n * np.dtype(P.np_dtype(out_dtype)).itemsize) % TMA_ALIGN == 0
        if config is None:
            config = matmul_config(m, n, k, dt, b_layout, out_dtype=out_dtype,
                                   c_rows_aligned=c_aligned)
        else:
            if not isinstance(config, WSConfig):
                _fail("config", type(config).__name__, "must be a WSConfig")
            for f, want in (("dtype", dt), ("b_major", B_LAYOUTS[b_layout]),
                            ("out_dtype", out_dtype)):
                if getattr(config, f) != want:
                    _fail(f"config.{f}", getattr(config, f), f"must be {want!r} for these operands")
            config = config.replace(edges=True, trace=False)
        self.config = config
        if not runtime.runs_live("sm_90a"):
            raise runtime.NoGPUError(
                f"asynctc.matmul runs on a Hopper GPU (sm_90: H100, H200); here: "
                f"{runtime.why_not_live('sm_90a')}. The inputs were checked and are valid; "
                "`python -m asynctc doctor` says what this machine can do")
        da = a if isinstance(a, DeviceArray) else upload_pitched(np.asarray(a), stream)
        db = b if isinstance(b, DeviceArray) else upload_pitched(np.asarray(b), stream)
        if device_c:
            dc = out if out is not None else DeviceArray.poisoned((m, n), P.np_dtype(out_dtype),
                                                                  stream)
        else:
            odt = P.np_dtype(out_dtype)
            dc = Pitched(DeviceArray.poisoned((m, row_pitch(n, odt.itemsize)), odt, stream), m, n)
        self.gemm = WSGemm(config, da, db, dc, stream)

    def run(self):
        """Launch (nothing for an empty problem), check the error word, return the result: the
        numpy array ``out`` or a new one (host result), else the DeviceArray."""
        m, n = self.m, self.n
        odt = P.np_dtype(self.out_dtype)
        if self.gemm is None:                           # M, N or K = 0
            if self.user_out is None:
                if self.host_result:
                    return np.zeros((m, n), odt)
                res = DeviceArray.empty((m, n), odt, self.stream)
                if res.nbytes:
                    res.buffer.fill(0, stream=self.stream or runtime.default_stream())
                return res
            if isinstance(self.user_out, np.ndarray):
                self.user_out[...] = 0
            elif self.user_out.nbytes:
                self.user_out.buffer.fill(0, stream=self.stream or runtime.default_stream())
            return self.user_out
        self.gemm.launcher()()
        self.gemm.check_error()
        c = self.gemm.out
        if not self.host_result:
            return c
        host = c.to_host(self.stream)
        if isinstance(self.user_out, np.ndarray):
            self.user_out[...] = host
            return self.user_out
        return host


def matmul(a, b, out=None, *, b_layout: str = "KxN", out_dtype=None, config=None, stream=None):
    """``C = A · B`` on the Tensor Cores: chapter 06's top rung for any shape.

    ``a``: M×K; ``b``: K×N (``b_layout="KxN"``, numpy's ``a @ b``) or N×K (``"NxK"``: B
    transposed, K-major — the faster layout, see below); numpy arrays or
    :class:`~asynctc.core.memory.DeviceArray`, float16 or bfloat16 (ml_dtypes), both the same.
    Products are accumulated in fp32 (wgmma ``.f32`` accumulators, PTX ISA §9.7.15); C is M×N in
    ``out_dtype``: "float32" or the input dtype (default: the input dtype, rounded to nearest).
    ``out``: optional M×N numpy array or DeviceArray to write (its dtype is then ``out_dtype``).

    Returns a numpy array of exactly M×N when no DeviceArray is involved (host operands are
    uploaded into buffers whose rows are padded to a multiple of 16 bytes; the tensor maps get the
    true dims, so TMA zero-fills past them), else a DeviceArray (``out`` itself when given).
    M = 0 or N = 0: an empty result; K = 0: zeros — without launching anything.

    The configuration is :func:`matmul_config`'s (or ``config``, a :class:`WSConfig` whose dtype,
    B layout and out dtype match; it is run with ``edges=True``): rung 8 (persistent, clusters of 2
    with B multicast, TMA-store epilogue, raster groups of 16 tile rows) in either B layout, a narrower tile where the shape
    would leave SMs idle. Edges: the tile counts and the k-loop round up, TMA
    fills what hangs past M, N, K with zeros (PTX ISA §5.5.3 tiled mode "Out of Boundary Access";
    cuTensorMapEncodeTiled oobFill), stores are clipped to M × N.

    Raises :class:`WarpSpecializationError` (a ``ValueError``) naming the field, the value and the
    rule, before anything reaches the GPU: ``b_layout`` not "KxN"/"NxK"; an operand that is not a
    numpy array or DeviceArray, not 2-D, not float16/bfloat16, or of another dtype than ``a``;
    K of ``b`` ≠ K of ``a``; ``out_dtype`` / ``out`` of the wrong dtype or shape; a DeviceArray
    whose base is not 16-byte aligned or whose rows (more than one) are not a multiple of
    16 bytes (cuTensorMapEncodeTiled: globalAddress 16-byte aligned, globalStrides multiples of
    16 — pass a numpy array to have it padded); a dimension ≥ 2^31 (32-bit TMA coordinates).
    :class:`RuntimeError` if an mbarrier wait timed out (the kernel gave up instead of hanging);
    :class:`~asynctc.core.runtime.NoGPUError` without an sm_90 GPU. The first call per
    configuration compiles the kernel (NVRTC → cubin, cached on disk).
    """
    return MatmulPlan(a, b, out, b_layout=b_layout, out_dtype=out_dtype, config=config,
                      stream=stream).run()


#: Awkward shapes (M, N, K) from {1, 7, 129, 1000, 4095}: every size in every position, odd and
#: single-row/-column edges, K tails of 1..63, more tiles than SMs — each with a (dtype, B layout,
#: out dtype) of its own so that the 8 combinations are all covered (see :func:`matmul_cases`).
AWKWARD_SHAPES = ((1, 1, 1), (7, 7, 7), (1, 129, 1000), (129, 1, 7), (7, 1000, 129),
                  (129, 129, 129), (1000, 7, 4095), (4095, 129, 7), (129, 4095, 1000),
                  (1000, 1000, 1000), (4095, 1000, 129), (1000, 4095, 7))
#: The non-square table at small scale (÷ 8 in the large dims), thin M kept.
SMALL_NONSQUARE = ((1024, 1024, 128), (128, 1024, 1024), (512, 512, 2048), (64, 1024, 1024),
                   (128, 1024, 1024), (256, 1024, 1024))
#: More tiles than SMs with edges in every dimension: the persistent loop and the ring counter
#: cross tiles whose last row, column and k-tile are partial.
PERSISTENT_EDGE_SHAPE = (2049, 4097, 200)
COMBOS = tuple((dt, bl, od) for dt in ("float16", "bfloat16") for bl in ("KxN", "NxK")
               for od in ("input", "float32"))


def matmul_cases() -> list[dict]:
    """The GPU checks of :func:`matmul` (tests/test_matmul.py and tools/gpu_matmul.py): each a dict
    (m, n, k, dtype, b_layout, out_dtype, operands "host" | "device"). The awkward shapes rotate
    through :data:`COMBOS`; (7, 7, 7) and (129, 129, 129) run all 8; the small non-square table
    and the persistent shape in both B layouts; device-operand cases (aligned rows, odd N)."""
    out = []

    def add(shape, dt, bl, od, operands="host"):
        m, n, k = shape
        out.append(dict(m=m, n=n, k=k, dtype=dt, b_layout=bl,
                        out_dtype=dt if od == "input" else od, operands=operands))
    for i, shape in enumerate(AWKWARD_SHAPES):
        combos = COMBOS if shape in ((7, 7, 7), (129, 129, 129)) else (COMBOS[i % len(COMBOS)],)
        for c in combos:
            add(shape, *c)
    for i, shape in enumerate(SMALL_NONSQUARE):
        for bl in ("KxN", "NxK"):
            add(shape, ("float16", "bfloat16")[i % 2], bl, "input")
    for bl in ("KxN", "NxK"):
        add(PERSISTENT_EDGE_SHAPE, "bfloat16", bl, "input")
    # DeviceArray operands: rows 16-byte aligned (K, and N for K×N, multiples of 8); odd N with
    # B N×K (C's rows 14 bytes: no TMA store, the register epilogue's scalar path); single rows
    # of 14 bytes (one row needs no aligned pitch: its stride is never used)
    add((129, 7, 136), "float16", "NxK", "input", "device")
    add((129, 1000, 1000), "bfloat16", "KxN", "float32", "device")
    add((1, 1, 7), "float16", "NxK", "float32", "device")
    return out


def case_config(case: dict) -> WSConfig:
    """The configuration :func:`matmul` picks for ``case`` (for precompiling)."""
    c_aligned = case["operands"] == "host" or \
        (case["n"] * P.np_dtype(case["out_dtype"]).itemsize) % TMA_ALIGN == 0
    return matmul_config(case["m"], case["n"], case["k"], case["dtype"], case["b_layout"],
                         out_dtype=case["out_dtype"], c_rows_aligned=c_aligned)


def check_matmul_case(case: dict, rng=None) -> P.ElementCheck:
    """Run :func:`matmul` on ``case`` with fresh random operands (standard normal, rounded to the
    dtype) and compare every element with float64 (:func:`asynctc.pipeline.compare_elementwise`:
    |C − ref| ≤ K · 2^-21 · (|A|·|B|) + output rounding; poison left unwritten fails). Host cases
    get a poisoned padded output from :func:`matmul`; device cases pass a poisoned ``out``."""
    rng = rng if rng is not None else np.random.default_rng()
    m, n, k, dt = case["m"], case["n"], case["k"], case["dtype"]
    a, b, bt = P.random_operands(m, n, k, P.PipelineConfig(dtype=dt, b_major="K"), rng)
    bs = b if case["b_layout"] == "KxN" else bt
    label = (f"matmul {m}x{n}x{k} {dt} B:{case['b_layout']} out:{case['out_dtype']} "
             f"{case['operands']}")
    if case["operands"] == "host":
        c = matmul(a, bs, b_layout=case["b_layout"], out_dtype=case["out_dtype"])
    else:
        dc = DeviceArray.poisoned((m, n), P.np_dtype(case["out_dtype"]))
        matmul(DeviceArray.from_host(a), DeviceArray.from_host(bs), dc, b_layout=case["b_layout"])
        c = dc.to_host()
    if c.shape != (m, n):
        _fail("result.shape", c.shape, f"must be {(m, n)}")
    return P.compare_elementwise(c, a, b, case["out_dtype"], label)


# --------------------------------------------------------------------------------------------------
# The "warp_specialization" suite
# --------------------------------------------------------------------------------------------------

LADDER_SIZES = (4096, 8192)
LADDER_DTYPES = ("float16", "bfloat16")
#: Shapes a user meets that are not cubes (M, N, K): a short K, a short M, a long K, thin M; then
#: two *wave-aligned* shapes (:data:`WAVE_ALIGNED_SHAPES`).
NONSQUARE_SHAPES = ((8192, 8192, 1024), (1024, 8192, 8192), (4096, 4096, 16384),
                    (64, 8192, 8192), (128, 8192, 8192), (256, 8192, 8192))
#: Shapes whose 128×256 tile count is a whole number of rounds of 132 CTAs: 8448×2048 = 66×8 = 528
#: tiles = 4 rounds (4096³ has 512 = 3.88 rounds), 8448×8192 = 66×32 = 2112 = 16 rounds (8192³:
#: 2048 = 15.5). A persistent grid of 132 CTAs loses up to 1 − 3.88/4 = 3 % at 4096³ and 1 − 15.5/16
#: = 3 % at 8192³ to the last, partly idle round; these shapes measure the rungs without that loss.
WAVE_ALIGNED_SHAPES = ((8448, 2048, 4096), (8448, 8192, 8192))
#: Rungs timed on the non-square shapes (beside cuBLAS).
NONSQUARE_RUNGS = (3, 5, 6, 7, 8)
#: Rungs traced (fp16, the first size): the first warp-specialized rung with two consumers and
#: every rung above it that changes the schedule.
TRACED_RUNGS = (3, 5, 6, 7, 8)


def measure_ladder(progress=None, sizes=LADDER_SIZES, dtypes=LADDER_DTYPES, check: bool = True,
                   reps: int = 10, rungs=None,
                   nonsquare=NONSQUARE_SHAPES + WAVE_ALIGNED_SHAPES) -> dict:
    """The "warp_specialization" suite.

    1. Compile every config in parallel (:func:`asynctc.core.runtime.precompile`).
    2. Correctness (``check``): :func:`correctness_configs` on their shapes, stopping at the first
       failure; the broken variant must end in an error, not a hang.
    3. For each size and dtype (square, fresh random inputs, B K-major, C in the input dtype):
       cuBLAS, then every config of :func:`rung_configs`, each output checked on sampled rows
       against float64 (:class:`asynctc.pipeline.SampledRows`). Rung 4's row is the fastest of its
       sweep for that size and dtype. Medians; timings are never asserted on.
    4. ``nonsquare``: cuBLAS and rungs :data:`NONSQUARE_RUNGS` on each shape
       (:func:`measure_nonsquare`).
    Every timing measures the SM clock in flight (:func:`asynctc.core.bench.time_gpu`, clock=True).
    ``rungs``: only these rung numbers (:func:`parse_rungs`; default all), checks and timings."""
    import time
    from .core import bench, records
    say = progress or (lambda _s: None)
    rng = np.random.default_rng()
    info = runtime.device_info()
    out: dict = {"checks": [], "rows": [], "ladder": [], "baseline_library": bench.baseline_library(),
                 "sm_count": info.sm_count if info else None,
                 "rungs": [{"number": r.number, "name": r.name, "what": r.what,
                            "prediction": r.prediction} for r in RUNGS],
                 "registers": {}}
    rungs = parse_rungs(rungs) if not isinstance(rungs, tuple) else rungs
    out["rungs_run"] = list(rungs)
    cfgs = [c for dt in dtypes for c in rung_configs(dt) if rung_of(c) in rungs]
    check_cfgs = [c for c in correctness_configs() if rung_of(c) in rungs] if check else []
    jobs = list({repr(compile_job(c)): compile_job(c) for c in cfgs + check_cfgs}.values())
    say(f"compiling {len(jobs)} variants")
    runtime.precompile(jobs)
    for c in cfgs:
        if isinstance(c, WSConfig):
            res = compile_ws(c).resources
            split = register_split(c)
            if not c.setmaxnreg:     # every warpgroup keeps what ptxas allocated
                split.update(producer=res.registers, consumer=res.registers,
                             total=res.registers * c.threads)
            sr = sass_registers(compile_ws(c), c)
            out["registers"][c.label()] = {**split, "ptxas": res.registers,
                                           "spill_bytes": res.spill_stores,
                                           "sass_dealloc": sr["dealloc"], "sass_alloc": sr["alloc"],
                                           "setmaxnreg_dropped": sr["dropped"]}
            if sr["dropped"]:
                say(f"SETMAXNREG DROPPED in {c.label()}: no USETMAXREG in the SASS")
    if check:
        out["checks"] = check_all(check_cfgs, rng=rng, progress=say)
        say(f"{len(out['checks'])} checks passed")
        t0 = time.perf_counter()
        err = run_broken(1, rng=rng)
        out["broken"] = {"what": BREAKS[1], "error": err, "seconds": time.perf_counter() - t0}
        say(f"broken variant ended in {out['broken']['seconds']:.1f} s: {err}")
        c = verify(_ws2("float16"), *CHECK_SHAPES[0], rng=rng)
        if not c.passed:
            raise RuntimeError(f"a correct kernel after the broken variant is wrong: {c.as_dict()}")
    for size in sizes:
        for dt in dtypes:
            a, b, da, db, dbt = P.device_problem(size, dt, rng)
            rows = checks.timed_output_reference(a, b, dt, rng)
            flop = bench.gemm_flop(size, size, size)
            dc = DeviceArray.poisoned((size, size), P.np_dtype(dt))
            cb = None
            if out["baseline_library"]:
                t = bench.time_gpu(bench.cublas_gemm(da, db, dc), warmup=3, reps=reps, clock=True)
                err = rows.check(dc).as_dict()   # recorded, not raised (split-K rounding)
                cb = {"kernel": "cuBLAS", "dtype": dt, "size": size, **t.as_dict(),
                      "tflops": bench.tflops(flop, t.median_ms), "rel_err_rows": err}
                out["rows"].append(cb)
            for cfg in [c for c in rung_configs(dt) if rung_of(c) in rungs]:
                dc.poison()
                g = make_gemm(cfg, da, dbt, dc)
                t = bench.time_gpu(g.launcher(), warmup=3, reps=reps, clock=True)
                g.check_error()
                err = checks.check_sampled_rows(dc, a, b, dt, config_label(cfg),
                                               sampled=rows).as_dict()
                row = {"kernel": "ch05" if isinstance(cfg, P.PipelineConfig) else "ws",
                       "label": config_label(cfg), "dtype": dt, "size": size, **cfg.as_dict(),
                       **t.as_dict(), "tflops": bench.tflops(flop, t.median_ms),
                       "rel_err_rows": err, "registers": g.ck.resources.registers,
                       "grid": g.grid, "active_clusters": getattr(g, "active_clusters", None)}
                out["rows"].append(row)
                say(f"{size}³ {row['label']}: {row['tflops']:.0f} TFLOP/s")
                del g
            if size == sizes[0] and dt == "float16":
                for rung in [r for r in RUNGS if r.number in TRACED_RUNGS and r.number in rungs]:
                    cfg = rung.make(dt).replace(trace=True)
                    dc.poison()
                    g = make_gemm(cfg, da, dbt, dc)
                    t = bench.time_gpu(g.launcher(), warmup=1, reps=3)
                    g.check_error()
                    checks.check_sampled_rows(dc, a, b, dt, config_label(cfg), sampled=rows)
                    tr = decode_trace(g.trace_buffer(), cfg.consumers, g.k_tiles, cfg.stages)
                    out.setdefault("traces", []).append(
                        {"rung": rung.number, "name": rung.name, "label": cfg.label(),
                         "size": size, "tflops_traced": bench.tflops(flop, t.median_ms),
                         "metrics": trace_metrics(tr, cfg), "cta0": tr.as_dict(cta=0)})
                    m = out["traces"][-1]["metrics"]["mean"]
                    say(f"trace rung {rung.number}: Tensor Core use "
                        f"{m.get('tensor_utilization', float('nan')):.2f}, math in flight "
                        f"{m.get('math_in_flight', float('nan')):.2f}, waiting on full "
                        f"{m.get('wait_full_fraction', float('nan')):.2f}")
                    del g
            out["ladder"] += ladder_rows(out["rows"], dt, size, cb)
            del da, db, dbt, dc
    if nonsquare:
        out["nonsquare"] = measure_nonsquare(nonsquare, dtypes, rungs, reps, say, rng)
    out["clocks_after"] = records.nvidia_smi_clocks()
    return out


def measure_nonsquare(shapes, dtypes, rungs, reps, say, rng) -> list[dict]:
    """cuBLAS and the rungs of :data:`NONSQUARE_RUNGS` on each (M, N, K) of ``shapes``: one row
    per (shape, dtype, kernel) with TFLOP/s, ``of_cublas``, and ``skipped`` (the rule that refused
    the shape) where a rung cannot run it."""
    from .core import bench
    out = []
    for (m, n, k) in shapes:
        for dt in dtypes:
            a, b = P.random_operands(m, n, k, P.PipelineConfig(dtype=dt), rng)[:2]
            rows = checks.timed_output_reference(a, b, dt, rng)
            da, db = DeviceArray.from_host(a), DeviceArray.from_host(b)
            dbt = DeviceArray.from_host(np.ascontiguousarray(b.T))
            dc = DeviceArray.poisoned((m, n), P.np_dtype(dt))
            flop = bench.gemm_flop(m, n, k)
            base = {"m": m, "n": n, "k": k, "dtype": dt}
            cb = None
            if bench.baseline_library():
                t = bench.time_gpu(bench.cublas_gemm(da, db, dc), warmup=3, reps=reps, clock=True)
                cb = {**base, "kernel": "cuBLAS", **t.as_dict(),
                      "tflops": bench.tflops(flop, t.median_ms),
                      "rel_err_rows": rows.check(dc).as_dict()}
                out.append(cb)
            for rung in [r for r in RUNGS if r.number in NONSQUARE_RUNGS and r.number in rungs]:
                cfg = rung.make(dt)
                try:
                    check_shapes(m, n, k, cfg)
                except P.PipelineError as e:
                    out.append({**base, "kernel": "ws", "rung": rung.number,
                                "label": config_label(cfg), "skipped": str(e)})
                    continue
                dc.poison()
                g = make_gemm(cfg, da, dbt, dc)
                t = bench.time_gpu(g.launcher(), warmup=3, reps=reps, clock=True)
                g.check_error()
                row = {**base, "kernel": "ws", "rung": rung.number, "label": config_label(cfg),
                       **t.as_dict(), "tflops": bench.tflops(flop, t.median_ms),
                       "rel_err_rows": checks.check_sampled_rows(dc, a, b, dt, config_label(cfg),
                                                                 sampled=rows).as_dict(),
                       "grid": g.grid}
                row["of_cublas"] = row["tflops"] / cb["tflops"] if cb else None
                out.append(row)
                say(f"{m}x{n}x{k} {dt} rung {rung.number}: {row['tflops']:.0f} TFLOP/s"
                    + (f" ({row['of_cublas']:.2f} of cuBLAS)" if cb else ""))
                del g
            del da, db, dbt, dc
    return out


def _same(row: dict, cfg) -> bool:
    d = cfg.as_dict()
    # a field added later (promote) is absent from older records: there it had its default
    defaults = {f.name: f.default for f in dataclasses.fields(cfg)}
    return all(row.get(k, defaults.get(k)) == v for k, v in d.items()) and \
        row["kernel"] == ("ch05" if isinstance(cfg, P.PipelineConfig) else "ws")


def ladder_rows(rows: list[dict], dtype: str, size: int, cublas: dict | None) -> list[dict]:
    """One row per rung for (dtype, size): TFLOP/s, ratio to cuBLAS, prediction; rung 4 takes the
    fastest config of its sweep (rung 4's default included)."""
    mine = [r for r in rows if r["dtype"] == dtype and r["size"] == size and r["kernel"] != "cuBLAS"]
    out = []
    for rung in RUNGS:
        if rung.name == "tile":
            cands = [rung.make(dtype)] + tile_sweep_configs(dtype)
            pool = [r for r in mine if any(_same(r, c) for c in cands)]
            r = max(pool, key=lambda x: x["tflops"]) if pool else None
        else:
            r = next((x for x in mine if _same(x, rung.make(dtype))), None)
        if r is None:
            continue
        out.append({"rung": rung.number, "name": rung.name, "dtype": dtype, "size": size,
                    "label": r["label"], "tflops": r["tflops"],
                    "of_cublas": r["tflops"] / cublas["tflops"] if cublas else None,
                    "prediction": rung.prediction})
    return out


def ladder_table(results: dict) -> str:
    """The ladder: rung, TFLOP/s, cuBLAS, fraction of cuBLAS, config — per size and dtype (the
    predictions, the same for every size and dtype, are listed once by :func:`ladder_predictions`)."""
    lines = [f"{'size':>5s} {'dtype':9s} {'rung':17s} {'TFLOP/s':>7s} {'cuBLAS':>7s} "
             f"{'of cuBLAS':>9s}  config"]
    cbs = {(r["dtype"], r["size"]): r["tflops"] for r in results["rows"] if r["kernel"] == "cuBLAS"}
    for r in results["ladder"]:
        ratio = f"{r['of_cublas']:9.2f}" if r["of_cublas"] is not None else f"{'-':>9s}"
        lines.append(f"{r['size']:5d} {r['dtype']:9s} {str(r['rung']) + ' ' + r['name']:17s} "
                     f"{r['tflops']:7.0f} {cbs.get((r['dtype'], r['size']), float('nan')):7.0f} "
                     f"{ratio}  {r['label']}")
    return "\n".join(lines)


def ladder_predictions(rungs=None) -> str:
    """Each rung's prediction (written before the first H200 run), one line per rung."""
    return "\n".join(f"rung {r.number} {r.name}: {r.prediction}" for r in (rungs or RUNGS))


def summarize_ladder(rec) -> str:
    r = rec.results
    lines = [rec.label() if hasattr(rec, "label") else "warp_specialization"] + P.checks_lines(r)
    if r.get("broken"):
        lines.append(f"broken variant: ended after {r['broken']['seconds']:.1f} s with: "
                     f"{r['broken']['error'].split(': ', 1)[-1]}")
    for lab, v in r.get("registers", {}).items():
        sass_txt = (f"; SASS USETMAXREG dealloc {v['sass_dealloc']} alloc {v['sass_alloc']}"
                    if v.get("sass_dealloc") or v.get("sass_alloc") else "")
        lines.append(f"registers {lab}: entry {v['entry']} (ptxas {v['ptxas']}), producer "
                     f"{v['producer']}, consumers {v['consumer']}, CTA {v['total']}, spills "
                     f"{v['spill_bytes']} B{sass_txt}"
                     f"{' — SETMAXNREG DROPPED (C7508)' if v.get('setmaxnreg_dropped') else ''}")
    for t in r.get("traces", []):
        m = t["metrics"]["mean"]
        if m:
            lines.append(f"trace rung {t['rung']} {t['label']} {t['size']}³: Tensor Core use "
                         f"{m.get('tensor_utilization', float('nan')):.2f} of the datasheet rate, "
                         f"math in flight ≤ {m['math_in_flight']:.2f}, waiting on full barriers "
                         f"{m['wait_full_fraction']:.2f}")
    lines.append(ladder_table(r))
    if r.get("nonsquare"):
        lines.append(nonsquare_table(r["nonsquare"]))
    return "\n".join(lines)


def nonsquare_table(rows: list[dict]) -> str:
    """The non-square shapes: cuBLAS and each rung's TFLOP/s and fraction of cuBLAS (or why the
    rung could not run the shape)."""
    lines = [f"{'M×N×K':18s} {'dtype':9s} {'kernel':10s} {'TFLOP/s':>7s} {'of cuBLAS':>9s}"]
    for r in rows:
        shape = f"{r['m']}×{r['n']}×{r['k']}"
        who = "cuBLAS" if r["kernel"] == "cuBLAS" else f"rung {r['rung']}"
        if r.get("skipped"):
            lines.append(f"{shape:18s} {r['dtype']:9s} {who:10s} {'-':>7s} {'-':>9s}  "
                         f"not run: {r['skipped']}")
            continue
        ratio = f"{r['of_cublas']:9.2f}" if r.get("of_cublas") is not None else f"{'':9s}"
        lines.append(f"{shape:18s} {r['dtype']:9s} {who:10s} {r['tflops']:7.0f} {ratio}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# The "matmul" suite: asynctc.matmul's checks, then matmul beside cuBLAS
# --------------------------------------------------------------------------------------------------

MATMUL_SIZES = (4096, 8192)
MATMUL_DTYPES = ("float16", "bfloat16")
MATMUL_B_LAYOUTS = ("NxK", "KxN")
#: Where the cost of the EDGES build is timed against the same configuration without it.
EDGES_COST_SIZE = 4096


def matmul_jobs(shapes, dtypes=MATMUL_DTYPES, b_layouts=MATMUL_B_LAYOUTS, check: bool = True,
                sm_count: int | None = None) -> list:
    """Every compile job of the "matmul" suite: the checks' configs, the timed shapes' configs and
    their EDGES-off twins at :data:`EDGES_COST_SIZE`³."""
    cfgs = [case_config(c) for c in matmul_cases()] if check else []
    for shp in shapes:
        for dt in dtypes:
            for bl in b_layouts:
                c = matmul_config(*shp, dt, bl, sm_count=sm_count)
                cfgs.append(c)
                if shp == (EDGES_COST_SIZE,) * 3:
                    cfgs.append(c.replace(edges=False))
    return list({repr(compile_job(c)): compile_job(c) for c in cfgs}.values())


def measure_matmul(progress=None, sizes=MATMUL_SIZES, nonsquare=NONSQUARE_SHAPES,
                   dtypes=MATMUL_DTYPES, b_layouts=MATMUL_B_LAYOUTS, check: bool = True,
                   reps: int = 10) -> dict:
    """The "matmul" suite.

    1. Compile every configuration in parallel (:func:`asynctc.core.runtime.precompile`).
    2. ``check``: every case of :func:`matmul_cases` through :func:`matmul` against float64,
       every element (:func:`check_matmul_case`); the first failure raises (nothing is timed).
    3. For each square size and each of ``nonsquare`` (M, N, K), each dtype: fresh random operands
       on the device, cuBLAS (``bench.cublas_gemm``, A M×K · B K×N), then for each B layout the
       kernel launch :func:`matmul` makes (:class:`MatmulPlan`; host-side set-up not timed), its
       output checked on sampled rows. At :data:`EDGES_COST_SIZE`³ also the same configuration
       without EDGES, timed alternately with it (twice each, the faster median kept):
       ``edges_cost`` = t(EDGES) / t(no EDGES) − 1.
    Every timing measures the SM clock in flight (``bench.time_gpu(clock=True)``). Medians; never
    asserted on."""
    from .core import bench, records
    say = progress or (lambda _s: None)
    rng = np.random.default_rng()
    info = runtime.device_info()
    sms = info.sm_count if info else None
    shapes = [(s, s, s) for s in sizes] + [tuple(x) for x in nonsquare]
    out: dict = {"checks": [], "rows": [], "edges_cost": [],
                 "baseline_library": bench.baseline_library(), "sm_count": sms,
                 "wave_fill": WAVE_FILL}
    jobs = matmul_jobs(shapes, dtypes, b_layouts, check, sms)
    say(f"compiling {len(jobs)} variants")
    runtime.precompile(jobs)
    if check:
        for case in matmul_cases():
            c = check_matmul_case(case, rng)
            out["checks"].append({**case, "config": case_config(case).label(), **c.as_dict()})
            if not c.passed:
                raise RuntimeError(f"wrong: {c.label}: {c.as_dict()}")
        say(f"{len(out['checks'])} matmul checks passed, worst |C-ref|/bound "
            f"{max(x['worst_ratio'] for x in out['checks']):.3f}")
    for (m, n, k) in shapes:
        for dt in dtypes:
            a, b, bt = P.random_operands(m, n, k, P.PipelineConfig(dtype=dt), rng)
            rows = checks.timed_output_reference(a, b, dt, rng)
            da, db, dbt = (DeviceArray.from_host(x) for x in (a, b, bt))
            dc = DeviceArray.poisoned((m, n), P.np_dtype(dt))
            flop = bench.gemm_flop(m, n, k)
            base = {"m": m, "n": n, "k": k, "dtype": dt}
            cb = None
            if out["baseline_library"]:
                t = bench.time_gpu(bench.cublas_gemm(da, db, dc), warmup=3, reps=reps, clock=True)
                cb = {**base, "kernel": "cuBLAS", **t.as_dict(),
                      "tflops": bench.tflops(flop, t.median_ms),
                      "rel_err_rows": rows.check(dc).as_dict()}   # recorded, not raised
                out["rows"].append(cb)
            for bl in b_layouts:
                dc.poison()
                plan = MatmulPlan(da, db if bl == "KxN" else dbt, dc, b_layout=bl)
                g = plan.gemm
                t = bench.time_gpu(g.launcher(), warmup=3, reps=reps, clock=True)
                g.check_error()
                lab = f"matmul B:{bl} {plan.config.label()}"
                row = {**base, "kernel": "matmul", "b_layout": bl, "label": lab,
                       "config": plan.config.as_dict(), "grid": g.grid, **t.as_dict(),
                       "tflops": bench.tflops(flop, t.median_ms),
                       "rel_err_rows": checks.check_sampled_rows(dc, a, b, dt, lab,
                                                                 sampled=rows).as_dict()}
                row["of_cublas"] = row["tflops"] / cb["tflops"] if cb else None
                out["rows"].append(row)
                say(f"{m}x{n}x{k} {dt} B:{bl}: {row['tflops']:.0f} TFLOP/s"
                    + (f" ({row['of_cublas']:.2f} of cuBLAS)" if cb else ""))
                if (m, n, k) == (EDGES_COST_SIZE,) * 3:
                    plain = WSGemm(plan.config.replace(edges=False), plan.gemm.a, plan.gemm.b, dc)
                    best = {}
                    for _ in range(2):
                        for what, gg in (("plain", plain), ("edges", g)):
                            dc.poison()
                            tt = bench.time_gpu(gg.launcher(), warmup=3, reps=reps, clock=True)
                            gg.check_error()
                            checks.check_sampled_rows(dc, a, b, dt, f"{what} {lab}", sampled=rows)
                            if what not in best or tt.median_ms < best[what].median_ms:
                                best[what] = tt
                    cost = {**base, "b_layout": bl, "label": plan.config.label(),
                            "edges_ms": best["edges"].median_ms, "plain_ms": best["plain"].median_ms,
                            "edges_tflops": bench.tflops(flop, best["edges"].median_ms),
                            "plain_tflops": bench.tflops(flop, best["plain"].median_ms),
                            "edges_cost": best["edges"].median_ms / best["plain"].median_ms - 1}
                    out["edges_cost"].append(cost)
                    say(f"EDGES cost {m}³ {dt} B:{bl}: {100 * cost['edges_cost']:+.1f} %")
                    del plain
                del plan, g
            del da, db, dbt, dc
    out["clocks_after"] = records.nvidia_smi_clocks()
    return out


def matmul_table(results: dict) -> str:
    """matmul beside cuBLAS: TFLOP/s and fraction of cuBLAS per shape, dtype and B layout."""
    lines = [f"{'M×N×K':18s} {'dtype':9s} {'cuBLAS':>7s} {'B N×K':>7s} {'of cuBLAS':>9s} "
             f"{'B K×N':>7s} {'of cuBLAS':>9s}"]
    rows = results.get("rows", [])
    keys = list(dict.fromkeys((r["m"], r["n"], r["k"], r["dtype"]) for r in rows))
    for key in keys:
        mine = [r for r in rows if (r["m"], r["n"], r["k"], r["dtype"]) == key]
        cb = next((r["tflops"] for r in mine if r["kernel"] == "cuBLAS"), None)
        cells = []
        for bl in ("NxK", "KxN"):
            r = next((x for x in mine if x.get("b_layout") == bl), None)
            if r is None:
                cells += [f"{'-':>7s}", f"{'-':>9s}"]
            else:
                cells += [f"{r['tflops']:7.0f}",
                          f"{r['of_cublas']:9.2f}" if r.get("of_cublas") else f"{'-':>9s}"]
        m, n, k, dt = key
        cbs = f"{cb:7.0f}" if cb else f"{'-':>7s}"
        lines.append(f"{f'{m}×{n}×{k}':18s} {dt:9s} {cbs} " + " ".join(cells))
    return "\n".join(lines)


def summarize_matmul(rec) -> str:
    """The "matmul" suite's summary: checks, the EDGES cost at 4096³, the configs chosen, the
    TFLOP/s table against cuBLAS."""
    r = rec.results
    lines = [rec.label() if hasattr(rec, "label") else "matmul"] + P.checks_lines(r)
    for c in r.get("edges_cost", []):
        lines.append(f"EDGES cost {c['m']}³ {c['dtype']} B:{c['b_layout']}: "
                     f"{100 * c['edges_cost']:+.1f} % ({c['edges_tflops']:.0f} vs "
                     f"{c['plain_tflops']:.0f} TFLOP/s without EDGES; {c['label']})")
    for lab in dict.fromkeys(x["label"] for x in r.get("rows", []) if x["kernel"] == "matmul"):
        shapes = sorted({f"{x['m']}×{x['n']}×{x['k']}" for x in r["rows"] if x.get("label") == lab})
        lines.append(f"config {lab}: {', '.join(shapes)}")
    lines.append(matmul_table(r))
    return "\n".join(lines)


SUITES = {"warp_specialization": (measure_ladder, summarize_ladder, "sm_90a"),
          "matmul": (measure_matmul, summarize_matmul, "sm_90a")}



# --------------------------------------------------------------------------------------------------
# Chapter 06's notebook: the protocol, the register budget, the ladder and the trace
# --------------------------------------------------------------------------------------------------

#: The protocol's events, in the words the notebook and the exercises use.
PROTOCOL_EVENTS = ("producer waits", "TMA completes", "consumer waits", "consumer arrives")


def _kernel_sections() -> tuple[str, str]:
    """The producer's and the consumers' branch of the kernel body (source text)."""
    text = source()
    body = text[text.index("gemm_warp_specialized("):]
    prod = body.index("// ---------------- producer warpgroup")
    cons = body.index("// ---------------- consumer warpgroups")
    return body[prod:cons], body[cons:]


def protocol_from_source() -> dict[str, str]:
    """Which mbarrier ("full" or "empty") each of :data:`PROTOCOL_EVENTS` uses, read from the
    kernel's own source (``kernels/warp_specialization.cu``): the barrier the producer's bounded
    wait names (``empty.wait(...)``, kernels/ring.cuh), the one its ``load_stage`` hands to TMA
    (``arrive.expect_tx`` and the TMA's ``complete_tx``: PTX ISA "cp.async.bulk.tensor"
    .mbarrier::complete_tx::bytes), the one the consumers wait on, and the one their ``release``
    arrives on. Raises ``ValueError`` if the source no longer says it in one way."""
    import re
    prod, cons = _kernel_sections()

    def one(rx: str, text: str, what: str) -> str:
        found = set(re.findall(rx, text))
        if len(found) != 1:
            raise ValueError(f"{what}: the kernel source names {sorted(found) or 'no'} barrier(s)")
        return found.pop()
    # the ring's barriers (kernels/ring.cuh StageBarriers): `full.wait(...)`, `full[stage]`
    return {"producer waits": one(r"\b(full|empty)\.wait\(", prod, "producer wait"),
            "TMA completes": one(r"load_stage\([^;]*?\b(full|empty)\[", prod, "producer load"),
            "consumer waits": one(r"\b(full|empty)\.wait\(", cons, "consumer wait"),
            "consumer arrives": one(r"release\((full|empty)\[", cons, "consumer release")}


def seed_protocol() -> dict[str, str]:
    """The seed article's version: the *waits* swapped (the producer waits on full, the consumers on
    empty), arrivals and TMA completion as in :func:`protocol_from_source` — what
    :func:`asynctc.models.pipeline.simulate` runs as ``protocol="swapped_barriers"``."""
    p = protocol_from_source()
    return {**p, "producer waits": p["consumer waits"], "consumer waits": p["producer waits"]}


def register_budget(cfg: WSConfig, ck: runtime.CompiledKernel | None = None) -> dict:
    """The register budget of one CTA of ``cfg`` (one CTA per SM): per-thread registers at entry
    (``__launch_bounds__(threads, 1)``: 65536 / threads rounded down to 8), the producer's and the
    consumers' after ``setmaxnreg`` (:func:`register_split`), the CTA's total against the SM's
    65536, and what the cubin says (``ck``, compiled when not given): ptxas's count at entry, the
    USETMAXREG immediates, spills, and ``dropped`` (setmaxnreg asked for, absent from the SASS).
    PTX ISA "setmaxnreg"; CUDA C++ Programming Guide "Compute Capabilities" (64K registers/SM)."""
    ck = ck or compile_ws(cfg)
    split = register_split(cfg)
    sr = sass_registers(ck, cfg)
    if not cfg.setmaxnreg or sr["dropped"]:      # every warpgroup keeps what ptxas allocated
        split.update(producer=ck.resources.registers, consumer=ck.resources.registers,
                     total=ck.resources.registers * cfg.threads)
    if sr["dropped"]:                            # no launch bound: no count known at entry
        split["entry"] = ck.resources.registers
    return {"label": cfg.label(), "threads": cfg.threads, **split, "sm_limit": REGS_PER_SM,
            "accumulators": cfg.accumulators, "ptxas": ck.resources.registers,
            "spill_bytes": ck.resources.spill_stores, "sass_dealloc": sr["dealloc"],
            "sass_alloc": sr["alloc"], "dropped": sr["dropped"]}


def register_budget_table(rows: list[dict]) -> str:
    """Rows of :func:`register_budget` as text: per config, registers per thread by role, the CTA's
    total of the SM's 65536, and the SASS's USETMAXREG immediates."""
    w = max([58] + [len(r["label"]) for r in rows])
    lines = [f"{'config':{w}s} {'thr':>4s} {'entry':>5s} {'ptxas':>5s} {'prod':>4s} {'cons':>4s} "
             f"{'CTA total':>9s} {'acc':>4s}  SASS"]
    for r in rows:
        sass_txt = (f"USETMAXREG.DEALLOC {r['sass_dealloc']} .TRY_ALLOC {r['sass_alloc']}"
                    if r["sass_dealloc"] or r["sass_alloc"] else "no USETMAXREG")
        if r["dropped"]:
            sass_txt += " — setmaxnreg DROPPED (C7508)"
        lines.append(f"{r['label']:{w}s} {r['threads']:4d} {r['entry']:5d} {r['ptxas']:5d} "
                     f"{r['producer']:4d} {r['consumer']:4d} {r['total']:6d}/64K {r['accumulators']:4d}"
                     f"  {sass_txt}")
    return "\n".join(lines)


def plot_ladder(results: dict, size: int, dtype: str = "float16", record=None):
    """The ladder of one (size, dtype) as horizontal bars against the cuBLAS row timed in the same
    run (:func:`asynctc.core.plots.ladder`), from a ``warp_specialization`` record's results.
    Raises ``KeyError`` naming (size, dtype) when the record has no such ladder."""
    from .core import plots
    rows = sorted((r for r in results["ladder"] if r["size"] == size and r["dtype"] == dtype),
                  key=lambda r: r["rung"])
    if not rows:
        raise KeyError(f"no ladder rows for size={size}, dtype={dtype!r} in this record")
    cb = next((r["tflops"] for r in results["rows"] if r["kernel"] == "cuBLAS"
               and r["size"] == size and r["dtype"] == dtype), None)
    return plots.ladder([f"{r['rung']} {r['name']}" for r in rows],
                        [r["tflops"] for r in rows], baseline=cb, record=record,
                        title=f"The ladder, {dtype} {size}³ (rung 1 at the top)")


def trace_window(trace: dict, k_tiles: int, before: int = 4, after: int = 4) -> dict:
    """CTA 0's trace (a record's ``cta0``) cut to the ring counters around the first tile boundary:
    the last ``before`` k-tiles of the CTA's first tile, its epilogue, and the first ``after``
    k-tiles of its second tile (a persistent CTA's producer loads those during the epilogue)."""
    lo, hi = k_tiles - before, k_tiles + after
    spans = [s for s in trace["spans"] if lo <= s["k"] < hi
             and (s["kind"] != "epilogue" or s["k"] == k_tiles - 1)]
    return {**trace, "spans": spans}


def plot_top_trace(trace_row: dict, record=None, before: int = 4, after: int = 4):
    """Gantt chart of a recorded trace row (``results["traces"][i]``) around CTA 0's first tile
    boundary (:func:`trace_window`), drawn with chapter 05's :func:`asynctc.pipeline.plot_trace`."""
    cta0 = trace_row["cta0"]
    win = trace_window(cta0, cta0["k_tiles"], before, after)
    return P.plot_trace(win, title=f"rung {trace_row['rung']} ({trace_row['name']}), CTA 0, ring "
                                   f"counters {cta0['k_tiles'] - before}..{cta0['k_tiles'] + after - 1}"
                                   f" (tile boundary after {cta0['k_tiles'] - 1})", record=record)


def trace_numbers(trace_row: dict, rows: list[dict] | None = None) -> dict:
    """What one recorded trace says, per SM cycle (CTA 0 and the traced CTAs' means):
    ``wait_full`` (fraction of the consumers' loop waiting on full barriers), ``math_in_flight``
    (upper bound), ``tensor_use`` (k-tiles × :func:`asynctc.pipeline.ktile_peak_cycles` / loop
    cycles), ``epilogue_cycles`` (mean loop end → stores issued per tile), ``first_wait_cycles``
    (the consumers' wait for each tile's first k-tile: [first tile, mean of the later tiles]),
    ``load_cycles`` (median TMA issue → first use), ``ktile_cycles`` (loop cycles per k-tile),
    and, with the record's ``rows``, ``untraced_tflops`` of the same config (tracing costs the
    traced CTAs time)."""
    cta0, met = trace_row["cta0"], trace_row["metrics"]
    sp, kt = cta0["spans"], cta0["k_tiles"]
    epi = [s["end"] - s["start"] for s in sp if s["kind"] == "epilogue"]
    firsts: dict[int, list[float]] = {}
    for s in sp:
        if s["kind"] == "wait_full" and s["k"] % kt == 0:
            firsts.setdefault(s["k"] // kt, []).append(s["end"] - s["start"])
    first = [float(np.mean(firsts[t])) for t in sorted(firsts)]
    loads = [s["end"] - s["start"] for s in sp if s["kind"] == "tma"]
    ctas = met["ctas"]
    c0 = ctas.get("cta0", {})
    out = {"rung": trace_row["rung"], "label": trace_row["label"],
           "traced_tflops": trace_row["tflops_traced"],
           "wait_full": met["mean"].get("wait_full_fraction"),
           "math_in_flight": met["mean"].get("math_in_flight"),
           "tensor_use": met["mean"].get("tensor_utilization"),
           "epilogue_cycles": float(np.mean(epi)) if epi else None,
           "first_wait_cycles": [first[0], float(np.mean(first[1:]))] if len(first) > 1 else first,
           "load_cycles": float(np.median(loads)) if loads else None,
           "ktile_cycles": c0["loop_cycles"] / c0["k_tiles"] if c0.get("k_tiles") else None,
           "tiles": len(first)}
    if rows is not None:
        base = trace_row["label"].replace(" trace", "")
        out["untraced_tflops"] = next((r["tflops"] for r in rows if r.get("label") == base
                                       and r["size"] == trace_row["size"]), None)
    return out


def trace_table(results: dict) -> str:
    """:func:`trace_numbers` of every traced rung of a record, as text."""
    lines = [f"{'rung':>4s} {'untraced':>8s} {'traced':>6s} {'wait full':>9s} {'math≤':>5s} "
             f"{'TC use':>6s} {'cyc/k-tile':>10s} {'load cyc':>8s} {'epilogue':>8s} "
             f"{'1st wait: tile 0, later':>23s}"]
    for t in results.get("traces", []):
        n = trace_numbers(t, results["rows"])
        fw = n["first_wait_cycles"]
        later = f"{fw[1]:7.0f}" if len(fw) > 1 else f"{'-':>7s}"
        lines.append(f"{n['rung']:4d} {n['untraced_tflops'] or float('nan'):8.0f} "
                     f"{n['traced_tflops']:6.0f} {n['wait_full']:9.2f} {n['math_in_flight']:5.2f} "
                     f"{n['tensor_use']:6.2f} {n['ktile_cycles']:10.0f} {n['load_cycles']:8.0f} "
                     f"{n['epilogue_cycles']:8.0f} {fw[0]:15.0f} {later}")
    return "\n".join(lines)


def wave_efficiency(cfg, m: int, n: int, sm_count: int, active_clusters: int | None = None) -> float:
    """The part of the last wave's slots a launch fills: work items / (slots × ⌈items / slots⌉),
    where a work item is a tile (a pair of tiles with ``cluster=2``) and the slots are the SMs
    (the clusters that fit at once, ``active_clusters``, with ``cluster=2``). With one CTA per SM
    every slot takes ⌈items / slots⌉ items in the time the busiest one needs, so this bounds the
    throughput a uniform per-tile speed can reach."""
    import math
    cluster = getattr(cfg, "cluster", 1)
    items = (m // cfg.bm) * (n // cfg.bn) // cluster
    slots = (active_clusters if cluster > 1 and active_clusters else sm_count // cluster)
    return items / (slots * math.ceil(items / slots))


def smem_traffic(cfg: WSConfig, k: int | None = None,
                 smem_bytes_per_clk: float | None = None) -> dict:
    """Shared-memory bytes one CTA of ``cfg`` moves per k-tile, by source, against the SM's
    shared-memory bandwidth: the limit inside a tile (a model; no record measures shared memory).

    * ``tma_write`` — the stage the TMA writes: (bm + bn) · bk · itemsize. With ``cluster=2`` each
      SM still receives the whole stage (multicast halves the L2 reads, not the shared-memory
      writes).
    * ``wgmma_read`` — what the consumers' wgmmas read (both operands from shared memory, SS):
      (bm / 64) m64 atoms × (bk / instruction K) k-steps ×
      :func:`asynctc.wgmma_peak.smem_bytes_per_wgmma` (A's 64 rows and B's bn rows of 32 bytes of
      K each; PTX ISA §9.7.15.5). 128×256×64 fp16, two consumers: 2 × 4 × (2 + 8) KiB = 80 KiB.
    * ``epilogue`` — only with ``k`` (int ≥ 1) and ``tma_store``: C's bm × bn tile written by
      stmatrix and read back by the TMA store, 2 · bm · bn · out itemsize per tile, spread over the
      tile's ⌈k / bk⌉ k-tiles (the register epilogue writes global memory directly: 0).

    Returns a dict: those byte counts (ints), ``total``, ``clocks`` (SM clocks of one k-tile at the
    Tensor Core rate: 2 · bm · bn · bk / :data:`asynctc.core.bench.FLOP_PER_CLK_PER_SM`),
    ``bytes_per_clk`` (total / clocks: what shared memory must deliver for the Tensor Cores to run
    at their rate), ``smem_bytes_per_clk`` (default :data:`asynctc.wgmma_peak.SMEM_BYTES_PER_CLK_SM`,
    128 = 32 banks × 4 bytes, chapter 01's model), ``of_wall`` (bytes_per_clk / that) and ``bound``
    (min(1, 1 / of_wall): the most of the Tensor Core rate this traffic allows if TMA writes and
    wgmma reads share that one data path). Raises :class:`WarpSpecializationError` for a ``k`` that
    is not a positive int or a non-positive ``smem_bytes_per_clk``."""
    from .core import bench
    from .models import descriptors as dsc
    from .wgmma_peak import SMEM_BYTES_PER_CLK_SM, smem_bytes_per_wgmma
    bw = SMEM_BYTES_PER_CLK_SM if smem_bytes_per_clk is None else smem_bytes_per_clk
    if not isinstance(bw, (int, float)) or isinstance(bw, bool) or not bw > 0:
        _fail("smem_bytes_per_clk", bw, "must be a positive number of bytes per SM clock")
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
        _fail("k", k, "must be an int ≥ 1 (the problem's K) or None")
    size = itemsize(cfg.dtype)
    out = {"tma_write": (cfg.bm + cfg.bn) * cfg.bk * size,
           "wgmma_read": (cfg.bm // 64) * (cfg.bk // dsc.instruction_k(cfg.dtype))
           * smem_bytes_per_wgmma(cfg.bn, "smem", cfg.dtype)}
    if k is not None and cfg.tma_store:
        k_tiles = -(-int(k) // cfg.bk)
        out["epilogue"] = 2 * cfg.bm * cfg.bn * itemsize(cfg.out_dtype) / k_tiles
    total = sum(out.values())
    clocks = 2 * cfg.bm * cfg.bn * cfg.bk / bench.FLOP_PER_CLK_PER_SM[cfg.dtype]
    per_clk = total / clocks
    return {**out, "total": total, "clocks": clocks, "bytes_per_clk": per_clk,
            "smem_bytes_per_clk": bw, "of_wall": per_clk / bw, "bound": min(1.0, bw / per_clk)}


def descriptor_rows_read(cfg: WSConfig, desc: int, base: int) -> np.ndarray:
    """Which K-row of its TMA box each element of B one wgmma k-step reads through ``desc``, by
    the descriptor model (:func:`asynctc.models.descriptors.read_addresses`): an ``(bn, 16)``
    array (``(bn, 32)`` for fp8) of rows, column k of it being K index k, for a B tile whose
    boxes start at shared-memory offset ``base``. With B MN-major the tile is bn / 64 boxes of
    64 columns × bk K-rows of 128 bytes, LBO apart; a right descriptor gives row k everywhere.
    Raises :class:`WarpSpecializationError` when an address falls outside the element's own box
    (a descriptor this function cannot attribute), or for a K-major ``cfg``."""
    from .models import descriptors as dsc
    if cfg.b_major != "MN":
        _fail("cfg.b_major", cfg.b_major, "must be 'MN' (rows of a 64-column box of B K×N)")
    box_bytes = cfg.bk * ROW_BYTES
    off = dsc.read_addresses(desc, "MN", cfg.dtype, cfg.bn) - base
    box, inside = np.divmod(off, box_bytes)
    col_box = np.arange(cfg.bn)[:, None] // (ROW_BYTES // itemsize(cfg.dtype))
    if (off < 0).any() or not np.array_equal(box, np.broadcast_to(col_box, box.shape)):
        _fail("desc", hex(desc), f"reads outside the element's own {box_bytes}-byte box")
    return inside // ROW_BYTES


def smem_traffic_table(cfgs, k: int | None = None) -> str:
    """:func:`smem_traffic` of each configuration, as text: KiB per k-tile by source, clocks, bytes
    per clock at the Tensor Core rate, that as a fraction of the shared-memory bandwidth, and the
    bound it sets. ``cfgs``: (name, WSConfig) pairs, or (name, WSConfig, K) triples whose K
    replaces ``k`` for that row."""
    from .wgmma_peak import SMEM_BYTES_PER_CLK_SM
    lines = [f"{'tile':36s} {'TMA writes':>10s} {'wgmma reads':>11s} {'epilogue':>9s} "
             f"{'clocks':>6s} {'B/clk':>6s} {f'of {SMEM_BYTES_PER_CLK_SM}':>6s} {'bound':>5s}"]
    for name, cfg, *kk in cfgs:
        t = smem_traffic(cfg, kk[0] if kk else k)
        epi = f"{t['epilogue'] / 1024:5.1f} KiB" if "epilogue" in t else f"{'-':>9s}"
        lines.append(f"{name:36s} {t['tma_write'] / 1024:6.0f} KiB {t['wgmma_read'] / 1024:7.0f} KiB "
                     f"{epi} {t['clocks']:6.0f} {t['bytes_per_clk']:6.1f} {t['of_wall']:6.2f} "
                     f"{t['bound']:5.2f}")
    return "\n".join(lines)




# --------------------------------------------------------------------------------------------------
# Exercises (auto-checked in notebooks/06_warp_specialization)
# --------------------------------------------------------------------------------------------------

from .core import exercises as _ex  # noqa: E402
from .models import pipeline as _mp  # noqa: E402


def _consumer_regs_hint(answer, producer_regs: int, consumers: int):
    exact = (REGS_PER_SM - 128 * producer_regs) / (128 * consumers)
    if not isinstance(answer, (int, float)):
        return None
    if answer == int(exact) and answer % 8:
        return f"{int(exact)} is the exact share, but setmaxnreg takes a multiple of 8: round down"
    if answer == REGS_PER_SM // (128 * consumers):
        return (f"that leaves nothing for the producer warpgroup: its 128 threads keep "
                f"{producer_regs} each, 128 × {producer_regs} = {128 * producer_regs} of the 65536")
    if answer == _launch_regs(128 * (1 + consumers)):
        return ("that is the count at entry (65536 / threads, rounded down to 8): setmaxnreg.inc "
                "raises the consumers above it with what the producer gave back")
    if answer == REGS_PER_SM // 128 - producer_regs:
        return f"the {consumers} consumer warpgroups share what is left: divide by {consumers}"
    if answer > exact:
        total = 128 * producer_regs + 128 * consumers * answer
        return (f"128 × {producer_regs} + {128 * consumers} × {answer} = {total} registers, more "
                "than the SM's 65536: setmaxnreg.inc would wait forever for them")
    return None


@_ex.exercise("ch06.consumer_regs", "The most registers per thread setmaxnreg.inc may give each of "
              "`consumers` consumer warpgroups when the producer warpgroup keeps `producer_regs` "
              "(one CTA per SM, 65536 registers).", hint=_consumer_regs_hint)
def _consumer_regs(producer_regs: int, consumers: int) -> int:
    """The largest value :class:`WSConfig` accepts as ``consumer_regs``, ignoring the accumulator
    floor (the rule tested is the register file, PTX ISA "setmaxnreg")."""
    best = None
    for regs in range(SETMAXNREG_RANGE[0], SETMAXNREG_RANGE[1] + 1, 8):
        total = 128 * producer_regs + 128 * consumers * regs
        if total <= REGS_PER_SM and regs >= _launch_regs(128 * (1 + consumers)):
            best = regs
    if best is None:
        raise ValueError(f"producer_regs={producer_regs}, consumers={consumers}: no consumer count fits")
    return best


def _ring(tile: int, k: int, k_tiles: int, stages: int) -> tuple[int, int]:
    i = tile * k_tiles + k                                # the ring counter carries across tiles
    return i % stages, _mp._empty_parity(i, stages)


def _producer_hint(answer, tile: int, k: int, k_tiles: int, stages: int):
    if not isinstance(answer, list) or len(answer) != 2:
        return "answer (stage, parity): two numbers"
    i = tile * k_tiles + k
    if tuple(answer) == _ring(0, k, k_tiles, stages):
        return (f"you restarted the ring at the tile's first k-tile; the producer's counter carries "
                f"across tiles: this is its load number {i} (tile × k_tiles + k, from 0)")
    if answer[0] != i % stages:
        return f"the stage is the ring counter modulo S: i = {tile} × {k_tiles} + {k} = {i}"
    if answer[1] == (i // stages) % 2:
        return ("that is the parity the consumers wait on full for this fill; the producer waits on "
                "empty for the release of the fill before it: the preceding phase")
    if answer[1] not in (0, 1):
        return "a parity is one bit"
    return None


@_ex.exercise("ch06.producer_wait", "A persistent CTA's producer is about to load k-tile `k` of its "
              "tile number `tile` (its tiles have `k_tiles` k-tiles each; the ring has S = `stages` "
              "stages). Which stage does it fill, and which parity does it wait on empty[stage]? "
              "Answer (stage, parity).", hint=_producer_hint)
def _producer_wait(tile: int, k: int, k_tiles: int, stages: int) -> tuple[int, int]:
    return _ring(tile, k, k_tiles, stages)


def _barrier_hint(answer, event: str):
    if event == "consumer arrives" and answer == "full":
        return ("full[s] counts ONE arrival, the producer's arrive.expect_tx, and completes when the "
                "TMA's bytes land; the consumers' arrivals say 'stage s may be refilled' — the seed's "
                "backwards naming (run mp.simulate(**mp.BUG_HUNT, protocol='swapped_barriers'))")
    if event == "producer waits" and answer == "full":
        return ("a fresh full barrier lets the producer through, and later only its own loads "
                "complete it: it would overwrite stages the consumers still read (the seed's naming)")
    if event == "consumer waits" and answer == "empty":
        return "empty[s] completes when the consumers release the stage, not when its bytes land"
    if event == "TMA completes" and answer == "empty":
        return "complete_tx goes to the barrier the producer's arrive.expect_tx announced the bytes on"
    return None


@_ex.exercise("ch06.which_barrier", "Which mbarrier of stage s, 'full' or 'empty', does this event "
              "use in the warp-specialized kernel: `event` (one of 'producer waits', 'TMA "
              "completes', 'consumer waits', 'consumer arrives')?", choices=("full", "empty"),
              hint=_barrier_hint)
def _which_barrier(event: str) -> str:
    p = protocol_from_source()
    if event not in p:
        raise ValueError(f"event={event!r}: one of {PROTOCOL_EVENTS}")
    return p[event]


# --------------------------------------------------------------------------------------------------
# What limits the top rung: the ``ws_limit`` record (tools/gpu_ch06_limit.py)
# --------------------------------------------------------------------------------------------------

_NVJET = re.compile(r"_(\d+)x(\d+)_(\d+)x(\d+)_(\d+)x(\d+)_")


def read_kernel_name(name: str) -> dict | None:
    """cuBLAS's Hopper kernel names (``nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT``) read as
    tile ``bm``×``bn``, ``bk``×``stages``, cluster ``cluster_m``×``cluster_n`` and the schedule
    (``coopA`` / ``coopB`` / ``pingpong`` where present). This is our reading of the naming, not a
    documented format: Nsight Compute's launch statistics confirm only the cluster's size (2 CTAs;
    it reports the launch as 2×1, so which of M, N the pair spans is not in the launch). None for a
    name without the ``MxN_KxS_CxC`` group (ours, ``gemm_warp_specialized``)."""
    m = _NVJET.search(name)
    if m is None:
        return None
    bm, bn, bk, stages, cm, cn = map(int, m.groups())
    sched = next((s for s in ("coopA", "coopB", "pingpong") if s in name), None)
    return {"bm": bm, "bn": bn, "bk": bk, "stages": stages, "cluster_m": cm, "cluster_n": cn,
            "schedule": sched}


def limit_rows(results: dict, what: str = "summary") -> list[dict]:
    """A ``ws_limit`` record's rows: ``"summary"`` (per size, dtype and raster width: median TFLOP/s
    and in-flight clock over the rounds, ratio to cuBLAS's median, for ours) or ``"ncu"`` (per size,
    ours at each profiled width and cuBLAS: the Nsight Compute counters at ncu's locked clock, with
    ``dram_gb`` (read), ``l2_gb``, ``l2_sm_read_gb`` / ``l2_fabric_gb`` (L2 sectors read by the SMs
    / arriving over the fabric between the two L2 partitions, × 32 bytes; None where the record
    lacks them), ``mcycles``, ``smem_reads_g`` (shared-memory bank reads, 10⁹),
    ``cluster_launch`` (the launch's cluster dims x, y), ``tile`` (:func:`read_kernel_name`)). Empty when the
    record has no counters (ncu unavailable on the GPU machine)."""
    if what == "summary":
        return list(results["summary"])
    n = results.get("ncu") or {}
    if not n.get("available"):
        return []
    out = []
    for k in n["kernels"]:
        out.append({"size": k["size"], "who": k["who"], "group_m": k.get("group_m"),
                    "kernel": k["kernel"], "tile": read_kernel_name(k["kernel"]),
                    "dram_gb": (k.get("dram__bytes_read.sum") or 0) / 1e9,
                    "l2_gb": (k.get("lts__t_bytes.sum") or 0) / 1e9,
                    "mcycles": (k.get("sm__cycles_elapsed.max") or 0) / 1e6,
                    "us": (k.get("gpu__time_duration.sum") or 0) / 1e3,
                    "smem_reads_g": (k.get("l1tex__data_bank_reads.sum") or 0) / 1e9,
                    "l2_sm_read_gb": (k["lts__t_sectors_srcunit_tex_op_read.sum"] * 32 / 1e9
                                      if isinstance(k.get("lts__t_sectors_srcunit_tex_op_read.sum"),
                                                    (int, float)) else None),
                    "l2_fabric_gb": (k["lts__t_sectors_srcunit_ltcfabric.sum"] * 32 / 1e9
                                     if isinstance(k.get("lts__t_sectors_srcunit_ltcfabric.sum"),
                                                   (int, float)) else None),
                    "cluster_launch": tuple(int(k[c]) for c in ("launch__cluster_dim_x",
                                                                 "launch__cluster_dim_y")
                                            if isinstance(k.get(c), (int, float)))})
    return out


def plot_raster(results: dict, record=None):
    """Two panels from a ``ws_limit`` record: rung 7's schedule at each raster width as a fraction
    of cuBLAS (medians over the rounds; per size and dtype), and — where Nsight Compute ran — the
    DRAM bytes it read at each profiled width beside cuBLAS's (dashed), per size."""
    import matplotlib.pyplot as plt
    summ = [r for r in limit_rows(results) if r["kernel"] == "ours"]
    ncu = limit_rows(results, "ncu")
    fig, axes = plt.subplots(1, 2 if ncu else 1, figsize=(11 if ncu else 6, 3.8), squeeze=False)
    ax = axes[0][0]
    colour = {size: f"C{i}" for i, size in enumerate(results["sizes"])}   # one colour per size
    for size in results["sizes"]:
        for dt, ls, mk in zip(results["dtypes"], ("-", "--"), ("o", "s")):
            rs = sorted((r for r in summ if (r["size"], r["dtype"]) == (size, dt)),
                        key=lambda r: r["group_m"])
            ax.plot([r["group_m"] for r in rs], [r["of_cublas"] for r in rs], ls, marker=mk,
                    color=colour[size], label=f"{size}³ {dt}")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(results["groups"], [str(g) for g in results["groups"]])
    ax.set_xlabel("tile rows per raster group (GROUP_M)")
    ax.set_ylabel("of cuBLAS (same run)")
    ax.legend(fontsize=8)
    ax.set_title("Raster width: throughput against cuBLAS", fontsize=10)
    if ncu:
        ax2 = axes[0][1]
        for size in results["sizes"]:
            rs = sorted((r for r in ncu if r["size"] == size and r["who"] == "ours"),
                        key=lambda r: r["group_m"])
            ax2.plot([r["group_m"] for r in rs], [r["dram_gb"] for r in rs], marker="o",
                     color=colour[size], label=f"ours {size}³")
            cb = [r["dram_gb"] for r in ncu if r["size"] == size and r["who"] == "cuBLAS"]
            if cb:
                ax2.axhline(sum(cb), ls=":", color=colour[size], label=f"cuBLAS {size}³")
        ax2.set_xscale("log", base=2)
        gs = sorted({r["group_m"] for r in ncu if r["group_m"]})
        ax2.set_xticks(gs, [str(g) for g in gs])
        ax2.set_xlabel("tile rows per raster group (GROUP_M)")
        ax2.set_ylabel("DRAM bytes read, GB (Nsight Compute)")
        ax2.legend(fontsize=8)
        ax2.set_title("What it reads from DRAM (fp16, locked clock)", fontsize=10)
    if record is not None:
        fig.suptitle(record.label(), fontsize=8)
    fig.tight_layout()
    return fig
