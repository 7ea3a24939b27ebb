"""Chapter 10's cell helpers: what the lesson reads that is not its arithmetic, and the guards that
raise when a record stops supporting a sentence the chapter's markdown states as fixed text (issue
22 §2: the markdown carries the argument, the guards live here). Nothing here measures or plots.

:func:`runs_set_the_bound` names, in its docstring, the sentences it asserts. It returns ``True``
once they hold, so its cell reads ``assert lesson.runs_set_the_bound(pairs)``; a re-measurement that
flips one raises :class:`~asynctc.core.notebook.ClaimError` (an AssertionError) with the numbers
(:func:`~asynctc.core.notebook.require`). §1's peaks, §2's bound and §3's verdicts are visible cells
(tests/test_guard_cells.py moves their records).
"""

from __future__ import annotations

from ..core import bench
from ..core.notebook import require
from . import bounds
from .seed import cublas_row, ladder_row


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
