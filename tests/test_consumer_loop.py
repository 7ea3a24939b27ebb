"""Chapter 06's code exercise ch06.consumer_loop: the learner's consumer k-loop compiled into rung 3
with NVRTC (no GPU), read by a small interpreter and judged with the course's models. Its wrong
loops and their hints are MISTAKES rows in tests/test_exercises.py; here: right loops and their
notes, the compile-error path, the kernel's own cubin untouched, the reader on its own, and the
notebook's listing and solution."""
import re
from pathlib import Path

import pytest
from fakes import CONSUMER_LOOP

from asynctc import warp_specialization as W
from asynctc.core import exercises, notebook, runtime
from asynctc.core import loop_reader as L
from asynctc.warp_specialization import consumer_loop as CL

ROOT = Path(__file__).resolve().parent.parent
NAME = "ch06.consumer_loop"

#: The kernel's loop without `broken`: what a learner most likely writes.
PLAIN = CONSUMER_LOOP


def _check(capsys, body) -> tuple[bool, str]:
    ok = exercises.check(NAME, body)
    return ok, capsys.readouterr().out.strip()


def test_the_kernels_own_loop_is_right_instruction_for_instruction(capsys):
    """The body §1 shows after the exercise (the file's loop resolved for rung 3) is the answer key,
    passes, and compiles to the kernel's own SASS."""
    ok, out = _check(capsys, "\n" + CL.kernel_body())
    assert ok and out == (f"[{NAME}] correct — your loop compiles to the kernel's own SASS, instruction "
                          "for instruction, in rung 3's build (the one the ladder times).")
    assert exercises.check(NAME, CL.kernel_body(), solution=True)


@pytest.mark.parametrize("body, words", [
    (PLAIN, ["the loop is right. In rung 3's build 7 of its", "SASS instructions differ from the kernel's (",
             "): the kernel also sets broken when a wait gives up."]),
    # a redundant __syncwarp (chapter 05's habit): one NOP in the loop, named as such
    (CL.kernel_body().replace("prev = pos.stage;", "__syncwarp();\nprev = pos.stage;"),
     ["1 of its", "differs from the kernel's (1 extra NOP (does nothing; one issue slot))"]),
    (PLAIN.replace("k > 0 && elected", "elected && k > 0"), ["correct"]),
    (PLAIN.replace("empty.arrive(prev)", "empty.arrive(prev + 0)"), ["correct"]),
    (PLAIN.replace("pos.advance();", "if (++pos.stage == STAGES) { pos.stage = 0; pos.phase ^= 1u; }"),
     ["correct"]),
    ("const int s = pos.stage;\nif (!full.wait(s, pos.phase, wg, k)) broken = true;\n"
     "mma_ktile(acc, wgmma_desc_advance(da0, s * kStageBytes), wgmma_desc_advance(db0, s * kStageBytes));\n"
     "wgmma_wait_group<1>();\nif (elected && k) empty.arrive(prev);\nprev = s;\npos.advance();\n",
     ["fence_accumulators may go (only chapter 07's promote needs it)"]),
    (PLAIN.replace("fence_accumulators(acc);\n", ""), ["fence_accumulators may go", "promote"]),
    (PLAIN.replace("<1>", "<0>"), ["the loop is right; <0> is not the fastest form (06 §1, after the capstone, "
                                   "says why)"]),
    # wait_group 0 and the k-tile's own stage released in the loop (not the last: the kernel does)
    (PLAIN.replace("<1>", "<0>").replace("if (k > 0 && elected) empty.arrive(prev);",
                                        "if (elected && k + 1 < T) empty.arrive(pos.stage);"),
     ["<0> is not the fastest form"]),
])
def test_right_loops_are_accepted_with_their_notes(capsys, body, words):
    """"correct" in two short sentences: the verdict (a clause per note), then the SASS count."""
    ok, out = _check(capsys, body)
    assert ok and out.startswith(f"[{NAME}] correct"), out
    for w in words:
        assert w in out, out
    assert len(out) < 300 and out.count(". ") <= 1, out


def test_fence_accumulators_changes_no_instruction_here():
    """The note says fence_accumulators may go from this loop: the cubin without it is the cubin
    with it, byte for byte."""
    with_fence, _ = CL.compile_loop(PLAIN)
    without, _ = CL.compile_loop(PLAIN.replace("fence_accumulators(acc);\n", ""))
    assert with_fence.cubin == without.cubin


def test_the_default_builds_cubin_is_untouched():
    """The exercise splices text before compiling; the kernel file is not changed. The kernel's own
    body spliced back (as written, hooks and all) gives the reference cubin byte for byte, and the
    reference is the ladder's rung 3."""
    src = runtime.kernel_path(CL.SOURCE).read_text()
    before, after, _ = CL._source_parts(src)
    raw = src[len(before):len(src) - len(after)]
    assert "tr.event(EV_FULL_BEGIN" in raw and "promote(acc, tot, bs, k, T);" in raw
    assert CL.splice(raw).replace(f'#line 1 "{CL.FILE_NAME}"\n', "").count("#line") == 1
    spliced, _ = CL.compile_loop(raw)
    assert spliced.cubin == CL.reference().cubin == W.compile_ws(W.RUNG_BY_NAME["ws_setmaxnreg"].make("float16")).cubin
    d = CL.sass_difference(spliced.cubin)
    assert d.changed == 0 and d.reordered == 0 and not d.only_kernel and not d.only_yours


@pytest.mark.parametrize("body, want", [
    ("\nfull.wait(pos.stage, pos.phase, wg, k);\nfence_acumulators(acc);\n",
     'line 2 (fence_acumulators(acc);): identifier "fence_acumulators" is undefined'),
    ("full.wait(pos.stage, pos.phase, wg, k);\n\n\nmma_ktile(acc, da0);\n",
     "line 4 (mma_ktile(acc, da0);): too few arguments in function call"),
    ("full.wait(pos.stage, pos.phase, wg, k);\nwgmma_wait_group<k>();\n",
     "line 2 (wgmma_wait_group<k>();): expression must have a constant value"),
    ("full.wait(pos.stage, pos.phase, wg, k);\npos.advance()\n",
     'after your last line: expected a ";"'),
])
def test_a_compile_error_names_the_line_of_the_learners_text(capsys, body, want):
    ok, out = _check(capsys, body)
    assert not ok and out.startswith(f"[{NAME}] not quite — NVRTC cannot compile your loop — "), out
    assert want in out and "/" not in out.split("NVRTC cannot compile your loop")[1].replace(" / ", ""), out


def test_the_template_is_not_answered_and_code_the_reader_cannot_follow_gets_a_sentence(capsys):
    template = ("\n    // your code: wait for stage pos.stage to hold k-tile k, issue its wgmmas, ...\n"
                "    // flight, release the stage of k-tile k − 1 (one elected thread), ...\n")
    ok, out = _check(capsys, template)
    assert not ok and "not answered yet" in out
    ok, out = _check(capsys, PLAIN + "for (int j = 0; j < 1; ++j) {}\n")
    assert not ok and "line 10: the check reads the loop body as straight-line code" in out
    assert "The check reads the loop with the calls of §1" in out


def test_the_reader_runs_the_loop_as_the_kernel_does():
    """Two tiles: prev restarts at 0, pos carries across, and after each tile the kernel's own
    wait_group 0 and release of prev; a thread that is not elected never releases."""
    prog = L.parse(PLAIN)
    its = L.run(prog, stages=4, k_tiles=6, tiles=2, stage_bytes=49152)
    loop = [it for it in its if not it.tail]
    assert [it.i for it in loop] == list(range(12)) and [it.pos for it in loop][4:7] == [(0, 1), (1, 1), (2, 1)]
    waits = [(e.stage, e.parity) for it in loop for e in it.events if e.kind == "wait"]
    assert waits == [(i % 4, (i // 4) % 2) for i in range(12)]
    tails = [it for it in its if it.tail]
    assert [[(e.kind, e.n, e.stage) for e in it.events] for it in tails] == \
        [[("wait_group", 0, None), ("fence", None, None), ("arrive", None, 1)],
         [("wait_group", 0, None), ("fence", None, None), ("arrive", None, 3)]]
    assert not any(e.kind == "arrive" for e in loop[6].events)      # k = 0 of tile 1: prev is 0 again
    other = L.run(prog, stages=4, k_tiles=6, tiles=2, stage_bytes=49152, elected=False)
    assert not any(e.kind == "arrive" for it in other for e in it.events)
    mma = [e for e in loop[5].events if e.kind == "mma"][0]
    assert mma.a == ("da0", 49152) and mma.b == ("db0", 49152)


def test_the_reader_names_the_line_it_cannot_follow():
    with pytest.raises(L.ReadError, match=r"^line 2: wgmma_wait_group<1> names the function without calling it"):
        L.run(L.parse("pos.advance();\nwgmma_wait_group<1>;\n"), stages=4, k_tiles=1, tiles=1, stage_bytes=1)
    with pytest.raises(L.ReadError, match=r"^line 1: stage 7 is outside the ring"):
        L.run(L.parse("empty.arrive(prev + 7);"), stages=4, k_tiles=1, tiles=1, stage_bytes=1)
    with pytest.raises(L.ReadError, match=r"k is the kernel's"):
        L.run(L.parse("k = 2;"), stages=4, k_tiles=1, tiles=1, stage_bytes=1)


def test_the_notebook_hides_the_loop_until_it_is_written_and_its_solution_is_the_kernels():
    """§1's listing leaves the consumer loop's body out (W.LOOP_LINES, patterns that name no
    barrier), and always the producer's k-tile (W.PRODUCER_LINES: its wait on empty and its load
    answer 05's exercise 2 and 06's capstone; readers 105-107); the prose before the exercise quotes none of its lines; the cell after the check — an
    answer cell, empty in the learner notebook — prints them; the worked solution is that body."""
    src = (ROOT / "notebooks" / "src" / "06e_your_gemm_on_the_cpu.py").read_text()
    learner = src[:src.index("<summary>Solutions")]
    at = learner.index(f'exercises.check("{NAME}"')
    before, after = learner[:at], learner[at:]
    assert "omit=W.LISTING_OMIT)" in before and "variant=True" in before
    assert W.LISTING_OMIT == (W.PRODUCER_LINES, W.LOOP_LINES)
    for quoted in ("pos.phase)", "wgmma_wait_group<1>", "empty[prev]", "prev = pos.stage", "k > 0"):
        assert quoted not in before, quoted
    assert re.search(r"# %% output answers a prediction\nif exercises\.after\(\"ch06\.consumer_loop\"\):\n"
                     r"    print\(notebook\.source_excerpt\(ck, variant=True, "
                     r"omit=W\.LOOP_LINES, left_out=True\)\)", after)
    assert not any(re.search(r"full|empty", pat) for pat in W.LOOP_LINES[:2])
    ck = W.compile_ws(W.RUNG_BY_NAME["ws_setmaxnreg"].make("float16"))
    shown = notebook.source_excerpt(ck, *CL.LISTING, variant=True, omit=W.LISTING_OMIT)
    assert "// (11 lines left out: the exercise)" in shown and "full.wait" not in shown
    assert "empty.wait" not in shown and "load_stage(" not in shown and "phase ^ 1" not in shown
    assert "// (6 lines left out: the producer's k-tile: 05's exercise 2, 06's capstone)" in shown
    assert "wgmma_wait_group<0>();" in shown and "empty.arrive(prev);" in shown
    solution = re.findall(r'consumer_loop = """\n(.*?)"""\n', src[src.index("<summary>Solutions"):], re.S)[0]
    def code(t):
        return re.sub(r"\s+", " ", re.sub(r"//[^\n]*", "", t)).strip()
    assert code(solution) == code(CL.kernel_body())


def test_the_prompt_names_everything_in_scope_and_an_undefined_name_gets_the_nearest():
    """06e §2's exercise prompt lists every name the loop needs (CL.IN_SCOPE); a misspelt one is answered
    with the in-scope names closest to it, and one close to nothing with all of them."""
    src = (ROOT / "notebooks" / "src" / "06e_your_gemm_on_the_cpu.py").read_text()
    prompt = src[src.index("**Optional exercise: the capstone's consumer loop"):src.index(f'exercises.check("{NAME}"')]
    for name in CL.IN_SCOPE:
        assert re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", prompt), name
    assert CL.nearest_names("STAGE_BYTES") == ["kStageBytes"]
    assert CL.nearest_names("previous")[0] == "prev" and CL.nearest_names("xyz") == []


def test_an_unclosed_brace_is_named_not_a_nul_byte():
    """NVRTC reports an unclosed brace 'At end of source' (no file and line) and ends its log with a
    NUL byte: the hint quotes the error line, never the NUL (core.exercises.nvrtc_errors)."""
    hint = CL.judge("if (k) {\n")
    assert "\x00" not in hint and 'expected a "}"' in hint, hint


@pytest.mark.parametrize("body, symptom, fix", [
    (PLAIN.replace("empty.arrive(prev)", "empty.arrive(pos.stage)"),
     "the producer may refill stage 1 while those wgmmas still read it", "empty.arrive(prev), after wgmma_wait_group<1>()"),
    (PLAIN.replace("k > 0 && elected", "elected"), "At k = 0 prev is still 0", "release only when k > 0"),
    (PLAIN.replace("prev = pos.stage;", ""), "prev is never set", "Remember this k-tile's stage in prev"),
])
def test_a_release_hint_is_a_ladder_the_symptom_first_the_fix_on_a_repeat(monkeypatch, body, symptom, fix):
    """The first failure names what the model saw; the same failure again adds the fix."""
    monkeypatch.setattr(CL, "_TOLD", {})
    first, second = CL.judge(body), CL.judge(body)
    assert symptom in first and fix not in first and "fail here again" in first, first
    assert second.startswith(first.split(" (fail here again")[0]) and fix in second, second
