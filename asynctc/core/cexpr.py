"""Folding C/C++ expressions that name compile-time switches (used by :mod:`asynctc.core.hooks`).

A listing of a kernel shows what one build compiles: the experiment hooks' (and, for a variant
listing, the variant switches') sub-expressions are folded with their values and the rest of the
line is kept as written. Here: a small tokenizer, an evaluator for integer expressions
(``?:``, ``|| && | ^ & == != < > <= >= << >> + - * / %``, unary ``! ~ - +``, parentheses) that
folds only what names one of ``names`` and keeps every other part as text, and the region of a
line such a name can be folded in (an ``if`` condition, a call or template argument, the
statement). Everything is *evaluated*, never guessed: an expression the evaluator cannot read (a
call, a cast, an unknown name beside a switch) raises :class:`Unevaluable` and stays as written.
"""

from __future__ import annotations

import dataclasses
import re

_TOKEN = re.compile(r"\s*(?:(?P<num>0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*)|(?P<id>[A-Za-z_]\w*)|"
                    r"(?P<op>&&|\|\||==|!=|<=|>=|<<|>>|->|::|\+=|-=|\*=|/=|%=|&=|\|=|\^=|[^\s\w]))")


class Unevaluable(Exception):
    """An expression naming a switch that the evaluator cannot reduce."""


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
#: A C string literal, as a pattern without groups, and compiled with its text between the quotes
#: as group 1.
LITERAL = r'"(?:[^"\\]|\\.)*"'
STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def split_args(text: str) -> list[str]:
    """The arguments of a call, ``text`` being what stands inside its parentheses, split at
    top-level commas (string literals skipped; ``()``, ``[]`` and ``{}`` nest), each stripped."""
    args, depth, start, i = [], 0, 0, 0
    while i < len(text):
        if text[i] == '"':
            i = STRING.match(text, i).end()
            continue
        if text[i] in _OPEN:
            depth += 1
        elif text[i] in _CLOSE:
            depth -= 1
        elif text[i] == "," and depth == 0:
            args.append(text[start:i].strip())
            start = i + 1
        i += 1
    return args + [text[start:].strip()]


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


def _evaluate(toks, code, env, names, seen, strict=False):
    """Fold ``toks`` (one expression) with the values ``env``: a :class:`_Const`, or a
    :class:`_Res` (residual text). Only parts naming one of ``names`` are folded (the names met
    are added to ``seen``); a part naming none is a constant only if it is one whole (literals,
    ``env``'s integer macros); otherwise it stays as written."""
    if not toks:
        raise Unevaluable("empty")
    text = code[toks[0].start:toks[-1].end]
    if not strict and not has_name(toks, names):
        try:
            v = _evaluate(toks, code, env, names, set(), strict=True)
        except (Unevaluable, RecursionError):
            return _Res(text, False)
        return v if isinstance(v, _Const) else _Res(text, False)
    if toks[0].text == "(" and _matching(toks, 0) == len(toks) - 1:      # ( e )
        inner = _evaluate(toks[1:-1], code, env, names, seen)
        if isinstance(inner, _Const) or not inner.changed:
            return inner if isinstance(inner, _Const) else _Res(text, False)
        if re.fullmatch(r"[\w.]+", inner.text):                        # (x) -> x
            return _Res(inner.text, True)
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
        cond = _evaluate(toks[:q], code, env, names, seen)
        if not isinstance(cond, _Const):
            raise Unevaluable(text)
        chosen = _evaluate(toks[q + 1:c] if cond.value else toks[c + 1:], code, env, names, seen)
        return chosen if isinstance(chosen, _Const) else _Res(chosen.text, True)
    for ops in _LEVELS:
        k = _split_top(toks, ops, code)
        if k is None:
            continue
        op = toks[k].text
        a = _evaluate(toks[:k], code, env, names, seen)
        b = _evaluate(toks[k + 1:], code, env, names, seen)
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
        identity = {"+": 0, "-": 0, "|": 0, "^": 0, "*": 1, "/": 1, "<<": 0, ">>": 0}
        if cb and op in identity and b.value == identity[op]:
            return _Res(a.text, True)
        if ca and op in ("+", "|", "^", "*") and a.value == identity[op]:
            return _Res(b.text, True)
        if (ca and has_name(toks[:k], names)) or (cb and has_name(toks[k + 1:], names)):
            raise Unevaluable(text)      # a switch's value would stay in the line: show it as written
        if not (a.changed if isinstance(a, _Res) else True) and not (
                b.changed if isinstance(b, _Res) else True):
            return _Res(text, False)
        sa = a.render() if ca else a.text
        sb = b.render() if cb else b.text
        return _Res(f"{sa} {op} {sb}", True)
    if toks[0].text in ("!", "~", "-", "+"):                             # unary
        v = _evaluate(toks[1:], code, env, names, seen)
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
            if t.text in names:
                seen.add(t.text)
            return _Const(env[t.text])
        if t.text in ("true", "false"):
            return _Const(int(t.text == "true"), True)
    raise Unevaluable(text)


def has_name(toks, names) -> bool:
    """Does a token of ``toks`` name one of ``names``?"""
    return any(t.kind == "id" and t.text in names for t in toks)


def evaluate_condition(cond: str, env: dict[str, int], names):
    """``(value, names met)`` of a preprocessor or ``if`` condition that names one of ``names``
    and evaluates with ``env``; ``None`` when it names none or does not evaluate."""
    if not has_name(_tokens(cond), names):
        return None
    seen: set = set()
    try:
        v = _evaluate(_tokens(cond), cond, env, names, seen)
    except Unevaluable:
        return None
    return (bool(v.value), frozenset(seen)) if isinstance(v, _Const) else None


def value(expr: str, env: dict[str, int]) -> int:
    """The integer value of a whole C expression over ``env`` (every name must be in ``env``;
    C's truncating ``/`` and ``%``). Raises :class:`Unevaluable` naming the first unknown name or
    the part that does not evaluate (a call, a cast, a division by zero)."""
    toks = _tokens(expr)
    if not toks or toks[-1].end < len(expr.rstrip()):
        raise Unevaluable(expr.strip())
    for t in toks:
        if t.kind == "id" and t.text not in env and t.text not in ("true", "false"):
            raise Unevaluable(f"name {t.text}")
    v = _evaluate(toks, expr, env, set(env), set(), strict=True)
    if not isinstance(v, _Const):
        raise Unevaluable(expr.strip())
    return v.value


# --------------------------------------------------------------------------------------------------
# Where a switch can be folded in a line
# --------------------------------------------------------------------------------------------------

def _region(toks, k):
    """(first, last) token indices of the expression around token ``k`` that a switch's value can
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


def fold_line(code, env, identities, names):
    """One line's code with the switches ``names`` folded (``env``: their values; ``identities``:
    functions ``f(x)`` that are ``x``, name → the switches that make them so): (new code, the
    switches met, the constant value of the line's ``if`` condition or None)."""
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
        k = next((j for j, t in enumerate(toks) if t.kind == "id" and t.text in names
                  and t.start not in skipped), None)
        if k is None:
            break
        reg = _region(toks, k)
        try:
            if reg is None:
                raise Unevaluable(code)
            lo, hi, is_cond = reg
            seen: set = set()
            v = _evaluate(toks[lo:hi + 1], code, env, names, seen)
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

