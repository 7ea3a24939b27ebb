"""Chapter 06's kernel configuration: what ``kernels/warp_specialization.cu`` can be built as.

The compile-time constants (dtypes, swizzle spans, stage range, register limits), the error every
refusal raises (:class:`WarpSpecializationError`, naming field, value and rule; :func:`_fail`),
:class:`WSConfig` with its validation and geometry (chapter 05's stage layout), and beside it the
two rules that pick a configuration for a problem: :func:`shape_tile` (the CTA tile a shape gets,
by how full the SMs' waves are) and :func:`most_stages` (the most stages that fit shared memory).
Nothing here compiles or launches (:mod:`.launch` does).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import pipeline as P

from .base import (  # noqa: F401 (re-exported: the configuration's constants and error)
    DTYPES, INPUT_DTYPES, FP8_DTYPES, B_MAJORS, BK, ROW_BYTES, SWIZZLES, STAGE_RANGE,
    REGS_PER_SM, SETMAXNREG_RANGE, REG_OVERHEAD, STORE_STAGING, PRODUCER_MIN_REGS,
    SPLIT_K_RANGE, TILE_ORDERS, is_fp8, itemsize, default_bk, WarpSpecializationError, _fail, _launch_regs,
)
from . import variants


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
    per-tensor ``scales``. ``b_dtype`` (mixed FP8, the kernel's ``DT_B``): B's dtype where it
    differs from A's ``dtype`` — the other FP8 format (e4m3 × e5m2 or e5m2 × e4m3: wgmma's .atype
    and .btype are independent for FP8); None (or A's dtype) for one type. 16-bit inputs refuse it.
    ``edges``: the ``EDGES`` build (any M, N, K ≥ 1: tile counts and the k-loop round up, TMA
    zero-fills what hangs past the tensor, stores are clipped, C has a row pitch ``ldc``) — what
    :func:`asynctc.matmul` runs (launched by :class:`asynctc.gemm.EdgeGemm`); the ladder's rungs
    leave it off (their cubins do not change).
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
    ``pingpong`` (the ``PINGPONG`` define; False sets none): the two consumers own different
    tiles, each a whole ``bm`` × ``bn`` tile (:attr:`atoms` = bm / 64 per consumer), the CTA's
    tiles taken in turn, their k-loops ordered by an mbarrier pair so that one's epilogue runs
    while the other's wgmmas run (the kernel's header). Needs consumers=2, persistent, 16-bit
    inputs, the 128-byte swizzle with row_boxes=1 and no tma_once, and bm/64 · bn/2 ≤ 128
    accumulators per consumer thread (128×128 or 64×256; 128×256 would be 256).
    ``split_k`` S > 1 (the ``SPLIT_K`` define; 1 sets none): each tile's k-tiles are cut into S
    slices computed by S work items, each writing an fp32 partial tile to a workspace that
    ``kernels/gemm_splitk.cu`` sums in the fixed order 0 .. S − 1 (deterministic) into C
    (:class:`asynctc.gemm.SplitKGemm`). Needs 16-bit inputs, ``edges`` and no ``tma_store``;
    launches need S ≤ ceil(K / bk) (:func:`check_shapes`: no slice is empty). ``splitk_fixup``
    (``SPLITK_FIXUP``): the sum is done in the GEMM kernel instead, by whichever split of a tile
    finishes last (a counter per tile, ``kernels/splitk_fixup.cuh``), still in the order 0 .. S − 1:
    no second launch; needs split_k > 1.
    Opt-in (issue 20; defaults set no define): ``l2_promotion`` 0/64/128/256 bytes on A's and B's
    tensor maps (host only); ``l2_hint`` A's TMA loads with an L2 evict_last policy (``L2_HINT``);
    ``tile_order`` "raster" (group-M) or "hilbert" (a Hilbert order table, :mod:`.tile_order`;
    ``TILE_ORDER``). All three need ``edges=False``.

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
    b_dtype: str | None = None
    pingpong: bool = False
    split_k: int = 1
    splitk_fixup: bool = False
    l2_promotion: int = 0
    l2_hint: bool = False
    tile_order: str = "raster"

    def __post_init__(self):
        if self.bk is None:
            object.__setattr__(self, "bk", default_bk(self.dtype))
        if self.b_dtype == self.dtype:          # one spelling per build: B of A's type is None
            object.__setattr__(self, "b_dtype", None)
        self.validate()

    @property
    def dtype_b(self) -> str:
        """B's input dtype: :attr:`b_dtype`, else A's :attr:`dtype`."""
        return self.b_dtype or self.dtype

    def validate(self, smem_limit: int | None = None) -> None:
        """Check every rule; raise :class:`WarpSpecializationError` naming field, value and rule."""
        def is_int(v):
            return isinstance(v, (int, np.integer)) and not isinstance(v, bool)
        for f in ("setmaxnreg", "persistent", "tma_store", "trace", "edges", "block_scales",
                  "tma_once", "pingpong", "splitk_fixup"):
            if not isinstance(getattr(self, f), bool):
                _fail(f, getattr(self, f), "must be a bool")
        for f in ("stages", "producer_regs", "consumer_regs", "cluster", "promote", "bk",
                  "row_boxes", "split_k"):
            if not is_int(getattr(self, f)):
                _fail(f, getattr(self, f), "must be an integer")
        if self.dtype not in INPUT_DTYPES:
            _fail("dtype", self.dtype, f"must be one of {sorted(INPUT_DTYPES)} (wgmma .f16/.bf16 k16, "
                                       ".e4m3/.e5m2 k32; PTX ISA §9.7.15.5.2)")
        fp8 = is_fp8(self.dtype)
        if self.b_dtype is not None:
            variants.validate_b_dtype(self)
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
            variants.validate_row_boxes(self)
        if self.tma_once:
            variants.validate_tma_once(self)
        if self.pingpong:
            variants.validate_pingpong(self)
        if self.split_k != 1:
            variants.validate_split_k(self)
        elif self.splitk_fixup:
            _fail("splitk_fixup", True, "sums the splits of split-K in the kernel: needs "
                                        "split_k > 1, here split_k=1")
        variants.validate_l2_order(self)
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

    @property
    def atoms(self) -> int:
        """m64 wgmma atoms per consumer: bm / consumers / 64, with ``pingpong`` bm / 64."""
        return self.bm // (1 if self.pingpong else self.consumers) // 64

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
                                stages=self.stages, consumers=1 if self.pingpong else self.consumers,
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
            from ..models.layout import SmemTile
            return SmemTile(self.bm // self.row_boxes, self.bk, self.dtype, 128)
        return self.stage_tiles()[0].smem_tile()

    def operand_tiles(self):
        """(A atom, B tile) as :class:`asynctc.models.descriptors.OperandTile` in the input dtype:
        what one consumer's wgmmas read per k-tile."""
        from ..models import descriptors as dsc
        return (dsc.OperandTile(64, self.bk, self.dtype, "K", self.swizzle),
                dsc.OperandTile(self.bn, self.bk, self.dtype_b, self.b_major, self.swizzle))

    def stage_tiles(self):
        """(A, B) of one stage as :class:`asynctc.models.descriptors.OperandTile`: A bm × bk
        K-major, B bn × bk, under :attr:`swizzle` — the one layout model every swizzle-dependent
        number of the kernel comes from (:meth:`swizzle_defines`, :meth:`descriptor_templates`,
        :attr:`a_box`, :attr:`b_load_box`). Each tile is ``n_boxes`` TMA boxes along K of
        ``box_rows`` × ``box_cols`` elements, ``box_pitch`` bytes apart."""
        from ..models import descriptors as dsc
        return (dsc.OperandTile(self.bm, self.bk, self.dtype, "K", self.swizzle),
                dsc.OperandTile(self.bn, self.bk, self.dtype_b, self.b_major, self.swizzle))

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
            if self.b_dtype:         # mixed FP8 only: the other cubins stay as they were
                d["DT_B"] = INPUT_DTYPES[self.b_dtype]
        if self.trace:
            d.update(TRACE=1, TRACE_CTAS=P.TRACE_CTAS, TRACE_EVENTS=P.TRACE_EVENTS)
        if self.edges:       # only when on: the ladder's defines (and cubins) stay as they were
            d["EDGES"] = 1
        d.update(self.swizzle_defines())    # nothing for the default 128-byte swizzle
        if self.row_boxes != 1:             # only when on (chapter 07): other cubins stay
            d["ROW_BOXES"] = self.row_boxes
        if self.tma_once:                   # only when on (chapter 07): other cubins stay
            d["TMA_ONCE"] = 1
        if self.pingpong:                   # only when on (rung 9): other cubins stay
            d["PINGPONG"] = 1
        if self.split_k != 1:               # only when on: fp32 partials, other cubins stay
            d.update(SPLIT_K=self.split_k)
            if self.splitk_fixup:           # C in its dtype, summed in the kernel
                d["SPLITK_FIXUP"] = 1
            else:                           # the GEMM writes only fp32 partials
                d["OUT_F32"] = 1
        if self.l2_hint:                    # only when on (issue 20): other cubins stay
            d["L2_HINT"] = 1
        if self.tile_order != "raster":     # only when on (issue 20): other cubins stay
            d["TILE_ORDER"] = TILE_ORDERS.index(self.tile_order)
        return d

    @property
    def tile_name(self) -> str:
        return f"{self.bm}x{self.bn}x{self.bk}/c{self.consumers}"

    def label(self, legend: bool = False) -> str:
        """The build in one line of words (``ws float16 128x256x64/c2 s4 B:K …``); with ``legend``,
        a second line reads its fields (:meth:`legend`)."""
        if legend:
            return f"{self.label()}\n  key: {self.legend()}"
        out = "" if self.out_dtype == "float32" else f" out:{self.out_dtype}"
        regs = f" regs:{self.producer_regs}/{self.consumer_regs}" if self.setmaxnreg else ""
        return (f"ws {self.dtype} {self.tile_name} s{self.stages} B:{self.b_major}{regs}"
                f"{' persistent' if self.persistent else ''}"
                f"{' cluster2' if self.cluster == 2 else ''}"
                f"{' tma_store' if self.tma_store else ''}{' trace' if self.trace else ''}"
                f"{' edges' if self.edges else ''}{out}"
                f"{f' promote:{self.promote}' if self.promote else ''}"
                f"{' block_scales' if self.block_scales else ''}"
                f"{f' b_dtype:{self.b_dtype}' if self.b_dtype else ''}"
                f"{'' if self.swizzle == 128 else f' swizzle:{self.swizzle}'}"
                f"{f' row_boxes:{self.row_boxes}' if self.row_boxes != 1 else ''}"
                f"{' tma_once' if self.tma_once else ''}{' pingpong' if self.pingpong else ''}"
                f"{f' split_k:{self.split_k}' if self.split_k != 1 else ''}"
                f"{' fixup' if self.splitk_fixup else ''}"
                f"{'' if self.group_m == 8 else f' group_m:{self.group_m}'}"
                f"{f' l2:{self.l2_promotion}B' if self.l2_promotion else ''}"
                f"{' l2_hint' if self.l2_hint else ''}"
                f"{'' if self.tile_order == 'raster' else f' order:{self.tile_order}'}")

    def legend(self) -> str:
        """One line that reads this build's :meth:`label` field by field (06d §3; newcomer 54 met
        ``B:MN``, ``edges`` and ``group_m`` unexplained). The ladder's own words (persistent,
        tma_store, cluster2) are chapter 06 §3's rungs and are not repeated."""
        parts = [f"c{self.consumers}: {self.consumers} consumers", f"s{self.stages}: {self.stages} stages",
                 f"B:{self.b_major}: B stored " + ("N×K" if self.b_major == "K" else "K×N")]
        parts += ["regs: producer/consumer registers"] if self.setmaxnreg else []
        parts += ["edges: partial tiles"] if self.edges else []
        parts += [f"split_k: K in {self.split_k} parts"] if self.split_k != 1 else []
        parts += ["group_m: rung 8's group-M"] if self.group_m != 8 else []
        return "; ".join(parts)

    @property
    def b_load_box(self):
        """The TMA box one CTA loads of B: chapter 05's, except K-major B with ``cluster=2``,
        where each CTA loads bn/2 rows (its multicast half), and with :attr:`row_boxes` R > 1,
        bn/R rows (loaded R times)."""
        from ..models.layout import SmemTile
        if self.swizzle != 128:
            return self.stage_tiles()[1].smem_tile()
        if self.row_boxes != 1:
            return SmemTile(self.bn // self.row_boxes, self.bk, self.dtype_b, 128)
        if self.cluster == 2 and self.b_major == "K":
            return SmemTile(self.bn // 2, self.bk, self.dtype_b, 128)
        if is_fp8(self.dtype):
            return SmemTile(self.bn, self.bk, self.dtype_b, 128)
        return self.pipeline_config().b_box

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def replace(self, **kw) -> "WSConfig":
        return dataclasses.replace(self, **kw)


#: SMs assumed by a shape's config choice (:func:`asynctc.gemm.matmul_config`,
#: :func:`asynctc.fp8.fp8_shape_config`) where none can be asked (the H200 has 132).
DEFAULT_SM_COUNT = 132


#: The least fraction of the SMs' last wave of tiles :func:`shape_tile` accepts before it takes a
#: narrower tile.
WAVE_FILL = 0.75


def wave_fill(tiles: int, sm_count: int) -> float:
    """tiles / (waves · SMs), waves = ceil(tiles / SMs): how full the CTA waves are."""
    return tiles / (-(-tiles // sm_count) * sm_count)


def shape_tile(m: int, n: int, sm_count: int) -> dict:
    """The CTA tile chosen by the shape (what :func:`asynctc.gemm.matmul_config` and
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
