"""Auto-checked exercises. Each exercise computes its expected answer from the course's models or
compiled kernels (never a typed-in number) and compares it with the learner's.

``check(name, answer)`` prints a verdict and returns True/False; with ``solution=True`` (used by the
solution cells, which CI executes) a wrong answer raises :class:`AssertionError`.
"""

from __future__ import annotations

from typing import Any, Callable

_EXERCISES: dict[str, tuple[str, Callable[..., Any]]] = {}
_CHOICES: dict[str, tuple[str, ...]] = {}
_HINTS: dict[str, Callable[..., Any]] = {}


def exercise(name: str, prompt: str, choices: tuple[str, ...] = (), hint: Callable[..., Any] | None = None):
    """Register ``fn`` (returning the expected answer) as exercise ``name``; ``choices``: the
    answers it accepts (for multiple-choice exercises; compared ignoring case and spaces);
    ``hint(answer, **kw)``: a sentence about a wrong answer (or None), printed with the verdict."""
    def deco(fn):
        _EXERCISES[name] = (prompt, fn)
        if choices:
            _CHOICES[name] = choices
        if hint:
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
    print(f"[{name}] {'correct' if ok else 'not quite — try again'}")
    tip = None if ok or name not in _HINTS else _HINTS[name](answer, **kw)
    if tip:
        print(f"[{name}] hint: {tip}")
    if solution and not ok:
        raise AssertionError(f"solution for {name} is wrong: {answer!r}, expected {exp!r}")
    return ok
