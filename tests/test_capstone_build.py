"""Chapter 06's capstone loops compiled into a real sm_90a kernel (kernels/capstone.cu,
asynctc.warp_specialization.capstone_build): NVRTC builds without a GPU, the SASS table, the compile
error naming the learner's line, argument validation, the record suite and its chapter cell; the
runs on the GPU (marker gpu) fail on any element outside its bound or any wait that gave up."""
import re
from pathlib import Path

import numpy as np
import pytest

from asynctc import suites
from asynctc.core import records, runtime, sass
from asynctc.warp_specialization import capstone_build as cb
from asynctc.warp_specialization import capstone_suite as cs
from asynctc.warp_specialization import whole_kloop as wk

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "gpu_capstone.py"


def test_the_kernel_file_holds_the_course_answer_and_is_never_changed():
    before = runtime.kernel_path(cb.SOURCE).read_text()
    assert cb.kernel_loops().strip() == wk.SOLUTION.strip()
    cb.build(cs.VARIANT_TEXT["wait_group<1>"])
    assert runtime.kernel_path(cb.SOURCE).read_text() == before
    code = cb.splice(wk.SOLUTION)
    assert '#line 1 "your loops"\n' in code and code.count("\n#line ") == 2


def test_solution_compiles_to_a_cubin_with_the_protocols_instructions():
    ck = cb.course_build()
    assert ck.arch == "sm_90a" and ck.cubin[:4] == b"\x7fELF" and not ck.resources.spill_stores
    text = sass.kernel_text(sass.disassemble(ck.cubin), cb.ENTRY)
    rows = cb.opcode_rows(ck.cubin)
    assert rows["UTMALDG (TMA loads)"] == 2                  # A's box and B's box
    assert rows["HGMMA (wgmmas)"] == 4                       # 4 k16 steps of m64n128k16
    assert rows["SYNCS.PHASECHK (waits)"] >= 2 and rows["SYNCS.ARRIVE (arrives)"] >= 2
    assert rows["WARPGROUP.ARRIVE"] >= 1 and rows["WARPGROUP.DEPBAR"] >= 1
    assert rows["STG (C stores)"] == 32                   # 64 fp32 per thread, two a store
    assert re.search(r"HGMMA\.64x128x16\.F32", text)


def test_sass_table_beside_the_course():
    t = cb.sass_table(wk.SOLUTION)
    assert t.same and t.total[0] == t.total[1] > 100
    s = str(t)
    assert s.splitlines()[0].split()[-2:] == ["yours", "course"] and "UTMALDG" in s
    t1 = cb.sass_table(cs.VARIANT_TEXT["wait_group<1>"])    # a second passing form compiles too
    rows = {w: (y, c) for w, y, c in t1.rows}
    assert rows["SYNCS.ARRIVE (arrives)"][0] > rows["SYNCS.ARRIVE (arrives)"][1]
    assert not t1.same


def test_the_second_passing_form_and_the_wrong_variants_are_the_exercises():
    assert isinstance(wk.judge(cs.VARIANT_TEXT["wait_group<1>"]), str)
    assert wk.judge(cs.VARIANT_TEXT["course"]).startswith("tile 2 starts at stage 0, parity 1")
    for name in ("consumers phase ^ 1", "producer phase", "ring restarts"):
        hint = wk.judge(cs.VARIANT_TEXT[name])
        assert "parity" in hint or "stage" in hint, (name, hint)
        cb.build(cs.VARIANT_TEXT[name])                     # wrong, yet it compiles: the GPU says how


@pytest.mark.parametrize("edit, line, words", [
    (("full.wait(stage, phase);", "full.wait(stage, phase)"), 16, 'expected a ";"'),
    (("mma_ktile(acc, stage);", "mma_tile(acc, stage);"), 16, 'identifier "mma_tile" is undefined'),
    (("tma_load(stage, tile, k);", "tma_load(stage, tile);"), 8,
     "cannot be called with the given argument list (the calls take: tma_load(stage, tile, k)"),
])
def test_a_compile_error_names_the_line_of_your_loops(edit, line, words):
    text = wk.SOLUTION.replace(*edit)
    with pytest.raises(cb.LoopsCompileError) as e:
        cb.build(text)
    msg = str(e.value)
    assert msg.startswith("NVRTC cannot compile your loops — line ") and words in msg, msg
    assert f"line {line} (" in msg and '"your loops"' in e.value.log or "your loops" in e.value.log


@pytest.mark.parametrize("call, kind, words", [
    (lambda: cb.build(b"int x;"), TypeError, "text='bytes'"),
    (lambda: cb.build("// only a comment\n"), ValueError, "holds no code"),
    (lambda: cb.build('#line 5 "x"\n' + wk.SOLUTION), ValueError, "#line"),
    (lambda: cb.build(wk.SOLUTION, stages=7), ValueError, "stages=7: must be in 2 .. 6"),
    (lambda: cb.build(wk.SOLUTION, stages=2.0), TypeError, "stages=2.0: must be an int"),
    (lambda: cb.check_shape(256, 384, 100), ValueError, "K=100: the capstone's kernel takes whole tiles"),
    (lambda: cb.check_shape(200, 384, 192), ValueError, "M=200"),
    (lambda: cb.check_shape(256, "384", 192), TypeError, "N='384': must be an int"),
    (lambda: cb.check_shape(256, 384, 0), ValueError, "K=0: must be in 1"),
    (lambda: cb.check_shape(256, 384, 192, ctas=7), ValueError, "ctas=7: must be in 1 .. 6"),
    (lambda: cb.check_shape(True, 384, 192), TypeError, "M=True"),
    (lambda: cb.run(wk.SOLUTION, 256, 384, 100), ValueError, "K=100"),
])
def test_arguments_are_checked_in_python(call, kind, words):
    with pytest.raises(kind) as e:
        call()
    assert words in str(e.value), str(e.value)


def test_shapes_are_the_exercises_rings_with_several_tiles_per_cta():
    for m, n, k, stages, ctas in cb.SHAPES:
        assert cb.check_shape(m, n, k, stages, ctas) == (m, n, k, stages, ctas)
        tiles, T = m // 128 * (n // 128), k // 64
        assert tiles // ctas >= 2 and T % stages and tiles % ctas == 0
    assert {(s, k // 64, m // 128 * (n // 128) // c) for m, n, k, s, c in cb.SHAPES[:2]} == set(wk.RINGS)


def test_decode_error_names_the_wait():
    word = 1 | ((1 | (1 << 4) | (2 << 8) | (3 << 12)) << 8)
    assert cb.decode_error(word).startswith("a wait gave up after 2 s: consumer 1 (warpgroup 2) on "
                                            "full[1], its wait number 3 on full (ring counter 3")
    assert cb.decode_error(0) == "ok"


def test_run_without_a_gpu_refuses_before_launching(monkeypatch):
    monkeypatch.setattr(runtime, "runs_live", lambda arch="sm_90a": False)
    with pytest.raises(runtime.NoGPUError):
        cb.run(wk.SOLUTION, 256, 384, 192)


# ---- the record suite and 06 §1's cell --------------------------------------------------------

def test_suite_is_registered_and_the_script_is_thin():
    assert suites.SUITES["capstone"] == (cs.measure_capstone, cs.summarize_capstone, "sm_90a")
    src = SCRIPT.read_text()
    assert "capstone_suite" in src and "record_suite(" in src
    from fakes import assert_script_exits_2_without_a_gpu
    assert_script_exits_2_without_a_gpu(SCRIPT, "--out", "/tmp/asynctc_capstone_test")


def _fake_run(text, m, n, k, stages=2, ctas=None, rng=None):
    from asynctc.core.checks import ElementCheck
    ok = text in (cs.VARIANT_TEXT["course"], cs.VARIANT_TEXT["wait_group<1>"])
    c = ElementCheck((m, n, k), "x", 0.01 if ok else 5.0, 0 if ok else 7, 0, None if ok else (0, 1), 0.1)
    return cb.CapstoneRun((m, n, k), stages, ctas, 3, k // 64, 0 if ok else 0x321101, c)


def test_measure_records_every_variant_without_raising(monkeypatch):
    monkeypatch.setattr(cb, "run", _fake_run)
    res = cs.measure_capstone(shapes=cb.SHAPES[:1])
    assert [r["variant"] for r in res["rows"]] == [n for n, _, _ in cs.VARIANTS]
    assert res["course_passed"] and [r["passed"] for r in res["rows"]] == [True, True, False, False, False]
    assert "a wait gave up" in res["rows"][2]["says"] and res["builds"][0]["sass"]


def test_chapter_cell_without_and_with_the_record(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(runtime, "runs_live", lambda arch="sm_90a": False)
    monkeypatch.setenv("ASYNCTC_DATA", str(tmp_path))
    monkeypatch.setenv("ASYNCTC_BUILDING_NOTEBOOKS", "1")            # held cells open, as in the build
    cs.capstone_cell(wk.SOLUTION, True)
    out = capsys.readouterr().out
    assert "a real sm_90a cubin" in out and "not yet recorded on a GPU" in out
    monkeypatch.setattr(cb, "run", _fake_run)
    res = cs.measure_capstone(shapes=cb.SHAPES[:1])
    prov = {k: "test" for k in records.REQUIRED_PROVENANCE}
    prov.update(gpu="NVIDIA H100 80GB HBM3", date="2026-12-05T00:00:00+00:00")
    records.save(records.Record("capstone", prov, res), slug="h100")
    cs.capstone_cell(wk.SOLUTION, True)
    out = capsys.readouterr().out
    assert "The course's answer, recorded (" in out and "every element within its bound" in out
    cs.capstone_cell(wk.SOLUTION.replace("mma_ktile(acc, stage);", "mma_tile(acc, stage);"))
    assert "NVRTC cannot compile your loops — line 16" in capsys.readouterr().out


# ---- on the GPU ---------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("shape", cb.SHAPES)
@pytest.mark.parametrize("variant", ["course", "wait_group<1>"])
def test_passing_forms_on_the_gpu(variant, shape):
    r = cb.run(cs.VARIANT_TEXT[variant], *shape, rng=np.random.default_rng())
    assert r.error_word == 0, r.says()
    assert r.check.passed and r.check.wrong == 0 and r.check.unwritten == 0, r.says()


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["producer phase", "ring restarts", "consumers phase ^ 1"])
def test_wrong_variants_end_without_a_hang_and_are_caught(variant):
    r = cb.run(cs.VARIANT_TEXT[variant], *cb.SHAPES[0])
    assert not r.passed, r.says()          # a wait gave up, or elements are wrong: never silent
    if variant == "producer phase":        # the ring model's deadlock: the bounded wait reports
        assert r.error_word, r.says()
    if variant == "ring restarts":         # the ring model's race: tile 1 reads a stale stage
        assert not r.check.passed, r.says()
