"""Chapter 10's core task: reproduce a speed claim from the records and bound it.

A claim such as "the top rung reaches 0.99 of cuBLAS at 4096³" is reproduced by every run that
timed that kernel and cuBLAS **in the same run** (same GPU, shape, dtype, clock, L2 flush): three
records do (:data:`TOP_RUNS`), the last two in three interleaved rounds each. Each pair gives one
ratio, cuBLAS's median time over ours; the bound is the interval [lowest, highest] over the pairs,
the reading their median. Nothing here measures.

Two kinds of claim, two verdicts (:func:`verdict`):

* a **value** ("0.99 of cuBLAS", "760 TFLOP/s") holds when the value, to the digits it is written
  with (0.99: 0.985–0.995), meets the interval; otherwise it does not hold;
* an **order** ("beats cuBLAS": above 1.0) holds when the whole interval lies on its side, does
  not hold when the whole lies on the other, and is :data:`NOT_SETTLED` when the interval
  straddles the threshold (some runs say yes, some no).
"""

from __future__ import annotations

import statistics

import numpy as np

from .seed import cublas_row, ladder_row
from .verdicts import FAILS, HOLDS, load_records

#: The records that timed chapter 06's top rung beside cuBLAS in the same run, oldest first.
TOP_RUNS = ("warp_specialization", "ws_limit", "ws_orders")
#: The verdict of an order claim whose interval straddles its threshold.
NOT_SETTLED = "not settled"
BOUND_VERDICTS = (HOLDS, FAILS, NOT_SETTLED)


def same_run_pairs(recs, size: int = 4096, dtype: str = "float16") -> list[dict]:
    """One dict per (run, round) that timed the top rung and cuBLAS at ``size``³ ``dtype``:
    ``suite``, ``date`` (the record's day), ``round``, ``ours_ms`` / ``cublas_ms`` (medians),
    ``ours_p10`` … ``cublas_p90`` (ms), ``reps`` (samples, the fewer of the two), ``sm_mhz`` (ours, in flight), ``tflops`` (ours) and
    ``ratio`` = cublas_ms / ours_ms. A suite not in ``recs`` is loaded from data/; one absent there
    is skipped."""
    top = ladder_row(recs["warp_specialization"], size=size, dtype=dtype)[1]["label"]
    out = []
    for suite in TOP_RUNS:
        rec = recs[suite] if suite in recs else load_records(suites=(suite,))[suite]
        if rec is None:
            continue
        rows = [r for r in rec.results["rows"] if r["size"] == size and r["dtype"] == dtype]
        for rnd in sorted({r.get("round", 0) for r in rows}):
            here = [r for r in rows if r.get("round", 0) == rnd]
            ours = next((r for r in here if r.get("label") == top), None)
            cb = next((r for r in here if r.get("kernel") == "cuBLAS"), None)
            if ours is None or cb is None:
                continue
            out.append({"suite": suite, "date": str(rec.provenance.get("date", ""))[:10], "round": rnd,
                        "ours_ms": ours["median_ms"], "cublas_ms": cb["median_ms"],
                        "ours_p10": ours["p10_ms"], "ours_p90": ours["p90_ms"],
                        "cublas_p10": cb["p10_ms"], "cublas_p90": cb["p90_ms"],
                        "reps": min(ours["reps"], cb["reps"]), "sm_mhz": ours["sm_mhz"], "tflops": 2 * size**3 / (ours["median_ms"] * 1e-3) / 1e12,
                        "ratio": cb["median_ms"] / ours["median_ms"]})
    return out


def medians_ms(pairs: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """``(ours_ms, cublas_ms)``: each same-run pair's two medians (:func:`same_run_pairs`'s
    ``ours_ms`` and ``cublas_ms``, each a record's ``median_ms`` for that row in that run), as
    arrays in the pairs' order (chapter 10 §2)."""
    return np.array([p["ours_ms"] for p in pairs]), np.array([p["cublas_ms"] for p in pairs])


def run_count(pairs: list[dict]) -> int:
    """How many runs (records, each pair's ``suite``) the same-run ``pairs`` come from."""
    return len({p["suite"] for p in pairs})


def bound(values) -> tuple[float, float, float]:
    """``(median, lowest, highest)`` of ``values``."""
    v = list(values)
    return statistics.median(v), min(v), max(v)


def reading(value: float, digits: int) -> tuple[float, float]:
    """What a value written with ``digits`` decimals claims: the value as written (``value`` rounded
    to ``digits`` decimals: 0.986 at 1 digit is written "1.0") ± half its last digit."""
    h, written = 0.5 * 10.0 ** -digits, round(value, digits)
    return written - h, written + h


def verdict(lo: float, hi: float, value: float | None = None, digits: int | None = None,
            above: float | None = None) -> str:
    """The verdict of a claim on the interval [lo, hi]: a value claim (``value`` written with
    ``digits`` decimals: it holds when its :func:`reading` meets the interval) or an order claim
    (``above``: the threshold it claims to beat)."""
    if value is not None:
        low, high = reading(value, digits)
        return HOLDS if lo <= high and hi >= low else FAILS
    return HOLDS if lo > above else FAILS if hi <= above else NOT_SETTLED


def values_that_hold(lo: float, hi: float, digits: int) -> list[str]:
    """Every value written with ``digits`` decimals whose value claim holds on [lo, hi] (as written,
    e.g. ``["0.98", "0.99"]``): the fewer the digits, the wider each value's reading, so the fewer
    values there are to hold and the less each one says."""
    step = 10.0 ** -digits
    first, last = round((lo - step / 2) / step), round((hi + step / 2) / step)
    return [f"{i * step:.{digits}f}" for i in range(first, last + 1)
            if verdict(lo, hi, value=i * step, digits=digits) == HOLDS]


def table(pairs: list[dict]) -> str:
    """The pairs as a fixed-width table, one line each: run, round, samples behind each median, both
    medians, the ratio, our clock and TFLOP/s."""
    lines = [f"{'run (record, day)':34s} {'round':>5s} {'samples':>7s} {'ours ms':>9s} {'cuBLAS ms':>9s} "
             f"{'ratio':>6s} {'MHz':>5s} {'TFLOP/s':>7s}"]
    for p in pairs:
        lines.append(f"{p['suite'] + ', ' + p['date']:34s} {p['round']:5d} {p['reps']:7d} {p['ours_ms']:9.5f} "
                     f"{p['cublas_ms']:9.5f} {p['ratio']:6.3f} {p['sm_mhz']:5.0f} {p['tflops']:7.1f}")
    return "\n".join(lines)


def rep_interval(p: dict) -> tuple[float, float]:
    """The ratio's interval inside one pair, from the reps' spread: [cuBLAS p10 / ours p90,
    cuBLAS p90 / ours p10]."""
    return p["cublas_p10"] / p["ours_p90"], p["cublas_p90"] / p["ours_p10"]


def cross_run_extremes(pairs: list[dict]) -> tuple[float, float]:
    """The lowest and highest ratio when ours and cuBLAS may come from *different* runs: what a
    baseline not timed beside the kernel can read."""
    return (min(p["cublas_ms"] for p in pairs) / max(p["ours_ms"] for p in pairs),
            max(p["cublas_ms"] for p in pairs) / min(p["ours_ms"] for p in pairs))
