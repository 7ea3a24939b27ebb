"""The chapters' "Try it" levers (01b, 02b, 03, 07, 08): each lever's output for two parameter values
differs the way the sentence before its cell says it does."""

import numpy as np
import pytest

from asynctc import cp_async, fp8
from asynctc.models import banks, fragments
from asynctc.pitfalls import ordering


def test_01_lane_rows_follow_g_columns_follow_t():
    # "rows move with g = LANE // 4, the columns with t = LANE % 4"
    assert "a0 = A[0, 0:2]" in fragments.lane_table(0)
    t4, t13 = fragments.lane_table(4), fragments.lane_table(13)
    assert "a0 = A[1, 0:2], a1 = A[9, 0:2]" in t4 and "b0 = B[0:2, 1]" in t4
    assert "a0 = A[3, 2:4], a1 = A[11, 2:4]" in t13 and "c0 = C[3, 2]" in t13
    # every register of every lane is read off the fragment models: 8 + 4 + 4 elements per lane
    for lane in range(32):
        lines = fragments.lane_table(lane).splitlines()
        assert [ln.count("=") for ln in lines[1:]] == [4, 2, 4]
    with pytest.raises(ValueError, match="0..31"):
        fragments.lane_table(32)


def test_02_smaller_tile_needs_more_copy_traffic():
    # "Set TILE = (64, 64), then (256, 256): how much copying does the same speed need?"
    def tbps(text):
        return float(text.splitlines()[1].split(" copy ")[1].split(" TB/s")[0])
    t128 = cp_async.tile_traffic(128, 128, tflops=400.0, copy_gbps=4000.0)
    t64 = cp_async.tile_traffic(64, 64, tflops=400.0, copy_gbps=4000.0)
    t256 = cp_async.tile_traffic(256, 256, tflops=400.0, copy_gbps=4000.0)
    assert "64 FLOP per byte" in t128 and tbps(t128) == pytest.approx(6.2, abs=0.05)
    assert tbps(t64) == pytest.approx(2 * tbps(t128), abs=0.1)
    assert tbps(t256) == pytest.approx(tbps(t128) / 2, abs=0.1)
    assert "L2 must serve the rest" in t128 and "DRAM alone could feed it" in t256
    with pytest.raises(ValueError):
        cp_async.tile_traffic(0, 128, tflops=1.0, copy_gbps=1.0)


def test_02_tile_traffic_reads_the_records():
    assert "TFLOP/s (the best cp.async rung)" in cp_async.tile_traffic(128, 128)


def _waves(text):
    return [int(w) for w in text.splitlines()[2].split(":")[1].split("(")[0].split()]


def test_03_swizzle_zero_brings_back_the_8_way_conflict():
    on, off = banks.chunk_columns(128, 128), banks.chunk_columns(0, 128)
    assert _waves(on) == [1] * 8 and "conflict-free" in on
    assert _waves(off) == [8] * 8 and "8-way conflict" in off
    assert "groups of chunk 0 in rows 0–7: 0 1 2 3 4 5 6 7" in on
    assert _waves(banks.chunk_columns(0, 64)) == [4] * 4            # 64-byte rows, no swizzle: 4-way
    assert _waves(banks.chunk_columns(64, 64)) == [1] * 4
    assert _waves(banks.chunk_columns(0, 32)) == [2] * 2
    assert banks.chunk_columns(32, 128).startswith("refused: ")     # a row wider than the span


def test_07_larger_block_loses_the_outliers_neighbours():
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((256, 512)) * np.exp(rng.uniform(-4, 4, (256, 1)))).astype(np.float32)
    a[3, 200] = 9000.0

    def row(text, name):
        return [float(v) for v in next(ln for ln in text.splitlines() if ln.startswith(name)).split()[-2:]]
    t32, t128, t512 = (fp8.block_error_table(a, b) for b in (32, 128, 512))
    worst = [row(t, "worst")[1] for t in (t32, t128, t512)]
    assert worst[0] < worst[1] < worst[2] == 1.0                   # flushed to 0 with a row's scale
    assert row(t512, "elements flushed")[1] > row(t128, "elements flushed")[1] == 0
    assert row(t128, "elements flushed")[0] > 1000                 # one scale for the tensor
    with pytest.raises(fp8.FP8Error):
        fp8.block_error_table(a, 100)


def test_08_dropping_a_step_names_its_rule():
    program = ordering.PROGRAMS["init"]["correct"] + ordering.PROGRAMS["proxy"]["correct"]
    drop = lambda d: ordering.drop_report(program, d).splitlines()[1]   # noqa: E731
    assert drop(None) == "all steps: no hazard, every rule holds"
    # numbered as the full program, whichever step is gone
    assert drop(5).startswith("without step 5 (fence_proxy): step 7 (tma_store out) breaks the proxy rule")
    assert "proxy rule" in drop(6) and "init rule" in drop(1) and "init rule" in drop(2)
    assert "no hazard" in drop(3) and "no hazard" in drop(8)
    # a step no rule needs still teaches: one line says what it is for and why no rule asks for it
    report = lambda d: ordering.drop_report(program, d).splitlines()[1:]   # noqa: E731
    assert len(report(5)) == 1 and len(report(None)) == 1
    for d in (3, 4, 7, 8):
        verdict, why = report(d)
        assert "no hazard" in verdict and why.startswith(f"  step {d} "), why
    assert "order, not values" in report(4)[1] and "never leaves shared memory" in report(7)[1]
    assert "does not model" in report(8)[1]
    assert set(ordering.WITHOUT) == set(ordering.OPS)
    with pytest.raises(IndexError):
        ordering.drop_report(program, 9)
    # the lever's program is not exercise 2's: no bulk_wait_read anywhere in it
    assert all(op != "bulk_wait_read" for op, _ in program)
