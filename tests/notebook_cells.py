"""Find a notebook cell by what it says, for tests that run a visible cell on a record.

Cells move between a core lesson and its deep dive, so a test names a cell by a substring of its
text (``marker``), never by file or index: :func:`cell` looks in every ``notebooks/src/*.py``
(jupytext percent format) and fails clearly unless exactly one cell contains the marker. A
``# %% check`` cell counts as part of the cell before it."""

import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "notebooks" / "src"


def _cells(text: str) -> list[str]:
    """The cells of a percent-format source; a ``# %% check`` cell (the collapsed guards of the
    cell before it) is joined to that cell, so a test runs a printing cell with its guards."""
    parts = re.split(r"(?m)^(# %%.*)$", text)
    cells = [parts[0]]
    for header, body in zip(parts[1::2], parts[2::2]):
        if re.fullmatch(r"# %% check(, output varies|, output answers a prediction)?\s*", header) and cells:
            cells[-1] += body
        else:
            cells.append(body)
    return cells


def cell(marker: str) -> str:
    """The text of the one cell in ``notebooks/src/*.py`` containing ``marker``. Raises
    :class:`LookupError` naming the marker when no cell or more than one contains it."""
    hits = [(p.name, c) for p in sorted(SRC.glob("*.py"))
            for c in _cells(p.read_text()) if marker in c]
    if len(hits) != 1:
        where = ", ".join(name for name, _ in hits) or "no notebook source"
        raise LookupError(f"marker {marker!r}: {len(hits)} cells contain it ({where}); "
                          "a test needs exactly one")
    return hits[0][1]


def run(marker: str, namespace: dict) -> dict:
    """Run :func:`cell` (``marker``) in ``namespace`` (updated in place, and returned)."""
    exec(compile(cell(marker), f"cell {marker!r}", "exec"), namespace)  # noqa: S102
    return namespace
