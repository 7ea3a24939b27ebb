"""Predictions checked against the record (readers 94 and 96: a "predict before you look" was
honour-system): 02 §4's stage sweep (ch02.stages, exercise 2) and 07 §4's speed table (ch07.fp8_speedup,
exercise 1: a prediction passing within 3 % of the measured ratio; any answer opens the table).
The right answer passes; each diagnosed wrong answer gets its symptom and a question at the
first miss, the arithmetic at the second; the key follows a record whose rows moved."""
import copy

import pytest

from asynctc import cp_async, fp8  # noqa: F401  (registers the ch02 and ch07 exercises)
from asynctc.core import exercises, records

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
    (("yes", 32), "'yes' to the first question does not match the record's BK = 64 rows",
     "is either more than 1 % faster than two?", "3 stages run 401, within 1 % of two's 402: noise, not a loss; "
     "4 stages run 357, 11% slower than two's 402"),      # readers 102–104: 0.25 % is not a loss
    (("no", 64), "The BK you chose (64) does not match the record's ring gains", "which quotient is larger?",
     "BK = 32: 417 / 254 = 1.64×"),
])
def test_a_wrong_stage_prediction_asks_then_shows_the_rows(tiers, answer, symptom, question, rule):
    tiers("ch02.stages", answer, symptom, question, rule, results=CP)


@pytest.mark.tiers
def test_both_stage_answers_wrong_get_both_hints(twice):
    one, two = twice("ch02.stages", ("yes", 64), results=CP)
    assert one.count(exercises.SECOND) == 1 and one.rstrip().endswith(exercises.SECOND.strip()) and "ring gains" in one and "BK = 64 rows" in one, one
    assert "Note 3 says why a stage can lose" in two and "BK = 64: 402 / 364 = 1.10×" in two, two


def test_a_stage_answer_in_no_accepted_form_says_which(capsys):
    assert not exercises.check("ch02.stages", ("maybe", 48), results=CP)
    assert "'yes' or 'no', then 64 or 32" in capsys.readouterr().out
    assert not exercises.check("ch02.stages", "no", results=CP)
    assert "2 values in parentheses, (another_stage_helps, bk)" in capsys.readouterr().out


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


def test_the_speedup_prediction_passes_within_three_percent(capsys):
    """Readers 105–107: a prediction graded to three decimals was a reading of the table; within 3 %
    of the record's ratio (1544 / 776 = 1.990 on the H200), the 2× ceiling passes, the seed's 1.5× does not."""
    assert exercises.check("ch07.fp8_speedup", 1544 / 776, results=FP8)    # the table's 8192³ column
    assert exercises.check("ch07.fp8_speedup", 2.0, results=FP8)           # the ceiling, 0.5 % off
    assert exercises.check("ch07.fp8_speedup", 1.94, results=FP8)          # 2.5 % off
    assert not exercises.check("ch07.fp8_speedup", 1.92, results=FP8)      # 3.5 % off
    assert not exercises.check("ch07.fp8_speedup", 1.5, results=FP8)
    assert "within 3%" in exercises.prompt("ch07.fp8_speedup")


@pytest.mark.tiers
@pytest.mark.parametrize("answer, symptom, question", [
    (776 / 1544, "is below 1: FP16 over FP8", "Which rung goes on top?"),
    (1544 / 1518, "is our FP8 rung over cuBLASLt FP8", "Which two rows of the table are ours?"),
    (1452 / 759, "is the 4096³ column", "Which column is 8192³?"),
    (1.5, "is the seed's low end, a prediction", "The table is open now"),    # readers 102–104: predict, then read
    (1.7, "is more than 3% from our FP8 rung over our FP16 rung at 8192³", "what did the GPU measure?"),
])
def test_a_wrong_speedup_names_the_rows_it_divided(tiers, answer, symptom, question):
    rule = "Ours at 8192³: 1544 (our FP8 top rung) / 776 (our FP16 top rung) = 1.990; a prediction passes within 3%."
    tiers("ch07.fp8_speedup", answer, symptom, question, rule, results=FP8)


@pytest.mark.tiers
def test_a_percent_is_told_to_divide(twice):
    one, two = twice("ch07.fp8_speedup", 199, results=FP8)
    assert "199 is a percent" in one and "What does the question ask for?" in one, one
    assert "do not multiply by 100" in two, two


def test_the_speedup_key_follows_a_moved_record(monkeypatch):
    monkeypatch.setenv(exercises.ANSWER_KEY_ENV, "1")
    ours8 = fp8.fp8_config().label()
    assert exercises.expected("ch07.fp8_speedup", results=FP8) == pytest.approx(1544 / 776, rel=1e-3)
    moved = _table(FP8, 8192, {ours8: 0.75})                # our FP8 rung 25 % slower: about 1.5×
    assert exercises.expected("ch07.fp8_speedup", results=moved) == pytest.approx(0.75 * 1544 / 776, rel=1e-3)
    assert exercises.check("ch07.fp8_speedup", 0.75 * 1544 / 776, results=moved)
    assert not exercises.check("ch07.fp8_speedup", 1544 / 776, results=moved)
    assert exercises.expected("ch07.fp8_speedup", results=FP8, size=4096) == pytest.approx(1452 / 759, rel=1e-3)


@pytest.mark.tiers
def test_a_moved_record_grades_the_prediction_against_its_own_ratio(twice):
    """A record whose ratio is 1.6: 1.6 passes, the 2× ceiling fails with its diagnosis, and the
    arithmetic names the moved rows."""
    ours8 = fp8.fp8_config().label()
    moved = _table(FP8, 8192, {ours8: 1.6 / (1544 / 776)})   # our FP8 rung at 1.6× our FP16 rung
    assert exercises.check("ch07.fp8_speedup", 1.6, results=moved)
    assert exercises.check("ch07.fp8_speedup", 1.56, results=moved)        # 3 % of 1.6 is 0.048
    one, two = twice("ch07.fp8_speedup", 2.0, results=moved)
    assert "is the 2× ceiling" in one and "what did the GPU measure?" in one and exercises.SECOND in one, one
    assert "1241 (our FP8 top rung) / 776 (our FP16 top rung) = 1.600" in two, two
