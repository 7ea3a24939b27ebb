"""Chapter 07, notebook 07's figures and the lines it prints, read from records (never timed here):
the FP8 value grids (:func:`plot_formats`); the swamping diagram (:func:`plot_bits_kept`); the
accumulation plot of an "fp8" record
(:func:`plot_accumulation`: measured error vs K over the model's prediction). Chapter 07 computes
§4's speed table and §5's accumulator table and verdicts in view from the record's rows;
§5's guards are :func:`accumulator_claims`, its bounds named. The "swizzle" record is deep dive
07c's. The seed article's 4096³ table beside our rungs is in :mod:`asynctc.fp8.seed`."""

from __future__ import annotations

import numpy as np

from .. import warp_specialization as W
from ..models.fp8 import FORMATS, FRAC_BITS, predict_swamp
from .config import fp8_config


def plot_accumulation(results: dict, record=None, frac_bits: int = FRAC_BITS):
    """Two panels from an "fp8" record's ``experiment``: left, the swamping input's median relative
    error against K per promotion interval, measured (markers) over the model's prediction at
    ``frac_bits`` (lines, :func:`predict_swamp`, the table frozen in :data:`ACC_PREDICTION`);
    right, fresh random inputs: the largest |C − ref| / (|A|·|B|) per K. Returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from ..core import plots
    rows = results["experiment"]["rows"]
    ks = sorted({r["k"] for r in rows})
    ps = sorted({r["promote"] for r in rows})
    pred = predict_swamp(ks=tuple(ks), promotes=tuple(ps), frac_bits=frac_bits)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.8), dpi=80, layout="constrained")
    handles = []                           # one legend below both panels: a colour per interval
    for p, colour in zip(ps, ("tab:red", "tab:blue", "tab:green", "tab:purple")):
        name = "no promotion" if p == 0 else f"promote every {p} k-tile{'s' if p > 1 else ''}"
        got = [next(r for r in rows if r["k"] == k and r["promote"] == p) for k in ks]
        ax.plot(ks, [pred[p][k] for k in ks], "-", color=colour, alpha=0.5)
        ax.plot(ks, [r["swamp_median_rel_err"] for r in got], "o", color=colour)
        ax2.plot(ks, [r["random_max_err_over_absAB"] for r in got], "o-", color=colour)
        handles.append(Line2D([], [], color=colour, marker="o", ls="none", label=name))
    handles += [Line2D([], [], color="grey", alpha=0.5, label=f"left, pale line: the {frac_bits}-bit model"),
                Line2D([], [], color="grey", marker="o", ls="none", label="marker: measured"),
                Line2D([], [], color="grey", marker="o", label="right, line: joins the markers")]
    for a in (ax, ax2):
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.set_xlabel("K")
        a.grid(True, which="both", alpha=0.3)
    ax.set_ylabel("median |C − ref| / |ref|")
    ax2.set_ylabel("max |C − ref| / (|A|·|B|)")
    # readers 110-111: 7-point legends inside the panels were too small to read
    fig.legend(handles=handles, fontsize=10, loc="outside lower center", ncols=(len(handles) + 1) // 2)
    plots._title(ax, "swamping input: 1024, then K − 1 small products", record)
    plots._title(ax2, "fresh standard-normal FP8 inputs", record)
    return fig


def plot_bits_kept(big_exp: int = 10, small_exp: int = -4, frac_bits: int = FRAC_BITS,
                   fp32_bits: int = 23):
    """Deep dive 07b §4's diagram of swamping (chapter 07 §5's failure): a row of binary places
    from 2^(``big_exp`` + 1) down, the running sum's leading 1 at 2^``big_exp``, a product's at
    2^``small_exp``, and the places each adder keeps below the largest exponent — the FP8 wgmma
    accumulator's ``frac_bits`` (the model's 13, :func:`asynctc.models.fp8.tc_dot`) and fp32's
    ``fp32_bits`` (23). Draws the arithmetic only (no record). Returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    lo = big_exp - fp32_bits - 1
    places = list(range(big_exp + 1, lo - 1, -1))               # left to right: high to low
    x = {e: i for i, e in enumerate(places)}
    fig, ax = plt.subplots(figsize=(12, 2.6), dpi=80, layout="constrained")
    rows = [(2.0, f"running sum 2^{big_exp} = {2.0 ** big_exp:g}", big_exp),
            (1.0, f"product 2^{small_exp} = {2.0 ** small_exp:g}", small_exp)]
    for y, label, e in rows:
        for p in places:
            ax.add_patch(Rectangle((x[p], y), 1, 0.8, fill=False, lw=0.5, ec="0.6"))
        ax.text(x[e] + 0.5, y + 0.4, "1", ha="center", va="center", fontsize=11, weight="bold")
        ax.text(-0.3, y + 0.4, label, ha="right", va="center", fontsize=9)
    for y, bits, colour, name in ((0.45, frac_bits, "tab:red", f"FP8 wgmma keeps {frac_bits} fraction bits"),
                                  (0.0, fp32_bits, "tab:blue", f"fp32 keeps {fp32_bits} fraction bits")):
        ax.add_patch(Rectangle((x[big_exp], y), bits + 1, 0.3, color=colour, alpha=0.35))
        ax.text(x[big_exp] + 0.3, y + 0.15, name, va="center", fontsize=9)
    ax.axvline(x[big_exp - frac_bits] + 1, color="tab:red", ls="--", lw=1)
    ax.text(x[big_exp - frac_bits] + 1.1, 2.9, "truncated from here on", fontsize=8, color="tab:red")
    ax.set_xticks([x[p] + 0.5 for p in places], [f"{p}" for p in places], fontsize=7)
    ax.set_xlabel("binary place (power of two), aligned on the largest exponent in the group")
    ax.set(xlim=(-0.5, len(places) + 0.5), ylim=(-0.1, 3.2), yticks=[])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_title("why a small product vanishes: the adder keeps a fixed number of places below the "
                 "largest exponent", fontsize=9)
    return fig


def plot_formats():
    """Each FP8 format's positive finite values (every bit pattern decoded, through ml_dtypes) as
    ticks on a log axis, one row per format, labelled with its count, largest value and fraction
    bits (:data:`FORMATS`). Returns the figure."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 2.6), dpi=100, layout="constrained")   # 900 px: notebook width
    labels = []
    for y, f in enumerate(FORMATS.values()):
        v = positive_values(f)
        ax.plot(v, np.full(v.size, y), "|", markersize=14)
        labels.append(f"{f.ptx}: {v.size} values\nup to {f.max:g}, {f.frac_bits} fraction bits")
    ax.set(xscale="log", yticks=range(len(labels)), yticklabels=labels, ylim=(-0.5, len(labels) - 0.5))
    ax.tick_params(labelsize=11)
    ax.set_title("positive finite values of each FP8 format", fontsize=13)
    return fig


def positive_values(fmt) -> np.ndarray:
    """The positive finite values of an FP8 format (a :class:`Fp8Format`), ascending, float64:
    every one of the 256 bit patterns decoded."""
    v = np.unique(np.arange(256, dtype=np.uint8).view(fmt.dtype).astype(np.float64))
    return v[np.isfinite(v) & (v > 0)]


# --------------------------------------------------------------------------------------------------
# What the lesson prints from the "fp8" and "swizzle" records (reads results; never measures)
# --------------------------------------------------------------------------------------------------

def _speed_kernels() -> list[tuple[str, str]]:
    """The four kernels of the lesson's speed table: (what the table calls it, the record's name)."""
    return [("cuBLASLt FP8, fast accumulation", "cuBLASLt fp8 fast_accum=True"),
            ("our FP8 top rung", fp8_config().label()), ("cuBLAS FP16", "cuBLAS fp16"),
            ("our FP16 top rung", W.TOP_RUNG.make("float16").label())]


def table_row(results: dict, size: int, kernel: str) -> dict:
    """The row of an "fp8" record's ``table`` (:func:`asynctc.fp8.suite.ratio_rows`) for one size
    and kernel name; :class:`KeyError` naming both when there is none."""
    for r in results["table"]:
        if r["size"] == size and r["kernel"] == kernel:
            return r
    raise KeyError(f"fp8 record: no table row for {kernel!r} at {size}³")


def swamp_errors(results: dict) -> dict:
    """{(K, P): the median relative error |C − ref| / |ref| on the swamping input}, read from an
    "fp8" record's ``experiment["rows"]`` field ``swamp_median_rel_err``; P is the promotion
    interval in k-tiles, 0 for none (07 §5)."""
    return {(r["k"], r["promote"]): r["swamp_median_rel_err"] for r in results["experiment"]["rows"]}


def normal_errors(results: dict) -> dict:
    """{(K, P): the worst |C − ref| / (|A|·|B|) on standard-normal inputs}, read from an "fp8"
    record's ``experiment["rows"]`` field ``random_max_err_over_absAB`` (07 §5)."""
    return {(r["k"], r["promote"]): r["random_max_err_over_absAB"] for r in results["experiment"]["rows"]}


def promote_tflops(results: dict, size: int = 8192, intervals=(0, 4, 1)) -> dict:
    """{P: TFLOP/s} of the 128×128 FP8 build promoting every P k-tiles (P = 0: the same build
    unpromoted) at ``size``³, read from the ``tflops`` of an "fp8" record's ``table`` rows named by
    :meth:`fp8_config(promote=P).label` (07 §5's speed column)."""
    unpromoted = fp8_config(promote=4).label().replace(" promote:4", "")
    return {p: table_row(results, size, fp8_config(promote=p).label() if p else unpromoted)["tflops"]
            for p in intervals}


def speed_names(results: dict, sizes=(8192, 4096)) -> str:
    """The FP8 speeds chapter 07 quotes, each named once (readers: three figures, no place naming
    each): build, promotion, shape, TFLOP/s and the fraction of cuBLASLt FP8 (fast accumulation, the
    same shape, the same run), read from an "fp8" record's ``table``: §4 quotes the top rung at
    8192³, §5 the 128×128 build at 8192³, the worklog both at 4096³."""
    top, p4 = fp8_config(), fp8_config(promote=4)
    builds = [(f"top rung {top.bm}×{top.bn}", "none", top.label(), sizes),
              (f"{p4.bm}×{p4.bn} build", "none", p4.label().replace(" promote:4", ""), sizes[:1]),
              (f"{p4.bm}×{p4.bn} build", "every 4", p4.label(), sizes)]
    lines = ["FP8 build          promotion  shape  TFLOP/s  of cuBLASLt FP8"]
    for n in sizes:
        lt = table_row(results, n, "cuBLASLt fp8 fast_accum=True")["tflops"]
        for name, promo, kernel, at in builds:
            if n in at:
                tf = table_row(results, n, kernel)["tflops"]
                lines.append(f"{name:19s}{promo:11s}{n}³{tf:9.0f}{tf / lt:17.2f}")
    return "\n".join(lines)


# ---- 07 §5's check cell: each sentence's bounds, named ---------------------------------------------
#: the fraction-bit counts that fit every exact run: "it keeps 13 fraction bits"
KEPT_BITS = [13]
#: swamping at the longest K, unpromoted over every 4 k-tiles: "cuts the swamping error 28×" (over 20×)
SWAMP_CUT = 20
#: TFLOP/s promoting every 4 k-tiles over the same build unpromoted: "keeps 0.90" (0.86–0.94)
KEPT_EVERY4 = (0.86, 0.94)
#: normal inputs, unpromoted, the longest K's error over the shortest's: "stays within 3×"
NORMAL_WITHIN = 3
#: normal inputs, promoted: the longest K's error below the shortest's over this, "falls by more than half"
NORMAL_FALL = 2


def accumulator_claims(results: dict):
    """07 §5's check cell: yield ``(sentence, holds, numbers)`` for the frozen prediction table and
    each sentence §5 states about the accumulator table, in order, read from an "fp8" record
    (:func:`swamp_errors`, :func:`normal_errors`, :func:`promote_tflops`, the experiment's fitted
    bits) with the bounds above. A generator: the cell's ``notebook.require`` stops at the first
    sentence that fails."""
    from ..models.fp8 import ACC_PREDICTION, identified_bits, prediction_table
    yield "the model still predicts the frozen table", prediction_table(predict_swamp()) == ACC_PREDICTION, {}
    swamp, speed, every = swamp_errors(results), promote_tflops(results), normal_errors(results)
    k0, k = min(swamp)[0], max(swamp)[0]                          # the shortest and the longest K
    err = {p: swamp[k, p] for p in (0, 4, 1)}                     # swamping at the longest K
    normal = {(kk, p): every[kk, p] for kk in (k0, k) for p in (0, 4, 1)}
    kept = {p: speed[p] / speed[0] for p in (4, 1)}               # the table's TFLOP/s column
    fits = identified_bits(results["experiment"]["rows"])["consistent"]   # bit counts that fit every exact run
    yield "it keeps 13 fraction bits", fits == KEPT_BITS, {"fits": str(fits)}
    yield ("the So: sentence below (every 4 k-tiles: its cut and its kept share)",
           err[0] / err[4] > SWAMP_CUT and KEPT_EVERY4[0] <= kept[4] <= KEPT_EVERY4[1],
           {"cut": err[0] / err[4], "kept": kept[4]})
    yield ("every k-tile cuts it further and keeps less", err[1] < err[4] and kept[1] < kept[4],
           {"err_every4": err[4], "err_every1": err[1], "kept_every4": kept[4], "kept_every1": kept[1]})
    yield ("on normal inputs the unpromoted error stays within 3×",
           1 / NORMAL_WITHIN <= normal[k, 0] / normal[k0, 0] <= NORMAL_WITHIN,
           {"start": normal[k0, 0], "end": normal[k, 0]})
    yield ("promoted, it falls by more than half, lowest with every k-tile",
           all(normal[k, p] < normal[k0, p] / NORMAL_FALL for p in (4, 1))
           and normal[k, 1] < normal[k, 4] < normal[k, 0],
           {f"p{p}_k{kk}": v for (kk, p), v in normal.items()})


def block_error_table(x, block: int, dtype: str = "float8_e4m3fn") -> str:
    """Deep dive 07d §2's scale lever (moved from chapter 07 §2): ``x`` (2-D) quantised with one
    scale for the tensor and with one per 1 × ``block`` row segment (``block`` divides the row),
    dequantised, compared with ``x``: the elements flushed to 0 and the median and worst relative error |q·s − x| / |x| (x ≠ 0), as a
    small table. Raises :class:`asynctc.models.fp8.FP8Error` for a block that does not fit."""
    from ..models.fp8 import dequantize, quantize
    x = np.asarray(x, dtype=np.float64)
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < 1 \
            or x.shape[1] % block:
        from ..models.fp8 import FP8Error
        raise FP8Error(f"block={block!r}: must be a positive integer dividing the row of {x.shape[1]}")
    qt, st = quantize(x, dtype)
    qb, sb = quantize(x, dtype, block=(1, block))
    cols = {"one per tensor": dequantize(qt, st), f"one per 1×{block}": dequantize(qb, sb, (1, block))}
    nz = x != 0
    rel = {k: np.abs(d - x)[nz] / np.abs(x)[nz] for k, d in cols.items()}
    rows = [("", list(cols)),
            ("scales", [1, x.size // block]),
            ("elements flushed to 0", [np.count_nonzero(d == 0) for d in cols.values()]),
            ("median |error| / |x|", [f"{np.median(r):.3f}" for r in rel.values()]),
            ("worst |error| / |x|", [f"{r.max():.3f}" for r in rel.values()])]
    return "\n".join(f"{name:24s}" + "".join(f"{v:>18}" for v in vals) for name, vals in rows)
