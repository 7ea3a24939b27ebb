"""Small helpers for the notebooks: show kernel source and SASS, say where numbers come from, and
state comparisons of measured numbers only when the record supports them.

Conventions the chapters follow (``tests/test_notebook_prose.py`` enforces them):

* a sentence that compares measured numbers ("faster", "beats", "0.9 of …") is printed from the
  record by :func:`claim` (raises when the record does not support it) or :func:`verdict` (picks the
  wording the record supports), or its markdown cell is followed by a code cell that asserts it, so
  a re-measurement that flips the conclusion fails loudly instead of leaving a false sentence;
  a chapter helper that does the asserting for a cell (its docstring names the sentences it
  guards) is marked with :func:`guards`, and a cell that calls it counts as that guard;
* every ``show_source`` listing is the last expression of its cell (or wrapped in ``display``), so it
  renders, and shows the lines it is about;
* the first code cell calls :func:`banner`, which also makes figures render inline.

:func:`show_ptx` prints a compiled kernel's PTX lines (a literal ``wgmma.mma_async``), compiled by
NVRTC on the CPU for reading only.
"""

from __future__ import annotations

import os
import re

from . import runtime
from .cexpr import LITERAL as _LITERAL, STRING as _STRING, split_args


class Markdown:
    """Markdown text for ``display``: rendered as Markdown in Jupyter, and the same text in plain
    output (nbconvert to text, nbval's comparison, a reader of the .ipynb), where IPython's own
    ``Markdown`` shows only ``<IPython.core.display.Markdown object>``."""

    def __init__(self, text: str):
        self.data = str(text)

    def _repr_markdown_(self) -> str:
        return self.data

    def __repr__(self) -> str:
        return self.data


class ClaimError(AssertionError):
    """A notebook sentence comparing measured numbers does not hold for the record in hand."""


#: The names of the chapter helpers marked with :func:`guards` (filled as their modules import).
GUARDS: set[str] = set()


def guards(fn):
    """Mark a chapter helper as the guard of the markdown before the cell that calls it: it raises
    (:func:`claim`, :func:`require`, ``assert``) when the record stops supporting a sentence its
    docstring names, so the argument stays in the markdown and the plumbing in the chapter's module.
    Records ``fn.__name__`` in :data:`GUARDS` (what ``tests/test_notebook_prose.py`` accepts as a
    guard), sets ``fn.guards_prose = True`` and returns ``fn``."""
    GUARDS.add(fn.__name__)
    fn.guards_prose = True
    return fn


def claim(condition: bool, text: str, **numbers) -> str:
    """Print ``text`` — a sentence comparing measured numbers — if ``condition`` holds; otherwise raise.

    ``condition`` is computed from the record the notebook is showing (live or replayed); ``numbers``
    are the record's values the sentence rests on, named, and are shown in the error. Returns the text.

    Raises :class:`ClaimError` (an ``AssertionError``) naming the sentence and the numbers when the
    condition is false: a live re-measurement that flips a conclusion stops the notebook (and nbval)
    instead of printing a false sentence.
    """
    require(condition, text, **numbers)
    print(text)
    return text


@guards      # a visible notebook.require(...) in a cell guards the markdown before it
def require(condition: bool, text: str, **numbers) -> None:
    """:func:`claim`'s guard without the printing, for prose a helper assembles before it is shown:
    raise :class:`ClaimError` naming ``text`` and ``numbers`` when ``condition`` is false."""
    if not condition:
        shown = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v!r}"
                          for k, v in numbers.items())
        raise ClaimError(f"this record does not support the sentence {text!r}"
                         + (f" (record: {shown})" if shown else "")
                         + "; the chapter's text needs revisiting for this measurement")


def within(miss: float) -> str:
    """A measured miss (a fraction, either sign) as the whole percent a sentence "within N%" may
    state: rounded up, so 0.113 reads "12%", never the "11%" that the miss exceeds."""
    import math
    return f"{math.ceil(round(abs(miss) * 100, 9)):d}%"


def ratio(num: float, den: float, unit: str = "", digits: int = 2) -> str:
    """The arithmetic behind a printed ratio, for a helper to show beside its conclusion:
    ``ratio(330.2, 759.1, "TFLOP/s")`` gives ``"330.2 / 759.1 TFLOP/s = 0.43"``. The operands keep
    one decimal (more where they are below 10); the quotient has ``digits`` decimals."""
    def fmt(v):
        return f"{v:.1f}" if abs(v) >= 10 else f"{v:.3g}"
    if den == 0:
        raise ValueError(f"ratio: den is 0 (num={num!r}); a ratio needs a non-zero denominator")
    return f"{fmt(num)} / {fmt(den)}{' ' + unit if unit else ''} = {num / den:.{digits}f}"


def verdict(condition: bool, if_true: str, if_false: str) -> str:
    """Print whichever of two generated sentences the record supports, and return it.

    For statements whose outcome may legitimately differ between runs (a goal reached or not): the
    text is generated, so it can never contradict the numbers. Use :func:`claim` instead when the
    chapter's prose depends on one outcome.
    """
    text = if_true if condition else if_false
    print(text)
    return text


def _inline_figures() -> None:
    """Render matplotlib figures inline in a Jupyter kernel, whatever ``MPLBACKEND`` says.

    ``MPLBACKEND=Agg`` (common on headless servers) would otherwise make every executed notebook
    carry no figures. Outside IPython this does nothing.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is None or not hasattr(ip, "kernel"):
        return
    ip.run_line_magic("matplotlib", "inline")


def banner(arch: str = "sm_90a", measured: bool = True) -> None:
    """One line: does this notebook run its kernels live here, or replay recorded data, and why.

    ``measured=False`` for a chapter without a record in data/ (its numbers come from models and
    compiled code): the line then promises no measured figures.
    Also switches matplotlib to inline rendering in a notebook kernel (see :func:`_inline_figures`).
    A second line, once per session, not in a notebook build, and only before the first attempt is
    kept or when ``ASYNCTC_PROGRESS`` moves it, says where exercise attempts are kept
    (:func:`asynctc.core.exercises.where_once`).
    """
    _inline_figures()
    if os.environ.get("ASYNCTC_BUILDING_NOTEBOOKS"):
        line = (("STORED OUTPUTS: made in replay mode from the records in data/ when the course was "
                 f"built. Run the notebook to see what your machine does: live on an "
                 f"{arch.rstrip('a')} GPU, replay elsewhere.") if measured else
                ("STORED OUTPUTS: made when the course was built. This chapter has no measured "
                 "record: its numbers come from CPU models and from kernels compiled and "
                 "disassembled here."))
    elif runtime.runs_live(arch):
        info = runtime.device_info()
        line = f"LIVE: kernels for {arch} run on this machine's {info.name}."
    else:
        line = (f"REPLAY: {runtime.why_not_live(arch)}. Kernels are compiled and disassembled here; "
                + ("measured figures come from data/ and say where and when they were measured."
                   if measured else "this chapter has no measured record: its numbers come from "
                   "CPU models."))
    from . import exercises
    where = exercises.where_once()
    print(line + (f"\n{where}" if where else ""))


def source_excerpt(target, start: str | None = None, end: str | None = None, *,
                   hooks: bool = False, variant: bool = False, omit=None, left_out: bool = False,
                   comments=(), ptx: tuple[str, ...] = (),
                   more: tuple[tuple[str, str, str], ...] = (), ptx_last: bool = False) -> str:
    """The text :func:`show_source` shows: a kernel's CUDA C++ source (a
    :class:`~asynctc.core.runtime.CompiledKernel` or a file name under ``asynctc/kernels/``), from the
    first line matching ``start`` up to and including the first *later* line matching ``end``
    (regular expressions; without ``end``: to the end of the file).

    The excerpt is cut from the source as written (a pattern may match a line inside a hook), then,
    unless ``hooks=True``, shows the code the default build compiles for the experiment hooks
    (:mod:`asynctc.core.hooks`: ``ABLATE``, ``BUG``, ``BREAK``, ``TRACE`` blocks and calls,
    ``mismatch(...)``, ...), with one comment line at the end saying how many lines were hidden or
    simplified and which hooks; an excerpt without hooks is unchanged. ``hooks=True`` shows the
    source exactly as written.

    ``variant=True`` shows one build: the variant switches (``SPLIT_K``, ``PINGPONG``, ``EDGES``,
    ``TMA_STORE``, ``CLUSTER``, ...: :func:`asynctc.core.hooks.switches`) are resolved too, with
    the values a compiled kernel ``target`` was built with (a file name: its defaults), calls that
    compile to nothing and declarations nothing reads any more go, and the last line names the
    switches the excerpt depended on with their values (:func:`asynctc.core.hooks.hide`).

    ``omit=(first, last, note)`` leaves out the lines from the first one matching ``first`` to the
    next one matching ``last`` (regular expressions), replaced by one comment line ``// (n lines left
    out: note)`` indented like the line after them: an exercise's answer, shown after the exercise.
    ``omit`` may also be a sequence of such triples, each looked for after the lines the one before
    it left out. A fourth element ``"unmarked"`` (``(first, last, note, "unmarked")``) leaves the
    lines out with no mark where they were: one line at the end of the listing says how many lines
    are missing and why (an exercise that asks where a line goes: its place is part of the answer).
    ``left_out=True`` returns only the lines ``omit`` leaves out, a ``// ...`` line
    between two runs of them (the cell after the exercise prints them; ``ptx`` and ``more`` are
    not added).

    ``comments=((pattern, text), ...)`` rewords the comment of the first line of the excerpt matching
    each ``pattern``: its ``// ...`` becomes ``// text`` and the code before it stays as written (a
    listing shown before an exercise whose comments would answer it; the kernel file is unchanged).

    One listing may follow a path through several files: after the excerpt, ``ptx`` (names of
    ``kernels/ptx/*.cuh`` wrappers) adds, as comments, the PTX instruction each issues
    (:func:`ptx_instructions`), and ``more`` (``(file, start, end)`` triples) adds further excerpts,
    each under a ``// ---- kernels/<file>`` line (``// ...`` when it is further down the same file);
    with a compiled kernel ``target`` and ``variant=True`` they show the build it was compiled as.
    The PTX comes right after the first excerpt, or with ``ptx_last=True`` after the ``more``
    excerpts (a listing whose wrappers are called in them).

    Raises ``ValueError`` when no line matches ``start`` or no later line matches ``end`` (or
    ``omit``'s patterns), or for a file name outside ``kernels/`` (absolute, ``..``;
    :func:`~asynctc.core.runtime.kernel_path`), and for ``hooks=True`` with ``variant=True`` (the
    source as written is no one build).
    """
    text = _excerpt(target, start, end, hooks, variant)
    if comments:
        text = _reword(text, comments)
    if omit is not None:
        text, out = _omit(text, omit)
        if left_out:
            return out
    elif left_out:
        raise ValueError("left_out=True shows the lines omit leaves out: give omit")
    table = ("" if not ptx else "\n\n// ---- the PTX instruction each wrapper issues (kernels/ptx/*.cuh)\n"
             + "\n".join("//   " + ln for ln in ptx_instructions(*ptx).splitlines()[1:]))
    if not ptx_last:
        text += table
    previous = None if (ptx and not ptx_last) or not isinstance(target, str) else target
    defines = getattr(target, "defines", None) if variant else None     # the build target was compiled as
    for file, s, e in more:
        head = "// ..." if file == previous else f"// ---- kernels/{file}"
        text += f"\n\n{head}\n" + _excerpt(file, s, e, hooks, variant, defines)
        previous = file
    return text + table if ptx_last else text


def _reword(text: str, comments) -> str:
    """The excerpt with the comments of ``comments`` reworded: see source_excerpt."""
    lines = text.splitlines()
    for pattern, said in comments:
        k = next((n for n, ln in enumerate(lines) if re.search(pattern, ln) and "//" in ln), None)
        if k is None:
            raise ValueError(f"comments: no commented line of the excerpt matches {pattern!r}")
        lines[k] = lines[k][:lines[k].index("//")] + "// " + said
    return "\n".join(lines)


def _omit(text: str, omit) -> tuple[str, str]:
    """(the excerpt without the ranges of ``omit``, the lines they left out): see source_excerpt."""
    ranges = [omit] if isinstance(omit[0], str) else list(omit)
    lines, kept, gone, at, unmarked = text.splitlines(), [], [], 0, []
    for rng in ranges:
        first, last, note = rng[:3]
        i = next((k for k in range(at, len(lines)) if re.search(first, lines[k])), None)
        j = None if i is None else next((k for k in range(i, len(lines)) if re.search(last, lines[k])), None)
        if j is None:
            raise ValueError(f"omit={rng!r}: no lines of the excerpt match (after line {at})")
        code = [ln for ln in lines[i:j + 1] if ln.strip() and not ln.lstrip().startswith("#")]
        like = code[0] if code else lines[j + 1] if j + 1 < len(lines) else lines[i]
        ind = len(like) - len(like.lstrip(" "))                  # indented like the code it hides
        said = f"{j + 1 - i} line{'s' * (j > i)} left out"
        if rng[3:] == ("unmarked",):
            kept += lines[at:i]
            unmarked.append(f"// ({said}, not marked where it was: {note})")
        else:
            kept += lines[at:i] + [" " * ind + f"// ({said}: {note})"]
        gone += (["// ..."] if gone else []) + lines[i:j + 1]
        at = j + 1
    body = [ln for ln in gone if ln != "// ..."]
    cut = min(len(ln) - len(ln.lstrip(" ")) for ln in body if ln.strip())
    return "\n".join(kept + lines[at:] + unmarked), "\n".join(ln if ln == "// ..." else ln[cut:] for ln in gone)


def _excerpt(target, start, end, hooks, variant=False, file_defines=None) -> str:
    if hooks and variant:
        raise ValueError("hooks=True shows the source as written; variant=True one build of it: "
                         "ask for one")
    if hasattr(target, "source_text"):
        text, name = target.source_text(), getattr(target, "source", None)
        defines = getattr(target, "defines", None)
    else:
        text, name, defines = runtime.kernel_path(target).read_text(), target, file_defines
    lines = text.splitlines()
    i, j = 0, len(lines)
    if start:
        i = next((k for k, ln in enumerate(lines) if re.search(start, ln)), None)
        if i is None:
            raise ValueError(f"start={start!r}: no line of the source matches")
        if end:
            j = next((k for k in range(i + 1, len(lines)) if re.search(end, lines[k])), None)
            if j is None:       # a vanished end marker must not turn a listing into the whole file
                raise ValueError(f"end={end!r}: no line after the start matches")
            j += 1
    written = "\n".join(lines[i:j]) if start else text
    if hooks:
        return written
    from . import hooks as hk
    path = runtime.kernel_path(name) if isinstance(name, str) else None
    shown = hk.hide(text, path, defines, variant=variant)[i:j]
    if all(ln.text == raw for ln, raw in zip(shown, lines[i:j])):
        return written
    out, n_hidden, n_changed, names = [], 0, 0, set()
    for ln, raw in zip(shown, lines[i:j]):
        if ln.text is None:
            n_hidden += 1
        else:
            n_changed += ln.text != raw
            out.append(ln.text)
        names |= ln.hooks
    while len(out) > 1 and not out[-1].strip():
        out.pop()
    ind = min((len(s) - len(s.lstrip(" ")) for s in out
               if s.strip() and not s.lstrip().startswith("#")), default=0)
    counts = ", ".join(f"{n} line{'s' * (n != 1)} {what}" for n, what in
                       ((n_hidden, "dropped"), (n_changed, "simplified")) if n)
    order = [h for h in hk.HOOK_DEFINES if h in names]
    if not variant:
        out.append(" " * ind + f"// (not shown: debugging hooks {', '.join(order)}, {counts})")
        return "\n".join(out)
    values = {**hk.macro_values(text, path), **{k: int(v) for k, v in (defines or {}).items()
                                                 if isinstance(v, (int, bool))}}
    used = sorted(names & (hk.switches(text, path, defines) | set(hk.HOOK_DEFINES)) & set(values))
    set_ = [f"{k}={values[k]}" for k in used if values[k]]
    zero = [k for k in used if not values[k]]
    note = (f"// (this build: {', '.join(set_) or 'no switch set'}" + (", the other switches 0" if zero else "")
            + f"; {n_hidden + n_changed} source lines left out or simplified for it)")
    while len(note) > 100 and ", " in note[:100]:          # wrap after the last comma that fits
        cut = note.rindex(", ", 0, 100) + 1
        out.append(" " * ind + note[:cut])
        note = "//  " + note[cut:].lstrip()
    out.append(" " * ind + note)
    return "\n".join(out)


def show_source(target, start: str | None = None, end: str | None = None, *, hooks: bool = False,
                variant: bool = False, omit=None, left_out: bool = False, comments=(),
                ptx: tuple[str, ...] = (), more: tuple[tuple[str, str, str], ...] = (),
                ptx_last: bool = False):
    """Display :func:`source_excerpt` as highlighted CUDA C++ (an IPython ``Code`` object: make it the
    last expression of the cell, or pass it to ``display``, or it does not render). ``hooks=True``
    shows the experiment hooks (``ABLATE``, ``BUG``, ``BREAK``, ``TRACE``, ...) as written; by
    default the listing shows what the default build compiles, and says what it hid;
    ``variant=True`` shows the one build ``target`` (a compiled kernel) is, its variant switches
    resolved too. ``omit``: lines left out (``left_out=True``: only those); ``comments``: comments
    reworded, the code kept; ``ptx``, ``more``,
    ``ptx_last``: the PTX of wrappers and further excerpts in the same listing
    (:func:`source_excerpt`)."""
    from IPython.display import Code
    return Code(source_excerpt(target, start, end, hooks=hooks, variant=variant, omit=omit,
                               left_out=left_out, comments=comments, ptx=ptx, more=more, ptx_last=ptx_last),
                language="cuda")


def how_source(helper) -> str:
    """The text :func:`how` shows: a comment line naming ``helper``'s module and name, then its Python
    source. Raises ``TypeError`` for something that has no Python source."""
    import inspect
    if not (inspect.isfunction(helper) or inspect.ismethod(helper) or inspect.isclass(helper)):
        raise TypeError(f"how(helper): helper must be a function or class, got {type(helper).__name__}")
    fn = inspect.unwrap(helper)
    return f"# {fn.__module__}.{fn.__qualname__}\n" + inspect.getsource(fn)


def how(helper) -> None:
    """Show the Python source of a chapter helper (a ``show_*`` function, say), highlighted, to read in
    the notebook what it computes and what it asserts: ``notebook.how(pl.show_widths)``. It shows the
    code wherever it stands in a cell (it displays, it does not return). Raises ``TypeError`` for
    something that has no Python source."""
    from IPython.display import Code, display
    display(Code(how_source(helper), language="python"))


def build_diff(file: str, defines: dict, context: int = 2) -> str:
    """The lines one build of kernel source ``file`` (under ``asynctc/kernels/``) changes against the
    file's default build, as a unified diff: ``-`` the default build's lines, ``+`` the build with
    ``defines`` (hooks such as ``BUG``: :func:`asynctc.core.hooks.hide` resolves the preprocessor for
    both, so a listing with ``#if BUG == ...`` blocks reads as the right lines and the broken ones).
    ``context`` unchanged lines around each change; a hunk opens with a bare ``@@`` (the
    line numbers of a build are not the file's). Raises ``ValueError`` when the builds show the
    same lines."""
    import difflib
    from . import hooks as hk
    path = runtime.kernel_path(file)
    text = path.read_text()

    def build(d):
        return [ln.text for ln in hk.hide(text, path, d) if ln.text is not None]
    name = ", ".join(f"{k}={v}" for k, v in defines.items())
    diff = list(difflib.unified_diff(build(None), build(defines), f"{file} (default build)",
                                     f"{file} ({name})", n=context, lineterm=""))
    if not diff:
        raise ValueError(f"{file}: the build with {name} shows the same lines as the default build")
    return "\n".join("@@" if ln.startswith("@@") else ln for ln in diff)


def ptx_listing(target, pattern: str = r"wgmma\.", full: int = 1, width: int = 96) -> str:
    """The text :func:`show_ptx` shows: a comment line naming the kernel, then the lines of compiled
    kernel ``target``'s PTX (:meth:`~asynctc.core.runtime.CompiledKernel.ptx`, NVRTC on the CPU)
    that match ``pattern``, the first ``full`` register lists whole and wrapped at ``width``
    (:func:`asynctc.core.sass.ptx_excerpt`). Raises ``ValueError`` when no line matches."""
    from . import sass
    major, minor = runtime.nvrtc_version()
    head = (f"// {target.name} ({target.source}, {target.arch}): the PTX NVRTC {major}.{minor} emits, "
            f"lines matching {pattern}")
    return head + "\n" + sass.ptx_excerpt(target.ptx(), target.name, pattern, full=full, width=width)


def show_ptx(target, pattern: str = r"wgmma\.", full: int = 1, width: int = 96):
    """Display :func:`ptx_listing` as highlighted PTX (an IPython ``Code`` object: the last
    expression of the cell, or passed to ``display``): e.g. one complete ``wgmma.mma_async`` line
    of a kernel's loop, with its accumulator registers, descriptors and immediates. The PTX is
    compiled for reading only (kernels run from cubin) and its register numbers depend on the
    NVRTC version: show it in an ``output varies`` cell."""
    from IPython.display import Code
    return Code(ptx_listing(target, pattern, full, width), language="ptx")


def _asm_text(body: str) -> str | None:
    """The instruction text of the first ``asm volatile(...)`` in ``body``: its string literals
    joined (up to the first ``:`` outside a literal, where the operand lists begin), with each
    operand ``%N`` replaced by the C++ expression bound to it (outputs first, then inputs, as
    inline asm numbers them)."""
    m = re.search(r"\basm\s+volatile\s*\(", body)
    if not m:
        return None
    out, i = [], m.end()
    while i < len(body):
        if body[i] == '"':
            lit = _STRING.match(body, i)
            out.append(lit.group(1))
            i = lit.end()
        elif body[i] in ":)":
            break
        else:
            i += 1
    operands = re.findall(r'"[=+]?\w+"\s*\(((?:[^()]|\([^()]*\))*)\)', body[i:body.find(";", i)])
    text = "".join(out).encode().decode("unicode_escape")
    return re.sub(r"%(\d+)", lambda k: operands[int(k.group(1))].strip()
                  if int(k.group(1)) < len(operands) else k.group(0), text)


_DEFINE = re.compile(r"^#define (\w+)(?:\(([^)]*)\))?[ \t]*(.*)$", re.M)


def _balanced(text: str, i: int, open_: str = "(", close: str = ")") -> int:
    """The index just past the ``close`` that matches the ``open_`` at ``text[i]`` (string literals
    skipped)."""
    depth = 0
    while i < len(text):
        if text[i] == '"':
            i = _STRING.match(text, i).end()
            continue
        depth += {open_: 1, close: -1}.get(text[i], 0)
        i += 1
        if depth == 0:
            return i
    raise ValueError(f"unbalanced {open_}{close} in a header")


def _substitute(body: str, values: dict) -> str:
    """``body`` with each identifier named in ``values`` replaced, outside string literals."""
    parts = re.split(f"({_LITERAL})", body)
    return "".join(part if k % 2 else re.sub(r"\b\w+\b", lambda m: values.get(m.group(0), m.group(0)),
                                            part) for k, part in enumerate(parts))


def _expand_asm_macro(body: str, macros: dict) -> str | None:
    """The ``asm`` statement of the first function-like macro in ``macros`` that issues one and
    that ``body`` calls, expanded: a parameter whose argument is the same string literal(s) at
    every call in ``body`` takes it; any other shows as ``<PARAM>`` (it varies with the template
    arguments, or is spelled by a macro further out)."""
    for name, (params, text) in macros.items():
        if params is None or not re.search(r"\basm\b", text):
            continue
        calls = [split_args(body[m.end():_balanced(body, m.end() - 1) - 1])
                 for m in re.finditer(rf"\b{name}\s*\(", body)]
        if not calls:
            continue
        values = {}
        for k, p in enumerate(params):
            if p == "...":
                got = {", ".join(c[k:]) for c in calls}
                p = "__VA_ARGS__"
            else:
                got = {c[k] if k < len(c) else "" for c in calls}
            one = got.pop() if len(got) == 1 else None
            literal = one is not None and re.fullmatch(rf"(\s*{_LITERAL})+\s*", one)
            values[p] = one if literal else f'"<{p}>"'
        return _substitute(text, values)
    return None


def _wrapper_body(text: str, name: str) -> str | None:
    """The body (between its braces) of the ``__forceinline__`` function ``name`` defined in
    ``text`` (a header with its line continuations joined), or None."""
    m = re.search(rf"__forceinline__ [\w:<>]+ {re.escape(name)}\(", text)
    if not m:
        return None
    start = text.index("{", _balanced(text, m.end() - 1))
    return text[start + 1:_balanced(text, start, "{", "}") - 1]


def _macros(text: str) -> dict:
    """The ``#define``s of a header ``text`` (line continuations joined): name → (parameter names,
    or None for an object-like macro; the replacement text)."""
    return {m.group(1): (None if m.group(2) is None else [p.strip() for p in m.group(2).split(",")],
                         m.group(3)) for m in _DEFINE.finditer(text)}


def _issued(text: str, body: str, macros: dict, depth: int = 3) -> str | None:
    """The instruction text of the asm that ``body`` issues: its own ``asm`` statement, else a
    macro's it calls (expanded; ``macros``: :func:`_macros` of ``text``), else, up to ``depth``
    calls down, those of the functions of the same header it calls, in order
    (``Wgmma<kN>::template ss<...>(...)`` → ``ss``, defined inside a macro; ``cluster_sync`` → its
    arrive and wait)."""
    found = _asm_text(body)
    if found or depth == 0:
        return found
    expanded = _expand_asm_macro(body, macros)
    if expanded:
        return _asm_text(expanded)
    issued = []
    for callee in re.findall(r"(\w+)\s*(?:<[^;()<>]*>)?\s*\(", body):
        inner = _wrapper_body(text, callee) if callee not in macros else None
        found = None if inner is None or inner == body else _issued(text, inner, macros, depth - 1)
        if found and found not in issued:
            issued.append(found)
    return "\n".join(issued) or None


def ptx_instructions(*wrappers: str) -> str:
    """A two-column table: each named wrapper of ``kernels/ptx/*.cuh`` and the PTX instruction its
    inline ``asm`` issues, read from the header as written, each operand shown as the C++
    expression the wrapper binds to it (``[bar]``: the mbarrier's shared-memory address). Scaffolding
    inside the asm (``{ }``, ``.reg`` declarations, the ``setp``/``selp`` that turn a predicate into
    an int) is left out.

    A wrapper whose asm a preprocessor macro builds (``wgmma_mma_async_ss`` calls
    ``Wgmma<kN>::ss``, which ``WGMMA_DEFINE_N`` defines and ``WGMMA_ASM`` writes the asm of) is
    read by following its calls and expanding that macro from the same header's ``#define``s; the
    parts that differ between the macro's uses show as ``<PARAM>``:
    ``wgmma.mma_async.sync.aligned.<SHAPE><TYPES> {<DL>}, <AOP>, <BOP>, p<TAIL>;``.

    Raises ``ValueError`` for a name no header defines, or one whose asm cannot be found (neither
    its own, nor a macro's it calls, nor a called function's).
    """
    headers = sorted((runtime.KERNEL_DIR / "ptx").glob("*.cuh"))
    rows = []
    for name in wrappers:
        found = None
        for h in headers:
            text = h.read_text()
            m = re.search(rf"^(?:template <[^>]*>\s*)?__device__ __forceinline__ [\w:<>]+ {re.escape(name)}\(",
                          text, re.M)
            if m:
                text = re.sub(f"({_LITERAL})|//[^\n]*", lambda k: k.group(1) or "",
                              text.replace("\\\n", " "))       # one line per #define, no comments
                found = (h.name, _issued(text, _wrapper_body(text, name), _macros(text)))
                break
        if found is None:
            raise ValueError(f"{name!r}: no wrapper of that name in kernels/ptx/*.cuh "
                             f"({', '.join(h.name for h in headers)})")
        if not found[1]:
            raise ValueError(f"{name!r} ({found[0]}): no asm statement found, neither its own nor "
                             "a macro's or function's it calls: show its source instead")
        keep = [s.strip() for s in re.split(r"[;\n]", found[1])]
        keep = [s for s in keep if s and not s.startswith(("{", "}", ".reg", "setp", "selp"))]
        rows.append((name, "; ".join(keep) + ";"))
    width = max(len("wrapper"), *(len(n) for n, _ in rows))
    return "\n".join([f"{'wrapper':{width}s}  the PTX instruction it issues"]
                     + [f"{n:{width}s}  {ptx}" for n, ptx in rows])


def sass_table(compiled, classes=None) -> str:
    """A small text table of instruction-class counts of a compiled kernel."""
    from . import sass
    counts = sass.class_counts(compiled.sass(), classes)
    r = compiled.resources
    lines = [f"{compiled.name} [{compiled.arch}]: {r.registers} registers/thread, "
             f"{r.spill_stores} bytes spilled"]
    lines += [f"  {k:10s} {v:5d}" for k, v in counts.items()]
    return "\n".join(lines)
