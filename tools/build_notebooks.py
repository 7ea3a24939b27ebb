"""Build the course notebooks from their sources and execute them, so that committed notebooks carry
outputs that nbval can compare.

Sources: ``notebooks/src/NN_name.py`` in jupytext's percent format (``# %%`` code cells,
``# %% [markdown]`` text cells). Each is converted with jupytext, executed with nbclient in the
notebooks folder (by default in replay mode, so the committed outputs are the ones CI reproduces),
checked for absolute paths or machine names in its outputs, and written twice: the solution
notebook ``notebooks/solutions/NN_name.ipynb`` (every cell) and the learner notebook
``notebooks/NN_name.ipynb`` (no solution cells; the outputs that answer a prediction exercise
cleared — ``asynctc.teaching.builds.learner_copy``). nbval checks both.

    python tools/build_notebooks.py            # all chapters, replay mode
    python tools/build_notebooks.py 01 02      # some chapters
    python tools/build_notebooks.py --check    # fail if a committed notebook's cells differ from src

Conventions for sources: a cell whose output depends on the machine or the run (timings, the mode
banner, register counts from this NVRTC, sentences generated from a record) opens with the marker
``# %% output varies``; the build turns it into nbval's ``nbval-ignore-output`` cell tag, so the
reader sees no marker in the cell. Such a cell still executes, and its asserts and
``notebook.claim`` calls still fail the run. Deterministic cells (models, exercise checks,
validation errors) are compared by nbval.

A cell whose output answers a "predict before you look" exercise (the figure, table or source
excerpt that shows the answer) opens with ``# %% output answers a prediction``: it gets the tags
``answer`` and ``nbval-ignore-output``, and the learner notebook keeps it without its outputs.
A markdown cell that answers one (the **So:** paragraph after it) opens with
``# %% answer [markdown]`` (jupytext's own spelling of a titled markdown cell, so a jupytext
round trip keeps it; ``# %% [markdown] answer`` reads the same): it gets the tag ``answer``, and
the learner notebook folds its text in a closed ``<details>`` block that the reader opens after
running the cell above (``asynctc.teaching.builds.learner_copy``); the solution notebook shows it
as written. Such a cell holds no heading (the build refuses one: a heading would end the fold on
the slides, which start a slide at each): put the section's heading in a cell of its own.

A code cell that holds only guards (``assert``, ``notebook.require``, ``notebook.claim`` over the
numbers a cell above printed) opens with ``# %% check``: it gets the tag ``check`` and
``metadata.jupyter.source_hidden`` (collapsed in JupyterLab: the reader sees "…" and can open it),
so the cell that prints keeps only the lines that matter; its first line (:data:`CHECK_LINE`, added
by the build) says so to a reader of the plain text. VS Code opens it expanded: its ipynb reader
(microsoft/vscode extensions/ipynb/src/deserializers.ts) reads no collapse key from the file (of
``metadata.vscode`` only ``languageId``), and a serializer cannot set a cell's initial collapse
(microsoft/vscode#158716, closed as not planned), so there CHECK_LINE is what tells the reader. It still runs, under nbval too, and a
failing guard raises as anywhere else; the course site shows its outputs without its code. Put it
right after the cell whose numbers it checks, before the markdown that states the guarded
sentence; tests/test_notebook_prose.py counts its guards as it counts any cell's. A check cell
whose output varies (a ``notebook.claim`` printing a record's numbers) opens with
``# %% check, output varies``: both tags, the one combination of markers.

Solution cells are code cells that check with ``solution=True`` (tag ``solution``) and the
``<summary>Solutions`` heading; they stay only in the solution notebook.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "notebooks" / "src"
OUT = ROOT / "notebooks"
SOLUTIONS = OUT / "solutions"

#: Architecture a chapter's kernels need (metadata ``asynctc.arch``, read by ``asynctc course``).
ARCH = {"09": "sm_100a"}

#: The source marker (a jupytext cell title: ``# %% output varies``) and the nbval tag it becomes.
VARIES_MARKER = "output varies"
VARIES_TAG = "nbval-ignore-output"
#: The marker of a cell whose output answers a prediction, and its tag (see the module docstring).
ANSWER_MARKER = "output answers a prediction"
ANSWER_TAG = "answer"
#: The first line of every check cell: a reader who sees its code (plain-text views) can skip it.
CHECK_LINE = ("# Check cell (collapsed in JupyterLab): it fails loudly if a re-measurement contradicts the "
              "text; nothing new to learn here.")
#: The marker of a code cell that holds only guards, and its tag (asynctc.teaching.builds.CHECK_TAG).
CHECK_MARKER = "check"
CHECK_TAG = "check"
#: Every cell marker (a jupytext title) → the tags it gives; ``check, output varies`` combines two,
#: and ``check, output answers a prediction`` three: a check cell whose printed lines (its "✓ sentence"
#: claims) say what a prediction above asked, so the learner copy stores no output for it.
MARKERS = {VARIES_MARKER: {VARIES_TAG}, ANSWER_MARKER: {VARIES_TAG, ANSWER_TAG}, CHECK_MARKER: {CHECK_TAG},
           f"{CHECK_MARKER}, {VARIES_MARKER}": {CHECK_TAG, VARIES_TAG},
           f"{CHECK_MARKER}, {ANSWER_MARKER}": {CHECK_TAG, VARIES_TAG, ANSWER_TAG}}
#: The marker of a markdown cell that answers a prediction (``# %% answer [markdown]``), and its tags.
MARKDOWN_ANSWER_MARKER = "answer"
MARKDOWN_MARKERS = {MARKDOWN_ANSWER_MARKER: {ANSWER_TAG}}
#: A markdown heading line (a heading inside a folded answer would end the fold on the slides).
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")


def marker_tags(title: str, cell_type: str, where: str) -> set[str]:
    """The tags a cell's marker ``title`` gives it (:data:`MARKERS` on code cells,
    :data:`MARKDOWN_MARKERS` on markdown cells); SystemExit naming ``where`` for an unknown marker."""
    known = MARKERS if cell_type == "code" else MARKDOWN_MARKERS
    if title not in known:
        raise SystemExit(f"{where}: unknown cell marker {title!r} (the markers are "
                         + ", ".join(f"'# %% {m}'" for m in MARKERS) + ", on code cells, and "
                         + ", ".join(f"'# %% {m} [markdown]'" for m in MARKDOWN_MARKERS) + ")")
    return set(known[title])


def heading_in(markdown: str) -> str | None:
    """The first heading line of ``markdown`` outside a code fence, or None."""
    fence = False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence and _HEADING.match(line):
            return line
    return None

FORBIDDEN = [re.compile(p) for p in (r"/work/", r"/root/", r"/home/", r"/tmp/", r"site-packages")]


def to_notebook(src: Path):
    import jupytext
    nb = jupytext.read(src, fmt="py:percent")
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["asynctc"] = {"arch": ARCH.get(src.name[:2], "sm_90a")}
    nb.metadata.pop("jupytext", None)
    import hashlib
    for i, cell in enumerate(nb.cells):
        cell.metadata.pop("lines_to_next_cell", None)
        title = cell.metadata.pop("title", None)
        if title is not None:
            extra = marker_tags(title, cell.cell_type, f"{src.name}: cell {i}")
            if cell.cell_type == "markdown" and heading_in(cell.source) is not None:
                raise SystemExit(f"{src.name}: cell {i}: a heading in an answer markdown cell "
                                 f"({heading_in(cell.source)!r}); put it in a markdown cell of its own")
            cell.metadata["tags"] = sorted(set(cell.metadata.get("tags", [])) | extra)
            if CHECK_TAG in extra:
                # collapsed in JupyterLab (the reader sees "…"); its outputs stay in view; a plain-text
                # view (GitHub, a terminal) shows the code, so its first line says what it is
                cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
                if not cell.source.startswith(CHECK_LINE):
                    cell.source = CHECK_LINE + "\n" + cell.source
        # stable ids, so a rebuild changes only what really changed
        cell["id"] = f"c{i:02d}-" + hashlib.sha1(cell.source.encode()).hexdigest()[:8]
        if cell.cell_type == "code" and "solution=True" in cell.source:
            # collapsed in JupyterLab, code and outputs (which may print intermediate results)
            cell.metadata["jupyter"] = {"source_hidden": True, "outputs_hidden": True}
            cell.metadata["tags"] = sorted(set(cell.metadata.get("tags", [])) | {"solution"})
        if cell.cell_type == "markdown" and "<summary>Solutions" in cell.source:
            # the solutions' heading goes with them (asynctc course removes tagged cells from HTML)
            cell.metadata["tags"] = sorted(set(cell.metadata.get("tags", [])) | {"solution"})
    return nb


def execute(nb, timeout: int = 1800):
    from nbclient import NotebookClient
    env_backup = dict(os.environ)
    os.environ.setdefault("ASYNCTC_MODE", "replay")
    os.environ["ASYNCTC_BUILDING_NOTEBOOKS"] = "1"    # the banner says these are stored outputs
    os.environ["ASYNCTC_PROGRESS"] = "off"            # the build's checks are no learner's attempts
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + [p for p in env_backup.get("PYTHONPATH", "").split(os.pathsep) if p])
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       extra_arguments=["--IPKernelApp.log_level=ERROR"],
                       resources={"metadata": {"path": str(OUT)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(env_backup)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    return nb


def check_outputs(nb, name: str) -> None:
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            texts = [out.get("text", "")] + [v for k, v in out.get("data", {}).items()
                                             if k.startswith("text/")]
            for t in texts:
                t = "".join(t) if isinstance(t, list) else t
                for rx in FORBIDDEN:
                    if rx.search(t):
                        raise SystemExit(f"{name}: cell {i} output contains a machine path "
                                         f"({rx.pattern}): {t[:200]!r}")
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                raise SystemExit(f"{name}: cell {i} wrote to stderr (nbval would fail): "
                                 f"{''.join(out.get('text', ''))[:300]!r}")
            if out.get("output_type") == "error":
                raise SystemExit(f"{name}: cell {i} raised {out.get('ename')}: {out.get('evalue')}")


def _learner(nb):
    sys.path.insert(0, str(ROOT))
    from asynctc.teaching.builds import learner_copy
    return learner_copy(nb)


def sources_match(src: Path, ipynb: Path, solution: Path | None = None) -> bool:
    """The learner notebook ``ipynb`` (and the solution notebook ``solution``, when given) hold the
    cells ``src`` builds, in order, with the same ids and tags."""
    import nbformat
    full = to_notebook(src)
    for want, path in ((_learner(full), ipynb), (full, solution)):
        if path is None:
            continue
        if not path.is_file():
            return False
        key = lambda c: (c.cell_type, c.source, c.get("id"), sorted(c.metadata.get("tags", [])))
        if [key(c) for c in want.cells] != [key(c) for c in nbformat.read(path, as_version=4).cells]:
            return False
    return True


def main(argv=None) -> int:
    import nbformat
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("chapters", nargs="*", help="two-digit chapter numbers, or a deep dive's key "
                   "such as 09b (default: all)")
    p.add_argument("--check", action="store_true", help="only check notebooks match their sources")
    p.add_argument("--exact", action="store_true", help="\"06\" builds the core lesson only, not its deep dives")
    args = p.parse_args(argv)
    srcs = sorted(SRC.glob("[0-9][0-9]*_*.py"))      # core lessons NN_* and deep dives NNb_*
    if args.chapters:
        # "09" builds chapter 09 and its deep dives (09b_...); "09b" only that deep dive
        srcs = [s for s in srcs if (s.name[:2] in args.chapters and not args.exact)
                or s.name.split("_")[0] in args.chapters]
    bad = 0
    for src in srcs:
        target = OUT / (src.stem + ".ipynb")
        solution = SOLUTIONS / (src.stem + ".ipynb")
        if args.check:
            ok = sources_match(src, target, solution)
            print(f"{src.stem:28s} {'up to date' if ok else 'STALE: rebuild with tools/build_notebooks.py'}")
            bad += not ok
            continue
        t0 = time.time()
        nb = execute(to_notebook(src))
        check_outputs(nb, src.stem)
        SOLUTIONS.mkdir(exist_ok=True)
        nbformat.write(nb, solution)
        nbformat.write(_learner(nb), target)
        print(f"{src.stem:28s} built in {time.time() - t0:5.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
