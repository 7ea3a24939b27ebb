"""Chapter 04's "Design it": one wgmma shape and operand source through the bytes model of §8
(:func:`design`), beside the record's run of the same shape, and the survey of every recorded
shape (:func:`design_survey`). No GPU, no timing, no plotting.

The model (:func:`smem_model_flop_per_clk_sm`): back-to-back ``wgmma.mma_async.m64nNk16`` on one SM,
where only two rates count, both the hardware's, none fitted: the Tensor Cores' dense FLOP per
clock (:data:`FLOP_PER_CLK_SM`, H100 whitepaper) and shared memory's 128 bytes per clock
(chapter 00). The slower sets the pace; the SM clock the kernel read turns clocks into TFLOP/s. One
number that deep dive 04b §4 fits, :func:`rs_clocks_floor` (a fixed cost per RS wgmma), is not in
the model: the survey names where its absence shows.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..core import bench, notebook
from ..models import descriptors as dsc
from ..why_async import SMEM_BYTES_PER_CLK_SM
from .config import SOURCES

#: Dense Tensor Core FLOP per clock per SM on sm_90 (fp16/bf16 4096, fp8 8192).
FLOP_PER_CLK_SM = bench.FLOP_PER_CLK_PER_SM


def smem_bytes_per_wgmma(n: int, source: str, dtype: str = "float16") -> int:
    """Shared-memory bytes one ``wgmma.mma_async.m64nNk{16,32}`` reads: B (N × 32 bytes of K) always,
    A (64 × 32 bytes of K = 2048) only when A is in shared memory (``source="smem"``, SS); with A in
    registers (RS) only B. K always spans 32 bytes (16 fp16/bf16, 32 fp8), PTX ISA §9.7.15.5.
    Raises ``ValueError`` for an unknown ``source``."""
    if source not in SOURCES:
        raise ValueError(f"source={source!r}: must be one of {SOURCES}")
    k_bytes = dsc.instruction_k(dtype) * dsc.itemsize(dtype)          # 32
    return (64 * k_bytes if source == "smem" else 0) + n * k_bytes


def smem_model_flop_per_clk_sm(n: int, source: str, dtype: str = "float16",
                               smem_bytes_per_clk: float = SMEM_BYTES_PER_CLK_SM) -> float:
    """Predicted FLOP per clock per SM of back-to-back wgmma when only two resources count: the
    Tensor Cores (:data:`FLOP_PER_CLK_SM`) and the shared-memory bandwidth
    (``smem_bytes_per_clk`` per SM).

    One instruction does 2·64·N·K FLOP and needs ``FLOP / tensor rate`` clocks of Tensor Core time and
    ``smem_bytes_per_wgmma / smem_bytes_per_clk`` clocks of shared-memory time; the slower sets the
    pace. For fp16 SS: FLOP = 2048·N, Tensor Core time N/2 clk, shared-memory time
    (2048 + 32·N)/128 = 16 + N/4 clk → 8192·N/(64 + N) FLOP/clk for N < 64, 4096 from N = 64.
    For RS the shared-memory time N/4 never exceeds N/2: the model predicts the full rate at every N.
    """
    flop = 2 * 64 * n * dsc.instruction_k(dtype)
    tc_clk = flop / FLOP_PER_CLK_SM[dtype]
    smem_clk = smem_bytes_per_wgmma(n, source, dtype) / smem_bytes_per_clk
    return flop / max(tc_clk, smem_clk)


def clocks_per_wgmma(row: dict) -> float:
    """SM clocks per wgmma implied by a throughput row (``flop_per_clk_sm`` at the in-kernel clock)."""
    return 2 * 64 * row["n"] * dsc.instruction_k(row["dtype"]) / row["flop_per_clk_sm"]


def smem_model_rows(results: dict, dtype: str = "float16") -> list[dict]:
    """The record's ``dtype`` throughput rows at two CTAs per SM beside the model: for each (N, source,
    chains), measured and predicted FLOP/clk/SM, their ratio and the clocks per wgmma."""
    out = []
    for r in results["throughput"]:
        if r["dtype"] != dtype or r["ctas_per_sm"] != 2:
            continue
        pred = smem_model_flop_per_clk_sm(r["n"], r["source"], dtype)
        out.append({"n": r["n"], "source": r["source"], "chains": r["chains"],
                    "measured": r["flop_per_clk_sm"], "predicted": pred,
                    "ratio": r["flop_per_clk_sm"] / pred, "clk_per_wgmma": clocks_per_wgmma(r)})
    return out


def rs_clocks_floor(results: dict, dtype: str = "float16") -> float:
    """The fixed cost per RS wgmma the bytes model does not contain: the median SM clocks per
    instruction of the record's RS rows with N ≤ 16 (where the model predicts the full rate and the
    measurement is far below it). A number fitted to the record, not derived."""
    clk = [r["clk_per_wgmma"] for r in smem_model_rows(results, dtype)
           if r["source"] == "registers" and r["n"] <= 16]
    if not clk:
        raise ValueError("the record has no RS rows with N <= 16")
    return float(np.median(clk))


def _pct(x: float) -> str:
    """A signed percentage, with no "-0%"."""
    return f"{x:+.0%}".replace("-0%", "+0%")


def _fail(field: str, value, rule: str):
    raise ValueError(f"{field}={value!r}: {rule}")


def record_row(results: dict, n: int, source: str, dtype: str = "float16") -> dict | None:
    """The record's throughput row of that shape: one accumulator, two CTAs per SM; None if absent."""
    return next((r for r in results["throughput"] if r["n"] == n and r["source"] == source
                 and r["dtype"] == dtype and r["chains"] == 1 and r["ctas_per_sm"] == 2), None)


@dataclasses.dataclass(frozen=True)
class WgmmaDesign:
    """One shape: ``n``, ``source`` ("smem": SS, "registers": RS), ``dtype``; the model's
    ``tc_clk`` and ``smem_clk`` per wgmma, its ``tflops`` at ``sm_mhz`` × ``sm_count``; the
    record's ``measured`` TFLOP/s (None: not measured)."""
    n: int
    source: str
    dtype: str
    tc_clk: float
    smem_clk: float
    sm_count: int
    sm_mhz: float
    tflops: float
    measured: float | None

    @property
    def error(self) -> float | None:
        """model / record − 1, or None when not measured."""
        return None if self.measured is None else self.tflops / self.measured - 1

    def text(self) -> str:
        k = dsc.instruction_k(self.dtype)
        flop = 2 * 64 * self.n * k
        kb = k * dsc.itemsize(self.dtype)
        a = f"{64 * kb} A + " if self.source == "smem" else ""
        src = "A from shared memory (SS)" if self.source == "smem" else "A from registers (RS)"
        clk = max(self.tc_clk, self.smem_clk)
        rate = FLOP_PER_CLK_SM[self.dtype]
        when = "the run's" if self.measured is not None else "the record's median"
        out = [f"m64n{self.n}k{k} {self.dtype}, {src}",
               f"Tensor Cores: 2·64·{self.n}·{k} = {flop} FLOP / {rate} FLOP/clk = {self.tc_clk:g} clk",
               f"shared memory: {a}{kb}·{self.n} B = {smem_bytes_per_wgmma(self.n, self.source, self.dtype)} B"
               f" / {SMEM_BYTES_PER_CLK_SM} B/clk = {self.smem_clk:g} clk",
               f"→ {clk:g} clk per wgmma ({'shared memory' if self.smem_clk > self.tc_clk else 'Tensor Cores'}"
               f" set the pace): {flop / clk:.0f} FLOP/clk/SM × {self.sm_count} SMs × {when} "
               f"{self.sm_mhz:.0f} MHz = model {self.tflops:.0f} TFLOP/s"]
        if self.measured is None:
            out.append("record: not measured")
        else:
            took = flop / (self.measured * 1e6 / (self.sm_count * self.sm_mhz))     # clk per wgmma, measured
            why = ("" if abs(self.error) <= 0.1 else
                   f": the run took {took:.0f} clk per wgmma, and RS pays a fixed cost per instruction, "
                   "whatever N, that the model lacks (deep dive 04b §4)" if self.source == "registers" else
                   ": a cost the model lacks (deep dive 04b §4)")
            side = "above" if self.error > 0 else "below"             # reader 125: a bare "+226%" read as a bug
            gap = (f"the model is {abs(self.error):.0%} {side} it" if round(abs(self.error), 2)
                   else "the model matches it")
            out.append(f"record: {self.measured:.0f} TFLOP/s; {gap}{why}")
        return "\n".join(out)

    __str__ = text


def design(n: int = 64, source: str = "smem", dtype: str = "float16", record=None) -> WgmmaDesign:
    """wgmma m64nNk16 (k32 for fp8) with ``n`` (a multiple of 8, 8–256) and ``source`` ("smem" or
    "registers") through :func:`smem_model_flop_per_clk_sm`, at the clock of the record's run of the
    same shape (the median of the record's ``dtype`` rows if none), beside that run (``record``:
    the wgmma record, default ``records.load("wgmma")``). Raises ``ValueError`` naming the field."""
    from ..core import records
    if isinstance(n, bool) or not isinstance(n, int) or not 8 <= n <= 256 or n % 8:
        _fail("n", n, "wgmma's N is a multiple of 8 from 8 to 256")
    if source not in SOURCES:
        _fail("source", source, f"must be one of {SOURCES}")
    if dtype not in FLOP_PER_CLK_SM:
        _fail("dtype", dtype, f"must be one of {tuple(FLOP_PER_CLK_SM)}")
    rec = record or records.load("wgmma")
    res = rec.results
    row = record_row(res, n, source, dtype)
    clocks = [r["sm_mhz"] for r in res["throughput"] if r["dtype"] == dtype]
    if row is None and not clocks:
        _fail("dtype", dtype, "the record holds no run of this dtype, so no clock to run the model at")
    mhz = row["sm_mhz"] if row else float(np.median(clocks))
    flop = 2 * 64 * n * dsc.instruction_k(dtype)
    tc = flop / FLOP_PER_CLK_SM[dtype]
    sm = smem_bytes_per_wgmma(n, source, dtype) / SMEM_BYTES_PER_CLK_SM
    tflops = smem_model_flop_per_clk_sm(n, source, dtype) * res["sm_count"] * mhz * 1e6 / 1e12
    return WgmmaDesign(n, source, dtype, tc, sm, res["sm_count"], mhz, tflops,
                       row["tflops"] if row else None)


def design_survey(record=None, within: float = 0.05) -> str:
    """Every recorded shape (one accumulator, two CTAs per SM), model beside record, and where the
    model misses, with the fixed RS cost deep dive 04b §4 fits. Sentences chosen by the numbers."""
    from ..core import records
    rec = record or records.load("wgmma")
    ds = [design(r["n"], r["source"], r["dtype"], rec) for r in rec.results["throughput"]
          if r["chains"] == 1 and r["ctas_per_sm"] == 2]
    lines = [f"  {d.dtype} N = {d.n:3d} {'SS' if d.source == 'smem' else 'RS'}: model {d.tflops:4.0f}, "
             f"record {d.measured:4.0f} ({_pct(d.error)})" for d in ds]
    near = [d for d in ds if abs(d.error) <= within]
    far = [d for d in ds if abs(d.error) > within]
    lines.append(f"{len(near)} of {len(ds)} shapes within {within:.0%}, with nothing fitted.")
    if far:
        rs = all(d.source == "registers" and d.n <= 16 for d in far)
        names = ", ".join(f"{'SS' if d.source == 'smem' else 'RS'} N = {d.n}" for d in far)
        lines.append(f"Misses: {names}. "
                     + (f"All are RS at N ≤ 16, where the model says the Tensor Cores set the pace; "
                        f"the record says each wgmma costs {rs_clocks_floor(rec.results):.1f} clk "
                        "whatever its work, a fixed cost the model lacks (04b §4 fits it)."
                        if rs else "Not only RS at small N: the model lacks more than a fixed cost."))
    return "\n".join(lines)


def _small_n_rows(results: dict, dtype: str) -> dict:
    """{(n, source): row} of :func:`smem_model_rows` with one accumulator."""
    return {(r["n"], r["source"]): r for r in smem_model_rows(results, dtype) if r["chains"] == 1}


@notebook.guards
def small_n_held_out(results: dict, dtype: str = "float16", fit_n: int = 8, held_out=(16, 32),
                     within: float = 0.05) -> str:
    """Deep dive 04b §4's held-out test (moved from chapter 04 §8): RS's fixed clocks per wgmma,
    fitted on the RS run at ``fit_n`` only, predict the RS runs at ``held_out`` (clocks = the
    larger of that floor, the Tensor Cores' N/2 and shared memory's N/4); one line per prediction
    with its miss. Raises :class:`AssertionError` unless every miss is within ``within``."""
    m = _small_n_rows(results, dtype)
    k = dsc.instruction_k(dtype)
    floor = m[fit_n, "registers"]["clk_per_wgmma"]
    lines = [f"RS floor fitted on N = {fit_n} alone: {floor:.1f} clk per wgmma. Held out:"]
    misses = []
    for n in held_out:
        clk = max(floor, 2 * 64 * n * k / FLOP_PER_CLK_SM[dtype],
                  smem_bytes_per_wgmma(n, "registers", dtype) / SMEM_BYTES_PER_CLK_SM)
        pred, run = 2 * 64 * n * k / clk, m[n, "registers"]["measured"]
        misses.append(pred / run - 1)
        lines.append(f"  RS N = {n}: predicted {pred:.0f}, run {run:.0f}, miss {pred / run - 1:+.1%}")
    assert all(abs(x) < within for x in misses), f"held-out RS miss {misses}"
    return "\n".join(lines)
