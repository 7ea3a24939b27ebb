"""Experiment hooks in the kernel sources, and the lines the default build compiles instead.

The kernels carry switches that only experiments and diagnoses turn on: chapter 01's ``ABLATE``,
chapter 04's ``MISMATCH_LAYOUT`` (through ``mismatch(desc)``), chapter 03's ``TX_PROBE``, the ring
kernels' ``BREAK`` and ``TRACE`` (with ``TRACE_CTAS``, ``TRACE_EVENTS`` and the ``Trace`` objects'
calls), chapter 07's ``TMA_ONCE``, chapter 08's ``BUG``. A listing of a main loop is easier to read
without them; :func:`hide` says, for every line of a source, what the default build of that line
is: the line itself, a simpler line (a hook's sub-expression folded away), or nothing.

Everything is *evaluated*, never guessed: a hook's value is the ``#ifndef X / #define X v`` default
of the file or of a file it includes (or the compiled kernel's own define), and only what can be
evaluated from such values is touched:

1. ``#if`` / ``#elif`` blocks whose condition names a hook and evaluates with those values (the
   ``BUG_*`` names are the file's own ``#define`` constants): the branch the build compiles stays,
   the directives and the other branches go;
2. expressions that name a hook: the hook's sub-expression is folded (``(ABLATE & 1) ? 0 : kt & 1``
   → ``kt & 1``, ``!(BREAK == 2 && wg == 3) && elected`` → ``elected``); an ``if`` whose whole
   condition folds to a constant keeps only the branch that runs; a function whose body reduces to
   ``return <its argument>;`` (``mismatch``) is an identity, and its calls show their argument;
3. calls on a struct all of whose methods reduce to empty bodies (the ``Trace`` objects: their
   bodies are ``if constexpr (TRACE)``), and the declaration of such an object.

An expression the evaluator cannot read (a call, a cast, an unknown name inside a hook's
sub-expression) stays as it is. Comments' parentheses that name a hook (``(ABLATE & 1: buffer 0 is
never refilled)``) go with the hooks.

**Variant listings** (``hide(..., variant=True)``): one source builds many kernels (chapter 06's
rungs, chapter 07's FP8 GEMM, ``asynctc.matmul``), chosen by *switches*: the macros that select
code, i.e. that a ``#if`` / ``#elif`` or an ``if constexpr`` condition of the file or of a file it
includes names (:func:`switches`: ``SPLIT_K``, ``PINGPONG``, ``EDGES``, ``BLOCK_SCALES``,
``TMA_STORE``, ``CLUSTER``, ...). A variant listing folds them too, with the values the kernel was
built with (its defines, else the file's defaults), by the same rules; sizes that select no code
(``BM``, ``STAGES``, ``CONSUMERS``) stay named. Then, still evaluated:

4. a ``const bool x = ...;`` that folded to ``true`` / ``false`` (and is the file's only ``x``) is
   folded where ``x`` is used;
5. a call statement ``f(...);`` of a ``void`` function of the file or its includes whose body
   folds to nothing for this build (chapter 07's ``promote``, ``clear_totals``) goes;
6. a declaration without a call in its initializer whose name no shown line of its scope and
   no macro body (``TILE_ORIGIN`` reads ``rank``) uses any more goes; so does one that is only
   counted up any more (``++i``, ``i++``, ``i += n;`` statements and ``for`` increments: the
   ring counters that only the hidden trace read), with those increments; so do the statements
   after a ``return`` / ``break`` / ``continue`` that an ``if`` folded to, up to the end of its
   block.
A changed line of a variant listing keeps its comment at the column it had.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path

from . import cexpr
from .cexpr import Unevaluable  # noqa: F401 (re-exported)

#: The experiment and diagnosis defines (each kernel's header says what it does). Not in the list:
#: the variant switches that are a lesson's subject where they occur (``SPLIT_K``, ``PINGPONG``,
#: ``EDGES``, ``BLOCK_SCALES``, pitfalls.cu's latent kernels' ``FENCE``/``WAIT``/``INIT``/``BOUNDS``)
#: and diagnostics.cu's ``DIAG`` (it selects which diagnostic kernel the file is); a variant
#: listing resolves those too (:func:`switches`).
HOOK_DEFINES = ("ABLATE", "BUG", "BREAK", "TRACE", "TRACE_CTAS", "TRACE_EVENTS", "MISMATCH_LAYOUT",
                "TX_PROBE", "TMA_ONCE", "LOADS_ONLY")

_HOOKS = frozenset(HOOK_DEFINES)
_DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)$")
_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)\s+(.+?)\s*(?://.*)?$")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
_INT = re.compile(r"^\(?\s*(-?)\s*(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\s*\)?$")
_IFNDEF = re.compile(r"^\s*#\s*ifndef\s+([A-Za-z_]\w*)")
_CONSTEXPR_IF = re.compile(r"\bif\s+constexpr\s*\(")
_KEYWORDS = {"return", "else", "goto", "delete", "case", "throw", "co_return", "typedef", "using"}


@functools.lru_cache(maxsize=None)
def _names_re(names: frozenset) -> re.Pattern:
    return re.compile(r"\b(" + "|".join(sorted(names)) + r")\b")


@dataclasses.dataclass
class Line:
    """What the default build shows of one source line: ``text`` (``None``: hidden) and the hooks
    that hid or changed it (empty: the line as written)."""
    text: str | None
    hooks: frozenset = frozenset()


# --------------------------------------------------------------------------------------------------
# Values: the defaults a source defines (its includes' too)
# --------------------------------------------------------------------------------------------------

def macro_values(text: str, path: Path | None = None, _seen=None) -> dict[str, int]:
    """The integer ``#define NAME value`` of ``text`` and of the files it includes (quoted
    includes, resolved beside ``path`` and then in ``path``'s kernels/ root), first definition
    wins. Names whose value is not an integer literal (or a name with one) are left out."""
    seen = _seen if _seen is not None else set()
    raw: dict[str, str] = {}
    for ln in text.splitlines():
        m = _INCLUDE.match(ln)
        if m and path is not None:
            for base in (path.parent, _kernels_root(path)):
                inc = (base / m.group(1)).resolve()
                if inc.is_file() and inc not in seen:
                    seen.add(inc)
                    for k, v in macro_values(inc.read_text(), inc, seen).items():
                        raw.setdefault(k, str(v))
                    break
            continue
        m = _DEFINE.match(ln)
        if m:
            raw.setdefault(m.group(1), m.group(2))
    out: dict[str, int] = {}
    for name in raw:
        v, hops = raw[name], 0
        while v in raw and hops < 8:
            v, hops = raw[v], hops + 1
        m = _INT.match(v)
        if m:
            out[name] = int(m.group(2), 0) * (-1 if m.group(1) else 1)
    return out


def _kernels_root(path: Path) -> Path:
    for p in path.parents:
        if p.name == "kernels":
            return p
    return path.parent


def included(text: str, path: Path | None, _seen=None) -> list[tuple[Path, str]]:
    """``(path, text)`` of every file ``text`` includes with quotes, and of theirs, in order
    (resolved as :func:`macro_values` resolves them; each file once)."""
    seen = _seen if _seen is not None else set()
    out: list[tuple[Path, str]] = []
    for ln in text.splitlines() if path is not None else ():
        m = _INCLUDE.match(ln)
        for base in ((path.parent, _kernels_root(path)) if m else ()):
            inc = (base / m.group(1)).resolve()
            if inc.is_file():
                if inc not in seen:
                    seen.add(inc)
                    t = inc.read_text()
                    out += [(inc, t)] + included(t, inc, seen)
                break
    return out


def _conditions(text: str) -> list[str]:
    """The ``#if`` / ``#elif`` conditions and ``if constexpr (...)`` conditions of ``text``."""
    out = []
    for ln in text.splitlines():
        m = _DIRECTIVE.match(ln)
        if m and m.group(1) in ("if", "elif"):
            out.append(_split_comment(m.group(2))[0])
        for m in _CONSTEXPR_IF.finditer(_split_comment(ln)[0]):
            toks = cexpr._tokens(ln[m.end() - 1:])
            c = cexpr._matching(toks, 0)
            if c is not None:
                out.append(ln[m.end():m.end() - 1 + toks[c].start])
    return out


def switches(text: str, path: Path | None = None, defines: dict | None = None) -> frozenset:
    """The variant switches of a source: the macros with an integer value (``defines``, else the
    defaults of :func:`macro_values`) that an ``#if`` / ``#elif`` or ``if constexpr`` condition of
    ``text`` or of a file it includes names — the macros that select code. The experiment hooks
    (:data:`HOOK_DEFINES`) are left out (a listing hides them anyway)."""
    values = set(macro_values(text, path)) | {k for k, v in (defines or {}).items()
                                               if isinstance(v, (int, bool))}
    named = {t.text for c in [text] + [t for _, t in included(text, path)] for cond in _conditions(c)
             for t in cexpr._tokens(cond) if t.kind == "id"}
    return frozenset((named & values) - _HOOKS)


def _defaults(texts) -> set:
    """The names ``texts`` give a default (``#ifndef X`` / ``#define X v``): the build's knobs."""
    return {m.group(1) for t in texts for ln in t.splitlines() if (m := _IFNDEF.match(ln))}


def _macro_bodies(texts) -> str:
    """Every ``#define`` line of ``texts`` (continuations joined): what a macro may read."""
    out = []
    for t in texts:
        for ln in t.replace("\\\n", " ").splitlines():
            if re.match(r"^\s*#\s*define\b", ln):
                out.append(ln)
    return "\n".join(out)


def evaluate_condition(cond: str, env: dict[str, int], names=_HOOKS):
    """``(value, names met)`` of a preprocessor or ``if`` condition that names one of ``names``
    (default: the hooks) and evaluates with ``env``; ``None`` when it names none or does not
    evaluate (:func:`asynctc.core.cexpr.evaluate_condition`)."""
    return cexpr.evaluate_condition(cond, env, names)


def _fold_line(code, env, identities, names=_HOOKS):
    return cexpr.fold_line(code, env, identities, names)




def _split_comment(line: str) -> tuple[str, str]:
    """(code, comment) of a line: the comment from its first ``//`` outside a string literal."""
    q = None
    for k, ch in enumerate(line):
        if q:
            if ch == "\\":
                continue
            if ch == q and line[k - 1] != "\\":
                q = None
        elif ch in "\"'":
            q = ch
        elif line.startswith("//", k):
            return line[:k], line[k:]
    return line, ""


def _clean_comment(comment: str, names=_HOOKS) -> str:
    """A ``//`` comment without its parentheses that name one of ``names`` (``""`` if nothing is
    left)."""
    if not _names_re(names).search(comment):
        return comment
    out = comment
    for _ in range(4):
        new = re.sub(r"\s*\([^()]*\b(?:" + "|".join(sorted(names)) + r")\b[^()]*\)", "", out)
        if new == out:
            break
        out = new
    return "" if re.fullmatch(r"//\s*[:;,.]?\s*", out) else out


def _preprocess(lines, env, names=_HOOKS):
    """Pass 1: ``#if`` blocks on ``names``. Returns (hidden flags, names per line)."""
    hidden = [False] * len(lines)
    why = [frozenset()] * len(lines)
    stack = []       # frames: [is_hook, active, taken, hooks]
    for i, ln in enumerate(lines):
        m = _DIRECTIVE.match(ln)
        outer_inactive = any(f[0] and not f[1] for f in stack)
        if not m:
            if outer_inactive:
                hidden[i] = True
                why[i] = frozenset().union(*(f[3] for f in stack if f[0] and not f[1]))
            continue
        kw, cond = m.group(1), _split_comment(m.group(2))[0].strip()
        if kw in ("if", "ifdef", "ifndef"):
            frame = [False, True, False, frozenset()]
            if kw == "if":
                branches = _branch_conditions(lines, i, env, names)
                if branches is not None:
                    first, hooks = branches[0]
                    frame = [True, first, first, hooks]
            stack.append(frame)
            if frame[0] or outer_inactive:
                hidden[i], why[i] = True, frame[3]
        elif not stack:
            continue
        else:
            f = stack[-1]
            if f[0]:
                if kw == "elif":
                    v = evaluate_condition(cond, env, names)
                    f[1] = (not f[2]) and bool(v and v[0])
                    f[2] = f[2] or f[1]
                elif kw == "else":
                    f[1] = not f[2]
                    f[2] = True
                hidden[i], why[i] = True, f[3]
            elif outer_inactive:
                hidden[i] = True
            if kw == "endif":
                stack.pop()
    return hidden, why


def _branch_conditions(lines, i, env, names):
    """For the ``#if`` at line ``i``: its and its ``#elif``s' (value, hooks), or None unless every
    branch that may be taken evaluates."""
    v = evaluate_condition(_split_comment(_DIRECTIVE.match(lines[i]).group(2))[0], env, names)
    if v is None:
        return None
    out, taken, depth = [v], v[0], 0
    for ln in lines[i + 1:]:
        m = _DIRECTIVE.match(ln)
        if not m:
            continue
        kw = m.group(1)
        if kw in ("if", "ifdef", "ifndef"):
            depth += 1
        elif kw == "endif":
            if depth == 0:
                break
            depth -= 1
        elif kw == "elif" and depth == 0:
            w = evaluate_condition(_split_comment(m.group(2))[0], env, names)
            if w is None and not taken:
                return None
            if w is not None:
                out.append(w)
                taken = taken or w[0]
    hooks = frozenset().union(*(h for _, h in out))
    return [(out[0][0], hooks)]


def _identity_functions(lines, text_of):
    """Functions ``T name(T arg) { return arg; }`` once hooks are hidden: name → hooks."""
    out = {}
    sig = re.compile(r"^__device__\s+(?:__forceinline__\s+)?\w+\s+(\w+)"
                     r"\(\s*\w+\s+(\w+)\s*\)\s*\{\s*$")
    for i, ln in enumerate(lines):
        m = sig.match(ln)
        if not m:
            continue
        body, hooks, j = [], set(), i + 1
        while j < len(lines) and not lines[j].startswith("}"):
            t, h = text_of(j)
            hooks |= h
            if t is not None and t.strip():
                body.append(t.strip())
            j += 1
        if hooks and body == [f"return {m.group(2)};"]:
            out[m.group(1)] = frozenset(hooks)
    return out



def _indent(s: str) -> int:
    return len(s) - len(s.lstrip(" "))


def _dedent(s: str, d: int) -> str:
    return s[min(d, _indent(s)):] if d > 0 else s


def hide(text: str, path: Path | None = None, defines: dict | None = None, *,
         variant: bool = False, fold: frozenset = frozenset()) -> list[Line]:
    """What one build shows of every line of ``text`` (a kernel source; ``path`` for its includes;
    ``defines`` the compile-time values a kernel was built with, which override the file's
    defaults). By default the experiment hooks are folded (rules 1-3 of the module docstring);
    with ``variant=True`` the variant switches too (:func:`switches`; rules 4-6). One :class:`Line`
    per line of ``text.splitlines()``; its ``hooks`` are the hooks and switches that hid or
    changed it. ``fold`` (with ``variant=True``): further knobs to fold as switches (a diff of two
    builds folds the flags in which they differ, e.g. chapter 06's ``PERSISTENT``)."""
    lines = text.splitlines()
    env = macro_values(text, path)
    names = _HOOKS
    if variant:
        names = _HOOKS | switches(text, path, defines) | frozenset(fold)
        knobs = _defaults([text] + [t for _, t in included(text, path)])
        env = {k: v for k, v in env.items() if k in names or k not in knobs}   # sizes stay named
    for k, v in (defines or {}).items():
        if k in names and isinstance(v, (int, bool)):
            env[k] = int(v)
    out = _pass(list(lines), env, names)
    if not variant:
        return out
    for _ in range(4):                                   # rule 4: folded local constants
        consts = {m.group(1): int(m.group(2) == "true") for i, ln in enumerate(out)
                  if ln.text is not None and ln.text != lines[i]
                  and (m := re.match(r"^\s*const\s+bool\s+(\w+)\s*=\s*(true|false);", ln.text))
                  and m.group(1) not in env
                  and len(re.findall(r"\bbool\s+" + m.group(1) + r"\b", text)) == 1}
        if not consts:
            break
        env = {**env, **consts}
        names = names | frozenset(consts)
        out = _pass(list(lines), env, names)
    files = [(path, text)] + included(text, path)
    noops = {}
    for fpath, ftext in files:                           # rule 5: calls that compile to nothing
        shown = out if fpath == path else _pass(ftext.splitlines(), env, names)
        noops.update(_noop_functions(ftext.splitlines(), shown))
    _hide_noop_calls(lines, out, noops)
    _hide_unreachable(lines, out)
    macros = _macro_bodies(t for _, t in files)
    _hide_dead_declarations(out, macros)                                       # rule 6
    _hide_write_only(out, macros)
    _align_comments(lines, out)
    return out


def _pass(lines, env, names) -> list[Line]:
    """Rules 1-3 over ``lines`` (a list the ``else if`` rule may rewrite) with the values ``env``
    of ``names``."""
    hidden, why = _preprocess(lines, env, names)
    out = [Line(None, why[i]) if hidden[i] else Line(ln) for i, ln in enumerate(lines)]

    def text_of(j):
        return out[j].text, out[j].hooks

    identities = _identity_functions(lines, text_of)
    calls = tuple(identities)
    rx = _names_re(names)
    i = 0
    while i < len(lines):
        if out[i].text is None:
            i += 1
            continue
        code, comment = _split_comment(out[i].text)    # an enclosing fold may have dedented it
        if not (rx.search(code) or any(re.search(r"\b" + n + r"\(", code) for n in calls)):
            if comment and rx.search(comment):
                cleaned = _clean_comment(comment, names)
                if cleaned != comment:
                    new = (code.rstrip() + ("  " + cleaned if code.strip() else cleaned)) \
                        if code.strip() else (code + cleaned if cleaned else None)
                    out[i] = Line(new if new is None or new.strip() else None,
                                  frozenset(rx.findall(comment)) | out[i].hooks)
            i += 1
            continue
        new_code, hooks, cond = _fold_line(code, env, identities, names)
        if cond is not None and _fold_if(lines, out, i, cond, hooks):
            i += 1                                      # the kept branch may hold more to fold
            continue
        if new_code != code:
            cleaned = _clean_comment(comment, names)
            pad = re.search(r"\s*$", code).group(0) if cleaned else ""
            out[i] = Line((new_code.rstrip() + pad + cleaned).rstrip() if cleaned
                          else new_code.rstrip(), hooks | out[i].hooks)
        i += 1
    _hide_noop_objects(lines, out)
    return out


def _code(s: str) -> str:
    return _split_comment(s)[0].strip()


def _block_end(lines, i):
    """The line closing the block that the ``{`` ending line ``i`` opens (braces of code only;
    ``} else {`` closes it), or None."""
    if not _code(lines[i]).endswith("{"):
        return None
    depth = 1
    for j in range(i + 1, len(lines)):
        for ch in _code(lines[j]):
            depth += (ch == "{") - (ch == "}")
            if depth == 0:
                return j
    return None


def _chain_end(lines, j):
    """From the line ``j`` closing an ``if`` block (``}``, ``} else {`` or ``} else if (...) {``):
    the line closing the whole ``if`` / ``else`` chain, or None."""
    while _code(lines[j]) != "}":
        if not re.match(r"^\}\s*else\b.*\{$", _code(lines[j])):
            return None
        j = _block_end(lines, j)
        if j is None:
            return None
    return j


def _fold_if(lines, out, i, cond, hooks):
    """An ``if`` on line ``i`` whose condition folded to ``cond``: keep the branch that runs
    (dedented to the ``if``'s indent). Returns the next line to look at, or None if the statement's
    shape is not one of: ``if (c) stmt;``, ``if (c)`` + one line [``else`` + one line],
    ``if (c) {`` … ``}`` [``else {`` … ``}``] or [``else if (d) {`` …]: then, when ``c`` is false,
    the ``else if`` line becomes an ``if`` (rewritten in ``lines``) and is the next to look at."""
    code = _code(lines[i])
    m = re.match(r"^if\s*(?:constexpr\s*)?\(", code)
    if not m:
        return None
    shown_ind = _indent(out[i].text)                   # after an enclosing fold's dedent
    toks = cexpr._tokens(code)
    c = cexpr._matching(toks, 1 if toks[1].text == "(" else 2)
    rest = code[toks[c].end:].strip()
    ind = _indent(lines[i])
    keep, drop = [], [i]
    if rest.endswith(";") and "{" not in rest:                          # if (c) stmt;
        if i + 1 < len(lines) and _code(lines[i + 1]).startswith("else"):
            return None
        if cond:
            out[i] = Line(" " * shown_ind + rest + (" " + _split_comment(lines[i])[1]
                                              if _split_comment(lines[i])[1] else ""), hooks)
            return i + 1
        out[i] = Line(None, hooks)
        return i + 1
    if rest == "":
        body = [i + 1]
        if i + 1 >= len(lines) or not _code(lines[i + 1]).endswith(";") or "{" in _code(lines[i + 1]):
            return None
        nxt = i + 2
        els = []
        if nxt < len(lines) and _code(lines[nxt]) == "else":
            if nxt + 1 >= len(lines) or not _code(lines[nxt + 1]).endswith(";"):
                return None
            drop.append(nxt)
            els = [nxt + 1]
            nxt += 2
        run, other = (body, els) if cond else (els, body)
        drop += other
        keep = run
    elif rest == "{":
        j = _block_end(lines, i)
        if j is None:
            return None
        body = list(range(i + 1, j))
        closing = _code(lines[j])
        nxt, els = j + 1, []
        if re.match(r"^\}\s*else\s+if\b", closing):                         # } else if (d) {
            if not cond:
                for k in [i] + body:
                    out[k] = Line(None, hooks | out[k].hooks)
                rest_j = lines[j].lstrip()[1:].lstrip()[4:].lstrip()        # "if (d) {"
                lines[j] = " " * _indent(lines[j]) + rest_j
                out[j] = Line(" " * _indent(out[j].text) + rest_j, hooks | out[j].hooks)
                return j
            end = _chain_end(lines, j)
            if end is None:
                return None
            drop += list(range(j, end + 1))
            nxt = end + 1
        elif closing == "} else {":
            k = _block_end(lines, j)
            if k is None:
                return None
            els = list(range(j + 1, k))
            drop += [j, k]
            nxt = k + 1
        elif closing == "}":
            drop.append(j)
        else:
            return None
        run, other = (body, els) if cond else (els, body)
        drop += other
        keep = run
    else:
        return None
    shift = (min((_indent(lines[k]) for k in keep if lines[k].strip()
                  and not lines[k].lstrip().startswith("#")), default=ind) - ind)
    for k in drop:
        out[k] = Line(None, hooks | out[k].hooks)
    for k in keep:
        if out[k].text is not None:
            out[k] = Line(_dedent(out[k].text, shift), hooks | out[k].hooks)
    return nxt


def _hide_noop_objects(lines, out):
    """Pass 3: calls on objects of a struct whose methods all reduce to nothing (``Trace``)."""
    for i, ln in enumerate(lines):
        m = re.match(r"^struct\s+(\w+)\s*\{", ln)
        if not m:
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("};")), None)
        if end is None:
            continue
        methods, hooks, ok = set(), set(), True
        j = i + 1
        while j < end:
            mm = re.match(r"^\s*__device__\s+(?:__forceinline__\s+)?void\s+(\w+)\s*\(.*\)\s*\{\s*$",
                          lines[j])
            if mm:
                k = _block_end(lines, j)
                if k is None or k > end:
                    ok = False
                    break
                if all(out[x].text is None or not out[x].text.strip() for x in range(j + 1, k)):
                    methods.add(mm.group(1))
                    for x in range(j + 1, k):
                        hooks |= out[x].hooks
                else:
                    ok = False
                j = k + 1
                continue
            if "(" in _code(lines[j]):                   # any other member function
                ok = False
            j += 1
        if not ok or not methods:
            continue
        hk = frozenset(hooks)
        struct = m.group(1)
        for d, dl in enumerate(lines):
            dm = re.match(r"^\s*" + struct + r"\s+(\w+)\s*[{(;=]", dl)
            if not dm:
                continue
            var = dm.group(1)
            call = re.compile(r"^\s*" + var + r"\.(\w+)\((.*)\);\s*(//.*)?$")
            uses = [x for x, t in enumerate(lines) if x != d and re.search(r"\b" + var + r"\b", _code(t))
                    and out[x].text is not None]
            all_calls = True
            for x in uses:
                cm = call.match(lines[x])
                if cm and cm.group(1) in methods and _balanced(cm.group(2)):
                    out[x] = Line(None, hk)
                else:
                    all_calls = False
            if all_calls and out[d].text is not None:
                out[d] = Line(None, hk)


def _balanced(s: str) -> bool:
    d = 0
    for ch in s:
        d += (ch == "(") - (ch == ")")
        if d < 0:
            return False
    return d == 0


# --------------------------------------------------------------------------------------------------
# Variant listings: calls that compile to nothing, declarations nothing reads
# --------------------------------------------------------------------------------------------------

_VOID_FN = re.compile(r"^(?:template\s*<[^>]*>\s*)?__device__\s+(?:__forceinline__\s+)?"
                      r"(?:static\s+)?(?:inline\s+)?void\s+(\w+)\s*\(")
_DECL = re.compile(r"^\s*(?:const\s+)?(?:unsigned\s+)?([A-Za-z_][\w:]*(?:<[^<>;()]*>)?)\s+([A-Za-z_]\w*)"
                   r"((?:\s*\[[^\]]*\])*)\s*(?:=\s*([^;]*)|\{([^;]*)\})?;\s*(?://.*)?$")


def _noop_functions(lines, out) -> dict[str, frozenset]:
    """``void`` functions of ``lines`` (one file, as ``out`` shows it) whose body this build
    compiles to nothing although the source has code there: name → the names that emptied it."""
    found = {}
    for i, ln in enumerate(lines):
        m = _VOID_FN.match(ln)
        if not m or out[i].text is None:
            continue
        j, depth = i, 0
        while j < len(lines):                          # the signature may span lines
            code = _code(lines[j])
            depth += code.count("(") - code.count(")")
            if depth == 0 and code.endswith("{"):
                break
            if code.endswith(";") or j - i > 8:
                j = len(lines)
            j += 1
        end = _block_end(lines, j) if j < len(lines) else None
        if end is None:
            continue
        body = range(j + 1, end)
        if any(_code(lines[k]) for k in body) and all(
                out[k].text is None or not _code(out[k].text) for k in body):
            found[m.group(1)] = frozenset().union(*(out[k].hooks for k in body))
    return found


def _hide_noop_calls(lines, out, noops) -> None:
    """Rule 5: a statement that is one call of a function of ``noops`` goes."""
    for i, ln in enumerate(out):
        if ln.text is None:
            continue
        m = re.match(r"^(\w+)\((.*)\);$", _code(ln.text))
        if m and m.group(1) in noops and _balanced(m.group(2)):
            out[i] = Line(None, ln.hooks | noops[m.group(1)])


def _scope_end(out, i) -> int | None:
    """The last shown line of the block that line ``i`` is in (braces of the shown code), or None
    when a preprocessor conditional this build left unresolved lies in it (its braces may not
    pair up)."""
    depth = 0
    for k in range(i + 1, len(out)):
        t = out[k].text
        if t is None:
            continue
        if _DIRECTIVE.match(t):
            return None
        for ch in _code(t):
            depth += (ch == "{") - (ch == "}")
            if depth < 0:
                return k
    return len(out) - 1


def _hide_dead_declarations(out, macros: str) -> None:
    """Rule 6: a declaration (no call in its initializer) whose name no later shown line of its
    scope and no macro body (``macros``) names goes; repeated until nothing more goes."""
    for _ in range(4):
        changed = False
        for i, ln in enumerate(out):
            m = _DECL.match(ln.text or "")
            if not m or m.group(1) in _KEYWORDS or "(" in (m.group(4) or "") + (m.group(5) or ""):
                continue
            end = _scope_end(out, i)
            rx = re.compile(r"\b" + re.escape(m.group(2)) + r"\b")
            if end is None or rx.search(macros) or any(
                    out[k].text is not None and rx.search(_code(out[k].text))
                    for k in range(i + 1, end + 1)):
                continue
            out[i] = Line(None, ln.hooks)
            changed = True
        if not changed:
            return


_FOR = re.compile(r"^(\s*for\s*\([^;]*;[^;]*;)([^;()]*)(\)\s*\{?\s*)$")


def _hide_write_only(out, macros: str) -> None:
    """Rule 6, counters: a declaration (no call in its initializer) whose name every later shown
    line of its scope uses only to count it up — a statement ``++x;``, ``x++;``, ``x += n;``
    (``n`` without a call) or an item of a ``for`` header's increments — goes, and so do those
    increments. Nothing changes when any other use, or a macro body, names it."""
    for i, ln in enumerate(out):
        m = _DECL.match(ln.text or "")
        if not m or m.group(1) in _KEYWORDS or "(" in (m.group(4) or "") + (m.group(5) or ""):
            continue
        name, end = m.group(2), _scope_end(out, i)
        rx = re.compile(r"\b" + re.escape(name) + r"\b")
        if end is None or rx.search(macros):
            continue
        bump = re.compile(r"^(?:\+\+\s*" + re.escape(name) + r"|" + re.escape(name)
                          + r"\s*(?:\+\+|[-+]=\s*[^;()]*))$")
        edits, ok = {}, True
        for k in range(i + 1, end + 1):
            t = out[k].text
            if t is None or not rx.search(_code(t)):
                continue
            code, comment = _split_comment(t)
            stmt = _code(t)
            if stmt.endswith(";") and bump.match(stmt[:-1].strip()):
                edits[k] = None
                continue
            f = _FOR.match(code.rstrip())
            items = f and [x.strip() for x in f.group(2).split(",")]
            if not f or rx.search(f.group(1)) or not any(bump.match(x) for x in items):
                ok = False
                break
            rest = [x for x in items if not bump.match(x)]
            if any(rx.search(x) for x in rest):
                ok = False
                break
            edits[k] = (f.group(1) + (" " + ", ".join(rest) if rest else "") + f.group(3).rstrip()
                        + ("  " + comment if comment else ""))
        if not ok or not edits:
            continue
        out[i] = Line(None, ln.hooks)
        for k, new in edits.items():
            out[k] = Line(new, out[k].hooks)


def _hide_unreachable(lines, out) -> None:
    """The shown statements after a ``return;`` / ``break;`` / ``continue;`` that a folded ``if``
    left (the line changed), up to the end of its block."""
    for i, ln in enumerate(out):
        if ln.text is None or ln.text == lines[i] or not re.match(
                r"^(return\b[^;]*|break|continue);$", _code(ln.text)):
            continue
        end = _scope_end(out, i)
        if end is None:
            continue
        for k in range(i + 1, end):
            if out[k].text is not None:
                out[k] = Line(None, ln.hooks)


def _align_comments(lines, out) -> None:
    """A changed line whose ``//`` comment is the source's keeps that comment at its column."""
    for i, ln in enumerate(out):
        if ln.text is None or ln.text == lines[i]:
            continue
        code, comment = _split_comment(ln.text)
        col = len(_split_comment(lines[i])[0])
        if comment and comment == _split_comment(lines[i])[1] and len(code.rstrip()) + 2 <= col:
            out[i] = Line(code.rstrip().ljust(col) + comment, ln.hooks)
