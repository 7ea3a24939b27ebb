"""Chapter 01's synchronous Tensor Core GEMM (``kernels/gemm_mma_sync.cu``): compile, run, verify.

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

from . import runtime
from .memory import DeviceArray

#: Input dtypes and their kernel code (the ``DT`` define).
DTYPES = {"float16": 0, "bfloat16": 1}


def np_dtype(name: str) -> np.dtype:
    """numpy dtype for a course dtype name ("float16", "bfloat16" via ml_dtypes, "float32")."""
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


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
    return runtime.compile_kernel("gemm_mma_sync.cu", "gemm_mma_sync", arch,
                                  defines=_defines(dtype, tile, out_f32))


def _defines(dtype: str, tile: MmaSyncTile, out_f32: bool) -> dict[str, int]:
    """The compile-time defines of ``kernels/gemm_mma_sync.cu``; validates ``dtype`` and ``tile``."""
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
    return runtime.compile_kernel("gemm_mma_sync.cu", "gemm_mma_sync", arch,
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
    :class:`~asynctc.runtime.NoGPUError` without an sm_90 GPU.
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

def random_operands(m: int, n: int, k: int, dtype: str, seed: int | None = None):
    """Fresh standard-normal A (M×K) and B (K×N) rounded to ``dtype`` (never zeros or ±1)."""
    rng = np.random.default_rng(seed)
    dt = np_dtype(dtype)
    a = rng.standard_normal((m, k), dtype=np.float32).astype(dt)
    b = rng.standard_normal((k, n), dtype=np.float32).astype(dt)
    return a, b


def square_problem(s: int, dtype: str, seed: int | None = None):
    """An s×s×s problem on the GPU: ``(a, b, da, db, dc)`` — fresh :func:`random_operands` on the
    host, their device copies, and a poisoned s×s output in the input dtype."""
    a, b = random_operands(s, s, s, dtype, seed)
    return a, b, DeviceArray.from_host(a), DeviceArray.from_host(b), DeviceArray.poisoned((s, s), a.dtype)


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float64 ``a @ b`` of the (already rounded) inputs."""
    return a.astype(np.float64) @ b.astype(np.float64)


#: Relative Frobenius error allowed per output dtype: fp32 accumulation is far below these; the
#: output's own rounding (2^-11 fp16, 2^-8 bf16, relative) sets them.
TOLERANCE = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 1e-4}


@dataclasses.dataclass
class Check:
    """Outcome of one correctness check against the float64 reference."""

    shape: tuple[int, int, int]
    dtype: str
    rel_err: float
    tol: float
    unwritten: int

    @property
    def passed(self) -> bool:
        return self.unwritten == 0 and np.isfinite(self.rel_err) and self.rel_err <= self.tol

    def as_dict(self) -> dict:
        return {"shape": list(self.shape), "dtype": self.dtype, "rel_err": self.rel_err,
                "tol": self.tol, "unwritten": self.unwritten, "passed": bool(self.passed)}


def compare(out: np.ndarray, ref: np.ndarray, dtype: str, shape) -> Check:
    """Relative Frobenius error of ``out`` against ``ref``; NaNs (poison left unwritten) counted."""
    o = out.astype(np.float64)
    unwritten = int(np.count_nonzero(~np.isfinite(o)))
    err = float(np.linalg.norm(np.nan_to_num(o, nan=0.0) - ref) / np.linalg.norm(ref)) \
        if unwritten == 0 else float("nan")
    return Check(tuple(shape), dtype, err, TOLERANCE[np.dtype(out.dtype).name
                                                      if np.dtype(out.dtype).name in TOLERANCE
                                                      else dtype], unwritten)


def check_sampled_rows(out: DeviceArray, a: np.ndarray, b: np.ndarray, dtype: str, what: str,
                       rng=None, n_rows: int = 8) -> float:
    """Check a *timed* output on ``n_rows`` random rows against float64 (a full reference of an
    8192³ product on the host would take minutes). Returns the relative error; raises
    :class:`RuntimeError` above :data:`TOLERANCE` (poison left unwritten counts as a huge error)."""
    s = a.shape[0]
    rows = (rng if rng is not None else np.random.default_rng()).choice(s, size=n_rows, replace=False)
    got = out.to_host()[rows].astype(np.float64)
    ref = a[rows].astype(np.float64) @ b.astype(np.float64)
    err = float(np.linalg.norm(np.nan_to_num(got, nan=1e30) - ref) / np.linalg.norm(ref))
    if not err <= TOLERANCE[dtype]:
        raise RuntimeError(f"timed run wrong: {what} {dtype} {s}³ rel_err {err}")
    return err


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
    """Run the kernel on fresh random inputs with a poisoned output; compare with float64."""
    a, b = random_operands(m, n, k, dtype, seed)
    out = mma_sync_gemm(a, b, tile=tile, out_f32=out_f32).to_host()
    return compare(out, reference(a, b), dtype, (m, n, k))


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

    ``flop`` per launch = warps·blocks·ITERS·CHAINS·4096; :meth:`launcher` enqueues one launch;
    :meth:`check` compares every warp's output tiles with ITERS·(A·B) in float64.
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

    def launcher(self, stream=None):
        def run():
            runtime.launch(self.ck, self.blocks, self.warps * 32, self.da, self.db, self.out,
                           stream=stream)
        return run

    def check(self) -> Check:
        self.out.poison()
        self.launcher()()
        got = self.out.to_host()
        ref = PEAK_ITERS * reference(self.a, self.b)
        c = compare(got.reshape(-1, 16, 8), np.broadcast_to(ref, got.reshape(-1, 16, 8).shape),
                    "float32", (16, 8, 16))
        # ITERS additions of one product into fp32: rounding grows with ITERS, so allow 1e-3.
        return dataclasses.replace(c, tol=1e-3)
