"""Deep dive 06f's warm-up ``ch06.whole_kloop``, 06's capstone in short names: the learner writes, from a
blank template, both roles' loops of a warp-specialized, persistent CTA that computes several tiles
in a row with one ring of stages (the producer ``wg == 0`` waits on ``empty[s]``, announces the
bytes on ``full[s]`` and loads; the consumers wait on ``full[s]``, issue the wgmmas, release the
stage once they are done reading it, and store each tile's C; stage and phase carry across tiles).
No GPU is needed, and nothing is compiled: the text is CUDA-C-like, read by the course's reader.

The check, in order:

1. **read** — :mod:`asynctc.core.loop_reader` (with ``for`` loops) runs the text as the producer's
   elected thread and as one of each consumer warpgroup, for each ring of :data:`RINGS` (S stages,
   T k-tiles a tile, tiles): each role's events in order (waits with barrier, stage and parity;
   ``expect`` with bytes; ``load``; ``mma`` on a stage; ``wait_group``; arrives; ``store``).
2. **rules** — ring counter j (tile j // T, k-tile j % T) goes to stage j mod S, its fill j // S,
   after a wait on empty with parity (j // S + 1) mod 2 and an expect_tx of :data:`STAGE_BYTES` on full; read j waits on full
   with parity (j // S) mod 2; a stage is released once per read, after the wgmma group reading it
   has retired; each tile's C is stored after its T reads with no wgmma in flight. The first rule
   broken is the hint (with "And 1 more" when the consumers' loop breaks a rule too), with chapter 05's ring model's diagnosis of the same loops where it has one.
3. **ring model** — :class:`~asynctc.models.pipeline.protocol._ProtocolSim` runs the events over every
   tile, the producer as its own actor (:func:`ring`): no deadlock, no stage read before its bytes
   land, none overwritten or released while still read.
4. **data** — 06e's emulator (:mod:`asynctc.models.emulate_sm90`) moves the bytes in the ring model's
   order, every tile on fresh random A and B; each tile's C within the elementwise bound of float64.
5. **prediction** — the first comment's stage and consumers' full parity at tile :data:`PREDICT_TILE`'s
   first k-tile (:func:`prediction`) must be the loops' own; a wrong one fails with a two-tier hint, a
   "?" or none with :data:`ASK`.
"""

from __future__ import annotations

import re

import numpy as np

from ..core import exercises as _ex
from ..core import loop_reader as _lr
from ..core.checks import compare_elementwise
from ..models import descriptors as _d
from ..models import emulate_sm90 as _em
from ..models import fragments as _f
from ..models import pipeline as _mp
from ..models.emulate import gather_bytes
from ..models.pipeline.protocol import Protocol, _ProtocolSim

Event = _lr.Event
#: The rings the check runs the loops on: (stages S, k-tiles per tile T, tiles). T is no multiple
#: of S, so a ring that restarts at each tile shows at tile 1; the first also runs the data.
RINGS = ((2, 3, 3), (3, 4, 2))
#: The tile whose first k-tile the first comment predicts (06's exercise 1a asks tile 1's producer side).
PREDICT_TILE = 2
#: A stage's bytes: an A box and a B box of 128 rows × 128 bytes (:mod:`asynctc.models.emulate_sm90`).
STAGE_BYTES = _em.STAGE_BYTES
CONSUMERS = _em.CONSUMERS
#: The names the text may use (the exercise's prompt lists them).
IN_SCOPE = ("wg", "TILES", "T", "STAGES", "kStageBytes", "full.wait", "full.arrive_expect_tx",
            "empty.wait", "empty.arrive", "tma_load", "mma_ktile", "acc", "wgmma_wait_group",
            "store_tile")
_CALLS = ("tma_load", "mma_ktile", "wgmma_wait_group", "store_tile")

#: The learner's blank page (06f §1's cell): the roles and the loop bounds, nothing of the answer.
TEMPLATE = """
// tile 2's first k-tile: stage ?, consumers' full parity ?   (your prediction; declarations below)
if (wg == 0) {                 // the producer warpgroup
  for (int tile = 0; tile < TILES; ++tile) {
    for (int k = 0; k < T; ++k) {
      // your producer's k-tile
    }
  }
} else {                       // consumer warpgroups 1 and 2
  for (int tile = 0; tile < TILES; ++tile) {
    for (int k = 0; k < T; ++k) {
      // your consumers' k-tile
    }
    // the tile's C
  }
}
"""

#: The course's answer (the solution notebook's).
SOLUTION = """\
// tile 2's first k-tile: stage 0, consumers' full parity 1   (ring counter 6: 6 mod 2, 6 // 2 mod 2)
int stage = 0, phase = 0;                // the ring position: set once, before the tile loop
if (wg == 0) {                           // the producer warpgroup
  for (int tile = 0; tile < TILES; ++tile) {
    for (int k = 0; k < T; ++k) {
      empty.wait(stage, phase ^ 1);      // (f + 1) mod 2: the stage's last fill was released
      full.arrive_expect_tx(stage, kStageBytes);
      tma_load(stage, tile, k);          // A's box and B's box; they land on full[stage]
      if (++stage == STAGES) { stage = 0; phase ^= 1; }
    }
  }
} else {                                 // consumer warpgroups 1 and 2
  for (int tile = 0; tile < TILES; ++tile) {
    for (int k = 0; k < T; ++k) {
      full.wait(stage, phase);           // f mod 2: the TMA's bytes have landed
      mma_ktile(acc, stage);
      wgmma_wait_group<0>();             // the wgmmas are done reading the stage
      empty.arrive(stage);
      if (++stage == STAGES) { stage = 0; phase ^= 1; }
    }
    store_tile(acc, tile);
  }
}
"""


class _Machine(_lr._Machine):
    """The loop reader's machine with the capstone's names, as one elected thread of warpgroup ``wg``."""

    def __init__(self, wg: int, stages: int, k_tiles: int, tiles: int):
        super().__init__(stages, k_tiles, STAGE_BYTES, wg, True)
        self.env = {"wg": wg, "TILES": tiles, "T": k_tiles, "STAGES": stages, "kStageBytes": STAGE_BYTES,
                    "full": _lr._Barriers("full"), "empty": _lr._Barriers("empty"),
                    "acc": _lr._Thing("the accumulators acc")}

    def lookup(self, name, line):
        if name in self.locals or name in self.env:
            return super().lookup(name, line)
        if name in _CALLS:
            return _lr._Fn(name)
        raise _lr.ReadError(line, f"the check does not know {name!r}: the loops may use {', '.join(IN_SCOPE)}")

    def eval(self, e):
        if e[0] == "member" and e[3] == "arrive_expect_tx":
            obj = super().eval(e[2])
            if isinstance(obj, _lr._Barriers):
                return _lr._Fn("arrive_expect_tx", obj)
        return super().eval(e)

    def call(self, fn, args, line):
        name = getattr(fn, "name", None)
        want = {"wait": 2, "arrive": 1, "arrive_expect_tx": 2, "tma_load": 3, "mma_ktile": 2, "store_tile": 2}
        if name in want and len(args) != want[name]:
            form = {"wait": "full.wait(stage, parity)", "arrive": "empty.arrive(stage)",
                    "arrive_expect_tx": "full.arrive_expect_tx(stage, bytes)", "tma_load": "tma_load(stage, tile, k)",
                    "mma_ktile": "mma_ktile(acc, stage)", "store_tile": "store_tile(acc, tile)"}[name]
            raise _lr.ReadError(line, f"{name} takes {want[name]} argument(s): {form}")
        ev, T = self.events.append, self.env["T"]
        if name == "arrive_expect_tx":
            ev(Event("expect", line, barrier=fn.target.name, stage=self._stage(args[0], line),
                     n=self._int(args[1], line, "the bytes")))
        elif name == "tma_load":
            s, tile, k = (self._int(a, line, what) for a, what in zip(args, ("the stage", "the tile", "k")))
            ev(Event("load", line, barrier=f"full[{self._stage(s, line)}]", stage=s, n=tile * T + k, a=(tile, k)))
        elif name == "mma_ktile":
            ev(Event("mma", line, stage=self._stage(args[1], line)))
            ev(Event("commit", line))
        elif name == "store_tile":
            ev(Event("store", line, n=self._int(args[1], line, "the tile")))
        else:
            return super().call(fn, args, line)
        return None


def read(text: str, wg: int, stages: int, k_tiles: int, tiles: int) -> list[Event]:
    """The events of ``text`` run as one elected thread of warpgroup ``wg`` (0: the producer).
    Raises :class:`~asynctc.core.loop_reader.ReadError`."""
    m = _Machine(wg, stages, k_tiles, tiles)
    m.execute(_lr.parse(text, loops=True))
    return m.events


# ---- the ring model over every tile -------------------------------------------------------------

class _WholeSim(_ProtocolSim):
    """The ring model with a producer actor of its own (warp specialization) and each role's events."""

    def __init__(self, producer: list, consumers: list, S: int, K: int):
        tile = _mp.Tile(_em.BM, _em.BN, _em.BK)
        super().__init__(Protocol([], {}, {}, 0), S, len(consumers), K,
                         _mp.HardwareParams.from_records(tile), tile, STAGE_BYTES)
        self.producer_events, self.consumer_events = producer, consumers

    def _actors(self):
        return {"producer": self._producer(), **{f"wg{w}": self._reader(w) for w in range(self.C)}}

    def _producer(self):
        j = 0
        try:
            for e in self.producer_events:
                if self.diagnosis is not None:
                    return
                if e.kind == "wait":
                    yield ("wait", "producer", f"wait_{e.barrier}", self._bar(e), e.parity, j, e.stage)
                elif e.kind == "expect":
                    bar = self._bar(e)
                    bar.arrive_expect_tx(e.n)
                    self._changed(bar)
                elif e.kind == "arrive":
                    self._bar(e).arrive()
                    self._changed(self._bar(e))
                elif e.kind == "load":
                    self._load(e.n, e.stage)
                    j += 1
                    yield ("at", self.now + self.hw.issue_cycles)
        except _mp.MbarrierError as err:
            self.diagnosis = self.diagnosis or _mp.Race(j, -1, f"the mbarrier model stops: {err}")

    def _load(self, t, s):
        """TMA of k-tile ``t`` (counted over all tiles) into stage ``s``; its boxes land on full[s]."""
        old, hw = self.stage_k[s], self.hw
        if old is not None and self._overwrites(t, s, old, self.acquired[s], float("inf")):
            return
        self.gone[s], self.acquired[s] = set(), set()
        self.stage_k[s], self.landed[s] = t, 0
        for nbytes in (self.tile.a_bytes, self.tile.b_bytes):
            dur = nbytes * hw.dram_fraction / (hw.tma_bytes_per_clk / hw.ctas_per_sm)
            self.tma_free = max(self.now + hw.tma_latency, self.tma_free) + dur
            self._at(self.tma_free, lambda nb=nbytes: self._landed(t, s, nb, self.full[s]))
        self.spans.append(_mp.Span("tma", "tma", t, s, self.now, self.tma_free))

    def _reader(self, w):
        lane, j = f"wg{w}", 0
        try:
            for e in self.consumer_events[w]:
                if self.diagnosis is not None:
                    return
                if e.kind == "wait":
                    yield ("wait", lane, f"wait_{e.barrier}", self._bar(e), e.parity, j, e.stage)
                elif e.kind == "mma":
                    yield ("at", self.now + self.hw.issue_cycles)
                    self._check_read(lane, j, e.stage, "reads")
                    if self.diagnosis is not None:
                        return
                    self._mma(w, j, e.stage)
                    self.mma_end[w, j] = self.mma_ends[w][-1]
                    self.reading[w].setdefault(e.stage, []).append(j)
                    j += 1
                elif e.kind == "wait_group":
                    yield ("at", self._groups_done(w, e.n))
                elif e.kind == "arrive":
                    self._arrive(w, e)
        except _mp.MbarrierError as err:
            self.diagnosis = self.diagnosis or _mp.Race(j, -1, f"the mbarrier model stops: {err}")


def ring(producer: list, consumers: list, stages: int, k_tiles_all: int) -> _mp.Schedule:
    """Chapter 05's ring model run with each role's events over all ``k_tiles_all`` k-tiles: a
    :class:`~asynctc.models.pipeline.Schedule` (``diagnosis`` None when every k-tile moves safely)."""
    sim = _WholeSim(producer, consumers, stages, k_tiles_all)
    sim.run()
    return _mp.Schedule(sorted(sim.spans, key=lambda s: (s.start, s.lane)), sim.diagnosis, stages, 0,
                        len(consumers), k_tiles_all, sim.tile, sim.hw)


# ---- the data: every tile through the emulator ----------------------------------------------------

def emulate_tiles(schedule: _mp.Schedule, k_tiles: int, tiles: int, rng=None) -> list:
    """Move the bytes in ``schedule``'s order with the course's stage fill, swizzle and descriptors,
    each tile on fresh random A and B: each tile's C's :class:`~asynctc.core.checks.ElementCheck`."""
    rng = rng if rng is not None else np.random.default_rng()
    S, k = schedule.stages, k_tiles * _em.BK
    ab = [_em.random_inputs(k, rng) for _ in range(tiles)]
    where = _em.swizzle_map(_em.course_swizzle_128b)
    fill_text = _em.course_stage_fill()
    a_tile, b_tile = _em._operand(_em.WG_M), _em._operand(_em.BN)
    desc = {}
    for s in range(S):
        for j in range(a_tile.k_steps):
            for w in range(CONSUMERS):
                desc["A", s, w, j] = _d.read_addresses(a_tile.descriptor(j, _em._a_base(s, w)), "K", "float16", _em.WG_M)
            desc["B", s, j] = _d.read_addresses(b_tile.descriptor(j, _em._b_base(s)), "K", "float16", _em.BN)
    smem = np.zeros(S * STAGE_BYTES, np.uint8)
    acc = np.zeros((tiles, CONSUMERS, _em.WG_M, _em.BN), np.float32)
    for _, _, what, g, s, lane in _em._events(schedule):
        t = g // k_tiles
        if what == "load":
            boxes, _ = _em._tma(_em.read_fill(fill_text, s, g % k_tiles), g % k_tiles, s, *ab[t], where, S)
            for addr, box in boxes:
                smem[addr] = box
            continue
        w = int(lane[2:])
        for j in range(a_tile.k_steps):
            av = gather_bytes(smem, desc["A", s, w, j], "float16").astype(np.float64)
            bv = gather_bytes(smem, desc["B", s, j], "float16").astype(np.float64)
            acc[t, w] = (acc[t, w].astype(np.float64) + av @ bv.T).astype(np.float32)
    rows, cols = _f.wgmma_accumulator(_em.BN)
    out = []
    for t, (a, b) in enumerate(ab):
        c = np.full((_em.BM, _em.BN), np.nan, np.float32)
        for w in range(CONSUMERS):
            c[w * _em.WG_M + rows, cols] = acc[t, w][rows, cols]
        out.append(compare_elementwise(c, a.astype(np.float64), b.astype(np.float64), "float32",
                                       label=f"emulated tile {t}"))
    return out


# ---- the rules ------------------------------------------------------------------------------------

#: The second-miss note (:data:`asynctc.core.exercises.SECOND`): hints here come in two tiers,
#: resolved by the check (:func:`asynctc.core.exercises.tiered`).
SECOND = _ex.SECOND


def _tiered(symptom: str, question: str, rule: str) -> str:
    """:func:`asynctc.core.exercises.tiered`, the rule ending a sentence (the judge adds no "." after it)."""
    return _ex.tiered(symptom, question, rule if rule.endswith((".", ")", "?")) else rule + ".")


def _restart(j: int, T: int) -> str:
    return (f" This is the first k-tile of tile {j // T}, and the ring does not restart with a tile: its "
            f"stage and phase carry on from ring counter {j - 1}")


def _wrong_barrier(role: str, bar: str, s: int) -> str:
    if role == "producer":
        return (f"your producer waits on full[{s}], the barrier its own TMA completes (the seed "
                f"article's naming, backwards). Before refilling a stage it waits until the consumers "
                f"released it: empty[{s}]")
    return (f"your consumers wait on empty[{s}], the barrier they complete themselves when they release a "
            f"stage (the seed article's naming, backwards). The stage holds its k-tile when full[{s}] "
            "completes: wait on full")


def _producer_hint(ev: list, S: int, T: int, tiles: int) -> str | None:
    n, start, loads = tiles * T, 0, [i for i, e in enumerate(ev) if e.kind == "load"]
    if not loads:
        return "your producer (wg == 0) loads nothing: tma_load(stage, tile, k) once per k-tile of every tile"
    for j, at in enumerate(loads):
        seg, start, e = ev[start:at + 1], at + 1, ev[at]
        here = f"producer, ring counter {j} (tile {j // T}, k-tile {j % T}):"
        if j >= n:
            return f"your producer loads {len(loads)} k-tiles; {tiles} tiles of T = {T} k-tiles are {n}"
        if e.a != (j // T, j % T):
            return (f"{here} your tma_load asks for k-tile {e.a[1]} of tile {e.a[0]}; the ring fills tile "
                    "by tile, k-tile by k-tile")
        s, parity, tile_start = j % S, (j // S + 1) % 2, j % T == 0 and j > 0
        if e.stage != s:
            return _tiered(f"{here} your tma_load fills stage {e.stage}",
                           f", not ring counter {j}'s stage. Which stage and which fill of it does counter {j} "
                           "use (§1's ring rule)?",
                           f"; counter {j} goes to stage {j} mod STAGES = {s}, its fill {j} // STAGES = {j // S}."
                           + (_restart(j, T) if tile_start else ""))
        waits = [x for x in seg if x.kind == "wait"]
        if not waits:
            return (f"{here} your producer loads stage {s} without waiting on empty[{s}]: nothing says the "
                    "consumers are done reading the fill it overwrites")
        w = waits[-1]
        if w.barrier == "full":
            return f"{here} " + _wrong_barrier("producer", w.barrier, s)
        if w.stage != s:
            return f"{here} your producer waits on empty[{w.stage}] but loads stage {s}"
        if w.parity != parity:
            f = j // S
            why = (f"fill 0 of a stage waits on parity 1, the phase before a fresh barrier's phase 0: it "
                   "passes at once" if f == 0 else
                   f"fill {f} of stage {s} waits for the phase the consumers' release of fill {f - 1} completes")
            return _tiered(f"{here} your producer waits on empty[{s}] with parity {w.parity}",
                           f", the wrong phase for ring counter {j}. Which fill of stage {s} is it, and which "
                           "parity does the producer's wait for that fill use (§1)?",
                           f"; this is fill f = {j // S} of stage {s}, parity (f + 1) mod 2 = {parity}: {why}."
                           + (_restart(j, T) if tile_start else ""))
        expects = [x for x in seg if x.kind == "expect"]
        if not expects or expects[-1].barrier != "full" or expects[-1].stage != s:
            got = (f"you announce bytes on {expects[-1].barrier}[{expects[-1].stage}]" if expects else
                   "you announce no bytes")
            return (f"{here} {got}: full[{s}].arrive_expect_tx(stage, bytes) is the producer's arrive "
                    "and tells full how many bytes the TMA brings")
        if expects[-1].n != STAGE_BYTES:
            x = expects[-1].n
            what = ("the phase completes once the A box lands, and the consumers read a stage whose B "
                    "box is still on its way" if x < STAGE_BYTES else
                    "the boxes never bring that many, so the phase never completes and the consumers wait forever")
            return (f"{here} you announce {x} bytes on full[{s}]; tma_load brings two boxes, A's "
                    f"{STAGE_BYTES // 2} and B's {STAGE_BYTES // 2}: kStageBytes = {STAGE_BYTES}. With "
                    f"{x}, {what}")
    return None


def _consumer_hint(ev: list, S: int, T: int, tiles: int, who: str) -> str | None:
    n, j, stores = tiles * T, 0, 0
    inflight, held, wait, freed = [], [], None, set()   # stages: in flight; read, held; released since read
    for e in ev:
        here = (f"{who}, ring counter {j} (tile {j // T}, k-tile {j % T}):" if e.kind != "arrive" else
                f"{who}, after ring counter {j - 1}:")
        if e.kind in ("load", "expect"):
            return f"{here} a consumer issues {'tma_load' if e.kind == 'load' else 'arrive_expect_tx'}: that is the producer's"
        if e.kind == "wait":
            wait = e
        elif e.kind == "mma":
            s, parity, tile_start = j % S, (j // S) % 2, j % T == 0 and j > 0
            if j >= n:
                return f"{who} reads more than the {n} k-tiles of {tiles} tiles of T = {T} k-tiles"
            if e.stage != s:
                return _tiered(f"{here} your wgmmas read stage {e.stage}",
                               f", not the stage the producer filled for ring counter {j}. Which stage is it "
                               "(§1's ring rule)?",
                               f"; the producer put this k-tile (counter {j}) in stage {j} mod STAGES = {s}."
                               + (_restart(j, T) if tile_start else ""))
            if wait is None:
                return (f"{here} your wgmmas read stage {s} with no wait on full[{s}] before them: "
                        "nothing says the TMA's bytes have landed")
            if wait.barrier == "empty":
                return f"{here} " + _wrong_barrier("consumer", wait.barrier, s)
            if wait.stage != s:
                return f"{here} your consumers wait on full[{wait.stage}] but read stage {s}"
            if wait.parity != parity:
                return _tiered(f"{here} your consumers wait on full[{s}] with parity {wait.parity}",
                               f", the wrong phase for ring counter {j}. Which fill of stage {s} is it, and "
                               "which parity does the consumers' wait for that fill use (§1)?",
                               f"; this is fill f = {j // S} of stage {s}: parity f mod 2 = {parity}."
                               + (_restart(j, T) if tile_start else ""))
            inflight.append(s)
            held.append(s)
            freed.discard(s)
            j, wait = j + 1, None
        elif e.kind == "wait_group":
            inflight = inflight[len(inflight) - e.n:] if 0 < e.n < len(inflight) else ([] if e.n == 0 else inflight)
        elif e.kind == "arrive":
            if e.barrier == "full":
                return (f"{here} your consumers arrive on full[{e.stage}]: full counts the producer's "
                        "arrive and the TMA's bytes; a consumer releases a stage on empty")
            if e.stage not in held:
                return (f"{here} your consumers release empty[{e.stage}] " + ("again after one read: a tile's end "
                        "releases its last k-tile's stage; the next tile does not" if e.stage in freed else
                        "before their wgmmas read the stage: release a stage after the read"))
            if e.stage in inflight:
                return (f"{here} your consumers release empty[{e.stage}] while the wgmma group that reads it "
                        "may still run (release before the last read): the producer may refill the stage "
                        "under the Tensor Cores. wgmma_wait_group<0>() first (or <1>, then release the stage of "
                        "the k-tile before)")
            held.remove(e.stage)
            freed.add(e.stage)
        elif e.kind == "store":
            if e.n != stores or j != (stores + 1) * T:
                return (f"{who} stores tile {e.n} after {j} reads; tile {stores}'s C is stored after its "
                        f"T = {T} k-tiles, after the k-loop")
            if inflight:
                return (f"{who} stores tile {e.n} while wgmmas may still write acc: wgmma_wait_group<0>() "
                        "before store_tile")
            stores += 1
    if j < n:
        return f"{who} reads {j} k-tiles; {tiles} tiles of T = {T} k-tiles are {n}: mma_ktile once per k-tile"
    if held:
        return (f"{who} never releases stage {held[0]} after its last read there: the producer waits on "
                f"empty[{held[0]}] for it")
    if stores != tiles:
        return f"{who} stores {stores} tiles of {tiles}: store_tile(acc, tile) after each tile's k-loop"
    return None


# ---- the judge -----------------------------------------------------------------------------------

def judge(answer) -> str | None:
    """Read, judge, run the ring model and the data for a learner's text (the module docstring):
    an :class:`~asynctc.core.exercises.Accepted` note when right, a hint otherwise. Raises
    :class:`~asynctc.core.exercises.NotAnswered` when neither role does anything yet."""
    if not isinstance(answer, str):
        return f'pass your loops as a string (got {type(answer).__name__}): whole_kloop = """ … """'
    note = []
    for S, T, tiles in RINGS:
        try:
            roles = [read(answer, wg, S, T, tiles) for wg in range(CONSUMERS + 1)]
        except _lr.ReadError as e:
            return f"line {e.line - (answer.startswith(chr(10)))}: {e.why}"
        if not any(roles):
            raise _ex.NotAnswered("write each role's k-tile step in the template's loops, then run the cell again")
        sched = ring(roles[0], roles[1:], S, T * tiles)
        said = (f" Chapter 05's ring model with your loops: {_em._ring_words(sched.diagnosis)}. (It counts k-tiles over "
                "all tiles: its k-tile j is ring counter j.)" if sched.diagnosis else "")
        found = [_producer_hint(roles[0], S, T, tiles), next(filter(None, (
            _consumer_hint(roles[w], S, T, tiles, f"consumer {w - 1}") for w in range(1, CONSUMERS + 1))), None)]
        hint, where = found[0] or found[1], f"(STAGES = {S}, T = {T}, TILES = {tiles}) "
        if hint:
            more = " And 1 more: your consumers' loop breaks a rule too (its hint comes once this is fixed)." * all(found)
            return where + hint + ("" if hint.endswith((".", ")", "?", _ex.TIER)) else ".") + said + more
        if sched.diagnosis is not None:
            return where + said.strip()
        if (S, T, tiles) == RINGS[0]:
            checks = emulate_tiles(sched, T, tiles)
            if not all(c.passed for c in checks):
                bad = next(t for t, c in enumerate(checks) if not c.passed)
                return f"{where}tile {bad}'s C is not within the bound of float64"
            worst = max(c.worst for c in checks)
            note.append(f"every tile is within the bound (worst error / bound {worst:.2g})")
        else:
            note.append(f"no race or deadlock on {S} stages either")
    ev = read(answer, 1, *RINGS[0])
    ran, said = _first_read(ev, RINGS[0][1]), prediction(answer) or (None, None)
    if any(p is not None and p != r for p, r in zip(said, ran)):    # a wrong prediction is no pass
        return _prediction_hint(said, ran, *RINGS[0][:2])
    if None in said:                                # a blank or deleted prediction is no pass either
        return ASK
    note[0] = f"tile {PREDICT_TILE} starts at stage {ran[0]}, parity {ran[1]}, and {note[0]}"     # as predicted
    waits = [e.n for e in ev if e.kind == "wait_group"]
    return _ex.Accepted("; ".join(note) + "." + (SLOW_NOTE if waits and not any(waits) else ""))


# ---- the prediction in the first comment -------------------------------------------------------

#: The hint for right loops under a prediction still "?" or deleted (readers 98-99: it passed). It
#: gives none of the loops' numbers away.
ASK = ("your loops pass every check; now write your prediction in the first comment "
       "(stage ?, consumers' full parity ?) and run the cell again.")


def prediction(text: str) -> tuple[int | None, int | None] | None:
    """(stage, the consumers' parity on full) of tile :data:`PREDICT_TILE`'s first k-tile as ``text``'s
    first comment predicts it, each None while "?" or not read; None when no comment holds it. Reads
    "stage 0, consumers' full parity 1", "stage=0 parity=1" or "0, 1" (a note in brackets is skipped)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    line = lines[0] if lines and lines[0].startswith("//") else next(
        (ln for ln in lines if "//" in ln and re.search(r"predict|first k-tile", ln, re.I)), None)
    if line is None:
        return None
    c = re.sub(r"\([^)]*\)?", " ", line[line.index("//") + 2:])
    c = re.sub(r"tile\s*\d+\W*s?\s*first\s*k-?tile", " ", c, flags=re.I)
    got = {}
    for key, pat in (("stage", "stage"), ("parity", "parity|phase")):
        m = re.search(rf"\b(?:{pat})\s*[:=]?\s*(\d+|\?)", c, re.I)
        if m:
            got[key], c = m.group(1), c[:m.start()] + " " + c[m.end():]
    rest = re.findall(r"\d+|\?", c)
    for key in ("stage", "parity"):
        if key not in got and rest:
            got[key] = rest.pop(0)
    return tuple(None if got.get(k, "?") == "?" else int(got[k]) for k in ("stage", "parity"))


def _first_read(ev: list, T: int, tile: int = PREDICT_TILE) -> tuple[int, int]:
    """(stage, parity of its full wait) of the consumer's read of ring counter ``tile·T``."""
    at = [i for i, e in enumerate(ev) if e.kind == "mma"][tile * T]
    return ev[at].stage, next(e.parity for e in reversed(ev[:at]) if e.kind == "wait")


def _prediction_hint(said: tuple, ran: tuple, S: int, T: int) -> str:
    """The hint for right loops under a wrong prediction: a question first (which ring counter?), at
    the same miss again the loops' own numbers and the rule, naming a known slip (reader 126)."""
    n, j = PREDICT_TILE, PREDICT_TILE * T
    f, show = j // S, ["?" if v is None else v for v in said]
    slips = []
    if said[1] == (f + 1) % 2 != ran[1]:
        slips.append(f"{said[1]} is the producer's parity on empty, (f + 1) mod 2")
    if tuple(said) == (0, 0) != tuple(ran):
        slips.append("stage 0, parity 0 is a ring that restarts at each tile")
    why = f" ({'; '.join(slips)})" if slips else ""
    return ("your loops pass every check, but your prediction disagrees: " + _tiered(
        f"it says stage {show[0]}, parity {show[1]}.",
        f" Which ring counter is tile {n}'s first k-tile? §1's rules give its stage and parity from it.",
        f" Your loops ran tile {n}'s first k-tile at stage {ran[0]}, full parity {ran[1]}: with T = {T} "
        f"k-tiles a tile on {S} stages it is ring counter {n}·{T} = {j}, stage {j} mod {S} = {ran[0]}, fill f = "
        f"{j} // {S} = {f}, and the consumers wait on full with parity f mod 2 = {ran[1]}{why}.")
        + " Correct the first comment and run the cell again.")


#: What a right answer that only ever waits with ``wgmma_wait_group<0>`` is told after the verdict: where
#: the reason is (chapter 06 §2's cell, held until the capstone passes: the ring model's <0> vs <1>).
SLOW_NOTE = " <0> is right; two consumers hide the idle time it costs (chapter 06 §2)."


# ---- the picture: the learner's loops in the ring model's timeline ------------------------------

#: What :func:`show_loops` draws, said before the loops pass (it gives nothing of the answer away).
PROMISE = ("Once your loops pass, this cell draws them in chapter 05's ring model: 3 tiles of 3 "
           "k-tiles on 2 stages, one lane per role.")


def timeline(text: str, stages: int = 2, k_tiles: int = 3, tiles: int = 3) -> _mp.Schedule:
    """The ring model's schedule of ``text`` (the capstone's loops) run as each role over ``tiles``
    tiles of ``k_tiles`` k-tiles on ``stages`` stages (its spans count k-tiles over all tiles)."""
    roles = [read(text, wg, stages, k_tiles, tiles) for wg in range(CONSUMERS + 1)]
    return ring(roles[0], roles[1:], stages, k_tiles * tiles)


def plot_loops(text: str, stages: int = 2, k_tiles: int = 3, tiles: int = 3):
    """Chapter 05's timeline plot of :func:`timeline`, a dashed line where each tile's first wgmma starts."""
    from ..models.pipeline.figures import plot_timeline
    sched = timeline(text, stages, k_tiles, tiles)
    fig = plot_timeline(sched.spans, title=f"Your loops: {tiles} tiles × {k_tiles} k-tiles on {stages} stages "
                        "(the ring model)")
    ax = fig.axes[0]
    for t in range(tiles):
        x = min(s.start for s in sched.spans if s.kind == "mma" and s.k == t * k_tiles)
        ax.axvline(x, color="black", ls="--", lw=0.8)
        ax.text(x, ax.get_ylim()[0], f" tile {t}", fontsize=8, va="bottom")
    return fig


def show_loops(text: str, passed: bool):
    """06f §1's picture cell: :func:`plot_loops` of the learner's loops once ``passed``; else of the
    loops kept when they last passed (:func:`asynctc.core.exercises.my_answer`); else :data:`PROMISE`."""
    if not passed:
        if not _ex.passed("ch06.whole_kloop"):
            print(PROMISE)
            return None
        print("your loops as they last passed the check (kept in your progress):")
        text = _ex.my_answer("ch06.whole_kloop")
    return plot_loops(text)


@_ex.code_exercise("ch06.whole_kloop", "Write both roles' loops of a warp-specialized, persistent CTA "
                   "that computes TILES tiles in a row, T k-tiles each, with one ring of STAGES stages. "
                   "The producer (wg == 0) waits until a stage is empty, announces its bytes on full "
                   "and loads the k-tile; the consumers wait until it is full, issue its wgmmas, release "
                   "it once they are done reading it, and store each tile's C. The ring's stage and "
                   "phase carry from tile to tile. The check reads your text as each role, judges its "
                   "waits, arrives, expect_tx and releases, runs chapter 05's ring model over every "
                   "tile and the emulator's tiles against float64.", judge=judge)
def _whole_kloop() -> str:
    return SOLUTION
