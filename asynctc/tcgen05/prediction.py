"""A model throughput for the persistent kernel on a B200 — a **prediction**, never a measurement.

:func:`prediction_markdown` runs :func:`asynctc.models.tcgen05_sched.predict_b200` (the three-role
schedule of one CTA over its share of the tiles, × 148 SMs, 8192 dense FP16 FLOP / clock / SM, an
assumed clock) and writes the result with every assumption beside it; :func:`anchors_markdown`
lists the public anchors that published B200 GEMM numbers and where to read them. No sm_100 GPU
was used: no number here is measured.
"""

from __future__ import annotations

from ..models import tcgen05_sched as _s


def prediction_markdown(sizes=(4096, 8192), **kw) -> str:
    """A markdown table of predicted TFLOP/s for s×s×s fp16 GEMMs, labelled PREDICTION, followed
    by the assumptions (keyword arguments go to :func:`~asynctc.models.tcgen05_sched.predict_b200`)."""
    rows = ["| size | predicted TFLOP/s | of the 8192 × 148 × clock peak | MMA busy | tiles per CTA |",
            "|---|---|---|---|---|"]
    last = None
    for s in sizes:
        p = _s.predict_b200(s, s, s, **kw)
        last = p
        rows.append(f"| {s}³ | {p['tflops']:.0f} (PREDICTION) | {p['fraction']:.2f} of "
                    f"{p['peak_tflops']:.0f} | {p['mma_busy_fraction']:.2f} | {p['waves']} |")
    rows += ["", "Assumptions (a model, not a measurement; no sm_100 GPU was used):", ""]
    rows += [f"- {a}" for a in last["assumptions"]]
    return "\n".join(rows)


def anchors_markdown() -> str:
    """The public anchors with published B200 GEMM numbers (to be read at the source)."""
    rows = ["| anchor | what it reports | source |", "|---|---|---|"]
    rows += [f"| {a} | {w} | {src} |" for a, w, src in _s.ANCHORS]
    rows += ["", "Beyond the datasheet's peak the course quotes none of their TFLOP/s: it could not "
             "verify them here, and it has no sm_100 GPU to set a measurement of its own beside "
             "them. Read them at the source, against the prediction above."]
    return "\n".join(rows)
