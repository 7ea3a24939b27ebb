"""Chapter 08's figures (they never measure): the ring model's timeline of a broken protocol up to
its diagnosis, and where a misplaced box's elements come from."""

from __future__ import annotations

import numpy as np

from ..models import pipeline as M
from . import diagnosis as _d


def plot_broken_timeline(protocol: str, ax=None):
    """The ring model's spans for ``protocol`` on :data:`asynctc.pitfalls.diagnosis.SCHEDULE`,
    titled with its diagnosis (chapter 05's :func:`asynctc.models.pipeline.plot_timeline`)."""
    sched = M.simulate(**_d.SCHEDULE, protocol=protocol)
    d = _d.pipeline_diagnosis(protocol)
    title = f"{protocol}: {d.kind}" + (f" on {d.detail.barrier}[{d.detail.stage}] at k-tile "
                                       f"{d.detail.iteration}" if d.kind == "Deadlock" else "")
    return M.plot_timeline(sched.spans, title=title, ax=ax)


def plot_misplaced(tma_swizzle: int = 128, reader_swizzle: int = 128, base_offset: int = 128, ax=None):
    """For each element (row, col) of a 64 × 64 fp16 box, the row the reader actually gets it from,
    minus its own row (0 where the layout agrees)."""
    import matplotlib.pyplot as plt
    from ..models.layout import swizzle_address
    rows, cols = 64, 64
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    off = r * 128 + c * 2
    written = swizzle_address(base_offset + off, tma_swizzle) - base_offset
    where = np.empty(rows * cols, np.int64)
    where[written.ravel() // 2] = np.arange(rows * cols)
    found = where[swizzle_address(off, reader_swizzle).ravel() // 2].reshape(rows, cols)
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 4))
    im = ax.imshow(found % cols - c, cmap="coolwarm", aspect="auto")
    ax.set_xlabel("column (fp16 element)")
    ax.set_ylabel("row")
    ax.set_title(f"column read − column wanted (TMA {tma_swizzle} B swizzle, reader {reader_swizzle} B, "
                 f"base +{base_offset} B)", fontsize=9)
    ax.figure.colorbar(im, ax=ax)
    return ax
