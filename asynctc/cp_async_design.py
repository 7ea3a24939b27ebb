"""Chapter 02's "Design it" (deep dive 02b §3): one design of the cp.async GEMM (BK, stages) through a two-number
model, beside the record's run of the same design (:func:`design`), and the survey of every
design (:func:`design_survey`). No GPU, no timing, no plotting.

The model, per CTA and per k-tile, in SM clocks (the kernel's protocol: a ring of S stages, the
copies of k-tile kt + S − 1 issued while k-tile kt is computed):

* work: ``W`` clocks of SM time per k-tile (math and shared memory, whatever their overlap), so
  with R CTAs on an SM each CTA gets a k-tile done every R·W clocks at best;
* copies: a k-tile's copies land ``L`` clocks after they are issued; with S ≥ 2 they have S − 1
  k-tiles' time to land, so a k-tile takes at least L / (S − 1); with S = 1 nothing overlaps
  inside the CTA: copy, wait, compute, L + W.

A k-tile takes the larger; the GEMM takes waves × k-tiles × that, at the run's in-flight clock.
Two numbers are fitted, not measured (:func:`fit`): W from the 4096³ fp16 BK = 64, S = 3 run (two
CTAs per SM, where the copies never bind), scaled by BK / 64 for BK = 32; L from the BK = 32,
S = 1 run (copy, wait, compute). Those two runs *identify* W and L; every other recorded design
only agrees with the model or not (a test of it).
"""

from __future__ import annotations

import dataclasses
import math

from .core import notebook

SIZE = 4096                                   # M = N = K of the recorded stage sweep
SM_SMEM, CTA_RESERVED = 228 * 1024, 1024      # shared memory per SM (sm_90); the driver's per CTA
BM = BN = 128
#: The runs that identify the two constants: (bk, stages).
FIT_W, FIT_L = (64, 3), (32, 1)


def _pct(x: float) -> str:
    """A signed percentage, with no "-0%"."""
    return f"{x:+.0%}".replace("-0%", "+0%")


def _fail(field: str, value, rule: str):
    raise ValueError(f"{field}={value!r}: {rule}")


def stage_bytes(bk: int) -> int:
    """One stage of the ring: a 128×BK A tile and a BK×128 B tile, fp16."""
    return (BM + BN) * bk * 2


def ctas_per_sm(bk: int, stages: int) -> int:
    """CTAs per SM of the stage sweep (``cp_async.stage_sweep_tiles`` builds its tiles with it):
    two where both rings fit, else one."""
    return 2 if 2 * (stages * stage_bytes(bk) + CTA_RESERVED) <= SM_SMEM else 1


def _rows(results: dict, dtype: str = "float16") -> dict:
    """{(bk, stages): row} of the record's cp.async runs at :data:`SIZE`³."""
    return {(r["bk"], r["stages"]): r for r in results["sweep"]
            if r["kernel"] == "cp.async" and r["dtype"] == dtype and r["size"] == SIZE}


def _clocks_per_ktile(row: dict, sm_count: int) -> float:
    """Clocks per k-tile per CTA that a recorded run implies (waves × k-tiles share its time)."""
    r = ctas_per_sm(row["bk"], row["stages"])
    waves = math.ceil((SIZE // BM) * (SIZE // BN) / (sm_count * r))
    seconds = 2 * SIZE ** 3 / (row["tflops"] * 1e12)
    return seconds * row["sm_mhz"] * 1e6 / (waves * SIZE // row["bk"])


def fit(results: dict, sm_count: int = 132) -> tuple[float, float]:
    """(W, L) in SM clocks: W per BK = 64 k-tile from the :data:`FIT_W` run (two CTAs share the SM,
    so a k-tile takes 2·W), L from the :data:`FIT_L` run (a k-tile takes L + W·32/64)."""
    rows = _rows(results)
    w = _clocks_per_ktile(rows[FIT_W], sm_count) / ctas_per_sm(*FIT_W)
    lat = _clocks_per_ktile(rows[FIT_L], sm_count) - w * FIT_L[0] / 64
    return w, lat


@dataclasses.dataclass(frozen=True)
class Design:
    """One design: ``bk``, ``stages``, ``ctas`` per SM; the model's ``work`` (R·W) and ``copies``
    clocks per k-tile per CTA, its ``tflops`` at ``sm_mhz``; the record's ``measured`` TFLOP/s (None:
    not measured); ``fitted``: this run identified W or L."""
    bk: int
    stages: int
    ctas: int
    w: float
    latency: float
    work: float
    copies: float
    waves: int
    sm_mhz: float
    tflops: float
    measured: float | None
    fitted: bool

    @property
    def error(self) -> float | None:
        """model / record − 1, or None when not measured."""
        return None if self.measured is None else self.tflops / self.measured - 1

    def text(self) -> str:
        s, r, kt = self.stages, self.ctas, SIZE // self.bk
        wk = self.w * self.bk / 64
        ring = self.stages * stage_bytes(self.bk) // 1024
        work = (f"work {r} × {wk:.0f} = {self.work:.0f} clk ({r} CTAs share the SM)" if r > 1
                else f"work {self.work:.0f} clk (one CTA per SM; W was fitted with two)")
        copies = (f"copies L + W = {self.latency:.0f} + {wk:.0f} = {self.copies:.0f} clk (copy, wait, compute)"
                  if s == 1 else
                  f"copies L / (S − 1) = {self.latency:.0f} / {s - 1} = {self.copies:.0f} clk")
        binds = "the copies bind" if self.copies > self.work else "the work binds"
        clk = "the run's" if self.measured is not None else "the sweep's median"
        out = [f"128×128×{self.bk}, S = {s}, {r} CTA{'s' if r > 1 else ''} per SM "
               f"(ring {ring} KiB each), {SIZE}³ fp16",
               f"per k-tile, per CTA: {work}; {copies} → {max(self.work, self.copies):.0f} clk, {binds}",
               f"{self.waves} waves × {kt} k-tiles × {max(self.work, self.copies):.0f} clk at {clk} "
               f"{self.sm_mhz:.0f} MHz: model {self.tflops:.0f} TFLOP/s"]
        if self.measured is None:
            out.append("record: not measured (the kernel stops at 4 stages)")
        else:
            why = ("one of the two runs the model was fitted on" if self.fitted else
                   f"a test; W was fitted on BK = {FIT_W[0]}, S = {FIT_W[1]}, L on BK = {FIT_L[0]}, S = {FIT_L[1]}")
            alone = ("; one CTA alone: no second CTA's math hides its __syncthreads (a hypothesis: 02b §2)"
                     if self.ctas == 1 and self.error > 0.05 else "")
            out.append(f"record: {self.measured:.0f} TFLOP/s; model {_pct(self.error)} ({why}){alone}")
        return "\n".join(out)

    __str__ = text


def design(bk: int = 64, stages: int = 3, record=None) -> Design:
    """Chapter 02's GEMM (128×128 tiles, fp16, 4096³) with ``bk`` 32 or 64 and ``stages`` 1–6
    through the model of this module, beside the record's run of the same design (``record``: the
    cp_async record, default ``records.load("cp_async")``). Raises ``ValueError`` naming the field."""
    from .core import records
    if bk not in (32, 64) or isinstance(bk, bool):
        _fail("bk", bk, "the k-tile depth BK must be 32 or 64")
    if isinstance(stages, bool) or not isinstance(stages, int) or not 1 <= stages <= 6:
        _fail("stages", stages, "must be a whole number of stages from 1 to 6")
    rec = record or records.load("cp_async")
    sm = rec.provenance["sm_count"]
    w, lat = fit(rec.results, sm)
    r = ctas_per_sm(bk, stages)
    wk = w * bk / 64
    work = r * wk
    copies = lat + wk if stages == 1 else lat / (stages - 1)
    waves = math.ceil((SIZE // BM) * (SIZE // BN) / (sm * r))
    row = _rows(rec.results).get((bk, stages))
    rows = _rows(rec.results).values()
    mhz = row["sm_mhz"] if row else sorted(x["sm_mhz"] for x in rows)[len(rows) // 2]
    seconds = waves * (SIZE // bk) * max(work, copies) / (mhz * 1e6)
    return Design(bk, stages, r, w, lat, work, copies, waves, mhz, 2 * SIZE ** 3 / seconds / 1e12,
                  row["tflops"] if row else None, (bk, stages) in (FIT_W, FIT_L))


def design_survey(record=None) -> str:
    """Every recorded design, model beside record, which runs fitted W and L, and the widest miss
    among the others, with the reason chosen by the numbers."""
    ds = [design(bk, s, record) for bk in (64, 32) for s in (1, 2, 3, 4)]
    w, lat = ds[0].w, ds[0].latency
    lines = [f"Fitted: W = {w:.0f} clk per BK = 64 k-tile (BK = 64, S = 3), L = {lat:.0f} clk "
             "(BK = 32, S = 1)."]
    for d in ds:
        tag = "fit" if d.fitted else "test"
        lines.append(f"  BK = {d.bk}, S = {d.stages}, {d.ctas} CTA(s)/SM: model {d.tflops:.0f}, "
                     f"record {d.measured:.0f} ({_pct(d.error)}, {tag})")
    tests = [d for d in ds if not d.fitted]
    worst = max(tests, key=lambda d: abs(d.error))
    rest = max(abs(d.error) for d in tests if d is not worst)
    lines.append(f"Widest miss: BK = {worst.bk}, S = {worst.stages}, {_pct(worst.error)}; "
                 f"every other test within {notebook.within(rest)}.")
    lines.append("It is the one design with one CTA per SM. W was fitted with two, where one CTA's "
                 "__syncthreads can hide under the other's math; alone, nothing hides it (a hypothesis: 02b §2)."
                 if worst.ctas == 1 and worst.error > 0 else
                 "Occupancy does not explain it: the model misses a cost it does not name.")
    return "\n".join(lines)
