"""How long a learner takes over a notebook: the course's learner-time model (issue 22 §1).

The model reads an executed notebook (the solution build, ``notebooks/solutions/NN_name.ipynb``, so
that every output a learner sees once they run the cells is there; the solution cells themselves
are left out, as the learner notebook leaves them out) and adds up:

===============================  ==========  =====================================================
what                             cost        where the constant comes from
===============================  ==========  =====================================================
prose (markdown words, comment   150 words   silent reading of English non-fiction averages about
words in code, words of text     a minute    240 words a minute (Brysbaert 2019, *J. Memory and
output)                                      Language* 109); reading to learn technical material
                                             is slower — 150 is the low end of the 150–200 range
                                             usually quoted for it, because the course's prose is
                                             dense with numbers and terms
a code line (not blank, not a    4 s         reading code runs at a fraction of prose speed: a
comment)                                     line of the course's Python is 8–12 tokens, i.e. about
                                             10 words at a third of the prose rate
a code cell, to run and see      20 s        Shift-Enter, a replayed cell returns in a second or
its output appear                            two, then a glance at what came out
a ``check`` cell (guards only)   20 s        run like any cell; its code is collapsed (the
                                             reader sees "…"), so its lines are not read
a text output longer than        skimmed     a listing (SASS, a source excerpt) is scanned for the
250 words                                    lines the prose points at: its words count up to 250
a figure                         60 s        read the axes, the legend, the one thing it shows
a markdown table                 30 s        + its words at the prose rate
an exercise: predict / choose    3 min       read the question, decide, run the check
an exercise: compute             6 min       an expression from numbers above, sometimes a retry
                                             after the checker's hint
an exercise: write code          12 min      a kernel line or a function: edit, run, read the
                                             error, fix
===============================  ==========  =====================================================

An exercise's kind: *write code* when its cell defines something (``def``, a triple-quoted source)
or the exercise is registered as a code exercise (``exercises.is_code``: chapter 08's program);
otherwise *predict / choose* when the markdown that asks it says "predict" or offers choices, or its
answer is text (a quoted string); otherwise *compute*.

The model is a budget, not a stopwatch: it errs long (slow reading, no skipping) so that a lesson
that fits its 45 minutes fits a real learner. A fresh reader's times should still be taken (issue
22 asks for both); docs/teaching/README.md states the model for the teacher.

    python -m asynctc.teaching.timing            # minutes per notebook, core and deep dive
    python -m asynctc.teaching.timing --sections 05 08   # minutes per section of those notebooks
    python -m asynctc.teaching.timing --plan docs/teaching/plan-6h.md   # a plan against the model

A plan's block needs the model's minutes for the sections it names, its checkpoint question
(``CHECKPOINT_MIN``) and the teacher's minutes the plan states in its *deck* and *demo* columns;
what the block holds beyond that is its buffer (:func:`plan_report`).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import builds

ROOT = Path(__file__).resolve().parent.parent.parent
NOTEBOOKS = ROOT / "notebooks"

#: The constants of the model (module docstring: where each comes from).
PROSE_WPM = 150
CODE_LINE_S = 4.0
CELL_S = 20.0
OUTPUT_WORDS_CAP = 250
FIGURE_S = 60.0
TABLE_S = 30.0
EXERCISE_MIN = {"predict": 3.0, "compute": 6.0, "code": 12.0}

#: A core lesson's budget (COURSE.md, "The shape of a lesson") and the core path's (00–10).
CORE_TARGET_MIN = (30, 35)
CORE_LIMIT_MIN = 45
CORE_PATH_LIMIT_MIN = 6 * 60

SOLUTION_TAG = "solution"

_WORD = re.compile(r"[A-Za-z0-9][\w'’.\-/×³²·%]*")


def words(text: str) -> int:
    """Words of prose: link targets, HTML tags, the stylesheet or script an HTML output carries
    (a highlighted listing's ``<style>`` block) and markdown punctuation are not read."""
    text = re.sub(r"<(style|script)\b.*?</\1\s*>", " ", text, flags=re.S | re.I)
    text = re.sub(r"\]\([^)]*\)", "]", text)            # [label](target) → label
    text = re.sub(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>", " ", text)   # a tag, not "S < T ... >"
    return len(_WORD.findall(text))


@dataclass
class Estimate:
    """Seconds per part of one notebook, and the exercises found (name, kind)."""
    name: str
    prose_s: float = 0.0
    code_s: float = 0.0
    output_s: float = 0.0
    figure_s: float = 0.0
    table_s: float = 0.0
    exercise_s: float = 0.0
    exercises: list[tuple[str, str]] = field(default_factory=list)

    @property
    def minutes(self) -> float:
        return (self.prose_s + self.code_s + self.output_s + self.figure_s + self.table_s
                + self.exercise_s) / 60

    def parts(self) -> dict[str, float]:
        return {k: getattr(self, k + "_s") / 60 for k in ("prose", "code", "output", "figure",
                                                          "table", "exercise")}


def _src(cell) -> str:
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else s


def _output_text(out) -> str:
    if out.get("output_type") == "stream":
        t = out.get("text", "")
        return "".join(t) if isinstance(t, list) else t
    data = out.get("data", {})
    for key in ("text/markdown", "text/html", "text/plain"):
        if key in data:
            t = data[key]
            t = "".join(t) if isinstance(t, list) else t
            if key == "text/plain" and re.fullmatch(r"<(Figure|IPython)[^>]*>", t.strip()):
                return ""
            return t
    if out.get("output_type") == "error":
        return " ".join(out.get("traceback", []))
    return ""


def _prose_s(n_words: int) -> float:
    return n_words * 60.0 / PROSE_WPM


def _tables(md: str) -> int:
    return len(re.findall(r"^\s*\|?\s*:?-{3,}:?\s*\|", md, re.M))


def exercise_kind(code: str, asked_in: str, name: str | None = None) -> str:
    """``"code"``, ``"predict"`` or ``"compute"`` (the module docstring's rule; an exercise
    registered as a code exercise — its answer is code, e.g. a program to edit — is "code")."""
    body = "\n".join(l for l in code.splitlines() if not l.lstrip().startswith("#"))
    if re.search(r"^\s*def \w+|'''|\"\"\"", body, re.M):
        return "code"
    if name is not None:
        from ..core import exercises
        try:
            if exercises.is_code(name):
                return "code"
        except KeyError:
            pass
    m = re.search(r"^\s*answer\s*=\s*(.+)$", body, re.M)
    text_answer = bool(m and re.match(r"""["']""", m.group(1).strip()))
    if re.search(r"\bpredict|\bwhich of\b|\bchoose\b|\bone of\b", asked_in, re.I) or text_answer:
        return "predict"
    return "compute"


def estimate(nb: dict, name: str = "") -> Estimate:
    """The model's seconds for one executed notebook (a dict in nbformat 4's JSON)."""
    e = Estimate(name)
    last_md = ""
    for cell in nb["cells"]:
        tags = set(cell.get("metadata", {}).get("tags", []))
        src = _src(cell)
        if SOLUTION_TAG in tags:
            continue
        if cell["cell_type"] == "markdown":
            fences = re.findall(r"```.*?```", src, re.S)
            prose = re.sub(r"```.*?```", " ", src, flags=re.S)
            e.prose_s += _prose_s(words(prose))
            e.code_s += CODE_LINE_S * sum(len([l for l in f.splitlines()[1:-1] if l.strip()])
                                          for f in fences)
            e.table_s += TABLE_S * _tables(prose)
            last_md = src
            continue
        if cell["cell_type"] != "code":
            continue
        if builds.CHECK_TAG in tags:              # collapsed: run, not read
            src = ""
        lines = [l for l in src.splitlines() if l.strip()]
        comments = [l.split("#", 1)[1] for l in lines if "#" in l and not l.lstrip().startswith("%")]
        code_lines = [l for l in lines if not l.lstrip().startswith("#")]
        e.code_s += CELL_S + CODE_LINE_S * len(code_lines)
        e.prose_s += _prose_s(sum(words(c) for c in comments))
        for out in cell.get("outputs", []):
            if "image/png" in out.get("data", {}) or "image/svg+xml" in out.get("data", {}):
                e.figure_s += FIGURE_S
            text = _output_text(out)
            if "<table" in text or _tables(text):
                e.table_s += TABLE_S
            e.output_s += _prose_s(min(words(text), OUTPUT_WORDS_CAP))
        for ex in builds.checks_in(src, unique=False):
            kind = exercise_kind(src, last_md, ex)
            e.exercises.append((ex, kind))
            e.exercise_s += 60 * EXERCISE_MIN[kind]
    return e


def section_title(md: str) -> str | None:
    """The first ``## `` heading of a markdown cell (a section of the lesson), or None."""
    m = re.search(r"^## +(.+?)\s*$", md, re.M)
    return m.group(1) if m else None


def _split_at_headings(md: str) -> list[str]:
    """A markdown cell's text cut before every ``## `` line (the first piece may be empty)."""
    return re.split(r"(?m)^(?=## )", md)


def sections(nb: dict, name: str = "") -> list[Estimate]:
    """The model's seconds per section: the notebook cut before every ``## `` heading, also one
    in the middle of a markdown cell (what comes before the first is the introduction, named
    ``intro``). The sections' minutes add up to :func:`estimate`'s."""
    out: list[Estimate] = []
    chunk: list[dict] = []
    title = "intro"
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            chunk.append(cell)
            continue
        for i, piece in enumerate(_split_at_headings(_src(cell))):
            t = section_title(piece) if piece.startswith("## ") else None
            if t is not None:
                if chunk:
                    out.append(estimate({"cells": chunk}, title))
                chunk, title = [], t
            if piece.strip() or i == 0:
                chunk.append({**cell, "source": piece})
    if chunk:
        out.append(estimate({"cells": chunk}, title))
    return out


def notebook_paths(folder: Path = NOTEBOOKS) -> list[Path]:
    """Every chapter notebook, core (``NN_name``) and deep dive (``NNb_name``), in course order;
    the solution build where it exists (it has every output)."""
    out = []
    for p in sorted(folder.glob("[0-9][0-9]*_*.ipynb")):
        sol = folder / "solutions" / p.name
        out.append(sol if sol.exists() else p)
    return out


def is_core(path: Path) -> bool:
    return re.match(r"\d\d_", path.name) is not None


def estimate_path(path: Path) -> Estimate:
    return estimate(json.loads(Path(path).read_text()), Path(path).stem)


def table(folder: Path = NOTEBOOKS) -> str:
    """A markdown table: minutes per notebook (and per part), the core path's and the deep dives'
    totals. Raises FileNotFoundError for a folder with no chapter notebook (no empty table)."""
    if not notebook_paths(folder):
        raise FileNotFoundError(f"no chapter notebooks (NN_name.ipynb) in {folder}")
    rows, core, deep = [], 0.0, 0.0
    head = "| notebook | kind | minutes | prose | code | output | figures | tables | exercises |"
    rows += [head, "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for p in notebook_paths(folder):
        e = estimate_path(p)
        c = is_core(p)
        core, deep = core + e.minutes * c, deep + e.minutes * (not c)
        flag = " ⚠" if c and e.minutes > CORE_LIMIT_MIN else ""
        parts = " | ".join(f"{v:.1f}" for v in e.parts().values())
        rows.append(f"| {e.name} | {'core' if c else 'deep dive'} | {e.minutes:.0f}{flag} | {parts} |")
    rows.append(f"| **core path** | | **{core:.0f}** ({core / 60:.1f} h) | | | | | | |")
    rows.append(f"| deep dives | | {deep:.0f} ({deep / 60:.1f} h) | | | | | | |")
    return "\n".join(rows)


#: Minutes a plan gives each block's checkpoint question (docs/teaching/checkpoints.md).
CHECKPOINT_MIN = 3.0

#: Blocks of a plan that are breaks (their minutes are not teaching time).
BREAK_BLOCKS = ("break", "lunch")


def section_key(title: str) -> str:
    """How a plan names a section: ``"§3"`` for "3. The ladder", ``"exercises"`` for "Exercises"
    or "6. Exercises", ``"intro"`` for what comes before the first heading."""
    if title == "intro":
        return "intro"
    if re.search(r"\bexercises?\b", title, re.I):
        return "exercises"
    m = re.match(r"(\d+)\.", title)
    return f"§{m.group(1)}" if m else title


def cell_sections(nb: dict) -> list[list[tuple[str, str]]]:
    """Per markdown cell, the sections its text belongs to, in order, as ``(key, title)``: one
    pair for a cell inside one section, several for a cell that ends one section and opens the
    next (a ``## `` heading in the middle of the cell)."""
    out: list[list[tuple[str, str]]] = []
    title = "intro"
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        here: list[tuple[str, str]] = []
        for piece in _split_at_headings(_src(cell)):
            t = section_title(piece) if piece.startswith("## ") else None
            title = t if t is not None else title
            if piece.strip() and (not here or here[-1][1] != title):
                here.append((section_key(title), title))
        out.append(here)
    return out


_NB_CACHE: dict[tuple[Path, float], dict] = {}


def _notebook(nb_key: str) -> dict:
    """The executed notebook ``nb_key`` (``"05"``, ``"05b"``), read once per file version."""
    path = {p.name.split("_")[0]: p for p in notebook_paths()}[nb_key]
    key = (path, path.stat().st_mtime)
    if key not in _NB_CACHE:
        _NB_CACHE[key] = json.loads(path.read_text())
    return _NB_CACHE[key]


def named_sections(text: str, chapter: str) -> list[tuple[str, str]]:
    """The ``(notebook, section)`` pairs a plan's *sections* cell names, in order: ``intro``,
    ``§N``, ``exercises`` refer to notebook ``chapter`` (e.g. ``"05"``) until a notebook key
    switches them (``05b §2`` is a deep dive's section); a key not followed by a section (``05b``,
    ``00``) is the whole notebook, ``(key, "*")``. ``§1–§3`` is a range."""
    text = re.sub(r"§(\d+)\s*[–-]\s*§(\d+)",
                  lambda m: " ".join(f"§{i}" for i in range(int(m.group(1)), int(m.group(2)) + 1)),
                  text)
    out: list[tuple[str, str]] = []
    nb_key = chapter
    for m in re.finditer(r"\b(\d\d[a-z]?)\b(?: (?=§))?|§\d+|\bintro\b|\bexercises?\b", text, re.I):
        tok = m.group(0)
        if m.group(1):
            nb_key = m.group(1)
            if not text[m.end():].lstrip().startswith("§") and (nb_key, "*") not in out:
                out.append((nb_key, "*"))
            continue
        key = "exercises" if tok.lower().startswith("exercise") else tok.lower() if tok.lower() == "intro" else tok
        if (nb_key, key) not in out:
            out.append((nb_key, key))
    return out


def named_minutes(text: str, chapter: str) -> float:
    """The model's minutes for the sections a plan's cell names (:func:`named_sections`). Raises
    KeyError for a section the notebook does not have."""
    total = 0.0
    for nb_key, key in named_sections(text, chapter):
        per = {section_key(e.name): e.minutes for e in sections(_notebook(nb_key))}
        total += sum(per.values()) if key == "*" else per[key]
    return total


def cell_splits(text: str, chapter: str) -> list[str]:
    """Where a block's sections begin or end inside a markdown cell — one cell holding the end of
    a named section and the start of one not named, or the reverse — each as the instruction a
    plan must give its learners: ``06: stop at "3. The ladder"``, ``06: start at "5. Use it: …"``."""
    named = named_sections(text, chapter)
    whole = {nb for nb, k in named if k == "*"}
    out: list[str] = []
    for nb_key in dict.fromkeys(nb for nb, _ in named):
        if nb_key in whole:
            continue
        keys = {k for nb, k in named if nb == nb_key}
        for cell in cell_sections(_notebook(nb_key)):
            for (a, _), (b, title) in zip(cell, cell[1:]):
                if (a in keys) != (b in keys):
                    out.append(f'{nb_key}: {"stop" if a in keys else "start"} at "{title}"')
    return out


def _num(cell: str) -> float:
    """A plan's minute cell: blank or a dash is 0."""
    cell = cell.strip()
    return 0.0 if cell in ("", "-", "—", "–") else float(cell)


@dataclass
class PlanRow:
    """One row of a teaching plan's table (docs/teaching/plan-*.md). ``deck`` and ``demo`` are the
    teacher's minutes in the block (the chapter's slides projected; a live run or a projected
    section), from the plan's *deck* and *demo* columns where it has them."""
    time: str
    minutes: int
    block: str
    sections: str
    chapter: str | None          # "05" for a lesson block, None for setup, breaks, labs
    deck: float = 0.0
    demo: float = 0.0

    @property
    def teacher(self) -> float:
        return self.deck + self.demo

    @property
    def model(self) -> float | None:
        """The learner-time model's minutes for the sections the row names (None: no lesson)."""
        return None if self.chapter is None else named_minutes(self.sections, self.chapter)

    @property
    def needed(self) -> float | None:
        """The minutes the row must hold: the model's for its sections, its checkpoint question
        and the teacher's deck and demo minutes (a row with no lesson: its teacher minutes, if any)."""
        if self.chapter is None:
            return self.teacher or None
        return self.model + CHECKPOINT_MIN + self.teacher

    @property
    def buffer(self) -> float | None:
        need = self.needed
        return None if need is None else self.minutes - need


def plan_table_cells(md: str) -> list[list[dict[str, str]]]:
    """Every table of a plan whose header starts ``| time | min | block | sections |``, as rows of
    {column header: cell text} (the run sheet reads the other columns too)."""
    tables: list[list[dict[str, str]]] = []
    rows: list[dict[str, str]] | None = None
    head: list[str] = []
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells and cells[:4] == ["time", "min", "block", "sections"]:
            rows, head = [], cells
            tables.append(rows)
            continue
        if cells is None:
            rows = None
            continue
        if rows is None or set(cells[0]) <= set("-: "):
            continue
        rows.append(dict(zip(head, cells)))
    return tables


def plan_tables(md: str) -> list[list[PlanRow]]:
    """Every table of a plan (:func:`plan_table_cells`), as rows; a *deck* and a *demo* column,
    anywhere in the header, give the teacher's minutes."""
    tables: list[list[PlanRow]] = []
    for cells in plan_table_cells(md):
        rows = []
        for c in cells:
            m = re.match(r"(\d\d)\b", c["block"])
            teach = {k: _num(c[k]) if k in c else 0.0 for k in ("deck", "demo")}
            rows.append(PlanRow(c["time"], int(c["min"]), c["block"], c["sections"],
                                m.group(1) if m else None, **teach))
        tables.append(rows)
    return tables


@dataclass
class PlanBudget:
    """Where one plan table's minutes go. ``buffer``: the minutes its rows hold beyond what they
    need (:attr:`PlanRow.needed`), summed over the rows that need something."""
    total: int = 0
    breaks: int = 0
    other: int = 0               # setup, wrap-up, labs: rows with no lesson
    model: float = 0.0
    checkpoints: float = 0.0
    deck: float = 0.0
    demo: float = 0.0
    buffer: float = 0.0

    @property
    def teaching(self) -> int:
        """The minutes outside breaks."""
        return self.total - self.breaks


def plan_budget(rows: list[PlanRow]) -> PlanBudget:
    b = PlanBudget()
    for r in rows:
        b.total += r.minutes
        if r.block in BREAK_BLOCKS:
            b.breaks += r.minutes
            continue
        if r.chapter is None:
            b.other += r.minutes
        else:
            b.model += r.model
            b.checkpoints += CHECKPOINT_MIN
        b.deck, b.demo = b.deck + r.deck, b.demo + r.demo
        if r.buffer is not None:
            b.buffer += r.buffer
    return b


def plan_report(path: Path) -> str:
    """Each block of a plan beside what it needs: the model's minutes for the sections it names,
    the checkpoint, the teacher's deck and demo minutes; the buffer left; where a block begins or
    ends inside a notebook cell; and each table's budget."""
    out = []
    for i, rows in enumerate(plan_tables(Path(path).read_text()), 1):
        b = plan_budget(rows)
        out.append(f"{Path(path).name}, table {i}: {b.total} min")
        out.append(f"  {'time':5s} {'min':>3s}  {'block':40s} {'model':>5s} {'check':>5s} {'deck':>4s} "
                   f"{'demo':>4s} {'need':>5s} {'buffer':>6s}")
        for r in rows:
            line = f"  {r.time:5s} {r.minutes:3d}  {r.block[:40]:40s}"
            if r.needed is not None:
                model = f"{r.model:5.1f} {CHECKPOINT_MIN:5.0f}" if r.chapter else f"{'':5s} {'':5s}"
                line += (f" {model} {r.deck:4.0f} {r.demo:4.0f} {r.needed:5.1f} {r.buffer:+6.1f}"
                         + (" ⚠ over" if r.buffer < 0 else ""))
            out.append(line.rstrip())
            for s in cell_splits(r.sections, r.chapter) if r.chapter else ():
                out.append(f"{'':14s}cell shared with a section left out: {s}")
        out.append(f"  = {b.breaks} min of breaks, {b.other} of setup, wrap-up and labs, "
                   f"{b.total - b.breaks - b.other} of lesson blocks: the model's sections {b.model:.0f}, "
                   f"checkpoints {b.checkpoints:.0f}, teacher {b.deck + b.demo:.0f} (deck {b.deck:.0f}, "
                   f"demo {b.demo:.0f}), buffer {b.buffer:.0f} ({b.buffer / b.teaching:.0%} of the "
                   f"{b.teaching} min outside breaks)")
    return "\n".join(out)


def section_table(path: Path) -> str:
    """A markdown table of one notebook's sections: minutes and the exercises each holds."""
    nb = json.loads(Path(path).read_text())
    rows = [f"| {Path(path).stem} section | minutes | exercises |", "|---|---:|---|"]
    total = 0.0
    for e in sections(nb):
        total += e.minutes
        rows.append(f"| {e.name} | {e.minutes:.1f} | {', '.join(n for n, _ in e.exercises)} |")
    rows.append(f"| **total** | **{total:.1f}** | |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """``[FOLDER]``: the table of every notebook; ``--sections [NN …]``: per-section minutes of
    those notebooks (``05``, ``06b``, …; none: every core lesson); ``--plan FILE …`` (or
    ``--plan=FILE``, or a plan's ``.md`` in FOLDER's place): a teaching plan's blocks beside what
    each needs. Anything else is an error, never an empty table."""
    import argparse
    ap = argparse.ArgumentParser(prog="python -m asynctc.teaching.timing",
                                 description="The learner-time model: minutes per notebook, per "
                                             "section, or a teaching plan's blocks beside it.")
    ap.add_argument("folder", nargs="?", help="a folder of executed notebooks (default: notebooks/)")
    ap.add_argument("--sections", nargs="*", metavar="NN", help="per-section minutes of these notebooks")
    ap.add_argument("--plan", nargs="+", metavar="FILE", help="a plan (docs/teaching/plan-*.md) beside the model")
    a = ap.parse_args(sys.argv[1:] if argv is None else argv)
    plans = list(a.plan or [])
    if a.folder and a.folder.endswith(".md"):
        plans.insert(0, a.folder)
        a.folder = None
    if plans or a.sections is not None:
        for path in plans:
            if not Path(path).is_file():
                print(f"no plan {path!r}", file=sys.stderr)
                return 2
            print(plan_report(Path(path)) + "\n")
        if a.sections is not None:
            paths = {p.name.split("_")[0]: p for p in notebook_paths()}
            for key in a.sections or sorted(k for k in paths if re.fullmatch(r"\d\d", k)):
                if key not in paths:
                    print(f"no notebook {key!r}; have {', '.join(sorted(paths))}", file=sys.stderr)
                    return 2
                print(section_table(paths[key]) + "\n")
        return 0
    folder = Path(a.folder) if a.folder else NOTEBOOKS
    if not notebook_paths(folder):
        print(f"no chapter notebooks (NN_name.ipynb) in {folder}", file=sys.stderr)
        return 2
    print(table(folder))
    print(f"\nmodel: {PROSE_WPM} words/min of prose, {CODE_LINE_S:.0f} s per code line, "
          f"{CELL_S:.0f} s per code cell, {FIGURE_S:.0f} s per figure, {TABLE_S:.0f} s per table, "
          "exercises " + ", ".join(f"{k} {v:.0f} min" for k, v in EXERCISE_MIN.items())
          + f"; a core lesson ≤ {CORE_LIMIT_MIN} min (aim {CORE_TARGET_MIN[0]}–{CORE_TARGET_MIN[1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
