"""Chapter 06 §3's "Design it": one warp-specialized design run through chapter 05's ring model,
beside the record's runs of the same design (:func:`design`, :class:`WSDesign`), and the course's
answer to "where does the model hold, and where not?" (:func:`design_survey`). No GPU, no timing,
no plotting.

The knobs are the ones a model the course has can predict: the tile (128×128 or 128×256, two
consumer warpgroups), the stages, the persistent grid and the TMA-store epilogue. Left out: the
consumer count (the ring model gives one and two consumers on 128×128 the same time), clusters
(the ring model has no multicast; rung 6 measured nothing) and the raster (the model has no L2
reuse by tile order).

The model, per SM, in clocks (so no clock is assumed; the record is compared per clock too):

* a tile's cycles: :func:`asynctc.models.pipeline.simulate` (the kernel's ring: prologue, k-loop
  with wait_group 1, epilogue) on :meth:`~asynctc.models.pipeline.HardwareParams.from_records`'s
  parameters — Tensor Core rate and clock from chapter 04's record, DRAM from chapter 03's — with
  two more numbers: the L2 → SM cap **fitted** on chapter 05's depth sweep
  (:func:`asynctc.pipeline.design.fitted_cap`, 128×256 only), and the epilogue's cycles **traced**
  in this record (rung 5's register stores, rung 7's TMA store, 4096³; the trace itself costs a
  little);
* tiles per SM: ⌈tiles / SMs⌉ (the last wave counts whole);
* persistent: a CTA's later tiles do not pay the prologue (the producer loads them during the
  epilogue; rung 5's trace shows it), so the SM's time is tiles × tile − (tiles − 1) × prologue.

The record's side: every timed row of the same build (``warp_specialization`` and
``ws_store_ablation``), as FLOP per clock per SM at the row's own in-flight clock.
"""

from __future__ import annotations

import dataclasses
import math
import statistics

from ..core import exercises as _ex, notebook
from .config import WSConfig, WarpSpecializationError, _fail

#: Tile widths the design takes (bm = 128, two consumers, bk = 64).
WIDTHS = (128, 256)
#: Tensor Core FLOP per clock per SM, sm_90 dense fp16 (the datasheet rate).
PEAK_FLOP_PER_CLK = 4096


@dataclasses.dataclass(frozen=True)
class WSDesign:
    """One design through the model. ``config``: its :class:`WSConfig`; ``size``: M = N = K;
    ``tile_cycles``, ``prologue``, ``epilogue``: the model's cycles per tile, before the first
    wgmma, storing C (traced); ``tiles_per_sm``; ``busy``: the busiest SM's cycles for the whole
    GEMM; ``runs``: the record's runs of this build as (milliseconds, in-flight MHz, FLOP per clock
    per SM) (empty: never timed); ``l2_cap``: the fitted cap, B/clk/SM; ``sm_count``."""
    config: WSConfig
    size: int
    tile_cycles: float
    prologue: float
    epilogue: float
    tiles_per_sm: int
    busy: float
    runs: tuple
    l2_cap: float
    sm_count: int = 132

    @property
    def model(self) -> float:
        """The model's FLOP per clock per SM."""
        return 2 * self.size ** 3 / self.sm_count / self.busy

    @property
    def record(self) -> float | None:
        """The recorded runs' median FLOP per clock per SM, or None when never timed."""
        return statistics.median(r[2] for r in self.runs) if self.runs else None

    @property
    def record_us(self) -> float | None:
        """The recorded runs' median time (µs), or None."""
        return statistics.median(r[0] for r in self.runs) * 1e3 if self.runs else None

    @property
    def mhz(self) -> float | None:
        """The recorded runs' median in-flight clock (MHz), or None."""
        return statistics.median(r[1] for r in self.runs) if self.runs else None

    @property
    def model_us(self) -> float | None:
        """The model's time at the record's clock (µs), or None when never timed."""
        return None if self.mhz is None else self.busy / self.mhz

    @property
    def ratio(self) -> float | None:
        """model time / record time, or None when never timed."""
        return None if self.runs == () else self.model_us / self.record_us

    @property
    def error(self) -> float | None:
        """model time / record time − 1 (positive: the model is slower), or None."""
        return None if self.ratio is None else self.ratio - 1

    def name(self) -> str:
        c = self.config
        extra = "".join((", persistent" if c.persistent else "", ", TMA store" if c.tma_store else ""))
        return f"{c.bm}×{c.bn}, S = {c.stages}{extra}"

    def text(self) -> str:
        per = "" if not self.config.persistent else f" − {self.tiles_per_sm - 1} × {self.prologue:.0f}"
        out = [f"{self.name()}, {self.size}³ fp16",
               f"model:  {self.tiles_per_sm} tiles per SM × {self.tile_cycles:.0f} cycles (prologue "
               f"{self.prologue:.0f}, epilogue {self.epilogue:.0f}){per} = {self.busy:.0f} cycles"]
        if not self.runs:
            out.append("record: never timed")
        else:
            n = len(self.runs)
            out[-1] += f" = {self.model_us:.0f} µs at {self.mhz:.0f} MHz"
            out.append(f"record: {self.record_us:.0f} µs at {self.mhz:.0f} MHz (median of {n} "
                       f"run{'s' if n > 1 else ''}); model / record = {self.ratio:.2f}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.text()


def _per_clk(row: dict, sm_count: int) -> float:
    return row["tflops"] * 1e12 / (sm_count * row["sm_mhz"] * 1e6)


def timed_rows(cfg: WSConfig, size: int, records_: tuple) -> list[dict]:
    """Every timed row of ``cfg``'s build at ``size``³ in the given records' results, each with
    ``per_clk`` (FLOP per clock per SM at its in-flight clock) added; rows without an in-flight
    clock are left out."""
    label = cfg.label()
    out = []
    for res in records_:
        sms = res.get("sm_count", 132)
        out += [{**r, "per_clk": _per_clk(r, sms)} for r in res["rows"] if r.get("label") == label
                and r["size"] == size and r.get("sm_mhz") and not r.get("trace")]
    return out


def traced_epilogues(results: dict) -> dict:
    """{tma_store: cycles per tile storing C}: rung 5's traced epilogue (register stores) and rung
    7's (TMA store), 4096³, from a ``warp_specialization`` record."""
    from .figures import trace_numbers
    tr = {t["rung"]: t for t in results["traces"]}
    return {False: trace_numbers(tr[5])["epilogue_cycles"], True: trace_numbers(tr[7])["epilogue_cycles"]}


def design(bn: int = 256, stages: int = 4, persistent: bool = False, tma_store: bool = False,
           size: int = 4096, record=None, store_record=None, pipeline_record=None) -> WSDesign:
    """Run one design (fp16, bm = 128, two consumers, bk = 64) through the model of the module
    docstring and set it beside the record. ``bn`` 128 or 256; ``stages`` as many as fit shared
    memory (:class:`WSConfig` says); ``size`` M = N = K, a positive multiple of 256. Records
    default to ``warp_specialization``, ``ws_store_ablation`` and chapter 05's ``pipeline`` (the L2
    cap's fit). Raises :class:`WarpSpecializationError` naming the knob, the value and the rule."""
    from ..core import records
    from ..models.pipeline import HardwareParams, Tile, simulate
    from ..pipeline.design import fitted_cap
    if bn not in WIDTHS:
        _fail("bn", bn, f"the design takes a tile of 128×{WIDTHS[0]} or 128×{WIDTHS[1]}")
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0 or size % 256:
        _fail("size", size, "M = N = K must be a positive multiple of 256 (whole tiles)")
    cfg = WSConfig(dtype="float16", out_dtype="float16", bm=128, bn=bn, consumers=2, stages=stages,
                   persistent=bool(persistent), tma_store=bool(tma_store))
    res = (record or records.load("warp_specialization")).results
    store = (store_record or records.load("ws_store_ablation")).results
    cap = fitted_cap((pipeline_record or records.load("pipeline")).results)[0]
    epilogue = traced_epilogues(res)[cfg.tma_store]
    tile = Tile(bm=128, bn=bn, bk=64)
    hw = HardwareParams.from_records(tile, size, size, l2_bytes_per_clk=cap, epilogue_cycles=epilogue)
    sc = simulate(stages, 1, 2, size // 64, hw, tile=tile)
    prologue = min(s.start for s in sc.spans if s.kind == "mma")
    per_sm = math.ceil((size // 128) * (size // bn) / hw.sm_count)
    busy = per_sm * sc.total_cycles - (per_sm - 1) * prologue * cfg.persistent
    rows = timed_rows(cfg, size, (res, store))
    return WSDesign(cfg, size, sc.total_cycles, prologue, epilogue, per_sm, busy,
                    tuple((r["median_ms"], r["sm_mhz"], r["per_clk"]) for r in rows), cap, hw.sm_count)


def all_designs(size: int = 4096, **records_) -> list[WSDesign]:
    """Every design :func:`design` accepts at ``size``: bn 128/256 × stages 2..6 × persistent ×
    TMA store, those that fit shared memory."""
    out = []
    for bn in WIDTHS:
        for s in range(2, 7):
            for p in (False, True):
                for t in (False, True):
                    try:
                        out.append(design(bn, s, p, t, size, **records_))
                    except WarpSpecializationError:
                        continue
    return out


def design_survey(size: int = 4096, within: float = 0.10, **records_) -> str:
    """The course's answer to §3's "Design it", generated from the model and the records: every
    recorded design, the model's time beside the record's (at the record's clock), then where the
    model holds (within ``within``) and where it misses, each conclusion chosen by the numbers."""
    ds = [d for d in all_designs(size, **records_) if d.runs]
    lines = [f"{'design':<36}{'MHz':>6}{'model µs':>10}{'record µs':>11}{'model/record':>14}"]
    lines += [f"{d.name():<36}{d.mhz:>6.0f}{d.model_us:>10.0f}{d.record_us:>11.0f}{d.ratio:>14.2f}" for d in ds]
    lines.append(f"{size}³ fp16; record: median of its runs; the model's cycles at the record's clock")
    wide = [d for d in ds if d.config.bn == 256]
    narrow = [d for d in ds if d.config.bn == 128]
    worst = max(wide, key=lambda d: abs(d.error))
    lines.append(f"128×256: the model's time lies within {notebook.within(worst.error)} of the record's on all "
                 f"{len(wide)} designs (worst: {worst.name()})." if abs(worst.error) <= within else
                 f"128×256: the model misses by up to {abs(worst.error):.0%} ({worst.name()}).")
    if narrow:
        lo = min(d.ratio for d in narrow)
        hi = max(d.ratio for d in narrow)
        # operand bytes per clock per SM the record's runs moved: (bm + bn)·bk·2 bytes per 2·bm·bn·bk FLOP
        moved = [d.record * (128 + 128) * 2 / (2 * 128 * 128) for d in narrow]
        over = all(b > narrow[0].l2_cap for b in moved)
        lines.append(f"128×128: the model takes {lo:.2f}–{hi:.2f}× the record's time"
                     + (f": the L2 cap ({narrow[0].l2_cap:g} B/clk/SM) was fitted on 128×256, and the "
                        f"128×128 runs moved {min(moved):.1f}–{max(moved):.1f} B/clk/SM, more than it "
                        "allows: a fit does not transfer to a tile it never saw." if lo > 1 + within and over
                        else "."))
    tma = [d for d in wide if d.config.tma_store]
    if tma:
        e = statistics.mean(d.error for d in tma)
        lines.append(f"With the TMA store the model is {e:+.0%} slow on average"
                     + (": the record gains more from the TMA store than the cycles the trace saw it save."
                        if e > 0.03 else "."))
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# 06 §3's "Design it" question, answered by the model and the record (the answer key stays here:
# the learner notebook shows the arithmetic, the solution cell checks the answer)
# ------------------------------------------------------------------------------------------------

def tma_store_gain(results: dict, size: int = 4096) -> tuple[float, float]:
    """(the model's gain from the TMA-store epilogue: its 128×256, S = 4 busy cycles with register
    stores over those with the TMA store; rung 7's measured TFLOP/s over rung 6's), fp16 at
    ``size``³, both from the ``warp_specialization`` record's ``results``."""
    import types
    rec = types.SimpleNamespace(results=results)
    plain, stored = (design(256, 4, tma_store=t, size=size, record=rec) for t in (False, True))
    tf = {r["rung"]: r["tflops"] for r in results["ladder"] if r["size"] == size and r["dtype"] == "float16"}
    return plain.busy / stored.busy, tf[7] / tf[6]


@_ex.exercise("ch06.design_tma_store", "06 §3's Design it: with the epilogue by TMA store (TMA_STORE = "
              "True beside False), does the ring model gain what rung 7 measured over rung 6 (fp16, "
              "4096³), within 1 %? Answer 'yes' or 'no'; the check reads the record's `results`.",
              choices=("yes", "no"))
def _design_tma_store(results: dict) -> str:
    gain, step = tma_store_gain(results)
    return "yes" if abs(gain / step - 1) < 0.01 else "no"


@_ex.diagnosis("ch06.design_tma_store")
def _design_tma_store_hint(answer, expected, results) -> str:  # noqa: ARG001  (the method, not the numbers)
    return ("run the Design-it cell with TMA_STORE = False, then True, and divide the first's cycles by "
            "the second's; set that beside rung 7's × over rung 6 in §3's table (4096³): within 1 % of "
            "each other is a yes")
