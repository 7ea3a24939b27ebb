"""Read a k-loop body or step, written in CUDA C++, as the protocol it runs (deep dive 06e's code
exercise ``ch06.consumer_loop``; chapter 05's ``ch05.producer_step`` extends its machine): a small
tokenizer, parser and interpreter. Pure Python; NVRTC has compiled the text before it gets here
(:mod:`asynctc.warp_specialization.consumer_loop`, :mod:`asynctc.pipeline.producer_step`), so the reader only has to follow
valid code, not reject invalid code.

It reads statements ``expr;``, declarations (``const int s = pos.stage;``), ``if``/``else``,
blocks, ``break``/``continue``; integer expressions (C operators, ``u`` suffixes, casts) over the
names in scope of the kernel's consumer loop (:data:`SCOPE`): the barriers ``full``/``empty``
(``full.wait(stage, parity, wg, k)`` returns true — the reader follows the path where no wait gives
up — ``empty[s]``, ``empty.arrive(s)``), the ring position ``pos`` (``.stage``, ``.phase``,
``.advance()``), ``prev``, ``broken``, ``acc``, ``da0``/``db0``, ``kStageBytes``, ``elected``,
``wg``, ``k``, and the helpers of :data:`HELPERS` (``tr.event`` is ignored).

:func:`parse` makes the program (:class:`ReadError` names the line of the text); :func:`run` runs
it for every k-tile of a few tiles on a ring of S stages as one thread of a consumer warpgroup:
each iteration's :class:`Event` list, the kernel's own code after each tile's loop included.
"""

from __future__ import annotations

import collections
import dataclasses
import re

#: The names the loop body may use, and what each is (the kernel's consumer branch, rung 3).
SCOPE = ("k", "T", "STAGES", "kStageBytes", "elected", "wg", "cw", "ring", "prev", "broken", "pos",
         "full", "empty", "acc", "da0", "db0", "tr")
#: The helpers the reader knows (functions called by name).
HELPERS = ("fence_accumulators", "mma_ktile", "wgmma_desc_advance", "wgmma_wait_group", "release",
           "mbarrier_arrive", "wgmma_fence", "wgmma_commit_group", "__syncwarp")
_READ_ONLY = ("k", "T", "STAGES", "kStageBytes", "elected", "wg", "cw", "ring", "full", "empty",
              "acc", "da0", "db0", "tr")
_TYPES = ("const", "int", "unsigned", "u32", "u64", "bool", "auto", "uint32_t", "int32_t", "uint64_t",
          "size_t", "long")
_KEYWORDS = ("if", "else", "for", "while", "do", "switch", "return", "break", "continue", "goto",
             "true", "false")

_TOKEN = re.compile(r"""
    (?P<ws>\s+) | (?P<comment>//[^\n]*|/\*.*?\*/) |
    (?P<num>0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*) |
    (?P<name>[A-Za-z_]\w*) |
    (?P<op><<=|>>=|&&|\|\||==|!=|<=|>=|<<|>>|\+\+|--|\+=|-=|\*=|/=|%=|&=|\|=|\^=|->|::|[-+*/%^&|!~<>=(){}\[\];,.?:])
    """, re.X | re.S)


class ReadError(ValueError):
    """The reader cannot follow the text: ``line`` (1-based, of the learner's text) and the reason."""

    def __init__(self, line: int, why: str):
        super().__init__(f"line {line}: {why}")
        self.line, self.why = line, why


@dataclasses.dataclass(frozen=True)
class Event:
    """One protocol step of a thread: ``kind`` is "wait" (``barrier``, ``stage``, ``parity``),
    "fence" (fence_accumulators), "wgmma_fence", "mma" (``a``, ``b``: the descriptors as (name,
    byte offset)), "commit", "wait_group" (``n``), "arrive" (``barrier``, ``stage``) or
    "syncwarp"; ``line`` of the text (0: the kernel's own code after the loop)."""
    kind: str
    line: int
    barrier: str | None = None
    stage: int | None = None
    parity: int | None = None
    n: int | None = None
    a: tuple | None = None
    b: tuple | None = None


@dataclasses.dataclass
class Iteration:
    """One k-tile of one tile as a thread ran it: ``i`` the ring counter, ``tile``, ``k``, the ring
    position ``pos`` (stage, phase) the body started with, its ``events``; ``tail`` marks the
    kernel's own code after a tile's loop (its ``k`` is the tile's last)."""
    i: int
    tile: int
    k: int
    pos: tuple[int, int]
    events: list[Event]
    tail: bool = False


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out, line, at = [], 1, 0
    while at < len(text):
        m = _TOKEN.match(text, at)
        if not m:
            raise ReadError(line, f"cannot read {text[at:at + 12]!r}")
        kind = m.lastgroup
        if kind not in ("ws", "comment"):
            out.append((kind, m.group(), line))
        line += m.group().count("\n")
        at = m.end()
    out.append(("end", "", line))
    return out


# ---- parser: statements and expressions as tuples (kind, line, ...) ------------------------------

_BINARY = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">="),
           ("<<", ">>"), ("+", "-"), ("*", "/", "%")]
_ASSIGN = ("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=")


class _Parser:
    def __init__(self, text: str, loops: bool = False):
        self.toks, self.at, self.loops = _tokens(text), 0, loops

    def peek(self, ahead: int = 0):
        return self.toks[min(self.at + ahead, len(self.toks) - 1)]

    def take(self, want: str | None = None):
        tok = self.peek()
        if want is not None and tok[1] != want:
            raise ReadError(tok[2], f"expected {want!r} before {tok[1] or 'the end'!r}")
        self.at += 1
        return tok

    def program(self) -> list:
        out = []
        while self.peek()[0] != "end":
            out.append(self.statement())
        return out

    def statement(self):
        kind, val, line = self.peek()
        if val == "{":
            self.take()
            body = []
            while self.peek()[1] != "}":
                if self.peek()[0] == "end":
                    raise ReadError(line, "a block opened here is never closed")
                body.append(self.statement())
            self.take("}")
            return ("block", line, body)
        if val == ";":
            self.take()
            return ("block", line, [])
        if val == "if":
            self.take()
            self.take("(")
            cond = self.expr()
            self.take(")")
            then = self.statement()
            other = None
            if self.peek()[1] == "else":
                self.take()
                other = self.statement()
            return ("if", line, cond, then, other)
        if val in ("break", "continue"):
            self.take()
            self.take(";")
            return (val, line)
        if val == "for" and self.loops:
            self.take()
            self.take("(")
            init = self.statement() if self.peek()[1] != ";" else ("block", line, [])
            if init[0] == "block" and init[2]:
                raise ReadError(line, "a for loop's first part is a declaration or an expression")
            if init[0] == "block":
                self.take(";")
            cond = self.expr() if self.peek()[1] != ";" else ("num", line, 1)
            self.take(";")
            step = self.expr() if self.peek()[1] != ")" else ("num", line, 0)
            self.take(")")
            return ("for", line, init, cond, step, self.statement())
        if val == "while" and self.loops:
            self.take()
            self.take("(")
            cond = self.expr()
            self.take(")")
            return ("for", line, ("block", line, []), cond, ("num", line, 0), self.statement())
        if val in ("do", "switch", "goto", "return") and self.loops:
            raise ReadError(line, f"the check follows if/else, for and while; it does not follow {val!r}")
        if val in ("for", "while", "do", "switch", "goto", "return"):
            raise ReadError(line, f"the check reads the loop body as straight-line code with if/else; "
                                  f"it does not follow {val!r}")
        if kind == "name" and val in _TYPES:
            return self.declaration()
        if kind == "name" and val in ("float", "double", "half", "__half", "__nv_bfloat16"):
            raise ReadError(line, f"a {val!r} declaration: the check reads int counters only, and the "
                                  "accumulators `acc` are in scope already (leave out their declaration)")
        e = self.expr()
        self.take(";")
        return ("expr", line, e)

    def declaration(self):
        line = self.peek()[2]
        while self.peek()[0] == "name" and self.peek()[1] in _TYPES:
            self.take()
        out = []
        while True:
            kind, name, ln = self.take()
            if kind != "name" or name in _KEYWORDS:
                raise ReadError(ln, f"expected a variable name, not {name!r}")
            init = None
            if self.peek()[1] == "=":
                self.take()
                init = self.assignment()
            elif self.peek()[1] == "{":
                self.take()
                init = self.expr()
                self.take("}")
            out.append(("decl", ln, name, init))
            if self.peek()[1] != ",":
                break
            self.take()
        self.take(";")
        return ("seq", line, out)

    def expr(self):
        e = self.assignment()
        while self.peek()[1] == ",":
            line = self.take()[2]
            e = ("comma", line, e, self.assignment())
        return e

    def assignment(self):
        left = self.conditional()
        if self.peek()[1] in _ASSIGN:
            op, line = self.take()[1:]
            return ("assign", line, op, left, self.assignment())
        return left

    def conditional(self):
        c = self.binary(0)
        if self.peek()[1] == "?":
            line = self.take()[2]
            a = self.expr()
            self.take(":")
            return ("cond", line, c, a, self.conditional())
        return c

    def binary(self, level: int, stop: tuple = ()):
        if level == len(_BINARY):
            return self.unary()
        e = self.binary(level + 1, stop)
        while self.peek()[1] in _BINARY[level] and self.peek()[1] not in stop:
            op, line = self.take()[1:]
            e = ("binary", line, op, e, self.binary(level + 1, stop))
        return e

    def unary(self):
        kind, val, line = self.peek()
        if val in ("!", "-", "+", "~"):
            self.take()
            return ("unary", line, val, self.unary())
        if val in ("++", "--"):
            self.take()
            return ("incdec", line, val, self.unary(), True)
        if val == "(" and self.peek(1)[0] == "name" and self.peek(1)[1] in _TYPES:
            self.take()
            while self.peek()[1] != ")":
                self.take()
            self.take(")")
            return ("cast", line, self.unary())
        return self.postfix(self.primary())

    def postfix(self, e):
        while True:
            kind, val, line = self.peek()
            if val == "(":
                self.take()
                args = []
                while self.peek()[1] != ")":
                    args.append(self.assignment())
                    if self.peek()[1] == ",":
                        self.take()
                    elif self.peek()[1] != ")":
                        raise ReadError(self.peek()[2], f"expected ',' or ')' in the call, not {self.peek()[1]!r}")
                self.take(")")
                e = ("call", line, e, args)
            elif val == "[":
                self.take()
                idx = self.expr()
                self.take("]")
                e = ("index", line, e, idx)
            elif val in (".", "->"):
                self.take()
                kind, name, ln = self.take()
                if kind != "name":
                    raise ReadError(ln, f"expected a member name after '.', not {name!r}")
                e = ("member", line, e, name)
            elif val in ("++", "--"):
                self.take()
                e = ("incdec", line, val, e, False)
            else:
                return e

    def primary(self):
        kind, val, line = self.take()
        if kind == "num":
            return ("num", line, int(val.rstrip("uUlL"), 0))
        if val in ("true", "false"):
            return ("num", line, int(val == "true"))
        if val == "(":
            e = self.expr()
            self.take(")")
            return e
        if kind == "name" and val == "static_cast":
            self.take("<")
            while self.peek()[1] != ">":
                self.take()
            self.take(">")
            self.take("(")
            e = self.expr()
            self.take(")")
            return ("cast", line, e)
        if kind == "name" and val == "wgmma_wait_group" and self.peek()[1] == "<":
            self.take("<")
            n = self.binary(0, stop=(">", ">=", ">>"))
            self.take(">")
            return ("template", line, val, n)
        if kind == "name" and val not in _KEYWORDS:
            return ("name", line, val)
        raise ReadError(line, f"cannot read {val or 'the end of the text'!r} here")


def parse(text: str, loops: bool = False) -> list:
    """The program of a loop body (a list of statements); ``loops``: also read ``for`` loops
    (deep dive 06e's whole k-loop). Raises :class:`ReadError`."""
    return _Parser(text, loops).program()


# ---- interpreter -------------------------------------------------------------------------------

_Barriers = collections.namedtuple("_Barriers", "name")              # full or empty
_BarrierRef = collections.namedtuple("_BarrierRef", "name stage")     # full[s], empty[s]
_Desc = collections.namedtuple("_Desc", "name offset")                # da0 / db0 + bytes
#: A function named (``target``: the object of a method; ``n``: wgmma_wait_group's argument).
_Fn = collections.namedtuple("_Fn", "name target n", defaults=(None, None))


class _Ring:
    def __init__(self, stages: int):
        self.stages, self.stage, self.phase = stages, 0, 0


class _Thing:
    """A name the loop may pass around but not compute with (``acc``, ``tr``)."""

    def __init__(self, what: str):
        self.what = what


class _Stop(Exception):
    def __init__(self, what: str):
        self.what = what


_U32 = 0xFFFFFFFF
#: Calls that are one event each (tr.event: none).
_PLAIN = {"fence_accumulators": "fence", "wgmma_fence": "wgmma_fence", "wgmma_commit_group": "commit",
          "__syncwarp": "syncwarp", "event": None}


def _c_div(a: int, b: int, line: int) -> int:
    if b == 0:
        raise ReadError(line, "division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


class _Machine:
    def __init__(self, stages: int, k_tiles: int, stage_bytes: int, wg: int, elected: bool):
        self.ring = _Ring(stages)
        self.env = {"T": k_tiles, "STAGES": stages, "kStageBytes": stage_bytes,
                    "elected": int(elected), "wg": wg, "cw": wg - 1, "broken": 0, "pos": self.ring,
                    "full": _Barriers("full"), "empty": _Barriers("empty"),
                    "acc": _Thing("the accumulators acc"), "da0": _Desc("da0", 0),
                    "db0": _Desc("db0", 0), "tr": _Thing("the trace tr")}
        self.events: list[Event] = []
        self.locals: dict[str, object] = {}

    # -- values
    def _int(self, v, line: int, what: str) -> int:
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, int):
            return v
        raise ReadError(line, f"{what} is {self._describe(v)}, not a number")

    @staticmethod
    def _describe(v) -> str:
        shown = {_Barriers: lambda: f"the barrier array {v.name}", _Desc: lambda: f"a descriptor ({v.name})",
                 _BarrierRef: lambda: f"the barrier {v.name}[{v.stage}]", _Thing: lambda: v.what,
                 _Fn: lambda: f"the function {v.name} (not called)", _Ring: lambda: "the ring position pos"}
        return shown.get(type(v), lambda: type(v).__name__)()

    def lookup(self, name: str, line: int):
        if name in self.locals:
            return self.locals[name]
        if name in self.env:
            return self.env[name]
        if name in HELPERS:
            return _Fn(name)
        raise ReadError(line, f"the check does not know {name!r}: the loop may use "
                              f"{', '.join(n for n in SCOPE if n not in ('tr', 'ring', 'cw'))} and "
                              f"the helpers fence_accumulators, mma_ktile, wgmma_desc_advance, "
                              f"wgmma_wait_group<N>, release")

    # -- statements
    def execute(self, stmts: list) -> None:
        for st in stmts:
            self.statement(st)

    def statement(self, st) -> None:
        kind, line = st[0], st[1]
        if kind == "block":
            outer = set(self.locals)
            try:
                self.execute(st[2])
            finally:                                     # the block's own declarations end with it
                self.locals = {n: v for n, v in self.locals.items() if n in outer}
        elif kind == "seq":                              # declarations: in the enclosing scope
            self.execute(st[2])
        elif kind == "decl":
            self.locals[st[2]] = self.eval(st[3]) if st[3] is not None else 0
        elif kind == "if":
            if self.truth(self.eval(st[2]), line):
                self.statement(st[3])
            elif st[4] is not None:
                self.statement(st[4])
        elif kind == "expr":
            v = self.eval(st[2])
            if isinstance(v, _Fn):
                what = f"{v.name}<{v.n}>" if v.n is not None else v.name
                raise ReadError(line, f"{what} names the function without calling it: write {what}()")
        elif kind in ("break", "continue"):
            raise _Stop(kind)
        elif kind == "for":
            self._for(st)

    #: Iterations of all ``for`` loops one run may take (a loop that never ends is an error).
    LOOP_LIMIT = 4096

    def _for(self, st) -> None:
        _, line, init, cond, step, body = st
        outer = set(self.locals)
        try:
            if init[0] != "block":
                self.statement(init)
            while self.truth(self.eval(cond), line):
                self.loop_steps = getattr(self, "loop_steps", 0) + 1
                if self.loop_steps > self.LOOP_LIMIT:
                    raise ReadError(line, f"this loop runs more than {self.LOOP_LIMIT} times: "
                                          "does its condition ever become false?")
                try:
                    self.statement(body)
                except _Stop as s:
                    if s.what == "break":
                        break
                self.eval(step)
        finally:                                         # the loop's own variable ends with it
            self.locals = {n: v for n, v in self.locals.items() if n in outer}

    def truth(self, v, line: int) -> bool:
        if isinstance(v, (_BarrierRef, _Desc)):
            raise ReadError(line, f"a condition on {self._describe(v)}")
        return bool(self._int(v, line, "the condition"))

    # -- expressions
    def eval(self, e):
        kind, line = e[0], e[1]
        if kind == "num":
            return e[2]
        if kind == "name":
            return self.lookup(e[2], line)
        if kind == "template":
            return _Fn(e[2], n=self._int(self.eval(e[3]), line, "the template argument"))
        if kind == "member":
            obj = self.eval(e[2])
            if isinstance(obj, _Ring) and e[3] in ("stage", "phase"):
                return getattr(obj, e[3])
            if isinstance(obj, _Ring) and e[3] == "advance":
                return _Fn("advance", obj)
            if isinstance(obj, _Barriers) and e[3] in ("wait", "arrive"):
                return _Fn(e[3], obj)
            if isinstance(obj, _Thing) and obj.what == "the trace tr" and e[3] == "event":
                return _Fn("event", obj)
            raise ReadError(line, f"the check does not know {self._describe(obj)}.{e[3]}")
        if kind == "index":
            obj = self.eval(e[2])
            if not isinstance(obj, _Barriers):
                raise ReadError(line, f"{self._describe(obj)} cannot be indexed")
            return _BarrierRef(obj.name, self._stage(self.eval(e[3]), line))
        if kind == "call":
            return self.call(self.eval(e[2]), [self.eval(a) for a in e[3]], line)
        if kind == "unary":
            v = self.eval(e[3])
            if e[2] == "!":
                return int(not self.truth(v, line))
            v = self._int(v, line, f"the operand of {e[2]}")
            return {"-": -v, "+": v, "~": ~v & _U32}[e[2]]
        if kind == "cast":
            return self.eval(e[2])
        if kind == "binary":
            return self.binary(e[2], e[3], e[4], line)
        if kind == "cond":
            return self.eval(e[3]) if self.truth(self.eval(e[2]), line) else self.eval(e[4])
        if kind == "comma":
            self.eval(e[2])
            return self.eval(e[3])
        if kind == "assign":
            op = e[2]
            new = self.eval(e[4])
            if op != "=":
                new = self.binary(op[:-1], e[3], ("num", line, 0), line, right=new)
            self.store(e[3], new, line)
            return new
        if kind == "incdec":
            old = self._int(self.eval(e[3]), line, f"the operand of {e[2]}")
            new = old + (1 if e[2] == "++" else -1)
            self.store(e[3], new, line)
            return new if e[4] else old
        raise ReadError(line, f"cannot read this expression ({kind})")

    def binary(self, op: str, a_expr, b_expr, line: int, right=None):
        if op == "&&":
            return int(self.truth(self.eval(a_expr), line) and self.truth(self.eval(b_expr), line))
        if op == "||":
            return int(self.truth(self.eval(a_expr), line) or self.truth(self.eval(b_expr), line))
        a = self.eval(a_expr)
        b = self.eval(b_expr) if right is None else right
        if isinstance(a, _Desc) and op == "+":          # a raw descriptor + n: the start field moves
            return _Desc(a.name, a.offset + 16 * self._int(b, line, "what is added to a descriptor"))
        a = self._int(a, line, f"the left operand of {op}")
        b = self._int(b, line, f"the right operand of {op}")
        if op in ("/", "%"):
            q = _c_div(a, b, line)
            return q if op == "/" else a - q * b
        return {"|": a | b, "^": a ^ b, "&": a & b, "==": int(a == b), "!=": int(a != b),
                "<": int(a < b), ">": int(a > b), "<=": int(a <= b), ">=": int(a >= b),
                "<<": a << b, ">>": a >> b, "+": a + b, "-": a - b, "*": a * b}[op]

    def store(self, target, value, line: int) -> None:
        if target[0] == "name":
            name = target[2]
            if name in self.locals:
                self.locals[name] = value
            elif name in _READ_ONLY:
                raise ReadError(line, f"{name} is the kernel's, not the loop body's to change")
            elif name in ("prev", "broken"):
                self.env[name] = value
            elif name == "pos":
                raise ReadError(line, "pos is the ring position: move it with pos.advance()")
            else:
                self.lookup(name, line)
                raise ReadError(line, f"cannot assign to {name}")
            return
        if target[0] == "member" and isinstance(self.eval(target[2]), _Ring) and target[3] in ("stage", "phase"):
            setattr(self.ring, target[3], self._int(value, line, f"pos.{target[3]}"))
            return
        raise ReadError(line, "the check follows assignments to prev, broken, pos.stage, pos.phase and "
                              "the body's own variables only")

    def _stage(self, v, line: int) -> int:
        s = self._int(v, line, "a stage")
        if not 0 <= s < self.ring.stages:
            raise ReadError(line, f"stage {s} is outside the ring (stages 0..{self.ring.stages - 1})")
        return s

    def call(self, fn, args: list, line: int):
        if not isinstance(fn, _Fn):
            raise ReadError(line, f"{self._describe(fn)} is not a function")
        name, ev = fn.name, self.events.append
        if name == "wait":
            stage = self._stage(args[0], line)
            parity = self._int(args[1], line, "the parity")
            ev(Event("wait", line, barrier=fn.target.name, stage=stage, parity=parity))
            return 1                                     # the wait passed (no wait gives up)
        if name == "arrive":
            ev(Event("arrive", line, barrier=fn.target.name, stage=self._stage(args[0], line)))
            return None
        if name in ("release", "mbarrier_arrive"):
            bar = args[0] if args else None
            if not isinstance(bar, _BarrierRef):
                raise ReadError(line, f"{name}() takes a barrier, e.g. empty[s] (got {self._describe(bar)})")
            ev(Event("arrive", line, barrier=bar.name, stage=bar.stage))
            return None
        if name == "advance":
            self.ring.stage += 1
            if self.ring.stage == self.ring.stages:
                self.ring.stage, self.ring.phase = 0, self.ring.phase ^ 1
            return None
        if name in _PLAIN:
            if _PLAIN[name]:
                ev(Event(_PLAIN[name], line))
            return None
        if name == "wgmma_wait_group":
            if fn.n is None:
                raise ReadError(line, "wgmma_wait_group needs its template argument: wgmma_wait_group<N>()")
            ev(Event("wait_group", line, n=fn.n))
            return None
        if name == "wgmma_desc_advance":
            d = args[0]
            if not isinstance(d, _Desc):
                raise ReadError(line, f"wgmma_desc_advance advances a descriptor (da0 or db0), not "
                                      f"{self._describe(d)}")
            return _Desc(d.name, d.offset + self._int(args[1], line, "the bytes to advance by"))
        if name == "mma_ktile":
            if len(args) != 3 or getattr(args[0], "what", "") != "the accumulators acc":
                raise ReadError(line, "mma_ktile takes (acc, the A descriptor, the B descriptor)")
            a, b = args[1], args[2]
            for d in (a, b):
                if not isinstance(d, _Desc):
                    raise ReadError(line, f"mma_ktile takes descriptors (da0, db0 advanced to the stage), "
                                          f"not {self._describe(d)}")
            ev(Event("mma", line, a=(a.name, a.offset), b=(b.name, b.offset)))
            ev(Event("commit", line))                    # mma_ktile commits its wgmmas as one group
            return None
        raise ReadError(line, f"the check does not follow {name}()")


def run(program: list, *, stages: int, k_tiles: int, tiles: int, stage_bytes: int, wg: int = 1,
        elected: bool = True) -> list[Iteration]:
    """Run ``program`` as the body of the consumer's k-loop, as one thread (``elected`` or not) of
    consumer warpgroup ``wg``, for ``tiles`` tiles of ``k_tiles`` k-tiles on a ring of ``stages``
    stages of ``stage_bytes`` bytes (``kStageBytes``), the way the kernel runs it: ``prev``
    starts at 0 for each tile, ``pos`` carries across tiles, and after each tile's loop the
    kernel's own code runs (``wgmma_wait_group<0>()``, ``fence_accumulators``, the elected
    thread's ``empty.arrive(prev)``: an :class:`Iteration` with ``tail=True``). Raises
    :class:`ReadError` (line 0: the kernel's release of ``prev`` after the loop)."""
    m = _Machine(stages, k_tiles, stage_bytes, wg, elected)
    out, i = [], 0
    for tile in range(tiles):
        m.env["prev"] = 0
        for k in range(k_tiles):
            m.env["k"], m.env["ring"] = k, i
            m.locals, m.events = {}, []
            pos = (m.ring.stage, m.ring.phase)
            stop = None
            try:
                m.execute(program)
            except _Stop as s:
                stop = s.what
            out.append(Iteration(i, tile, k, pos, m.events))
            i += 1
            if stop == "break":
                break
        prev = m._stage(m.env["prev"], 0)
        tail = [Event("wait_group", 0, n=0), Event("fence", 0)]
        if elected:
            tail.append(Event("arrive", 0, barrier="empty", stage=prev))
        out.append(Iteration(i - 1, tile, k_tiles - 1, (m.ring.stage, m.ring.phase), tail, tail=True))
    return out


# ---- the producer's refill step (chapter 05's ``ch05.producer_step``) ----------------------------

class _ProducerMachine(_Machine):
    """The machine with the names of chapter 05's producer step (``producer``, ``r``, ``t``,
    ``ts``, ``tp``, ``base``, ``ta``/``tb``, ``m0``/``n0``, ``load_stage``)."""

    def __init__(self, stages, k_tiles, stage_bytes, producer, in_scope, waits_pass=True):
        super().__init__(stages, k_tiles, stage_bytes, 0, producer)
        self.in_scope, self.waits_pass = in_scope, waits_pass
        self.env.update(producer=int(producer), base=0, ta=_Thing("the tensor map ta"),
                        tb=_Thing("the tensor map tb"), m0=_Thing("the tile row m0"),
                        n0=_Thing("the tile column n0"), prev=_Ring(stages))
        self.env.pop("elected")

    def lookup(self, name, line):
        if name == "load_stage" and name not in self.locals:
            return _Fn("load_stage")
        if name.startswith("EV_") and name not in self.locals:      # tr.event's kinds (ignored)
            return 0
        if name in self.locals or name in self.env or name in HELPERS:
            return super().lookup(name, line)
        names = self.in_scope or ("load_stage", *sorted(n for n in self.env if not n.startswith("_")))
        raise ReadError(line, f"the check does not know {name!r}: the step may use "
                              f"{', '.join(names)}")

    def call(self, fn, args, line):
        if isinstance(fn, _Fn) and fn.name == "load_stage":
            if len(args) != 7 or not isinstance(args[3], _BarrierRef):
                raise ReadError(line, "load_stage takes (ta, tb, the stage's address, its full "
                                      "barrier full[s], the k-tile, m0, n0)")
            addr = self._int(args[2], line, "the stage's address")
            size = self.env["kStageBytes"]
            if addr % size or not 0 <= addr // size < self.ring.stages:
                raise ReadError(line, f"the address {addr} bytes after base is no stage's: stage s "
                                      "starts at base + s * kStageBytes")
            self.events.append(Event("load", line, barrier=f"{args[3].name}[{args[3].stage}]",
                                     stage=addr // size, n=self._int(args[4], line, "the k-tile")))
            return None
        got = super().call(fn, args, line)
        if isinstance(fn, _Fn) and fn.name == "wait" and len(args) > 3:     # the k-tile that labels the wait
            self.events[-1] = dataclasses.replace(self.events[-1], n=self._int(args[3], line, "the wait's k-tile"))
        return got if self.waits_pass or fn.name != "wait" else 0     # a bounded wait that gave up


def read_producer_step(program: list, *, producer: bool, stages: int, pending: int, k_tiles: int,
                       stage_bytes: int, in_scope: tuple = (), waits_pass: bool = True) -> dict[int, list]:
    """Run ``program`` (:func:`parse` of chapter 05's refill step) as the kernel runs it, after
    the release of each k-tile r = k − ``pending``, as the producer thread or another: r → the
    step's events (waits, ``n`` the k-tile that labels the wait; loads, ``Event("load",
    barrier="full[s]", stage, n=k-tile)``).
    ``waits_pass=False``: every wait returns false, as the kernel's bounded wait does once it gave up."""
    m = _ProducerMachine(stages, k_tiles, stage_bytes, producer, in_scope, waits_pass)
    pos, prev, out = m.ring, m.env["prev"], {}
    for k in range(k_tiles):
        r = k - pending
        if r >= 0:
            ts, rp = (prev.stage, prev.phase) if pending else (pos.stage, pos.phase)
            m.env.update(k=k, r=r, t=r + stages, ts=ts, tp=rp ^ 1)     # the refill t: r's stage, next fill
            m.locals, m.events = {}, []
            try:
                m.execute(program)
            except _Stop:
                pass
            out[r] = m.events
        prev.stage, prev.phase = pos.stage, pos.phase
        pos.stage += 1
        if pos.stage == stages:
            pos.stage, pos.phase = 0, pos.phase ^ 1
    return out
