"""Slides and the course site, from the executed learner notebooks (nbconvert does the work).

* ``python -m asynctc slides [NN …] [--all] [--out build/slides] [--reveal PREFIX] [--offline [--assets DIR]]``:
  one reveal.js deck per notebook (nbconvert's ``SlidesExporter``): every core lesson by default,
  ``03b`` names a deep dive, ``--all`` adds every deep dive. Every ``#``/``##`` heading starts a
  slide, also one in the middle of a markdown cell (the cell is cut there, on a copy: the
  notebooks are never changed), ``###`` a sub-slide; a slide longer than the screen scrolls. A core
  lesson's deck ends with its checkpoint question from docs/teaching/checkpoints.md, the answer as
  a speaker note (:func:`checkpoints`). The template loads reveal.js, require.js, jQuery and MathJax
  from CDNs; ``--offline`` points the decks at local copies instead (:func:`offline_assets`:
  reveal.js 5 from the ``sphinx-revealjs`` wheel, the other three from the ``nbclassic`` wheel);
  ``--reveal PREFIX`` (``ASYNCTC_REVEAL``) names another reveal.js 4/5 folder or URL.
* ``python -m asynctc site [--out build/site]``: every learner notebook as HTML (nbconvert's
  ``HTMLExporter``, figures embedded; a ``check`` cell shows its outputs, not its code:
  :func:`page_html`), the glossary as a page, and an ``index.html``; each page gets a navigation
  bar (index · previous · next · glossary). Links to the glossary and to other
  notebooks are rewritten to the site's pages, other relative links to the files they name
  (:func:`rewrite_links`).
* ``python -m asynctc course`` writes its HTML through :class:`CoursePages`: the same rewriting,
  pages beside the executed notebooks in ``build/course/``.

Both use the learner notebooks as committed (already executed: nothing runs), with the solution
cells removed (:func:`asynctc.teaching.builds.strip_solutions`) in case a notebook still has some.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from . import builds
from .timing import is_core

ROOT = builds.ROOT


def _notebooks(chapters=None) -> list[Path]:
    nbs = sorted(builds.notebooks_dir().glob("[0-9][0-9]*_*.ipynb"))
    return [p for p in nbs if not chapters or p.name[:2] in chapters]


def _reveal_answers(nb, stem: str):
    """For the site: the output of each cell a learner notebook ships without (``builds.ANSWER_TAG``:
    it answers a prediction or shows an exercise's answer) comes back from the solution notebook in
    a ``<details>`` under that cell, which the reader opens after answering; the note above a
    prediction's cell (``builds.HIDDEN_NOTE``) says so. Returns ``nb`` (changed in place)."""
    import nbformat
    sol_path = builds.notebooks_dir() / "solutions" / f"{stem}.ipynb"
    if not sol_path.is_file():
        return nb
    by_id = {c.get("id"): c for c in nbformat.read(sol_path, as_version=4).cells}
    cells = []
    for c in nb.cells:
        cells.append(c)
        if c.cell_type != "code" or builds.ANSWER_TAG not in c.metadata.get("tags", []):
            continue
        src = by_id.get(c.get("id"))
        parts = []
        for o in (src.outputs if src is not None else []):
            data = o.get("data", {})
            if "image/png" in data:
                parts.append(f'<img src="data:image/png;base64,{data["image/png"].strip()}"/>')
            elif o.get("output_type") == "stream" or "text/plain" in data:
                text = o.get("text") if o.get("output_type") == "stream" else data["text/plain"]
                parts.append(f"<pre>{html.escape(text)}</pre>")
        if not parts:
            continue
        note = cells[-2] if len(cells) > 1 else None
        if note is not None and "answer-note" in note.metadata.get("tags", []):
            note.source = builds.FOLDED_NOTE
        fold = nbformat.v4.new_markdown_cell(
            "<details><summary>Answered? Show the output of the cell above</summary>\n\n"
            + "\n".join(parts) + "\n\n</details>", metadata={"tags": ["answer-reveal"]})
        if c.get("id"):
            fold["id"] = str(c["id"])[:52] + "-reveal"
        cells.append(fold)
    nb.cells = cells
    return nb


def _title(nb, fallback: str) -> str:
    for c in nb.cells:
        if c.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", c.source, re.M)
            if m:
                return re.sub(r"[`*]", "", m.group(1)).strip()     # a title, not markdown
    return fallback


def _split_at_headings(cell) -> list:
    """A markdown cell cut before every ``#``/``##``/``###`` heading line outside a code fence
    (code cells unchanged)."""
    import nbformat
    if cell.cell_type != "markdown":
        return [cell]
    pieces, cur, fence = [], [], False
    for line in cell.source.splitlines(keepends=True):
        if line.lstrip().startswith("```"):
            fence = not fence
        if not fence and re.match(r"#{1,3}\s", line) and "".join(cur).strip():
            pieces.append("".join(cur))
            cur = []
        cur.append(line)
    pieces = [p for p in pieces + ["".join(cur)] if p.strip()]
    if len(pieces) <= 1:
        return [cell]
    out = []
    for p in pieces:
        c = nbformat.v4.new_markdown_cell(p.rstrip("\n"), metadata=dict(cell.metadata))
        if "attachments" in cell:
            c["attachments"] = cell["attachments"]
        out.append(c)
    return out


def slide_notebook(nb):
    """A copy of learner notebook ``nb`` with reveal.js slide metadata: a heading of level 1–2
    starts a slide, level 3 a sub-slide, every other cell continues the current one. A markdown
    cell with a heading after its first line is cut there first, so every ``## `` section is a
    slide of its own."""
    nb = builds.strip_solutions(nb)
    nb.cells = [piece for c in nb.cells for piece in _split_at_headings(c)]
    for c in nb.cells:
        first = c.source.lstrip().splitlines()[0] if c.source.strip() else ""
        kind = "-"
        if c.cell_type == "markdown" and re.match(r"#{1,2}\s", first):
            kind = "slide"
        elif c.cell_type == "markdown" and re.match(r"###\s", first):
            kind = "subslide"
        c.metadata["slideshow"] = {"slide_type": kind}
    return nb


def checkpoints(path: Path | None = None) -> dict[str, tuple[str, str]]:
    """block number (``"03"``) → (question, answer and why) from the table of
    docs/teaching/checkpoints.md; empty where that page is not there (an installed package)."""
    path = Path(path) if path is not None else ROOT / "docs" / "teaching" / "checkpoints.md"
    out = {}
    for line in path.read_text().splitlines() if path.is_file() else []:
        cols = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        m = re.match(r"(\d\d)\s", cols[0]) if len(cols) == 4 else None
        if m:
            out[m.group(1)] = (cols[1], f"**Answer:** {cols[2]}\n\n{cols[3]}")
    return out


def with_checkpoint(nb, chapter: str, table: dict[str, tuple[str, str]] | None = None):
    """``nb`` (a slide notebook) with a last slide holding chapter ``chapter``'s checkpoint
    question and, as a reveal.js speaker note (``<aside class="notes">``, the "S" key), its
    answer. Unchanged when the chapter has none."""
    import nbformat
    table = checkpoints() if table is None else table
    if chapter not in table:
        return nb
    question, answer = table[chapter]
    nb.cells.append(nbformat.v4.new_markdown_cell(
        f"## Checkpoint\n\n{question}\n\n*Three minutes: on paper"
        + (", or with `exercises.check` as named.*" if "`ch" in question else ".*"),
        metadata={"slideshow": {"slide_type": "slide"}}))
    nb.cells.append(nbformat.v4.new_markdown_cell(answer, metadata={"slideshow": {"slide_type": "notes"}}))
    return nb


#: Environment variable naming a local reveal.js 4 (a folder or URL with ``dist/`` and ``plugin/``).
REVEAL_ENV = "ASYNCTC_REVEAL"


def reveal_prefix(given: str | None = None) -> tuple[str | None, str]:
    """(the ``reveal_url_prefix`` to use, or None for nbconvert's CDN default; a note saying which).
    A local folder must hold ``dist/reveal.js``; the decks then refer to it by a ``file://`` URL."""
    import os
    where = given or os.environ.get(REVEAL_ENV)
    if not where:
        return None, ("reveal.js comes from the CDN (unpkg), require.js, jQuery and MathJax from "
                      "cdnjs: the decks need the network. For a room without it: --offline (see "
                      "docs/teaching/README.md, \"Slides offline\")")
    if re.match(r"\w+://", where):
        return where.rstrip("/"), f"reveal.js from {where}"
    d = Path(where).expanduser().resolve()
    if not (d / "dist" / "reveal.js").is_file():
        raise FileNotFoundError(f"--reveal {where}: no dist/reveal.js there (a reveal.js 4 copy is needed)")
    return d.as_uri(), f"reveal.js from {d}"


#: What ``--offline`` needs: (name, the pip package that ships it, its path inside that package).
OFFLINE_FILES = [
    ("reveal.js", "sphinx-revealjs", "sphinx_revealjs/_static/revealjs"),
    ("require.js", "nbclassic", "nbclassic/static/components/requirejs/require.js"),
    ("jQuery", "nbclassic", "nbclassic/static/components/jquery/jquery.min.js"),
    ("MathJax", "nbclassic", "nbclassic/static/components/MathJax/MathJax.js"),
]
#: The install line that brings them, into a folder of their own (nothing is imported from them).
OFFLINE_INSTALL = "python -m pip install --no-deps --target build/slide-assets sphinx-revealjs nbclassic"


#: Where :data:`OFFLINE_INSTALL` puts them; ``--offline`` looks here first.
OFFLINE_DIR = ROOT / "build" / "slide-assets"


def offline_assets(folder: str | None = None) -> dict[str, Path]:
    """The local files ``--offline`` points the decks at: name → path, looked up under ``folder``
    (where ``pip install --target`` put the two packages), else under :data:`OFFLINE_DIR`, else
    in the installed ``sphinx_revealjs`` and ``nbclassic`` packages (found, never imported).
    Raises FileNotFoundError naming what is missing and :data:`OFFLINE_INSTALL`."""
    import importlib.util
    out, missing = {}, []
    for name, package, rel in OFFLINE_FILES:
        top = rel.split("/", 1)[0]
        roots = [Path(folder).expanduser().resolve()] if folder else [OFFLINE_DIR]
        if not folder:
            spec = importlib.util.find_spec(top)
            if spec is not None and spec.submodule_search_locations:
                roots.append(Path(list(spec.submodule_search_locations)[0]).parent)
        found = [r / rel for r in roots if (r / rel / "dist" / "reveal.js" if name == "reveal.js"
                                            else r / rel).is_file()]
        if found:
            out[name] = found[0]
        else:
            missing.append(f"{name} (pip package {package})")
    if missing:
        raise FileNotFoundError(f"--offline: not found under {folder or OFFLINE_DIR} nor installed: "
                                f"{', '.join(missing)}; once, with the network: {OFFLINE_INSTALL}")
    return out


def _url(target: Path, out: Path) -> str:
    """``target`` as a link from a page in ``out``: a relative path (the build folder and the assets
    can move together), else a file:// URL."""
    import os
    from urllib.parse import quote
    try:
        return quote(Path(os.path.relpath(target, out.resolve())).as_posix())
    except ValueError:                    # another drive (Windows)
        return target.as_uri()


def _selected(chapters=None, every: bool = False) -> list[Path]:
    """The notebooks ``slides`` builds: those named (``03`` is core lesson 03, ``03b`` its deep
    dive), else every core lesson, or with ``every`` every notebook."""
    nbs = sorted(builds.notebooks_dir().glob("[0-9][0-9]*_*.ipynb"))
    if chapters:
        return [p for p in nbs if p.name.split("_", 1)[0] in chapters]
    return nbs if every else [p for p in nbs if is_core(p)]


def build_slides(out: Path, chapters=None, reveal: str | None = None, offline: str | None = None,
                 every: bool = False) -> list[Path]:
    """One deck per notebook of :func:`_selected` into ``out``; ``offline`` (a folder, or "":
    :data:`OFFLINE_DIR`, else the installed packages): every script from :func:`offline_assets`,
    none from a CDN."""
    import nbformat
    from nbconvert import SlidesExporter
    out.mkdir(parents=True, exist_ok=True)
    prefix, _ = reveal_prefix(reveal)
    urls = {}
    if offline is not None:
        assets = offline_assets(offline or None)
        urls = {"require_js_url": _url(assets["require.js"], out), "jquery_url": _url(assets["jQuery"], out),
                "mathjax_url": _url(assets["MathJax"], out) + "?config=TeX-AMS-MML_HTMLorMML-full,Safe",
                # the course draws no mermaid diagrams: an empty module instead of the CDN's
                "mermaid_js_url": "data:text/javascript,export default {initialize() {}}"}
        prefix = prefix or _url(assets["reveal.js"], out)
    table = checkpoints()
    written = []
    for p in _selected(chapters, every):
        exporter = SlidesExporter(reveal_scroll=True, **urls)
        if prefix:
            exporter.reveal_url_prefix = prefix
        nb = slide_notebook(nbformat.read(p, as_version=4))
        if is_core(p):
            nb = with_checkpoint(nb, p.name[:2], table)
        body, _ = exporter.from_notebook_node(nb)
        target = out / f"{p.stem}.slides.html"
        target.write_text(body)
        written.append(target)
    return written


_ATTR = re.compile(r'\b(href|src)="([^"]*)"')
_EXTERNAL = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//|/|#)")


def rewrite_links(body: str, *, pages, source_dir: Path, out_dir: Path, glossary: bool = True) -> str:
    """The relative ``href``/``src`` links of an exported page (written into ``out_dir``, made from
    a notebook or document in ``source_dir``) rewritten to work from ``out_dir``:

    * ``…glossary.md#x`` → ``glossary.html#x`` (a page beside the others; ``glossary=False``: no
      such page, the link is resolved like any other);
    * ``NN_name.ipynb#x`` of ``source_dir`` → ``NN_name.html#x`` when ``NN_name`` is in ``pages``
      (the stems of the pages written beside this one), else a link to that notebook itself;
    * any other relative link → the same file, resolved against ``source_dir``, as a path
      relative to ``out_dir``.

    Anchors (``#x``), absolute paths and URLs (``https:``, ``data:``, ``mailto:`` …) are left alone.
    The one rewriting of the site (``python -m asynctc site``) and of the course run's HTML."""
    import os
    from urllib.parse import quote, unquote
    source_dir, out_dir = Path(source_dir).resolve(), Path(out_dir).resolve()
    pages = set(pages)

    def sub(m):
        attr, value = m.group(1), html.unescape(m.group(2))
        if not value or _EXTERNAL.match(value):
            return m.group(0)
        path, hash_, frag = value.partition("#")
        path = unquote(path.split("?")[0])
        if not path:
            return m.group(0)
        name = Path(path).name
        target = (source_dir / path).resolve()
        if glossary and name == "glossary.md":
            new = "glossary.html"
        elif name.endswith(".ipynb") and target.parent == source_dir and target.stem in pages:
            new = f"{target.stem}.html"
        else:
            try:
                new = quote(Path(os.path.relpath(target, out_dir)).as_posix())
            except ValueError:            # another drive (Windows): no relative path exists
                new = target.as_uri()
        return f'{attr}="{html.escape(new + hash_ + frag)}"'
    return _ATTR.sub(sub, body)


def _nav(pages: list[tuple[str, str]], i: int | None) -> str:
    """Contents · previous · next (in file order, deep dives included) · the next core lesson
    (when it is not already "next") · glossary."""
    links = ['<a href="index.html">Contents</a>']
    if i is not None and i > 0:
        links.append(f'<a rel="prev" href="{pages[i - 1][0]}">← {html.escape(pages[i - 1][1])}</a>')
    if i is not None and i + 1 < len(pages):
        links.append(f'<a rel="next" href="{pages[i + 1][0]}">{html.escape(pages[i + 1][1])} →</a>')
        core = next((f for f, _ in pages[i + 1:] if is_core(Path(f))), None)
        if core and core != pages[i + 1][0]:
            links.append(f'<a href="{core}">next core lesson: {html.escape(core.split("_")[0])} →</a>')
    links.append('<a href="glossary.html">Glossary</a>')
    return ('<nav class="asynctc-nav" style="padding:.5em 1em;border-bottom:1px solid #ccc;'
            'font-family:sans-serif;display:flex;flex-wrap:wrap;gap:1.5em">' + "".join(links) + "</nav>")


def _with_nav(body: str, nav: str) -> str:
    """The bar after ``<body>`` and again before ``</body>`` (a reader at the end of a page)."""
    body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + nav, body, count=1)
    return re.sub(r"(</body>)", lambda m: nav + m.group(1), body, count=1)


def glossary_notebook():
    """docs/glossary.md as a one-cell notebook, with an explicit anchor before every term (the
    same anchors GitHub gives its headings, which the notebooks link to); a term's own anchor in
    the file (there for JupyterLab) gives way to it, so each id appears once."""
    import nbformat
    text = (ROOT / "docs" / "glossary.md").read_text()

    def anchor(m):
        term = m.group(1)
        slug = re.sub(r"[^\w\- ]", "", term.lower()).replace(" ", "-")
        return f'<a id="{slug}"></a>\n\n## {term}'
    nb = nbformat.v4.new_notebook()
    text = re.sub(r'^(?:<a id="[^"]*"></a>\n\n)?## (.+)$', anchor, text, flags=re.M)
    nb.cells = [nbformat.v4.new_markdown_cell(text)]
    return nb


def glossary_page(out: Path, pages=(), nav: str | None = None) -> Path:
    """Write ``out/glossary.html`` (docs/glossary.md, :func:`glossary_notebook`), its links
    rewritten by :func:`rewrite_links`; ``nav``: a navigation bar put after ``<body>``."""
    from nbconvert import HTMLExporter
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(glossary_notebook())
    body = rewrite_links(body, pages=pages, source_dir=ROOT / "docs", out_dir=out)
    target = out / "glossary.html"
    target.write_text(_with_nav(body, nav) if nav else body)
    return target


def page_html(nb) -> str:
    """nbconvert's HTML of notebook ``nb`` for the site (the lab template, figures embedded), without
    the code of the cells tagged ``builds.CHECK_TAG`` (nbconvert's ``TagRemovePreprocessor``,
    ``remove_input_tags``): their guards keep the text true for the record; their outputs stay."""
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor
    exporter = HTMLExporter(template_name="lab")
    exporter.register_preprocessor(TagRemovePreprocessor(remove_input_tags={builds.CHECK_TAG}), enabled=True)
    body, _ = exporter.from_notebook_node(nb)
    return body


def build_site(out: Path) -> list[Path]:
    """Write the site into ``out``: ``index.html``, one page per chapter, ``glossary.html``."""
    import nbformat
    out.mkdir(parents=True, exist_ok=True)
    nbs = [(p, _reveal_answers(builds.strip_solutions(nbformat.read(p, as_version=4)), p.stem))
           for p in _notebooks()]
    pages = [(f"{p.stem}.html", _title(nb, p.stem)) for p, nb in nbs]
    stems = [p.stem for p, _ in nbs]
    written = []
    for i, (p, nb) in enumerate(nbs):
        body = page_html(nb)
        target = out / pages[i][0]
        body = rewrite_links(body, pages=stems, source_dir=builds.notebooks_dir(), out_dir=out)
        target.write_text(_with_nav(body, _nav(pages, i)))
        written.append(target)
    glossary_page(out, stems, _nav(pages, None))
    items = "\n".join(f'<li><a href="{f}">{html.escape(t)}</a></li>' if is_core(Path(f)) else
                      f'<li style="margin-left:1.5em">deep dive: <a href="{f}">'
                      f'{html.escape(t)}</a></li>' for f, t in pages)
    (out / "index.html").write_text(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>asynctc — the course</title></head>"
        f"<body>{_nav(pages, None)}<main style=\"font-family:sans-serif;max-width:50em;margin:2em auto\">"
        "<h1>asynctc — asynchronous Tensor Core programming</h1>"
        "<p>The executed learner notebooks (replay mode: measured figures come from the committed "
        "records, labelled with the GPU and date). Exercises are to be done in Jupyter; worked "
        f"solutions are not part of this site.</p><ul style=\"list-style:none;padding-left:0\">\n{items}\n</ul>"
        '<p><a href="glossary.html">Glossary</a> of the course\'s terms.</p></main></body></html>\n')
    return [out / "index.html", *written, out / "glossary.html"]


class CoursePages:
    """The HTML of a course run (``python -m asynctc course``): one page beside each executed
    notebook, and ``glossary.html``, every relative link rewritten by :func:`rewrite_links` (the
    site's rewriting). ``planned``: the stems the run will write; a page links to another chapter's
    page when that page is written in this run, else to the notebook itself. :meth:`add` writes a
    page at once (linking to the planned pages); :meth:`finish` (also after an interrupted run)
    relinks the pages written if fewer than planned were, and writes the glossary page."""

    def __init__(self, out: Path, planned, source_dir: Path | None = None):
        self.out, self.planned = Path(out), list(planned)
        self.source_dir = Path(source_dir) if source_dir is not None else builds.notebooks_dir()
        self.glossary = (ROOT / "docs" / "glossary.md").is_file()
        self._bodies: dict[str, str] = {}

    def _write(self, stem: str, pages) -> Path:
        target = self.out / f"{stem}.html"
        target.write_text(rewrite_links(self._bodies[stem], pages=pages, source_dir=self.source_dir,
                                        out_dir=self.out, glossary=self.glossary))
        return target

    def add(self, stem: str, body: str) -> Path:
        """Write ``out/STEM.html`` from ``body``, nbconvert's HTML of the executed notebook."""
        self._bodies[stem] = body
        return self._write(stem, self.planned)

    def finish(self) -> list[Path]:
        """The pages written (relinked if not every planned one was), then ``glossary.html``."""
        written = list(self._bodies)
        if set(written) != set(self.planned):
            paths = [self._write(stem, written) for stem in written]
        else:
            paths = [self.out / f"{stem}.html" for stem in written]
        if self.glossary and written:
            paths.append(glossary_page(self.out, written))
        return paths


def cmd_slides(args) -> int:
    import sys
    out = Path(args.out)
    try:
        _, note = reveal_prefix(args.reveal)
        unknown = [c for c in args.chapters if not _selected([c])]
        if unknown:
            raise FileNotFoundError(f"no notebook {', '.join(unknown)} (give 03 for core lesson 03, 03b for its deep dive)")
        offline = (args.assets or "") if args.offline else None
        if offline is not None:
            assets = offline_assets(offline or None)
            note = ("offline: every script from local files (reveal.js from "
                    f"{args.reveal or assets['reveal.js']}; require.js, jQuery, MathJax from "
                    f"{assets['require.js'].parents[2]}); keep {out} and those files where they are, "
                    "or move them together")
        written = build_slides(out, args.chapters, args.reveal, offline, args.all)
    except FileNotFoundError as e:
        print(f"slides: {e}", file=sys.stderr)
        return 2
    for p in written:
        print(f"wrote {p}")
    print(f"note: {note}")
    return 0


def cmd_site(args) -> int:
    out = Path(args.out)
    pages = build_site(out)
    print(f"wrote {len(pages)} pages to {out}/ (open {out / 'index.html'})")
    return 0


COMMANDS = {"slides": cmd_slides, "site": cmd_site}


def add_commands(sub) -> None:
    s = sub.add_parser("slides", help="reveal.js slides of the learner notebooks (nbconvert)")
    s.add_argument("chapters", nargs="*", metavar="NN",
                   help="notebooks by number: 03 is core lesson 03, 03b its deep dive (default: every core lesson)")
    s.add_argument("--all", action="store_true", help="every notebook, deep dives included")
    s.add_argument("--out", default=str(ROOT / "build" / "slides"))
    s.add_argument("--reveal", default=None, metavar="PREFIX",
                   help=f"a local reveal.js 4 or 5 (folder or URL with dist/ and plugin/; also ${REVEAL_ENV}); "
                        "default: the CDN, or with --offline the sphinx-revealjs package's copy")
    s.add_argument("--offline", action="store_true",
                   help="load every script from local files, none from a CDN: from --assets, else "
                        f"build/slide-assets (`{OFFLINE_INSTALL}` fills it), else those packages as installed")
    s.add_argument("--assets", default=None, metavar="DIR",
                   help="with --offline: where `pip install --target DIR` put sphinx-revealjs and nbclassic")
    w = sub.add_parser("site", help="the executed learner notebooks as one static site (nbconvert)")
    w.add_argument("--out", default=str(ROOT / "build" / "site"))
