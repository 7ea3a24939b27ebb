"""What a rung of chapter 06's ladder adds, as a diff of two builds of the kernel source.

Every rung from 2 on is one build of ``kernels/warp_specialization.cu``: the same file, other
compile-time values (:data:`~asynctc.warp_specialization.ladder.RUNGS`). :func:`rung_diff` resolves
the file for two rungs' builds (:func:`asynctc.core.hooks.hide` with ``variant=True``: the
switches folded to the build's values, what that build does not compile left out, as chapter 06
§1's listing does) and shows only the lines that differ, with a few lines of context and each
line's number in the file. The builds' values come first, as ``#define`` lines, so that a rung
that only changes a size (rung 4's tile, rung 8's ``GROUP_M``) still shows what it changed.

No GPU and no compiler: the source and the values are exactly what :func:`compile_ws` hands NVRTC
(:func:`~asynctc.warp_specialization.launch.compile_job`), so the diff is the same on every machine.
"""

from __future__ import annotations

import difflib
import re

from ..core import hooks, runtime
from .config import _fail
from .launch import compile_job
from .ladder import RUNG_BY_NAME, RUNGS, Rung


def _rung(name) -> Rung:
    if isinstance(name, Rung):
        return name
    if isinstance(name, int) and not isinstance(name, bool) and 1 <= name <= len(RUNGS):
        return RUNGS[name - 1]
    if isinstance(name, str) and name in RUNG_BY_NAME:
        return RUNG_BY_NAME[name]
    _fail("name", name, "a rung's name or number: " + ", ".join(f"{r.number} {r.name}" for r in RUNGS))


def _job(rung: Rung, dtype: str) -> tuple[str, dict]:
    source, _entry, defines = compile_job(rung.make(dtype))
    return source, defines


def built_from(name, dtype: str = "float16") -> Rung:
    """The rung that rung ``name`` was made from by one change: of the earlier rungs, the one whose
    build differs from it in the fewest compile-time values (the latest of equals; rung 2's is
    rung 1, chapter 05's kernel). Rung 5 (persistent) is made from rung 3, not from rung 4's
    tile sweep."""
    new = _rung(name)
    if new.number == 1:
        _fail("name", name, "rung 1 has no rung before it: give against=")
    file, d = _job(new, dtype)

    def distance(r):
        f, e = _job(r, dtype)
        return (f != file, len({k for k in d.keys() | e.keys() if d.get(k) != e.get(k)}), -r.number)
    return min(RUNGS[:new.number - 1], key=distance)


def build_lines(name, dtype: str = "float16", fold=()) -> tuple[str, list[tuple[int, str]]]:
    """(the kernel file, its lines as rung ``name``'s build shows them): one ``(line number in the
    file, text)`` per line that build keeps, after one ``(0, "#define NAME value")`` per
    compile-time value the build passes (sorted by name). ``name``: a rung's name or number;
    ``fold``: knobs to fold as switches too (:func:`asynctc.core.hooks.hide`)."""
    source, defines = _job(_rung(name), dtype)
    path = runtime.kernel_path(source)
    text = path.read_text()
    shown = hooks.hide(text, path, defines, variant=True, fold=frozenset(fold))
    head = [(0, f"#define {k} {int(v) if isinstance(v, bool) else v}") for k, v in sorted(defines.items())]
    return source, head + [(i + 1, ln.text) for i, ln in enumerate(shown) if ln.text is not None]


def _row(sign: str, number: int, text: str) -> str:
    where = "  -D" if number == 0 else f"{number:4d}"
    return f"{sign}{where}  {text}".rstrip()


class RungDiff(str):
    """The text :func:`rung_diff` returns (a ``str``); shown as itself in a notebook."""

    def _repr_pretty_(self, p, cycle):          # IPython: the lines, not a quoted string
        p.text(str(self))

    def __repr__(self) -> str:
        return str(self)


def rung_diff(name, against=None, *, dtype: str = "float16", context: int = 2,
              limit: int | None = 40, only: str | None = None, headers: bool = True) -> RungDiff:
    """What rung ``name`` (name or number, 2..9) adds to rung ``against`` (default: the rung it was
    made from, :func:`built_from`), as a unified diff of the two builds of the kernel source (:func:`build_lines`): ``-`` lines
    only the earlier build compiles, ``+`` lines only the later one, ``context`` unchanged lines
    around each change; each line starts with its line number in the file (``-D``: a compile-time
    value; a flag that differs, ``PERSISTENT``, is folded like a switch). ``only``: a regular
    expression; only the hunks with a ``-`` or ``+`` line it matches are shown. At most ``limit``
    diff lines (``None``: all), then one line saying how many were left out. ``headers=False``: no
    title line and no ``@@`` line per hunk (hunks parted by ``...``), for a short worklog view.
    Two builds of different files (rung 1 is chapter 05's ``pipeline.cu``) are diffed as two files.
    A rung against itself gives an empty string.

    Raises :class:`~asynctc.warp_specialization.WarpSpecializationError` for an unknown rung, or
    for rung 1 without ``against`` (no rung before it)."""
    new = _rung(name)
    old = built_from(new, dtype) if against is None else _rung(against)
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        _fail("limit", limit, "a positive number of lines, or None for all")
    (_, d_old), (_, d_new) = _job(old, dtype), _job(new, dtype)
    flags = {k for k in d_old.keys() & d_new.keys() if d_old[k] != d_new[k]
             and {d_old[k], d_new[k]} <= {0, 1, False, True}}
    f_old, a = build_lines(old.number, dtype, flags)
    f_new, b = build_lines(new.number, dtype, flags)
    out = []
    matcher = difflib.SequenceMatcher(None, [t for _, t in a], [t for _, t in b], autojunk=False)
    pick = re.compile(only) if only else None
    for group in matcher.get_grouped_opcodes(context):
        if pick and not any(pick.search(t) for tag, i1, i2, j1, j2 in group if tag != "equal"
                            for t in [x for _, x in a[i1:i2]] + [x for _, x in b[j1:j2]]):
            continue
        _, i1, _, j1, _ = group[0]
        first = (b[j1] if j1 < len(b) else a[i1])[0]
        where = "the builds' -D values" if first == 0 else f"from line {first}"
        if headers:
            out.append(f"@@ kernels/{f_new}: {where} @@" if f_old == f_new else
                       f"@@ kernels/{f_old} → kernels/{f_new}: {where} @@")
        elif out:
            out.append("   ...")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [_row(" ", *b[j]) for j in range(j1, j2)]
                continue
            out += [_row("-", *a[i]) for i in range(i1, i2)]
            out += [_row("+", *b[j]) for j in range(j1, j2)]
    if not out:
        return RungDiff("")
    title = f"// rung {new.number} ({new.name}) against rung {old.number} ({old.name}): " \
            f"- only in rung {old.number}, + only in rung {new.number}"
    if limit is not None and len(out) > limit:
        more = len(out) - limit
        out = out[:limit] + [f"// ... {more} more diff lines left out (limit=None shows all)"]
    return RungDiff("\n".join([title] * headers + out))
