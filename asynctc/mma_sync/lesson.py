"""Chapter 01's notebook helpers: §5's table from an ``mma_sync`` record (never measures, never
plots). The numbers §5's markdown states are computed in the chapter's cells, in view, and guarded
by the ``notebook.require`` lines of its check cell."""

from __future__ import annotations

from ..core import records
from .config import DEFAULT_TILE
from .suite import ceiling_row


def why_rows(rec: records.Record, tile=DEFAULT_TILE) -> list[tuple[str, float]]:
    """Chapter 01 §5's table, slowest first: the ablation run at 4096³ fp16 (the full kernel, then
    the same kernel with work taken out: results wrong, only timed), the register-only ``mma.sync``
    ceiling at ``tile``'s occupancy, and cuBLAS from the ablation run, as (what, TFLOP/s)."""
    r = rec.results
    abl = {x["variant"]: x["tflops"] for x in r["ablation"]}
    return [("our GEMM, 4096³", abl["full kernel"]),
            ("  minus only ldmatrix", abl["no ldmatrix"]),
            ("  minus only the global→shared copy", abl["no global→shared copy"]),
            ("  mma.sync + __syncthreads only", abl["mma.sync + __syncthreads only"]),
            (f"mma.sync ceiling, {tile.warps} warps × {tile.min_blocks} CTAs/SM, no memory",
             ceiling_row(r, tile)["tflops"]),
            ("cuBLAS, 4096³", abl["cuBLAS"])]


def why_table(rec: records.Record, tile=DEFAULT_TILE) -> str:
    """Chapter 01 §5's table, only a table: :func:`why_rows` under a header, each row's TFLOP/s and
    its ratio to the first row (our GEMM). The chapter's cell computes §5's numbers from the record
    in view and guards its sentences in the check cell after it."""
    rows = why_rows(rec, tile)
    head = f"{'kernel':50s} {'TFLOP/s':>8s} {'× ours':>7s}"
    return "\n".join([head] + [f"{what:50s} {tf:8.0f} {tf / rows[0][1]:7.2f}" for what, tf in rows])
