"""ch01.two_rows (asynctc/mma_sync/two_rows.py): the learner's numba kernel, two rows of C per thread,
run in numba's simulator (no GPU here). A right kernel passes; each named mistake gets its hint; the
template left as it is counts as not answered. Each launch takes a few seconds in the simulator."""
from __future__ import annotations

import importlib.util
import inspect
import re
import textwrap

import numpy as np
import pytest

from asynctc.core import exercises
from asynctc.mma_sync import two_rows as T

#: The solution's source (the course's reference kernel), to be broken one line at a time.
SOLUTION = textwrap.dedent(inspect.getsource(T.reference().py_func))
HEAD = ("from asynctc import simt\n"
        "cuda = simt.numba_cuda()\n"
        "from numba import float32\n"
        "TILE = simt.TILE\n"
        "ROWS = 2 * TILE\n\n\n")


def _kernel(tmp_path, src: str, name: str = "learner"):
    """The ``@cuda.jit`` kernel defined by ``src``, imported from a file (so its source can be read)."""
    path = tmp_path / f"{name}.py"
    path.write_text(HEAD + "@cuda.jit\n" + src.split("@cuda.jit\n", 1)[-1])
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.two_rows


def _swap(old: str, new: str) -> str:
    assert old in SOLUTION, old
    return SOLUTION.replace(old, new)


def test_the_right_kernel_passes(capsys):
    assert exercises.check("ch01.two_rows", T.reference(), solution=True)
    out = capsys.readouterr().out
    assert ("correct — your kernel really ran: 6 blocks × 256 threads in numba's CUDA simulator on this "
            "CPU (numba also compiles it for sm_90), and every element of its 53×37 C passed the float64 check.") in out, out
    assert "FFMA per shared-memory load of B: 1 in simt.py's kernel → 2 in yours" in out, out
    assert "mma.sync" in out and out.count(". ") == 1, out         # two sentences


def test_the_template_is_not_answered(tmp_path, capsys):
    src = _swap("row2 = row + TILE", "row2 = ...")
    lines = [ln for ln in src.splitlines() if "acc += sA" not in ln and "acc2 += sA" not in ln]
    src = "\n".join(ln.split("b = sB")[0] + "..." if "b = sB[kk, tx]" in ln else ln for ln in lines)
    assert not exercises.check("ch01.two_rows", _kernel(tmp_path, src))
    out = capsys.readouterr().out
    assert out.startswith("[ch01.two_rows] not answered yet — replace each ... with code, in: "
                          "`row2 = ...`; `...`"), out


def _hint(tmp_path, capsys, src: str) -> str:
    assert not exercises.check("ch01.two_rows", _kernel(tmp_path, src))
    out = capsys.readouterr().out.strip()
    assert out.startswith("[ch01.two_rows] not quite — "), out
    return out


MISTAKES = [
    # (what the learner wrote, words of the hint)
    (("row2 = row + TILE", "row2 = row + 1"), "second rows (17…31) are never stored."),
    (("row2 = row + TILE", "row2 = ty + TILE"), "never stored."),
    (("acc2 += sA[ty + TILE, kk] * b", "acc2 += sA[ty, kk] * b"), "the first rows are right, the second are not"),
    (("acc2 += sA[ty + TILE, kk] * b", "acc += sA[ty + TILE, kk] * b"), "the first rows are wrong too"),
    (("if row < M and col < N:", "if row < M and col < N - 1:"), "only the partial blocks at C's edges"),
    (("if row2 < M and col < N:", "if col < N:"), "raised IndexError in thread"),
    (("b = sB[kk, tx]", "b = sB[kk, tx] + bias"), "raised NameError"),
]


@pytest.mark.parametrize("swap,words", MISTAKES, ids=[m[0][1] for m in MISTAKES])
def test_each_mistake_gets_its_hint(tmp_path, capsys, swap, words):
    out = _hint(tmp_path, capsys, _swap(*swap))
    assert words in out, out


@pytest.mark.tiers
@pytest.mark.parametrize("swap, symptom, question, rule", [
    (("row2 = row + TILE", "row2 = row + 1"), "never stored.", "which row does it name?",
     "its second is TILE rows further down."),
    (("acc2 += sA[ty + TILE, kk] * b", "acc2 += sA[ty, kk] * b"), "the second are not",
     "Which products does the second accumulator, acc2, add?", "acc2 adds sA[ty + TILE, kk] · sB[kk, tx]"),
], ids=["row2", "acc2"])
def test_a_miss_asks_first_and_gives_the_rule_second(tmp_path, tiers, swap, symptom, question, rule):
    """Readers: exercise 1's prompt dictated the steps. The prompt now asks; a first miss tells the
    symptom and a question, the same miss again the rule."""
    tiers("ch01.two_rows", _kernel(tmp_path, _swap(*swap)), symptom, question, rule)


def test_the_prompt_asks_and_does_not_dictate():
    from pathlib import Path
    src = Path(__file__).resolve().parents[1] / "notebooks" / "src" / "01_synchronous.py"
    text = src.read_text().split("**1. Two rows per thread.**", 1)[1].split("# %%", 1)[0]
    assert "Which row is `row2`?" in text and "row + TILE" not in text and "ty + TILE" not in text, text


READ_TWICE = [
    # (what the learner wrote, words of the hint): right numbers, but sB read twice per kk
    (("acc2 += sA[ty + TILE, kk] * b", "acc2 += sA[ty + TILE, kk] * sB[kk, tx]"), "reads sB 2 times per kk"),
    (("acc += sA[ty, kk] * b", "acc += sA[ty, kk] * sB[kk, tx]"), "reads sB 2 times per kk"),
]


@pytest.mark.parametrize("swap,words", READ_TWICE, ids=["acc2", "acc"])
def test_reading_sB_twice_fails_with_its_hint(tmp_path, capsys, swap, words):
    """Readers: a kernel that reads sB twice per kk passed, though the exercise is one read feeding two
    FFMAs. Its numbers are right, so the hint says so, and asks for the one read."""
    out = _hint(tmp_path, capsys, _swap(*swap))
    assert "every element is right" in out and words in out, out


def test_a_from_sB_gets_the_wrong_numbers_hint_and_the_read_count(tmp_path, capsys):
    """The A operand taken from sB: wrong numbers, and the hint adds that sB is read twice."""
    out = _hint(tmp_path, capsys, _swap("acc += sA[ty, kk] * b", "acc += sB[ty, kk] * b"))
    assert "the first rows are wrong too" in out and "reads sB 2 times per kk: A's values are in sA" in out, out


def test_not_a_kernel(capsys):
    def two_rows(A, B, C):
        pass
    assert not exercises.check("ch01.two_rows", two_rows)
    assert "pass your kernel, the function under @cuda.jit" in capsys.readouterr().out


def test_the_pieces():
    assert T.grid_for(53, 37) == ((3, 2), (16, 16))
    assert T.holes("x = ...  # ... in a comment\ny = '...'\n") == ["x = ..."]
    assert T.ffma_per_b_load(SOLUTION) == 2
    assert T.b_loads_per_k(SOLUTION) == 1
    assert T.b_loads_per_k(re.sub(r'\* b\b', '* sB[kk, tx]', SOLUTION)) == 3
    e = IndexError("tid=[3, 5, 0] ctaid=[1, 1, 0]: index 60 is out of bounds for axis 0 with size 53")
    assert T.raised_hint(e).startswith("your kernel raised IndexError in thread (tx=3, ty=5) of block "
                                       "(1, 1): index 60 is out of bounds")
    e = TypeError("Failed in cuda mode pipeline (step: nopython frontend)\nNameError: name 'bias' is not defined")
    assert T.raised_hint(e) == "your kernel raised TypeError: NameError: name 'bias' is not defined."
    # a store below C, as an unchecked store does on a GPU, shows in the padding rows
    m, n, k = T.SHAPE
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    out = np.full((m + 2 * T.TILE, n), np.nan, np.float32)
    out[:m] = a @ b
    assert T._diagnose(out, a, b) is None
    out[m + 3, 0] = 1.0
    assert "your kernel wrote row" in T._diagnose(out, a, b)


def test_a_shape_the_gpu_refuses_gets_its_hint(tmp_path, capsys):
    """The simulator runs ``cuda.shared.array((2 * TILE, TILE), …)``; numba's GPU compiler refuses a
    shape computed in the kernel (the H200 said so at 611c4ea). The check compiles for sm_90 too."""
    if T.device_compile_error(T.reference()) is None:
        pytest.skip("numba's CUDA compiler (NVVM) is not installed here")
    out = _hint(tmp_path, capsys, _swap("cuda.shared.array((ROWS, TILE), float32)",
                                        "cuda.shared.array((2 * TILE, TILE), float32)"))
    assert "it runs right in the simulator, but numba cannot compile it for a GPU: TypingError: No " \
           "implementation of function Function(<function shared.array>) found for signature — numba" in out, out
    assert "ROWS = 2 * TILE, and write cuda.shared.array((ROWS, TILE), float32)" in out, out


def test_a_typing_error_on_the_gpu_gets_the_same_advice():
    e = Exception("Failed in cuda mode pipeline (step: nopython frontend)\nNo implementation of function "
                  "Function(<function shared.array at 0x7f>) found for signature:")
    assert T.raised_hint(e).startswith("your kernel raised Exception: No implementation of function "
                                       "Function(<function shared.array>) found for signature — numba")
    assert T.SHAPE_ADVICE in T.raised_hint(e)
