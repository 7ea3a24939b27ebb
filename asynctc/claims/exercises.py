"""Chapter 10's auto-checked exercises: the core lesson's (notebooks/10_claims) bound of a claim
from same-run pairs and its verdict (``ch10.bound``, ``ch10.bound_verdict``, from
:mod:`asynctc.claims.bounds`); deep dive 10b's fraction of peak under both denominators from a
record row, and a verdict from two fractions and a claim's band. The expected
answers come from the chapter's own functions (:func:`asynctc.claims.verdicts.fractions`,
:func:`~asynctc.claims.verdicts.judged`, :func:`~asynctc.claims.verdicts.combine`)."""

from __future__ import annotations

from ..core import bench
from ..core.exercises import accepted_note, diagnosis, exercise, tiered
from .bounds import BOUND_VERDICTS, NOT_SETTLED, reading, values_that_hold, verdict
from .verdicts import FAILS, HOLDS, PARTLY, combine, fractions, judged


@exercise("ch10.fraction_both",
          "A record row says `tflops` TFLOP/s, its SM clock measured at `sm_mhz` MHz, on a GPU of "
          "`sm_count` SMs (dense fp16: 4096 FLOP/clk/SM; datasheet 989.4 TFLOP/s). What fraction of "
          "peak is it under each denominator? Answer (datasheet fraction, measured-clock fraction), "
          "as fractions (0.75, not 75). (`sm_mhz_after`, optional: the row's clock probed after "
          "the sample, for the hint.)", rtol=0.01)
def _fraction_both(tflops: float, sm_mhz: float, sm_count: int, dtype: str = "float16",
                   sm_mhz_after: float | None = None):
    f = fractions({"tflops": tflops, "sm_mhz": sm_mhz}, sm_count, dtype)
    return (round(f["datasheet"], 6), round(f["measured"], 6))


def _near(a, b, rtol: float = 0.01) -> bool:
    return abs(a - b) <= rtol * abs(b)


@diagnosis("ch10.fraction_both")
def _fraction_both_hint(answer, expected, tflops, sm_mhz, sm_count, dtype="float16",
                        sm_mhz_after=None):
    if not isinstance(answer, list) or len(answer) != 2:
        return "two fractions: (datasheet, measured clock)."
    a, b = answer
    d, m = expected
    rate = bench.FLOP_PER_CLK_PER_SM[dtype]
    if _near(a, m) and _near(b, d):
        return "the two are swapped: the datasheet fraction first, the measured-clock one second."
    if _near(a, 100 * d) or _near(b, 100 * m):
        return "answer fractions (0.75), not percent (75)."
    if sm_mhz_after and _near(b, tflops / (sm_count * rate * sm_mhz_after * 1e-6), 0.002):
        return (f"{sm_mhz_after:.0f} MHz is the clock probed after the sample, once the Tensor Cores "
                "had stopped and the clock had recovered: an upper bound, not the clock the kernel "
                "ran at. The denominator asks for the clock during the work — the in-flight one, "
                "the first clock the row prints.")
    if _near(b, tflops / (sm_count * rate * 1980e-6)):
        return ("1980 MHz is the clock attribute, the maximum: the denominator is the clock the "
                "row measured while the kernel ran.")
    if _near(b, tflops / (sm_count * rate * 1830e-6)):
        return "1830 MHz is the datasheet's boost clock: use the row's measured clock."
    if _near(b, m / 2) or _near(b, 2 * m):
        return f"dense {dtype} is {rate} FLOP per clock per SM (FP8 has twice that)."
    if _near(a, d / 2) or _near(a, 2 * d):
        return "the datasheet figure of this dtype is the dense one (989.4 for fp16; 1978.9 is FP8)."
    if _near(b, m * sm_count) or _near(b, m / sm_count):
        return "the peak is summed over every SM: SMs × FLOP/clk/SM × clock."
    if _near(b, m * 1e6) or _near(b, m / 1e6) or _near(b, m * 1e3) or _near(b, m / 1e3):
        return "mind the units: MHz × 1e6 clocks per second, TFLOP/s × 1e12."
    if _near(a, d) and not _near(b, m):
        return "the datasheet fraction is right; check the measured-clock one."
    if _near(b, m) and not _near(a, d):
        return "the measured-clock fraction is right; check the datasheet one."
    f = fractions({"tflops": tflops, "sm_mhz": sm_mhz}, sm_count, dtype)
    ds = f["datasheet_tflops"]
    return tiered(f"both are off: {a:g} of the datasheet's {ds:g} TFLOP/s is {a * ds:.0f} TFLOP/s, "
                  f"not the row's {tflops:g}, and the measured-clock fraction is off too.",
                  " Each fraction is the row's TFLOP/s over a peak: which peak does each "
                  "denominator name, and what do the row's SMs and measured clock make of it?",
                  f" Datasheet: {tflops:g} / {ds:g}. Measured clock: {tflops:g} / ({sm_count} SMs "
                  f"× {rate} FLOP/clk × {sm_mhz:g} MHz × 1e-6).")


def _fractions_of(datasheet, measured, tflops, sm_mhz, sm_count, dtype):
    """(datasheet, measured): given, or computed from the row (the notebook passes the row, so that
    the fractions are the learner's to compute)."""
    if tflops is None:
        if datasheet is None or measured is None:
            raise TypeError("pass datasheet= and measured=, or the row's tflops=, sm_mhz=, sm_count=")
        return datasheet, measured
    f = fractions({"tflops": tflops, "sm_mhz": sm_mhz}, sm_count, dtype)
    return f["datasheet"], f["measured"]


@exercise("ch10.verdict",
          "A seed claim puts a kernel at `low`–`high` of peak (judged within ±`tol`). The record "
          "gives `datasheet` of the datasheet peak and `measured` of the peak at the measured clock "
          "(or the row itself: `tflops` at `sm_mhz` on `sm_count` SMs, whose two fractions are "
          "exercise ch10.fraction_both's). Which verdict does chapter 10 give: 'holds', 'partly' or "
          "'does not hold'?",
          (HOLDS, PARTLY, FAILS),
          aliases={"hold": HOLDS, "yes": HOLDS, "partial": PARTLY, "fails": FAILS,
                   "does not": FAILS, "doesn't hold": FAILS, "no": FAILS})
def _verdict(low: float, high: float, datasheet: float | None = None,
             measured: float | None = None, tol: float = 0.005, tflops: float | None = None,
             sm_mhz: float | None = None, sm_count: int | None = None, dtype: str = "float16"):
    datasheet, measured = _fractions_of(datasheet, measured, tflops, sm_mhz, sm_count, dtype)
    parts = [judged("datasheet", datasheet, low, high, "", tol=tol),
             judged("measured clock", measured, low, high, "", tol=tol)]
    return combine(parts)


@diagnosis("ch10.verdict")
def _verdict_hint(answer, expected, low, high, datasheet=None, measured=None, tol=0.005,
                  tflops=None, sm_mhz=None, sm_count=None, dtype="float16"):
    datasheet, measured = _fractions_of(datasheet, measured, tflops, sm_mhz, sm_count, dtype)
    inside = {name: low - tol <= v <= high + tol
              for name, v in (("datasheet", datasheet), ("measured clock", measured))}
    if expected == PARTLY:
        which = next(k for k, v in inside.items() if v)
        return (f"only one denominator puts it inside {low:g}–{high:g} (±{tol:g}): the {which} one "
                "— the other does not.")
    if expected == HOLDS:
        return "both fractions lie inside the band (with its tolerance)."
    above = [k for k, v in (("datasheet", datasheet), ("measured clock", measured)) if v > high + tol]
    return (f"neither fraction lies inside {low:g}–{high:g}, even with the ±{tol:g} tolerance"
            + (f" (the {' and '.join(above)} one lies above it, and a band is not a floor: above "
               "it is outside too)" if above else "")
            + ".")


# --------------------------------------------------------------------------------------------------
# ch10.bound and ch10.bound_verdict (the core lesson): bound a claim from same-run pairs
# --------------------------------------------------------------------------------------------------

def _ratios(pairs) -> list[float]:
    return [c / o for o, c in pairs]


@exercise("ch10.bound",
          "`pairs` lists (ours ms, cuBLAS ms), each pair timed in one run and round. Bound the "
          "claim's number, the ratio cuBLAS ms / ours ms: answer (lowest, highest) over the pairs, "
          "as ratios (0.99, not 99).", rtol=0.0004)
def _bound(pairs):
    r = _ratios(pairs)
    return (round(min(r), 6), round(max(r), 6))


@diagnosis("ch10.bound")
def _bound_hint(answer, expected, pairs):
    if not isinstance(answer, list) or len(answer) != 2:
        return "two numbers: (lowest, highest)."
    a, b = answer
    lo, hi = expected
    r = _ratios(pairs)
    if _near(a, hi, 0.002) and _near(b, lo, 0.002):
        return "lowest first, then highest."
    if _near(a, 100 * lo, 0.002) or _near(b, 100 * hi, 0.002):
        return "answer ratios (0.99), not percent (99)."
    med = sorted(r)[len(r) // 2]
    if _near(a, b, 0.0005):
        return (f"an interval: the lowest and the highest of the {len(r)} ratios, not one reading "
                f"(their median is {med:.3f}).")
    if _near(a, 1 / hi, 0.002) and _near(b, 1 / lo, 0.002):
        return ("that is ours over cuBLAS's time: the claim's number is cuBLAS's time over ours, "
                "a speed ratio (above 1: ours is faster).")
    cross = (min(c for _, c in pairs) / max(o for o, _ in pairs), max(c for _, c in pairs) / min(o for o, _ in pairs))
    if _near(a, cross[0], 0.002) and _near(b, cross[1], 0.002):
        return ("you paired times from different rows: each ratio divides the two times of one row "
                "(one run and round); a cuBLAS time of another run moved with that run's clock.")
    if _near(a, 1 / cross[1], 0.002) and _near(b, 1 / cross[0], 0.002):
        return ("two slips: that is ours over cuBLAS's time, and the times are paired across rows; "
                "each ratio is cuBLAS's time over ours, within one row (one run and round).")
    if _near(a, lo, 0.002) and (a >= 1) != (lo >= 1):
        return (f"your lowest is rounded across 1, and whether the low end lies below 1 is what decides "
                "an order claim like \"beats cuBLAS\": keep four digits.")
    if _near(a, lo, 0.002):
        return "the lowest is right; the highest is the largest of the ratios."
    if _near(b, hi, 0.002):
        return "the highest is right; the lowest is the smallest of the ratios."
    (o, c), n = pairs[0], len(r)           # reader 125-127: the same words at a second miss
    return tiered(f"({a:.4g}, {b:.4g}) is not the lowest and the highest of the {n} rows' ratios.",
                  " Work row by row: what is each row's cuBLAS ms / ours ms?",
                  f" Row 1: {c:.5f} / {o:.5f} = {c / o:.4f}; "
                  + (f"divide each of the other {n - 1} rows the same way, then answer (lowest, highest) "
                     "of the ratios." if n > 1 else "with one row, it is both the lowest and the highest."))


@exercise("ch10.bound_verdict",
          "An order claim says the ratio lies above `above` (\"beats cuBLAS\": above 1.0). From the "
          "interval of ch10.bound over `pairs`, which verdict: 'holds' (the whole interval above), "
          "'does not hold' (the whole at or below) or 'not settled' (it straddles)?",
          BOUND_VERDICTS,
          aliases={"hold": HOLDS, "yes": HOLDS, "fails": FAILS, "no": FAILS, "doesn't hold": FAILS,
                   "unsettled": NOT_SETTLED, "undecided": NOT_SETTLED, "partly": NOT_SETTLED})
def _bound_verdict(pairs, above: float = 1.0):
    lo, hi = _bound(pairs)
    return verdict(lo, hi, above=above)


@diagnosis("ch10.bound_verdict")
def _bound_verdict_hint(answer, expected, pairs, above=1.0):
    r = _ratios(pairs)
    n_above = sum(x > above for x in r)
    symptom = f"the {len(r)} ratios run from {min(r):.3f} to {max(r):.3f}."
    question = (f" Where does that interval lie against {above:g}, and which verdict does §3 give an "
                "interval placed so?")
    if expected == NOT_SETTLED:
        rule = (f" {n_above} of {len(r)} pairs lie above {above:g}, {len(r) - n_above} not: the "
                f"interval straddles {above:g}, so the runs disagree.")
    elif expected == HOLDS:
        rule = f" Every pair lies above {above:g}: the lowest is {min(r):.3f}."
    else:
        rule = f" No pair lies above {above:g}: the highest is {max(r):.3f}."
    return tiered(symptom, question, rule)


@exercise("ch10.values_hold",
          "A value claim writes the ratio cuBLAS ms / ours ms with `digits` decimals. Which values "
          "so written does the interval of ch10.bound over `pairs` support (§3's value rule: the "
          "value, read ± half a unit of its last digit, touches the interval)? Answer every one, as "
          "numbers, in any order: [0.98, 0.99], say.", unordered=True)
def _values_hold(pairs, digits: int = 2):
    lo, hi = _bound(pairs)
    return [round(float(v), digits) for v in values_that_hold(lo, hi, digits)]


@accepted_note("ch10.values_hold")
def _values_hold_note(answer, pairs, digits=2):
    """Readers 134-136: rounding each row's ratio may give the same list, by the rows' spacing only."""
    r = sorted(_ratios(pairs))
    if {round(x, digits) for x in r} != set(_values_hold(pairs, digits)):
        return None
    unit = 10 ** -digits
    return (f"rounding each row's ratio gives the same list here because no two neighbouring "
            f"ratios lie {unit:.{digits}f} or more apart. The rule reads the interval, not the rows: "
            f"with rows {1 - unit:.{digits}f} and {1 + 2 * unit:.{digits}f} it admits "
            f"{1:.{digits}f} and {1 + unit:.{digits}f} too, which no row rounds to.")


@diagnosis("ch10.values_hold")
def _values_hold_hint(answer, expected, pairs, digits=2):
    lo, hi = _bound(pairs)
    got = {round(float(v), digits) for v in answer if isinstance(v, (int, float))}
    if any(v > 10 for v in got):
        return "answer ratios (1.01), not percent (101)."
    inside = {v for v in expected if lo <= v <= hi}
    kept = "[" + ", ".join(f"{v:.{digits}f}" for v in sorted(got)) + "]" if got else "nothing"   # 1.00, not 1.0
    symptom = f"the interval is [{lo:.4f}, {hi:.4f}] and you kept {kept}."
    if got == inside and got != set(expected):
        return tiered(symptom, " Which rule of §3 decides a value claim: does the value itself have to "
                      "lie inside, or its reading?",
                      f" A value written with {digits} decimals reads ± half a unit of its last digit: "
                      + "; ".join(f"{v:.{digits}f} reads {a:.{digits + 1}f}–{b:.{digits + 1}f}"
                                  for v in sorted(set(expected) - got) for a, b in [reading(v, digits)])
                      + ", which touches the interval, so it holds too.")
    extra = sorted(got - set(expected))
    missing = sorted(set(expected) - got)
    parts = []
    for v in extra:
        a, b = reading(v, digits)
        parts.append(f"{v:.{digits}f} reads {a:.{digits + 1}f}–{b:.{digits + 1}f}, which misses "
                     f"[{lo:.4f}, {hi:.4f}]")
    if missing:
        many = len(missing) > 1
        parts.append(f"{len(missing)} value{'s' if many else ''} whose reading touches the interval "
                     f"{'are' if many else 'is'} left out")
    return tiered(symptom, " Read each value ± half a unit of its last digit: which readings touch the interval?",
                  " " + "; ".join(parts) + ".")
