"""Chapter 04 — the chapter's figures (matplotlib): the canonical layouts wgmma reads, by swizzle mode
(:func:`plot_layouts`), and what the deliberate mismatch read (:func:`plot_mismatch`); and the lines
the lesson prints from a "wgmma" record (:func:`peak_lines`, :func:`goal_note`,
:func:`clock_note`). Draws and reads; never measures."""

from __future__ import annotations

import numpy as np

from ..core.peak import DATASHEET, FLOP_PER_CLK_PER_SM, clock_text
from ..models import descriptors as dsc
from .config import SWIZZLES
from .mismatch import MismatchResult


# --------------------------------------------------------------------------------------------------
# Figures for the chapter (matplotlib; replayed figures say so in their titles)
# --------------------------------------------------------------------------------------------------

def plot_layouts(major: str = "K", dtype: str = "float16", rows: int = 16, hide_offsets=()):
    """One panel per swizzle mode: for the first ``rows`` rows of a 64×64 (K-major A) or 64×64
    (MN-major) tile, the 16-byte chunk (0..7) of its 128-byte line that each 16-byte group of
    elements occupies — the canonical layout wgmma reads, drawn. Each panel's title gives the
    tile's LBO and SBO, except for the swizzle modes (bytes, 0 = none) in ``hide_offsets``, whose
    title says they are left to an exercise."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.6))
    k = 64 if dsc.itemsize(dtype) == 2 else 128
    for ax, sw in zip(axes, SWIZZLES):
        t = dsc.OperandTile(64, k, dtype, major, sw)
        addr = t.addresses()
        per = 16 // t.itemsize
        chunks = (addr % 128) // 16
        view = chunks[:rows, ::per] if major == "K" else chunks[::per, :rows].T
        ax.imshow(view, cmap="tab10", vmin=0, vmax=9, aspect="auto")
        for (i, j), v in np.ndenumerate(view):
            ax.text(j, i, int(v), ha="center", va="center", fontsize=6)
        offsets = "LBO, SBO: see the exercises" if sw in hide_offsets else f"LBO {t.lbo} B, SBO {t.sbo} B"
        ax.set_title(f"{'no' if sw == 0 else f'{sw}B'} swizzle\n{offsets}", fontsize=9)
        ax.set_xlabel("16-byte group along " + ("K" if major == "K" else "MN"))
        ax.set_xticks(range(0, view.shape[1], max(1, view.shape[1] // 8)))
        ax.set_yticks(range(0, view.shape[0], 2))
        ax.set_ylabel(("row (M)" if major == "K" else "k") if ax is axes[0] else "")
    fig.suptitle(f"{major}-major {dtype}: 16-byte chunk within its 128-byte line (≈ bank group)",
                 fontsize=10)
    fig.tight_layout()
    return fig


def plot_mismatch(r: MismatchResult, rows: int = 16):
    """Left: for the first ``rows`` rows of A as wgmma read it, per 16-byte group of K, the image row
    its values really came from; right: |D − reference| (measured when live, else predicted)."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
    k = r.source_a.shape[1]
    per = 16 // dsc.itemsize(r.config.dtype)
    src_row = np.where(r.source_a >= 0, r.source_a // k, -1)[:rows, ::per]
    im0 = axes[0].imshow(src_row, cmap="viridis", aspect="auto")
    for (i, j), v in np.ndenumerate(src_row):
        axes[0].text(j, i, int(v), ha="center", va="center", fontsize=7,
                     color="white" if v < src_row.max() / 2 else "black")
    fig.colorbar(im0, ax=axes[0], label="image row the value came from")
    axes[0].set_title(f"A as wgmma read it (rows 0–{rows - 1}): source row of each 16-byte group",
                      fontsize=9)
    axes[0].set_xlabel(f"16-byte group of K ({per} elements; 4 k16 steps)")
    axes[0].set_ylabel("row m wgmma thinks it read")
    axes[0].set_yticks(range(0, rows, 2))
    d = r.measured if r.measured is not None else r.predicted
    im = axes[1].imshow(np.abs(d - r.reference), cmap="magma", aspect="auto")
    fig.colorbar(im, ax=axes[1], label="|D − A·B|")
    axes[1].set_title(("measured" if r.measured is not None else "predicted") +
                      f" |D − A·B|: {r.wrong_measured if r.measured is not None else r.wrong_predicted}"
                      f" of {r.reference.size} wrong", fontsize=9)
    axes[1].set_xlabel("column n of D")
    axes[1].set_ylabel("row m of D")
    return fig


# --------------------------------------------------------------------------------------------------
# What the lesson prints from a "wgmma" record (reads the record's results; never measures)
# --------------------------------------------------------------------------------------------------

def peak_row(results: dict, dtype: str = "float16", n: int = 256, source: str = "smem") -> dict:
    """The throughput row of a "wgmma" record the chapter quotes: ``dtype``, instruction N,
    ``source`` of A ("smem": SS, "registers": RS), one accumulator, two CTAs per SM. Raises
    :class:`KeyError` naming the row when the record has none."""
    for x in results["throughput"]:
        if (x["dtype"], x["n"], x["source"], x["chains"], x["ctas_per_sm"]) == (dtype, n, source, 1, 2):
            return x
    raise KeyError(f"wgmma record: no throughput row for {dtype} N={n} {source}, 1 chain, 2 CTAs/SM")


def peak_lines(results: dict, dtype: str = "float16", n: int = 256) -> str:
    """Three lines on :func:`peak_row` (SS): TFLOP/s and FLOP/clk/SM at the in-kernel clock, then
    its fraction of each denominator with the denominator spelled out — the per-clock peak
    (SMs × FLOP/clk/SM × that clock, the record's ``fraction_of_datasheet`` field) and the
    datasheet figure (:data:`asynctc.core.peak.DATASHEET`, at its boost clock)."""
    b = peak_row(results, dtype, n)
    sms, per_clk = results["sm_count"], FLOP_PER_CLK_PER_SM[dtype]
    sheet = DATASHEET["dense_tflops"][dtype]
    return "\n".join([
        f"N = {n} {dtype} SS: {b['tflops']:.0f} TFLOP/s = {b['flop_per_clk_sm']:.0f} FLOP/clk/SM at "
        f"{clock_text(b)}",
        f"  of the per-clock peak, {sms} × {per_clk} × {b['sm_mhz']:.0f} MHz = "
        f"{b['datasheet_tflops_at_clock']:.0f} TFLOP/s: {b['fraction_of_datasheet']:.2f}",
        f"  of the datasheet figure, {sheet:.0f} TFLOP/s at {DATASHEET['boost_mhz']} MHz: "
        f"{b['tflops'] / sheet:.2f}"])


def goal_note(results: dict, goal: float = 0.90, dtype: str = "float16",
              n: int = 256) -> tuple[bool, str, str]:
    """``(reached, if_true, if_false)`` for :func:`asynctc.core.notebook.verdict`: is
    :func:`peak_row`'s fraction of the per-clock peak at least ``goal``?"""
    f = peak_row(results, dtype, n)["fraction_of_datasheet"]
    said = f"N = {n}: {f:.2f} of the per-clock peak — goal {goal:.2f}"
    return f >= goal, f"{said} reached.", f"{said} not reached."


def clock_note(results: dict) -> tuple[bool, str, str]:
    """``(below, if_true, if_false)`` for :func:`asynctc.core.notebook.verdict`: the range of the
    SM clock measured inside the kernel over the throughput rows, against the ``nvidia-smi``
    clock read a moment after each run (its range and its most frequent value). ``below``: the
    highest in-kernel clock is under every nvidia-smi reading."""
    tp = results["throughput"]
    lo, hi = min(x["sm_mhz"] for x in tp), max(x["sm_mhz"] for x in tp)
    smi = [x["clocks_after_nvidia_smi"]["sm_mhz"] for x in tp if x.get("clocks_after_nvidia_smi")]
    if not smi:
        raise KeyError("wgmma record: no nvidia-smi clock after any throughput run")
    top = max(set(smi), key=smi.count)
    smi_text = (f"{min(smi):.0f}–{max(smi):.0f} MHz; {top:.0f} after {smi.count(top)} of {len(smi)} runs"
                if min(smi) < max(smi) else f"{top:.0f} MHz after all {len(smi)} runs")
    clocks = f"In-kernel SM clock under load: {lo:.0f}–{hi:.0f} MHz"
    return (hi < min(smi), f"{clocks}, below every nvidia-smi reading after a run ({smi_text}).",
            f"{clocks}; nvidia-smi read {smi_text} after the runs.")
