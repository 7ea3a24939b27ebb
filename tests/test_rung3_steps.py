"""Rung 2 → rung 3 one change at a time (asynctc.warp_specialization.steps_suite): each step's build
differs from the one before in exactly the field its name says, all four compile, the table's
arithmetic (per-round fractions of cuBLAS, gains) on a synthetic record, and the script without a GPU."""
import dataclasses
from pathlib import Path

import pytest

from asynctc import suites
from asynctc.warp_specialization import steps_suite as S
from asynctc.warp_specialization.ladder import RUNGS
from asynctc.warp_specialization.launch import compile_ws
from fakes import assert_script_exits_2_without_a_gpu

ROOT = Path(__file__).resolve().parent.parent


def _diff(a, b):
    return {f.name for f in dataclasses.fields(a) if getattr(a, f.name) != getattr(b, f.name)}


def test_each_step_changes_one_thing_and_the_ends_are_the_ladders_rungs():
    cfgs = list(S.step_configs().values())
    assert [n for n, _, _ in S.STEPS] == list(S.step_configs())
    assert cfgs[0] == RUNGS[1].make("float16") and cfgs[3] == RUNGS[2].make("float16")
    by = S.step_configs()
    for name, after, _ in S.STEPS[1:]:
        assert len(_diff(by[after], by[name])) == 1, name
    assert _diff(by["rung 2"], by["two consumers"]) == {"consumers"}
    assert _diff(by["two consumers"], by["128x256"]) == {"bn"}
    assert _diff(by["128x256"], by["setmaxnreg (rung 3)"]) == {"setmaxnreg"}


def test_every_step_compiles():
    regs = {n: compile_ws(c).resources.registers for n, c in S.step_configs().items()}
    assert regs["setmaxnreg (rung 3)"] == regs["setmaxnreg at 128"] == 168  # the entry count, 65536 / 384
    assert regs["two consumers"] <= regs["128x256"] <= 168


def _rows():
    tf = {"rung 2": (580, 600), "two consumers": (590, 612), "128x256": (670, 680),
          "setmaxnreg (rung 3)": (680, 690), "setmaxnreg at 128": (592, 610), "cuBLAS": (760, 780)}
    return [{"kernel": k, "round": r, "tflops": v[r], "sm_mhz": 1600.0 + r} for k, v in tf.items()
            for r in (0, 1)]


def test_step_table_fractions_are_per_round_and_gains_are_step_to_step():
    t = {r["step"]: r for r in S.step_table({"rows": _rows(), "steps": [list(s) for s in S.STEPS]})}
    assert list(t) == [n for n, _, _ in S.STEPS] + ["cuBLAS"]
    assert t["rung 2"]["gain"] is None and t["cuBLAS"]["gain"] is None
    assert t["two consumers"]["gain"] == pytest.approx(601 / 590 - 1)
    assert t["setmaxnreg (rung 3)"]["gain"] == pytest.approx(685 / 675 - 1)
    assert t["setmaxnreg at 128"]["gain"] == pytest.approx(601 / 601 - 1)
    assert t["setmaxnreg (rung 3)"]["of_cublas"] == pytest.approx((680 / 760 + 690 / 780) / 2)
    assert t["cuBLAS"]["of_cublas"] == pytest.approx(1.0)


def test_suite_is_registered_and_its_script_exits_2_without_a_gpu():
    suites._collect()
    assert suites.SUITES["ws_rung3_steps"] == (S.measure_steps, S.summarize_steps, "sm_90a")
    assert_script_exits_2_without_a_gpu(ROOT / "tools" / "gpu_rung3_steps.py", "--out", "/tmp/asynctc_rung3_steps_test",
                                        cwd=ROOT)
