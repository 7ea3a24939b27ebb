"""Chapter 04 — the chapter's figures (matplotlib): the canonical layouts wgmma reads, by swizzle mode
(:func:`plot_layouts`), and what the deliberate mismatch read (:func:`plot_mismatch`). Draws only;
never measures."""

from __future__ import annotations

import numpy as np

from ..models import descriptors as dsc
from .config import SWIZZLES
from .mismatch import MismatchResult


# --------------------------------------------------------------------------------------------------
# Figures for the chapter (matplotlib; replayed figures say so in their titles)
# --------------------------------------------------------------------------------------------------

def plot_layouts(major: str = "K", dtype: str = "float16", rows: int = 16, hide_offsets=()):
    """One panel per swizzle mode: for the first ``rows`` rows of a 64×64 (K-major A) or 64×64
    (MN-major) tile, the 16-byte chunk (0..7) of its 128-byte line that each 16-byte group of
    elements occupies — the canonical layout wgmma reads, drawn. Each panel's title gives the
    tile's LBO and SBO, except for the swizzle modes (bytes, 0 = none) in ``hide_offsets``, whose
    title says they are left to an exercise."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.6))
    k = 64 if dsc.itemsize(dtype) == 2 else 128
    for ax, sw in zip(axes, SWIZZLES):
        t = dsc.OperandTile(64, k, dtype, major, sw)
        addr = t.addresses()
        per = 16 // t.itemsize
        chunks = (addr % 128) // 16
        view = chunks[:rows, ::per] if major == "K" else chunks[::per, :rows].T
        ax.imshow(view, cmap="tab10", vmin=0, vmax=9, aspect="auto")
        for (i, j), v in np.ndenumerate(view):
            ax.text(j, i, int(v), ha="center", va="center", fontsize=6)
        offsets = "LBO, SBO: see the exercises" if sw in hide_offsets else f"LBO {t.lbo} B, SBO {t.sbo} B"
        ax.set_title(f"{'no' if sw == 0 else f'{sw}B'} swizzle\n{offsets}", fontsize=9)
        ax.set_xlabel("16-byte group along " + ("K" if major == "K" else "MN"))
        ax.set_xticks(range(0, view.shape[1], max(1, view.shape[1] // 8)))
        ax.set_yticks(range(0, view.shape[0], 2))
        ax.set_ylabel(("row (M)" if major == "K" else "k") if ax is axes[0] else "")
    fig.suptitle(f"{major}-major {dtype}: 16-byte chunk within its 128-byte line (≈ bank group)",
                 fontsize=10)
    fig.tight_layout()
    return fig


def plot_mismatch(r: MismatchResult, rows: int = 16):
    """Left: for the first ``rows`` rows of A as wgmma read it, per 16-byte group of K, the image row
    its values really came from; right: |D − reference| (measured when live, else predicted)."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
    k = r.source_a.shape[1]
    per = 16 // dsc.itemsize(r.config.dtype)
    src_row = np.where(r.source_a >= 0, r.source_a // k, -1)[:rows, ::per]
    im0 = axes[0].imshow(src_row, cmap="viridis", aspect="auto")
    for (i, j), v in np.ndenumerate(src_row):
        axes[0].text(j, i, int(v), ha="center", va="center", fontsize=7,
                     color="white" if v < src_row.max() / 2 else "black")
    fig.colorbar(im0, ax=axes[0], label="image row the value came from")
    axes[0].set_title(f"A as wgmma read it (rows 0–{rows - 1}): source row of each 16-byte group",
                      fontsize=9)
    axes[0].set_xlabel(f"16-byte group of K ({per} elements; 4 k16 steps)")
    axes[0].set_ylabel("row m wgmma thinks it read")
    axes[0].set_yticks(range(0, rows, 2))
    d = r.measured if r.measured is not None else r.predicted
    im = axes[1].imshow(np.abs(d - r.reference), cmap="magma", aspect="auto")
    fig.colorbar(im, ax=axes[1], label="|D − A·B|")
    axes[1].set_title(("measured" if r.measured is not None else "predicted") +
                      f" |D − A·B|: {r.wrong_measured if r.measured is not None else r.wrong_predicted}"
                      f" of {r.reference.size} wrong", fontsize=9)
    axes[1].set_xlabel("column n of D")
    axes[1].set_ylabel("row m of D")
    return fig
