"""The course runner (issue 22 §9) with fake Jupyter clients: an execution error fails the
chapter, a kernel-shutdown error after the last cell is retried and reported as such, and an error
file is never empty."""
import nbformat
import os

import pytest

from asynctc.teaching import runner


def _nb(n=3):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# title")] + [
        nbformat.v4.new_code_cell(f"x = {i}") for i in range(n)]
    return nb


class FakeKM:
    def __init__(self, alive=True, fail_times=0):
        self.alive, self.fail_times, self.calls = alive, fail_times, 0

    def is_alive(self):
        return self.alive

    def shutdown_kernel(self, now=False):
        self.calls += 1
        if self.calls <= self.fail_times:
            raise RuntimeError("kernel refused to die")
        self.alive = False


class FakeClient:
    """Runs cells by setting execution counts; ``fail_at`` makes that cell raise, ``shutdown_exc``
    is raised after the last cell (as nbclient's cleanup would), ``die_at`` stops silently."""

    def __init__(self, nb, fail_at=None, shutdown_exc=None, die_at=None, km=None, ename="ValueError"):
        self.nb, self.fail_at, self.shutdown_exc, self.die_at = nb, fail_at, shutdown_exc, die_at
        self.ename = ename
        self.km = km if km is not None else FakeKM()

    def execute(self):
        code = [c for c in self.nb.cells if c.cell_type == "code"]
        for i, c in enumerate(code):
            if i == self.die_at:
                raise self.shutdown_exc or RuntimeError()
            c.execution_count = i + 1
            if i == self.fail_at:
                c.outputs = [nbformat.v4.new_output("error", ename=self.ename, evalue="bad tile",
                                                    traceback=[f"{self.ename}: bad tile"])]
                raise RuntimeError(f"CellExecutionError: {self.ename}: bad tile")
        if self.shutdown_exc is not None:
            raise self.shutdown_exc


def test_clean_run_passes():
    o = runner.run_notebook(_nb(), FakeClient)
    assert o.passed and o.kind is None and o.detail == ""


def test_cell_error_is_an_execution_failure():
    o = runner.run_notebook(_nb(), lambda nb: FakeClient(nb, fail_at=1))
    assert o.status == "FAILED" and o.kind == "execution"
    assert "ValueError: bad tile" in o.message and o.detail.strip()


def test_shutdown_error_after_last_cell_is_retried_and_reported():
    km = FakeKM(fail_times=1)
    o = runner.run_notebook(_nb(), lambda nb: FakeClient(nb, shutdown_exc=TimeoutError(), km=km))
    assert o.passed and o.kind == "shutdown"
    assert "shutdown" in o.message and "TimeoutError" in o.message
    assert "attempt 2" in o.message and km.calls == 2
    assert "TimeoutError" in o.detail and "not an execution error" in o.detail


def test_shutdown_that_keeps_failing_is_still_not_an_execution_error():
    km = FakeKM(fail_times=99)
    o = runner.run_notebook(_nb(), lambda nb: FakeClient(nb, shutdown_exc=RuntimeError("zmq"), km=km))
    assert o.passed and o.kind == "shutdown" and "still failing after 3 attempts" in o.message


def test_kernel_dying_mid_run_is_an_execution_failure_with_text():
    o = runner.run_notebook(_nb(4), lambda nb: FakeClient(nb, die_at=2, shutdown_exc=RuntimeError()))
    assert o.status == "FAILED" and o.kind == "execution"
    assert "after 2 of 4 code cells" in o.message
    assert o.detail.strip() and "RuntimeError" in o.detail      # an exception without text still names itself


@pytest.mark.parametrize("exc", [RuntimeError(), KeyError(), Exception("")])
def test_describe_is_never_empty(exc):
    assert runner.describe(exc).startswith(type(exc).__name__)


def test_course_command_writes_a_non_empty_error_file(tmp_path, monkeypatch, capsys):
    pytest.importorskip("nbconvert")
    import nbclient
    from asynctc.__main__ import main
    # `course` points its kernels' PYTHONPATH (and MPLBACKEND, ASYNCTC_PROGRESS) at this checkout
    # in os.environ: let monkeypatch restore them, or later tests' subprocesses inherit them
    for var in ("PYTHONPATH", "MPLBACKEND", "ASYNCTC_PROGRESS"):
        was = os.environ.get(var)
        monkeypatch.setenv(var, "")                 # records the value to restore (or its absence)
        if was is None:
            monkeypatch.delenv(var)
        else:
            monkeypatch.setenv(var, was)
    monkeypatch.setattr(nbclient, "NotebookClient",
                        lambda nb, **kw: FakeClient(nb, shutdown_exc=RuntimeError()))
    assert main(["course", "--out", str(tmp_path), "00"]) == 0
    err = capsys.readouterr().err
    assert "shutdown error" in err
    text = next(tmp_path.glob("00_*.error.txt")).read_text()
    assert text.strip() and "RuntimeError" in text
    monkeypatch.setattr(nbclient, "NotebookClient", lambda nb, **kw: FakeClient(nb, fail_at=0))
    assert main(["course", "--out", str(tmp_path), "00"]) == 1
    assert "execution error" in capsys.readouterr().err
    assert "ValueError: bad tile" in next(tmp_path.glob("00_*.error.txt")).read_text()


def test_an_interrupt_stops_the_whole_course_run(tmp_path, monkeypatch, capsys):
    """Ctrl-C reaches the kernel too, which raises KeyboardInterrupt in the running cell: the
    course stops there (exit 130) instead of marking that chapter FAILED and going on."""
    import nbclient
    from asynctc.__main__ import main
    _isolate_env(monkeypatch)
    started = []

    def client(nb, **kw):
        started.append(nb)
        return FakeClient(nb, fail_at=0, ename="KeyboardInterrupt")
    monkeypatch.setattr(nbclient, "NotebookClient", client)
    assert main(["course", "--out", str(tmp_path), "00"]) == 130
    out = capsys.readouterr().out
    assert "stopped" in out and len(started) == 1           # 00b never started
    assert not list(tmp_path.glob("*.ipynb"))



def _isolate_env(monkeypatch):
    for var in ("PYTHONPATH", "MPLBACKEND", "ASYNCTC_PROGRESS"):
        was = os.environ.get(var)
        monkeypatch.setenv(var, "")
        if was is None:
            monkeypatch.delenv(var)
        else:
            monkeypatch.setenv(var, was)


def _relative_links(page):
    """(href or src, the file it names) for every relative link of an HTML page (anchors aside)."""
    import html
    import re
    from urllib.parse import unquote
    out = []
    for value in re.findall(r'\b(?:href|src)="([^"]*)"', page.read_text()):
        value = html.unescape(value)
        if not value or re.match(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//|#)", value):
            continue
        out.append((value, (page.parent / unquote(value.partition("#")[0])).resolve()))
    return out


def test_course_html_links_resolve_from_the_output_folder(tmp_path, monkeypatch):
    """The course run's HTML (``course 00 00b``, fake kernels: the committed outputs stay) links to
    the pages written beside it, to a glossary page beside them, and otherwise to the notebooks
    themselves: every relative link names a file that exists, from the output folder."""
    pytest.importorskip("nbconvert")
    import nbclient
    from asynctc.__main__ import main
    _isolate_env(monkeypatch)
    monkeypatch.setattr(nbclient, "NotebookClient", lambda nb, **kw: FakeClient(nb))
    assert main(["course", "--out", str(tmp_path), "00", "00b"]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.html")) == [
        "00_why_async.html", "00b_clock_kinds.html", "glossary.html"]
    glossary = (tmp_path / "glossary.html").read_text()
    for page in ("00_why_async.html", "00b_clock_kinds.html"):
        links = _relative_links(tmp_path / page)
        missing = [href for href, target in links if not target.is_file()]
        assert links and not missing, (page, missing)
        hrefs = [href for href, _ in links]
        assert not any(".md" in h for h in hrefs), (page, hrefs)
        terms = [h.partition("#")[2] for h in hrefs if h.startswith("glossary.html#")]
        assert terms and all(f'id="{t}"' in glossary for t in terms), (page, terms)
    hrefs00 = [h for h, _ in _relative_links(tmp_path / "00_why_async.html")]
    assert "00b_clock_kinds.html" in hrefs00                     # written in this run: its page
    nb01 = [t for h, t in _relative_links(tmp_path / "00_why_async.html") if "01_synchronous" in h]
    assert nb01 and all(t.suffix == ".ipynb" and t.parent.name == "notebooks" for t in nb01)


def test_an_interrupted_course_run_links_only_to_pages_it_wrote(tmp_path, monkeypatch):
    """00 is written, 00b is interrupted: 00's page links to the 00b notebook, not to a page that
    was never written."""
    pytest.importorskip("nbconvert")
    import nbclient
    from asynctc.__main__ import main
    _isolate_env(monkeypatch)
    calls = []

    def client(nb, **kw):
        calls.append(nb)
        return FakeClient(nb) if len(calls) == 1 else FakeClient(nb, fail_at=0, ename="KeyboardInterrupt")
    monkeypatch.setattr(nbclient, "NotebookClient", client)
    assert main(["course", "--out", str(tmp_path), "00", "00b"]) == 130
    assert sorted(p.name for p in tmp_path.glob("*.html")) == ["00_why_async.html", "glossary.html"]
    links = _relative_links(tmp_path / "00_why_async.html")
    assert not [h for h, t in links if not t.is_file()]
    to_00b = [t for h, t in links if "00b_clock_kinds" in h]
    assert to_00b and all(t.suffix == ".ipynb" and t.parent.name == "notebooks" for t in to_00b)
