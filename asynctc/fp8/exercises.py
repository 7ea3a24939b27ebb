"""Chapter 07's exercises (auto-checked in notebooks/07_fp8_precision): ``ch07.quantize`` (the FP8
value a number becomes), ``ch07.block_scale`` (the dequantisation scale of a 1×128 block; the
checkpoints use it), ``ch07.round_trip`` (what an element of a scaled block comes back as after
quantising and dequantising) and ``ch07.promote_interval`` (the longest promotion interval the
model allows), each with a hint giver that names a mistake only when the answer is exactly what
that mistake gives, and otherwise says what to compute; and the code exercise ``ch07.promotion``
(the learner's promotion loop over :func:`~asynctc.models.fp8.tc_dot`, judged against the model
and float64 with :func:`~asynctc.models.fp8.accumulation_bound` on fresh inputs; a known mistake —
no promotion, no restart, no tail, a wrong interval — is named). Registered when
:mod:`asynctc.fp8` is imported."""

from __future__ import annotations

import math

import numpy as np

from ..core import exercises as _ex
from ..models.fp8 import (FORMATS, KTILE, Fp8Format, accumulation_bound, amax_scale, fp8_format,
                          predict_swamp, quantize, swamp_operands, tc_dot)


def _k_tiles(n: int) -> str:
    """``"k-tile is"`` or ``"3 k-tiles are"``: the tail of a sentence about the last ``n`` k-tiles."""
    return "k-tile is" if n == 1 else f"{n} k-tiles are"


def _grid_neighbours(value: float, fmt: Fp8Format) -> tuple[float, float]:
    """The two values of the format's grid around ``value`` (within range)."""
    v = np.arange(256, dtype=np.uint8).view(fmt.dtype).astype(np.float64)
    g = np.unique(v[np.isfinite(v)])
    i = int(np.clip(np.searchsorted(g, value), 1, len(g) - 1))
    return float(g[i - 1]), float(g[i])


def _quantize_hint(answer, value: float, dtype: str = "float8_e4m3fn"):
    fmt = fp8_format(dtype)
    if isinstance(answer, float) and math.isnan(answer):
        return (f"a bare cast of {value} gives NaN (e4m3) or inf (e5m2) above the range; "
                f"quantize saturates to ±{fmt.max:g}")
    if answer == value:
        return (f"{value} is not on the {fmt.ptx} grid: {fmt.frac_bits} fraction bits, so between "
                "2^e and 2^(e+1) the step is 2^(e - 3) for e4m3 (2^(e - 2) for e5m2)")
    if abs(value) <= fmt.max:
        lo, hi = _grid_neighbours(abs(value), fmt)
        if abs(value) - lo == hi - abs(value) and abs(answer) in (lo, hi):
            return (f"{abs(value):g} lies exactly halfway between {lo:g} and {hi:g}: a tie goes to "
                    "the value whose last fraction bit is 0 (ties to even)")
        near = lo if abs(abs(value) - lo) <= abs(hi - abs(value)) else hi
        far = hi if near == lo else lo
        if abs(answer) == far:
            # checked before the other format's grid: a far neighbour may be on both (320 for 300)
            way, side = ("up", "below") if far == hi else ("down", "above")
            step = f"the step there is {hi - lo:g}; " if abs(value) >= fmt.min_normal else ""
            return (f"{far:g} is on the {fmt.ptx} grid, but it is {abs(value):g} rounded {way}: "
                    f"{step}the grid value {side} {abs(value):g} is nearer (round to nearest)")
    other = "float8_e5m2" if fmt.name == "float8_e4m3fn" else "float8_e4m3fn"
    if answer == float(quantize(np.array([value]), other, scale=1.0)[0][0]):
        return f"that is the {FORMATS[other].ptx} grid's nearest value; this is {fmt.ptx}"
    if abs(value) >= fmt.min_normal and abs(answer) == 2.0 ** math.floor(math.log2(abs(value))) \
            and abs(answer) != abs(value):
        return (f"that keeps only the leading bit of {value}; {fmt.ptx} keeps {fmt.frac_bits} "
                "fraction bits below it")
    if abs(value) > fmt.max and abs(answer) > fmt.max:
        return f"{fmt.ptx}'s largest finite value is {fmt.max:g}: larger magnitudes saturate"
    if math.isfinite(answer) and abs(answer) <= fmt.max \
            and float(quantize(np.array([float(answer)]), fmt.name, scale=1.0)[0][0]) != answer:
        grid = ""
        if abs(answer) >= fmt.min_normal:
            e = 2.0 ** math.floor(math.log2(abs(answer)))
            grid = (f": between {e:g} and {2 * e:g} its values are {e:g} · (1 + j/"
                    f"{2 ** fmt.frac_bits}), a step of {e / 2 ** fmt.frac_bits:g}")
        # the neighbours themselves would give the answer away: name how to find them
        return (f"{answer:g} is not on the {fmt.ptx} grid{grid}; the answer is the {fmt.ptx} "
                f"value nearest {value:g} — find the two grid values around it")
    return None


@_ex.exercise("ch07.quantize", "The FP8 value (as a number) that `value` becomes when quantised to "
              "`dtype` with scale 1: round to nearest (ties to even), saturating at the largest "
              "finite value.", hint=_quantize_hint)
def _ch07_quantize(value: float, dtype: str = "float8_e4m3fn") -> float:
    return float(quantize(np.array([float(value)]), dtype, scale=1.0)[0][0])


def _block_scale_hint(answer, amax: float, dtype: str = "float8_e4m3fn", pow2: bool = False):
    fmt = fp8_format(dtype)
    want = float(amax_scale(amax, dtype, pow2))
    tries = [(fmt.max / amax, "that is the quantisation factor max / amax; the dequantisation "
                              "scale is its inverse, s = amax / max (x ≈ q · s)"),
             (amax, "the scale maps amax onto the format's largest finite value: divide by it"),
             (amax / 240.0, "240 is the largest value of e4m3fnuz (another FP8 variant); OCP e4m3fn, "
                            "what wgmma takes, goes up to 448"),
             (amax / 57344.0 if fmt.name != "float8_e5m2" else amax / 448.0,
              "that is the other format's largest value")]
    if pow2:
        tries.append((amax / fmt.max, "pow2 asks for the next power of two at or above amax / max"))
        tries.append((2.0 ** math.floor(math.log2(amax / fmt.max)),
                      "rounded down: amax / s would then exceed the largest finite value"))
    else:
        tries.append((2.0 ** math.ceil(math.log2(amax / fmt.max)),
                      "no power of two was asked for: s = amax / max"))
    return _ex.known_mistake(answer, want, tries, rtol=1e-5)


@_ex.exercise("ch07.block_scale", "The dequantisation scale s (x ≈ q · s) of one 1×128 block of A "
              "whose largest magnitude is `amax`, for `dtype` (with `pow2`: rounded up to a power "
              "of two). Three significant figures are enough.", rtol=1e-3, hint=_block_scale_hint)
def _ch07_block_scale(amax: float, dtype: str = "float8_e4m3fn", pow2: bool = False) -> float:
    return float(amax_scale(amax, dtype, pow2))


def _round_trip(value: float, amax: float, dtype: str) -> tuple[float, float, float]:
    """(s, x / s, q) for ``value`` in a block of largest magnitude ``amax``."""
    q, s = quantize(np.array([float(value)]), dtype, scale=amax_scale(amax, dtype))
    return float(s), float(value) / float(s), float(q.astype(np.float64)[0])


def _round_trip_hint(answer, value: float, amax: float, dtype: str = "float8_e4m3fn"):
    fmt = fp8_format(dtype)
    s, y, q = _round_trip(value, amax, dtype)
    want = q * s
    lo, hi = _grid_neighbours(abs(y), fmt)
    far = hi if abs(q) == lo else lo
    other = "float8_e5m2" if fmt.name == "float8_e4m3fn" else "float8_e4m3fn"
    s2, _, q2 = _round_trip(value, amax, other)
    grid = f"the rounding to the {fmt.ptx} grid between the divide and the multiply"

    def unrounded(symptom):        # x / s · s: the value never rounded to the grid
        return _ex.tiered(symptom, f" Is x / s = {value:g} / s an {fmt.ptx} value? Quantising rounds it to the "
                                   "nearest one before q · s.",
                          f" x / s = {y:.4g} lies between the {fmt.ptx} values {math.copysign(lo, y):g} and "
                          f"{math.copysign(hi, y):g}: round it to "
                          f"the nearer one (ties to even), q, and q · s is what comes back.")
    tries = [(q, f"that is q, the {fmt.ptx} value itself; dequantise it: x ≈ q · s"),
             (float(value), unrounded(f"{value:g} is the input back unchanged: that skips {grid}.")),
             (want - value, "that is the error q · s − x; the question asks for q · s itself"),
             (math.copysign(far, y) * s, f"that dequantises a neighbour of x / s on the {fmt.ptx} "
                                        "grid, not the nearest one (round to nearest, ties to even)"),
             (round(y) * s, f"that rounds x / s to an integer; {fmt.ptx} has {fmt.frac_bits} fraction "
                            "bits, so its step between 2^e and 2^(e+1) is 2^(e − "
                            f"{fmt.frac_bits})"),
             (q2 * s2, f"that is the {FORMATS[other].ptx} round trip (its own scale); this is "
                       f"{fmt.ptx}")]
    hit = _ex.known_mistake(answer, want, tries, rtol=1e-4)
    if hit:
        return hit
    if isinstance(answer, (int, float)) and want != value and abs(answer - value) < abs(want - value) / 4:
        # x / s rounded to a few decimals, not to the grid, then times s: x comes back, nearly
        return unrounded(f"{answer:.5g} is x / s · s, nearly the input {value:g}: it skips {grid}.")
    return (f"compute it in three steps: the block's scale s = amax / {fmt.max:g}; x / s, rounded "
            f"to the nearest {fmt.ptx} value q (round to nearest, ties to even); then q · s")


@_ex.exercise("ch07.round_trip", "An element `value` of a 1×128 block of A whose largest magnitude "
              "is `amax` is quantised to `dtype` with the block's scale s = amax / max, then "
              "dequantised (q · s). What value comes back? Four significant figures are enough.",
              rtol=1e-3, hint=_round_trip_hint)
def _ch07_round_trip(value: float, amax: float, dtype: str = "float8_e4m3fn") -> float:
    s, _, q = _round_trip(value, amax, dtype)
    return q * s


def _promote_errors(k: int, most: int) -> dict[int, float]:
    return {p: e[k] for p, e in predict_swamp(ks=(k,), promotes=tuple(range(0, most + 1))).items()}


def _promote_hint(answer, k: int, target: float):
    if not isinstance(answer, int) or answer < 0:
        return "answer a number of k-tiles (0: never promote)"
    tiles = k // KTILE
    want = _ch07_promote(k, target)
    how = (f"compute fp8.predict_swamp(ks=({k},), promotes=(1, 2, …)) and take the largest "
           f"interval P whose error, and every shorter one's, is below {target:g}")
    if answer > tiles:
        unit = ""
        if answer == 128 * want:
            unit = " (if you counted fp8 elements: a k-tile is 128 of them)"
        return f"K = {k} has only {tiles} k-tiles of 128{unit}; {how}"
    err = _promote_errors(k, max(answer, 1))[answer]
    if err >= target:
        every = "no promotion" if answer == 0 else \
            f"promotion every {answer} k-tile{'s' if answer != 1 else ''}"
        unit = ""
        if answer == 4 * want:
            unit = " (if you counted wgmma k32 steps: a k-tile is 4 of them)"
        return f"the model gives {err:.1e} with {every} — not below {target:g}{unit}; {how}"
    return (f"promotion every {answer} k-tile{'s' if answer != 1 else ''} stays below {target:g} "
            f"({err:.1e}), but a longer interval does too: the question asks for the largest "
            "(promotion costs throughput)")


@_ex.exercise("ch07.promote_interval", "Per the model (13 fraction bits, groups of 32, the swamping "
              "input), the LARGEST number of k-tiles between promotions that keeps the median "
              "relative error below `target` at K = `k` (0 = never promote).", hint=_promote_hint)
def _ch07_promote(k: int, target: float) -> int:
    errs = _promote_errors(k, k // KTILE)
    ok = [p for p, e in errs.items() if e < target and p > 0]
    if errs[0] < target:
        return 0
    if not ok:
        raise ValueError(f"target={target}: even promotion every k-tile gives {errs[1]:.1e}")
    best = 0
    for p in range(1, k // KTILE + 1):           # the longest interval before the first miss
        if errs[p] >= target:
            break
        best = p
    return best


# --------------------------------------------------------------------------------------------------
# ch07.promotion: the consumer's promotion, written by the learner
# --------------------------------------------------------------------------------------------------

#: (interval, k-tiles) the promotion exercise tries: K = 128 · k-tiles; K = 4096 is where the
#: unpromoted sum of the swamping input leaves the bound; the other two leave a tail
#: (k-tiles not a multiple of the interval).
PROMOTION_CASES = ((1, 32), (2, 7), (3, 8))


def _promoted(p: np.ndarray, points, reset: bool = True, add: bool = True) -> float:
    """The model's fp32 total of products ``p`` (1-D, K = 128 · k-tiles): each k-tile's four k32
    steps go into the limited-precision accumulator (:func:`tc_dot` from ``acc``); after each
    k-tile in ``points`` the accumulator is added into an fp32 total (``add``; else the total is
    replaced) and restarted at 0 (``reset``)."""
    total, acc = np.float32(0.0), 0.0
    for t in range(len(p) // KTILE):
        acc = tc_dot(p[t * KTILE:(t + 1) * KTILE], acc=acc)
        if t in points:
            total = np.float32(total + np.float32(acc)) if add else np.float32(acc)
            if reset:
                acc = 0.0
    return float(total)


def _points(tiles: int, every: int, tail: bool = True, shift: int = 1) -> set[int]:
    """The k-tiles after which a promotion happens: t with (t + shift) % every == 0, and the last
    k-tile (``tail``)."""
    return {t for t in range(tiles) if (t + shift) % every == 0} | ({tiles - 1} if tail else set())


def promoted_sum(products, interval: int) -> float:
    """The answer key of ``ch07.promotion``: the fp32 sum the consumer ends with when it promotes
    every ``interval`` k-tiles (and after the last one), as :func:`model_gemm` with
    ``promote=interval`` computes it for one element."""
    p = np.asarray(products, dtype=np.float64)
    return _promoted(p, _points(len(p) // KTILE, interval))


def _promotion_inputs(tiles: int, rng) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Fresh FP8 operand rows of K = 128 · ``tiles``: two swamping elements and two standard-normal
    ones, each as (what, a row, b row)."""
    k = tiles * KTILE
    sa, sb = swamp_operands(2, 1, k, rng)
    ra = (rng.standard_normal((2, k))).astype(FORMATS["float8_e4m3fn"].dtype)
    rb = (rng.standard_normal((1, k))).astype(FORMATS["float8_e4m3fn"].dtype)
    return ([("the swamping input", sa[i], sb[0]) for i in range(2)] +
            [("standard-normal inputs", ra[i], rb[0]) for i in range(2)])


def _as_sum(value, what: str) -> float:
    if value is None or value is Ellipsis:
        raise _ex.NotAnswered("your function returns None: write its body (return the fp32 total, a "
                              "number) and run the cell again.")
    try:
        if np.ndim(value) != 0 or isinstance(value, (bool, str)):
            raise TypeError
        v = float(value)
    except (TypeError, ValueError):
        raise _ex.WrongReturn(f"your function returned {value!r} for {what}; return one number, the "
                              "total") from None
    if not math.isfinite(v):
        raise _ex.WrongReturn(f"your function returned {v} for {what}; return the (finite) total")
    return v


def _judge_promotion(answer) -> str | None:
    if not callable(answer):
        return "pass your function itself, e.g. check('ch07.promotion', promoted_sum)"
    rng = np.random.default_rng()
    worst = []                       # (error without promotion / bound) on the swamping input
    for interval, tiles in PROMOTION_CASES:
        k = tiles * KTILE
        for what, a, b in _promotion_inputs(tiles, rng):
            p = a.astype(np.float64) * b.astype(np.float64)
            got = _as_sum(answer(p.copy(), interval), f"K = {k}, interval = {interval}")
            want = promoted_sum(p, interval)
            ref = float(p.sum())
            bound = float(accumulation_bound(a[None], b[None], promote=interval)[0, 0])
            tol = 2.0 ** -20 * float(np.abs(p).sum())      # an fp64 total is fine
            if what.startswith("the swamping"):
                worst.append(abs(_promoted(p, {tiles - 1}) - ref) / bound)
            if abs(got - want) <= tol:
                continue
            # The test is the model's promoted sum itself, not the bound: the bound says how far a
            # correct sum may stray from float64, so a wrong sum can still fall inside it.
            inside = abs(got - ref) <= bound
            case = (f"on {what} with K = {k} ({tiles} k-tiles), interval = {interval}: your total "
                    f"{got:.6g}, the correct promoted sum {want:.6g} (yours is off by "
                    f"{abs(got - want):.3g}); float64 {ref:.6g}, the bound with promotion "
                    f"{bound:.3g}" + (": yours is inside the bound, but the bound only limits how "
                                      "far the correct sum may stray from float64; the check asks "
                                      "for the correct sum itself" if inside else
                                      ": yours is outside it"))
            mistakes = [
                (_promoted(p, {tiles - 1}), "that is the unpromoted accumulator: its error grows with "
                 "K. Every `interval` k-tiles, add acc into the fp32 total and restart acc at 0"),
                (_promoted(p, _points(tiles, interval), reset=False), "you add acc into the total but "
                 "never restart it at 0: each promotion adds the earlier k-tiles again"),
                (_promoted(p, _points(tiles, interval), add=False), "`total = acc` replaces the total: "
                 "only the last interval is left. Add: total += acc"),
                (_promoted(p, _points(tiles, interval, tail=False)), f"{tiles} k-tiles is not a "
                 f"multiple of {interval}: the last {_k_tiles(tiles % interval)} never added. Promote once "
                 "more after the last k-tile"),
                (_promoted(p, _points(tiles, interval, shift=0)), "your promotions come after k-tiles "
                 "0, interval, 2·interval, …: one k-tile early. Promote after k-tile t when t + 1 is "
                 "a multiple of interval"),
            ] + [(_promoted(p, _points(tiles, j)), f"that promotes every {j} k-tile"
                  f"{'s' if j > 1 else ''}; interval = {interval} asks for every {interval}")
                 for j in range(1, tiles + 1) if j != interval]
            for value, hint in mistakes:
                if abs(value - want) > tol and abs(got - value) <= tol:
                    return f"{hint} ({case})."
            if not inside:
                return (f"{case}. Per k-tile: acc = fp8.tc_dot(products[t*128:(t+1)*128], acc=acc); "
                        "every `interval` k-tiles and after the last: total += acc, acc = 0.")
            return f"{case}. Accumulate each k-tile with fp8.tc_dot(..., acc=acc) and keep the total in fp32."
    unpromoted = ("; without promotion the swamping input at K = 4096 falls outside it"
                  if max(worst) > 1 else "")            # the wording, not the number: nbval compares it
    return _ex.Accepted(f"the model's sum on {4 * len(PROMOTION_CASES)} fresh elements, within the "
                        f"float64 bound{unpromoted}")


@_ex.code_exercise("ch07.promotion", "Write promoted_sum(products, interval): the fp32 total the "
                   "consumer ends with when its wgmma accumulator (fp8.tc_dot, 13 fraction bits) "
                   "sums the K products one k-tile (128) at a time and is added into an fp32 total "
                   "and restarted every `interval` k-tiles, and after the last one. Pass the "
                   "function: check('ch07.promotion', promoted_sum).", judge=_judge_promotion)
def _ch07_promotion():
    return promoted_sum


def _speed_rows(results: dict, size: int) -> dict[str, float]:
    """§4's speed table at ``size``³ (TFLOP/s): ours FP8 and FP16, cuBLASLt FP8, cuBLAS FP16."""
    from .figures import _speed_kernels, table_row
    short = ("lt8", "ours8", "cb16", "ours16")
    return {k: table_row(results, size, kernel)["tflops"] for k, (_, kernel) in zip(short, _speed_kernels())}


#: 07 §4's exercise 1: the three predictions of our FP8 top rung's TFLOP/s over our FP16 top rung's,
#: each with its ratio. The right one is nearest the record's ratio (reader 110: a ratio graded
#: within 3 % of the record was a reading of the table, not a prediction).
SPEEDUP_CHOICES = {"about 2×": 2.0, "about 1.5×": 1.5, "about 1×": 1.0}
_SPEEDUP_ALIASES = {f"{pre}{v}{x}": c for c, v in (("about 2×", "2"), ("about 1.5×", "1.5"), ("about 1×", "1"))
                    for pre in ("", "about ", "~") for x in ("", "x", "×", " x", " ×")}


def _speedup(results: dict, size: int) -> float:
    t = _speed_rows(results, size)
    return t["ours8"] / t["ours16"]


@_ex.exercise("ch07.fp8_speedup", "07 §4's exercise 1, a prediction: will our FP8 top rung run about 2×, "
              "about 1.5× or about 1× our FP16 top rung's TFLOP/s at `size`³? The right choice is the one "
              "nearest the ratio the record measured (its `results`); any answer opens the speed table.",
              choices=tuple(SPEEDUP_CHOICES), aliases=_SPEEDUP_ALIASES)
def _ch07_fp8_speedup(results: dict, size: int = 8192) -> str:
    ratio = _speedup(results, size)
    return min(SPEEDUP_CHOICES, key=lambda c: abs(SPEEDUP_CHOICES[c] - ratio))


@_ex.accepted_note("ch07.fp8_speedup")
def _ch07_fp8_speedup_note(answer, results: dict, size: int = 8192) -> str:
    """Why the right choice is right, from the record: the ratio and its gap to the 2× ceiling."""
    t = _speed_rows(results, size)
    ratio = t["ours8"] / t["ours16"]
    if abs(ratio - 2.0) > 0.02 * 2.0:                  # not at the ceiling: the ratio alone
        return f"ours {t['ours8']:.0f}/{t['ours16']:.0f} = {ratio:.3f}"
    gap = math.ceil(abs(1 - ratio / 2.0) * 100)
    return (f"ours {t['ours8']:.0f}/{t['ours16']:.0f} = {ratio:.3f}, within {gap} % of the 2× ceiling: the "
            "loads and the math both halve; nothing else costs")


@_ex.diagnosis("ch07.fp8_speedup")
def _ch07_fp8_speedup_hint(answer, expected, results: dict, size: int = 8192) -> str | None:
    t, guess, right = _speed_rows(results, size), SPEEDUP_CHOICES[answer], SPEEDUP_CHOICES[expected]
    rule = (" FP8 halves the bytes per element, and the Tensor Core does twice FP16's math per clock: the "
            "time the loads and the math set halves, anything else does not. Ours at "
            f"{size}³: {t['ours8']:.0f} (our FP8 top rung) / {t['ours16']:.0f} (our FP16 top rung) = "
            f"{t['ours8'] / t['ours16']:.3f}, nearest '{expected}'.")
    if guess < right:                      # too low: the learner did not count what FP8 halves
        symptom = {1.0: "'about 1×' says FP8 gains nothing over FP16.",
                   1.5: "'about 1.5×' is the seed article's low end. It would hold if FP8 halved only two thirds of FP16's "
                          "run time and left the other third unchanged."}[guess]
        return _ex.tiered(symptom, " What does FP8 halve per element, and what does the Tensor Core do "
                          "twice as fast?", rule)
    symptom = {2.0: "'about 2×' is the ceiling: every part of the run would have to halve.",
               1.5: "'about 1.5×' still expects the halved bytes and the doubled math to pay."}[guess]
    return _ex.tiered(symptom, " What does the run spend time on besides loads and Tensor Core math?", rule)
