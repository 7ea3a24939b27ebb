"""Grade a folder of learners' notebooks: ``python -m asynctc grade DIR``.

Layout of DIR: one folder per learner holding that learner's notebooks (``DIR/alice/01_….ipynb``),
or one notebook per learner directly in DIR (``DIR/alice.ipynb``). Each notebook is executed
without its solution cells (:func:`asynctc.teaching.builds.strip_solutions`; replay mode unless
``ASYNCTC_MODE`` says otherwise), with a progress file of its own (:mod:`asynctc.core.progress`),
so what counts is what the learner's own cells make ``check()`` say. The exercises of a notebook
are the names its cells pass to ``check(…)``.

A cell that raises does not stop the grading: the notebook is executed to its end (nbclient's
``allow_errors``), so the cells after it still run and count — a bug in one exercise costs that
exercise, not the rest. Only a timeout or a dead kernel stops a notebook early. Either way the
table lists the notebook under "problems" (the first cell that raised, or why it stopped).

The table (learner × exercise) is printed and written as ``grades.csv`` and ``grades.md``:
``correct`` (✓), ``wrong`` (✗), ``unanswered`` (the ``...`` left in, ·), ``invalid`` (an answer in
a form the exercise refuses, ?; also an exercise cell that ran without calling ``check()`` at
all, as chapter 08's repair cell does while its program is unchanged), ``-`` (never checked: the
cell raised before ``check()``, did not run because the notebook stopped, or the exercise of a
chapter the learner handed in is missing from their notebook), blank (a chapter the learner did
not hand in). ``score`` counts the correct ones, out of the exercises of the chapters the learner
handed in (a chapter is ``chNN``: the exercises' prefix and the notebooks' ``NN``).
"""

from __future__ import annotations

import csv
import dataclasses
import os
import re
import tempfile
from pathlib import Path
from typing import Callable

from ..core import progress
from . import builds, runner

SYMBOL = {"correct": "✓", "wrong": "✗", "unanswered": "·", "invalid": "?", None: "-"}


@dataclasses.dataclass
class Graded:
    learner: str
    notebooks: list[str]
    status: dict[str, str | None]          # exercise → status (None: never checked)
    attempts: dict[str, int]
    problems: list[str]                    # notebooks that stopped early, and why
    order: dict[str, tuple[str, int]] = dataclasses.field(default_factory=dict)
    # exercise → (the notebook it was found in, its position there)

    @property
    def score(self) -> int:
        return sum(s == "correct" for s in self.status.values())

    @property
    def chapters(self) -> set[str]:
        """The chapters handed in, as ``chNN``: from the exercises checked in the learner's
        notebooks and from the notebooks' names (``05_pipelines.ipynb`` and ``05c_…`` → ch05)."""
        out = {n.split(".", 1)[0] for n in self.status}
        out |= {f"ch{m.group(1)}" for nb in self.notebooks for m in [re.match(r"(\d\d)[a-z]?_", nb)] if m}
        return out

    def counts(self, column: str) -> bool:
        """Whether exercise ``column`` is in this learner's denominator (its chapter was handed in)."""
        return column.split(".", 1)[0] in self.chapters


def exercises_in(nb) -> list[str]:
    """The exercise names the (learner) cells of ``nb`` check, in order of appearance."""
    names = []
    for c in nb.cells:
        if c.get("cell_type") == "code":
            names += [n for n in builds.checks_in(c.get("source", "")) if n not in names]
    return names


def submissions(folder: Path) -> dict[str, list[Path]]:
    """learner → notebooks (see the module docstring for the layout)."""
    folder = Path(folder)
    out: dict[str, list[Path]] = {}
    for p in sorted(folder.rglob("*.ipynb")):
        rel = p.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts):     # .ipynb_checkpoints
            continue
        learner = rel.parts[0] if len(rel.parts) > 1 else p.stem
        out.setdefault(learner, []).append(p)
    return out


def _default_client(nb, timeout: int):
    from nbclient import NotebookClient
    return NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                          extra_arguments=["--IPKernelApp.log_level=ERROR"],
                          resources={"metadata": {"path": str(builds.notebooks_dir())}})


def grade_notebook(path: Path, make_client: Callable | None = None, timeout: int = 600):
    """(exercise names, {exercise: status}, {exercise: attempts}, problem or "") of one notebook."""
    import nbformat
    nb = builds.strip_solutions(nbformat.read(path, as_version=4))
    names = exercises_in(nb)
    make = make_client or (lambda n: _default_client(n, timeout))
    with tempfile.TemporaryDirectory() as tmp:
        prog = Path(tmp) / "progress.jsonl"
        saved = {k: os.environ.get(k) for k in (progress.ENV, "ASYNCTC_MODE", "ASYNCTC_ANSWER_KEY")}
        os.environ[progress.ENV] = str(prog)
        os.environ.setdefault("ASYNCTC_MODE", "replay")
        os.environ.pop("ASYNCTC_ANSWER_KEY", None)          # the learner's code gets no answer key
        try:
            outcome = runner.run_notebook(nb, make)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        done = progress.summary([d for d in progress.attempts(prog) if not d.get("solution")])
    err = runner.cell_error(nb)
    problem = ""
    if not outcome.passed:
        problem = f"{path.name}: {outcome.message}"
    elif err is not None:
        problem = f"{path.name}: cell {err[0]} raised {err[1].get('ename')}"
    for n in done:
        if n not in names:
            names.append(n)
    status = {n: done.get(n, {}).get("status") for n in names}
    for n in ran_without_check(nb, status):
        status[n] = "unanswered"
    return (names, status,
            {n: done.get(n, {}).get("attempts", 0) for n in names}, problem)


def ran_without_check(nb, status: dict) -> list[str]:
    """Exercises whose cell ran to its end (an execution count, no error output) but never called
    ``check()`` (no status): the learner left the exercise as it was, e.g. a cell that skips
    ``check()`` while its input is unchanged."""
    out = []
    for c in nb.cells:
        if c.get("cell_type") != "code" or c.get("execution_count") is None:
            continue
        if any(o.get("output_type") == "error" for o in c.get("outputs", [])):
            continue
        out += [n for n in builds.checks_in(c.get("source", "")) if status.get(n) is None and n not in out]
    return out


def grade(folder: Path, make_client: Callable | None = None, timeout: int = 600) -> list[Graded]:
    """Grade every learner's notebooks in ``folder``."""
    out = []
    for learner, paths in submissions(folder).items():
        status, tries, problems, order = {}, {}, [], {}
        for p in paths:
            names, st, at, problem = grade_notebook(p, make_client, timeout)
            status.update(st)
            tries.update(at)
            for i, n in enumerate(names):
                order.setdefault(n, (p.name, i))
            if problem:
                problems.append(problem)
        out.append(Graded(learner, [p.name for p in paths], status, tries, problems, order))
    return out


def course_order(src: Path | None = None) -> dict[str, int]:
    """Each exercise's position in the course: the order the notebook sources
    (``notebooks/src/NN*.py``, chapter by chapter, each deep dive after its lesson) ask them.
    Empty where the sources are not there (an installed package)."""
    src = Path(src) if src is not None else builds.ROOT / "notebooks" / "src"
    out: dict[str, int] = {}
    for p in sorted(src.glob("[0-9][0-9]*.py")) if src.is_dir() else []:
        for n in builds.checks_in(p.read_text()):
            out.setdefault(n, len(out))
    return out


def columns(graded: list[Graded], order: dict[str, int] | None = None) -> list[str]:
    """The table's exercise columns in notebook order: by :func:`course_order`, then (for an
    exercise the sources do not ask) by chapter and where the learners' notebooks ask it."""
    order = course_order() if order is None else order
    cols: list[str] = []
    for g in graded:
        cols += [n for n in g.status if n not in cols]
    seen = {}
    for g in graded:
        for n, where in g.order.items():
            seen[n] = min(seen.get(n, where), where)
    big = len(order) + 1
    return sorted(cols, key=lambda n: (n.split(".", 1)[0], order.get(n, big), seen.get(n, ("~", 0)),
                                       cols.index(n)))


def write_tables(graded: list[Graded], out_dir: Path) -> tuple[Path, Path, str]:
    """Write ``grades.csv`` and ``grades.md`` in ``out_dir``; returns their paths and the
    markdown text."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cols = columns(graded)
    csv_path, md_path = out_dir / "grades.csv", out_dir / "grades.md"
    with csv_path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["learner", *cols, "score", "out_of", "problems"])
        for g in graded:
            w.writerow([g.learner, *[(g.status.get(c) or "-") if g.counts(c) else "" for c in cols],
                        g.score, sum(map(g.counts, cols)), "; ".join(g.problems)])
    lines = ["| learner | " + " | ".join(cols) + " | score |",
             "|---|" + "---|" * len(cols) + "---|"]
    for g in graded:
        lines.append(f"| {g.learner} | "
                     + " | ".join(SYMBOL.get(g.status.get(c), "-") if g.counts(c) else " " for c in cols)
                     + f" | {g.score}/{sum(map(g.counts, cols))} |")
    lines += ["", "✓ correct · ✗ wrong · `·` unanswered · ? answer in a refused form · - never checked"
              " · blank: a chapter not handed in (not counted in the score)"]
    problems = [(g.learner, p) for g in graded for p in g.problems]
    if problems:
        lines += ["", "Notebooks with a cell that raised (the cells after it still ran and count) or that "
                  "stopped early (a timeout, a dead kernel):"] + [f"- {who}: {p}" for who, p in problems]
    md = "\n".join(lines) + "\n"
    md_path.write_text(md)
    return csv_path, md_path, md
