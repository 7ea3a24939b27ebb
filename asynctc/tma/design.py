"""Chapter 03's "Design it": one TMA copy design (box, stages, CTAs per SM) through Little's law,
beside the records' runs of the same design (:func:`design`), and the survey of every recorded
TMA design (:func:`design_survey`). No GPU, no timing, no plotting.

The copy kernels of ``kernels/tma.cu`` keep a ring of ``stages`` boxes per CTA; one stage is being
written out, so (stages − 1) × box × CTAs bytes of loads are on their way per SM
(:func:`asynctc.tma.equal_bytes.in_flight`, "loads"). The model: all SMs' loads in flight, F in
all, make one round trip in L + F / peak (an idle load's latency, then the queue at the peak
rate), so the copy moves F / (L + F / peak). ``peak`` is the device-to-device copy the same record
timed (measured, not fitted); ``L`` is fitted on one run, the one with the fewest bytes in flight
(:data:`FIT_ON`, where the latency term dominates). Every other recorded TMA design, in
``tma_equal`` and ``tma_copy``, is a test. Times are in nanoseconds: no SM clock enters.
"""

from __future__ import annotations

import dataclasses

from .equal_bytes import in_flight
from .suite import SMEM_BUDGET, CopyConfig

#: The run L is fitted on: record, (fp16 box rows, fp16 box columns), stages, CTAs per SM.
FIT_ON = ("tma_equal", (16, 16), 2, 8)
CTA_OVERHEAD = 128 + 1024                   # the copy kernel's barrier words + the driver's reservation


def _pct(x: float) -> str:
    return f"{x:+.0%}".replace("-0%", "+0%")


def _fail(field: str, value, rule: str):
    raise ValueError(f"{field}={value!r}: {rule}")


def _rows(results: dict, box: tuple, stages: int, ctas: int) -> list[dict]:
    br, bc = box[0], box[1] // 2                    # the kernels copy fp32 words
    return [r for r in results["copies"] if r["variant"] == "tma" and r["br"] == br
            and r["bc"] == bc and r["stages"] == stages and r["ctas_per_sm"] == ctas]


def loads_in_flight(box: tuple, stages: int, ctas: int) -> int:
    """Bytes of loads in flight per SM for an fp16 ``box`` (rows, columns): (stages − 1) boxes per
    CTA (:func:`asynctc.tma.equal_bytes.in_flight`, "loads", of the TMA copy kernel's config)."""
    return in_flight(CopyConfig("tma", box[0], box[1] // 2, stages, ctas, 32), "loads")


def latency_ns(equal: dict, sm_count: int) -> float:
    """L in ns, from the :data:`FIT_ON` run of ``tma_equal``'s results: F / B − F / peak."""
    _, box, s, c = FIT_ON
    row = _rows(equal, box, s, c)[0]
    f = sm_count * loads_in_flight(box, s, c)
    return f / row["gbps"] - f / equal["device_copy"]["gbps"]


@dataclasses.dataclass(frozen=True)
class CopyDesign:
    """One design: fp16 ``box`` (rows, columns), ``stages``, ``ctas`` per SM; ``in_flight`` bytes of
    loads per SM, ``sm_count``, the fitted ``latency`` (ns), ``peak`` GB/s; the model's ``gbps``;
    ``measured``: [(record name, GB/s)] of the runs of this design (empty: not measured)."""
    box: tuple
    stages: int
    ctas: int
    in_flight: int
    sm_count: int
    latency: float
    peak: float
    gbps: float
    measured: tuple
    fitted: bool

    def text(self) -> str:
        r, c = self.box
        kib = r * c * 2 / 1024
        total = self.sm_count * self.in_flight
        out = [f"box {r}×{c} fp16, S = {self.stages}, {self.ctas} CTAs/SM: (S − 1) × {kib:g} KiB × "
               f"{self.ctas} = {self.in_flight / 1024:g} KiB in flight per SM",
               f"{self.sm_count} SMs × that = {total / 1e6:.2f} MB in flight",
               f"round trip: latency L {self.latency:.0f} ns + {total / self.peak:.0f} ns to transfer them "
               f"at the device copy's {self.peak:.0f} GB/s = {self.latency + total / self.peak:.0f} ns",
               f"model: {total / 1e6:.2f} MB per {self.latency + total / self.peak:.0f} ns = "
               f"{self.gbps:.0f} GB/s, {self.gbps / self.peak:.0%} of the device copy"]
        if not self.measured:
            out.append("record: not measured")
        for name, gbps in self.measured:
            why = ("L was fitted on it" if self.fitted and name == FIT_ON[0] else
                   "a test: L was fitted on another run")
            out.append(f"record ({name}): {gbps:.0f} GB/s; model {_pct(self.gbps / gbps - 1)} ({why})")
        return "\n".join(out)

    __str__ = text


def design(box: tuple = (64, 64), stages: int = 2, ctas: int = 4, equal=None, copy=None) -> CopyDesign:
    """A TMA copy of fp16 ``box`` = (rows, columns) boxes (rows 1–256, an even number of columns up
    to 512), ``stages`` 2–4, ``ctas`` per SM (their rings must fit :data:`SMEM_BUDGET`), through the
    model of this module, beside the runs of ``equal`` and ``copy`` (the ``tma_equal`` and
    ``tma_copy`` records, loaded by default). Raises ``ValueError`` naming the field."""
    from ..core import records
    box = tuple(box) if isinstance(box, list) else box
    if (not isinstance(box, tuple) or len(box) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in box)):
        _fail("box", box, "a pair of whole numbers (rows, fp16 columns)")
    if not 1 <= box[0] <= 256:
        _fail("box", box, "a TMA box has 1 to 256 rows")
    if box[1] < 2 or box[1] % 2 or box[1] > 512:
        _fail("box", box, "the copy kernels move fp32 words: an even number of fp16 columns, 2 to 512")
    if isinstance(stages, bool) or stages not in (2, 3, 4):
        _fail("stages", stages, "the copy kernels' ring has 2 to 4 stages")
    box_bytes = box[0] * box[1] * 2
    if isinstance(ctas, bool) or not isinstance(ctas, int) or not 1 <= ctas <= 32:
        _fail("ctas", ctas, "1 to 32 CTAs per SM")
    if ctas * (stages * box_bytes + CTA_OVERHEAD) > SMEM_BUDGET:
        _fail("ctas", ctas, f"{ctas} rings of {stages} × {box_bytes} B do not fit the SM's "
                            f"{SMEM_BUDGET} B of shared memory")
    equal = equal or records.load("tma_equal")
    copy = copy or records.load("tma_copy")
    sm = equal.provenance["sm_count"]
    lat = latency_ns(equal.results, sm)
    peak = equal.results["device_copy"]["gbps"]
    f = loads_in_flight(box, stages, ctas)
    gbps = sm * f / (lat + sm * f / peak)
    measured = tuple((name, r["gbps"]) for name, rec in (("tma_equal", equal), ("tma_copy", copy))
                     for r in _rows(rec.results, box, stages, ctas))
    return CopyDesign(box, stages, ctas, f, sm, lat, peak, gbps, measured,
                      (tuple(box), stages, ctas) == FIT_ON[1:])


def design_survey(equal=None, copy=None, within: float = 0.10) -> str:
    """Every recorded TMA design, model beside record, sorted by bytes in flight, and how many of
    the tests land within ``within``; the sentences are chosen by the numbers."""
    from ..core import records
    equal = equal or records.load("tma_equal")
    copy = copy or records.load("tma_copy")
    seen, ds = set(), []
    for rec in (equal, copy):
        for r in rec.results["copies"]:
            key = ((r["br"], r["bc"] * 2), r["stages"], r["ctas_per_sm"])
            if r["variant"] == "tma" and key not in seen:
                seen.add(key)
                ds.append(design(*key, equal=equal, copy=copy))
    ds.sort(key=lambda d: d.in_flight)
    lines, errs = [f"L = {ds[0].latency:.0f} ns, fitted on box 16×16, 2 stages, 8 CTAs per SM."], []
    for d in ds:
        for name, g in d.measured:
            e = d.gbps / g - 1
            test = not (d.fitted and name == FIT_ON[0])
            if test:
                errs.append(e)
            lines.append(f"  {d.in_flight // 1024:4d} KiB in flight, box {d.box[0]}×{d.box[1]} S{d.stages} "
                         f"×{d.ctas} ({name}): model {d.gbps:4.0f}, record {g:4.0f} ({_pct(e)})"
                         + ("" if test else ", fit"))
    ok = sum(abs(e) <= within for e in errs)
    lo, hi = min(errs), max(errs)
    lines.append(f"{ok} of {len(errs)} tests within {within:.0%} (from {_pct(lo)} to {_pct(hi)}).")
    small = [e for d in ds for name, g in d.measured for e in [d.gbps / g - 1]
             if 8 * 1024 <= d.in_flight <= 48 * 1024 and not (d.fitted and name == FIT_ON[0])]
    if small and all(e < 0 for e in small):
        lines.append("Between 8 and 48 KiB per SM the model is low every time: one latency, fitted "
                     "on the emptiest run, does not describe the memory system there.")
    return "\n".join(lines)
