"""The real-CUDA capstone timed beside the ladder (asynctc.warp_specialization.capstone_speed): its
ladder rows are the rungs and the capstone's own shape, the table's per-round ratios on a synthetic
record, the script without a GPU, and (marker gpu) one short run whose outputs are checked."""
import dataclasses
from pathlib import Path

import pytest

from asynctc import suites
from asynctc.warp_specialization import capstone_build as cb
from asynctc.warp_specialization import capstone_speed as S
from asynctc.warp_specialization.ladder import RUNGS
from fakes import assert_script_exits_2_without_a_gpu

ROOT = Path(__file__).resolve().parent.parent


def test_the_ladder_rows_are_rungs_1_and_3_and_the_capstones_own_shape():
    cfg = S.ladder_configs()
    assert cfg["rung 1"] == RUNGS[0].make("float16") and cfg["rung 3"] == RUNGS[2].make("float16")
    mine, cap = cfg["ladder at your shape"], cb.config(2)
    same = ("bm", "bn", "stages", "consumers", "dtype", "out_dtype", "persistent", "b_major")
    assert {f: getattr(mine, f) for f in same} == {f: getattr(cap, f) for f in same}
    assert mine.setmaxnreg and (mine.producer_regs, mine.consumer_regs) == (40, 232)


def _rows():
    tf = {"yours, 2 stages": (500, 520), "yours, 4 stages": (560, 590), "yours, rung 3's tile": (650, 680),
          "ladder at your shape": (540, 550), "rung 1": (680, 700), "rung 3": (670, 690), "cuBLAS": (760, 780)}
    out = {k: ("float32" if k.startswith(("yours, ", "ladder")) and "rung 3" not in k else "float16") for k in tf}
    return [{"kernel": k, "round": r, "tflops": v[r], "sm_mhz": 1600.0 + r, "out_dtype": out[k]}
            for k, v in tf.items() for r in (0, 1)]


def test_speed_table_ratios_are_per_round_and_keep_the_order():
    res = {"rows": _rows(), "kernels": list(S.KERNELS)}
    t = {r["kernel"]: r for r in S.speed_table(res)}
    assert list(t) == list(S.KERNELS) + ["cuBLAS"]
    assert t["yours, 2 stages"]["of_rung1"] == pytest.approx((500 / 680 + 520 / 700) / 2)
    assert t["yours, 4 stages"]["of_cublas"] == pytest.approx((560 / 760 + 590 / 780) / 2)
    assert t["rung 1"]["of_rung1"] == pytest.approx(1.0) and t["cuBLAS"]["of_cublas"] == pytest.approx(1.0)
    assert t["yours, 2 stages"]["tflops"] == pytest.approx(510)
    text = S.table_text(res)
    assert "yours, 2 stages" in text and "float32" in text and len(text.splitlines()) == 8
    assert t["yours, rung 3's tile"]["out_dtype"] == "float16"
    lesson = S.table_text(res, lesson=True)
    assert S.LADDER_ROW not in lesson and S.WIDE_ROW in lesson and len(lesson.splitlines()) == 7
    older = {"rows": [r for r in _rows() if r["kernel"] != S.WIDE_ROW], "kernels": list(S.KERNELS)}
    assert S.LADDER_ROW in S.table_text(older, lesson=True)      # no wide row: the ladder's stays


def test_without_cublas_the_column_says_so_instead_of_dividing():
    res = {"rows": [r for r in _rows() if r["kernel"] != "cuBLAS"], "kernels": list(S.KERNELS)}
    t = S.speed_table(res)
    assert all(r["of_cublas"] is None for r in t) and "—" in S.table_text(res)


def test_a_size_off_the_tile_is_refused_before_any_launch():
    with pytest.raises(ValueError, match="size 4000"):
        S.measure_speed(size=4000, check_shapes=False)


def test_suite_is_registered_and_its_script_exits_2_without_a_gpu():
    suites._collect()
    assert suites.SUITES["capstone_speed"] == (S.measure_speed, S.summarize_speed, "sm_90a")
    assert_script_exits_2_without_a_gpu(ROOT / "tools" / "gpu_capstone_speed.py", "--out",
                                        "/tmp/asynctc_capstone_speed_test", cwd=ROOT)


@pytest.mark.gpu
def test_one_short_run_checks_every_timed_output():
    res = S.measure_speed(rounds=1, reps=1, size=1024)
    assert all(c["passed"] for c in res["checks"]) and len(res["checks"]) == len(cb.SHAPES) + len(S.WIDE_SHAPES)
    assert all(r["rel_err_rows"]["passed"] for r in res["rows"])
    assert {r["kernel"] for r in res["rows"]} >= set(S.KERNELS)


def test_a_recorded_check_reads_as_the_live_check_does():
    from asynctc.warp_specialization import cuda_kloop as K
    good = {"shape": [256, 384, 192], "stages": 2, "ctas": 2, "tiles_per_cta": 3, "k_tiles": 3, "error_word": 0,
            "error": "", "check": {"worst_ratio": 0.031, "wrong": 0}, "passed": True}
    assert K.checked_line(good) == ("256×384×192 on 2 CTAs (3 tiles each, T = 3 k-tiles, 2 stages): every element "
                                    "within its bound of float64 (worst 0.031 of it)")
    bad = dict(good, passed=False, error="a wait on full gave up", check={"worst_ratio": 9.0, "wrong": 12})
    assert "gave up" in K.checked_line(bad) and "12 elements" in K.checked_line(bad)


def _scaled(ladder_factor):
    rows = [r for r in _rows() if r["kernel"] != S.WIDE_ROW]       # a run from before the wide row
    for r in rows:
        if r["kernel"] == "ladder at your shape":
            r["tflops"] = ladder_factor * next(x["tflops"] for x in rows
                                               if x["kernel"] == "yours, 2 stages" and x["round"] == r["round"])
    return {"rows": rows, "kernels": list(S.KERNELS)}


@pytest.mark.parametrize("factor, says", [(1.03, "the gap to rung 1 is the shape"), (1.2, "1.20× yours"),
                                          (0.8, "Yours runs 1.25× the ladder's kernel")])
def test_the_verdict_follows_the_table(factor, says):
    v = S.verdict(_scaled(factor))
    assert says in v and v.startswith("So: with 2 stages your kernel runs 0.74 of rung 1 and 0.66 of cuBLAS")
    assert "gives 1.13×" in v


def test_without_its_record_the_cell_gives_the_nearest_timed_build_and_says_what_differs():
    from asynctc.core import records
    rec = records.load("ws_rung3_steps")
    line = S.nearest_line(rec)
    from asynctc.warp_specialization.steps_suite import step_table
    t = {r["step"]: r for r in step_table(rec.results)}
    assert f"{t[S.NEAREST_STEP]['tflops']:.0f} TFLOP/s" in line and "not measured yet" in line
    assert f"{t[S.NEAREST_STEP]['tflops'] / t['setmaxnreg (rung 3)']['tflops']:.2f} of rung 3" in line
    cfg = S.ladder_configs()["ladder at your shape"]
    from asynctc.warp_specialization.steps_suite import step_configs
    near = step_configs()[S.NEAREST_STEP]
    assert (near.bm, near.bn, near.consumers, near.setmaxnreg) == (cfg.bm, cfg.bn, cfg.consumers, cfg.setmaxnreg)
    assert (near.stages, near.persistent, near.out_dtype) != (cfg.stages, cfg.persistent, cfg.out_dtype)


def test_without_the_wide_row_the_verdict_names_the_tile_gain_it_is_given():
    v = S.verdict(_scaled(1.03), tile_gain=0.17)
    assert "that tile alone gained +17% over 128×128" in v and "rung 3's tile" not in v


def _wide(factor, **extra):
    rows = _rows()
    for r in rows:
        if r["kernel"] == S.WIDE_ROW:
            r["tflops"] = factor * next(x["tflops"] for x in rows if x["kernel"] == "rung 3" and x["round"] == r["round"])
    return {"rows": rows, "kernels": list(S.KERNELS), **extra}


@pytest.mark.parametrize("factor, says", [(1.02, "1.02 of rung 3, 0.90 of cuBLAS: the gap at 128×128 is the shape (tile, stages, fp32 C)"),
                                          (0.8, "0.80 of rung 3, 0.71 of cuBLAS: rung 3 is faster at its own tile"),
                                          (1.1, "1.10 of rung 3, 0.97 of cuBLAS: faster than rung 3")])
def test_the_wide_rows_sentence_follows_its_ratio_to_rung_3(factor, says):
    v = S.verdict(_wide(factor))
    assert "Built at rung 3's tile (128×256, 4 stages, fp16 C), your loops run " + says in v
    assert "tile alone gained" not in v and "ladder" not in v and v.startswith("So: with 2 stages")


def test_the_wide_rows_sentence_counts_only_the_wide_checks():
    ok = {"passed": True, "bn": 256}
    res = _wide(1.0, checks=[{"passed": True, "bn": 128}] * 3 + [ok, dict(ok, passed=False)])
    assert "(128×256, 4 stages, fp16 C; check C passed on 1 of 2 shapes)" in S.wide_line(res)


def test_the_wide_row_says_when_it_ran_the_course_answer_instead_of_yours():
    assert "the course's answer (yours names N = 128" in S.wide_line(
        _wide(1.0, is_course_answer=False, wide_is_course_answer=True))
    assert "your loops run" in S.wide_line(_wide(1.0, is_course_answer=True, wide_is_course_answer=True))


def test_the_wide_build_is_rung_3s_tile_and_refuses_other_shapes_by_name():
    cfg = cb.config(cb.WIDE["stages"], cb.WIDE["bn"], cb.WIDE["out_dtype"])
    r3 = RUNGS[2].make("float16")
    assert (cfg.bm, cfg.bn, cfg.stages, cfg.out_dtype, cfg.consumers) == (r3.bm, r3.bn, r3.stages, r3.out_dtype, r3.consumers)
    assert cb.defines(**cb.WIDE)["OUT_F32"] == 0 and "OUT_F32" not in cb.defines()
    with pytest.raises(ValueError, match="bn=192"):
        cb.config(4, 192)
    with pytest.raises(ValueError, match="out_dtype='bfloat16'"):
        cb.config(4, 256, "bfloat16")
    with pytest.raises(ValueError, match="N=384: .* multiple of 256"):
        cb.check_shape(256, 384, 128, 4, None, 256)
    for m, n, k, st, ctas in S.WIDE_SHAPES:
        assert cb.check_shape(m, n, k, st, ctas, 256) == (m, n, k, st, ctas)
        assert (k // cb.BK) % st and -(-(m // 128) * (n // 256) // ctas) >= 3


def test_the_answer_builds_at_both_tiles_and_a_hard_coded_n_only_at_128():
    from asynctc.warp_specialization import cuda_kloop as K
    sol = K.solution()
    assert "wgmma_mma_async_ss<BN, 0, 0, 0>" in sol
    wide = K.build(sol, **cb.WIDE)
    assert wide.setmaxnreg == 2 and "spill" not in (wide.kernel.log or "").replace("0 bytes spill", "")
    fixed = sol.replace("<BN, 0, 0, 0>", "<128, 0, 0, 0>")
    K.build(fixed)
    with pytest.raises(cb.LoopsCompileError):
        K.build(fixed, **cb.WIDE)


def test_a_replayed_table_and_so_name_the_course_answer_not_yours():
    res = _wide(1.0, is_course_answer=True)
    table, so = S.table_text(res, lesson=True, answer=True), S.verdict(res, answer=True)
    assert "yours" not in table and "answer, 2 stages" in table and "answer, rung 3's tile" in table
    assert "your " not in so and so.startswith("So: with 2 stages the answer runs") and "its loops run" in so
    raw = S.table_text(res, lesson=True).splitlines()
    assert [len(x) for x in table.splitlines()] == [len(x) for x in raw]          # columns stay aligned
