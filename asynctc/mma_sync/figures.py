"""Chapter 01's figure (matplotlib; data in, figure out — never measures): the synchronous GEMM
beside cuBLAS and beside the register-only ``mma.sync`` ceiling, from an ``mma_sync`` record."""

from __future__ import annotations

from ..core import plots
from .config import DEFAULT_TILE
from .suite import vs_cublas_lines


def plot_vs_cublas(rec, tile=DEFAULT_TILE):
    """TFLOP/s by size (:func:`~asynctc.mma_sync.suite.vs_cublas_lines`): cuBLAS and the best
    mma.sync tile per size, fp16 and bf16 (bf16 hollow: the two nearly coincide), the peak at the
    sweep's measured clock, the datasheet's and the ``mma.sync`` ceiling at ``tile``'s occupancy.
    ``rec``: an ``mma_sync`` :class:`~asynctc.core.records.Record`. Returns the figure."""
    hollow = {"mfc": "none", "ms": 9}
    return plots.throughput_by_size(
        **vs_cublas_lines(rec, tile), record=rec, title="Synchronous mma.sync GEMM vs cuBLAS",
        styles={"cuBLAS bfloat16": hollow, "mma.sync bfloat16": {**hollow, "color": "tab:olive"}})
