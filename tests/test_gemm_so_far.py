"""Your Hopper GEMM so far (asynctc.models.gemm_so_far): with no kept answers every piece is the
course's and the tile is right; a kept right answer is "yours" and the tile stays right; a kept
broken answer is named; a piece of a later chapter "comes in" it. Kept answers live in a temporary
progress folder, never the user's."""

import numpy as np
import pytest

import asynctc.tma  # noqa: F401  (registers ch03's exercises)
from asynctc.core import answers, exercises, progress
from asynctc.models import gemm_so_far as g


def swizzle_128b(offset):
    row, chunk, byte = offset // 128, offset % 128 // 16, offset % 16
    return row * 128 + (chunk ^ row % 8) * 16 + byte


def kstep_desc(desc0, s, major):
    return desc0 + (s * 32 >> 4)


def kstep_in_elements(desc0, s, major):
    return desc0 + (s * 16 >> 4)


def full_parity(k, S):
    return (k // S) % 2


def empty_parity(t, S):
    return (t // S + 1) % 2


def swizzle_that_raises(offset):
    return [offset][1]


@pytest.fixture
def prog(tmp_path, monkeypatch):
    p = tmp_path / "alice.jsonl"
    monkeypatch.setenv(progress.ENV, str(p))
    return p


def _status(rep):
    return {piece: status for piece, status, _ in rep.rows}


def test_no_kept_answers_all_course_pieces_and_the_tile_is_right(prog):
    rep = g.so_far("06", rng=np.random.default_rng(1))
    assert set(_status(rep).values()) == {"the course's", "not yet"} and rep.passed and not rep.blame
    assert "is right: worst error / bound" in rep.verdict and "(not passed yet)" in rep.text()
    core = ["stage_fill", "swizzle", "kstep", "producer_step", "cuda_kloop", "whole_kloop", "consumer_loop"]
    assert [p for p, *_ in rep.rows] == core          # the optional deep dives' pieces: once yours
    assert "warm-up loops (06f) optional; the course's orders the tile in 06e §4" in rep.text()
    assert "capstone (06)       not passed yet; real CUDA" in rep.text()


def test_a_passed_real_call_capstone_counts_without_the_warm_up(prog):
    """Newcomer 57: the report listed the warm-up as "not passed yet" and did not mention a passed
    ch06.cuda_kloop; it has its own row, and the consumer note calls the loop yours."""
    from asynctc.warp_specialization import cuda_kloop
    assert exercises.check("ch06.cuda_kloop", cuda_kloop.solution())       # NVRTC and the CPU run
    rep = g.so_far("06", rng=np.random.default_rng(1))
    assert _status(rep)["cuda_kloop"] == "yours" and "capstone (06)       yours ✓" in rep.text()
    assert "(deep dive 06e §2 asks your capstone's consumer loop again" in " ".join(rep.text().split())


def test_a_passed_capstone_is_yours_from_06(prog):
    """Reader 76: after passing 06's capstone, the report still named only 06e's consumer loop."""
    from asynctc.core import exercises
    from asynctc.warp_specialization import whole_kloop
    assert not any(p == "whole_kloop" for p, *_ in g.so_far("05").rows)
    assert exercises.check("ch06.whole_kloop", whole_kloop.SOLUTION)
    row = next(r for r in g.so_far("06", rng=np.random.default_rng(1)).rows if r[0] == "whole_kloop")
    assert row[1] == "yours" and "warm-up loops (06f) yours ✓" in row[2], row


def test_from_06_the_course_consumer_loop_says_why_06s_exercise_is_not_it(prog):
    """Reader 36: "consumer loop (06e) the course's (not passed yet)" after 06's capstone read as if
    the capstone did not count; a note under the row says what each one is."""
    assert not g.so_far("05").notes
    text = g.so_far("06", rng=np.random.default_rng(1)).text()
    lines = text.splitlines()
    at = next(i for i, t in enumerate(lines) if t.startswith("  rung-3 consumer loop (06e)"))
    note = " ".join(t.strip() for t in lines[at + 1:at + 3])
    assert note == g.CONSUMER_NOTE.format(what="the consumers' loop")
    assert lines[at + 1].startswith(" " * 22 + "(deep dive 06e §2 asks the consumers' loop again")
    assert lines[at] == "  rung-3 consumer loop (06e) optional; the course's runs until you write it"
    assert lines[at - 1].startswith("  warm-up loops (06f)")           # reader 81: the capstone's row first
    assert text.count("the course's runs") == 1, text                  # newcomer 56: said once, not twice


def test_after_a_passed_capstone_the_consumer_loop_row_says_it_is_optional(prog):
    """Readers 95-96: "consumer loop (06e) the course's (not passed yet)" right after passing the
    capstone's consumer loops; the row says it is 06e's optional exercise, the note that it asks the
    capstone's consumer loop again."""
    from asynctc.warp_specialization import whole_kloop
    assert exercises.check("ch06.whole_kloop", whole_kloop.SOLUTION)
    text = g.so_far("06", rng=np.random.default_rng(1)).text()
    assert not any(t.startswith("  consumer loop") and "not passed" in t for t in text.splitlines())
    assert "  rung-3 consumer loop (06e) optional; the course's runs until you write it\n" in text
    assert "(deep dive 06e §2 asks your capstone's consumer loop again" in " ".join(text.split())


def test_from_07_the_promotion_has_a_row_outside_the_tile(prog):
    import asynctc.fp8  # noqa: F401  (registers ch07's exercises)
    from asynctc.fp8.exercises import promoted_sum
    assert "promotion" not in _status(g.so_far("06"))
    def broken(products, interval):
        return 0.0
    for attempt in (None, broken):                # before exercise 3 passes: never tried, then a wrong try
        if attempt is not None:
            assert not exercises.check("ch07.promotion", attempt)
        rep = g.so_far("07")
        lines = rep.text().splitlines()
        assert _status(rep)["promotion"] == "not yet" and "promotion (07)      not passed yet" in rep.text()
        assert lines[-1].startswith("The tile, run on the CPU, is right") and rep.passed   # the tile line stays
    assert exercises.check("ch07.promotion", promoted_sum)
    rep = g.so_far("07")
    assert _status(rep)["promotion"] == "yours" and "FP8 only, not in this fp16 tile" in rep.text()
    assert "promotion" not in rep.result.used and rep.passed
    assert rep.text().splitlines()[-1].startswith("The tile, run on the CPU, is right")


def test_recording_off_is_the_same_as_nothing_kept(monkeypatch):
    monkeypatch.setenv(progress.ENV, "off")
    rep = g.so_far("03")
    assert rep.passed and _status(rep)["swizzle"] == "the course's"


def test_a_kept_right_answer_is_yours_and_the_tile_stays_right(prog):
    assert exercises.check("ch03.swizzle_128b", swizzle_128b)
    answers.save("ch04.kstep", kstep_desc)
    rep = g.so_far("04")
    st = _status(rep)
    assert st["swizzle"] == st["kstep"] == "yours" and st["stage_fill"] == "the course's"
    assert rep.passed and "is right" in rep.verdict
    row = next(t for p, _, t in rep.rows if p == "swizzle")
    assert row.startswith("swizzle (03)") and "yours ✓ passed 20" in row and row.endswith(" UTC")


def test_a_kept_broken_kstep_is_named(prog):
    answers.save("ch03.swizzle_128b", swizzle_128b)
    answers.save("ch04.kstep", kstep_in_elements)
    rep = g.so_far("04")
    assert not rep.passed and rep.blame == ["kstep"]
    assert "your k-step breaks it" in rep.verdict and "wrong" in rep.verdict


def test_a_piece_that_raises_is_named_not_raised(prog):
    answers.save("ch03.swizzle_128b", swizzle_that_raises)
    rep = g.so_far("03")
    assert rep.result is None and rep.blame == ["swizzle"] and "IndexError" in rep.verdict


def test_a_later_chapters_piece_comes_in_that_chapter_and_is_not_used(prog):
    answers.save("ch04.kstep", kstep_in_elements)          # broken, but chapter 04 is not reached yet
    rep = g.so_far("03")
    assert _status(rep)["kstep"] == "later" and rep.passed
    assert "k-step (04)" in rep.text() and "comes in chapter 04" in rep.text()
    assert _status(g.so_far(4))["kstep"] == "yours"
    rep5 = g.so_far("04")
    assert _status(rep5)["producer_step"] == "later" and "comes in chapter 05" in rep5.text()


def test_a_deep_dive_piece_shows_once_it_is_yours_and_only_from_its_chapter(prog):
    answers.save("ch05.ring_parities", (full_parity, empty_parity))
    assert "parities" not in _status(g.so_far("04"))
    rep = g.so_far("05")
    assert _status(rep)["parities"] == "yours" and rep.result.used["parities"] == "yours" and rep.passed


def test_answers_are_read_afresh_on_every_call(prog):
    answers.save("ch04.kstep", kstep_in_elements)
    assert not g.so_far("04").passed
    answers.save("ch04.kstep", kstep_desc)
    assert g.so_far("04").passed


@pytest.mark.parametrize("bad", ["02", "11", "x", 0])
def test_chapter_is_checked(bad):
    with pytest.raises(ValueError, match="chapter="):
        g.so_far(bad)


# --- your kernel, timed: the SASS identity kept with chapter 05's and 06's code answers ----------

def test_no_kept_answer_no_timed_line(prog):
    assert g.timed_line(5) is None and g.timed_line(6) is None and g.timed_line(4) is None
    assert g.so_far("05", rng=np.random.default_rng(1)).timed is None


def test_the_course_step_kept_is_timed_from_the_record_and_a_differing_one_is_not(prog):
    from asynctc.core import records
    from asynctc.pipeline import producer_step as ps
    step = ps.kernel_step()
    assert exercises.check("ch05.producer_step", step)
    kept = answers.meta("ch05.producer_step")["sass"]
    assert kept["same"] and kept["changed"] == 0 and kept["config"] == ps.timed_config().label()
    line = g.so_far("05", rng=np.random.default_rng(1)).timed
    rec = records.load("pipeline")
    row = next(r for r in rec.results["sweep"] if r["kernel"] == "pipeline" and r["size"] == 4096
               and r["dtype"] == "float16" and r["bn"] == 256 and r["stages"] == 4
               and r["out_dtype"] == "float16")
    cublas = next(r["tflops"] for r in rec.results["sweep"] if r["kernel"] == "cuBLAS"
                  and r["size"] == 4096 and r["dtype"] == "float16")
    number = (f"{row['tflops']:.0f} TFLOP/s at 4096³ fp16, {row['tflops'] / cublas:.2f} of cuBLAS "
              f"(record pipeline, depth sweep, {rec.provenance['date'][:10]})")
    assert line == (f"Your producer step compiles to the course kernel's SASS, instruction for "
                    f"instruction, in the timed build ({ps.timed_config().label()}), so the H200's "
                    f"recorded run is your kernel's: {number}.")
    assert g.timed_line(4) is None and "Your producer step" in g.so_far("05").text()
    # a right step that leaves broken unset: another build. The check's note and this line give
    # the same count, both the timed build's (this line names it); the number is the course kernel's
    other = step.replace("broken = true;", "")
    assert other != step and exercises.check("ch05.producer_step", other)
    kept = answers.meta("ch05.producer_step")["sass"]
    away = f"in the timed build ({ps.timed_config().label()})"
    assert f"In the timed build {kept['changed']} of its {kept['total']} SASS" in ps.judge(other)
    line = g.timed_line(5)
    assert line.startswith(f"Your producer step: {away} {kept['changed']} of your kernel's "
                           f"{kept['total']} SASS instructions differ from the course's (")
    assert line.endswith(f"No recorded run is exactly yours; the course kernel's, {kept['changed']} "
                         f"instructions different, ran at {number}.")
    assert "your kernel's:" not in line


def test_a_kept_answer_without_the_fact_or_with_anothers_says_nothing(prog):
    d = progress.answers_dir()
    d.mkdir(parents=True)
    text = "__answer__ = 'x'\n"
    (d / "ch06.consumer_loop.py").write_text(answers.HEADER.format(name="ch06.consumer_loop", time="t") + text)
    assert answers.meta("ch06.consumer_loop") is None and g.timed_line(6) is None
    # facts of an earlier answer (another hash) are not this answer's
    (d / "ch06.consumer_loop.json").write_text('{"answer": "0", "sass": {"same": true}}')
    assert answers.meta("ch06.consumer_loop") is None and g.timed_line(6) is None


def test_the_consumer_loop_line_reads_rung_3(prog, monkeypatch):
    from asynctc.core import records
    from asynctc.warp_specialization import consumer_loop as cl
    d = progress.answers_dir()
    d.mkdir(parents=True)
    text = "__answer__ = 'loop'\n"
    (d / "ch06.consumer_loop.py").write_text(answers.HEADER.format(name="ch06.consumer_loop", time="t") + text)
    facts = {"answer": answers._digest(text), "sass": {"same": True, "changed": 0, "total": 900,
                                                       "config": cl.config().label()}}
    (d / "ch06.consumer_loop.json").write_text(__import__("json").dumps(facts))
    monkeypatch.setattr(g._e, "_usable", lambda piece, got: got is not None)
    rung = next(r for r in records.load("warp_specialization").results["ladder"]
                if r["rung"] == 3 and r["size"] == 4096 and r["dtype"] == "float16")
    line = g.timed_line(6)
    assert f"{rung['tflops']:.0f} TFLOP/s at 4096³ fp16, {rung['of_cublas']:.2f} of cuBLAS" in line
    assert "record warp_specialization, rung 3" in line
    assert line.startswith("Your consumer loop compiles to the course kernel's SASS, instruction for "
                           f"instruction, in the timed build ({cl.config().label()}), so the H200's "
                           "recorded run is your kernel's: ")
    # one instruction away (a redundant __syncwarp): the course's number, labelled the course's
    facts["sass"] = {"same": False, "changed": 1, "total": 900, "extra": {"NOP": 1}, "fewer": {},
                     "reordered": 0, "config": cl.config().label()}
    (d / "ch06.consumer_loop.json").write_text(__import__("json").dumps(facts))
    number = line.split("your kernel's: ", 1)[1]
    assert g.timed_line(6) == (f"Your consumer loop: in the timed build ({cl.config().label()}) 1 of "
                               "your kernel's 900 SASS instructions differ from the course's (1 extra "
                               "NOP (does nothing; one issue slot)). No recorded run is exactly yours; "
                               f"the course kernel's, 1 instruction different, ran at {number}")
    # an older kept fact (no kinds) and a build no record holds: the count, no number
    facts["sass"] = {"same": False, "changed": 7, "total": 900, "config": "another build"}
    (d / "ch06.consumer_loop.json").write_text(__import__("json").dumps(facts))
    assert g.timed_line(6) == ("Your consumer loop: in the timed build (another build) 7 of your "
                               "kernel's 900 SASS instructions differ from the course's; no recorded run is yours.")


def test_the_difference_in_words():
    from asynctc.core import sass
    assert sass.difference_words({}, {"WARPSYNC": 1}) == "1 extra WARPSYNC"
    assert sass.difference_words({"ISETP": 2, "IMAD": 1}, {"BRA": 1, "IMAD": 1}) == \
        "2 fewer ISETP, 1 extra BRA, 1 with another operand or predicate"
    assert sass.difference_words({"IMAD": 5, "R2UR": 2}, {"UIADD3": 2}, gloss=True) == \
        ("5 fewer IMAD (integer multiply-add), 2 fewer R2UR (register → uniform register), "
         "2 extra UIADD3 (uniform 3-input add)")
    assert sass.difference_words({}, {}, reordered=3) == "3 in another order"
    assert sass.difference_words({"A": 4, "B": 3, "C": 2, "D": 1}, {}) == "4 fewer A, 3 fewer B, 2 fewer C, …"
    text = "/*0000*/ IMAD R1, R2, R3 ;\n/*0010*/ @P0 BRA `(.L_x_1) ;\n/*0020*/ NOP ;\n"
    same = text.replace("R1, R2", "R4, R5").replace(".L_x_1", ".L_x_9")
    assert sass.difference(text, same).same and sass.normalised(text) == ["IMAD R, R, R", "@P BRA"]
    d = sass.difference(text, text.replace("/*0010*/", "/*0008*/ WARPSYNC 0xffffffff ;\n/*0010*/"))
    assert (d.changed, d.away, d.total, d.only_yours, d.same) == (1, 1, 2, {"WARPSYNC": 1}, False)
