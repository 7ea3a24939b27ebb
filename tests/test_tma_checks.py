"""The tma_checks suite (chapter 03's GPU-only checks, recorded for replay): its rows and the lines
the notebooks print, on the CPU with the kernels replaced by fakes that fail one box; the committed
record, when present, holds every check and each passed."""

import pytest

from asynctc import tma
from asynctc.core import records
from asynctc.tma import checks


class _Run:
    def __init__(self):
        self.steps = [{"step": i, "what": w, "barrier": b, "parity0_done": p0, "parity1_done": p1,
                       "waited_parity": None if r is None else int(i in (3, 6)), "wait_result": r, "stage_xor": 0, "timer_ns_low32": 0,
                       "as_expected": True} for i, (w, b, p0, p1, r) in enumerate(tma.LIFECYCLE)]
        self.boxes_ok, self.err, self.tx_bytes, self.passed = True, (0, 0x601), 2048, True


def test_suite_rows_and_lines_with_fake_kernels(monkeypatch):
    calls = []

    def fake(kind):
        def f(tile, shape, start, rng):
            calls.append((kind, repr(tile), tuple(start)))
            bad = kind == "store" and tile.dtype == "uint8" and tile.swizzle == 64 and shape == (48, 192)
            return tma.ByteCheck(f"{kind} {tile!r}", 512, 3 if bad else 0, 7 if bad else -1)
        return f
    monkeypatch.setattr(checks, "load_box", fake("load"))
    monkeypatch.setattr(checks, "store_box", fake("store"))
    monkeypatch.setattr(checks, "mbarrier_lifecycle", lambda rng: _Run())
    res = checks.measure_tma_checks()
    assert len(res["swizzle"]) == 2 * len(tma.swizzle_tiles())
    # the refused start (inner coordinate not a multiple of 16 bytes) is skipped, negative starts load only
    assert not any(c[2] == (-20, 120) and "uint8" in c[1] for c in calls)
    assert any(c[2] == (-20, 120) and "float16" in c[1] for c in calls)
    assert not any(c[0] == "store" and min(c[2]) < 0 for c in calls)
    assert {tuple(r["start"]) for r in res["oob"]} == set(checks.OOB_STARTS)
    lines = checks.swizzle_lines(res)
    n = len(res["swizzle"])
    assert lines[0].startswith(f"{n - 1}/{n} TMA loads and stores match")      # the one bad box counts
    u8 = next(l for l in lines[1:] if l.strip().startswith("uint8"))
    got, total = map(int, u8.rsplit(":", 1)[1].split("/"))
    assert got == total - 1
    assert "all passed: False" in checks.summarize_tma_checks(records.Record("tma_checks", {}, res))
    lc = "\n".join(checks.lifecycle_lines(res))
    assert "0x601" in lc and lc.count("✓") == len(tma.LIFECYCLE)
    assert "0x601 = mbarrier wait timed out (wait site 6)" in lc and "0x0 = no error" in lc
    assert "parity 1: timed out" in lc and "parity 0: passed" in lc
    assert all("✓" in l for l in checks.oob_lines(res))


def test_committed_record_holds_every_check():
    try:
        rec = records.load("tma_checks")
    except records.RecordError:
        pytest.skip("no tma_checks record committed yet")
    res = rec.results
    assert res["lifecycle"]["passed"] and len(res["lifecycle"]["steps"]) == len(tma.LIFECYCLE)
    assert len(res["swizzle"]) == 2 * len(tma.swizzle_tiles())
    assert all(r["passed"] for r in res["swizzle"] + res["oob"])
    assert "H200" in rec.label() or rec.provenance.get("gpu")


def test_show_lifecycle_raises_when_the_record_flips(capsys):
    rec = records.load("tma_checks")
    checks.show_lifecycle(rec)
    assert "✓" in capsys.readouterr().out
    bad = {**rec.results, "lifecycle": {**rec.results["lifecycle"], "boxes_ok": False}}
    with pytest.raises(AssertionError, match="PTX ISA"):
        checks.show_lifecycle(records.Record("tma_checks", rec.provenance, bad))
