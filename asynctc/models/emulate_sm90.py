"""A CPU emulation of one Hopper GEMM tile, built from pieces a learner can write (deep dive 06e).

**It is a model, not a run**: nothing here executes on a GPU, and nothing here is timed. It is the
Hopper counterpart of chapter 09c's :mod:`asynctc.models.emulate`. One CTA computes a 128 × 128
tile of C = A·B (fp16 in, fp32 out, K = 256 by default, both operands K-major, 128-byte swizzle),
with two consumer warpgroups of 64 rows each and a ring of S stages of 64-deep k-tiles:

1. **The ring** — chapter 05's ring model (:func:`asynctc.models.pipeline.simulate`) runs the
   protocol with the **parity** functions given (``full(k, S)``, ``empty(t, S)``); where a
   **producer_step** (chapter 05's refill step, CUDA text) or a **consumer_loop** (chapter 06's
   k-loop body) is given, the protocol those texts read to (their waits, parities, releases and
   refills: :mod:`asynctc.models.pipeline.protocol`) replaces the kernel's. A deadlock or a race
   stops the emulation with that diagnosis; otherwise its timeline fixes the order in which the
   TMA loads land and the wgmmas read. Or a **schedule** already run is given: the ring model's run
   of chapter 06's capstone loops in short names (``ch06.whole_kloop``, deep dive 06f's warm-up; the caller reads them), whose order then
   replaces the ring pieces'; its diagnosis, if any, stops the tile and names **whole_kloop**.
2. **TMA** — the **stage_fill** lines given (chapter 03's CUDA text, read by
   :func:`asynctc.models.stage_fill_reader.read` for each load) say where each box (128 rows × 128
   bytes) lands in the stage and which rows and columns it holds; chapter 03's mbarrier model
   completes the full barrier when the announced bytes have landed (too few: the wgmma reads a box
   that lands later; too many: the wait never passes and the run stops). Byte ``o`` of a box goes
   to ``swizzle(o)``, the **swizzle** function given (chapter 03's ``swizzle_128b``).
3. **wgmma** — k-step 0's A and B descriptors of each warpgroup are packed by the **encode**
   function given (deep dive 04b's ``encode(start_address, lbo, sbo, swizzle)``), moved to k-step
   j by the **kstep** function given (chapter 04's ``kstep_desc(desc0, j, "K")``), decoded by the
   course's :func:`~asynctc.models.descriptors.decode`, and :func:`~asynctc.models.descriptors.
   read_addresses` says which bytes the instruction reads. Products are float64 of the fp16 values
   read; the accumulator is float32 (rounded after every k16 step).
4. **Epilogue** — each thread's accumulator registers (:func:`asynctc.models.fragments.
   wgmma_accumulator`) are written into a NaN-poisoned C; every element must be written once.

:func:`emulate` returns an :class:`Sm90Gemm`: C, the check against float64 (the course's
elementwise bound relative to |A|·|B|, :func:`asynctc.core.checks.compare_elementwise`), which
pieces were the learner's, and — when elements are wrong — which piece is to blame (the run is
repeated with each of the learner's pieces swapped for the course's) and where the wrong elements
are (:func:`where_wrong`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

from ..core.checks import ElementCheck, compare_elementwise
from . import descriptors as _d
from . import fragments as _f
from .emulate import gather_bytes, round_to
from .layout import swizzle_address
from . import lanes as _lanes
from . import stage_fill_reader as _sf
from .pipeline.ring import KERNEL_PARITIES

#: The tile: BM × BN outputs, 64-deep k-tiles (one 128-byte swizzle row of fp16), two consumers.
BM, BN, BK, CONSUMERS, WG_M = 128, 128, 64, 2, 64
DTYPE = "float16"
SWIZZLE = 128
#: Bytes of one box (BM or BN rows × 128 bytes) and of one stage (an A box, then a B box).
BOX_BYTES = BM * BK * 2
STAGE_BYTES = 2 * BOX_BYTES

PIECES = ("stage_fill", "swizzle", "encode", "kstep", "parities", "producer_step", "consumer_loop")
#: The pieces that drive the ring model (a deadlock or race names one of them).
RING_PIECES = ("parities", "producer_step", "consumer_loop")
#: Chapter 06's capstone (both roles' loops): given as a ring-model schedule, it replaces RING_PIECES.
CAPSTONE = "whole_kloop"
#: Its exercise, the notebook that asks it, and what the learner wrote.
CAPSTONE_EXERCISE = ("ch06.whole_kloop", "deep dive 06f", "short-name capstone loops")
#: Where the emulation's full barriers sit (past the stages; 8 bytes each), for the stage-fill reader.
FULL_BAR_BASE = 7 * STAGE_BYTES


def course_swizzle_128b(offset: int) -> int:
    """The course's 128-byte swizzle (chapter 03's model, :func:`asynctc.models.layout.swizzle_address`)."""
    return int(swizzle_address(int(offset), SWIZZLE))


def course_encode(start_address: int, lbo: int, sbo: int, swizzle: int = 0) -> int:
    """The course's descriptor packing (:func:`asynctc.models.descriptors.encode`)."""
    return _d.encode(start_address, lbo, sbo, swizzle)


def course_kstep(desc0: int, s: int, major: str) -> int:
    """The course's k-step advance (chapter 04's ``kstep_desc``): ``desc0`` with its start-address
    field (bits 0–13, bytes >> 4) moved on by k-step ``s``'s offset in a 128-byte-swizzled fp16 tile."""
    tile = _d.OperandTile(64, BK, DTYPE, major, SWIZZLE)
    step = tile.descriptor(s, 0).start_address >> 4
    return (int(desc0) & ~0x3FFF) | ((int(desc0) + step) & 0x3FFF)


def course_stage_fill() -> str:
    """The course's stage-fill lines (chapter 03's ``ch03.stage_fill`` answer key)."""
    return _sf.kernel_lines()


#: The course's parities: the kernel's, as chapter 05's ring model runs them by default.
course_full_parity, course_empty_parity = COURSE_PARITIES = KERNEL_PARITIES


#: Each piece's exercise, the notebook that asks it, and what the learner wrote for it.
PIECE_EXERCISES = {"stage_fill": ("ch03.stage_fill", "chapter 03", "stage-fill lines"),
                   "swizzle": ("ch03.swizzle_128b", "chapter 03", "swizzle_128b"),
                   "kstep": ("ch04.kstep", "chapter 04", "kstep_desc"),
                   "encode": ("ch04.encode", "deep dive 04b", "encode"),
                   "parities": ("ch05.ring_parities", "deep dive 05b", "full_parity and empty_parity"),
                   "producer_step": ("ch05.producer_step", "chapter 05", "producer step"),
                   "consumer_loop": ("ch06.consumer_loop", "deep dive 06e", "consumer loop")}


def _usable(piece: str, got: Any) -> bool:
    if piece == "parities":
        return isinstance(got, tuple) and len(got) == 2 and all(map(callable, got))
    return isinstance(got, str) if piece in ("stage_fill", "producer_step", "consumer_loop") else callable(got)


def your_pieces() -> tuple[dict, list[str]]:
    """The learner's passing answers to the seven exercises, as kept when their checks passed
    (:func:`asynctc.core.exercises.my_answer`): piece → the answer, or None where none is kept
    (the emulation then takes the course's piece); and one line per piece saying which it is."""
    from ..core import answers, exercises
    pieces, lines = {}, []
    for piece, (name, where, what) in PIECE_EXERCISES.items():
        got = exercises.my_answer(name)
        ok = _usable(piece, got)
        pieces[piece] = got if ok else None
        if ok:
            lines.append(f"{piece}: your {what} from {where}, passed "
                         f"{(answers.passed_on(name) or '?')[:16].replace('T', ' ')} UTC")
        else:
            lines.append(f"{piece}: the course's (no passing answer to {name} is kept here)")
    name, where, what = CAPSTONE_EXERCISE                 # not a piece of emulate(): its order, see §4
    if exercises.passed(name):
        lines.append(f"{CAPSTONE}: your {what} from {where}, passed "
                     f"{(answers.passed_on(name) or '?')[:16].replace('T', ' ')} UTC (they order the tile in §4)")
    else:
        lines.append(f"{CAPSTONE}: the course's (no passing answer to {name} is kept here)")
    return pieces, lines


class PieceError(ValueError):
    """A piece returned something the emulation cannot use (not an int, outside the box, a
    descriptor the decoder rejects); ``piece`` names it."""

    def __init__(self, piece: str, message: str):
        super().__init__(f"{piece}: {message}")
        self.piece = piece


# --------------------------------------------------------------------------------------------------
# Where the wrong elements are
# --------------------------------------------------------------------------------------------------

def _ranges(idx) -> str:
    idx = sorted(int(i) for i in idx)
    out, start = [], idx[0]
    for a, b in zip(idx, idx[1:] + [None]):
        if b != a + 1:
            out.append(f"{start}" if start == a else f"{start}–{a}")
            start = b
    return ", ".join(out)


def _axis(bad_any: np.ndarray, name: str) -> str:
    """``bad_any``: bool per row (or column). 'every row', 'rows 1–7 of every 8', or the ranges."""
    n = bad_any.size
    idx = np.flatnonzero(bad_any)
    if idx.size == n:
        return f"every {name}"
    for p in (8, 16, 32, 64):
        pat = bad_any[:p]
        if n % p == 0 and pat.any() and not pat.all() and np.array_equal(np.tile(pat, n // p), bad_any):
            return f"{name}s {_ranges(np.flatnonzero(pat))} of every {p}"
    text = _ranges(idx)
    if len(text) > 60:
        text = text[:57].rsplit(",", 1)[0] + ", …"
    return f"{name}s {text}"


def where_wrong(bad: np.ndarray) -> str:
    """Where the ``True`` elements of ``bad`` (M × N) are, in words: "3584 of 16384 elements
    wrong, rows 1–7 of every 8, every column"."""
    bad = np.asarray(bad, bool)
    n = int(bad.sum())
    if n == 0:
        return f"0 of {bad.size} elements wrong"
    text = (f"{n} of {bad.size} elements wrong, {_axis(bad.any(axis=1), 'row')}, "
            f"{_axis(bad.any(axis=0), 'column')}")
    if bad.any(axis=1).all() and bad.any(axis=0).all() and bad.shape[0] % 8 == 0 == bad.shape[1] % 8:
        # rows and columns both everywhere: say which (row % 8, column % 8) pairs are wrong
        frac = bad.reshape(bad.shape[0] // 8, 8, bad.shape[1] // 8, 8).mean(axis=(0, 2))
        right = frac < 0.5
        if right.any() and np.array_equal(right, np.eye(8, dtype=bool)):
            text += "; right only where row % 8 == column % 8"
        elif right.any():
            text += f"; right in {int(right.sum())} of the 64 (row % 8, column % 8) pairs"
    return text


# --------------------------------------------------------------------------------------------------
# The pieces, checked as they are used
# --------------------------------------------------------------------------------------------------

def swizzle_map(swizzle: Callable[[int], int]) -> np.ndarray:
    """Where ``swizzle`` puts every byte of one box: an int array of :data:`BOX_BYTES` offsets.
    Raises :class:`PieceError` for a value that is not an int inside the box."""
    out = np.empty(BOX_BYTES, np.int64)
    for o in range(BOX_BYTES):
        v = swizzle(o)
        if v is None or v is Ellipsis:
            raise PieceError("swizzle", "swizzle_128b returns None: write its body (or leave the "
                             "course's in place)")
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise PieceError("swizzle", f"swizzle_128b({o}) returned {v!r}; return an int byte offset")
        if not 0 <= int(v) < BOX_BYTES:
            raise PieceError("swizzle", f"swizzle_128b({o}) = {v}: outside the {BOX_BYTES}-byte box "
                             f"({BM} rows of 128 bytes)")
        out[o] = int(v)
    return out


def swizzle_diff(swizzle: Callable[[int], int]) -> str | None:
    """How ``swizzle`` differs from the course's on one box, in a sentence; None if it does not."""
    got = swizzle_map(swizzle)
    want = swizzle_address(np.arange(BOX_BYTES, dtype=np.int64), SWIZZLE)
    wrong = np.flatnonzero(got != want)
    if wrong.size == 0:
        return None
    o = int(wrong[0])
    return (f"this swizzle_128b puts {wrong.size} of the box's {BOX_BYTES} bytes elsewhere than "
            f"the course's model; the first is byte {o} (row {o // 128}, chunk {o % 128 // 16}): "
            f"it gives {int(got[o])}, the model {int(want[o])}")


def descriptor(encode: Callable, start_address: int, lbo: int, sbo: int) -> _d.WgmmaDescriptor:
    """``encode(start_address, lbo, sbo, 128)`` decoded by the course's decoder. Raises
    :class:`PieceError` when the value is not an int or the decoder rejects it."""
    v = encode(start_address, lbo, sbo, SWIZZLE)
    if v is None or v is Ellipsis:
        raise PieceError("encode", "encode returns None: write its body (or leave the course's in place)")
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise PieceError("encode", f"encode({start_address:#x}, {lbo}, {sbo}, {SWIZZLE}) returned "
                         f"{v!r}; return an int")
    try:
        return _d.decode(int(v))
    except _d.DescriptorError as e:
        raise PieceError("encode", f"encode({start_address:#x}, lbo={lbo}, sbo={sbo}, "
                         f"swizzle={SWIZZLE}) = {int(v):#x}, which the decoder rejects: {e}") from None


def encode_diff(encode: Callable, stages: int) -> str | None:
    """The first descriptor of the tile that ``encode`` packs differently from the course's, and
    the fields that differ once decoded; None if every one matches."""
    for start, lbo, sbo, _ in _descriptor_fields(stages):
        want = _d.decode(course_encode(start, lbo, sbo, SWIZZLE))
        got = descriptor(encode, start, lbo, sbo)
        if got != want:
            diff = ", ".join(f"{f} {getattr(got, f)} (should be {getattr(want, f)})"
                             for f in ("start_address", "lbo", "sbo", "swizzle", "base_offset")
                             if getattr(got, f) != getattr(want, f))
            return (f"encode({start:#x}, lbo={lbo}, sbo={sbo}, swizzle={SWIZZLE}) decodes to {diff}")
    return None


def _operand(mn: int) -> _d.OperandTile:
    return _d.OperandTile(mn, BK, DTYPE, "K", SWIZZLE)


def _a_base(stage: int, wg: int) -> int:
    return stage * STAGE_BYTES + wg * WG_M * 128


def _b_base(stage: int) -> int:
    return stage * STAGE_BYTES + BOX_BYTES


def _descriptor_fields(stages: int):
    """(start_address, lbo, sbo, operand) of every descriptor the tile's wgmmas use."""
    a_tile, b_tile = _operand(WG_M), _operand(BN)
    for s in range(stages):
        for j in range(a_tile.k_steps):
            for w in range(CONSUMERS):
                d = a_tile.descriptor(j, _a_base(s, w))
                yield d.start_address, d.lbo, d.sbo, f"A {wg_name(f'wg{w}')}"
            d = b_tile.descriptor(j, _b_base(s))
            yield d.start_address, d.lbo, d.sbo, "B"


# --------------------------------------------------------------------------------------------------
# The emulation
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Sm90Gemm:
    """Result of :func:`emulate`. ``c``: the (M, N) float32 output (NaN where never written);
    ``check``: the elementwise check against float64 (None when the ring stopped it);
    ``diagnosis``: the ring model's :class:`~asynctc.models.pipeline.Deadlock` or
    :class:`~asynctc.models.pipeline.Race`, or None; ``error``: a :class:`PieceError` that stopped
    it, or None; ``used``: piece → "yours", "the course's" or the ``on_purpose`` label;
    ``blame``: the learner's pieces whose swap for the course's fixes the result; ``why``: piece →
    how it differs from the course's."""

    c: np.ndarray
    check: ElementCheck | None
    writes: np.ndarray
    stages: int
    k: int
    used: dict
    diagnosis: Any = None
    error: PieceError | None = None
    blame: list = dataclasses.field(default_factory=list)
    why: dict = dataclasses.field(default_factory=dict)
    bad: np.ndarray | None = None

    @property
    def passed(self) -> bool:
        return self.check is not None and bool(self.check.passed) and bool((self.writes == 1).all())

    def summary(self) -> str:
        """What ran, with whose pieces, and the verdict in one paragraph."""
        order = self.used.get(CAPSTONE)
        used = ", ".join(f"{p}: {w}" for p, w in self.used.items() if p != CAPSTONE)
        if order:
            used += (f"; order: {'your' if order == 'yours' else order} capstone loops ({CAPSTONE}), in place of "
                     "the parities, producer step and consumer loop")
        head = (f"emulated Hopper tile {BM}×{BN}, K={self.k}, fp16 K-major, {SWIZZLE}-byte swizzle, "
                f"{self.stages}-stage ring, {CONSUMERS} consumer warpgroups ({used})")
        if self.diagnosis is not None:
            return (f"{head}\nSTOPPED by the ring model ({', '.join(self.blame) or 'parities'}): "
                    f"{_ring_words(self.diagnosis)}")
        if self.error is not None:
            return f"{head}\nSTOPPED: {self.error}"
        if self.passed:
            return (f"{head}\nPASS: every element written once and within the bound "
                    f"(worst error / bound = {self.check.worst:.2g})")
        lines = [f"{head}\nFAIL: {where_wrong(self.bad)}"]
        for p in self.blame:
            lines.append(f"  {p} is wrong: {self.why.get(p, 'with the course' + chr(39) + 's ' + p + ' the tile passes')}")
        if len(self.blame) > 1:
            lines.append("  no single swap fixes it: each piece above differs from the course's")
        return "\n".join(lines)


def _ring_words(d) -> str:
    """The ring model's diagnosis ``d`` in words, its warpgroups named as every chapter names them
    (the model's wg0 is consumer 0: ``Deadlock.waiting``; a race's text is named where it is made)."""
    if hasattr(d, "who_waits"):
        text = (f"deadlock at k-tile {d.iteration}: {' and '.join(d.waiting)} wait on "
                f"{d.barrier}[{d.stage}] with parity {d.parity}, and {d.why}")
    else:
        text = f"race at k-tile {d.iteration}: {d.what}"
    return text


def order_diff(schedule, k_tiles: int) -> str | None:
    """The first wgmma read in ``schedule``'s order that does not find its k-tile's bytes in the
    stage (not landed yet, or overwritten), or a k-tile not loaded or not read by every consumer;
    None if none."""
    held, reads = {}, {}
    for _, _, what, t, s, lane in _events(schedule):
        if what == "load":
            held[s] = t
        elif held.get(s) != t:
            now = f"k-tile {held[s]}" if s in held else "nothing yet"
            return f"{wg_name(lane)} reads k-tile {t} from stage {s}, which holds {now} then"
        else:
            reads[t] = reads.get(t, 0) + 1
    missing = [t for t in range(k_tiles) if reads.get(t) != CONSUMERS]
    return (f"k-tile {missing[0]} is read {reads.get(missing[0], 0)} times, not once by each of the "
            f"{CONSUMERS} consumer warpgroups") if missing else None


def _events(schedule) -> list[tuple]:
    """(time, order, what, k, stage, lane) of the TMA loads landing and the wgmmas reading, in the
    ring model's order (a load lands at its span's end, a wgmma reads at its start)."""
    ev = []
    for sp in schedule.spans:
        if sp.kind == "tma":
            ev.append((sp.end, 0, "load", sp.k, sp.stage, sp.lane))
        elif sp.kind == "mma":
            ev.append((sp.start, 1, "mma", sp.k, sp.stage, sp.lane))
    return sorted(ev)


def run_ring(stages: int, k_tiles: int, parities: tuple | None = None, producer_step: str | None = None,
             consumer_loop: str | None = None):
    """Chapter 05's ring model for this tile: the kernel's protocol with ``parities``, or, where a
    producer step or consumer loop (CUDA text) is given, the protocol the texts read to
    (:func:`asynctc.models.pipeline.protocol.read_protocol`). Returns the
    :class:`~asynctc.models.pipeline.Schedule`; raises :class:`PieceError` for a text the reader
    cannot follow."""
    from . import pipeline as _mp
    from .pipeline import protocol as _pr
    tile, parities = _mp.Tile(BM, BN, BK), parities or COURSE_PARITIES
    if producer_step is None and consumer_loop is None:
        return _mp.simulate(stages, 1 if stages > 1 else 0, CONSUMERS, k_tiles, tile=tile, parities=parities)
    try:
        proto = _pr.read_protocol(stages, k_tiles, CONSUMERS, STAGE_BYTES, parities, producer_step,
                                  consumer_loop)
    except _pr.ReadError as e:
        raise PieceError(e.piece, f"the loop reader cannot follow it: {e}") from None
    return _pr.simulate_protocol(proto, stages, CONSUMERS, k_tiles, tile, STAGE_BYTES)


def ring_order(stages: int = 2, k: int = 256, parities: tuple | None = None,
               producer_step: str | None = None, consumer_loop: str | None = None,
               schedule: Any = None) -> list[str]:
    """The order in which the emulation moves data, from chapter 05's ring model: one line per TMA
    load landing or warpgroup reading a stage ("load k-tile 2 -> stage 0", "consumer 0 reads
    k-tile 0 from stage 0": :func:`wg_name`); the reads between two loads are listed by consumer
    number (the model's read times differ by a few cycles; no read moves past a load). ``schedule``: a ring-model
    run already made (the capstone's loops), used instead of the other arguments. Raises ValueError
    with the ring's diagnosis when the parities, producer step, consumer loop or schedule break it."""
    try:
        ring = schedule if schedule is not None else run_ring(stages, k // BK, parities, producer_step,
                                                               consumer_loop)
    except PieceError as e:
        raise ValueError(str(e)) from None
    if ring.diagnosis is not None:
        raise ValueError(_ring_words(ring.diagnosis))
    ev, out, reads = _events(ring), [], []
    for _, _, what, t, s, lane in ev + [(None, None, "load", None, None, None)]:
        if what != "load":
            reads.append((t, lane, s))
            continue
        out += [f"{wg_name(w)} reads k-tile {k} from stage {st}" for k, w, st in sorted(reads)]
        reads = []
        if t is not None:
            out.append(f"load k-tile {t} -> stage {s}")
    return out


def wg_name(lane: str) -> str:
    """The learner's name of a ring-model lane, the same in every chapter: the model's wg0, wg1 are
    consumer 0 and consumer 1 (:func:`asynctc.models.lanes.lane_name`; chapter 06's kernel runs them
    in hardware warpgroups 1 and 2). Other lanes are returned as they are."""
    return _lanes.lane_name(lane) if lane.startswith("wg") else lane


def stepped_descriptor(encode: Callable, kstep: Callable, f0: _d.WgmmaDescriptor,
                       j: int) -> _d.WgmmaDescriptor:
    """k-step ``j``'s descriptor: k-step 0's fields ``f0`` packed by ``encode``, then moved on by
    ``kstep(desc0, j, "K")`` (chapter 04's ``kstep_desc``), decoded. Raises :class:`PieceError`."""
    d0 = descriptor(encode, f0.start_address, f0.lbo, f0.sbo)
    if j == 0:
        return d0
    desc0 = d0.encode()
    v = kstep(desc0, j, "K")
    call = f"kstep_desc({desc0:#x}, {j}, 'K')"
    if v is None or v is Ellipsis:
        raise PieceError("kstep", "kstep_desc returns None: write its body (or leave the course's in place)")
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) < 1 << 64:
        raise PieceError("kstep", f"{call} returned {v!r}; return the 64-bit descriptor, an int")
    try:
        return _d.decode(int(v))
    except _d.DescriptorError as e:
        raise PieceError("kstep", f"{call} = {int(v):#x}, which the decoder rejects: {e}") from None


def kstep_diff(kstep: Callable, stages: int) -> str | None:
    """The first k-step descriptor of the tile that ``kstep`` advances differently from the
    course's, with chapter 04's diagnosis; None if every one matches."""
    tile = _operand(WG_M)
    for s in range(stages):
        base = _a_base(s, 0)
        desc0 = tile.descriptor(0, base).encode()
        for j in range(1, tile.k_steps):
            got, want = kstep(desc0, j, "K"), course_kstep(desc0, j, "K")
            if got != want:
                from ..core.exercises import told     # chapter 04's hint with its rule: this is no check
                why = (told(_d.kstep_diagnosis(int(got), tile, j, base), rule=True)
                       if isinstance(got, (int, np.integer)) else None)
                shown = f"{int(got):#x}" if isinstance(got, (int, np.integer)) else repr(got)
                return (f"kstep_desc({desc0:#x}, {j}, 'K') = {shown}, the course's {want:#x}"
                        + (f": {why}" if why else ""))
    return None


def read_fill(text: str, stage: int, t: int):
    """The stage-fill lines ``text`` read by chapter 03's reader
    (:func:`asynctc.models.stage_fill_reader.read`) for k-tile ``t`` into stage ``stage`` of this
    tile: the :class:`~asynctc.models.stage_fill_reader.Fill`.
    Raises :class:`PieceError` naming stage_fill when the reader cannot follow it."""
    try:
        fill = _sf.read(text, stage=stage * STAGE_BYTES, full_bar=FULL_BAR_BASE + 8 * stage, kt=t,
                        m0=0, n0=0)
    except _sf.ReadError as e:
        raise PieceError("stage_fill", str(e)) from None
    if fill.other_bars:
        raise PieceError("stage_fill", f"{fill.other_bars[0]!r} names another barrier than full_bar")
    for ld in fill.loads:
        if ld.map not in ("ta", "tb"):
            raise PieceError("stage_fill", f"{ld.line!r} loads from {ld.map!r}; the maps are ta (A) and tb (B)")
    return fill


def stage_fill_diff(text: str, stages: int, k: int) -> str | None:
    """Chapter 03's hint for the first k-tile at which the stage-fill lines ``text`` go wrong
    (bytes announced, where the boxes land, their coordinates); None if none is found."""
    for t in range(k // BK):
        fill = read_fill(text, t % stages, t)
        maps = sorted(ld.map for ld in fill.loads)
        if maps != ["ta", "tb"]:
            return f"at k-tile {t} your lines load from {maps or 'no map'}: a stage is one box of ta and one of tb"
        from ..core.exercises import told     # chapter 03's hint with its rule: this is no check
        hint = told(_sf.bytes_hint(fill) or _sf.where_hint({ld.map: ld for ld in fill.loads})
                    or _sf.coord_hint(fill, dict(kt=t, m0=0, n0=0)), rule=True)
        if hint:
            return f"at k-tile {t}: {hint}"
    return None


def _tma(fill, t: int, s: int, a16: np.ndarray, b16: np.ndarray, where: np.ndarray, stages: int):
    """The TMA step of k-tile ``t`` into stage ``s`` as the learner's lines do it: one (address
    array, bytes) per box, in issue order, and how many had landed when the full barrier's phase
    completed (None: it never does). A box outside the tensor reads zeros, as TMA fills them."""
    from .pipeline import MbarrierError
    src = {"ta": a16, "tb": b16.T}
    boxes = []
    for ld in fill.loads:
        m = src[ld.map]
        box = np.zeros((BM, BK), np.float16)
        r0, c0 = max(ld.c1, 0), max(ld.c0, 0)
        part = m[r0:ld.c1 + BM, c0:ld.c0 + BK]
        box[r0 - ld.c1:r0 - ld.c1 + part.shape[0], c0 - ld.c0:c0 - ld.c0 + part.shape[1]] = part
        dst = s * STAGE_BYTES + ld.offset
        if dst < 0 or dst + BOX_BYTES > stages * STAGE_BYTES:
            raise PieceError("stage_fill", f"{ld.line!r} at k-tile {t}: its box lands at offset "
                             f"{ld.offset} of stage {s}, outside the ring's shared memory")
        boxes.append((dst + where, box.view(np.uint8).reshape(-1)))
    try:
        done, left = _sf.tx_outcome(fill.expects, fill.arrivals, tuple(BOX_BYTES for _ in boxes))
    except MbarrierError as e:
        raise PieceError("stage_fill", f"the mbarrier model stops: {e}") from None
    if done is None:
        raise PieceError("stage_fill", f"at k-tile {t} you announce {sum(fill.expects)} bytes and "
                         f"{fill.arrivals} arrival(s) but the {len(boxes)} boxes bring "
                         f"{len(boxes) * BOX_BYTES}: the full barrier's phase never completes "
                         "(tx-count left {left}), so the consumers' wait never passes".format(left=left))
    return boxes, done


def _run(a16: np.ndarray, b16: np.ndarray, stages: int, ps: dict):
    """One emulation with the pieces ``ps``: (c, writes, diagnosis, error)."""
    k = a16.shape[1]
    k_tiles = k // BK
    c = np.full((BM, BN), np.nan, np.float32)
    writes = np.zeros((BM, BN), int)
    ring = ps.get("schedule")                           # the capstone's loops, already run
    try:                                                # or chapter 05's ring model with the pieces
        if ring is None:
            ring = run_ring(stages, k_tiles, ps["parities"], ps.get("producer_step"), ps.get("consumer_loop"))
    except PieceError as e:
        return c, writes, None, e
    if ring.diagnosis is not None:
        return c, writes, ring.diagnosis, None
    smem = np.zeros(stages * STAGE_BYTES, np.uint8)
    acc = np.zeros((CONSUMERS, WG_M, BN), np.float32)
    late = {}                                           # stage -> boxes that land after the reads
    try:
        where = swizzle_map(ps["swizzle"])
        a_tile, b_tile = _operand(WG_M), _operand(BN)
        desc = {}                                       # (operand, stage, wg, step) -> addresses
        for s in range(stages):
            for j in range(a_tile.k_steps):
                for w in range(CONSUMERS):
                    f = stepped_descriptor(ps["encode"], ps["kstep"], a_tile.descriptor(0, _a_base(s, w)), j)
                    desc["A", s, w, j] = _d.read_addresses(f, "K", DTYPE, WG_M)
                f = stepped_descriptor(ps["encode"], ps["kstep"], b_tile.descriptor(0, _b_base(s)), j)
                desc["B", s, 0, j] = _d.read_addresses(f, "K", DTYPE, BN)
        for _, _, what, t, s, lane in _events(ring):
            if what == "load":                          # TMA: the boxes the stage-fill lines ask for
                for addr, box in late.pop(s, []):
                    smem[addr] = box
                boxes, done = _tma(read_fill(ps["stage_fill"], s, t), t, s, a16, b16, where, stages)
                for addr, box in boxes[:done]:
                    smem[addr] = box
                late[s] = boxes[done:]                  # landed after the phase completed
            else:                                       # one warpgroup's four k16 wgmmas
                w = int(lane[2:])
                for j in range(a_tile.k_steps):
                    av = gather_bytes(smem, desc["A", s, w, j], DTYPE).astype(np.float64)   # (64, 16)
                    bv = gather_bytes(smem, desc["B", s, 0, j], DTYPE).astype(np.float64)   # (128, 16)
                    acc[w] = (acc[w].astype(np.float64) + av @ bv.T).astype(np.float32)
    except PieceError as e:
        return c, writes, None, e
    except _d.DescriptorError as e:
        return c, writes, None, PieceError("encode", str(e))
    rows, cols = _f.wgmma_accumulator(BN)               # (thread, register) -> (row, col)
    for w in range(CONSUMERS):
        regs = acc[w][rows, cols]                       # each thread's registers
        np.add.at(writes, (w * WG_M + rows, cols), 1)
        c[w * WG_M + rows, cols] = regs
    return c, writes, None, None


def random_inputs(k: int = 256, rng: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Fresh standard-normal A (128 × K) and B (K × 128), rounded to fp16."""
    rng = rng if rng is not None else np.random.default_rng()
    return (round_to(rng.standard_normal((BM, k)), DTYPE), round_to(rng.standard_normal((k, BN)), DTYPE))


def emulate(swizzle: Callable[[int], int] | None = None, encode: Callable | None = None,
            parities: tuple | None = None, *, kstep: Callable | None = None,
            stage_fill: str | None = None, producer_step: str | None = None,
            consumer_loop: str | None = None, stages: int = 2, k: int = 256,
            a: np.ndarray | None = None, b: np.ndarray | None = None, rng: Any = None,
            on_purpose: Any = (), schedule: Any = None) -> Sm90Gemm:
    """Emulate one 128 × 128 tile of C = A·B (see the module docstring) with the pieces given;
    None (the default) takes the course's. ``swizzle(offset) -> offset``: chapter 03's
    ``swizzle_128b``; ``encode(start_address, lbo, sbo, swizzle) -> int``: deep dive 04b's;
    ``parities``: the pair ``(full_parity(k, S), empty_parity(t, S))`` of deep dive 05b;
    ``producer_step`` / ``consumer_loop``: chapter 05's refill step and chapter 06's k-loop body
    (CUDA text), read into the ring model's protocol. ``stages``:
    S ≥ 1 (at most 7: 32 KiB a stage); ``k``: a multiple of 64; ``a`` / ``b``: inputs (default
    :func:`random_inputs`). When elements are wrong, each of the learner's pieces is swapped for
    the course's in turn: a swap that makes the tile pass names that piece. ``on_purpose``: the
    pieces given that are no learner's but changed on purpose (names: labelled "broken on purpose";
    or piece → label), so the summary does not call them "yours". ``schedule``: a ring-model
    :class:`~asynctc.models.pipeline.Schedule` already run (chapter 06's capstone loops, read by
    :func:`asynctc.warp_specialization.whole_kloop.timeline` for ``stages`` stages, k / 64 k-tiles,
    one tile): the data move in its order, not the ring pieces'; it is the piece named
    :data:`CAPSTONE` (label it with ``on_purpose={"whole_kloop": "the course's"}`` when it is no
    learner's)."""
    if int(k) != k or k < BK or k % BK:
        raise ValueError(f"k={k!r}: a positive multiple of {BK} (one k-tile is {BK} deep)")
    if int(stages) != stages or not 1 <= stages <= 7:
        raise ValueError(f"stages={stages!r}: 1..7 (each stage holds {STAGE_BYTES // 1024} KiB)")
    if a is None or b is None:
        a, b = random_inputs(k, rng)
    a16, b16 = round_to(a, DTYPE), round_to(b, DTYPE)
    if a16.shape != (BM, k) or b16.shape != (k, BN):
        raise ValueError(f"a.shape={a16.shape}, b.shape={b16.shape}: expected ({BM}, {k}) and ({k}, {BN})")
    shape = (stages, k // BK, CONSUMERS)
    if schedule is not None and (schedule.stages, schedule.k_tiles, schedule.consumers) != shape:
        raise ValueError(f"schedule: {schedule.stages} stages, {schedule.k_tiles} k-tiles, "
                         f"{schedule.consumers} consumers; this tile has {shape[0]}, {shape[1]}, "
                         f"{shape[2]} (run the capstone's loops for one tile of it)")
    given = {"parities": parities, "stage_fill": stage_fill, "swizzle": swizzle, "encode": encode,
             "kstep": kstep, "producer_step": producer_step, "consumer_loop": consumer_loop}
    course = {"parities": COURSE_PARITIES, "stage_fill": course_stage_fill(),
              "swizzle": course_swizzle_128b, "encode": course_encode, "kstep": course_kstep,
              "producer_step": None, "consumer_loop": None}
    pieces = {p: given[p] if given[p] is not None else course[p] for p in PIECES}
    labels = dict(on_purpose) if isinstance(on_purpose, dict) else \
        {p: "broken on purpose" for p in ([on_purpose] if isinstance(on_purpose, str) else on_purpose)}
    if set(labels) - set(PIECES) - {CAPSTONE}:
        raise ValueError(f"on_purpose={on_purpose!r}: pieces are {', '.join(PIECES + (CAPSTONE,))}")
    used = {p: labels.get(p, "yours") if given[p] is not None else "the course's" for p in PIECES}
    pieces["schedule"] = course["schedule"] = schedule
    if schedule is not None:                            # the capstone orders the tile, not the ring pieces
        used[CAPSTONE] = labels.get(CAPSTONE, "yours")
        course["schedule"] = None
        for p in RING_PIECES:
            given[p], pieces[p] = None, course[p]
            used.pop(p)

    def run(ps):
        return _run(a16, b16, stages, ps)

    c, writes, diag, err = run(pieces)
    res = Sm90Gemm(c, None, writes, stages, k, used, diag, err)
    if err is not None:
        res.blame = [err.piece]
        return res
    if diag is not None and schedule is not None:      # the capstone's loops stopped the ring
        res.blame = [CAPSTONE]
        return res
    if diag is not None:                                # the ring stopped: whose swap clears it
        mine = [p for p in RING_PIECES if given[p] is not None]
        res.blame = [p for p in mine if run({**pieces, p: course[p]})[2] is None] or mine
        return res
    res.check = compare_elementwise(c, a16.astype(np.float64), b16.astype(np.float64), "float32",
                                    label="emulated sm_90 tile")
    ratio = np.abs(c.astype(np.float64) - a16.astype(np.float64) @ b16.astype(np.float64))
    res.bad = ~np.isfinite(c) | (writes != 1)
    if not res.check.passed:
        from ..core.checks import element_bound
        ref = a16.astype(np.float64) @ b16.astype(np.float64)
        mag = np.abs(a16.astype(np.float64)) @ np.abs(b16.astype(np.float64))
        res.bad |= ~(ratio <= element_bound(k, mag, ref, "float32"))
    if res.passed:
        return res
    right = run(course)[0]
    for p in PIECES:
        if given[p] is None:
            continue
        c2, _, d2, e2 = run({**pieces, p: course[p]})
        if d2 is None and e2 is None and np.array_equal(c2, right, equal_nan=True):
            res.blame.append(p)
    if schedule is not None:                            # the course's order in place of the capstone's
        c2, _, d2, e2 = run({**pieces, "schedule": None})
        if d2 is None and e2 is None and np.array_equal(c2, right, equal_nan=True):
            res.blame.append(CAPSTONE)
    diff = {"swizzle": lambda: swizzle_diff(pieces["swizzle"]),
            "encode": lambda: encode_diff(pieces["encode"], stages),
            "kstep": lambda: kstep_diff(pieces["kstep"], stages),
            "stage_fill": lambda: stage_fill_diff(pieces["stage_fill"], stages, k),
            CAPSTONE: lambda: order_diff(schedule, k // BK)}
    for p in PIECES + (CAPSTONE,):
        if (given.get(p) is not None or p == CAPSTONE and schedule is not None) and p in diff:
            try:
                text = diff[p]()
            except PieceError as e:
                text = str(e)
            if text:
                res.why[p] = text
    if not res.blame:                                   # several wrong: name every one that differs
        res.blame = [p for p in res.why]
    return res

def why(result: "Sm90Gemm") -> str:
    """06e's "predict before you run" explanation for an ``encode`` that stores LBO = 0: why the
    tile ``result`` passed (or, had it failed, that LBO mattered), printed after the run so the
    notebook's source does not give the answer away."""
    if result.passed:
        return ("It passes: for a K-major operand with a swizzle, one wgmma's K (32 bytes) sits inside "
                "one 128-byte row,\nso LBO is never used (chapter 04's canonical layouts). It would "
                "matter for an MN-major tile.")
    return "It fails: this tile's layout reads LBO, so the encoder's LBO field matters here."
