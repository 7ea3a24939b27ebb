"""Chapter 05's figures (matplotlib; data in, figure out — never measures): one CTA's trace as
a Gantt chart (:func:`plot_trace`), the same trace above the ring model's schedule on one time axis
(:func:`plot_trace_beside_model`), the throughput by ring
depth from a ``pipeline`` record (:func:`plot_depth`), and the sentence that sets the ring model's
depth sweep beside the record's (:func:`model_beside_record`, the best L2 cap: :func:`~.design.closest_cap`),
and the plateau in bytes per clock beside that cap (:func:`plateau_in_bytes`)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core import notebook
from ..models.lanes import lane_name
from .config import STAGE_RANGE
from .results import cublas_row
from .trace import Span, need_bytes_per_clk, timeline_spans


#: Colours of the span kinds in :func:`plot_trace`.
SPAN_COLORS = {"tma": "tab:blue", "wait_empty": "tab:gray", "wait_full": "tab:red",
               "mma": "tab:green", "release": "k", "epilogue": "tab:purple"}


def plot_trace(trace: dict, title: str = "", record=None, k_max: int | None = None,
               time_unit: str = "cycles", producer_warpgroup: bool = False):
    """Gantt chart of one CTA's trace: a row per lane ("tma", "wg0", "wg1", labelled "TMA",
    "consumer 0", "consumer 1": :func:`~asynctc.models.lanes.lane_name`), one bar per span
    (colour = kind, the k-tile written in the bar when wide enough), releases as ticks.

    ``trace``: a :meth:`TraceResult.as_dict` (e.g. the ``cta0`` entry of a record's
    ``traces`` row, or a decoded dump); ``k_max``: draw only k-tiles < k_max (the start of a long
    loop is the interesting part); ``producer_warpgroup``: a chapter 06 kernel's trace (lanes keyed
    by hardware warpgroup, the producer's on "tma"). Returns the figure."""
    import matplotlib.pyplot as plt
    spans = [Span(**x) if isinstance(x, dict) else Span(*x) for x in trace["spans"]]
    if k_max is not None:
        spans = [s for s in spans if s.k < k_max or s.kind == "epilogue"]
        if any(s.kind != "epilogue" for s in spans):
            spans = [s for s in spans if s.kind != "epilogue"]
    lanes = sorted({s.lane for s in spans}, key=lambda x: (x.split("/")[0], not x.endswith("tma"), x))
    fig, ax = plt.subplots(figsize=(11, 0.7 + 0.55 * len(lanes) * 2), dpi=80, layout="constrained")
    rows = {}
    for i, lane in enumerate(lanes):
        for j, kind in enumerate(("tma", "wait_empty") if lane.endswith("tma") else
                                 ("wait_full", "mma")):
            rows[(lane, kind)] = 2 * i + j * 0.9
    t_end = max((s.end for s in spans), default=1.0) or 1.0
    stages = max(int(trace.get("stages") or 1), max((s.stage + 1 for s in spans), default=1))
    for s in spans:
        if s.kind == "release":
            y = rows.get((s.lane, "mma"), 0)
            ax.plot([s.start, s.start], [y - 0.4, y + 0.4], color="k", lw=0.8)
            continue
        if s.kind.startswith("wait") and s.end <= s.start:
            continue                     # a wait that returned at once: no bar (a hairline would read as a wait)
        if s.kind == "epilogue":
            y = rows.get((s.lane, "mma"), 0)
        else:
            y = rows.get((s.lane, s.kind), rows.get((s.lane, "mma"), 0))
        # spans of one row may overlap (several TMA loads in flight; with wait_group 1 two k-tiles'
        # wgmmas): TMA bars get a sub-row per stage, wgmma bars one per k parity
        h, dy = 0.8, 0.0
        if s.kind == "tma":
            h = 0.8 / stages
            dy = -0.4 + h * (s.stage + 0.5)
        elif s.kind == "mma":
            h, dy = 0.4, (-0.2 if s.k % 2 == 0 else 0.2)
        ax.barh(y + dy, max(s.end - s.start, t_end * 1e-3), left=s.start, height=h,
                color=SPAN_COLORS.get(s.kind, "tab:orange"), alpha=0.8, edgecolor="white", lw=0.3)
        if s.kind in ("tma", "mma") and s.end - s.start > t_end / 60 and h >= 0.2:
            ax.text((s.start + s.end) / 2, y + dy, str(s.k), ha="center", va="center", fontsize=6)
    ax.set_yticks(list(rows.values()), [f"{lane_name(lane.split('/')[-1], producer_warpgroup)} {'load' if kind == 'tma' else kind}"
                                        for lane, kind in rows])
    ax.set_xlabel(f"SM clock {time_unit} since the CTA's first event")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in SPAN_COLORS.values()]
    ax.legend(handles, list(SPAN_COLORS), fontsize=7, ncol=6, loc="lower center",
              bbox_to_anchor=(0.5, 1.0), frameon=False)
    ax.invert_yaxis()
    t = title or (f"{trace.get('stages', '?')} stages, wait_group {trace.get('wait_pending', '?')}, "
                  f"{trace.get('k_tiles', '?')} k-tiles")
    ax.set_title(t + (f"\n{record.label()}" if record is not None else ""), fontsize=10, pad=22)
    return fig


#: Markers and line styles of the tiles in :func:`plot_depth` (a /2cta variant shares its base
#: tile's colour, with hollow markers and a dashed line, so that it is not hidden under it).
_TILE_MARKERS = {"128x128x64/c1": "o", "128x128x64/c2": "s", "128x256x64/c2": "D", "256x128x64/c2": "^"}


def plot_depth(results: dict, dtype: str = "float16", record=None, two_cta: bool = False):
    """TFLOP/s against the number of stages: one panel per GEMM size, one line per tile (distinct
    marker and colour), the panel's cuBLAS (``dtype``, that size) as a labelled horizontal line —
    from a ``pipeline`` record's results. ``two_cta=True`` adds the ``/2cta`` variants (launch
    bounds asking for two resident CTAs per SM), each in its base tile's colour, hollow markers,
    dashed. Returns the figure."""
    import matplotlib.pyplot as plt
    sizes = sorted({r["size"] for r in results["sweep"]})
    fig, axes = plt.subplots(1, len(sizes), figsize=(5.2 * len(sizes) + 2.2, 4.2), dpi=80,
                             layout="constrained", sharey=True, squeeze=False)
    bases = sorted({r["tile"].split("/2cta")[0] for r in results["sweep"] if r["kernel"] == "pipeline"})
    colour = {b: f"C{j}" for j, b in enumerate(bases)}
    for ax, size in zip(axes[0], sizes):
        tiles = sorted({r["tile"] for r in results["sweep"] if r["kernel"] == "pipeline"
                        and r["size"] == size and r["dtype"] == dtype
                        and (two_cta or not r["tile"].endswith("/2cta"))})
        for tile in tiles:
            base = tile.split("/2cta")[0]
            two = tile.endswith("/2cta")
            pts = sorted((r["stages"], r["tflops"]) for r in results["sweep"]
                         if r["kernel"] == "pipeline" and r["size"] == size and r["dtype"] == dtype
                         and r["tile"] == tile)
            ax.plot(*zip(*pts), marker=_TILE_MARKERS.get(base, "v"), ms=8 if two else 5,
                    mfc="white" if two else colour[base], mew=1.5, ls="--" if two else "-",
                    color=colour[base], label=tile + (" (2 CTAs/SM asked)" if two else ""))
        cb = cublas_row(results, dtype, size)
        if cb:
            ax.axhline(cb["tflops"], color="k", ls=":", lw=1.2,
                       label=f"cuBLAS {dtype}: {cb['tflops']:.0f}")
            ax.annotate(f"cuBLAS {dtype} {size}³, this run", (1, cb["tflops"]), xytext=(0, 3),
                        textcoords="offset points", fontsize=9)
        ax.set_xlabel("stages in the ring")
        ax.set_xticks(list(STAGE_RANGE))
        ax.set_title(f"{size}³", fontsize=11)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("TFLOP/s")
    handles, labels = axes[0][-1].get_legend_handles_labels()
    axes[0][-1].legend(handles, [lab.split(":")[0] if lab.startswith("cuBLAS") else lab for lab in labels],
                       fontsize=10, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(f"Pipelined TMA + wgmma GEMM, {dtype}: throughput by ring depth" +
                 (f"\n{record.label()}" if record is not None else ""), fontsize=10)
    return fig


def flat_from(tflops: dict) -> int:
    """The smallest depth S from which no deeper S of ``tflops`` ({stages: TFLOP/s}) adds more
    than 5 %: where the curve flattens."""
    depths = sorted(tflops)
    return next(S for S in depths if all(tflops[d] <= 1.05 * tflops[S] for d in depths if d > S))


_flat_from = flat_from


def model_beside_record(model: Sequence[dict], measured: dict, l2_cap: float | None = None,
                        closest: tuple[int, float] | None = None) -> tuple[bool, str]:
    """Deep dive 05b §5's sentence (the cap left to the learner): the ring model's depth sweep (rows of
    :func:`asynctc.models.pipeline.predict_depth_sweep`) beside the record's ({stages: TFLOP/s}) —
    where each curve flattens (no deeper stage adds over 5 %), and how far the model's heights lie
    from the record's at the recorded depths (within 15 % at all of them, or the deepest and the
    worst depth's gap). ``l2_cap``: the L2 → SM cap in bytes per clock per SM the model ran with
    (None: no cap), named in the sentence. Returns (condition, sentence) for
    :func:`asynctc.core.notebook.claim`: the condition is the agreement §5's prose states — the
    model without a cap flattens at the record's depth — and holds whatever a capped model shows
    (the sentence says where that one parts from the record). ``closest``: :func:`~.design.closest_cap`'s
    (cap, worst gap); with a cap set, the sentence ends with how close that best cap gets."""
    mod = {r["stages"]: r["tflops"] for r in model if r["stages"] in measured}
    meas = {S: measured[S] for S in mod}
    fm, fr = _flat_from(mod), _flat_from(meas)
    gap = {S: mod[S] / meas[S] - 1 for S in meas}
    worst, top = max(gap, key=lambda S: abs(gap[S])), max(meas)
    head = "No cap" if l2_cap is None else f"Cap {l2_cap:g} B/clock/SM"
    shape = (f"model and record both flatten from S = {fm}" if fm == fr else
             f"the model flattens from S = {fm}, the record from S = {fr}")
    if abs(gap[worst]) <= 0.15:
        height = (f"and the model lies within {notebook.within(gap[worst])} of the record at every recorded "
                  f"depth (S = {min(meas)}–{top})")
    else:
        height = (f"but at S = {top} the model gives {mod[top]:.0f} TFLOP/s, the record "
                  f"{meas[top]:.0f} ({gap[top]:+.0%})"
                  + (f"; the widest gap is at S = {worst}, {gap[worst]:+.0%}" if worst != top else ""))
    best = ""
    if l2_cap is not None and closest is not None:
        best = (f" The best whole cap, {closest[0]} B/clock/SM, brings every recorded depth within "
                f"{closest[1]:.0%}.")
    return l2_cap is not None or fm == fr, f"{head}: {shape}, {height}.{best}"


def plateau_in_bytes(measured: dict, l2_cap: float, cfg=None, hw=None) -> tuple[bool, str]:
    """Deep dive 05b §5's plateau in chapter 00 §4's terms: the bytes per clock per SM the ring must
    deliver for the Tensor Cores to run at the datasheet rate, beside an L2 → SM cap (e.g.
    :func:`~.design.closest_cap`'s), and the fraction of peak each allows.

    ``measured``: the record's depth sweep for ``cfg``'s tile ({stages: TFLOP/s}); ``cfg``: a
    :class:`~asynctc.pipeline.config.PipelineConfig` (default: the 128×256×64 fp16 kernel).
    Bytes per k-tile (bm + bn)·bk·2, FLOP per k-tile 2·bm·bn·bk; the need is bytes × 4096
    FLOP/clk/SM (:data:`asynctc.core.peak.FLOP_PER_CLK_PER_SM`) ÷ FLOP; the cap allows cap ÷ need
    of peak. The plateau (the best recorded depth) is set against SMs × 4096 × the clock the ring
    model counts cycles at (``hw``, default :meth:`HardwareParams.from_records`: the SM clock
    chapter 04's wgmma record measured), the clock the cap is fitted in.
    Returns (condition, text) for :func:`asynctc.core.notebook.claim`, the text a four-row table
    (need, cap, what the cap allows, plateau) and one verdict: the condition is what the verdict
    states — the cap lies below the need, and the plateau below what the cap allows."""
    from ..core.peak import FLOP_PER_CLK_PER_SM, peak_tflops
    from ..models.pipeline import HardwareParams
    from .config import PipelineConfig
    cfg = cfg or PipelineConfig()
    hw = hw or HardwareParams.from_records()
    nbytes, flop = cfg.stage_bytes, 2 * cfg.bm * cfg.bn * cfg.bk
    need = need_bytes_per_clk(cfg)
    allows = min(1.0, l2_cap / need)
    top = max(measured, key=measured.get)
    got = measured[top] / peak_tflops(hw.sm_count, hw.clock_mhz, FLOP_PER_CLK_PER_SM[cfg.dtype])
    short = {"float16": "fp16", "bfloat16": "bf16"}.get(cfg.dtype, cfg.dtype)
    rows = ((f"needed at peak ({FLOP_PER_CLK_PER_SM[cfg.dtype]} FLOP/clk/SM)", f"{need:.0f} B/clk/SM"),
            ("the fitted L2 cap", f"{l2_cap:g} B/clk/SM"),
            ("the fraction of peak the cap allows", f"{allows:.2f}"),
            (f"the record's plateau (S = {top}, {measured[top]:.0f} TFLOP/s)", f"{got:.2f}"))
    text = "\n".join([f"A {cfg.bm}×{cfg.bn}×{cfg.bk} {short} k-tile: {nbytes / 1024:g} KiB for "
                      f"{flop / 1e6:.2f} MFLOP (peak at the model's {hw.clock_mhz:.0f} MHz)"]
                     + [f"  {name:<44}{v:>12}" for name, v in rows]
                     + [f"The cap lies {need - l2_cap:g} B/clk/SM under the need; the plateau "
                        f"{allows - got:.2f} of peak under what the cap allows."])
    return l2_cap < need and got < allows, text


#: The GPU row label of 05 §5's producer: in chapter 05's kernel it is no warpgroup of its own.
PRODUCER_ROW = "producer\n(consumer 0's\nthread 0)"


def plot_trace_beside_model(trace: dict, schedule, k_max: int = 12, record=None, causes: bool = False):
    """One CTA's recorded loop (top) above the ring model's schedule of the same loop (bottom), on
    one time axis in SM cycles, both drawn by the model's
    :func:`~asynctc.models.pipeline.plot_timeline`: waits in the lower half of a row (red: on full),
    wgmma groups in the upper half, a sub-row per stage for the copies. A group's bar means the same
    in both rows: issue → the ``wgmma.wait_group`` that proves it done (the model's, from
    :func:`issue_to_proof`; the model runs the kernel's loop, waits included). ``trace``: a record's
    ``traces`` row (its ``cta0`` entry is drawn); ``schedule``: a
    :class:`~asynctc.models.pipeline.Schedule` (:func:`~asynctc.models.pipeline.simulate`); only
    k-tiles < ``k_max``; the GPU's producer row is labelled as the thread it is (:data:`PRODUCER_ROW`).
    ``causes``: each row's title says 05 §5's cause in words (guarded there by
    :func:`~.lesson.trace_claims` on the record). Returns the figure."""
    import matplotlib.pyplot as plt
    from ..models.pipeline import plot_timeline
    fig, (top, low) = plt.subplots(2, 1, figsize=(9, 6.4), dpi=100, sharex=True, layout="constrained")
    what = (f"S = {trace['stages']}, wait_group({trace['wait_pending']}), first {k_max} k-tiles"
            + _slowed(trace, schedule, record))
    plot_timeline(timeline_spans(trace["cta0"], k_max), ax=top,
                  title=f"GPU: CTA 0 as traced ({trace['tile']}, {trace['dtype']}, {trace['size']}³)\n"
                        + ("consumer 0 is late (and its thread 0 also refills); consumer 1 waits out each load (red)"
                           if causes else "its clock reads slow it: compare shapes, not lengths"))
    plot_timeline(issue_to_proof(schedule, k_max), ax=low,
                  title="ring model: after the first loads no consumer waits on full" if causes else "ring model")
    top.set_xlabel("")
    top.set_yticks(top.get_yticks(), [PRODUCER_ROW if t.get_text() == "producer" else t.get_text()
                                      for t in top.get_yticklabels()])
    # Readable at notebook width (900 px): larger type than plot_timeline's 8 pt, and one legend
    # under both rows so that the bars get the full width.
    legend = top.get_legend()
    handles, labels = (legend.legend_handles, [t.get_text() for t in legend.get_texts()]) if legend else ([], [])
    for ax in (top, low):
        if ax.get_legend() is not None:
            ax.get_legend().remove()
        ax.tick_params(labelsize=11)
        ax.title.set_fontsize(12)
        ax.xaxis.label.set_fontsize(12)
    labels = [GROUP_LABEL if t == "wgmma in flight (math)" else t for t in labels]
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=11)
    fig.suptitle((record.label() + "\n" if record is not None else "") + what, fontsize=12)
    return fig


def _slowed(trace: dict, schedule, record) -> str:
    """The title's clause for what tracing costs the top row: traced ÷ untraced clocks per k-tile from
    ``record`` (05 §5's check guards it, ~1.5×), so the figure's gap to the model reads as that ×
    the untraced 1.2×. Empty without a record whose sweep has the untraced run."""
    from ..core.records import RecordError
    from .results import ktile_clocks
    try:
        c = ktile_clocks(record.results, trace, schedule)
    except (AttributeError, KeyError, ValueError, RecordError):
        return ""
    return f"; tracing makes the GPU row {c['traced'] / c['untraced']:.1f}× the untraced loop"


#: What a blue bar of :func:`plot_trace_beside_model` is, in both rows.
GROUP_LABEL = "wgmma group: issue → the wait_group that proves it done"


def issue_to_proof(schedule, k_max: int = 12) -> list:
    """The ring model's spans (k-tiles < ``k_max``, no epilogue) with each "mma" span redrawn as the
    trace draws it: from the group's issue (the end of that warpgroup's wait on full, the point in
    the loop of the kernel's issue event) to the ``wgmma.wait_group`` that proves it done (the
    model releases k-tile k the moment that wait returns, so the end is its release)."""
    spans = [s for s in schedule.spans if s.k < k_max and s.kind != "epilogue"]
    issued = {(s.lane, s.k): s.end for s in spans if s.kind == "wait_full"}
    proved = {(s.lane, s.k): s.start for s in schedule.spans if s.kind == "release"}
    return [s._replace(start=issued[s.lane, s.k], end=proved[s.lane, s.k]) if s.kind == "mma" else s
            for s in spans]


def ktile_waits(run, k_max: int = 12) -> tuple[dict, dict]:
    """Warpgroup 0's wait on full (cycles) and the cycle it issues its wgmmas, each by k-tile
    < ``k_max``, of ``run``: a record's ``traces`` row (its CTA 0) or the ring model's
    :class:`~asynctc.models.pipeline.Schedule`. Returns ``(wait, issue)``, two {k-tile: cycles}
    dicts (a k-tile with no wait is absent from ``wait``)."""
    return _ktile_waits(_spans(run, k_max), k_max)


def full_waits(run, ktiles=range(4, 12), consumer: int = 0) -> list[float]:
    """Consumer ``consumer``'s wait on full (cycles) at each of ``ktiles``, 0 where it did not wait,
    in ``run`` (a record's ``traces`` row, its CTA 0, or the ring model's Schedule), as 05 §5's
    line 2 prints it (consumer 0: the ``wait`` half of :func:`ktile_waits`)."""
    k_max = max(ktiles) + 1
    wait = _ktile_waits(_spans(run, k_max), k_max, f"wg{consumer}")[0]
    return [wait.get(k, 0) for k in ktiles]


def wait_floor(trace: dict) -> float:
    """What a traced wait on full costs when its data is already there (cycles): the median of
    CTA 0's waits on full (a record's ``traces`` row) that began after the other consumer's wait on
    the same k-tile had ended, so that the barrier had completed before the wait began. The clock
    reads and trace stores around the wait cost this much by themselves (05 §5's line 2). Raises
    ``ValueError`` when the trace has no such wait (one consumer, or consumers in lockstep)."""
    spans = timeline_spans(trace["cta0"])
    waits = {}
    for s in spans:
        if s.kind == "wait_full":
            waits.setdefault(s.lane, {})[s.k] = (s.start, s.end)
    settled = [e - b for lane, ks in waits.items() for k, (b, e) in ks.items()
               if any(k in other and other[k][1] < b for name, other in waits.items() if name != lane)]
    if not settled:
        raise ValueError(f"trace {trace['tile']} S = {trace['stages']}: no wait on full began after "
                         "another consumer's wait on the same k-tile ended")
    return float(np.median(settled))


def _spans(run, k_max: int):
    """``run``'s spans: the ring model's Schedule's own, or a record's ``traces`` row's CTA 0 up to
    k-tile ``k_max``."""
    return run.spans if hasattr(run, "spans") else timeline_spans(run["cta0"], k_max)


def _ktile_waits(spans, k_max: int, lane: str = "wg0") -> tuple[dict, dict]:
    """A consumer's (``lane``, wg0 by default) wait on full (cycles) and its wgmma issue time, by
    k-tile < k_max."""
    wait = {s.k: s.end - s.start for s in spans if s.lane == lane and s.kind == "wait_full" and s.k < k_max}
    issue = {s.k: s.start for s in spans if s.lane == lane and s.kind == "mma" and s.k < k_max}
    return wait, issue

