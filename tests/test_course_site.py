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


def test_chapter_06_deck_has_one_slide_per_section_and_scrolls(tmp_path, capsys):
    """Chapter 06 puts several ``## `` headings in one markdown cell: each still starts a slide
    (the cell is cut on a copy; the notebook is unchanged), and long slides scroll."""
    pytest.importorskip("nbconvert")
    import nbformat
    from asynctc.__main__ import main
    path = ROOT / "notebooks" / "06_warp_specialization.ipynb"
    before = path.read_bytes()
    assert main(["slides", "06", "--out", str(tmp_path)]) == 0
    assert "note: reveal.js comes from the CDN" in capsys.readouterr().out
    text = (tmp_path / "06_warp_specialization.slides.html").read_text()
    nb = nbformat.read(path, as_version=4)
    sections = _headings(nb, r"##")
    assert len(sections) >= 6 and text.count("<section><section>") == len(_headings(nb))
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


async def _visit(ws_url: str, urls: list[str]) -> dict[str, dict]:
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
        r = await call("Runtime.evaluate", expression=_PROBE, returnByValue=True)
        out[url] = json.loads(r["result"]["value"])
    ws.close()
    return out


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

    profile = tempfile.mkdtemp(dir=tmp_path)
    proc = subprocess.Popen([exe, "--headless=new", "--no-sandbox", "--disable-gpu",
                             "--disable-dev-shm-usage", "--no-first-run",
                             f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
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
        got = asyncio.run(_visit(page["webSocketDebuggerUrl"], [(site / p).as_uri() for p in pages]))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()

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
            assert target in html_of, f"{p}: link {href!r} points outside the site"
            if frag:
                assert f'id="{frag}"' in html_of[target], f"{p}: link {href!r}: no such anchor"
    index = got[(site / "index.html").as_uri()]
    assert [h for h in index["links"] if h.endswith(".html") and h[:2].isdigit()] == pages[1:-1]


def test_site_folds_the_prediction_answers_in_details():
    """The learner notebook leaves out an output that answers a prediction and says so; the site
    gives it back from the solution notebook, folded in a <details> the reader opens after answering."""
    import nbformat
    from asynctc.teaching import builds, publish
    p = builds.notebooks_dir() / "04_wgmma.ipynb"
    nb = builds.strip_solutions(nbformat.read(p, as_version=4))
    notes = [c for c in nb.cells if "answer-note" in c.metadata.get("tags", [])]
    assert notes and all(c.source == builds.HIDDEN_NOTE for c in notes)
    publish._reveal_answers(nb, p.stem)
    assert all(c.source.startswith("<details><summary>") and "<img" in c.source for c in notes)
