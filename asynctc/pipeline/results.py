"""Reading a ``pipeline`` record's results (no GPU, no timing, no plotting): the fastest row
(:func:`best_row`), cuBLAS's row (:func:`cublas_row`), a row's configuration label
(:func:`row_label`), the kernel's average cycles per k-tile (:func:`average_ktile_cycles`), and the
few numbers chapter 05 reads (:func:`depth_sweep`, :func:`of_cublas`, :func:`best_by_width`,
:func:`best_tflops_by_width`, :func:`trace_of`) — shared
by the suite's tables, the figures and the notebooks (05 §5, 05b §4)."""

from __future__ import annotations

import dataclasses

from .config import PipelineConfig


def best_row(results: dict, dtype: str, size: int, tile: str | None = None,
             variants: bool = False) -> dict | None:
    """The fastest pipelined row of the depth sweep (with ``variants``: of every untraced row,
    wait_pending 0 and L2 promotion included) for ``dtype``, ``size`` (and ``tile``)."""
    pool = results["sweep"] + ([v for v in results.get("variants", []) if not v.get("trace")]
                               if variants else [])
    rows = [r for r in pool if r["kernel"] == "pipeline" and r["dtype"] == dtype
            and r["size"] == size and (tile is None or r["tile"] == tile)]
    return max(rows, key=lambda r: r["tflops"]) if rows else None


def row_label(r: dict) -> str:
    """A result row's configuration, as :meth:`PipelineConfig.label`."""
    keys = {f.name for f in dataclasses.fields(PipelineConfig)}
    return PipelineConfig(**{k: v for k, v in r.items() if k in keys}).label()



def cublas_row(results: dict, dtype: str, size: int) -> dict | None:
    return next((r for r in results["sweep"] if r["kernel"] == "cuBLAS" and r["dtype"] == dtype
                 and r["size"] == size), None)


def _sweep_rows(results: dict, tile: str, dtype: str, size: int) -> list[dict]:
    """The depth sweep's untraced ``tile`` rows for ``dtype`` at ``size``³."""
    return [r for r in results["sweep"] if r["kernel"] == "pipeline" and not r["trace"]
            and (r["tile"], r["dtype"], r["size"]) == (tile, dtype, size)]


def depth_sweep(results: dict, tile: str = "128x256x64/c2", dtype: str = "float16",
                size: int = 4096) -> dict:
    """{stages: TFLOP/s} of the depth sweep's untraced ``tile`` rows for ``dtype`` at ``size``³."""
    return {r["stages"]: r["tflops"] for r in _sweep_rows(results, tile, dtype, size)}


def resident_by_depth(results: dict, tile: str = "128x256x64/c2", dtype: str = "float16",
                      size: int = 4096) -> dict:
    """{stages: CTAs resident per SM} in the rows :func:`depth_sweep` reads (the ring's shared
    memory decides how many CTAs fit on one SM)."""
    return {r["stages"]: r["resident_ctas"] for r in _sweep_rows(results, tile, dtype, size)}


def of_cublas(results: dict, size: int, dtypes=("float16", "bfloat16")) -> dict:
    """{dtype: the fastest variant's TFLOP/s ÷ cuBLAS's} at ``size``³ (chapter 05 §4's goal)."""
    return {dt: best_row(results, dt, size, variants=True)["tflops"] / cublas_row(results, dt, size)["tflops"]
            for dt in dtypes}


def best_tflops_by_width(results: dict, dtype: str = "float16", size: int = 4096,
                         widths=(128, 256)) -> dict:
    """{BN: the depth sweep's best 128×BN row's TFLOP/s} for ``dtype`` at ``size``³."""
    rows = [r for r in results["sweep"] if r["kernel"] == "pipeline" and (r["dtype"], r["size"]) == (dtype, size)]
    return {bn: max(r["tflops"] for r in rows if r["tile"].startswith(f"128x{bn}x")) for bn in widths}


def best_by_width(results: dict, dtype: str = "float16", size: int = 4096, widths=(128, 256)) -> dict:
    """{BN: the depth sweep's best 128×BN row ÷ cuBLAS} for ``dtype`` at ``size``³
    (:func:`best_tflops_by_width` over cuBLAS's TFLOP/s)."""
    cub = cublas_row(results, dtype, size)["tflops"]
    return {bn: tf / cub for bn, tf in best_tflops_by_width(results, dtype, size, widths).items()}


def trace_of(results: dict, tile: str = "128x256x64/c2", stages: int = 4) -> dict:
    """The record's traced run of ``tile`` at ``stages`` (its ``traces`` row)."""
    return next(t for t in results["traces"] if (t["tile"], t["stages"]) == (tile, stages))


@dataclasses.dataclass(frozen=True)
class KtileAverage:
    """The whole kernel's average k-tile, from one timed row (:func:`average_ktile_cycles`).

    ``cycles``: cycles per k-tile, at most; ``median_ms``: the row's median kernel time (ms);
    ``ktiles_per_sm``: the k-tiles one SM works through (waves of CTAs × K / BK);
    ``clock_mhz``: the clock the cycles are counted at (the GPU's highest SM clock, MHz)."""
    cycles: float
    median_ms: float
    ktiles_per_sm: int
    clock_mhz: float


def average_ktile_cycles(results: dict, tile: str, dtype: str, size: int,
                         stages: int) -> KtileAverage:
    """The most cycles a k-tile of the pipelined kernel can take on average over the whole kernel,
    from the depth sweep's row for (``tile``, e.g. ``"128x256x64/c2"``, ``dtype``, a ``size``³
    problem, ``stages``): the row's median time × the GPU's highest SM clock
    (``results["clocks_after"]["max_sm_mhz"]``) ÷ the k-tiles one SM works through
    (⌈tiles ÷ SMs⌉ waves of CTAs, K / BK k-tiles each). An upper bound: the kernel ran at or
    below that clock, and an SM may sit idle in the last wave. It is the number an in-kernel trace
    of a few CTAs (``results["traces"]``) is set beside.

    Raises ``ValueError`` when the sweep has no such row, or when the row had more than one CTA
    resident per SM (then one SM's k-tiles overlap, and the count above does not hold)."""
    row = next((r for r in results["sweep"] if r["kernel"] == "pipeline" and r["tile"] == tile
                and r["dtype"] == dtype and r["size"] == size and r["stages"] == stages), None)
    if row is None:
        raise ValueError(f"tile={tile!r}, dtype={dtype!r}, size={size}, stages={stages}: no such "
                         "row in the record's depth sweep")
    if row.get("resident_ctas", 1) != 1:
        raise ValueError(f"resident_ctas={row['resident_ctas']} for {tile} s{stages}: the average "
                         "k-tile is defined here for one resident CTA per SM")
    tiles = (size // row["bm"]) * (size // row["bn"])
    ktiles_per_sm = -(-tiles // results["sm_count"]) * (size // row["bk"])
    mhz = results["clocks_after"]["max_sm_mhz"]
    return KtileAverage(cycles=row["median_ms"] * 1e-3 * mhz * 1e6 / ktiles_per_sm,
                        median_ms=row["median_ms"], ktiles_per_sm=ktiles_per_sm, clock_mhz=mhz)


def loop_clocks_per_ktile(trace: dict, cta: int = 0) -> float:
    """One traced CTA's k-loop, SM clocks per k-tile: the ``traces`` row's
    ``metrics["ctas"]["cta<cta>"]["loop_cycles"]`` ÷ its ``metrics["k_tiles"]`` (05 §5's line 1)."""
    m = trace["metrics"]
    return m["ctas"][f"cta{cta}"]["loop_cycles"] / m["k_tiles"]


def sm_clocks_per_second(results: dict) -> float:
    """All SMs' clocks per second: the record's ``sm_count`` × the SM clock the ring model uses
    (``HardwareParams.from_records().clock_mhz``, read inside the wgmma record's kernel) × 10⁶.
    FLOP ÷ (FLOP/s) × this is a time in SM clocks summed over every SM (05 §5)."""
    from ..models.pipeline import HardwareParams
    return results["sm_count"] * HardwareParams.from_records().clock_mhz * 1e6


def ktile_clocks(results: dict, trace: dict, ring) -> dict:
    """05b §3's three clocks per k-tile (chapter 05 §5's answer checks them too), read from the record (the check cell's, so that editing the
    visible arithmetic above it never silences the guard): ``traced`` (CTA 0's traced loop ÷ its
    k-tiles), ``untraced`` (a 128×256×64 k-tile's FLOP ÷ the untraced S = 4 run's FLOP/s × all SMs'
    clocks per second) and ``model`` (``ring``'s loop ÷ the same k-tiles)."""
    tflops = depth_sweep(results, "128x256x64/c2")[4]
    k_tiles = trace["metrics"]["k_tiles"]
    return {"traced": loop_clocks_per_ktile(trace, cta=0),
            "untraced": 2 * 128 * 256 * 64 / (tflops * 1e12) * sm_clocks_per_second(results),
            "model": ring.total_cycles / k_tiles}
