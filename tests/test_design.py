"""The "Design it" cells of chapters 02, 03 and 04 (CPU only): each model moves the way its chapter's
sentence says, pairs with the right record rows, and refuses bad input naming the field."""
import re

import pytest

from asynctc import cp_async, tma, wgmma
from asynctc.core import records


@pytest.fixture(scope="module")
def cp():
    return records.load("cp_async")


@pytest.fixture(scope="module")
def eq():
    return records.load("tma_equal")


@pytest.fixture(scope="module")
def tc():
    return records.load("tma_copy")


@pytest.fixture(scope="module")
def wg():
    return records.load("wgmma")


# -- chapter 02: stages and BK through work W and copy latency L ---------------------------------

def _cp_row(rec, tile):
    return next(r for r in rec.results["sweep"] if r["kernel"] == "cp.async" and r["tile"] == tile
                and r["dtype"] == "float16" and r["size"] == 4096)


def test_cp_async_design_pairs_with_its_run(cp):
    d = cp_async.design(32, 2, record=cp)
    row = _cp_row(cp, "128x128x32/w64x64/s2/2cta")
    assert d.measured == row["tflops"] and d.sm_mhz == row["sm_mhz"] and d.ctas == 2
    assert not d.fitted and "a test; W was fitted on BK = 64, S = 3, L on BK = 32, S = 1" in d.text()
    s4 = cp_async.design(64, 4, record=cp)
    assert s4.measured == _cp_row(cp, "128x128x64/w64x64/s4")["tflops"] and s4.ctas == 1
    assert s4.error > 0.05 and "no second CTA's math hides its __syncthreads" in s4.text()   # why, in place
    assert "no second CTA" not in d.text()
    assert cp_async.design(64, 6, record=cp).measured is None


def test_cp_async_design_fits_on_two_runs_and_moves_as_the_text_says(cp):
    for bk, s in ((64, 3), (32, 1)):                   # the runs that identify W and L
        d = cp_async.design(bk, s, record=cp)
        assert d.fitted and d.error == pytest.approx(0, abs=1e-9)
    one, two = cp_async.design(32, 1, record=cp), cp_async.design(32, 2, record=cp)
    assert two.tflops > one.tflops and one.copies > one.work     # a second stage hides copies
    a, b = cp_async.design(64, 2, record=cp), cp_async.design(64, 3, record=cp)
    assert a.work >= a.copies and a.tflops == pytest.approx(b.tflops, rel=0.02)   # the work binds
    assert "the copies bind" in one.text() and "the work binds" in b.text()
    survey = cp_async.design_survey(record=cp)
    assert "Widest miss: BK = 64, S = 4" in survey and "one CTA per SM" in survey


@pytest.mark.parametrize("kw, field", [(dict(bk=48), "bk"), (dict(stages=0), "stages"),
                                       (dict(stages=7), "stages"), (dict(stages=True), "stages")])
def test_cp_async_design_bad_input_names_the_field(cp, kw, field):
    with pytest.raises(ValueError, match=rf"^{field}="):
        cp_async.design(**kw, record=cp)


# -- chapter 03: Little's law on loads in flight ---------------------------------------------------

def test_tma_design_fits_latency_on_one_run_and_pairs_with_both_records(eq, tc):
    d = tma.design((16, 16), 2, 8, equal=eq, copy=tc)
    assert d.fitted and d.measured[0][0] == "tma_equal"
    assert d.gbps == pytest.approx(d.measured[0][1], rel=1e-9)
    both = tma.design((128, 128), 2, 3, equal=eq, copy=tc)     # 64 fp32 words wide
    rows = {n: next(r["gbps"] for r in rec.results["copies"] if r["variant"] == "tma" and r["br"] == 128
                    and r["bc"] == 64 and r["stages"] == 2 and r["ctas_per_sm"] == 3)
            for n, rec in (("tma_equal", eq), ("tma_copy", tc))}
    assert dict(both.measured) == rows and not both.fitted
    assert both.in_flight == 1 * 128 * 128 * 2 * 3
    assert tma.design((64, 64), 2, 4, equal=eq, copy=tc).measured == ()


def test_tma_design_more_in_flight_more_bandwidth_never_past_the_peak(eq, tc):
    few, many = tma.design((64, 64), 2, 2, equal=eq, copy=tc), tma.design((64, 64), 4, 6, equal=eq, copy=tc)
    assert many.in_flight > few.in_flight and many.gbps > few.gbps
    assert many.gbps < many.peak == eq.results["device_copy"]["gbps"]
    assert "tests within" in tma.design_survey(equal=eq, copy=tc)


def test_tma_design_text_names_its_terms_and_adds_up(eq, tc):
    """The round trip in words (latency L, transfer at the device copy's rate), and its sum."""
    d = tma.design((128, 64), 2, 3, equal=eq, copy=tc)
    total = d.sm_count * d.in_flight
    trip = d.latency + total / d.peak
    text = d.text()
    assert f"latency L {d.latency:.0f} ns + {total / d.peak:.0f} ns to transfer them" in text
    assert f"= {trip:.0f} ns" in text and "MB/peak" not in text
    assert d.gbps == pytest.approx(total / trip)


@pytest.mark.parametrize("kw, field", [(dict(box=(300, 64)), "box"), (dict(box=(64, 63)), "box"),
                                       (dict(box=64), "box"), (dict(stages=1), "stages"),
                                       (dict(ctas=40), "ctas"),
                                       (dict(box=(256, 256), stages=4, ctas=2), "ctas")])
def test_tma_design_bad_input_names_the_field(eq, tc, kw, field):
    with pytest.raises(ValueError, match=rf"^{field}="):
        tma.design(**kw, equal=eq, copy=tc)


# -- chapter 04: Tensor Cores or shared memory per wgmma -------------------------------------------

def test_wgmma_design_pairs_with_its_run_and_moves_as_the_text_says(wg):
    d = wgmma.design(8, "smem", record=wg)
    row = next(r for r in wg.results["throughput"] if r["n"] == 8 and r["source"] == "smem"
               and r["dtype"] == "float16" and r["chains"] == 1 and r["ctas_per_sm"] == 2)
    assert d.measured == row["tflops"] and d.sm_mhz == row["sm_mhz"]
    assert d.smem_clk == 18 and d.tc_clk == 4 and "shared memory set the pace" in d.text()
    big = wgmma.design(64, "smem", record=wg)
    assert big.tc_clk >= big.smem_clk and "Tensor Cores set the pace" in big.text()
    assert wgmma.design(16, "smem", record=wg).tflops > d.tflops          # wider N, fewer bytes per FLOP
    assert wgmma.design(8, "registers", record=wg).tflops > d.tflops      # RS reads no A
    assert wgmma.design(24, "smem", record=wg).measured is None
    assert "RS N = 8, RS N = 16" in wgmma.design_survey(record=wg)


@pytest.mark.parametrize("kw, field", [(dict(n=12), "n"), (dict(n=264), "n"), (dict(source="tmem"), "source"),
                                       (dict(dtype="float32"), "dtype")])
def test_wgmma_design_bad_input_names_the_field(wg, kw, field):
    with pytest.raises(ValueError, match=rf"^{field}="):
        wgmma.design(**kw, record=wg)


def test_wgmma_design_says_why_rs_small_n_misses_in_place(wg):
    from asynctc.wgmma.design import rs_clocks_floor
    floor = rs_clocks_floor(wg.results)                                   # 04b §4's fixed cost per RS wgmma
    for n in (8, 16):
        last = wgmma.design(n, "registers", record=wg).text().splitlines()[-1]
        assert f"the run took {floor:.0f} clk per wgmma" in last and "fixed cost" in last and "04b §4" in last
        # reader 125: the gap is a sentence, not a bare "+226%" that reads as a bug
        assert re.search(r"; the model is \d+% above it: ", last) and "+" not in last, last
    assert "fixed cost" not in wgmma.design(8, "smem", record=wg).text()


# -- chapter 04 §2 and §8: the helpers that assert what the lesson's markdown states --------------

def test_wrong_reads_shows_the_misread_rows():
    text = wgmma.wrong_reads(rows=(0, 1, 8))
    assert text.splitlines()[2].split()[:3] == ["A[1][0]", "A[1][0]", "A[0][32]"]   # half a 128-byte row on
    assert text.splitlines()[3].split()[-1] == "A[4][0]"                          # SBO 512: row 8 reads row 4
    assert "0 of 1024" in text and "896 of 1024" in text


def test_small_n_held_out_fits_on_n8_and_predicts_16_and_32(wg):
    held = wgmma.small_n_held_out(wg.results)       # 04b §4: the floor fitted on N = 8, tested on 16, 32
    assert "fitted on N = 8 alone" in held and "RS N = 16: predicted" in held
    # 04 §8's SS/RS cell and its guards: tests/test_guard_cells.py
