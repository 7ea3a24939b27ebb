"""Chapter 05's "Design it" (deep dive 05b §6): one design through the ring model beside the record (CPU only)."""
import pytest

from asynctc import pipeline as pl
from asynctc.core import records


@pytest.fixture(scope="module")
def rec():
    return records.load("pipeline")


def _row(rec, tile, stages, wp):
    return next(r for r in rec.results["sweep"] + rec.results["variants"]
                if r["kernel"] == "pipeline" and r["tile"] == tile and r["dtype"] == "float16"
                and r["size"] == 4096 and r["stages"] == stages and r["wait_pending"] == wp
                and not r["trace"] and not r["l2_promotion"])


def test_recorded_design_gets_the_records_number_and_the_models_error(rec):
    d = pl.design(4, 1, 2, 256, record=rec)
    assert d.measured_tflops == _row(rec, "128x256x64/c2", 4, 1)["tflops"]
    assert d.fitted and d.l2_cap == pl.fitted_cap(rec.results)[0]
    assert d.error == pytest.approx(d.model_tflops / d.measured_tflops - 1)
    assert "one of the runs the cap was fitted on" in d.text()
    # a design the cap was not fitted on is a test, and wait_group(0) comes from the variants
    t = pl.design(2, 0, 1, 128, record=rec)
    assert t.measured_tflops == _row(rec, "128x128x64/c1", 2, 0)["tflops"] and not t.fitted
    assert "not used in the fit" in t.text() and t.resident_ctas == 3


def test_model_side_is_the_ring_model_on_the_kernels_protocol(rec):
    from asynctc.models import pipeline as mp
    d = pl.design(3, 1, 2, 256, l2_cap=None, record=rec)
    sc = mp.simulate(3, 1, 2, 64, mp.HardwareParams.from_records(mp.Tile(bn=256)))
    assert d.model_tflops == pytest.approx(sc.tflops_gpu(4096, 4096))
    assert d.ktile_cycles == pytest.approx(sc.total_cycles / 64)
    assert not d.fitted and "no L2 cap" in d.text()


def test_unrecorded_design_says_not_measured(rec):
    d = pl.design(4, 1, 2, 256, size=2048, record=rec)
    assert d.measured_tflops is None and d.error is None
    assert "record: not measured" in d.text()


@pytest.mark.parametrize("kw, field", [
    (dict(stages=5), "stages"),                       # 5 × 48 KiB does not fit a 128×256 CTA
    (dict(wait_pending=1, stages=1), "wait_pending"),
    (dict(wait_pending=2), "wait_pending"),
    (dict(consumers=1), "bn"),                       # 128×256 on one warpgroup: 256 accumulators
    (dict(consumers=3), "consumers"),
    (dict(bn=96), "bn"),
    (dict(size=1000), "size"),
    (dict(l2_cap=-3), "l2_cap"),
    (dict(l2_cap="best"), "l2_cap"),
])
def test_invalid_knobs_raise_a_named_error(rec, kw, field):
    with pytest.raises(pl.PipelineError, match=rf"^{field}="):
        pl.design(**kw, record=rec)


def test_survey_names_the_fastest_of_model_and_record(rec):
    text = pl.design_survey(record=rec)
    best = pl.best_row(rec.results, "float16", 4096, variants=True)
    lines = text.splitlines()
    assert lines[0].startswith("Model's fastest: ") and lines[1].startswith("Record's fastest: ")
    assert f"{best['tflops']:.0f} TFLOP/s" in lines[1]
    assert "Widest misses:" in text


def test_chapter05_readers_pick_the_rows_the_notebook_names(rec):
    """05 §4–§5's one-line readers: the depth sweep by stage, best variant ÷ cuBLAS, best by width,
    the traced run."""
    res = rec.results
    sweep = pl.depth_sweep(res, "128x256x64/c2")
    assert sweep[4] == _row(rec, "128x256x64/c2", 4, 1)["tflops"] and sorted(sweep) == list(range(1, len(sweep) + 1))
    got = pl.of_cublas(res, 4096)
    assert set(got) == {"float16", "bfloat16"}
    assert got["float16"] == pytest.approx(pl.best_row(res, "float16", 4096, variants=True)["tflops"]
                                           / pl.cublas_row(res, "float16", 4096)["tflops"])
    best = pl.best_by_width(res)
    assert best[256] == pytest.approx(max(sweep.values()) / pl.cublas_row(res, "float16", 4096)["tflops"])
    tf = pl.best_tflops_by_width(res)                 # what show_widths prints over cuBLAS
    assert tf[256] == max(sweep.values()) and best[128] == pytest.approx(tf[128] / pl.cublas_row(res, "float16", 4096)["tflops"])
    t = pl.trace_of(res, "128x256x64/c2", 4)
    assert (t["tile"], t["stages"]) == ("128x256x64/c2", 4)


def test_show_design_refuses_in_one_line(rec, capsys):
    assert pl.show_design(4, 1, 1, 256, record=rec) is None     # one consumer, 128×256: too many accumulators
    out = capsys.readouterr().out.strip()
    assert "\n" not in out and out.startswith("refused") and "bn=256" in out and "accumulators" in out
    d = pl.show_design(4, 1, 2, 256, record=rec)
    assert d is not None and capsys.readouterr().out.strip() == d.text()


def test_128x128_drop_after_three_stages_is_the_residency_the_record_holds(rec):
    occ, tf = pl.resident_by_depth(rec.results, "128x128x64/c2"), pl.depth_sweep(rec.results, "128x128x64/c2")
    assert set(occ) == set(tf) and occ[3] == 2 and occ[4] == 1 and tf[4] < tf[3]   # chapter 05 §4's sentence
