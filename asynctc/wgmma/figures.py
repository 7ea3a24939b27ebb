"""Chapter 04 — the chapter's figures (matplotlib): the canonical layouts wgmma reads, by major-ness
and swizzle mode, with core matrices, TMA boxes and where LBO/SBO step (:func:`plot_layouts`,
:func:`offset_steps`; as text, :func:`offsets_table`), and what the deliberate mismatch read
(:func:`plot_mismatch`); and what the lessons read from a "wgmma" record (:func:`peak_row`,
:func:`clock_note`). Draws and reads; never measures."""

from __future__ import annotations

import numpy as np

from ..models import descriptors as dsc
from .config import SWIZZLES
from .mismatch import MismatchResult


# --------------------------------------------------------------------------------------------------
# Figures for the chapter (matplotlib; replayed figures say so in their titles)
# --------------------------------------------------------------------------------------------------

def offset_steps(tile: dsc.OperandTile) -> dict:
    """Where the descriptor's two offsets step in ``tile`` (an :class:`OperandTile`), for drawing:
    ``{"lbo": ((m, k) or None, bytes), "sbo": (...)}``. ``(m, k)`` is the first element of the core
    matrix the offset reaches from element (0, 0) (None when this tile never takes that step: LBO of
    a swizzled K-major tile, or of an MN-major tile that is one box wide); ``bytes`` is the model's
    :attr:`OperandTile.lbo` / :attr:`OperandTile.sbo`. Raises :class:`AssertionError` if the byte
    distance between the two elements in the model's addresses is not that value."""
    per = 16 // tile.itemsize                       # elements per 16-byte core-matrix row
    box = tile.box_cols                             # elements per box row
    if tile.major == "K":
        sbo = (8, 0)                                # 8 rows of M down the same box
        lbo = (0, per) if tile.swizzle == 0 else None
    elif tile.swizzle:
        sbo = (0, 8)                                # 8 K-rows down the same box
        lbo = (box, 0) if box < tile.mn else None   # the next box along M/N
    else:
        sbo, lbo = (per, 0), (0, 8)                 # the ISA names them by dimension here
    addr = tile.addresses()
    out = {}
    for name, at, value in (("lbo", lbo, tile.lbo), ("sbo", sbo, tile.sbo)):
        if at is not None:
            assert addr[at] - addr[0, 0] == value, (tile.describe(), name, at)
        out[name] = (at, value)
    return out


def offsets_table(dtype: str = "float16", swizzles=SWIZZLES) -> str:
    """Text table: for the 64×64 tile (64×128 for fp8) of each major-ness and swizzle mode, where
    SBO and LBO step from the first core matrix (:func:`offset_steps`: ``M + 8`` = the core matrix
    8 elements further along M) and their bytes, in the figures' order (:func:`plot_layouts`), from
    :class:`~asynctc.models.descriptors.OperandTile`. No k-step starts: those are the answers of
    ``ch04.kstep`` and of chapter 04's checkpoint (``ch04.descriptor``)."""
    k = 64 if dsc.itemsize(dtype) == 2 else 128
    majors = ("K", "MN") if dsc.itemsize(dtype) == 2 else ("K",)
    lines = [f"{'layout':15s} {'SBO steps to':20s} LBO steps to"]
    for major in majors:
        for sw in swizzles:
            t = dsc.OperandTile(64, k, dtype, major, sw)
            cells = []
            for name in ("sbo", "lbo"):
                at, value = offset_steps(t)[name]
                cells.append("unused" if at is None else
                             f"{'M' if at[0] else 'K'} + {max(at)}: {value} B")
            lines.append(f"{major + '-major, ' + (f'{sw}B' if sw else 'none'):15s} {cells[0]:20s} "
                         f"{cells[1]}")
    return "\n".join(lines)


def plot_layouts(dtype: str = "float16", major: str = "K", swizzles=SWIZZLES, mn: int = 64,
                 operand: str = "A", names: bool = False):
    """The canonical layouts of an ``mn``×64 operand tile (×128 for fp8; default 64 rows: A, M down,
    K across, in elements; ``operand="B"``: the rows are N, labelled n) of one major-ness
    (``major``: "K" or "MN"; MN-major for 2-byte types only), one panel per swizzle mode of
    ``swizzles`` (default: all four, 2 × 2; one mode: one panel, as chapter 04 §2 draws its B at
    N = 128), sized to be read at notebook width. Drawn: the core matrices (8 rows ×
    16 bytes, white borders) with their contiguous 16-byte rows as grey strokes (along K in
    K-major, along M in MN-major); the TMA boxes the tile is stored as (shaded bands, numbered);
    what one wgmma reads (k-step 0, dashed); and arrows from the first core matrix to where LBO and
    SBO step (:func:`offset_steps`: the byte values come from the model). K runs across in both
    majors, so MN-major's k-rows are drawn as columns (the x label says so). ``names``: label the
    three core matrices in chapter 04 §2's notation, (i, j) at ``start + i·SBO + j·LBO``: the
    black one (0, 0), SBO's (1, 0), LBO's (0, 1)."""
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle
    if major not in ("K", "MN") or (major == "MN" and dsc.itemsize(dtype) != 2):
        raise ValueError(f"major={major!r}: 'K', or 'MN' for a 2-byte type")
    if operand not in ("A", "B"):
        raise ValueError(f"operand={operand!r}: 'A' or 'B'")
    k = 64 if dsc.itemsize(dtype) == 2 else 128
    cols = min(2, len(swizzles))
    rows_ = -(-len(swizzles) // cols)
    panel = (3.9 if k == 64 else 2.2) * mn / 64 * (1 if cols == 2 else 0.8)   # height (in)
    width = 8.4 if cols == 2 else 6.4               # a lone panel: narrower, the legend in one column
    fig, axes = plt.subplots(rows_, cols, squeeze=False, layout="constrained",
                             figsize=(width, rows_ * (panel + 1.2) + 0.9 + (cols == 1) * 0.5))
    row_name = "m" if operand == "A" else "n"
    shades = ("#cfe3f5", "#fbe0c4")
    for ax, sw in zip(axes.flat, swizzles):
        t = dsc.OperandTile(mn, k, dtype, major, sw)
        per = 16 // t.itemsize
        for j in range(t.n_boxes):                  # the TMA boxes, side by side in memory
            lo, w = j * t.box_cols, t.box_cols
            xy, wh = ((lo, 0), (w, t.mn)) if major == "K" else ((0, lo), (k, w))
            ax.add_patch(Rectangle(xy, *wh, facecolor=shades[j % 2], edgecolor="k", lw=1.6, zorder=1))
            if t.n_boxes > 1:
                cx, cy = (lo + w / 2, t.mn - 3) if major == "K" else (k - 3, lo + w / 2)
                ax.text(cx, cy, str(j), ha="center", va="center", fontsize=9, color="0.25", zorder=6,
                        clip_on=False, bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none"))
        segs = []                                   # each core matrix's 16-byte rows
        for i0 in range(0, t.mn, 8 if major == "K" else per):
            for k0 in range(0, k, per if major == "K" else 8):
                for r in range(8):
                    if major == "K":
                        y = i0 + r + 0.5
                        segs.append([(k0 + 0.8, y), (k0 + per - 0.8, y)])
                    else:
                        x = k0 + r + 0.5
                        segs.append([(x, i0 + 0.8), (x, i0 + per - 0.8)])
        ax.add_collection(LineCollection(segs, colors="0.62", linewidths=0.4, zorder=2))
        cm_w, cm_h = (per, 8) if major == "K" else (8, per)     # one core matrix: k across, rows down
        grid = [[(x, 0), (x, t.mn)] for x in range(cm_w, k, cm_w)] + \
               [[(0, y), (k, y)] for y in range(cm_h, t.mn, cm_h)]
        ax.add_collection(LineCollection(grid, colors="white", linewidths=2.2, zorder=2.5))
        ax.add_patch(Rectangle((0, 0), cm_w, cm_h, fill=False, edgecolor="k", lw=2, zorder=4))
        ax.add_patch(Rectangle((0, 0), t.instruction_k, t.mn, fill=False, ls="--", lw=1.6,
                               edgecolor="tab:purple", zorder=3))
        steps = offset_steps(t)
        notes = []
        for name, colour in (("sbo", "tab:red"), ("lbo", "tab:blue")):
            at, value = steps[name]
            text = f"{name.upper()} {value} B"
            if names:
                text = f"{'(1, 0)' if name == 'sbo' else '(0, 1)'}: start + {name.upper()}, {value} B"
            if at is None:
                notes.append(f"{name.upper()} unused")
                continue
            start = (cm_w / 2, cm_h / 2)           # centre of the first core matrix to the centre
            end = (start[0] + at[1], start[1] + at[0])  # of the one the stride reaches (outlined)
            ax.add_patch(Rectangle((at[1], at[0]), cm_w, cm_h, fill=False, edgecolor=colour, lw=2.2,
                                   zorder=4))
            ax.annotate("", xy=end, xytext=start, zorder=5,
                        arrowprops=dict(arrowstyle="-|>", color=colour, lw=2.4, mutation_scale=16,
                                        shrinkA=0, shrinkB=0))
            down = at[0] > 0                        # label below a down step, right of a right one,
            ax.text(at[1] + (0 if down else cm_w + 1.5),     # clear of its outlined core matrix
                    at[0] + (cm_h + 1.5 if down else cm_h / 2), text, color=colour,
                    fontsize=10, weight="bold", ha="left", va="top" if down else "center", zorder=6,
                    bbox=dict(boxstyle="round,pad=0.2", fc="white", ec=colour, lw=0.8))
        if names:                                   # the black core matrix: a label above the
            ax.annotate("(0, 0): start", xy=(cm_w / 2, 0), xytext=(2 * cm_w + 4, -5),   # grid,
                        color="k", fontsize=10, weight="bold", ha="left", va="center", zorder=6,
                        annotation_clip=False,                  # its arrow onto the matrix's top edge
                        bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="k", lw=0.8),
                        arrowprops=dict(arrowstyle="-|>", color="k", lw=1.4, shrinkA=0, shrinkB=0,
                                        connectionstyle="angle,angleA=180,angleB=90"))
        if notes:
            ax.text(k / 2, t.mn + 1, ", ".join(notes), ha="center", va="top", fontsize=9.5, color="0.2")
        rows, along = (row_name, "k") if major == "K" else ("k", row_name)
        boxes = (f"{t.n_boxes} box{'es' if t.n_boxes > 1 else ''} of {t.box_rows} {rows}-rows × "
                 f"{t.row_pitch} B of {along}")
        ax.set_title(f"{'no' if sw == 0 else f'{sw}-byte'} swizzle\n{boxes}", fontsize=10.5, pad=4)
        ax.set_xlim(0, k)
        ax.set_ylim(t.mn + 6, -10 if names else 0)      # names: room above the grid for (0, 0)
        ax.set_aspect("equal")
        ax.set_xticks(range(0, k + 1, 16))
        ax.set_yticks(range(0, t.mn + 1, 16))
        ax.tick_params(labelsize=9)
        ax.set_xlabel("k (element)" if major == "K" else "k (element): each k-row is drawn as a column",
                      fontsize=9.5)                 # MN-major: a k-row's bytes run down the page
        if ax in axes[:, 0]:
            ax.set_ylabel(f"{row_name} ({'row of A' if operand == 'A' else 'column of B'})", fontsize=9.5)
        for s in ax.spines.values():
            s.set_visible(False)
    for ax in axes.flat[len(swizzles):]:
        ax.set_visible(False)
    handles = [Line2D([], [], color="0.62", lw=0.8, label="grey strokes: the 16-byte rows of each core "
                                                          "matrix (8 rows, white borders)"),
               Patch(facecolor=shades[0], edgecolor="k", label="a TMA box (numbered when several)"),
               Patch(fill=False, ls="--", edgecolor="tab:purple", label="what one wgmma reads (k-step 0)"),
               Line2D([], [], color="tab:red", marker=">", label="SBO: black core matrix to red"
                      + (": (0, 0) to (1, 0)" if names else "")),
               Line2D([], [], color="tab:blue", marker=">", label="LBO: black core matrix to blue"
                      + (": (0, 0) to (0, 1)" if names else ""))]
    fig.legend(handles=handles, loc="outside lower center", ncols=cols, fontsize=9.5, frameon=False)
    fig.suptitle(f"{major}-major: a {mn}×{k} {dtype} {'tile' if operand == 'A' else 'B tile (n × k)'}"
                 " as wgmma reads it", fontsize=12)
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


# --------------------------------------------------------------------------------------------------
# What the lessons read from a "wgmma" record (reads the record's results; never measures)
# --------------------------------------------------------------------------------------------------

def peak_row(results: dict, dtype: str = "float16", n: int = 256, source: str = "smem") -> dict:
    """The throughput row of a "wgmma" record the chapter quotes: ``dtype``, instruction N,
    ``source`` of A ("smem": SS, "registers": RS), one accumulator, two CTAs per SM. Raises
    :class:`KeyError` naming the row when the record has none."""
    for x in results["throughput"]:
        if (x["dtype"], x["n"], x["source"], x["chains"], x["ctas_per_sm"]) == (dtype, n, source, 1, 2):
            return x
    raise KeyError(f"wgmma record: no throughput row for {dtype} N={n} {source}, 1 chain, 2 CTAs/SM")


def clock_note(results: dict) -> tuple[bool, str, str]:
    """``(below, if_true, if_false)`` for :func:`asynctc.core.notebook.verdict`: the range of the
    SM clock measured inside the kernel over the throughput rows, against the ``nvidia-smi``
    clock read a moment after each run (its range and its most frequent value). ``below``: the
    highest in-kernel clock is under every nvidia-smi reading."""
    tp = results["throughput"]
    lo, hi = min(x["sm_mhz"] for x in tp), max(x["sm_mhz"] for x in tp)
    smi = [x["clocks_after_nvidia_smi"]["sm_mhz"] for x in tp if x.get("clocks_after_nvidia_smi")]
    if not smi:
        raise KeyError("wgmma record: no nvidia-smi clock after any throughput run")
    top = max(set(smi), key=smi.count)
    smi_text = (f"{min(smi):.0f}–{max(smi):.0f} MHz; {top:.0f} after {smi.count(top)} of {len(smi)} runs"
                if min(smi) < max(smi) else f"{top:.0f} MHz after all {len(smi)} runs")
    clocks = f"In-kernel SM clock under load: {lo:.0f}–{hi:.0f} MHz"
    return (hi < min(smi), f"{clocks}, below every nvidia-smi reading after a run ({smi_text}).",
            f"{clocks}; nvidia-smi read {smi_text} after the runs.")


def plot_accumulator(n: int = 16, thread: int = 37):
    """The fp32 accumulator D (64×``n``) of one wgmma, coloured by the warp holding each element,
    with ``thread``'s elements boxed (the model :func:`asynctc.models.fragments.wgmma_accumulator_owner`,
    the rule ``acc_pair_origin`` in ``kernels/wgmma_ring.cuh`` implements). Left: all of D; right:
    the 16 rows of ``thread``'s warp, each boxed element labelled with its register index (every
    label ≥ 8 pt at the figure's size). Returns the figure. Raises ValueError for a thread outside
    0..127."""
    import matplotlib.pyplot as plt
    from ..models.fragments import wgmma_accumulator_owner
    if not 0 <= thread < 128:
        raise ValueError(f"thread={thread!r}: a warpgroup's threads are 0..127")
    owner, reg = wgmma_accumulator_owner(n)
    w, lane = divmod(thread, 32)
    rows = range(16 * w, 16 * w + 16)
    fig, (whole, zoom) = plt.subplots(1, 2, figsize=(3.2 + n * 0.4, 6.2), layout="constrained",
                                      width_ratios=(1, 2))
    cmap = plt.get_cmap("tab10", 4)
    for ax, top, bottom in ((whole, 0, 64), (zoom, rows[0], rows[-1] + 1)):
        im = ax.imshow(owner[top:bottom] // 32, cmap=cmap, vmin=-0.5, vmax=3.5, aspect="auto",
                       interpolation="nearest", alpha=0.55, extent=(-0.5, n - 0.5, bottom - 0.5, top - 0.5))
        for x in range(8, n, 8):
            ax.axvline(x - 0.5, color="k", lw=0.5, alpha=0.4)
        for y in range(top + 8, bottom, 8):
            ax.axhline(y - 0.5, color="k", lw=0.5 if y % 16 else 1.0, alpha=0.4)
        ax.set_xlabel("column c of D")
    for r, c in zip(*np.nonzero(owner == thread)):
        whole.add_patch(plt.Rectangle((c - 0.5, r - 0.5), 1, 1, fc="white", lw=0.8, ec="k"))
        zoom.add_patch(plt.Rectangle((c - 0.5, r - 0.5), 1, 1, fc="white", lw=1.2, ec="k"))
        zoom.text(c, r, reg[r, c], ha="center", va="center", fontsize=10, weight="bold")
    whole.add_patch(plt.Rectangle((-0.5, rows[0] - 0.5), n, 16, fc="none", lw=2, ec="k"))
    whole.set_yticks(range(0, 64, 8))
    whole.set_xticks(range(0, n, 8))
    whole.set_ylabel("row r of D")
    whole.set_title("all of D", fontsize=9)
    zoom.set_yticks(rows[::2])
    zoom.set_xticks(range(0, n, 2))
    zoom.set_title(f"rows {rows[0]}–{rows[-1]} (warp {w}); boxed: thread {thread} (lane {lane}),\n"
                   "the number is the register index", fontsize=9)
    fig.colorbar(im, ax=zoom, label="warp", ticks=range(4))
    fig.suptitle(f"m64n{n}: the warp holding each element of the accumulator", fontsize=10)
    return fig
