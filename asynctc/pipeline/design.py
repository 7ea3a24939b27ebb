"""Chapter 05's open experiment (deep dive 05b §6's "Design it"): one pipeline design run through
the ring model, beside the record's measurement of the same design when there is one (:func:`design`, :class:`Design`), and
the course's answer to "which design does the model call fastest, and where does it disagree with
the record?" (:func:`design_survey`). No GPU, no timing, no plotting.

The model is :func:`asynctc.models.pipeline.simulate`: the kernel's own schedule and protocol
(prologue of S k-tiles, refill of k-tile r + S after the release of r = k − P), on
:meth:`~asynctc.models.pipeline.HardwareParams.from_records`'s parameters (chapter 04's wgmma
record: Tensor Core rate and SM clock; chapter 03's tma_copy record: DRAM bytes per clock). One
number is fitted, not measured: the L2 → SM cap, :func:`closest_cap` on the record's
128×256×64/c2 fp16 4096³ depth sweep (wait_group 1, S = 1–4). Those four configurations *identified* the
cap; every other recorded design only agrees with the model or not (a test of it).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Sequence

from ..core import notebook
from .config import PipelineConfig, _fail

#: The depth sweep the L2 cap is fitted on: (tile, dtype, size), wait_group 1.
FIT_ON = ("128x256x64/c2", "float16", 4096)


def _fit_rows(results: dict) -> dict:
    tile, dtype, size = FIT_ON
    return {r["stages"]: r["tflops"] for r in results["sweep"] if r["kernel"] == "pipeline"
            and r["tile"] == tile and r["dtype"] == dtype and r["size"] == size}


def closest_cap(measured: dict, caps: Sequence[int] = range(10, 81)) -> tuple[int, float]:
    """The L2 → SM cap (bytes per clock per SM, one of ``caps``) whose ring-model depth sweep lies
    closest to the record's ({stages: TFLOP/s}) at its worst recorded depth: (cap, that worst
    |model / record − 1|). Runs :func:`asynctc.models.pipeline.predict_depth_sweep` once per cap
    (about 10 ms each), on :meth:`~asynctc.models.pipeline.HardwareParams.from_records`'s parameters
    (the records read once) with that cap; cached per (sweep, caps), so deep dive 05b §5's "Try it", its
    solution and "Design it" (:func:`fitted_cap`) fit once."""
    return _closest_cap(tuple(sorted(measured.items())), tuple(caps))


@functools.lru_cache(maxsize=8)
def _closest_cap(measured: tuple, caps: tuple) -> tuple[int, float]:
    from ..models.pipeline import HardwareParams, predict_depth_sweep
    measured = dict(measured)
    depths = sorted(measured)
    base = HardwareParams.from_records()
    given = {**base.sources, "l2_bytes_per_clk": "given"}       # as from_records(l2_bytes_per_clk=cap)
    worst = {}
    for cap in caps:
        hw = dataclasses.replace(base, l2_bytes_per_clk=cap, sources=given)
        rows = predict_depth_sweep(hw, stages=depths)
        worst[cap] = max(abs(r["tflops"] / measured[r["stages"]] - 1) for r in rows)
    best = min(worst, key=worst.get)
    return best, worst[best]


def fitted_cap(results: dict) -> tuple[int, float]:
    """(cap in bytes per clock per SM, worst |model / record − 1| over the fitted depths): the
    L2 → SM cap :func:`closest_cap` fits to the record's :data:`FIT_ON` sweep."""
    return closest_cap(_fit_rows(results))


def measured_row(results: dict, cfg: PipelineConfig, size: int) -> dict | None:
    """The record's untimed-trace, no-L2-promotion row for ``cfg`` at ``size``³ (sweep first,
    then variants), or None when no run measured that design."""
    for r in results["sweep"] + results.get("variants", []):
        if (r["kernel"] == "pipeline" and not r.get("trace") and not r.get("l2_promotion")
                and r["dtype"] == cfg.dtype and r["size"] == size and r["bm"] == cfg.bm
                and r["bn"] == cfg.bn and r["consumers"] == cfg.consumers
                and r["stages"] == cfg.stages and r["wait_pending"] == cfg.wait_pending
                and r.get("ctas_per_sm", 1) == 1 and "/2cta" not in r["tile"]):
            return r
    return None


@dataclasses.dataclass(frozen=True)
class Design:
    """One design through the model. ``config``: the kernel's :class:`PipelineConfig`; ``size``:
    the M = N = K of the GEMM; ``l2_cap``: the L2 → SM cap the model ran with (B/clk/SM, None: no
    cap); ``ktile_cycles``: the model's CTA tile time ÷ its k-tiles (prologue and epilogue shared
    out); ``model_tflops``: the model's whole-GPU rate, last wave included; ``measured_tflops``:
    the record's, or None; ``resident_ctas``: CTAs per SM in that recorded run; ``fitted``: True
    when this run is one of the runs the cap was fitted on."""
    config: PipelineConfig
    size: int
    l2_cap: float | None
    ktile_cycles: float
    model_tflops: float
    measured_tflops: float | None
    resident_ctas: int | None
    fitted: bool

    @property
    def error(self) -> float | None:
        """model / record − 1, or None when not measured."""
        return None if self.measured_tflops is None else self.model_tflops / self.measured_tflops - 1

    def text(self) -> str:
        c = self.config
        cap = "no L2 cap" if self.l2_cap is None else f"L2 cap {self.l2_cap:g} B/clk/SM"
        head = (f"{c.bm}×{c.bn}×{c.bk}, {c.consumers} consumer{'s' if c.consumers > 1 else ''}, "
                f"S = {c.stages}, wait_group({c.wait_pending}), {self.size}³ fp16")
        out = [f"{head}: model ({cap}) {self.ktile_cycles:.0f} cycles per k-tile, "
               f"{self.model_tflops:.0f} TFLOP/s"]
        if self.measured_tflops is None:
            out.append("record: not measured")
        else:
            why = ("" if self.l2_cap is None else " (one of the runs the cap was fitted on)"
                   if self.fitted else " (not used in the fit, so a test of the model)")
            occ = (f", {self.resident_ctas} CTAs per SM" if self.resident_ctas and self.resident_ctas > 1
                   else "")
            out.append(f"record: {self.measured_tflops:.0f} TFLOP/s{occ}; model {self.error:+.0%}{why}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.text()


def design(stages: int = 4, wait_pending: int = 1, consumers: int = 2, bn: int = 256,
           size: int = 4096, l2_cap: float | str | None = "fitted", record=None) -> Design:
    """Run one design of chapter 05's kernel (fp16, bm = 128, bk = 64, B K-major) through the ring
    model and set it beside the record's run of the same design, if any.

    ``stages`` 1..6 (as many as fit in shared memory), ``wait_pending`` 0 or 1 (1 needs S ≥ 2),
    ``consumers`` 1 or 2, ``bn`` 128 or 256 (the accumulators must fit the registers), ``size``
    M = N = K, a positive multiple of 256; ``l2_cap`` "fitted" (:func:`fitted_cap`), None (no cap)
    or bytes per clock per SM; ``record`` the pipeline record (default ``records.load("pipeline")``).
    Raises :class:`~.config.PipelineError` naming the knob, the value and the rule."""
    from ..core import records
    from ..models.pipeline import HardwareParams, Tile, simulate
    cfg = PipelineConfig(bm=128, bn=bn, consumers=consumers, stages=stages, wait_pending=wait_pending)
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0 or size % 256:
        _fail("size", size, "M = N = K must be a positive multiple of 256 (whole 128×256 tiles)")
    rec = record or records.load("pipeline")
    res = rec.results
    if isinstance(l2_cap, str):
        if l2_cap != "fitted":
            _fail("l2_cap", l2_cap, "'fitted', None (no cap) or bytes per clock per SM above 0")
        l2_cap = fitted_cap(res)[0]
    elif l2_cap is not None and (isinstance(l2_cap, bool) or not isinstance(l2_cap, (int, float))
                                 or l2_cap <= 0):
        _fail("l2_cap", l2_cap, "'fitted', None (no cap) or bytes per clock per SM above 0")
    tile = Tile(bm=cfg.bm, bn=cfg.bn, bk=cfg.bk)
    hw = HardwareParams.from_records(tile, size, size, l2_bytes_per_clk=l2_cap)
    kt = math.ceil(size / tile.bk)
    sc = simulate(cfg.stages, cfg.wait_pending, cfg.consumers, kt, hw, tile=tile)
    row = measured_row(res, cfg, size)
    fitted = (row is not None and (row["tile"], row["dtype"], row["size"]) == FIT_ON
              and row["wait_pending"] == 1 - (row["stages"] == 1) and l2_cap == fitted_cap(res)[0])
    return Design(cfg, size, l2_cap, sc.total_cycles / kt, sc.tflops_gpu(size, size),
                  None if row is None else row["tflops"],
                  None if row is None else row.get("resident_ctas"), fitted)


def show_design(stages: int = 4, wait_pending: int = 1, consumers: int = 2, bn: int = 256,
                size: int = 4096, l2_cap: float | str | None = "fitted", record=None) -> Design | None:
    """Print :func:`design`'s text and return the :class:`Design`; a design the kernel cannot run
    (e.g. one consumer with BN = 256: too many accumulators per thread) prints one line naming the
    knob and the rule instead of a traceback, and returns None."""
    from .config import PipelineError
    try:
        d = design(stages, wait_pending, consumers, bn, size, l2_cap, record)
    except PipelineError as e:
        print(f"refused, the kernel cannot run this design: {e}")
        return None
    print(d.text())
    return d


def all_designs(size: int = 4096, record=None) -> list[Design]:
    """Every design :func:`design` accepts at ``size`` (fitted cap): bn 128/256 × consumers 1/2 ×
    S 1..6 × wait_group 0/1, those that fit."""
    from .config import PipelineError
    out = []
    for bn in (128, 256):
        for c in (1, 2):
            for s in range(1, 7):
                for p in (0, 1):
                    try:
                        out.append(design(s, p, c, bn, size, record=record))
                    except PipelineError:
                        continue
    return out


def design_survey(size: int = 4096, record=None) -> str:
    """The course's answer to §5's open question, generated from the model and the record: the
    design the model calls fastest, the recorded fastest and the model's error on it, the three
    recorded designs where the model errs most (with their CTAs per SM), and the widest miss among
    designs that ran one CTA per SM. Each sentence's conclusion is chosen by the numbers."""
    ds = all_designs(size, record)
    top = max(ds, key=lambda d: d.model_tflops)
    meas = [d for d in ds if d.measured_tflops is not None]
    best = max(meas, key=lambda d: d.measured_tflops)
    worst = sorted(meas, key=lambda d: -abs(d.error))[:3]
    alone = max((d for d in meas if (d.resident_ctas or 1) == 1), key=lambda d: abs(d.error))

    def name(d):
        c = d.config
        return f"128×{c.bn}/c{c.consumers} S = {c.stages} wait_group({c.wait_pending})"

    def row(d):
        return (f"  {name(d)}: model {d.model_tflops:.0f}, record {d.measured_tflops:.0f} "
                f"({d.error:+.0%}), {d.resident_ctas or 1} CTA(s) per SM")
    same = top.config == best.config
    lines = [f"Model's fastest: {name(top)}, {top.model_tflops:.0f} TFLOP/s"
             + (f" (record {top.measured_tflops:.0f})." if top.measured_tflops else " (not measured)."),
             f"Record's fastest: {name(best)}, {best.measured_tflops:.0f} TFLOP/s; the model gives "
             f"{best.model_tflops:.0f} ({best.error:+.0%})"
             + (": the same design." if same else
                ", a tie with the model's fastest: the model cannot tell them apart."
                if best.model_tflops >= 0.99 * top.model_tflops else
                f", {best.model_tflops / top.model_tflops - 1:+.0%} from the model's fastest."),
             "Widest misses:"] + [row(d) for d in worst]
    lines.append("All three ran with more than one CTA per SM; the model runs one, so it leaves out "
                 "one CTA's prologue and epilogue overlapping another's main loop."
                 if all((d.resident_ctas or 1) > 1 for d in worst) else
                 "Not all three ran with several CTAs per SM: occupancy alone does not explain them.")
    lines += ["Widest miss with one CTA per SM:", row(alone)]
    c = alone.config
    twin = next((d for d in ds if d.config == dataclasses.replace(c, wait_pending=1 - c.wait_pending)), None)
    if twin is not None and abs(twin.model_tflops / alone.model_tflops - 1) < 0.01:
        lines.append(f"The model gives wait_group({twin.config.wait_pending}) the same "
                     f"{twin.model_tflops:.0f}"
                     + (f"; the record {twin.measured_tflops:.0f}" if twin.measured_tflops else "")
                     + ": its wgmma drain is an assumed 128 cycles, hidden under the L2 cap.")
    return "\n".join(lines)


def cap_evidence(size: int = 4096, record=None, within: float = 0.15) -> tuple[bool, str]:
    """What deep dive 05b §5 knows about the fitted L2 cap, in one sentence: how close the model with
    it lies to the runs it was fitted on (:data:`FIT_ON`), and how many of the other recorded
    designs (each a test, not a fit) it lands within ``within`` of; what is not known is said too.
    Returns (condition, sentence) for :func:`asynctc.core.notebook.claim`: the condition is that
    the fit holds within ``within`` and at least half the other designs agree."""
    ds = [d for d in all_designs(size, record) if d.measured_tflops is not None]
    fit = [d for d in ds if d.fitted]
    tests = [d for d in ds if not d.fitted]
    agree = sum(abs(d.error) <= within for d in tests)
    worst_fit = max(abs(d.error) for d in fit) if fit else float("inf")
    return (bool(fit) and worst_fit <= within and 2 * agree >= len(tests),
            f"Known: the cap fits its {len(fit)} runs within {notebook.within(worst_fit)}, and {agree} of "
            f"{len(tests)} other designs merely agree within {within:.0%}; the fit cannot say whether L2 "
            "sets the pace (the l2_supply record measures the supply: chapter 05 §5).")

