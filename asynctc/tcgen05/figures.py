"""Chapter 09's pictures. Figures never measure: they draw what :mod:`.lesson` computes and what
:mod:`asynctc.models.tmem` says about Tensor Memory (PTX ISA, "Tensor Memory": 128 lanes × 512
columns of 32 bits per SM; warp w of a warpgroup may access lanes 32·(w mod 4) … + 31)."""

from __future__ import annotations

from ..models import tmem
from ..pipeline.config import REGS_PER_SM


def accumulator_homes(rows: list[dict], allocations=((0, 256, "accumulator 0"), (256, 256, "accumulator 1"))):
    """Two panels. Left: Hopper's register bill per case of ``rows`` (:func:`.lesson.register_bill`)
    as stacked bars (producer, accumulators, the consumers' other registers) against the SM's 65536.
    Right: one SM's TMEM, 128 lanes × 512 columns, banded by the warp that may read each 32-lane
    quarter, with ``allocations`` ((first column, columns, label), as ``tcgen05.alloc`` would
    return them) drawn over it. Returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10.5, 3.8), dpi=80, layout="constrained",
                                 gridspec_kw={"width_ratios": [1.1, 1]})
    colours = {"producer": "0.6", "acc_regs": "tab:red", "other_regs": "tab:orange"}
    names = {"producer": "producer warpgroup", "acc_regs": "fp32 accumulators",
             "other_regs": "consumers' other registers"}
    for i, r in enumerate(rows):
        left = 0
        for key in ("producer", "acc_regs", "other_regs"):
            ax.barh(i, r[key], left=left, color=colours[key], label=names[key] if i == 0 else None)
            left += r[key]
        ax.text(left + 800, i, f"{left}" + ("" if r["fits"] else "  does not fit"), va="center",
                fontsize=9.5, color="k" if r["fits"] else "tab:red")
    ax.axvline(REGS_PER_SM, color="k", lw=1.2, ls="--")
    ax.text(REGS_PER_SM, -0.55, " the SM's 65536", fontsize=9.5, va="bottom")
    ax.set_yticks(range(len(rows)), [r["name"] for r in rows], fontsize=9.5)
    ax.set_xlim(0, 1.5 * REGS_PER_SM)
    ax.set_ylim(len(rows) - 0.5, -0.8)
    ax.set_xlabel("32-bit registers of one SM")
    ax.set_title("Hopper: the accumulator lives in registers", fontsize=10.5)
    ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)

    warp_colours = plt.get_cmap("Pastel1").colors
    for w in range(tmem.LANES // tmem.LANES_PER_WARP):
        lo = w * tmem.LANES_PER_WARP
        bx.add_patch(Rectangle((0, lo), tmem.COLUMNS, tmem.LANES_PER_WARP, fc=warp_colours[w], ec="k", lw=0.5))
        bx.text(tmem.COLUMNS + 6, lo + 16, f"warps with\nw mod 4 = {w}", fontsize=9,
                va="center")
    for (col, ncols, label), hatch in zip(allocations, ("/", "\\")):
        bx.add_patch(Rectangle((col, 0), ncols, tmem.LANES, fill=False, hatch=hatch, ec="tab:red", lw=1.5))
        bx.text(col + ncols / 2, tmem.LANES / 2, f"{label}\nalloc({ncols})\n→ column {col}", ha="center",
                va="center", fontsize=9, color="tab:red", bbox={"fc": "white", "ec": "none"})
    bx.set_xlim(0, tmem.COLUMNS)
    bx.set_ylim(tmem.LANES, 0)
    bx.set_xticks(range(0, tmem.COLUMNS + 1, 128))
    bx.set_yticks(range(0, tmem.LANES + 1, 32))
    bx.set_xlabel("TMEM column (32 bits: one fp32 per lane)")
    bx.set_ylabel("TMEM lane = row of D")
    bx.set_title(f"Blackwell: one SM's Tensor Memory, {tmem.LANES} lanes × {tmem.COLUMNS} columns", fontsize=10.5)
    bx.legend(handles=[Patch(fill=False, hatch="/", ec="tab:red", label="an allocation: whole columns, all 128 lanes")],
              fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    return fig
