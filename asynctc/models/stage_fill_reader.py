"""Chapter 03's stage fill read without a GPU: the reader of the producer's lines (one
``mbarrier_arrive_expect_tx`` and two ``tma_load_2d``, as CUDA C++ text) and the mbarrier model's
verdict on them. Chapter 03's check (:mod:`asynctc.tma.stage_fill`) and the CPU emulation of the
whole tile (:mod:`asynctc.models.emulate_sm90`) both use it.

* :func:`read` follows the straight-line text (declarations and calls) at one sample point and
  returns a :class:`Fill`: the bytes announced, the arrivals, and each load's map, barrier,
  destination offset in the stage and coordinates.
* :func:`tx_outcome` runs the mbarrier model (:class:`asynctc.models.pipeline.Mbarrier`, arrival
  count 1) on the announced bytes and the boxes' landings.
* :func:`bytes_hint`, :func:`where_hint` and :func:`coord_hint` name the first mistake: bytes that
  complete the phase early or never, boxes that land outside the stage or overlap, coordinates
  swapped or in the wrong unit. A known mistake comes in two tiers
  (:func:`asynctc.core.exercises.tiered`): the symptom and a question, then the rule.
* :func:`kernel_lines` is the kernel's own lines (``kernels/tma_stage.cu``, between the markers).
"""

from __future__ import annotations

import dataclasses
import re

from ..core import cexpr, runtime
from .pipeline import Mbarrier, MbarrierError

SOURCE = "tma_stage.cu"
#: The kernel's tile (its ``constexpr``s) and element size: fp16 boxes of 128 rows × 64 elements.
BM, BN, BK, ITEMSIZE = 128, 128, 64, 2
A_BYTES, B_BYTES = BM * BK * ITEMSIZE, BN * BK * ITEMSIZE
STAGE_BYTES = A_BYTES + B_BYTES
#: The lines around the exercise in the kernel's source.
BEGIN, END = "  // ---- the exercise: from here ----", "  // ---- the exercise: to here ----"
#: C comments, which the reader drops.
COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_CALLS = ("mbarrier_arrive_expect_tx", "mbarrier_expect_tx", "mbarrier_arrive", "tma_load_2d")


def kernel_lines() -> str:
    """The kernel's own lines between the markers (the answer key), dedented."""
    text = runtime.kernel_path(SOURCE).read_text()
    body = text.split(BEGIN + "\n", 1)[1].split(END, 1)[0]
    return "\n".join(ln[2:] for ln in body.splitlines()) + "\n"


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
    ``full_bar``, other barriers it touches, its loads, and how many loads it issues before its
    first byte announcement (0: armed first, the convention)."""
    expects: tuple[int, ...]
    arrivals: int
    loads: tuple[Load, ...]
    other_bars: tuple[str, ...]
    loads_before_expect: int = 0


_SIZEOF = {"half": 2, "__half": 2, "__nv_bfloat16": 2, "u16": 2, "short": 2, "float": 4, "u32": 4,
           "int": 4, "uint32_t": 4, "u64": 8, "double": 8, "char": 1, "u8": 1}


def evaluate(expr: str, env: dict[str, int]) -> int:
    """The value of a C integer expression over ``env`` (+ − × / % << >> & | ^ ~, casts, sizeof of
    a 2-, 4- or 8-byte type, u/l suffixes), by :func:`asynctc.core.cexpr.value` once the casts
    and ``sizeof``s are read. Raises :class:`ReadError` for anything else."""
    e = re.sub(r"\bsizeof\s*\(\s*(\w+)\s*\)", lambda m: str(_SIZEOF.get(m.group(1), f"sizeof_{m.group(1)}")), expr)
    e = re.sub(r"\(\s*(?:const\s+)?(?:unsigned\s+)?(?:u32|u64|int|uint32_t|int32_t|unsigned|long|size_t)\s*\)",
               "", e)
    try:
        return cexpr.value(e, env)
    except cexpr.Unevaluable as err:
        name = str(err)[5:] if str(err).startswith("name ") else None
        if name:
            raise ReadError(f"{name!r} in {expr.strip()!r} has no value the reader knows") from None
        if str(err) in ("/", "%"):
            raise ReadError("a division by zero") from None
        raise ReadError(f"the reader cannot evaluate {expr.strip()!r}") from None


_DECL = re.compile(r"^(?:(?:const|constexpr|unsigned|u32|u64|int|uint32_t|int32_t|auto|long|size_t)\s+)+"
                   r"(\w+)\s*=\s*(.+)$", re.S)
_CALL = re.compile(r"^(?:\(void\)\s*)?(\w+)\s*\((.*)\)$", re.S)


def read(body: str, stage: int, full_bar: int, kt: int, m0: int, n0: int) -> Fill:
    """Follow the text at one sample point (the module docstring). Raises :class:`ReadError`."""
    text = COMMENTS.sub("", body)
    if re.search(r"[{}]|\b(if|for|while|do|switch|return)\b", text):
        raise ReadError("the reader follows straight-line lines (declarations and calls), not "
                        "blocks, branches or loops — the producer's three calls need none")
    env = dict(stage=stage, full_bar=full_bar, kt=kt, m0=m0, n0=n0, BM=BM, BN=BN, BK=BK)
    expects, arrivals, loads, other, early = [], 0, [], [], None
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
            name, args = c.group(1), cexpr.split_args(c.group(2))
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
                early = len(loads) if early is None else early
            arrivals += name != "mbarrier_expect_tx"
    return Fill(tuple(expects), arrivals, tuple(loads), tuple(other), early or 0)


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


def bytes_hint(fill: Fill) -> str | None:
    """What goes wrong with the bytes announced, or None: no arrival, a phase that completes before
    both boxes land (in either order), or one that never completes."""
    from ..core.exercises import tiered as cut      # each known mistake in two tiers (module docstring)
    total = sum(fill.expects)
    boxes_q = " How many bytes do A's BM×BK box and B's BN×BK box of fp16 bring together (§3's fill)?"
    if fill.arrivals == 0:
        return cut("nothing arrives on full_bar: it was initialised with an arrival count of 1, so phase 0 "
                   "never completes.", " Which call both announces bytes and arrives (§3, step 2)?",
                   " mbarrier_arrive_expect_tx both announces the bytes and arrives.")
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
            return cut(f"you announce {total} bytes: phase 0 completes {when}, so the consumer's wait "
                       f"passes and the consumer (chapter 04's wgmma) would read {order[done][0]}'s half of "
                       "the stage before it is written.", boxes_q,
                       f" A stage is both boxes: {A_BYTES} + {B_BYTES} bytes{why}.")
        if done is None and 0 < total < A_BYTES + B_BYTES:
            return cut(f"you announce {total} bytes, fewer than the two boxes bring. "
                       "The copy engine counts bytes off as they land, so the tx-count may reach zero "
                       "partway through a box: phase 0 completes while bytes still land and wgmma would "
                       f"read a half-written stage (a race). Or it steps past zero (to {left} here, boxes "
                       "counted whole) and phase 0 never completes (a hang; on the GPU the bounded wait "
                       "gives up).", boxes_q, f" A stage is both boxes: {A_BYTES} + {B_BYTES} bytes.")
        if done is None:
            return cut(f"you announce {total} bytes, more than the two boxes bring: the tx-count stays at "
                       f"{left} and phase 0 never completes. The consumer's wait never passes; on the GPU "
                       "the bounded wait gives up ('mbarrier wait timed out').", boxes_q,
                       f" The two boxes bring {A_BYTES} + {B_BYTES} bytes.")
    return None


def where_hint(loads: dict[str, Load]) -> str | None:
    """What goes wrong with where the boxes land (``loads``: map name → :class:`Load`), or None."""
    from ..core.exercises import tiered as cut
    a, b = loads["ta"], loads["tb"]
    for n, ld, size in (("A", a, A_BYTES), ("B", b, B_BYTES)):
        if ld.offset < 0 or ld.offset + size > STAGE_BYTES:
            return (f"{n}'s box ({size} bytes) lands at offset {ld.offset} of the stage, outside its "
                    f"{STAGE_BYTES} bytes: it overwrites another stage or the barriers.")
    if a.offset < b.offset + B_BYTES and b.offset < a.offset + A_BYTES:
        return cut(f"A's box (offset {a.offset}, {A_BYTES} bytes) and B's (offset {b.offset}, {B_BYTES} "
                   "bytes) overlap: one overwrites the other.", " Where in the stage does B go (the "
                   "exercise's last words)?", " B goes right after A: stage + A's bytes.")
    if (a.offset, b.offset) != (0, A_BYTES):
        return cut(f"A lands at offset {a.offset} and B at {b.offset}.", " Where does the stage start, "
                   "and how many bytes of A come before B (the exercise's last words)?",
                   f" The consumer's descriptors read A at the stage's start and B right after it, at "
                   f"offset {A_BYTES}.")
    return None


def coord_hint(fill: Fill, s: dict) -> str | None:
    """What goes wrong with the loads' coordinates at sample point ``s`` (kt, m0, n0), or None."""
    from ..core.exercises import tiered as cut
    want = {"ta": (s["kt"] * BK, s["m0"], "m0"), "tb": (s["kt"] * BK, s["n0"], "n0")}
    for ld in fill.loads:
        k, row, rname = want[ld.map]
        who = "A" if ld.map == "ta" else "B"
        got = (ld.c0, ld.c1)
        if got == (k, row):
            continue
        at = f"at kt = {s['kt']}, m0 = {s['m0']}, n0 = {s['n0']}, {who}'s load asks for ({ld.c0}, {ld.c1})"
        worked = " (§1's copy order, and the worked example above the exercise)?"
        if got == (row, k):
            return cut(f"{at}: the coordinates are swapped.", " Which does tma_load_2d take first, the "
                       "column or the row" + worked, " tma_load_2d takes them innermost first: the "
                       f"column (k: kt·BK) as c0, then the row ({rname}) as c1.")
        if ld.c0 == s["kt"] and s["kt"]:
            return cut(f"{at}: c0 = kt.", " In what unit does c0 count" + worked,
                       " c0 is in elements, not k-tiles: k-tile kt starts at column kt·BK.")
        if ld.c0 == 2 * k and k:
            return cut(f"{at}: c0 = {ld.c0}.", " Do coordinates count elements or bytes" + worked, " Coordinates count elements, not bytes: column kt·BK, not kt·BK·2.")
        other = s["n0"] if rname == "m0" else s["m0"]
        if ld.c1 == other and other != row:
            return cut(f"{at}: its row is {'n0' if rname == 'm0' else 'm0'}.", f" Where do {who}'s rows "
                       "start (the exercise's text)?", f" {who}'s rows start at {rname}.")
        return cut(f"{at}.", f" Which column and row does k-tile kt of {who} start at" + worked,
                   f" It should ask for ({k}, {row}): column kt·BK, row {rname}.")
    return None
