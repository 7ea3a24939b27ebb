"""Deep dive 06f's ch06.cuda_kloop: the capstone in the course's real wrappers. Check A (NVRTC →
sm_90a cubin), check B (g++ host stand-ins, a ring model, the CPU replay against float64, with
hints), check C (a Hopper GPU: marked gpu)."""

import pytest

from asynctc.core import exercises, runtime
from asynctc.core.exercises import told
from asynctc.warp_specialization import capstone_build as cb
from asynctc.warp_specialization import cuda_kloop as K
from asynctc.warp_specialization import cuda_kloop_cpu as C

SOL = K.solution()
needs_gxx = pytest.mark.skipif(C.compiler() is None, reason="no g++ here")


def swap(old, new, text=SOL):
    assert text.count(old) == 1, old
    return text.replace(old, new)


def test_the_kernel_file_holds_the_answer_and_capstone_cu_is_unchanged():
    assert "ring_wait(empty_bar(stage), phase ^ 1);" in SOL and "setmaxnreg_dec<40>()" in SOL
    assert cb.kernel_loops() != SOL                                 # capstone.cu keeps its own loops
    assert "full.wait(stage, phase)" in cb.kernel_loops()


def test_the_skeleton_gives_no_parity_and_no_coordinates():
    for word in ("phase ^", "k * BK", "tile_m0", "32 * j", "ring_wait(", "wgmma_wait_group<"):
        assert word not in K.SKELETON
    assert 15 <= len(K.SKELETON.splitlines()) <= 35 and len(SOL.splitlines()) <= 35


def test_check_a_compiles_the_answer_to_sm90a_with_setmaxnreg_kept():
    b = K.build(SOL)
    assert b.kernel.cubin and b.setmaxnreg == 2 and not b.warnings
    assert "sm_90a cubin" in b.says()


def test_check_a_names_the_learners_line():
    bad = swap("wgmma_commit_group();", "wgmma_commit_groupp();")
    with pytest.raises(cb.LoopsCompileError) as e:
        K.build(bad)
    n = next(i for i, ln in enumerate(bad.splitlines(), 1) if "commit_groupp" in ln)
    assert f"line {n}" in e.value.hint and "NVRTC cannot compile your loops" in e.value.hint


@needs_gxx
def test_check_b_passes_the_answer_against_float64():
    r = C.run_cpu(SOL, seed=0)
    assert r.passed, r.hint
    assert 0 < r.check.worst < 1 and "every element within its bound" in r.says()


#: (name, old, new, words the hint must hold)
WRONG = [
    ("producer parity", "ring_wait(empty_bar(stage), phase ^ 1);", "ring_wait(empty_bar(stage), phase);",
     ("deadlock", "the producer waits on empty[0] for parity 0")),
    ("consumer parity", "ring_wait(full_bar(stage), phase);", "ring_wait(full_bar(stage), phase ^ 1);",
     ("its wait on full[0] passed before fill 0 landed",)),
    ("coordinate order", "k * BK, tile_m0(tile));", "tile_m0(tile), k * BK);",
     ("rows and K swapped", "Innermost first")),
    ("k offset", "full_bar(stage), k * BK, tile_n0(tile));", "full_bar(stage), k, tile_n0(tile));",
     ("B's box starts at K = 1, k-tile 1 starts at K = 64",)),
    ("descriptor advance", "stage * kStageBytes + 32 * j),\n", "stage * kStageBytes + 16 * j),\n",
     ("k-step 1: the A descriptor starts 16 bytes past", "32·j")),
    ("B descriptor advance", "wgmma_desc_advance(desc_b0, stage * kStageBytes + 32 * j)",
     "wgmma_desc_advance(desc_b0, stage * kStageBytes + 64 * j)",
     ("k-step 1: the B descriptor starts 64 bytes past B's stage-0 start (stage 0's B box + 64 bytes)",)),
    ("missing wait_group", "      wgmma_wait_group<0>();                  // the wgmmas are done reading the stage\n", "",
     ("releases stage 0 (arrive on empty[0]) while the wgmma group that reads it is still in flight",)),
    ("ring restarted per tile", "    for (int k = 0; k < T; ++k) {\n      ring_wait(full",
     "    stage = 0; phase = 0;\n    for (int k = 0; k < T; ++k) {\n      ring_wait(full",
     ("the ring restarts at each tile",)),
    ("release by every thread", "if (elected) mbarrier_arrive(empty_bar(stage));", "mbarrier_arrive(empty_bar(stage));",
     ("other than the elected one calls arrive",)),
    ("bytes", "full_bar(stage), kStageBytes);", "full_bar(stage), kStageBytes / 2);", ("you announce 16384 bytes",)),
    ("B box on A's half", "tma_load_2d(smem_b(stage)", "tma_load_2d(smem_a(stage)", ("B's box lands at stage 0's A box",)),
]


@needs_gxx
@pytest.mark.parametrize("name, old, new, words", WRONG, ids=[w[0] for w in WRONG])
def test_check_b_fails_a_wrong_variant_with_its_hint(name, old, new, words):
    r = C.run_cpu(swap(old, new), seed=1)
    assert not r.passed
    hint = told(r.hint, rule=True)
    for w in words:
        assert w in hint, (name, hint)


@needs_gxx
def test_check_b_cuts_a_loop_that_never_ends():
    r = C.run_cpu(swap("for (int k = 0; k < T; ++k) {\n      ring", "for (int k = 0; k < T; k += 0) {\n      ring"))
    assert "did not end" in r.hint


@needs_gxx
def test_check_b_names_the_learners_line_in_a_gxx_error():
    # NVRTC would take this (a device-only wrapper the stand-ins do not have); g++ names the line
    r = C.run_cpu(swap("wgmma_fence();", "wgmma_fence(); mbarrier_try_wait_parity(full_bar(stage), phase);"))
    assert r.hint.startswith("g++ cannot compile your loops for the CPU run — line ")


def test_without_gxx_the_check_falls_back_to_compile_only(monkeypatch):
    monkeypatch.setattr(C, "compiler", lambda: None)
    C.build.cache_clear()
    v = K.verdict(SOL, gpu=False)
    assert v.hint is None and v.cpu.startswith("CPU run left out: no g++ here")
    note = K.judge(SOL) if not runtime.runs_live("sm_90a") else "skip"
    assert note == "skip" or "CPU run left out" in note


def test_the_exercise_is_registered_and_judges():
    assert exercises.is_code("ch06.cuda_kloop")
    with pytest.raises(exercises.NotAnswered):
        K.judge(K.SKELETON)
    assert "NVRTC cannot compile" in K.judge(swap("wgmma_commit_group();", "wgmma_commit_group()"))


@pytest.mark.gpu
def test_check_c_runs_the_answer_on_a_hopper_gpu_against_float64():
    if not runtime.runs_live("sm_90a"):
        pytest.skip("no sm_90a GPU")
    for shape in cb.SHAPES:
        r = K.run(SOL, *shape, rng=0)
        assert r.passed, r.says()
    bad = K.run(swap("ring_wait(empty_bar(stage), phase ^ 1);", "ring_wait(empty_bar(stage), phase);"),
                *cb.SHAPES[0], rng=0)
    assert bad.error_word != 0 and not bad.passed


def test_06_shows_the_modules_skeleton_and_its_solution_is_the_kernels():
    import re
    from pathlib import Path
    src = (Path(__file__).resolve().parents[1] / "notebooks" / "src" / "06_warp_specialization.py").read_text()
    texts = re.findall(r'^cuda_kloop = """\n(.*?)"""', src, re.S | re.M)
    assert texts == [K.SKELETON, SOL]


def test_loops_without_setmaxnreg_are_a_miss_with_a_tiered_hint():
    """Newcomer 57 (D1): right loops with no setmaxnreg_dec/inc passed, though the skeleton asks for them."""
    bare = SOL.replace("setmaxnreg_dec<40>();", "").replace("setmaxnreg_inc<232>();", "")
    h = K.judge(bare)
    assert isinstance(h, str) and not isinstance(h, exercises.Accepted)
    assert "setmaxnreg_dec and setmaxnreg_inc is never called" in h and "(06 §1, the register budget)?" in h
    assert "setmaxnreg_inc<232>()" in told(h, rule=True)             # the question first (raw hint), then the rule
    commented = SOL.replace("setmaxnreg_inc<232>();", "// setmaxnreg_inc<232>();")
    assert "setmaxnreg_inc is never called" in K.judge(commented)


def test_a_ring_restarted_each_tile_is_asked_a_question_first():
    """Newcomer 57 (D7): the hint for a ring reset every tile stated the symptom only."""
    decl = "int stage = 0; u32 phase = 0;"
    t = SOL.replace(decl, "", 1)
    t = t.replace("for (int tile = 0; tile < TILES; ++tile)\n      for",
                  "for (int tile = 0; tile < TILES; ++tile) { " + decl + "\n      for", 1)
    t = t.replace("phase ^= 1; }\n      }\n  }", "phase ^= 1; }\n      }}\n  }", 1)
    t = t.replace("for (int tile = 0; tile < TILES; ++tile) {\n    for",
                  "for (int tile = 0; tile < TILES; ++tile) { " + decl + "\n    for", 1)
    h = K.judge(t)
    assert "Does the ring counter start again at each tile, or go on counting" in h   # the question tier
    assert "set stage and phase once, before the tile loop" in told(h, rule=True)
