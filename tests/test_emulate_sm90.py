"""The Hopper tile emulation (deep dive 06e): the course's pieces pass; a wrong swizzle, descriptor
field or parity fails with that piece named; the output is poisoned; the inputs are fresh."""

import numpy as np
import pytest

from asynctc.models import descriptors as d
from asynctc.models import emulate_sm90 as e


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
    r = e.emulate(swizzle_128b, d.encode, e.COURSE_PARITIES, stages=2)
    assert r.passed and set(r.used.values()) == {"yours"}


def test_output_is_poisoned():
    c, writes, diag, err = e._run(*e.random_inputs(64), 1, e.course_swizzle_128b, e.course_encode,
                                  (lambda k, s: 1, e.course_empty_parity))
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
