"""Listings hide the experiment hooks by default (asynctc.core.hooks, notebook.source_excerpt):
the code the default build compiles, evaluated from the kernels' own defaults; ``hooks=True`` is the
source as written; ``variant=True`` is one build, its variant switches resolved too (checked by
compiling what it shows)."""

import re
import warnings

import pytest

from asynctc import warp_specialization as W
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
    assert last.startswith("// (not shown: debugging hooks ") and "line" in last, last
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
    assert "load_stage(ta, tb, base + ts * kStageBytes" in text      # the code around stays
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
    assert text.splitlines()[-1].startswith("// (not shown: debugging hooks") and \
        text.splitlines()[-1].endswith("3 lines dropped)")
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


# ---- variant listings: one build of a source, its variant switches resolved too -------------------

_SRC = "\n".join([
    "#ifndef MODE", "#define MODE 0", "#endif", "#ifndef BM", "#define BM 128", "#endif",
    "#define TILE(x) use(x, rank)",
    "__device__ __forceinline__ void extra(float (&t)[4]) {",
    "  if constexpr (MODE == 2) {", "    t[0] = 1.f;", "  }", "}",
    "__device__ void body(int k) {",
    "  const bool on = !(MODE == 1);",
    "  const int rank = 0;",
    "  float t[4];",
    "  int unused = BM * 2;",
    "  int w = BM / 2;",
    "  extra(t);",
    "  if constexpr (MODE == 1) {", "    a(w);", "  } else if constexpr (MODE == 0) {", "    b(w);",
    "  } else {", "    c(w);", "  }",
    "  if (k > 0 && on) d();",
    "  TILE(k);",
    "  if constexpr (MODE == 0) return;  // done",
    "  e();",
    "}"])


def _shown(defines=None, variant=True):
    return [ln.text for ln in hooks.hide(_SRC, None, defines, variant=variant) if ln.text is not None]


def test_switches_are_the_macros_that_select_code():
    assert hooks.switches(_SRC) == {"MODE"}                 # BM selects no code: it stays named
    path = runtime.kernel_path("warp_specialization.cu")
    sw = hooks.switches(path.read_text(), path)
    assert {"SPLIT_K", "PINGPONG", "EDGES", "BLOCK_SCALES", "TMA_STORE", "CLUSTER", "PROMOTE"} <= sw
    assert not sw & {"BM", "BN", "STAGES", "CONSUMERS", "GROUP_M"} and not sw & set(hooks.HOOK_DEFINES)


def test_variant_rules_on_a_small_source():
    assert _shown(variant=False) == _SRC.splitlines()      # MODE is no hook: as written
    body = _shown()[_shown().index("__device__ void body(int k) {"):]
    assert body == ["__device__ void body(int k) {",
                    "  const int rank = 0;",                 # TILE's body reads it
                    "  int w = BM / 2;",                     # a size stays named
                    "  b(w);",                               # else if: the branch that runs
                    "  if (k > 0) d();",                     # on = true, folded where used
                    "  TILE(k);",
                    "  return;".ljust(36) + "// done",     # the comment keeps its column
                    "}"]                                     # e() after the return: unreachable
    one = _shown({"MODE": 1})
    assert "    a(w);" not in one and "  a(w);" in one and "  e();" in one
    assert not any("d()" in ln or ln == "  extra(t);" or " on" in ln for ln in one)
    two = _shown({"MODE": 2})
    assert "  c(w);" in two and "  extra(t);" in two and "  float t[4];" in two
    assert "  if (k > 0) d();" in two and not any("bool on" in ln for ln in two) and "  e();" in two


def _ws(rung, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return W.compile_ws(W.RUNG_BY_NAME[rung].make("float16").replace(**kw))


PRODUCER = (r"^    // ---------------- producer warpgroup", r"^    if constexpr \(CLUSTER == 1\) return;")
CONSUMER = (r"^    float acc\[kAtoms\]\[kAcc\];", r"^      tr\.event\(EV_STORE_END")


def test_rung_3_and_rung_7_listings_differ_where_the_builds_do():
    """Each branch the rungs take, from their defines: a branch resolved the wrong way fails here."""
    r3, r7 = _ws("ws_setmaxnreg"), _ws("tma_store")
    p3, p7 = (notebook.source_excerpt(ck, *PRODUCER, variant=True) for ck in (r3, r7))
    c3, c7 = (notebook.source_excerpt(ck, *CONSUMER, variant=True) for ck in (r3, r7))
    for text in (p3, p7, c3, c7):
        code = "\n".join(ln.split("//")[0] for ln in text.split("// (this build")[0].splitlines())
        assert not re.search(r"^\s*#\s*(if|else|endif)|\b(SPLIT_K|PINGPONG|EDGES|BLOCK_SCALES|PROMOTE|"
                             r"TMA_STORE|TRACE|BREAK)\b|\btr\.|releases|promote\(|clear_totals", code,
                             re.M), text
    assert "setmaxnreg_dec<PRODUCER_REGS>();" in p3 and "empty.wait(pos.stage, pos.phase ^ 1u" in p3
    assert re.search(r"^    return; +// the idle producer threads leave", p3, re.M)
    assert "return;" not in p7                                # CLUSTER = 2: they stay
    assert "store_c(res, c, N, m0 + wrow, n0);" in c3 and "store_c_tma" not in c3
    assert "mbarrier_arrive_remote" not in c3 and "chunk" not in c3 and "cbuf" not in c3
    assert "store_c_tma(res, tc, cbuf, 1 + cw, elected, m0 + wrow, n0, chunk);" in c7
    e3, e7 = (notebook.source_excerpt(ck, r"^struct EmptyBarriers", r"^};", variant=True) for ck in (r3, r7))
    assert "mbarrier_arrive_remote" not in e3.split("// (this build")[0]        # CLUSTER = 1
    assert "mbarrier_arrive_remote(mapa_shared_cluster((*this)[stage], rank ^ 1u));" in e7
    assert "store_c(res" not in c7 and "u32 chunk = 0;" in c7
    for text in (c3, c7):
        assert "if (k > 0 && elected) {" in text and "empty.arrive(prev);" in text
    note3, note7 = (" ".join(t.split("// (this build: ", 1)[1].split()) for t in (c3, c7))
    assert "TMA_STORE" not in note3 and "the other switches 0" in note3     # listed only where set
    assert "TMA_STORE=1" in note7 and "CLUSTER=2" in p7.split("// (this build: ", 1)[1]


def test_split_k_and_pingpong_listings():
    sk = _ws("ws_setmaxnreg", edges=True, split_k=4, out_dtype="float32")
    text = notebook.source_excerpt(sk, *CONSUMER, variant=True)
    assert "for (int k = k_lo; k < k_hi; ++k) {" in text and "if (k > k_lo && elected) {" in text
    assert "store_c_clipped(res, static_cast<float*>(c) + (size_t)split * M * ldc, ldc," in text
    assert "for (int k = 0; k < T" not in text and "ring_skip" not in text
    pp = _ws("pingpong")
    text = notebook.source_excerpt(pp, r"^    for \(int item = first_item; item < n_items",
                                   CONSUMER[1], variant=True)
    assert "ring_skip(pos, T);" in text and "mbarrier_arrive(smem_u32(&order_storage[cw ^ 1]));" in text
    assert "k_lo" not in text and "ring +=" not in text     # the trace's counter goes with the trace


def test_a_counter_only_counted_up_goes_with_its_increments():
    """Rule 6, counters: the ring counter only the (hidden) trace read goes from a variant listing,
    its for-header increment and its `+= T` with it; a counter something else reads stays."""
    src = "\n".join(["__device__ void f(int T) {", "  unsigned n = 0;  // counted", "  int used = 0;",
                     "  for (int k = 0; k < T; ++k, ++n, used++) {", "    n += T;", "    g(k);", "  }",
                     "  h(used);", "  unsigned m = 0;", "  for (int j = 0; j < T; ++j, ++m) {}", "  g(m);", "}"])
    shown = [ln.text for ln in hooks.hide(src, None, variant=True) if ln.text is not None]
    assert shown == ["__device__ void f(int T) {", "  int used = 0;",
                     "  for (int k = 0; k < T; ++k, used++) {", "    g(k);", "  }", "  h(used);",
                     "  unsigned m = 0;", "  for (int j = 0; j < T; ++j, ++m) {}", "  g(m);", "}"]
    assert [ln.text for ln in hooks.hide(src, None)] == src.splitlines()    # variant listings only
    for ck in (_ws("ws_setmaxnreg"), _ws("tma_store")):
        text = notebook.source_excerpt(ck, *PRODUCER, variant=True) + notebook.source_excerpt(ck, *CONSUMER,
                                                                                              variant=True)
        code = "\n".join(ln.split("//")[0] for ln in text.splitlines())
        assert not re.search(r"\bring\b", code) and "for (int k = 0; k < T; ++k) {" in code


def test_variant_errors_and_file_defaults():
    with pytest.raises(ValueError, match="hooks=True"):
        notebook.source_excerpt("warp_specialization.cu", *PRODUCER, hooks=True, variant=True)
    default = notebook.source_excerpt("warp_specialization.cu", *PRODUCER, variant=True)
    assert default == notebook.source_excerpt(_ws("ws_setmaxnreg"), *PRODUCER, variant=True)


def _compile_text(text, ck):
    """NVRTC on ``text`` with ``ck``'s defines and runtime.compile_kernel's options: the cubin."""
    from cuda.core import Program, ProgramOptions
    opts = ProgramOptions(name=ck.source, arch=ck.arch, std="c++17",
                          include_path=[str(p) for p in runtime.include_dirs()],
                          define_macro=[runtime._fmt_define(k, v) for k, v in sorted(ck.defines.items())],
                          ptxas_options=["-v", "--warn-on-spills"])
    return Program(text, "c++", opts).compile("cubin").code


@pytest.mark.parametrize("make", [
    lambda: _ws("ws_setmaxnreg"), lambda: _ws("tma_store"), lambda: _ws("pingpong"),
    lambda: _ws("ws_setmaxnreg", edges=True, split_k=4, out_dtype="float32"),
    lambda: _ws("ws_setmaxnreg", b_major="MN", out_dtype="float32"),
    lambda: W.compile_ws(W.WSConfig(dtype="float8_e4m3fn", bm=128, bn=128, promote=1,
                                    block_scales=True, out_dtype="bfloat16"))],
    ids=["rung3", "rung7", "rung9", "split_k", "mn_major", "fp8_block_scales"])
def test_a_variant_listing_compiles_to_the_same_instructions(make):
    """The whole file as the variant listing shows it, compiled with the kernel's defines, issues
    the same instructions of every class the course names (wgmma, TMA loads and stores, mbarrier
    operations, stores, barriers, setmaxnreg...): what the listing shows is what the kernel runs.
    Only register allocation may differ (a lambda captures fewer variables); rung 7's cubin is
    byte for byte the same."""
    from asynctc.core import sass
    ck = make()
    text = notebook.source_excerpt(ck, variant=True)
    got = _compile_text(text, ck)
    classes = {**sass.CLASSES, "USETMAXREG": r"^USETMAXREG\b", "UTMAPF": r"^UTMAPF\b"}
    assert sass.class_counts(sass.disassemble(got), classes) == \
        sass.class_counts(ck.sass(), classes)
    if ck.defines.get("TMA_STORE") and not ck.defines.get("PINGPONG"):
        assert got == ck.cubin


def test_a_fold_inside_a_kept_branch_is_folded_too():
    """load_stage of the top rung: `if constexpr (CLUSTER == 2 && MULTICAST) { … if constexpr
    (B_MAJOR == 0) … } else if …` — both levels resolved, the kept lines dedented once per level."""
    top = _ws("raster")
    mn = _ws("raster", b_major="MN")
    start = r"^__device__ __forceinline__ void load_stage"
    k_major, mn_major = (notebook.source_excerpt(ck, start, r"^}", variant=True) for ck in (top, mn))
    for text in (k_major, mn_major):
        assert "if constexpr" not in text and "else" not in text and "tma_load_2d(" not in text
        assert "  mbarrier_arrive_expect_tx(full_bar, kStageBytes);" in text.splitlines()
        assert "  const u32 r = cluster_ctarank();" in text.splitlines()
    assert re.search(r"^  tma_load_2d_multicast\(stage_addr \+ kATileBytes \+ r \* kBHalfBytes",
                     k_major, re.M) and "for (int j = 0; j < BN / 128" not in k_major
    assert re.search(r"^  for \(int j = 0; j < BN / 128; \+\+j\) \{$", mn_major, re.M)
    assert re.search(r"^    tma_load_2d_multicast\(stage_addr \+ kATileBytes \+ box \* B_BOX_BYTES",
                     mn_major, re.M)
