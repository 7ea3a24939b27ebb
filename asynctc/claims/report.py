"""Chapter 10's and deep dive 10b's tables (the "% of peak" claims under both denominators, the
summary as markdown, every part as text), the verdicts their prose was written for, and the check that stops the notebook when a re-measurement flips one
(:func:`check_written`, which raises :class:`asynctc.core.notebook.ClaimError`).
"""

from __future__ import annotations

import textwrap

from ..core import bench, notebook
from .verdicts import (BLACKWELL, DATASHEET, FAILS, HOLDS, MATCHES, MEASURED_CLOCK, NOT_MEASURED,
                       PARTLY, VERDICTS, Part, combine, distance, near_text)

_H, _F, _N = HOLDS, FAILS, NOT_MEASURED

#: The verdicts of every part of every seed claim that chapter 10's text was written for (H200
#: records of 2026-11-29 … 2026-12-01), in the order of the claim's parts; the claim's own verdict
#: follows from them (:func:`~asynctc.claims.verdicts.combine`). :func:`check_written` raises when
#: the records in hand give another — a part that flips without flipping its claim included.
WRITTEN_FOR = {
    "sync_utilisation": (_H, _H, _N),
    "sync_quarter": (_H, _H, _F),
    "latencies": (_N, _N, _H),
    "sync_vs_wgmma": (_H, _H),
    "tma_vs_manual": (_F, _H, _F, _H, _F, _H, _N),
    "smem_228": (_H,),
    "tile_tens_kb": (_H,),
    "queue_depth": (_H, _F, _H),
    "fp8_speedup": (_H, _H, _H),
    "swizzle_modes": (_H, _F, _H, _F, _F, _F, _F, _F),
    "accumulators": (_H, _H),
    "gemm_mma_sync": (_F, _F),
    "gemm_ws": (_F, _H),
    "gemm_tuned": (_F, _F),
    "gemm_blackwell": (BLACKWELL, BLACKWELL),
    "wait_group": (_H, _H),
    "descriptor_fields": (_H, _H),
}

#: The same for the anchors: each anchor's parts' verdicts, in order.
WRITTEN_FOR_ANCHORS = {
    "gluon_persistent": ("ours below", "ours above", HOLDS),
    "hopper_worklog": ("ours below", MATCHES),
    "luo_mma_sync": (MATCHES, MATCHES),
    "luo_wgmma_n": ("ours above", "ours above", "ours above"),
    "luo_fp8": (MATCHES,),
    "deepgemm": ("ours below", NOT_MEASURED),
}


def _wrap(text: str, width: int, indent: str) -> str:
    return textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent + "  ")


def table_text(claims, width: int = 110, parts: bool = True) -> str:
    """The seed claims as text: per claim its chapter, verdict and statement, then (``parts``)
    each part's verdict, sub-statement and our number."""
    lines = [f"{'ch':3s} {'verdict':14s} statement"]
    for c in claims:
        v = "Blackwell" if c.verdict == BLACKWELL else c.verdict
        lines.append(f"{c.chapter:3s} {v:14s} {c.statement}")
        if parts:
            lines += [_wrap(p.line(), width, "      ") for p in c.parts]
    return "\n".join(lines)


#: Each seed claim in at most eight words, for the figures' labels (:mod:`asynctc.claims.figures`);
#: the full statement is :attr:`~asynctc.claims.verdicts.Claim.statement` (a test keeps every key
#: here).
SHORT = {
    "sync_utilisation": "sync kernels: Tensor Cores 30–50 % busy",
    "sync_quarter": "sync GEMM: 80+ of a 300+ ceiling",
    "latencies": "latencies: global 100s, shared 10s, mma few",
    "sync_vs_wgmma": "wgmma over 1.5× mma.sync",
    "tma_vs_manual": "TMA against manual loads, by box size",
    "smem_228": "228 KB shared memory per SM",
    "tile_tens_kb": "a 128×256 FP16 tile: tens of KB",
    "queue_depth": "queues 2–4 deep, triple beats double",
    "fp8_speedup": "FP8 1.5–2× FP16 with the right layout",
    "swizzle_modes": "128 B swizzle best; modes 10–20 % apart",
    "accumulators": "big-tile accumulators: 100s of registers",
    "gemm_mma_sync": "4096³ mma.sync at ~50 % of peak",
    "gemm_ws": "4096³ wgmma, TMA, warp specialization: 75–80 %",
    "gemm_tuned": "4096³ tuned at 85 % of peak",
    "gemm_blackwell": "4096³ on Blackwell above 90 %",
    "wait_group": "wait_group N: at most N pending",
    "descriptor_fields": "descriptor address fields: 14 bits, >> 4",
}


#: Each seed claim in plain words (at most fifteen), for the summary (:func:`summary_markdown`):
#: written for a reader who has not read the seed article. The full statement is
#: :attr:`~asynctc.claims.verdicts.Claim.statement` (a test keeps every key here).
PLAIN = {
    "sync_utilisation": "Synchronous GEMMs keep the Tensor Cores 30–50 % busy, with memory bandwidth near its limit",
    "sync_quarter": "mma.sync's own ceiling is 300+ TFLOP/s; a GEMM gets about a quarter (80+)",
    "latencies": "Global memory takes 100s of cycles, shared memory 10s, one mma a few",
    "sync_vs_wgmma": "wgmma GEMMs run more than 1.5× as fast as mma.sync GEMMs",
    "tma_vs_manual": "TMA is no faster than manual loads for small boxes, faster for large ones",
    "smem_228": "Hopper has 228 KB of shared memory per SM",
    "tile_tens_kb": "One stage of a 128×256 FP16 tile takes tens of KB",
    "queue_depth": "Rings of 2–4 stages are best: 2 are enough, 3 are better",
    "fp8_speedup": "FP8 runs 1.5–2× as fast as FP16 when the layout is right",
    "swizzle_modes": "The 128-byte swizzle is best (for FP8 maybe 64 or 32); modes differ 10–20 %",
    "accumulators": "A large tile's accumulators take hundreds of registers per thread",
    "gemm_mma_sync": "A 4096³ FP16 GEMM with mma.sync reaches ~50 % of peak",
    "gemm_ws": "… with wgmma, TMA and warp specialization, 75–80 %",
    "gemm_tuned": "… tuned (swizzle, ring depth), 85 %",
    "gemm_blackwell": "… with tcgen05 on Blackwell, above 90 %",
    "wait_group": "wait_group N returns once at most N groups are still pending",
    "descriptor_fields": "wgmma descriptors hold addresses as 14-bit fields of the byte address >> 4",
}

_UNIT = {"fraction of peak": "{:.3f}", "×": "{:.2f}×", "TFLOP/s": "{:.0f} TFLOP/s", "KiB": "{:.0f} KiB",
         "registers": "{:.0f} registers", "cycles": "{:.1f} cycles"}


def _number(p) -> str:
    if p.unit == "checks":
        return "every check passes" if p.value == 1.0 else f"{p.value:.0%} of checks pass"
    if p.unit == "share":
        return f"{p.value:.0%} of cases"
    return _UNIT.get(p.unit, "{:.3g} " + p.unit).format(p.value)


def _v(claim, start: str) -> float:
    """The value of ``claim``'s part whose text starts with ``start`` (KeyError when none is
    measured)."""
    for p in claim.parts:
        if p.what.startswith(start) and p.value is not None:
            return p.value
    raise KeyError(f"{claim.key}: no measured part starting {start!r}")


def _pct(x: float) -> str:
    return f"{x * 100:.1f} %"


#: What we measured, in words, per claim (:func:`our_number`); each reads its parts' values.
_OURS = {
    "sync_quarter": lambda c, v: f"ceiling {v[0]:.0f}, GEMM {v[1]:.0f} TFLOP/s: {v[2]:.2f} of the ceiling",
    "latencies": lambda c, v: f"one mma every {v[2]:.1f} cycles (per SM sub-partition)",
    "sync_vs_wgmma": lambda c, v: f"{v[0]:.2f}× ({v[1]:.2f}× per clock)",
    "tma_vs_manual": lambda c, v: (f"TMA ÷ manual copy, best row width: {_v(c, '1 KiB'):.2f} at "
                                   f"1 KiB, {_v(c, '2 KiB'):.2f} at 2 KiB; worst shape at 16–32 KiB: "
                                   f"{_v(c, 'large boxes (16'):.2f}"),
    "smem_228": lambda c, v: f"{v[0]:.0f} KiB",
    "tile_tens_kb": lambda c, v: f"{v[0]:.0f} KiB",
    "queue_depth": lambda c, v: (f"best at 2–4 stages in {v[0]:.0%} of cases; 2 stages reach "
                                 f"≥ {v[1]:.2f} of the best, 3 ÷ 2 ≥ {v[2]:.2f}"),
    "fp8_speedup": lambda c, v: f"{v[0]:.2f}× at 4096³, {v[1]:.2f}× at 8192³",
    "swizzle_modes": lambda c, v: (f"the next-best mode keeps {v[0]:.2f} (FP16) and {v[4]:.2f} "
                                   "(FP8) of the 128-byte one's speed"),
    "accumulators": lambda c, v: f"{v[0]:.0f} per thread, of a budget of {v[1]:.0f}",
    "wait_group": lambda c, v: "every float64 check passes",
    "descriptor_fields": lambda c, v: "every float64 check passes",
}


def our_number(claim) -> str:
    """What we measured for ``claim``, in words: for a "% of peak" claim its two fractions
    ("33.4 % (34.1 % at its clock)": the datasheet's peak, then the peak at the SM clock measured
    with it); otherwise :data:`_OURS`'s words for it (the first measured part's number when the
    record lacks a part they read); "not measured here" or "needs a Blackwell GPU" when no part
    is measured."""
    done = [p for p in claim.parts if p.measured and p.value is not None]
    if not done:
        return "needs a Blackwell GPU" if claim.verdict == BLACKWELL else "not measured here"
    if claim.percent_of_peak:
        side = {p.denominator: p.value for p in done if p.unit == "fraction of peak"}
        if DATASHEET in side and MEASURED_CLOCK in side:
            return f"{_pct(side[DATASHEET])} ({_pct(side[MEASURED_CLOCK])} at its clock)"
    try:
        return _OURS[claim.key](claim, [p.value for p in claim.parts])
    except (KeyError, IndexError, TypeError):
        return _number(done[0])


def verdict_words(claim) -> str:
    """The claim's verdict, with the count of parts for "partly" (``partly: 2 of 3 hold, 1 not
    measured``)."""
    if claim.verdict == BLACKWELL:
        return "needs Blackwell"
    if claim.verdict != PARTLY:
        return claim.verdict
    held = sum(p.verdict == HOLDS for p in claim.parts)
    unmeasured = sum(not p.measured for p in claim.parts)
    return (f"partly: {held} of {len(claim.parts)} hold"
            + (f", {unmeasured} not measured" if unmeasured else ""))


def summary_markdown(claims) -> str:
    """One row per seed claim, in the seed's order: the claim in plain words (:data:`PLAIN`), the
    chapter that measures it, what we measured (:func:`our_number`) and the verdict
    (:func:`verdict_words`). Every part of every claim: :func:`table_text`."""
    lines = ["| the seed article says (our words) | ch. | we measured | verdict |", "|---|---|---|---|"]
    for c in claims:
        lines.append(f"| {PLAIN.get(c.key, c.statement)} | {c.chapter} | {our_number(c)} | "
                     f"{verdict_words(c)} |")
    return "\n".join(lines)


def counts(claims) -> dict:
    """``{verdict: number of claims}`` in :data:`~asynctc.claims.verdicts.VERDICTS` order."""
    return {v: sum(c.verdict == v for c in claims) for v in VERDICTS}


def counts_text(claims) -> str:
    n = counts(claims)
    return ", ".join(f"{k} {v}" for k, v in n.items() if v)


def percent_rows(claims) -> list[dict]:
    """Every fraction-of-peak part, one row per statement: ``key``, ``what`` (the statement without
    its denominator), ``datasheet`` / ``measured`` (the two fractions, None when not measured),
    their verdicts, ``near_datasheet`` / ``near_measured`` (how near, :func:`~asynctc.claims.
    verdicts.near_text`), ``band`` and ``tol``, ``clock`` (the row's clock kind), ``ours`` (both
    texts)."""
    out = []
    for c in claims:
        if not c.percent_of_peak:
            continue
        by_what: dict = {}
        for p in c.parts:
            if p.unit != "fraction of peak":
                continue
            what = p.what.replace(" (datasheet peak)", "").replace(" (peak at the measured clock)", "")
            r = by_what.setdefault(what, {"key": c.key, "what": what, "band": p.band, "tol": p.tol,
                                          "datasheet": None, "measured": None, "clock": None,
                                          "verdict_datasheet": NOT_MEASURED,
                                          "verdict_measured": NOT_MEASURED, "ours": []})
            side = "datasheet" if p.denominator == DATASHEET else "measured"
            r[side] = p.value
            r[f"verdict_{side}"] = p.verdict
            if p.value is not None and p.band:
                r[f"near_{side}"] = near_text(p.value, *p.band, p.tol)
            r["clock"] = r["clock"] or p.clock
            r["ours"].append(p.ours or p.measure_with or "")
        out += list(by_what.values())
    return out


def percent_text(claims, keys=None) -> str:
    """:func:`percent_rows` as a table (only the claims in ``keys``, when given): the claim
    (:data:`SHORT`), its band, ours under each denominator with how far outside the band it lies
    ("in" inside), the clock's kind; then the caveat a clock kind needs
    (:func:`asynctc.core.bench.clock_caveat`), if any."""
    rows = [r for r in percent_rows(claims) if keys is None or r["key"] in keys]
    per_key = {k: sum(x["key"] == k for x in rows) for k in {r["key"] for r in rows}}

    def name(r):
        return SHORT[r["key"]] if per_key[r["key"]] == 1 and r["key"] in SHORT else r["what"]
    width = max([len("the claim")] + [len(name(r)) for r in rows])
    lines = [f"{'the claim':{width}s} {'band':>10s}  {'datasheet':>17s}  {'measured clock':>17s}  clock"]
    for r in rows:
        lo, hi = r["band"] or (None, None)
        band = (f"{lo:.2f}–{hi:.2f}" if lo is not None and hi is not None and lo != hi else
                f"{lo:.2f}" if lo is not None and lo == hi else f"≥ {lo:.2f}" if lo is not None else "")

        def cell(side):
            v = r[side]
            lo, hi = r["band"] or (None, None)
            off = distance(v, lo, hi) if v is not None else 0.0
            word = ("in" if r[f"verdict_{side}"] == HOLDS else f"{off:.3f} off" if
                    r[f"verdict_{side}"] == FAILS else "—")
            return f"{v:.3f} {word:>9s}" if v is not None else f"{'—':>5s} {'n/a':>9s}"
        lines.append(f"{name(r):{width}s} {band:>10s}  {cell('datasheet'):>17s}  "
                     f"{cell('measured'):>17s}  {r['clock'] or '—'}")
    caveat = bench.clock_caveat(" / ".join(sorted({r["clock"] for r in rows if r["clock"]})))
    return "\n".join(lines + ([caveat] if caveat else []))


def percent_worked(claims, keys=None) -> str:
    """One line per fraction-of-peak row (only the claims in ``keys``, when given): our kernel,
    its TFLOP/s and its peak at the measured clock, e.g. ``chapter 01 mma.sync GEMM: 330 TFLOP/s;
    peak 132×4096×1790 MHz (in flight) = 968``."""
    lines = []
    for r in percent_rows(claims):
        if (keys is None or r["key"] in keys) and r["datasheet"] is not None and r["measured"] is not None:
            sheet, clock = r["ours"]             # peak_parts' two texts: datasheet, measured clock
            lines.append(f"{sheet.split(' = ', 1)[0]}; peak {clock.rsplit(' of ', 1)[1]}")
    return "\n".join(lines)


def anchors_text(anchors, width: int = 110) -> str:
    """The anchors as text: source and their statement, then each comparison."""
    lines = []
    for a in anchors:
        lines.append(f"ch {a.chapter}  {a.source}: {a.statement}")
        lines += [_wrap(p.line(), width, "      ") for p in a.parts]
    return "\n".join(lines)


def not_measured(claims, anchors=()) -> list[dict]:
    """Every part the course has not measured: ``key``, ``what``, ``verdict``, ``measure_with``."""
    return [{"key": c.key, "what": p.what, "verdict": p.verdict, "measure_with": p.measure_with}
            for c in list(claims) + list(anchors) for p in c.parts if not p.measured]


def not_measured_text(claims, anchors=(), width: int = 110) -> str:
    rows = not_measured(claims, anchors)
    return "\n".join(_wrap(f"{r['key']}: {r['what']} [{r['verdict']}] — {r['measure_with']}",
                           width, "") for r in rows)


def written_verdict(key: str, written=None) -> str | None:
    """The claim verdict :data:`WRITTEN_FOR` implies for ``key`` (None for an unknown key)."""
    parts = (WRITTEN_FOR if written is None else written).get(key)
    return combine([Part("", v) for v in parts]) if parts else None


def mismatches(claims, anchors=(), written=None, written_anchors=None) -> dict:
    """``{key: (written for, got)}`` for every claim or anchor whose parts' verdicts differ from
    :data:`WRITTEN_FOR` / :data:`WRITTEN_FOR_ANCHORS` (or a key missing from them)."""
    written = WRITTEN_FOR if written is None else written
    written_anchors = WRITTEN_FOR_ANCHORS if written_anchors is None else written_anchors
    out = {}
    for c in list(claims):
        got = tuple(p.verdict for p in c.parts)
        if tuple(written.get(c.key, ())) != got:
            out[c.key] = (written.get(c.key), got)
    for a in list(anchors):
        got = tuple(p.verdict for p in a.parts)
        if tuple(written_anchors.get(a.key, ())) != got:
            out[a.key] = (written_anchors.get(a.key), got)
    return out


def check_written(claims, anchors=(), written=None, written_anchors=None) -> str:
    """Check that every verdict is the one the chapter's text was written for; return a sentence
    saying so (printing nothing), or raise :class:`~asynctc.core.notebook.ClaimError` naming each
    that is not (a re-measurement that flips a verdict stops the notebook: its prose needs
    revisiting)."""
    claims, anchors = list(claims), list(anchors)
    bad = mismatches(claims, anchors, written, written_anchors)
    n = len(claims) + len(anchors)
    parts = sum(len(c.parts) for c in claims + anchors)
    if bad:
        shown = "; ".join(f"{k}: written for {w!r}, records give {g!r}" for k, (w, g) in bad.items())
        raise notebook.ClaimError(f"verdicts differ from those chapter 10's text was written for "
                                  f"(claims.WRITTEN_FOR): {shown}; the text needs revisiting for "
                                  "these records")
    return (f"All {n} verdicts and their {parts} parts are the ones the chapter's text was written "
            f"for (the seed's statements: {counts_text(claims)}).")


__all__ = ["WRITTEN_FOR", "WRITTEN_FOR_ANCHORS", "written_verdict", "table_text", "SHORT",
           "PLAIN", "our_number", "verdict_words", "summary_markdown", "counts", "counts_text",
           "percent_rows", "percent_text", "percent_worked", "anchors_text", "not_measured", "not_measured_text",
           "mismatches", "check_written", "MEASURED_CLOCK"]
