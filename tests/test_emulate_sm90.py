"""The Hopper tile emulation (deep dive 06e): the course's pieces pass; a wrong swizzle, descriptor
field or parity fails with that piece named; the output is poisoned; the inputs are fresh."""

import numpy as np
import pytest

from asynctc.models import descriptors as d
from asynctc.models import emulate_sm90 as e

#: A learner's stage fill (chapter 03), right, in its own words.
FILL = """
const u32 a_bytes = BM * BK * sizeof(half);
mbarrier_arrive_expect_tx(full_bar, a_bytes + BN * BK * 2);
tma_load_2d(stage, ta, full_bar, kt * BK, m0);
tma_load_2d(stage + a_bytes, tb, full_bar, kt * BK, n0);
"""


def test_course_pieces_pass_on_fresh_inputs():
    rng = np.random.default_rng()
    a, b = e.random_inputs(256, rng)
    assert np.unique(a).size > 1000 and np.unique(b).size > 1000       # not zeros, not ±1
    r = e.emulate(a=a, b=b, stages=3)
    assert r.passed, r.summary()
    assert (r.writes == 1).all() and r.check.worst <= 1
    assert set(r.used.values()) == {"the course's"} and not r.blame


def test_learner_pieces_equal_to_the_course_pass():
    def swizzle_128b(offset):
        row, chunk, byte = offset // 128, offset % 128 // 16, offset % 16
        return row * 128 + (chunk ^ row % 8) * 16 + byte
    def kstep_desc(desc0, s, major):
        return desc0 + (s * 32 >> 4)
    r = e.emulate(swizzle_128b, d.encode, e.COURSE_PARITIES, stages=2, kstep=kstep_desc,
                  stage_fill=FILL, producer_step=STEP, consumer_loop=LOOP)
    assert r.passed and set(r.used.values()) == {"yours"}


def test_output_is_poisoned():
    ps = {"swizzle": e.course_swizzle_128b, "encode": e.course_encode, "kstep": e.course_kstep,
          "stage_fill": FILL, "parities": (lambda k, s: 1, e.course_empty_parity)}
    c, writes, diag, err = e._run(*e.random_inputs(64), 1, ps)
    assert diag is not None and np.isnan(c).all() and not writes.any()


def test_wrong_swizzle_is_named():
    r = e.emulate(swizzle=lambda o: o)
    assert not r.passed and r.blame == ["swizzle"]
    assert "right only where row % 8 == column % 8" in r.summary()
    assert "swizzle is wrong" in r.summary()


def test_wrong_sbo_is_named():
    r = e.emulate(encode=lambda st, lbo, sbo, sw: d.encode(st, lbo, sbo // 2, sw))
    assert not r.passed and r.blame == ["encode"]
    assert "sbo 512 (should be 1024)" in r.why["encode"]


def test_rejected_descriptor_stops_with_encode_named():
    r = e.emulate(encode=lambda st, lbo, sbo, sw: d.encode(st, lbo, sbo, sw) | 1 << 47)
    assert r.error is not None and r.blame == ["encode"] and "rejects" in r.summary()


@pytest.mark.parametrize("parities", [
    (lambda k, s: k % 2, e.course_empty_parity),
    (e.course_full_parity, lambda t, s: (t // s) % 2)])
def test_wrong_parity_stops_with_the_ring_diagnosis(parities):
    r = e.emulate(parities=parities)
    assert r.diagnosis is not None and r.check is None and r.blame == ["parities"]
    assert "STOPPED by the ring model" in r.summary()


def test_two_wrong_pieces_are_both_named():
    r = e.emulate(swizzle=lambda o: o, encode=lambda st, lbo, sbo, sw: d.encode(st, lbo, sbo // 2, sw))
    assert sorted(r.blame) == ["encode", "swizzle"]


def test_where_wrong_periodic_rows():
    bad = np.zeros((128, 128), bool)
    bad[np.arange(128) % 8 != 0] = True
    assert e.where_wrong(bad) == "14336 of 16384 elements wrong, rows 1–7 of every 8, every column"


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="k=100"):
        e.emulate(k=100)
    with pytest.raises(ValueError, match="stages=9"):
        e.emulate(stages=9)


def test_a_wrong_kstep_is_named_with_chapter_04s_diagnosis():
    r = e.emulate(kstep=lambda desc0, s, major: desc0 + s)               # elements >> 4, not bytes >> 4
    assert not r.passed and r.blame == ["kstep"] and "kstep is wrong" in r.summary()
    assert "advanced by elements, not bytes" in r.why["kstep"]
    r = e.emulate(kstep=lambda desc0, s, major: desc0 + s * 32)          # bytes unshifted: rejected
    assert r.error is not None and r.blame == ["kstep"] and "STOPPED: kstep" in r.summary()


def test_a_kstep_that_returns_junk_stops_with_kstep_named():
    r = e.emulate(kstep=lambda desc0, s, major: None)
    assert r.error is not None and r.blame == ["kstep"] and "STOPPED: kstep" in r.summary()


@pytest.mark.parametrize("bad, why", [
    (FILL.replace("a_bytes + BN * BK * 2", "a_bytes"), "phase 0 completes when only"),
    (FILL.replace("stage + a_bytes", "stage"), "overlap"),
    (FILL.replace("kt * BK, n0", "n0, kt * BK"), "swapped")])
def test_a_wrong_stage_fill_fails_the_tile_and_is_named(bad, why):
    r = e.emulate(stage_fill=bad)
    assert not r.passed and r.blame == ["stage_fill"], r.summary()
    assert why in r.why["stage_fill"]


def test_too_many_bytes_announced_stops_the_tile_wait_never_passes():
    r = e.emulate(stage_fill=FILL.replace("BN * BK * 2", "BN * BK * 4"))
    assert r.error is not None and r.blame == ["stage_fill"] and "never passes" in r.summary()


#: Chapter 05's producer step and chapter 06's consumer loop, right, as a learner may write them.
STEP = """
if (producer && t < T) {
  if (empty.wait(ts, tp ^ 1u, wg, t))
    load_stage(ta, tb, base + ts * kStageBytes, full[ts], t, m0, n0);
}
"""
LOOP = """
full.wait(pos.stage, pos.phase, wg, k);
mma_ktile(acc, wgmma_desc_advance(da0, pos.stage * kStageBytes),
          wgmma_desc_advance(db0, pos.stage * kStageBytes));
wgmma_wait_group<1>();
if (k > 0 && elected) empty.arrive(prev);
prev = pos.stage;
pos.advance();
"""


@pytest.mark.parametrize("stages", [2, 3])
def test_a_right_producer_step_and_consumer_loop_drive_the_ring_and_pass(stages):
    r = e.emulate(producer_step=STEP, consumer_loop=LOOP, stages=stages)
    assert r.passed, r.summary()
    assert r.used["producer_step"] == r.used["consumer_loop"] == "yours"
    assert "producer_step: yours" in r.summary() and "consumer_loop: yours" in r.summary()
    order = e.ring_order(stages, producer_step=STEP, consumer_loop=LOOP)
    assert sum(ln.startswith("load") for ln in order) == 4 and sum("reads" in ln for ln in order) == 8
    # 06e §4's listing: the reads between two loads by consumer number (the model's wg1 reads first)
    reads = [ln for ln in order if "reads" in ln]
    assert [ln.split(" reads")[0] for ln in reads] == ["consumer 0", "consumer 1"] * 4
    assert order[:3] == ["load k-tile 0 -> stage 0", "consumer 0 reads k-tile 0 from stage 0",
                         "consumer 1 reads k-tile 0 from stage 0"]


@pytest.mark.parametrize("kw, piece, words", [
    (dict(consumer_loop=LOOP.replace("pos.phase, wg", "pos.phase ^ 1u, wg")), "consumer_loop", "race"),
    (dict(consumer_loop=LOOP.replace("if (k > 0 && elected) empty.arrive(prev);", "")),
     "consumer_loop", "deadlock"),
    (dict(producer_step=STEP.replace("tp ^ 1u,", "tp,")), "producer_step", "deadlock"),
    (dict(producer_step=STEP.replace("if (empty.wait(ts, tp ^ 1u, wg, t))", "")), "producer_step",
     "race"),
    (dict(producer_step=STEP, consumer_loop=LOOP.replace("pos.phase, wg", "pos.phase ^ 1u, wg")),
     "consumer_loop", "race")])
def test_a_wrong_producer_step_or_consumer_loop_stops_the_ring_and_is_named(kw, piece, words):
    r = e.emulate(**kw)
    assert r.diagnosis is not None and r.check is None and r.blame == [piece], r.summary()
    assert f"STOPPED by the ring model ({piece})" in r.summary() and words in r.summary()
    with pytest.raises(ValueError, match=words):
        e.ring_order(**kw)


def test_a_loop_the_reader_cannot_follow_stops_with_its_piece_named():
    r = e.emulate(consumer_loop=LOOP.replace("pos.advance();", "frobnicate();"))
    assert r.error is not None and r.blame == ["consumer_loop"] and "STOPPED: consumer_loop" in r.summary()


def test_a_piece_broken_on_purpose_is_not_called_yours():
    """06e breaks pieces on purpose: the summary labels them so, never "yours"."""
    r = e.emulate(swizzle=lambda o: o, on_purpose="swizzle", k=64)
    assert r.used["swizzle"] == "broken on purpose" and "swizzle: broken on purpose" in r.summary()
    assert "swizzle: yours" not in r.summary() and r.blame == ["swizzle"]
    r = e.emulate(encode=e.course_encode, on_purpose={"encode": "LBO = 0 on purpose"}, k=64)
    assert "encode: LBO = 0 on purpose" in r.summary() and r.passed
    assert e.emulate(swizzle=e.course_swizzle_128b, k=64).used["swizzle"] == "yours"
    with pytest.raises(ValueError, match="pieces are"):
        e.emulate(on_purpose="swizle")
