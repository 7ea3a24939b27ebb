"""Grade a folder of learners' notebooks: ``python -m asynctc grade DIR``.

Layout of DIR: one folder per learner holding that learner's notebooks (``DIR/alice/01_….ipynb``),
or one notebook per learner directly in DIR (``DIR/alice.ipynb``). Each notebook is executed
without its solution cells (:func:`asynctc.teaching.builds.strip_solutions`; replay mode unless
``ASYNCTC_MODE`` says otherwise), with a progress file of its own (:mod:`asynctc.core.progress`),
so what counts is what the learner's own cells make ``check()`` say.

What is scored is what the shipped learner notebooks ask (:func:`shipped_exercises`): a handed-in
notebook is matched to the shipped one of the same name (``04_wgmma.ipynb``; else the same number,
``04_wgmma (1).ipynb``; else the shipped notebook whose exercises it checks most), and its
learner's score is out of that notebook's exercises. A ``check()`` the learner added (a
checkpoint question, their own experiment) is listed apart and scored for nobody.

A cell that raises does not stop the grading: the notebook is executed to its end (nbclient's
``allow_errors``), so the cells after it still run and count — a bug in one exercise costs that
exercise, not the rest. Only a timeout (``--timeout`` seconds for one cell) or a dead kernel stops a
notebook early. Either way the table lists the notebook under "problems", naming the cell as
JupyterLab counts it (from 1, markdown cells included), its exercise and its section.

The table (learner × exercise) is printed and written as ``grades.csv`` and ``grades.md``:
``correct`` (✓), ``wrong`` (✗), ``unanswered`` (the ``...`` left in, ·; also an exercise cell that
ran without calling ``check()`` at all, as chapter 08's repair cell does while its program is
unchanged), ``invalid`` (an answer in a form the exercise refuses, ?), ``-`` (never checked: the
cell raised before ``check()``, did not run because the notebook stopped, or is missing from the
learner's notebook), blank (not asked by the notebooks this learner handed in: not in their score).
Under the table, ``grades.md`` lists each wrong or refused answer with what its check told the learner
(the latest attempt's line), so the teacher sees the mistake without opening the notebook.
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

#: Seconds one cell may run before grading stops that notebook (``--timeout``). The slowest cell
#: of any learner notebook took 6 s in replay on 2 CPU cores with an empty kernel cache
#: (2026-12-03), so 120 s stops only a stuck cell (a learner's endless loop), and a class with
#: one costs 2 minutes instead of 10.
TIMEOUT = 120


@dataclasses.dataclass
class Graded:
    learner: str
    notebooks: list[str]
    status: dict[str, str | None]          # exercise → status (None: never checked)
    attempts: dict[str, int]
    problems: list[str]                    # notebooks that stopped early or raised, and where
    order: dict[str, tuple[str, int]] = dataclasses.field(default_factory=dict)
    # exercise → (the notebook it was found in, its position there)
    asked: list[str] | None = None
    # the exercises the shipped notebooks matching this learner's ask (None: from ``notebooks``)
    hints: dict[str, str] = dataclasses.field(default_factory=dict)
    # exercise → what its latest attempt was told, for an answer not (yet) correct

    def __post_init__(self):
        if self.asked is None:
            shipped = shipped_exercises()
            self.asked = list(dict.fromkeys(n for nb in self.notebooks
                                            for n in asked_for(nb, list(self.status), shipped)))

    @property
    def score(self) -> int:
        return sum(self.status.get(n) == "correct" for n in self.asked)

    @property
    def out_of(self) -> int:
        return len(self.asked)

    @property
    def extras(self) -> dict[str, str | None]:
        """Checks no notebook this learner handed in asks (a checkpoint, their own): not scored."""
        return {n: s for n, s in self.status.items() if n not in self.asked and s is not None}

    def counts(self, column: str) -> bool:
        """Whether exercise ``column`` is in this learner's score (a notebook of theirs asks it)."""
        return column in self.asked


def exercises_in(nb) -> list[str]:
    """The exercise names the (learner) cells of ``nb`` check, in order of appearance."""
    names = []
    for c in nb.cells:
        if c.get("cell_type") == "code":
            names += [n for n in builds.checks_in(c.get("source", "")) if n not in names]
    return names


def shipped_exercises(nb_dir: Path | None = None) -> dict[str, list[str]]:
    """stem → the exercises that shipped learner notebook asks, in order, for every notebook in
    ``nb_dir`` (default :func:`asynctc.teaching.builds.notebooks_dir`: the checkout's, or the
    copies installed with the package), in file order (each deep dive after its lesson)."""
    import nbformat
    d = Path(nb_dir) if nb_dir is not None else builds.notebooks_dir()
    return {p.stem: exercises_in(builds.strip_solutions(nbformat.read(p, as_version=4)))
            for p in sorted(d.glob("[0-9][0-9]*_*.ipynb"))}


def asked_for(name: str, checks: list[str], shipped: dict[str, list[str]]) -> list[str]:
    """The exercises a handed-in notebook called ``name`` is scored on: those of the shipped
    notebook of the same stem; else of the same number (``04_wgmma (1).ipynb`` → ``04_wgmma``);
    else of the shipped notebook sharing most of ``checks`` (the names the notebook checks)."""
    stem = Path(name).stem
    if stem in shipped:
        return shipped[stem]
    m = re.match(r"(\d\d[a-z]?)_", stem)
    same = [s for s in shipped if m and s.startswith(m.group(1) + "_")]
    if same:
        return shipped[same[0]]
    best = max(shipped, key=lambda s: len(set(shipped[s]) & set(checks)), default=None)
    return shipped[best] if best is not None and set(shipped[best]) & set(checks) else []


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


class _Watched:
    """A notebook client that remembers whether its run ended in a cell timeout (nbclient's
    ``CellTimeoutError`` is a ``TimeoutError``; the interrupted cell then shows a
    KeyboardInterrupt, which is not what the learner's code did)."""

    def __init__(self, client):
        self.client, self.timed_out = client, False

    def execute(self, *a, **k):
        try:
            return self.client.execute(*a, **k)
        except TimeoutError:
            self.timed_out = True
            raise

    def __getattr__(self, name):
        return getattr(self.client, name)


def where(nb, i: int, number: int | None = None) -> str:
    """Cell ``i`` (0-based) of ``nb`` as a teacher finds it in JupyterLab: its number counted
    from 1 with markdown cells (``number``: that number in the handed-in file, when ``nb`` is a
    copy with cells left out), the exercise it checks, the heading it is under."""
    names = builds.checks_in(nb.cells[i].get("source", "")) if nb.cells[i].get("cell_type") == "code" else []
    head = ""
    for c in reversed(nb.cells[:i]):
        if c.get("cell_type") == "markdown":
            lines = [ln for ln in c.get("source", "").splitlines() if re.match(r"#{1,3}\s", ln)]
            if lines:
                head = re.sub(r"^#+\s*|[`*]", "", lines[-1]).strip()
                break
    parts = ([f"exercise {', '.join(names)}"] if names else []) + ([f'under "{head}"'] if head else [])
    return f"cell {number or i + 1}" + (f" ({'; '.join(parts)})" if parts else "")


def grade_notebook(path: Path, make_client: Callable | None = None, timeout: int = TIMEOUT):
    """(exercise names, {exercise: status}, {exercise: attempts}, problem or "", {exercise: the
    hint its latest attempt got, for an answer not correct}) of one notebook."""
    import nbformat
    path = Path(path)
    handed_in = nbformat.read(path, as_version=4)
    nb = builds.strip_solutions(handed_in)
    numbers = [k + 1 for k, c in enumerate(handed_in.cells) if not builds.is_solution(c)]
    names = exercises_in(nb)
    make = make_client or (lambda n: _default_client(n, timeout))
    with tempfile.TemporaryDirectory() as tmp:
        prog = Path(tmp) / "progress.jsonl"
        saved = {k: os.environ.get(k) for k in (progress.ENV, "ASYNCTC_MODE", "ASYNCTC_ANSWER_KEY")}
        os.environ[progress.ENV] = str(prog)
        os.environ.setdefault("ASYNCTC_MODE", "replay")
        os.environ.pop("ASYNCTC_ANSWER_KEY", None)          # the learner's code gets no answer key
        watched = None

        def watch(n):
            nonlocal watched
            watched = _Watched(make(n))
            return watched
        try:
            outcome = runner.run_notebook(nb, watch)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        done = progress.summary([d for d in progress.attempts(prog) if not d.get("solution")])
    problem = _problem(nb, numbers, outcome, runner.cell_error(nb),
                       watched is not None and watched.timed_out, timeout)
    for n in done:
        if n not in names:
            names.append(n)
    status = {n: done.get(n, {}).get("status") for n in names}
    for n in ran_without_check(nb, status):
        status[n] = "unanswered"
    return (names, status,
            {n: done.get(n, {}).get("attempts", 0) for n in names},
            f"{path.name}: {problem}" if problem else "",
            {n: done[n]["message"] for n in names if done.get(n, {}).get("message")})


def _problem(nb, numbers: list[int], outcome, err, timed_out: bool, timeout: int) -> str:
    """What went wrong in an executed notebook, in a teacher's words ("" if nothing);
    ``numbers``: each cell's number in the handed-in file."""
    if timed_out:
        ran = [i for i, c in enumerate(nb.cells) if c.get("cell_type") == "code"
               and c.get("execution_count") is not None]
        i = err[0] if err is not None else (ran[-1] if ran else None)
        cell = where(nb, i, numbers[i]) if i is not None else "a cell"
        return (f"{cell} timed out: still running after {timeout} s (--timeout), so it was stopped "
                "and the cells after it did not run")
    if err is not None:
        i, out = err
        value = str(out.get("evalue", "")).strip().splitlines()
        return (f"{where(nb, i, numbers[i])} raised {out.get('ename', '?')}"
                + (f": {value[0][:100]}" if value else "")
                + ("" if outcome.passed else "; the notebook stopped there"))
    return "" if outcome.passed else outcome.message


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


def grade(folder: Path, make_client: Callable | None = None, timeout: int = TIMEOUT) -> list[Graded]:
    """Grade every learner's notebooks in ``folder``."""
    shipped = shipped_exercises()
    out = []
    for learner, paths in submissions(folder).items():
        status, tries, problems, order, asked, hints = {}, {}, [], {}, [], {}
        for p in paths:
            names, st, at, problem, told = grade_notebook(p, make_client, timeout)
            status.update(st)
            hints.update(told)
            tries.update(at)
            for i, n in enumerate(names):
                order.setdefault(n, (p.name, i))
            asked += [n for n in asked_for(p.name, names, shipped) if n not in asked]
            if problem:
                problems.append(problem)
        for n in asked:
            status.setdefault(n, None)          # asked, missing from their notebook: never checked
        out.append(Graded(learner, [p.name for p in paths], status, tries, problems, order, asked, hints))
    return out


def course_order(nb_dir: Path | None = None) -> dict[str, int]:
    """Each exercise's position in the course: the order the shipped learner notebooks
    (:func:`shipped_exercises`: chapter by chapter, each deep dive after its lesson) ask them."""
    out: dict[str, int] = {}
    for names in shipped_exercises(nb_dir).values():
        for n in names:
            out.setdefault(n, len(out))
    return out


def columns(graded: list[Graded], order: dict[str, int] | None = None) -> list[str]:
    """The table's exercise columns: every exercise some learner is scored on, in notebook order
    (:func:`course_order`, then by chapter and where the learners' notebooks ask it)."""
    order = course_order() if order is None else order
    cols: list[str] = []
    for g in graded:
        cols += [n for n in g.asked if n not in cols]
    seen = {}
    for g in graded:
        for n, where_ in g.order.items():
            seen[n] = min(seen.get(n, where_), where_)
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
        w.writerow(["learner", *cols, "score", "out_of", "problems", "not_scored"])
        for g in graded:
            w.writerow([g.learner, *[(g.status.get(c) or "-") if g.counts(c) else "" for c in cols],
                        g.score, g.out_of, "; ".join(g.problems),
                        "; ".join(f"{n}={s}" for n, s in g.extras.items())])
    lines = ["| learner | " + " | ".join(cols) + " | score |",
             "|---|" + "---|" * len(cols) + "---|"]
    for g in graded:
        lines.append(f"| {g.learner} | "
                     + " | ".join(SYMBOL.get(g.status.get(c), "-") if g.counts(c) else " " for c in cols)
                     + f" | {g.score}/{g.out_of} |")
    lines += ["", "✓ correct · ✗ wrong · `·` unanswered · ? answer in a refused form · - never checked"
              " · blank: not asked by the notebooks this learner handed in (not in their score)"]
    extras = [(g.learner, g.extras) for g in graded if g.extras]
    if extras:
        lines += ["", "Checks the handed-in notebooks do not ask (a checkpoint question, the learner's own; "
                  "not scored):"] + [f"- {who}: " + ", ".join(f"{n} {SYMBOL.get(s, '-')}" for n, s in ex.items())
                                     for who, ex in extras]
    told = [(g.learner, n, g.attempts.get(n, 0), h) for g in graded for n in cols
            if g.counts(n) and g.status.get(n) in ("wrong", "invalid") and (h := g.hints.get(n))]
    if told:
        lines += ["", "What each answer that is not correct was told (its latest attempt; the learner's "
                  "mistake in the checker's words):"]
        lines += [f"- {who}, {n} ({k} attempt{'s' * (k != 1)}): {h}" for who, n, k, h in told]
    problems = [(g.learner, p) for g in graded for p in g.problems]
    if problems:
        lines += ["", "Notebooks with a cell that raised (the cells after it still ran and count) or that "
                  "stopped early (a timeout, a dead kernel); cells are counted from 1 at the top, "
                  "markdown cells included:"] + [f"- {who}: {p}" for who, p in problems]
    md = "\n".join(lines) + "\n"
    md_path.write_text(md)
    return csv_path, md_path, md
