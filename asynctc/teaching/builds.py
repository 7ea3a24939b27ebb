"""Learner and solution copies of a chapter notebook, from one source.

A chapter's source (``notebooks/src/NN_name.py``) builds two notebooks (tools/build_notebooks.py):

* the **solution notebook** ``notebooks/solutions/NN_name.ipynb``: every cell, executed;
* the **learner notebook** ``notebooks/NN_name.ipynb``: the same executed notebook without the
  cells tagged :data:`SOLUTION_TAG`, and with the stored outputs of the cells tagged
  :data:`ANSWER_TAG` cleared — those cells show the answer to a "predict before you look"
  exercise, so the learner sees it only after running them — and the text of the markdown cells
  tagged :data:`ANSWER_TAG` (the paragraph that states such an answer) folded in a closed
  ``<details>`` block.

``python -m asynctc reset NN`` writes a chapter's learner notebook back (:func:`reset`).
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
import shutil
import subprocess
from pathlib import Path

#: Cell tag of the worked solutions (code cells that check with ``solution=True`` and the
#: "Solutions" heading); absent from learner notebooks, HTML, slides and the course site.
SOLUTION_TAG = "solution"
#: Cell tag of a cell whose output answers a prediction exercise (source marker
#: ``# %% output answers a prediction``); its outputs are cleared in the learner notebook. On a
#: markdown cell (source marker ``# %% answer [markdown]``) its text is folded there instead.
ANSWER_TAG = "answer"
#: Cell tag of a code cell that holds only guards (``assert``, ``notebook.require`` …) over the
#: numbers a cell above printed (source marker ``# %% check``): collapsed in JupyterLab, still run
#: by nbval; the course site shows its outputs without its code.
CHECK_TAG = "check"

#: An exercise check in a cell's source: ``exercises.check("ch05.full_parity", ...)`` (also the bare
#: ``check(`` of an ``from asynctc.core.exercises import check``); group 1 is the exercise's name.
_CHECK_CALL = re.compile(r"""\bcheck\(\s*["'](ch\d\d\.[A-Za-z0-9_]+)["']""")

PACKAGE_DIR = Path(__file__).resolve().parent.parent
ROOT = PACKAGE_DIR.parent


def checks_in(source: str, unique: bool = True) -> list[str]:
    """The exercise names that ``source`` (a cell's or a whole notebook source's text) checks, in
    order; ``unique=False`` keeps one entry per ``check(`` call. The one reader of "which exercises
    does this ask" for grading, the learner-time model and the course order."""
    names = _CHECK_CALL.findall(source)
    return list(dict.fromkeys(names)) if unique else names


def is_solution(cell) -> bool:
    """Tagged :data:`SOLUTION_TAG`, or a code cell that checks with ``solution=True`` (also in a
    notebook built before the tag existed)."""
    src = cell.get("source", "")
    src = "".join(src) if isinstance(src, list) else src
    tags = cell.get("metadata", {}).get("tags", [])
    return SOLUTION_TAG in tags or (cell.get("cell_type") == "code" and "solution=True" in src)


def learner_copy(nb):
    """A copy of notebook ``nb`` without its solution cells and with the outputs of the
    :data:`ANSWER_TAG` code cells cleared (their execution counts stay, so the notebook still reads as
    executed) and the text of its :data:`ANSWER_TAG` markdown cells folded (:func:`fold_answer`).
    ``nb`` is not changed. Where the markdown just above such a cell asks a question
    (:func:`asks_a_question`), a one-line note goes between them (:data:`HIDDEN_NOTE`); a cell that
    shows an exercise's answer says what it holds back itself when run (``exercises.after``)."""
    nb = copy.deepcopy(nb)
    cells = []
    for c in nb.cells:
        if is_solution(c):
            continue
        if c.get("cell_type") == "markdown" and ANSWER_TAG in c.get("metadata", {}).get("tags", []):
            c["source"] = fold_answer(c.get("source", ""))
        if c.get("cell_type") == "code" and ANSWER_TAG in c.get("metadata", {}).get("tags", []):
            c["outputs"] = []
            above = cells[-1] if cells else {}
            if (above.get("cell_type") == "markdown" and asks_a_question(above)
                    and ANSWER_TAG not in above.get("metadata", {}).get("tags", [])):
                cells.append(_hidden_note(c))       # before the cell: read before it runs
        cells.append(c)
    nb.cells = cells
    return nb


#: The summary line of a folded answer (a markdown cell tagged :data:`ANSWER_TAG`, source marker
#: ``# %% answer [markdown]``) in a learner notebook.
ANSWER_SUMMARY = "Tried it? Open this after running the cell above."


def fold_answer(text) -> str:
    """Markdown ``text`` (an answer to a prediction) in a closed ``<details>`` block: the blank lines
    around it let JupyterLab and nbconvert render it as markdown inside the HTML block."""
    text = "".join(text) if isinstance(text, list) else text
    return f"<details><summary>{ANSWER_SUMMARY}</summary>\n\n{text.strip()}\n\n</details>"


_QUESTION = re.compile(r"\bpredict\b|\?", re.I)


def asks_a_question(cell) -> bool:
    """True when a markdown cell asks the learner something: it says "predict" or has a "?"
    outside links and code spans."""
    src = cell.get("source", "")
    src = "".join(src) if isinstance(src, list) else src
    src = re.sub(r"`[^`]*`|\]\([^)]*\)", " ", src)
    return bool(_QUESTION.search(src))


#: The note a learner notebook (and the slides) shows between a question and the cell whose output,
#: left out, answers it: the learner reads it before running the cell.
HIDDEN_NOTE = "*The next cell's output is left out: answer the question above first, then run it.*"
#: The same note on the course site, where the output is folded under its cell (publish).
FOLDED_NOTE = "*The next cell's output is folded under it: answer the question above first, then open it.*"


def _hidden_note(before):
    import nbformat
    cell = nbformat.v4.new_markdown_cell(HIDDEN_NOTE, metadata={"tags": ["answer-note"]})
    if before.get("id"):
        cell["id"] = (str(before["id"])[:56] + "-note")           # deterministic: rebuilds match
    else:
        cell.pop("id", None)
    return cell


def strip_solutions(nb):
    """A copy of ``nb`` without its solution cells (what a learner hands in is graded this way)."""
    nb = copy.deepcopy(nb)
    nb.cells = [c for c in nb.cells if not is_solution(c)]
    return nb


def installed_notebooks_dir() -> Path | None:
    """The learner notebooks installed with the wheel (``share/asynctc/notebooks``), or None."""
    import sys
    import sysconfig
    for base in dict.fromkeys([sysconfig.get_path("data"), sys.prefix, sys.base_prefix]):
        d = Path(base) / "share" / "asynctc" / "notebooks"
        if any(d.glob("[0-9][0-9]_*.ipynb")):
            return d
    return None


def notebooks_dir() -> Path:
    """Where the learner notebooks are: ``ASYNCTC_NOTEBOOKS``; else ``notebooks/`` of the checkout
    (editable install); else ``./notebooks`` when the current folder holds the course (a hub's
    clone with the package installed normally); else the copies installed with the wheel."""
    env = os.environ.get("ASYNCTC_NOTEBOOKS")
    if env:
        return Path(env)
    for d in (ROOT / "notebooks", Path.cwd() / "notebooks"):
        if any(d.glob("[0-9][0-9]_*.ipynb")):
            return d
    return installed_notebooks_dir() or ROOT / "notebooks"


def _committed(checkout: Path, chapter: str) -> tuple[bytes, str] | None:
    """Chapter ``chapter``'s learner notebook as committed at HEAD of the git checkout
    ``checkout`` (asked of git, so a deleted working copy is found too), or None."""
    if not (checkout / ".git").exists():
        return None
    ls = subprocess.run(["git", "-C", str(checkout), "ls-tree", "--name-only", "HEAD", "notebooks/"],
                        capture_output=True, text=True)
    if ls.returncode != 0:
        return None
    names = sorted(n.split("/", 1)[1] for n in ls.stdout.split()
                   if n.split("/", 1)[-1].startswith(f"{chapter}_") and n.endswith(".ipynb"))
    if not names:
        return None
    r = subprocess.run(["git", "-C", str(checkout), "show", f"HEAD:notebooks/{names[0]}"],
                       capture_output=True)
    return (r.stdout, names[0]) if r.returncode == 0 else None


def pristine_source(chapter: str, nb_dir: Path) -> tuple[bytes, str, str]:
    """(bytes, file name, where from) of chapter ``chapter``'s learner notebook as shipped, looked
    up in this order: the committed copy in the git checkout ``nb_dir`` belongs to
    (``git show HEAD:notebooks/NN_….ipynb``, asked of git, so also when the learner deleted the
    file); the copy installed with the package (``share/asynctc/notebooks``); the committed copy in
    the checkout this package runs from (an editable install, and a ``nb_dir`` of the learner's
    own outside it). Raises FileNotFoundError."""
    nb_dir = Path(nb_dir).resolve()
    got = _committed(nb_dir.parent, chapter)
    if got is not None:
        return got[0], got[1], f"the committed notebooks/{got[1]}"
    inst = installed_notebooks_dir()
    shipped = sorted(inst.glob(f"{chapter}_*.ipynb")) if inst is not None and inst.resolve() != nb_dir else []
    if shipped:
        return shipped[0].read_bytes(), shipped[0].name, "the copy installed with asynctc"
    got = _committed(ROOT, chapter) if ROOT != nb_dir.parent else None
    if got is not None:
        return got[0], got[1], f"the course checkout's committed notebooks/{got[1]}"
    raise FileNotFoundError(f"no learner notebook for chapter {chapter!r}: not in git "
                            f"(notebooks/{chapter}_*.ipynb) nor installed with the package")


def backup_path(target: Path) -> Path:
    """Where the learner's copy of ``target`` is kept: ``NN_name.ipynb.bak`` if that is free, else
    the first free ``.bak1``, ``.bak2``, … — an earlier backup is never overwritten."""
    target = Path(target)
    first = target.with_name(target.name + ".bak")
    if not first.exists():
        return first
    n = 1
    while target.with_name(f"{target.name}.bak{n}").exists():
        n += 1
    return target.with_name(f"{target.name}.bak{n}")


@dataclasses.dataclass
class Restored:
    """What :func:`restore` did: the notebook written, where it came from, and where the learner's
    own copy was kept (None when there was none, or it was the shipped one, or backups were off)."""

    path: Path
    where: str
    backup: Path | None = None


def restore(chapter: str, nb_dir: Path | None = None, backup: bool = True) -> Restored:
    """Write chapter ``chapter``'s learner notebook back into ``nb_dir``; the learner's copy, if it
    differs, is kept beside it (:func:`backup_path`: ``.bak``, then ``.bak1``, …)."""
    import json
    nb_dir = Path(nb_dir) if nb_dir is not None else notebooks_dir()
    data, name, where = pristine_source(chapter, nb_dir)
    json.loads(data)                                     # refuse to write something that is not JSON
    target = nb_dir / name
    kept = None
    if backup and target.exists() and target.read_bytes() != data:
        kept = backup_path(target)
        shutil.copy2(target, kept)
    nb_dir.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return Restored(target, where, kept)


def reset(chapter: str, nb_dir: Path | None = None, backup: bool = True) -> tuple[Path, str]:
    """:func:`restore`, returning (path written, where from)."""
    r = restore(chapter, nb_dir, backup)
    return r.path, r.where
