"""asynctc.models.lanes: one numbering of warpgroups, as every chapter shows it."""
from asynctc.models import lanes


def test_lane_keys_get_the_learners_names():
    assert [lanes.lane_name(k) for k in ("wg0", "wg1", "tma", "producer")] == \
        ["consumer 0", "consumer 1", "TMA", "producer"]
    assert lanes.lane_name("cta0/wg1") == "cta0/consumer 1" and lanes.lane_name("cta1.wg0") == "cta1.consumer 0"
    assert lanes.lane_name("epilogue") == "epilogue"


def test_chapter_06_traces_are_keyed_by_hardware_warpgroup():
    assert lanes.lane_name("cta0/wg1", producer_warpgroup=True) == "cta0/consumer 0"
    assert lanes.lane_name("cta0/wg2", producer_warpgroup=True) == "cta0/consumer 1"
    assert lanes.lane_name("cta0/tma", producer_warpgroup=True) == "cta0/producer"
    assert lanes.hardware_consumer(2, True) == 1 and lanes.hardware_consumer(1, False) == 1


def test_a_deadlock_names_who_waits_as_the_learner_reads_them():
    """The ring model keeps its lane keys in ``who_waits``; every diagnosis shows ``waiting``."""
    from asynctc.models.pipeline import Deadlock, simulate
    d = Deadlock(4, "full", 0, 0, ("wg0", "wg1", "producer"), "")
    assert d.waiting == ("consumer 0", "consumer 1", "producer") and d.who_waits[0] == "wg0"
    run = simulate(2, 1, 2, 6, parities=(lambda k, s: (k // s) % 2, lambda t, s: 0))
    assert isinstance(run.diagnosis, Deadlock), run.diagnosis
    assert all(not w.startswith("wg") for w in run.diagnosis.waiting)
