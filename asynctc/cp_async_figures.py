"""Chapter 02's figure (matplotlib; model output in, figure out — never measures): the cp.async
commit-group timeline of :mod:`asynctc.cp_async_ring`, one panel per ``wait_group N``."""

from __future__ import annotations

from .cp_async_ring import Step

#: A copy bar's fill: tab:blue at 40 % (opaque, so its outline stays dark).
COPY = (0.6196, 0.7686, 0.8745)


def plot_group_timeline(runs: dict[str, list[Step]], stages: int):
    """One panel per entry of ``runs`` ({title: :func:`asynctc.cp_async_ring.run` output}, all with
    ``stages`` stages), time in clocks across. Upper rows: the copies in flight, one row per slot
    (stage), a bar from a group's commit to its landing, outlined, so that a copy issued the moment
    the slot's previous copy lands (``wait_group S − 1``) shows as two bars that touch. Bottom row: the consumer, a bar per k-tile's
    compute (green: read after its copies landed; red: read before); hatched: waiting in
    ``wait_group``; a black tick at each k-tile's landing, the line its compute may not start
    before. Returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    fig, axes = plt.subplots(len(runs), 1, figsize=(9, 0.42 * (stages + 1) * len(runs) + 1.0),
                             sharex=True, squeeze=False)
    end = max(s.end for steps in runs.values() for s in steps)
    for ax, (title, steps) in zip(axes[:, 0], runs.items()):
        for s in steps:                                     # copies: slot rows, top to bottom
            y = stages - s.slot
            ax.barh(y, s.landed - s.issued, left=s.issued, height=0.7, color=COPY, edgecolor="0.2", lw=0.8)
            ax.text(s.issued + 20, y, f"k{s.kt}", va="center", fontsize=7)
            ax.plot([s.landed, s.landed], [-0.32, 0.32], color="k", lw=1.0)  # the line to wait for
        for s in steps:                                     # the consumer
            if s.start > s.wait_from:
                ax.barh(0, s.start - s.wait_from, left=s.wait_from, height=0.6, color="none",
                        edgecolor="0.5", hatch="///", lw=0)
            ax.barh(0, s.end - s.start, left=s.start, height=0.6,
                    color="tab:red" if s.stale else "tab:green", edgecolor="k", lw=0.5)
            ax.text((s.start + s.end) / 2, 0, f"k{s.kt}", ha="center", va="center", fontsize=7)
        ax.set_yticks([0] + [stages - i for i in range(stages)],
                      ["compute"] + [f"slot {i} copies" for i in range(stages)], fontsize=8)
        ax.set_ylim(-0.5, stages + 0.5)
        ax.set_title(title, fontsize=9, loc="left")
        ax.set_xlim(0, end * 1.02)
    axes[-1, 0].set_xlabel("time (clocks)")
    fig.legend(handles=[Patch(facecolor=COPY, edgecolor="0.2", label="a group in flight (commit → land)"),
                        Patch(color="tab:green", label="read after its copies landed"),
                        Patch(color="tab:red", label="read before they landed"),
                        Patch(facecolor="none", edgecolor="0.5", hatch="///", label="waiting in wait_group")],
               fontsize=8, loc="lower center", ncol=4, frameon=False)
    fig.suptitle(f"cp.async groups, {stages} stages: a model (black tick: when a k-tile lands)", fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig
