"""The peak card: one short table of every peak the course's records state, each at its own
measured SM clock, with the datasheet's 989.4 TFLOP/s at 1830 MHz as the last row (chapter 00
prints it where the one-peak rule is introduced; glossary: peak).

Reads records only (:func:`asynctc.core.records.load`); pure arithmetic over their rows
(:func:`asynctc.core.peak.peak_tflops` at :func:`~asynctc.core.peak.measured_clock_mhz`)."""

from __future__ import annotations

from . import peak, records


def _ws_top_rung(res: dict, size: int = 4096, dtype: str = "float16") -> list[dict]:
    lad = {r["rung"]: r for r in res["ladder"] if r["size"] == size and r["dtype"] == dtype}
    top = lad[max(lad)]
    return [next(r for r in res["rows"]
                 if (r.get("label"), r.get("size"), r.get("dtype")) == (top["label"], size, dtype))]


#: (chapter, record, which rows give the clock, rows from the record's results). The clock of a
#: row set is its median ``sm_mhz``; a single row's is its own.
CARD = (
    ("00", "ceilings", "cuBLAS GEMMs (median)", lambda res: res["cublas"]),
    ("01", "mma_sync", "fp16 size sweep (median)",
     lambda res: [r for r in res["sweep"] if r["dtype"] == "float16"]),
    ("04", "wgmma", "peak kernel, N = 256, A, B in shared memory",   # 04's "SS", said in 00's words
     lambda res: [x for x in res["throughput"] if (x["dtype"], x["n"], x["source"], x["chains"],
                                                    x["ctas_per_sm"]) == ("float16", 256, "smem", 1, 2)]),
    ("10", "warp_specialization", "top rung at 4096³", _ws_top_rung),
)


def card_rows(card=CARD) -> list[dict]:
    """One dict per :data:`CARD` entry whose record is present: ``chapter``, ``record``, ``rows``
    (what the clock is taken over), ``sm_count``, ``mhz``, ``kind`` (:func:`~asynctc.core.peak.
    rows_clock_kind`) and ``peak_tflops`` = SMs × 4096 × MHz. A missing record is skipped."""
    out = []
    for ch, name, what, pick in card:
        try:
            rec = records.load(name)
        except records.RecordError:             # a record not shipped: no row
            continue
        rows = pick(rec.results)
        sms = rec.provenance["sm_count"]
        mhz = peak.measured_clock_mhz(rows)
        out.append(dict(chapter=ch, record=name, rows=what, sm_count=sms, mhz=mhz,
                        kind=peak.rows_clock_kind(rows),
                        peak_tflops=peak.peak_tflops(sms, mhz, peak.FLOP_PER_CLK_PER_SM["float16"])))
    return out


def show_card(card=CARD) -> list[dict]:
    """Print the peak card (fp16/bf16 dense): one line per record, then the datasheet's. Returns
    :func:`card_rows`."""
    rows = card_rows(card)
    sheet = peak.DATASHEET
    print(f"{'quoted in':9s} {'record (clock over)':50s} {'SM clock':>9s}  {'kind':10s} {'peak TFLOP/s':>12s}")
    for r in rows:
        print(f"{r['chapter']:9s} {r['record'] + ', ' + r['rows']:50s} {r['mhz']:5.0f} MHz  "
              f"{r['kind']:10s} {r['peak_tflops']:12.0f}")
    print(f"{'—':9s} {'datasheet (H100/H200 SXM)':50s} {sheet['boost_mhz']:5d} MHz  {'boost':10s} "
          f"{sheet['dense_tflops']['float16']:12.1f}")
    print(f"peak = {sheet['sm_count']} SMs × 4096 FLOP/clk × SM clock: only the clock differs.")
    kinds = dict.fromkeys(r["kind"] for r in rows)
    say = {"in flight": "a probe kernel read the clock while the timed kernels ran",
           "in-kernel": "the kernel read its own clock while its Tensor Cores worked"}
    print("kind: " + "; ".join(f"{k}, {say[k]}" for k in kinds if k in say) + " (deep dive 00b)")
    return rows
