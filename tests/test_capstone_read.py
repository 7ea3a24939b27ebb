"""Chapter 06 §4's walk through the capstone kernel with the learner's loops
(asynctc.warp_specialization.capstone_read) and 06 §1's SASS table's differences explained (readers
125–127: "end 06 with one annotated read of the whole kernel … the learner's own lines marked";
"explain the instruction-count differences"). No GPU: the walk reads files, the table is NVRTC's."""
import re

import pytest

from asynctc.core import runtime
from asynctc.warp_specialization import capstone_build as cb
from asynctc.warp_specialization import capstone_read as cr
from asynctc.warp_specialization import capstone_suite as cs
from asynctc.warp_specialization import whole_kloop as wk

PREV = cs.VARIANT_TEXT["wait_group<1>"]


def _kernel_lines():
    """(lines of kernels/capstone.cu after its header comment up to the learner's loops, lines after
    them), the marker lines left out."""
    lines = runtime.kernel_path(cb.SOURCE).read_text().splitlines()
    first = next(n for n, x in enumerate(lines) if cr._MARK.match(x))
    a = next(n for n, x in enumerate(lines) if "the learner's loops: from here" in x)
    b = next(n for n, x in enumerate(lines) if "the learner's loops: to here" in x)
    return [x for x in lines[first:a] if not cr._MARK.match(x)], lines[b + 1:]


@pytest.mark.parametrize("text", [wk.SOLUTION, PREV], ids=["course", "wait_group<1>"])
def test_the_walk_shows_every_line_after_the_header_with_the_loops_marked(text):
    blocks = cr.walk(text)
    assert [b.key for b in blocks] == ["names", "set-up", "calls", "epilogue", "producer", "consumers", "leaving"]
    shown = [line for b in blocks for line, _ in b.lines]
    loops = cb.check_text(text).rstrip("\n").splitlines()
    head, tail = _kernel_lines()
    strip = lambda xs: [x for x in xs if x.strip()]                   # blocks drop trailing blanks when shown
    assert strip(shown) == strip(head + loops + tail)                 # nothing left out, in order
    yours = [line for b in blocks for line, mine in b.lines if mine]
    assert yours == loops                                               # the learner's lines, and only they
    md = cr.walk_markdown(text)
    assert all(f"yours │ {x}".rstrip() in md for x in loops)
    assert "// Chapter 06's capstone" not in md                        # the header comment is left out


def test_each_block_says_where_it_was_met_and_names_its_fences():
    blocks = {b.key: b for b in cr.walk(wk.SOLUTION)}
    assert [n for n, _ in blocks["set-up"].fences()] == ["`fence.mbarrier_init.release.cluster`"]
    calls = [n for n, _ in blocks["calls"].fences()]
    assert any("wgmma.fence.sync.aligned" in n for n in calls) and any("wgmma_fence_operand" in n for n in calls)
    md = cr.walk_markdown(wk.SOLUTION, "answer")
    for key in blocks:
        title, _, met = cr.BLOCKS[key]
        assert f"{title}.** You met this in {met}." in md
    assert "06f §1" in cr.BLOCKS["producer"][2] and "06 §1, exercise 1b" in cr.CUDA_BLOCKS["producer"][2] and "03, exercise 1" in cr.BLOCKS["calls"][2]
    assert cr.NO_PROXY_FENCE in md                      # the kernel has no fence.proxy.async: said so
    assert "answer │ " in md and "yours │" not in md


def test_roles_are_named_by_what_they_call_and_an_unsplit_text_is_one_block():
    swapped = ("if (wg != 0) {\n  mma_ktile(acc, 0);\n} else {\n  tma_load(0, 0, 0);\n}\n")
    assert [b.key for b in cr._role_blocks(swapped)] == ["consumers", "producer"]
    flat = "for (int t = 0; t < TILES; ++t) { if (wg == 0) tma_load(0, t, 0); else mma_ktile(acc, 0); }\n"
    assert [b.key for b in cr._role_blocks(flat)] == ["loops"]


def test_the_walk_follows_the_kernels_markers(monkeypatch, tmp_path):
    src = runtime.kernel_path(cb.SOURCE).read_text()
    fake = tmp_path / cb.SOURCE
    fake.write_text(src.replace("// ---- walk: set-up ----\n", ""))
    monkeypatch.setattr(runtime, "kernel_path", lambda name: fake)
    cb._parts.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="walk's markers"):
            cr.walk(wk.SOLUTION)
    finally:
        cb._parts.cache_clear()


def test_the_wait_group_1_form_s_differences_are_explained_from_its_call_sites():
    """The `<1>` form has a drain after its k-loop: one more wgmma wait and one more arrive."""
    table = cb.sass_table(PREV)
    differing = [what for what, y, c in table.rows if y != c]
    lines = cr.differences(table, PREV)
    assert len(lines) == len(differing) and [l.split(":")[0] for l in lines] == differing
    assert set(differing) == {"SYNCS.ARRIVE (arrives)", "WARPGROUP.DEPBAR"}
    for line in lines:
        assert "One more call site, one more instruction" in line and line.endswith("a drain.")
    dep = next(l for l in lines if l.startswith("WARPGROUP.DEPBAR"))
    assert "`wgmma_wait_group<0>();` in the tile loop, outside the k-loop" in dep
    assert cr.differences(cb.sass_table(wk.SOLUTION), wk.SOLUTION) == []


def test_call_sites_place_each_call_by_its_loops():
    sites = cr.call_sites(PREV, cr.ROW_CALLS["WARPGROUP.DEPBAR"][0])
    assert sites == [("in the k-loop", "wgmma_wait_group<1>();"),
                     ("in the tile loop, outside the k-loop", "wgmma_wait_group<0>();")]
    assert cr.call_sites("wgmma_wait_group<0>();", r"\bwgmma_wait_group\s*<") == [
        ("outside the loops", "wgmma_wait_group<0>();")]


def test_the_chapter_cell_prints_the_table_with_its_differences(monkeypatch, capsys):
    monkeypatch.setattr(runtime, "runs_live", lambda arch="sm_90a": False)
    monkeypatch.setenv("ASYNCTC_BUILDING_NOTEBOOKS", "1")
    cs.capstone_cell(PREV, True)
    out = capsys.readouterr().out
    assert re.search(r"WARPGROUP\.DEPBAR\s+3\s+2", out) and "  WARPGROUP.DEPBAR: 3 in yours, 2 in the course's" in out


def test_the_walk_cell_is_held_until_the_capstone_passes(monkeypatch, capsys):
    from asynctc.core import exercises
    monkeypatch.delenv("ASYNCTC_BUILDING_NOTEBOOKS", raising=False)
    monkeypatch.setattr(exercises, "after", lambda name, held="", **kw: print(f"held: {held}") and False)
    cr.walk_cell(wk.SOLUTION, False)
    out = capsys.readouterr().out
    assert "waits for exercise 1" in out and "full.wait" not in out and "empty.wait" not in out


def test_every_row_of_the_sass_table_has_its_calls():
    assert list(cr.ROW_CALLS) == [what for what, _ in cb.SASS_ROWS]


# ---- 06 §1's capstone in real calls (ch06.cuda_kloop, kernels/capstone_cuda.cu) -----------------

def _cuda_prev():
    """The real-call answer with wgmma_wait_group<1> and the previous k-tile's release, drained."""
    from asynctc.warp_specialization import cuda_kloop as K
    sol = K.solution()
    text = sol.replace("int stage = 0; u32 phase = 0;", "int stage = 0, prev = 0; u32 phase = 0;")
    text = text.replace("""      wgmma_wait_group<0>();                  // the wgmmas are done reading the stage
      if (elected) mbarrier_arrive(empty_bar(stage));
""", """      wgmma_wait_group<1>();                  // k-tile k - 1's wgmmas are done
      if (k > 0 && elected) mbarrier_arrive(empty_bar(prev));
      prev = stage;
""")
    text = text.replace("""    }
    store_tile(acc, tile);""", """    }
    wgmma_wait_group<0>();
    if (elected) mbarrier_arrive(empty_bar(prev));
    store_tile(acc, tile);""")
    assert text.count("wgmma_wait_group<0>") == 1 and "empty_bar(prev)" in text
    return text


def test_the_real_call_walk_shows_capstone_cuda_with_the_learners_lines_marked():
    from asynctc.warp_specialization import cuda_kloop as K
    sol = K.solution()
    blocks = cr.walk(sol, cuda=True)
    assert [b.key for b in blocks] == ["constants", "set-up", "names", "calls", "epilogue",
                                       "producer", "consumers", "leaving"]
    lines = runtime.kernel_path(K.SOURCE).read_text().splitlines()
    first = next(n for n, x in enumerate(lines) if cr._MARK.match(x))
    a = next(n for n, x in enumerate(lines) if "the learner's loops: from here" in x)
    b = next(n for n, x in enumerate(lines) if "the learner's loops: to here" in x)
    head = [x for x in lines[first:a] if not cr._MARK.match(x)]
    loops = cb.check_text(sol).rstrip("\n").splitlines()
    strip = lambda xs: [x for x in xs if x.strip()]
    assert strip([x for blk in blocks for x, _ in blk.lines]) == strip(head + loops + lines[b + 1:])
    assert [x for blk in blocks for x, mine in blk.lines if mine] == loops
    md = cr.walk_markdown(sol, cuda=True)
    assert all(f"yours │ {x}".rstrip() in md for x in loops) and "Chapter 06's capstone exercise" not in md
    for blk in blocks:
        title, _, met = cr.CUDA_BLOCKS[blk.key]
        assert f"{title}.** You met this in {met}." in md
    fences = {k.key: [n for n, _ in k.fences()] for k in blocks}
    assert fences["set-up"] == ["`fence.mbarrier_init.release.cluster`"]
    assert any("wgmma.fence.sync.aligned" in n for n in fences["consumers"])


def test_the_real_call_cell_prints_the_checks_the_table_and_this_kernels_recorded_check(monkeypatch, capsys):
    from asynctc.warp_specialization import cuda_kloop as K
    monkeypatch.setattr(runtime, "runs_live", lambda arch="sm_90a": False)
    monkeypatch.setenv("ASYNCTC_BUILDING_NOTEBOOKS", "1")
    prev = _cuda_prev()
    K.capstone_cell(prev, True)
    out = capsys.readouterr().out
    assert out.startswith("Yours:") and "NVRTC: sm_90a cubin" in out
    assert re.search(r"WARPGROUP\.DEPBAR\s+3\s+2", out), out
    assert "WARPGROUP.DEPBAR: 3 in yours, 2 in the course's. Calls of wgmma_wait_group" in out
    assert "The record ran this kernel, the course's answer" in out and K.RECORDED_IS_SHORT not in out
    assert out.count("every element within its bound of float64") >= 3
    from asynctc.core import records                # without capstone_speed's record: the short-name kernel's, said so
    real = records.load_or_none
    monkeypatch.setattr(records, "load_or_none", lambda suite, *a: None if suite == "capstone_speed" else real(suite, *a))
    K.capstone_cell(prev, True)
    assert K.RECORDED_IS_SHORT in capsys.readouterr().out
    K.capstone_cell(K.SKELETON, False)             # the notebook build: the course's answer, no table
    out = capsys.readouterr().out
    assert out.startswith("The course's answer:") and "SASS  " not in out


def test_the_real_call_cells_are_held_until_the_capstone_passes(monkeypatch, capsys):
    from asynctc.core import exercises
    from asynctc.warp_specialization import cuda_kloop as K
    monkeypatch.delenv("ASYNCTC_BUILDING_NOTEBOOKS", raising=False)
    monkeypatch.setattr(exercises, "after", lambda name, held="", **kw: print(f"held {name}: {held}") and False)
    cr.walk_cell(K.solution(), False, cuda=True)
    K.capstone_cell(K.solution(), False)
    out = capsys.readouterr().out
    assert out.count("held ch06.cuda_kloop") == 2 and "ring_wait" not in out and "phase" not in out


def test_every_row_of_the_sass_table_has_its_real_calls():
    assert list(cr.CUDA_ROW_CALLS) == [what for what, _ in cb.SASS_ROWS]
