"""Reading a ``pipeline`` record's results (no GPU, no timing, no plotting): the fastest row
(:func:`best_row`), cuBLAS's row (:func:`cublas_row`), a row's configuration label
(:func:`row_label`) — shared by the suite's tables and the figures."""

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

