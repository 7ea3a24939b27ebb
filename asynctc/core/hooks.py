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
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

#: The experiment and diagnosis defines (each kernel's header says what it does). Not in the list:
#: the variant switches that are a lesson's subject where they occur (``SPLIT_K``, ``PINGPONG``,
#: ``EDGES``, ``BLOCK_SCALES``, pitfalls.cu's latent kernels' ``FENCE``/``WAIT``/``INIT``/``BOUNDS``)
#: and diagnostics.cu's ``DIAG`` (it selects which diagnostic kernel the file is).
HOOK_DEFINES = ("ABLATE", "BUG", "BREAK", "TRACE", "TRACE_CTAS", "TRACE_EVENTS", "MISMATCH_LAYOUT",
                "TX_PROBE", "TMA_ONCE")

_HOOK_RE = re.compile(r"\b(" + "|".join(HOOK_DEFINES) + r")\b")
_DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)$")
_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)\s+(.+?)\s*(?://.*)?$")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
_INT = re.compile(r"^\(?\s*(-?)\s*(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\s*\)?$")
_TOKEN = re.compile(r"\s*(?:(?P<num>0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*)|(?P<id>[A-Za-z_]\w*)|"
                    r"(?P<op>&&|\|\||==|!=|<=|>=|<<|>>|->|::|\+=|-=|\*=|/=|%=|&=|\|=|\^=|[^\s\w]))")


class Unevaluable(Exception):
    """An expression naming a hook that the evaluator cannot reduce."""


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


# --------------------------------------------------------------------------------------------------
# Expressions
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class _Tok:
    kind: str
    text: str
    start: int
    end: int


def _tokens(code: str) -> list[_Tok]:
    out, pos = [], 0
    while pos < len(code):
        m = _TOKEN.match(code, pos)
        if not m or m.end() == pos:
            break
        kind = m.lastgroup
        out.append(_Tok(kind, m.group(kind), m.start(kind), m.end()))
        pos = m.end()
    return out


@dataclasses.dataclass
class _Const:
    value: int
    boolean: bool = False

    def render(self) -> str:
        return ("true" if self.value else "false") if self.boolean else str(self.value)


@dataclasses.dataclass
class _Res:
    text: str
    changed: bool


_LEVELS = (("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">="),
           ("<<", ">>"), ("+", "-"), ("*", "/", "%"))
_BOOL_OPS = {"||", "&&", "==", "!=", "<", ">", "<=", ">="}
_OPEN, _CLOSE = "([{", ")]}"


def _operand_like(t: _Tok | None) -> bool:
    return t is not None and (t.kind in ("num", "id") or t.text in (")", "]"))


def _split_top(toks, ops, code):
    """Index of the last top-level binary operator of ``ops`` in ``toks``, or None."""
    depth, found = 0, None
    for k, t in enumerate(toks):
        if t.text in _OPEN:
            depth += 1
        elif t.text in _CLOSE:
            depth -= 1
        elif depth == 0 and t.text in ops and k > 0 and _operand_like(toks[k - 1]):
            found = k
    return found


def _matching(toks, k):
    depth = 0
    for j in range(k, len(toks)):
        if toks[j].text in _OPEN:
            depth += 1
        elif toks[j].text in _CLOSE:
            depth -= 1
            if depth == 0:
                return j
    return None


def _compute(op, a, b):
    if op in ("/", "%") and b == 0:
        raise Unevaluable(op)
    return {"||": lambda: int(bool(a) or bool(b)), "&&": lambda: int(bool(a) and bool(b)),
            "|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b,
            "==": lambda: int(a == b), "!=": lambda: int(a != b), "<": lambda: int(a < b),
            ">": lambda: int(a > b), "<=": lambda: int(a <= b), ">=": lambda: int(a >= b),
            "<<": lambda: a << b, ">>": lambda: a >> b, "+": lambda: a + b, "-": lambda: a - b,
            "*": lambda: a * b, "/": lambda: int(a / b), "%": lambda: a - b * int(a / b)}[op]()


def _evaluate(toks, code, env, hooks_seen, strict=False):
    """Fold ``toks`` (one expression): a :class:`_Const`, or a :class:`_Res` (residual text).
    A part naming no hook is a constant only if it is one whole (literals, the file's integer
    macros); otherwise it stays as written."""
    if not toks:
        raise Unevaluable("empty")
    text = code[toks[0].start:toks[-1].end]
    if not strict and not any(t.kind == "id" and t.text in HOOK_DEFINES for t in toks):
        try:
            v = _evaluate(toks, code, env, set(), strict=True)
        except (Unevaluable, RecursionError):
            return _Res(text, False)
        return v if isinstance(v, _Const) else _Res(text, False)
    if toks[0].text == "(" and _matching(toks, 0) == len(toks) - 1:      # ( e )
        inner = _evaluate(toks[1:-1], code, env, hooks_seen)
        if isinstance(inner, _Const) or not inner.changed:
            return inner if isinstance(inner, _Const) else _Res(text, False)
        return _Res(f"({inner.text})", True)
    depth, q = 0, None                                                   # c ? a : b
    for k, t in enumerate(toks):
        if t.text in _OPEN:
            depth += 1
        elif t.text in _CLOSE:
            depth -= 1
        elif depth == 0 and t.text == "?":
            q = k
            break
    if q is not None:
        depth, c = 0, None
        for k in range(q + 1, len(toks)):
            t = toks[k].text
            if t in _OPEN or t == "?":
                depth += 1
            elif t in _CLOSE:
                depth -= 1
            elif t == ":" and depth == 0:
                c = k
                break
            elif t == ":":
                depth -= 1
        if c is None:
            raise Unevaluable(text)
        cond = _evaluate(toks[:q], code, env, hooks_seen)
        if not isinstance(cond, _Const):
            raise Unevaluable(text)
        chosen = _evaluate(toks[q + 1:c] if cond.value else toks[c + 1:], code, env, hooks_seen)
        return chosen if isinstance(chosen, _Const) else _Res(chosen.text, True)
    for ops in _LEVELS:
        k = _split_top(toks, ops, code)
        if k is None:
            continue
        op = toks[k].text
        a = _evaluate(toks[:k], code, env, hooks_seen)
        b = _evaluate(toks[k + 1:], code, env, hooks_seen)
        ca, cb = isinstance(a, _Const), isinstance(b, _Const)
        if ca and cb:
            return _Const(_compute(op, a.value, b.value), op in _BOOL_OPS)
        if op in ("&&", "||"):
            absorbing = 0 if op == "&&" else 1
            for const, other in ((a, b), (b, a)):
                if isinstance(const, _Const):
                    if bool(const.value) == bool(absorbing):
                        return _Const(absorbing, True)
                    return _Res(other.text, True)
        identity = {"+": 0, "-": 0, "|": 0, "^": 0, "*": 1, "<<": 0, ">>": 0}
        if cb and op in identity and b.value == identity[op]:
            return _Res(a.text, True)
        if ca and op in ("+", "|", "^", "*") and a.value == identity[op]:
            return _Res(b.text, True)
        if (ca and _has_hook(toks[:k])) or (cb and _has_hook(toks[k + 1:])):
            raise Unevaluable(text)      # a hook's value would stay in the line: show it as written
        if not (a.changed if isinstance(a, _Res) else True) and not (
                b.changed if isinstance(b, _Res) else True):
            return _Res(text, False)
        sa = a.render() if ca else a.text
        sb = b.render() if cb else b.text
        return _Res(f"{sa} {op} {sb}", True)
    if toks[0].text in ("!", "~", "-", "+"):                             # unary
        v = _evaluate(toks[1:], code, env, hooks_seen)
        if not isinstance(v, _Const):
            raise Unevaluable(text)
        op = toks[0].text
        return _Const(int(not v.value), True) if op == "!" else \
            _Const({"~": ~v.value, "-": -v.value, "+": v.value}[op])
    if len(toks) == 1:
        t = toks[0]
        if t.kind == "num":
            return _Const(int(t.text.rstrip("uUlL"), 0))
        if t.kind == "id" and t.text in env:
            if t.text in HOOK_DEFINES:
                hooks_seen.add(t.text)
            return _Const(env[t.text])
        if t.text in ("true", "false"):
            return _Const(int(t.text == "true"), True)
    raise Unevaluable(text)


def _has_hook(toks) -> bool:
    return any(t.kind == "id" and t.text in HOOK_DEFINES for t in toks)


def evaluate_condition(cond: str, env: dict[str, int]):
    """``(value, hooks)`` of a preprocessor or ``if`` condition that names a hook and evaluates
    with ``env``; ``None`` when it names none or does not evaluate."""
    if not _HOOK_RE.search(cond):
        return None
    seen: set = set()
    try:
        v = _evaluate(_tokens(cond), cond, env, seen)
    except Unevaluable:
        return None
    return (bool(v.value), frozenset(seen)) if isinstance(v, _Const) else None


# --------------------------------------------------------------------------------------------------
# Lines
# --------------------------------------------------------------------------------------------------

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


def _clean_comment(comment: str) -> str:
    """A ``//`` comment without its parentheses that name a hook (``""`` if nothing is left)."""
    if not _HOOK_RE.search(comment):
        return comment
    out = comment
    for _ in range(4):
        new = re.sub(r"\s*\([^()]*\b(?:" + "|".join(HOOK_DEFINES) + r")\b[^()]*\)", "", out)
        if new == out:
            break
        out = new
    return "" if re.fullmatch(r"//\s*[:;,.]?\s*", out) else out


def _preprocess(lines, env):
    """Pass 1: ``#if`` blocks on hooks. Returns (hidden flags, hooks per line)."""
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
                branches = _branch_conditions(lines, i, env)
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
                    v = evaluate_condition(cond, env)
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


def _branch_conditions(lines, i, env):
    """For the ``#if`` at line ``i``: its and its ``#elif``s' (value, hooks), or None unless every
    branch that may be taken evaluates."""
    v = evaluate_condition(_split_comment(_DIRECTIVE.match(lines[i]).group(2))[0], env)
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
            w = evaluate_condition(_split_comment(m.group(2))[0], env)
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


def _region(toks, k):
    """(first, last) token indices of the expression around token ``k`` that a hook's value can
    be folded in, and whether it is an ``if`` condition; None when there is none."""
    n = len(toks)
    stack, opens = [], []
    for j, t in enumerate(toks):
        if j == k:
            opens = list(stack)
        if t.text in _OPEN or (t.text == "<" and j > 0 and toks[j - 1].kind == "id"
                               and toks[j - 1].end == t.start and _template_close(toks, j)):
            stack.append(j)
        elif (t.text in _CLOSE or (t.text == ">" and stack and toks[stack[-1]].text == "<")) and stack:
            stack.pop()
    for o in reversed(opens):
        c = _template_close(toks, o) if toks[o].text == "<" else _matching(toks, o)
        if c is None:
            return None
        before = toks[o - 1] if o > 0 else None
        if toks[o].text == "(" and before is not None and before.text in ("if", "constexpr", "while"):
            return o + 1, c - 1, before.text != "while"
        call = before is not None and (before.kind == "id" or before.text in (")", ">"))
        if toks[o].text in "<[" or call:
            lo, hi, depth = o + 1, c - 1, 0          # the comma-separated argument holding k
            for j in range(o + 1, c):
                t = toks[j].text
                if t in _OPEN:
                    depth += 1
                elif t in _CLOSE:
                    depth -= 1
                elif t == "," and depth == 0:
                    if j < k:
                        lo = j + 1
                    else:
                        hi = j - 1
                        break
            return lo, hi, False
    lo, hi, depth = 0, n - 1, 0                       # statement level
    for j in range(n):
        t = toks[j].text
        if t in _OPEN:
            depth += 1
        elif t in _CLOSE:
            depth -= 1
        elif depth == 0 and (t in ("=", "+=", "-=", "*=", "/=", "|=", "&=", "^=", "%=", ";", "{", "}",
                                   ",") or t == "return"):
            if j < k:
                lo = j + 1
            elif j > k:
                hi = j - 1
                break
    return (lo, hi, False) if lo <= hi else None


def _template_close(toks, o):
    depth = 0
    for j in range(o + 1, len(toks)):
        t = toks[j].text
        if t in ("(", "["):
            depth += 1
        elif t in (")", "]"):
            depth -= 1
            if depth < 0:
                return None
        elif t in (";", "&&", "||", "{"):
            return None
        elif t == ">" and depth == 0:
            return j
    return None


def _fold_line(code, env, identities):
    """Pass 2 on one line's code: (new code, hooks, constant ``if`` condition or None)."""
    hooks: set = set()
    for name, h in identities.items():               # identity calls: f(x) -> x
        while True:
            m = re.search(r"\b" + name + r"\(", code)
            if not m:
                break
            toks = _tokens(code[m.end() - 1:])
            c = _matching(toks, 0)
            if c is None or any(t.text == "," and _depth_at(toks, j) == 1 for j, t in enumerate(toks[:c])):
                break
            inner = code[m.end():m.end() - 1 + toks[c].start]
            code = code[:m.start()] + inner + code[m.end() + toks[c].end - 1:]
            hooks |= h
    skipped: set = set()
    for _ in range(32):
        toks = _tokens(code)
        k = next((j for j, t in enumerate(toks) if t.kind == "id" and t.text in HOOK_DEFINES
                  and t.start not in skipped), None)
        if k is None:
            break
        reg = _region(toks, k)
        try:
            if reg is None:
                raise Unevaluable(code)
            lo, hi, is_cond = reg
            seen: set = set()
            v = _evaluate(toks[lo:hi + 1], code, env, seen)
        except Unevaluable:
            skipped.add(toks[k].start)
            continue
        hooks |= seen
        if is_cond and isinstance(v, _Const):
            return code, frozenset(hooks), bool(v.value)
        new = v.render() if isinstance(v, _Const) else v.text
        code = code[:toks[lo].start] + new + code[toks[hi].end:]
        skipped = {s for s in skipped if s < toks[lo].start}
    return code, frozenset(hooks), None


def _depth_at(toks, k):
    d = 0
    for t in toks[:k]:
        d += (t.text in _OPEN) - (t.text in _CLOSE)
    return d


def _indent(s: str) -> int:
    return len(s) - len(s.lstrip(" "))


def _dedent(s: str, d: int) -> str:
    return s[min(d, _indent(s)):] if d > 0 else s


def hide(text: str, path: Path | None = None, defines: dict | None = None) -> list[Line]:
    """What the default build shows of every line of ``text`` (a kernel source; ``path`` for its
    includes' defaults; ``defines`` the compile-time values a kernel was built with, which override
    the file's defaults for the hooks). One :class:`Line` per line of ``text.splitlines()``."""
    lines = text.splitlines()
    env = macro_values(text, path)
    for k, v in (defines or {}).items():
        if k in HOOK_DEFINES and isinstance(v, (int, bool)):
            env[k] = int(v)
    hidden, why = _preprocess(lines, env)
    out = [Line(None, why[i]) if hidden[i] else Line(ln) for i, ln in enumerate(lines)]

    def text_of(j):
        return out[j].text, out[j].hooks

    identities = _identity_functions(lines, text_of)
    names = tuple(identities)
    i = 0
    while i < len(lines):
        if out[i].text is None:
            i += 1
            continue
        code, comment = _split_comment(lines[i])
        if not (_HOOK_RE.search(code) or any(re.search(r"\b" + n + r"\(", code) for n in names)):
            if comment and _HOOK_RE.search(comment):
                cleaned = _clean_comment(comment)
                if cleaned != comment:
                    new = (code.rstrip() + ("  " + cleaned if code.strip() else cleaned)) \
                        if code.strip() else (code + cleaned if cleaned else None)
                    out[i] = Line(new if new is None or new.strip() else None,
                                  frozenset(_HOOK_RE.findall(comment)))
            i += 1
            continue
        new_code, hooks, cond = _fold_line(code, env, identities)
        if cond is not None:
            done = _fold_if(lines, out, i, cond, hooks)
            if done:
                i = done
                continue
        if new_code != code:
            cleaned = _clean_comment(comment)
            pad = re.search(r"\s*$", code).group(0) if cleaned else ""
            out[i] = Line((new_code.rstrip() + pad + cleaned).rstrip() if cleaned
                          else new_code.rstrip(), hooks)
        i += 1
    _hide_noop_objects(lines, out)
    return out


def _code(s: str) -> str:
    return _split_comment(s)[0].strip()


def _braces(s: str) -> int:
    c = _code(s)
    return c.count("{") - c.count("}")


def _block_end(lines, i):
    """The line closing the block opened on line ``i`` (braces of code only), or None."""
    depth = 0
    for j in range(i, len(lines)):
        depth += _braces(lines[j])
        if depth == 0 and j > i:
            return j
        if depth <= 0 and j > i:
            return None
    return None


def _fold_if(lines, out, i, cond, hooks):
    """An ``if`` on line ``i`` whose condition folded to ``cond``: keep the branch that runs
    (dedented to the ``if``'s indent). Returns the next line to look at, or None if the statement's
    shape is not one of: ``if (c) stmt;``, ``if (c)`` + one line [``else`` + one line],
    ``if (c) {`` … ``}`` [``else {`` … ``}``]."""
    code = _code(lines[i])
    m = re.match(r"^if\s*(?:constexpr\s*)?\(", code)
    if not m:
        return None
    toks = _tokens(code)
    c = _matching(toks, 1 if toks[1].text == "(" else 2)
    rest = code[toks[c].end:].strip()
    ind = _indent(lines[i])
    keep, drop = [], [i]
    if rest.endswith(";") and "{" not in rest:                          # if (c) stmt;
        if i + 1 < len(lines) and _code(lines[i + 1]).startswith("else"):
            return None
        if cond:
            out[i] = Line(" " * ind + rest + (" " + _split_comment(lines[i])[1]
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
        if closing == "} else {":
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
    if any(out[k].text is None and not out[k].hooks for k in keep):
        pass
    shift = (min((_indent(lines[k]) for k in keep if lines[k].strip()), default=ind) - ind)
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
