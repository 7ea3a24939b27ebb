"""Chapter 07's exercises (auto-checked in notebooks/07_fp8_precision): ``ch07.quantize`` (the FP8
value a number becomes), ``ch07.block_scale`` (the dequantisation scale of a 1×128 block; the
checkpoints use it), ``ch07.round_trip`` (what an element of a scaled block comes back as after
quantising and dequantising) and ``ch07.promote_interval`` (the longest promotion interval the
model allows), each with a hint giver that names a mistake only when the answer is exactly what
that mistake gives, and otherwise says what to compute. Registered when :mod:`asynctc.fp8` is
imported."""

from __future__ import annotations

import math

import numpy as np

from ..core import exercises as _ex
from ..models.fp8 import FORMATS, KTILE, Fp8Format, amax_scale, fp8_format, predict_swamp, quantize


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
    tries = [(q, f"that is q, the {fmt.ptx} value itself; dequantise it: x ≈ q · s"),
             (float(value), f"{value:g} is the input: quantising rounds x / s to the {fmt.ptx} grid "
                            "first, and q · s is what comes back"),
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
    return (f"compute it in three steps: the block's scale s = amax / {fmt.max:g}; x / s, rounded "
            f"to the nearest {fmt.ptx} value q (exercise 1's rule); then q · s")


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
