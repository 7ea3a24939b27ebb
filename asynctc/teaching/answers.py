"""The answer sheet of every core-lesson exercise (docs/teaching/answers.md), generated from the
notebook sources and the course's answer key so that it cannot drift from either.

For each exercise, in the order the core notebooks (``notebooks/src/NN_*.py``) ask them: the
arguments the learner's ``exercises.check`` call passes, and the answer
``exercises.expected(name, **arguments)`` returns for them. Where an argument is computed in the
notebook (from a replayed record, or a program built in a cell above), the sheet gives the worked
solution's expression from the notebook's solution cell instead — the cell CI executes, so that
expression is checked against the answer key too. A code exercise (its answer is code) gets its
worked solution too: the functions the solution cell defines, each on one line as written, their
comments as the note (or the source text it assigns, a string of CUDA C++, on one line).

``python -m asynctc.teaching.answers`` rewrites the sheet (``--check``: exit 1 if it differs);
tests/test_teaching_plans.py regenerates it and compares.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "notebooks" / "src"
SHEET = ROOT / "docs" / "teaching" / "answers.md"


@dataclasses.dataclass
class Asked:
    """One exercise as a core notebook asks it."""

    chapter: str
    number: int
    name: str
    kwargs: dict[str, object]       # the learner call's arguments that are literals (resolved)
    computed: tuple[str, ...]       # arguments the notebook computes
    solution: str                   # the worked solution's answer expression ('' if none)
    why: str                        # the comment on the solution line ('' if none)


def core_sources(folder: Path = SOURCES) -> list[Path]:
    """The core lessons' sources (``NN_name.py``: two digits, no deep-dive letter), in order."""
    return sorted(p for p in folder.glob("[0-9][0-9]_*.py"))


def _literal_assignments(tree: ast.Module) -> list[tuple[int, str, object]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out.append((node.lineno, node.targets[0].id, ast.literal_eval(node.value)))
            except ValueError:
                pass
    return sorted(out, key=lambda t: t[0])


def _resolve(value: ast.expr, line: int, assigns) -> tuple[bool, object]:
    try:
        return True, ast.literal_eval(value)
    except ValueError:
        pass
    if isinstance(value, ast.Name):
        found = [v for ln, n, v in assigns if n == value.id and ln < line]
        if found:
            return True, found[-1]
    return False, None


def _checks(tree: ast.Module):
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and ast.unparse(n.func) == "exercises.check" and n.args
             and isinstance(n.args[0], ast.Constant)]
    return sorted(calls, key=lambda n: (n.lineno, n.col_offset))


def _one_line(stmt: ast.stmt, src: str) -> str:
    """``stmt`` as code; a function whose body is simple statements (a code exercise's worked
    solution) on one line, its body as written: ``def f(k, S): return (k // S) % 2``."""
    if isinstance(stmt, ast.FunctionDef) and not stmt.decorator_list and all(
            not hasattr(b, "body") for b in stmt.body):
        body = "; ".join(ast.get_source_segment(src, b) or ast.unparse(b) for b in stmt.body)
        return f"def {stmt.name}({ast.unparse(stmt.args)}): {body}"
    return ast.unparse(stmt)


def _steps_before(tree: ast.Module, lines: list[str], call: ast.Call) -> list[str]:
    """The statements of the solution's cell between the previous check (or the cell's start) and
    ``call``, each as one line of code: how the worked solution computes its answer."""
    start = max((i + 1 for i, ln in enumerate(lines[:call.lineno - 1]) if ln.startswith("# %%")), default=0)
    src = "\n".join(lines)
    steps = []
    for stmt in tree.body:
        if stmt.lineno <= start or stmt.lineno >= call.lineno:
            continue
        code = _one_line(stmt, src)
        if "exercises.check" in code:
            steps = []
        elif "\n" not in code and not code.startswith("print("):
            steps.append(code)
    return steps


def _one_line_def(fn: ast.FunctionDef, src: str) -> str:
    """A function definition on one line, its simple statements as written (``0x3FFFF`` and the
    parentheses kept): ``def f(k, S): return (k // S) % 2`` (a compound statement in the body
    is its header and its body in braces, ``for j in range(n): { f(j) }``, so the nesting stays
    readable on one line)."""
    def line(st: ast.stmt) -> str:
        if hasattr(st, "body"):            # for/if/while/with: its header, its body in braces
            head = ast.unparse(st).split("\n", 1)[0]
            out = f"{head} {{ {'; '.join(line(b) for b in st.body)} }}"
            orelse = getattr(st, "orelse", [])
            return out + (f" else: {{ {'; '.join(line(b) for b in orelse)} }}" if orelse else "")
        seg = ast.get_source_segment(src, st)
        return re.sub(r"\s*\n\s*", " ", seg) if seg else ast.unparse(st)
    body = "; ".join(line(st) for st in fn.body
                     if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant)
                             and isinstance(st.value.value, str)))          # no docstring
    return f"def {fn.name}({ast.unparse(fn.args)}): {body}"


def _def_comments(fn: ast.FunctionDef, lines: list[str]) -> list[str]:
    """The end-of-line comments inside ``fn`` (``x = 1  # why``), in order."""
    return [ln.split("  # ", 1)[1].strip() for ln in lines[fn.lineno - 1:fn.end_lineno] if "  # " in ln]


def _defs_used(tree: ast.Module, lines: list[str], call: ast.Call) -> tuple[list[str], list[str]]:
    """For a code exercise's solution ``call``: the functions of the solution's cell that its answer
    names (``f``, or ``(f, g)``), each as one line (:func:`_one_line_def`), and their comments."""
    if len(call.args) < 2:
        return [], []
    names = [n.id for n in ast.walk(call.args[1]) if isinstance(n, ast.Name)]
    start = max((i + 1 for i, ln in enumerate(lines[:call.lineno - 1]) if ln.startswith("# %%")), default=0)
    defs = {st.name: st for st in tree.body if isinstance(st, ast.FunctionDef)
            and start < st.lineno < call.lineno}
    used = [defs[n] for n in dict.fromkeys(names) if n in defs]
    src = "\n".join(lines)
    return [_one_line_def(fn, src) for fn in used], [c for fn in used for c in _def_comments(fn, lines)]


def _code_used(tree: ast.Module, lines: list[str], call: ast.Call) -> tuple[list[str], list[str]]:
    """For a code exercise whose answer is source text (a string of CUDA C++ named in the call):
    the text the solution's cell assigns to that name, on one line without its ``//`` comments,
    and those comments (the note)."""
    if len(call.args) < 2 or not isinstance(call.args[1], ast.Name):
        return [], []
    start = max((i + 1 for i, ln in enumerate(lines[:call.lineno - 1]) if ln.startswith("# %%")), default=0)
    texts = [st.value.value for st in tree.body if isinstance(st, ast.Assign)
             and start < st.lineno < call.lineno and isinstance(st.value, ast.Constant)
             and isinstance(st.value.value, str)
             and any(isinstance(t, ast.Name) and t.id == call.args[1].id for t in st.targets)]
    if not texts:
        return [], []
    parts = [ln.split("//", 1) for ln in texts[-1].splitlines()]
    code = " ".join(p[0].strip() for p in parts if p[0].strip())
    return [code], [p[1].strip() for p in parts if len(p) == 2 and p[1].strip()]


#: How a notebook numbers an exercise in its prompt: ``**1.**``, ``**2. Write …``, ``**Exercise 1 — …``.
_LABEL = re.compile(r"^# \*\*(?:Exercise )?(\d+)(?:\.|\s+—)")


def _number(lines: list[str], after: int, line: int) -> int | None:
    """The number the notebook gives the exercise checked at ``line``: the last label between the
    previous exercise's check (``after``) and it; None where the prompt has no number."""
    found = [int(m.group(1)) for ln in lines[after:line - 1] if (m := _LABEL.match(ln))]
    return found[-1] if found else None


def asked(path: Path) -> list[Asked]:
    """The exercises one core notebook source asks, in the order it asks them."""
    src = path.read_text()
    lines = src.splitlines()
    tree = ast.parse(src)
    assigns = _literal_assignments(tree)
    learner, solutions = [], {}
    for call in _checks(tree):
        name = call.args[0].value
        kws = {k.arg: k.value for k in call.keywords if k.arg}
        if "solution" in kws:
            if name not in solutions:
                line = lines[call.end_lineno - 1]
                why = line.split("  # ", 1)[1].strip() if "  # " in line else ""
                expr = ast.unparse(call.args[1]) if len(call.args) > 1 else ""
                defs, notes = _defs_used(tree, lines, call)
                if not defs:
                    defs, notes = _code_used(tree, lines, call)
                steps = defs if defs else _steps_before(tree, lines, call) + [expr]
                solutions[name] = (" ; ".join(steps), why or "; ".join(notes))
        elif name not in [c[0] for c in learner]:
            learner.append((name, call.lineno, kws))
    out = []
    for i, (name, line, kws) in enumerate(learner, 1):
        i = _number(lines, learner[i - 2][1] if i > 1 else 0, line) or i
        got, computed = {}, []
        for k, v in kws.items():
            ok, val = _resolve(v, line, assigns)
            if ok:
                got[k] = val
            else:
                computed.append(k)
        sol, why = solutions.get(name, ("", ""))
        out.append(Asked(path.name[:2], i, name, got, tuple(computed), sol, why))
    return out


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, tuple):
        return "(" + ", ".join(_fmt(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    if isinstance(v, int) and not isinstance(v, bool) and v > 4096:
        return hex(v) if v >= 1 << 32 else str(v)
    return repr(v)


#: A worked solution's ``[name] correct: value`` line (less a `` — note`` after the value).
REPLAY_LINE = r"\[(ch\d\d\.\w+)\] correct: (.+?)(?: — .*)?$"


def replay_values(source: Path) -> dict[str, str]:
    """exercise → the answer its worked solution gave when the solution notebook beside ``source``
    was built (replay): the ``[name] correct: value`` lines ``exercises.check(..., solution=True)``
    prints (less a `` — note`` after the value). Empty where that notebook is not there (an
    installed package)."""
    import json
    nb = source.parent.parent / "solutions" / (source.stem + ".ipynb")
    if not nb.exists():
        return {}
    out: dict[str, str] = {}
    for cell in json.loads(nb.read_text())["cells"]:
        for o in cell.get("outputs", []):
            text = o.get("text", "")
            for line in (text if isinstance(text, str) else "".join(text)).splitlines():
                m = re.match(REPLAY_LINE, line)
                if m:
                    out.setdefault(m.group(1), m.group(2))
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(folder: Path = SOURCES) -> str:
    """The answer sheet's Markdown."""
    from asynctc.core import exercises
    old = os.environ.get(exercises.ANSWER_KEY_ENV)
    os.environ[exercises.ANSWER_KEY_ENV] = "1"
    try:
        rows = []
        for path in core_sources(folder):
            values = replay_values(path)
            for a in asked(path):
                args = ", ".join(f"{k}={_fmt(v)}" for k, v in a.kwargs.items())
                code = exercises.is_code(a.name)
                if a.computed or code:
                    if a.computed:
                        args += ("; " if args else "") + ", ".join(a.computed) + ": computed in the notebook"
                    what = "code exercise, a worked solution" if code else "worked solution"
                    answer = f"{what}: `{_cell(a.solution)}`" if a.solution else "see the notebook"
                    if a.computed and not code and a.name in values:
                        answer = f"`{_cell(values[a.name])}` in replay; {answer}"
                else:
                    answer = f"`{_cell(_fmt(exercises.expected(a.name, **a.kwargs)))}`"
                why = _cell(a.why)
                rows.append(f"| {a.chapter} | {a.number} | `{a.name}` | {_cell(args)} | {answer} | {why} |")
    finally:
        if old is None:
            os.environ.pop(exercises.ANSWER_KEY_ENV, None)
        else:
            os.environ[exercises.ANSWER_KEY_ENV] = old
    head = """# Answers to every core-lesson exercise

For the teacher; do not hand it out. Generated — do not edit: `python -m asynctc.teaching.answers`
rewrites it from the notebook sources and the answer key (`exercises.expected`, with
`ASYNCTC_ANSWER_KEY=1`), and `tests/test_teaching_plans.py` fails when it is stale. Exercises are
numbered as each chapter's notebook numbers them. Where the notebook computes an argument (from
the replayed record, or a program built in a cell above), the answer is the value the worked
solution gave when the solution notebook was built in replay (live, a learner's value follows their
GPU's record), then the solution cell's expression, which CI runs against the answer key. A code exercise's answer is the solution cell's function,
written on one line (a loop's or an `if`'s body in braces). The question itself: the notebook, or `print(exercises.prompt("name"))`.

| ch | ex | exercise | arguments in the notebook | answer | why (the solution's note) |
|---|---|---|---|---|---|
"""
    return head + "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m asynctc.teaching.answers", description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/teaching/answers.md is stale")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        same = SHEET.exists() and SHEET.read_text() == text
        print(f"{SHEET.name}: {'up to date' if same else 'stale: run python -m asynctc.teaching.answers'}")
        return 0 if same else 1
    SHEET.write_text(text)
    print(f"wrote {SHEET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
