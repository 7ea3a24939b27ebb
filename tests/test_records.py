"""Records: every committed measurement validates and carries its provenance; replay works."""
import json
import re

import pytest

from asynctc.core import records
from asynctc import suites


def committed():
    return sorted(records.data_dir().glob("*/*.json"))


def test_there_are_records():
    assert committed(), "data/ has no records"


@pytest.mark.parametrize("path", committed(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_record_schema(path):
    doc = json.loads(path.read_text())
    records.validate(doc)
    p = doc["provenance"]
    assert p["gpu"] and p["driver"] and p["nvrtc"] and p["date"][:4].isdigit()
    assert p["git_commit"] not in ("", "unknown")
    assert p["clocks_start"].get("sm_mhz") and p["clocks_end"].get("sm_mhz")
    assert "cuda-core" in p["packages"] and "asynctc" in p["packages"]
    assert doc["suite"] == path.stem


@pytest.mark.parametrize("field", records.REQUIRED_PROVENANCE)
def test_validate_names_missing_field(field):
    doc = json.loads(committed()[0].read_text())
    del doc["provenance"][field]
    with pytest.raises(records.RecordError, match=field):
        records.validate(doc)


def test_validate_rejects_empty_results_and_schema():
    doc = json.loads(committed()[0].read_text())
    with pytest.raises(records.RecordError, match="schema"):
        records.validate({**doc, "schema": 99})
    with pytest.raises(records.RecordError, match="results are empty"):
        records.validate({**doc, "results": {}})


def test_replay_in_replay_mode(monkeypatch):
    monkeypatch.setenv("ASYNCTC_MODE", "replay")
    called = []
    rec = records.load_or_measure("ceilings", lambda: called.append(1))
    assert not called and not rec.live
    assert rec.label().startswith("replayed: measured on ")


def test_missing_record_says_how_to_make_it(monkeypatch, tmp_path):
    monkeypatch.setenv("ASYNCTC_DATA", str(tmp_path))
    with pytest.raises(records.RecordError, match="asynctc record nosuch"):
        records.load("nosuch")


@pytest.mark.parametrize("suite", ["ceilings", "mma_sync"])
def test_summaries_of_committed_records(suite):
    rec = records.load(suite)
    _, summarize, _ = suites.SUITES[suite]
    text = summarize(rec)
    assert "replayed" in text and "TFLOP/s" in text


def test_mma_sync_record_has_checks_and_baseline():
    r = records.load("mma_sync").results
    assert r["checks"] and all(c["passed"] for c in r["checks"])
    assert any(x["kernel"] == "cuBLAS" for x in r["sweep"])
    assert r.get("peak"), "the mma.sync ceiling was not recorded"


def test_git_commit_uses_the_stamp_only_when_its_digest_matches(monkeypatch):
    """A tree copied to a GPU machine may carry no .git or a stale one: build/git_commit names the
    commit only while its source digest matches the sources; otherwise git (here: none) decides."""
    import subprocess as sp
    from pathlib import Path

    monkeypatch.delenv("ASYNCTC_GIT_COMMIT", raising=False)
    fake = type("R", (), {"returncode": 128, "stdout": "HEAD\n"})
    monkeypatch.setattr(sp, "run", lambda *a, **k: fake())
    root = records.PACKAGE_DIR.parent
    stamp = root / "build" / "git_commit"
    old = stamp.read_text() if stamp.is_file() else None
    digest = records.source_digest()
    try:
        stamp.parent.mkdir(exist_ok=True)
        stamp.write_text(f"abc1234 {digest}\n")
        assert records.git_commit() == "abc1234"
        stamp.write_text(f"abc1234-dirty {digest}\n")
        assert records.git_commit() == "abc1234-dirty"
        stamp.write_text("abc1234 0000000000000000\n")      # the sources changed since the stamp
        assert records.git_commit() == "unknown"
        stamp.write_text(f"not-a-sha {digest}\n")
        assert records.git_commit() == "unknown"
    finally:
        if old is None:
            stamp.unlink()
        else:
            stamp.write_text(old)


def test_source_digest_follows_the_sources(tmp_path, monkeypatch):
    d = records.source_digest()
    assert re.fullmatch(r"[0-9a-f]{16}", d) and d == records.source_digest()
