"""A learner's passing code answers, kept so that a later chapter can run them (deep dive 06e runs
your chapter 03 swizzle, deep dive 04b's encoder and chapter 05 parities).

When a code exercise's check passes (not a solution cell), :func:`save` writes the answer as a
small Python file, ``<exercise>.py``, in :func:`asynctc.core.progress.answers_dir` (beside the
progress file). The file defines ``__answer__``; its first line says which exercise it answers and
when it passed. :func:`load` runs the file and returns ``__answer__``.

What is kept:

* a function defined with ``def`` (in a notebook cell, a module, a script): its source, with the
  names it uses from its module — modules (``import numpy as np``), functions of the notebook
  (their source too), and constants (``int``, ``float``, ``str``, ``bool``, ``None`` and tuples of
  them); ``__answer__`` is the function;
* a tuple, list or dict of such functions (``(full_parity, empty_parity)``);
* a string (CUDA C++), or a list or tuple of literals (an ordering program): their ``repr``.

An answer that cannot be written back as source — a lambda, a function using a global that is none
of the above, a closure — is not kept: :func:`source` returns None and the later chapter falls back
to the course's piece. Saving and loading never raise.

An exercise may keep a small dict of facts about the answer beside it, ``<exercise>.json``
(:func:`meta`): chapter 05's producer step and deep dive 06e's consumer loop keep whether the learner's
build compiles to the course kernel's SASS. It names the answer it belongs to (a hash of its text),
so a later answer without facts never inherits an earlier one's.
"""

from __future__ import annotations

import ast
import datetime as _dt
import dis
import hashlib
import inspect
import json
import textwrap
import types
from pathlib import Path
from typing import Any

HEADER = "# asynctc: your answer to {name}, passed {time}\n"
_CONST = (int, float, str, bool, type(None))


def _code_names(code: types.CodeType) -> set[str]:
    """Global names a code object and the code objects inside it (comprehensions) read: the
    LOAD_GLOBAL / LOAD_NAME operands, not ``co_names`` (which also holds attribute names: ``t.steps``
    must not make a notebook's global ``steps`` part of the answer)."""
    names = {ins.argval for ins in dis.get_instructions(code)
             if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL")}
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _code_names(c)
    return names


def _is_const(v: Any) -> bool:
    return isinstance(v, _CONST) or (isinstance(v, tuple) and all(_is_const(x) for x in v))


def _function_source(fn: Any, parts: dict[str, str], imports: dict[str, str]) -> bool:
    """Add ``fn``'s source to ``parts`` (name → source) and the globals it needs to ``parts`` /
    ``imports`` (name → import line); False when some part cannot be written as source."""
    if not isinstance(fn, types.FunctionType) or fn.__name__ == "<lambda>" or fn.__closure__:
        return False
    if fn.__name__ in parts:
        return True
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        ast.parse(src)
    except (OSError, TypeError, SyntaxError):
        return False
    parts[fn.__name__] = src
    g = fn.__globals__
    for name in sorted(_code_names(fn.__code__)):
        if name not in g:                 # a builtin, or an attribute name (x.append)
            continue
        v = g[name]
        if isinstance(v, types.ModuleType):
            imports[name] = (f"import {v.__name__}" if v.__name__ == name
                             else f"import {v.__name__} as {name}")
        elif isinstance(v, types.FunctionType) and v.__module__ == fn.__module__:
            if not _function_source(v, parts, imports):
                return False
        elif callable(v) and getattr(v, "__module__", None) and getattr(v, "__qualname__", None) \
                and v.__module__ not in ("__main__", fn.__module__) and "." not in v.__qualname__:
            imports[name] = f"from {v.__module__} import {v.__qualname__}" + \
                ("" if v.__qualname__ == name else f" as {name}")
        elif _is_const(v):
            parts.setdefault(f"={name}", f"{name} = {v!r}\n")
        else:
            return False
    return True


def _literal(v: Any) -> str | None:
    try:
        text = repr(v)
        return text if ast.literal_eval(text) == v else None
    except (ValueError, SyntaxError, TypeError, RecursionError):
        return None


def source(answer: Any) -> str | None:
    """Python source that defines ``__answer__`` equal to ``answer`` (see the module docstring),
    or None when the answer cannot be written back."""
    parts: dict[str, str] = {}
    imports: dict[str, str] = {}
    if isinstance(answer, types.FunctionType):
        if not _function_source(answer, parts, imports):
            return None
        tail = f"__answer__ = {answer.__name__}\n"
    elif isinstance(answer, (tuple, list, dict)) and answer and all(
            isinstance(v, types.FunctionType) for v in
            (answer.values() if isinstance(answer, dict) else answer)):
        fns = list(answer.values() if isinstance(answer, dict) else answer)
        if len({f.__name__ for f in fns}) < len(fns) or not all(_function_source(f, parts, imports) for f in fns):
            return None
        if isinstance(answer, dict):
            value = "{" + ", ".join(f"{k!r}: {f.__name__}" for k, f in answer.items()) + "}"
        else:
            value = ", ".join(f.__name__ for f in answer) + ("," if len(answer) == 1 else "")
            value = f"({value})" if isinstance(answer, tuple) else f"[{value}]"
        tail = f"__answer__ = {value}\n"
    else:
        lit = _literal(answer)
        if lit is None:
            return None
        tail = f"__answer__ = {lit}\n"
    consts = [s for k, s in parts.items() if k.startswith("=")]
    funcs = [s.rstrip("\n") + "\n" for k, s in parts.items() if not k.startswith("=")]
    head = "".join(line + "\n" for line in sorted(set(imports.values()))) + "".join(consts)
    text = head + ("\n" if head else "") + "\n\n".join(funcs) + ("\n" if funcs else "") + tail
    try:
        if load_source(text) is None:
            return None
    except Exception:  # noqa: BLE001 - what cannot be run back is not kept
        return None
    return text


def load_source(text: str) -> Any:
    """Run ``text`` (a saved answer) in a fresh namespace and return its ``__answer__``."""
    ns: dict[str, Any] = {"__name__": "asynctc_answer"}
    exec(compile(text, "<your answer>", "exec"), ns)      # noqa: S102 - the learner's own code
    return ns.get("__answer__")


def _path(name: str) -> Path | None:
    from . import progress
    d = progress.answers_dir()
    return None if d is None else d / f"{name}.py"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


#: Why :func:`keep` kept nothing (its second value).
OFF, NO_SOURCE, UNWRITABLE = "recording is off", "cannot be written back as source", "not writable"


def save(name: str, answer: Any, meta: dict | None = None) -> Path | None:
    """Keep ``answer`` as exercise ``name``'s passing answer; the file written, or None (the answer
    cannot be written back as source, recording is off, or the location is not writable; :func:`keep`
    says which). ``meta``: facts about this answer kept beside it (:func:`meta`); None removes
    earlier ones."""
    return keep(name, answer, meta)[0]


def keep(name: str, answer: Any, meta: dict | None = None) -> tuple[Path | None, str | None]:
    """:func:`save`, reporting why nothing was kept: ``(the file written, None)``, or ``(None, why)``
    with ``why`` one of :data:`OFF`, :data:`NO_SOURCE`, :data:`UNWRITABLE`."""
    p = _path(name)
    if p is None:
        return None, OFF
    text = source(answer)
    if text is None:
        return None, NO_SOURCE
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(HEADER.format(name=name, time=now) + text)
        j = p.with_suffix(".json")
        if meta:
            j.write_text(json.dumps({"answer": _digest(text), **meta}, sort_keys=True))
        elif j.exists():
            j.unlink()
    except (OSError, TypeError, ValueError):
        return None, UNWRITABLE
    return p, None


def meta(name: str) -> dict | None:
    """The facts kept with exercise ``name``'s answer (see :func:`save`), or None when none are
    kept or they belong to another answer."""
    p = _path(name)
    try:
        if p is None or not p.is_file() or not p.with_suffix(".json").is_file():
            return None
        d = json.loads(p.with_suffix(".json").read_text())
        text = p.read_text().split("\n", 1)[1]
    except (OSError, ValueError, IndexError):
        return None
    return d if isinstance(d, dict) and d.get("answer") == _digest(text) else None


def passed_on(name: str) -> str | None:
    """When the kept answer to ``name`` passed (an ISO date-time, UTC), or None when none is kept."""
    p = _path(name)
    try:
        first = p.read_text().split("\n", 1)[0] if p is not None and p.is_file() else ""
    except OSError:
        return None
    return first.rsplit("passed ", 1)[1].strip() if "passed " in first else None


def load(name: str) -> Any:
    """The kept answer to exercise ``name`` (a function for a function answer), or None when none is
    kept or it no longer runs (a module it imports is gone)."""
    p = _path(name)
    try:
        return load_source(p.read_text()) if p is not None and p.is_file() else None
    except Exception:  # noqa: BLE001 - a broken file means no answer, never a crash
        return None
