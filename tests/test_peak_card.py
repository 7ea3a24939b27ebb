"""The peak card (asynctc.core.peak_card): one row per course record that states a peak, each
SMs × 4096 × the record's own measured clock, recomputed here from the records; datasheet last."""

import statistics

from asynctc.core import peak_card, records


def test_card_lists_each_record_and_computes_peak(capsys):
    rows = peak_card.show_card()
    out = capsys.readouterr().out.splitlines()
    assert [r["chapter"] for r in rows] == ["00", "01", "04", "10"]
    for r, (ch, name, _what, pick) in zip(rows, peak_card.CARD):
        rec = records.load(name)
        mhz = statistics.median(x["sm_mhz"] for x in pick(rec.results))
        want = rec.provenance["sm_count"] * 4096 * mhz / 1e6
        assert (r["chapter"], r["record"]) == (ch, name)
        assert abs(r["peak_tflops"] - want) < 1e-6 * want
        assert any(l.startswith(ch) and name in l and f"{want:.0f}" in l for l in out), (name, out)
    assert "989.4" in out[-3] and "1830 MHz" in out[-3]
    assert out[-1].startswith("kind: in flight, ") and "in-kernel, the kernel read its own clock" in out[-1]


def test_card_picks_the_rows_its_chapters_quote():
    """The card's pickers are twins of the chapters' own (core may not import a chapter): chapter
    04's peak row (wgmma.figures.peak_row) and chapter 10's top rung (claims.seed.ladder_row)."""
    from asynctc.claims import seed
    from asynctc.wgmma.figures import peak_row
    pick = {ch: p for ch, _name, _what, p in peak_card.CARD}
    assert pick["04"](records.load("wgmma").results) == [peak_row(records.load("wgmma").results)]
    ws = records.load("warp_specialization")
    assert pick["10"](ws.results) == [seed.ladder_row(ws)[1]]
