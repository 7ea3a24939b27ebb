"""Listings hide the experiment hooks by default (asynctc.core.hooks, notebook.source_excerpt):
the code the default build compiles, evaluated from the kernels' own defaults; ``hooks=True`` is the
source as written."""

import re

import pytest

from asynctc.core import hooks, notebook, runtime


def _written(source, start=None, end=None):
    """source_excerpt as it was before hooks were hidden (the reference for hooks=True)."""
    text = runtime.kernel_path(source).read_text()
    if start:
        lines = text.splitlines()
        i = next(k for k, ln in enumerate(lines) if re.search(start, ln))
        j = len(lines)
        if end:
            j = next(k for k in range(i + 1, len(lines)) if re.search(end, lines[k])) + 1
        text = "\n".join(lines[i:j])
    return text


CASES = [("pitfalls.cu", r"^  // ---- consumer warpgroup", r"^  if \(tid == 0\) \{$"),
         ("pipeline.cu", r"^  for \(int k = 0; k < T; \+\+k\) \{", r"^      __syncwarp"),
         ("pipeline.cu", r"^// ---- the producer's half", r"^}$"),
         ("mma_sync.cu", r"for \(int kt = 0; kt < KT", r"^  }$"),
         ("wgmma.cu", r"  // fence \(the registers were written above\)", r"wgmma_wait_group<0>"),
         ("warp_specialization.cu", r"^    // ---------------- producer warpgroup", r"CLUSTER == 1\) return"),
         ("pipeline.cu", None, None), ("ptx/mma.cuh", r"^template <>", r"^}")]


@pytest.mark.parametrize("source,start,end", CASES)
def test_hooks_true_is_the_source_as_written(source, start, end):
    assert notebook.source_excerpt(source, start, end, hooks=True) == _written(source, start, end)
    assert notebook.show_source(source, start, end, hooks=True).data == _written(source, start, end)


def test_an_excerpt_without_hooks_is_unchanged():
    for args in (("ptx/mma.cuh", r"^template <>", r"^}"), ("ptx/wgmma.cuh",), ("tcgen05.cu",)):
        assert notebook.source_excerpt(*args) == notebook.source_excerpt(*args, hooks=True)


def _note(text):
    last = text.splitlines()[-1].strip()
    assert last.startswith("// (experiment hooks hidden: ") and "hooks=True" in last, last
    return last


def test_bug_blocks_keep_the_default_build():
    text = notebook.source_excerpt(*CASES[0])
    code = text.splitlines()[:-1]
    assert not any(re.search(r"\bBUG\b|^\s*#\s*(if|else|endif)", ln) for ln in code), text
    for kept in ("const u32 pf = pass & 1;", "bulk_wait_group_read<0>();", "const u32 phys = q ^ (r % 8);",
                 "if (lane == 0) mbarrier_arrive(smem_u32(&empty[s]));", "fence_proxy_async_shared_cta();"):
        assert kept in text, kept
    for gone in ("(pass + 1) & 1", "spin_ns(STRESS_NS)", "const u32 phys = q;"):
        assert gone not in text, gone
    note = _note(text)
    n_dropped = len(_written(*CASES[0]).splitlines()) - len(code)
    assert f"{n_dropped} lines dropped" in note and "BUG" in note


def test_trace_calls_and_break_folded():
    text = notebook.source_excerpt(*CASES[1])
    assert "tr." not in text and "BREAK" not in text.splitlines()[-2]
    assert "      if (elected) {" in text.splitlines()
    assert "load_stage(ta, tb, base + rs * kStageBytes" in text      # the code around stays
    note = _note(text)
    assert "TRACE" in note and "BREAK" in note and "8 lines dropped" in note
    producer = notebook.source_excerpt(*CASES[2])
    assert "mbarrier_arrive_expect_tx(full_bar, kStageBytes);" in producer
    assert "1 line simplified" in _note(producer)


def test_ablate_and_mismatch_folded():
    text = notebook.source_excerpt(*CASES[3])
    assert "ABLATE" not in "\n".join(text.splitlines()[:-1])
    assert "const int buf = kt & 1;" in text and "const bool refill = kt + 1 < KT;" in text
    assert "ABLATE" in _note(text)
    w = notebook.source_excerpt(*CASES[4])
    assert "mismatch(" not in w and "const u64 db = descs[2 * s + 1] + (base_addr >> 4);" in w
    assert "MISMATCH_LAYOUT" in _note(w)


def test_a_constant_if_keeps_the_branch_that_runs():
    """warp_specialization.cu's `if (TMA_ONCE && …) full.arrive(…); else load_stage(…);`."""
    text = notebook.source_excerpt(*CASES[5])
    assert "TMA_ONCE" not in text.splitlines()[-2] and "full.arrive(pos.stage)" not in text
    assert re.search(r"^          load_stage\(ta, tb, base \+ pos\.stage", text, re.M)
    assert "tr.open" not in text and "tr.close" not in text


def test_a_pattern_inside_a_hidden_block_still_cuts_the_excerpt():
    """The excerpt is cut from the source as written, then the hooks are hidden."""
    text = notebook.source_excerpt("pitfalls.cu", start=r"^#if BUG == BUG_LEADER_ARRIVES_EARLY",
                                   end=r"spin_ns\(STRESS_NS\)")
    assert text.splitlines()[-1].startswith("// (experiment hooks hidden: 3 lines dropped")
    assert notebook.source_excerpt("pitfalls.cu", start=r"spin_ns\(STRESS_NS\)", end=r"^#endif",
                                   hooks=True).startswith("    spin_ns")


def test_the_compiled_kernels_define_wins():
    text = runtime.kernel_path("pitfalls.cu").read_text()
    lines = text.splitlines()
    shown = hooks.hide(text, runtime.kernel_path("pitfalls.cu"), {"BUG": 2})
    i = next(k for k, ln in enumerate(lines) if "const u32 pf = (pass + 1) & 1;" in ln)
    assert shown[i].text == lines[i] and shown[i + 2].text is None      # the flipped parity's build


def test_what_cannot_be_evaluated_stays_shown():
    src = "\n".join(["#ifndef ABLATE", "#define ABLATE 0", "#endif", "#define BUG 0",
                     "#if BUG == NOT_A_MACRO", "a();", "#endif",
                     "#if SPLIT_K > 1", "b();", "#endif",
                     "  if (ABLATE & f(x)) c();",
                     "  int y = (u32)ABLATE + 1;",
                     "#if ABLATE", "d();", "#else", "e();", "#endif",
                     "  int z = ABLATE ? 1 : w;"])
    out = [ln.text for ln in hooks.hide(src)]
    lines = src.splitlines()
    assert out[:12] == lines[:12]                          # defaults, unknown macro, non-hook, calls, casts
    assert out[12:17] == [None, None, None, "e();", None]
    assert out[17] == "  int z = w;"


def test_the_fold_rules():
    env = {"BREAK": 0, "ABLATE": 2, "BUG": 0, "BUG_X": 3}
    fold = lambda code: hooks._fold_line(code, env, {})       # noqa: E731
    assert fold("  x = !(BREAK == 1 && cw == C - 1);")[0] == "  x = true;"
    assert fold("  f(a, k + (BREAK == 1 ? 16 : 0));")[0] == "  f(a, k);"
    assert fold("  g<!(ABLATE & 2)>(a);")[0] == "  g<false>(a);"
    assert fold("  if (ABLATE & 2) h();")[2] is True
    assert fold("  if (p && BUG == BUG_X) h();")[2] is False
    assert hooks.evaluate_condition("BUG != BUG_X", env) == (True, frozenset({"BUG"}))
    assert hooks.evaluate_condition("defined(BUG)", env) is None
    assert hooks.evaluate_condition("SPLIT_K > 1", env) is None


def test_every_kernel_file_hides_without_error():
    for path in sorted(runtime.KERNEL_DIR.rglob("*.cu*")):
        text = path.read_text()
        shown = hooks.hide(text, path)
        assert len(shown) == len(text.splitlines())
        kept = [ln.text for ln in shown if ln.text is not None]
        depth = 0                                          # the kept directives still pair up
        for ln in kept:
            m = re.match(r"^\s*#\s*(if|ifdef|ifndef|endif)\b", ln)
            if m:
                depth += -1 if m.group(1) == "endif" else 1
                assert depth >= 0, path.name
        assert depth == 0, path.name
