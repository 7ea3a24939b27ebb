"""The worklog thread (core.worklog): its steps are the records' rows, its fractions are of the same
run's cuBLAS, its figure colours the chapters reached, and its entries fail on a flipped record."""
from __future__ import annotations

import copy

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import same_color  # noqa: E402

from asynctc.core import records, worklog  # noqa: E402
from asynctc.core.notebook import ClaimError  # noqa: E402

RUNS = {"mma_sync": "sweep", "cp_async": "sweep", "pipeline": "sweep", "warp_specialization": "rows"}


def _res(suite):
    return records.load(suite).results


def _row(rows, **match):
    hits = [r for r in rows if all(r.get(k) == v for k, v in match.items())]
    assert len(hits) == 1, match
    return hits[0]


def test_steps_are_the_records_rows():
    st = worklog.steps()
    one = _row(_res("mma_sync")["sweep"], kernel="mma.sync", size=4096, dtype="float16",
               tile=worklog.CH01_TILE)
    assert st[0].chapter == "01" and st[0].tflops == one["tflops"]
    ch04 = [s for s in st if s.chapter == "04"]
    assert len(ch04) == 1 and ch04[0].config["stages"] == 1 and ch04[0].config["consumers"] == 1
    best05 = max((r for r in _res("pipeline")["sweep"] if (r["kernel"], r["size"], r["dtype"])
                  == ("pipeline", 4096, "float16")), key=lambda r: r["tflops"])
    assert [s for s in st if s.chapter == "05" and s.main][-1].tflops == best05["tflops"]
    rung8 = _row(_res("warp_specialization")["ladder"], rung=8, size=4096, dtype="float16")
    last = st[-1]
    assert last.label.startswith("rung 8") and last.tflops == rung8["tflops"]
    assert last.of_cublas == pytest.approx(rung8["of_cublas"], rel=1e-9)


def test_chapter01_tile_is_the_chapters_default():
    from asynctc import mma_sync
    assert worklog.CH01_TILE == mma_sync.DEFAULT_TILE.name


@pytest.mark.parametrize("step", worklog.steps(), ids=lambda s: s.label)
def test_fraction_is_of_the_same_runs_cublas(step):
    rows = _res(step.record)[RUNS[step.record]]
    cub = _row(rows, kernel="cuBLAS", size=4096, dtype="float16")
    assert step.cublas == cub["tflops"]
    assert step.of_cublas == step.tflops / cub["tflops"]


def test_order():
    st = worklog.steps()
    chapters = [s.chapter for s in st]
    assert chapters == sorted(chapters) and "03" not in chapters
    assert {s.chapter for s in st if s.main} == set(worklog.CHAPTERS) - {"03"}
    rungs = [s.config["rung"] for s in st if s.chapter == "06"]
    assert rungs == list(range(2, 9))


@pytest.mark.parametrize("chapter", worklog.ENTRIES)
def test_entry_has_the_four_parts(chapter):
    text = worklog.entry(chapter)
    for part in ("we were at", "we suspected", "we changed", "we measured", "next"):
        assert f"  {part} " in text, part
    assert text.startswith(f"Worklog {chapter}")


def test_entry_06_walks_the_ladder_to_rung_8():
    text = worklog.entry("06")
    rung8 = _row(_res("warp_specialization")["ladder"], rung=8, size=4096, dtype="float16")
    assert f"{rung8['of_cublas']:.2f}" in text.splitlines()[-2]
    assert all(f"rung {n} " in text for n in range(1, 9))


def _flipped(monkeypatch, suite, kernel, factor):
    """Make worklog read ``suite`` with ``kernel``'s 4096³ rows scaled by ``factor``."""
    real = worklog._results

    def fake(name):
        res = real(name)
        if name != suite:
            return res
        res = copy.deepcopy(res)
        for r in res["sweep"]:
            if r["kernel"] == kernel:
                r["tflops"] *= factor
        return res
    monkeypatch.setattr(worklog, "_results", fake)


@pytest.mark.parametrize("chapter,suite,kernel", [("02", "cp_async", "cp.async"),
                                                  ("05", "cp_async", "cp.async")])
def test_guard_fails_on_a_flipped_record(monkeypatch, chapter, suite, kernel):
    worklog.entry(chapter)                                   # the real record supports it
    _flipped(monkeypatch, suite, kernel, 0.5 if chapter == "02" else 2.0)
    with pytest.raises(ClaimError, match="gained"):
        worklog.entry(chapter)


@pytest.mark.parametrize("f,says", [(1.0, "apart: within noise (the timings' own spread: "),
                                     (1.03, "apart: the same bandwidth within 5 %"),
                                     (1.5, "apart: not the same bandwidth")])
def test_tma_sentence_follows_the_record(monkeypatch, f, says):
    flat = lambda: " ".join(worklog.entry("03").split())  # noqa: E731
    real = worklog._results

    def fake(name):
        res = copy.deepcopy(real(name))
        if name == "tma_equal":
            for c in res["copies"]:
                if c["variant"] == "tma":
                    c["gbps"] *= f
        return res
    monkeypatch.setattr(worklog, "_results", fake)
    assert "03b §2, a 16 KiB box" in flat() and says in flat()


def test_entry_04_speaks_of_what_04_measured():
    """Readers: 04's entry quoted 513 TFLOP/s from chapter 05's record, a kernel not met yet. It
    now quotes 04 §8's wgmma rate and says chapter 05 will time the GEMM; 05's entry carries the
    one-stage step (its own §4 sweep), and the figure up to 04 does not draw it."""
    text = " ".join(worklog.entry("04").split())
    one = [s for s in worklog.steps() if s.chapter == "04"][0]
    assert "TFLOP/s" not in text and f"{one.of_cublas:.2f}" not in text.split("we measured")[1], text
    assert f"{worklog.wgmma_rate():.2f} of the peak" in text and "chapter 05 will time" in text
    five = " ".join(worklog.entry("05").split())
    assert f"TMA + wgmma, 1 stage (§4, S = 1; the figure's 04 point), {one.of_cublas:.2f} of cuBLAS (tile 128x128x64/c1)" in five
    ring = [s for s in worklog.steps() if s.chapter == "05" and s.main][0]   # readers: 0.67 was another tile
    assert f"{ring.of_cublas:.2f} of cuBLAS; its own tile, 128x256x64/c2, at 1 stage:" in five and ring.config["tile"] == "128x256x64/c2"
    assert not worklog.drawn(one, "04") and worklog.drawn(one, "05")


@pytest.mark.parametrize("upto", worklog.CHAPTERS)
def test_plot_colours_the_steps_reached(upto):
    fig = worklog.plot(upto)
    try:
        coloured = sum(len(line.get_xdata()) for line in fig.axes[0].lines
                       if same_color(line.get_color(), "C0"))
        assert coloured == sum(1 for s in worklog.steps() if worklog.drawn(s, upto))
        assert "same run" in fig.axes[0].get_title()        # why fractions compare across runs
    finally:
        plt.close(fig)


def test_bad_chapter():
    with pytest.raises(ValueError, match="07"):
        worklog.plot("07")
    with pytest.raises(ValueError, match="entries for .*07"):
        worklog.entry("08")


def test_entry_07_is_fp8_against_its_own_run(monkeypatch):
    """Chapter 07: FP8's top rung beside our FP16 rung and cuBLASLt FP8 of the same run (record fp8);
    no step on the FP16 figure; the entry refuses a record where FP8 no longer gains."""
    f = worklog.fp8_step()
    flat = " ".join(worklog.entry("07").split())
    assert f"4096³: FP8 top rung {f['fp8']:.0f} TFLOP/s, {f['fp8'] / f['fp16']:.2f}× our FP16 rung" in flat
    assert f"{f['fp8'] / f['cublaslt_fp8']:.2f} of cuBLASLt FP8" in flat and "exercise 3: the promotion" in flat
    assert "07" not in {s.chapter for s in worklog.steps()}
    real = worklog._results

    def fake(name):
        res = copy.deepcopy(real(name))
        if name == "fp8":
            for r in res["rows"]:
                if r.get("dtype") == "float8_e4m3fn" and r["kernel"] == "ours":
                    r["tflops"] *= 0.4
        return res
    monkeypatch.setattr(worklog, "_results", fake)
    with pytest.raises(ClaimError, match="FP8 gains"):
        worklog.entry("07")
