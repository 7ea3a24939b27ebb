"""Deep dive 07d §6: the seed article's 4096³ table of fractions of peak (:data:`SEED_4096`) beside
our measured GEMMs from the records (:func:`seed_comparison`, :func:`seed_table_text`), each under
two denominators — the datasheet's dense peak and SMs × FLOP/clk/SM × the SM clock measured for
the row (:func:`asynctc.core.peak.peak_at_clock`, a pure function of the row). Reads records;
measures and plots nothing."""

from __future__ import annotations

from .config import fp8_config


#: The seed article's table at 4096³, fraction of the Tensor Core peak per step: (step, low, high,
#: as the seed writes it). "~50 %" is read as 0.45–0.55.
SEED_4096 = (("mma.sync", 0.45, 0.55, "~50 %"),
             ("wgmma + TMA + warp specialization", 0.75, 0.80, "75–80 %"),
             ("tuned", 0.85, 0.85, "85 %"))


def seed_comparison(mma_rec, ws_rec, fp8_rec=None, size: int = 4096,
                    dtype: str = "float16") -> list[dict]:
    """Our measured GEMMs at ``size``³ in ``dtype`` as fractions of the peak at the SM clock
    measured for each row (:func:`asynctc.core.peak.peak_at_clock`; the clock's kind from the
    row, :func:`~asynctc.core.peak.clock_kind`), one entry per step of :data:`SEED_4096` and a few
    beside them: the best mma.sync kernel of chapter 01 (``mma_sync`` record); chapter 05's
    kernel (rung 1), warp specialization (rung 2) and two consumers + setmaxnreg (rung 3) for the
    seed's "wgmma + TMA + warp specialization"; the record's top rung for "tuned"; cuBLAS of the same
    ``warp_specialization`` run; and, with ``fp8_rec``, our FP8 top rung against the FP8 peak
    (8192 FLOP/clk/SM). Each entry: ``seed`` (the step, or None), ``seed_low``/``seed_high``,
    ``ours``, ``label``, ``tflops``, ``sm_mhz``, ``clock`` (its kind), ``fraction`` (of SMs ×
    FLOP/clk/SM × that clock), ``datasheet_tflops`` and ``fraction_of_datasheet`` (of the
    datasheet's dense peak, 989.4 TFLOP/s fp16 / 1978.9 fp8: the other denominator, the one a
    reader of "X % of peak" most likely means), ``peak_text``, ``suite``."""
    from ..core import peak as bench
    out = []

    def add(seed, ours, row, rec, dt=dtype):
        sm = rec.provenance["sm_count"]
        p = bench.peak_at_clock(row, sm, dt)
        step = next((s for s in SEED_4096 if s[0] == seed), None)
        out.append({"seed": seed, "seed_low": step[1] if step else None,
                    "seed_high": step[2] if step else None, "seed_text": step[3] if step else "",
                    "ours": ours, "label": row.get("label", row.get("kernel")),
                    "tflops": row["tflops"], "sm_mhz": p["sm_mhz"], "clock": bench.clock_kind(row),
                    "fraction": p["fraction"], "datasheet_tflops": p["datasheet_tflops"],
                    "fraction_of_datasheet": p["fraction_of_datasheet"],
                    "peak_text": bench.peak_text(row, sm, dt),
                    "suite": rec.suite})
    mma = [r for r in mma_rec.results["sweep"] if r["size"] == size and r["dtype"] == dtype
           and r["kernel"] == "mma.sync"]
    add("mma.sync", "chapter 01: tuned ldmatrix + mma.sync (best tile)",
        max(mma, key=lambda r: r["tflops"]), mma_rec)
    res = ws_rec.results
    lad = {r["rung"]: r for r in res["ladder"] if r["size"] == size and r["dtype"] == dtype}
    timed = [r for r in res["rows"] if r["size"] == size and r["dtype"] == dtype]
    for n, seed in ((1, None), (2, SEED_4096[1][0]), (3, SEED_4096[1][0]), (max(lad), SEED_4096[2][0])):
        row = next(r for r in timed if r.get("label") == lad[n]["label"])
        add(seed, f"chapter 06 rung {n}: {lad[n]['name']}", row, ws_rec)
    add(None, "cuBLAS (same run as chapter 06)", next(r for r in timed if r["kernel"] == "cuBLAS"),
        ws_rec)
    if fp8_rec is not None:
        top = fp8_config().label()
        row = next((r for r in fp8_rec.results["rows"] if r["size"] == size
                    and r.get("label") == top), None)
        if row is not None:
            add(None, "chapter 07: FP8 top rung (e4m3, FP8 peak)", row, fp8_rec, "float8_e4m3fn")
    return out


def seed_table_text(rows: list[dict]) -> str:
    """:func:`seed_comparison` as text: the seed's step and figure, ours, TFLOP/s, the fraction of
    the datasheet peak, the fraction of the peak at the measured clock and that clock's kind."""
    lines = [f"{'seed step':34s} {'seed':>8s}  {'ours':58s} {'TFLOP/s':>7s} {'of sheet':>8s} "
             f"{'of clock':>8s}  clock"]
    for r in rows:
        lines.append(f"{(r['seed'] or ''):34s} {r['seed_text']:>8s}  {r['ours']:58s} "
                     f"{r['tflops']:7.0f} {r['fraction_of_datasheet']:8.2f} {r['fraction']:8.2f}  "
                     f"{r['sm_mhz']:.0f} MHz ({r['clock']})")
    return "\n".join(lines)
