"""Chapter 05's code exercise ch05.producer_step: NVRTC compiles the learner's refill step into
gemm_pipeline; the loop reader and the ring model judge it (asynctc.pipeline.producer_step)."""

import pytest

from asynctc.core import exercises
from asynctc.pipeline import producer_step as ps

GOOD = """if (producer && t < T && !broken) {
  if (empty.wait(ts, tp ^ 1u, wg, t))
    load_stage(ta, tb, base + ts * kStageBytes, full[ts], t, m0, n0);
  else broken = true;
}"""


def test_the_kernels_own_step_and_a_plain_one_pass():
    assert isinstance(ps.judge(ps.kernel_step()), exercises.Accepted)
    assert ps.judge(ps.kernel_step()) == "your step compiles to the kernel's own instructions."
    assert isinstance(ps.judge(GOOD), exercises.Accepted)


def test_a_step_without_broken_passes_and_says_it_is_harmless():
    note = ps.judge(GOOD.replace("  else broken = true;\n", ""))
    assert isinstance(note, exercises.Accepted) and "leaving broken unset is harmless" in note
    # the count is the timed build's, with at most three kinds of instruction that differ
    d = ps.sass_identity(GOOD.replace("  else broken = true;\n", ""))
    assert not d["same"] and (d["extra"] or d["fewer"])
    assert f"In the timed build {d['changed']} of its {d['total']} SASS instructions differ from the kernel's (" in note
    kinds = note.split("the kernel's (", 1)[1]
    # (round 62: each kind glossed in a few words, so two kinds and a longer cap)
    assert kinds.count(",") <= 2 and "(integer multiply-add)" in kinds and len(note) < 260 \
        and note.count(". ") <= 1, note


def test_a_step_that_compiles_otherwise_is_right_in_two_sentences():
    """A right step written another way: the verdict, then the SASS count (not a paragraph)."""
    other = GOOD.replace("base + ts * kStageBytes", "base + (t % STAGES) * kStageBytes")
    note = ps.judge(other)
    assert isinstance(note, exercises.Accepted) and note.startswith("the protocol is right. In the timed build ")
    assert note.endswith(": ptxas's layout, not the protocol.") and len(note) < 230, note


def test_a_parity_from_t_passes_and_names_the_kernels_phase_bit():
    """Exercise 2 asks for the parity from t (§1's rule): right, and a few instructions from the
    kernel's, whose wait flips the phase bit it carries (tp ^ 1)."""
    note = ps.judge(GOOD.replace("tp ^ 1u", "(t / STAGES + 1) % 2"))
    assert isinstance(note, exercises.Accepted) and note.startswith("the protocol is right. In the timed build ")
    assert note.endswith("the kernel flips a phase bit it carries instead (said back below).") and len(note) < 260


def test_the_blanks_are_not_an_answer():
    """The cell's skeleton (guard, parity, load, give-up left blank) is unanswered, not a compile error."""
    with pytest.raises(exercises.NotAnswered, match="fill the 4 blanks ___"):
        ps.judge(ps.BLANKS)
    with pytest.raises(exercises.NotAnswered, match="fill the 1 blank ___"):
        ps.judge(GOOD.replace("tp ^ 1u", "___"))


def test_a_load_after_a_timed_out_wait_is_rejected():
    hint = ps.judge(GOOD.replace("if (empty.wait(ts, tp ^ 1u, wg, t))", "empty.wait(ts, tp ^ 1u, wg, t);")
                    .replace("  else broken = true;\n", ""))
    assert not isinstance(hint, exercises.Accepted) and "timed out (returned false)" in hint, hint
    hint = ps.judge(GOOD.replace("if (empty.wait(ts, tp ^ 1u, wg, t))",
                                 "if (!empty.wait(ts, tp ^ 1u, wg, t)) broken = true;")
                    .replace("  else broken = true;\n", ""))
    assert not isinstance(hint, exercises.Accepted) and "load only if the wait returned true" in hint, hint


def test_the_old_names_rs_and_rp_get_the_names_in_scope():
    """A step written with round 50's names (rs, rp) is a compile error that names the step's names."""
    old = GOOD.replace("ts, tp ^ 1u,", "rs, rp,").replace("ts", "rs")
    hint = ps.judge(old)
    assert hint.startswith("NVRTC cannot compile your step"), hint
    assert "rs (r's stage) and rp (r's own phase): names from an older version of the step;" in hint, hint
    assert "k-tile t = r + STAGES and its stage ts — t's, not r's" in hint, hint
    assert "names in scope: producer, r, t, ts, STAGES," in hint, hint
    # no 1:1 rename (rp → tp would deadlock: rp was r's own phase, tp ^ 1) and no parity handed over
    assert "rp → tp" not in hint and "tp ^ 1" not in hint and "its phase tp" not in hint, hint
    one = ps.judge(GOOD.replace("ts, tp ^ 1u,", "ts, rp,"))
    assert ". rp (r's own phase): names from an older version of the step;" in one and "rs (" not in one, one


def test_the_splice_leaves_the_kernel_file_alone():
    src = ps.splice(ps.kernel_step())
    assert src.count('#line 1 "your step"') == 1 and ps.HEAD not in src


@pytest.mark.parametrize("wrong, says", [
    (GOOD.replace("tp ^ 1u,", "tp,"), "a wait that never ends, at k-tile 4"),
    (GOOD.replace("full[ts], t,", "full[ts], t - 1,"), "r + S − 1 = 3"),
    (GOOD.replace("full[ts], t,", "full[ts], t + 1,"), "r + S + 1 = 5"),
    (GOOD.replace(" && t < T", ""), "past K"),
    (GOOD.replace("wg, t))", "wg, r))"), "labelled k-tile 0 — r, the k-tile just released,"),
    (GOOD.replace("wg, t))", "wg, t - 1))"), "labelled k-tile 3; the label"),
    ("if (producer && t < T) load_stage(ta, tb, base + ts * kStageBytes, full[ts], t, m0, n0);",
     "a stage overwritten while still read, at k-tile 4"),
    (GOOD.replace("producer && ", ""), "other than the producer"),
    (GOOD.replace("m0, n0);", "m0, n0)"), "NVRTC cannot compile"),
])
def test_wrong_steps_are_named(wrong, says):
    hint = ps.judge(wrong)
    assert not isinstance(hint, exercises.Accepted) and says in hint, hint


def test_the_prompt_names_everything_in_scope():
    """Exercise 2's prompt lists every name the step needs (IN_SCOPE), each with a few words."""
    import re
    from pathlib import Path
    src = (Path(__file__).resolve().parent.parent / "notebooks" / "src" / "05_pipelines.py").read_text()
    prompt = src[src.index("**Exercise 2"):src.index('exercises.check("ch05.producer_step"')]
    for name in ps.IN_SCOPE:
        assert re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", prompt), name


def test_the_notebook_cell_is_the_skeleton():
    """05 §2's exercise cell holds BLANKS as it stands, so that what the check takes as unanswered is
    what the learner is handed."""
    from pathlib import Path
    src = (Path(__file__).parents[1] / "notebooks" / "src" / "05_pipelines.py").read_text()
    assert f'producer_step = """{ps.BLANKS}"""' in src


def test_the_listing_before_exercise_2_keeps_the_code_and_leaves_the_parity_to_the_learner():
    """Round 63 readers: the listing's comments stated t's phase as (t / S) mod 2, so only tp ^ 1u
    was left to think about. Chapter 05 §2 rewords them (comments=), the kernel's code unchanged."""
    import pathlib
    import re
    from asynctc.core import notebook
    args = ("pipeline.cu", r'^extern "C" __global__ void', r"^}")
    plain = notebook.source_excerpt(*args, variant=True, omit=ps.SKELETON)
    shown = notebook.source_excerpt(*args, variant=True, omit=ps.SKELETON, comments=ps.LISTING_COMMENTS)

    def code(text):
        return [ln.split("//")[0].rstrip() for ln in text.splitlines() if ln.split("//")[0].strip()]
    assert code(shown) == code(plain) and len(shown.splitlines()) == len(plain.splitlines())
    tp = next(ln for ln in shown.splitlines() if "const u32 tp =" in ln)
    assert tp.endswith("// t's phase, from r's: t is the stage's next fill"), tp
    for said in ("t / S", "f mod 2", "phase tp", "previous fill"):     # nothing states the refill's parity
        assert said not in shown, said
    assert "(t / S) mod 2" in plain                                   # the kernel file keeps its comments
    src = (pathlib.Path(__file__).parents[1] / "notebooks/src/05_pipelines.py").read_text()
    assert re.search(r"omit=pl\.producer_step\.SKELETON,\s+comments=pl\.producer_step\.LISTING_COMMENTS", src)
    with pytest.raises(ValueError, match="no commented line"):
        notebook.source_excerpt(*args, comments=((r"no such line", "x"),))


def test_a_return_where_the_wait_gives_up_says_what_it_would_do():
    """A ``return`` in the else branch: not "the check does not follow 'return'", but why it is wrong
    there (the thread leaves the loop) and what the kernel does instead (broken, stay in the loop)."""
    hint = ps.judge(GOOD.replace("else broken = true;", "else return;"))
    assert not isinstance(hint, exercises.Accepted) and hint.startswith("line 4: a return here leaves the kernel"), hint
    assert "does not follow" not in hint and "skips the rest of its k-tiles" in hint and "share of C" in hint, hint
    assert "set broken = true and stay in the loop" in hint, hint


def test_a_guard_t_le_T_is_named_as_off_by_one():
    """``t <= T`` loads k-tile T only (one past the last): named as the guard's off-by-one, not as a
    missing guard; a missing guard (loads past T) keeps its hint."""
    hint = ps.judge(GOOD.replace("t < T", "t <= T"))
    assert not isinstance(hint, exercises.Accepted) and "one past the last" in hint, hint
    assert "t < T, not t <= T" in hint and "is missing" not in hint, hint
    missing = ps.judge(GOOD.replace(" && t < T", ""))
    assert "the guard t < T is missing" in missing and "one past" not in missing, missing


@pytest.mark.parametrize("wrong, first, more", [
    (GOOD.replace("t < T", "t <= T").replace("tp ^ 1u,", "tp,"), "one past the last", 1),
    (GOOD.replace("tp ^ 1u,", "tp,").replace("wg, t))", "wg, r))"), "with parity", 1),
    (GOOD.replace("producer && ", "").replace("wg, t))", "wg, r))"), "other than the producer", 1),
    (GOOD.replace(" && t < T", "").replace("wg, t))", "wg, t - 1))")
     .replace("if (empty.wait(ts, tp ^ 1u, wg, t - 1))", "empty.wait(ts, tp ^ 1u, wg, t - 1);")
     .replace("  else broken = true;\n", ""), "past K", 2),
    (GOOD.replace("tp ^ 1u,", "tp,"), "with parity", 0),
])
def test_a_second_mistake_is_counted(wrong, first, more):
    """As 03's stage_fill and 09's checks say: the first mistake named, and how many kinds remain."""
    hint = exercises.told(ps.judge(wrong), rule=True)
    assert first in hint, hint
    tail = f"(And {more} more mistake{'s' if more > 1 else ''}: fix this one first.)"
    assert hint.endswith(tail) if more else "more mistake" not in hint, hint


def test_tp_as_the_parity_is_named_as_the_listings_phase_bit():
    import re
    from asynctc.core import exercises as ex
    from asynctc.pipeline import producer_step as ps
    wrong = re.sub(r"empty\.wait\(ts,\s*[^,]+,", "empty.wait(ts, tp,", ps._producer_step(), count=1)
    hint = ps.judge(wrong)
    assert "`tp`, the listing's phase bit, is exactly that phase" in ex.told(hint, rule=True)
    other = re.sub(r"empty\.wait\(ts,\s*[^,]+,", "empty.wait(ts, (t / STAGES) & 1,", ps._producer_step(), count=1)
    assert "listing's phase bit" not in ex.told(ps.judge(other), rule=True)
