"""Chapter 10 (asynctc.claims): every verdict comes from a record, both peak denominators are
judged, what is not measured says what would measure it, and a record altered across a threshold
flips the verdict and makes the chapter's check raise. CPU only: records are read, never measured."""
import copy
import json
import re
from pathlib import Path

import pytest

from asynctc import claims as C
from asynctc.claims import report as R
from asynctc.claims import seed as S
from asynctc.core import bench, exercises, notebook

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def recs():
    r = C.load_records()
    missing = [s for s in ("mma_sync", "warp_specialization", "fp8", "swizzle", "pipeline",
                           "tma_copy", "wgmma", "cp_async") if r[s] is None]
    if missing:
        pytest.skip(f"no committed records for {missing}")
    return r


def _claims(recs):
    return {c.key: c for c in C.evaluate(recs)}


def _anchors(recs):
    return {a.key: a for a in C.evaluate_anchors(recs)}


def _raises(recs, key):
    """The chapter's check raises, naming ``key``."""
    with pytest.raises(notebook.ClaimError, match=key):
        R.check_written(C.evaluate(recs), C.evaluate_anchors(recs))


# --------------------------------------------------------------------------------------------------
# On the committed records
# --------------------------------------------------------------------------------------------------

def test_the_committed_records_give_the_verdicts_the_text_was_written_for(recs, capsys):
    cl, an = C.evaluate(recs), C.evaluate_anchors(recs)
    assert not R.mismatches(cl, an)
    assert "are the ones the chapter's text was written for" in R.check_written(cl, an)
    assert capsys.readouterr().out == ""                      # silent: a learner needs no meta text
    assert {c.key for c in cl} == set(R.WRITTEN_FOR) and {a.key for a in an} == set(R.WRITTEN_FOR_ANCHORS)
    for c in cl:
        assert c.verdict == R.written_verdict(c.key)


def test_every_claim_names_its_chapter_and_records(recs):
    for c in C.evaluate(recs):
        assert re.fullmatch(r"\d\d", c.chapter) and c.suites and c.parts, c.key
        assert set(c.suites) <= set(C.verdicts.SUITES)
        for p in c.parts:
            assert p.verdict in C.VERDICTS, (c.key, p.verdict)
            if p.measured:
                assert p.value is not None and p.ours, (c.key, p.what)
            else:
                assert p.measure_with and len(p.measure_with) > 20, (c.key, p.what)


def test_every_percent_of_peak_claim_is_judged_under_both_denominators(recs):
    cl = C.evaluate(recs)
    pct = [c for c in cl if c.percent_of_peak]
    assert {c.key for c in pct} >= {"gemm_mma_sync", "gemm_ws", "gemm_tuned", "gemm_blackwell",
                                    "sync_utilisation"}
    for c in pct:
        fr = [p for p in c.parts if p.unit == "fraction of peak"]
        assert {p.denominator for p in fr} == {C.DATASHEET, C.MEASURED_CLOCK}, c.key
        for p in fr:
            if p.measured:
                assert p.clock in bench.CLOCK_KINDS, (c.key, p.clock)
                assert p.clock in p.ours or p.denominator == C.DATASHEET, p.ours
    rows = C.percent_rows(cl)
    assert all(r["clock"] in bench.CLOCK_KINDS for r in rows if r["measured"] is not None)
    text = C.percent_text(cl)
    assert "in flight" in text and "datasheet" in text


def test_fractions_use_the_datasheet_and_the_measured_clock():
    row = {"tflops": 700.0, "sm_mhz": 1700.0, "sm_mhz_source": bench.CLOCK_INFLIGHT_SOURCE}
    f = C.fractions(row, 132)
    assert f["datasheet"] == pytest.approx(700.0 / 989.4, rel=1e-3)
    assert f["measured"] == pytest.approx(700.0 / (132 * 4096 * 1700e-6), rel=1e-9)
    assert f["clock"] == "in flight"
    f8 = C.fractions(row, 132, "float8_e4m3fn")
    assert f8["measured"] == pytest.approx(f["measured"] / 2)
    with pytest.raises(ValueError, match="sm_mhz"):
        C.fractions({"tflops": 700.0}, 132)


def test_the_4096_table_reads_the_seed_as_chapter_07_does():
    from asynctc import fp8
    theirs = getattr(fp8, "SEED_4096", None)
    if theirs is None:
        pytest.skip("asynctc.fp8 no longer exposes SEED_4096")
    assert tuple(tuple(x) for x in theirs) == C.SEED_4096


def test_what_is_not_measured_names_what_would_measure_it(recs):
    recs = dict(recs, fp8_swizzle=None, tma_equal=None)      # as before those suites ran
    rows = C.not_measured(C.evaluate(recs), C.evaluate_anchors(recs))
    by = {(r["key"], r["what"][:30]): r["measure_with"] for r in rows}
    assert any("swizzle=s" in m and "fp8_config" in m and "SWIZZLE=s" in m for m in by.values())
    assert any("CSTAGES=2" in m and "tma_copy" in m for m in by.values())
    assert any("tma_equal" in m and "--equal-bytes" in m for (k, _), m in by.items()
               if k == "tma_vs_manual")
    assert any("tcgen05" in m for (k, _), m in by.items() if k == "gemm_blackwell")
    assert all(r["verdict"] in (C.NOT_MEASURED, C.BLACKWELL) for r in rows)


def test_combine():
    P = C.Part
    H, F, N, B = C.HOLDS, C.FAILS, C.NOT_MEASURED, C.BLACKWELL
    assert C.combine([P("", H), P("", H)]) == H
    assert C.combine([P("", F), P("", F)]) == F
    assert C.combine([P("", H), P("", F)]) == C.PARTLY
    assert C.combine([P("", H), P("", N)]) == C.PARTLY
    assert C.combine([P("", F), P("", N)]) == F
    assert C.combine([P("", N), P("", B)]) == N
    assert C.combine([P("", B)]) == B
    with pytest.raises(ValueError, match="must be one of"):
        C.combine([P("", "maybe")])
    with pytest.raises(ValueError, match="at least one"):
        C.combine([])


def test_a_missing_record_is_not_measured(recs):
    r = dict(recs, tma_copy=None)
    c = _claims(r)["tma_vs_manual"]
    assert c.verdict == C.NOT_MEASURED
    assert all("no 'tma_copy' record" in p.measure_with for p in c.parts)
    _raises(r, "tma_vs_manual")


# --------------------------------------------------------------------------------------------------
# A value altered across its threshold flips the verdict, and the chapter's check raises
# --------------------------------------------------------------------------------------------------

def test_mma_sync_at_half_of_peak_flips_the_table(recs):
    r = copy.deepcopy(recs)
    best = S.mma_sync_best(r["mma_sync"])
    assert _claims(recs)["gemm_mma_sync"].verdict == C.FAILS
    best["tflops"] = 0.5 * 989.4
    assert _claims(r)["gemm_mma_sync"].verdict == C.HOLDS
    _raises(r, "gemm_mma_sync")


def test_the_warp_specialized_rung_below_the_band_flips(recs):
    r = copy.deepcopy(recs)
    for n in (2, 3):
        S.ladder_row(r["warp_specialization"], n)[1]["tflops"] = 600.0
    assert _claims(recs)["gemm_ws"].verdict == C.PARTLY
    assert _claims(r)["gemm_ws"].verdict == C.FAILS
    _raises(r, "gemm_ws")


def test_the_tuned_rung_at_85_percent_of_the_datasheet_flips(recs):
    r = copy.deepcopy(recs)
    S.ladder_row(r["warp_specialization"])[1]["tflops"] = 0.85 * 989.4
    c = _claims(r)["gemm_tuned"]
    assert [p.verdict for p in c.parts] == [C.HOLDS, C.FAILS] and c.verdict == C.PARTLY
    _raises(r, "gemm_tuned")


def test_a_slower_clock_moves_only_the_measured_clock_fraction(recs):
    r = copy.deepcopy(recs)
    row = S.ladder_row(r["warp_specialization"], 3)[1]
    row["sm_mhz"] = 2100.0                  # peak at this clock 1135 TFLOP/s: 0.60, below 75 %
    c = _claims(r)["gemm_ws"]
    assert [p.verdict for p in c.parts] == [C.FAILS, C.FAILS]
    _raises(r, "gemm_ws")


def test_fp8_speedup_above_two_flips_a_part(recs):
    r = copy.deepcopy(recs)
    row = next(x for x in r["fp8"].results["table"] if x["kernel"] == "FP8/FP16 ours")
    row["ratio"] = 2.3
    got = [p.verdict for p in _claims(r)["fp8_speedup"].parts]
    assert got[0] == C.FAILS and _claims(r)["fp8_speedup"].verdict == C.PARTLY   # claim unchanged …
    _raises(r, "fp8_speedup")                                                    # … but it fails loudly


def test_fp8_under_a_narrow_swizzle_becomes_measured(recs):
    r = copy.deepcopy(dict(recs, fp8_swizzle=None))          # as before the fp8_swizzle suite ran
    from asynctc import fp8
    base = fp8.fp8_config(cluster=1, tma_store=False)
    row = next(x for x in r["fp8"].results["rows"] if x.get("label") == base.label()
               and x["size"] == 4096)
    narrow = base.replace(swizzle=64)
    assert _claims(r)["swizzle_modes"].parts[-1].verdict == C.NOT_MEASURED
    r["fp8"].results["rows"].append({**row, "label": narrow.label(), "swizzle": 64,
                                     "tflops": 1.1 * row["tflops"]})
    sw, sp = _claims(r)["swizzle_modes"], _claims(r)["fp8_speedup"]
    beat, apart = sw.parts[-2:]
    assert beat.what.endswith("may beat the 128-byte one at 4096³")
    assert beat.verdict == C.HOLDS and beat.value == pytest.approx(1.1) and beat.suite == "fp8"
    assert apart.what.startswith("FP8 modes are 10–20 % apart at 4096³")
    assert apart.verdict == C.FAILS and apart.value == pytest.approx(1 / 1.1)
    assert C.NOT_MEASURED not in [p.verdict for p in sw.parts]
    assert sp.parts[-1].verdict == C.FAILS          # 1.1 × the FP8 top rung is not slower than FP16
    _raises(r, "swizzle_modes")


def _fp8_swizzle_record(recs, of_128, fp16=700.0, size=4096):
    """A synthetic "fp8_swizzle" record (the suite's row format): e4m3 under each swizzle at
    ``of_128[s]`` × 1400 TFLOP/s, and our fp16 top rung at ``fp16``."""
    from asynctc import fp8
    from asynctc import warp_specialization as W
    rec = copy.deepcopy(recs["fp8"])
    rec.suite = "fp8_swizzle"
    rows = []
    for s, f in of_128.items():
        cfg = fp8.swizzle_config(s)
        rows.append({"size": size, "dtype": cfg.dtype, "kernel": "ours", "label": cfg.label(),
                     **cfg.as_dict(), "tflops": 1400.0 * f})
    top = W.RUNGS[-1].make("float16")
    rows.append({"size": size, "dtype": "float16", "kernel": "ours", "label": top.label(),
                 **top.as_dict(), "tflops": fp16})
    rec.results = {"rows": rows}
    return rec


def test_the_fp8_swizzle_record_is_judged_against_its_own_run(recs):
    r = dict(recs)
    r["fp8_swizzle"] = _fp8_swizzle_record(recs, {128: 1.0, 64: 0.96, 32: 0.5, 0: 0.3})
    sw, sp = _claims(r)["swizzle_modes"], _claims(r)["fp8_speedup"]
    beat, apart = sw.parts[-2:]
    assert (beat.verdict, beat.suite, beat.value) == (C.FAILS, "fp8_swizzle", pytest.approx(0.96))
    assert "64 B 0.96, 32 B 0.50, none 0.30" in beat.ours
    assert apart.verdict == C.FAILS and apart.value == pytest.approx(1 / 0.96)   # 4 %, not 10–20
    slow = sp.parts[-1]                  # 0.3 × 1400 = 420 against the same run's fp16 700
    assert slow.verdict == C.HOLDS and slow.value == pytest.approx(0.6) and slow.suite == "fp8_swizzle"
    _raises(r, "swizzle_modes")
    # a 32-byte swizzle 15 % ahead flips both FP8 parts
    r["fp8_swizzle"] = _fp8_swizzle_record(recs, {128: 1.0, 64: 0.9, 32: 1.15, 0: 0.3})
    beat, apart = _claims(r)["swizzle_modes"].parts[-2:]
    assert beat.verdict == C.HOLDS and beat.value == pytest.approx(1.15)
    assert apart.verdict == C.FAILS                      # 128 B is not ahead of the next-best
    # rows of a record are never paired with the 128-byte row of another record
    r["fp8_swizzle"] = _fp8_swizzle_record(recs, {64: 0.96, 32: 0.5, 0: 0.3})
    assert _claims(r)["swizzle_modes"].parts[-1].verdict == C.NOT_MEASURED


def test_a_ten_to_twenty_percent_swizzle_gap_flips(recs):
    r = copy.deepcopy(recs)
    rows = r["swizzle"].results["rows"]
    for x in rows:
        if x["kernel"] == "ours" and x.get("swizzle") == 64 and x.get("row_boxes", 1) == 1 \
                and not x.get("tma_once"):
            t128 = next(y["tflops"] for y in rows if y["kernel"] == "ours" and y.get("swizzle") == 128
                        and y.get("row_boxes", 1) == 1 and not y.get("tma_once")
                        and y["size"] == x["size"])
            x["tflops"] = t128 / 1.15
    parts = _claims(r)["swizzle_modes"].parts
    assert [p.verdict for p in parts[:4]] == [C.HOLDS] * 4
    _raises(r, "swizzle_modes")


def test_double_buffering_within_five_percent_flips(recs):
    r = copy.deepcopy(recs)
    groups = {}
    for x in r["pipeline"].results["sweep"]:
        if x.get("kernel") == "pipeline" and x["dtype"] == "float16":
            groups.setdefault((x["tile"], x["size"]), []).append(x)
    for rows in groups.values():
        best = max(x["tflops"] for x in rows)
        for x in rows:
            if x["stages"] == 2:
                x["tflops"] = 0.97 * best
    assert _claims(r)["queue_depth"].parts[1].verdict == C.HOLDS
    _raises(r, "queue_depth")


def test_tma_at_equal_bytes_in_flight_becomes_measured(recs):
    recs = dict(recs, tma_equal=None)                         # as before the tma_equal suite ran
    r = copy.deepcopy(recs)
    copies = r["tma_copy"].results["copies"]
    m = next(c for c in copies if c["variant"] == "ldg_sts" and c["box_bytes"] == 1024)
    t = next(c for c in copies if c["variant"] == "tma" and c["bc"] == m["bc"] and c["box_bytes"] == 1024)
    copies.append({**t, "stages": 2, "ctas_per_sm": m["ctas_per_sm"] // 2, "gbps": 0.9 * m["gbps"]})
    cl = _claims(r)["tma_vs_manual"]
    part = next(p for p in cl.parts if "equal bytes" in p.what)
    assert part.verdict == C.HOLDS and part.value == pytest.approx(0.9)
    assert [p.verdict for p in cl.parts[:3]] == [p.verdict for p in _claims(recs)["tma_vs_manual"].parts[:3]]
    _raises(r, "tma_vs_manual")


def test_shared_memory_and_descriptor_claims_flip(recs):
    r = copy.deepcopy(recs)
    r["pipeline"].results["smem_limit"] = 101376
    r["wgmma"].results["checks"][0]["passed"] = False
    cl = _claims(r)
    assert cl["smem_228"].verdict == C.FAILS
    assert cl["descriptor_fields"].parts[0].verdict == C.FAILS
    with pytest.raises(notebook.ClaimError, match="smem_228.*descriptor_fields|descriptor_fields.*smem_228"):
        R.check_written(C.evaluate(r), C.evaluate_anchors(r))


def test_a_blackwell_record_would_be_judged(recs):
    r = dict(recs)
    prov = dict(recs["mma_sync"].provenance, sm_count=148)
    rec = copy.deepcopy(recs["mma_sync"])
    rec.suite, rec.provenance = "tcgen05", prov
    rec.results = {"sweep": [{"kernel": "tcgen05", "size": 4096, "dtype": "float16", "tflops": 2000.0,
                              "sm_mhz": 1800.0, "sm_mhz_source": bench.CLOCK_INFLIGHT_SOURCE}]}
    r["tcgen05"] = rec
    c = _claims(r)["gemm_blackwell"]
    assert c.verdict == C.HOLDS and c.parts[0].value == pytest.approx(2000 / (148 * 8192 * 1.8e-3))
    _raises(r, "gemm_blackwell")


def test_an_anchor_flips(recs):
    r = copy.deepcopy(recs)
    entry, _ = S.ladder_row(r["warp_specialization"], size=4096, dtype="bfloat16")
    assert _anchors(recs)["hopper_worklog"].parts[0].verdict == C.BELOW
    entry["of_cublas"] = 1.07
    assert _anchors(r)["hopper_worklog"].parts[0].verdict == C.MATCHES
    _raises(r, "hopper_worklog")


# --------------------------------------------------------------------------------------------------
# Text, figure, exercises, notebook
# --------------------------------------------------------------------------------------------------

def test_tables_as_text(recs):
    cl, an = C.evaluate(recs), C.evaluate_anchors(recs)
    t = C.table_text(cl)
    assert all(c.statement in t for c in cl)
    assert "not measured yet:" in t and "Blackwell" in t
    a = C.anchors_text(an)
    assert "Luo et al." in a and "ours" in a
    assert sum(C.counts(cl).values()) == len(cl)


def test_the_summary_is_one_plain_row_per_claim(recs):
    """Deep dive 10b prints a summary a reader of the course alone can read: one row
    per claim — the claim in plain words (at most fifteen), its chapter, what we measured in
    words, the verdict with its count of parts; the full table (every part) stays in table_text."""
    cl = C.evaluate(recs)
    assert set(C.PLAIN) == {c.key for c in cl} == set(C.SHORT)       # SHORT: the figures' labels
    assert all(len(v.split()) <= 15 for v in C.PLAIN.values())
    assert all(len(v.split()) <= 8 for v in C.SHORT.values())
    t = C.summary_markdown(cl)
    rows = t.splitlines()[2:]
    assert len(rows) == len(cl)
    for c, row in zip(cl, rows):
        cells = [x.strip() for x in row.strip("|").split("|")]
        assert cells == [C.PLAIN[c.key], c.chapter, C.our_number(c), C.verdict_words(c)], row
        assert not re.fullmatch(r"[\d.]+×?", cells[2]), f"{c.key}: a bare number says nothing: {cells[2]}"
    by = {c.key: c for c in cl}
    f = {p.denominator: p.value for p in by["gemm_ws"].parts}
    assert C.our_number(by["gemm_ws"]) == (f"{f[C.DATASHEET] * 100:.1f} % "
                                           f"({f[C.MEASURED_CLOCK] * 100:.1f} % at its clock)")
    assert C.verdict_words(by["sync_quarter"]) == "partly: 2 of 3 hold"
    assert C.verdict_words(by["latencies"]) == "partly: 1 of 3 hold, 2 not measured"
    assert "of the ceiling" in C.our_number(by["sync_quarter"])
    assert C.our_number(by["gemm_blackwell"]) == "needs a Blackwell GPU"


def test_the_two_figures_split_the_panels(recs):
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from asynctc.claims import figures
    cl, an = C.evaluate(recs), C.evaluate_anchors(recs)
    f1, f2 = C.fractions_figure(cl, an, "records"), C.ratios_figure(cl, an)
    assert len(f1.axes) == len(f2.axes) == 1
    assert len(f1.axes[0].get_yticks()) == len(figures.fraction_rows(cl, an))
    assert len(f2.axes[0].get_yticks()) == len(figures.ratio_parts(cl, an))
    labels = [t.get_text() for f in (f1, f2) for t in f.axes[0].get_yticklabels()]
    lines = [line for x in labels for line in x.splitlines()]
    assert all(len(x) <= 60 for x in lines), max(lines, key=len)
    assert all(x.count("\n") < figures.LABEL_LINES for x in labels)
    assert not any(x.endswith("…") for x in labels), "a label cut short: the reader asked for whole ones"
    # the legends say what grey and hatched grey mean (reader, round 3); ✕ only where an anchor is drawn
    legend = [t.get_text() for t in f2.axes[0].get_legend().get_texts()]
    assert "the claim's band" in legend and any("open at one end" in x for x in legend)
    f3 = C.fractions_figure(cl)
    legend = [t.get_text() for t in f3.axes[0].get_legend().get_texts()]
    assert "an anchor's number" not in legend and "the claim's band" in legend
    for f in (f1, f2, f3):
        plt.close(f)


def test_the_figure_draws_both_panels(recs, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    from asynctc.claims import figures
    cl, an = C.evaluate(recs), C.evaluate_anchors(recs)
    fig = C.claims_figure(cl, an, "records")
    ax1, ax2 = fig.axes
    assert len(ax1.get_yticks()) == len(figures.fraction_rows(cl, an))
    assert len(ax2.get_yticks()) == len(figures.ratio_parts(cl, an))
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_the_package_never_measures():
    for p in (ROOT / "asynctc" / "claims").glob("*.py"):
        src = p.read_text()
        assert not re.search(r"time_gpu\(|load_or_measure|records\.measure|runtime\.launch|"
                             r"compile_kernel", src), p.name


def test_no_claims_suite_is_registered():
    from asynctc import suites
    assert "claims" not in suites.SUITES


def test_exercise_solutions_and_mistakes(capsys):
    kw = dict(tflops=759.4, sm_mhz=1679.0, sm_count=132)
    d, m = 759.4 / 989.4, 759.4 / (132 * 4096 * 1679e-6)
    assert exercises.check("ch10.fraction_both", (d, m), solution=True, **kw)
    assert not exercises.check("ch10.fraction_both", (m, d), **kw)
    assert "swapped" in capsys.readouterr().out
    assert not exercises.check("ch10.fraction_both", (d, 759.4 / (132 * 4096 * 1980e-6)), **kw)
    assert "1980 MHz" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="is wrong"):
        exercises.check("ch10.fraction_both", (100 * d, 100 * m), solution=True, **kw)
    v = dict(datasheet=0.687, measured=0.757, low=0.75, high=0.80)
    assert exercises.check("ch10.verdict", "partly", solution=True, **v)
    assert not exercises.check("ch10.verdict", "holds", **v)
    assert "only one denominator" in capsys.readouterr().out
    assert exercises.check("ch10.verdict", "does not hold", solution=True,
                           datasheet=0.33, measured=0.34, low=0.45, high=0.55)
    # the notebook passes the row, so that the fractions are the learner's (issue 22): same verdicts
    row = dict(tflops=759.4, sm_mhz=1679.0, sm_count=132)
    assert exercises.check("ch10.verdict", "partly", solution=True, low=0.75, high=0.80, **row)
    assert exercises.check("ch10.verdict", "does not hold", solution=True, low=0.85, high=0.90, **row)
    assert not exercises.check("ch10.verdict", "partly", low=0.70, high=0.75, **row)
    assert "lies above it" in capsys.readouterr().out
    assert not exercises.check("ch10.verdict", "holds", low=0.75, high=0.80)
    assert "pass datasheet= and measured=" in capsys.readouterr().out


@pytest.mark.parametrize("name,names", [
    ("10_claims", ("ch10.bound", "ch10.bound_verdict", "ch10.values_hold")),
    ("10b_claims_in_full", ("check_written(", "ch10.fraction_both", "ch10.verdict"))])
def test_the_built_notebook_tags_its_solutions_and_checks_the_records(name, names):
    path = ROOT / "notebooks" / "solutions" / f"{name}.ipynb"     # the build with the solutions
    if not path.exists():
        pytest.skip(f"notebooks/solutions/{name}.ipynb not built")
    cells = json.loads(path.read_text())["cells"]
    learner = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())["cells"]
    assert not any("solution" in c.get("metadata", {}).get("tags", []) for c in learner)
    sol = [c for c in cells if "solution" in c.get("metadata", {}).get("tags", [])]
    assert any(c["cell_type"] == "markdown" and "<summary>Solutions" in "".join(c["source"]) for c in sol)
    assert all("solution" in c.get("metadata", {}).get("tags", [])
               for c in cells if c["cell_type"] == "code" and "solution=True" in "".join(c["source"]))
    code = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert all(n in code for n in names)


# --------------------------------------------------------------------------------------------------
# TMA against the manual copies at equal bytes in flight: the tma_equal record (chapter 03)
# --------------------------------------------------------------------------------------------------

def recs_committed_lack_tma_equal() -> bool:
    """True while data/ holds no tma_equal record (WRITTEN_FOR then expects "not measured")."""
    return C.load_records().get("tma_equal") is None


def _tma_equal(ratio_small: float, ratio_large: float):
    """A tma_equal record built from the suite's own plan (no GPU: the plan only compiles): the
    manual copies at 100 GB/s, TMA at ``ratio_small`` × that on ≤ 4 KiB boxes, ``ratio_large`` × on
    ≥ 16 KiB ones, 1.0 × between."""
    import dataclasses
    from asynctc.core import records
    from asynctc.tma import equal_bytes as E
    copies = []
    for row in E.plan():
        cfg = row["cfg"]
        r = ratio_small if cfg.box_bytes <= E.SMALL_MAX else ratio_large if cfg.box_bytes >= E.LARGE_MIN else 1.0
        copies.append({**dataclasses.asdict(cfg), "fp16_box": row["fp16_box"], "box_bytes": cfg.box_bytes,
                       "kinds": row["kinds"], "in_flight_smem": E.in_flight(cfg, "smem"),
                       "in_flight_loads": E.in_flight(cfg, "loads"),
                       "gbps": 100.0 * (r if cfg.variant == "tma" else 1.0)})
    return records.Record("tma_equal", {"sm_count": 132, "gpu": "test"},
                          {"copies": copies, "device_copy": {"gbps": 120.0}})


def test_tma_equal_record_judges_both_equal_bytes_parts_and_flips(recs):
    recs = dict(recs, tma_equal=None)             # as before the suite ran (whatever data/ holds)
    written = _claims(recs)["tma_vs_manual"]
    assert [p.verdict for p in written.parts if "equal bytes" in p.what] == [C.NOT_MEASURED] * 2
    r = dict(recs, tma_equal=_tma_equal(0.9, 1.2))
    cl = _claims(r)["tma_vs_manual"]
    eq = [p for p in cl.parts if "equal bytes" in p.what]
    assert [p.verdict for p in eq] == [C.HOLDS, C.HOLDS]
    assert eq[0].value == pytest.approx(0.9) and eq[1].value == pytest.approx(1.2)
    assert all(p.suite == "tma_equal" for p in eq) and "16x16 smem" in eq[0].ours
    assert len(cl.parts) == len(written.parts)
    assert [p.verdict for p in cl.parts if "equal bytes" not in p.what] == \
        [p.verdict for p in written.parts if "equal bytes" not in p.what]
    if recs_committed_lack_tma_equal():
        _raises(r, "tma_vs_manual")        # measured: the chapter's text must be revisited
    flipped = _claims(dict(recs, tma_equal=_tma_equal(1.05, 0.95)))["tma_vs_manual"]
    assert [p.verdict for p in flipped.parts if "equal bytes" in p.what] == [C.FAILS, C.FAILS]


def test_tma_equal_pairs_refuse_rows_that_disagree_on_bytes_in_flight():
    from asynctc.tma import equal_bytes as E
    rec = _tma_equal(1.0, 1.0)
    c = next(x for x in rec.results["copies"] if x["variant"] == "cp_async" and "smem" in x["kinds"])
    c["in_flight_smem"] += 1024
    with pytest.raises(ValueError, match="disagree on bytes in flight"):
        E.pairs(rec.results)


def test_the_exercises_row_is_not_in_view_and_its_fractions_are_the_learners():
    """Issue 22: exercise 1's row was printed in §3 and exercise 2's cell computed claims.fractions
    itself. The row is now one no table prints (rung 3 at 8192³), and no learner cell computes its
    fractions: ch10.verdict is graded from the row. (Both exercises are deep dive 10b's since the
    core lesson became "reproduce and bound a claim".)"""
    src = (ROOT / "notebooks" / "src" / "10b_claims_in_full.py").read_text()
    start, end = src.index("**Exercise 1. Both denominators"), src.index("<summary>Solutions")
    learner = src[start:end]
    assert "size=8192" in learner and "fractions(" not in learner
    assert re.search(r'check\("ch10\.verdict", answer, tflops=row\["tflops"\]', learner)
    recs = C.load_records()
    row = S.ladder_row(recs["warp_specialization"], 3, size=8192)[1]
    f = C.fractions(row, recs["warp_specialization"].provenance["sm_count"])
    path = ROOT / "notebooks" / "10b_claims_in_full.ipynb"
    if path.exists():
        cells = json.loads(path.read_text())["cells"]
        first = next(i for i, c in enumerate(cells) if "**Exercise 1. Both denominators" in "".join(c["source"]))
        shown = json.dumps([c.get("outputs", []) for c in cells[:first]])
        for number in (f"{f['datasheet']:.3f}", f"{f['measured']:.3f}", f"{row['tflops']:.1f}"):
            assert number not in shown, number


def test_a_near_miss_says_how_near():
    """A fraction outside its band by less than a round tolerance reads "holds to ±0.02, not to the
    stated ±0.005"; a far one "misses by …"; the verdict word itself is unchanged."""
    assert C.near_text(0.853, 0.85, 0.85, 0.005) == C.HOLDS
    assert C.near_text(0.836, 0.85, 0.85, 0.005) == "holds to ±0.02, not to the stated ±0.005"
    assert C.near_text(0.843, 0.85, 0.85, 0.005) == "holds to ±0.01, not to the stated ±0.005"
    assert C.near_text(0.73, 0.85, 0.85, 0.005) == "misses by 0.12"
    assert C.near_text(0.90, 0.75, 0.80, 0.005) == "misses by 0.10"     # above the band is outside too
    assert C.distance(0.77, 0.75, 0.80) == 0 and C.distance(0.95, 0.90, None) == 0
    recs = C.load_records()
    rows = {r["key"]: r for r in C.percent_rows(C.evaluate(recs))}
    for r in rows.values():
        for side in ("datasheet", "measured"):
            if r[side] is not None:
                assert (r[f"near_{side}"] == C.HOLDS) == (r[f"verdict_{side}"] == C.HOLDS), r["key"]


# --------------------------------------------------------------------------------------------------
# Chapter 10's core task: bound a claim from same-run pairs (asynctc.claims.bounds)
# --------------------------------------------------------------------------------------------------

def test_bounds_pairs_are_same_run_and_the_verdicts_follow_the_two_rules():
    from asynctc.claims import bounds as B
    recs = C.load_records()
    pairs = B.same_run_pairs(recs, 4096, "float16")
    assert [p["suite"] for p in pairs] == ["warp_specialization"] + ["ws_limit"] * 3 + ["ws_orders"] * 3
    assert all(p["ratio"] == pytest.approx(p["cublas_ms"] / p["ours_ms"]) for p in pairs)
    med, lo, hi = B.bound(p["ratio"] for p in pairs)
    assert lo <= med <= hi and B.verdict(lo, hi, value=0.99, digits=2) == C.HOLDS
    assert B.verdict(lo, hi, value=1.0, digits=2) == C.FAILS and B.verdict(lo, hi, above=1.0) == C.FAILS
    assert B.verdict(0.99, 1.01, above=1.0) == B.NOT_SETTLED and B.verdict(1.001, 1.01, above=1.0) == C.HOLDS
    assert B.verdict(0.98, 0.989, value=0.99, digits=2) == C.HOLDS      # 0.99 reads 0.985–0.995
    assert B.verdict(0.98, 0.984, value=0.99, digits=2) == C.FAILS
    assert B.reading(0.986, 1) == pytest.approx((0.95, 1.05))           # written "1.0" (reader 72)
    assert B.verdict(0.90, 0.945, value=0.986, digits=1) == C.FAILS     # 0.94–1.04 would say HOLDS
    x_lo, x_hi = B.cross_run_extremes(pairs)
    assert x_lo <= lo and x_hi >= hi
    a, b = B.rep_interval(pairs[0])
    assert a <= pairs[0]["ratio"] <= b
    assert "ws_orders, 2026-12-02" in B.table(pairs)


def test_values_that_hold_widen_as_digits_fall():
    """Reader 18: 0.98, 0.99 and 0.990 all hold on [0.98458, 0.98965]; fewer digits claim less."""
    from asynctc.claims import bounds as B
    lo, hi = 0.98458, 0.98965
    assert B.values_that_hold(lo, hi, 1) == ["1.0"]
    assert B.values_that_hold(lo, hi, 2) == ["0.98", "0.99"]
    assert B.values_that_hold(lo, hi, 3) == [f"0.{i}" for i in range(985, 991)]
    assert B.values_that_hold(0.5, 0.5, 2) == ["0.50"]     # a point: the value that rounds to it


def test_bound_figure_draws_every_pair_the_bound_and_the_claims():
    """Chapter 10 §3's figure: one row per same-run pair plus the cross-run row, the bound shaded
    from the lowest to the highest ratio, the value claim's reading and the order claim's line."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from asynctc import claims
    from asynctc.claims import bounds
    from asynctc.claims.figures import bound_figure
    pairs = bounds.same_run_pairs(claims.load_records(), 4096, "float16")
    fig = bound_figure(pairs, value=0.99, digits=2)
    ax = fig.axes[0]
    assert len(ax.get_yticks()) == len(pairs) + 1
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    _, lo, hi = bounds.bound(p["cublas_ms"] / p["ours_ms"] for p in pairs)
    assert labels[0] == f"the bound [{lo:.4f}, {hi:.4f}]"
    assert labels[1] == '"0.99" reads 0.985–0.995' and labels[2].startswith('"beats cuBLAS"')
    x_lo, x_hi = bounds.cross_run_extremes(pairs)
    assert labels[3] == f"paired across runs: {x_lo:.3f}–{x_hi:.3f}"
    plt.close(fig)


# --------------------------------------------------------------------------------------------------
# chapter 10's cell helpers (asynctc.claims.lesson): each raises when the record flips its sentence
# --------------------------------------------------------------------------------------------------

def test_lesson_helpers_hold_on_the_records_and_find_the_widest_pair(capsys):
    from asynctc.claims import bounds, lesson
    recs = C.load_records()
    pairs = bounds.same_run_pairs(recs, 4096, "float16")
    assert "baseline: cuBLAS" in lesson.record_answers(recs["warp_specialization"])
    # the widest pair as 10 §2's cell finds it: each pair's p10–p90 of the ratio / √its samples
    moves = [(b - a) / p["reps"] ** 0.5 for (a, b), p in zip(map(bounds.rep_interval, pairs), pairs)]
    assert max(moves) == lesson.spread(pairs)["rep_med"] and lesson.runs_set_the_bound(pairs)
    assert capsys.readouterr().out == ""     # §1's peaks, §2's bound, §3's verdicts: test_guard_cells.py


def test_lesson_helpers_raise_when_a_rerun_flips_their_sentence():
    from asynctc.claims import bounds, lesson
    recs = C.load_records()
    pairs = bounds.same_run_pairs(recs, 4096, "float16")
    flat = [dict(p, tflops=pairs[0]["tflops"]) for p in pairs]         # TFLOP/s no longer moves
    with pytest.raises(AssertionError, match="four times as far"):
        lesson.runs_set_the_bound(flat)


def test_10_2_lookups_give_the_inline_expressions_values():
    """10 §2's named lookups return what the cell's inline record-digging gave before them."""
    from asynctc import claims
    from asynctc.claims import bounds
    pairs = bounds.same_run_pairs(claims.load_records(), 4096, "float16")
    ours_ms, cublas_ms = bounds.medians_ms(pairs)
    assert list(ours_ms) == [p["ours_ms"] for p in pairs] and list(cublas_ms) == [p["cublas_ms"] for p in pairs]
    assert list(cublas_ms / ours_ms) == [p["cublas_ms"] / p["ours_ms"] for p in pairs]
    assert bounds.run_count(pairs) == len({p["suite"] for p in pairs}) == 3
