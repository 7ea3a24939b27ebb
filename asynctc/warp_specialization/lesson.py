"""Chapter 06's helper cells: the bands' table (:func:`prediction_table`) and one row of it read
in words (:func:`row_reading`), both in deep dive 06c §3 (moved from 06 §3), the list of what each
rung changes, read from the rungs' configs (:func:`rung_changes`), the TMA store's saving as
arithmetic (:func:`show_epilogue`, which guards the sentences its docstring lists), and
:func:`show_kernel_part`, which shows one part of ``kernels/hopper_gemm.cu`` at a time (06d §4). 06 §3's short
cell and deep dive 06c §2's four-ladder loop print the ladder's steps in visible code (:data:`OVER`,
:data:`ADDS`, :func:`tflops_by_rung`, :func:`ladders`, :func:`biggest_steps`, :func:`traced_epilogue`);
the check cell after each runs :func:`claims` (06 §3's with ``core=True``), each sentence's bounds a
named constant.

A guard raises :class:`asynctc.core.notebook.ClaimError` (via :func:`asynctc.core.notebook.require`)
when the record stops supporting a sentence, so a re-measurement that flips a sentence stops the
notebook (and nbval) instead of leaving false prose under a true table. :func:`show_epilogue`
and :func:`row_reading` are marked with :func:`asynctc.core.notebook.guards`, so
``tests/test_notebook_prose.py`` counts a cell that calls one as the guard of the markdown before
it. Never times, never plots.
"""

from __future__ import annotations

import math

from ..core.notebook import guards, require
from .rung_notes import ADDS  # noqa: F401  (06c §2's loop prints W.lesson.ADDS)

#: The rung each rung of §3's table is compared with: the one it was built from (rung 3 from rung 2,
#: not from chapter 05's rung 1; rung 5 from rung 3, since rung 4 is a sweep).
OVER = {2: 1, 3: 2, 4: 3, 5: 3, 6: 5, 7: 6, 8: 7}
#: The record's four ladders (size, dtype), the figure's first.
LADDERS = ((4096, "float16"), (4096, "bfloat16"), (8192, "float16"), (8192, "bfloat16"))


def _tile(cfg) -> str:
    return f"{cfg.bm}×{cfg.bn}"


def _changes(new, old) -> list[str]:
    """What config ``new`` changes against ``old`` (a rung's config and the one it was built from),
    in words: every field the ladder moves, none left out."""
    from .. import pipeline as P
    out = []
    if isinstance(old, P.PipelineConfig) and not isinstance(new, P.PipelineConfig):
        out.append("the split (a producer warpgroup loads)")
    if new.consumers != old.consumers:
        out.append(f"{new.consumers} consumer{'s' * (new.consumers > 1)} (was {old.consumers})")
    if (new.bm, new.bn) != (old.bm, old.bn):
        out.append(f"tile {_tile(new)} (was {_tile(old)})")
    if new.stages != old.stages:
        out.append(f"{new.stages} stages (was {old.stages})")
    if getattr(new, "setmaxnreg", False) != getattr(old, "setmaxnreg", False):
        out.append(f"setmaxnreg {new.producer_regs}/{new.consumer_regs}" if new.setmaxnreg else "no setmaxnreg")
    for field, words in (("persistent", "a persistent grid"), ("tma_store", "the epilogue by TMA store")):
        if getattr(new, field, False) != getattr(old, field, False):
            out.append(words if getattr(new, field) else "not " + words)
    if getattr(new, "cluster", 1) != getattr(old, "cluster", 1):
        out.append(f"clusters of {new.cluster} CTAs, B multicast")
    if new.group_m != old.group_m:
        out.append(f"raster group-M {new.group_m} (was {old.group_m})")
    return out


@guards
def rung_changes(dtype: str = "float16") -> str:
    """06 §3's list: rungs 1–8, each rung's every change against the rung it was built from
    (:data:`OVER`), read from the rungs' configs (:data:`~.ladder.RUNGS`' ``make``), so the list
    cannot drift from the code; rung 4 is a sweep (:data:`~.ladder.TILE_SWEEP`), said as such. Then
    the line that makes "the split alone" answerable: rung 3 against rung 1. Guards that line: rung 3
    must keep rung 1's tile, stages and number of computing warpgroups, else
    :class:`~asynctc.core.notebook.ClaimError`."""
    from .ladder import RUNGS
    cfg = {r.number: r.make(dtype) for r in RUNGS}
    one, three = cfg[1], cfg[3]
    lines = [f"rung 1: chapter 05's kernel: tile {_tile(one)}, {one.stages} stages, {one.consumers} "
             "warpgroups compute, one thread also loads"]
    for n, b in OVER.items():
        what = ["the fastest tile and stages of a sweep"] if n == 4 else _changes(cfg[n], cfg[b])
        lines.append(f"rung {n} (from {b}): " + "; ".join(what))
    same = (_tile(three), three.stages, three.consumers) == (_tile(one), one.stages, one.consumers)
    require(same, "rung 3 keeps rung 1's tile, stages and computing warpgroups",
            rung1=(_tile(one), one.stages, one.consumers), rung3=(_tile(three), three.stages, three.consumers))
    lines.append(f"rung 3 against rung 1: same tile, stages and {one.consumers} computing warpgroups; "
                 "only " + " and ".join(_changes(three, one)) + " differ")
    return "\n".join(lines)


@guards
def split_bought(results: dict, steps: dict, store: dict, size: int = 4096, dtype: str = "float16",
                 sms: int | None = None) -> None:
    """06 §3's "what the split buys", its numbers printed from three records: ``results``
    (``warp_specialization``), ``steps`` (``ws_rung3_steps``), ``store`` (``ws_store_ablation``), at
    ``size``³ ``dtype``. Guards the paragraph before it: rung 3 keeps rung 1's tile, which fits in
    the registers at entry without ``setmaxnreg`` (ptxas's count), and runs within 2 % of rung 1; two consumers and ``setmaxnreg`` each move under 2 % (06c §3); rungs 4–8 are all built
    on the split (a producer warpgroup); the TMA store alone on rung 3 gains 5–12 %, within 2 points
    of rung 7's step over rung 6 ("about as much"), the largest single change (:data:`MOST`). With
    ``sms`` (the record's SM count), a line on what chapter 05's loop model leaves out: rung 1's
    tiles run in ⌈waves⌉ waves (the last partly empty), and rung 5's persistent grid, which hides
    each tile's fill and epilogue, gains over the rung it is built on (guarded: > 0). Else
    :class:`~asynctc.core.notebook.ClaimError`."""
    from .config import WSConfig
    from .ladder import RUNGS
    from .rung3_split import rung3_steps
    from .store_suite import store_steps
    cfg = {r.number: r.make(dtype) for r in RUNGS}
    t = tflops_by_rung(results, size, dtype)
    by = {d["step"]: d for d in rung3_steps(steps, spills=False)}
    gain = {b: d["gain"] for b, d in by.items() if d["gain"] is not None}
    wide = by["128x256"]                         # the wide tile without setmaxnreg: ptxas's count, entry
    two, reg = gain["two consumers"], gain["setmaxnreg (rung 3)"]
    alone = store_steps(store)["store_alone"][size, dtype]
    built = [n for n in range(4, 9) if isinstance(cfg[n], WSConfig)]
    steps_1 = one_change_steps(results, size, dtype)
    print(f"{size}³ {dtype}: rung 1 tile {_tile(cfg[1])}, rung 3 tile {_tile(cfg[3])}; "
          f"rung 3 / rung 1 = {t[3]:.0f} / {t[1]:.0f} = {t[3] / t[1]:.3f}\n"
          f"one change at a time (ws_rung3_steps): two consumers {two:+.1%}, setmaxnreg {reg:+.1%}; "
          f"the split's 128×256 tile without setmaxnreg: {wide['regs']} registers of {wide['entry']} at entry "
          f"(ptxas, this build; 09 §1 counts chapter 05's kernel, another build)\n"
          f"built on the split kernel: rungs {', '.join(map(str, built))}\n"
          f"the TMA store alone on rung 3 (ws_store_ablation): {alone:+.1%}; "
          f"as rung 7, over rung 6: {steps_1[7] - 1:+.1%}; on chapter 05's kernel: not measured")
    if sms:
        tiles = (size // cfg[1].bm) * (size // cfg[1].bn)
        waves = tiles / sms
        print(f"outside 05's loop model: {tiles} tiles on {sms} SMs = {waves:.2f} waves, run as {math.ceil(waves)} "
              f"({waves / math.ceil(waves):.2f} busy); rung 5's persistent grid (fill and epilogue hidden): "
              f"{steps_1[5] - 1:+.1%} over rung {OVER[5]}; the TMA store's epilogue: {alone:+.1%} (above)")
        require(steps_1[5] > 1 and alone > 0 and waves < math.ceil(waves), "part of the 1.2× is outside the loop",
                waves=waves, persistent=steps_1[5], store_alone=alone)
    require(_tile(cfg[1]) == _tile(cfg[3]) and wide["regs"] <= wide["entry"] and abs(t[3] / t[1] - 1) < RUNG3_OF_1 and abs(two) < 0.02
            and abs(reg) < 0.02 and built == [4, 5, 6, 7, 8] and 0.05 < alone < 0.12
            and abs(alone - (steps_1[7] - 1)) < 0.02 and max(steps_1, key=steps_1.get) == MOST,
            "the split alone buys no speed here; the later rungs are built on it; the TMA store gains on rung 3",
            rung3_of_1=t[3] / t[1], two_consumers=two, setmaxnreg=reg, built=built, store_alone=alone,
            steps=steps_1)


def _rows(results: dict, size: int, dtype: str) -> dict:
    return {r["rung"]: r for r in results["ladder"] if (r["size"], r["dtype"]) == (size, dtype)}


def tflops_by_rung(results: dict, size: int = 4096, dtype: str = "float16") -> dict:
    """{rung: TFLOP/s} of one ladder, rungs 1–8: the ``tflops`` of the record's ``ladder`` rows at
    ``size``³ ``dtype``. Raises ``KeyError`` when the record lacks a rung of that ladder."""
    rows = _rows(results, size, dtype)
    return {n: rows[n]["tflops"] for n in range(1, 9)}


def ladder(results: dict, size: int = 4096, dtype: str = "float16") -> tuple[dict, dict, dict]:
    """One ladder of a ``warp_specialization`` record, three dicts keyed by rung: TFLOP/s
    (:func:`tflops_by_rung`); the step (×) over the rung it was built from (:data:`OVER`, rungs
    2–8); the fraction of cuBLAS's TFLOP/s (the rows' ``of_cublas``). Raises ``KeyError`` when the
    record lacks a rung of that ladder."""
    tflops, rows = tflops_by_rung(results, size, dtype), _rows(results, size, dtype)
    return (tflops, {n: tflops[n] / tflops[p] for n, p in OVER.items()},
            {n: rows[n]["of_cublas"] for n in tflops})


def ladders(results: dict) -> dict:
    """{(size, dtype): :func:`ladder`} for the record's four ladders (:data:`LADDERS`), in that order."""
    return {z: ladder(results, *z) for z in LADDERS}


def one_change_steps(results: dict, size: int = 4096, dtype: str = "float16") -> dict:
    """{rung: ×} for 06 §3's question, one change at a time: rung 3 (the split, with its second
    consumer and ``setmaxnreg``) over rung 1, chapter 05's kernel; rungs 4–8 each over the rung it
    was built from (:data:`~.rung_notes.BASE`). Rung 2, half the split, is left out."""
    from .rung_notes import BASE
    t = tflops_by_rung(results, size, dtype)
    return {n: t[n] / t[b] for n, b in BASE.items() if n != 2}


def biggest_steps(step: dict, count: int = 2) -> list[int]:
    """The ``count`` rungs with the largest step (×) in ``step`` ({rung: ×}), largest first."""
    return sorted(step, key=step.get, reverse=True)[:count]


def traced_epilogue(results: dict, rung: int) -> float:
    """A rung's traced epilogue at 4096³: SM cycles per tile (:func:`~.figures.trace_numbers` of the
    record's trace of that rung)."""
    from .figures import trace_numbers
    return trace_numbers(next(t for t in results["traces"] if t["rung"] == rung))["epilogue_cycles"]


# ---- the ladder's check cells (06 §3, 06c §2): each sentence's bounds, named ---------------------
#: rung 7's step over rung 6 at 4096³: "+8 %" (6–10 %)
RUNG7_4096 = (1.06, 1.10)
#: rung 7's step at 8192³: "4 %" (2.5–6 %)
RUNG7_8192 = (1.025, 1.06)
#: "the saving predicts rung 7's step": rung 6's untraced tile, shortened by the traced saving, gives
#: rung 7's measured step within this fraction
SAVING_MATCH = 0.02
#: rung 8's fraction of cuBLAS's TFLOP/s on every ladder: "at cuBLAS's speed"
AT_CUBLAS = 0.98
#: rung 5's step over rung 3 at 4096³: "2 %" (1–4 %)
RUNG5_4096 = (1.01, 1.04)
#: a step within this of × 1 moved "nothing" (rung 5 at 8192³) or "less than 1.5 %" (rungs 4 and 6)
FLAT = 0.015
#: a later tile's first wait over the first tile's, rung 5 traced: "a tenth" (0.05–0.2)
LATER_WAIT = (0.05, 0.2)
#: rung 8's step over rung 7 on every ladder: "about 1 %" (0–3 %)
RUNG8 = (1.0, 1.03)
#: rung 2 over rung 1: "lost about 15 %" (kept 0.80–0.90)
RUNG2_OF_1 = (0.80, 0.90)
#: rung 3 over rung 1: "back at rung 1 (within 2 %)"
RUNG3_OF_1 = 0.02
#: each ladder's two biggest steps, largest first: "rung 3 is the biggest step; rung 7 the next"
BIGGEST = [3, 7]
#: 06 §3's question, one change at a time: the split counted whole (rung 3 over rung 1, chapter 05's
#: kernel), each later rung over the rung it was built from (:data:`~.rung_notes.BASE`, rung 2, half
#: the split, left out): the rung whose change gains most on every ladder, "rung 7's TMA store"
MOST = 7
#: the rungs that missed their band on the figure's ladder besides rung 7; the ladders where rung 2
#: missed; the rungs that missed nowhere
FIGURE_MISSES, RUNG2_MISSES, NEVER_MISSED = [3, 5, 6], [(8192, "bfloat16"), (8192, "float16")], (4, 8)


def claims(results: dict, core: bool = False):
    """The ladder's check cells: yield ``(sentence, holds, numbers)`` for each sentence, each
    ``holds`` computed from the ``warp_specialization`` record with the bounds above. All of them
    guard deep dive 06c §2's four-ladder loop; ``core``: only those 06 §3's answer note leans on
    (rungs 2, 3, 7 and 8, the change that gains most (:data:`MOST`), the misses). A generator: the
    cell's ``notebook.require`` stops at the first sentence that fails, before the next is computed."""
    from .figures import prediction_check
    from .rung_notes import ladder_steps
    lad = {(r["size"], r["dtype"], r["rung"]): r for r in results["ladder"]}
    runs = sorted({(z, d) for z, d, _ in lad}, key=lambda z: (z[0], z[1] != "float16"))   # the four ladders
    if not core:
        yield "the loop above walks the record's four ladders", runs == list(LADDERS), {"runs": runs}
    lads = ladders(results)                                  # per ladder, by rung: TFLOP/s, ×, of cuBLAS
    over = {z: step_z for z, (_, step_z, _) in lads.items()}
    of1 = {z: {b: t_z[b] / t_z[1] for b in (2, 3)} for z, (t_z, _, _) in lads.items()}   # over rung 1
    top = {z: biggest_steps(over[z]) for z in runs}          # each ladder's two biggest steps
    L = ladder_steps(results)                                # the small steps: rung 5's waits
    rung = {n: {z: over[z][n] for z in runs} for n in (4, 5, 6, 7, 8)}   # each later step, by ladder
    of_cublas = {z: lads[z][2][8] for z in runs}             # rung 8, of cuBLAS
    step7 = over[LADDERS[0]][7]                              # the figure's ladder
    tile6 = tile_cycles(results, 6)                          # rung 6's untraced tile
    saved = traced_epilogue(results, 6) - traced_epilogue(results, 7)
    yield ("rung 7: +8 % at 4096³ (6–10 %), 4 % at 8192³; the saving predicts rung 7's step; rung 8 runs at "
           "cuBLAS's speed (0.98 or more)",
           all(RUNG7_4096[0] < v < RUNG7_4096[1] if z[0] == 4096 else RUNG7_8192[0] < v < RUNG7_8192[1]
               for z, v in rung[7].items())
           and abs(tile6 / (tile6 - saved) / step7 - 1) < SAVING_MATCH and min(of_cublas.values()) >= AT_CUBLAS,
           {"rung7": rung[7], "step7": step7, "rung8": of_cublas})
    if not core:
        yield ("rung 5 gains 2 % at 4096³ and nothing at 8192³; later tiles wait a tenth as long as the first; "
               "rungs 4 and 6 moved less than 1.5 % (rung 4's sweep: no other tile beat rung 3's, so its row is "
               "rung 3's own build); rung 8 gains about 1 %",
               all(RUNG5_4096[0] < v < RUNG5_4096[1] if z[0] == 4096 else abs(v - 1) < FLAT for z, v in rung[5].items())
               and LATER_WAIT[0] * L["first"] < L["later"] < LATER_WAIT[1] * L["first"]
               and max(abs(rung[b][z] - 1) for z in runs for b in (4, 6)) < FLAT
               and all(lad[z + (4,)]["label"] == lad[z + (3,)]["label"] for z in runs)
               and all(RUNG8[0] < v < RUNG8[1] for v in rung[8].values()),
               {"rung5": rung[5], "flat": (rung[4], rung[6]), "rung8": rung[8], "first": L["first"],
                "later": L["later"]})
    if not core:
        yield ("each over the rung it was built from, rung 3 is the biggest step; rung 7 the next",
               all(v == BIGGEST for v in top.values()), {"top": top})
    most = {z: max(one_change_steps(results, *z).items(), key=lambda kv: kv[1]) for z in runs}
    yield ("rung 2 lost about 15 % of rung 1; rung 3 is back at rung 1 (within 2 %); one change at a time (the "
           "split: rung 3 over rung 1; each later rung over the rung it was built from), rung 7's TMA store "
           "gains most, on every ladder",
           all(RUNG2_OF_1[0] < v[2] < RUNG2_OF_1[1] and abs(v[3] - 1) < RUNG3_OF_1 for v in of1.values())
           and all(n == MOST for n, _ in most.values()),
           {"of1": of1, "most": most})
    missed = {n: sorted(z for z, (_, side) in prediction_check(results, n)["each"].items() if side != "inside")
              for n in range(2, 9) if n != 7}                # each ladder's own verdict
    yield ("against the predictions frozen before the GPU ran: rung 7 ran above its band; on the figure's ladder "
           "rungs 3, 5 and 6 fell outside theirs too; rung 2 outside at 8192³ (both ladders), inside at 4096³; "
           "rungs 4 and 8 inside on every ladder",
           prediction_check(results, 7)["outside"] == "above it"
           and [n for n, zs in missed.items() if LADDERS[0] in zs] == FIGURE_MISSES
           and missed[2] == RUNG2_MISSES and not any(missed[n] for n in NEVER_MISSED),
           {"missed": missed})


def _tally(p: dict) -> str:
    """A :func:`~.figures.prediction_check`'s verdicts over every ladder, counted: "4 below"."""
    sides = [s for _, s in p["each"].values()]
    return ", ".join(f"{sides.count(s)} {s}" for s in ("inside", "above", "below") if s in sides)


def prediction_table(results: dict, size: int = 4096, dtype: str = "float16") -> str:
    """Rungs 2–8 of a ``warp_specialization`` record as text, one :func:`~.figures.prediction_check`
    per rung: what the rung is measured as (a share of cuBLAS, or a % step over the rung it was built
    from: :data:`~.figures.PREDICTION_BANDS`), its frozen band (the figure's orange) and its
    measurement on the figure's ladder (``size``, ``dtype``, as 06 §3's :func:`~.figures.plot_ladder`
    draws it), both in that measure ("same build (0 %)": rung 4's sweep kept its parent's build),
    and whether it is inside, above or below the band there; then
    how many of the record's ladders are inside, above, below."""
    from .figures import PREDICTION_BANDS, prediction_check
    short = {"float16": "fp16", "bfloat16": "bf16"}.get(dtype, dtype)
    ladders = {(r["size"], r["dtype"]) for r in results["ladder"]}
    sizes, types = ({z[i] for z in ladders} for i in (0, 1))
    lines = [f"{'rung':>4}  {'measured as':<13}  {'orange band':<13}  {f'figure: {size}³ {short}':<24}  "
             f"all {len(ladders)} ladders ({len(sizes)} sizes, {len(types)} types)"]
    for n in range(2, 9):
        p = prediction_check(results, n)
        kind, ref, _, _ = PREDICTION_BANDS[n]
        unit = "of cuBLAS" if kind == "of cuBLAS" else f"over rung {ref}"
        text, side = p["each"][size, dtype]
        value = "same build (0 %)" if text.startswith("same build") else text.removesuffix(" " + unit)
        tally = _tally(p)
        measure = unit if kind == "of cuBLAS" else "% " + unit
        lines.append(f"{n:>4}  {measure:<13}  {p['predicted']:<13}  {f'{value}: {side}':<24}  {tally}")
    return "\n".join(lines)


@guards
def row_reading(results: dict, n: int = 5, size: int = 4096, dtype: str = "float16") -> str:
    """06 §3's "how to read a row" of :func:`prediction_table`, worked on rung ``n`` in plain words,
    as text: what the rung is measured as, its band (set before it ran), what it
    measured on the figure's ladder (``size``³ ``dtype``) and the verdict there (inside the band: a
    hit; above or below it: a miss), then the last column's count over all the record's ladders.
    Generated from the record (:func:`~.figures.prediction_check`). Guards its comparing sentence:
    the printed (rounded) value must sit on the verdict's side of the printed band, else
    :class:`~asynctc.core.notebook.ClaimError` (a value that rounds onto the band's edge)."""
    from .figures import PREDICTION_BANDS, prediction_check
    kind, ref, lo, hi = PREDICTION_BANDS[n]
    p = prediction_check(results, n)
    text, side = p["each"][size, dtype]
    if kind == "of cuBLAS":
        digits, value = 2, p["values"][size, dtype]
        measure, band, shown = "a share of cuBLAS", f"{lo:.2f} to {hi:.2f}", f"{value:.2f}"
    else:
        digits, value = 3, p["values"][size, dtype] - 1
        measure, band = f"a step over rung {ref}", f"{lo:+.1%} to {hi:+.1%}"
        shown = f"rung {ref}'s own build (0 %)" if text.startswith("same build") else f"{value:+.1%}"
    lo_, hi_, v_ = (round(x, digits) for x in (lo, hi, value))
    where = "the figure's ladder" if (size, dtype) == LADDERS[0] else f"the {size}³ {dtype} ladder"
    sentence = (f"On {where} it measured {shown}: "
                + {"inside": "inside the band, a hit.", "above": "above the band, a miss.",
                   "below": "below the band, a miss."}[side])
    require(side == ("inside" if lo_ <= v_ <= hi_ else "above" if v_ > hi_ else "below"),
            sentence, value=value, lo=lo, hi=hi)
    same = [m for m in range(2, 9) if m != n and prediction_check(results, m)["each"][size, dtype][0]
            .startswith("same build")]      # newcomer 54: rung 4's "same build (0 %)" read unexplained
    why = "".join(f" Rung {m}'s {'sweep' if m == 4 else 'step'} kept rung {PREDICTION_BANDS[m][1]}'s "
                  "build." for m in same)
    return (f"How to read a row, rung {n}: it is measured as {measure}. Its band, set before it ran, was "
            f"{band}. {sentence} The last column gives the verdict on all {len(p['each'])} ladders: {_tally(p)}.{why}")


@guards
def show_epilogue(results: dict, store_results: dict) -> None:
    """06 §3: the TMA store's saving, traced (rungs 6 and 7 at 4096³) and timed alone on rung 3
    (record ``ws_store_ablation``), printed as arithmetic; guards the markdown's
    sentences:

    - the TMA store cuts the traced epilogue to 0.26 of the register stores' cycles (0.20–0.32 of
      them; and both rungs' SASS store counts agree with the model of the stores);
    - the cycles saved are about 6 % of a traced tile (4–8 %), close to (within half to one and a
      half times) the 7 % (5–9 %) the TMA store bought alone on rung 3, and so is the share of the
      untraced tile.

    It prints the saving over both tiles the course divides by: rung 6's traced tile (its traced
    k-tile cycles × k-tiles, :func:`epilogue_note`) and its untraced one (:func:`tile_cycles`, 06 §3's).
    """
    from .figures import epilogue_note
    from .store_suite import store_findings
    holds, _text, ep = epilogue_note(results, sass_counts=False)
    reg, tma, tile = ep["rung6"], ep["rung7"], ep["tile_cycles"]
    untraced = tile_cycles(results, 6)
    saved, saved_untraced = (reg - tma) / tile, (reg - tma) / untraced
    gain = store_findings(store_results)["store_alone"] - 1
    print(f"cycles per tile at 4096³, traced epilogue: register stores {reg:.0f}, TMA store {tma:.0f}\n"
          f"rung 6's whole tile: {tile:.0f} traced (k-tiles × traced k-tile), {untraced:.0f} untraced "
          "(timed median × clock ÷ tiles)\n"
          f"epilogue: TMA store / register stores = {tma:.0f} / {reg:.0f} = {tma / reg:.2f}\n"
          f"saved, over the untraced tile (06 §3's note's divisor): ({reg:.0f} − {tma:.0f}) / {untraced:.0f} = "
          f"{saved_untraced:.1%} of a tile\n"
          f"saved, over the traced tile: ({reg:.0f} − {tma:.0f}) / {tile:.0f} = {saved:.1%} of a tile\n"
          f"the TMA store alone (ws_store_ablation): rung 3 + TMA store / rung 3 = {gain + 1:.3f}, {gain:+.1%}")
    require(holds and 0.20 < tma / reg < 0.32, "The TMA store cuts the epilogue to 0.26 of its cycles.",
            rung6=reg, rung7=tma)
    require(0.04 < saved < 0.08 and 0.05 < gain < 0.09
            and all(0.5 * gain < x < 1.5 * gain for x in (saved, saved_untraced)),
            "The cycles saved are about 6 % of a traced tile, close to the 7 % the store bought alone.",
            saved=saved, saved_untraced=saved_untraced, gain=gain)


def tile_cycles(results: dict, rung: int, size: int = 4096, dtype: str = "float16") -> float:
    """A rung's untraced SM cycles per tile (one CTA's share of a cluster's work items, clusters of
    two 128×256 tiles): its timed median × the measured SM clock ÷ the tiles each cluster takes.
    06 §3's check (:func:`claims`) and 06c §3 divide rung 7's traced epilogue saving by rung 6's."""
    label = next(r["label"] for r in results["ladder"]
                 if (r["rung"], r["size"], r["dtype"]) == (rung, size, dtype))
    row = next(r for r in results["rows"] if r.get("label") == label and r["size"] == size)
    items = (size // 128) * (size // 256) // 2
    return row["median_ms"] * 1e-3 * row["sm_mhz"] * 1e6 / -(-items // row["active_clusters"])


#: The walk through ``hopper_gemm.cu`` (06d §4 shows its epilogue): part → (first line, last line) as regular expressions on
#: the kernel's own section comments, so an edit of the kernel moves the excerpt with it.
PARTS = {
    "launch": (r"# TMA copies a box", r"shmem_bytes=SMEM_BYTES"),   # whole.py's launcher, not the kernel
    "barriers": (r"── chapter 03: barriers initialised", r"const int wg = threadIdx.x / 128"),
    "producer": (r"^  if \(wg == 0\) \{", r"^  \}$"),
    "consumers": (r"── chapter 06: a consumer warpgroup takes", r"^  __syncwarp\(\);"),
    "epilogue": (r"── chapter 04: the epilogue", r"^\}$"),
}
#: The consumers' k-loop inside the "consumers" part: exercise 1's answer, held back until it passes.
KLOOP = (r"^  int stage = 0, prev = 0;", r"^  \}$", "the consumers' k-loop: exercise 1's answer")


def _code_only(text: str) -> str:
    """``text`` without its whole-line ``//`` comments, except the section headers (``// ── ...``,
    with the comment lines that continue them): the lesson's markdown tells what the comments tell."""
    kept, going_on = [], False                   # going_on: the last header line wraps to the next
    for line in text.splitlines():
        comment = line.lstrip().startswith("//")
        header = comment and ("──" in line or "lines left out" in line or going_on)
        going_on = header and not line.rstrip().endswith(("─", ")", "."))
        if header or not comment:
            kept.append(line)
    return "\n".join(kept)


def show_kernel_part(name: str, reveal: bool = True, comments: bool = False):
    """Display one part of ``hopper_gemm.cu`` (:data:`PARTS`) as written, as highlighted CUDA C++
    (:func:`asynctc.core.notebook.source_excerpt`); "launch" is :mod:`.whole`'s launcher (tensor maps, grid,
    launch), as Python. The "consumers" part leaves out its k-loop (:data:`KLOOP`) unless
    ``reveal``. Whole-line comments other than the section headers are left out unless
    ``comments`` (the file keeps them all). Raises KeyError for a name not in :data:`PARTS`."""
    import re
    from ..core import notebook
    start, end = PARTS[name]
    if name == "launch":
        from IPython.display import Code
        from . import whole
        lines = open(whole.__file__, encoding="utf-8").read().splitlines()
        i = next(n for n, x in enumerate(lines) if re.search(start, x))
        j = next(n for n, x in enumerate(lines) if n > i and re.search(end, x))
        return Code("\n".join(x[4:] for x in lines[i:j + 1] if comments or not x.lstrip().startswith("#")),
                    language="python")
    from IPython.display import Code
    omit = KLOOP if name == "consumers" and not reveal else None
    text = notebook.source_excerpt("hopper_gemm.cu", start, end, hooks=True, omit=omit)
    return Code(text if comments else _code_only(text), language="cuda")
