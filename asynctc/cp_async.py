"""Chapter 02 — cp.async: the chapter-01 GEMM made multistage, and a pipelined shared-memory copy.

``kernels/cp_async.cu`` is chapter 01's mma.sync GEMM (same tile, warp tiles, XOR swizzle,
ldmatrix, epilogue) with the register staging replaced by ``cp.async.cg.shared.global`` 16-byte
copies into a ring of ``stages`` shared-memory k-tiles, ``cp.async.commit_group`` once per k-tile and
``cp.async.wait_group<stages-2>`` before computing on one (PTX ISA, "Data Movement and Conversion
Instructions: cp.async, cp.async.commit_group, cp.async.wait_group"). In SASS: LDGSTS, LDGDEPBAR,
DEPBAR. Three verbs as everywhere in the course:

* :func:`compile_cp_async` — NVRTC → cubin for sm_90a (no GPU needed);
* :func:`cp_async_gemm` — validate in Python, then launch (needs an sm_90 GPU);
* :func:`verify_cp_async` — fresh random inputs, poisoned output, float64 reference.

``kernels/cp_async_smem_pipeline.cu`` is the synchronous-vs-pipelined shared-memory copy (our equivalent of
Luo et al., IPDPS 2024): :class:`SmemPipeline`.

Suites (``python -m asynctc record cp_async``): :data:`SUITES`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .core import bench, records, runtime
from . import mma_sync
from .core.checks import U_ACC, check_gemm, gamma
from .mma_sync import Check, compare, MmaSyncTile, random_operands
from .core.memory import DeviceArray
# sm_90's shared memory per SM (228 KiB; 227 per block), the 1 KiB the driver reserves per CTA, and
# the stage sweep's rule for two CTAs per SM: one definition, in chapter 02's Design it.
from .cp_async_design import CTA_RESERVED as CTA_RESERVED_SMEM, SM_SMEM as SMEM_PER_SM, ctas_per_sm

DTYPES = mma_sync.DTYPES


@dataclasses.dataclass(frozen=True)
class CpAsyncTile(MmaSyncTile):
    """Chapter 01's tile (``bm``×``bn``×``bk``, warp tile ``wm``×``wn``, ``min_blocks`` CTAs per SM)
    plus ``stages`` (1..4) shared-memory k-tiles in the cp.async ring.
    ``smem_bytes`` = stages × (bm·bk + bk·bn) × 2 bytes."""

    stages: int = 3

    @property
    def smem_bytes(self) -> int:
        return self.stages * (self.bm * self.bk + self.bk * self.bn) * 2

    @property
    def name(self) -> str:
        n = f"{self.bm}x{self.bn}x{self.bk}/w{self.wm}x{self.wn}/s{self.stages}"
        return n + (f"/{self.min_blocks}cta" if self.min_blocks > 1 else "")

    def validate(self) -> None:
        """Raise :class:`ValueError` naming the field when the kernel cannot be built or launched
        as asked: chapter 01's rules, ``stages`` in 1..4, ``prefetch`` 0 (the cp.async ring replaces
        it), and ``min_blocks`` × ``smem_bytes`` within the 228 KiB of shared memory per SM."""
        if isinstance(self.stages, bool) or self.stages not in (1, 2, 3, 4):
            raise ValueError(f"stages={self.stages!r}: must be 1, 2, 3 or 4")
        if getattr(self, "prefetch", 0):
            raise ValueError(f"prefetch={self.prefetch}: the cp.async GEMM has no prefetch hint "
                             "(its ring of stages is the prefetch); use 0")
        super().validate()
        if self.min_blocks * (self.smem_bytes + 1024) > SMEM_PER_SM:
            raise ValueError(f"tile {self.name}: {self.min_blocks} CTAs × {self.smem_bytes} B of "
                             f"shared memory do not fit in the {SMEM_PER_SM} B of one SM; lower "
                             "stages or min_blocks")


#: Default: chapter 01's tile with a 3-stage ring, two CTAs per SM (2 × 96 KiB).
DEFAULT_TILE = CpAsyncTile(128, 128, 64, 64, 64, min_blocks=2, stages=3)


def stage_sweep_tiles() -> tuple[CpAsyncTile, ...]:
    """The tiles the benchmark sweeps: stages 1..4 at BK=64 and at BK=32, two CTAs per SM where
    the shared memory allows, else one."""
    out = []
    for bk in (64, 32):
        for s in (1, 2, 3, 4):
            out.append(CpAsyncTile(128, 128, bk, 64, 64, min_blocks=ctas_per_sm(bk, s), stages=s))
    return tuple(out)


TILES = stage_sweep_tiles()


def compile_cp_async(dtype: str = "float16", tile: CpAsyncTile = DEFAULT_TILE,
                     out_f32: bool = False, arch: str = "sm_90a") -> runtime.CompiledKernel:
    """Compile the cp.async GEMM for ``dtype`` ("float16" | "bfloat16") and ``tile``. No GPU needed.
    Raises :class:`ValueError` for an unknown dtype or an invalid tile."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype={dtype!r}: must be one of {sorted(DTYPES)}")
    if not isinstance(tile, CpAsyncTile):
        raise ValueError(f"tile={tile!r}: must be a CpAsyncTile (it carries `stages`)")
    tile.validate()
    return runtime.compile_kernel(
        "cp_async.cu", "gemm_cp_async", arch,
        defines=dict(BM=tile.bm, BN=tile.bn, BK=tile.bk, WM=tile.wm, WN=tile.wn, DT=DTYPES[dtype],
                     OUT_F32=int(out_f32), GROUP_M=tile.group_m, MINB=tile.min_blocks,
                     STAGES=tile.stages))


def cp_async_gemm(a, b, *, tile: CpAsyncTile = DEFAULT_TILE, out: DeviceArray | None = None,
                  out_f32: bool = False, stream=None) -> DeviceArray:
    """``out = a @ b`` with the cp.async GEMM; returns ``out`` (a :class:`DeviceArray`).

    ``a`` (M×K), ``b`` (K×N): fp16 or bf16, numpy or :class:`DeviceArray`, C-contiguous, 16-byte
    aligned (cp.async 16-byte copies); M, N, K multiples of the tile. ``out``: M×N in the input
    dtype (fp32 when ``out_f32``), allocated poisoned when None. Raises :class:`ValueError` before
    anything reaches the GPU; :class:`~asynctc.core.runtime.NoGPUError` without an sm_90 GPU.
    """
    return mma_sync.run_gemm(a, b, tile, lambda dt: compile_cp_async(dt, tile, out_f32), launcher,
                         out, out_f32, stream)


def launcher(ck: runtime.CompiledKernel, tile: CpAsyncTile, a: DeviceArray, b: DeviceArray,
             out: DeviceArray, stream=None):
    """A zero-argument callable that enqueues one launch (for timing loops); inputs pre-validated."""
    return mma_sync.launcher(ck, tile, a, b, out, stream)


def verify_cp_async(m: int, n: int, k: int, dtype: str = "float16",
                    tile: CpAsyncTile = DEFAULT_TILE, seed: int | None = None,
                    out_f32: bool = False) -> Check:
    """Run the kernel on fresh random inputs (standard normal, rounded to ``dtype``) with a
    poisoned output; compare every element with the float64 product under the elementwise bound
    relative to |A|·|B| (:func:`asynctc.core.checks.check_gemm`). Returns a
    :class:`~asynctc.core.checks.Check`."""
    a, b = random_operands(m, n, k, dtype, seed)
    got = cp_async_gemm(a, b, tile=tile, out_f32=out_f32).to_host()
    return check_gemm(got, a, b, dtype)


# --------------------------------------------------------------------------------------------------
# Synchronous vs pipelined shared-memory copy (Luo et al. equivalent)
# --------------------------------------------------------------------------------------------------

#: Block sides compared by Luo et al.: 8×8, 16×16, 32×32 threads (one fp32 element each per tile).
SMEM_BLOCKS = (8, 16, 32)
SMEM_ITERS = 64
#: Luo et al. (IPDPS 2024), H800: pipelined vs synchronous, +39.5% / +9.7% / −1.8%.
LUO_GAIN = {8: 0.395, 16: 0.097, 32: -0.018}


class SmemPipeline:
    """The synchronous and the pipelined (cp.async, 2 stages) shared-memory copy for a ``b``×``b``
    block, ``blocks`` CTAs of ``ITERS`` tiles each.

    :meth:`check` runs both on fresh random data with a poisoned output and compares with the
    float64 reference; :meth:`launcher` returns a callable for timing; ``bytes_read`` per launch.
    """

    def __init__(self, b: int, blocks: int = 132 * 16, iters: int = SMEM_ITERS, seed=None):
        if b not in SMEM_BLOCKS:
            raise ValueError(f"b={b}: must be one of {SMEM_BLOCKS}")
        if not 1 <= blocks < 2**31:
            raise ValueError(f"blocks={blocks}: must be ≥ 1")
        if not 1 <= iters <= 4096:
            raise ValueError(f"iters={iters}: must be 1..4096")
        self.b, self.blocks, self.iters = b, blocks, iters
        defines = dict(B=b, ITERS=iters)
        self.ck = {k: runtime.compile_kernel("cp_async_smem_pipeline.cu", f"smem_copy_{k}", defines=defines)
                   for k in ("sync", "async")}
        rng = np.random.default_rng(seed)
        self.src_host = rng.standard_normal(blocks * iters * b * b, dtype=np.float32)
        self.bytes_read = self.src_host.nbytes
        self.src = DeviceArray.from_host(self.src_host)
        self.dst = DeviceArray.poisoned(blocks * b * b, np.float32)

    def reference(self, absolute: bool = False) -> np.ndarray:
        """float64 per-thread sums: thread (ty, tx) adds element (ty, (tx+1) % b) of each tile
        (of their absolute values when ``absolute``: the scale of the elementwise bound)."""
        t = self.src_host.reshape(self.blocks, self.iters, self.b, self.b).astype(np.float64)
        if absolute:
            t = np.abs(t)
        return np.roll(t, -1, axis=3).sum(axis=1).reshape(-1)

    def launcher(self, kind: str, stream=None):
        ck = self.ck[kind]

        def run():
            runtime.launch(ck, self.blocks, self.b * self.b, self.src, self.dst, stream=stream)
        return run

    def check(self, kind: str) -> Check:
        """The timed binary once on a poisoned output; every thread's sum against float64 within
        γ_{iters+1}(2^-23) × Σ|terms| elementwise (a sum of ``iters`` fp32 values)."""
        self.dst.poison()
        self.launcher(kind)()
        got = self.dst.to_host()
        return compare(got, self.reference(), "float32", (self.blocks, self.b, self.b),
                       scale=self.reference(absolute=True), tol=gamma(self.iters + 1, U_ACC))

    @staticmethod
    def blocks_for(b: int, l2_bytes: int, iters: int = SMEM_ITERS, sm_count: int = 132) -> int:
        """CTAs so that one launch reads at least twice the L2 (so back-to-back launches in a
        sample stream from DRAM, as a flushed single launch does), and at least 16 per SM."""
        per_cta = iters * b * b * 4
        return max(sm_count * 16, -(-2 * l2_bytes // per_cta))


# --------------------------------------------------------------------------------------------------
# The benchmark suite
# --------------------------------------------------------------------------------------------------

SIZES = (1024, 2048, 4096, 8192)
#: bf16 is swept at these sizes only.
BF16_SIZES = (4096,)
CHECK_SHAPES = ((128, 256, 64), (256, 512, 192), (384, 768, 320), (1024, 512, 2048),
                (512, 1280, 448))


def measure_cp_async() -> dict:
    """Correctness first: every swept tile with fp32 output at :data:`CHECK_SHAPES` (fp16 and
    bf16), and every timed binary — the cp.async tiles and chapter 01's kernel — on the full
    :data:`asynctc.mma_sync.TIMED_CHECK_SHAPE`. Then, on the same inputs per size (:data:`SIZES`,
    fp16; bf16 at 4096), cuBLAS, chapter 01's kernel (:data:`asynctc.mma_sync.DEFAULT_TILE`, timed
    here the same way, so "× ch.01" compares two numbers of this run) and the cp.async GEMM for
    every tile in :data:`TILES` (stages 1..4), each timed output checked and the SM clock measured
    by :func:`~asynctc.core.bench.time_gpu` (``sm_mhz_source`` says how);
    then the synchronous vs pipelined shared-memory copy (:class:`SmemPipeline`, sized so one
    launch reads ≥ 2× L2, many launches per sample)."""
    import functools
    ch01 = mma_sync.DEFAULT_TILE
    out: dict = {"sweep": [], "smem": [],
                 "tiles": [dict(name=t.name, bm=t.bm, bn=t.bn, bk=t.bk, stages=t.stages,
                                min_blocks=t.min_blocks, smem_bytes=t.smem_bytes) for t in TILES],
                 "baseline_library": bench.baseline_library(),
                 "ch01_tile": ch01.name}
    runtime.precompile(
        [("cp_async.cu", "gemm_cp_async", dict(BM=t.bm, BN=t.bn, BK=t.bk, WM=t.wm, WN=t.wn,
                                                DT=DTYPES[dt], OUT_F32=f32, GROUP_M=t.group_m,
                                                MINB=t.min_blocks, STAGES=t.stages))
         for dt in DTYPES for t in TILES for f32 in (0, 1)]
        + [("mma_sync.cu", "gemm_mma_sync", mma_sync._defines(dt, ch01, False)) for dt in DTYPES])
    out["checks"] = [{**c, "output": "float32"} for c in mma_sync.check_tiles(
        functools.partial(verify_cp_async, out_f32=True), TILES, CHECK_SHAPES, DTYPES,
        what="cp.async GEMM (fp32 output)")]
    out["checks"] += mma_sync.check_timed_binaries(verify_cp_async, TILES,
                                                   what="cp.async GEMM (timed binary)")
    out["checks"] += [{**c, "kernel": "mma.sync"} for c in mma_sync.check_timed_binaries(
        mma_sync.verify_mma_sync, (ch01,), what="chapter 01 GEMM (timed binary)")]
    runs = [("float16", s) for s in SIZES] + [("bfloat16", s) for s in BF16_SIZES]
    for dtype, s in runs:
        a, b, da, db, dc = mma_sync.square_problem(s, dtype)
        ref = mma_sync.timed_output_reference(a, b, dtype, np.random.default_rng(s))
        flop = bench.gemm_flop(s, s, s)
        if out["baseline_library"]:
            out["sweep"].append(bench.cublas_sweep_row(da, db, dc, dtype, s))
        ck = mma_sync.compile_mma_sync(dtype, ch01)
        dc.poison()
        t = bench.time_gpu(mma_sync.launcher(ck, ch01, da, db, dc), reps=20, clock=True)
        chk = mma_sync.check_sampled_rows(dc, a, b, dtype, "mma.sync", sampled=ref)
        out["sweep"].append({"dtype": dtype, "size": s, "kernel": "mma.sync", "tile": ch01.name,
                             **t.as_dict(), "check_timed": {**chk.as_dict(), "rows": len(ref.rows)},
                             "tflops": bench.tflops(flop, t.median_ms)})
        for tile in TILES:
            ck = compile_cp_async(dtype, tile)
            dc.poison()
            t = bench.time_gpu(launcher(ck, tile, da, db, dc), reps=20, clock=True)
            chk = mma_sync.check_sampled_rows(dc, a, b, dtype, f"cp.async {tile.name}", sampled=ref)
            out["sweep"].append({"dtype": dtype, "size": s, "kernel": "cp.async", "tile": tile.name,
                                 "stages": tile.stages, "bk": tile.bk, **t.as_dict(),
                                 "check_timed": {**chk.as_dict(), "rows": len(ref.rows)},
                                 "registers": ck.resources.registers,
                                 "spill_bytes": ck.resources.spill_stores,
                                 "tflops": bench.tflops(flop, t.median_ms)})
        del da, db, dc
    info = runtime.device_info()
    for bside in SMEM_BLOCKS:
        sp = SmemPipeline(bside, blocks=SmemPipeline.blocks_for(bside, info.l2_bytes,
                                                                sm_count=info.sm_count))
        row = {"b": bside, "threads": bside * bside, "blocks": sp.blocks, "iters": sp.iters,
               "src_bytes": sp.bytes_read, "l2_bytes": info.l2_bytes}
        for kind in ("sync", "async"):
            c = sp.check(kind)
            if not c.passed:
                raise RuntimeError(f"smem copy {kind} b={bside} wrong: {c.as_dict()}")
            t = bench.time_gpu(sp.launcher(kind), reps=20)
            row[kind] = {**t.as_dict(), "gbps": bench.gbps(sp.bytes_read, t.median_ms),
                         "check": c.as_dict()}
        row["gain"] = row["sync"]["median_ms"] / row["async"]["median_ms"] - 1.0
        out["smem"].append(row)
        del sp
    return out


def best_rows(results: dict, dtype: str, kernel: str) -> dict[int, dict]:
    """Fastest row per size for ``kernel`` ("cuBLAS", "mma.sync", "cp.async") and ``dtype``."""
    best: dict[int, dict] = {}
    for r in results["sweep"]:
        if r["kernel"] == kernel and r["dtype"] == dtype:
            if r["size"] not in best or r["tflops"] > best[r["size"]]["tflops"]:
                best[r["size"]] = r
    return best


def size_series(results: dict, dtype: str = "float16") -> dict[str, tuple[list[int], list[float]]]:
    """Chapter 02 §4's figure data: for cuBLAS, chapter 01's kernel and the best cp.async rung, the
    sizes and the fastest TFLOP/s at each ({label: (sizes, tflops)}, for
    :func:`asynctc.core.plots.throughput_by_size`); a kernel the record lacks is left out."""
    labels = {"cuBLAS": "cuBLAS", "mma.sync": "chapter 01 (mma.sync, registers)",
              "cp.async": "cp.async, best stages"}
    series = {}
    for kern, label in labels.items():
        best = best_rows(results, dtype, kern)
        if best:
            series[label] = (sorted(best), [best[s]["tflops"] for s in sorted(best)])
    return series


def stage_table(results: dict, dtype: str = "float16", size: int = 4096) -> list[dict]:
    """cp.async rows at one size: stages, bk, TFLOP/s, ratio to the chapter-01 kernel and cuBLAS."""
    base = best_rows(results, dtype, "mma.sync").get(size)
    cb = best_rows(results, dtype, "cuBLAS").get(size)
    rows = []
    for r in results["sweep"]:
        if r["kernel"] == "cp.async" and r["dtype"] == dtype and r["size"] == size:
            rows.append({"tile": r["tile"], "stages": r["stages"], "bk": r["bk"],
                         "tflops": r["tflops"],
                         "vs_mma_sync": r["tflops"] / base["tflops"] if base else None,
                         "vs_cublas": r["tflops"] / cb["tflops"] if cb else None})
    return rows


def tile_traffic(bm: int, bn: int, tflops: float | None = None, copy_gbps: float | None = None) -> str:
    """Chapter 02's tile lever, a model: per k-tile a ``bm`` × ``bn`` CTA tile copies (bm + bn) · BK
    fp16 elements (2 bytes each) for 2 · bm · bn · BK FLOP, whatever BK; so to run at ``tflops``
    all CTAs together copy global → shared at ``tflops`` / (FLOP per byte). ``tflops`` defaults to
    the best cp.async rung at 4096³ fp16 in the "cp_async" record, ``copy_gbps`` to chapter 00's
    best device copy (GB/s, read + write: what DRAM moved) in the "ceilings" record. Reads records,
    never times. Raises :class:`ValueError` for a tile side below 1."""
    if min(bm, bn) < 1:
        raise ValueError(f"tile {bm}×{bn}: both sides must be ≥ 1")
    if tflops is None:
        tflops = best_rows(records.load("cp_async").results, "float16", "cp.async")[4096]["tflops"]
    if copy_gbps is None:
        copy_gbps = max(r["gbps_rw"] for r in records.load("ceilings").results["copy"])
    per_byte = bm * bn / (bm + bn)                    # 2·bm·bn·BK FLOP / ((bm + bn)·BK·2 B)
    need = tflops / per_byte                          # TFLOP/s / (FLOP/B) = TB/s
    dram = copy_gbps / 1e3
    return (f"CTA tile {bm}×{bn}: {per_byte:.0f} FLOP per byte copied into shared memory\n"
            f"to run at {tflops:.0f} TFLOP/s (the best cp.async rung) the CTAs copy {need:.1f} TB/s global → shared\n"
            f"DRAM moved {dram:.1f} TB/s in chapter 00's best copy: "
            + ("L2 must serve the rest" if need > dram else "DRAM alone could feed it"))


# Shared-memory bytes the SM serves per clock (32 banks × 4 bytes): chapter 00's figure.
from .why_async import SMEM_BYTES_PER_CLK_SM  # noqa: E402


def ceiling_rows(results: dict, peak_rows: list[dict], dtype: str = "float16", size: int = 4096):
    """``(tile, best, ceiling)``: the best cp.async rung at ``size``³ (its :class:`CpAsyncTile` and
    record row) and chapter 01's register-only mma.sync ceiling row at the same occupancy
    (``peak_rows``: the mma_sync record's ``results["peak"]``; same warps per CTA and CTAs per SM).
    Each row carries ``tflops`` and its own measured ``sm_mhz``; chapter 02 turns them into clocks
    per k-tile in view, with :data:`SMEM_BYTES_PER_CLK_SM`. Raises :class:`KeyError` when the
    rung's row is missing, :class:`StopIteration` when no ceiling row matches its occupancy."""
    best = best_rows(results, dtype, "cp.async")[size]
    tile = next(t for t in TILES if t.name == best["tile"])
    ceil = next(r for r in peak_rows if r["dtype"] == dtype and r["warps_per_cta"] == tile.warps
                and r["ctas_per_sm"] == tile.min_blocks)
    return tile, best, ceil


def _mma_sync_record_row(dtype: str, size: int, tile: str):
    """The chapter-01 record's row for ``tile`` at ``size``³ (and that record), or (None, None)."""
    try:
        rec = records.load("mma_sync")
    except Exception:  # noqa: BLE001 - no record here: the summary says so
        return None, None
    for r in rec.results.get("sweep", []):
        if (r.get("kernel"), r.get("dtype"), r.get("size"), r.get("tile")) == \
                ("mma.sync", dtype, size, tile):
            return r, rec
    return None, rec


def summarize_cp_async(rec: records.Record, microbench: bool = True, cross_check: bool = True) -> str:
    """Ratio table. Every "× ch.01" divides by chapter 01's kernel timed *in this run* on the same
    inputs (this record); the last lines set that number beside the mma_sync record's for the same
    tile and say which record each comes from (``cross_check=False`` leaves them out: the lesson's
    short form). ``microbench=False`` leaves out the shared-memory copy microbenchmark's lines (set
    beside Luo et al.'s in deep dive 02b) and says where they are."""
    r = rec.results
    n = rec.provenance["sm_count"]
    shown = []                                   # rows whose clock is printed, for the caveat
    lines = [rec.label(), f"correctness: {sum(c['passed'] for c in r['checks'])}/"
                          f"{len(r['checks'])} checks passed",
             "ch.01 = chapter 01's kernel timed in this run (this cp_async record), same inputs"]
    if any(row.get("sm_mhz") for dtype in DTYPES for row in best_rows(r, dtype, "cp.async").values()):
        lines.append(bench.peak_legend(n, "float16"))   # fp16 and bf16: the same 4096 FLOP/clk/SM
    for dtype in DTYPES:
        ms = best_rows(r, dtype, "mma.sync")
        cb = best_rows(r, dtype, "cuBLAS")
        for s, row in sorted(best_rows(r, dtype, "cp.async").items()):
            b0 = ms.get(s)
            c0 = cb.get(s)
            lines.append(f"cp.async {dtype:8s} {s:5d}³ best {row['tile']:24s} {row['tflops']:6.1f} "
                         f"TFLOP/s ±{bench.row_spread(row):.0%}: "
                         f"{row['tflops'] / b0['tflops']:.2f}× ch.01 ({b0['tflops']:.0f})"
                         + (f", {row['tflops'] / c0['tflops']:.2f} of cuBLAS ({c0['tflops']:.0f})"
                            if c0 else "")
                         + ("; " + bench.peak_short(row, n, dtype) if row.get("sm_mhz") else ""))
            shown += [row] if row.get("sm_mhz") else []
    for row in stage_table(r):
        lines.append(f"  4096³ fp16 {row['tile']:24s} {row['tflops']:6.1f} TFLOP/s "
                     f"({row['vs_mma_sync']:.2f}× ch.01)")
    if not microbench and r["smem"]:
        lines.append("(the shared-memory copy microbenchmark beside Luo et al.'s: deep dive 02b §1)")
    for row in (r["smem"] if microbench else []):
        lines.append(f"smem copy {row['b']:2d}×{row['b']:<2d}: pipelined vs synchronous "
                     f"{row['gain']:+.1%} (Luo et al. H800: {LUO_GAIN[row['b']]:+.1%})")
    tile = r.get("ch01_tile", mma_sync.DEFAULT_TILE.name)
    for (dtype, s), here in sorted(((k, v) for k, v in
                                    {(x["dtype"], x["size"]): x for x in r["sweep"]
                                     if x["kernel"] == "mma.sync" and cross_check}.items()),
                                   key=lambda kv: kv[0]):
        other, orec = _mma_sync_record_row(dtype, s, tile)
        where = (f"mma_sync record ({orec.provenance.get('date', '?')[:10]}, "
                 f"{orec.provenance.get('git_commit', '?')[:7]})") if orec else "no mma_sync record"
        if other:
            d = other["tflops"] / here["tflops"] - 1
            clk = (f"; SM clock {bench.clock_text(here)} vs {bench.clock_text(other)}"
                   if here.get("sm_mhz") and other.get("sm_mhz") else "")
            shown += [here, other] if clk else []
            lines.append(f"ch.01 {tile} {dtype} {s}³: {here['tflops']:.0f} TFLOP/s in this record "
                         f"(p10-p90 {here['p10_ms']:.3f}-{here['p90_ms']:.3f} ms), "
                         f"{other['tflops']:.0f} in the {where} ({d:+.0%}){clk}")
        else:
            lines.append(f"ch.01 {tile} {dtype} {s}³: {here['tflops']:.0f} TFLOP/s in this record; "
                         f"{where} has no row for this tile and size")
    if shown and bench.clock_caveat(bench.rows_clock_kind(shown)):
        lines.append(bench.clock_caveat(bench.rows_clock_kind(shown)))
    return "\n".join(lines)


SUITES = {"cp_async": (measure_cp_async, summarize_cp_async, "sm_90a")}


# --------------------------------------------------------------------------------------------------
# Exercises (auto-checked in notebooks/02_cp_async)
# --------------------------------------------------------------------------------------------------

from .core import exercises as _ex  # noqa: E402


@_ex.exercise("ch02.ring_smem", "The largest number of stages whose cp.async ring of bm×bn×bk fp16 "
              "k-tiles (one A tile bm×bk and one B tile bk×bn per stage) still fits `ctas` CTAs on one "
              "SM: 228 KiB = 233472 B of shared memory per SM, 1 KiB reserved per CTA.")
def _ch02_ring_smem(bm: int, bn: int, bk: int, ctas: int) -> int:
    one = CpAsyncTile(bm, bn, bk, 64, 64, stages=1).smem_bytes
    return (SMEM_PER_SM // ctas - CTA_RESERVED_SMEM) // one


@_ex.diagnosis("ch02.ring_smem")
def _ch02_ring_smem_hint(answer, expected, bm: int, bn: int, bk: int, ctas: int) -> str | None:
    one = (bm * bk + bk * bn) * 2
    if isinstance(answer, bool) or not isinstance(answer, int) or answer < 1:
        return "give a whole number of stages, at least 1."
    share = SMEM_PER_SM // ctas                        # the SM's bytes split between its CTAs, before the reserve
    other = 2 if ctas == 1 else 1
    cut, t = _ex.tiered, f"{ctas} CTA{'s' if ctas > 1 else ''}"
    uses = f"{answer} stages × {one} B = {answer * one} B"
    hint = _ex.known_mistake(answer, expected, [
        (share // one,
         cut(f"{uses}, the SM's whole {SMEM_PER_SM} B of shared memory." if ctas == 1 else
             f"{uses}, a {ctas}-way split of the SM's {SMEM_PER_SM} B of shared memory ({share} B each).",
             " What else does each CTA take from that memory (the exercise's first lines)?",
             f" It fits only if nothing is reserved: first take off the {CTA_RESERVED_SMEM} B the driver "
             "reserves per CTA, then divide.")),
        ((SMEM_PER_SM // other - CTA_RESERVED_SMEM) // one,
         cut(f"{answer} stages is how many fit when {other} CTA{'s' if other > 1 else ''} share the SM.",
             " How many CTAs share it in this question?",
             f" Here {'one CTA has it to itself' if ctas == 1 else f'{ctas} CTAs share it'}.")),
        ((share - CTA_RESERVED_SMEM) // (one // 2),
         cut(f"{uses}, far more than the SM's {SMEM_PER_SM} B.",
             " How many bytes is one fp16 element of the k-tiles?",
             " You counted elements, not bytes: fp16 is 2 bytes per element.")),
        (share // (one // 2),
         cut(f"{uses}, far more than the SM's {SMEM_PER_SM} B.",
             " How many bytes is one fp16 element, and what does the driver reserve per CTA?",
             " You counted elements, not bytes: fp16 is 2 bytes per element.")),
    ])
    if hint:
        return hint
    need = ctas * (answer * one + CTA_RESERVED_SMEM)
    sum_ = (f" {t} × ({answer} stages × {one} B, plus the {CTA_RESERVED_SMEM} B reserved per CTA) = "
            f"{need} B")
    if answer > expected:
        return cut(f"{answer} stages of {one} B do not fit.",
                   f" Count the bytes of {t} with the reserve (the exercise's first lines): do they "
                   f"fit in {SMEM_PER_SM} B?",
                   f"{sum_}, more than the SM's {SMEM_PER_SM} B.")
    return cut(f"too few: {answer} stages of {one} B leave shared memory unused.",
               f" Count the bytes of {t} with the reserve (the exercise's first lines): how much of "
               f"{SMEM_PER_SM} B is left?",
               f"{sum_} leaves {SMEM_PER_SM - need} B of the SM's {SMEM_PER_SM} B unused. How many more "
               "stages fit in that?")


@_ex.exercise("ch02.wait_n", "The N of cp.async.wait_group N that the kernel uses before computing on "
              "a k-tile, for a ring of `stages` stages (stages ≥ 2).")
def _ch02_wait_n(stages: int) -> int:
    return stages - 2


@_ex.diagnosis("ch02.wait_n")
def _ch02_wait_n_hint(answer, expected, stages: int) -> str | None:
    if not isinstance(answer, int) or answer < 0:
        return "N is a count of groups: a whole number ≥ 0."
    if answer == stages - 1:
        return (f"with {stages - 1} groups allowed to stay pending, the group of k-tile kt itself may "
                "still be in flight: before the wait, this thread committed the prologue's "
                f"{stages - 1} groups plus one per earlier iteration — count which are newer than kt's.")
    if answer >= stages:
        return (f"the thread never has more than {stages - 1} groups in flight at that wait, so "
                f"wait_group {answer} waits for nothing.")
    if answer > expected:
        return "too many groups left pending: k-tile kt's group could still be among them."
    return ("safe, but too strict: the wait also waits for copies of later k-tiles that could "
            "stay in flight while kt is computed on — what is the largest N that still guarantees "
            "k-tile kt has landed?")


def _stage_tf(results: dict) -> tuple[dict[tuple[int, int], float], list[int], dict[int, float]]:
    """Chapter 02 §4's table at 4096³ fp16, as ch02.stages reads it: TFLOP/s by (BK, stages) of the
    cp.async rows; BK = 64's stage counts, in order; each BK's best TFLOP/s (64 and 32). Raises
    :class:`ValueError` (check: "cannot be checked") naming the record's rows when it lacks some."""
    tf = {(r["bk"], r["stages"]): r["tflops"] for r in stage_table(results, "float16", 4096)}
    has = {bk: sorted(s for b, s in tf if b == bk) for bk in (64, 32)}
    if not ({1, 2} <= set(has[64]) and has[64][-1] > 2 and 1 in has[32]):
        raise ValueError(f"the cp_async record's 4096³ float16 cp.async rows have stages {has[64]} at BK = 64 "
                         f"and {has[32]} at BK = 32; ch02.stages needs BK = 64 at 1, 2 and more than 2 stages, "
                         "BK = 32 at 1: record a full sweep (python -m asynctc record cp_async)")
    best = {bk: max(v for (b, _), v in tf.items() if b == bk) for bk in (64, 32)}
    return tf, has[64], best


fastest, NOISE = bench.fastest, bench.NOISE   # within noise of the best (core: the worklog reads it too)


@_ex.exercise("ch02.stages", "02 §4's prediction, checked against the record's stage sweep (fp16, 4096³): "
              "past two stages, does another stage help BK = 64, its best row of three or four stages more "
              "than 1 % faster than two ('yes' or 'no')? And which BK gains more from a ring, its best row "
              "over its one-stage row (64 or 32)? Answer `(another_stage_helps, bk)`; the check reads the "
              "record's `results`.")
def _ch02_stages(results: dict) -> tuple[str, int]:
    tf, s64, best = _stage_tf(results)
    helps = max(tf[64, s] for s in s64 if s > 2) > (1 + NOISE) * tf[64, 2]
    gain = {bk: best[bk] / tf[bk, 1] for bk in (64, 32)}
    return ("yes" if helps else "no", max(gain, key=gain.get))


@_ex.diagnosis("ch02.stages")
def _ch02_stages_hint(answer, expected, results: dict) -> str | None:
    if len(answer) != 2 or answer[0] not in ("yes", "no") or answer[1] not in (64, 32):
        return "answer two values in parentheses: 'yes' or 'no', then 64 or 32."
    (tf, s64, best), cut, parts = _stage_tf(results), _ex.tiered, []
    rows = ", ".join(f"{tf[64, s]:.0f}" + (" TFLOP/s with 1 stage" if s == 1 else f" with {s}") for s in s64)
    two = tf[64, 2]

    def past(s):                                     # stage count s > 2 against two stages, in words
        d = tf[64, s] / two - 1
        return f"{s} stages run {tf[64, s]:.0f}, " + (f"within 1 % of two's {two:.0f}: noise, not a loss" if abs(d) <= NOISE
                                                      else f"{abs(d):.0%} {'faster' if d > 0 else 'slower'} than two's {two:.0f}")
    vs2 = "; ".join(past(s) for s in s64 if s > 2)
    if answer[0] != expected[0]:                     # a prediction: name the assumption it rests on
        parts.append(cut(
            f"'{answer[0]}' says a third or fourth stage {'helps' if answer[0] == 'yes' else 'does not help'} BK = 64.",
            " Which rows settle it? Read the BK = 64 rows with three and four stages in §4's table below (it"
            " opens once you have answered): is either more than 1 % faster than two?",
            f" '{answer[0]}' assumes two stages " + ("leave some of BK = 64's load latency to hide, and that a"
                                                     " stage's shared memory costs nothing." if answer[0] == "yes"
                                                     else "already hide all of BK = 64's load latency.")
            + f" BK = 64 runs {rows}. Past two, {vs2}" + (". Note 3 says why a stage can lose."
                                                          if expected[0] == "no" else ".")))
    if answer[1] != expected[1]:
        other = 96 - answer[1]                         # the BK not chosen (64 ↔ 32)
        why = ("is the faster one with one stage" if tf[answer[1], 1] > tf[other, 1] else  # (faster best: same)
               "starts slower with one stage, but a slow start is not yet a large gain")
        also = "As for BK: " if parts else ""         # a double miss is its own spot (its own tiers): the
        parts.append(cut(                             # BK part missed alone is first asked (reader 121)
            f"{also}the question asks which BK gains more over its own one-stage row, not which is faster.",
            " Which two rows of each BK would you divide (the table's last line does), and which quotient is larger?",
            f" BK = {answer[1]} {why}. With one stage, BK = 32 waits twice as often in K = 4096 (§4's Try it). "
            + "; ".join(f"BK = {bk}: {best[bk]:.0f} / {tf[bk, 1]:.0f} = {best[bk] / tf[bk, 1]:.2f}×" for bk in (64, 32)) + "."))
    return " ".join(parts) or None


from .cp_async_design import design, design_survey  # noqa: E402,F401  (chapter 02's "Design it", in 02b §3)
