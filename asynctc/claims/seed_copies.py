"""Chapter 10's judges of the seed's copy statements (TMA against manual copies): the
``tma_copy`` record's box-size comparison and the ``tma_equal`` record's equal-bytes-in-flight
pairs. Used by :data:`asynctc.claims.seed.SEED_CLAIMS`; reads records, never measures.
"""

from __future__ import annotations

from .gaps import SOFTWARE_SWIZZLE, TMA_EQUAL_IN_FLIGHT
from .verdicts import NOT_MEASURED, MissingRecord, Part, judged, need


def _in_flight(c: dict) -> int:
    """Bytes one SM keeps in flight for a tma_copy row: stages × box × CTAs/SM (chapter 03's
    definition)."""
    return c["stages"] * c["box_bytes"] * c["ctas_per_sm"]


EQUAL_SMALL = ("small boxes (≤ 4 KiB: fp16 16×16, 32×32) at equal bytes in flight per SM: TMA no "
               "faster than the faster manual copy (within 1 %)")
EQUAL_LARGE = ("large 2-D boxes (≥ 16 KiB: fp16 128×64 up to 128×128) at equal bytes in flight per "
               "SM: TMA faster than the faster manual copy")


def _tma_equal_parts(rec) -> list:
    """The two equal-bytes parts from a ``tma_equal`` record (chapter 03's
    :func:`asynctc.tma.equal_bytes.pairs`: TMA / the faster of ld+st and cp.async, per box and per
    definition of bytes in flight — shared memory held, or loads outstanding)."""
    from ..tma.equal_bytes import LARGE_MIN, SMALL_MAX, pairs
    ps = pairs(rec.results)
    small = [p for p in ps if p["box_bytes"] <= SMALL_MAX]
    large = [p for p in ps if p["box_bytes"] >= LARGE_MIN]
    if not small or not large:
        raise MissingRecord("the tma_equal record lacks small (≤ 4 KiB) or large (≥ 16 KiB) boxes")

    def text(rows):
        return "; ".join(f"{p['fp16_box']} {p['kind']} {p['in_flight'] // 1024} KiB: {p['ratio']:.2f}"
                         for p in rows)
    hi = max(p["ratio"] for p in small)
    lo = min(p["ratio"] for p in large)
    return [judged(EQUAL_SMALL, hi, None, 1.01, f"TMA/best manual up to {hi:.2f} ({text(small)})",
                   "×", suite="tma_equal"),
            judged(EQUAL_LARGE, lo, 1.0, None, f"TMA/best manual ≥ {lo:.2f} ({text(large)})", "×",
                   suite="tma_equal")]


def _tma_vs_manual(recs):
    rec = need(recs, "tma_copy")
    copies = rec.results["copies"]
    manual = {(c["box_bytes"], c["bc"]): c for c in copies if c["variant"] == "ldg_sts"}
    sizes = sorted({c["box_bytes"] for c in copies})
    parts = []

    def ratios(size, equal_only=False):
        """(TMA/manual, tma row, manual row) at one box size: the deepest TMA ring per box shape
        (the suite's configuration), or every TMA row at the manual copy's bytes in flight."""
        tmas: dict = {}
        for t in copies:
            m = manual.get((t["box_bytes"], t["bc"]))
            if t["variant"] != "tma" or t["box_bytes"] != size or m is None:
                continue
            if equal_only:
                if _in_flight(t) == _in_flight(m):
                    tmas.setdefault(t["bc"], []).append(t)
            elif t["bc"] not in tmas or t["stages"] > tmas[t["bc"]][0]["stages"]:
                tmas[t["bc"]] = [t]
        return [(t["gbps"] / manual[(size, bc)]["gbps"], t, manual[(size, bc)])
                for bc, ts in tmas.items() for t in ts]

    for size in [s for s in sizes if s <= 4096]:
        rs = ratios(size)
        hi = max(x[0] for x in rs)
        fl = sorted({(_in_flight(t) // 1024, _in_flight(m) // 1024) for _, t, m in rs})
        parts.append(judged(f"{size // 1024} KiB boxes: TMA no faster than the manual copy "
                            "(within 1 %; configurations as recorded)", hi, None, 1.01,
                            f"TMA/manual {min(x[0] for x in rs):.2f}–{hi:.2f} over {len(rs)} row "
                            f"widths; KiB in flight per SM TMA/manual "
                            + ", ".join(f"{a}/{b}" for a, b in fl), "×", suite="tma_copy"))
    eq = [x for s in sizes if s <= 4096 for x in ratios(s, equal_only=True)]
    what = "small boxes (1–4 KiB) at equal bytes in flight: TMA no faster than the manual copy"
    equal = recs.get("tma_equal")
    if equal is not None:
        parts.extend(_tma_equal_parts(equal))
    elif eq:
        hi = max(x[0] for x in eq)
        parts.append(judged(what, hi, None, 1.01, f"TMA/manual up to {hi:.2f} over {len(eq)} pairs",
                            "×", suite="tma_copy"))
    else:
        parts.append(Part(what, NOT_MEASURED, unit="×", suite="tma_copy",
                          measure_with=TMA_EQUAL_IN_FLIGHT))
    if equal is None:
        parts.append(Part(EQUAL_LARGE, NOT_MEASURED, unit="×", suite="tma_equal",
                          measure_with=TMA_EQUAL_IN_FLIGHT))
    big = [x for s in sizes if s >= 16384 for x in ratios(s)]
    if not big:
        raise MissingRecord("no 16-32 KiB boxes in the tma_copy record")
    lo = min(x[0] for x in big)
    parts.append(judged("large boxes (16–32 KiB, 2-D): TMA faster than the manual copy at every "
                        "row width", lo, 1.0, None, f"TMA/manual ≥ {lo:.3f} over {len(big)} box "
                        "shapes", "×", suite="tma_copy"))
    parts.append(Part("hardware (TMA) swizzle is faster than a software swizzle", NOT_MEASURED,
                      measure_with=SOFTWARE_SWIZZLE))
    return parts
