"""Predictions checked against the record (readers 94 and 96: a "predict before you look" was
honour-system): 02 §4's stage sweep (ch02.stages, exercise 2) and 07 §4's speed table (ch07.fp8_speedup,
exercise 1: a choice of about 2×, 1.5× or 1×, the one nearest the measured ratio right; any answer
opens the table).
The right answer passes; each diagnosed wrong answer gets its symptom and a question at the
first miss, the arithmetic at the second; the key follows a record whose rows moved."""
import copy
import re

import pytest

from asynctc import cp_async, fp8  # noqa: F401  (registers the ch02 and ch07 exercises)
from asynctc.core import exercises, records
from asynctc.teaching import answers

CP = records.load("cp_async").results
FP8 = records.load("fp8").results


def _sweep(results, tflops: dict) -> dict:
    """A copy of the cp_async record's results whose 4096³ fp16 cp.async rows run ``tflops``
    ({(bk, stages): TFLOP/s})."""
    moved = copy.deepcopy(results)
    for r in moved["sweep"]:
        if (r["kernel"], r["dtype"], r["size"]) == ("cp.async", "float16", 4096):
            r["tflops"] = tflops.get((r["bk"], r["stages"]), r["tflops"])
    return moved


def _table(results, size: int, scale: dict) -> dict:
    """A copy of the fp8 record's results with the rows at ``size``³ whose kernel is a key of
    ``scale`` multiplied by its value."""
    moved = copy.deepcopy(results)
    for r in moved["table"]:
        if r["size"] == size and r["kernel"] in scale:
            r["tflops"] *= scale[r["kernel"]]
    return moved


def test_the_stage_prediction_passes_with_the_records_answer(capsys):
    assert exercises.check("ch02.stages", ("no", 32), results=CP)
    assert exercises.check("ch02.stages", (" No", "32"), results=CP)       # equivalent forms
    assert exercises.check("ch02.stages", ("no", 32), results=CP, solution=True)


@pytest.mark.tiers
@pytest.mark.parametrize("answer, symptom, question, rule", [
    (("yes", 32), "'yes' says a third or fourth stage helps BK = 64",     # reader 135: tier 1 a question
     "is either more than 1 % faster than two?", "'yes' assumes two stages leave some of BK = 64's load latency "
     "to hide, and that a stage's shared memory costs nothing. BK = 64 runs 364 TFLOP/s with 1 stage, 402 with 2, "
     "401 with 3, 357 with 4. Past two, 3 stages run 401, within 1 % of two's 402: noise, not a loss; "
     "4 stages run 357, 11% slower than two's 402"),      # readers 102–104: 0.25 % is not a loss
    (("no", 64), "the question asks which BK gains more over its own one-stage row, not which is faster",
     "Which two rows of each BK would you divide", "BK = 64 is the faster one with one stage. With one stage, "
     "BK = 32 waits twice as often in K = 4096 (§4's Try it). BK = 64: 402 / 364 = 1.10×; BK = 32: 417 / 254 = 1.64×"),
])
def test_a_wrong_stage_prediction_asks_then_shows_the_rows(tiers, answer, symptom, question, rule):
    tiers("ch02.stages", answer, symptom, question, rule, results=CP)


@pytest.mark.tiers
def test_both_stage_answers_wrong_get_both_hints(twice):
    one, two = twice("ch02.stages", ("yes", 64), results=CP)
    assert one.count(exercises.SECOND) == 1 and one.rstrip().endswith(exercises.SECOND.strip()) and "one-stage row" in one and "BK = 64 rows" in one, one
    assert "Note 3 says why a stage can lose" in two and "BK = 64: 402 / 364 = 1.10×" in two, two


@pytest.mark.tiers
@pytest.mark.parametrize("tflops, answer, symptom, rule", [
    # 'no' when a third stage helps: the hint names the assumption, not the record's verdict
    ({(64, 2): 400.0, (64, 3): 430.0}, ("no", 32), "'no' says a third or fourth stage does not help BK = 64",
     "'no' assumes two stages already hide all of BK = 64's load latency. BK = 64 runs"),
    # BK = 64 the slower start and still the smaller gain: a learner who picked it took a slow start for a gain
    ({(64, 1): 240.0, (64, 2): 300.0, (64, 3): 290.0, (64, 4): 280.0}, ("no", 64),
     "the question asks which BK gains more", "BK = 64 starts slower with one stage, but a slow start is not yet a "
     "large gain. With one stage, BK = 32 waits twice as often in K = 4096 (§4's Try it). BK = 64: 300 / 240 = 1.25×"),
])
def test_a_wrong_stage_prediction_names_what_it_misread(tiers, tflops, answer, symptom, rule):
    moved = _sweep(CP, tflops)
    assert exercises.expected("ch02.stages", results=moved) != answer
    one, two = tiers("ch02.stages", answer, symptom, "faster than two?" if answer[1] == 32 else "which quotient",
                     rule, results=moved)
    assert "('yes'" not in one and ", 32)" not in one, one        # never the answer itself


def test_a_stage_answer_in_no_accepted_form_says_which(capsys):
    assert not exercises.check("ch02.stages", ("maybe", 48), results=CP)
    assert "'yes' or 'no', then 64 or 32" in capsys.readouterr().out
    assert not exercises.check("ch02.stages", "no", results=CP)
    assert "2 values in parentheses, (another_stage_helps, bk)" in capsys.readouterr().out
    for swapped in ((32, "no"), ("32", "no")):                     # reader 134: not "answer with text in quotes"
        assert not exercises.check("ch02.stages", swapped, results=CP)
        out = capsys.readouterr().out
        assert "wrong order: your two values are swapped" in out and "text in quotes" not in out, out


def test_the_stage_key_follows_a_moved_record(monkeypatch):
    monkeypatch.setenv(exercises.ANSWER_KEY_ENV, "1")
    assert exercises.expected("ch02.stages", results=CP) == ("no", 32)
    # every BK = 64 stage faster, and BK = 64's ring the larger gain
    moved = _sweep(CP, {(64, 1): 200.0, (64, 2): 300.0, (64, 3): 350.0, (64, 4): 420.0,
                        (32, 1): 300.0, (32, 2): 330.0, (32, 3): 340.0, (32, 4): 345.0})
    assert exercises.expected("ch02.stages", results=moved) == ("yes", 64)
    assert exercises.check("ch02.stages", ("yes", 64), results=moved)
    # the fastest row is BK = 64's, but BK = 32 gains more over its own one stage
    moved = _sweep(CP, {(64, 4): 380.0, (32, 1): 150.0, (32, 4): 360.0})
    assert exercises.expected("ch02.stages", results=moved) == ("no", 32)
    # readers 102–104: the question asks past two stages; one to two may lose, a third stage within
    # 1 % of two is noise (no), more than 1 % faster is help (yes)
    moved = _sweep(CP, {(64, 1): 420.0, (64, 2): 400.0, (64, 3): 420.0, (64, 4): 380.0})
    assert exercises.expected("ch02.stages", results=moved) == ("yes", 32)
    moved = _sweep(CP, {(64, 2): 400.0, (64, 3): 403.0, (64, 4): 390.0})
    assert exercises.expected("ch02.stages", results=moved) == ("no", 32)


def test_a_record_without_a_third_stage_is_refused_by_name(monkeypatch, capsys):
    """The key asked max() of no rows past two stages (a bare "empty sequence" error): a record
    whose BK = 64 sweep stops at two stages is refused with the rows it has and the ones it needs."""
    monkeypatch.setenv(exercises.ANSWER_KEY_ENV, "1")
    short = copy.deepcopy(CP)
    short["sweep"] = [r for r in short["sweep"] if not (r["kernel"] == "cp.async" and r["stages"] > 2)]
    with pytest.raises(ValueError, match=r"cp_async record's 4096³ float16 cp.async rows have stages "
                                         r"\[1, 2\] at BK = 64 .* needs BK = 64 at 1, 2 and more than 2"):
        exercises.expected("ch02.stages", results=short)
    assert not exercises.check("ch02.stages", ("no", 32), results=short)
    out = capsys.readouterr().out
    assert "cannot be checked" in out and "more than 2 stages" in out, out


def test_the_speedup_prediction_is_a_choice_nearest_the_record(capsys):
    """Reader 110: a ratio graded within 3 % of the record was a reading of the table. The prediction is
    a choice of three; the one nearest the record's ratio (1544 / 776 = 1.990 on the H200) is right."""
    assert exercises.check("ch07.fp8_speedup", "about 2×", results=FP8)
    for same in ("2x", " About 2X ", "2×", "~2x", "2"):                   # other spellings of the choice
        assert exercises.check("ch07.fp8_speedup", same, results=FP8), same
    assert not exercises.check("ch07.fp8_speedup", "about 1.5×", results=FP8)
    assert not exercises.check("ch07.fp8_speedup", "about 1×", results=FP8)
    capsys.readouterr()
    assert not exercises.check("ch07.fp8_speedup", 2.0, results=FP8)      # a number: told the choices
    assert "'about 2×', 'about 1.5×', 'about 1×', in quotes" in capsys.readouterr().out
    prompt = exercises.prompt("ch07.fp8_speedup")
    assert "about 2×, about 1.5× or about 1×" in prompt and "nearest" in prompt and "within" not in prompt


def test_the_right_speedup_choice_says_why(capsys):
    """Reader 112: 'about 2×' got a bare "correct". Its note gives the record's ratio and why it sits at
    the ceiling; a worked solution's value still reads back without the note (the answer sheet)."""
    assert exercises.check("ch07.fp8_speedup", "2x", results=FP8)
    out = capsys.readouterr().out
    assert ("correct — ours 1544/776 = 1.990, within 1 % of the 2× ceiling: the loads and the math "
            "both halve; nothing else costs") in out, out
    assert exercises.check("ch07.fp8_speedup", "about 2×", results=FP8, solution=True)
    line = capsys.readouterr().out.strip()
    assert line.startswith("[ch07.fp8_speedup] correct: 'about 2×' — ours 1544/776")
    m = re.match(answers.REPLAY_LINE, line)
    assert m and m.group(2) == "'about 2×'", line


@pytest.mark.tiers
@pytest.mark.parametrize("answer, symptom", [
    ("about 1.5×", "'about 1.5×' is the seed article's low end. It would hold if FP8 halved only two thirds of FP16's run time"),
    ("1x", "'about 1×' says FP8 gains nothing over FP16"),
])
def test_a_low_speedup_asks_what_fp8_halves(tiers, answer, symptom):
    """The hints point at the reasoning (bytes per element halve, the math per clock doubles), not at
    the table; the second miss gives the record's arithmetic."""
    question = "What does FP8 halve per element, and what does the Tensor Core do twice as fast?"
    rule = "Ours at 8192³: 1544 (our FP8 top rung) / 776 (our FP16 top rung) = 1.990, nearest 'about 2×'."
    one, two = tiers("ch07.fp8_speedup", answer, symptom, question, rule, results=FP8)
    assert "table" not in one and "measure" not in one, one
    assert "FP8 halves the bytes per element, and the Tensor Core does twice FP16's math per clock" in two, two


@pytest.mark.parametrize("ratio, choice", [(1.99, "about 2×"), (1.6, "about 1.5×"), (1.2, "about 1×"),
                                           (1.8, "about 2×"), (1.7, "about 1.5×")])
def test_the_speedup_key_follows_a_moved_record(monkeypatch, ratio, choice):
    monkeypatch.setenv(exercises.ANSWER_KEY_ENV, "1")
    ours8 = fp8.fp8_config().label()
    moved = _table(FP8, 8192, {ours8: ratio / (1544 / 776)})    # our FP8 rung at `ratio` × our FP16 rung
    assert exercises.expected("ch07.fp8_speedup", results=moved) == choice
    assert exercises.check("ch07.fp8_speedup", choice, results=moved)
    assert exercises.expected("ch07.fp8_speedup", results=FP8) == "about 2×"
    assert exercises.expected("ch07.fp8_speedup", results=FP8, size=4096) == "about 2×"   # 1452 / 759 = 1.91


@pytest.mark.tiers
def test_a_moved_record_grades_the_prediction_against_its_own_ratio(twice):
    """A record whose ratio is 1.6: 'about 1.5×' passes, 'about 2×' fails with the ceiling's diagnosis,
    and the arithmetic names the moved rows."""
    ours8 = fp8.fp8_config().label()
    moved = _table(FP8, 8192, {ours8: 1.6 / (1544 / 776)})   # our FP8 rung at 1.6× our FP16 rung
    assert exercises.check("ch07.fp8_speedup", "about 1.5×", results=moved)
    one, two = twice("ch07.fp8_speedup", "about 2×", results=moved)
    assert "is the ceiling" in one and "besides loads and Tensor Core math?" in one and exercises.SECOND in one, one
    assert "1241 (our FP8 top rung) / 776 (our FP16 top rung) = 1.600, nearest 'about 1.5×'" in two, two
