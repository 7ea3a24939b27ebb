"""Slides and the course site (issue 22 §4, §8), built from the learner notebooks by one command
each; the site checked in a real headless browser (Debian's chromium, driven over the DevTools
protocol): every chapter page renders, its figures load, its links resolve, no solutions."""
import asyncio
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
SOLUTION_MARKS = ("solution=True", "Solutions (run in CI)", "worked solution")


def test_slides_command_builds_reveal_decks(tmp_path):
    pytest.importorskip("nbconvert")
    import nbformat
    from asynctc.__main__ import main
    from asynctc.teaching import publish
    assert main(["slides", "00", "04", "--out", str(tmp_path)]) == 0
    for stem in ("00_why_async", "04_wgmma"):
        text = (tmp_path / f"{stem}.slides.html").read_text()
        assert "reveal" in text.lower()
        nb = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
        heads = sum(1 for c in nb.cells if c.cell_type == "markdown" and re.match(r"#{1,2}\s", c.source.lstrip()))
        assert text.count('<section') >= heads > 3, (stem, heads)
        assert not any(m in text for m in SOLUTION_MARKS), stem
    assert publish.slide_notebook(nb).cells[0].metadata["slideshow"]["slide_type"] == "slide"


def test_a_core_deck_ends_with_its_checkpoint_and_the_answer_is_a_speaker_note(tmp_path, capsys):
    """Chapter 03's deck (and only 03's: `slides 03` is the core lesson, `03b` its deep dive) ends
    with checkpoints.md's question for block 03; the answer is in <aside class="notes">, shown in
    reveal.js's speaker view only."""
    pytest.importorskip("nbconvert")
    from asynctc.__main__ import main
    from asynctc.teaching import publish
    table = publish.checkpoints()
    assert sorted(table) == [f"{n:02d}" for n in range(11)]
    assert main(["slides", "03", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["03_tma_mbarrier.slides.html"]
    text = (tmp_path / "03_tma_mbarrier.slides.html").read_text()
    last = text[text.rindex("<section"):]
    assert "Checkpoint" in last and "ch03.bank_128B" in last
    notes = last[last.index('<aside class="notes">'):]
    assert "Answer:" in notes and "28" in notes
    assert "Answer:" not in last[:last.index('<aside class="notes">')]     # not on the slide itself
    assert main(["slides", "03b", "--out", str(tmp_path / "b")]) == 0
    deep = (tmp_path / "b" / "03b_tma_boxes.slides.html").read_text()
    assert "Checkpoint" not in deep[deep.rindex("<section"):]


def test_slides_build_the_core_lessons_unless_asked(tmp_path):
    from asynctc.teaching import publish
    core = [p.name for p in publish._selected()]
    assert core and all(p.split("_")[0].isdigit() for p in core)
    every = [p.name for p in publish._selected(every=True)]
    assert set(core) < set(every) and "03b_tma_boxes.ipynb" in every
    assert [p.name for p in publish._selected(["03", "03b"])] == ["03_tma_mbarrier.ipynb", "03b_tma_boxes.ipynb"]
    from asynctc.__main__ import main
    assert main(["slides", "3", "--out", str(tmp_path)]) == 2 and not any(tmp_path.iterdir())


def _fake_assets(root: Path) -> Path:
    for _, _, rel in publish_offline_files():
        f = root / rel / "dist" / "reveal.js" if rel.endswith("revealjs") else root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("")
    return root


def publish_offline_files():
    from asynctc.teaching import publish
    return publish.OFFLINE_FILES


def test_offline_decks_load_nothing_from_the_network(tmp_path, capsys):
    """--offline: reveal.js, require.js, jQuery and MathJax from the local copies (relative links,
    so the build folder and the assets move together); no script or style sheet from a CDN."""
    pytest.importorskip("nbconvert")
    from asynctc.__main__ import main
    out = tmp_path / "build" / "slides"
    assert main(["slides", "05", "--out", str(out), "--offline", "--assets", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert "reveal.js (pip package sphinx-revealjs)" in err and "pip install --no-deps --target" in err
    assets = _fake_assets(tmp_path / "assets")
    assert main(["slides", "05", "--out", str(out), "--offline", "--assets", str(assets)]) == 0
    assert "note: offline" in capsys.readouterr().out
    text = (out / "05_pipelines.slides.html").read_text()
    loaded = re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]+)"', text)
    loaded += re.findall(r'^\s*"([^"]+\.js)",?$', text, re.M)                   # require([...]) of reveal.js
    assert loaded and not [u for u in loaded if re.match(r"(https?:)?//", u)], loaded
    assert "../../assets/nbclassic/static/components/requirejs/require.js" in loaded
    assert "../../assets/sphinx_revealjs/_static/revealjs/dist/reveal.js" in loaded
    assert "import mermaid from 'data:" in text                             # no CDN module either


@pytest.mark.slow
def test_offline_deck_runs_in_a_headless_browser_without_network(tmp_path):
    """With the real files (``pip install --no-deps --target build/slide-assets sphinx-revealjs
    nbclassic``) a deck starts reveal.js with every host name unresolvable, and its last slide
    is the checkpoint."""
    pytest.importorskip("nbconvert")
    pytest.importorskip("tornado")
    from asynctc.teaching import publish
    exe = _chromium()
    if exe is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium)")
    try:
        publish.offline_assets()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    out = tmp_path / "slides"
    (deck,) = publish.build_slides(out, ["03"], offline="")
    probe = r"""new Promise(done => { let n = 0; const t = setInterval(() => {
      const ready = !!document.querySelector('.reveal.ready');
      if (ready || ++n > 100) { clearInterval(t); const s = document.querySelectorAll('.slides > section');
        done(JSON.stringify({ready, slides: s.length, last: s[s.length - 1].innerText,
                             notes: document.querySelectorAll('aside.notes').length})); } }, 100); })"""
    r = _in_chromium(exe, tmp_path, [deck.as_uri()], probe=probe, offline=True)[deck.as_uri()]
    assert r["ready"] and r["slides"] > 5 and "Checkpoint" in r["last"] and r["notes"] >= 1, r


def _headings(nb, level=r"#{1,2}"):
    """Heading lines of the markdown cells (outside code fences), at any line of a cell."""
    out, fence = [], False
    for c in nb.cells:
        if c.cell_type != "markdown":
            continue
        for line in c.source.splitlines():
            if line.lstrip().startswith("```"):
                fence = not fence
            elif not fence and re.match(level + r"\s", line):
                out.append(line)
    return out


def test_a_deck_has_one_slide_per_section_and_scrolls(tmp_path, capsys):
    """Chapter 08 puts two ``## `` headings in one markdown cell: each still starts a slide
    (the cell is cut on a copy; the notebook is unchanged), and long slides scroll."""
    pytest.importorskip("nbconvert")
    import nbformat
    from asynctc.__main__ import main
    path = ROOT / "notebooks" / "08_pitfalls.ipynb"
    before = path.read_bytes()
    assert main(["slides", "08", "--out", str(tmp_path)]) == 0
    assert "note: reveal.js comes from the CDN" in capsys.readouterr().out
    text = (tmp_path / "08_pitfalls.slides.html").read_text()
    nb = nbformat.read(path, as_version=4)
    sections = _headings(nb, r"##")
    shared = [c for c in nb.cells if c.cell_type == "markdown" and len(re.findall(r"^## ", c.source, re.M)) > 1]
    assert shared, "chapter 08 no longer has a cell with two sections: pick another notebook for this test"
    assert len(sections) >= 5 and text.count("<section><section>") == len(_headings(nb)) + 1   # + the checkpoint
    assert all(re.sub(r"^#+\s*", "", h).split("`")[0].strip()[:12] in text for h in sections)
    assert re.search(r"scroll['\"]?\s*:\s*true|overflow-y', 'scroll'", text)
    assert path.read_bytes() == before


def test_slides_reveal_prefix_refuses_a_folder_without_reveal(tmp_path, capsys):
    from asynctc.__main__ import main
    from asynctc.teaching import publish
    assert main(["slides", "06", "--out", str(tmp_path), "--reveal", str(tmp_path)]) == 2
    assert "no dist/reveal.js" in capsys.readouterr().err
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "reveal.js").write_text("")
    prefix, note = publish.reveal_prefix(str(tmp_path))
    assert prefix == tmp_path.resolve().as_uri() and str(tmp_path.resolve()) in note


def test_rewrite_links_is_the_one_rewriting_of_site_and_course(tmp_path):
    """Glossary and written chapters → the pages beside; a chapter not written → its notebook; any
    other relative link → the file it names, from the output folder; URLs and anchors unchanged."""
    from asynctc.teaching import publish
    src, out = ROOT / "notebooks", tmp_path / "build" / "course"
    out.mkdir(parents=True)
    body = ('<a href="../docs/glossary.md#tma">g</a> <a href="00b_clock_kinds.ipynb#x">a</a> '
            '<a href="01_synchronous.ipynb">b</a> <a href="../docs/glossary.md">c</a> '
            '<a href="src/00_why_async.py">d</a> <a href="#here">e</a> <a href="https://x.org/a.md">f</a> '
            '<img src="data:image/png;base64,AA"> <a href="/abs/path">h</a>')
    got = publish.rewrite_links(body, pages={"00b_clock_kinds"}, source_dir=src, out_dir=out)
    import os
    rel = lambda p: os.path.relpath(p, out)
    assert got == ('<a href="glossary.html#tma">g</a> <a href="00b_clock_kinds.html#x">a</a> '
                   f'<a href="{rel(src / "01_synchronous.ipynb")}">b</a> <a href="glossary.html">c</a> '
                   f'<a href="{rel(src / "src" / "00_why_async.py")}">d</a> <a href="#here">e</a> '
                   '<a href="https://x.org/a.md">f</a> <img src="data:image/png;base64,AA"> '
                   '<a href="/abs/path">h</a>')
    no_glossary = publish.rewrite_links(body, pages=(), source_dir=src, out_dir=out, glossary=False)
    assert f'href="{rel(ROOT / "docs" / "glossary.md")}#tma"' in no_glossary
    import inspect
    for caller in (publish.build_site, publish.glossary_page, publish.CoursePages._write):
        assert "rewrite_links(" in inspect.getsource(caller)


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


_PROBE = r"""(() => {
  const imgs = [...document.images].map(i => ({ok: i.complete && i.naturalWidth > 0,
                                               src: i.src.slice(0, 40)}));
  const links = [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'));
  return JSON.stringify({title: document.title, h1: document.querySelectorAll('h1').length,
    cells: document.querySelectorAll('.jp-Cell').length, text: document.body.innerText.length,
    imgs, links, nav: !!document.querySelector('nav.asynctc-nav'),
    body: document.body.innerText});
})()"""


async def _visit(ws_url: str, urls: list[str], probe: str = _PROBE) -> dict[str, dict]:
    from tornado.websocket import websocket_connect
    ws = await websocket_connect(ws_url, max_message_size=256 * 1024 * 1024)
    n = 0

    async def call(method, **params):
        nonlocal n
        n += 1
        my = n
        ws.write_message(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(await asyncio.wait_for(ws.read_message(), 120))
            if msg.get("id") == my:
                return msg.get("result", {})

    async def loaded():
        while True:
            msg = json.loads(await asyncio.wait_for(ws.read_message(), 120))
            if msg.get("method") == "Page.loadEventFired":
                return

    await call("Page.enable")
    out = {}
    for url in urls:
        await call("Page.navigate", url=url)
        await loaded()
        r = await call("Runtime.evaluate", expression=probe, returnByValue=True, awaitPromise=True)
        out[url] = json.loads(r["result"]["value"])
    ws.close()
    return out


def _in_chromium(exe, tmp_path, urls, probe=_PROBE, offline=False):
    """Visit ``urls`` in headless chromium and return each one's probe result; ``offline``: every
    host name fails to resolve, so nothing comes from the network."""
    profile = tempfile.mkdtemp(dir=tmp_path)
    args = [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", f"--user-data-dir={profile}", "--remote-debugging-port=0"]
    if offline:
        args.append("--host-resolver-rules=MAP * ~NOTFOUND")
    proc = subprocess.Popen(args + ["about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        port_file = Path(profile) / "DevToolsActivePort"
        for _ in range(300):
            if port_file.exists() and port_file.read_text().strip():
                break
            import time
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        import urllib.request
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30).read())
        page = next(t for t in targets if t.get("type") == "page")
        return asyncio.run(_visit(page["webSocketDebuggerUrl"], urls, probe))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.slow
def test_course_site_in_a_headless_browser(tmp_path):
    pytest.importorskip("nbconvert")
    pytest.importorskip("tornado")
    exe = _chromium()
    if exe is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium)")
    from asynctc.__main__ import main
    site = tmp_path / "site"
    assert main(["site", "--out", str(site)]) == 0
    pages = ["index.html", *[p.stem + ".html" for p in NOTEBOOKS], "glossary.html"]
    assert sorted(p.name for p in site.glob("*.html")) == sorted(pages)

    got = _in_chromium(exe, tmp_path, [(site / p).as_uri() for p in pages])
    html_of = {p: (site / p).read_text() for p in pages}
    for p in pages:
        r = got[(site / p).as_uri()]
        assert r["nav"], f"{p}: no navigation bar"
        if p != "index.html" and p != "glossary.html":
            deep_dive = p[2:3].isalpha()                  # NNb_*, NNc_*: an investigation beside its chapter
            assert r["h1"] >= 1 and r["cells"] > (3 if deep_dive else 10) and \
                r["text"] > (1000 if deep_dive else 2000), (p, r["cells"], r["h1"], r["text"])
            if not deep_dive:
                assert r["imgs"], f"{p}: no figure"
            bad = [i["src"] for i in r["imgs"] if not i["ok"]]
            assert not bad, f"{p}: figures that did not load: {bad}"
            assert not any(m in r["body"] for m in SOLUTION_MARKS), f"{p} shows a solution"
        for href in r["links"]:
            if re.match(r"^[a-z]+:", href) or href.startswith("//"):
                continue                                  # external links are not part of the site
            target, _, frag = href.partition("#")
            target = target or p
            if target not in html_of:                     # a file of the checkout (docs/NOTES.md …)
                assert (site / target).resolve().is_file(), f"{p}: link {href!r} resolves to nothing"
                continue
            if frag:
                assert f'id="{frag}"' in html_of[target], f"{p}: link {href!r}: no such anchor"
    index = got[(site / "index.html").as_uri()]
    assert [h for h in index["links"] if h.endswith(".html") and h[:2].isdigit()] == pages[1:-1]


def test_site_folds_the_prediction_answers_in_details():
    """The learner notebook leaves out an output that answers a prediction (or shows an exercise's
    answer); the site gives it back from the solution notebook, folded in a <details> under the
    cell, and the note above a prediction's cell says so."""
    import nbformat
    from asynctc.teaching import builds, publish
    p = builds.notebooks_dir() / "04_wgmma.ipynb"     # §8 asks a prediction; its answer is a figure
    nb = builds.strip_solutions(nbformat.read(p, as_version=4))
    notes = [c for c in nb.cells if "answer-note" in c.metadata.get("tags", [])]
    assert notes and all(c.source == builds.HIDDEN_NOTE for c in notes)
    at = lambda c: next(i for i, x in enumerate(nb.cells) if x is c)
    answers = [c for c in nb.cells if c.cell_type == "code" and builds.ANSWER_TAG in c.metadata.get("tags", [])]
    assert all(nb.cells[at(n) + 1].cell_type == "code" for n in notes)     # the note precedes its cell
    publish._reveal_answers(nb, p.stem)
    for c in notes:                                    # the note stays above, the output comes under
        assert "folded under it" in c.source
    for c in answers:
        fold = nb.cells[at(c) + 1]
        assert fold.source.startswith("<details><summary>") and ("<img" in fold.source or "<pre>" in fold.source)
    assert any("<img" in nb.cells[at(c) + 1].source for c in answers)


def test_site_hides_the_code_of_check_cells_and_keeps_their_outputs():
    """A ``check`` cell (``# %% check``: guards only) shows its outputs on the site, not its code;
    other cells keep theirs. Chapter 05's pages show none of its check cells' code."""
    pytest.importorskip("nbconvert")
    import nbformat
    from asynctc.teaching import builds, publish
    nb = nbformat.v4.new_notebook()
    printed = nbformat.v4.new_code_cell("print('ordinary_cell_code')")
    printed.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ordinary_output\n")]
    check = nbformat.v4.new_code_cell("notebook.require(guard_cell_code)")
    check.metadata.update(tags=[builds.CHECK_TAG], jupyter={"source_hidden": True})
    check.outputs = [nbformat.v4.new_output("stream", name="stdout", text="check_output\n")]
    nb.cells = [printed, check]
    body = publish.page_html(nb)
    assert "ordinary_cell_code" in body and "ordinary_output" in body and "check_output" in body
    assert "guard_cell_code" not in body
    assert check.source == "notebook.require(guard_cell_code)"     # the notebook itself is unchanged
    p = builds.notebooks_dir() / "05_pipelines.ipynb"
    ch05 = builds.strip_solutions(nbformat.read(p, as_version=4))
    checks = [c for c in ch05.cells if builds.CHECK_TAG in c.metadata.get("tags", [])]
    assert checks, "chapter 05 has no check cell"
    body = publish.page_html(ch05)
    for text in ("two CTAs per SM become one", "of 227 KiB, S = 4 takes 194"):   # the guards' sentences
        assert any(text in c.source for c in checks), text
        assert text not in body, f"05's page shows the check cell that says {text!r}"
