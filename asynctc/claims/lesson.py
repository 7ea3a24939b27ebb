"""Chapter 10's core cells, one call each: they print what the lesson reads and raise when a record
stops supporting a sentence the chapter's markdown states as fixed text (issue 22 §2: the markdown
carries the argument, the guards live here). Nothing here measures or plots.

Each ``show_*`` function names, in its docstring, the sentences it asserts. It returns ``True`` once
they hold, so a cell reads ``assert lesson.show_…(…)``; a re-measurement that flips one raises
:class:`~asynctc.core.notebook.ClaimError` (an AssertionError) with the numbers
(:func:`~asynctc.core.notebook.require`).
"""

from __future__ import annotations

from ..core import bench
from ..core.notebook import require
from . import bounds
from .seed import cublas_row, ladder_row
from .verdicts import FAILS, HOLDS


def record_answers(wrec) -> str:
    """The claim's record answering §1's first three questions, as three lines: size, dtype and what
    is timed; the SM clock and its kind (:func:`asynctc.core.bench.clock_text`); the baseline timed in
    the same run. ``wrec``: the ``warp_specialization`` record. Asserts nothing."""
    top, cb = ladder_row(wrec)[1], cublas_row(wrec)
    flushed = {"sample": "once per sample", "launch": "before each launch"}.get(top["flush"], "no")
    return "\n".join([
        f"size, dtype: {top['size']}³ {top['dtype']}; timed: {top['launches_per_sample']} launches a "
        f"sample, L2 flushed {flushed}, median of {top['reps']} samples",
        f"clock: {bench.clock_text(top)}",
        f"baseline: cuBLAS at {top['size']}³ in the same run, {cb['median_ms']:.5f} ms; "
        f"ours {top['median_ms']:.5f} ms"])


def show_peaks(wrec) -> bool:
    """Print the claim's TFLOP/s against its two peaks, one clock each: the course's
    [peak](docs/glossary.md#peak) (132 SMs × 4096 × the SM clock measured while the kernel ran)
    and the datasheet's (the same product at the 1830 MHz boost clock).

    Asserts chapter 10 §1's sentence *"This run's SM clock stayed below the boost clock, so its own
    peak is lower than the datasheet's and the fraction of it is higher."*"""
    top = ladder_row(wrec)[1]
    p = bench.peak_at_clock(top, wrec.provenance["sm_count"], top["dtype"])
    boost = bench.DATASHEET["boost_mhz"]
    sms, per_clk = wrec.provenance["sm_count"], bench.FLOP_PER_CLK_PER_SM[top["dtype"]]
    print(f"peak = SMs × FLOP/clk/SM × SM clock; ours {top['tflops']:.0f} TFLOP/s over each:")
    for name, mhz, kind, peak in (("course", p["sm_mhz"], bench.clock_kind(top), p["peak_tflops"]),
                                  ("datasheet", boost, "boost", p["datasheet_tflops"])):
        print(f"  {name:9s} {sms} × {per_clk} × {mhz:.0f} MHz ({kind}) = {peak:.0f} TFLOP/s; "
              f"{top['tflops']:.0f} / {peak:.0f} = {top['tflops'] / peak:.3f}")
    require(p["sm_mhz"] < boost and p["peak_tflops"] < p["datasheet_tflops"]
            and p["fraction"] > p["fraction_of_datasheet"],
            "This run's SM clock stayed below the boost clock, so its own peak is lower than the "
            "datasheet's and the fraction of it is higher.", sm_mhz=p["sm_mhz"], boost=boost)
    return True


def spread(pairs: list[dict]) -> dict:
    """How far each thing moved over the same-run ``pairs`` (:func:`bounds.same_run_pairs`):
    ``tf_move`` (our TFLOP/s, highest / lowest − 1), ``ratio_move`` (the ratio, likewise), ``rep``
    (the widest p10–p90 of the ratio inside one pair, :func:`bounds.rep_interval`) and ``rep_med``
    (that width / √reps: about how far a median of the pair's samples moves)."""
    ratios = [p["ratio"] for p in pairs]
    tfs = [p["tflops"] for p in pairs]
    widths = [(b - a, p["reps"]) for (a, b), p in zip(map(bounds.rep_interval, pairs), pairs)]
    return {"tf_move": max(tfs) / min(tfs) - 1, "ratio_move": max(ratios) / min(ratios) - 1,
            "rep": max(w for w, _ in widths), "rep_med": max(w / n ** 0.5 for w, n in widths)}


def show_bound(pairs: list[dict]) -> tuple[float, float, float]:
    """Print every same-run pair (:func:`bounds.table`, with the samples behind each median), the
    bound over them, and how far a median of one pair's samples moves, named by its record, round
    and sample count (the pair where that is widest). Returns ``(median, lowest, highest)`` of the
    ratio. Asserts nothing: :func:`runs_set_the_bound` asserts what §2 concludes from it; how far
    our TFLOP/s and the ratio moved between runs is the chapter's visible "Derive it" cell."""
    print(bounds.table(pairs))
    med, lo, hi = bounds.bound(p["ratio"] for p in pairs)
    runs = len({p["suite"] for p in pairs})
    print(f"\nratio (each row's cuBLAS ms / ours ms): median {med:.3f}, interval [{lo:.4f}, {hi:.4f}] "
          f"over {len(pairs)} pairs in {runs} runs")
    w, p = max((((b - a), p) for (a, b), p in zip(map(bounds.rep_interval, pairs), pairs)),
               key=lambda wp: wp[0] / wp[1]["reps"] ** 0.5)
    print(f"inside one pair ({p['suite']} round {p['round']}, {p['reps']} samples): the ratio's p10–p90 "
          f"spans {w:.4f}; a median of its samples moves about {w:.4f} / √{p['reps']} = "
          f"{w / p['reps'] ** 0.5:.4f}, under the pairs' spread {hi:.4f} − {lo:.4f} = {hi - lo:.4f}")
    return med, lo, hi


def runs_set_the_bound(pairs: list[dict]) -> bool:
    """Assert chapter 10 §2's two sentences (the "Derive it" cell before them prints the first one's
    numbers): *"Our TFLOP/s moved 2.0 %, about four times as far as the ratio's 0.5 %."* (tf_move
    in [1.5 %, 2.5 %], ratio_move in [0.3 %, 0.7 %], their quotient in [3, 5]) and *"[A median of
    the widest pair's samples] stays under the pairs' spread, so the runs, not the reps, set the
    bound."* (rep_med < highest − lowest).
    Prints nothing; returns ``True``."""
    s = spread(pairs)
    _, lo, hi = bounds.bound(p["ratio"] for p in pairs)
    require(0.015 <= s["tf_move"] <= 0.025 and 0.003 <= s["ratio_move"] <= 0.007
            and 3 <= s["tf_move"] / s["ratio_move"] <= 5,
            "Our TFLOP/s moved 2.0 %, about four times as far as the ratio's 0.5 %.", **s)
    require(s["rep_med"] < hi - lo,
            "A median of the widest pair's samples stays under the pairs' spread, so the runs, not "
            "the reps, set the bound.", rep_med=s["rep_med"], width=hi - lo)
    return True


def show_verdicts(pairs: list[dict], value: float = 0.99, digits: int = 2) -> bool:
    """Print the verdict of the value claim (``value`` with ``digits`` decimals), of the order claim
    "beats cuBLAS" (above 1) on the same-run bound, and the range the same times read when ours and
    cuBLAS are paired across runs (:func:`bounds.cross_run_extremes`).

    Asserts chapter 10 §3's sentences *"'0.99 of cuBLAS' holds. 'Beats cuBLAS at 4096³' does not
    hold. Paired across runs, the same times read from 0.970, well below the bound's low end, to
    1.005, above 1."* (the high end in (1, 1.015], the low end in [0.96, 0.98] and more than 0.01
    below the bound)."""
    med, lo, hi = bounds.bound(p["ratio"] for p in pairs)
    low, high = bounds.reading(value, digits)
    v_value = bounds.verdict(lo, hi, value=value, digits=digits)
    v_order = bounds.verdict(lo, hi, above=1.0)
    x_lo, x_hi = bounds.cross_run_extremes(pairs)
    print(f"bound (same run): median {med:.3f}, [{lo:.4f}, {hi:.4f}]")
    print(f"\"{value:.{digits}f} of cuBLAS\" reads {low:.{digits + 1}f}–{high:.{digits + 1}f}: {v_value}")
    print(f"\"beats cuBLAS\" needs the interval above 1.000: {v_order}")
    slow, fast = max(p["ours_ms"] for p in pairs), min(p["ours_ms"] for p in pairs)
    cb_fast, cb_slow = min(p["cublas_ms"] for p in pairs), max(p["cublas_ms"] for p in pairs)
    print(f"paired across runs: {x_lo:.3f} to {x_hi:.3f} (cuBLAS's fastest / our slowest = "
          f"{cb_fast:.5f} / {slow:.5f} ms; its slowest / our fastest = {cb_slow:.5f} / {fast:.5f} ms)")
    require(v_value == HOLDS, f"'{value:.{digits}f} of cuBLAS' holds.", lo=lo, hi=hi)
    require(v_order == FAILS, "'Beats cuBLAS at 4096³' does not hold.", hi=hi)
    require(1.0 < x_hi <= 1.015 and 0.96 <= x_lo <= 0.98 and x_lo < lo - 0.01,
            "Paired across runs, the same times read from 0.970, well below the bound's low end, to "
            "1.005, above 1.",
            x_lo=x_lo, x_hi=x_hi, lo=lo)
    return True
