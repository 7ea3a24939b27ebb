"""Chapter 06's capstone (exercise 1), ch06.whole_kloop: both roles' loops of a persistent CTA over several
tiles with one ring, read by the loop reader (with for loops), judged by rules, run in chapter 05's
ring model with the producer as its own actor, and every tile's data through the emulator. The
course's answer passes; the four slips the capstone is about each fail with their hint; the
template alone is not an answer."""
from pathlib import Path

import pytest

from asynctc.core import exercises
from asynctc.core import loop_reader as L
from asynctc.warp_specialization import whole_kloop as W

NAME = "ch06.whole_kloop"
ROOT = Path(__file__).resolve().parent.parent
S = W.SOLUTION
_RING = "int stage = 0, phase = 0;                // the ring position: set once, before the tile loop\n"
_TILE = "  for (int tile = 0; tile < TILES; ++tile) {\n"
_READ = ("      mma_ktile(acc, stage);\n"
         "      wgmma_wait_group<0>();             // the wgmmas are done reading the stage\n"
         "      empty.arrive(stage);\n")

#: The four slips (name → the course's answer with that slip).
SLIPS = {
    # the stage and phase declared inside each role's tile loop: the ring restarts at tile 1
    "parity_restarts_per_tile": S.replace(_RING, "").replace(_TILE, _TILE + "    int stage = 0, phase = 0;\n"),
    # the stage released before the wgmma group that reads it has retired
    "release_before_last_read": S.replace(_READ, "      mma_ktile(acc, stage);\n      empty.arrive(stage);\n"
                                                 "      wgmma_wait_group<0>();\n"),
    # expect_tx announces one box's bytes, not the stage's
    "expect_tx_bytes_wrong": S.replace("arrive_expect_tx(stage, kStageBytes)", "arrive_expect_tx(stage, kStageBytes / 2)"),
    # the consumers wait on empty (the seed article's naming, backwards)
    "wait_on_wrong_barrier": S.replace("full.wait(stage, phase);", "empty.wait(stage, phase);"),
}
#: Words each slip's hint must hold: the rule's, then the ring model's diagnosis of the same loops.
HINTS = {
    "parity_restarts_per_tile": ["ring counter 3 (tile 1, k-tile 0): your tma_load fills stage 0", "the ring does not "
                                 "restart with a tile", "its stage and phase carry on from ring counter 2. Chapter 05", "Chapter 05's ring model with your "
                                 "loops: race at k-tile 4"],
    "release_before_last_read": ["release empty[0] while the wgmma group that reads it may still run",
                                 "release before the last read", "race at k-tile 0: consumer 0 releases empty[0]"],
    "expect_tx_bytes_wrong": ["you announce 16384 bytes on full[0]", "kStageBytes = 32768",
                              "stage 0 holds k-tile 0 with 16384 of 32768 bytes landed"],
    "wait_on_wrong_barrier": ["your consumers wait on empty[0]", "wait on full", "deadlock at k-tile 0"],
}


def _check(capsys, text):
    ok = exercises.check(NAME, text)
    return ok, capsys.readouterr().out.strip()


def test_the_courses_answer_passes_on_every_ring_with_the_data(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("ASYNCTC_PROGRESS", str(tmp_path / "p.jsonl"))
    ok, out = _check(capsys, S)
    assert ok, out
    assert out.startswith(f"[{NAME}] correct — tile 2 starts at stage 0, parity 1, "
                          "and every tile is within the bound (worst error / bound ")
    assert "no race or deadlock on 3 stages either. <0> is right; two consumers hide the idle time it " \
           "costs (chapter 06 §2)." in out
    # "correct" in a line: the verdict, the fact that confirms it, the pointer; the reason is in 06 §1
    assert len(out) < 260 and out.count(". ") <= 2, out
    assert exercises.check(NAME, S, solution=True)


def _one_in_flight(tile_end_resets_prev: bool) -> str:
    """The solution with wgmma_wait_group<1>: each k-tile releases the stage before; the tile's end
    waits for its last group and releases that stage (and forgets it, or not)."""
    reset = "    prev = -1;\n" if tile_end_resets_prev else ""
    return (S.replace(_READ, "      mma_ktile(acc, stage);\n      wgmma_wait_group<1>();\n"
                             "      if (prev >= 0) empty.arrive(prev);\n      prev = stage;\n")
             .replace("    store_tile(acc, tile);\n", "    wgmma_wait_group<0>();\n    empty.arrive(prev);\n"
                                                     + reset + "    store_tile(acc, tile);\n")
             .replace("int stage = 0, phase = 0;", "int stage = 0, phase = 0, prev = -1;"))


def test_one_group_in_flight_and_the_stage_before_released_also_passes(capsys):
    """wgmma_wait_group<1> with the previous stage released, the last one after the k-loop: right."""
    ok, out = _check(capsys, _one_in_flight(True))
    assert ok, out
    assert out.endswith("no race or deadlock on 3 stages either.") and "fastest" not in out and len(out) < 180


def test_a_stage_released_at_the_tile_end_and_again_by_the_next_tile_is_named(capsys):
    """Reader 110: the last k-tile's stage is released at the tile's end; releasing "the stage before"
    at the next tile's first k-tile again is a second arrival for one read, named as such."""
    ok, out = _check(capsys, _one_in_flight(False))
    assert not ok and "after ring counter 3: your consumers release empty[0] again after one read" in out, out


@pytest.mark.parametrize("slip", sorted(SLIPS))
def test_each_slip_fails_with_its_hint(capsys, slip):
    assert SLIPS[slip] != S
    ok, out = _check(capsys, SLIPS[slip])
    assert not ok and out.startswith(f"[{NAME}] not quite — (STAGES = 2, T = 3, TILES = 3) ")
    for words in HINTS[slip]:
        assert words in out, (slip, words, out)
    with pytest.raises(AssertionError, match="is wrong"):
        exercises.check(NAME, SLIPS[slip], solution=True)


@pytest.mark.parametrize("text, words", [
    (S.replace("empty.wait(stage, phase ^ 1);", "full.wait(stage, phase ^ 1);"),
     "your producer waits on full[0], the barrier its own TMA completes"),
    (S.replace("empty.wait(stage, phase ^ 1);", "empty.wait(stage, phase);"),
     "fill 0 of a stage waits on parity 1"),
    (S.replace("full.wait(stage, phase);", "full.wait(stage, phase ^ 1);"),
     "your consumers wait on full[0] with parity 1"),
    (S.replace("arrive_expect_tx(stage, kStageBytes)", "arrive_expect_tx(stage, 2 * kStageBytes)"),
     "the phase never completes"),
    (S.replace("      wgmma_wait_group<0>();             // the wgmmas are done reading the stage\n", ""),
     "release before the last read"),
    (S.replace("    store_tile(acc, tile);\n", ""), "stores 0 tiles of 3"),
    (S.replace("STAGES) {", "2) {"), "(STAGES = 3, T = 4, TILES = 2) producer, ring counter 2"),   # a ring of 2 hard-wired
    (S.replace("tma_load(stage, tile, k)", "tma_laod(stage, tile, k)"), "line 8: the check does not know 'tma_laod'"),
    (S.replace("for (int k = 0; k < T; ++k) {\n      full", "for (int k = 0; k < T; --k) {\n      full"),
     "runs more than 4096 times"),
    # readers 108 and a newcomer declared the accumulator as the kernel does and got a parser's message
    ("float acc[64];\n" + S, "the accumulators `acc` are in scope already"),
])
def test_other_slips_are_named(capsys, text, words):
    ok, out = _check(capsys, text)
    assert not ok and words in out, out


def test_a_text_with_two_bugs_says_there_is_one_more(capsys):
    """Reader 130's capstone: the hint names the first rule broken, and says when the consumers'
    loop breaks another; a text with one bug says nothing more."""
    both = S.replace("empty.wait(stage, phase ^ 1);", "empty.wait(stage, phase);").replace(
        "    store_tile(acc, tile);\n", "")
    ok, out = _check(capsys, both)
    assert not ok and "fill 0 of a stage waits on parity 1" in out and "And 1 more: your consumers' loop" in out, out
    ok, out = _check(capsys, S.replace("    store_tile(acc, tile);\n", ""))
    assert not ok and "And 1 more" not in out, out


def test_the_template_alone_is_not_an_answer(capsys, tmp_path, monkeypatch):
    from asynctc.core import progress
    monkeypatch.setenv(progress.ENV, str(tmp_path / "p.jsonl"))
    ok, out = _check(capsys, W.TEMPLATE)
    assert not ok and "not answered yet" in out
    with pytest.raises(AssertionError, match="missing"):
        exercises.check(NAME, W.TEMPLATE, solution=True)


def test_the_reader_follows_for_loops_only_when_asked():
    text = "for (int k = 0; k < 3; ++k) { empty.arrive(k % 2); }"
    with pytest.raises(L.ReadError, match="does not follow 'for'"):
        L.parse(text)
    m = W._Machine(1, 2, 3, 1)
    m.execute(L.parse(text, loops=True))
    assert [(e.kind, e.stage) for e in m.events] == [("arrive", 0), ("arrive", 1), ("arrive", 0)]
    assert "k" not in m.locals                      # the loop's variable ends with it
    m = W._Machine(1, 2, 3, 1)
    m.execute(L.parse("int j = 0;\nwhile (j < 2) { empty.arrive(j); ++j; }", loops=True))
    assert [e.stage for e in m.events] == [0, 1]
    with pytest.raises(L.ReadError, match="line 1: the check follows if/else, for and while; it does not follow 'do'"):
        L.parse("do { } while (0);", loops=True)


def test_the_ring_model_runs_the_producer_as_its_own_actor():
    roles = [W.read(S, wg, 2, 3, 3) for wg in range(3)]
    sched = W.ring(roles[0], roles[1:], 2, 9)
    assert sched.diagnosis is None
    assert {sp.lane for sp in sched.spans} >= {"producer", "tma", "wg0", "wg1"}
    assert sorted(sp.k for sp in sched.spans if sp.kind == "tma") == list(range(9))
    checks = W.emulate_tiles(sched, 3, 3)
    assert len(checks) == 3 and all(c.passed for c in checks)


def test_06f_asks_it_with_the_template_and_answers_it_in_the_solutions():
    """The short-name capstone is deep dive 06f's warm-up (06 §1 asks it in real calls: ch06.cuda_kloop)."""
    src = (ROOT / "notebooks" / "src" / "06f_capstone_in_cuda.py").read_text()
    assert f'whole_kloop = """{W.TEMPLATE}"""\nok = exercises.check("{NAME}", whole_kloop)' in src
    solutions = src[src.index("<summary>Solutions"):]
    assert f'whole_kloop = """\n{W.SOLUTION}"""\nok = exercises.check("{NAME}", whole_kloop, solution=True)' in solutions


def test_the_picture_draws_the_learners_loops_and_promises_before_they_pass(capsys, tmp_path, monkeypatch):
    """06 §1's picture: before the loops pass it only says what it will draw (no stage, no parity);
    after, chapter 05's timeline of the loops with one dashed line at each tile's first wgmma."""
    monkeypatch.setenv("ASYNCTC_PROGRESS", str(tmp_path / "p.jsonl"))      # nothing kept yet
    assert W.show_loops(W.TEMPLATE, False) is None
    said = capsys.readouterr().out
    assert "Once your loops pass" in said and "phase" not in said and "^" not in said
    sched = W.timeline(W.SOLUTION)
    assert sched.diagnosis is None and {"producer", "tma", "wg0", "wg1"} <= {s.lane for s in sched.spans}
    fig = W.show_loops(W.SOLUTION, True)
    ax = fig.axes[0]
    starts = sorted(min(s.start for s in sched.spans if s.kind == "mma" and s.k == t * 3) for t in range(3))
    dashed = sorted(line.get_xdata()[0] for line in ax.get_lines() if line.get_linestyle() == "--")
    assert dashed == starts and [t.get_text().strip() for t in ax.texts] == ["tile 0", "tile 1", "tile 2"]
    __import__("matplotlib.pyplot").pyplot.close(fig)


def test_the_so_paragraph_after_the_check_computes_its_numbers_from_the_ring_model():
    """The correct message points under the figure; there 06 §1's "So:" gives the reason, held until
    the capstone passes (readers 70, 78 read it as a hint), beside <0> against <1> computed from
    chapter 05's ring model (no typed percentages)."""
    from pathlib import Path
    src = (Path(__file__).resolve().parent.parent / "notebooks" / "src" / "06_warp_specialization.py").read_text()
    after = src[src.index('ok = exercises.check("ch06.cuda_kloop", cuda_kloop)\n'):src.index("## 3. The ladder")]
    gate = after.index('if exercises.after("ch06.cuda_kloop"')
    assert after.index("mp.simulate(4, n, c, 32).math_fraction") < gate < after.index("**So:** `wgmma_wait_group<0>()`")
    import re
    prose = "".join(c for c in after.split("# %%") if c.startswith(" [markdown]"))
    assert "notebook.require(" in after and not re.search(r"\d\s*%", prose)


# ---- deep dive 06e: the capstone's loops order the CPU tile ----------------------------------------

def _tile_schedule(text):
    """The capstone's loops as 06e's tile runs them: 2 stages, 4 k-tiles, one tile."""
    return W.timeline(text, stages=2, k_tiles=4, tiles=1)


def test_the_courses_loops_order_06es_tile_and_it_passes():
    from asynctc.models import emulate_sm90 as E
    sched = _tile_schedule(S)
    r = E.emulate(schedule=sched, on_purpose={"whole_kloop": "the course's"})
    assert r.passed and r.check.passed, r.summary()
    assert r.used["whole_kloop"] == "the course's" and "parities" not in r.used
    assert "order: the course's capstone loops (whole_kloop)" in r.summary()
    order = E.ring_order(schedule=sched)
    assert order[:3] == ["load k-tile 0 -> stage 0", "consumer 0 reads k-tile 0 from stage 0",
                         "consumer 1 reads k-tile 0 from stage 0"] and len(order) == 12
    # the ring pieces are not used for the order: a broken parity given beside the schedule changes nothing
    r = E.emulate(schedule=sched, parities=(lambda k, S: k % 2, lambda t, S: 0))
    assert r.passed and "order: your capstone loops (whole_kloop)" in r.summary()
    with pytest.raises(ValueError, match="run the capstone's loops for one tile"):
        E.emulate(schedule=sched, stages=3)


@pytest.mark.parametrize("text, words", [
    # the waits swapped: the producer waits on full, the consumers on empty
    (S.replace("empty.wait(stage, phase ^ 1);", "@").replace("full.wait(stage, phase);", "empty.wait(stage, phase);")
     .replace("@", "full.wait(stage, phase ^ 1);"), "race at k-tile 0: producer passed full[0]"),
    (SLIPS["wait_on_wrong_barrier"], "deadlock at k-tile 0"),
    # released before the wgmma group reading the stage retired
    (SLIPS["release_before_last_read"], "race at k-tile 0: consumer 0 releases empty[0]"),
    (SLIPS["expect_tx_bytes_wrong"], "16384 of 32768 bytes landed")])
def test_capstone_loops_that_break_the_ring_stop_06es_tile_and_are_named(text, words):
    from asynctc.models import emulate_sm90 as E
    sched = _tile_schedule(text)
    assert sched.diagnosis is not None
    r = E.emulate(schedule=sched)
    assert not r.passed and r.check is None and r.blame == ["whole_kloop"], r.summary()
    assert "STOPPED by the ring model (whole_kloop)" in r.summary() and words in r.summary()
    with pytest.raises(ValueError, match=words.split(":")[0]):
        E.ring_order(schedule=sched)


def test_an_order_that_reads_before_the_bytes_land_gives_wrong_data_blamed_on_the_capstone():
    """A schedule whose k-tile 2 lands after the wgmmas read stage 0 (no diagnosis): wrong elements."""
    from asynctc.models import emulate_sm90 as E
    sched = _tile_schedule(S)
    late = [sp._replace(end=sp.end + 5000) if sp.kind == "tma" and sp.k == 2 else sp for sp in sched.spans]
    r = E.emulate(schedule=type(sched)(**{**sched.__dict__, "spans": late}))
    assert not r.passed and r.check is not None and not r.check.passed and r.blame == ["whole_kloop"]
    assert "whole_kloop is wrong: consumer 0 reads k-tile 2 from stage 0, which holds k-tile 0 then" \
        in r.summary()


@pytest.mark.tiers
def test_the_first_miss_asks_and_the_second_gives_the_rule(capsys):
    """A reader: the restart slip's first hint handed over the capstone's insight. The first miss at
    a spot names the symptom and asks; the same miss again gives the arithmetic and the rule."""
    slip = SLIPS["parity_restarts_per_tile"]
    ok, first = _check(capsys, slip)
    assert not ok
    assert "ring counter 3 (tile 1, k-tile 0): your tma_load fills stage 0, not ring counter 3's stage" in first
    assert "Which stage and which fill of it does counter 3 use" in first and W.SECOND in first
    for rule in ("mod STAGES", "// STAGES", "does not restart", "first k-tile of tile 1"):
        assert rule not in first, rule
    ok, second = _check(capsys, slip)
    assert not ok
    for words in HINTS["parity_restarts_per_tile"] + ["counter 3 goes to stage 3 mod STAGES = 1"]:
        assert words in second, words
    assert W.SECOND not in second


@pytest.mark.tiers
@pytest.mark.parametrize("text, first, rule", [
    (S.replace("empty.wait(stage, phase ^ 1);", "empty.wait(stage, phase);"),
     "your producer waits on empty[0] with parity 0, the wrong phase for ring counter 0", "fill 0 of a stage waits on parity 1"),
    (S.replace("full.wait(stage, phase);", "full.wait(stage, phase ^ 1);"),
     "your consumers wait on full[0] with parity 1, the wrong phase for ring counter 0", "parity f mod 2 = 0"),
])
def test_each_parity_slip_asks_first(capsys, text, first, rule):
    _, one = _check(capsys, text)
    _, two = _check(capsys, text)
    assert first in one and rule not in one and W.SECOND in one
    assert rule in two and W.SECOND not in two


@pytest.mark.tiers
def test_an_untiered_hint_is_the_same_at_every_miss(capsys):
    slip = SLIPS["expect_tx_bytes_wrong"]
    _, one = _check(capsys, slip)
    _, two = _check(capsys, slip)
    assert one == two and W.SECOND not in one


def test_after_a_restart_the_picture_draws_the_loops_kept_at_the_pass(capsys, tmp_path, monkeypatch):
    """Readers 83, 86: after a restart the template is back in the cell, the held cells open from
    the progress file, and the picture must not say "Once your loops pass": it draws the kept loops."""
    monkeypatch.setenv("ASYNCTC_PROGRESS", str(tmp_path / "p.jsonl"))
    assert exercises.check(NAME, S)
    capsys.readouterr()
    fig = W.show_loops(W.TEMPLATE, False)
    said = capsys.readouterr().out
    assert fig is not None and "Once your loops pass" not in said and "as they last passed" in said
    __import__("matplotlib.pyplot").pyplot.close(fig)


#: The capstone's first comment: the prediction (readers 95-96 wrote a wrong one above right loops).
_PREDICTION = S.splitlines()[0]


@pytest.mark.parametrize("comment, got", [
    ("// tile 2's first k-tile: stage ?, consumers' full parity ?   (your prediction; declarations below)", (None, None)),
    ("// tile 2's first k-tile: stage 0, consumers' full parity 1", (0, 1)),
    ("// stage=1 parity=0", (1, 0)), ("// 1, 1", (1, 1)), ("// tile 2's first k-tile: 0, 1 (my guess)", (0, 1)),
    ("// stage 1, phase parity ?", (1, None)), ("", None),
])
def test_the_prediction_is_read_from_the_first_comment(comment, got):
    assert W.prediction(S.replace(_PREDICTION, comment)) == got
    assert W.prediction(W.TEMPLATE) == (None, None) and W.prediction(S) == (0, 1)


@pytest.mark.tiers
def test_a_wrong_prediction_above_right_loops_is_not_correct(capsys, tmp_path, monkeypatch):
    """Readers 95-96: "stage 0, parity 0" above right loops read "correct". The loops' verdict stays;
    the prediction fails, tiered, and the exercise is not kept as passed."""
    from asynctc.core import progress
    monkeypatch.setenv(progress.ENV, str(tmp_path / "p.jsonl"))
    text = S.replace(_PREDICTION, "// tile 2's first k-tile: stage 0, consumers' full parity 0")
    one, two = (_check(capsys, text) for _ in range(2))
    assert not one[0] and not two[0] and not exercises.passed(NAME)
    assert one[1] == (f"[{NAME}] not quite — your loops pass every check, but your prediction disagrees: "
                      "it says stage 0, parity 0. Which ring counter is tile 2's first k-tile? §1's rules give "
                      "its stage and parity from it. Correct the first comment and run the cell again."
                      + exercises.SECOND), one       # reader 126: the first miss no longer gives "stage 1, full parity 1"
    assert "at stage 0, full parity 1" in two[1] and exercises.SECOND not in two[1]
    assert "ring counter 2·3 = 6, stage 6 mod 2 = 0, fill f = 6 // 2 = 3" in two[1]
    assert ("(0 is the producer's parity on empty, (f + 1) mod 2; stage 0, parity 0 is a ring that "
            "restarts at each tile)") in two[1]
    with pytest.raises(AssertionError, match="is wrong"):
        exercises.check(NAME, text, solution=True)


@pytest.mark.parametrize("comment", [
    W.TEMPLATE.splitlines()[1],                                   # left at "?"
    "// tile 2's first k-tile: stage 0, consumers' full parity ?",  # half written (its half right)
    "",                                                           # deleted
])
def test_a_blank_or_deleted_prediction_is_no_pass(capsys, tmp_path, monkeypatch, comment):
    """Readers 98-99: right loops under a "?" (or no) prediction passed, though "one graded question
    decides it". They fail with ASK, which gives none of the loops' numbers; the cells held for the
    capstone stay closed, and the solution check raises."""
    from asynctc.core import progress
    monkeypatch.setenv(progress.ENV, str(tmp_path / "p.jsonl"))
    monkeypatch.setattr(exercises, "_opened", set())
    ok, out = _check(capsys, S.replace(_PREDICTION, comment))
    assert not ok and out == f"[{NAME}] not quite — {W.ASK}", out
    assert "stage 0," not in W.ASK and "parity 1" not in W.ASK
    assert not exercises.passed(NAME) and not exercises.after(NAME)
    with pytest.raises(AssertionError, match="is wrong"):
        exercises.check(NAME, S.replace(_PREDICTION, comment), solution=True)


def test_the_prediction_is_not_chapter_06s_exercise_1a():
    """Readers: 06f's graded prediction repeated 06's exercise 1a (tile 1's first k-tile). It asks the
    consumers' full wait at tile 2's first k-tile: a right answer passes, the producer's parity on
    empty or 1a's numbers fail with a hint."""
    assert W.PREDICT_TILE == 2 and W.prediction(S) == (0, 1)
    assert exercises.check(NAME, S, solution=True)
    for said in ("stage 1, consumers' full parity 0", "stage 0, consumers' full parity 0"):
        text = S.replace(_PREDICTION, f"// tile 2's first k-tile: {said}")
        hint = exercises.told(W.judge(text), rule=True)
        assert "your prediction disagrees" in hint and "ring counter 2·3 = 6" in hint, hint
