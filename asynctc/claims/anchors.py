"""The public numbers the course cites as anchors, beside ours: :data:`ANCHORS`, evaluated by
:func:`evaluate`.

Their numbers are facts from public sources (named in each row; COURSE.md, "Reference numbers");
ours come from the records. Their GPU, clock, cuBLAS build and shape differ from ours, so each part
says how the two are made comparable (the ratio to cuBLAS in each side's own run; per SM per clock;
a fraction of the same datasheet) and judges with a stated tolerance: :data:`~asynctc.claims.
verdicts.MATCHES`, :data:`~asynctc.claims.verdicts.BELOW` or :data:`~asynctc.claims.verdicts.ABOVE`
— or, for a qualitative statement of theirs, holds / does not hold.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping

from ..core import bench
from .seed import ladder_row, mma_sync_ceiling
from .verdicts import (DATASHEET, FAILS, HOLDS, MEASURED_CLOCK, NOT_MEASURED, MissingRecord, Part,
                       compared, first, fractions, need, sm_count)

#: Tolerance of a ratio to cuBLAS measured in another run, on another GPU: cuBLAS moves 5–10 %
#: between runs (COURSE.md, "Facts measured on the H200"), so only differences above 2 % count.
RATIO_TOL = 0.02
#: Tolerance of a per-SM-per-clock rate or a fraction of peak.
RATE_TOL = 0.05

# Their numbers (facts; sources in each anchor's ``source``).
GLUON = {"shape": (8192, 8192, 16384), "ours_tflops": 670.0, "cublas_tflops": 665.0,
         "small_k": 512, "small_k_of_cublas": 0.92}
WORKLOG = {4096: 1.066, 8192: 1.016}
LUO_MMA_SYNC = 0.63
LUO_FP8_OVER_FP16 = 2.0
DEEPGEMM = {"tflops": 1550.0, "of_cutlass": (1.2, 1.3)}


@dataclasses.dataclass(frozen=True)
class Anchor:
    """One public anchor: ``source`` (who, where), ``statement`` (their number, in our words),
    the course ``chapter`` and ``suites`` ours come from, and ``parts`` (one comparison each)."""

    key: str
    source: str
    statement: str
    chapter: str
    suites: tuple[str, ...]
    parts: tuple[Part, ...]


@dataclasses.dataclass(frozen=True)
class AnchorSpec:
    key: str
    source: str
    statement: str
    chapter: str
    suites: tuple[str, ...]
    measure: Callable[[Mapping], list[Part]]

    def evaluate(self, recs: Mapping) -> Anchor:
        try:
            parts = tuple(self.measure(recs))
        except MissingRecord as e:
            parts = (Part(self.statement, NOT_MEASURED, measure_with=f"{e} — run `python -m "
                          f"asynctc record {self.suites[0]}` on an sm_90 GPU"),)
        return Anchor(self.key, self.source, self.statement, self.chapter, self.suites, parts)


def _top_nonsquare(rec, m: int, n: int, k: int, dtype: str = "float16") -> dict:
    rows = [r for r in rec.results.get("nonsquare", []) if (r["m"], r["n"], r["k"]) == (m, n, k)
            and r["dtype"] == dtype and r.get("kernel") == "ws" and r.get("of_cublas")]
    if not rows:
        raise MissingRecord(f"no {m}×{n}×{k} {dtype} rung rows in the warp_specialization record")
    return max(rows, key=lambda r: r["rung"])


def _gluon(recs):
    rec = need(recs, "warp_specialization")
    ns = rec.results.get("nonsquare", [])
    shapes = {(r["m"], r["n"], r["k"]) for r in ns if r["dtype"] == "float16"}
    big_k = max((s for s in shapes if s[0] >= 4096 and s[1] >= 4096), key=lambda s: s[2])
    small_k = min((s for s in shapes if s[0] >= 4096 and s[1] >= 4096), key=lambda s: s[2])
    theirs = GLUON["ours_tflops"] / GLUON["cublas_tflops"]
    hi, lo = _top_nonsquare(rec, *big_k), _top_nonsquare(rec, *small_k)
    parts = [compared(f"large K: {theirs:.3f} of cuBLAS at 8192²×16384", hi["of_cublas"], theirs,
                      RATIO_TOL, f"chapter 06 rung {hi['rung']} at {'×'.join(map(str, big_k))} "
                      f"(the largest K measured): {hi['of_cublas']:.3f} of cuBLAS in its run", "×",
                      suite="warp_specialization"),
             compared(f"small K: {GLUON['small_k_of_cublas']:.2f} of cuBLAS at K = "
                      f"{GLUON['small_k']}", lo["of_cublas"], GLUON["small_k_of_cublas"], RATIO_TOL,
                      f"rung {lo['rung']} at {'×'.join(map(str, small_k))} (the smallest K "
                      f"measured; K = {GLUON['small_k']} not measured): {lo['of_cublas']:.3f}", "×",
                      suite="warp_specialization")]
    gain = {}
    for shp in (big_k, small_k):
        r = {x["rung"]: x["of_cublas"] for x in ns if (x["m"], x["n"], x["k"]) == shp
             and x["dtype"] == "float16" and x.get("kernel") == "ws" and x.get("of_cublas")}
        if 6 in r and 7 in r:
            gain[shp] = r[7] / r[6]
    if len(gain) == 2:
        ok = gain[small_k] > gain[big_k]
        parts.append(Part("the epilogue's overlap matters more at small K", HOLDS if ok else FAILS,
                          gain[small_k], None, "×",
                          f"the TMA-store epilogue (rung 7 over rung 6) gains "
                          f"{gain[small_k] - 1:+.0%} at K = {small_k[2]}, {gain[big_k] - 1:+.0%} at "
                          f"K = {big_k[2]}", suite="warp_specialization"))
    return parts


def _worklog(recs):
    rec = need(recs, "warp_specialization")
    parts = []
    for size, theirs in WORKLOG.items():
        entry, _ = ladder_row(rec, size=size, dtype="bfloat16")
        parts.append(compared(f"{theirs:.3f}× cuBLAS at {size}³ bf16", entry["of_cublas"], theirs,
                              RATIO_TOL, f"chapter 06 rung {entry['rung']} ({entry['name']}) at "
                              f"{size}³ bf16: {entry['of_cublas']:.3f} of cuBLAS in its run", "×",
                              suite="warp_specialization"))
    return parts


def _luo_mma_sync(recs):
    rec = need(recs, "mma_sync")
    row = mma_sync_ceiling(rec)
    f = fractions(row, sm_count(rec))
    return [compared(f"mma.sync reaches ~{LUO_MMA_SYNC:.0%} of peak (datasheet)", f["datasheet"],
                     LUO_MMA_SYNC, RATE_TOL, f"chapter 01's mma.sync ceiling {f['tflops']:.0f} "
                     f"TFLOP/s = {f['datasheet']:.3f} of the datasheet's {f['datasheet_tflops']:.0f}",
                     "fraction of peak", denominator=DATASHEET, clock=f["clock"], suite="mma_sync"),
            compared(f"mma.sync reaches ~{LUO_MMA_SYNC:.0%} of peak (at the measured clock)",
                     f["measured"], LUO_MMA_SYNC, RATE_TOL, f"{f['measured']:.3f} of "
                     f"{sm_count(rec)}×4096×{f['sm_mhz']:.0f} MHz ({f['clock']})",
                     "fraction of peak", denominator=MEASURED_CLOCK, clock=f["clock"],
                     suite="mma_sync")]


def _wgmma_rate(rec, n: int, dtype: str = "float16") -> dict:
    return first(rec.results["throughput"], f"wgmma N={n} {dtype}", dtype=dtype, n=n,
                 source="smem", chains=1, ctas_per_sm=2)


def _luo_wgmma(recs):
    rec = need(recs, "wgmma")
    res = rec.results
    theirs = res.get("luo_h800_tflops")
    if not theirs:
        raise MissingRecord("the wgmma record has no luo_h800_tflops")
    sms, mhz = res["luo_h800_sms"], res["luo_h800_assumed_mhz"]
    parts = []
    for n in (256, 128, 64):
        t = theirs[str(n)] if str(n) in theirs else theirs[n]
        per_clk = t * 1e12 / (sms * mhz * 1e6)
        row = _wgmma_rate(rec, n)
        parts.append(compared(f"wgmma m64n{n}k16 at {t} TFLOP/s on H800 PCIe = {per_clk:.0f} "
                              f"FLOP/clk/SM ({sms} SMs, {mhz:.0f} MHz assumed)",
                              row["flop_per_clk_sm"], per_clk, RATE_TOL,
                              f"chapter 04's wgmma peak kernel, N = {n}: "
                              f"{row['flop_per_clk_sm']:.0f} FLOP/clk/SM at {bench.clock_text(row)}",
                              "FLOP/clk/SM", clock=bench.clock_kind(row), suite="wgmma"))
    return parts


def _luo_fp8(recs):
    rec = need(recs, "wgmma")
    f16, f8 = _wgmma_rate(rec, 256), _wgmma_rate(rec, 256, "float8_e4m3fn")
    r = f8["flop_per_clk_sm"] / f16["flop_per_clk_sm"]
    return [compared(f"FP8 wgmma ~{LUO_FP8_OVER_FP16:g}× FP16", r, LUO_FP8_OVER_FP16, RATE_TOL,
                     f"chapter 04, N = 256, per SM per clock: e4m3 {f8['flop_per_clk_sm']:.0f} over "
                     f"fp16 {f16['flop_per_clk_sm']:.0f} = {r:.2f}×", "×", suite="wgmma")]


def _deepgemm(recs):
    rec = need(recs, "fp8")
    rows = rec.results.get("rows", [])
    ours = [r for r in rows if r.get("kernel") == "ours" and r.get("block_scales")]
    lib = [r for r in rows if r.get("kernel") == "cuBLASLt" and r.get("block_scales")]
    if not ours:
        raise MissingRecord("no block-scaled FP8 rows in the fp8 record")
    best = max(ours, key=lambda r: r["tflops"])
    sheet = bench.DATASHEET["dense_tflops"]["float8_e4m3fn"]
    theirs = DEEPGEMM["tflops"] / sheet
    tail = ""
    if lib:
        top = max(lib, key=lambda r: r["tflops"])
        tail = f"; cuBLASLt block-scaled {top['tflops']:.0f} = {top['tflops'] / sheet:.3f}"
    return [compared(f"FP8 block-scaled up to {DEEPGEMM['tflops']:.0f} TFLOP/s on H800 = "
                     f"{theirs:.3f} of the FP8 datasheet's {sheet:.0f}", best["tflops"] / sheet,
                     theirs, RATE_TOL, f"chapter 07's block-scaled GEMM at {best['size']}³: "
                     f"{best['tflops']:.0f} TFLOP/s = {best['tflops'] / sheet:.3f}{tail}",
                     "fraction of peak", denominator=DATASHEET, suite="fp8"),
            Part(f"{DEEPGEMM['of_cutlass'][0]}–{DEEPGEMM['of_cutlass'][1]}× CUTLASS at large shapes",
                 NOT_MEASURED, unit="×", measure_with="no suite times CUTLASS: a CUTLASS FP8 "
                 "block-scaled GEMM built and timed beside ours in the fp8 suite")]


ANCHORS = (
    AnchorSpec("gluon_persistent", "Triton Gluon's persistent Hopper GEMM",
               "a persistent Gluon GEMM matches cuBLAS at fp16 8192²×16384 (670 vs 665 TFLOP/s) "
               "and falls to 0.92 at K = 512", "06", ("warp_specialization",), _gluon),
    AnchorSpec("hopper_worklog", "the fast.cu Hopper GEMM worklog (H100 SXM, bf16)",
               "a hand-written Hopper GEMM beats cuBLAS by 1.066× at 4096³ and 1.016× at 8192³",
               "06", ("warp_specialization",), _worklog),
    AnchorSpec("luo_mma_sync", "Luo et al., IPDPS 2024 (H800 PCIe)",
               "mma.sync reaches ~63 % of the Tensor Core peak", "01", ("mma_sync",), _luo_mma_sync),
    AnchorSpec("luo_wgmma_n", "Luo et al., IPDPS 2024 (H800 PCIe)",
               "wgmma reaches 665 / 660 / 648 TFLOP/s at N = 256 / 128 / 64", "04", ("wgmma",),
               _luo_wgmma),
    AnchorSpec("luo_fp8", "Luo et al., IPDPS 2024 (H800 PCIe)",
               "FP8 wgmma runs ~2× FP16", "04", ("wgmma",), _luo_fp8),
    AnchorSpec("deepgemm", "DeepGEMM (H800, FP8 with 1×128 / 128×128 block scales)",
               "an FP8 block-scaled GEMM reaches 1550 TFLOP/s, 1.2–1.3× CUTLASS", "07", ("fp8",),
               _deepgemm),
)


def evaluate(recs) -> list[Anchor]:
    """Every anchor of :data:`ANCHORS` beside the records ``recs``."""
    return [a.evaluate(recs) for a in ANCHORS]
