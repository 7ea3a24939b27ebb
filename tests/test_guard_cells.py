"""The visible cells that replaced the table helpers (round 26 on) in chapters 01, 02, 04, 05, 07 and
10: each runs on its committed record (02 §2's, on the compiled kernels' SASS) and prints what the
lesson reads, and each guarded sentence's cell raises :class:`~asynctc.core.notebook.ClaimError`
once a record (or the SASS) moves past that sentence's threshold.
Cells are found by a substring (:mod:`notebook_cells`), wherever they live in notebooks/src."""

import copy

import matplotlib
import numpy as np
import pytest

from asynctc import claims, cp_async, wgmma_peak  # noqa: F401  (wgmma_peak: the cells' module)
from asynctc.claims import bounds, lesson, seed
from asynctc.claims.bounds import TOP_RUNS
from asynctc.core import bench, notebook, plots, records, worklog
from asynctc.core.peak import DATASHEET
from notebook_cells import run

matplotlib.use("Agg")


# ---- chapter 10 §1: the two peaks ------------------------------------------------------------------

RECORD_ANSWERS = "print(lesson.record_answers(wrec))"
PEAKS = '("course (in flight)", top["sm_mhz"])'


def _peaks(wrec) -> dict:
    ns = run(RECORD_ANSWERS, {"lesson": lesson, "seed": seed, "wrec": wrec})
    return run(PEAKS, {**ns, "bench": bench, "notebook": notebook})


def test_the_peak_cell_holds_on_the_record(capsys):
    wrec = records.load("warp_specialization")
    ns = _peaks(wrec)
    out = capsys.readouterr().out
    top, sms = ns["top"], wrec.provenance["sm_count"]
    assert "baseline: cuBLAS" in out
    assert f"course (in flight) {sms} × 4096 × {top['sm_mhz']:.0f} MHz = " in out
    assert f"datasheet (boost)  {sms} × 4096 × {DATASHEET['boost_mhz']:.0f} MHz = " in out
    # the record itself: below the boost clock, so its own peak is lower and the fraction higher
    p = bench.peak_at_clock(top, sms, top["dtype"])
    assert p["peak_tflops"] < p["datasheet_tflops"] and p["fraction"] > p["fraction_of_datasheet"]


def test_the_peak_cell_refuses_a_run_above_the_boost_clock():
    fast = copy.deepcopy(records.load("warp_specialization"))
    seed.ladder_row(fast)[1]["sm_mhz"] = DATASHEET["boost_mhz"] + 100
    with pytest.raises(notebook.ClaimError, match="below the boost clock"):
        _peaks(fast)


# ---- chapter 10 §3: the verdicts ---------------------------------------------------------------------

BOUND = "med, lo, hi = np.median(r), min(r), max(r)"
DERIVE = 'print(f"between runs: our time moved'
VERDICTS = 'said = {"0.99 of cuBLAS": bounds.verdict('


def _verdicts(recs) -> dict:
    ns = {"bounds": bounds, "lesson": lesson, "notebook": notebook, "recs": recs, "np": np}
    for marker in (BOUND, DERIVE, VERDICTS):
        run(marker, ns)
    return ns


def _moved(scale) -> dict:
    """The chapter's records, each top run's 4096³ fp16 rows' times multiplied by
    ``scale(suite, round, row, ours_ms)`` (``ours_ms``: the top rung's median in that round)."""
    recs = claims.load_records()
    top = seed.ladder_row(recs["warp_specialization"])[1]["label"]
    out = dict(recs)
    for suite in TOP_RUNS:
        rec = recs[suite] if suite in recs else claims.load_records(suites=(suite,))[suite]
        if rec is None:
            continue
        rec = out[suite] = copy.deepcopy(rec)
        rows = [r for r in rec.results["rows"] if (r["size"], r["dtype"]) == (4096, "float16")]
        for rnd in {r.get("round", 0) for r in rows}:
            here = [r for r in rows if r.get("round", 0) == rnd]
            ours = next((r["median_ms"] for r in here if r.get("label") == top), None)
            for r in here:
                f = scale(suite, rnd, r, ours)
                for k in ("median_ms", "p10_ms", "p90_ms"):
                    r[k] *= f
    return out


def test_the_verdict_cell_holds_on_the_records(capsys):
    ns = _verdicts(claims.load_records())
    out = capsys.readouterr().out
    assert '"0.99 of cuBLAS" holds; "beats cuBLAS" does not hold' in out
    assert "\"0.98" not in out           # the lever's prediction (§3): its verdict is printed only there
    assert "paired across runs: " in out and " µs = 0.970 to " in out and out.rstrip().endswith(" µs = 1.005")
    # the record itself: the median of the widest pair's samples stays under the pairs' spread
    assert ns["lo"] <= ns["med"] <= ns["hi"] and lesson.runs_set_the_bound(ns["pairs"])


def _cublas(f):
    return lambda suite, rnd, r, ours: f if r.get("kernel") == "cuBLAS" else 1.0


@pytest.mark.parametrize("scale", [
    _cublas(1.05),                                  # cuBLAS 5 % slower: "beats cuBLAS" holds
    _cublas(0.98),                                  # 2 % faster: "0.99" does not hold
    lambda suite, rnd, r, ours: 1.0 / ours,         # every run at one speed: across runs = same run
], ids=["beats", "below-0.98", "one-speed"])
def test_the_verdict_cell_refuses_records_that_moved(scale):
    with pytest.raises(notebook.ClaimError, match="both verdicts and the across-run ends"):
        _verdicts(_moved(scale))


# ---- chapter 04 §8: the goal and SS against RS -----------------------------------------------------------

GOAL = '_ = notebook.verdict(row["tflops"] / peak >= 0.90'
SS_RS = 'ss_model = {n: 4096 * (n / 2) / max(n / 2, 16 + n / 4)'


@pytest.fixture(scope="module")
def wg():
    return records.load("wgmma")


def _wgmma(rec, marker) -> dict:
    return run(marker, {"rec": rec, "notebook": notebook, "DATASHEET": DATASHEET})


def _throughput(rec, n, source, f):
    moved = copy.deepcopy(rec)
    for x in moved.results["throughput"]:
        if (x["dtype"], x["n"], x["source"], x["chains"], x["ctas_per_sm"]) == ("float16", n, source, 1, 2):
            x["tflops"] *= f
            x["flop_per_clk_sm"] *= f
    return moved


def test_the_goal_cell_prints_both_peaks_and_its_verdict(wg, capsys):
    ns = _wgmma(wg, GOAL)
    out = capsys.readouterr().out
    row = ns["row"]
    peak = wg.results["sm_count"] * 4096 * row["sm_mhz"] / 1e6
    assert ns["N"] == 256 and f"N = 256: {row['tflops']:.1f} / {peak:.1f} TFLOP/s = " in out
    assert f"datasheet, at {DATASHEET['boost_mhz']} MHz: " in out
    assert out.rstrip().endswith("N = 256: goal 0.90 reached.")
    # the record itself: its per-clock fraction is the one the cell divides out
    assert row["fraction_of_datasheet"] == pytest.approx(row["tflops"] / peak, rel=1e-3)


def test_the_goal_cell_says_not_reached_on_a_slower_run(wg, capsys):
    _wgmma(_throughput(wg, 256, "smem", 0.9), GOAL)          # a verdict, generated: it never raises
    assert capsys.readouterr().out.rstrip().endswith("N = 256: goal 0.90 not reached.")


def test_the_ss_rs_cell_holds_on_the_record(wg, capsys):
    ns = _wgmma(wg, SS_RS)
    out = capsys.readouterr().out
    assert [int(line.split()[2]) for line in out.splitlines()] == sorted(ns["ss_model"])
    assert all("SS: " in line and "RS: " in line for line in out.splitlines())
    fpc = ns["fpc"]                                          # the record: RS at N = 8 costs 12–14 clk
    assert 12 < 2 * 64 * 8 * 16 / fpc[8, "registers"] < 14


@pytest.mark.parametrize("n,source,f,sentence", [
    (8, "smem", 1.03, "SS follows the model"),
    (16, "registers", 0.70, "RS outruns SS up to N = 32"),      # RS as slow as SS at N = 16
    (8, "registers", 1.20, "about a third of the model"),
])
def test_the_ss_rs_cell_refuses_a_record_that_moved(wg, n, source, f, sentence):
    with pytest.raises(notebook.ClaimError, match=sentence):
        _wgmma(_throughput(wg, n, source, f), SS_RS)


FIGURE = 'notebook.require(min(fpc) > 0.975 * 4096, "from N = 64 on'


def _figure_cell(rec) -> dict:
    from types import SimpleNamespace
    from asynctc import wgmma_peak
    stub = SimpleNamespace(plot_throughput=lambda rec: None,           # the figure itself: not a test's
                           small_n_as_modelled=wgmma_peak.small_n_as_modelled,
                           luo_per_sm_clock=wgmma_peak.luo_per_sm_clock)
    return run(FIGURE, {"rec": rec, "notebook": notebook, "wgmma_peak": stub})


def test_the_figure_cell_holds_on_the_record(wg):
    assert min(_figure_cell(wg)["fpc"]) > 0.975 * 4096


@pytest.mark.parametrize("n,source,f,sentence", [
    (64, "registers", 0.97, "both run at the full rate"),
    (256, "smem", 0.97, "both run at the full rate"),
    (8, "smem", 1.5, "shared memory limits SS"),
])
def test_the_figure_cell_refuses_a_record_that_moved(wg, n, source, f, sentence):
    with pytest.raises(notebook.ClaimError, match=sentence):
        _figure_cell(_throughput(wg, n, source, f))


# ---- chapter 02 §4: the best rung beside chapter 01 and cuBLAS ---------------------------------------------

BEST_RUNG = 'best, *tied = cp_async.fastest(tf)'


def test_the_best_rung_cell_reads_the_record(capsys, monkeypatch):
    import matplotlib.pyplot as plt
    from asynctc.core import exercises
    monkeypatch.setenv("ASYNCTC_BUILDING_NOTEBOOKS", "1")      # the figure is held back until ch02.stages is answered
    rec = records.load("cp_async")
    ns = run(BEST_RUNG, {"cp_async": cp_async, "plots": plots, "plt": plt, "notebook": notebook, "rec": rec,
                         "exercises": exercises})
    plt.close("all")
    out = capsys.readouterr().out
    best = cp_async.best_rows(rec.results, "float16", "cp.async")[4096]
    assert ns["tile"][ns["best"]] == best["tile"] and ns["tf"][ns["best"]] == best["tflops"]
    assert ns["base"] == cp_async.best_rows(rec.results, "float16", "mma.sync")[4096]["tflops"]
    # a tie within 1 % (the record's s3 and s4 at BK = 32, 417.1 and 416.9) names both (reader 121)
    near = [k for k in ns["tf"] if ns["tf"][k] >= (1 - cp_async.NOISE) * best["tflops"]]
    assert sorted(near) == sorted([ns["best"], *ns["tied"]])
    names = " and ".join(ns["tile"][k] for k in [ns["best"], *ns["tied"]])
    tie = " (a tie)" if len(near) > 1 else ""
    assert out.startswith(f"best configuration {names}{tie}: {best['tflops']:.1f} / ")
    assert f"× chapter 01 (its kernel, re-timed in record {rec.suite}), " in out and out.rstrip().endswith(f" = {best['tflops'] / ns['cb']:.2f} of cuBLAS")


def test_the_stage_figure_waits_for_the_prediction(capsys, monkeypatch):
    """02 §4's figure (and its best-row line) answers exercise 2: Run All holds it back."""
    from asynctc.core import exercises
    monkeypatch.setattr(exercises, "_opened", set())
    monkeypatch.setattr(exercises, "_tried", set())      # an earlier test's wrong ch02.stages would open it
    monkeypatch.delenv("ASYNCTC_BUILDING_NOTEBOOKS", raising=False)
    monkeypatch.setenv("ASYNCTC_PROGRESS", "off")
    run(BEST_RUNG, {"cp_async": cp_async, "notebook": notebook, "rec": records.load("cp_async"),
                    "exercises": exercises})
    out = capsys.readouterr().out
    assert "held back until exercise ch02.stages is answered" in out and "best configuration" not in out


def test_a_wrong_prediction_opens_the_stage_figure(monkeypatch):
    """Newcomer 47: exercise 2's first hint sends the learner to §4's figure and table, so a wrong
    answer opens them (after(..., tried=True)); an unanswered one does not."""
    from asynctc.core import exercises
    monkeypatch.setattr(exercises, "_opened", set())
    monkeypatch.setattr(exercises, "_tried", set())
    monkeypatch.delenv("ASYNCTC_BUILDING_NOTEBOOKS", raising=False)
    monkeypatch.setenv("ASYNCTC_PROGRESS", "off")
    rec = records.load("cp_async")
    assert not exercises.after("ch02.stages", tried=True)
    want = exercises.expected("ch02.stages", results=rec.results)
    wrong = ("yes" if want[0] == "no" else "no", want[1])              # a wrong first part, whatever the record
    assert not exercises.check("ch02.stages", wrong, results=rec.results)
    assert exercises.after("ch02.stages", tried=True) and not exercises.after("ch02.stages")


# ---- chapter 02 §2: the SASS counts ---------------------------------------------------------------------

SASS_COUNTS = 'names = ("LDG", "STS", "LDGSTS", "LDGDEPBAR", "DEPBAR")'


@pytest.fixture(scope="module")
def kernels():
    """Chapter 01's kernel and 02 §2's cp.async kernel, compiled (CPU: NVRTC and nvdisasm)."""
    from asynctc import mma_sync
    return mma_sync.compile_mma_sync("float16"), cp_async.compile_cp_async("float16", cp_async.DEFAULT_TILE)


class _Sass:
    """A compiled kernel's stand-in: ``kernel``'s SASS without the lines matching ``drop``."""

    def __init__(self, kernel, drop: str = r"^$"):
        import re
        self.text = "\n".join(x for x in kernel.sass().splitlines() if not re.search(drop, x))

    def sass(self) -> str:
        return self.text


def _sass_counts(ch01, ck) -> dict:
    """02 §2's counting cell and its check cell, with ``ch01`` as chapter 01's kernel."""
    from types import SimpleNamespace
    from asynctc.core import sass
    stub = SimpleNamespace(compile_mma_sync=lambda dtype: ch01)
    return run(SASS_COUNTS, {"mma_sync": stub, "sass": sass, "notebook": notebook, "ck": ck})


def test_the_sass_count_cell_counts_what_the_text_names(kernels, capsys):
    from asynctc.core import sass
    ch01, ck = kernels
    ns = _sass_counts(ch01, ck)
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == list(ns["names"]) and len(out) == 3
    assert out[1].startswith("chapter 01 ") and out[2].startswith("cp.async ")
    assert [int(v) for v in out[2].split()[1:]] == list(ns["n"]["cp.async"].values())
    # the counts are the course's instruction classes (sass.CLASSES), counted another way
    for kernel, k in (("chapter 01", ch01), ("cp.async", ck)):
        classes = sass.class_counts(k.sass(), {x: sass.CLASSES[x] for x in ns["names"]})
        assert {x: v for x, v in ns["n"][kernel].items() if v} == classes


@pytest.mark.parametrize("which,drop,sentence", [
    ("ch01 is cp.async", None, "chapter 01 loads with LDG and stores with STS"),
    ("ck is ch01", None, "the cp.async kernel has neither"),
    ("ck", r"\bLDGSTS\b", "LDGSTS does both"),
    ("ck", r"\bDEPBAR\b", "DEPBAR the wait"),
    ("ck", r"\bLDGDEPBAR\b", "LDGDEPBAR is the commit"),
], ids=["ch01-without-LDG", "cp.async-with-LDG", "no-LDGSTS", "no-DEPBAR", "no-LDGDEPBAR"])
def test_the_sass_count_cell_refuses_sass_that_moved(kernels, which, drop, sentence):
    ch01, ck = kernels
    if which == "ch01 is cp.async":
        ch01 = ck
    elif which == "ck is ch01":
        ck = ch01
    else:
        ck = _Sass(ck, drop)
    with pytest.raises(notebook.ClaimError, match=sentence):
        _sass_counts(ch01, ck)


# ---- chapter 07 §5: the accumulator, by promotion interval ------------------------------------------------

ACCUMULATOR = 'swamp = fp8.swamp_errors(res)'


class _Fp8NoFigure:
    """Chapter 07's package with its accumulation figure replaced by a no-op (not a test's)."""

    def __getattr__(self, name):
        from asynctc import fp8
        return (lambda *a, **k: None) if name == "plot_accumulation" else getattr(fp8, name)


def _accumulator(res) -> dict:
    """07 §5's figure-and-table cell and its check cell, after §4's TFLOP/s by kernel and size (``tf``)."""
    from types import SimpleNamespace
    tf = {(r["kernel"], r["size"]): r["tflops"] for r in res["table"] if "tflops" in r}
    return run(ACCUMULATOR, {"fp8": _Fp8NoFigure(), "notebook": notebook, "tf": tf, "res": res,
                             "rec": None, "plt": SimpleNamespace(show=lambda: None)})


def test_the_accumulator_cell_holds_on_the_record(capsys):
    res = records.load("fp8").results
    ns = _accumulator(res)
    out = capsys.readouterr().out.splitlines()[1:]            # after the prediction's verdict
    assert out[0].startswith("promotion ") and "swamping, K = 16384" in out[0]
    assert "normal, K = 256 → 16384" in out[0] and out[0].endswith("TFLOP/s at 8192³, 128×128 build")
    assert [line.split("  ")[0] for line in out[1:4]] == ["none", "every 4 k-tiles", "every k-tile"]
    assert out[1].endswith(" = 1.00") and out[2].endswith(notebook.ratio(ns["speed"][4], ns["speed"][0], "TFLOP/s"))
    err = {p: ns["swamp"][ns["k"], p] for p in (0, 4)}          # swamping at the longest K
    assert out[4] == "swamping, none / every 4: " + notebook.ratio(100 * err[0], 100 * err[4], "%", digits=0)
    # the record itself: the cell divides the 128×128 builds' 8192³ rows; every k-tile is the slowest
    from asynctc import fp8
    base = fp8.table_row(res, 8192, fp8.fp8_config(bn=128, stages=6).label())["tflops"]
    speed = ns["speed"]
    assert speed[0] == base and speed[1] / speed[0] < speed[4] / speed[0] < 1


def _rows_moved(res, field, promote, f, at_k=None):
    moved = copy.deepcopy(res)
    for r in moved["experiment"]["rows"]:
        if r["promote"] == promote and (at_k is None or r["k"] == at_k):
            r[field] *= f
    return moved


def _fits_12(res):
    """The record with every promote:4 run fitted bit for bit by 12 fraction bits and not by 13."""
    moved = copy.deepcopy(res)
    for r in moved["experiment"]["rows"]:
        if r["promote"] == 4:
            r["fit_by_bits"].update({"12": 0.0, "13": 0.01})
    return moved


def _timed_moved(res, promote, f):
    from asynctc import fp8
    moved = copy.deepcopy(res)
    label = fp8.fp8_config(promote=promote).label()
    for r in moved["table"]:
        if r["kernel"] == label and r["size"] == 8192:
            r["tflops"] *= f
    return moved


@pytest.mark.parametrize("move,sentence", [
    (lambda res: _fits_12(res), "it keeps 13 fraction bits"),
    (lambda res: _rows_moved(res, "swamp_median_rel_err", 4, 2.0, at_k=16384), "every 4 k-tiles: its cut"),
    (lambda res: _timed_moved(res, 4, 0.9), "its kept share"),
    (lambda res: _rows_moved(res, "swamp_median_rel_err", 1, 10.0, at_k=16384), "cuts it further"),
    (lambda res: _timed_moved(res, 1, 1.6), "keeps less"),
    (lambda res: _rows_moved(res, "random_max_err_over_absAB", 0, 4.0, at_k=16384), "stays within 3×"),
    (lambda res: _rows_moved(res, "random_max_err_over_absAB", 4, 8.0, at_k=16384), "falls by more than half"),
    (lambda res: _rows_moved(res, "random_max_err_over_absAB", 1, 4.0, at_k=16384), "lowest with every k-tile"),
], ids=["bits", "swamp-cut", "kept-every4", "swamp-every1", "kept-every1", "normal-level", "normal-falls",
        "normal-lowest"])
def test_the_accumulator_cell_refuses_a_record_that_moved(move, sentence):
    with pytest.raises(notebook.ClaimError, match=sentence):
        _accumulator(move(records.load("fp8").results))


# ---- chapter 01 §5: why the number is what it is ---------------------------------------------------------

WHY = "print(mma_sync.why_table(rec)"
#: 01 §5's second cell (the table is printed first, under the prediction): the numbers and guards.
WHY_NUMBERS = 'abl = {r["variant"]: r["tflops"] for r in rec.results["ablation"]}'


@pytest.fixture(scope="module")
def ms():
    return records.load("mma_sync")


def _why(rec) -> dict:
    """01 §5's cell and its check cell, after §4's 4096³ fp16 sweep figures (``ours``, ``cublas``)."""
    from asynctc import mma_sync
    at = {x.get("tile") or x["kernel"]: x["tflops"] for x in rec.results["sweep"]
          if (x["size"], x["dtype"]) == (4096, "float16")}
    ns = run(WHY, {"rec": rec, "mma_sync": mma_sync, "notebook": notebook, "bench": bench, "worklog": worklog,
                   "ours": at[mma_sync.DEFAULT_TILE.name], "cublas": at["cuBLAS"]})
    return run(WHY_NUMBERS, ns)


def _scaled(rec, part: str, key, f: float):
    """``rec`` with one ``ablation`` variant (``part`` "ablation", ``key`` its name) or one fp16
    ``peak`` row (``part`` "peak", ``key`` (warps per CTA, CTAs per SM)) ``f`` times as fast."""
    moved = copy.deepcopy(rec)
    for x in moved.results[part]:
        if (part == "ablation" and x["variant"] == key) or (
                part == "peak" and x["dtype"] == "float16" and (x["warps_per_cta"], x["ctas_per_sm"]) == key):
            x["tflops"] *= f
    return moved


def test_the_why_cell_holds_on_the_record(ms, capsys):
    ns = _why(ms)
    out = capsys.readouterr().out
    abl = {x["variant"]: x["tflops"] for x in ms.results["ablation"]}
    assert out.startswith("kernel ") and f"{abl['no global→shared copy'] / abl['full kernel']:.2f}" in out
    card = bench.measured_clock_mhz([x for x in ms.results["sweep"] if x["dtype"] == "float16"])
    assert (f"ceiling / peak at {ns['occ'][8]['sm_mhz']:.0f} MHz (in-kernel; 00's card: {card:.0f} MHz): "
            f"{notebook.ratio(ns['ceil'], ns['peak'])}") in out
    assert f"ceiling, 8 → 32 warps/SM: {notebook.ratio(ns['occ'][32]['tflops'], ns['ceil'])}" in out
    assert out.rstrip().endswith(f"without the copy {abl['no global→shared copy']:.0f} TFLOP/s: "
                                 f"past the goal, {abl['cuBLAS'] / 2:.0f}")
    assert "the larger single gain is the copy" in out
    assert "chapter 02" not in out and "s02" not in ns      # an earlier chapter quotes no later one's number
    # the ceiling row the cell reads is the table's (chapter 01's ceiling_row at the default tile)
    from asynctc import mma_sync
    assert ns["ceil"] == mma_sync.ceiling_row(ms.results)["tflops"] and 0.6 < ns["ceil"] / ns["peak"] < 0.7


@pytest.mark.parametrize("part,key,f,sentence", [
    ("ablation", "full kernel", 1.06, "within 5 %"),
    ("ablation", "no global→shared copy", 0.85, "about 1.6× as fast"),
    ("peak", (4, 2), 0.85, "about 0.65 of the peak"),
    ("peak", (8, 4), 1.10, "a few percent at most"),
    ("ablation", "mma.sync + __syncthreads only", 1.20, "below the ceiling"),
    ("ablation", "mma.sync + __syncthreads only", 1.10, "a few percent more than the copy alone"),
])
def test_the_why_cell_refuses_a_record_that_moved(ms, part, key, f, sentence):
    with pytest.raises(notebook.ClaimError, match=sentence):
        _why(_scaled(ms, part, key, f))


def test_the_why_cell_refuses_a_record_whose_copyless_kernel_misses_the_goal(ms):
    """01 §5 says the kernel without its copy would pass the goal, half of cuBLAS (readers: it once
    quoted chapter 02's ratio instead; an earlier chapter prints no later chapter's number)."""
    abl = {x["variant"]: x["tflops"] for x in ms.results["ablation"]}
    f = abl["no global→shared copy"] / (0.45 * abl["cuBLAS"])      # cuBLAS this much faster, in both
    moved = _scaled(ms, "ablation", "cuBLAS", f)                   # the ablation and §4's sweep
    for x in moved.results["sweep"]:
        if (x.get("tile") or x["kernel"]) == "cuBLAS":
            x["tflops"] *= f
    with pytest.raises(notebook.ClaimError, match="would pass the goal, half of cuBLAS"):
        _why(moved)


# ---- chapter 05 §4: the goals, best ÷ cuBLAS -----------------------------------------------------------

GOALS = "for size, goal in ((4096, 0.80), (8192, 0.90)):"
STAGE_FIT = "need = {S: pl.ALIGN_SLACK + S * cfg.stage_bytes"


def _goals(rec) -> dict:
    """05 §4's goals cell, then the check cell after the folded answer that follows it (the answer's
    stage arithmetic: the answer comes right after the figure it answers, reader 113)."""
    from types import SimpleNamespace
    stub = _pl_with_plot_stubbed(plot_depth=lambda *a, **k: None)
    plt = SimpleNamespace(show=lambda: None)                         # the figure itself: not a test's
    ns = run(GOALS, {"rec": rec, "res": rec.results, "pl": stub, "plt": plt, "notebook": notebook})
    return run(STAGE_FIT, ns)


def test_the_goal_cells_verdicts_and_operands(capsys):
    from asynctc import pipeline as pl
    rec = records.load("pipeline")
    _goals(rec)
    out = capsys.readouterr().out.splitlines()
    best, cub = pl.best_row(rec.results, "bfloat16", 8192, variants=True), pl.cublas_row(rec.results, "bfloat16", 8192)
    assert out[0].startswith("4096³ best ÷ cuBLAS: float16 ") and out[0].endswith("; goal 0.80: reached.")
    assert f"bfloat16 {notebook.ratio(best['tflops'], cub['tflops'])}; goal 0.90: reached." in out[1]
    slow = copy.deepcopy(rec)
    for r in slow.results["sweep"] + slow.results.get("variants", []):
        if r["kernel"] == "pipeline" and r["size"] == 4096:
            r["tflops"] *= 0.85                                      # a verdict, generated: it never raises
    _goals(slow)
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("goal 0.80: NOT reached.") and out[1].endswith("goal 0.90: reached.")


def _pl_with_plot_stubbed(**plots):
    """chapter 05's package with its figures replaced by no-ops (the figures are not a test's)."""
    from types import SimpleNamespace
    from asynctc import pipeline as pl
    names = ("best_row", "cublas_row", "DTYPES", "PipelineConfig", "ALIGN_SLACK", "STATIC_SMEM", "depth_sweep",
             "trace_of", "ktile_waits", "full_waits", "wait_floor", "loop_clocks_per_ktile",
             "sm_clocks_per_second", "trace_claims", "TRACE_CTAS", "show_ktile_reading", "ktile_clocks",
             "show_ktile_clocks")
    return SimpleNamespace(**{n: getattr(pl, n) for n in names}, **plots)


@pytest.mark.parametrize("key,value", [("smem_limit", 240 * 1024), ("smem_limit", 256 * 1024)],
                         ids=["240-KiB", "256-KiB"])
def test_the_stage_fit_check_refuses_a_record_that_moved(key, value):
    """05 §4's folded answer states 48 KiB a stage, 227 KiB a CTA, 194 and 242 KiB for S = 4 and 5:
    a record with another per-CTA limit fails the check cell before it."""
    moved = copy.deepcopy(records.load("pipeline"))
    moved.results[key] = value
    with pytest.raises(notebook.ClaimError, match="S = 4 takes 194"):
        _goals(moved)


# ---- chapter 05 §5's figure and answer; 05b §3's clocks per k-tile (moved from 05 §5, round 63) ------------

TRACE_FIGURE = "causes=True"                                  # the figure cell: trace and ring
TRACE = 'untraced = 2 * 128 * 256 * 64 / (tflops * 1e12)'   # the editable arithmetic, with its check cell


def _trace_cell(rec, trace=None, edit=None) -> dict:
    """05 §5's figure cell, then 05b §3's arithmetic cell with the check cell after it; ``edit``: (old,
    new) replaced in the arithmetic cell's text first, as a learner editing a line would."""
    from types import SimpleNamespace
    from asynctc.models import pipeline as mp
    from notebook_cells import cell
    pl = _pl_with_plot_stubbed(plot_trace_beside_model=lambda *a, **k: None)
    if trace is not None:
        pl.trace_of = lambda *a, **k: trace
    plt = SimpleNamespace(show=lambda: None)
    ns = run(TRACE_FIGURE, {"rec": rec, "res": rec.results, "pl": pl, "mp": mp, "plt": plt,
                            "notebook": notebook})
    text = cell(TRACE)
    if edit is not None:
        assert edit[0] in text
        text = text.replace(*edit)
    exec(compile(text, "05b §3's arithmetic cell", "exec"), ns)  # noqa: S102
    return ns


def test_the_trace_cell_holds_on_the_record(capsys):
    from asynctc import pipeline as pl
    rec = records.load("pipeline")
    ns = _trace_cell(rec)
    out = capsys.readouterr().out.splitlines()
    # 05 §5's figure cell prints the same three clocks and their two ratios on one line (its answer's "1.2×")
    k = ns["clocks"]
    assert out.pop(0) == (f"clocks per k-tile: traced {k['traced']:.0f}, untraced {k['untraced']:.0f}, model "
                          f"{k['model']:.0f}; traced ÷ untraced {k['traced'] / k['untraced']:.1f}×, untraced ÷ model "
                          f"{k['untraced'] / k['model']:.1f}×")
    assert f"{k['untraced'] / k['model']:.1f}×" == "1.2×" and f"{k['traced'] / k['untraced']:.1f}×" == "1.5×"
    assert out[0].startswith(f"record: {ns['tflops']:.0f} TFLOP/s, {rec.results['sm_count']} SMs")
    assert out[1].startswith("waits on full, k-tiles 5–11: consumer 0 ") and len(ns["waits0"]) == len(ns["waits1"]) == 7
    assert out[2] == (f"clocks per k-tile: traced {ns['traced']:.0f}, untraced {ns['untraced']:.0f}, model "
                      f"{ns['model']:.0f}; untraced ÷ model = {ns['untraced'] / ns['model']:.2f}")
    assert out[4].startswith("verdict: a k-tile takes longer than in the model")
    assert [line[:2] for line in out[5:]] == ["✓ "] * 4
    assert ns["traced"] > ns["untraced"] > ns["model"]
    # the visible lines compute what the guard reads from the record
    clocks = pl.ktile_clocks(rec.results, ns["trace"], ns["ring"])
    assert all(abs(clocks[k] / ns[k] - 1) < 1e-12 for k in ("traced", "untraced", "model"))
    assert ns["waits0"] == pl.full_waits(pl.trace_of(rec.results, "128x256x64/c2", stages=4))[1:]
    assert ns["floor"] == pl.wait_floor(pl.trace_of(rec.results, "128x256x64/c2", stages=4))
    with pytest.raises(ValueError, match="no wait on full began after"):
        pl.wait_floor(pl.trace_of(rec.results, "128x256x64/c2", stages=2))   # consumers never settle
    # "consumer 1 waits out each load; consumer 0 finds the data there": at k-tiles 7-11 consumer 1's
    # wait ends before consumer 0's begins, and begins within 200 clocks of the load's issue (the
    # producer's "tma" span starts at it)
    spans = pl.timeline_spans(pl.trace_of(rec.results, "128x256x64/c2", stages=4)["cta0"])
    at = {(s.lane, s.kind, s.k): (s.start, s.end) for s in spans}
    for k in range(7, 12):
        assert at["wg1", "wait_full", k][1] < at["wg0", "wait_full", k][0]
        assert abs(at["wg1", "wait_full", k][0] - at["tma", "tma", k][0]) < 200


def test_the_try_it_edit_flips_the_verdict_not_the_guard(capsys):
    """05b §3's "Try it" (moved from 05 §5): ``tflops`` set to 820 flips the visible verdict; the check cell reads the
    record, so it still passes (and a re-measurement still fails it: the tests below)."""
    rec = records.load("pipeline")
    _trace_cell(rec, edit=('tflops = pl.depth_sweep(res, "128x256x64/c2")[4]', "tflops = 820"))
    out = capsys.readouterr().out.splitlines()[1:]      # after 05 §5's figure cell's line
    assert out[4] == "verdict: the GPU keeps the model's pace: what the model leaves out costs little"
    assert [line[:2] for line in out[5:]] == ["✓ "] * 4


def _moved_trace(rec, loop=1.0, wait_at=None, consumer1_at=None):

    from asynctc import pipeline as pl
    trace = copy.deepcopy(pl.trace_of(rec.results, "128x256x64/c2", stages=4))
    trace["metrics"]["ctas"]["cta0"]["loop_cycles"] *= loop
    for s in trace["cta0"]["spans"]:
        if (s["lane"], s["kind"], s["k"]) == ("cta0/wg0", "wait_full", wait_at):
            s["end"] = s["start"] + 800                              # a real wait, 4× the floor
        if (s["lane"], s["kind"], s["k"]) == ("cta0/wg1", "wait_full", consumer1_at):
            s["end"] = s["start"] + 300                              # consumer 1 at the floor: no load waited out
    return trace


@pytest.mark.parametrize("loop,wait_at,consumer1_at,sentence", [
    (1 / 1.52, None, None, "about 1.5×"),            # a trace that cost nothing
    (2.0, None, None, "about 1.5×"),                 # twice the time
    (1.0, 6, None, "sit at the floor"),              # consumer 0 waited for its data at k-tile 6
    (1.0, None, 9, "consumer 1 waits out each load"),   # consumer 1 found k-tile 9 there
], ids=["free-trace", "slow-trace", "real-wait", "consumer-1-not-waiting"])
def test_the_trace_cell_refuses_a_record_that_moved(loop, wait_at, consumer1_at, sentence):
    rec = records.load("pipeline")
    with pytest.raises(notebook.ClaimError, match=sentence):
        _trace_cell(rec, _moved_trace(rec, loop, wait_at, consumer1_at))


ANSWER = "pl.trace_claims(**clocks"      # 05 §5's answer: its check cell (05b §3's has the same loop)


def _answer_check(rec, trace=None):
    """05 §5's figure cell, then the check cell under its answer (which guards "about 1.2× as long per
    k-tile as the model" and "the loads alone bring more than the math needs")."""
    from types import SimpleNamespace
    from asynctc.models import pipeline as mp
    from asynctc import pipeline as real
    pl = _pl_with_plot_stubbed(plot_trace_beside_model=lambda *a, **k: None, supply=real.supply)
    if trace is not None:
        pl.trace_of = lambda *a, **k: trace
    ns = run(TRACE_FIGURE, {"rec": rec, "res": rec.results, "pl": pl, "mp": mp, "records": records,
                            "plt": SimpleNamespace(show=lambda: None), "notebook": notebook})
    return run("**The answer.** Four stages are enough", ns)


def _untraced_faster(rec, factor):
    """A copy of the pipeline record whose untraced 128×256, S = 4 run is ``factor`` × as fast."""
    moved = copy.deepcopy(rec)
    for r in moved.results["sweep"]:
        if r.get("tile") == "128x256x64/c2" and r["kernel"] == "pipeline" and r["stages"] == 4:
            r["tflops"] *= factor
    return moved


def test_chapter_05s_answer_holds_and_refuses_a_record_that_moved():
    rec = records.load("pipeline")
    _answer_check(rec)
    trace = _moved_trace(rec, loop=1 / 1.2)
    moved = _untraced_faster(rec, 1.2)
    with pytest.raises(notebook.ClaimError, match="about 1.2× as long"):
        _answer_check(moved, trace)
    with pytest.raises(notebook.ClaimError, match="consumer 1 waits out each load"):
        _answer_check(rec, _moved_trace(rec, consumer1_at=9))


def test_the_worked_ktile_refuses_a_trace_that_moved():
    """05b §3's k-tile read event by event (moved from 05 §5): consumer 0 waiting for its data at
    the worked k-tile fails its guard."""
    from asynctc import pipeline as pl
    rec = records.load("pipeline")
    with pytest.raises(notebook.ClaimError, match="consumer 0 begins after it landed and waits at the floor"):
        pl.show_ktile_reading(_moved_trace(rec, wait_at=8), k=8)


def test_the_trace_cell_refuses_an_untraced_run_near_the_model():
    """Untraced 1.2× as fast (and the trace with it, so its cost stays 1.5×): a k-tile now takes
    about as long as in the model, and "about 1.2× as long" fails."""
    rec = records.load("pipeline")
    trace = _moved_trace(rec, loop=1 / 1.2)
    moved = _untraced_faster(rec, 1.2)
    with pytest.raises(notebook.ClaimError, match="about 1.2× as long"):
        _trace_cell(moved, trace)


def test_the_stage_fit_check_refuses_a_fourth_stage_that_gains_more():
    """05 §4's folded answer says S = 3 → 4 gains under 2 % in every size and type (newcomer 53: "is
    it still rising there?" went unanswered): a record whose S = 4 gains 5 % fails the check cell."""
    moved = copy.deepcopy(records.load("pipeline"))
    for r in moved.results["sweep"]:
        if r.get("tile") == "128x256x64/c2" and r.get("stages") == 4 and r["size"] == 8192:
            r["tflops"] *= 1.05
    with pytest.raises(notebook.ClaimError, match="S = 3 → 4 gains under 2 %"):
        _goals(moved)


# ---- chapter 06 §3: the rung ratios, editable, and the "Try it" flip --------------------------------

RUNGS = "split = t[3] / t[1]"


def _rungs(edit=None) -> str:
    from notebook_cells import cell
    from asynctc import warp_specialization as W
    text = cell(RUNGS)
    if edit is not None:
        text = text.replace(*edit, 1)
    rec = records.load("warp_specialization")
    exec(compile(text, "06 §3's arithmetic cell", "exec"), {"W": W, "res": rec.results, "notebook": notebook})  # noqa: S102


def test_the_rung_ratios_cell_holds_on_the_record_and_its_try_it_flips(capsys):
    """06 §3: the verdict comes from the visible ratios; the "Try it" line ``t[3] = 750`` flips it,
    while the check cell after it (W.lesson.claims on the record) still passes."""
    _rungs()
    out = capsys.readouterr().out.splitlines()
    assert out[2] == "verdict: the split and setmaxnreg bought nothing; the wide tile won rung 2's loss back", out
    assert [line[:2] for line in out[3:]] == ["✓ "] * 3
    first = 'for n in t))\n'
    _rungs((first, first + "t[3] = 750\n"))
    out = capsys.readouterr().out.splitlines()
    assert out[2].startswith("verdict: the split and setmaxnreg moved the speed × "), out
    assert [line[:2] for line in out[3:]] == ["✓ "] * 3
