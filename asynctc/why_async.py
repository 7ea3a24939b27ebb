"""Chapter 00 — why asynchronous: the ceilings of this GPU (copy bandwidth, cuBLAS GEMM).

Suite ``ceilings`` (:data:`SUITES`): device-to-device copy bandwidth by size and cuBLAS fp16/bf16
GEMM by size on random data, with a float64 check of one cuBLAS result. The roofline of the chapter
is drawn from this record (:func:`asynctc.core.plots.roofline`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .core import bench, checks, records, runtime
from .core import exercises as _ex
from .core.bench import peak_tflops  # noqa: F401 (chapter 00's notebook)
from .core.memory import DeviceArray


def _progress(total: int, desc: str):
    from tqdm.auto import tqdm
    return tqdm(total=total, desc=desc, leave=False)


# --------------------------------------------------------------------------------------------------
# Chapter 00: ceilings of this GPU
# --------------------------------------------------------------------------------------------------

COPY_MIB = (16, 64, 256, 1024, 4096)
CUBLAS_SIZES = (1024, 2048, 4096, 8192)


def measure_ceilings() -> dict:
    """Device-to-device copy bandwidth by size; cuBLAS fp16/bf16 GEMM by size (random data).

    Timing: :func:`asynctc.core.bench.time_gpu` (many launches per sample, L2 flushed once per
    sample). A copy smaller than the L2 would be re-read from L2 by the next launch of a sample, so
    each sample rotates through enough source/destination pairs that the bytes touched between two
    uses of one pair are ≥ 2× L2 (``pairs`` in the row). cuBLAS rows carry the SM clock that
    :func:`~asynctc.core.bench.time_gpu` measured for them (``sm_mhz``, the denominator of their
    fraction of peak; its kind in ``sm_mhz_source``: :func:`~asynctc.core.bench.clock_kind`, in
    flight, or probed after each sample in records made before the in-flight probe; the
    after-sample probe kept as ``sm_mhz_after``); every cuBLAS output is
    checked elementwise (in full up to 2048³, else one row per 128-row band) and the outcome
    recorded: the bound assumes fp32 accumulation, and PyTorch lets cuBLAS reduce split-K partial
    sums in fp16/bf16 (``allow_fp16_reduced_precision_reduction``), so a failure here is reported,
    not raised — it is a finding about the baseline, not a wrong kernel of ours."""
    info = runtime.device_info()
    out: dict = {"copy": [], "cublas": [], "baseline_library": bench.baseline_library()}
    bar = _progress(len(COPY_MIB) + 2 * len(CUBLAS_SIZES), "ceilings")
    for mib in COPY_MIB:
        n = mib << 20
        pairs = max(1, -(-2 * info.l2_bytes // (2 * n)))
        srcs, dsts = [], []
        for _ in range(pairs):
            src = DeviceArray.empty(n, np.uint8)
            src.buffer.fill(0xA5, stream=runtime.default_stream())
            srcs.append(src)
            dsts.append(DeviceArray.poisoned(n, np.uint8))
        t = bench.time_gpu(bench.rotating([bench.device_copy(d, s) for d, s in zip(dsts, srcs)]),
                           reps=20)
        for dst in dsts:
            host = dst.to_host()
            # every byte up to 256 MiB; above, every 64th KiB-page and the last one (a copy that
            # stopped short or skipped a range still shows)
            view = host if n <= 256 << 20 else np.concatenate(
                [host.reshape(-1, 1024)[::64].ravel(), host[-4096:]])
            if not np.all(view == 0xA5):
                raise RuntimeError(f"device copy check failed: {np.count_nonzero(view != 0xA5)} "
                                   f"bytes of {n} not written")
            del host
        out["copy"].append({"bytes": n, "pairs": pairs, **t.as_dict(),
                            "gbps_rw": bench.gbps(2 * n, t.median_ms)})
        del srcs, dsts
        bar.update()
    if out["baseline_library"] is None:
        bar.close()
        return out
    for dtype in ("float16", "bfloat16"):
        for s in CUBLAS_SIZES:
            a, b, da, db, dc = checks.square_problem(s, dtype)
            run = bench.cublas_gemm(da, db, dc)
            t = bench.time_gpu(run, reps=20, clock=True)
            ref = checks.timed_output_reference(a, b, dtype, np.random.default_rng(s))
            chk = ref.check(dc)     # recorded, not raised: the library may reduce in lower precision
            row = {"dtype": dtype, "m": s, "n": s, "k": s, **t.as_dict(),
                   "tflops": bench.tflops(bench.gemm_flop(s, s, s), t.median_ms),
                   "check": {**chk.as_dict(), "rows": len(ref.rows)}}
            if s == CUBLAS_SIZES[-1]:
                # kept for older readers; no fraction of peak divides by it (read after the run)
                row["clocks_after"] = records.nvidia_smi_clocks()
            out["cublas"].append(row)
            del da, db, dc
            bar.update()
    bar.close()
    return out


def summarize_ceilings(rec: records.Record) -> str:
    r = rec.results
    p = rec.provenance
    lines = [f"{rec.label()}"]
    best = max(r["copy"], key=lambda x: x["gbps_rw"])
    lines.append(f"device-to-device copy: best {best['gbps_rw']:.0f} GB/s (read+write) at "
                 f"{best['bytes'] >> 20} MiB")
    sheet = bench.DATASHEET
    clocked = [row for row in r["cublas"] if row.get("sm_mhz")]
    kind = bench.rows_clock_kind(clocked) if clocked else None
    lines.append(f"datasheet: {sheet['dense_tflops']['float16']:.0f} TFLOP/s dense fp16/bf16 = "
                 f"{sheet['sm_count']} SMs × 4096 FLOP/clk × {sheet['boost_mhz']} MHz; fractions "
                 "below divide by 4096 × SMs × the SM clock measured for each row"
                 + (f" ({kind})" if kind else "") + ", datasheet beside")
    if kind and bench.clock_caveat(kind):
        lines.append(bench.clock_caveat(kind))
    for row in r["cublas"]:
        frac = (" = " + bench.peak_text(row, p["sm_count"], row["dtype"])) if row.get("sm_mhz") \
            else ""
        chk = row.get("check")
        note = "" if not chk or chk.get("passed") else \
            f"  [elementwise check FAILED: max_err {chk.get('max_err', float('nan')):.1e} > tol {chk['tol']:.1e}]"
        lines.append(f"cuBLAS {row['dtype']:8s} {row['m']:5d}³: {row['tflops']:6.0f} TFLOP/s "
                     f"±{bench.row_spread(row):.0%}{frac}{note}")
    return "\n".join(lines)


SUITES = {"ceilings": (measure_ceilings, summarize_ceilings, "sm_90a")}


# ---- chapter 00 -----------------------------------------------------------------------------------

#: Bytes an SM's shared memory serves per clock on Hopper: 32 banks × 4 bytes (the figure chapter
#: 01's L1-path model and chapters 02 and 04 use).
SMEM_BYTES_PER_CLK_SM = 32 * 4


def cublas_series(gemms: list[dict]) -> dict[str, tuple[list[int], list[float]]]:
    """The "ceilings" record's cuBLAS rows as plot series, one per dtype: ``{"cuBLAS float16":
    (sizes, TFLOP/s), "cuBLAS bfloat16": …}`` for :func:`asynctc.core.plots.throughput_by_size`."""
    series = {}
    for dt in ("float16", "bfloat16"):
        rows = [g for g in gemms if g["dtype"] == dt]
        series[f"cuBLAS {dt}"] = ([g["m"] for g in rows], [g["tflops"] for g in rows])
    return series


def cublas_4096_runs(rec) -> dict[str, float]:
    """cuBLAS's 4096³ fp16 TFLOP/s in every record beside ``rec`` (the same GPU's folder under
    data/) that timed it: ``{suite: TFLOP/s}``, the median where a record timed it in several rounds.
    Each record timed cuBLAS again in its own run; only the timed lists are read (``cublas``,
    ``sweep``, ``rows``), not summaries or sustained-load rows. A record measured now (no file yet)
    counts with its own run, beside the committed records of the other suites. Each file is read
    with :func:`records.load` (which validates it: a malformed record raises ``RecordError``)."""
    def timed(res: dict) -> list[float]:
        return [r["tflops"] for key in ("cublas", "sweep", "rows")
                for r in (res.get(key) if isinstance(res.get(key), list) else [])
                if isinstance(r, dict) and (key == "cublas" or r.get("kernel") == "cuBLAS")
                and r.get("dtype") == "float16" and "tflops" in r
                and (r.get("size") == 4096 or (r.get("m"), r.get("n"), r.get("k")) == (4096,) * 3)]
    out, found = {}, rec.path or next(iter(records.available(rec.suite)), None)   # live: the newest record's GPU
    for path in sorted(found.parent.glob("*.json")) if found else []:
        res = records.load(path.stem, found.parent.name).results
        if tf := timed(res if isinstance(res, dict) else {}):
            out[path.stem] = float(np.median(tf))
    if rec.path is None and (tf := timed(rec.results)):          # measured now: its own run, not the file's
        out[rec.suite] = float(np.median(tf))
    return out


def gemm_intensity(m: int, n: int, k: int, elem_bytes: int = 2) -> float:
    """FLOP per byte of DRAM traffic of an M×N×K GEMM that reads A (M×K) and B (K×N) once and
    writes C (M×N) once, ``elem_bytes`` per element: 2·M·N·K / (bytes of A + B + C)."""
    return 2 * m * n * k / (elem_bytes * (m * k + k * n + m * n))


class Peak(NamedTuple):
    """The course's one peak for a set of rows (glossary ``peak``): ``tflops`` = ``sm_count`` × 4096
    FLOP/clk × ``mhz``, the SM clock measured while they ran, of kind ``kind``. Chapter 00 §2's cell
    computes it in sight; every later number of the chapter that calls itself peak is that one."""
    tflops: float
    mhz: float
    kind: str
    sm_count: int

    @property
    def label(self) -> str:
        """How the peak was computed, for a plot's title: ``SMs×4096×1688 MHz, in flight``."""
        return f"SMs×4096×{self.mhz:.0f} MHz, {self.kind}"


def roofline_points(gemms: list[dict], peak: Peak, gbps: float) -> list[tuple]:
    """The points of chapter 00's roofline (:func:`asynctc.core.plots.roofline`): cuBLAS's measured
    bf16 GEMMs and the computed bound of a decode-like 8192×8192×16 GEMM (hollow)."""
    pts = [(f"cuBLAS bf16 {g['m']}×{g['n']}×{g['k']}", gemm_intensity(g["m"], g["n"], g["k"]), g["tflops"])
           for g in gemms if g["dtype"] == "bfloat16"]
    i = gemm_intensity(8192, 8192, 16)
    pts.append(("8192×8192×16 (decode-like, computed bound)", i,
                min(peak.tflops, gbps * 1e9 / 1e12 * i), "computed"))
    return pts


def show_operand_feed(gbps: float, peak: Peak) -> None:
    """Chapter 00 §4's table: bytes per clock per SM the Tensor Cores need (128×128 and 128×256
    tiles) against shared memory's 128 B/clk and DRAM's share per SM (at ``peak``'s clock), with the
    one line of arithmetic behind each number. Asserts nothing: the chapter's cell computes the
    128×128 tile's need and DRAM's share itself, and its check cell guards "DRAM supplies at most a
    third of its bytes"."""
    smem = SMEM_BYTES_PER_CLK_SM
    print(f"{'CTA tile':9s} {'operands, B/clk per SM':26s} copy + read, of shared memory's {smem} B/clk")
    for bm, bn in ((128, 128), (128, 256)):
        need = 4096 * (bm + bn) * 2 / (2 * bm * bn)
        print(f"{bm}×{bn:<5d} {f'4096 × {(bm + bn) * 2} / {2 * bm * bn} = {need:.0f}':26s} "
              f"2 × {need:.0f} / {smem} = {2 * need / smem:.0%}")
    dram = gbps * 1e9 / peak.sm_count / (peak.mhz * 1e6)
    need = 4096 * (128 + 128) * 2 / (2 * 128 * 128)
    print(f"DRAM per SM: {gbps:.0f} GB/s / ({peak.sm_count} SMs × {peak.mhz:.0f} MHz, {peak.kind}) = "
          f"{dram:.1f} B/clk; 128×128 needs {need:.0f} / {dram:.1f} = {need / dram:.1f}× that")


@_ex.exercise("ch00.intensity", "Arithmetic intensity (FLOP per byte of DRAM traffic) of an M×N×K fp16 "
              "GEMM (n alone: M = N = K = n) that reads A (M×K) and B (K×N) once and writes C (M×N) once "
              "(A, B and C all fp16, 2 bytes per element).",
              rtol=1e-3)
def _ch00_intensity(n: int, m: int | None = None, k: int | None = None) -> float:
    m, k = (n if m is None else m), (n if k is None else k)
    return 2 * m * n * k / (2 * (m * k + k * n + m * n))


@_ex.diagnosis("ch00.intensity")
def _ch00_intensity_hint(answer, expected, n: int, m: int | None = None, k: int | None = None) -> str | None:
    m, k = (n if m is None else m), (n if k is None else k)
    square = m == n == k
    flop, a, b, c = 2 * m * n * k, 2 * m * k, 2 * k * n, 2 * m * n        # FLOP; bytes of A, B, C
    nbytes = a + b + c
    shape = "n×n" if square else f"A {m}×{k}, B {k}×{n}, C {m}×{n}"
    one = ("you counted the bytes of one matrix; A, B and C each cross DRAM once." if square else
           f"you counted the bytes of one matrix; A, B and C each cross DRAM once ({shape}).")
    mistakes = [
        (flop, "that is the FLOP count; intensity divides it by the bytes moved."),
        (nbytes, "that is the byte count; intensity is FLOP divided by it."),
        (nbytes / flop, "that is bytes per FLOP; intensity is FLOP per byte — turn it over."),
    ]
    if not square:
        mistakes += [
            (v / 3, f"that is §3's n/3 with n = {side} = {v}: it holds for a square GEMM only. Count "
                    "this one's FLOP (2·M·N·K) and its bytes (A M×K, B K×N, C M×N) yourself.")
            for side, v in (("N", n), ("M", m))]
        mistakes += [
            (k / 3, f"two readings give this number: §3's square n/3 with n = K = {k}, or 2·M·N·K FLOP "
                    f"over a square GEMM's 6n² bytes. Here A and B are thin ({m}×{k} and {k}×{n}); "
                    "count each of A, B and C."),
            (2 * max(m, n, k) ** 3 / nbytes, f"that FLOP count is a square GEMM's, 2·{max(m, n, k)}³; "
                                             "this one does 2·M·N·K."),
        ]
    mistakes += [
        (flop / (a + b), "you counted A and B but not C: C is written once too"
                         + (", so three n×n matrices cross DRAM." if square else
                            f" — and here C ({m}×{n}) is the largest of the three.")),
        (flop / (a + b + 2 * c), "two readings give this number: C counted as fp32 (4 bytes), or C read "
                                 "as well as written" + (" (four matrices counted)" if square else "")
                                 + ". Here C is fp16 like A and B, and C = A·B only writes C (it is not "
                                 "read)" + (": three n×n fp16 matrices cross DRAM." if square else
                                            ": A and B are read once, C written once.")),
    ]
    mistakes += [(flop / x, one if square or x != c else
                  f"you counted only C's bytes ({m}×{n}); A ({m}×{k}) and B ({k}×{n}) cross DRAM too, "
                  "thin as they are.") for x in (c, a, b)]
    mistakes += [
        (flop / (nbytes / 2), "you divided by elements, not bytes: fp16 is 2 bytes per element."),
        (flop / 2 / nbytes, "two slips give this number, check both: "
                            + ("n³ FLOP instead of 2·n³" if square else "M·N·K FLOP instead of 2·M·N·K")
                            + " (a multiply-add is 2 FLOP), or 4 bytes per element instead of fp16's 2."),
        (flop / 2 / (2 * nbytes), "two slips at once: M·N·K FLOP instead of 2·M·N·K (a multiply-add is "
                                  "2 FLOP) and 4 bytes per element instead of fp16's 2."),
    ]
    known = _ex.known_mistake(answer, expected, mistakes, rtol=1e-3)
    generic = _ex.generic_hint(answer, expected) if isinstance(answer, (int, float)) else None
    if known or generic not in ("too large.", "too small."):
        return known                                      # None: off by a simple factor, which it says
    # an answer no known slip explains: a question about the count first, its arithmetic at the next miss
    if square:
        return _ex.tiered(f"{generic[:-1]} for an n = {n} GEMM, and not one of the slips this check "
                          "knows.",
                          " How many FLOP does §3 count for a square GEMM, which matrices cross DRAM, "
                          "and how many bytes is each?",
                          f" §3: 2n³ FLOP over 6n² bytes (A, B and C, {n}×{n} fp16 each, once): n/3.")
    return _ex.tiered(f"{generic[:-1]} for this {m}×{n}×{k} GEMM, and not one of the slips this check "
                      "knows.",
                      f" Which matrices cross DRAM here, and how many bytes is each (A {m}×{k}, "
                      f"B {k}×{n}, C {m}×{n})? §3 counts them for a square GEMM.",
                      f" FLOP: 2·M·N·K = 2·{m}·{n}·{k}. Bytes: 2 per element of A ({m}·{k}), B ({k}·{n}) "
                      f"and C ({m}·{n}), each once. Intensity: the FLOP over the bytes.")


@_ex.exercise("ch00.memory_bound", "Which of the sizes are memory-bound (intensity below the ridge point)?",
              unordered=True)
def _ch00_memory_bound(sizes, ridge: float) -> list:
    return [s for s in sizes if _ch00_intensity(s) < ridge]


@_ex.diagnosis("ch00.memory_bound")
def _ch00_memory_bound_hint(answer, expected, sizes, ridge: float) -> str | None:
    strange = sorted(a for a in answer if a not in sizes)
    if strange:
        return f"answer with sizes from the list `sizes`; {strange[0]} is not one of them."
    compute_bound = {s for s in sizes if s not in expected}
    if answer and answer == compute_bound:
        return ("those are the compute-bound sizes: memory-bound means intensity *below* the ridge "
                "point.")
    if answer == {s for s in sizes if s < ridge}:
        return "you compared the size n with the ridge point; compare its intensity (FLOP/byte)."
    extra = sorted(answer - set(expected))
    if extra:
        s = extra[0]
        return (f"{s} does {2 * s**3:.3g} FLOP for {6 * s * s:.3g} bytes: its intensity "
                f"{_ch00_intensity(s):.0f} FLOP/byte is above the ridge point ({ridge:.0f}), so it is "
                "compute-bound.")
    missing = len(set(expected) - answer)
    return (f"{missing} memory-bound size{'s are' if missing > 1 else ' is'} missing: check every "
            "size's intensity against the ridge point.")
