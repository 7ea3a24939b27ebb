"""The ``ws_store_ablation`` suite (asynctc.warp_specialization.store_suite) and its run script
tools/gpu_ch06_store.py, proven on the CPU: the variants are the rungs with one field changed, they
validate and compile for sm_90a; the script is thin and stops with exit 2 without a GPU; the suite
runs end to end on the emulated launch (float64 checks first, then the interleaved rounds); the
verdicts print a true sentence for either outcome; and chapter 06's cell reads the record when
there is one and says it is not recorded when there is none."""
import ast
import re
import types
import warnings
from pathlib import Path

import pytest

from asynctc import suites
from asynctc import warp_specialization as W
from asynctc.core import notebook, records
from asynctc.warp_specialization import launch as WL
from asynctc.warp_specialization import store_suite as SS

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "gpu_ch06_store.py"
CHAPTER = ROOT / "notebooks" / "src" / "06c_ladder_investigations.py"   # §9 (rungs 5–8)


def test_suite_is_registered_never_plots_and_the_script_is_thin():
    assert suites.SUITES["ws_store_ablation"] == (SS.measure_store, SS.summarize_store, "sm_90a")
    tree = ast.parse(Path(SS.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names} | {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not any("matplotlib" in m or "plots" in m or "figures" in m for m in imported), imported
    src = SCRIPT.read_text()
    assert "SS.measure_store(" in src and "SS.summarize_store" in src and "def measure" not in src


def test_variants_are_the_rungs_with_one_change():
    for dt in SS.DTYPES:
        r3, r5, r6, r7 = (W.RUNG_BY_NAME[n].make(dt) for n in ("ws_setmaxnreg", "persistent",
                                                                "cluster", "tma_store"))
        assert [SS.variant(n, dt) for n in SS.NAMES] == [
            r3, r3.replace(tma_store=True), r5, r5.replace(tma_store=True), r6, r7]
        store3, store5 = SS.variant("r3+store", dt), SS.variant("r5+store", dt)
        assert (store3.persistent, store3.cluster, store3.tma_store) == (False, 1, True)
        assert (store5.persistent, store5.cluster, store5.tma_store) == (True, 1, True)
        assert store5.replace(cluster=2) == r7                  # rung 7 is r5+store with clusters
        for n in SS.NAMES:
            SS.variant(n, dt).validate()                        # fits 227 KiB with the staging
    assert len({repr(j) for j in SS.store_jobs()}) == len(SS.store_jobs()) == 2 * len(SS.NAMES)


def test_the_new_variants_compile_for_sm90a_without_spills():
    with warnings.catch_warnings():
        warnings.simplefilter("error")                        # no dropped setmaxnreg, no spills
        for dt in SS.DTYPES:
            for n in ("r3+store", "r5+store"):
                ck = W.compile_ws(SS.variant(n, dt))
                assert ck.arch == "sm_90a" and ck.resources.spill_stores == 0
                assert "UTMASTG" in ck.sass() and "USETMAXREG" in ck.sass()


def test_script_exits_2_without_a_gpu(tmp_path):
    from fakes import assert_script_exits_2_without_a_gpu
    assert_script_exits_2_without_a_gpu(SCRIPT, "--out", tmp_path, cwd=ROOT)


# ---- the suite end to end on the emulated launch ------------------------------------------------

def test_suite_dry_run_on_the_emulated_launch(monkeypatch):
    """measure_store as the GPU runs it, at 512³ on the emulated launch (tests/test_tile_order.py:
    the kernel's documented tile order mirrored on the CPU): the float64 checks of every variant
    first, then the interleaved rounds, the summary and the text."""
    from asynctc.core import bench
    from asynctc.pipeline import launch as PL
    from asynctc.warp_specialization import limit_suite as LS
    from fakes import FakeArray, fake_timing
    from test_tile_order import _emulated
    _emulated(monkeypatch, [])
    for mod in (PL, LS):
        monkeypatch.setattr(mod, "DeviceArray", FakeArray)
    monkeypatch.setattr(WL, "CHECK_SHAPES", ((512, 768, 256),))     # small: emulated in float64
    monkeypatch.setattr(WL, "PERSISTENT_SHAPE", (1024, 1536, 128))

    fake_timing(monkeypatch)
    said = []
    res = SS.measure_store(said.append, sizes=(512,), dtypes=("bfloat16",), rounds=2)
    persistent = [n for n in SS.NAMES if SS.variant(n).persistent]
    assert len(res["checks"]) == len(SS.NAMES) + len(persistent) and all(c["passed"] for c in res["checks"])
    assert len(res["rows"]) == 2 * (1 + len(SS.NAMES))
    assert all(r["rel_err_rows"]["passed"] for r in res["rows"])
    assert [r.get("variant") for r in res["summary"]] == [None] + list(SS.NAMES)
    rec = types.SimpleNamespace(results=res, label=lambda: "emulated")
    text = SS.summarize_store(rec)
    assert "r5+store" in text and "+0.0%" in text and "Clusters add nothing measurable" in text


# ---- the verdicts: a true sentence for either outcome ---------------------------------------------

def _results(fracs: dict, cublas: float = 760.0) -> dict:
    """A record's results with each variant at ``fracs[name]`` of cuBLAS in every cell."""
    summary = []
    for size in SS.SIZES:
        for dt in SS.DTYPES:
            summary.append({"size": size, "dtype": dt, "kernel": "cuBLAS", "tflops": cublas})
            summary += [{"size": size, "dtype": dt, "kernel": "ours", "variant": n,
                         "tflops": fracs[n] * cublas, "of_cublas": fracs[n]} for n in SS.NAMES]
    return {"sizes": list(SS.SIZES), "dtypes": list(SS.DTYPES), "variants": list(SS.NAMES),
            "rounds": 3, "labels": {n: SS.variant(n).label() for n in SS.NAMES}, "checks": [],
            "rows": [], "summary": summary}


#: the chapter's story (the store pays on the persistent grid, clusters do not matter) ...
NEEDS_PERSISTENCE = _results({"r3": 0.89, "r3+store": 0.90, "r5": 0.91, "r5+store": 0.98,
                              "r6": 0.90, "r7": 0.98})
#: ... and the other outcome (the store pays alone; clusters cost)
STORE_ALONE = _results({"r3": 0.89, "r3+store": 0.96, "r5": 0.91, "r5+store": 0.98,
                        "r6": 0.90, "r7": 0.95})


def _printed(results, capsys):
    said = [notebook.verdict(ok, yes, no) for ok, yes, no in SS.store_verdicts(results)]
    assert capsys.readouterr().out.splitlines() == said
    return said


def test_verdicts_when_the_store_needs_the_persistent_grid(capsys):
    f = SS.store_findings(NEEDS_PERSISTENCE)
    assert f["cells"] == 4 and f["store_persistent"] == pytest.approx(0.98 / 0.91)
    store, cluster = _printed(NEEDS_PERSISTENCE, capsys)
    assert store.startswith("The TMA store pays mostly on the persistent grid: +7.7% there, +1.1%")
    assert cluster.startswith("Clusters add nothing measurable") and "1.000 of rung 5" in cluster


def test_verdicts_when_the_store_pays_alone(capsys):
    store, cluster = _printed(STORE_ALONE, capsys)
    assert store.startswith("The TMA store does not need the persistent grid: +7.9% with one tile "
                            "per CTA, +7.7% on the persistent grid") and "own time" in store
    assert cluster.startswith(f"Clusters cost {1 - 0.95 / 0.98:.1%} once") and \
        f"{0.95 / 0.98:.3f} of rung 5" in cluster
    gains = _results({"r3": 0.89, "r3+store": 0.96, "r5": 0.91, "r5+store": 0.95, "r6": 0.90,
                      "r7": 0.98})
    assert SS.store_verdicts(gains)[1][2].startswith(f"Clusters add {0.98 / 0.95 - 1:.1%} once")
    table = SS.store_table(STORE_ALONE)
    assert table.count("\n") == 1 + 4 + 1 and "+7.9%" in table and "0.960" in table
    assert table.splitlines()[-1] == SS.LEGEND and all(n.split("+")[0] in SS.LEGEND for n in SS.NAMES)


def test_the_frozen_predictions_are_quoted_from_the_notes():
    """Chapter 06 prints each verdict under the prediction docs/NOTES.md froze before the first run
    (a learner is not sent into the development log): word for word, in the verdicts' order."""
    notes = " ".join((ROOT / "docs" / "NOTES.md").read_text().split())
    head = notes.index("## Chapter 06: does the TMA store need the persistent grid?")
    frozen = notes[head:notes.index("- What happened", head)]
    assert f"written before any GPU run ({SS.PREDICTION_DATE})" in frozen
    for said in SS.PREDICTIONS:
        assert said in frozen, said
    for said, (_, yes, _no) in zip(SS.PREDICTIONS, SS.store_verdicts(NEEDS_PERSISTENCE)):
        assert yes.startswith(said.split('"')[1])       # the verdict it expected, in the same order
    src = CHAPTER.read_text()
    assert "docs/NOTES.md" not in src and "W.STORE_PREDICTIONS" in src


# ---- chapter 06's cell: it needs the record (shipped in data/), then with a fake one --------------

def _chapter_cell() -> str:
    cells = re.split(r"(?m)^# %%.*$", CHAPTER.read_text())
    # 06c §3 also loads the record, for W.show_epilogue (moved there from chapter 06 §3): not this cell
    (cell,) = [c for c in cells if 'records.load("ws_store_ablation")' in c and "W.show_epilogue(" not in c]
    return cell


def test_chapter_cell_without_and_with_the_record(tmp_path, monkeypatch, capsys):
    res = records.load("warp_specialization").results       # the cell's epilogue lines read its traces
    monkeypatch.setenv("ASYNCTC_DATA", str(tmp_path))
    ns = {"records": records, "W": W, "notebook": notebook, "res": res}
    with pytest.raises(records.RecordError):   # the record ships in data/: no branch without it
        exec(compile(_chapter_cell(), str(CHAPTER), "exec"), dict(ns))    # noqa: S102 - our source
    for results, first in ((NEEDS_PERSISTENCE, "Prediction held. The TMA store pays mostly"),
                           (STORE_ALONE, "Prediction wrong. The TMA store does not need the persistent grid")):
        prov = {k: "test" for k in records.REQUIRED_PROVENANCE}
        prov.update(gpu="NVIDIA H200", date="2026-12-03T00:00:00+00:00")
        records.save(records.Record("ws_store_ablation", prov, results), slug="h200")
        exec(compile(_chapter_cell(), str(CHAPTER), "exec"), dict(ns))    # noqa: S102
        out = capsys.readouterr().out
        assert "replayed: measured on NVIDIA H200" in out and first in out
        assert "Clusters" not in out                         # the store's verdict only
        assert "STSM" not in out and "Traced at" not in out  # SASS counts, epilogue cycles: 06b's
        said = SS.PREDICTIONS[0].split(" (")[0]              # the frozen words, without their numbers
        assert out.count(f"Predicted on {SS.PREDICTION_DATE}: {said}.") == 1


def test_prediction_marks_and_what_warp_specialization_bought():
    """Under the frozen prediction the chapter prints "Prediction held." or "Prediction wrong."
    with the sentence the record supports; its conclusion (ws_bought) holds only while the split
    alone stays level, the persistent grid adds little and the TMA store pays without it."""
    for results, mark in ((NEEDS_PERSISTENCE, "Prediction held. "), (STORE_ALONE, "Prediction wrong. ")):
        (ok, yes, no), (ok0, yes0, no0) = SS.prediction_verdicts(results)[0], SS.store_verdicts(results)[0]
        assert ok == ok0 and yes == "Prediction held. " + yes0 and no == "Prediction wrong. " + no0
        assert (yes if ok else no).startswith(mark)

    def lad(fr):
        return {"ladder": [{"size": s, "dtype": "float16", "rung": n, "of_cublas": f}
                           for s, row in fr.items() for n, f in enumerate(row, 1)]}
    level = {4096: (0.90, 0.76, 0.89, 0.89, 0.91), 8192: (0.95, 0.83, 0.95, 0.95, 0.95)}
    ok, text, nums = SS.ws_bought(lad(level), STORE_ALONE)
    assert ok and text.startswith("What warp specialization bought here: the split alone, nothing measurable "
                                "(rung 3 at 0.99–1.00× rung 1)")
    assert "the persistent grid it makes possible, 0.00–0.02 of cuBLAS (rung 5 over rung 4)." in text
    assert text.endswith("The big step, rung 7's TMA store, does not need that grid: +7.9% with one tile "
                         "per CTA, +7.7% on the persistent grid.")
    assert not SS.ws_bought(lad(level), NEEDS_PERSISTENCE)[0]            # the store needed the grid
    assert not SS.ws_bought(lad({**level, 4096: (0.90, 0.76, 0.95, 0.95, 0.96)}), STORE_ALONE)[0]
    assert not SS.ws_bought(lad({**level, 4096: (0.90, 0.76, 0.89, 0.89, 0.95)}), STORE_ALONE)[0]
    ok, text, _ = SS.ws_bought(lad(level))
    assert ok and text.endswith(". The TMA-store ablation is not recorded here.")

