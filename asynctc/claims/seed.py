"""Every quantitative statement of the seed article (the tutorial this course checks, see README),
in our words, with the chapter and records it is checked against and a function that computes the
course's number(s) from those records: :data:`SEED_CLAIMS`, evaluated by :func:`evaluate`.

Readings of vague words are stated in each part ("a few cycles" read as ≤ 10, "tens of KB" as
10–99 KiB, "~50 %" as 45–55 %); the 4096³ table uses the bands chapter 07 uses (±0.005), so the two
chapters never disagree on the same number. Every "% of peak" statement is judged under both
denominators (:func:`asynctc.claims.verdicts.peak_parts`). A part the course has not measured says
what would measure it (``measure_with``) — never a guess; it is judged as soon as a record holds the
rows (the functions look for them).
"""

from __future__ import annotations

import re
import statistics

from ..core import bench
from ..mma_sync import DEFAULT_TILE, ceiling_row
from ..models import descriptors
from .gaps import (BLACKWELL_RUN, FP8_SWIZZLE, LATENCY_GLOBAL, LATENCY_SHARED, NCU_MMA_SYNC)
from .seed_copies import _tma_vs_manual
from .verdicts import (BLACKWELL, DATASHEET, FAILS, HOLDS, MEASURED_CLOCK, NOT_MEASURED, ClaimSpec,
                       MissingRecord, Part, first, judged, need, peak_parts, sm_count)

SIZE = 4096

#: The seed's 4096³ fp16 table as fractions of peak: (step, low, high, as the seed writes it) —
#: the same reading as deep dive 07d's section 6 (`asynctc.fp8.SEED_4096`; a test keeps them equal).
SEED_4096 = (("mma.sync", 0.45, 0.55, "~50 %"),
             ("wgmma + TMA + warp specialization", 0.75, 0.80, "75–80 %"),
             ("tuned", 0.85, 0.85, "85 %"))
BAND_TOL = 0.005
#: How the table's sentences name each step.
STEP_WORDS = {"mma.sync": "mma.sync", "wgmma + TMA + warp specialization":
              "wgmma + TMA + warp specialization", "tuned": "swizzle and depth tuning"}

#: The descriptor fields as the seed states them: (first bit, width) of the 14-bit byte-address
#: fields, each holding a byte value >> 4.
SEED_DESCRIPTOR_FIELDS = {"start_address": (0, 14), "lbo": (16, 14), "sbo": (32, 14)}

# --------------------------------------------------------------------------------------------------
# Rows the claims read
# --------------------------------------------------------------------------------------------------


def mma_sync_best(rec, size: int = SIZE, dtype: str = "float16") -> dict:
    """Chapter 01's fastest tuned ldmatrix + mma.sync GEMM row at ``size``³ (``mma_sync`` record)."""
    rows = [r for r in rec.results.get("sweep", []) if r.get("kernel") == "mma.sync"
            and r.get("size") == size and r.get("dtype") == dtype]
    if not rows:
        raise MissingRecord(f"no mma.sync row at {size}³ {dtype} in the mma_sync record")
    return max(rows, key=lambda r: r["tflops"])


def mma_sync_ceiling(rec, dtype: str = "float16") -> dict:
    """Chapter 01's register-only mma.sync peak kernel at the tuned GEMM's occupancy (its warps per
    CTA and CTAs per SM: :func:`asynctc.mma_sync.ceiling_row`), the row chapter 01 calls the
    ceiling (in-kernel clock), so that the two chapters print one ceiling (another occupancy's row
    may be a few TFLOP/s faster)."""
    try:
        return ceiling_row(rec.results, DEFAULT_TILE, dtype)
    except (StopIteration, KeyError):
        raise MissingRecord(f"no {dtype} peak row at {DEFAULT_TILE.warps} warps × "
                            f"{DEFAULT_TILE.min_blocks} CTAs/SM in the mma_sync record") from None


def ladder_row(rec, rung: int | None = None, size: int = SIZE, dtype: str = "float16") -> tuple:
    """``(ladder entry, timed row)`` of chapter 06's rung ``rung`` (None: the top rung) at
    ``size``³ from the ``warp_specialization`` record."""
    res = rec.results
    lad = {r["rung"]: r for r in res.get("ladder", []) if r["size"] == size and r["dtype"] == dtype}
    if not lad:
        raise MissingRecord(f"no ladder at {size}³ {dtype} in the warp_specialization record")
    entry = lad[max(lad) if rung is None else rung]
    row = first(res["rows"], f"rung {entry['rung']}", label=entry["label"], size=size, dtype=dtype)
    return entry, row


def cublas_row(rec, size: int = SIZE, dtype: str = "float16") -> dict:
    return first(rec.results["rows"], "cuBLAS", kernel="cuBLAS", size=size, dtype=dtype)


def stage_kib(row: dict) -> float:
    """Shared-memory bytes of one stage of a GEMM row's tile, KiB: A bm×bk + B bk×bn."""
    item = 1 if "float8" in str(row.get("dtype", "")) else 2
    return (row["bm"] * row["bk"] + row["bk"] * row["bn"]) * item / 1024


#: The records that may hold FP8 rows under a swizzle other than 128 bytes: the full fp8 suite,
#: its three-minute slice (``tools/gpu_ch07.py --swizzle``) and the swizzle suite.
FP8_SWIZZLE_SUITES = ("fp8", "fp8_swizzle", "swizzle")


def _fp8_rows_off_128(recs) -> list[tuple[str, dict]]:
    """``(suite, row)`` of every FP8 GEMM row timed under a swizzle other than 128 bytes, in the
    records of :data:`FP8_SWIZZLE_SUITES`."""
    out = []
    for suite in FP8_SWIZZLE_SUITES:
        rec = recs.get(suite)
        for r in (rec.results.get("rows", []) if rec else []):
            fp8 = "float8" in str(r.get("dtype", "")) + str(r.get("label", ""))
            if fp8 and r.get("swizzle") not in (None, 128) and r.get("kernel") != "cuBLASLt":
                out.append((suite, r))
    return out


def _same_run(recs, suite: str, row: dict, label: str | None = None, **match) -> dict | None:
    """The row of record ``suite`` (the same run as ``row``) with ``label`` at ``row``'s size
    (default: ``row``'s label without the " swizzle:N" word — the same build at 128 bytes), or
    with the fields ``match``; None if that record has none."""
    if label is None and not match:
        label = re.sub(r" swizzle:\d+", "", str(row.get("label", "")))
    rec = recs.get(suite)
    for r in (rec.results.get("rows", []) if rec else []):
        if r is row or r.get("size") != row.get("size"):
            continue
        if (label is None or r.get("label") == label) and all(r.get(k) == v for k, v in match.items()):
            return r
    return None


def _same_at_128(recs, row: dict, suite: str | None = None) -> dict | None:
    """The row of the same kernel and size under the 128-byte swizzle, in the same record as
    ``row`` (``suite``; default: the first of :data:`FP8_SWIZZLE_SUITES` holding ``row``)."""
    if suite is None:
        suite = next((s for s in FP8_SWIZZLE_SUITES if recs.get(s) is not None and any(
            r is row for r in recs[s].results.get("rows", []))), None)
    return _same_run(recs, suite, row) if suite else None


# --------------------------------------------------------------------------------------------------
# The claims
# --------------------------------------------------------------------------------------------------


def _sync_utilisation(recs):
    rec = need(recs, "mma_sync")
    row = mma_sync_best(rec)
    parts = peak_parts("the tuned synchronous GEMM (ldmatrix + mma.sync) at 4096³ fp16 keeps the "
                       "Tensor Cores 30–50 % busy", row, sm_count(rec), 0.30, 0.50, "mma_sync",
                       who=f"chapter 01, tile {row.get('tile')}")
    return parts + [Part("memory bandwidth is nearly saturated meanwhile", NOT_MEASURED,
                         suite="mma_sync", measure_with=NCU_MMA_SYNC)]


def _sync_quarter(recs):
    rec = need(recs, "mma_sync")
    ceil, gemm = mma_sync_ceiling(rec), mma_sync_best(rec)
    where = (f"chapter 01's register-only mma.sync kernel, {ceil.get('warps_per_cta')} warps × "
             f"{ceil.get('ctas_per_sm')} CTAs/SM: {ceil['tflops']:.0f} TFLOP/s at "
             f"{bench.clock_text(ceil)}")
    ratio = gemm["tflops"] / ceil["tflops"]
    return [judged("the synchronous Tensor Core instruction's own ceiling is 300+ TFLOP/s",
                   ceil["tflops"], 300, None, where, "TFLOP/s", clock=bench.clock_kind(ceil),
                   suite="mma_sync"),
            judged("a synchronous GEMM measures 80+ TFLOP/s", gemm["tflops"], 80, None,
                   f"chapter 01's tuned GEMM at 4096³: {gemm['tflops']:.0f} TFLOP/s", "TFLOP/s",
                   suite="mma_sync"),
            judged("that is about a quarter of the ceiling (80 of 300+, read as 0.20–0.35)", ratio,
                   0.20, 0.35, f"{gemm['tflops']:.0f} / {ceil['tflops']:.0f} = {ratio:.2f} of the "
                   "mma.sync ceiling", "×", suite="mma_sync")]


def _tma_stage_span(recs) -> str:
    """Chapter 05's one-stage trace: a TMA stage's cycles from issue to its full barrier."""
    rec = recs.get("pipeline")
    for t in (rec.results.get("traces", []) if rec else []):
        if t.get("stages") == 1 and "cta0" in t:
            d = [s["end"] - s["start"] for s in t["cta0"]["spans"] if s["kind"] == "tma"]
            if d:
                return (f"chapter 05's in-kernel trace (1 stage, tile {t['tile']}) times one "
                        f"{stage_kib(t):.0f} KiB TMA stage from issue to its full barrier at "
                        f"{min(d):.0f}–{max(d):.0f} cycles (median {statistics.median(d):.0f}): "
                        "latency and transfer together")
    return ""


def _latencies(recs):
    rec = need(recs, "mma_sync")
    ceil = mma_sync_ceiling(rec)
    per_clk = ceil["tflops"] * 1e12 / (sm_count(rec) * ceil["sm_mhz"] * 1e6)
    cycles = 2 * 16 * 8 * 16 * 4 / per_clk
    return [Part("global memory latency is hundreds of cycles", NOT_MEASURED, unit="cycles",
                 ours=_tma_stage_span(recs), suite="pipeline", measure_with=LATENCY_GLOBAL),
            Part("shared memory latency is tens of cycles (what feeding one mma costs)",
                 NOT_MEASURED, unit="cycles", measure_with=LATENCY_SHARED),
            judged("one mma issues in a few cycles (read as ≤ 10 per SM sub-partition)", cycles,
                   None, 10, f"the mma.sync ceiling is {per_clk:.0f} FLOP/clk/SM "
                   f"({bench.clock_text(ceil)}), so each of the 4 sub-partitions completes one "
                   f"m16n8k16 (4096 FLOP) every {cycles:.1f} cycles", "cycles",
                   clock=bench.clock_kind(ceil), suite="mma_sync")]


def _sync_vs_wgmma(recs):
    mrec, wrec = need(recs, "mma_sync"), need(recs, "warp_specialization")
    m = mma_sync_best(mrec)
    entry, w = ladder_row(wrec)
    r = w["tflops"] / m["tflops"]
    per_clock = (w["tflops"] / w["sm_mhz"]) / (m["tflops"] / m["sm_mhz"])
    head = (f"chapter 06 rung {entry['rung']} ({entry['name']}) {w['tflops']:.0f} TFLOP/s against "
            f"chapter 01's mma.sync GEMM {m['tflops']:.0f}")
    return [judged("wgmma and mma.sync GEMMs at 4096³ fp16 are more than 1.5× apart", r, 1.5, None,
                   f"{head}: {r:.2f}×", "×", suite="warp_specialization"),
            judged("... also per clock (each divided by its own measured SM clock)", per_clock, 1.5,
                   None, f"{w['tflops'] / w['sm_mhz']:.3f} against {m['tflops'] / m['sm_mhz']:.3f} "
                   f"TFLOP/s per MHz ({bench.clock_text(w)}; {bench.clock_text(m)}): "
                   f"{per_clock:.2f}×", "×", clock=bench.clock_kind(w), suite="warp_specialization")]


def _smem_228(recs):
    rec = need(recs, "pipeline")
    limit = rec.results.get("smem_limit")
    if not limit:
        raise MissingRecord("the pipeline record has no smem_limit")
    per_sm = (limit + 1024) / 1024
    return [judged("Hopper has 228 KB of shared memory per SM", per_sm, 228, 228,
                   f"a CTA may opt in to {limit} B = {limit / 1024:.0f} KiB (the device's limit, "
                   f"recorded by the pipeline suite); with the 1 KiB reserved per CTA that is "
                   f"{per_sm:.0f} KiB per SM (CUDA C++ Programming Guide, compute capability 9.0)",
                   "KiB", suite="pipeline")]


def _tile_kb(recs):
    rec = need(recs, "warp_specialization")
    entry, row = ladder_row(rec)
    kib = stage_kib(row)
    limit = (recs.get("pipeline").results.get("smem_limit") if recs.get("pipeline") else None)
    ring = kib * row["stages"]
    share = f" of the {limit / 1024:.0f} KiB a CTA may use" if limit else ""
    return [judged("one stage of a 128×256 fp16 tile takes tens of KB (read as 10–99 KiB)", kib,
                   10, 99, f"chapter 06 rung {entry['rung']}'s {row['bm']}×{row['bn']}×{row['bk']} "
                   f"tile: A {row['bm']}×{row['bk']} + B {row['bk']}×{row['bn']} = {kib:.0f} KiB "
                   f"per stage; its {row['stages']}-stage ring {ring:.0f} KiB{share}", "KiB",
                   suite="warp_specialization")]


def _depth_groups(rec) -> dict:
    g: dict = {}
    for r in rec.results.get("sweep", []):
        if r.get("kernel") == "pipeline" and r.get("dtype") == "float16":
            g.setdefault((r["tile"], r["size"]), {})[r["stages"]] = r["tflops"]
    return {k: v for k, v in g.items() if 2 in v and 3 in v}


def _queue_depth(recs):
    rec = need(recs, "pipeline")
    groups = _depth_groups(rec)
    if not groups:
        raise MissingRecord("no fp16 depth sweep in the pipeline record")
    best = {k: max(v, key=v.get) for k, v in groups.items()}
    inside = [k for k, s in best.items() if 2 <= s <= 4]
    enough = {k: v[2] / max(v.values()) for k, v in groups.items()}
    better = {k: v[3] / v[2] for k, v in groups.items()}
    worst2 = min(enough, key=enough.get)
    worst3 = min(better, key=better.get)
    names = ", ".join(f"{t} {s}³: {best[(t, s)]}" for t, s in sorted(best))
    share = len(inside) / len(best)
    return [Part("the best ring depth is 2–4 stages", HOLDS if share == 1 else FAILS, share,
                 (1.0, 1.0), "share", f"best depth per tile and size (chapter 05, fp16): {names}",
                 suite="pipeline"),
            judged("double buffering is enough (2 stages within 5 % of the best depth)",
                   enough[worst2], 0.95, None, f"2 stages reach {min(enough.values()):.2f}–"
                   f"{max(enough.values()):.2f} of the best depth (worst: {worst2[0]} at "
                   f"{worst2[1]}³)", "×", suite="pipeline"),
            judged("triple buffering is better than double", better[worst3], 1.0, None,
                   f"3 stages / 2 stages = {min(better.values()):.2f}–{max(better.values()):.2f} "
                   f"(least: {worst3[0]} at {worst3[1]}³)", "×", suite="pipeline")]


def _fp8_speedup(recs):
    rec = need(recs, "fp8")
    parts = []
    table = rec.results.get("table", [])
    for size in sorted({r["size"] for r in table if r.get("kernel") == "FP8/FP16 ours"}):
        ours = first(table, "FP8/FP16 ours", kernel="FP8/FP16 ours", size=size)["ratio"]
        lib = next((r["ratio"] for r in table if r.get("kernel") == "FP8/FP16 cuBLAS"
                    and r["size"] == size), None)
        tail = f"; cuBLASLt FP8 / cuBLAS FP16 {lib:.2f}×" if lib else ""
        parts.append(judged(f"FP8 runs 1.5–2× FP16 at {size}³ (128-byte swizzle, K-major)", ours,
                            1.5, 2.0, f"our FP8 top rung / our FP16 top rung = {ours:.2f}×{tail} "
                            "(2× is the ratio of the dense peaks, a ceiling)", "×", suite="fp8"))
    if not parts:
        raise MissingRecord("no FP8/FP16 rows in the fp8 record")
    what = "with the layout wrong FP8 may run slower than FP16"
    ratios = []
    for suite, r in _fp8_rows_off_128(recs):       # FP16 of the same run: our best fp16 row
        f16 = [x["tflops"] for x in recs[suite].results.get("rows", []) if x.get("size") ==
               r.get("size") and x.get("dtype") == "float16" and x.get("kernel") == "ours"]
        if f16:
            ratios.append((r["tflops"] / max(f16), suite, r))
    if ratios:
        v, suite, r = min(ratios, key=lambda x: x[0])
        parts.append(judged(what, v, None, 1.0, f"slowest FP8 variant off the 128-byte swizzle "
                            f"({r['swizzle'] or 'no'}{'-byte' if r['swizzle'] else ' swizzle'}, "
                            f"{r['size']}³): {v:.2f}× our FP16 of the same run", "×", suite=suite))
        return parts
    parts.append(Part(what, NOT_MEASURED, unit="×", measure_with=FP8_SWIZZLE))
    return parts


def _swizzle_rows(rec) -> dict:
    """``{size: {swizzle: tflops}}`` of the fp16 swizzle experiment (one box along the rows, loads
    every k-tile)."""
    out: dict = {}
    for r in rec.results.get("rows", []):
        if r.get("kernel") == "ours" and r.get("row_boxes", 1) == 1 and not r.get("tma_once") \
                and "float8" not in str(r.get("label")):
            out.setdefault(r["size"], {})[r["swizzle"]] = r["tflops"]
    return {s: v for s, v in out.items() if 128 in v and len(v) > 1}


def _swizzle_modes(recs):
    rec = need(recs, "swizzle")
    rows = _swizzle_rows(rec)
    if not rows:
        raise MissingRecord("no fp16 swizzle rows in the swizzle record")
    parts = []
    for size, t in sorted(rows.items()):
        of = {s: v / t[128] for s, v in t.items() if s != 128}
        nxt = max(of, key=of.get)
        parts.append(judged(f"128-byte swizzle is the fastest mode for fp16 at {size}³",
                            max(of.values()), None, 1.0, "of the 128-byte variant: " + ", ".join(
                                f"{s or 'none'}{' B' if s else ''} {v:.2f}" for s, v in sorted(of.items(), reverse=True)),
                            "×", suite="swizzle"))
        parts.append(judged(f"modes are 10–20 % apart at {size}³ (128-byte over the next-best)",
                            1 / of[nxt], 1.10, 1.20, f"128-byte over {nxt}-byte: "
                            f"{1 / of[nxt] - 1:.0%}; over the others {', '.join(f'{1 / v - 1:.0%}' for s, v in sorted(of.items(), reverse=True) if s != nxt)}",
                            "×", suite="swizzle"))
    what = "for FP8 a 64- or 32-byte swizzle may beat the 128-byte one"
    fp8 = _fp8_swizzle_ratios(recs)
    if not fp8:
        parts.append(Part(what, NOT_MEASURED, unit="×", measure_with=FP8_SWIZZLE))
        return parts
    for size, (suite, of) in sorted(fp8.items()):
        narrow = {s: v for s, v in of.items() if s in (64, 32)}
        best = max(narrow or of, key=(narrow or of).get)
        text = ", ".join(f"{s or 'none'}{' B' if s else ''} {v:.2f}"
                         for s, v in sorted(of.items(), reverse=True))
        parts.append(judged(f"{what} at {size}³", (narrow or of)[best], 1.0, None,
                            f"FP8 e4m3 of the same build at 128 bytes ({suite} record): {text}",
                            "×", suite=suite))
        nxt = max(of, key=of.get)
        parts.append(judged(f"FP8 modes are 10–20 % apart at {size}³ (128-byte over the next-best)",
                            1 / of[nxt], 1.10, 1.20, f"128-byte over {nxt or 'no'}"
                            f"{'-byte' if nxt else ' swizzle'}: {1 / of[nxt] - 1:.0%} (FP8 e4m3)",
                            "×", suite=suite))
    return parts


def _fp8_swizzle_ratios(recs) -> dict:
    """``{size: (suite, {swizzle: FP8 TFLOP/s / the same build's at 128 bytes})}`` from the FP8
    rows off 128 bytes, each against the 128-byte row of its own run (a size measured in two
    records: the first of :data:`FP8_SWIZZLE_SUITES`)."""
    out: dict = {}
    for suite, r in _fp8_rows_off_128(recs):
        base = _same_at_128(recs, r, suite)
        if base is None:
            continue
        got = out.setdefault(r["size"], (suite, {}))
        if got[0] == suite:
            got[1][r["swizzle"]] = r["tflops"] / base["tflops"]
    return out


def _accumulators(recs):
    rec = need(recs, "warp_specialization")
    entry, row = ladder_row(rec)
    acc = row["bm"] * row["bn"] // (row["consumers"] * 128)
    regs = rec.results.get("registers", {}).get(row["label"])
    if not regs:
        raise MissingRecord(f"no register budget for {row['label']}")
    whole = row["bm"] * row["bn"]
    return [judged("the accumulators of a large tile take hundreds of registers per thread (read "
                   "as ≥ 100)", acc, 100, None, f"chapter 06 rung {entry['rung']}: a "
                   f"{row['bm']}×{row['bn']} fp32 tile over {row['consumers']} consumer warpgroups "
                   f"is {acc} registers per thread ({whole} values, {whole / 65536:.2f} of the "
                   "SM's 65536 registers)", "registers", suite="warp_specialization"),
            judged("... and the consumer thread's whole budget runs to hundreds (≥ 200)",
                   regs["consumer"], 200, None, f"setmaxnreg gives each consumer thread "
                   f"{regs['consumer']} registers, the producer {regs['producer']} (read from the "
                   "cubin's SASS)", "registers", suite="warp_specialization")]


def _gemm_step(step: int):
    name, low, high, _ = SEED_4096[step]

    def measure(recs):
        if step == 0:
            rec = need(recs, "mma_sync")
            row, who, suite = mma_sync_best(rec), "chapter 01 mma.sync GEMM", "mma_sync"
        else:
            rec, suite = need(recs, "warp_specialization"), "warp_specialization"
            if step == 1:
                e2, r2 = ladder_row(rec, 2)
                e3, r3 = ladder_row(rec, 3)
                entry, row = (e3, r3) if r3["tflops"] >= r2["tflops"] else (e2, r2)
            else:
                entry, row = ladder_row(rec)
            who = f"chapter 06 rung {entry['rung']} ({entry['name']})"
        return peak_parts(f"4096³ fp16 with {STEP_WORDS[name]} at {band(step)} of peak", row, sm_count(rec),
                          low, high, suite, tol=BAND_TOL, who=who)
    return measure


def band(step: int) -> str:
    return SEED_4096[step][3]


def _cublas_note(recs) -> str:
    rec = recs.get("warp_specialization")
    if rec is None:
        return ""
    row = cublas_row(rec)
    p = bench.peak_at_clock(row, sm_count(rec))
    return (f"cuBLAS in the same run: {p['fraction_of_datasheet']:.3f} of the datasheet, "
            f"{p['fraction']:.3f} at {bench.clock_text(row)}")


def _blackwell(recs):
    rec = recs.get("tcgen05")
    rows = [r for r in (rec.results.get("sweep", []) if rec else [])
            if r.get("kernel") == "tcgen05" and r.get("size") == SIZE and r.get("sm_mhz")]
    what = "4096³ fp16 with tcgen05 on Blackwell above 90 % of peak"
    if rows:
        row = max(rows, key=lambda r: r["tflops"])
        f = row["tflops"] / (sm_count(rec) * 8192 * row["sm_mhz"] * 1e-6)
        return [judged(f"{what} (peak at the measured clock)", f, 0.90, None,
                       f"{row['tflops']:.0f} TFLOP/s = {f:.3f} of {sm_count(rec)}×8192×"
                       f"{bench.clock_text(row)}", "fraction of peak", clock=bench.clock_kind(row),
                       denominator=MEASURED_CLOCK, suite="tcgen05")]
    return [Part(f"{what} (datasheet peak)", BLACKWELL, band=(0.90, None), unit="fraction of peak",
                 denominator=DATASHEET, measure_with=BLACKWELL_RUN),
            Part(f"{what} (peak at the measured clock)", BLACKWELL, band=(0.90, None),
                 unit="fraction of peak", denominator=MEASURED_CLOCK, measure_with=BLACKWELL_RUN)]


def _wait_group(recs):
    prec, crec = need(recs, "pipeline"), need(recs, "cp_async")
    w = [c for c in prec.results.get("checks", []) if c.get("wait_pending", 0) >= 1]
    s = [c for c in crec.results.get("checks", [])
         if int((re.search(r"/s(\d+)", str(c.get("tile"))) or [0, 1])[1]) >= 2]
    if not w or not s:
        raise MissingRecord("no wait_group ≥ 1 checks in the pipeline / cp_async records")
    pw, ps = sum(c["passed"] for c in w) / len(w), sum(c["passed"] for c in s) / len(s)
    return [judged("wgmma.wait_group N returns with at most N groups pending (a stage released "
                   "after wait_group 1 is never still read)", pw, 1.0, 1.0,
                   f"chapter 05's kernel at wait_group 1: {sum(c['passed'] for c in w)} of {len(w)} "
                   "float64 checks pass (consistent with the rule; a check cannot prove it)",
                   "checks", suite="pipeline"),
            judged("cp.async.wait_group N likewise (chapter 02's multistage ring)", ps, 1.0, 1.0,
                   f"{sum(c['passed'] for c in s)} of {len(s)} float64 checks of the 2–4 stage "
                   "cp.async GEMMs pass", "checks", suite="cp_async")]


def _descriptor(recs):
    rec = need(recs, "wgmma")
    fields = {name: (lo, w) for name, lo, w in descriptors.FIELDS}
    same = all(fields.get(k) == v for k, v in SEED_DESCRIPTOR_FIELDS.items())
    checks = rec.results.get("checks", [])
    ok = sum(c["passed"] for c in checks)
    mis = rec.results.get("mismatch", [])
    share = ok / len(checks) if checks else 0.0
    text = ", ".join(f"{k} bits {lo}–{lo + w - 1}" for k, (lo, w) in SEED_DESCRIPTOR_FIELDS.items())
    parts = [Part("the descriptor's start address, LBO and SBO are 14-bit fields of byte values "
                  ">> 4", HOLDS if same and checks and share == 1 else FAILS, share, (1.0, 1.0),
                  "checks", f"the course's descriptor model ({descriptors.SECTION}: {text}) "
                  f"{'agrees' if same else 'DISAGREES'}; kernels built with it pass {ok} of "
                  f"{len(checks)} float64 checks (every dtype, major, swizzle, N)", suite="wgmma")]
    if mis:
        good = sum(bool(m.get("matches_prediction")) for m in mis)
        parts.append(Part("a descriptor swizzle that does not match the layout is silently wrong",
                          HOLDS if good == len(mis) else FAILS, good / len(mis), (1.0, 1.0),
                          "checks", f"{good} of {len(mis)} deliberate mismatches gave exactly the "
                          "wrong elements the layout model predicted", suite="wgmma"))
    return parts


_GEMM_MISSING = ("datasheet peak", "peak at the measured clock")

#: The seed's statements, in the order the seed makes them.
SEED_CLAIMS = (
    ClaimSpec("sync_utilisation", "Synchronous kernels keep the Tensor Cores 30–50 % busy while "
              "memory bandwidth is nearly saturated", "01", ("mma_sync",), _sync_utilisation,
              percent_of_peak=True),
    ClaimSpec("sync_quarter", "A synchronous GEMM with a 300+ TFLOP/s ceiling measures 80+ TFLOP/s",
              "01", ("mma_sync",), _sync_quarter),
    ClaimSpec("latencies", "Global latency is hundreds of cycles, shared tens; one mma takes a few "
              "cycles but feeding it tens", "01", ("mma_sync", "pipeline"), _latencies),
    ClaimSpec("sync_vs_wgmma", "mma.sync and wgmma are more than 1.5× apart on the same FP16 GEMM",
              "06", ("mma_sync", "warp_specialization"), _sync_vs_wgmma),
    ClaimSpec("tma_vs_manual", "TMA is no better, even slower, than manual loads on small boxes, "
              "better on large multi-dimensional ones; hardware swizzle beats software", "03",
              ("tma_copy", "tma_equal"), _tma_vs_manual),
    ClaimSpec("smem_228", "Hopper has 228 KB of shared memory per SM", "05", ("pipeline",),
              _smem_228),
    ClaimSpec("tile_tens_kb", "A 128×256 FP16 tile takes tens of KB of shared memory", "06",
              ("warp_specialization",), _tile_kb),
    ClaimSpec("queue_depth", "Queues are usually 2–4 deep: double buffering is enough, triple "
              "better", "05", ("pipeline",), _queue_depth),
    ClaimSpec("fp8_speedup", "FP8 runs 1.5–2× FP16 on Hopper when the layout is right, possibly "
              "slower otherwise", "07", ("fp8",), _fp8_speedup),
    ClaimSpec("swizzle_modes", "128-byte swizzle is best for FP16, 64 or 32 bytes possibly better "
              "for FP8, 10–20 % between modes", "07", ("swizzle", "fp8", "fp8_swizzle"),
              _swizzle_modes),
    ClaimSpec("accumulators", "The accumulators of a large tile take hundreds of registers", "06",
              ("warp_specialization",), _accumulators),
    ClaimSpec("gemm_mma_sync", "4096³ FP16 runs at ~50 % of peak with mma.sync", "01",
              ("mma_sync",), _gemm_step(0), _GEMM_MISSING, percent_of_peak=True),
    ClaimSpec("gemm_ws", "... at 75–80 % with wgmma + TMA + warp specialization", "06",
              ("warp_specialization",), _gemm_step(1), _GEMM_MISSING, percent_of_peak=True),
    ClaimSpec("gemm_tuned", "... at 85 % after swizzle and depth tuning", "06",
              ("warp_specialization",), _gemm_step(2), _GEMM_MISSING, percent_of_peak=True),
    ClaimSpec("gemm_blackwell", "... and above 90 % on Blackwell", "09", ("tcgen05",), _blackwell,
              percent_of_peak=True),
    ClaimSpec("wait_group", "wait_group N waits until at most N committed groups are pending",
              "05", ("pipeline", "cp_async"), _wait_group),
    ClaimSpec("descriptor_fields", "The wgmma descriptor's address fields are 14 bits wide and hold "
              "the byte address >> 4", "04", ("wgmma",), _descriptor),
)

#: Notes printed under a claim (context, not judged).
NOTES = {"gemm_tuned": _cublas_note}


def evaluate(recs) -> list:
    """Every claim of :data:`SEED_CLAIMS` checked against ``recs`` (:func:`~asynctc.claims.
    verdicts.load_records`): a list of :class:`~asynctc.claims.verdicts.Claim`."""
    return [s.evaluate(recs) for s in SEED_CLAIMS]


def note(claim, recs) -> str:
    fn = NOTES.get(claim.key)
    try:
        return fn(recs) if fn else ""
    except MissingRecord:
        return ""


__all__ = ["SEED_CLAIMS", "SEED_4096", "evaluate", "note", "mma_sync_best", "mma_sync_ceiling",
           "ladder_row", "stage_kib", "FAILS", "HOLDS", "NOT_MEASURED", "BLACKWELL"]
