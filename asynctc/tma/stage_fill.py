"""Chapter 03's code exercise ``ch03.stage_fill``: the learner writes, as CUDA C++ in a Python
string, the producer's lines that fill one stage of a GEMM's ring (``kernels/tma_stage.cu``, the
body of ``fill_stage``): ``mbarrier_arrive_expect_tx(full_bar, <bytes>)`` and two
``tma_load_2d(dst, map, full_bar, c0, c1)``, a BM×BK box of A and a BN×BK box of B. No GPU needed.

The check, in order:

1. **compile** — :func:`splice` puts the text in place of ``fill_stage``'s body (under
   ``#line 1 "your lines"``) and :func:`compile_fill` compiles the kernel with NVRTC
   (:func:`asynctc.core.runtime.compile_kernel` with ``code=``). A compile error is the hint.
2. **read** — :func:`read` follows the straight-line text (declarations and calls) at two sample
   points (:data:`SAMPLES`) and returns each :class:`Fill`: the bytes announced, the arrivals, and
   each load's map, barrier, destination offset in the stage and coordinates.
3. **judge** — the mbarrier model (:class:`asynctc.models.pipeline.Mbarrier`, arrival count 1) is
   run on the announced bytes and the boxes' landings in both orders: too few bytes complete the
   phase before the second box lands (the consumer's wgmma would read a half-written stage); too
   many leave the tx-count above zero and the wait never passes (on the GPU the bounded wait gives
   up: "mbarrier wait timed out"). Then the destinations (A at the stage's start, B right after it,
   no overlap) and the coordinates (innermost first: the k column, then the row) against
   chapter 05's ``load_stage``.
"""

from __future__ import annotations

import ast
import dataclasses
import re

from ..core import exercises as _ex
from ..core import runtime
from ..models.pipeline import Mbarrier, MbarrierError

SOURCE, ENTRY = "tma_stage.cu", "tma_stage_fill"
#: The kernel's tile (its ``constexpr``s) and element size: fp16 boxes of 128 rows × 64 elements.
BM, BN, BK, ITEMSIZE = 128, 128, 64, 2
A_BYTES, B_BYTES = BM * BK * ITEMSIZE, BN * BK * ITEMSIZE
STAGE_BYTES = A_BYTES + B_BYTES
FILE_NAME = "your lines"
_BEGIN, _END = "  // ---- the exercise: from here ----", "  // ---- the exercise: to here ----"
#: Two sample points the text is read at: the stage's shared address (1024-aligned), the barrier's,
#: the k-tile and the CTA's first rows of A and B.
SAMPLES = (dict(stage=0x2000, full_bar=0x40, kt=0, m0=0, n0=0),
           dict(stage=0x8000, full_bar=0x48, kt=5, m0=384, n0=256))
_CODE = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_CALLS = ("mbarrier_arrive_expect_tx", "mbarrier_expect_tx", "mbarrier_arrive", "tma_load_2d")


def _parts() -> tuple[str, str, int]:
    """(the source up to the exercise's first line, from its end marker on, the end marker's line)."""
    lines = runtime.kernel_path(SOURCE).read_text().splitlines(keepends=True)
    b0 = [n for n, ln in enumerate(lines) if ln.rstrip() == _BEGIN]
    b1 = [n for n, ln in enumerate(lines) if ln.rstrip() == _END]
    if len(b0) != 1 or len(b1) != 1 or b1[0] <= b0[0]:
        raise RuntimeError(f"{SOURCE}: the exercise's markers are not where the exercise expects them")
    return "".join(lines[:b0[0] + 1]), "".join(lines[b1[0]:]), b1[0] + 1


def kernel_lines() -> str:
    """The kernel's own lines between the markers (the answer key), dedented."""
    text = runtime.kernel_path(SOURCE).read_text()
    body = text.split(_BEGIN + "\n", 1)[1].split(_END, 1)[0]
    return "\n".join(ln[2:] for ln in body.splitlines()) + "\n"


def splice(body: str) -> str:
    """The kernel's source with ``body`` in place of ``fill_stage``'s lines; NVRTC counts the body's
    lines from 1 in a file it calls :data:`FILE_NAME`."""
    before, after, end = _parts()
    body = body if body.endswith("\n") else body + "\n"
    return f'{before}#line 1 "{FILE_NAME}"\n{body}#line {end} "{SOURCE}"\n{after}'


def compile_fill(body: str) -> runtime.CompiledKernel:
    """Compile the kernel with ``body`` as ``fill_stage``'s lines (sm_90a cubin, cached). Raises
    :class:`~asynctc.core.runtime.CompileError` with NVRTC's log."""
    return runtime.compile_kernel(SOURCE, ENTRY, "sm_90a", code=splice(body))


def compile_hint(log: str, body: str, limit: int = 2) -> str:
    """NVRTC's first errors, each with the line of the learner's text it names."""
    lines, out = body.splitlines(), []
    for m in re.finditer(r"^(.*?)\((\d+)\): (?:catastrophic )?error: (.*)$", log, re.M):
        where, n, msg = m.group(1), int(m.group(2)), m.group(3).strip()
        if where.endswith(FILE_NAME) and 1 <= n <= len(lines):
            out.append(f"line {n} ({lines[n - 1].strip()}): {msg}")
        else:
            out.append(f"{where.rsplit('/', 1)[-1]}({n}): {msg} (a missing ';' or ')'?)")
        if len(out) == limit:
            break
    if not out:
        out.append(log.strip().splitlines()[-1] if log.strip() else "NVRTC gave no message")
    return ("NVRTC cannot compile your lines (in scope: ta, tb, stage, full_bar, kt, m0, n0, BM, BN, "
            "BK) — " + "; ".join(out))


# ---- reading the text ------------------------------------------------------------------------------

class ReadError(ValueError):
    """The reader cannot follow the text (it follows straight-line declarations and calls)."""


@dataclasses.dataclass(frozen=True)
class Load:
    """One ``tma_load_2d``: the tensor map's name, the barrier it signals, the destination's byte
    offset from the stage's start, and its coordinates (c0 innermost: the column; c1 the row)."""
    map: str
    bar: int
    offset: int
    c0: int
    c1: int
    line: str


@dataclasses.dataclass(frozen=True)
class Fill:
    """What the text does at one sample point: the bytes it announces (in order), its arrivals on
    ``full_bar``, other barriers it touches, and its loads."""
    expects: tuple[int, ...]
    arrivals: int
    loads: tuple[Load, ...]
    other_bars: tuple[str, ...]


_BIN = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.Div: lambda a, b: int(a / b) if b else _zero(), ast.FloorDiv: lambda a, b: a // b,
        ast.Mod: lambda a, b: a % b, ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
        ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b, ast.BitXor: lambda a, b: a ^ b}
_SIZEOF = {"half": 2, "__half": 2, "__nv_bfloat16": 2, "u16": 2, "short": 2, "float": 4, "u32": 4,
           "int": 4, "uint32_t": 4, "u64": 8, "double": 8, "char": 1, "u8": 1}


def _zero():
    raise ReadError("a division by zero")


def evaluate(expr: str, env: dict[str, int]) -> int:
    """The value of a C integer expression over ``env`` (+ − × / % << >> & | ^ ~, casts, sizeof of
    a 2-, 4- or 8-byte type, u/l suffixes). Raises :class:`ReadError` for anything else."""
    e = re.sub(r"\bsizeof\s*\(\s*(\w+)\s*\)", lambda m: str(_SIZEOF.get(m.group(1), f"sizeof_{m.group(1)}")), expr)
    e = re.sub(r"\(\s*(?:const\s+)?(?:unsigned\s+)?(?:u32|u64|int|uint32_t|int32_t|unsigned|long|size_t)\s*\)",
               "", e)
    e = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", e)
    try:
        tree = ast.parse(e.strip(), mode="eval")
    except SyntaxError:
        raise ReadError(f"the reader cannot evaluate {expr.strip()!r}") from None

    def ev(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, int) and not isinstance(n.value, bool):
            return n.value
        if isinstance(n, ast.Name):
            if n.id not in env:
                raise ReadError(f"{n.id!r} in {expr.strip()!r} has no value the reader knows")
            return env[n.id]
        if isinstance(n, ast.BinOp) and type(n.op) in _BIN:
            return _BIN[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd, ast.Invert)):
            v = ev(n.operand)
            return -v if isinstance(n.op, ast.USub) else (~v if isinstance(n.op, ast.Invert) else v)
        raise ReadError(f"the reader cannot evaluate {expr.strip()!r}")
    return ev(tree.body)


def _split_args(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    return [a.strip() for a in out + [cur]]


_DECL = re.compile(r"^(?:(?:const|constexpr|unsigned|u32|u64|int|uint32_t|int32_t|auto|long|size_t)\s+)+"
                   r"(\w+)\s*=\s*(.+)$", re.S)
_CALL = re.compile(r"^(?:\(void\)\s*)?(\w+)\s*\((.*)\)$", re.S)


def read(body: str, stage: int, full_bar: int, kt: int, m0: int, n0: int) -> Fill:
    """Follow the text at one sample point (the module docstring). Raises :class:`ReadError`."""
    text = _CODE.sub("", body)
    if re.search(r"[{}]|\b(if|for|while|do|switch|return)\b", text):
        raise ReadError("the reader follows straight-line lines (declarations and calls), not "
                        "blocks, branches or loops — the producer's three calls need none")
    env = dict(stage=stage, full_bar=full_bar, kt=kt, m0=m0, n0=n0, BM=BM, BN=BN, BK=BK)
    expects, arrivals, loads, other = [], 0, [], []
    for stmt in (s.strip() for s in text.split(";")):
        if not stmt:
            continue
        name = None
        d = _DECL.match(stmt)
        if d and not _CALL.match(d.group(2).strip()):
            env[d.group(1)] = evaluate(d.group(2), env)
            continue
        c = _CALL.match(d.group(2).strip() if d else stmt)
        if c:
            name, args = c.group(1), _split_args(c.group(2))
        if name not in _CALLS:
            raise ReadError(f"the reader follows mbarrier_arrive_expect_tx, tma_load_2d and declarations; "
                            f"not {stmt.splitlines()[0]!r}")
        bar = evaluate(args[0] if name != "tma_load_2d" else args[2], env)
        if bar != full_bar:
            other.append(stmt)
            continue
        if name == "tma_load_2d":
            mp = args[1].lstrip("&*( ").rstrip(") ")
            loads.append(Load(mp, bar, evaluate(args[0], env) - stage, evaluate(args[3], env),
                              evaluate(args[4], env), " ".join(stmt.split())))
        else:
            if name != "mbarrier_arrive":
                expects.append(evaluate(args[1], env))
            arrivals += name != "mbarrier_expect_tx"
    return Fill(tuple(expects), arrivals, tuple(loads), tuple(other))


# ---- judging ----------------------------------------------------------------------------------------

def tx_outcome(expects: tuple[int, ...], arrivals: int, landings: tuple[int, ...]) -> tuple[int | None, int]:
    """Run the mbarrier model (arrival count 1): the announced bytes and arrivals, then the boxes'
    bytes landing in order. Returns (how many landings had happened when phase 0 completed, or None
    if it never did; the tx-count left). Raises :class:`MbarrierError` for an arrival beyond the
    count."""
    bar = Mbarrier(1, "full_bar")
    done = None
    for nbytes in expects:
        bar.expect_tx(nbytes)
    for _ in range(arrivals):
        if bar.arrive() and done is None:
            done = 0
    for i, nbytes in enumerate(landings, 1):
        if bar.complete_tx(nbytes) and done is None:
            done = i
    return done, bar.tx


def _bytes_hint(fill: Fill) -> str | None:
    total = sum(fill.expects)
    if fill.arrivals == 0:
        return ("nothing arrives on full_bar: it was initialised with an arrival count of 1, so phase 0 "
                "never completes. mbarrier_arrive_expect_tx both announces the bytes and arrives.")
    names = {"ta": ("A", A_BYTES), "tb": ("B", B_BYTES)}
    boxes = [names[ld.map] for ld in fill.loads]
    for order in (boxes, boxes[::-1]):
        try:
            done, left = tx_outcome(fill.expects, fill.arrivals, tuple(b for _, b in order))
        except MbarrierError as e:
            return f"the mbarrier model stops: {e}"
        if done is not None and done < len(order):
            when = (f"when only {order[0][0]}'s {order[0][1]} bytes have landed" if done else
                    "at the arrival itself, before any box lands")
            why = (f" ({total} is one box's bytes, or the stage's elements: fp16 is 2 bytes each)"
                   if total in (A_BYTES, STAGE_BYTES // ITEMSIZE) else "")
            return (f"you announce {total} bytes{why}: phase 0 completes {when}, so the consumer's wait "
                    f"passes and wgmma would read {order[done][0]}'s half of the stage before it is "
                    f"written. A stage is both boxes: {A_BYTES} + {B_BYTES} bytes.")
        if done is None:
            return (f"you announce {total} bytes but the two boxes bring {A_BYTES} + {B_BYTES}: the "
                    f"tx-count stays at {left} and phase 0 never completes. The consumer's wait never "
                    "passes; on the GPU the bounded wait gives up ('mbarrier wait timed out').")
    return None


def _where_hint(loads: dict[str, Load]) -> str | None:
    a, b = loads["ta"], loads["tb"]
    for n, ld, size in (("A", a, A_BYTES), ("B", b, B_BYTES)):
        if ld.offset < 0 or ld.offset + size > STAGE_BYTES:
            return (f"{n}'s box ({size} bytes) lands at offset {ld.offset} of the stage, outside its "
                    f"{STAGE_BYTES} bytes: it overwrites another stage or the barriers.")
    if a.offset < b.offset + B_BYTES and b.offset < a.offset + A_BYTES:
        return (f"A's box (offset {a.offset}, {A_BYTES} bytes) and B's (offset {b.offset}, {B_BYTES} "
                "bytes) overlap: one overwrites the other. B goes right after A: stage + A's bytes.")
    if (a.offset, b.offset) != (0, A_BYTES):
        return (f"A lands at offset {a.offset} and B at {b.offset}; the consumer's descriptors read A "
                f"at the stage's start and B right after it, at offset {A_BYTES}.")
    return None


def _coord_hint(fill: Fill, s: dict) -> str | None:
    want = {"ta": (s["kt"] * BK, s["m0"], "m0"), "tb": (s["kt"] * BK, s["n0"], "n0")}
    for ld in fill.loads:
        k, row, rname = want[ld.map]
        who = "A" if ld.map == "ta" else "B"
        got = (ld.c0, ld.c1)
        if got == (k, row):
            continue
        at = f"at kt = {s['kt']}, m0 = {s['m0']}, n0 = {s['n0']}, {who}'s load asks for ({ld.c0}, {ld.c1})"
        if got == (row, k):
            return (f"{at}: the coordinates are swapped. tma_load_2d takes them innermost first: the "
                    f"column (k: kt·BK) as c0, then the row ({rname}) as c1.")
        if ld.c0 == s["kt"] and s["kt"]:
            return f"{at}: c0 is in elements, not k-tiles: k-tile kt starts at column kt·BK."
        if ld.c0 == 2 * k and k:
            return f"{at}: coordinates count elements, not bytes: column kt·BK, not kt·BK·2."
        other = s["n0"] if rname == "m0" else s["m0"]
        if ld.c1 == other and other != row:
            return (f"{at}: its row is {'n0' if rname == 'm0' else 'm0'}; {who}'s rows start at "
                    f"{rname}.")
        return f"{at}; it should ask for ({k}, {row}): column kt·BK, row {rname}."
    return None


def judge(answer) -> str | None:
    """Compile, read and judge a learner's lines (the module docstring): None when right, else the
    hint. Raises :class:`~asynctc.core.exercises.NotAnswered` for a text of comments (or ``...``)."""
    if not isinstance(answer, str):
        return f"pass your lines as a string of CUDA C++ (got {type(answer).__name__}): lines = \"\"\" … \"\"\""
    body = answer[1:] if answer.startswith("\n") else answer
    if _CODE.sub("", body).strip() in ("", "..."):
        raise _ex.NotAnswered("write the three lines in the string, then run the cell again")
    try:
        compile_fill(body)
    except runtime.CompileError as e:
        return compile_hint(str(e), body)
    for s in SAMPLES:
        try:
            fill = read(body, **s)
        except ReadError as e:
            return f"NVRTC compiles your lines, but {e}"
        if fill.other_bars:
            return (f"{fill.other_bars[0]!r} names another barrier than full_bar: the stage's bytes and "
                    "its arrival all go to full_bar, the barrier the consumer waits on.")
        maps = [ld.map for ld in fill.loads]
        for mp, who in (("ta", "A"), ("tb", "B")):
            if maps.count(mp) != 1:
                return (f"{maps.count(mp)} loads from tensor map {mp} ({who}): a stage holds one box of A "
                        "(ta) and one of B (tb).")
        if len(maps) != 2:
            return f"{len(maps)} tma_load_2d calls: a stage is two boxes, one from ta and one from tb."
        hint = (_bytes_hint(fill) or _where_hint({ld.map: ld for ld in fill.loads})
                or _coord_hint(fill, s))
        if hint:
            return hint
    return None


@_ex.code_exercise("ch03.stage_fill", "Write the producer's lines that fill one stage (fill_stage in "
                   "kernels/tma_stage.cu): mbarrier_arrive_expect_tx(full_bar, <bytes>), then "
                   "tma_load_2d(dst, map, full_bar, c0, c1), c0 innermost (the column), for A's BM×BK box "
                   "(ta) and B's BN×BK box (tb, B stored N×K); stage and full_bar are u32 shared-memory "
                   "byte addresses. Pass the text: check('ch03.stage_fill', lines).", judge=judge)
def _ch03_stage_fill() -> str:
    return kernel_lines()
