"""The exercise checker: unanswered, right and wrong answers; solutions must assert."""
import pytest

from asynctc import mma_sync, why_async  # noqa: F401  (they register the ch00 and ch01 exercises)
from asynctc.core import exercises


def test_unanswered_is_not_an_error(capsys):
    assert exercises.check("ch00.intensity", ..., n=512) is False
    assert "not answered yet" in capsys.readouterr().out


def test_right_and_wrong():
    assert exercises.check("ch00.intensity", 512 / 3, n=512)
    assert not exercises.check("ch00.intensity", 512 / 2, n=512)
    with pytest.raises(AssertionError, match="wrong"):
        exercises.check("ch00.intensity", 1.0, n=512, solution=True)
    with pytest.raises(AssertionError, match="missing"):
        exercises.check("ch00.intensity", ..., n=512, solution=True)


def test_expected_values_come_from_models():
    assert exercises.expected("ch01.smem_bytes", bm=128, bn=128, bk=64) == (128 * 64 + 64 * 128) * 2
    assert exercises.expected("ch01.hmma_per_ktile", wm=64, wn=64, bk=64) == 4 * 8 * 4
    abl = [{"variant": "no global→shared copy", "tflops": 500.0}, {"variant": "no ldmatrix", "tflops": 430.0}]
    assert exercises.expected("ch01.costliest_part", ablation=abl) == "copy"
    assert exercises.check("ch01.costliest_part", " Copy", ablation=abl)
    assert not exercises.check("ch01.costliest_part", "both", ablation=abl)
    assert not exercises.check("ch01.costliest_part", "ldmatrix", ablation=abl)
    abl[1]["tflops"] = 600.0
    assert exercises.expected("ch01.costliest_part", ablation=abl) == "ldmatrix"
    assert exercises.expected("ch00.memory_bound", sizes=[3, 300, 3000], ridge=250) == [3, 300]


def test_unknown_exercise():
    with pytest.raises(KeyError, match="no exercise"):
        exercises.check("ch99.nothing", 1)
