"""Find a notebook cell by what it says, for tests that run a visible cell on a record.

Cells move between a core lesson and its deep dive, so a test names a cell by a substring of its
text (``marker``), never by file or index: :func:`cell` looks in every ``notebooks/src/*.py``
(jupytext percent format) and fails clearly unless exactly one cell contains the marker."""

import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "notebooks" / "src"


def cell(marker: str) -> str:
    """The text of the one cell in ``notebooks/src/*.py`` containing ``marker``. Raises
    :class:`LookupError` naming the marker when no cell or more than one contains it."""
    hits = [(p.name, c) for p in sorted(SRC.glob("*.py"))
            for c in re.split(r"(?m)^# %%.*$", p.read_text()) if marker in c]
    if len(hits) != 1:
        where = ", ".join(name for name, _ in hits) or "no notebook source"
        raise LookupError(f"marker {marker!r}: {len(hits)} cells contain it ({where}); "
                          "a test needs exactly one")
    return hits[0][1]


def run(marker: str, namespace: dict) -> dict:
    """Run :func:`cell` (``marker``) in ``namespace`` (updated in place, and returned)."""
    exec(compile(cell(marker), f"cell {marker!r}", "exec"), namespace)  # noqa: S102
    return namespace
