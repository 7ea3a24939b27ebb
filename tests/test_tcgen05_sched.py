"""Chapter 09 deep dive models (CPU): the persistent kernel's three-role protocol with two TMEM
accumulators on chapter 05's mbarrier machinery (deadlocks and races diagnosed), the CLC scheduler,
the block-scale factor layout in TMEM and one block-scaled tile emulated against float64 (a wrong
scale layout fails it), the labelled B200 prediction, the deep dive's exercises."""
import numpy as np
import pytest

from asynctc.core import exercises
from asynctc.models import block_scale as bs
from asynctc.models import pipeline
from asynctc.models import tcgen05_sched as S


def test_two_accumulators_overlap_the_epilogue():
    two = S.simulate_persistent(4, 6, 8, accumulators=2)
    one = S.simulate_persistent(4, 6, 8, accumulators=1)
    assert two.diagnosis is None and one.diagnosis is None
    assert two.total_cycles < one.total_cycles
    assert two.overlap_cycles() > one.overlap_cycles()
    assert all(isinstance(s, pipeline.Span) for s in two.spans)
    assert {s.lane for s in two.spans} >= {"tma", "producer", "mma", "epilogue"}


def test_missing_accumulator_empty_wait_is_a_race():
    d = S.simulate_persistent(4, 6, 8, protocol="missing_acc_empty_wait").diagnosis
    assert isinstance(d, pipeline.Race)
    assert d.iteration == 2 and "no completed phase of acc_empty[0] was waited for" in d.what


def test_early_release_is_a_race_even_when_timing_hides_it():
    d = S.simulate_persistent(4, 6, 8, protocol="early_acc_release").diagnosis
    assert isinstance(d, pipeline.Race) and "before its tcgen05.ld completed" in d.what


@pytest.mark.parametrize("proto,barrier,who", [
    ("acc_empty_parity_wrong", "acc_empty", "mma"),
    ("acc_empty_count_too_big", "acc_empty", "mma"),
    ("missing_empty_commit", "empty", "producer"),
])
def test_deadlocks_name_the_barrier(proto, barrier, who):
    d = S.simulate_persistent(4, 6, 8, protocol=proto).diagnosis
    assert isinstance(d, pipeline.Deadlock) and d.barrier == barrier and d.who_waits[0] == who


def test_bad_arguments_name_the_field():
    for kw, field in ((dict(stages=0), "stages=0"), (dict(accumulators=3), "accumulators=3"),
                      (dict(protocol="x"), "protocol='x'")):
        with pytest.raises(ValueError, match="^" + field):
            S.simulate_persistent(**kw)


def test_clc_takes_every_unit_once_and_balances():
    r = S.clc_schedule(12, 4, [1, 6] + [1] * 10)
    assert r.every_unit_once
    assert sum(len(u) for u in r.units.values()) == 12
    assert len(r.units[1]) < min(len(u) for c, u in r.units.items() if c != 1)   # the slow one takes fewer
    # each cluster asks once per unit it starts and stops after its first "not cancelled"
    for c, units in r.units.items():
        answers = [got for cc, _, got in r.requests if cc == c]
        assert len(answers) == len(units) and answers[-1] is None and None not in answers[:-1]
        assert units[1:] == answers[:-1]


def test_prediction_is_labelled_and_below_peak():
    p = S.predict_b200(8192, 8192, 8192)
    assert 0 < p["tflops"] < p["peak_tflops"]
    assert any("ASSUMPTION" in a for a in p["assumptions"])
    from asynctc import tcgen05 as T
    text = T.prediction_markdown()
    assert "PREDICTION" in text and "not a measurement" in text
    assert "modular.com" in T.anchors_markdown()


# ---- block scales -----------------------------------------------------------------------------

def test_block_scaled_idesc_bits():
    i = bs.BlockScaledIdesc("float8_e4m3fn", "float8_e5m2", 128, 64, sfa_id=3, sfb_id=2)
    v = i.encode()
    assert v == (2 << 4) | (0 << 7) | (1 << 10) | (8 << 17) | (1 << 23) | (1 << 27) | (3 << 29)
    assert bs.BlockScaledIdesc.decode(v) == i
    with pytest.raises(bs.BlockScaleError, match=r"^value='0x"):
        bs.BlockScaledIdesc.decode(v | 1 << 24)
    with pytest.raises(bs.BlockScaleError, match=r"^m=256"):
        bs.BlockScaledIdesc(m=256)
    with pytest.raises(bs.BlockScaleError, match=r"^sfa_id=4"):
        bs.BlockScaledIdesc(sfa_id=4)


def test_scale_cells_and_copy():
    assert bs.scale_cell(77, 6, 256) == (77, 257, 2)
    e = np.arange(128 * 8, dtype=np.uint8).reshape(128, 8)
    packed = bs.pack_scales(e)
    assert packed.shape == (128, 32) and packed[5, 16 + 2] == e[5, 6] and not packed[:, 4:16].any()
    tm = np.zeros((128, 512), np.uint32)
    bs.tcgen05_cp_128x128b(tm, packed[:, :16].reshape(-1).copy(), bs.SF_DESCRIPTOR, 300)
    assert (tm[9, 300] >> 8) & 0xFF == e[9, 1]


@pytest.mark.parametrize("n", [128, 64, 40])
def test_block_scaled_tile_matches_float64(n, rng):
    a, b, sfa, sfb = bs.random_block_problem(n, 256, rng)
    r = bs.emulate_block_scaled(a, b, sfa, sfb)
    assert r.passed, r.summary()
    assert np.isfinite(r.d).all() and (r.writes == 1).all()


@pytest.mark.parametrize("wrong", bs.WRONG)
def test_wrong_scale_layout_fails(wrong, rng):
    a, b, sfa, sfb = bs.random_block_problem(128, 256, rng)
    r = bs.emulate_block_scaled(a, b, sfa, sfb, wrong=wrong)
    assert not r.passed and r.wrong > r.d.size // 2


def test_block_scaled_model_refuses_what_it_does_not_cover(rng):
    a, b, sfa, sfb = bs.random_block_problem(128, 256, rng)
    with pytest.raises(bs.BlockScaleError, match=r"^b.shape\[1\]=256"):
        bs.emulate_block_scaled(a, np.hstack([b, b]), sfa, np.vstack([sfb, sfb]))
    with pytest.raises(bs.BlockScaleError, match=r"^K=192"):
        bs.emulate_block_scaled(a[:, :192], b[:192], sfa[:, :6], sfb[:, :6])


def test_deep_dive_exercises():
    assert exercises.expected("ch09.acc_columns", bn=192) == 512
    assert exercises.expected("ch09.acc_columns", bn=128, stages=4, block_scaled=True) == 512
    assert exercises.expected("ch09.acc_columns", bn=64) == 128
    assert [exercises.expected("ch09.acc_parity", t=t) for t in range(6)] == [1, 1, 0, 0, 1, 1]
    assert exercises.expected("ch09.scale_byte", kstep=3) == 3
