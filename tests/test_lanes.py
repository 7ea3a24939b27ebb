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


def test_diagnosis_text_is_renamed_and_06_numbering_left_alone():
    assert lanes.in_text("wg1 passed full[0]; also blocked: consumer wg0") == \
        "consumer 1 passed full[0]; also blocked: consumer 0"
    assert lanes.in_text("wg 1 and wg == 0") == "wg 1 and wg == 0"
