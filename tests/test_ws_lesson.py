"""Chapter 06 §3's cells and deep dive 06c §2's visible ladder loop with its check cell, and the helpers of
asynctc.warp_specialization.lesson; each holds on the recorded data and raises ClaimError as soon as
the record stops supporting a sentence it guards (so the prose around the cell cannot go false quietly)."""
import copy
import re

import pytest

from asynctc import warp_specialization as W
from asynctc.core import notebook, records
from asynctc.core.notebook import ClaimError
from asynctc.warp_specialization import lesson, store_suite
from notebook_cells import run

#: 06c §2's ladder loop, moved from 06 §3 (its check cell is joined to it)
LADDER_CELL = "W.lesson.ADDS[n]"


@pytest.fixture(scope="module")
def res():
    return records.load("warp_specialization").results


def _ladder_cell(res):
    return run(LADDER_CELL, {"W": W, "notebook": notebook, "res": res})


def test_each_helper_is_a_marked_guard():
    assert W.show_epilogue.__name__ in notebook.GUARDS
    assert not hasattr(W, "show_ladder_steps")      # 06 §3 prints its ladder in a visible loop


def test_the_ladder_loop_holds_on_the_record(res, capsys):
    _ladder_cell(res)
    out = capsys.readouterr().out
    assert all(f"rung {n}: {lesson.ADDS[n]}" in out for n in range(1, 9))
    assert "× 1.16 over rung 2" in out and "rung 1: chapter 05's kernel" in out
    assert "rung 3 / rung 1" in out               # the lines under it divide the steps the answer reads


def test_the_rung_list_says_every_change_and_the_split_alone(monkeypatch):
    """Readers 121–124: 06 §3 said "each later rung adds one step", but rung 2 also halves the tile
    and rung 3 changes three things. The list is read from the configs; 06 §3's sentences after it
    ("rung 2 makes three changes …, rung 3 makes three …, rung 3 against rung 1 differs by the split
    and setmaxnreg") lean on these lines (readers 125–127: they once said "two changes")."""
    from asynctc.warp_specialization import ladder
    assert lesson.rung_changes.__name__ in notebook.GUARDS
    lines = lesson.rung_changes().splitlines()
    assert [l.split(":")[0] for l in lines[:8]] == ["rung 1"] + [f"rung {n} (from {b})" for n, b in lesson.OVER.items()]
    assert lines[1].split(": ", 1)[1].split("; ") == [
        "the split (a producer warpgroup loads)", "1 consumer (was 2)", "tile 128×128 (was 128×256)"]
    assert lines[2].split(": ", 1)[1].split("; ") == [
        "2 consumers (was 1)", "tile 128×256 (was 128×128)", "setmaxnreg 40/232"]
    assert lines[-1].startswith("rung 3 against rung 1: same tile, stages and 2 computing warpgroups; only "
                                "the split (a producer warpgroup loads) and setmaxnreg 40/232 differ")
    three = ladder.RUNGS[2]
    wide = three._replace(make=lambda dt: three.make(dt).replace(stages=3))     # rung 3 off rung 1's stages
    monkeypatch.setattr(ladder, "RUNGS", ladder.RUNGS[:2] + (wide,) + ladder.RUNGS[3:])
    with pytest.raises(ClaimError, match="rung 3 keeps rung 1's tile"):
        lesson.rung_changes()


def test_06s_check_cell_runs_the_claims_its_note_leans_on(res):
    """06 §3 keeps only the note's claims (``core=True``); 06c §2's loop checks them all."""
    every, core = ([s for s, _, _ in lesson.claims(res, core=c)] for c in (False, True))
    assert set(core) < set(every) and len(core) == 3
    assert not any("four ladders" in s or "rung 5 gains" in s for s in core)
    assert all(ok for _, ok, _ in lesson.claims(res))


def test_the_bands_table_reads_each_rung_against_its_band(res):
    """Readers saw rung 2's bar inside its orange band (4096³ fp16) while the table, pooling all four
    ladders, said "missed": each row gives the figure's ladder's verdict first, then the count."""
    text = W.prediction_table(res).splitlines()
    assert "figure: 4096³ fp16" in text[0] and "all 4 ladders (2 sizes, 2 types)" in text[0]
    assert "measured as" in text[0]   # rungs 2–3 are shares of cuBLAS, 4–8 steps: each row names its measure
    assert len(text) == 1 + 7 and [int(l.split()[0]) for l in text[1:]] == list(range(2, 9))
    for line in text[1:]:
        p = W.prediction_check(res, int(line.split()[0]))
        fig_text, side = p["each"][4096, "float16"]
        kind, ref = W.PREDICTION_BANDS[p["rung"]][:2]
        unit = "of cuBLAS" if kind == "of cuBLAS" else f"% over rung {ref}"   # the row's measure, said once
        value = "same build (0 %)" if fig_text.startswith("same build") else fig_text.split()[0]
        assert line.split(None, 1)[1].startswith(unit) and p["predicted"] in line and f"{value}: {side}" in line
        sides = [s for _, s in p["each"].values()]
        tally = dict((w, int(c)) for c, w in re.findall(r"(\d) (inside|above|below)(?:,|$)", line))
        assert tally == {w: sides.count(w) for w in set(sides)} and sum(tally.values()) == 4
        assert line.endswith("4 inside") == p["inside"]
    row2 = text[2 - 1]
    assert "of cuBLAS" in row2 and "0.76: inside" in row2 and "2 inside, 2 above" in row2   # the record's rung 2
    assert "% over rung 3" in text[5 - 1] and "+2.4%: below" in text[5 - 1]   # a step row: band and value in %


def test_rung_4_reads_as_rung_3s_own_build_not_as_zero_percent(res):
    """Readers met rung 4's band as "+0.0% … +0.0%" before §3's text says why: its sweep picked rung
    3's own build. The row says so; a rung 4 that moved (another build, or another time) reads as a
    step again."""
    row = next(l for l in W.prediction_table(res).splitlines() if l.split()[0] == "4")
    assert "% over rung 3" in row and "same build (0 %)" in row and "+0.0% … +0.0%" not in row
    moved = _scale(res, 4, 1.01)
    assert W.prediction_check(moved, 4)["measured"] == "+1.0% … +1.0% over rung 3"


def test_one_row_is_read_in_words_from_the_record(res):
    """Reader 117 asked for "a short 'how to read this', worked on one row" under the bands' table:
    rung 5's row in plain words, its band, value and verdict the table's own."""
    assert W.row_reading.__name__ in notebook.GUARDS
    text = W.row_reading(res, 5)
    row = next(l for l in W.prediction_table(res).splitlines() if l.split()[0] == "5")
    assert text.startswith("How to read a row, rung 5: it is measured as a step over rung 3.")
    assert "Its band, set before it ran, was +3.0% to +8.0%." in text and "+3.0% … +8.0%" in row
    assert "On the figure's ladder it measured +2.4%: below the band, a miss." in text and "+2.4%: below" in row
    assert "on all 4 ladders: 4 below." in text and row.endswith("4 below")
    # newcomer 54: rung 4's "same build (0 %)" read unexplained; the reading says why, once
    assert text.endswith(" Rung 4's sweep kept rung 3's build.") and "same build (0 %)" in \
        next(l for l in W.prediction_table(res).splitlines() if l.split()[0] == "4")
    assert "Rung 4's sweep" not in W.row_reading(res, 4)
    assert "0.76: inside the band, a hit." in W.row_reading(res, 2)           # a share of cuBLAS
    assert "rung 3's own build (0 %): inside the band, a hit." in W.row_reading(res, 4)


def test_the_row_reading_follows_a_moved_record_and_refuses_a_value_on_the_edge(res):
    """The reading is generated, so a re-measured rung 5 reads as it measured; a value that prints as
    the band's edge (+3.0% under a +3.0% band) would make "below" look false: the guard raises."""
    now = W.prediction_check(res, 5)["values"][4096, "float16"]   # rung 5 over rung 3, as recorded
    inside = W.row_reading(_scale(res, 5, 1.05 / now), 5)
    assert "it measured +5.0%: inside the band, a hit." in inside
    edge = _scale(res, 5, 1.0299 / now)                  # +2.99 % over rung 3: below, printed +3.0%
    assert W.prediction_check(edge, 5)["each"][4096, "float16"][1] == "below"
    with pytest.raises(ClaimError, match="below the band, a miss"):
        W.row_reading(edge, 5)


def _scale(res, rung, factor):
    flipped = copy.deepcopy(res)
    for r in flipped["ladder"]:
        if r["rung"] == rung:
            r["tflops"] *= factor
            r["of_cublas"] *= factor
    return flipped


@pytest.mark.parametrize("rung,factor", [(7, 1 / 1.06),   # the TMA store gains next to nothing at 8192³
                                         (5, 1.06),       # the persistent grid gains 6-9 %
                                         (8, 0.97),       # rung 8 falls back
                                         (5, 0.985),      # the persistent grid gains nothing at 4096³
                                         (6, 1.03),       # clusters moved something
                                         (7, 1.03)])      # the TMA store gains more than 6 % at 8192³
def test_the_ladder_sentences_fail_when_a_rung_moves(res, rung, factor):
    with pytest.raises(ClaimError, match="this record does not support the sentence"):
        _ladder_cell(_scale(res, rung, factor))


def test_the_epilogue_arithmetic_holds_and_fails_when_the_store_gains_more(res, monkeypatch, capsys):
    store = records.load("ws_store_ablation").results
    W.show_epilogue(res, store)
    assert "of a tile" in capsys.readouterr().out
    real = store_suite.store_findings
    monkeypatch.setattr(store_suite, "store_findings", lambda r: {**real(r), "store_alone": 1.20})
    with pytest.raises(ClaimError, match="about 6 % of a traced tile"):
        W.show_epilogue(res, store)


def test_06_3_lookups_give_the_inline_expressions_values(res):
    """06 §3's named lookups return what the cells' inline record-digging gave before them."""
    rows = {r["rung"]: r for r in res["ladder"] if (r["size"], r["dtype"]) == (4096, "float16")}
    t = lesson.tflops_by_rung(res, 4096, "float16")
    assert t == {n: rows[n]["tflops"] for n in range(1, 9)} == lesson.ladder(res)[0]
    assert {n: t[n] / t[b] for n, b in lesson.OVER.items()} == lesson.ladder(res)[1]
    assert lesson.ladders(res) == {z: lesson.ladder(res, *z) for z in lesson.LADDERS}
    for _, st, _ in lesson.ladders(res).values():
        assert lesson.biggest_steps(st) == sorted(st, key=st.get, reverse=True)[:2] \
            == sorted(st, key=st.get)[-2:][::-1]


def test_06_s_sentences_after_the_rung_list_match_the_printed_lines():
    """Readers 125–127: 06 §3 said "rung 2 makes two changes" under a line of three, and "the split
    alone is rung 3 against rung 1" under a line saying the split and setmaxnreg differ. (r61a: the
    rung list and its reading moved to 06c §3.)"""
    import notebook_cells
    src = (notebook_cells.SRC / "06c_ladder_investigations.py").read_text()
    prose = " ".join(src.split("print(W.lesson.rung_changes())", 1)[1].split("# %%", 2)[1].replace("#", " ").split())
    lines = lesson.rung_changes().splitlines()
    words = {1: "one", 2: "two", 3: "three", 4: "four"}
    for n in (2, 3):
        count = len(lines[n - 1].split(": ", 1)[1].split("; "))
        assert f"Rung {n} makes {words[count]}" in prose.replace("So rung 2", "Rung 2"), n
    assert "only the split (a producer warpgroup loads) and setmaxnreg" in lines[-1]
    assert "rung 3 against rung 1 differs by the split and `setmaxnreg`" in prose


def test_06_3_question_has_one_answer_guarded(res):
    """Readers 137: 06 §3's "which rung buys the most?" had two answers (rung 3's recovery from
    rung 2, rung 7's TMA store). The question now names its measure (the split counted whole, rung 3
    over rung 1; each later rung over the rung it was built from) and the core claim says rung 7; a
    record where another change gains more stops the check cell."""
    steps = lesson.one_change_steps(res)
    assert 2 not in steps and max(steps, key=steps.get) == lesson.MOST == 7
    moved = copy.deepcopy(res)
    for r in moved["ladder"]:
        if r["rung"] >= 5:
            r["tflops"] *= 1.10                    # rung 5 now gains more than rung 7's TMA store
    core = {s: ok for s, ok, _ in lesson.claims(moved, core=True)}
    assert not next(ok for s, ok in core.items() if "gains most" in s)


def test_split_bought_prints_the_record_and_refuses_a_moved_one(res, capsys):
    """Readers 138: 06 §3's "what the split buys" paragraph, its numbers printed from three records
    and each of its sentences guarded."""
    steps, store = (records.load(n).results for n in ("ws_rung3_steps", "ws_store_ablation"))
    assert W.lesson.split_bought.__name__ in notebook.GUARDS
    lesson.split_bought(res, steps, store)
    out = capsys.readouterr().out
    assert "rung 1 tile 128×256, rung 3 tile 128×256" in out and "rungs 4, 5, 6, 7, 8" in out
    assert "the TMA store alone on rung 3 (ws_store_ablation): +8.8%" in out and "on chapter 05's kernel: not measured" in out
    slow = copy.deepcopy(res)
    for r in slow["ladder"]:
        if r["rung"] == 1:
            r["tflops"] *= 0.95                    # the split would have bought 5 %
    with pytest.raises(ClaimError, match="buys no speed"):
        lesson.split_bought(slow, steps, store)
    weak = copy.deepcopy(store)
    for row in weak["summary"]:
        if row.get("variant") == "r3+store":
            row["tflops"] /= 1.06                  # the TMA store gains under 5 % on rung 3
    assert store_suite.store_steps(weak)["store_alone"][4096, "float16"] < 0.05
    with pytest.raises(ClaimError, match="TMA store gains"):
        lesson.split_bought(res, steps, weak)


def test_section_3_lists_each_rungs_change_before_its_prediction():
    """Readers: 06 §3 asked which rung gains most while the rungs' changes were only in the figure.
    The list before the question is figures.RUNG_CHANGES, rung by rung."""
    from pathlib import Path
    from asynctc.warp_specialization.figures import RUNG_CHANGES
    src = (Path(__file__).resolve().parents[1] / "notebooks" / "src" / "06_warp_specialization.py").read_text()
    sec = src.split("# ## 3. The ladder", 1)[1].split("**Predict before you look.**", 1)[0]
    listed = dict(re.findall(r"^# (\d)\. (.+)$", sec, re.M))
    assert {int(k): v for k, v in listed.items()} == RUNG_CHANGES, listed
