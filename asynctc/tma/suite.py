"""Chapter 03 — the record suite ``tma_copy``: TMA vs vectorized loads vs cp.async copies by box size,
against the device-to-device copy (:class:`CopyBench`, :func:`measure_tma_copy`), and the tables
read from its record (:func:`by_box`, :func:`compare_by_box_size`, :func:`describe_copy`,
:func:`summarize_tma_copy`).
Measures and tabulates; never plots."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..core import bench, records, runtime
from ..core.memory import DeviceArray
from ..models.tensor_map import validate
from .launch import ByteCheck, MbarrierTimeout, _compare_bytes, compile_tma, decode_error
from .maps import make_tensor_map


# --------------------------------------------------------------------------------------------------
# The copy benchmark
# --------------------------------------------------------------------------------------------------

#: Box shapes (rows, fp32 columns) swept by the benchmark: 1 KB .. 32 KB per copy, with 128-byte,
#: 256-byte and 1 KB rows.
BOXES = tuple((r, 32) for r in (8, 16, 32, 64, 128, 256)) + \
        tuple((r, 64) for r in (4, 8, 16, 32, 64, 128)) + \
        tuple((r, 256) for r in (1, 2, 4, 8, 16, 32))
VARIANTS = ("tma", "ldg_sts", "cp_async")
COPY_ROWS, COPY_COLS = 16384, 8192          # 512 MiB of fp32
SMEM_BUDGET = 220 * 1024                    # per SM, leaving room for static shared memory


@dataclasses.dataclass(frozen=True)
class CopyConfig:
    """One copy variant and box: ``variant`` ("tma" | "ldg_sts" | "cp_async"), box ``br`` × ``bc``
    fp32, ``stages`` (shared-memory stages per CTA), ``ctas_per_sm``, ``threads`` per CTA."""

    variant: str
    br: int
    bc: int
    stages: int
    ctas_per_sm: int
    threads: int

    @property
    def box_bytes(self) -> int:
        return self.br * self.bc * 4

    @property
    def smem_bytes(self) -> int:
        return self.stages * self.box_bytes + 128

    @property
    def name(self) -> str:
        return f"{self.variant} {self.br}x{self.bc} ({self.box_bytes >> 10} KB) s{self.stages} " \
               f"x{self.ctas_per_sm}/SM"


def copy_config(variant: str, br: int, bc: int) -> CopyConfig:
    """Stages and CTAs per SM for a box: TMA and cp.async keep up to 64 KB in flight per CTA (2..4
    stages); the manual copy has one stage; as many CTAs per SM as shared memory allows, ≤ 16."""
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r}: must be one of {VARIANTS}")
    validate(address=1 << 20, shape=(COPY_ROWS, COPY_COLS), dtype="float32", box=(br, bc))
    if COPY_ROWS % br or COPY_COLS % bc:
        raise ValueError(f"box {br}x{bc}: must divide the {COPY_ROWS}x{COPY_COLS} matrix")
    box = br * bc * 4
    stages = 1 if variant == "ldg_sts" else max(2, min(4, 65536 // box))
    per_cta = stages * box + 128 + 1024
    ctas = max(1, min(16, SMEM_BUDGET // per_cta))
    return CopyConfig(variant, br, bc, stages, ctas, 32 if variant == "tma" else 128)


class CopyBench:
    """src, dst: ``rows`` × ``cols`` fp32 (fresh random data); :meth:`launcher` for each
    :class:`CopyConfig`; :meth:`check` compares dst with src byte for byte (dst poisoned first)."""

    def __init__(self, rows: int = COPY_ROWS, cols: int = COPY_COLS, seed=None):
        rng = np.random.default_rng(seed)
        self.rows, self.cols = rows, cols
        self.host = rng.standard_normal((rows, cols), dtype=np.float32)
        self.src = DeviceArray.from_host(self.host)
        self.dst = DeviceArray.poisoned((rows, cols), np.float32)
        self.nbytes = self.src.nbytes
        self.err = DeviceArray.from_host(np.zeros(1, np.uint32))
        self.sm_count = runtime.device_info().sm_count if runtime.device_info() else 132

    def launcher(self, cfg: CopyConfig, stream=None):
        ck = compile_tma(f"copy_{cfg.variant}", BR=cfg.br, BC=cfg.bc,
                         CSTAGES=max(2, cfg.stages))
        tiles_c = self.cols // cfg.bc
        tiles = (self.rows // cfg.br) * tiles_c
        grid = min(tiles, self.sm_count * cfg.ctas_per_sm)
        i32 = np.int32
        if cfg.variant == "tma":
            sdesc, _ = make_tensor_map(self.src, (cfg.br, cfg.bc))
            ddesc, _ = make_tensor_map(self.dst, (cfg.br, cfg.bc))
            args = (sdesc, ddesc, i32(tiles), i32(tiles_c), self.err)
        else:
            args = (self.src, self.dst, i32(tiles), i32(tiles_c), i32(self.cols))
        runtime.check_launch(grid, cfg.threads, cfg.smem_bytes, ck)

        def run():
            runtime.launch(ck, grid, cfg.threads, *args, shmem_bytes=cfg.smem_bytes, stream=stream)
        return run

    def check(self, what: str) -> ByteCheck:
        e = int(self.err.to_host()[0])
        if e:
            raise MbarrierTimeout(f"{what}: {decode_error(e)}")
        got = self.dst.to_host()
        return _compare_bytes(what, got.view(np.uint8).ravel(), self.host.view(np.uint8).ravel())


def measure_tma_copy() -> dict:
    """The device-to-device copy of the same 512 MiB, then every variant × box in :data:`BOXES`:
    a correctness run on a poisoned destination, then the timing (:func:`asynctc.core.bench.time_gpu`:
    median of 20 samples of enough back-to-back launches to last ≥ 1 ms, L2 flushed before each
    sample — 512 MiB is ten times the L2, so later launches of a sample stream from DRAM too).
    GB/s count bytes read + written (2 × 512 MiB per copy), as the ceilings suite does."""
    cb = CopyBench()
    out: dict = {"bytes": cb.nbytes, "rows": cb.rows, "cols": cb.cols, "copies": [],
                 "device_copy": None}
    t = bench.time_gpu(bench.device_copy(cb.dst, cb.src), reps=20)
    chk = cb.check("device copy")
    if not chk.passed:
        raise RuntimeError(f"device copy wrong: {chk.as_dict()}")
    out["device_copy"] = {**t.as_dict(), "gbps": bench.gbps(2 * cb.nbytes, t.median_ms)}
    for br, bc in BOXES:
        for v in VARIANTS:
            cfg = copy_config(v, br, bc)
            run = cb.launcher(cfg)
            cb.dst.poison()
            run()
            chk = cb.check(cfg.name)
            if not chk.passed:
                raise RuntimeError(f"copy wrong: {chk.as_dict()}")
            t = bench.time_gpu(run, reps=20)
            out["copies"].append({**dataclasses.asdict(cfg), "name": cfg.name,
                                  "box_bytes": cfg.box_bytes, **t.as_dict(),
                                  "gbps": bench.gbps(2 * cb.nbytes, t.median_ms)})
    out["clocks_after"] = records.nvidia_smi_clocks()
    return out


def by_box(results: dict) -> list[dict]:
    """Per box shape: GB/s of each variant and its ratio to the device copy of the same run."""
    ceil = results["device_copy"]["gbps"]
    rows: dict[tuple, dict] = {}
    for c in results["copies"]:
        k = (c["br"], c["bc"])
        r = rows.setdefault(k, {"br": c["br"], "bc": c["bc"], "box_bytes": c["box_bytes"]})
        r[c["variant"]] = c["gbps"]
        r[c["variant"] + "_ratio"] = c["gbps"] / ceil
    return sorted(rows.values(), key=lambda r: (r["bc"], r["box_bytes"]))


def bytes_in_flight(copy: dict) -> int:
    """Bytes one SM can have on their way for a copy row of the ``tma_copy`` record: stages × box
    bytes × CTAs per SM (one stage of the manual copy, a ring of ``stages`` for TMA and cp.async)."""
    return copy["stages"] * copy["box_bytes"] * copy["ctas_per_sm"]


def compare_by_box_size(results: dict) -> list[dict]:
    """Per box size (bytes), over the row widths measured: each variant's range of fraction of the
    device copy (``lo``/``hi``), the variant ahead at each row width (``leaders``), the largest gap
    between the best and the worst variant at one row width (``spread``), and each variant's range
    of bytes in flight per SM (``in_flight``)."""
    ceil = results["device_copy"]["gbps"]
    out = []
    for size in sorted({c["box_bytes"] for c in results["copies"]}):
        cs = [c for c in results["copies"] if c["box_bytes"] == size]
        widths = sorted({c["bc"] for c in cs})
        frac = {(c["variant"], c["bc"]): c["gbps"] / ceil for c in cs}
        leaders = [max(VARIANTS, key=lambda v: frac.get((v, w), -1)) for w in widths]
        spread = max(max(frac[(v, w)] for v in VARIANTS) - min(frac[(v, w)] for v in VARIANTS)
                     for w in widths)
        out.append({"box_bytes": size, "widths": widths, "leaders": leaders, "spread": spread,
                    "lo": {v: min(frac[(v, w)] for w in widths) for v in VARIANTS},
                    "hi": {v: max(frac[(v, w)] for w in widths) for v in VARIANTS},
                    "in_flight": {v: sorted({bytes_in_flight(c) for c in cs if c["variant"] == v})
                                  for v in VARIANTS}})
    return out


def describe_copy(copy: dict) -> str:
    """A copy row of the ``tma_copy`` record in words: ``"32x256 fp32 box (32 KB), 2 stages, 3 CTAs
    per SM"`` (the record's ``name`` field says the same as ``"tma 32x256 (32 KB) s2 x3/SM"``)."""
    stages = f"{copy['stages']} stage{'s' if copy['stages'] > 1 else ''}"
    return (f"{copy['br']}x{copy['bc']} fp32 box ({copy['box_bytes'] >> 10} KB), {stages}, "
            f"{copy['ctas_per_sm']} CTAs per SM")


def summarize_tma_copy(rec: records.Record, row_bytes: int | None = None) -> str:
    """The record as a table: per box (rows x fp32 columns), each variant's GB/s and, in
    parentheses, its fraction of the device-to-device copy of the same run; then the best TMA
    configuration in words (:func:`describe_copy`). ``row_bytes``: only the boxes whose rows are
    that many bytes (128, 256 or 1024; ``ValueError`` for a width the record lacks); the best-TMA
    line is over the whole record either way."""
    r = rec.results
    ceil = r["device_copy"]["gbps"]
    rows = by_box(r)
    if row_bytes is not None:
        widths = sorted({row["bc"] * 4 for row in rows})
        if row_bytes not in widths:
            raise ValueError(f"row_bytes={row_bytes!r}: the record has rows of {widths} bytes")
        rows = [row for row in rows if row["bc"] * 4 == row_bytes]
    lines = [rec.label(), f"device-to-device copy (same run): {ceil:.0f} GB/s (read + write); "
                          "each cell: GB/s (fraction of it)",
             f"{'box (fp32)':>10} {'bytes':>6} " + " ".join(f"{v:>16}" for v in VARIANTS)]
    for row in rows:
        cells = " ".join(f"{row.get(v, float('nan')):7.0f} ({row.get(v + '_ratio', float('nan')):.2f})"
                         for v in VARIANTS)
        lines.append(f"{row['br']:>4}x{row['bc']:<5} {row['box_bytes'] >> 10:>4}KB {cells}")
    best = max(r["copies"], key=lambda c: c["gbps"] if c["variant"] == "tma" else -1)
    lines.append(f"best TMA{' (any row width)' if row_bytes else ''}: {describe_copy(best)}: "
                 f"{best['gbps']:.0f} GB/s = {best['gbps'] / ceil:.2f} of the device copy")
    return "\n".join(lines)


SUITES = {"tma_copy": (measure_tma_copy, summarize_tma_copy, "sm_90a")}
