"""Chapter 01's notebook helpers: small tables from an ``mma_sync`` record, and the guards of the
sentences the chapter's markdown states (never measures, never plots).

Each ``show_*`` prints what a cell of the chapter shows; one marked
:func:`~asynctc.core.notebook.guards` raises :class:`~asynctc.core.notebook.ClaimError` when the
record stops supporting the markdown before it (its docstring names the sentences), so a live
re-measurement that flips a conclusion stops the notebook instead of leaving false prose.
"""

from __future__ import annotations

from ..core import bench, notebook, records
from ..core.bench import peak_tflops
from .config import DEFAULT_TILE
from .suite import ceiling_row, sweep_clock


def _at(results: dict, size: int, dtype: str = "float16") -> dict:
    """TFLOP/s by kernel at ``size``³ (the sweep's cuBLAS and every mma.sync tile)."""
    return {r.get("tile") or r["kernel"]: r["tflops"]
            for r in results["sweep"] if r["size"] == size and r["dtype"] == dtype}


def why_rows(rec: records.Record, tile=DEFAULT_TILE) -> list[tuple[str, float]]:
    """Chapter 01 §5's table, slowest first: the ablation run at 4096³ fp16 (the full kernel, then
    the same kernel with work taken out: results wrong, only timed), the register-only ``mma.sync``
    ceiling at ``tile``'s occupancy, and cuBLAS from the ablation run, as (what, TFLOP/s)."""
    r = rec.results
    abl = {x["variant"]: x["tflops"] for x in r["ablation"]}
    return [("our GEMM, 4096³", abl["full kernel"]),
            ("  minus ldmatrix", abl["no ldmatrix"]),
            ("  minus the global→shared copy", abl["no global→shared copy"]),
            ("  mma.sync + __syncthreads only", abl["mma.sync + __syncthreads only"]),
            (f"mma.sync ceiling, {tile.warps} warps × {tile.min_blocks} CTAs/SM, no memory",
             ceiling_row(r, tile)["tflops"]),
            ("cuBLAS, 4096³", abl["cuBLAS"])]


@notebook.guards
def show_why(rec: records.Record, tile=DEFAULT_TILE) -> None:
    """Chapter 01 §5: :func:`why_rows` as a table, then the line of arithmetic behind each of §5's
    numbers: each removal against the full kernel, the ceiling against the peak at its own clock
    (in-kernel), and the ceiling from the fewest to the most warps per SM.

    Guards the markdown of §5, which states: (1) ``mma.sync`` with no memory traffic reaches about
    0.65 of the peak (0.58–0.72), and at least 4× the table row's warps per SM (``tile``'s
    occupancy) gain a few percent at most (−1 to +5 %); (2) the copy
    costs the most: the kernel without it is about 1.6× as fast (1.45–1.75), more than without
    ``ldmatrix``; (3) even ``mma.sync`` + barriers alone is slower than the ceiling, and our GEMM is
    slower than both; (4) §4's sweep and this ablation time our kernel and cuBLAS within 2 % of
    each other (separate timed runs of the same kernels). Raises
    :class:`~asynctc.core.notebook.ClaimError` when the record stops showing any of it."""
    r = rec.results
    rows = why_rows(rec, tile)
    print(f"{'kernel':50s} {'TFLOP/s':>8s} {'× ours':>7s}")
    for what, tf in rows:
        print(f"{what:50s} {tf:8.0f} {tf / rows[0][1]:7.2f}")
    full, no_ldsm, no_copy, skeleton, ceiling, _ = (tf for _, tf in rows)
    sweep, cb = _at(r, 4096)[tile.name], _at(r, 4096)["cuBLAS"]
    print(f"\n§4's sweep and this ablation run time the same kernels separately: ours {sweep:.0f} vs "
          f"{full:.0f} ({abs(full / sweep - 1):.1%} apart), cuBLAS {cb:.0f} vs {rows[-1][1]:.0f}")
    notebook.require(abs(full / sweep - 1) <= 0.02 and abs(rows[-1][1] / cb - 1) <= 0.02,
                     "§4's sweep and §5's ablation time the same kernels within 2 %",
                     sweep=sweep, ablation=full, cublas_sweep=cb, cublas_ablation=rows[-1][1])
    print(f"\nwithout the copy: {no_copy:.0f} / {full:.0f} = {no_copy / full:.2f}× as fast "
          f"(without ldmatrix: {no_ldsm:.0f} / {full:.0f} = {no_ldsm / full:.2f}×)")
    ceil = ceiling_row(r, tile)
    sms = rec.provenance["sm_count"]
    peak_at = peak_tflops(sms, ceil["sm_mhz"])
    fig_mhz, _ = sweep_clock(rec)                           # §4's peak line: the sweep's own clock
    fig_peak = peak_tflops(sms, fig_mhz)
    print(f"ceiling / peak: {notebook.ratio(ceil['tflops'], peak_at, 'TFLOP/s')}  (peak: {sms} × 4096 × "
          f"{ceil['sm_mhz']:.0f} MHz, {bench.clock_kind(ceil)}: the ceiling run's own clock; §4's line, "
          f"{fig_peak:.0f}, is the sweep's {fig_mhz:.0f} MHz, {abs(peak_at / fig_peak - 1):.1%} apart)")
    occ = sorted((x["warps_per_cta"] * x["ctas_per_sm"], x["tflops"])
                 for x in r["peak"] if x["dtype"] == "float16")
    mine = tile.warps * tile.min_blocks                   # the table's ceiling row
    at_mine = max(tf for w, tf in occ if w == mine)
    most = occ[-1]
    print(f"ceiling, the table's {mine} warps per SM → {most[0]}: {notebook.ratio(most[1], at_mine, 'TFLOP/s')}"
          f"  (all: " + ", ".join(f"{w} → {tf:.0f}" for w, tf in occ) + ")")
    notebook.require(0.58 <= ceiling / peak_at <= 0.72 and 0.99 <= most[1] / at_mine <= 1.05
                     and most[0] >= 4 * mine,
                     f"mma.sync alone reaches about 0.65 of the peak, and {most[0] // mine}× the table's "
                     "warps per SM gain a few percent at most",
                     ceiling_fraction=ceiling / peak_at, occupancy=occ)
    notebook.require(1.45 <= no_copy / full <= 1.75 and no_copy > no_ldsm,
                     "without the copy the kernel is about 1.6× as fast, the largest single gain",
                     full=full, no_copy=no_copy, no_ldmatrix=no_ldsm)
    notebook.require(skeleton < ceiling and full < skeleton,
                     "mma.sync + barriers is below the ceiling, our GEMM below both",
                     skeleton=skeleton, ceiling=ceiling, ours=full)
