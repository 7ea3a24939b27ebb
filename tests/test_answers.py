"""Kept answers (asynctc.core.answers): a passing code check keeps the learner's code beside the
progress file, my_answer gives it back and it runs; a failing check, a solution cell or recording
off keeps nothing; what cannot be written back as source (a lambda) is not kept; 06e's pieces come
from the kept answers."""

import numpy as np
import pytest

import asynctc.tma  # noqa: F401  (registers ch03's exercises)
from asynctc.core import answers, exercises, progress
from asynctc.models import emulate_sm90, pipeline as _pipeline  # noqa: F401  (ch05's exercises)

ROWS = 8


def swizzle_128b(offset):
    row, chunk, byte = offset // 128, offset % 128 // 16, offset % 16
    return int(np.int64(row * 128 + (chunk ^ row % ROWS) * 16 + byte))


def _wrong_swizzle(offset):
    return offset


def full_parity(k, S):
    return _half(k // S)


def _half(n):
    return n % 2


def empty_parity(t, S):
    return (t // S + 1) % 2


@pytest.fixture
def prog(tmp_path, monkeypatch):
    p = tmp_path / "alice.jsonl"
    monkeypatch.setenv(progress.ENV, str(p))
    return p


def test_a_passing_check_keeps_the_answer_and_my_answer_runs_it(prog):
    assert exercises.my_answer("ch03.swizzle_128b") is None
    assert exercises.check("ch03.swizzle_128b", swizzle_128b)
    kept = prog.parent / "alice.answers" / "ch03.swizzle_128b.py"
    assert progress.answers_dir() == kept.parent and kept.is_file()
    text = kept.read_text()
    assert text.startswith("# asynctc: your answer to ch03.swizzle_128b, passed ")
    assert "import numpy as np" in text and "ROWS = 8" in text
    mine = exercises.my_answer("ch03.swizzle_128b")
    assert mine is not swizzle_128b and callable(mine)
    assert all(mine(o) == swizzle_128b(o) for o in range(0, 2048, 7))
    assert answers.passed_on("ch03.swizzle_128b")[:4].isdigit()


def test_a_pair_with_a_helper_is_kept_as_a_pair(prog):
    assert exercises.check("ch05.ring_parities", (full_parity, empty_parity))
    f, e = exercises.my_answer("ch05.ring_parities")
    assert [f(k, 3) for k in range(9)] == [full_parity(k, 3) for k in range(9)]
    assert [e(t, 2) for t in range(9)] == [empty_parity(t, 2) for t in range(9)]


def test_a_failing_check_a_solution_or_recording_off_keeps_nothing(prog, monkeypatch):
    assert not exercises.check("ch03.swizzle_128b", _wrong_swizzle)
    assert exercises.check("ch03.swizzle_128b", swizzle_128b, solution=True)
    assert exercises.my_answer("ch03.swizzle_128b") is None
    assert not (prog.parent / "alice.answers").exists()
    monkeypatch.setenv(progress.ENV, "off")
    assert exercises.check("ch03.swizzle_128b", swizzle_128b)
    assert progress.answers_dir() is None and exercises.my_answer("ch03.swizzle_128b") is None


def test_the_last_passing_answer_wins_and_a_later_wrong_one_does_not_replace_it(prog):
    def swizzle_128b(offset):                    # noqa: F811 - a second, equivalent version
        return offset ^ ((offset >> 7) & 7) << 4
    assert exercises.check("ch03.swizzle_128b", swizzle_128b)
    assert not exercises.check("ch03.swizzle_128b", _wrong_swizzle)
    assert "offset >> 7" in (prog.parent / "alice.answers" / "ch03.swizzle_128b.py").read_text()


def test_what_cannot_be_written_back_is_not_kept(prog, capsys):
    lam = lambda k, S: (k // S) % 2             # noqa: E731
    assert exercises.check("ch05.ring_parities", (lam, empty_parity))
    assert exercises.my_answer("ch05.ring_parities") is None
    assert "not kept as code" in capsys.readouterr().out
    assert answers.source(lambda o: o) is None and answers.source(object()) is None
    assert answers.load_source(answers.source("__global__ void k() {}")) == "__global__ void k() {}"
    assert answers.load_source(answers.source([("fence", 0), ("sync", None)])) == [("fence", 0), ("sync", None)]
    with pytest.raises(KeyError, match="chapter.exercise"):
        exercises.my_answer("swizzle_128b")


def test_keep_says_why_and_a_check_writes_an_answer_back_once(prog, monkeypatch, capsys):
    assert answers.keep("ch03.swizzle_128b", lambda o: o) == (None, answers.NO_SOURCE)
    path, why = answers.keep("ch03.swizzle_128b", swizzle_128b)
    assert why is None and path == prog.parent / "alice.answers" / "ch03.swizzle_128b.py"
    calls = []
    real = answers.source
    monkeypatch.setattr(answers, "source", lambda a: calls.append(a) or real(a))
    lam = lambda k, S: (k // S) % 2             # noqa: E731
    assert exercises.check("ch05.ring_parities", (lam, empty_parity))
    assert len(calls) == 1 and "not kept as code" in capsys.readouterr().out
    monkeypatch.setenv(progress.ENV, "off")                   # recording off: nothing kept, no source asked
    assert answers.keep("ch03.swizzle_128b", swizzle_128b) == (None, answers.OFF) and len(calls) == 1


def test_a_broken_kept_file_reads_as_no_answer(prog):
    d = progress.answers_dir()
    d.mkdir(parents=True)
    (d / "ch04.encode.py").write_text("import no_such_module_here\n__answer__ = 1\n")
    assert exercises.my_answer("ch04.encode") is None


def kstep_desc(desc0, s, major):
    step = 32 if major == "K" else 16 * 128
    return desc0 + (s * step >> 4)


STEP = """if (producer && t < T) {
  if (empty.wait(ts, tp ^ 1u, wg, t))
    load_stage(ta, tb, base + ts * kStageBytes, full[ts], t, m0, n0);
}
"""
LOOP = """full.wait(pos.stage, pos.phase, wg, k);
mma_ktile(acc, wgmma_desc_advance(da0, pos.stage * kStageBytes), wgmma_desc_advance(db0, pos.stage * kStageBytes));
wgmma_wait_group<1>();
if (k > 0 && elected) empty.arrive(prev);
prev = pos.stage;
pos.advance();
"""
FILL = """mbarrier_arrive_expect_tx(full_bar, (BM + BN) * BK * 2);
tma_load_2d(stage, ta, full_bar, kt * BK, m0);
tma_load_2d(stage + BM * BK * 2, tb, full_bar, kt * BK, n0);
"""


def test_06e_runs_the_kept_pieces_and_says_whose_they_are(prog):
    pieces, lines = emulate_sm90.your_pieces()
    assert set(pieces.values()) == {None} and all("the course's" in ln for ln in lines)
    exercises.check("ch03.swizzle_128b", swizzle_128b)
    exercises.check("ch05.ring_parities", (full_parity, empty_parity))
    assert exercises.check("ch04.kstep", kstep_desc)
    answers.save("ch03.stage_fill", FILL)          # as its check keeps it (the check compiles with NVRTC)
    answers.save("ch05.producer_step", STEP)
    answers.save("ch06.consumer_loop", LOOP)
    pieces, lines = emulate_sm90.your_pieces()
    said = {ln.split(":", 1)[0]: ln for ln in lines}
    assert said["swizzle"].startswith("swizzle: your swizzle_128b from chapter 03, passed 20")
    assert said["kstep"].startswith("kstep: your kstep_desc from chapter 04, passed 20")
    assert said["stage_fill"].startswith("stage_fill: your stage-fill lines from chapter 03")
    assert "the course's" in said["encode"] and said["parities"].startswith("parities: your full_parity")
    assert said["producer_step"].startswith("producer_step: your producer step from chapter 05, passed 20")
    assert said["consumer_loop"].startswith("consumer_loop: your consumer loop from deep dive 06e, passed 20")
    r = emulate_sm90.emulate(**pieces)
    assert r.passed and r.used == {"parities": "yours", "stage_fill": "yours", "swizzle": "yours",
                                   "encode": "the course's", "kstep": "yours", "producer_step": "yours",
                                   "consumer_loop": "yours"}
    assert "producer_step: yours" in r.summary() and "consumer_loop: yours" in r.summary()
    assert said["whole_kloop"] == "whole_kloop: the course's (no passing answer to ch06.whole_kloop is kept here)"
    from asynctc.warp_specialization import whole_kloop
    answers.save("ch06.whole_kloop", whole_kloop.SOLUTION)        # as its check keeps it
    said = {ln.split(":", 1)[0]: ln for ln in emulate_sm90.your_pieces()[1]}
    assert said["whole_kloop"].startswith("whole_kloop: your short-name capstone loops from deep dive 06f, passed 20")


def test_06e_names_a_kept_piece_that_is_wrong_for_this_tile(prog):
    answers.save("ch03.stage_fill", FILL.replace("(BM + BN) * BK * 2", "BM * BK * 2"))
    pieces, _ = emulate_sm90.your_pieces()
    r = emulate_sm90.emulate(stage_fill=pieces["stage_fill"])
    assert not r.passed and r.blame == ["stage_fill"]


@pytest.mark.parametrize("name, text, piece", [
    ("ch05.producer_step", STEP.replace("tp ^ 1u,", "tp,"), "producer_step"),
    ("ch06.consumer_loop", LOOP.replace("pos.phase, wg", "pos.phase ^ 1u, wg"), "consumer_loop")])
def test_06e_names_a_kept_producer_step_or_consumer_loop_that_breaks_the_ring(prog, name, text, piece):
    answers.save(name, text)                       # kept as if its check had passed
    pieces, lines = emulate_sm90.your_pieces()
    assert any(ln.startswith(f"{piece}: your ") for ln in lines)
    r = emulate_sm90.emulate(**pieces)
    assert r.diagnosis is not None and r.blame == [piece] and r.used[piece] == "yours"
    assert f"STOPPED by the ring model ({piece})" in r.summary()


def test_a_function_from_python_c_passes_and_says_why_it_is_not_kept(prog):
    """A reader checked a function answer with `python -c`: it passed but so_far did not use it, and
    nothing said why. The check now says so, and how to have it kept."""
    import os, subprocess, sys
    code = ("import asynctc.tma\nfrom asynctc.core import exercises\n"
            "def swizzle_128b(o):\n    return o ^ ((o >> 7) & 7) << 4\n"
            "exercises.check('ch03.swizzle_128b', swizzle_128b)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, progress.ENV: str(prog)}, timeout=120)
    assert "[ch03.swizzle_128b] correct" in out.stdout, out.stdout + out.stderr
    assert "not kept as code" in out.stdout and "python -c" in out.stdout
    assert not (prog.parent / "alice.answers" / "ch03.swizzle_128b.py").exists()


steps = {"not": "source"}            # a module global that an attribute of the same name must not drag in


def _uses_an_attribute_named_like_a_global(t):
    return t.steps + 1


def test_an_attribute_named_like_a_global_does_not_stop_keeping(prog):
    """Reader 33: a correct answer using `t.steps` in a notebook with a global dict `steps` was not
    kept (co_names holds attribute names too), and the check said 'python -c'."""
    text = answers.source(_uses_an_attribute_named_like_a_global)
    assert text is not None and "steps = " not in text
    class T:
        steps = 2
    assert answers.load_source(text)(T()) == 3
