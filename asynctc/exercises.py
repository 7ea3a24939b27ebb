"""Auto-checked exercises. Each exercise computes its expected answer from the course's models or
compiled kernels (never a typed-in number) and compares it with the learner's.

``check(name, answer)`` prints a verdict and returns True/False; with ``solution=True`` (used by the
solution cells, which CI executes) a wrong answer raises :class:`AssertionError`.
"""

from __future__ import annotations

from typing import Any, Callable

_EXERCISES: dict[str, tuple[str, Callable[..., Any]]] = {}
_CHOICES: dict[str, tuple[str, ...]] = {}
_HINTS: dict[str, Callable[..., str]] = {}


def exercise(name: str, prompt: str, choices: tuple[str, ...] = (),
             hint: Callable[..., str] | None = None):
    """Register ``fn`` (returning the expected answer) as exercise ``name``; ``choices``: the
    answers it accepts (for multiple-choice exercises; compared ignoring case and spaces);
    ``hint(answer, **kw) -> str``: printed after a wrong answer, pointing at the mistake."""
    def deco(fn):
        _EXERCISES[name] = (prompt, fn)
        if choices:
            _CHOICES[name] = choices
        if hint is not None:
            _HINTS[name] = hint
        return fn
    return deco


def prompt(name: str) -> str:
    return _EXERCISES[name][0]


def expected(name: str, **kw) -> Any:
    return _EXERCISES[name][1](**kw)


def _equal(a, b) -> bool:
    if isinstance(b, str):
        return isinstance(a, str) and a.strip().lower() == b.strip().lower()
    if isinstance(b, float) or isinstance(a, float):
        try:
            return abs(float(a) - float(b)) <= 1e-6 * max(1.0, abs(float(b)))
        except (TypeError, ValueError):
            return False
    if isinstance(b, (list, tuple)):
        return isinstance(a, (list, tuple)) and len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return a == b


def check(name: str, answer: Any, *, solution: bool = False, **kw) -> bool:
    """Compare ``answer`` with exercise ``name``'s expected value (keyword arguments go to it)."""
    if name not in _EXERCISES:
        raise KeyError(f"no exercise {name!r}; known: {sorted(_EXERCISES)}")
    if answer is None or answer is Ellipsis:
        print(f"[{name}] not answered yet — replace the ... with your answer and run the cell again.")
        if solution:
            raise AssertionError(f"solution for {name} is missing")
        return False
    choices = _CHOICES.get(name)
    if choices and not any(_equal(answer, c) for c in choices):
        print(f"[{name}] answer one of {', '.join(repr(c) for c in choices)} (got {answer!r})")
        if solution:
            raise AssertionError(f"solution for {name} is not one of {choices}: {answer!r}")
        return False
    exp = expected(name, **kw)
    ok = _equal(answer, exp)
    if ok or name not in _HINTS:
        print(f"[{name}] {'correct' if ok else 'not quite — try again'}")
    else:
        print(f"[{name}] not quite — hint: {_HINTS[name](answer, **kw)}")
    if solution and not ok:
        raise AssertionError(f"solution for {name} is wrong: {answer!r}, expected {exp!r}")
    return ok


# ---- chapter 00 -----------------------------------------------------------------------------------

@exercise("ch00.intensity", "Arithmetic intensity (FLOP per byte of DRAM traffic) of an M=N=K=n fp16 "
          "GEMM that reads A and B once and writes C once (2 bytes per element).")
def _ch00_intensity(n: int) -> float:
    return 2 * n**3 / (2 * 3 * n * n)


@exercise("ch00.memory_bound", "Which of the sizes are memory-bound (intensity below the ridge point)?")
def _ch00_memory_bound(sizes, ridge: float) -> list:
    return [s for s in sizes if _ch00_intensity(s) < ridge]


# ---- chapter 01 -----------------------------------------------------------------------------------

@exercise("ch01.smem_bytes", "Shared-memory bytes of ONE stage (one A tile and one B tile, fp16) for a "
          "bm×bn×bk CTA tile.")
def _ch01_smem(bm: int, bn: int, bk: int) -> int:
    from .gemm import MmaSyncTile
    return MmaSyncTile(bm, bn, bk).smem_bytes // 2


@exercise("ch01.hmma_per_ktile", "How many mma.sync.m16n8k16 (HMMA) instructions does one warp issue per "
          "k-tile, for a wm×wn warp tile and a bk-deep k-tile?")
def _ch01_hmma(wm: int, wn: int, bk: int) -> int:
    return (wm // 16) * (wn // 8) * (bk // 16)


@exercise("ch01.costliest_part", "Which part of the chapter-01 kernel's data path costs more time: "
          "\"copy\" (global→shared by the threads) or \"ldmatrix\"? Predict; the check compares "
          "with the measured ablation (the mma_sync record's results[\"ablation\"]).", choices=("copy", "ldmatrix"))
def _ch01_costliest(ablation) -> str:
    t = {x["variant"]: x["tflops"] for x in ablation}
    return "copy" if t["no global→shared copy"] > t["no ldmatrix"] else "ldmatrix"
