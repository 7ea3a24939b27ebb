"""The glossary (issue 22 §5): every term of docs/glossary.md is defined (in **bold** or *italics*)
or linked to the glossary in the markdown cell of its first use in the notebook sequence, and every
glossary link in a notebook points at a term that exists."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "docs" / "glossary.md"


def terms() -> list[str]:
    return re.findall(r"^## (.+)$", GLOSSARY.read_text(), re.M)


def anchor(term: str) -> str:
    """GitHub's heading anchor (lower case, spaces → '-', punctuation dropped)."""
    return re.sub(r"[^\w\- ]", "", term.lower()).replace(" ", "-")


def pattern(term: str) -> re.Pattern:
    """Word match; case-sensitive for acronyms (TMA, LBO, TMEM, CTA …)."""
    flags = 0 if term.split()[0].isupper() else re.I
    return re.compile(rf"(?<![\w.-]){re.escape(term)}(?![\w-]*major)(?!\w*[-_]\w)", flags)


def markdown_cells():
    """(source name, cell index, text) of every markdown cell, in course order."""
    import jupytext
    for src in sorted((ROOT / "notebooks" / "src").glob("[0-9][0-9]*.py")):
        nb = jupytext.read(src, fmt="py:percent")
        for i, c in enumerate(nb.cells):
            if c.cell_type == "markdown":
                yield src.name, i, c.source


def defined_or_linked(term: str, text: str) -> bool:
    rx = pattern(term)
    for m in re.finditer(r"\[([^\]]+)\]\(([^)]*glossary[^)]*)\)", text):
        if rx.search(m.group(1)):
            return True
    for m in re.finditer(r"(\*\*|\*)(?!\s)(.+?)(?<!\s)\1", text, re.S):
        if rx.search(m.group(2)):
            return True
    return False


def test_glossary_lists_the_course_terms():
    have = set(terms())
    for t in ("warpgroup", "wgmma", "TMA", "tensor map", "box", "mbarrier", "expect_tx", "phase parity",
              "swizzle", "LBO", "SBO", "K-major", "MN-major", "stage", "producer", "consumer", "cluster",
              "multicast", "distributed shared memory", "TMEM", "CTA pair", "PTX", "SASS", "cubin",
              "fragment", "ldmatrix", "elected thread", "in-kernel", "in flight", "probed after the sample",
              "stmatrix", "sector", "named barrier"):
        assert t in have, t


def first_uses() -> dict[str, tuple[str, int, str]]:
    out = {}
    cells = list(markdown_cells())
    for t in terms():
        rx = pattern(t)
        for name, i, text in cells:
            if rx.search(text):
                out[t] = (name, i, text)
                break
    return out


@pytest.mark.parametrize("term", terms())
def test_term_is_defined_or_linked_at_first_use(term):
    use = first_uses().get(term)
    if use is None:
        pytest.skip(f"{term!r} is not used in any notebook")
    name, i, text = use
    assert defined_or_linked(term, text), (
        f"{term!r} is first used in {name}, markdown cell {i}, without a definition (**{term}** …) or "
        f"a link [{term}](../docs/glossary.md#{anchor(term)}): {text[:300]!r}")


def test_glossary_links_point_at_terms():
    anchors = {anchor(t) for t in terms()}
    for name, i, text in markdown_cells():
        for target in re.findall(r"\]\(([^)]*glossary\.md[^)]*)\)", text):
            assert target.startswith("../docs/glossary.md"), (name, i, target)
            frag = target.partition("#")[2]
            assert not frag or frag in anchors, (name, i, target)


def jupyterlab_id(term: str) -> str:
    """The id JupyterLab 4 gives a Markdown heading (``createHeaderId`` in @jupyterlab/rendermime:
    the text with spaces → '-', case kept); its Markdown viewer scrolls a link's #fragment to it."""
    return term.replace(" ", "-")


def test_every_term_is_reachable_under_its_lower_case_anchor_in_jupyterlab():
    """A notebook's link ../docs/glossary.md#tma opens JupyterLab's Markdown viewer, which looks for
    the fragment as written; ``## TMA`` there is "TMA", so the heading needs an explicit
    ``<a id="tma"></a>`` (JupyterLab's sanitizer keeps ``id``, drops ``name``) on the line before
    it, after a blank line (GitHub and the course site keep their lower-case anchors)."""
    lines = GLOSSARY.read_text().splitlines()
    missing = []
    for i, line in enumerate(lines):
        if line.startswith("## ") and jupyterlab_id(line[3:]) != anchor(line[3:]):
            want = f'<a id="{anchor(line[3:])}"></a>'
            if not (i >= 2 and lines[i - 1] == "" and lines[i - 2] == want):
                missing.append(want + " before " + line)
    assert not missing, f"headings JupyterLab cannot reach under their lower-case anchor: {missing}"


def test_site_glossary_has_each_anchor_once():
    """The site adds GitHub's anchor before every term; the file's own (for JupyterLab) gives way."""
    from asynctc.teaching import publish
    ids = re.findall(r'<a id="([^"]*)"></a>', publish.glossary_notebook().cells[0].source)
    assert sorted(ids) == sorted(anchor(t) for t in terms())


def test_no_n_major():
    """The ISA's names are K-major and MN-major; "N-major" is not one of them (issue 22)."""
    for name, i, text in markdown_cells():
        assert not re.search(r"(?<![M\w-])N-major", text), (name, i)
    import asynctc.suites  # noqa: F401  (registers every exercise)
    from asynctc.core import exercises
    for n in exercises.names():
        assert not re.search(r"(?<![M\w-])N-major", exercises.prompt(n)), n
