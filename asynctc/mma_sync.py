"""Chapter 01's synchronous Tensor Core GEMM (``kernels/mma_sync.cu``): compile, run, verify.

``C = A · B`` with A (M×K) and B (K×N) row-major fp16 or bf16, C (M×N) row-major in the input dtype
(or fp32), fp32 accumulation in ``mma.sync.aligned.m16n8k16`` (PTX ISA, "Warp-level matrix
multiply-accumulate instructions: mma"). Three verbs, as in every kernel family of the course:

* :func:`compile_mma_sync` — NVRTC → cubin for sm_90a (works without a GPU);
* :func:`mma_sync_gemm` — validate the inputs in Python, then launch (needs a GPU of that arch);
* :func:`verify_mma_sync` — fresh random inputs, poisoned output, float64 reference.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .core import bench, records, runtime
from .core import exercises as _ex
from .core.bench import peak_tflops  # noqa: F401 (used by the chapter's notebook)
from .core.checks import (  # noqa: F401  (the chapter's checking vocabulary)
    FULL_CHECK_MAX, U_ACC, Check, SampledReference, abs_reference, check_gemm, check_sampled_rows,
    compare, exact_operands, gamma, np_dtype, random_operands, reference, square_problem,
    timed_output_reference)
from .core.memory import DeviceArray

#: Input dtypes and their kernel code (the ``DT`` define).
DTYPES = {"float16": 0, "bfloat16": 1}


@dataclasses.dataclass(frozen=True)
class MmaSyncTile:
    """CTA tile ``bm``×``bn``×``bk`` and warp tile ``wm``×``wn`` (elements); ``group_m`` CTA rows
    per raster group. ``threads`` = (bm/wm)·(bn/wn)·32; ``smem_bytes`` = 2 buffers × (A + B tile)."""

    bm: int = 128
    bn: int = 128
    bk: int = 64
    wm: int = 64
    wn: int = 64
    group_m: int = 8
    min_blocks: int = 1

    @property
    def threads(self) -> int:
        return (self.bm // self.wm) * (self.bn // self.wn) * 32

    @property
    def smem_bytes(self) -> int:
        return 2 * (self.bm * self.bk + self.bk * self.bn) * 2

    @property
    def name(self) -> str:
        n = f"{self.bm}x{self.bn}x{self.bk}/w{self.wm}x{self.wn}"
        return n + (f"/{self.min_blocks}cta" if self.min_blocks > 1 else "")

    @property
    def warps(self) -> int:
        return self.threads // 32

    def l1_bytes_per_ktile(self) -> dict[str, int]:
        """Bytes one CTA moves through the SM's L1/shared-memory data path per k-tile (a model).

        ``ldg``: global → registers (16-byte loads pass through L1/TEX); ``sts``: registers → shared
        memory; ``ldsm``: shared memory → fragments, each warp reading its wm×bk slice of A and bk×wn
        slice of B; ``flop``: 2·bm·bn·bk.
        """
        tile_bytes = (self.bm + self.bn) * self.bk * 2
        return {"ldg": tile_bytes, "sts": tile_bytes,
                "ldsm": self.warps * (self.wm + self.wn) * self.bk * 2,
                "flop": 2 * self.bm * self.bn * self.bk}

    def l1_bound_tflops(self, sm_count: int, sm_clock_mhz: float, bytes_per_clk: int = 128) -> float:
        """Throughput at which the L1/shared-memory data path (``bytes_per_clk`` per SM, 128 on
        sm_90: 32 banks × 4 bytes) would be saturated by :meth:`l1_bytes_per_ktile` alone."""
        b = self.l1_bytes_per_ktile()
        flop_per_byte = b["flop"] / (b["ldg"] + b["sts"] + b["ldsm"])
        return flop_per_byte * bytes_per_clk * sm_count * sm_clock_mhz * 1e6 / 1e12

    def validate(self) -> None:
        """Raise :class:`ValueError` naming the field when the kernel cannot be built for this tile."""
        if self.bk not in (32, 64):
            raise ValueError(f"bk={self.bk}: must be 32 or 64 (the A-tile swizzle covers 64- and "
                             "128-byte rows)")
        for f in ("wm", "wn"):
            v = getattr(self, f)
            if v <= 0 or v % 16:
                raise ValueError(f"{f}={v}: a warp tile side must be a positive multiple of 16")
        if self.bm % self.wm or self.bn % self.wn:
            raise ValueError(f"warp tile {self.wm}x{self.wn} must divide CTA tile {self.bm}x{self.bn}")
        if self.bn % 64:
            raise ValueError(f"bn={self.bn}: must be a multiple of 64 (B rows span whole 128-byte "
                             "lines for the B-tile swizzle)")
        if not 32 <= self.threads <= 1024:
            raise ValueError(f"threads={self.threads}: (bm/wm)·(bn/wn)·32 must be 32..1024")
        if (self.bm * self.bk // 8) % self.threads or (self.bk * self.bn // 8) % self.threads:
            raise ValueError(f"tile {self.name}: its 16-byte chunks must divide evenly among "
                             f"{self.threads} threads")
        for what, chunks_row in (("A", self.bk // 8), ("B", self.bn // 8)):
            if self.threads % chunks_row or (self.threads // chunks_row) % 8:
                raise ValueError(f"tile {self.name}: {self.threads} threads must cover whole {what}-tile "
                                 f"rows ({chunks_row} chunks each) in steps of 8 rows")
        if self.smem_bytes > 227 * 1024:
            raise ValueError(f"smem_bytes={self.smem_bytes}: above the 227 KiB a block may use on sm_90")
        if self.min_blocks not in (1, 2, 3, 4):
            raise ValueError(f"min_blocks={self.min_blocks}: must be 1..4")
        acc_regs = (self.wm * self.wn) // 32
        if acc_regs > 160:
            raise ValueError(f"warp tile {self.wm}x{self.wn}: {acc_regs} fp32 accumulators per thread "
                             "would spill (limit 160 here)")


#: The tuned default (fastest at 4096³ fp16 on the H200 among the tiles tried, see data/):
#: 128×128×64 CTA tile, four 64×64 warp tiles, two CTAs per SM.
DEFAULT_TILE = MmaSyncTile(128, 128, 64, 64, 64, min_blocks=2)

#: Tiles tried by the benchmark: the default and its neighbours.
TILES = (DEFAULT_TILE, MmaSyncTile(128, 128, 32, 64, 64), MmaSyncTile(128, 256, 32, 64, 64),
         MmaSyncTile(128, 128, 32, 64, 32, min_blocks=2), MmaSyncTile(128, 128, 64, 64, 32))


def compile_mma_sync(dtype: str = "float16", tile: MmaSyncTile = DEFAULT_TILE, out_f32: bool = False,
                     arch: str = "sm_90a") -> runtime.CompiledKernel:
    """Compile the mma.sync GEMM for ``dtype`` ("float16" | "bfloat16") and ``tile``. No GPU needed."""
    return runtime.compile_kernel("mma_sync.cu", "gemm_mma_sync", arch,
                                  defines=_defines(dtype, tile, out_f32))


def _defines(dtype: str, tile: MmaSyncTile, out_f32: bool) -> dict[str, int]:
    """The compile-time defines of ``kernels/mma_sync.cu``; validates ``dtype`` and ``tile``."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype={dtype!r}: must be one of {sorted(DTYPES)}")
    tile.validate()
    return dict(BM=tile.bm, BN=tile.bn, BK=tile.bk, WM=tile.wm, WN=tile.wn, DT=DTYPES[dtype],
                OUT_F32=int(out_f32), GROUP_M=tile.group_m, MINB=tile.min_blocks)


#: The diagnostic variants of the kernel (the ``ABLATE`` define): what is left of the data path.
#: Timing only — the product they compute is wrong by construction.
ABLATIONS = {0: "full kernel", 1: "no global→shared copy", 2: "no ldmatrix",
             3: "mma.sync + __syncthreads only"}


def compile_mma_sync_ablation(ablate: int, dtype: str = "float16", tile: MmaSyncTile = DEFAULT_TILE,
                              arch: str = "sm_90a") -> runtime.CompiledKernel:
    """The chapter-01 kernel with parts of its data path removed, to measure what each part costs:
    ``ablate`` 1 drops the global loads and shared-memory stores after the first k-tile, 2 the
    ``ldmatrix`` after the first k16 step (fragments reused), 3 both (see :data:`ABLATIONS`; 0 is
    the kernel itself). Launch with :func:`launcher`; never use its output."""
    if ablate not in ABLATIONS:
        raise ValueError(f"ablate={ablate!r}: must be one of {sorted(ABLATIONS)}")
    return runtime.compile_kernel("mma_sync.cu", "gemm_mma_sync", arch,
                                  defines={**_defines(dtype, tile, False), "ABLATE": ablate})


def check_shapes(m: int, n: int, k: int, tile: MmaSyncTile = DEFAULT_TILE) -> None:
    """Raise :class:`ValueError` when (M, N, K) is not a whole number of tiles.

    The kernel has no edge handling: M % bm, N % bn and K % bk must all be 0.
    """
    for name, v, t in (("M", m, tile.bm), ("N", n, tile.bn), ("K", k, tile.bk)):
        if v <= 0 or v % t:
            raise ValueError(f"{name}={v}: the mma.sync GEMM with tile {tile.name} needs {name} to be "
                             f"a positive multiple of {t}")
        if v >= 2**31:
            raise ValueError(f"{name}={v}: must be < 2^31 (32-bit index arithmetic)")


def _check_operand(x, what: str, dtype: np.dtype) -> None:
    if x.dtype != dtype:
        raise ValueError(f"{what}.dtype={x.dtype}: expected {dtype} (same as A)")
    if len(x.shape) != 2:
        raise ValueError(f"{what}.shape={x.shape}: must be 2-D")
    if isinstance(x, DeviceArray) and x.ptr % 16:
        raise ValueError(f"{what} address {x.ptr:#x}: must be 16-byte aligned (16-byte vector loads)")


def mma_sync_gemm(a, b, *, tile: MmaSyncTile = DEFAULT_TILE, out: DeviceArray | None = None,
                  out_f32: bool = False, stream=None) -> DeviceArray:
    """``out = a @ b`` with the chapter-01 kernel; returns ``out`` (a :class:`DeviceArray`).

    ``a`` (M×K), ``b`` (K×N): fp16 or bf16 numpy arrays or :class:`DeviceArray` (C-contiguous,
    16-byte aligned). ``out``: M×N in the input dtype (fp32 when ``out_f32``), allocated when None.
    Raises :class:`ValueError` for bad dtypes, shapes or alignment, before anything reaches the GPU;
    :class:`~asynctc.core.runtime.NoGPUError` without an sm_90 GPU.
    """
    return run_gemm(a, b, tile, lambda dt: compile_mma_sync(dt, tile, out_f32), launcher, out,
                    out_f32, stream)


def run_gemm(a, b, tile, compile_fn, launcher_fn, out=None, out_f32=False, stream=None):
    """Shared body of the GEMM entry points (chapters 01–02): validate dtypes, shapes, alignment and
    ``out`` in Python (raising :class:`ValueError` naming the field), compile with
    ``compile_fn(dtype_name)``, upload host operands, poison a new output, launch once."""
    dt = np.dtype(a.dtype)
    if dt.name not in DTYPES:
        raise ValueError(f"a.dtype={dt}: must be float16 or bfloat16")
    _check_operand(a, "a", dt)
    _check_operand(b, "b", dt)
    (m, k), (k2, n) = a.shape, b.shape
    if k2 != k:
        raise ValueError(f"b.shape={b.shape}: b must have K={k} rows to match a.shape={a.shape}")
    tile.validate()
    check_shapes(m, n, k, tile)
    odt = np.dtype(np.float32) if out_f32 else dt
    if out is not None and (out.shape != (m, n) or out.dtype != odt):
        raise ValueError(f"out: shape {out.shape} / dtype {out.dtype}, expected {(m, n)} / {odt}")
    ck = compile_fn(dt.name)
    da = a if isinstance(a, DeviceArray) else DeviceArray.from_host(a, stream)
    db = b if isinstance(b, DeviceArray) else DeviceArray.from_host(b, stream)
    if out is None:
        out = DeviceArray.poisoned((m, n), odt, stream)
    launcher_fn(ck, tile, da, db, out, stream)()
    return out


def launcher(ck: runtime.CompiledKernel, tile: MmaSyncTile, a: DeviceArray, b: DeviceArray,
             out: DeviceArray, stream=None):
    """A zero-argument callable that enqueues one launch (for timing loops); inputs pre-validated."""
    m, k = a.shape
    n = b.shape[1]
    grid = (m // tile.bm) * (n // tile.bn)
    i32 = np.int32
    runtime.check_launch(grid, tile.threads, tile.smem_bytes, ck)

    def run():
        runtime.launch(ck, grid, tile.threads, a, b, out, i32(m), i32(n), i32(k),
                       shmem_bytes=tile.smem_bytes, stream=stream)
    return run


# --------------------------------------------------------------------------------------------------
# Verification
# --------------------------------------------------------------------------------------------------


def check_tiles(verify, tiles, shapes, dtypes=tuple(DTYPES), what: str = "GEMM") -> list[dict]:
    """Run ``verify(m, n, k, dtype=, tile=)`` for every dtype × shape × tile whose shape is a whole
    number of tiles; return the checks as dicts (with the tile name). Raises :class:`RuntimeError`
    at the first failure, so a suite never times a wrong kernel."""
    out = []
    for dtype in dtypes:
        for shp in shapes:
            for tile in tiles:
                try:
                    check_shapes(*shp, tile)
                except ValueError:
                    continue
                c = verify(*shp, dtype=dtype, tile=tile)
                out.append({**c.as_dict(), "tile": tile.name})
                if not c.passed:
                    raise RuntimeError(f"{what} wrong: {c.as_dict()} tile {tile.name}")
    return out


def verify_mma_sync(m: int, n: int, k: int, dtype: str = "float16",
                    tile: MmaSyncTile = DEFAULT_TILE, seed: int | None = None,
                    out_f32: bool = False) -> Check:
    """Run the kernel on fresh random inputs with a poisoned output; compare every element with
    float64 under the elementwise bound relative to |A|·|B| (:func:`asynctc.core.checks.check_gemm`)."""
    a, b = random_operands(m, n, k, dtype, seed)
    out = mma_sync_gemm(a, b, tile=tile, out_f32=out_f32).to_host()
    return check_gemm(out, a, b, dtype)


# --------------------------------------------------------------------------------------------------
# The ceiling of mma.sync alone (kernels/mma_sync_peak.cu)
# --------------------------------------------------------------------------------------------------

PEAK_CHAINS = 8
PEAK_ITERS = 4096


def compile_mma_sync_peak(dtype: str = "float16", arch: str = "sm_90a") -> runtime.CompiledKernel:
    """Compile the register-only mma.sync throughput kernel. No GPU needed."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype={dtype!r}: must be one of {sorted(DTYPES)}")
    return runtime.compile_kernel("mma_sync_peak.cu", "mma_sync_peak", arch,
                                  defines=dict(DT=DTYPES[dtype], CHAINS=PEAK_CHAINS,
                                               ITERS=PEAK_ITERS))


class MmaSyncPeak:
    """Set-up for timing mma.sync with no memory traffic: ``blocks`` CTAs of ``warps`` warps.

    ``flop`` per launch = warps·blocks·ITERS·CHAINS·4096; :meth:`launcher` enqueues one launch
    (the timed binary, on uniform(-1, 1) timing data); :meth:`check` runs that same binary on
    exact-arithmetic operands with a poisoned output and requires every warp's every output tile to
    equal ITERS·(A·B) exactly; :meth:`check_timing_data` checks it on the timing data within a
    conservative bound; :meth:`measured_clock_mhz` reads the SM clock the last launch ran at
    (clock64 over %globaltimer, inside the kernel).
    """

    def __init__(self, dtype: str = "float16", blocks: int = 132 * 4, warps: int = 4, seed=None):
        if not 1 <= warps <= 32:
            raise ValueError(f"warps={warps}: must be 1..32")
        if blocks < 1:
            raise ValueError(f"blocks={blocks}: must be ≥ 1")
        self.dtype, self.blocks, self.warps = dtype, blocks, warps
        self.ck = compile_mma_sync_peak(dtype)
        rng = np.random.default_rng(seed)
        dt = np_dtype(dtype)
        self.a = rng.uniform(-1, 1, (16, 16)).astype(np.float32).astype(dt)
        self.b = rng.uniform(-1, 1, (16, 8)).astype(np.float32).astype(dt)
        self.flop = warps * blocks * PEAK_ITERS * PEAK_CHAINS * 2 * 16 * 8 * 16
        self.da = DeviceArray.from_host(self.a)
        self.db = DeviceArray.from_host(self.b)
        self.out = DeviceArray.poisoned((blocks * warps, PEAK_CHAINS, 16, 8), np.float32)
        self.clk = DeviceArray.poisoned((blocks, 4), np.uint64)

    def launcher(self, stream=None, operands=None):
        """One launch of the timed binary; ``operands`` = (da, db) replaces the timing data."""
        da, db = operands or (self.da, self.db)

        def run():
            runtime.launch(self.ck, self.blocks, self.warps * 32, da, db, self.out, self.clk,
                           stream=stream)
        return run

    def measured_clock_mhz(self) -> float:
        """The SM clock during the last launch: median over CTAs of Δclock64 / Δ%globaltimer (MHz).
        Raises :class:`RuntimeError` if no launch wrote the clock record."""
        return clock_record_mhz(self.clk.to_host())

    @staticmethod
    def tolerance() -> float:
        """Elementwise bound of the timed binary's output on the timing data (uniform(-1, 1)),
        relative to ITERS·(|A|·|B|), deliberately conservative: every mma.sync adds 16 products
        to an accumulator that grows to ITERS·(A·B); if each product lost up to one unit in the
        last place of the accumulator when the Tensor Core aligns and truncates them (Fasi et al.
        2021's model), the error is below γ_{17·ITERS}(2^-23) = 8.4e-3 for ITERS = 4096 — still
        far below a wrong element's ~0.3. The measured drift is ~1e-4 (one rounding per mma); the
        exact check (:meth:`check`) is the sharp one."""
        return gamma(17 * PEAK_ITERS, U_ACC)

    def check(self, rng=None) -> Check:
        """The timed binary (ITERS = :data:`PEAK_ITERS`, the timed launch configuration) on
        exact-arithmetic operands (:func:`asynctc.core.checks.exact_operands`: ±1/4, ±1/2, ±3/4,
        so every partial sum of the 4096 accumulations is exact in fp32) with a poisoned output:
        every element of every warp's every chain must equal ITERS·(A·B) exactly (tolerance 0).
        Raises :class:`RuntimeError` if the operands would not be exact (they always are here)."""
        a, b, exact = exact_operands((16, 16), (16, 8), self.dtype, PEAK_ITERS, rng=rng)
        if not exact:
            raise RuntimeError(f"exact operands do not fit fp32 for ITERS={PEAK_ITERS}")
        ops = (DeviceArray.from_host(a), DeviceArray.from_host(b))
        return self._run_and_compare(a, b, 0.0, ops)

    def check_timing_data(self) -> Check:
        """The timed binary on the timing data itself, elementwise within :meth:`tolerance`."""
        return self._run_and_compare(self.a, self.b, self.tolerance(), None)

    def _run_and_compare(self, a, b, tol: float, ops) -> Check:
        self.out.poison()
        self.launcher(operands=ops)()
        got = self.out.to_host().reshape(-1, 16, 8)
        ref = np.broadcast_to(PEAK_ITERS * reference(a, b), got.shape)
        scale = PEAK_ITERS * abs_reference(a, b)
        return compare(got, ref, self.dtype, (16, 8, 16 * PEAK_ITERS), scale=scale, tol=tol)


def clock_record_mhz(c: np.ndarray) -> float:
    """SM clock in MHz from a per-CTA record {c0, c1, t0, t1} (clock64 and %globaltimer before and
    after a loop): median over CTAs of (c1 − c0) / (t1 − t0) × 1000. Raises :class:`RuntimeError`
    when no CTA wrote a usable record (poison left)."""
    c = np.asarray(c, dtype=np.float64).reshape(-1, 4)
    dc, dt = c[:, 1] - c[:, 0], c[:, 3] - c[:, 2]
    ok = (dt > 0) & (dc > 0) & (c[:, 0] < 2.0**63)
    if not ok.any():
        raise RuntimeError("the clock record was not written")
    return float(np.median(dc[ok] / dt[ok]) * 1e3)


# --------------------------------------------------------------------------------------------------
# The record suite ``mma_sync``
# --------------------------------------------------------------------------------------------------

MMA_SIZES = (512, 1024, 2048, 4096, 6144, 8192)
CHECK_SHAPES = ((128, 256, 32), (256, 512, 96), (384, 768, 160), (1024, 512, 2048),
                (512, 1280, 416))
#: The full check of every *timed* binary (output in the input dtype, as timed): 8 whole raster
#: groups of GROUP_M = 8 CTA rows plus a partial group of 3 (M = 67 × 128), 2–4 CTA columns, and
#: K = 384 (6 k-tiles of 64, 12 of 32: a 4-stage ring wraps). Every element against float64.
TIMED_CHECK_SHAPE = ((8 * 8 + 3) * 128, 512, 384)
SIMT_SIZES = (1024, 2048)
PEAK_CONFIGS = ((4, 1), (4, 2), (8, 2), (8, 4))
#: What ``sm_mhz`` means in the register-only peak rows.
IN_KERNEL_CLOCK = "in-kernel clock64/%globaltimer (median over CTAs, last timed launch)"


def check_timed_binaries(verify, tiles, dtypes=tuple(DTYPES), shape=None,
                         what: str = "GEMM") -> list[dict]:
    """Every tile × dtype of the sweep in its timed form (output in the input dtype), on the full
    ``shape`` (default :data:`TIMED_CHECK_SHAPE`) output against float64. Raises
    :class:`RuntimeError` at the first failure."""
    out = check_tiles(verify, tiles, (shape or TIMED_CHECK_SHAPE,), dtypes, what=what)
    return [{**c, "output": c["dtype"], "timed_binary": True} for c in out]


def measure_mma_sync() -> dict:
    """Correctness first: every tile at :data:`CHECK_SHAPES` with fp32 output (the tight bound:
    no output rounding), and every timed binary on the full :data:`TIMED_CHECK_SHAPE`. Then the
    mma.sync GEMM (every tile in :data:`TILES`) beside cuBLAS on the same inputs, fp16 and bf16,
    sizes :data:`MMA_SIZES`, each timed output checked (:func:`timed_output_reference`), the SM
    clock measured by :func:`~asynctc.core.bench.time_gpu` (in flight; ``sm_mhz_source``); the numba SIMT GEMM (fp32) at :data:`SIMT_SIZES`; the anatomy;
    the register-only ceiling with its in-kernel clock."""
    import functools
    out: dict = {"sweep": [], "simt": [],
                 "tiles": [dict(name=t.name, bm=t.bm, bn=t.bn, bk=t.bk, wm=t.wm, wn=t.wn,
                                threads=t.threads, smem_bytes=t.smem_bytes) for t in TILES],
                 "baseline_library": bench.baseline_library(),
                 "check_protocol": "fp32-output path at CHECK_SHAPES and every timed binary on "
                                   f"{TIMED_CHECK_SHAPE} in full; timed outputs in full up to "
                                   f"{FULL_CHECK_MAX}, else one row per 128-row CTA band; "
                                   "elementwise |C-ref| <= tol*(|A|.|B|)"}
    runtime.precompile([("mma_sync.cu", "gemm_mma_sync", _defines(dt, t, f32))
                        for dt in DTYPES for t in TILES for f32 in (False, True)])
    out["checks"] = [{**c, "output": "float32"} for c in check_tiles(
        functools.partial(verify_mma_sync, out_f32=True), TILES, CHECK_SHAPES,
        what="mma.sync GEMM (fp32 output)")]
    out["checks"] += check_timed_binaries(verify_mma_sync, TILES, what="mma.sync GEMM (timed binary)")
    bar = _progress(len(DTYPES) * len(MMA_SIZES), "mma_sync")
    for dtype in DTYPES:
        for s in MMA_SIZES:
            a, b, da, db, dc = square_problem(s, dtype)
            ref = timed_output_reference(a, b, dtype, np.random.default_rng(s))
            flop = bench.gemm_flop(s, s, s)
            if out["baseline_library"]:
                out["sweep"].append(bench.cublas_sweep_row(da, db, dc, dtype, s))
            for tile in TILES:
                try:
                    check_shapes(s, s, s, tile)
                except ValueError:
                    continue
                ck = compile_mma_sync(dtype, tile)
                dc.poison()
                run = launcher(ck, tile, da, db, dc)
                t = bench.time_gpu(run, reps=20, clock=True)
                chk = check_sampled_rows(dc, a, b, dtype, f"tile {tile.name}", sampled=ref)
                out["sweep"].append({"dtype": dtype, "size": s, "kernel": "mma.sync",
                                     "tile": tile.name, **t.as_dict(),
                                     "check_timed": {**chk.as_dict(), "rows": len(ref.rows)},
                                     "registers": ck.resources.registers,
                                     "spill_bytes": ck.resources.spill_stores,
                                     "tflops": bench.tflops(flop, t.median_ms)})
            del da, db, dc
            bar.update()
    bar.close()
    out.update(measure_mma_sync_anatomy())
    # The ceiling of mma.sync itself: register-only kernel, by warps per SM, its clock in-kernel.
    out["peak"] = []
    info = runtime.device_info()
    for dtype in DTYPES:
        for warps, per_sm in PEAK_CONFIGS:
            p = MmaSyncPeak(dtype, blocks=info.sm_count * per_sm, warps=warps)
            c, cd = p.check(), p.check_timing_data()
            if not (c.passed and cd.passed):
                raise RuntimeError(f"mma.sync peak kernel wrong: exact operands {c.as_dict()}, "
                                   f"timing data {cd.as_dict()}")
            t = bench.time_gpu(p.launcher(), flush=False)
            out["peak"].append({"dtype": dtype, "warps_per_cta": warps, "ctas_per_sm": per_sm,
                                **t.as_dict(), "tflops": bench.tflops(p.flop, t.median_ms),
                                "sm_mhz": p.measured_clock_mhz(), "sm_mhz_source": IN_KERNEL_CLOCK,
                                "check": c.as_dict(), "check_timing_data": cd.as_dict()})
    # The numba SIMT kernel, fp32, for scale.
    from . import simt  # noqa: F811
    cuda = simt.numba_cuda() if SIMT_SIZES else None
    for s in SIMT_SIZES:
        rng = np.random.default_rng(s)
        a = rng.standard_normal((s, s), dtype=np.float32)
        b = rng.standard_normal((s, s), dtype=np.float32)
        da, db = cuda.to_device(a), cuda.to_device(b)
        dc = cuda.to_device(np.full((s, s), np.nan, np.float32))
        run = simt.simt_launcher(da, db, dc, runtime.default_stream())
        t = bench.time_gpu(run, reps=10)
        chk = check_gemm(dc.copy_to_host(), a, b, "float32")
        if not chk.passed:
            raise RuntimeError(f"numba SIMT GEMM wrong: {chk.as_dict()}")
        out["simt"].append({"size": s, **t.as_dict(), "check": chk.as_dict(),
                            "tflops": bench.tflops(bench.gemm_flop(s, s, s), t.median_ms)})
    return out


ABLATION_SIZE = 4096


def measure_mma_sync_anatomy(size: int = ABLATION_SIZE) -> dict:
    """Where the time of the default kernel goes, fp16 ``size``³: the kernel with parts of its data
    path removed (:data:`ABLATIONS`, timing only) beside cuBLAS in the same run; then cuBLAS
    and the kernel run back to back with the SM clock sampled during the load
    (:func:`bench.sustained`), for TFLOP/s per clock."""
    a, b, da, db, dc = square_problem(size, "float16")
    flop = bench.gemm_flop(size, size, size)
    tile = DEFAULT_TILE
    out: dict = {"ablation": [], "sustained": []}
    cub = bench.cublas_gemm(da, db, dc) if bench.baseline_library() else None
    runs = {ABLATIONS[ab]: launcher(compile_mma_sync_ablation(ab, "float16", tile),
                                              tile, da, db, dc) for ab in ABLATIONS}
    full = runs[ABLATIONS[0]]
    for what, run in (({"cuBLAS": cub} if cub else {}) | runs).items():
        t = bench.time_gpu(run, reps=30, clock=True)
        out["ablation"].append({"dtype": "float16", "size": size, "tile": tile.name, "variant": what,
                                **t.as_dict(), "tflops": bench.tflops(flop, t.median_ms)})
    # the full kernel once more, checked, so the ablation's first row is a correct kernel
    dc.poison()
    full()
    check_sampled_rows(dc, a, b, "float16", f"tile {tile.name}", rng=np.random.default_rng(1))
    for kernel, run in (({"cuBLAS": cub} if cub else {}) | {"mma.sync": full}).items():
        r = bench.sustained(run)
        out["sustained"].append({"dtype": "float16", "size": size, "tile": tile.name,
                                 "kernel": kernel, **r, "tflops": bench.tflops(flop, r["ms"])})
    return out


def best_mma_rows(results: dict, dtype: str) -> list[dict]:
    """The fastest mma.sync tile per size for ``dtype``."""
    best: dict[int, dict] = {}
    for r in results["sweep"]:
        if r["kernel"] == "mma.sync" and r["dtype"] == dtype:
            if r["size"] not in best or r["tflops"] > best[r["size"]]["tflops"]:
                best[r["size"]] = r
    return [best[s] for s in sorted(best)]


def cublas_rows(results: dict, dtype: str) -> list[dict]:
    return sorted((r for r in results["sweep"] if r["kernel"] == "cuBLAS" and r["dtype"] == dtype),
                  key=lambda r: r["size"])


def summarize_mma_sync(rec: records.Record, anatomy: bool = True) -> str:
    r = rec.results
    p = rec.provenance
    n = p["sm_count"]
    lines = [rec.label(), f"correctness: {sum(c['passed'] for c in r['checks'])}/"
                          f"{len(r['checks'])} checks passed"]
    for dtype in DTYPES:
        cb = {x["size"]: x for x in cublas_rows(r, dtype)}
        for row in best_mma_rows(r, dtype):
            base = cb.get(row["size"])
            ratio = f"{row['tflops'] / base['tflops']:.2f} of cuBLAS ({base['tflops']:.0f})" \
                if base else "no baseline"
            if base and row["tflops"] > base["tflops"]:
                ratio += (f"  <- cuBLAS slower here (p10-p90 {base['p10_ms']:.3f}-"
                          f"{base['p90_ms']:.3f} ms)")
            lines.append(f"mma.sync {dtype:8s} {row['size']:5d}³ tile {row['tile']:18s} "
                         f"{row['tflops']:6.1f} TFLOP/s ±{bench.row_spread(row):.0%}  "
                         f"{ratio}" + _at_clock(row, n, dtype))
    for row in r["simt"]:
        lines.append(f"numba SIMT fp32 {row['size']:5d}³: {row['tflops']:.2f} TFLOP/s")
    for row in r.get("peak", []):
        lines.append(f"mma.sync register-only {row['dtype']:8s} {row['warps_per_cta']} warps × "
                     f"{row['ctas_per_sm']} CTA/SM: {row['tflops']:.0f} TFLOP/s"
                     + _at_clock(row, n, row["dtype"]))
    shown = [x for dtype in DTYPES for x in best_mma_rows(r, dtype) if x.get("sm_mhz")]
    if shown and bench.clock_caveat(bench.rows_clock_kind(shown)):     # for the fractions above
        lines.append("mma.sync GEMM rows: " + bench.clock_caveat(bench.rows_clock_kind(shown)))
    if anatomy:
        lines += summarize_anatomy(r, n)
    return "\n".join(lines)


def _at_clock(row: dict, sm_count: int, dtype: str) -> str:
    """``" = 0.93 of 132×4096×1713 MHz (in-kernel) = 926 (datasheet 989 at 1830 MHz: 0.92)"``
    (:func:`bench.peak_text`), or nothing for
    rows of older records that carry no measured clock."""
    if row.get("sm_mhz") is None:
        return ""
    return " = " + bench.peak_text(row, sm_count, dtype)


def summarize_anatomy(r: dict, sm_count: int) -> list[str]:
    """The ablation and sustained-clock lines of the mma_sync record (empty for older records)."""
    lines = []
    base = next((x["tflops"] for x in r.get("ablation", []) if x["variant"] == "cuBLAS"), None)
    for x in r.get("ablation", []):
        rel = f"  {x['tflops'] / base:.2f} of cuBLAS" if base else ""
        lines.append(f"anatomy {x['size']}³ fp16 {x['variant']:32s} {x['tflops']:6.1f} TFLOP/s{rel}")
    for x in r.get("sustained", []):
        at_clock = peak_tflops(sm_count, x["sm_mhz"])
        sheet = bench.DATASHEET
        lines.append(f"sustained {x['kernel']:8s} {x['tflops']:6.1f} TFLOP/s at {x['sm_mhz']:.0f} MHz "
                     f"(nvidia-smi sampled during the loop, {x['power_w']:.0f} W) = "
                     f"{x['tflops'] / at_clock:.2f} of {sm_count}×4096×that clock (datasheet "
                     f"{sheet['dense_tflops']['float16']:.0f} at {sheet['boost_mhz']} MHz: "
                     f"{x['tflops'] / sheet['dense_tflops']['float16']:.2f})")
    return lines


def _progress(total: int, desc: str):
    from tqdm.auto import tqdm
    return tqdm(total=total, desc=desc, leave=False)


SUITES = {"mma_sync": (measure_mma_sync, summarize_mma_sync, "sm_90a")}


# ---- chapter 01 -----------------------------------------------------------------------------------

@_ex.exercise("ch01.smem_bytes", "Shared-memory bytes of ONE stage (one A tile and one B tile, fp16) for a "
              "bm×bn×bk CTA tile.")
def _ch01_smem(bm: int, bn: int, bk: int) -> int:
    return MmaSyncTile(bm, bn, bk).smem_bytes // 2


@_ex.diagnosis("ch01.smem_bytes")
def _ch01_smem_hint(answer, expected, bm: int, bn: int, bk: int) -> str | None:
    a, b = bm * bk * 2, bk * bn * 2
    return _ex.known_mistake(answer, expected, [
        (a, f"that is the A tile alone (bm×bk = {bm}×{bk}); one stage holds an A tile and a B tile."),
        (b, f"that is the B tile alone (bk×bn = {bk}×{bn}); one stage holds an A tile and a B tile."),
        (bm * bk + bk * bn, "you counted elements, not bytes: fp16 is 2 bytes per element."),
        (bm * bn * 2, "that is the size of the C tile (bm×bn); a stage holds the operands: A is bm×bk, "
                      "B is bk×bn."),
        (2 * (a + b), "twice too large: one stage, not the kernel's two buffers — or did you take 4 "
                      "bytes per element? fp16 is 2."),
        ((a + b) / 1024, "that is in KiB; the question asks for bytes."),
        (2 * a, "you counted the A tile twice; B is bk×bn, not bm×bk."),
        (2 * b, "you counted the B tile twice; A is bm×bk, not bk×bn."),
        ((a + b) * 8, "that is bits; the question asks for bytes."),
    ])


@_ex.exercise("ch01.hmma_per_ktile", "How many mma.sync.m16n8k16 (HMMA) instructions does one warp issue per "
              "k-tile, for a wm×wn warp tile and a bk-deep k-tile?")
def _ch01_hmma(wm: int, wn: int, bk: int) -> int:
    return (wm // 16) * (wn // 8) * (bk // 16)


@_ex.diagnosis("ch01.hmma_per_ktile")
def _ch01_hmma_hint(answer, expected, wm: int, wn: int, bk: int) -> str | None:
    mt, nt, ks = wm // 16, wn // 8, bk // 16
    return _ex.known_mistake(answer, expected, [
        (mt * nt, f"that is one k16 step; a k-tile {bk} deep has {bk}/16 of them."),
        (mt * (wn // 16) * ks, "one m16n8k16 covers 8 columns of N, not 16."),
        ((wm // 8) * nt * ks, "one m16n8k16 covers 16 rows of M, not 8."),
        (mt * nt * (bk // 8), "one mma.sync is 16 deep in K (the k16 of m16n8k16), not 8."),
        (mt * nt * bk, "each mma.sync consumes 16 of K, so a k-tile takes bk/16 steps, not bk."),
        (wm * wn * bk, "that counts multiply-adds; one mma.sync does 16×8×16 of them."),
        (2 * wm * wn * bk, "that counts FLOP; one mma.sync does 2·16·8·16 of them."),
        (mt * nt * ks * 4, "that is per CTA of 4 warps; the question asks for one warp."),
    ])


@_ex.exercise("ch01.costliest_part", "Which part of the chapter-01 kernel's data path costs more time: "
              "\"copy\" (global→shared by the threads) or \"ldmatrix\"? Predict; the check compares "
              "with the measured ablation (the mma_sync record's results[\"ablation\"]).",
              choices=("copy", "ldmatrix"),
              aliases={"the copy": "copy", "global→shared copy": "copy", "global->shared copy": "copy",
                       "ldsm": "ldmatrix", "the ldmatrix": "ldmatrix"})
def _ch01_costliest(ablation) -> str:
    t = {x["variant"]: x["tflops"] for x in ablation}
    return "copy" if t["no global→shared copy"] > t["no ldmatrix"] else "ldmatrix"


@_ex.diagnosis("ch01.costliest_part")
def _ch01_costliest_hint(answer, expected, ablation) -> str | None:
    t = {x["variant"]: x["tflops"] for x in ablation}
    full = t.get("full kernel")
    line = (f"the record says: full kernel {full:.0f} TFLOP/s, " if full else "the record says: ") + \
        (f"without the copy {t['no global→shared copy']:.0f}, without ldmatrix {t['no ldmatrix']:.0f} — "
         "removing the costlier part gains more.")
    if expected == "copy":
        return (line + " Equal bytes through the data path, but the copy also spends two instructions "
                "(LDG + STS) per 16 bytes of the warps' issue slots and 64 staging registers per thread.")
    return line + " On this GPU the fragment loads cost more than the copy."
