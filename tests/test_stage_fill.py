"""Chapter 03's code exercise ch03.stage_fill (asynctc.tma.stage_fill): the kernel's own lines
compile and pass; the reader and the mbarrier model name what a wrong stage fill does. No GPU."""

import pytest

from asynctc.core.exercises import told
from asynctc.models.pipeline import MbarrierError
from asynctc.tma import stage_fill as sf

RIGHT = sf.kernel_lines()


def test_the_kernels_own_lines_compile_and_pass():
    assert "mbarrier_arrive_expect_tx(full_bar" in RIGHT and RIGHT.count("tma_load_2d(") == 2
    assert sf.judge(RIGHT) is None
    ck = sf.compile_fill(RIGHT)
    assert ck.cubin and "UTMALDG" in ck.sass()


def test_the_reader_extracts_bytes_destinations_and_coordinates():
    fill = sf.read(RIGHT, stage=0x8000, full_bar=0x48, kt=5, m0=384, n0=256)
    assert fill.expects == (sf.STAGE_BYTES,) and fill.arrivals == 1 and not fill.other_bars
    assert [(ld.map, ld.offset, ld.c0, ld.c1) for ld in fill.loads] == [
        ("ta", 0, 5 * sf.BK, 384), ("tb", sf.A_BYTES, 5 * sf.BK, 256)]


def test_the_mbarrier_model_on_byte_counts():
    boxes = (sf.A_BYTES, sf.B_BYTES)
    assert sf.tx_outcome((sf.STAGE_BYTES,), 1, boxes) == (2, 0)          # completes when B lands
    assert sf.tx_outcome((sf.A_BYTES,), 1, boxes)[0] == 1                # ... already when A lands
    assert sf.tx_outcome((0,), 1, boxes)[0] == 0                         # at the arrival itself
    assert sf.tx_outcome((sf.STAGE_BYTES + 16,), 1, boxes) == (None, 16)  # never
    with pytest.raises(MbarrierError):
        sf.tx_outcome((sf.STAGE_BYTES,), 2, boxes)                       # two arrivals on count 1


@pytest.mark.parametrize("body,words", [
    (RIGHT.replace("(BM + BN) * BK * 2", "16384 + 16384 + 16"), "the tx-count stays at 16"),
    (RIGHT.replace("(BM + BN) * BK * 2", "BN * BK * 2"), "wgmma) would read B's half"),
    (RIGHT.replace("(BM + BN) * BK * 2", "8192"), "partway through a box"),   # reader 30: a race, not only a hang
    (RIGHT.replace("stage + BM * BK * 2", "stage + 100"), "overlap"),
    (RIGHT.replace("tma_load_2d(stage,", "tma_load_2d(stage + 32768,"), "outside its 32768 bytes"),
    (RIGHT.replace("tma_load_2d(stage,", "tma_load_2d(stage + 16384,").replace("stage + BM * BK * 2,", "stage,"),
     "read A at the stage's start"),
    (RIGHT.replace("kt * BK, m0", "kt * BK * 2, m0"), "not bytes"),
    (RIGHT.replace("kt * BK, m0", "kt * BK, n0"), "A's rows start at m0"),
    (RIGHT + "mbarrier_arrive(full_bar);\n", "mbarrier model stops"),
    (RIGHT.replace("tb, full_bar", "tb, full_bar + 8"), "names another barrier than full_bar"),
    ("if (kt >= 0) { " + RIGHT + " }", "straight-line"),
    ("\n".join(RIGHT.splitlines()[:2]), "0 loads from tensor map tb"),
])
def test_each_wrong_kind_is_named(body, words):
    hint = told(sf.judge(body), rule=True)
    assert hint and words in hint, hint


def test_splice_keeps_the_kernels_lines_numbered():
    src = sf.splice("x;\n")
    assert '#line 1 "your lines"\nx;\n#line ' in src and src.count("fill_stage(") == 2


def test_two_mistakes_name_the_first_and_count_the_other():
    """Reader 53 made two (a byte count and swapped coordinates) and was told of one. The hint names
    the first to fix and says one more remains; a single mistake says nothing more."""
    swapped = RIGHT.replace("kt * BK, m0", "m0, kt * BK").replace("kt * BK, n0", "n0, kt * BK")
    two = told(sf.judge(swapped.replace("(BM + BN) * BK * 2", "BN * BK * 2")), rule=True)
    assert "would read B's half" in two and two.endswith("(And 1 more mistake, in a box's coordinates: fix this one first.)"), two
    one = told(sf.judge(swapped), rule=True)
    assert "coordinates are swapped" in one and "more mistake" not in one, one


def test_loads_before_expect_tx_are_correct_with_a_note_on_the_convention(capsys):
    """Loads first, then mbarrier_arrive_expect_tx: legal (a box that lands first drives the tx-count
    below zero, which the PTX ISA allows), so correct; the note says the convention is to arm first
    and why. The kernel's own order gets no note."""
    from asynctc.core import exercises
    lines = RIGHT.splitlines()
    loads_first = "\n".join(lines[1:] + lines[:1])
    assert sf.read(loads_first, **sf.SAMPLES[0]).loads_before_expect == 2
    assert sf.read(RIGHT, **sf.SAMPLES[0]).loads_before_expect == 0
    note = sf.judge(loads_first)
    assert isinstance(note, exercises.Accepted) and note == sf.LOADS_FIRST
    for words in ("legal", "arm first", "before expect_tx is posted", "below zero", "PTX ISA allows"):
        assert words in note, words
    assert exercises.check("ch03.stage_fill", loads_first)
    assert "correct — legal, but the convention is to arm first" in capsys.readouterr().out
