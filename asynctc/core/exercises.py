"""Auto-checked exercises. Each exercise computes its expected answer from the course's models or
compiled kernels (never a typed-in number) and compares it with the learner's.

``check(name, answer, **kw)`` prints a verdict and returns True/False; with ``solution=True`` (used
by the solution cells, which CI executes) a wrong answer raises :class:`AssertionError`. Every call
is recorded in the progress file (:mod:`asynctc.core.progress`; ``ASYNCTC_PROGRESS`` moves it or
turns it off). :func:`expected` is the answer key: tests and teachers only.

How an exercise is registered (in its chapter module, at the end)::

    @exercise("ch01.smem_bytes", "Shared-memory bytes of ONE stage ...")
    def _ch01_smem(bm: int, bn: int, bk: int) -> int:        # the expected answer
        ...

    @diagnosis("ch01.smem_bytes")
    def _ch01_smem_hint(answer, expected, bm, bn, bk) -> str | None:
        ...                                                    # why a wrong answer is wrong

Equivalent forms are accepted:

* numbers: an int-valued float (``8192.0``), a numpy scalar, a numeric string (``"0x4000"``), an
  object with ``__int__`` (a :class:`~asynctc.models.descriptors.WgmmaDescriptor`); a float answer
  within the exercise's ``rtol`` (stated in its prompt, see :func:`prompt`);
* ``unordered=True`` exercises: any list, tuple, set or array, compared as a set;
* strings: case, surrounding spaces and quotes ignored; ``aliases`` map other spellings.

A wrong answer gets a hint. The exercise's *diagnosis* (``diagnose(answer, expected, **kw)``)
receives the answer already normalized (an ``int``/``float`` for numeric exercises, a ``set`` for
unordered ones, a lower-case string for multiple choice) and returns a sentence that names the
mistake, or None; :func:`known_mistake` matches the answer against a list of (wrong value, hint)
pairs. Without a specific hint the checker says by what factor the answer is off.

A call without the keyword arguments the exercise needs gets a sentence naming them, not a
:class:`TypeError`.

**Code exercises** (:func:`code_exercise`) take code, not a value: the learner writes a function
(or several, passed as keyword arguments, or CUDA C++ in a string) and ``check`` runs it. The
exercise's ``judge(answer, **kw)`` runs the learner's code against the course's model and returns
None when it agrees everywhere (or an :class:`Accepted` note to print after "correct"), or the
sentence that names the first disagreement (the model's own diagnosis where there is one). An
exception raised inside the learner's code is reported, never re-raised; a function whose body is
still ``...`` (it returns None) counts as not answered; a function that returns the wrong kind of
value (a float where an int is asked) is told what it returned, not that it raised (the judge
raises :class:`WrongReturn`). A passing code answer is kept (:mod:`asynctc.core.answers`);
:func:`my_answer` gives it back to a later chapter.
"""

from __future__ import annotations

import os

import dataclasses
import difflib
import inspect
import math
import re
from typing import Any, Callable, Iterable


@dataclasses.dataclass
class Exercise:
    """One registered exercise: ``fn(**kw)`` returns the expected answer; ``params`` are the
    keyword arguments it needs (``optional`` those with defaults)."""

    name: str
    prompt: str
    fn: Callable[..., Any]
    params: tuple[str, ...]
    optional: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    aliases: dict[str, str] = dataclasses.field(default_factory=dict)
    rtol: float | None = None
    unordered: bool = False
    diagnose: Callable[..., str | None] | None = None
    judge: Callable[..., str | None] | None = None     # code exercises: see code_exercise
    note: Callable[..., str | None] | None = None      # see accepted_note
    offered: tuple[str, ...] = ()                      # the choices a refusal lists (default: all)


_EXERCISES: dict[str, Exercise] = {}


def _norm_text(s: str) -> str:
    return " ".join(s.strip().strip("\"'`").strip().lower().split())


def exercise(name: str, prompt: str, choices: tuple[str, ...] = (), *, rtol: float | None = None,
             unordered: bool = False, aliases: dict[str, str] | None = None,
             diagnose: Callable[..., str | None] | None = None,
             hint: Callable[..., str | None] | None = None, offered: tuple[str, ...] = ()):
    """Register ``fn`` (returning the expected answer) as exercise ``name``.

    ``choices``: the answers a multiple-choice exercise accepts (compared ignoring case and
    spaces); ``aliases``: other spellings of a choice (``{"ldsm": "ldmatrix"}``); ``rtol``: the
    relative tolerance for a numeric answer (stated in the prompt); ``unordered``: the answer is a
    collection compared as a set; ``diagnose``: see :func:`diagnosis`; ``hint(answer, **kw)``: the
    same without the expected value (a sentence, or None); ``offered``: the choices the prompt
    names, which an answer outside ``choices`` is told (default: every choice).
    """
    if hint is not None and diagnose is None:
        def diagnose(answer, expected, **kw):  # noqa: ARG001  (the hint does not need it)
            return hint(answer, **kw)
    def deco(fn):
        sig = inspect.signature(fn)
        req = tuple(p.name for p in sig.parameters.values() if p.default is inspect.Parameter.empty)
        opt = tuple(p.name for p in sig.parameters.values() if p.default is not inspect.Parameter.empty)
        _EXERCISES[name] = Exercise(name, prompt, fn, req, opt, tuple(choices),
                                    {_norm_text(k): _norm_text(v) for k, v in (aliases or {}).items()},
                                    rtol, unordered, diagnose, offered=tuple(offered))
        return fn
    return deco


def accepted_note(name: str):
    """Register ``fn(answer, **kw) -> str | None`` as the note exercise ``name`` (registered
    before, not a code exercise) prints after a right answer: ``[name] correct — note`` (why it is
    right, from the record). None prints ``[name] correct``."""
    def deco(fn):
        _EXERCISES[name].note = fn
        return fn
    return deco


class Accepted(str):
    """What a code exercise's judge returns for a right answer it has something to add to: a note
    (the cost of an equivalent form, what the compiler made of it). ``check`` prints
    ``[name] correct — note``; an empty note prints ``[name] correct``, as None does. ``meta``: a
    function returning a small JSON-able dict kept with the learner's answer
    (:func:`asynctc.core.answers.save`), called only when the answer is kept (never for a solution
    cell); e.g. whether the learner's build compiles to the course kernel's SASS."""

    def __new__(cls, text: str = "", meta: Callable[[], dict] | None = None):
        obj = super().__new__(cls, text)
        obj.meta = meta
        return obj


class NotAnswered(Exception):
    """Raised by a code exercise's judge when the learner's function still returns None (its body
    is ``...``): the check reports "not answered yet", not a wrong answer."""


class WrongReturn(Exception):
    """Raised by a code exercise's judge when the learner's function ran but returned a value of
    the wrong kind (``1.5`` where a byte offset, an int, is asked): the check prints the message as a
    wrong answer ("your function returned 1.5 for offset 0; return an int"), not as a crash of the
    learner's code."""


def spliced_source(before: str, body: str, after: str, name: str, source: str, resume: int) -> str:
    """A kernel's source with a learner's ``body`` (CUDA C++) between ``before`` and ``after``, for a
    CUDA code exercise: NVRTC counts the body's lines from 1 in a file it calls ``name`` and the
    kernel's own lines, from ``resume`` on, as ``source`` (``#line``), so its errors name either."""
    body = body if body.endswith("\n") else body + "\n"
    return f'{before}#line 1 "{name}"\n{body}#line {resume} "{source}"\n{after}'


_NVRTC_ERROR = re.compile(r"^(.*?)\((\d+)\): (?:catastrophic )?error: (.*)$", re.M)


def nvrtc_errors(log: str, body: str, name: str, elsewhere: Callable[[str, int, str, str], str], *,
                 limit: int = 2, note: Callable[[str], str] = lambda msg: "") -> str:
    """NVRTC's first ``limit`` errors in ``log``, joined by "; ": one in the learner's ``body``
    (spliced as ``name``: :func:`spliced_source`) as ``line n (that line): message`` plus
    ``note(message)``; any other as ``elsewhere(file, line, message, the log after it)``. When no
    error names a file and line (e.g. ``At end of source: error: expected a "}"``): the log's first
    line that says ``error:``, else its last line, or "NVRTC gave no message". (NVRTC's log ends
    with a NUL byte, which is dropped.)"""
    log = log.replace("\x00", "")
    lines, out = body.splitlines(), []
    for m in _NVRTC_ERROR.finditer(log):
        where, n, msg = m.group(1), int(m.group(2)), m.group(3).strip()
        if where.endswith(name) and 1 <= n <= len(lines):
            out.append(f"line {n} ({lines[n - 1].strip()}): {msg}{note(msg)}")
        else:
            out.append(elsewhere(where, n, msg, log[m.end():]))
        if len(out) == limit:
            break
    if not out:
        said = [ln.strip() for ln in log.strip().splitlines() if ln.strip()]
        out.append(next((ln for ln in said if "error:" in ln), said[-1] if said else "NVRTC gave no message"))
    return "; ".join(out)


def code_exercise(name: str, prompt: str, judge: Callable[..., str | None]):
    """Register a code exercise: ``fn(**kw)`` returns the reference (the answer key: the course's
    own function); ``judge(answer, **kw)`` runs the learner's ``answer`` (a function, or what the
    prompt asks for) and returns None when it is right, else the hint — a sentence naming the first
    input where it disagrees and why. The judge may raise :class:`NotAnswered` or
    :class:`WrongReturn`."""
    def deco(fn):
        sig = inspect.signature(fn)
        req = tuple(p.name for p in sig.parameters.values() if p.default is inspect.Parameter.empty)
        opt = tuple(p.name for p in sig.parameters.values() if p.default is not inspect.Parameter.empty)

        def diagnose(answer, expected, **kw):  # noqa: ARG001
            return judge(answer, **kw)
        _EXERCISES[name] = Exercise(name, prompt, fn, req, opt, diagnose=diagnose, judge=judge)
        return fn
    return deco


def is_code(name: str) -> bool:
    """Whether exercise ``name`` is a code exercise (:func:`code_exercise`): its answer is code."""
    return _get(name).judge is not None


def diagnosis(name: str):
    """Register ``fn(answer, expected, **kw) -> str | None`` as the hint giver of exercise ``name``
    (registered before). ``answer`` arrives normalized (see the module docstring); return a
    sentence naming the mistake, or None when nothing specific fits."""
    def deco(fn):
        _EXERCISES[name].diagnose = fn
        return fn
    return deco


#: Chapter prefix of an exercise name → the modules whose import registers that chapter's
#: exercises (imported on demand by name, so that ``check("ch05.full_parity", …)`` works in a fresh
#: session; core never imports a chapter module statically).
CHAPTER_MODULES = {
    "ch00": ("asynctc.why_async",),
    "ch01": ("asynctc.mma_sync",),
    "ch02": ("asynctc.cp_async",),
    "ch03": ("asynctc.tma",),
    "ch04": ("asynctc.wgmma",),
    "ch05": ("asynctc.models.pipeline", "asynctc.pipeline"),
    "ch06": ("asynctc.warp_specialization",),
    "ch07": ("asynctc.fp8",),
    "ch08": ("asynctc.pitfalls",),
    "ch09": ("asynctc.models.tcgen05", "asynctc.tcgen05"),
    "ch10": ("asynctc.claims",),
}


def _get(name: str) -> Exercise:
    """The exercise ``name``; if it is not registered yet, import its chapter's modules first
    (:data:`CHAPTER_MODULES`). Raises :class:`KeyError` naming the module to import otherwise."""
    if name not in _EXERCISES:
        import importlib
        mods = CHAPTER_MODULES.get(str(name).split(".", 1)[0], ())
        for mod in mods:
            if name in _EXERCISES:
                break
            try:
                importlib.import_module(mod)
            except ImportError:
                continue
    if name not in _EXERCISES:
        where = (f"import {' or '.join(mods)} (it registers the chapter's exercises)" if mods else
                 f"chapters with exercises: {', '.join(sorted(CHAPTER_MODULES))}")
        raise KeyError(f"no exercise {name!r}; {where}; known now: {sorted(_EXERCISES)}")
    return _EXERCISES[name]


def percent(rtol: float) -> str:
    """A relative tolerance as a percentage that never rounds to zero: 0.001 → "0.1%",
    1e-5 → "0.001%"."""
    pct = rtol * 100
    return f"{pct:.2g}%" if pct < 0.1 else f"{pct:.1f}%".replace(".0%", "%")


def prompt(name: str) -> str:
    """The exercise's question, with the tolerance a numeric answer is checked to."""
    ex = _get(name)
    text = ex.prompt
    if ex.rtol:
        text += f" (Answers within {percent(ex.rtol)} of the exact value are accepted.)"
    if ex.unordered:
        text += " (Any order.)"
    return text


def names() -> list[str]:
    """All registered exercises, sorted."""
    return sorted(_EXERCISES)


#: Environment variable that opens the answer key (:func:`expected`): the test suite and a teacher
#: set it; a learner has :func:`check`, whose hints say what is off without giving the answer.
ANSWER_KEY_ENV = "ASYNCTC_ANSWER_KEY"


def expected(name: str, **kw) -> Any:
    """The expected answer of exercise ``name`` — the answer key, for tests and teachers only:
    raises :class:`PermissionError` unless ``ASYNCTC_ANSWER_KEY=1`` is set."""
    import os
    if os.environ.get(ANSWER_KEY_ENV) != "1":
        raise PermissionError(f"exercises.expected() is the answer key (set {ANSWER_KEY_ENV}=1 for the "
                              f"test suite or as a teacher); to try an answer use "
                              f"exercises.check({name!r}, answer, ...) — a wrong one gets a hint")
    return _get(name).fn(**kw)


# --------------------------------------------------------------------------------------------------
# Equivalent forms
# --------------------------------------------------------------------------------------------------

class _NotAForm(Exception):
    """The answer is not in any form the exercise accepts (its message says which forms are)."""


def _number(a: Any, want_int: bool) -> int | float:
    """``a`` as an int (``want_int``) or float; raises :class:`_NotAForm`."""
    if isinstance(a, bool):
        raise _NotAForm("a number, not True/False")
    if isinstance(a, str):
        s = a.strip().replace("_", "").replace(",", "")
        try:
            return int(s, 0)
        except ValueError:
            try:
                a = float(s)
            except ValueError:
                if re.fullmatch(r"[\d\s.eE+\-*/()]+", s) and re.search(r"\d\s*[-+*/]", s):
                    raise _NotAForm(f"a number (got the text {a!r}, a string: drop the quotes, and "
                                    f"Python computes {s.strip()} for you)") from None
                raise _NotAForm(f"a number (got the text {a!r})") from None
    if isinstance(a, complex) or (hasattr(a, "dtype") and getattr(a, "ndim", 0) == 0
                                  and a.dtype.kind == "c"):
        raise _NotAForm("a real number")
    if hasattr(a, "ndim") and getattr(a, "ndim", 0) != 0:
        raise _NotAForm(f"a single number (got an array of shape {a.shape})")
    if isinstance(a, (list, tuple, set, frozenset, dict)):
        raise _NotAForm(f"a single number (got a {type(a).__name__})")
    try:
        if hasattr(a, "__index__"):
            return int(a.__index__())
        f = float(a)
    except (TypeError, ValueError):
        try:
            return int(a)                       # e.g. a WgmmaDescriptor (has __int__)
        except (TypeError, ValueError):
            raise _NotAForm(f"a number (got {type(a).__name__})") from None
    if math.isnan(f) or math.isinf(f):
        raise _NotAForm(f"a finite number (got {f})")
    if want_int and abs(f) >= 2**53:
        raise _NotAForm("an exact int (a float keeps only 53 bits; use int arithmetic or a hex "
                        "literal)")
    if want_int and f == int(f):
        return int(f)
    return f


def _scalar(a: Any, like: Any) -> Any:
    if isinstance(like, str):
        if not isinstance(a, str):
            raise _NotAForm(f"text in quotes (got {type(a).__name__})")
        return _norm_text(a)
    if isinstance(like, bool):
        return bool(a)
    if isinstance(like, (int, float)) or hasattr(like, "__index__"):
        return _number(a, want_int=not isinstance(like, float))
    return a


def normalize(name: str, answer: Any, exp: Any) -> Any:
    """``answer`` in the canonical form of exercise ``name`` (see the module docstring). Raises
    :class:`ValueError` saying which form is expected."""
    ex = _get(name)
    try:
        return _normalize(ex, answer, exp)
    except _NotAForm as e:
        raise ValueError(str(e)) from None


def _sequence_form(ex: Exercise, exp: Any) -> str:
    """The form of a sequence answer, for the "answer with …" line: a tuple as the prompt names
    its members ("Answer (stage, parity)"), else by its length; a list as a list."""
    if isinstance(exp, tuple):
        named = re.search(r"[Aa]nswer\s+`?\(([^()]*)\)", ex.prompt)
        inside = named.group(1) if named else ", ".join("…" for _ in exp)
        return f"{len(exp)} values in parentheses, ({inside})"
    return "a list"


def _normalize(ex: Exercise, answer: Any, exp: Any) -> Any:
    if ex.unordered:
        if isinstance(answer, (str, bytes, dict)) or not isinstance(answer, Iterable):
            raise _NotAForm("a list of values (any order), e.g. [a, b, c]")
        like = next(iter(exp), 0)
        return {_scalar(x, like) for x in answer}
    if isinstance(exp, (list, tuple)):
        if isinstance(answer, (str, bytes)) or not isinstance(answer, Iterable):
            raise _NotAForm(_sequence_form(ex, exp))
        return [_scalar(x, y) for x, y in zip(answer, exp)] + list(answer)[len(exp):]
    if ex.choices and not isinstance(answer, str):
        raise _NotAForm(f"one of {_listed(ex)}, in quotes")
    a = _scalar(answer, exp)
    if isinstance(a, str):
        a = ex.aliases.get(a, a)
    return a


def _swapped(ex: Exercise, answer: Any, exp: Any) -> bool:
    """Whether a two-value answer not in its form would be in it with its values swapped."""
    if not (isinstance(exp, tuple) and len(exp) == 2 and isinstance(answer, (tuple, list)) and len(answer) == 2):
        return False
    try:
        _normalize(ex, tuple(answer)[::-1], exp)
    except _NotAForm:
        return False
    return True


def _listed(ex: Exercise) -> str:
    """The choices a refusal names: those the prompt offers (``offered``), else every choice."""
    return ", ".join(repr(c) for c in ex.offered or ex.choices)


def _near_name(ex: Exercise, a: Any, exp: Any = None, kw: dict | None = None) -> str:
    """" — did you mean …?" for an answer that is part of one offered choice or close to it
    ('parity' for 'phase_parity'), else "". Where that choice is itself wrong (``exp`` given), the
    hint it would get follows, so a near miss is not left with a spelling fix alone."""
    if not isinstance(a, str) or not a:
        return ""
    names = ex.offered or ex.choices
    near = [c for c in names if a in _norm_text(c)] or difflib.get_close_matches(
        a, [_norm_text(c) for c in names], n=1, cutoff=0.6)
    near = [c for c in names if _norm_text(c) in {_norm_text(x) for x in near}]
    if len(near) != 1:
        return ""
    try:
        hint = None if exp is None or _equal(ex, _norm_text(near[0]), exp) else _hint(ex, _norm_text(near[0]), exp, kw or {})
    except Exception:  # noqa: BLE001 - a broken hint must never hide the verdict
        hint = None
    return f" — did you mean {near[0]!r}?" + (f" If so, not quite: {hint}" if hint else "")


def _close(a: Any, b: Any, rtol: float | None) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) \
            and not isinstance(a, bool) and not isinstance(b, bool):
        if isinstance(a, float) or isinstance(b, float) or rtol:
            tol = rtol if rtol else 1e-6
            return abs(float(a) - float(b)) <= tol * max(abs(float(b)), 1e-12 if rtol else 1.0)
        return a == b
    return a == b


def _equal(ex: Exercise, a: Any, exp: Any) -> bool:
    if ex.unordered:
        want = {_scalar(x, x) for x in exp}
        if len(a) != len(want):
            return False
        return all(any(_close(x, y, ex.rtol) for y in want) for x in a)
    if isinstance(exp, (list, tuple)):
        return len(a) == len(exp) and all(_close(x, y, ex.rtol) for x, y in zip(a, exp))
    if isinstance(exp, str):
        return a == _norm_text(exp)
    return _close(a, exp, ex.rtol)


# --------------------------------------------------------------------------------------------------
# Hints
# --------------------------------------------------------------------------------------------------

def known_mistake(answer: Any, expected: Any, mistakes: Iterable[tuple[Any, str]],
                  rtol: float = 1e-6) -> str | None:
    """The hint of the first (wrong value, hint) in ``mistakes`` that ``answer`` equals (numbers
    within ``rtol``), skipping any wrong value that happens to equal ``expected``."""
    def same(x, y):
        if isinstance(x, (int, float)) and isinstance(y, (int, float)):
            return x == y or abs(float(x) - float(y)) <= rtol * abs(float(y))
        return x == y
    for value, hint in mistakes:
        if value is None or same(value, expected):
            continue
        if same(answer, value):
            return hint
    return None


_FACTORS = (2, 3, 4, 8, 16, 32, 64, 1024)


def generic_hint(answer: Any, expected: Any) -> str | None:
    """A hint for a number that no diagnosis explains: by what simple factor it is off, or whether
    it is too large or too small."""
    if not isinstance(answer, (int, float)) or not isinstance(expected, (int, float)):
        return None
    if expected and answer == -expected:
        return "the sign is wrong."
    if answer == 0:
        return "it is not zero."
    if expected == 0:
        return "think about which term cancels."
    r = answer / expected
    for f in _FACTORS:
        if abs(r - f) <= 1e-6 * f:
            return f"your answer is {f}× too large — which factor did you count {f}× over?"
        if abs(r - 1 / f) <= 1e-6 / f:
            return f"your answer is {f}× too small — which factor is missing?"
    return "too large." if r > 1 else "too small."


#: Hints in two tiers (readers: the first miss should not hand over the rule). A hint function
#: returns :func:`tiered` parts inside its text; :func:`check` tells the first miss at a symptom the
#: symptom and a question pointing at the rule (the hint ending in :data:`SECOND`), and a miss at the same symptom
#: again (in this Python session) the symptom and the rule, with its arithmetic.
TIER = "\x1f"
_seen: set[str] = set()
SECOND = " (The same miss again gives the arithmetic.)"
_TIERED = re.compile(f"{TIER}([^{TIER}]*){TIER}([^{TIER}]*){TIER}([^{TIER}]*){TIER}")


def _key(symptom: str) -> str:
    """The spot a symptom names, its numbers left out: a second wrong answer at the same spot (the
    capstone's prediction "stage 0, parity 0", then "stage 1, parity 0") is its second miss. A
    number's sign, decimals and exponent go too: fresh random inputs print -1.773 one time, 3.5e-05
    the next, at the same spot."""
    return re.sub(r"[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?", "#", symptom)


def with_more(hint: str, more: int, where: str = "") -> str:
    """``hint``, and when ``more`` > 0 how many other mistakes the answer holds (``where``: which
    kinds), so that fixing the named one does not look like a new failure (03, 05, 09's checks)."""
    if not more:
        return hint
    return hint + (f" (And {more} more mistake{'s' if more > 1 else ''}" + (f", in {where}" if where else "")
                   + ": fix this one first.)")


def tiered(symptom: str, question: str, rule: str) -> str:
    """A two-tier part of a hint: ``symptom`` (what the answer did, with its numbers) then, at the
    first miss, ``question`` (one question pointing at the section that holds the rule), at the
    next, ``rule`` (the arithmetic). Each part carries its own punctuation; text may surround it."""
    return f"{TIER}{symptom}{TIER}{question}{TIER}{rule}{TIER}"


def told(hint: str | None, *, rule: bool = False) -> str | None:
    """``hint`` as :func:`check` prints it: each :func:`tiered` part's question the first time its
    symptom is seen in this session, its rule after (always its rule with ``rule=True``, for a
    hint shown outside a check: a picture's caption, a test). :data:`SECOND` ends the hint once
    when any part was told its question (a hint of two parts says it once, not twice)."""
    if not hint or TIER not in hint:
        return hint
    asked = []

    def one(m):
        symptom, question, arithmetic = m.groups()
        if rule or _key(symptom) in _seen:
            return symptom + arithmetic
        _seen.add(_key(symptom))
        asked.append(symptom)
        return symptom + question
    out = _TIERED.sub(one, hint)
    if asked and not out.rstrip().endswith((".", "?", "!", ".)", "?)", "!)")):
        out = out.rstrip() + "."                     # the promise follows a finished sentence (one in brackets too)
    return out + SECOND if asked else out


def passed(name: str) -> bool:
    """Whether code exercise ``name`` has a kept passing answer (:func:`my_answer`) of a kind code
    answers take (text, a function, or several): e.g. whether the capstone's loops
    (``ch06.whole_kloop``) are the learner's own, for the chapters after it."""
    got = my_answer(name)
    return isinstance(got, str) or callable(got) or (isinstance(got, (tuple, list, dict)) and bool(got))


def _hint(ex: Exercise, a: Any, exp: Any, kw: dict) -> str | None:
    h = None
    if ex.diagnose is not None:
        try:
            h = told(ex.diagnose(a, exp, **kw))
        except Exception:  # noqa: BLE001 - a broken hint must never hide the verdict
            h = None
    return h or generic_hint(a, exp)


def _call_shape(ex: Exercise) -> str:
    args = ", ".join(f"{p}=…" for p in ex.params)
    return f"check({ex.name!r}, answer{', ' + args if args else ''})"


def _args_problem(ex: Exercise, kw: dict) -> str | None:
    missing = [p for p in ex.params if p not in kw]
    unknown = [k for k in kw if k not in ex.params and k not in ex.optional]
    if missing:
        return f"needs {', '.join(missing)}: {_call_shape(ex)}"
    if unknown:
        takes = ", ".join(ex.params + ex.optional) or "no keyword arguments"
        return (f"takes {takes}, not {', '.join(unknown)}: {_call_shape(ex)}")
    return None


#: Why a passing function answer was not kept, and what to do (printed by :func:`_check_code`).
UNKEPT = ("Python cannot read back the source of a function made in `python -c`, at an interactive "
          "prompt, or as a lambda or closure, so later chapters (`so_far`, 06e) use the course's "
          "piece; define it with `def` in a notebook cell or a .py file and check it again")


def _function_answer(answer: Any) -> bool:
    """Whether ``answer`` is a function answer (or a tuple/list/dict of them): the answers
    :data:`UNKEPT` is about when :func:`asynctc.core.answers.keep` could not write them back."""
    import types
    fns = (answer.values() if isinstance(answer, dict) else answer
           if isinstance(answer, (tuple, list)) else [answer])
    try:
        fns = list(fns)
    except TypeError:
        return False
    return bool(fns) and all(isinstance(f, types.FunctionType) for f in fns)


def _check_code(ex: Exercise, answer: Any, solution: bool, kw: dict, fail) -> bool:
    from . import progress
    try:
        hint = ex.judge(answer, **kw)
    except NotAnswered as e:
        return fail(f"not answered yet — {e}", "is missing", "unanswered")
    except WrongReturn as e:
        return fail(f"not quite — {e}", f"is wrong ({e})", "wrong")
    except Exception as e:  # noqa: BLE001 - the learner's code raised: say so, never crash the cell
        return fail(f"not quite — your code raised {type(e).__name__}: {e}",
                    f"is wrong: it raised {type(e).__name__}: {e}", "wrong")
    if not (hint is None or isinstance(hint, Accepted)):
        hint = told(hint)
    if hint is None or isinstance(hint, Accepted):
        print(f"[{ex.name}] correct" + (f" — {hint}" if hint else ""))
        progress.record(ex.name, "correct", solution)
        if not solution:
            from . import answers
            meta = getattr(hint, "meta", None)
            try:
                extra = meta() if meta is not None else None
            except Exception:  # noqa: BLE001 - metadata is a bonus: never fail a passing check
                extra = None
            _, why = answers.keep(ex.name, answer, meta=extra)
            if why == answers.NO_SOURCE and _function_answer(answer):
                print(f"[{ex.name}] (not kept as code: {UNKEPT})")
        _opened.add(ex.name)
        return True
    return fail(f"not quite — {hint}", f"is wrong ({hint})", "wrong")


def my_answer(name: str) -> Any:
    """Your last passing answer to code exercise ``name``, kept when its check passed
    (:mod:`asynctc.core.answers`): a function for a function answer (a tuple of them for a pair),
    the text for CUDA C++; None when none is kept (not passed yet in this checkout, recording off,
    or an answer that cannot be kept, such as a lambda). Solution cells keep nothing. Raises
    :class:`KeyError` for a name that is no chapter's (``"ch03.swizzle_128b"``)."""
    if str(name).split(".", 1)[0] not in CHAPTER_MODULES or "." not in str(name):
        raise KeyError(f"no exercise {name!r}: names are chapter.exercise, e.g. 'ch03.swizzle_128b'")
    from . import answers
    return answers.load(name)


#: Exercises whose answer-showing cells are open in this Python session: answered correctly here,
#: or opened with :func:`reveal`. Not stored: a fresh kernel starts with every answer held back.
_opened: set[str] = set()
_tried: set[str] = set()   # exercises answered wrong in this session (after(..., tried=True))


def after(name: str, held: str = "this cell shows its answer", *, tried: bool = False) -> bool:
    """True once exercise ``name`` was answered correctly in this session, or in an earlier one (the
    progress file holds a correct attempt that was not a solution run: a restarted kernel does not
    hide again what the learner's own answer opened), or :func:`reveal` opened it. Otherwise prints
    one line saying what is held back (``held``, where the cell shows the rest of what it prints)
    and how to see it, and returns False.

    A learner-notebook cell that shows an exercise's answer (the kernel's own lines, say) opens with
    ``if exercises.after("ch06.consumer_loop"):``, so "Run All" never shows it before the learner tried.
    ``tried=True``, for a prediction checked against data the cell shows (02 §4's stage sweep): the
    cell opens once the prediction was answered at all, right or wrong, so a hint can send the
    learner to the data.
    The notebook build opens every such cell (``ASYNCTC_BUILDING_NOTEBOOKS``): the solution notebook and
    the course site show the answer; the learner notebook is stored without that cell's output.
    """
    _get(name)
    if name in _opened or os.environ.get("ASYNCTC_BUILDING_NOTEBOOKS") == "1":
        return True
    from . import progress
    said = {d.get("status") for d in progress.attempts()       # this exercise's own attempts, read once
            if d.get("exercise") == name and not d.get("solution")}
    if "correct" in said:
        _opened.add(name)
        return True
    if tried and (name in _tried or "wrong" in said):
        return True
    print(f"(held back until exercise {name} " + ("is answered" if tried else "passes") + f": {held}. "
          f"To see it now: exercises.reveal({name!r}), then run this cell again.)")
    return False


def reveal(name: str) -> None:
    """Open the cells that show exercise ``name``'s answer before it passes (see :func:`after`)."""
    _get(name)
    _opened.add(name)
    print(f"[{name}] its answer cells are open: run them.")


def shown(value: Any) -> str:
    """A short form of an answer for a printed line: floats to 4 significant digits, ints of more
    than 32 bits in hex, sequences element by element."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, float):
        return f"{value:#.4g}".rstrip(".")       # '#': 1.990 keeps its zero (four digits), 2.0 reads 2.000
    if isinstance(value, int):
        return hex(value) if abs(value) >= 1 << 32 else str(value)
    if isinstance(value, (list, tuple)):
        inner = ", ".join(shown(v) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})" if isinstance(value, tuple) else f"[{inner}]"
    if hasattr(value, "__index__"):
        return shown(int(value.__index__()))
    if hasattr(value, "dtype") and getattr(value, "ndim", 1) == 0:
        return shown(value.item())
    return repr(value)


_told_where: list[bool] = []


def where_once() -> str | None:
    """Where attempts and kept answers go (:func:`asynctc.core.progress.where`), the first time in
    this session it is asked, and only while the learner needs telling: before the progress file
    exists (no attempt kept yet), or when ``ASYNCTC_PROGRESS`` names a file of its own. None
    otherwise, when recording is off, or in a notebook build. Chapter banners print it
    (:func:`asynctc.core.notebook.banner`: a cell whose output varies)."""
    if _told_where or os.environ.get("ASYNCTC_BUILDING_NOTEBOOKS") == "1":
        return None
    _told_where.append(True)
    from . import progress
    p = progress.path()
    if p is not None and p.is_file() and os.environ.get(progress.ENV) is None:
        return None                 # the default file, already in use: said before, not repeated
    return progress.where()


def check(name: str, answer: Any, *, solution: bool = False, **kw) -> bool:
    """Compare ``answer`` with exercise ``name``'s expected value (keyword arguments go to it).

    Prints one line — ``[name] correct``, ``[name] not quite — <hint>``, or what is missing — and
    returns True/False. With ``solution=True`` anything but a correct answer raises
    :class:`AssertionError` (solution cells run in CI). Raises :class:`KeyError` for an unknown
    exercise name.
    """
    ex = _get(name)
    from . import progress

    def fail(msg: str, why: str, status: str = "invalid") -> bool:
        print(f"[{name}] {msg}")
        if status == "wrong" and not solution:
            _tried.add(name)
        progress.record(name, status, solution, msg)
        if solution:
            raise AssertionError(f"solution for {name} {why}")
        return False

    problem = _args_problem(ex, kw)
    if problem:
        return fail(problem, f"cannot be checked: {problem}")
    if answer is None or answer is Ellipsis:
        return fail("not answered yet — replace the ... with your answer and run the cell again.",
                    "is missing", "unanswered")
    if ex.judge is not None:
        return _check_code(ex, answer, solution, kw, fail)
    try:
        exp = ex.fn(**kw)
    except (ValueError, TypeError) as e:
        return fail(f"cannot be checked with these arguments: {e}", f"cannot be checked: {e}")
    try:
        a = _normalize(ex, answer, exp)
    except _NotAForm as e:
        if _swapped(ex, answer, exp):           # (32, "no") for ("no", 32): say so, not "text in quotes"
            return fail(f"wrong order: your two values are swapped; answer {_sequence_form(ex, exp)}.",
                        f"has its two values swapped: {answer!r}")
        return fail(f"answer with {e}.", f"is not in an accepted form: {answer!r}")
    if ex.choices and not (isinstance(a, str) and a in {_norm_text(c) for c in ex.choices}):
        return fail(f"answer one of {_listed(ex)}, spelled as written (got {answer!r}){_near_name(ex, a, exp, kw)}",
                    f"is not one of {ex.choices}: {answer!r}")
    if _equal(ex, a, exp):
        # a worked solution says what it answered: the teacher's answer sheet reads the value of
        # an answer computed in the notebook from the solution notebook (asynctc.teaching.answers)
        note = ex.note(a, **kw) if ex.note is not None else None
        print(f"[{name}] correct" + (f": {shown(exp)}" if solution else "") + (f" — {note}" if note else ""))
        progress.record(name, "correct", solution)
        _opened.add(name)
        return True
    hint = _hint(ex, a, exp, kw)
    return fail(f"not quite — {hint or 'try again.'}",
                f"is wrong: {answer!r}, expected {exp!r}" + (f" ({hint})" if hint else ""), "wrong")
