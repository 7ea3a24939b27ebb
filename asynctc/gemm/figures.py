"""The GEMM's figure: ``asynctc.matmul`` as a fraction of ``torch.matmul`` by shape, from a
``matmul_host`` record — kernel time and back-to-back calls, with each class's goal
(:data:`~asynctc.gemm.goals.GOALS`) drawn. Reads a record; never measures.
"""

from __future__ import annotations

from .goals import GOALS, row_label

#: Drawing order of the shape classes.
CLASSES = ("cube", "thin", "decode", "nonsquare", "unaligned")


def ordered_rows(rows: list[dict]) -> list[dict]:
    """The record's rows grouped by class (:data:`CLASSES` order), then by M·N·K."""
    rank = {c: i for i, c in enumerate(CLASSES)}
    return sorted(rows, key=lambda r: (rank.get(r["class"], len(CLASSES)), r["m"] * r["n"] * r["k"],
                                       r["dtype"], r["b_storage"]))


def plot_matmul_ratios(rows: list[dict], ax=None, log_top: float = 2.0):
    """Two markers per row — kernel time and end to end, each ``torch / ours`` (above 1: ours
    faster) — grouped by shape class, with every kernel-time goal of the class as a short line.
    Unaligned rows, where cuBLAS leaves its TMA path, can reach several ×: the axis is clipped at
    ``log_top`` and those points are drawn at the top with their value. Returns the axes."""
    import matplotlib.pyplot as plt

    rows = ordered_rows(rows)
    if ax is None:
        _, ax = plt.subplots(figsize=(11, 3.6))
    xs = range(len(rows))
    for key, mark, lab in (("kernel_of_torch", "o", "kernel time"),
                           ("e2e_of_torch", "x", "back-to-back calls (end to end)")):
        ys = [min(r[key], log_top) for r in rows]
        ax.plot(xs, ys, mark, ms=4, label=lab)
        run: list = []                      # consecutive clipped points: one label per run
        for x, r in list(zip(xs, rows)) + [(None, None)]:
            if r is not None and r[key] > log_top:
                run.append((x, r[key]))
                continue
            if run:
                lo, hi = min(v for _x, v in run), max(v for _x, v in run)
                text = f"{hi:.1f}×" if f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f}–{hi:.1f}×"
                ax.annotate(text, ((run[0][0] + run[-1][0]) / 2, log_top), fontsize=6,
                            ha="center", va="bottom")
                run = []
    ax.axhline(1.0, color="grey", lw=0.6)
    start = 0
    for cls in dict.fromkeys(r["class"] for r in rows):
        n = sum(r["class"] == cls for r in rows)
        for g in GOALS:
            if g.quantity == "kernel_of_torch" and any(g.rows(r) for r in rows[start:start + n]):
                idx = [i for i in range(start, start + n) if g.rows(rows[i])]
                ax.hlines(g.bound, idx[0] - 0.4, idx[-1] + 0.4, colors="C3", lw=1.2)
        ax.text(start + n / 2 - 0.5, 0.02, cls, transform=ax.get_xaxis_transform(),
                ha="center", fontsize=8)
        if start:
            ax.axvline(start - 0.5, color="grey", lw=0.4, ls=":")
        start += n
    ax.set_xticks([])
    ax.set_ylim(0, log_top * 1.08)
    ax.set_ylabel("torch.matmul time / ours")
    ax.set_title("asynctc.matmul by shape (red: the goal of the class, kernel time)",
                 fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    return ax


def worst_rows(rows: list[dict], n: int = 3, key: str = "kernel_of_torch") -> list[str]:
    """The ``n`` rows of lowest ``key``, as ``'label: value'`` strings (for a sentence under the
    figure)."""
    return [f"{row_label(r)}: {r[key]:.2f}" for r in sorted(rows, key=lambda r: r[key])[:n]]
