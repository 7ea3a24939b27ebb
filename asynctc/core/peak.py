"""The one definition of peak: the datasheet figure, SMs × FLOP/clk/SM × a measured SM clock, and
how a record row's clock was measured (in-kernel, in flight, probed after the sample).

Pure arithmetic over record rows — no GPU, no timing — so figure and prose code can print fractions
of peak without importing :mod:`asynctc.core.bench` (which times). :mod:`asynctc.core.bench`
re-exports every name here."""

from __future__ import annotations

import statistics

# --------------------------------------------------------------------------------------------------
# Peak: one definition
# --------------------------------------------------------------------------------------------------

#: The datasheet figure printed beside every measured fraction of peak. Source: NVIDIA H100 Tensor
#: Core GPU datasheet and the NVIDIA H100 Tensor Core GPU Architecture whitepaper (H100 SXM5:
#: 132 SMs, 1830 MHz boost clock for the Tensor Core figures, dense FP16/BF16 Tensor Core
#: 989.4 TFLOP/s = 132 × 4096 FLOP/clk/SM × 1830 MHz; FP8 twice that). The H200 SXM datasheet gives
#: the same Tensor Core figures (same GH100 SMs and clocks, more and faster HBM).
DATASHEET = {
    "gpu": "H100 / H200 SXM",
    "sm_count": 132,
    "boost_mhz": 1830,
    "dense_tflops": {"float16": 989.4, "bfloat16": 989.4, "float8_e4m3fn": 1978.9,
                     "float8_e5m2": 1978.9},
    "source": "NVIDIA H100 Tensor Core GPU datasheet; NVIDIA H100 Tensor Core GPU Architecture "
              "whitepaper (sm_90: 4096 dense fp16/bf16 FLOP/clk/SM, 8192 fp8)",
}

#: Dense Tensor Core FLOP per clock per SM on sm_90 (H100 whitepaper), by input dtype.
FLOP_PER_CLK_PER_SM = {"float16": 4096, "bfloat16": 4096, "float8_e4m3fn": 8192, "float8_e5m2": 8192}


def peak_tflops(sm_count: int, sm_clock_mhz: float, flop_per_clk_per_sm: int = 4096) -> float:
    """Dense Tensor Core peak = SMs × FLOP/clk/SM × clock, in TFLOP/s (sm_90: 4096 FLOP/clk/SM for
    dense fp16/bf16 with fp32 accumulate, 8192 for fp8; NVIDIA H100 architecture whitepaper).
    ``sm_clock_mhz`` should be an SM clock measured on the GPU (see :func:`peak_at_clock`)."""
    return sm_count * flop_per_clk_per_sm * sm_clock_mhz * 1e6 / 1e12


def peak_at_clock(row: dict, sm_count: int, dtype: str = "float16") -> dict:
    """The fraction of peak of one record row, at the SM clock measured for it (in-kernel, in
    flight, or — older records — probed right after the sample: :func:`clock_kind`).

    ``row`` needs ``tflops`` and ``sm_mhz`` (the SM clock measured on the GPU: in-kernel clock64 over
    %globaltimer, or :func:`time_gpu`'s clock probe; ``sm_mhz_source`` says which).
    Returns ``{"sm_mhz", "sm_mhz_source", "peak_tflops", "fraction", "datasheet_tflops",
    "fraction_of_datasheet"}``: the peak at that clock (:func:`peak_tflops` with
    :data:`FLOP_PER_CLK_PER_SM` of ``dtype``) and, beside it, the datasheet figure
    (:data:`DATASHEET`, at its 1830 MHz boost clock). Raises :class:`ValueError` when the row has no
    measured clock (a post-run ``nvidia-smi`` reading or the clock attribute are not accepted).
    """
    mhz = row.get("sm_mhz")
    if mhz is None or not mhz == mhz or mhz <= 0:
        raise ValueError(f"row has no measured sm_mhz (got {mhz!r}): fractions of peak use the SM "
                         "clock measured on the GPU (in-kernel or by time_gpu's probe), not the "
                         "attribute or nvidia-smi")
    if dtype not in FLOP_PER_CLK_PER_SM:
        raise ValueError(f"dtype={dtype!r}: must be one of {sorted(FLOP_PER_CLK_PER_SM)}")
    peak = peak_tflops(sm_count, mhz, FLOP_PER_CLK_PER_SM[dtype])
    sheet = DATASHEET["dense_tflops"][dtype]
    return {"sm_mhz": float(mhz), "sm_mhz_source": row.get("sm_mhz_source", "?"),
            "peak_tflops": peak, "fraction": row["tflops"] / peak,
            "datasheet_tflops": sheet, "fraction_of_datasheet": row["tflops"] / sheet}


def measured_clock_mhz(rows) -> float:
    """The median ``sm_mhz`` over record rows that carry a measured clock — for one peak line drawn
    over several rows (a plot). Raises :class:`ValueError` when none does (records written before
    the clock was measured)."""
    v = [r["sm_mhz"] for r in rows if r.get("sm_mhz") is not None and r["sm_mhz"] == r["sm_mhz"]]
    if not v:
        raise ValueError("no row carries a measured sm_mhz: re-record the suite (issue 9)")
    return float(statistics.median(v))


def clock_kind(row: dict) -> str:
    """How a row's ``sm_mhz`` was measured, in words for a printed fraction: ``"in-kernel"``
    (``sm_mhz_source`` starts with "in-kernel"), ``"in flight"`` (:func:`time_gpu`'s probe on a
    second stream during the launches), ``"probed after the sample"`` (:func:`time_gpu`'s probe
    after the sample: an upper bound on the clock during it, see the module docstring), or
    ``"clock of unknown source"``."""
    src = str(row.get("sm_mhz_source") or "")
    if src.startswith("in-kernel"):
        return "in-kernel"
    if src.startswith("clock probe in flight"):
        return "in flight"
    if src.startswith("clock probe"):
        return "probed after the sample"
    return "clock of unknown source"


#: The words :func:`clock_kind` returns, in the order a text lists them.
CLOCK_KINDS = ("in-kernel", "in flight", "probed after the sample", "clock of unknown source")

#: The check of the in-flight probe on the H200 (2026-11-30, ``tools/gpu_clock_inflight.py``; the
#: module docstring, "in flight"): beside the wgmma peak kernel (chapter 04, SS, fp16, one chain,
#: 2 CTAs/SM), which reads its own clock, at N = 256 and N = 128; the after-sample probe's range
#: is over every workload of that check (the two peak kernels, cuBLAS and the chapter 05 pipeline
#: at 4096³ and 8192³).
INFLIGHT_CHECK = {"date": "2026-11-30", "gpu": "NVIDIA H200", "script": "tools/gpu_clock_inflight.py",
                  "workloads": ("wgmma peak N=256", "wgmma peak N=128"),
                  "in_flight_mhz": (1654.0, 1641.0), "in_kernel_mhz": (1658.0, 1643.0),
                  "after_mhz_range": (1964.0, 1980.0)}


def rows_clock_kind(rows) -> str:
    """The :func:`clock_kind` of the rows that carry a measured ``sm_mhz``: one kind
    (``"in flight"``), or, when the rows mix kinds, the kinds in :data:`CLOCK_KINDS` order joined
    by ``" / "`` (``"in flight / probed after the sample"``: a sample whose in-flight probes all
    fell outside it keeps the after-sample clock). For a label beside a clock taken over several
    rows (:func:`measured_clock_mhz`). Raises :class:`ValueError` when no row carries a clock."""
    kinds = {clock_kind(r) for r in rows
             if r.get("sm_mhz") is not None and r["sm_mhz"] == r["sm_mhz"]}
    if not kinds:
        raise ValueError("no row carries a measured sm_mhz: re-record the suite (issue 9)")
    return " / ".join(k for k in CLOCK_KINDS if k in kinds)


def clock_caveat(kind: str) -> str:
    """The sentence a fraction of peak needs beside it for a clock of ``kind`` (a :func:`clock_kind`
    or a :func:`rows_clock_kind`): for ``"probed after the sample"`` the lower-bound caveat (that
    clock is an upper bound on the clock during the sample; module docstring), for ``"clock of
    unknown source"`` a warning, and ``""`` for ``"in-kernel"`` and ``"in flight"`` (both read the
    clock during the work). Raises :class:`ValueError` naming any part of ``kind`` that is not in
    :data:`CLOCK_KINDS`."""
    parts = [k.strip() for k in str(kind).split("/")]
    for k in parts:
        if k not in CLOCK_KINDS:
            raise ValueError(f"kind={kind!r}: {k!r} is not a clock kind (one of {CLOCK_KINDS}, or "
                             "several joined by ' / ')")
    out = []
    if "probed after the sample" in parts:
        who = "Where the clock was probed after the sample," if len(parts) > 1 else \
            "The clock was probed after the sample:"
        out.append(f"{who} it is an upper bound on the clock during the "
                   "sample (the clock recovers within microseconds once the Tensor Cores stop), so a "
                   "fraction of peak at it is a lower bound: quote the datasheet fraction beside it.")
    if "clock of unknown source" in parts:
        out.append("The record does not say how the clock was measured (no sm_mhz_source): a "
                   "fraction of peak at it is unqualified.")
    return " ".join(out)


def clock_text(row: dict) -> str:
    """``"1650 MHz (in flight; probed after the sample: 1971 MHz)"``: a row's clock and its
    :func:`clock_kind`, and beside it the after-sample probe (``sm_mhz_after``) when the row keeps
    one that is not already its clock. Raises :class:`ValueError` when the row has no measured
    clock."""
    mhz = row.get("sm_mhz")
    if mhz is None or not mhz == mhz or mhz <= 0:
        raise ValueError(f"row has no measured sm_mhz (got {mhz!r})")
    kind = clock_kind(row)
    after = row.get("sm_mhz_after")
    extra = (f"; {CLOCK_KINDS[2]}: {after:.0f} MHz"
             if after is not None and after == after and kind != CLOCK_KINDS[2] else "")
    return f"{mhz:.0f} MHz ({kind}{extra})"


def peak_text(row: dict, sm_count: int, dtype: str = "float16") -> str:
    """``"0.93 of 132×4096×1713 MHz (in-kernel) = 926 (datasheet 989 at 1830 MHz: 0.92)"`` for one
    row; the parenthesis after the clock is :func:`clock_kind` (``"(in flight)"`` for
    :func:`time_gpu`'s probe; ``"(probed after the sample)"`` in older records, whose fraction is a
    lower bound: :func:`clock_caveat`)."""
    p = peak_at_clock(row, sm_count, dtype)
    return (f"{p['fraction']:.2f} of {sm_count}×{FLOP_PER_CLK_PER_SM[dtype]}×{p['sm_mhz']:.0f} MHz "
            f"({clock_kind(row)}) = {p['peak_tflops']:.0f} (datasheet {p['datasheet_tflops']:.0f} at "
            f"{DATASHEET['boost_mhz']} MHz: {p['fraction_of_datasheet']:.2f})")


def peak_legend(sm_count: int, dtype: str = "float16") -> str:
    """The formula behind :func:`peak_short`, said once (a header line above the rows):
    ``"of peak" = of 132 SMs × 4096 FLOP/clk/SM × the SM clock measured for the row (its kind
    in brackets); "at the datasheet's" = of the datasheet's 989 TFLOP/s at 1830 MHz``."""
    if dtype not in FLOP_PER_CLK_PER_SM:
        raise ValueError(f"dtype={dtype!r}: must be one of {sorted(FLOP_PER_CLK_PER_SM)}")
    return (f"\"of peak\" = of {sm_count} SMs × {FLOP_PER_CLK_PER_SM[dtype]} FLOP/clk/SM × the SM "
            "clock measured for the row (its kind in brackets); \"at the datasheet's\" = of the "
            f"datasheet's {DATASHEET['dense_tflops'][dtype]:.0f} TFLOP/s at {DATASHEET['boost_mhz']} MHz")


def peak_short(row: dict, sm_count: int, dtype: str = "float16") -> str:
    """``"0.36 of peak at 1829 MHz (in flight), 0.36 at the datasheet's"``: the short form of
    :func:`peak_text` for rows under a :func:`peak_legend` line — both denominators, the measured
    clock's first with its :func:`clock_kind` in brackets, without the formula. Raises like
    :func:`peak_at_clock`."""
    p = peak_at_clock(row, sm_count, dtype)
    return (f"{p['fraction']:.2f} of peak at {p['sm_mhz']:.0f} MHz ({clock_kind(row)}), "
            f"{p['fraction_of_datasheet']:.2f} at the datasheet's")
