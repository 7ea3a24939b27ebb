"""The ``# notebook.how(X) prints its code`` comments beside the helpers that print a conclusion.

Every such comment in a notebook source names the callable its statement calls, and
``notebook.how`` shows that callable's code. In the core lessons listed in ``INVITED``, every call of
a helper that prints a conclusion carries the comment: ``*.show_*`` (listings and pictures aside),
``cp_async_show.*`` and a printed ``*_table(...)``.
"""
import ast
import re
from pathlib import Path

import pytest

from asynctc.core import notebook

SRC = Path(__file__).resolve().parents[1] / "notebooks" / "src"
COMMENT = re.compile(r"#\s*notebook\.how\(([\w.]+)\) prints its code")
#: core lessons whose every conclusion-printing helper call invites notebook.how
INVITED = tuple(p.stem for p in sorted(SRC.glob("[0-9][0-9]_*.py")))     # every core lesson
#: show_* helpers that display a listing or a picture, not a conclusion
NOT_CONCLUSIONS = {"show_source", "show_kernel_part", "show_ptx", "show_loops"}


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id] + parts[::-1])
    return None


def _cells(src: Path) -> list[str]:
    """The source of each code cell, read as the notebook build reads it (jupytext, percent format)."""
    jupytext = pytest.importorskip("jupytext")
    return [c.source for c in jupytext.read(src, fmt="py:percent").cells if c.cell_type == "code"]


def _namespace(cells):
    ns = {}
    for code in cells:
        try:
            tree = ast.parse(code)
        except SyntaxError:            # a template cell with blanks to fill
            continue
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                exec(compile(ast.Module([node], []), "<imports>", "exec"), ns)
    return ns


def _calls(code):
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _dotted(n.func)]


def _printed_tables(code):
    """Calls of ``*_table(...)`` passed straight to print."""
    out = []
    for n in _calls(code):
        if _dotted(n.func) == "print":
            out += [a for a in n.args if isinstance(a, ast.Call) and (_dotted(a.func) or "").endswith("_table")]
    return out


def _concludes(call):
    name = _dotted(call.func)
    last = name.rsplit(".", 1)[-1]
    return "." in name and ((last.startswith("show_") and last not in NOT_CONCLUSIONS)
                            or name.startswith("cp_async_show."))


@pytest.mark.parametrize("src", sorted(SRC.glob("*.py")), ids=lambda p: p.stem)
def test_each_how_comment_names_the_call_and_how_shows_it(src):
    cells = _cells(src)
    if not any(COMMENT.search(code) for code in cells):
        return
    ns = _namespace(cells)
    for code in cells:
        lines = code.splitlines()
        for i, line in enumerate(lines, 1):
            m = COMMENT.search(line)
            if not m:
                continue
            name = m.group(1)
            on_line = [c for c in _calls(code) if _dotted(c.func) == name and c.lineno <= i <= c.end_lineno]
            assert on_line, f"{src.name}: {line.strip()!r}: its statement does not call {name}"
            helper = eval(name, ns)
            assert notebook.how_source(helper).startswith("# asynctc."), name


@pytest.mark.parametrize("stem", INVITED)
def test_core_helpers_that_print_a_conclusion_invite_how(stem):
    for code in _cells(SRC / f"{stem}.py"):
        lines = code.splitlines()
        for call in [c for c in _calls(code) if _concludes(c)] + _printed_tables(code):
            name = _dotted(call.func)
            span = lines[call.lineno - 1:call.end_lineno]
            said = [m.group(1) for ln in span for m in [COMMENT.search(ln)] if m]
            assert name in said, (f"{stem}: {name}(...) prints a conclusion; add "
                                  f"'# notebook.how({name}) prints its code' on its line")
