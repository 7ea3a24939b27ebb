"""Chapter 05's ring run with a protocol read from code: the producer's refill step (chapter 05's
``ch05.producer_step``) and the consumers' k-loop (chapter 06's ``ch06.consumer_loop``), as
:mod:`asynctc.core.loop_reader` reads them, in place of the kernel's (deep dive 06e's emulator).

A protocol is three lists of :class:`~asynctc.core.loop_reader.Event`: the ``prologue`` (the
producer's loads before the loop), ``producer`` (k-tile r → the refill step's events after the
release of r) and ``consumer`` (warpgroup → its :class:`~asynctc.core.loop_reader.Iteration` list,
the kernel's code after the loop included). :func:`course_protocol` builds the kernel's own from a
pair of parity functions; :func:`read_protocol` reads the learner's texts where given.
:func:`simulate_protocol` runs it on :class:`~.ring._Sim`'s barriers and hardware (wg0's elected
thread is the producer, as in chapter 05) and says where it breaks: a :class:`~.ring.Race` (a
stage read before its bytes land, released while its wgmmas still run, or overwritten before every
warpgroup's release was acquired) or a :class:`~.ring.Deadlock`.
"""

from __future__ import annotations

import dataclasses

from ...core import loop_reader as _lr
from ..lanes import lane_name
from .hardware import HardwareParams, Tile
from .ring import KERNEL_PARITIES, MbarrierError, Race, Schedule, Span, _Sim

Event, Iteration = _lr.Event, _lr.Iteration


@dataclasses.dataclass
class Protocol:
    """What the producer (``prologue``, ``producer``) and each consumer warpgroup (``consumer``)
    do, as events; ``pending``: the N of the consumers' wgmma.wait_group (the producer's step runs
    after the release of k-tile r = k − pending)."""
    prologue: list
    producer: dict
    consumer: dict
    pending: int


def _wait(bar, s, parity):
    return Event("wait", 0, barrier=bar, stage=s, parity=parity)


def _load(s, t):
    return Event("load", 0, barrier=f"full[{s}]", stage=s, n=t)


def course_producer(stages: int, k_tiles: int, pending: int, empty_parity=KERNEL_PARITIES[1]) -> dict:
    """The kernel's refill step (r → its events): wait on empty[t % S] with ``empty_parity(t, S)``,
    load k-tile t = r + S, while t < T."""
    S, out = stages, {}
    for r in range(k_tiles - pending):
        t = r + S
        out[r] = [_wait("empty", t % S, empty_parity(t, S)), _load(t % S, t)] if t < k_tiles else []
    return out


def course_consumer(stages: int, k_tiles: int, pending: int, stage_bytes: int,
                    full_parity=KERNEL_PARITIES[0]) -> list:
    """The kernel's consumer loop as one warpgroup's elected thread runs it: wait on full[s] with
    ``full_parity(k, S)``, the k-tile's wgmmas, wgmma.wait_group(pending), release k − pending."""
    S, out = stages, []
    for k in range(k_tiles):
        s = k % S
        ev = [_wait("full", s, full_parity(k, S)),
              Event("mma", 0, a=("da0", s * stage_bytes), b=("db0", s * stage_bytes)),
              Event("commit", 0), Event("wait_group", 0, n=pending)]
        if k >= pending:
            ev.append(Event("arrive", 0, barrier="empty", stage=(k - pending) % S))
        out.append(Iteration(k, 0, k, (s, (k // S) % 2), ev))
    tail = [Event("wait_group", 0, n=0)] + [Event("arrive", 0, barrier="empty", stage=r % S)
                                            for r in range(max(0, k_tiles - pending), k_tiles)]
    out.append(Iteration(k_tiles - 1, 0, k_tiles - 1, (0, 0), tail, tail=True))
    return out


def course_protocol(stages: int, k_tiles: int, consumers: int, stage_bytes: int,
                    parities=KERNEL_PARITIES) -> Protocol:
    """The kernel's protocol with the parity pair ``(full(k, S), empty(t, S))``."""
    P = 1 if stages > 1 else 0
    return Protocol([ev for t in range(min(stages, k_tiles))
                     for ev in (_wait("empty", t, parities[1](t, stages)), _load(t, t))],
                    course_producer(stages, k_tiles, P, parities[1]),
                    {w: course_consumer(stages, k_tiles, P, stage_bytes, parities[0]) for w in range(consumers)},
                    P)


def read_protocol(stages: int, k_tiles: int, consumers: int, stage_bytes: int, parities=KERNEL_PARITIES,
                  producer_step: str | None = None, consumer_loop: str | None = None) -> Protocol:
    """:func:`course_protocol` with the producer's refill step and the consumers' loop body read
    from the texts given (None: the kernel's). Raises :class:`ReadError` with ``piece`` set to
    "producer_step" or "consumer_loop" when the reader cannot follow a text."""
    proto = course_protocol(stages, k_tiles, consumers, stage_bytes, parities)
    for piece, text in (("producer_step", producer_step), ("consumer_loop", consumer_loop)):
        if text is None:
            continue
        try:
            program = _lr.parse(text[1:] if text.startswith("\n") else text)
            if piece == "producer_step":
                proto.producer = _lr.read_producer_step(program, producer=True, stages=stages,
                                                        pending=proto.pending, k_tiles=k_tiles,
                                                        stage_bytes=stage_bytes)
            else:
                proto.consumer = {w: _lr.run(program, stages=stages, k_tiles=k_tiles, tiles=1,
                                             stage_bytes=stage_bytes, wg=w + 1, elected=True)
                                  for w in range(consumers)}
        except _lr.ReadError as e:
            raise ReadError(piece, str(e)) from None
    return proto


class ReadError(ValueError):
    """A text the reader cannot follow; ``piece`` names it."""

    def __init__(self, piece: str, message: str):
        super().__init__(message)
        self.piece = piece


class _ProtocolSim(_Sim):
    """:class:`~.ring._Sim` with the actors following a :class:`Protocol`'s events."""

    def __init__(self, proto: Protocol, S, C, K, hw, tile, stage_bytes):
        super().__init__(S, proto.pending, C, K, hw, "correct", tile)
        self.proto, self.stage_bytes = proto, stage_bytes
        self.reading = [{} for _ in range(C)]      # warpgroup -> stage -> k-tiles read, not released
        self.gone = {s: set() for s in range(S)}   # warpgroups that released the stage's k-tile
        self.acquired = {s: set() for s in range(S)}
        self.mma_end = {}                          # (warpgroup, k-tile) -> when its wgmmas end

    def _on_pass(self, name, lane, kind, bar, parity, k, s):
        if kind == "wait_empty":                   # acquire: the releases seen so far
            self.acquired[s] = set(self.gone[s])
        elif bar is self.full[s]:
            self._check_read(lane, k, s, f"passed {bar.name} (parity {parity}) to read")

    def _check_read(self, lane, k, s, what):
        if self.diagnosis is None and (self.stage_k[s] != k or self.landed[s] < self.tile.stage_bytes):
            if self.stage_k[s] == k:               # the right k-tile, still landing
                holds = (f"k-tile {k} with {self.landed[s]} of {self.tile.stage_bytes} bytes landed")
            elif self.stage_k[s] is None:
                holds = "nothing yet"
            else:                                  # another k-tile's data: the wrong stage or fill
                holds = (f"k-tile {self.stage_k[s]}, not k-tile {k} ({self.landed[s]} of "
                         f"{self.tile.stage_bytes} bytes of k-tile {self.stage_k[s]} landed)")
            self.diagnosis = Race(k, s, f"{lane_name(lane)} {what} k-tile {k}, but stage {s} holds {holds}")

    def _bar(self, e):
        return getattr(self, e.barrier.split("[")[0])[e.stage]

    def _steps(self, events, lane, k):
        """The producer's events (waits on a barrier, loads)."""
        for e in events:
            if e.kind == "wait":
                yield ("wait", "producer", "wait_empty", self._bar(e), e.parity, k, e.stage)
            elif e.kind == "load":
                self._fill(e.n, e.stage, self.full[int(e.barrier[5:-1])] if e.barrier.startswith("full[")
                           else self.empty[int(e.barrier[6:-1])])
                if self.diagnosis is not None:
                    return
                yield ("at", self.now + self.hw.issue_cycles)

    def _fill(self, t, s, bar):
        old = self.stage_k[s]
        if old is not None and self._overwrites(t, s, old, self.acquired[s],
                                                self.mma_end.get((0, old), float("inf"))):
            return
        self.gone[s], self.acquired[s] = set(), set()
        bar.arrive_expect_tx(self.tile.stage_bytes)
        self._changed(bar)
        self.stage_k[s], self.landed[s] = t, 0
        hw = self.hw
        for nbytes in (self.tile.a_bytes, self.tile.b_bytes):
            dur = nbytes * hw.dram_fraction / (hw.tma_bytes_per_clk / hw.ctas_per_sm)
            self.tma_free = max(self.now + hw.tma_latency, self.tma_free) + dur
            self._at(self.tma_free, lambda nb=nbytes: self._landed(t, s, nb, bar))
        self.spans.append(Span("tma", "tma", t, s, self.now, self.tma_free))

    def _landed(self, t, s, nbytes, bar):
        if self.stage_k[s] == t:
            self.landed[s] += nbytes
        bar.complete_tx(nbytes)
        self._changed(bar)

    def _arrive(self, w, e):
        s, bar, lane = e.stage, self._bar(e), f"wg{w}"
        if e.barrier == "empty":
            mine = self.reading[w].get(s) or []
            if mine:
                r = mine.pop(0)
                if self.mma_end[w, r] > self.now:
                    self.diagnosis = Race(r, s, f"{lane_name(lane)} releases empty[{s}] while its wgmmas of k-tile {r} "
                                                "may still read the stage")
                    return
                if r == self.stage_k[s]:
                    self.gone[s].add(w)
                self.spans.append(Span(lane, "release", r, s, self.now, self.now))
        bar.arrive()
        self._changed(bar)

    def _consumer(self, w):
        lane, proto, k = f"wg{w}", self.proto, 0
        try:
            if w == 0:
                yield from self._steps(proto.prologue, "producer", 0)
            for it in proto.consumer[w]:
                k = it.k
                for e in it.events:
                    if self.diagnosis is not None:
                        return
                    if e.kind == "wait":
                        yield ("wait", lane, "wait_full", self._bar(e), e.parity, k, e.stage)
                    elif e.kind == "mma":
                        s = e.a[1] // self.stage_bytes
                        yield ("at", self.now + self.hw.issue_cycles)
                        self._check_read(lane, k, s, "reads")
                        if self.diagnosis is not None:
                            return
                        self._mma(w, k, s)
                        self.mma_end[w, k] = self.mma_ends[w][-1]
                        self.reading[w].setdefault(s, []).append(k)
                    elif e.kind == "wait_group":
                        yield ("at", self._groups_done(w, e.n))
                    elif e.kind == "arrive":
                        self._arrive(w, e)
                if w == 0 and not it.tail and k - proto.pending in proto.producer:
                    yield from self._steps(proto.producer[k - proto.pending], "producer", k + self.S - proto.pending)
        except MbarrierError as err:
            if self.diagnosis is None:
                self.diagnosis = Race(k, -1, f"the mbarrier model stops: {err}")
            return
        start = self.now
        yield ("at", start + self.hw.epilogue_cycles)
        self.spans.append(Span(lane, "epilogue", self.K, -1, start, self.now))


def simulate_protocol(proto: Protocol, stages: int, consumers: int, k_tiles: int, tile: Tile,
                      stage_bytes: int, params: HardwareParams | None = None) -> Schedule:
    """Run ``proto`` on chapter 05's ring (``stages`` S, ``consumers``, ``k_tiles`` T; ``stage_bytes``:
    what the texts call kStageBytes). Returns a :class:`~.ring.Schedule` with its diagnosis (None
    when the protocol moves every k-tile through the ring safely)."""
    hw = params or HardwareParams.from_records(tile)
    sim = _ProtocolSim(proto, stages, consumers, k_tiles, hw, tile, stage_bytes)
    sim.run()
    return Schedule(sorted(sim.spans, key=lambda s: (s.start, s.lane)), sim.diagnosis, stages,
                    proto.pending, consumers, k_tiles, tile, hw)
