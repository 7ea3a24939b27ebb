"""matplotlib figures shared by the chapters: roofline, throughput by size, ladders, bank maps.

Every function takes data (never measures) and an optional ``record`` whose :meth:`label` goes into
the title, so a replayed figure says where and when it was measured. Functions return the
:class:`matplotlib.figure.Figure`.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np


def _fig(w: float = 7.0, h: float = 4.0):
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(w, h), dpi=80, layout="constrained")
    return fig, ax


def _title(ax, title: str, record=None) -> None:
    if record is not None:
        title = f"{title}\n{record.label()}"
    ax.set_title(title, fontsize=10)


def roofline(peak_tflops: float, bandwidth_gbs: float, points: Sequence[tuple[str, float, float]] = (),
             measured_ceiling: float | None = None, record=None, title: str = "Roofline",
             marks: Sequence[tuple[str, float]] = ()):
    """Roofline: attainable TFLOP/s = min(peak, intensity × bandwidth), log-log.

    ``points``: (label, arithmetic intensity in FLOP/byte, achieved or attainable TFLOP/s), with an
    optional fourth element ``"computed"`` for a point that is a model, not a measurement (drawn
    as an open marker).
    ``measured_ceiling``: a horizontal line for the best measured GEMM (TFLOP/s).
    ``marks``: (label, arithmetic intensity) pairs marked as grey ticks on the roof, labelled on a
    top axis (an exercise's sizes: where they sit, not which side is the answer).
    """
    fig, ax = _fig(7, 5.2)                 # taller: the legend sits below the axes
    bw_tflops = bandwidth_gbs * 1e9 / 1e12
    xs_all = [p[1] for p in points] + [x for _, x in marks] + [peak_tflops / bw_tflops]
    ai = np.logspace(np.log10(min(xs_all) / 3), np.log10(max(xs_all) * 3), 200)   # only where the points are
    ax.loglog(ai, np.minimum(peak_tflops, ai * bw_tflops), color="k", lw=2,
              label=f"peak {peak_tflops:.0f} TFLOP/s, {bandwidth_gbs / 1000:.2f} TB/s")
    ridge = peak_tflops / bw_tflops
    ax.axvline(ridge, color="grey", ls=":", lw=1)
    ax.text(ridge / 1.25, peak_tflops * 0.12, f"ridge {ridge:.0f} FLOP/B", fontsize=9, color="grey",
            ha="right")                    # left of the line, clear of the ticks
    if measured_ceiling:
        ax.axhline(measured_ceiling, color="tab:green", ls="--", lw=1,
                   label=f"best measured GEMM {measured_ceiling:.0f} TFLOP/s")
    for label, x, y, *kind in points:      # named in the legend: labels beside close points collide
        computed = bool(kind) and kind[0] == "computed"
        ax.plot([x], [y], "o", ms=6, mfc="none" if computed else None, ls="none", label=label)
    if marks:                              # ticks on the roof, labelled on a top axis: no overlap
        xs = [x for _, x in marks]
        ax.plot(xs, [min(peak_tflops, x * bw_tflops) for x in xs], "|", ms=14, mew=1.5, color="tab:grey")
        top = ax.secondary_xaxis("top")
        top.set_xticks(xs, [label for label, _ in marks], fontsize=7, rotation=90, color="tab:grey")
        top.minorticks_off()
    ax.set_xlabel("arithmetic intensity (FLOP / byte of DRAM traffic)")
    ax.set_ylabel("TFLOP/s")
    ax.set_xlim(ai[0], ai[-1])
    fig.legend(fontsize=10, loc="outside lower center", ncols=2)   # readers 110-111: 8 pt was too small
    _title(ax, title, record)
    return fig


def throughput_by_size(series: dict[str, tuple[Sequence[int], Sequence[float]]],
                       peak: float | None = None, peak_label: str = "peak", record=None,
                       title: str = "Throughput by size", ylabel: str = "TFLOP/s",
                       xlabel: str = "M = N = K", ceilings: Sequence[tuple[float, str]] = (),
                       styles: dict[str, dict] | None = None):
    """Lines of throughput against problem size, one per kernel; optional horizontal peak line and
    further horizontal ``ceilings`` (value, label), dotted. The legend sits below the axes.
    ``styles``: per-series matplotlib keyword arguments (series name → e.g. ``{"mfc": "none"}``)
    that override the default marker and line style, so two series with equal values stay
    distinguishable."""
    fig, ax = _fig(7, 4.8)
    default_styles = [("o", "-"), ("s", "--"), ("^", "-."), ("D", ":"), ("v", "-"), ("P", "--")]
    for i, (name, (xs, ys)) in enumerate(series.items()):
        marker, ls = default_styles[i % len(default_styles)]
        ax.plot(xs, ys, **{"marker": marker, "ls": ls, "label": name, **(styles or {}).get(name, {})})
    if peak:
        ax.axhline(peak, color="k", ls="--", lw=1, label=f"{peak_label} {peak:.0f}")
    for (value, label), colour in zip(ceilings, ("tab:red", "tab:purple", "tab:brown")):
        ax.axhline(value, color=colour, ls=":", lw=1.5, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(next(iter(series.values()))[0]))
    ax.get_xaxis().set_major_formatter(__import__("matplotlib").ticker.ScalarFormatter())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    fig.legend(fontsize=9, loc="outside lower center", ncols=2)   # below the axes: never over the data
    _title(ax, title, record)
    return fig


def ladder(labels: Sequence[str], values: Sequence[float], baseline: float | None = None,
           baseline_label: str = "cuBLAS", record=None, title: str = "Ladder",
           unit: str = "TFLOP/s", start: float = 0.0,
           predicted: Sequence[tuple[float, float] | None] | None = None,
           predicted_label: str = "predicted before the run", width: float = 7.0,
           baseline_legend: str | None = None):
    """Horizontal bars, one per rung, with the ratio to ``baseline`` written on each bar.

    ``start``: where the value axis begins (0 by default; above 0 it zooms on the bars' ends, and
    the axis label says so). ``predicted``: per bar, a (low, high) range drawn as a bracket on the
    bar's upper edge, or None for a bar without a prediction. ``width``: of the figure, in inches.
    ``baseline_legend``: the baseline line's legend text (default: its label, value and unit)."""
    fig, ax = _fig(width, 0.5 + (0.55 if predicted else 0.45) * len(labels))
    y = np.arange(len(labels))[::-1]
    ax.barh(y, values, color="tab:blue")
    top = max(list(values) + [baseline or 0] + [hi for p in predicted or () if p for _lo, hi in [p]])
    span = top - start
    for yi, v in zip(y, values):
        txt = f"{v:.0f} {unit}" + (f"  ({v / baseline:.2f}× {baseline_label})" if baseline else "")
        if v - start >= 0.55 * span:   # long bars carry their label inside, on the bar's colour, over
            ax.text(v, yi, txt + " ", va="center", ha="right", fontsize=8, color="white",  # the
                    zorder=3, bbox=dict(facecolor="tab:blue", edgecolor="none", pad=0.6))  # baseline
        else:
            ax.text(v, yi, " " + txt, va="center", fontsize=8)
    first = True
    for yi, p in zip(y, predicted or ()):
        if p:                          # a bracket on the bar's upper edge, clear of its label
            lo, hi = p
            ax.errorbar([(lo + hi) / 2], [yi + 0.3], xerr=[[(hi - lo) / 2]], fmt="none",
                        ecolor="tab:orange", elinewidth=2.5, capsize=4, capthick=2, zorder=4,
                        label=predicted_label if first else None)
            first = False
    if baseline:
        ax.axvline(baseline, color="k", ls="--", lw=1, zorder=2,
                   label=baseline_legend or f"{baseline_label} {baseline:.0f} {unit}")
    if baseline or any(predicted or ()):
        fig.legend(fontsize=8, loc="outside lower center", ncols=2)  # below the axes: never over a bar
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlabel(unit if not start else f"{unit} (the axis starts at {start:.0f})")
    # room to the right only for labels written outside short bars
    ax.set_xlim(start, start + span * (1.35 if min(values) - start < 0.55 * span else 1.06))
    _title(ax, title, record)
    return fig


def bank_map(banks: np.ndarray, title: str = "Shared-memory banks", row_label: str = "row",
             col_label: str = "16-byte chunk", annotate: bool = True, value_label: str = "bank",
             regs: np.ndarray | None = None, reg_prefix: str = "a"):
    """A grid coloured by bank (0..31) or bank group; ``banks`` is (rows, cols) of ints;
    ``value_label`` names what the colour (and the colour bar) shows. ``regs`` (same shape, ints):
    a second label under each value, ``reg_prefix`` + the int (e.g. a fragment's register a0..a3)."""
    tall = 0.55 if regs is not None else 0.35
    fig, ax = _fig(min(10, 1 + 0.5 * banks.shape[1]), min(9, 1 + tall * banks.shape[0]))
    im = ax.imshow(banks, cmap="tab20" if banks.max() < 20 else "nipy_spectral", aspect="auto")
    if annotate and banks.size <= 512:
        for (r, c), v in np.ndenumerate(banks):
            rgba = im.cmap(im.norm(v))
            light = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2] > 0.5
            text = str(int(v)) if regs is None else f"{int(v)}\n{reg_prefix}{int(regs[r, c])}"
            ax.text(c, r, text, ha="center", va="center", fontsize=7 if regs is None else 6,
                    color="black" if light else "white")
    ax.set_xlabel(col_label)
    ax.set_ylabel(row_label)
    fig.colorbar(im, ax=ax, shrink=0.8, label=value_label)
    ax.xaxis.set_major_locator(__import__("matplotlib").ticker.MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(__import__("matplotlib").ticker.MaxNLocator(integer=True))
    _title(ax, title)
    return fig


def bars(labels: Iterable[str], values: Sequence[float], title: str = "", ylabel: str = "",
         record=None):
    """Plain vertical bars (e.g. instruction-class counts)."""
    fig, ax = _fig()
    labels = list(labels)
    ax.bar(range(len(labels)), values, color="tab:blue")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    _title(ax, title, record)
    return fig
