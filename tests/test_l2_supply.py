"""Chapter 05 §5's supply measurement (asynctc.pipeline.supply_suite): the LOADS_ONLY build keeps the
ring and drops the math, the arithmetic of the bytes per clock, the table and the conclusion read
from the record, and the conclusion fails when a re-measurement flips it."""
import copy
from pathlib import Path

import pytest

from asynctc import suites
from asynctc.core import records, sass
from asynctc.pipeline.launch import compile_pipeline
from asynctc.pipeline import supply_suite as S
from fakes import assert_script_exits_2_without_a_gpu

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def rec():
    return records.load("l2_supply")


def _ops(loads_only: int) -> dict:
    cfg = S.config(**S.CONFIGS[-1])
    ck = compile_pipeline(cfg, hooks={"LOADS_ONLY": loads_only})
    return sass.opcode_counts(sass.disassemble(ck.cubin))


def test_loads_only_keeps_the_ring_and_drops_the_math_and_the_store():
    full, loads = _ops(0), _ops(1)
    grab = lambda c, p: sum(v for k, v in c.items() if k.startswith(p))  # noqa: E731
    assert grab(full, "HGMMA") > 0 and grab(loads, "HGMMA") == 0
    assert grab(full, "STG") > 0 and grab(loads, "STG") == 0
    for p in ("UTMALDG", "SYNCS"):
        assert grab(loads, p) == grab(full, p) > 0, p


def test_need_and_bytes_are_chapter_00s_arithmetic():
    big, small = S.config(**S.CONFIGS[-1]), S.config(**S.CONFIGS[0])
    assert S.need_bytes_per_clk(big) == 48 * 1024 / 1024          # 48 KiB per 1024 clocks
    assert S.need_bytes_per_clk(small) == 32 * 1024 / 512          # 32 KiB per 512 clocks
    assert S.bytes_moved(big) == 32 * 16 * 64 * 48 * 1024           # 512 CTAs × 64 k-tiles × 48 KiB
    assert S.per_clk_per_sm(132 * 2_000_000, 1.0, 2000.0, 132) == pytest.approx(1.0)


def test_rows_are_the_medians_of_the_record(rec):
    rows = S.supply_rows(rec.results)
    assert [(r["bm"], r["bn"], r["stages"]) for r in rows] == [(c["bm"], c["bn"], c["stages"]) for c in S.CONFIGS]
    for r in rows:
        raw = [x for x in rec.results["rows"] if (x["bm"], x["bn"], x["stages"]) == (r["bm"], r["bn"], r["stages"])]
        lo = sorted(x["supply"] for x in raw if x["loads_only"])
        assert min(lo) <= r["loads_only"] <= max(lo)
        for x in raw:   # supply = bytes / (time × clock × SMs), from the row's own numbers
            assert x["supply"] == pytest.approx(S.per_clk_per_sm(x["bytes"], x["median_ms"], x["sm_mhz"],
                                                                 rec.results["sm_count"]))
    assert S.supply_table(rec.results).count("\n") == len(rows)


def test_conclusion_holds_on_the_record_and_fails_when_flipped(rec):
    ok, text = S.conclusion(rec.results)
    assert ok and "L2 and TMA set its pace" in text and "chapter 06" in text
    fake = copy.deepcopy(rec.results)           # the best tile starved too: the sentence would lie
    for r in fake["rows"]:
        if r["bn"] == 256 and r["loads_only"]:
            r["supply"] = 0.5 * r["need"]
    assert not S.conclusion(fake)[0]
    ok, text = S.conclusion(rec.results, fitted_cap=42)
    assert ok and "not the measured supply" in text
    near = S.supply_rows(rec.results)[-1]["loads_only"]
    assert not S.conclusion(rec.results, fitted_cap=near)[0]   # a fit that equals the supply


def test_suite_is_registered_and_its_script_exits_2_without_a_gpu():
    suites._collect()
    assert suites.SUITES["l2_supply"] == (S.measure_supply, S.summarize_supply, "sm_90a")
    assert_script_exits_2_without_a_gpu(ROOT / "tools" / "gpu_l2_supply.py", "--out", "/tmp/asynctc_l2_supply_test",
                                        cwd=ROOT)
