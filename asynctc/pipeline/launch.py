"""Chapter 05's launch: compile (:func:`compile_pipeline`), one problem set up for launching
(:class:`PipelineGemm`), run (:func:`run_pipeline`), the deliberately broken variants
(:func:`run_broken`), verify against float64 (:func:`verify_pipeline`, the elementwise bound of
:func:`asynctc.core.checks.compare_elementwise`), the correctness matrix
(:func:`correctness_configs`, :func:`check_matrix`) and the configurations the suite times
(:func:`sweep_configs`), with their operands (:func:`random_operands`, :func:`device_problem`)."""

from __future__ import annotations

import numpy as np

from ..core import runtime
from ..core.checks import ElementCheck, compare_elementwise
from ..core.memory import DeviceArray
from .config import (B_MAJORS, DTYPES, ENTRY, SOURCE, STAGE_RANGE, TILES, PipelineConfig,
                     PipelineError, _fail, check_operands, check_shapes, np_dtype)
from .trace import decode_error, trace_words


def source() -> str:
    """The kernel's CUDA C++ source (for the notebook)."""
    return (runtime.KERNEL_DIR / SOURCE).read_text()


def compile_pipeline(cfg: PipelineConfig, arch: str = "sm_90a",
                     hooks: dict | None = None) -> runtime.CompiledKernel:
    """Compile ``kernels/pipeline.cu`` for ``cfg`` (no GPU needed); ``hooks``: experiment switches
    set on top of ``cfg``'s defines (``BREAK`` for :func:`run_broken`, ``LOADS_ONLY`` for the
    supply suite). Raises :class:`~asynctc.core.runtime.CompileError` with NVRTC's log."""
    cfg.validate()
    return runtime.compile_kernel(SOURCE, ENTRY, arch, defines={**cfg.defines, **(hooks or {})})


def compile_job(cfg: PipelineConfig) -> tuple[str, str, dict]:
    """(source, entry, defines) for :func:`asynctc.core.runtime.precompile`."""
    return (SOURCE, ENTRY, cfg.defines)



class PipelineGemm:
    """One problem set up for launching: ``cfg``, device operands ``a`` (M×K) and ``b`` (stored per
    ``cfg.b_major``), output ``out`` (M×N, ``cfg.out_dtype``), tensor maps, error word and (with
    ``cfg.trace``) trace buffer; ``hooks``: experiment switches for :func:`compile_pipeline`.
    :meth:`launcher` returns a zero-argument callable for timing loops; :meth:`check_error` raises
    :class:`RuntimeError` when a wait timed out."""

    def __init__(self, cfg: PipelineConfig, a: DeviceArray, b: DeviceArray,
                 out: DeviceArray | None = None, stream=None, hooks: dict | None = None):
        from .. import tma
        self.cfg, self.a, self.b, self.stream = cfg, a, b, stream
        self.m, self.n, self.k = check_operands(a, b, cfg, out)
        self.ck = compile_pipeline(cfg, hooks=hooks)
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
    g = PipelineGemm(cfg, DeviceArray.from_host(a), DeviceArray.from_host(bs), hooks={"BREAK": kind})
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



def verify_pipeline(cfg: PipelineConfig, m: int, n: int, k: int, rng=None) -> ElementCheck:
    """Run ``cfg`` on fresh random inputs (poisoned output) and compare every element with float64
    (:func:`compare_elementwise`). Raises what :func:`run_pipeline` raises."""
    check_shapes(m, n, k, cfg)
    a, b, bs = random_operands(m, n, k, cfg, rng)
    g = run_pipeline(a, bs, cfg)
    out = g.out.to_host()
    return compare_elementwise(out, a, b, cfg.out_dtype, cfg.label())


def check_now(m: int = 512, n: int = 768, k: int = 1024) -> list[str]:
    """Chapter 05 §3's live sample (an sm_90a GPU): the default build and a bf16 128×128 build with
    one consumer, S = 3, B MN-major, each checked now by :func:`verify_pipeline`; a line each.
    Raises ``AssertionError`` naming the build when one fails."""
    lines = []
    for cfg in (PipelineConfig(bm=128, bn=256, consumers=2, stages=4),
                PipelineConfig(dtype="bfloat16", bm=128, bn=128, consumers=1, stages=3, b_major="MN")):
        chk = verify_pipeline(cfg, m, n, k)
        lines.append(f"live: {cfg.label()}: worst |C−ref|/bound {chk.worst:.3f}, wrong {chk.wrong}")
        assert chk.passed, lines[-1]
    return lines


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
# The configurations the suite times
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
    from .. import mma_sync
    a, b = mma_sync.random_operands(s, s, s, dtype, int(rng.integers(2**31)))
    bt = np.ascontiguousarray(b.T)
    return a, b, DeviceArray.from_host(a), DeviceArray.from_host(b), DeviceArray.from_host(bt)

