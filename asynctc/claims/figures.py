"""Chapter 10's figures: each claim's range beside the course's number — fractions of peak under
both denominators (:func:`fractions_figure`), ratios (:func:`ratios_figure`; our number and, for an
anchor, theirs), or both panels in one (:func:`claims_figure`).

Figure code never measures: it draws evaluated claims (:func:`asynctc.claims.seed.evaluate`,
:func:`asynctc.claims.anchors.evaluate`), which read records.
"""

from __future__ import annotations

import textwrap

from .report import percent_rows
from .verdicts import BLACKWELL, DATASHEET, FAILS, HOLDS, MATCHES

_COLOR = {HOLDS: "tab:green", MATCHES: "tab:green", FAILS: "tab:red"}
_BAND = "#d9d9d9"


#: A label's line width (characters) and most lines; a longer label ends in "…".
LABEL_WIDTH, LABEL_LINES = 48, 3


def _label(text: str, chapter: str, width: int = LABEL_WIDTH) -> str:
    """``text (ch NN)`` wrapped at ``width`` characters, never more than :data:`LABEL_LINES` lines."""
    return textwrap.fill(f"{text} (ch {chapter})", width, max_lines=LABEL_LINES, placeholder=" …")


def _rows_y(labels) -> tuple[list[float], float]:
    """The y of each row, top row first, and the height of them all: one unit a row, half a unit
    more per extra label line (so that a three-line label does not run into its neighbours)."""
    ys, y = [], 0.0
    for label in reversed(labels):
        step = 1 + 0.5 * label.count("\n")
        ys.append(y + step / 2)
        y += step
    return ys[::-1], y


def _open(low, high) -> bool:
    return (low is None) != (high is None)


def _band(ax, y, low, high, xmax, tol=0.0):
    """The claim's range as a grey bar; a range open at one end ("≥ 1.5", "≤ 10") runs to the
    axis edge and is hatched."""
    if low is None and high is None:
        return
    lo = (low if low is not None else 0.0) - tol
    hi = (high if high is not None else xmax) + tol
    ax.barh(y, hi - lo, left=lo, height=0.6, color=_BAND, edgecolor="none",
            hatch="//" if _open(low, high) else None, zorder=1)


def _legend(ax, bands) -> None:
    """The legend beside ``ax``: its markers, then the grey band — and the hatched one when one of
    ``bands`` is open at one end."""
    from matplotlib.patches import Patch
    handles = ax.get_legend_handles_labels()[0] + [Patch(color=_BAND, label="the claim's band")]
    if any(_open(*b) for b in bands if b):
        handles.append(Patch(facecolor=_BAND, edgecolor="none", hatch="//",
                             label="the claim's band, open at one end\n(≥ or ≤: runs to the edge)"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
              frameon=False)


def fraction_rows(claims, anchors=()) -> list[dict]:
    """The rows of the left panel: :func:`~asynctc.claims.report.percent_rows` of the seed claims,
    then every fraction-of-peak part of the anchors (``theirs`` set)."""
    rows = [{**r, "chapter": next(c.chapter for c in claims if c.key == r["key"]), "theirs": None}
            for r in percent_rows(claims)]
    for a in anchors:
        by: dict = {}
        for p in a.parts:
            if p.unit != "fraction of peak" or p.value is None:
                continue
            what = p.what.replace(" (datasheet)", "").replace(" (at the measured clock)", "")
            r = by.setdefault(what, {"key": a.key, "what": what, "chapter": a.chapter,
                                     "band": None, "datasheet": None, "measured": None,
                                     "clock": p.clock, "theirs": p.theirs})
            r["datasheet" if p.denominator == DATASHEET else "measured"] = p.value
        rows += list(by.values())
    return rows


def ratio_parts(claims, anchors=()) -> list[tuple]:
    """The rows of the right panel: ``(chapter, part)`` for every "×" part, measured or not."""
    return [(c.chapter, p) for c in list(claims) + list(anchors) for p in c.parts if p.unit == "×"]


def _fraction_label(r, claims) -> str:
    from .report import SHORT
    if r["theirs"] is None and r["key"] in SHORT and sum(x["key"] == r["key"] for x in
                                                         fraction_rows(claims)) == 1:
        return f"{SHORT[r['key']]} (ch {r['chapter']})"
    return _label(r["what"], r["chapter"])


def draw_fractions(ax, claims, anchors=()) -> None:
    """The fractions of peak on ``ax``: per row the claim's band (grey), ● ours under the datasheet,
    ▲ at the measured clock (its kind written beside it only where it is not the usual one), ✕ an
    anchor's own number."""
    claims, anchors = list(claims), list(anchors)
    fr = fraction_rows(claims, anchors)
    kinds = [r["clock"] for r in fr if r["clock"]]
    usual = max(set(kinds), key=kinds.count) if kinds else None
    labels = [_fraction_label(r, claims) for r in fr]
    ys, top = _rows_y(labels)
    for r, y in zip(fr, ys):
        lo, hi = r["band"] or (None, None)
        _band(ax, y, lo, hi, 1.0, 0.005 if lo is not None and lo == hi else 0.0)
        if r["theirs"] is not None:
            ax.plot(r["theirs"], y, "kx", ms=9, zorder=3)
        if r["datasheet"] is None and r["measured"] is None:
            word = "Blackwell: not measurable here" if r.get("verdict_measured") == BLACKWELL \
                else "not measured here"
            ax.text(0.5, y, word, va="center", ha="center", fontsize=8, style="italic")
        if r["datasheet"] is not None:
            ax.plot(r["datasheet"], y, "o", color="tab:blue", ms=7, zorder=4)
        if r["measured"] is not None:
            ax.plot(r["measured"], y, "^", color="tab:orange", ms=8, zorder=4)
            if r["clock"] and r["clock"] != usual:
                ax.annotate(r["clock"], (r["measured"], y), xytext=(6, 4),
                            textcoords="offset points", fontsize=7, color="tab:orange")
    ax.set_yticks(ys, labels, fontsize=8)
    ax.set_xlim(0, 1.0)
    ax.set_ylim(0, max(top, 1))
    ax.set_xlabel("fraction of the Tensor Core peak")
    ax.plot([], [], "o", color="tab:blue", label="ours, datasheet peak")
    ax.plot([], [], "^", color="tab:orange", label=f"ours, at the measured clock ({usual or '—'})")
    if any(r["theirs"] is not None for r in fr):
        ax.plot([], [], "kx", label="an anchor's number")
    _legend(ax, [r["band"] for r in fr])
    ax.set_title("Fractions of peak", fontsize=9)


def draw_ratios(ax, claims, anchors=()) -> None:
    """The ratios on ``ax``: per "×" part the claim's band (grey) or the anchor's ✕, and ● ours —
    green inside the band (or matching the anchor), red outside, purple above or below the ✕."""
    rr = ratio_parts(list(claims), list(anchors))
    xmax = max([2.6] + [p.value * 1.1 for _, p in rr if p.value is not None]
               + [p.theirs * 1.1 for _, p in rr if p.theirs is not None])
    labels = [_label(p.what, ch) for ch, p in rr]
    ys, top = _rows_y(labels)
    for (ch, p), y in zip(rr, ys):
        lo, hi = p.band or (None, None)
        if p.theirs is None:
            _band(ax, y, lo, hi, xmax)
        else:
            ax.plot(p.theirs, y, "kx", ms=9, zorder=3)
        if p.value is None:
            ax.text(xmax / 2, y, "not measured yet", va="center", ha="center", fontsize=8,
                    style="italic")
            continue
        ax.plot(p.value, y, "o", color=_COLOR.get(p.verdict, "tab:purple"), ms=7, zorder=4)
    ax.set_yticks(ys, labels, fontsize=8)
    ax.set_xlim(0, xmax)
    ax.set_ylim(0, max(top, 1))
    ax.axvline(1.0, color="k", lw=0.6, ls=":")
    ax.set_xlabel("ratio (×)")
    for color, word in (("tab:green", "inside the band / matches"), ("tab:red", "outside the band"),
                        ("tab:purple", "above or below the anchor")):
        ax.plot([], [], "o", color=color, label=word)
    if any(p.theirs is not None for _, p in rr):
        ax.plot([], [], "kx", label="an anchor's number")
    _legend(ax, [p.band for _, p in rr if p.theirs is None])
    ax.set_title("Ratios", fontsize=9)


def _row_inches(labels) -> float:
    """Height of a panel's rows: 0.3 inch a row, 0.15 more per extra line of its label (as
    :func:`_rows_y` spaces them)."""
    return sum(0.3 + 0.15 * label.count("\n") for label in labels)


def _labels(ax) -> list[str]:
    return [t.get_text() for t in ax.get_yticklabels()]


def _one_panel(draw, rows, claims, anchors, title: str):
    import matplotlib.pyplot as plt
    claims, anchors = list(claims), list(anchors)
    fig, ax = plt.subplots(figsize=(11, 0.32 * len(rows(claims, anchors)) + 1.6), layout="constrained")
    draw(ax, claims, anchors)
    fig.set_size_inches(11, _row_inches(_labels(ax)) + 1.6)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


def fractions_figure(claims, anchors=(), title: str = ""):
    """:func:`draw_fractions` alone in a figure; returns it."""
    return _one_panel(draw_fractions, fraction_rows, claims, anchors, title)


def ratios_figure(claims, anchors=(), title: str = ""):
    """:func:`draw_ratios` alone in a figure; returns it."""
    return _one_panel(draw_ratios, ratio_parts, claims, anchors, title)


def claims_figure(claims, anchors=(), title: str = ""):
    """Both panels in one figure (:func:`draw_fractions` above :func:`draw_ratios`); returns it.
    ``title``: where the records come from. The notebook shows them as two figures."""
    import matplotlib.pyplot as plt
    claims, anchors = list(claims), list(anchors)
    fr, rr = fraction_rows(claims, anchors), ratio_parts(claims, anchors)
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(12, 0.3 * (len(fr) + len(rr)) + 2.6),
                                   layout="constrained",
                                   gridspec_kw={"height_ratios": [len(fr) + 1, len(rr) + 1]})
    draw_fractions(ax1, claims, anchors)
    draw_ratios(ax2, claims, anchors)
    fig.set_size_inches(12, _row_inches(_labels(ax1) + _labels(ax2)) + 2.6)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


def bound_figure(pairs: list[dict], value: float | None = None, digits: int | None = None,
                 above: float | None = 1.0, title: str = ""):
    """Chapter 10 §2's bound drawn: one row per same-run pair (:func:`asynctc.claims.bounds.same_run_pairs`),
    its ratio (cuBLAS time over ours) as a dot with the reps' p10–p90 spread as a bar, the interval
    from the lowest to the highest ratio shaded, a value claim's reading (``value`` written with
    ``digits`` decimals: ± half its last digit) as a hatched band, an order claim's threshold
    (``above``) as a line, and the cross-run extremes (a baseline from another run) as open marks."""
    import matplotlib.pyplot as plt

    from .bounds import bound, cross_run_extremes, reading, rep_interval
    ratios = [p["ratio"] for p in pairs]
    _med, lo, hi = bound(ratios)
    fig, ax = plt.subplots(figsize=(7.5, 0.35 * len(pairs) + 1.6))
    ys = list(range(len(pairs)))[::-1]
    ax.axvspan(lo, hi, color=_BAND, label=f"the bound [{lo:.4f}, {hi:.4f}]")
    if value is not None:
        low, high = reading(value, digits)
        ax.axvspan(low, high, fill=False, hatch="//", edgecolor="tab:green",
                   label=f'"{value:.{digits}f}" reads {low:.{digits + 1}f}–{high:.{digits + 1}f}')
    if above is not None:
        ax.axvline(above, color="tab:red", lw=1, label=f'"beats cuBLAS": above {above:g}')
    for y, p, r in zip(ys, pairs, ratios):
        a, b = rep_interval(p)
        ax.plot([a, b], [y, y], color="0.4", lw=1)
        ax.plot([r], [y], "o", color="black", ms=4)
    x_lo, x_hi = cross_run_extremes(pairs)
    ax.plot([x_lo, x_hi], [-1, -1], "o", mfc="none", color="tab:purple",
            label=f"paired across runs: {x_lo:.3f}–{x_hi:.3f}")
    ax.set_yticks(ys + [-1])
    ax.set_yticklabels([f"{p['suite']}, round {p['round']}" for p in pairs] + ["another run's baseline"],
                       fontsize=8)
    ax.set_xlabel("cuBLAS time / ours (above 1: ours is faster); bars: the reps' p10–p90")
    ax.set_title(title or "The claim against its bound", fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig
