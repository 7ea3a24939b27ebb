"""Chapter 05's core lesson, one call per cell: each ``show_*`` prints a small table from the ring
model or the record and **asserts the sentence the notebook's markdown states about it**, so that a
re-measurement that flips a sentence fails the notebook loudly instead of leaving it wrong. Each
docstring quotes the sentence it guards. No GPU, no timing, no plotting (figures: :mod:`.figures`,
:mod:`.figures_ring`).
"""

from __future__ import annotations

from ..core.notebook import require
from ..models import pipeline as mp
from .design import FIT_ON, design, fitted_cap
from .figures import flat_from, wait_floor   # data helpers of the figures module (they do not plot)
from .results import best_by_width, best_tflops_by_width, depth_sweep, ktile_clocks, resident_by_depth  # noqa: F401 (ktile_clocks: pl.ktile_clocks)
from .trace import timeline_spans
from .config import PipelineConfig


# ---- §1: why phase parity --------------------------------------------------------------------

def parity_story(stages: int = 2, k_tiles: int = 4, consumers: int = 1, wait_pending: int = 1) -> dict:
    """The ring model run twice on one ring: with the kernel's parity waits, and with waits that ask
    only "has this barrier completed?" (protocol ``ready_flag``, :data:`asynctc.models.pipeline.NO_PARITY`).
    Returns ``rows`` (per k-tile: stage, fill, when its bytes landed, when the parity wait on full
    passed, when the flag wait passed, or None after the flag run stopped), the flag run's
    ``race`` (:class:`~asynctc.models.pipeline.Race` or None) and the ``correct`` run's diagnosis."""
    ok = mp.simulate(stages, wait_pending, consumers, k_tiles)
    bad = mp.simulate(stages, wait_pending, consumers, k_tiles, protocol="ready_flag")

    def passes(run):
        out = {}
        for s in run.spans:
            if s.kind == "wait_full" and s.lane == "wg0":
                out.setdefault(s.k, s.end)
        return out
    landed = {s.k: s.end for s in ok.spans if s.kind == "tma"}
    good, flag = passes(ok), passes(bad)
    rows = [{"k": k, "stage": k % stages, "fill": k // stages, "landed": landed[k], "parity": good[k],
             "flag": flag.get(k)} for k in range(k_tiles)]
    return {"rows": rows, "race": bad.diagnosis, "correct": ok.diagnosis}


def show_parity_story(stages: int = 2, k_tiles: int = 4, consumers: int = 1, wait_pending: int = 1) -> dict:
    """Print :func:`parity_story`'s table (cycles) and the model's diagnosis of the flag run.

    Guards §1's sentences: "with parity every wait passes after its own k-tile's bytes land"; "the
    flag run breaks at the first refill: k-tile S in stage 0, fill 1, whose wait passes on fill 0's
    completion before its bytes land"; "the model's timing hides the race in longer rings"."""
    st = parity_story(stages, k_tiles, consumers, wait_pending)
    print("k-tile | stage | fill | bytes land | parity wait ends | flag wait ends")
    for r in st["rows"]:
        flag = "—" if r["flag"] is None else f"{r['flag']:.0f}"
        mark = "  ← before its bytes" if r["flag"] is not None and r["flag"] < r["landed"] else ""
        print(f"{r['k']:6} | {r['stage']:5} | {r['fill']:4} | {r['landed']:10.0f} | {r['parity']:16.0f} | "
              f"{flag:>14}{mark}")
    race = st["race"]
    print("flag run, the model's diagnosis:", race.what if race else "none")
    require(st["correct"] is None and all(r["parity"] >= r["landed"] for r in st["rows"]),
            "with parity every wait passes after its own k-tile's bytes land", record=str(st["rows"]))
    require(isinstance(race, mp.Race) and race.iteration == stages and race.stage == 0,
            "the flag run breaks at k-tile S, stage 0, fill 1", record=str(race))
    longer = mp.simulate(4, 1, 2, 64, protocol="ready_flag").diagnosis
    require(longer is None, "the model's timing hides the race in longer rings (S = 4, two consumers, "
            "64 k-tiles)", record=str(longer))
    return st


# ---- §3: correct first -------------------------------------------------------------------------

def show_checks(record) -> None:
    """Print the record's float64 checks (and, on a live sm_90a GPU, two builds checked now).
    Guards §3's "every combination of the build's settings passed": raises if a check failed."""
    from ..core import runtime
    from .launch import check_now
    from .suite import checks_lines
    if runtime.runs_live("sm_90a"):
        print(*check_now(), sep="\n")
    print(f"{record.label()}:", *checks_lines(record.results))
    require(all(c["passed"] for c in record.results["checks"]), "every combination passed",
            record=str([c for c in record.results["checks"] if not c["passed"]][:3]))


# ---- §4: the depth sweep ----------------------------------------------------------------------

def smem_share(bn: int, bm: int = 128, bk: int = 64, smem_bytes_per_clk: int = 128,
               flop_per_clk: int = 4096) -> float:
    """Share of shared memory's bandwidth (128 B/clk per SM) a bm×bn×bk fp16 k-tile needs while
    its math runs at 4096 FLOP/clk per SM: A and B are written (TMA) and read (wgmma) once each."""
    moved = 2 * (bm + bn) * bk * 2
    clocks = 2 * bm * bn * bk / flop_per_clk
    return moved / clocks / smem_bytes_per_clk


def show_widths(results: dict) -> dict:
    """Print, per tile width, the shared-memory share a k-tile needs and the best fp16 4096³ ratio
    to cuBLAS (with its operands), the 128×256 S = 4 ÷ S = 3 step; then 128×128's depth sweep with its CTAs per SM.

    Guards §4's sentences: "the 128×256 curve flattens after S = 3; S = 4 adds only a few percent"
    (recorded 1.57 %, printed with its operands; the guard accepts 0.5–3 %); "it stops at S = 4: a 48 KiB stage, five past the 227 KiB opt-in"
    (``PipelineConfig``'s own arithmetic, against the record's limit); "the wider tile needs less of
    shared memory's bandwidth and is faster"; "128×128 drops after S = 3, where only one CTA fits per SM"."""
    from ..core.notebook import ratio
    from .results import cublas_row
    best, tf = best_by_width(results), best_tflops_by_width(results)
    cub = cublas_row(results, "float16", 4096)["tflops"]
    print("tile    | shared-memory share | best ÷ cuBLAS (fp16 4096³)")
    for bn in (128, 256):
        print(f"128×{bn} | {smem_share(bn):19.0%} | {ratio(tf[bn], cub, 'TFLOP/s')}")
    moved, clocks = 2 * (128 + 256) * 64 * 2, 2 * 128 * 256 * 64 / 4096
    print(f"share = bytes written and read ÷ math clocks ÷ 128 B/clk; 128×256: {moved} / {clocks:.0f} / 128 "
          f"= {smem_share(256):.0%}")
    d128, occ = depth_sweep(results, "128x128x64/c2"), resident_by_depth(results, "128x128x64/c2")
    print(f"128×128 by S = {min(d128)}–{max(d128)}: " + " ".join(f"{d128[S]:.0f}" for S in sorted(d128))
          + " TFLOP/s; CTAs per SM " + " ".join(str(occ[S]) for S in sorted(d128)))
    require(best[256] > best[128], "the wider tile is faster", record=str(best))
    wide = depth_sweep(results, "128x256x64/c2")
    print(f"128×256, S = 4 ÷ S = 3: {ratio(wide[4], wide[3], 'TFLOP/s', 3)}")
    require(flat_from(wide) == 3 and 0.005 < wide[4] / wide[3] - 1 < 0.03,
            "the 128×256 curve flattens after S = 3; S = 4 adds only a few percent", record=str(wide))
    cfg, limit = PipelineConfig(bm=128, bn=256, stages=1), results["smem_limit"]
    require(cfg.stage_bytes == 48 * 1024 and limit == 227 * 1024 and cfg.max_stages(limit) == 4,
            "a 48 KiB stage: four fit in 227 KiB, five do not", record=f"{cfg.stage_bytes}, {limit}")
    require(d128[4] < d128[3] and occ[3] > occ[4] == 1, "128×128 drops after S = 3, one CTA per SM",
            record=f"{d128}, {occ}")
    return {"best": best, "d128": d128, "occupancy": occ}


# ---- §5: the trace beside the model, the check cell's bounds ---------------------------------------

#: clocks per k-tile, traced over untraced: "reading the clock ... slows the traced loop about 1.5×"
TRACE_COST = (1.40, 1.65)
#: consumer 0's waits on full from k-tile 5 on, at most this × the floor: "sit at the floor"
AT_FLOOR = 1.1
#: clocks per k-tile, untraced GPU over the ring model: "about 1.2× as long as in the model"
UNTRACED_OVER_MODEL = (1.10, 1.35)
#: consumer 1's waits on full at k-tiles 7–11, more than this × the floor: "waits out each load"
REAL_WAIT = 2.0


def ktile_reading(trace: dict, k: int = 8) -> dict:
    """One k-tile of CTA 0 in a record's ``traces`` row, in clocks from the CTA's start: ``issue``
    (thread 0 issued its TMA), consumer 1's wait on full (``c1_begin`` → ``c1_end``: the data had
    landed by its end, the trace's earliest sign of it), consumer 0's (``c0_begin``, ``c0_wait``
    clocks long) and the trace's wait ``floor`` (:func:`~.figures.wait_floor`). Per consumer c,
    ``c{c}_refill``: its release of k-tile k − 2 to its wait on k (consumer 0's thread 0 refills a
    stage in it) and ``c{c}_math``: its issue of k − 1's wgmmas to that release."""
    at = {(s.lane, s.kind, s.k): s for s in timeline_spans(trace["cta0"], k + 1)}
    c0, c1 = at["wg0", "wait_full", k], at["wg1", "wait_full", k]
    gaps = {f"c{c}_{name}": at[w, "wait_full", k].start - at[w, "release", k - 2].start if name == "refill"
            else at[w, "release", k - 2].start - at[w, "mma", k - 1].start
            for c, w in enumerate(("wg0", "wg1")) for name in ("refill", "math")}
    return {"k": k, "issue": at["tma", "tma", k].start, "c1_begin": c1.start, "c1_end": c1.end,
            "c0_begin": c0.start, "c0_wait": c0.end - c0.start, "floor": wait_floor(trace), **gaps}


def show_ktile_reading(trace: dict, k: int = 8) -> dict:
    """Print 05 §5's worked reading of k-tile ``k`` (:func:`ktile_reading`), every number from the
    trace: a timeline, one event a line (clock, who, what) in clock order, then the conclusion in one
    sentence. Guards its story: "consumer 1 waits out the load" (its wait ends after the issue),
    "consumer 0 begins after the data landed" (after consumer 1's wait ended), "its wait sits at
    the floor" (under :data:`AT_FLOOR` × the floor); "consumer 0 lags for its refill": from release
    to next wait it takes over twice consumer 1's time, while its math part takes no longer."""
    r = ktile_reading(trace, k)
    require(r["c1_end"] > r["issue"] and r["c0_begin"] > r["c1_end"] and r["c0_wait"] < AT_FLOOR * r["floor"],
            "consumer 1 waits out the load; consumer 0 begins after it landed and waits at the floor", **r)
    require(r["c0_refill"] > 2 * r["c1_refill"] and r["c0_math"] <= r["c1_math"],
            "consumer 0 lags for its refill: over twice consumer 1's release-to-wait, no longer math", **r)
    events = sorted([
        (r["issue"], "thread 0", f"has issued the load of k-tile {r['k']}"),
        (r["c1_begin"], "consumer 1", "begins its wait on full"),
        (r["c1_end"], "consumer 1", f"passes: the data has landed, {r['c1_end'] - r['issue']:.0f} clocks after the issue"),
        (r["c0_begin"], "consumer 0", f"begins its wait on full, {r['c0_begin'] - r['c1_end']:.0f} clocks after "
                                      "consumer 1 passed"),
        (r["c0_begin"] + r["c0_wait"], "consumer 0", f"passes after {r['c0_wait']:.0f} clocks, the floor "
                                                     f"({r['floor']:.0f}): the data was already there"),
    ], key=lambda e: e[0])                          # sorted: the issue's stamp may follow consumer 1's wait
    print(f"k-tile {r['k']}, read from CTA 0's trace (clocks from its start):")
    print(f"{'clock':>7}  {'who':<11} what")
    for clock, who, what in events:
        print(f"{clock:>7.0f}  {who:<11} {what}")
    print(f"Consumer 0 is late, not waiting on data: between its release and its next wait, its thread 0 "
          f"also refills a stage, {r['c0_refill']:.0f} clocks here against consumer 1's {r['c1_refill']:.0f}.")
    return r


def show_ktile_clocks(results: dict, trace: dict, ring) -> dict:
    """Print :func:`ktile_clocks`'s three clocks per k-tile (traced, untraced, model) and their two
    ratios on one line, chapter 05 §5's evidence for its answer (05b §3 does the arithmetic in the
    open; :func:`trace_claims` guards the ratios' bounds). Returns the three clocks."""
    k = ktile_clocks(results, trace, ring)
    print(f"clocks per k-tile: traced {k['traced']:.0f}, untraced {k['untraced']:.0f}, model {k['model']:.0f}; "
          f"traced ÷ untraced {k['traced'] / k['untraced']:.1f}×, untraced ÷ model {k['untraced'] / k['model']:.1f}×")
    return k


def trace_claims(traced: float, untraced: float, model: float, late: list, free: list, floor: float,
                 ahead: list):
    """The check cells of 05 §5's answer and 05b §3's clocks per k-tile: yield ``(sentence, holds, numbers)`` for the four claims on the lines under the trace,
    in order, from the trace cell's numbers (clocks per k-tile ``traced``, ``untraced`` and the
    ``model``'s; the waits on full at k-tiles 4–11 of consumer 0, GPU ``late`` and model ``free``, and
    of consumer 1, GPU ``ahead``; the wait ``floor``), each against the bounds above."""
    yield ("reading the clock at each event slows the traced loop about 1.5×",
           TRACE_COST[0] < traced / untraced < TRACE_COST[1], {"traced": traced, "untraced": untraced})
    yield ("from k-tile 5 on consumer 0's traced waits sit at the floor; the model never waits",
           max(late[1:]) < AT_FLOOR * floor and not any(free), {"gpu": late, "floor": floor, "model": free})
    yield ("from k-tile 7 on consumer 1 waits out each load: over twice the floor each time",
           min(ahead[3:]) > REAL_WAIT * floor, {"consumer 1": ahead, "floor": floor})
    yield ("untraced, a k-tile still takes about 1.2× as long as in the model",
           UNTRACED_OVER_MODEL[0] < untraced / model < UNTRACED_OVER_MODEL[1],
           {"untraced": untraced, "model": model})


# ---- §5's conclusion: the L2 cap, fitted and tested in deep dive 05b §6 -------------------------

def model_check(results: dict, record=None) -> list[dict]:
    """The L2 cap's fit and its test. Rows (128×256/c2, fp16): ``size``, ``stages``, ``pending``,
    ``record`` and ``free`` (model, no L2 cap) and ``capped`` (model, fitted cap) TFLOP/s, ``miss``
    (capped / record − 1) and ``fitted`` (True for the :data:`~.design.FIT_ON` configurations that identified
    the cap: 4096³, wait_group(1), S = 1–4; every other row is held out)."""
    free = {(4096, r["stages"]): r["tflops"] for r in mp.predict_depth_sweep(stages=[1, 2, 3, 4])}
    rows = []
    for size in (4096, 8192):
        for pending in (1, 0):
            for S in (1, 2, 3, 4):
                if pending == 1 and S == 1:
                    continue
                d = design(S, pending, 2, 256, size, record=record)
                if d.measured_tflops is None:
                    continue
                rows.append({"size": size, "stages": S, "pending": pending, "record": d.measured_tflops,
                             "free": free.get((size, S)) if pending == 1 or S == 1 else None,
                             "capped": d.model_tflops, "miss": d.error, "fitted": d.fitted})
    return rows


def show_model_check(results: dict, record=None, within: float = 0.15) -> dict:
    """Print :func:`model_check`'s table: the configurations the L2 cap was fitted on, then the held-out ones
    with the capped model's miss on each, and the division behind the no-cap gap and the worst miss.
    Chapter 05 §5 states its conclusion in one sentence; the fit and the test run in deep dive 05b §6.

    Guards 05b §6's sentences: "without a cap the model flattens at the same depth as the record, but
    above it"; "the cap is fitted on four configurations and misses them by under 15 %"; "on the held-out
    configurations it misses by under 15 % too"; "four configurations identified it, ten were not used"."""
    cap, worst_fit = fitted_cap(results)
    rows = model_check(results, record)
    meas = depth_sweep(results, "128x256x64/c2")
    free = {r["stages"]: r["tflops"] for r in mp.predict_depth_sweep(stages=sorted(meas))}
    print(f"no cap, S = {min(meas)}–{max(meas)}: model " + " ".join(f"{free[S]:.0f}" for S in sorted(meas))
          + " | record " + " ".join(f"{meas[S]:.0f}" for S in sorted(meas)) + " TFLOP/s")
    print(f"L2 cap {cap} B/clk/SM: the model's miss (model ÷ record − 1)")
    print(f"{'  S =':31}" + "".join(f"{S:>6}" for S in (1, 2, 3, 4)))
    for fitted in (True, False):
        for size in (4096, 8192):
            for pending in (1, 0):
                got = {r["stages"]: r["miss"] for r in rows
                       if (r["size"], r["pending"], r["fitted"]) == (size, pending, fitted)}
                if got:
                    cells = "".join(f"{got[S]:>+6.0%}" if S in got else " " * 6 for S in (1, 2, 3, 4)).rstrip()
                    print(f"  {'fitted on' if fitted else 'held out '} {size}³ wait_group({pending})" + cells)
    held = [r for r in rows if not r["fitted"]]
    worst_held = max(abs(r["miss"]) for r in held)
    top = max(meas)
    w = max(held, key=lambda r: abs(r["miss"]))
    print(f"no cap, S = {top}: {free[top]:.0f} / {meas[top]:.0f} = {free[top] / meas[top]:.2f}× the record; "
          f"worst held-out miss ({w['size']}³ wait_group({w['pending']}), S = {w['stages']}): "
          f"{w['capped']:.0f} / {w['record']:.0f} − 1 = {w['miss']:+.0%}")
    require(flat_from(free) == flat_from(meas) and free[top] > 1.05 * meas[top],
            "without a cap the model flattens where the record does, but above it", record=f"{free} vs {meas}")
    require(worst_fit < within, "the cap misses its four configurations by under 15 %", record=f"{worst_fit:.1%}")
    require(sum(r["fitted"] for r in rows) == 4 and len(held) == 10,
            "four configurations identified the cap, ten were not used", record=f"{len(rows) - len(held)} and {len(held)}")
    require(worst_held < within, "on the held-out configurations it misses by under 15 % too", record=f"{worst_held:.1%}")
    return {"cap": cap, "worst_fit": worst_fit, "worst_held": worst_held, "rows": rows}


def show_supply(supply_record) -> dict:
    """Print the l2_supply record's label and table (bytes per clock per SM: the ring alone, the GEMM, what
    the math needs).

    Guards deep dive 05b §5's sentences: "for 128×128 the ring alone brings less than the kernel needs"; "for
    128×256 at S = 4 it brings more than needed, yet the GEMM moves less than it needs"."""
    from . import supply_suite as supply
    supply_results = supply_record.results
    print(supply_record.label())
    print(supply.supply_table(supply_results))
    rows = supply.supply_rows(supply_results)
    small = max((r for r in rows if r["bn"] == 128), key=lambda r: r["loads_only"])
    big = next(r for r in rows if (r["bn"], r["stages"]) == (256, 4))
    print("math needs = a k-tile's bytes ÷ its Tensor Core clocks (4096 FLOP/clk): "
          + "; ".join(f"128×{bn}: {(128 + bn) * 64 * 2} / {2 * 128 * bn * 64 // 4096} = {(128 + bn) * 64 * 2 / (2 * 128 * bn * 64 / 4096):.0f}"
                      for bn in (128, 256)))
    print(f"128×128, best S = {small['stages']}: loads alone {small['loads_only']:.1f} < {small['need']:.1f} needed; "
          f"128×256, S = 4: GEMM {big['gemm']:.1f} < {big['need']:.1f} needed < {big['loads_only']:.1f} loads alone")
    require(small["loads_only"] < small["need"], "for 128×128 the ring alone brings less than needed",
            record=str(small))
    require(big["gemm"] < big["need"] < big["loads_only"],
            "for 128×256 the ring brings more than needed, the GEMM moves less", record=str(big))
    return {"small": small, "big": big}
