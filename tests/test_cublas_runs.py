"""Chapter 00 §2: cuBLAS's 4096³ fp16 figure in every record beside the chapter's, read from the
timed lists only (why_async.cublas_4096_runs)."""

import json
from types import SimpleNamespace

import pytest

from asynctc import why_async
from asynctc.core import records


def _write(folder, name, results):
    """A whole record (schema, provenance, results) as ``records.load`` reads it."""
    folder.mkdir(parents=True, exist_ok=True)
    prov = dict.fromkeys(records.REQUIRED_PROVENANCE, "test")
    doc = {"suite": name, "schema": records.SCHEMA, "provenance": prov, "results": results}
    records.validate(doc)
    (folder / f"{name}.json").write_text(json.dumps(doc))


def test_reads_each_records_timed_cublas_and_takes_the_median(tmp_path, monkeypatch):
    monkeypatch.setenv("ASYNCTC_DATA", str(tmp_path))
    gpu = tmp_path / "h200"
    _write(gpu, "why_async", {"cublas": [
        {"dtype": "float16", "size": 4096, "tflops": 760.0},
        {"dtype": "float16", "size": 4096, "tflops": 770.0},
        {"dtype": "float16", "size": 4096, "tflops": 765.0},
        {"dtype": "float16", "size": 2048, "tflops": 600.0},          # another size
        {"dtype": "bfloat16", "size": 4096, "tflops": 700.0}]})       # another dtype
    _write(gpu, "pipeline", {"sweep": [
        {"kernel": "cuBLAS", "dtype": "float16", "m": 4096, "n": 4096, "k": 4096, "tflops": 751.5},
        {"kernel": "ours", "dtype": "float16", "m": 4096, "n": 4096, "k": 4096, "tflops": 500.0}]})
    _write(gpu, "summary_only", {"cublas_tflops": 999.0,           # a summary: not a timed list
                                      "rows": [{"kernel": "cuBLAS", "dtype": "float16", "size": 8192,
                                                "tflops": 800.0}]})
    rec = SimpleNamespace(path=gpu / "why_async.json", suite="why_async")
    assert why_async.cublas_4096_runs(rec) == {"pipeline": 751.5, "why_async": 765.0}


def test_a_malformed_record_beside_it_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("ASYNCTC_DATA", str(tmp_path))
    gpu = tmp_path / "h200"
    _write(gpu, "ceilings", {"cublas": [{"dtype": "float16", "size": 4096, "tflops": 760.0}]})
    (gpu / "bare.json").write_text(json.dumps({"results": {"cublas": [
        {"dtype": "float16", "size": 4096, "tflops": 999.0}]}}))      # no schema, no provenance
    with pytest.raises(records.RecordError):
        why_async.cublas_4096_runs(SimpleNamespace(path=gpu / "ceilings.json", suite="ceilings"))


def test_the_committed_records_agree_within_a_few_percent():
    runs = why_async.cublas_4096_runs(records.load("ceilings"))
    assert len(runs) >= 3 and "ceilings" in runs
    assert max(runs.values()) / min(runs.values()) < 1.06
    assert all(600 < v < 900 for v in runs.values()), runs


@pytest.mark.parametrize("f", [0.9, 1.1])
def test_the_chapter_cell_refuses_a_spread_past_six_percent(f, monkeypatch, capsys):
    from asynctc.core import notebook
    from notebook_cells import cell
    real = why_async.cublas_4096_runs

    def moved(rec):
        out = dict(real(rec))
        out[next(iter(out))] *= f
        return out
    monkeypatch.setattr(why_async, "cublas_4096_runs", moved)
    rec = records.load("ceilings")
    g = max(rec.results["cublas"], key=lambda r: r["tflops"])       # §2's best GEMM, printed beside it
    with pytest.raises(notebook.ClaimError):
        exec(compile(cell("why_async.cublas_4096_runs(rec)"), "00", "exec"),  # noqa: S102
             {"why_async": why_async, "notebook": notebook, "rec": rec, "g": g, "tf": g["tflops"]})


def test_a_record_measured_now_counts_with_its_own_run(tmp_path, monkeypatch):
    monkeypatch.setenv("ASYNCTC_DATA", str(tmp_path))
    gpu = tmp_path / "h200"
    _write(gpu, "ceilings", {"cublas": [{"dtype": "float16", "size": 4096, "tflops": 760.0}]})
    _write(gpu, "pipeline", {"cublas": [{"dtype": "float16", "size": 4096, "tflops": 750.0}]})
    assert records.available("ceilings") == [gpu / "ceilings.json"]
    live = SimpleNamespace(path=None, suite="ceilings",
                           results={"cublas": [{"dtype": "float16", "size": 4096, "tflops": 771.0}]})
    assert why_async.cublas_4096_runs(live) == {"ceilings": 771.0, "pipeline": 750.0}
