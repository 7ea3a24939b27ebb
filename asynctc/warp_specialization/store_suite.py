"""Chapter 06's record suite ``ws_store_ablation``: does rung 7's TMA-store epilogue need the
persistent grid?

The ladder's biggest step is rung 7 (C written through shared memory by a TMA store): 0.90 → 0.98
of cuBLAS at 4096³. The chapter's story was that the store pays because it drains while the
consumers start the next tile's k-loop, which only a persistent grid (rung 5) gives them. The
ladder cannot tell: it added the store on top of persistence *and* clusters. This suite adds it
alone, in one run:

=============  ===========================================================================
``r3``         rung 3: one tile per CTA, C stored from registers
``r3+store``   rung 3 with the TMA store: one tile per CTA, so each CTA waits for its stores
               before it exits and the next CTA's loads start only then
``r5``         rung 5: the persistent grid, C stored from registers
``r5+store``   rung 5 with the TMA store: persistent, no cluster
``r6``         rung 6: persistent, clusters of 2 with B multicast
``r7``         rung 7: persistent, clusters, TMA store
=============  ===========================================================================

:func:`measure_store`: every variant first checked against float64 on its correctness shapes
(:func:`.launch.check_all`: fresh random inputs, a poisoned output, the elementwise |A|·|B| bound),
then per size of :data:`SIZES` and dtype :data:`ROUNDS` rounds of cuBLAS and every variant
interleaved (:func:`.limit_suite.time_rounds`: clock in flight, each timed output checked on
sampled rows); medians. :func:`store_summary`, :func:`store_table`, :func:`store_findings` and
:func:`store_verdicts` read the record back (the notebook's sentences are generated from it:
:func:`prediction_verdicts` under the frozen predictions, :func:`ws_bought` for the chapter's
conclusion).
Writes records, never plots. The prediction, written before the first run (docs/NOTES.md,
"Chapter 06: does the TMA store need the persistent grid?"), is :data:`PREDICTIONS`.
"""

from __future__ import annotations

import math
import statistics

import numpy as np

from ..core import bench
from .config import WSConfig
from .ladder import RUNG_BY_NAME
from .launch import check_all, compile_job
from .limit_suite import time_rounds

SIZES = (4096, 8192)
DTYPES = ("float16", "bfloat16")
ROUNDS = 3
#: (name, rung, fields over that rung's config), in the table's order.
VARIANTS = (("r3", "ws_setmaxnreg", {}), ("r3+store", "ws_setmaxnreg", {"tma_store": True}),
            ("r5", "persistent", {}), ("r5+store", "persistent", {"tma_store": True}),
            ("r6", "cluster", {}), ("r7", "tma_store", {}))
NAMES = tuple(n for n, _, _ in VARIANTS)
#: A difference of ratios this small (1 point) is within a run's noise: the verdicts call it none.
NOISE = 0.01
#: The table's column names, said in one line under it.
LEGEND = ("r3, r5, r6, r7: rung 3 (one tile per CTA), 5 (persistent grid), 6 (+ clusters), "
          "7 (+ TMA store); +store: that rung with the TMA store")
#: The verdicts expected before the first GPU run, in :func:`store_verdicts`' order, quoted as
#: docs/NOTES.md froze them on :data:`PREDICTION_DATE` (a test holds the quotes to that file).
PREDICTION_DATE = "2026-12-03"
PREDICTIONS = (
    '"The TMA store pays mostly on the persistent grid" (geometric mean of the four runs: about '
    '+3 % with one tile per CTA against +6 to +7 % on the persistent grid)',
    '"Clusters add nothing measurable once C leaves by TMA store" (rung 7 at 1.00 ± 0.01 of rung '
    '5 + TMA store)')


def variant(name: str, dtype: str = "float16") -> WSConfig:
    """Variant ``name`` of :data:`VARIANTS` for ``dtype`` (C in the input dtype, as the ladder)."""
    _, rung, fields = next(v for v in VARIANTS if v[0] == name)
    return RUNG_BY_NAME[rung].make(dtype).replace(**fields)


def store_jobs() -> list:
    """Every compile job of the suite (each variant, each dtype)."""
    return [compile_job(variant(n, dt)) for dt in DTYPES for n in NAMES]


def measure_store(progress=None, reps: int = 20, sizes=SIZES, dtypes=DTYPES, rounds: int = ROUNDS,
                  check: bool = True) -> dict:
    """The "ws_store_ablation" suite (see the module docstring). ``check``: verify every variant
    against float64 first (a failure raises, and nothing is timed)."""
    say = progress or (lambda _s: None)
    rng = np.random.default_rng()
    out = {"sizes": list(sizes), "dtypes": list(dtypes), "variants": list(NAMES), "rounds": rounds,
           "labels": {n: variant(n).label() for n in NAMES}, "checks": [], "rows": [],
           "baseline_library": bench.baseline_library()}
    if check:
        out["checks"] = check_all([variant(n, dt) for dt in dtypes for n in NAMES], rng=rng,
                                  progress=say)
        say(f"{len(out['checks'])} checks against float64 passed")
    for size in sizes:
        for dt in dtypes:
            out["rows"] += time_rounds(size, dt, {n: variant(n, dt) for n in NAMES}, "variant",
                                       rounds, reps, rng)
            s = store_summary(out["rows"], size, dt)
            say(f"{size}³ {dt}: cuBLAS {s[0]['tflops']:.0f} TFLOP/s; of cuBLAS "
                + ", ".join(f"{r['variant']} {r['of_cublas']:.3f}" for r in s[1:]))
    out["summary"] = [r for size in sizes for dt in dtypes for r in store_summary(out["rows"], size, dt)]
    return out


def store_summary(rows: list[dict], size: int, dt: str, names=NAMES) -> list[dict]:
    """For one (size, dtype): cuBLAS's row, then one per variant — median TFLOP/s and in-flight
    clock over the rounds, and ``of_cublas`` (against cuBLAS's median)."""
    sel = [r for r in rows if (r["size"], r["dtype"]) == (size, dt)]

    def med(rs, k):
        return statistics.median(r.get(k) or 0.0 for r in rs)
    cb = [r for r in sel if r["kernel"] == "cuBLAS"]
    cbt = med(cb, "tflops")
    out = [{"size": size, "dtype": dt, "kernel": "cuBLAS", "tflops": cbt, "sm_mhz": med(cb, "sm_mhz")}]
    for n in names:
        rs = [r for r in sel if r.get("variant") == n]
        t = med(rs, "tflops")
        out.append({"size": size, "dtype": dt, "kernel": "ours", "variant": n, "tflops": t,
                    "sm_mhz": med(rs, "sm_mhz"), "of_cublas": t / cbt})
    return out


def _cells(results: dict) -> dict:
    """{(size, dtype): {variant: median TFLOP/s, "cuBLAS": ...}} from the record's summary."""
    cells: dict = {}
    for r in results["summary"]:
        cells.setdefault((r["size"], r["dtype"]), {})[r.get("variant", "cuBLAS")] = r["tflops"]
    return cells


def store_table(results: dict) -> str:
    """Per size and dtype: cuBLAS's TFLOP/s, each variant's fraction of cuBLAS, then what the TMA
    store adds without and with the persistent grid (r3+store / r3, r5+store / r5); the
    :data:`LEGEND` under it."""
    names = results["variants"]
    lines = [f"{'':16s} {'cuBLAS':>7s}  {'fraction of cuBLAS':^53s}  {'TMA store adds':^17s}".rstrip(),
             f"{'size':>5s} {'dtype':9s} {'TFLOP/s':>7s} " + "".join(f" {n:>8s}" for n in names)
             + f" {'to r3':>8s} {'to r5':>8s}"]
    for (size, dt), c in _cells(results).items():
        lines.append(f"{size:5d} {dt:9s} {c['cuBLAS']:7.0f} "
                     + "".join(f" {c[n] / c['cuBLAS']:8.3f}" for n in names)
                     + f" {c['r3+store'] / c['r3'] - 1:+8.1%} {c['r5+store'] / c['r5'] - 1:+8.1%}")
    return "\n".join(lines + [LEGEND])


def store_steps(results: dict) -> dict:
    """What the TMA store adds per (size, dtype) of the record, the ratios :func:`store_findings`
    averages: ``{"store_alone": {(size, dtype): r3+store / r3 - 1}, "store_persistent": {...:
    r5+store / r5 - 1}}``."""
    cells = _cells(results)
    return {"store_alone": {k: c["r3+store"] / c["r3"] - 1 for k, c in cells.items()},
            "store_persistent": {k: c["r5+store"] / c["r5"] - 1 for k, c in cells.items()}}


def _gmean(xs) -> float:
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def store_findings(results: dict) -> dict:
    """The three ratios the verdicts rest on, each the geometric mean over the record's sizes and
    dtypes: ``store_alone`` = r3+store / r3 (the store on a grid of one tile per CTA),
    ``store_persistent`` = r5+store / r5 (on the persistent grid), ``cluster_with_store`` =
    r7 / r5+store (clusters once the store is there); ``cells`` how many (size, dtype)."""
    cells = _cells(results).values()
    return {"store_alone": _gmean(c["r3+store"] / c["r3"] for c in cells),
            "store_persistent": _gmean(c["r5+store"] / c["r5"] for c in cells),
            "cluster_with_store": _gmean(c["r7"] / c["r5+store"] for c in cells),
            "cells": len(cells)}


def store_verdicts(results: dict) -> list[tuple[bool, str, str]]:
    """``(condition, sentence if true, sentence if false)`` for :func:`asynctc.core.notebook.verdict`:
    whichever it prints is true of the record (differences under :data:`NOISE` count as none)."""
    f = store_findings(results)
    alone, pers, cl = f["store_alone"] - 1, f["store_persistent"] - 1, f["cluster_with_store"]
    where = f"geometric means of {f['cells']} runs"
    return [(pers - alone >= NOISE,
             f"The TMA store pays mostly on the persistent grid: {pers:+.1%} there, {alone:+.1%} "
             f"with one tile per CTA ({where}): it buys the overlap with the next tile's k-loop.",
             f"The TMA store does not need the persistent grid: {alone:+.1%} with one tile per CTA, "
             f"{pers:+.1%} on the persistent grid ({where}): what it saves is the register "
             "epilogue's own time, not an overlap."),
            (abs(cl - 1) < NOISE,
             f"Clusters add nothing measurable once C leaves by TMA store: rung 7 runs at "
             f"{cl:.3f} of rung 5 + TMA store.",
             f"Clusters {'cost' if cl < 1 else 'add'} {abs(cl - 1):.1%} once C leaves by TMA store: "
             f"rung 7 runs at {cl:.3f} of rung 5 + TMA store.")]


def prediction_verdicts(results: dict) -> list[tuple[bool, str, str]]:
    """:func:`store_verdicts` with a plain mark in front: "Prediction held." when the record
    supports the sentence :data:`PREDICTIONS` froze (the ``True`` one), "Prediction wrong." when
    it supports the other; for the notebook to print under each prediction."""
    return [(ok, f"Prediction held. {yes}", f"Prediction wrong. {no}")
            for ok, yes, no in store_verdicts(results)]


def ws_bought(ladder: dict, store: dict | None = None) -> tuple[bool, str, dict]:
    """What warp specialization bought on the ladder, in one sentence, from a
    ``warp_specialization`` record's results (``ladder``) and this suite's (``store``, or None when
    not recorded): ``(holds, text, numbers)`` for :func:`asynctc.core.notebook.claim`; ``numbers``
    holds ``split`` (rung 3 / rung 1) and ``persistent`` (rung 5 − rung 4, of cuBLAS) per
    (size, dtype), and the store's geometric means when ``store`` is given. It holds
    while the split alone (rung 3 over rung 1) stays within 2 % everywhere, the persistent grid
    (rung 5 over rung 4) adds at most 0.03 of cuBLAS, and the TMA store adds at least 3 % with one
    tile per CTA, no less (beyond :data:`NOISE`) than on the persistent grid."""
    def fr(n):
        return {(r["size"], r["dtype"]): r["of_cublas"] for r in ladder["ladder"] if r["rung"] == n}
    f1, f3, f4, f5 = fr(1), fr(3), fr(4), fr(5)
    split = {k: f3[k] / f1[k] for k in f3}
    pers = {k: f5[k] - f4[k] for k in f5}
    holds = (all(abs(x - 1) < 0.02 for x in split.values())
             and all(-0.01 <= x <= 0.03 for x in pers.values()))
    text = (f"What warp specialization bought here: the split alone, nothing measurable (rung 3 at "
            f"{min(split.values()):.2f}–{max(split.values()):.2f}× rung 1); the persistent grid it "
            f"makes possible, {max(0.0, min(pers.values())):.2f}–{max(pers.values()):.2f} of cuBLAS "
            "(rung 5 over rung 4).")
    numbers = {"split": split, "persistent": pers}
    if store is None:
        return holds, text + " The TMA-store ablation is not recorded here.", numbers
    f = store_findings(store)
    alone, on = f["store_alone"] - 1, f["store_persistent"] - 1
    holds = holds and alone >= 0.03 and alone >= on - NOISE
    numbers.update(store_alone=alone, store_persistent=on)
    return holds, (text + f" The big step, rung 7's TMA store, does not need that grid: {alone:+.1%} "
                   f"with one tile per CTA, {on:+.1%} on the persistent grid."), numbers


def summarize_store(rec) -> str:
    """The record as text: its label, the checks, the table, the verdicts."""
    res = rec.results
    lines = [rec.label(), f"{len(res.get('checks', []))} checks against float64 passed",
             f"medians of {res['rounds']} rounds; variants: "
             + "; ".join(f"{n} = {res['labels'][n]}" for n in res["variants"])]
    if res["summary"]:                                       # --quick times nothing
        lines += [store_table(res)] + [yes if ok else no for ok, yes, no in store_verdicts(res)]
    return "\n".join(lines)


SUITES = {"ws_store_ablation": (measure_store, summarize_store, "sm_90a")}
