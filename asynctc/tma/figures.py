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
        ax.set_xlabel("logical 16-byte chunk (before the swizzle)")
    np.atleast_1d(axes)[0].set_ylabel("row of the box")
    fig.suptitle("Number and colour: the physical 16-byte chunk it lands in (its slot in the 128-byte "
                 "line = bank group, banks 4g to 4g + 3), from asynctc.models.layout")
    return fig


def plot_box_over_tensor(spec, at=(256, 512), edge=(1024, 4032)):
    """Where one TMA load reads and writes, for a 2-D map ``spec`` (a validated
    :class:`~asynctc.models.tensor_map.TensorMapSpec`, e.g. from :func:`asynctc.tma.validate`).
    Left: the global tensor (``spec.shape`` rows × columns, row pitch ``spec.strides[0]`` bytes)
    with two boxes, one at ``at`` and one at ``edge`` (coordinates (c0, c1) = (column, row), the
    innermost first as ``tma_load_2d`` takes them). Right: each box as it lands in shared memory,
    ``spec.box`` rows × (box columns × element size) bytes; the part of a box past the tensor's
    edge is filled (zeros, ``CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE``; PTX ISA "Tensor copy
    restrictions", out-of-bound access) and still counts in the box's bytes. Draws only; returns
    the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import ConnectionPatch, Rectangle
    rows, cols = spec.shape
    br, bc = spec.box
    item = spec.dtype.itemsize
    fig = plt.figure(figsize=(13, 5.6), layout="constrained")
    # Left: the tensor over both rows; right: box 1 above box 2, their axis labels on the right, so
    # that each arrow runs from its box through the gap to its panel's bare left edge.
    gs = fig.add_gridspec(2, 2, width_ratios=(1.5, 1))
    g = fig.add_subplot(gs[:, 0])
    g.add_patch(Rectangle((0, 0), cols, rows, fc="0.93", ec="k"))
    for x in range(0, cols + 1, bc * 8):
        g.axvline(x, color="0.8", lw=0.4)
    for y in range(0, rows + 1, br * 4):
        g.axhline(y, color="0.8", lw=0.4)
    g.set_xlim(-cols * 0.03, cols * 1.03)
    g.set_ylim(rows * 1.1, -rows * 0.12)
    g.set_xlabel(f"column (c0), {cols} of them, contiguous: {item} B apart")
    g.set_ylabel(f"row (c1): {spec.strides[0]} B apart (globalStrides)")
    g.set_title(f"global tensor {rows}×{cols} {spec.dtype.name}, row-major", fontsize=10)
    for k, ((c0, c1), colour) in enumerate(zip((at, edge), ("tab:blue", "tab:orange"))):
        inside = max(0, min(br, rows - c1))
        g.add_patch(Rectangle((c0, c1), bc, br, fc=colour, ec=colour, lw=1.5, alpha=0.8))
        if inside < br:
            g.add_patch(Rectangle((c0, c1 + inside), bc, br - inside, fc="white", ec=colour,
                                  hatch="///", lw=1.5))
        # the label above a box in the upper half, below one in the lower half: clear of the
        # arrow and of the zoom's guide lines
        above = c1 < rows / 2
        g.annotate(f"box {k + 1} at (c0={c0}, c1={c1})", (c0, c1 if above else c1 + br),
                   xytext=(0, 6 if above else -6), textcoords="offset points", fontsize=9,
                   color=colour, va="bottom" if above else "top")
        if inside < br:                     # a zoom on the edge: the box's rows past the last row
            z = g.inset_axes([0.1, 0.3, 0.42, 0.32])
            z.add_patch(Rectangle((0, 0), cols, rows, fc="0.93", ec="k"))
            z.add_patch(Rectangle((c0, c1), bc, inside, fc=colour, alpha=0.8))
            z.add_patch(Rectangle((c0, c1 + inside), bc, br - inside, fc="white", ec=colour,
                                  hatch="///"))
            z.set_xlim(c0 - bc, c0 + 2 * bc)
            z.set_ylim(c1 + br, c1)         # exactly the box's rows, so the ticks match the title
            z.set_xticks([c0, c0 + bc])
            z.set_yticks([c1, rows, c1 + br])
            z.set_title(f"zoom: rows {c1} to {c1 + br}, the tensor ends at {rows}", fontsize=8)
            z.tick_params(labelsize=7)
            g.indicate_inset_zoom(z, edgecolor=colour)
        s = fig.add_subplot(gs[k, 1])
        s.add_patch(Rectangle((0, 0), bc * item, inside, fc=colour, alpha=0.8))
        if inside < br:
            s.add_patch(Rectangle((0, inside), bc * item, br - inside, fc="white", ec=colour,
                                  hatch="///"))
            s.text(bc * item / 2, (inside + br) / 2, f"{br - inside} rows past the edge:\nfilled with zeros",
                   ha="center", va="center", fontsize=9, bbox=dict(fc="white", ec="none"))
        s.set_xlim(0, bc * item)
        s.set_ylim(br, 0)
        s.yaxis.tick_right()
        s.yaxis.set_label_position("right")
        s.set_xlabel(f"byte in the row (box: {bc} × {item} B = {bc * item} B)")
        s.set_ylabel(f"row of the box ({br})")
        s.set_title(f"box {k + 1} in shared memory: {spec.box_bytes} B", fontsize=10)
        fig.add_artist(ConnectionPatch((c0 + bc, c1 + br / 2), (0, br / 2), "data", "data", axesA=g,
                                       axesB=s, arrowstyle="->", color=colour, lw=1.5))
    fig.suptitle("A TMA load copies one box of the tensor into shared memory; expect_tx counts "
                 "every byte of the box, zeros included (unswizzled view: §2 adds the swizzle)",
                 fontsize=11)
    return fig
