"""Chapter 10's figure: each claim's range beside the course's number — fractions of peak under
both denominators on the left, ratios on the right (our number and, for an anchor, theirs).

Figure code never measures: it draws evaluated claims (:func:`asynctc.claims.seed.evaluate`,
:func:`asynctc.claims.anchors.evaluate`), which read records.
"""

from __future__ import annotations

import textwrap

from .report import percent_rows
from .verdicts import BLACKWELL, DATASHEET, FAILS, HOLDS, MATCHES

_COLOR = {HOLDS: "tab:green", MATCHES: "tab:green", FAILS: "tab:red"}
_BAND = "#d9d9d9"


def _label(text: str, chapter: str, width: int = 58) -> str:
    return f"{textwrap.shorten(text, width, placeholder='…')} (ch {chapter})"


def _band(ax, y, low, high, xmax, tol=0.0):
    """The claim's range as a grey bar (an open end runs to the axis edge, hatched)."""
    if low is None and high is None:
        return
    lo = (low if low is not None else 0.0) - tol
    hi = (high if high is not None else xmax) + tol
    ax.barh(y, hi - lo, left=lo, height=0.6, color=_BAND, edgecolor="none",
            hatch="//" if high is None or low is None else None, zorder=1)


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


def claims_figure(claims, anchors=(), title: str = ""):
    """Both panels in one figure; returns it. ``title``: where the records come from."""
    import matplotlib.pyplot as plt
    claims, anchors = list(claims), list(anchors)
    fr, rr = fraction_rows(claims, anchors), ratio_parts(claims, anchors)
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(12, 0.3 * (len(fr) + len(rr)) + 2.6),
                                   layout="constrained",
                                   gridspec_kw={"height_ratios": [len(fr) + 1, len(rr) + 1]})
    for i, r in enumerate(fr):
        y = len(fr) - 1 - i
        lo, hi = r["band"] or (None, None)
        _band(ax1, y, lo, hi, 1.0, 0.005 if lo is not None and lo == hi else 0.0)
        if r["theirs"] is not None:
            ax1.plot(r["theirs"], y, "kx", ms=9, zorder=3)
        if r["datasheet"] is None and r["measured"] is None:
            word = "cannot be measured here — Blackwell" if r.get("verdict_measured") == BLACKWELL \
                else "not measured here"
            ax1.text(0.5, y, word, va="center", ha="center", fontsize=8, style="italic")
        if r["datasheet"] is not None:
            ax1.plot(r["datasheet"], y, "o", color="tab:blue", ms=7, zorder=4)
        if r["measured"] is not None:
            ax1.plot(r["measured"], y, "^", color="tab:orange", ms=8, zorder=4)
            ax1.annotate(r["clock"] or "", (r["measured"], y), xytext=(6, 4),
                         textcoords="offset points", fontsize=7, color="tab:orange")
    ax1.set_yticks(range(len(fr)), [_label(r["what"], r["chapter"]) for r in fr][::-1], fontsize=8)
    ax1.set_xlim(0, 1.0)
    ax1.set_xlabel("fraction of the Tensor Core peak")
    ax1.set_title("Fractions of peak — ● datasheet, ▲ SMs × FLOP/clk/SM × the measured clock "
                  "(its kind beside it);\ngrey: the claim's band; ✕: an anchor's number", fontsize=9)
    xmax = max([2.6] + [p.value * 1.1 for _, p in rr if p.value is not None]
               + [p.theirs * 1.1 for _, p in rr if p.theirs is not None])
    for i, (ch, p) in enumerate(rr):
        y = len(rr) - 1 - i
        lo, hi = p.band or (None, None)
        if p.theirs is None:
            _band(ax2, y, lo, hi, xmax)
        else:
            ax2.plot(p.theirs, y, "kx", ms=9, zorder=3)
        if p.value is None:
            ax2.text(xmax / 2, y, "not measured yet", va="center", ha="center", fontsize=8,
                     style="italic")
            continue
        ax2.plot(p.value, y, "o", color=_COLOR.get(p.verdict, "tab:purple"), ms=7, zorder=4)
    ax2.set_yticks(range(len(rr)), [_label(p.what, ch) for ch, p in rr][::-1], fontsize=8)
    ax2.set_xlim(0, xmax)
    ax2.axvline(1.0, color="k", lw=0.6, ls=":")
    ax2.set_xlabel("ratio (×)")
    ax2.set_title("Ratios — ● ours: green inside the claim's band (or matching the anchor),\nred "
                  "outside it, purple above or below the anchor's ✕", fontsize=9)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig
