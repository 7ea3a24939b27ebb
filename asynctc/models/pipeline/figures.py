"""Chapter 05's model figures (matplotlib; data in, figure out — never measures): the ring of
stages with its barriers and the parity each wait names (:func:`plot_ring`), a schedule's
timeline (:func:`plot_timeline`) and the depth sweep, predicted against measured
(:func:`plot_depth_sweep`)."""

from __future__ import annotations

from typing import Iterable, Sequence

from ..lanes import lane_name
from .ring import Span, kernel_empty_parity, kernel_full_parity


#: Opacity of a span kind's bars in :func:`plot_timeline` (its legend swatch has the same).
_ALPHA = {"tma": 0.8, "wait_full": 0.5, "wait_empty": 0.5, "release": 1.0}

_STYLE = {  # kind: (colour, legend label)
    "tma": ("tab:orange", "TMA in flight"),
    "mma": ("tab:blue", "wgmma in flight (math)"),
    "wait_full": ("tab:red", "waiting on full"),
    "wait_empty": ("tab:purple", "waiting on empty"),
    "release": ("black", "arrive on empty"),
    "epilogue": ("tab:gray", "epilogue"),
}


def ring_parities(stages: int, k_tiles: int) -> dict[str, list[int]]:
    """For k-tiles 0 … k_tiles − 1 of a ring of ``stages`` stages: the stage each uses, the parity a
    consumer waits on full[stage] for it, and the parity the producer waits on empty[stage] before
    loading it (parity 1 on the first pass: a fresh barrier's "preceding phase")."""
    ks = range(k_tiles)
    return {"stage": [k % stages for k in ks], "full": [kernel_full_parity(k, stages) for k in ks],
            "empty": [kernel_empty_parity(k, stages) for k in ks]}


def plot_ring(stages: int = 4, k_tiles: int = 12, tile: str = "A 128×64\nB 256×64",
              hide_pending: bool = False, parities: bool = True):
    """The ring drawn: ``stages`` shared-memory stages with their full and empty mbarriers, who
    arrives and who waits (left), and the parity each wait names for the first ``k_tiles`` k-tiles
    (right, from :func:`ring_parities`; ``parities=False`` leaves it out, for the exercise that asks
    for them). ``hide_pending=True`` labels the consumers' ``wait_group`` with ``kPending``
    instead of the kernel's 1 (left open for an exercise). Returns the Figure."""
    import matplotlib.pyplot as plt
    if parities:
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.3), dpi=80, layout="constrained",
                                      gridspec_kw={"width_ratios": [1.35, 1]})
    else:
        fig, ax = plt.subplots(figsize=(7, 4.3), dpi=80, layout="constrained")
    for s in range(stages):
        x = 1.2 + 1.6 * s
        ax.add_patch(plt.Rectangle((x, 1.3), 1.2, 1.4, fc="#dde8f5", ec="k"))
        ax.text(x + 0.6, 2.0, f"stage {s}\n{tile}", ha="center", va="center", fontsize=8)
        for y, fc, name in ((3.25, "#f5c6c6", "full"), (0.75, "#d5ecd4", "empty")):
            ax.add_patch(plt.Circle((x + 0.6, y), 0.28, fc=fc, ec="k"))
            ax.text(x + 0.6, y, f"{name}\n[{s}]", ha="center", va="center", fontsize=7)
    ax.text(0.1, 4.45, "producer (thread 0 of warpgroup 0): wait empty[t mod S],\narrive.expect_tx on "
            "full[t mod S], issue TMA; its bytes complete_tx on full", fontsize=8, va="center")
    pending = "kPending" if hide_pending else "1"
    ax.text(0.1, -0.45, "consumer warpgroups (all): wait full[k mod S], wgmma, commit, "
            f"wait_group({pending}),\nthen arrive on empty of k−{pending} (one elected thread per "
            "warpgroup)", fontsize=8, va="center")
    ax.annotate("", xy=(1.8, 3.55), xytext=(1.0, 4.1), arrowprops=dict(arrowstyle="->", color="tab:red"))
    ax.annotate("", xy=(1.8, 0.45), xytext=(1.0, -0.15), arrowprops=dict(arrowstyle="->", color="tab:green"))
    first = ",".join(str(k) for k in range(stages))
    again = ",".join(str(k) for k in range(stages, 2 * stages))
    ax.text(1.2 + 1.6 * stages - 0.15, 2.0, f"k-tiles {first} fill\nstages 0–{stages - 1}, then\n"
            f"{again} reuse them:\nstage = k mod S", fontsize=8, va="center")
    ax.set_xlim(0, 1.6 * stages + 2.6)
    ax.set_ylim(-0.9, 4.8)
    ax.axis("off")
    ax.set_title(f"A ring of S = {stages} stages, two mbarriers each", fontsize=10)
    if parities:
        _draw_parities(ax2, stages, k_tiles)
    return fig


def _draw_parities(ax2, stages: int = 4, k_tiles: int = 12) -> None:
    """Draw on ``ax2`` the parity each wait names for k-tiles 0 … k_tiles − 1 of a ring of
    ``stages`` stages (:func:`ring_parities`): the consumers' on full, the producer's on empty."""
    import numpy as np
    par = ring_parities(stages, k_tiles)
    grid = np.array([par["full"], par["empty"]])
    ax2.imshow(grid, cmap="Pastel1", aspect="auto", vmin=0, vmax=8)
    for (r, c), v in np.ndenumerate(grid):
        ax2.text(c, r, str(v), ha="center", va="center", fontsize=9)
    ax2.set_xticks(range(k_tiles), [f"{k}\ns{s}" for k, s in enumerate(par["stage"])], fontsize=8)
    ax2.set_yticks([0, 1], ["consumer: full\nparity (k/S) mod 2", "producer: empty\nparity (t/S+1) mod 2"],
                   fontsize=8)
    ax2.set_xlabel("k-tile (and its stage)")
    ax2.set_title(f"The parity each wait names, S = {stages}", fontsize=10)


def plot_timeline(spans: Iterable, title: str = "Pipeline timeline", ax=None,
                  clock_mhz: float | None = None, record=None):
    """Gantt chart: one row per lane (tma, producer, wg0, wg1, ...), one bar per span. TMA copies
    in flight overlap, so the tma row is split into one sub-row per stage; in the other rows waits
    are drawn in the lower half and work (wgmma in flight, epilogue) in the upper half, because a
    warpgroup waits on the next stage while its wgmma still runs. ``spans``: :class:`Span`
    or plain 6-tuples (lane, kind, k, stage, start, end) in SM cycles, e.g. from the GPU trace.
    ``clock_mhz``: label the x axis in µs at that clock instead of cycles. ``record``: its label
    goes into the title. The prologue's loads (k-tiles below the stage count) wait on nothing in
    the kernel; no zero-length wait is drawn (a hairline would read as a wait). Returns the Figure."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    spans = [Span._make(s) for s in spans]
    lanes = sorted({s.lane for s in spans},
                   key=lambda x: ({"tma": 0, "producer": 1}.get(x, 2), len(x), x))
    nstage = max([s.stage + 1 for s in spans if s.kind == "tma"] + [1])
    scale = 1.0 / clock_mhz if clock_mhz else 1.0
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 0.6 + 0.55 * len(lanes)), dpi=80, layout="constrained")
    fig = ax.figure
    for i, lane in enumerate(lanes):
        y = len(lanes) - 1 - i
        for s in (s for s in spans if s.lane == lane):
            if s.kind.startswith("wait") and s.end <= s.start:
                continue                               # a wait that returned at once (the prologue's loads
                                                       # among them): no bar; a hairline would read as a wait
            colour = _STYLE.get(s.kind, ("tab:olive", s.kind))[0]
            x0, w = s.start * scale, (s.end - s.start) * scale
            if s.kind == "release":
                ax.plot([x0, x0], [y - 0.4, y + 0.4], color=colour, lw=0.8)
            elif s.kind == "tma":
                h = 0.8 / nstage
                ax.broken_barh([(x0, w)], (y - 0.4 + max(s.stage, 0) * h, h * 0.9), color=colour, alpha=_ALPHA["tma"])
            elif s.kind.startswith("wait"):           # waits in the lower half of the row...
                ax.broken_barh([(x0, w)], (y - 0.4, 0.38), color=colour, alpha=_ALPHA.get(s.kind, 0.5))
            else:                                      # ...work in the upper half (they overlap in time)
                ax.broken_barh([(x0, w)], (y + 0.02, 0.38), color=colour, alpha=_ALPHA.get(s.kind, 0.9))
    kinds = [k for k in _STYLE if any(s.kind == k for s in spans)]
    ax.legend(handles=[Patch(color=_STYLE[k][0], alpha=_ALPHA.get(k, 0.9), label=_STYLE[k][1]) for k in kinds],
              fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_yticks(range(len(lanes)), [lane_name(x) for x in lanes[::-1]], fontsize=8)
    ax.set_ylim(-0.6, len(lanes) - 0.4)
    ax.set_xlabel(f"time (µs at {clock_mhz:.0f} MHz)" if clock_mhz else "time (SM cycles)")
    ax.set_title(f"{title}\n{record.label()}" if record is not None else title, fontsize=10)
    return fig


def plot_depth_sweep(predicted: Sequence[dict], measured=None, title: str = "Throughput against stages",
                     record=None):
    """Predicted TFLOP/s against stages (rows of :func:`predict_depth_sweep`; stages that do not fit
    in shared memory drawn hollow) and, optionally, ``measured``: {stages: TFLOP/s} or rows with
    "stages" and "tflops" (labelled with ``record`` when given). Returns the Figure."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4), dpi=80, layout="constrained")
    xs = [r["stages"] for r in predicted]
    ax.plot(xs, [r["tflops"] for r in predicted], color="tab:blue", ls="--", label="model (predicted)")
    for r in predicted:
        ax.plot([r["stages"]], [r["tflops"]], "o", color="tab:blue",
                mfc="tab:blue" if r["fits"] else "white")
    if any(not r["fits"] for r in predicted):
        ax.plot([], [], "o", color="tab:blue", mfc="white",
                label="does not fit: over 227 KiB per CTA (opt-in limit; the SM has 228 KiB)")
    if measured:
        pts = sorted(measured.items()) if isinstance(measured, dict) else sorted(
            (r["stages"], r["tflops"]) for r in measured)
        ax.plot(*zip(*pts), "s-", color="tab:green", label="measured on the GPU")
    ax.set_xticks(xs)
    ax.set_xlabel("stages S")
    ax.set_ylabel("TFLOP/s")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(title + (f"\nmeasured points: {record.label()}" if measured and record is not None else ""),
                 fontsize=10)
    return fig


