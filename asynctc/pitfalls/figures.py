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
    """For each element (row, col) of a 64 × 64 fp16 box, the column the reader actually gets it
    from, minus its own column (0 where the layout agrees; :func:`~asynctc.pitfalls.diagnosis.
    misplaced_offsets`). The x ticks mark the 16-byte chunks (8 elements) a swizzle moves."""
    import matplotlib.pyplot as plt
    off = _d.misplaced_offsets(tma_swizzle, reader_swizzle, base_offset)["cols"]
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 4))
    from matplotlib.colors import BoundaryNorm, ListedColormap
    # One colour per offset, a multiple of 8 columns (one 16-byte chunk): white only at 0; every
    # other offset, however small, a clearly saturated blue (read from the left) or red (right).
    n = max(int(np.abs(off).max()) // 8, 1)
    base = plt.get_cmap("coolwarm")
    shade = [0.5 + 0.5 * (0.45 + 0.55 * k / n) * (1 if v > 0 else -1)
             for v in range(-n, n + 1) for k in [abs(v)] if v]
    colours = [base(x) for x in shade[:n]] + [(1.0, 1.0, 1.0, 1.0)] + [base(x) for x in shade[n:]]
    bounds = [8 * v - 4 for v in range(-n, n + 2)]
    im = ax.imshow(off, cmap=ListedColormap(colours), norm=BoundaryNorm(bounds, len(colours)),
                   aspect="auto")
    ax.set_xticks(range(0, off.shape[1] + 1, 8))
    ax.set_xlabel("column (fp16 element; a tick per 16-byte chunk)")
    ax.set_ylabel("row")
    ax.set_title(f"column read − column wanted (TMA {tma_swizzle} B swizzle, reader {reader_swizzle} B, "
                 f"base +{base_offset} B)", fontsize=9)
    cb = ax.figure.colorbar(im, ax=ax, label="columns off (white, 0: the right element)")
    cb.set_ticks([8 * v for v in range(-n, n + 1) if n <= 4 or v % 2 == 0])
    return ax
