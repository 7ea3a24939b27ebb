"""The vocabulary of chapter 10: verdict words, one checked statement (:class:`Part`), a claim of
the seed article made of parts (:class:`Claim`), how a claim's verdict follows from its parts
(:func:`combine`), the two peak denominators of a fraction of peak (:func:`peak_parts`), and the
records the chapter reads (:func:`load_records`).

Nothing here measures. Every number comes from a record in ``data/`` (:mod:`asynctc.core.records`),
every verdict from a number and a band stated beside it, so a record with a different number gives
a different verdict — never a sentence that contradicts it.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping

from ..core import bench, records

# --------------------------------------------------------------------------------------------------
# Verdict words
# --------------------------------------------------------------------------------------------------

HOLDS = "holds"
FAILS = "does not hold"
PARTLY = "partly"
NOT_MEASURED = "not measured here"
BLACKWELL = "cannot be measured here — Blackwell"

#: Every verdict a seed claim or one of its parts can get, in the order a summary lists them.
VERDICTS = (HOLDS, PARTLY, FAILS, NOT_MEASURED, BLACKWELL)

#: Verdicts for a public anchor beside ours: our number matches theirs (within the tolerance the
#: row states), or lies below or above it.
MATCHES = "ours matches"
BELOW = "ours below"
ABOVE = "ours above"
ANCHOR_VERDICTS = (MATCHES, BELOW, ABOVE, NOT_MEASURED, BLACKWELL)

#: The two denominators of every fraction of peak (issue 23, item 3).
DATASHEET = "datasheet"
MEASURED_CLOCK = "measured clock"

#: The suites chapter 10 reads (it measures none itself).
SUITES = ("ceilings", "mma_sync", "cp_async", "tma_copy", "tma_equal", "wgmma", "pipeline",
          "warp_specialization", "fp8", "fp8_swizzle", "swizzle", "ws_limit", "matmul", "tcgen05")


class MissingRecord(LookupError):
    """A claim needs a record (or a row of it) that this machine's ``data/`` does not hold."""


# --------------------------------------------------------------------------------------------------
# One checked statement and one claim
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Part:
    """One sub-statement of a claim, checked against one number.

    ``what``: the sub-statement in our words; ``verdict``: one of :data:`VERDICTS` (or of
    :data:`ANCHOR_VERDICTS` in the anchors table); ``value``: the course's number it rests on (None
    when not measured); ``band``: ``(low, high)`` of the claim in the same unit (None for an open
    end); ``unit``: ``"fraction of peak"``, ``"×"``, ``"TFLOP/s"``, ``"cycles"``, ``"KiB"``,
    ``"registers"``, ``"checks"``; ``ours``: the measurement in words, with its numbers;
    ``denominator``: :data:`DATASHEET` or :data:`MEASURED_CLOCK` for a fraction of peak;
    ``clock``: the row's clock kind (:func:`asynctc.core.bench.clock_kind`) for one measured at a
    clock; ``suite``: the record; ``measure_with``: for a part not measured, what would measure it
    (a suite, a define, a command) — or why nothing here can.
    """

    what: str
    verdict: str
    value: float | None = None
    band: tuple[float | None, float | None] | None = None
    unit: str = ""
    ours: str = ""
    denominator: str | None = None
    clock: str | None = None
    suite: str | None = None
    measure_with: str | None = None
    theirs: float | None = None
    tol: float = 0.0

    @property
    def measured(self) -> bool:
        return self.verdict not in (NOT_MEASURED, BLACKWELL)

    def line(self) -> str:
        """``"[holds] what — ours"``, or for a part not measured, what would measure it."""
        if self.measured:
            return f"[{self.verdict}] {self.what} — {self.ours}"
        tail = f"{self.ours}; " if self.ours else ""
        how = "needs " if self.verdict == BLACKWELL else "not measured yet: "
        return f"[{self.verdict}] {self.what} — {tail}{how}{self.measure_with}"


@dataclasses.dataclass(frozen=True)
class Claim:
    """A quantitative statement of the seed article (in our words), the course chapter and records
    it is checked against, and its parts; ``verdict`` is :func:`combine` of the parts."""

    key: str
    statement: str
    chapter: str
    suites: tuple[str, ...]
    parts: tuple[Part, ...]
    percent_of_peak: bool = False

    @property
    def verdict(self) -> str:
        return combine(self.parts)

    def not_measured(self) -> list[Part]:
        return [p for p in self.parts if not p.measured]

    def sentence(self) -> str:
        """One line for the table: the statement, the verdict, and how many parts hold."""
        held = sum(p.verdict == HOLDS for p in self.parts)
        measured = sum(p.measured for p in self.parts)
        count = f"{held} of {measured} measured parts hold" if measured else "nothing measured"
        if measured < len(self.parts):
            count += f", {len(self.parts) - measured} not measured"
        return f"{self.statement} — {self.verdict} ({count})"


@dataclasses.dataclass(frozen=True)
class ClaimSpec:
    """How a claim is checked: ``measure(recs)`` returns its parts from the records (a
    :class:`MissingRecord` turns every part into "not measured": ``missing`` names them)."""

    key: str
    statement: str
    chapter: str
    suites: tuple[str, ...]
    measure: Callable[[Mapping], list[Part]]
    missing: tuple[str, ...] = ()
    percent_of_peak: bool = False

    def evaluate(self, recs: Mapping) -> Claim:
        try:
            parts = tuple(self.measure(recs))
        except MissingRecord as e:
            parts = tuple(Part(what, NOT_MEASURED, measure_with=f"{e} — run `python -m asynctc "
                               f"record {self.suites[0]}` on an sm_90 GPU")
                          for what in (self.missing or (self.statement,)))
        return Claim(self.key, self.statement, self.chapter, self.suites, parts,
                     self.percent_of_peak)


def combine(parts) -> str:
    """A claim's verdict from its parts': :data:`HOLDS` when every part holds; :data:`FAILS` when
    none holds and at least one fails; :data:`PARTLY` when some hold and others fail or are not
    measured; :data:`BLACKWELL` when nothing is measured because every part needs Blackwell, else
    :data:`NOT_MEASURED`."""
    vs = [p.verdict for p in parts]
    if not vs:
        raise ValueError("a claim needs at least one part")
    bad = [v for v in vs if v not in VERDICTS]
    if bad:
        raise ValueError(f"verdict {bad[0]!r}: must be one of {VERDICTS}")
    if not any(v in (HOLDS, FAILS) for v in vs):
        return BLACKWELL if all(v == BLACKWELL for v in vs) else NOT_MEASURED
    if all(v == HOLDS for v in vs):
        return HOLDS
    if HOLDS not in vs:
        return FAILS
    return PARTLY


def in_band(value: float, low: float | None, high: float | None, tol: float = 0.0) -> bool:
    """``low - tol <= value <= high + tol`` (an open end is None)."""
    return (low is None or value >= low - tol) and (high is None or value <= high + tol)


#: The rounder tolerances a near miss is restated at (:func:`near_text`).
NEAR_TOLS = (0.01, 0.02, 0.05)


def distance(value: float, low: float | None, high: float | None) -> float:
    """How far ``value`` lies outside ``[low, high]`` (0 inside; an open end is None)."""
    if low is not None and value < low:
        return low - value
    if high is not None and value > high:
        return value - high
    return 0.0


def near_text(value: float, low: float | None, high: float | None, tol: float) -> str:
    """A verdict that says how far: ``"holds"`` within ±``tol`` of the band; ``"holds to ±0.02,
    not to the stated ±0.005"`` when one of :data:`NEAR_TOLS` covers the miss; else ``"misses by
    0.11"``. The verdict word (:data:`HOLDS` / :data:`FAILS`) is unchanged: this only says how
    near a miss is."""
    d = distance(value, low, high)
    if d <= tol:
        return HOLDS
    t = next((t for t in NEAR_TOLS if tol < t and d <= t), None)
    return f"holds to ±{t:g}, not to the stated ±{tol:g}" if t else f"misses by {d:.2f}"


def judged(what: str, value: float, low: float | None, high: float | None, ours: str,
           unit: str = "", tol: float = 0.0, **kw) -> Part:
    """A :class:`Part` that holds when ``value`` lies in the band (±``tol``)."""
    ok = in_band(value, low, high, tol)
    return Part(what, HOLDS if ok else FAILS, float(value), (low, high), unit, ours, tol=tol, **kw)


def compared(what: str, ours_value: float, theirs: float, tol: float, ours: str, unit: str = "",
             **kw) -> Part:
    """An anchor :class:`Part`: :data:`MATCHES` when ``|ours − theirs| <= tol × |theirs|``, else
    :data:`BELOW` / :data:`ABOVE`."""
    if abs(ours_value - theirs) <= tol * abs(theirs):
        v = MATCHES
    else:
        v = BELOW if ours_value < theirs else ABOVE
    return Part(what, v, float(ours_value), (theirs * (1 - tol), theirs * (1 + tol)), unit, ours,
                theirs=float(theirs), **kw)


# --------------------------------------------------------------------------------------------------
# Fractions of peak under both denominators
# --------------------------------------------------------------------------------------------------


def fractions(row: dict, sm_count: int, dtype: str = "float16") -> dict:
    """One record row's fraction of peak under both denominators: ``datasheet`` (tflops over the
    datasheet's 989.4 TFLOP/s dense fp16/bf16, 1978.9 fp8: :data:`asynctc.core.bench.DATASHEET`)
    and ``measured`` (tflops over SMs × FLOP/clk/SM × the row's measured SM clock:
    :func:`asynctc.core.bench.peak_at_clock`), with ``clock`` (its kind, :func:`asynctc.core.bench.
    clock_kind`), ``sm_mhz``, ``peak_tflops`` and ``datasheet_tflops``. Raises ``ValueError`` for a
    row without a measured clock."""
    p = bench.peak_at_clock(row, sm_count, dtype)
    return {"datasheet": p["fraction_of_datasheet"], "measured": p["fraction"],
            "clock": bench.clock_kind(row), "sm_mhz": p["sm_mhz"], "peak_tflops": p["peak_tflops"],
            "datasheet_tflops": p["datasheet_tflops"], "tflops": float(row["tflops"])}


def peak_parts(what: str, row: dict, sm_count: int, low: float | None, high: float | None,
               suite: str, dtype: str = "float16", tol: float = 0.005, who: str = "") -> list[Part]:
    """Two parts for one "x % of peak" statement: under the datasheet and under the measured clock
    (the band ±``tol``, 0.005 as chapter 07 reads the seed's table)."""
    f = fractions(row, sm_count, dtype)
    rate = bench.FLOP_PER_CLK_PER_SM[dtype]
    head = f"{who}: " if who else ""
    sheet = (f"{head}{f['tflops']:.0f} TFLOP/s = {f['datasheet']:.3f} of the datasheet's "
             f"{f['datasheet_tflops']:.0f}")
    clock = (f"{head}{f['tflops']:.0f} TFLOP/s = {f['measured']:.3f} of {sm_count}×{rate}×"
             f"{f['sm_mhz']:.0f} MHz ({f['clock']}) = {f['peak_tflops']:.0f}")
    return [judged(f"{what} (datasheet peak)", f["datasheet"], low, high, sheet,
                   "fraction of peak", tol, denominator=DATASHEET, clock=f["clock"], suite=suite),
            judged(f"{what} (peak at the measured clock)", f["measured"], low, high, clock,
                   "fraction of peak", tol, denominator=MEASURED_CLOCK, clock=f["clock"],
                   suite=suite)]


# --------------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------------


def load_records(slug: str | None = None, suites=SUITES) -> dict:
    """``{suite: Record or None}`` for every suite chapter 10 reads: the newest record of each (or
    GPU ``slug``'s), None where ``data/`` has none. Never measures."""
    return {s: records.load_or_none(s, slug) for s in suites}


def need(recs: Mapping, suite: str):
    """``recs[suite]``; raises :class:`MissingRecord` when it is absent."""
    rec = recs.get(suite)
    if rec is None:
        raise MissingRecord(f"no {suite!r} record under data/")
    return rec


def sm_count(rec) -> int:
    """The SM count a record was measured with (its provenance)."""
    return int(rec.provenance["sm_count"])


def first(rows, what: str, **match) -> dict:
    """The first row whose fields equal ``match``; raises :class:`MissingRecord` naming ``what``."""
    for r in rows:
        if all(r.get(k) == v for k, v in match.items()):
            return r
    raise MissingRecord(f"no row for {what} ({', '.join(f'{k}={v!r}' for k, v in match.items())})")
