"""Chapter 06's kernel compiled, launched and checked: compile / run / verify, the broken variant.

:func:`compile_ws` (NVRTC → cubin for sm_90a, no GPU), the register counts a cubin states
(:func:`sass_registers`, :func:`register_split`), the checks of a launch's shapes and operands
(exact multiples of the tile: the ladder's builds), :class:`WSGemm` (one problem set up for
launching), :func:`run_ws`, :func:`verify` (fresh random inputs, poisoned output, float64,
elementwise bound), :func:`run_broken` (:data:`BREAKS`), and the correctness matrix every rung runs
(:func:`correctness_configs`, :func:`check_all`). The ``EDGES`` build's operands (any shape, rows
with a pitch) are :mod:`asynctc.gemm`'s: it launches them through a subclass of :class:`WSGemm`.
FP8 configurations are verified by :func:`asynctc.fp8.verify_fp8` (chapter 07), not here.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from .. import pipeline as P
from ..core import checks, runtime
from ..core.memory import DeviceArray
from .config import (B_MAJORS, DTYPES, WSConfig, WarpSpecializationError, _fail, _launch_regs,
                     is_fp8)
from .ladder import (RUNGS, TRACED_RUNGS, _cluster, _persistent, _pingpong, _tma_store, _ws2,
                     config_label, tile_sweep_configs)
from .trace import trace_words

SOURCE = "warp_specialization.cu"
ENTRY = "gemm_warp_specialized"


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
    from ..models.layout import SmemTile
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
    with ``cluster=2``; with ``cfg.edges`` any M, N, K in 1 .. 2^31 − 1 (32-bit coordinates), and
    with ``cfg.split_k`` S > 1 at least S k-tiles (no slice of K empty).
    Raises :class:`WarpSpecializationError`."""
    if cfg.edges:
        for name, v in (("M", m), ("N", n), ("K", k)):
            if not 1 <= v < 2**31:
                _fail(name, v, "must be in 1 .. 2^31 - 1 (TMA coordinates are signed 32-bit)")
        if cfg.split_k > -(-k // cfg.bk):
            _fail("split_k", cfg.split_k, f"K={k} has {-(-k // cfg.bk)} k-tiles of {cfg.bk}: each "
                                          f"of the split_k slices needs at least one")
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
    """CTAs of a launch: the tile count (times ``split_k``: one work item per slice of K), or
    (persistent) min(that, SMs), rounded down to whole clusters."""
    rows, cols, _ = tile_counts(cfg, m, n, cfg.bk)
    tiles = rows * cols * getattr(cfg, "split_k", 1)
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
    from ..models.layout import dtype_of
    try:
        m, n, k = checks.operand_dims(
            a, b, dtype_of(cfg.dtype), cfg.dtype, cfg.b_major, error=P.PipelineError,
            b_dt=dtype_of(cfg.b_dtype) if cfg.b_dtype else None, b_dtype_name=cfg.b_dtype)
        check_shapes(m, n, k, cfg)
        checks.check_out(out, m, n, dtype_of(cfg.out_dtype), error=P.PipelineError)
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
    callable; :meth:`check_error` raises :class:`RuntimeError` when a wait timed out.

    The operands are the exact builds' (M, N, K multiples of the tile, :func:`check_operands`); a
    subclass that takes other operands overrides :meth:`check` (their M, N, K and C's row pitch),
    :meth:`tensor_map` and :meth:`c_argument` — :class:`asynctc.gemm.EdgeGemm` does, for the
    ``EDGES`` build."""

    def __init__(self, cfg: WSConfig, a: DeviceArray, b: DeviceArray,
                 out: DeviceArray | None = None, stream=None, ck=None, scales=None,
                 block_scales=None):
        self.cfg, self.a, self.b, self.stream = cfg, a, b, stream
        self.m, self.n, self.k, self.ldc = self.check(a, b, out, scales, block_scales)
        self.scales = scales
        self.block_scales = tuple(block_scales) if block_scales is not None else None
        self.ck = ck or compile_ws(cfg)
        self.out = out if out is not None else DeviceArray.poisoned((self.m, self.n),
                                                                    checks.np_dtype(cfg.out_dtype), stream)
        l2 = getattr(cfg, "l2_promotion", 0)       # opt-in (issue 20): refused with edges
        self.ta = self.tensor_map(a, cfg.a_box) if not l2 else _tile_map(a, cfg.a_box, l2)
        self.tb = (self.tensor_map(b, cfg.b_load_box) if not l2 else
                   _tile_map(b, cfg.b_load_box, l2))
        self.order = None                          # tile_order="hilbert": the kernel's table
        if getattr(cfg, "tile_order", "raster") != "raster":
            from .tile_order import item_grid, order_table
            self.order = DeviceArray.from_host(
                order_table(*item_grid(cfg, self.m, self.n), cfg.tile_order), stream)
        # C's tensor map (64×64 box, 128-byte swizzle) for the TMA-store epilogue; other builds
        # never read their third tensor-map argument, and get A's map there
        self.tc = self.tensor_map(self.out, c_store_box(cfg)) if cfg.tma_store else self.ta
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

    def check(self, a, b, out, scales, block_scales) -> tuple[int, int, int, int]:
        """(M, N, K, C's row pitch in elements) of the operands, checked by
        :func:`check_operands`; the ``EDGES`` build is refused here (its operands are
        :mod:`asynctc.gemm`'s)."""
        if self.cfg.edges:
            _fail("cfg.edges", True, "the EDGES build (any M, N, K; rows with a pitch) is launched "
                                     "by asynctc.gemm.EdgeGemm (what asynctc.matmul runs), which "
                                     "checks its operands; WSGemm takes multiples of the tile")
        m, n, k = check_operands(a, b, self.cfg, out, scales, block_scales)
        return m, n, k, n

    def tensor_map(self, x, tile):
        """The tensor map of device array ``x`` whose box fills ``tile``."""
        return _tile_map(x, tile)

    def c_argument(self):
        """What the kernel gets as C's pointer: the output array."""
        return self.out

    @property
    def flop(self) -> int:
        return 2 * self.m * self.n * self.k

    def launcher(self) -> Callable[[], None]:
        i32, u64 = np.int32, np.uint64
        out = self.c_argument()
        args = (self.ta, self.tb, self.tc, out, i32(self.m), i32(self.n), i32(self.k),
                u64(self.desc_a0), u64(self.desc_b0), self.err,
                self.trace if self.trace is not None else u64(0),
                self.scales if self.scales is not None else u64(0))
        if self.cfg.edges:
            args += (i32(self.ldc),)
        if self.cfg.block_scales:
            args += self.block_scales
        if self.order is not None:
            args += (self.order,)

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
                               f" {P.decode_error(word, producer_warpgroup=True)}; the kernel gave up instead of hanging")


def _tile_map(x, tile, l2_promotion: int = 0):
    """The tensor map of :class:`DeviceArray` ``x`` whose box fills ``tile``
    (:func:`asynctc.tma.tensor_map_for_tile`; ``l2_promotion`` only when asked)."""
    from .. import tma
    if l2_promotion:
        return tma.tensor_map_for_tile(x, tile, l2_promotion=l2_promotion)[0]
    return tma.tensor_map_for_tile(x, tile)[0]


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


def verify(cfg, m: int, n: int, k: int, rng=None) -> checks.ElementCheck:
    """Run any rung's ``cfg`` on fresh random inputs (poisoned output) and compare every element
    with float64 (:func:`asynctc.pipeline.compare_elementwise`). An fp8 ``cfg`` raises
    :class:`WarpSpecializationError`: chapter 07's :func:`asynctc.fp8.verify_fp8` checks those."""
    if isinstance(cfg, P.PipelineConfig):
        return P.verify_pipeline(cfg, m, n, k, rng)
    if is_fp8(cfg.dtype):
        _fail("cfg.dtype", cfg.dtype, "an fp8 config is verified by asynctc.fp8.verify_fp8 "
                                      "(chapter 07: quantised inputs, per-tensor or block scales, "
                                      "its own bound); verify checks the 16-bit builds")
    check_shapes(m, n, k, cfg)
    a, b, bs = P.random_operands(m, n, k, cfg.pipeline_config(), rng)
    g = run_ws(a, bs, cfg)
    return checks.compare_elementwise(g.out.to_host(), a, b, cfg.out_dtype, cfg.label())


verify_ws = verify


#: The deliberate protocol error of :func:`run_broken` (the kernel's ``BREAK`` define).
BREAKS = {1: "the last consumer warpgroup never arrives on the empty barrier: the producer's "
             "refill waits forever",
          2: "ping-pong: consumer 2 never arrives on the order barrier: consumer 1's second tile "
             "waits forever for its turn"}


def run_broken(kind: int = 1, cfg: WSConfig | None = None, rng=None) -> str:
    """Run a deliberately broken variant (:data:`BREAKS`) and return the error it ends with (the
    bounded waits turn the hang into an error word). Raises :class:`RuntimeError` if it did not
    fail. The only place the ``BREAK`` define is set."""
    if kind not in BREAKS:
        _fail("kind", kind, f"one of {sorted(BREAKS)}")
    if kind == 2:
        # one CTA walks 3 tiles (consumer 1: tiles 0 and 2, consumer 2: tile 1) of T = 4 ≤ stages
        # k-tiles, so the producer fills tile 2 without waiting on a stage only consumer 1 could
        # free: consumer 1's order wait for tile 2 is the one wait that times out
        cfg = cfg or _pingpong("float16").replace(cluster=1, tma_store=False, out_dtype="float32")
        if not cfg.pingpong or cfg.stages < 4:
            _fail("cfg.pingpong", cfg.pingpong, "break 2 is the ping-pong order barrier's (and "
                                                "needs ≥ 4 stages)")
    cfg = cfg or WSConfig(stages=2)
    m, n, k = ((3 * cfg.bm, cfg.bn, 4 * cfg.bk) if kind == 2 else (2 * cfg.bm, cfg.bn, 8 * cfg.bk))
    a, _, bs = P.random_operands(m, n, k, cfg.pipeline_config(), rng)
    ck = runtime.compile_kernel(SOURCE, ENTRY, "sm_90a", defines={**cfg.defines, "BREAK": kind})
    g = WSGemm(cfg, DeviceArray.from_host(a), DeviceArray.from_host(bs), ck=ck)
    if kind == 2:
        g.grid = cfg.cluster           # one CTA (cluster) for every tile
    g.launcher()()
    try:
        g.check_error()
    except RuntimeError as e:
        return str(e)
    raise RuntimeError(f"broken variant {kind} ({BREAKS[kind]}) finished without an error")


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
        # rung 9 without the cluster and the TMA store (register epilogue, either B layout), and
        # with the other 128-accumulator tile, 64×256 (one atom per consumer)
        for bmaj in B_MAJORS:
            add(lambda: _pingpong(dt).replace(cluster=1, tma_store=False, b_major=bmaj,
                                              out_dtype="float32"))
        add(lambda: _pingpong(dt).replace(bm=64, bn=256, stages=4))
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
