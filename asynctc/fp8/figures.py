"""Chapter 07, notebook 07's figures, read from records (never timed here): the accumulation plot
of an "fp8" record (:func:`plot_accumulation`: measured error vs K over the model's prediction).
The seed article's 4096³ table beside our rungs is in :mod:`asynctc.fp8.seed`."""

from __future__ import annotations

from ..models.fp8 import FRAC_BITS, predict_swamp


def plot_accumulation(results: dict, record=None, frac_bits: int = FRAC_BITS):
    """Two panels from an "fp8" record's ``experiment``: left, the swamping input's median relative
    error against K per promotion interval, measured (markers) over the model's prediction at
    ``frac_bits`` (lines, :func:`predict_swamp`, the table frozen in :data:`ACC_PREDICTION`);
    right, fresh random inputs: the largest |C − ref| / (|A|·|B|) per K. Returns the figure."""
    import matplotlib.pyplot as plt
    from ..core import plots
    rows = results["experiment"]["rows"]
    ks = sorted({r["k"] for r in rows})
    ps = sorted({r["promote"] for r in rows})
    pred = predict_swamp(ks=tuple(ks), promotes=tuple(ps), frac_bits=frac_bits)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.2), dpi=80, layout="constrained")
    for p, colour in zip(ps, ("tab:red", "tab:blue", "tab:green", "tab:purple")):
        name = "no promotion" if p == 0 else f"promote every {p} k-tile{'s' if p > 1 else ''}"
        got = [next(r for r in rows if r["k"] == k and r["promote"] == p) for k in ks]
        ax.plot(ks, [pred[p][k] for k in ks], "-", color=colour, alpha=0.5,
                label=f"model, {frac_bits} bits: {name}")
        ax.plot(ks, [r["swamp_median_rel_err"] for r in got], "o", color=colour,
                label=f"measured: {name}")
        ax2.plot(ks, [r["random_max_err_over_absAB"] for r in got], "o-", color=colour, label=name)
    for a in (ax, ax2):
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.set_xlabel("K")
        a.grid(True, which="both", alpha=0.3)
    ax.set_ylabel("median |C − ref| / |ref|")
    ax.legend(fontsize=7)
    ax2.set_ylabel("max |C − ref| / (|A|·|B|)")
    ax2.legend(fontsize=7)
    plots._title(ax, "swamping input (one 32·32 product, then small ones)", record)
    plots._title(ax2, "fresh standard-normal FP8 inputs", record)
    return fig
