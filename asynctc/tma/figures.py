"""Chapter 03 — the chapter's figure (matplotlib): where a box's 16-byte chunks land under each
swizzle mode, from the model :class:`asynctc.models.layout.SmemTile` (:func:`plot_chunk_maps`).
Draws only; never measures."""

from __future__ import annotations

import numpy as np

from ..models.layout import SmemTile, dtype_of


def plot_chunk_maps(swizzles=(0, 32, 64, 128), rows: int = 8, dtype: str = "float16"):
    """One panel per swizzle mode: for ``rows`` rows of a box whose rows are one swizzle span long
    (128 bytes without swizzle), the bank group (0..7: which 16-byte chunk of the 128-byte line,
    i.e. which four banks) each 16-byte chunk of the row lands in
    (:meth:`SmemTile.chunk_map`). Returns the figure."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(swizzles), figsize=(13, 3.6), layout="constrained")
    for ax, sw in zip(np.atleast_1d(axes), swizzles):
        t = SmemTile(rows, (sw or 128) // dtype_of(dtype).itemsize, dtype, sw)
        m = t.chunk_map()
        ax.imshow(m, cmap="tab10", vmin=0, vmax=9, aspect="auto")
        for (r, c), v in np.ndenumerate(m):
            ax.text(c, r, int(v), ha="center", va="center", fontsize=8)
        ax.set_title(f"swizzle {sw or 'none'}: {t.inner_bytes} B rows", fontsize=9)
        ax.set_xticks(range(m.shape[1]))
        ax.set_yticks(range(m.shape[0]))
        ax.set_xlabel("16-byte chunk of the row")
    np.atleast_1d(axes)[0].set_ylabel("row of the box")
    fig.suptitle("Bank group (16-byte chunk of the 128-byte line) of each chunk, from "
                 "asynctc.models.layout")
    return fig
