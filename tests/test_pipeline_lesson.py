"""Chapter 05's no-parity story (the ring model's ``ready_flag`` protocol) and the core lesson's
``show_*`` helpers (:mod:`asynctc.pipeline.lesson`): each prints its table and holds on the record,
and each guard fails loudly when the record stops supporting its sentence (CPU only)."""
import copy
import dataclasses

import pytest

from asynctc import pipeline as P
from asynctc.core import records
from asynctc.models import pipeline as mp


def test_ready_flag_is_not_a_find_the_bug_choice():
    assert "ready_flag" in mp.PROTOCOLS and "ready_flag" in mp.NO_PARITY
    assert "ready_flag" not in mp.VARIANTS


def test_ready_flag_reads_fill_one_before_it_lands():
    r = mp.simulate(2, 1, 1, 4, protocol="ready_flag")
    assert isinstance(r.diagnosis, mp.Race)
    assert (r.diagnosis.iteration, r.diagnosis.stage) == (2, 0)
    assert "holds k-tile 2 with 0 of" in r.diagnosis.what
    assert mp.simulate(2, 1, 1, 4).diagnosis is None             # parity: the same ring is safe


def test_ready_flag_race_shows_when_the_data_arrive_late():
    hw = mp.HardwareParams.from_records()
    late = dataclasses.replace(hw, tma_latency=5000.0)
    assert mp.simulate(4, 1, 2, 64, protocol="ready_flag").diagnosis is None   # hidden by timing
    r = mp.simulate(4, 1, 2, 64, params=late, protocol="ready_flag")
    assert isinstance(r.diagnosis, mp.Race) and r.diagnosis.iteration == 4
    assert mp.simulate(4, 1, 2, 64, params=late).diagnosis is None


def test_parity_story_rows():
    st = P.parity_story()
    rows = st["rows"]
    assert [r["stage"] for r in rows] == [0, 1, 0, 1] and [r["fill"] for r in rows] == [0, 0, 1, 1]
    assert all(r["parity"] >= r["landed"] for r in rows)
    assert rows[2]["flag"] < rows[2]["landed"] and rows[3]["flag"] is None


def test_show_parity_story_prints_the_break(capsys):
    P.show_parity_story()
    out = capsys.readouterr().out
    assert "← before its bytes" in out and "consumer 0 passed full[0]" in out


@pytest.fixture(scope="module")
def rec():
    return records.load("pipeline")


def test_helpers_hold_on_the_record(rec, capsys):
    res = rec.results
    w = P.show_widths(res)
    assert w["best"][256] > w["best"][128]
    c = P.show_model_check(res, rec)
    assert sum(r["fitted"] for r in c["rows"]) == 4 and c["worst_held"] < 0.15
    P.show_supply(records.load("l2_supply"))
    P.show_checks(rec)
    out = capsys.readouterr().out
    assert "held out  8192³ wait_group(0)" in out


def test_widths_guard_fails_when_the_record_flips(rec):
    res = copy.deepcopy(rec.results)
    for r in res["sweep"]:
        if r.get("tile") == "128x128x64/c2" and r["kernel"] == "pipeline":
            r["tflops"] *= 3                                     # 128×128 now beats 128×256
    with pytest.raises(AssertionError, match="does not support the sentence"):
        P.show_widths(res)


def test_supply_guard_fails_when_the_record_flips(monkeypatch):
    sup = records.load("l2_supply")
    rows = copy.deepcopy(P.supply.supply_rows(sup.results))
    for r in rows:
        if r["bn"] == 128:
            r["loads_only"] = 2 * r["need"]                      # the ring alone now feeds 128×128
    monkeypatch.setattr(P.supply, "supply_rows", lambda _res: rows)
    with pytest.raises(AssertionError, match="does not support the sentence"):
        P.show_supply(sup)


def test_smem_share():
    assert P.smem_share(128) == pytest.approx(1.0) and P.smem_share(256) == pytest.approx(0.75)


def _trace_with(rec, **moves):
    """The 128×256 S = 4 trace with CTA 0's spans moved: "lane:kind" (k-tile 8) or "lane:kind:k"
    → (start, end)."""
    trace = copy.deepcopy(P.trace_of(rec.results, "128x256x64/c2", stages=4))
    for s in trace["cta0"]["spans"]:
        key = f"{s['lane'].split('/')[-1]}:{s['kind']}"
        for name in (key + f":{s['k']}",) + ((key,) if s["k"] == 8 else ()):
            if name in moves:
                s["start"], s["end"] = moves[name]
    return trace


def test_ktile_reading_is_the_trace_in_words(rec, capsys):
    """05 §5's worked reading of k-tile 8: every number printed is the trace's own."""
    trace = P.trace_of(rec.results, "128x256x64/c2", stages=4)
    r = P.show_ktile_reading(trace, k=8)
    out = capsys.readouterr().out
    at = {(s.lane, s.kind): s for s in P.timeline_spans(trace["cta0"]) if s.k == 8}
    assert r["issue"] == at["tma", "tma"].start and r["c1_end"] == at["wg1", "wait_full"].end
    assert r["c0_wait"] == at["wg0", "wait_full"].end - at["wg0", "wait_full"].start
    assert r["floor"] == P.wait_floor(trace)
    for v in (r["issue"], r["c1_begin"], r["c1_end"], r["c0_begin"], r["c1_end"] - r["issue"],
              r["c0_begin"] - r["c1_end"], r["c0_wait"], r["c0_refill"], r["c1_refill"]):
        assert f"{v:.0f}" in out
    assert r["c0_refill"] == at["wg0", "wait_full"].start - [s for s in P.timeline_spans(trace["cta0"])
                                                            if (s.lane, s.kind, s.k) == ("wg0", "release", 6)][0].start
    # a timeline (reader 124: not one long sentence): one event a line, clock first, in clock order;
    # then the conclusion, one sentence on one line
    lines = out.splitlines()
    assert lines[0].startswith("k-tile 8, read from CTA 0's trace") and lines[1].split() == ["clock", "who", "what"]
    clocks = [float(line.split()[0]) for line in lines[2:-1]]
    assert len(clocks) == 5 and clocks == sorted(clocks) and clocks[0] == r["c1_begin"]
    assert all(len(line) <= 100 for line in lines[:-1]), lines
    assert lines[-1].startswith("Consumer 0 is late") and lines[-1].count(". ") == 0 and len(lines) == 8


@pytest.mark.parametrize("moves", [
    {"wg0:wait_full": (14000.0, 14216.0)},     # consumer 0 began before consumer 1 saw the data
    {"wg0:wait_full": (18061.0, 18861.0)},     # consumer 0 waited 800 clocks: not the floor
    {"wg1:wait_full": (13000.0, 13500.0)},     # consumer 1 passed before the load was issued
], ids=["consumer-0-early", "consumer-0-waits", "consumer-1-before-issue"])
def test_ktile_reading_refuses_a_trace_that_moved(rec, moves):
    from asynctc.core import notebook
    with pytest.raises(notebook.ClaimError, match="consumer 1 waits out the load"):
        P.show_ktile_reading(_trace_with(rec, **moves), k=8)


@pytest.mark.parametrize("moves", [
    {"wg0:release:6": (17700.0, 17700.0)},     # consumer 0's release-to-wait as short as consumer 1's
    {"wg1:release:6": (12500.0, 12500.0)},     # consumer 1's release-to-wait as long as consumer 0's
    {"wg0:mma:7": (15500.0, 18736.0)},         # consumer 0's math took longer than consumer 1's
], ids=["consumer-0-refills-fast", "consumer-1-as-slow", "consumer-0-math-longer"])
def test_ktile_reading_refuses_a_lag_not_from_the_refill(rec, moves):
    from asynctc.core import notebook
    with pytest.raises(notebook.ClaimError, match="consumer 0 lags for its refill"):
        P.show_ktile_reading(_trace_with(rec, **moves), k=8)
