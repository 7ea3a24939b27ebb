"""Chapter 01's figure (matplotlib; data in, figure out — never measures): the synchronous GEMM
beside cuBLAS and beside the register-only ``mma.sync`` ceiling, from an ``mma_sync`` record; the
CTA → warp → mma.sync tile hierarchy of a tile config."""

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


def plot_tile_hierarchy(tile=DEFAULT_TILE):
    """How ``tile`` cuts C (no data, a picture of the config): left, the CTA tile ``bm``×``bn`` and
    its warp tiles ``wm``×``wn``; right, one warp tile cut into the 16×8 C tiles of
    ``mma.sync.m16n8k16`` (one per instruction and k16 step). Returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9, 4.2), gridspec_kw={"width_ratios": [1, 1]})
    wr, wc = tile.bm // tile.wm, tile.bn // tile.wn
    for i in range(wr):
        for j in range(wc):
            w = i * wc + j
            ax0.add_patch(Rectangle((j * tile.wn, i * tile.wm), tile.wn, tile.wm, fill=True,
                                    fc="tab:orange" if w == 0 else "0.92", ec="k", lw=1.5))
            ax0.text((j + 0.5) * tile.wn, (i + 0.5) * tile.wm, f"warp {w}\n{tile.wm}×{tile.wn}",
                     ha="center", va="center", fontsize=10)
    ax0.set(xlim=(0, tile.bn), ylim=(tile.bm, 0), aspect="equal", xlabel="N", ylabel="M",
            title=f"CTA tile of C: {tile.bm}×{tile.bn}, {tile.warps} warps")
    mr, mc = tile.wm // 16, tile.wn // 8
    for i in range(mr):
        for j in range(mc):
            ax1.add_patch(Rectangle((j * 8, i * 16), 8, 16, fc="tab:blue" if (i, j) == (0, 0) else
                                    "#fde0c5", ec="0.4", lw=0.8))
    ax1.add_patch(Rectangle((0, 0), tile.wn, tile.wm, fill=False, ec="tab:orange", lw=3))
    ax1.text(4, 8, "16×8", ha="center", va="center", color="w", fontsize=7)
    ax1.set(xlim=(0, tile.wn), ylim=(tile.wm, 0), aspect="equal", xlabel="N", ylabel="M",
            title=f"warp 0's tile: {mr}×{mc} = {mr * mc} mma.sync\nper k16 step (16 deep of the k-tile's {tile.bk})")
    for ax in (ax0, ax1):
        ax.tick_params(labelsize=8)
    fig.tight_layout()
    return fig
