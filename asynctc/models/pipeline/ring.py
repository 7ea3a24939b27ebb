"""Chapter 05's mbarrier ring as a discrete-event model: the :class:`Mbarrier`, what a run
produces (:class:`Span`, :class:`Deadlock`, :class:`Race`), the protocols (:data:`VARIANTS`), the
event loop (:class:`EventLoop`, which chapter 09's persistent-kernel model runs on too), and
:func:`simulate` → :class:`Schedule`. Pure Python; the numbers it runs on:
:mod:`.hardware`."""

from __future__ import annotations

import dataclasses
import heapq
import math
from typing import Iterable, NamedTuple

from ..lanes import lane_name
from .hardware import HardwareParams, Tile
from .schedule import SCHEDULES, ring_schedule

#: Largest |tx-count| and largest arrival count of an mbarrier: 2^20 − 1 (PTX ISA, "Contents of
#: the mbarrier object": tx-count −(2^20 − 1) … 2^20 − 1, expected arrival count 1 … 2^20 − 1).
MBARRIER_LIMIT = (1 << 20) - 1
#: Threads per warpgroup.
WARPGROUP = 128


# ---- the mbarrier -------------------------------------------------------------------------------

class MbarrierError(ValueError):
    """An operation the PTX ISA leaves undefined (arrival beyond the count, tx-count out of range)."""


class Mbarrier:
    """One mbarrier object (PTX ISA, "Parallel Synchronization and Communication Instructions:
    mbarrier"). State: the current ``phase`` number (its parity is ``phase % 2``), the ``pending``
    arrivals of the current phase, and ``tx`` (tx-count, bytes).

    - :meth:`init` / constructor — mbarrier.init: phase 0, pending = count, tx-count 0.
    - :meth:`arrive` — mbarrier.arrive: pending −= 1 (arriving when pending is already 0 is beyond
      the count: :class:`MbarrierError`).
    - :meth:`expect_tx` — mbarrier.expect_tx: tx-count += bytes; :meth:`complete_tx` — what a TMA
      copy does when its bytes land ("Tracking asynchronous operations by the mbarrier object:
      tx-count"): tx-count −= bytes. tx-count may go negative (a copy may land before the expect),
      but |tx-count| must stay ≤ 2^20 − 1.
    - "Phase completion of the mbarrier object": when pending = 0 and tx-count = 0 the phase
      completes; the next phase starts with pending = count.
    - :meth:`test_wait` — mbarrier.test_wait.parity / try_wait.parity: True when the phase of that
      parity has completed, i.e. the *current* phase has the other parity. A fresh barrier (phase 0)
      answers False to parity 0 and True to parity 1 ("the preceding phase").
    """

    def __init__(self, count: int, name: str = "mbarrier"):
        self.name = name
        self.init(count)

    def init(self, count: int) -> None:
        if not 1 <= count <= MBARRIER_LIMIT:
            raise MbarrierError(f"{self.name}: init count={count}; must be 1..2^20-1 (PTX ISA mbarrier.init)")
        self.count, self.pending, self.tx, self.phase = count, count, 0, 0

    @property
    def parity(self) -> int:
        return self.phase % 2

    def arrive(self) -> bool:
        """Arrive once; returns True when this arrival completed the phase."""
        if self.pending == 0:
            raise MbarrierError(f"{self.name}: arrive on phase {self.phase} with no arrival pending "
                                f"(count {self.count}; tx-count {self.tx} keeps the phase open): "
                                "beyond the count, undefined (PTX ISA mbarrier.arrive)")
        self.pending -= 1
        return self._complete_if_done()

    def expect_tx(self, nbytes: int) -> None:
        if not 0 <= nbytes <= MBARRIER_LIMIT:
            raise MbarrierError(f"{self.name}: expect_tx({nbytes}); bytes must be 0..2^20-1")
        if self.tx + nbytes > MBARRIER_LIMIT:
            raise MbarrierError(f"{self.name}: tx-count overflow: {self.tx} + {nbytes} > 2^20-1 "
                                "(PTX ISA, contents of the mbarrier object)")
        self.tx += nbytes

    def arrive_expect_tx(self, nbytes: int) -> bool:
        """mbarrier.arrive.expect_tx: expect_tx(nbytes), then arrive."""
        self.expect_tx(nbytes)
        return self.arrive()

    def complete_tx(self, nbytes: int) -> bool:
        """The bytes of an asynchronous copy landed; returns True when that completed the phase."""
        if self.tx - nbytes < -MBARRIER_LIMIT:
            raise MbarrierError(f"{self.name}: tx-count underflow: {self.tx} - {nbytes} < -(2^20-1)")
        self.tx -= nbytes
        return self._complete_if_done()

    def test_wait(self, parity: int) -> bool:
        return parity % 2 != self.parity

    def _complete_if_done(self) -> bool:
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count
            return True
        return False

    def __repr__(self) -> str:
        return f"{self.name}(phase {self.phase}, pending {self.pending}/{self.count}, tx {self.tx})"


# ---- what a run produces ------------------------------------------------------------------------

class Span(NamedTuple):
    """One interval of a timeline, in SM cycles. ``lane``: "tma", "producer", "wg0", "wg1", ...;
    ``kind``: "tma" (copy in flight), "wait_full", "mma" (wgmma in flight on the Tensor Cores),
    "wait_empty", "release" (arrive on empty; zero length), "epilogue"; ``k``: k-tile; ``stage``."""
    lane: str
    kind: str
    k: int
    stage: int
    start: float
    end: float


class Deadlock(NamedTuple):
    """No actor can progress. ``iteration``: the k-tile of the wait that blocks first (being loaded,
    for the producer; being consumed, for a consumer); ``barrier``: "full" or "empty";
    ``who_waits``: lanes blocked on that barrier (their keys: "wg0", "producer"); ``why``: the
    barrier's state in words."""
    iteration: int
    barrier: str
    stage: int
    parity: int
    who_waits: tuple
    why: str

    @property
    def waiting(self) -> tuple:
        """``who_waits`` as the learner reads them ("consumer 0", not "wg0": :func:`lane_name`)."""
        return tuple(map(lane_name, self.who_waits))


class Race(NamedTuple):
    """A stage read before all its bytes landed, or overwritten while a wgmma still read it."""
    iteration: int
    stage: int
    what: str



# ---- the protocols ------------------------------------------------------------------------------

def kernel_full_parity(k: int, S: int) -> int:
    """The parity the kernel's consumers wait on ``full[k % S]`` for k-tile k: ``(k // S) % 2``."""
    return (k // S) % 2


def kernel_empty_parity(t: int, S: int) -> int:
    """The parity the kernel's producer waits on ``empty[t % S]`` before loading k-tile t:
    ``(t // S + 1) % 2`` (parity 1 on the first pass: a fresh barrier's preceding phase)."""
    return (t // S + 1) % 2


#: The kernel's pair, as :func:`simulate`'s ``parities`` takes it (what it runs by default).
KERNEL_PARITIES = (kernel_full_parity, kernel_empty_parity)


#: Broken protocols :func:`simulate` runs, and what each gets wrong.
VARIANTS = {
    "wrong_empty_parity": "the producer waits parity (t // S) % 2 on empty: parity 0 on a fresh barrier",
    "full_parity_flipped": "the consumers wait parity (k // S + 1) % 2 on full: the phase before",
    "missing_release": "the last consumer warpgroup never arrives on empty",
    "expect_tx_too_small": "expect_tx announces only the A tile's bytes",
    "expect_tx_too_large": "expect_tx announces 1024 bytes more than the two boxes deliver",
    "arrive_count_too_big": "empty barriers initialised with the consumers' thread count (128 per warpgroup)",
    "missing_empty_wait": "the producer skips the wait on empty and trusts its own wgmma.wait_group",
    "swapped_barriers": "the producer waits on full and the consumers on empty (full/empty named backwards, as some write-ups do)",
}
#: Protocols without phase parity (chapter 05 §1's story of why parity exists), kept apart from
#: :data:`VARIANTS` (the find-the-bug exercise's choices): {name: what the waits ask instead}.
NO_PARITY = {
    "ready_flag": "each wait asks only \"has this barrier completed?\": full[s] passes once any fill of "
                  "stage s has landed, empty[s] passes always (the stage starts free and is never marked busy)",
}
PROTOCOLS = ("correct",) + tuple(VARIANTS) + tuple(NO_PARITY)


class EventLoop:
    """The discrete-event loop both mbarrier models run on (chapter 05's ring, :class:`_Sim`, and
    chapter 09's persistent kernel, :mod:`asynctc.models.tcgen05_sched`). Actors are generators,
    named by :meth:`_actors`, that yield ``("at", time)`` (resume then) or ``("wait", lane, kind,
    barrier, parity, k, stage)`` (block until ``barrier.test_wait(parity)``; the wait becomes a
    :class:`Span`). Whoever changes a barrier calls :meth:`_changed`. The run ends when the events
    run out or a diagnosis is set; actors left unfinished are a :meth:`_deadlock`. Subclasses hook
    :meth:`_on_wait` (a wait begins) and :meth:`_on_pass` (it passed: acquire, race checks)."""

    def __init__(self):
        self.now, self.spans, self.diagnosis = 0.0, [], None
        self._events, self._seq = [], 0
        self.waiting = {}                       # actor -> (lane, kind, barrier, parity, k, stage, start)
        self.done = set()

    def _actors(self) -> dict:
        raise NotImplementedError

    def _deadlock(self) -> Deadlock:
        raise NotImplementedError

    def _on_wait(self, name, kind, bar) -> None:
        pass

    def _on_pass(self, name, lane, kind, bar, parity, k, s) -> None:
        pass

    def _at(self, t, fn):
        heapq.heappush(self._events, (t, self._seq, fn))
        self._seq += 1

    def run(self):
        self.actors = self._actors()
        self.done = set()
        for name in self.actors:
            self._at(0.0, lambda name=name: self._step(name))
        while self._events and self.diagnosis is None:
            self.now, _, fn = heapq.heappop(self._events)
            fn()
        if self.diagnosis is None and len(self.done) < len(self.actors):
            self.diagnosis = self._deadlock()

    def _step(self, name):
        try:
            op = next(self.actors[name])
        except StopIteration:
            self.done.add(name)
            return
        if op[0] == "at":
            self._at(max(op[1], self.now), lambda: self._step(name))
        else:
            _, lane, kind, bar, parity, k, s = op
            self.waiting[name] = (lane, kind, bar, parity, k, s, self.now)
            self._on_wait(name, kind, bar)
            self._try_pass(name)

    def _passes(self, kind, bar, parity) -> bool:
        """Whether a wait of this kind on ``bar`` with ``parity`` passes now (the PTX rule)."""
        return bar.test_wait(parity)

    def _try_pass(self, name) -> bool:
        lane, kind, bar, parity, k, s, start = self.waiting[name]
        if not self._passes(kind, bar, parity):
            return False
        del self.waiting[name]
        self.spans.append(Span(lane, kind, k, s, start, self.now))
        self._on_pass(name, lane, kind, bar, parity, k, s)
        self._at(self.now, lambda: self._step(name))
        return True

    def _changed(self, bar):
        for name, w in list(self.waiting.items()):
            if w[2] is bar:
                self._try_pass(name)


class _Sim(EventLoop):
    """Chapter 05's ring on the :class:`EventLoop`: the actors are the consumer warpgroups (wg0's
    elected thread is also the producer)."""

    def __init__(self, S, P, C, K, hw: HardwareParams, proto: str, tile: Tile, schedule: str = "kernel",
                 parities=None):
        super().__init__()
        self.S, self.P, self.C, self.K, self.hw, self.proto, self.tile = S, P, C, K, hw, proto, tile
        self.parities = parities                # (full(k, S), empty(t, S)) replacing the kernel's
        self.plan = ring_schedule(S, P, K, schedule)
        count = C * WARPGROUP if proto == "arrive_count_too_big" else C
        self.full = [Mbarrier(1, f"full[{s}]") for s in range(S)]
        self.empty = [Mbarrier(count, f"empty[{s}]") for s in range(S)]
        self.stage_k, self.landed = [None] * S, [0] * S
        self.released = {}                      # k-tile -> warpgroups that arrived on its empty
        self.cleared = {}                       # k-tile t -> releases of t − S the producer has seen
        self.mma_ends = [[] for _ in range(C)]
        self.tma_free = self.tc_free = 0.0
        self.mma_cycles = tile.flop_per_ktile / C / (hw.mma_flop_per_clk / hw.ctas_per_sm)

    def _actors(self):
        return {f"wg{w}": self._consumer(w) for w in range(self.C)}

    def _passes(self, kind, bar, parity) -> bool:
        if self.proto != "ready_flag":
            return super()._passes(kind, bar, parity)
        # no parity: "has this barrier completed?" — full[s] after its first phase, empty[s] always
        return not (kind == "wait_full" and bar.phase == 0)

    def _on_pass(self, name, lane, kind, bar, parity, k, s):
        if kind == "wait_empty":                 # acquire: the releases of this phase happened before
            self.cleared[k] = set(self.released.get(k - self.S, ()))
        if kind == "wait_full" and (self.stage_k[s] != k or self.landed[s] < self.tile.stage_bytes):
            holds = (f"k-tile {self.stage_k[s]}" if self.stage_k[s] is not None else "nothing yet")
            how = "its flag set" if self.proto == "ready_flag" else f"parity {parity}"
            self.diagnosis = Race(k, s, f"{lane_name(lane)} passed {bar.name} ({how}) to read k-tile {k}, "
                                        f"but stage {s} holds {holds} with {self.landed[s]} of "
                                        f"{self.tile.stage_bytes} bytes landed")

    # -- the hardware: TMA and the Tensor Cores

    def _overwrites(self, t: int, s: int, old: int, acquired: set, own_mma_end: float) -> bool:
        """Whether the TMA of k-tile ``t`` into stage ``s`` overwrites k-tile ``old`` while some
        warpgroup's read of it is not ordered before the load — neither released and acquired
        through empty[s] (``acquired``) nor, for wg0 (the producer's own), finished by its
        wgmma.wait_group (``own_mma_end``); if so, the diagnosis is that race."""
        safe = acquired | ({0} if own_mma_end <= self.now else set())
        late = [w for w in range(self.C) if w not in safe]
        if late:
            self.diagnosis = Race(t, s, f"TMA of k-tile {t} overwrites stage {s} while nothing orders "
                                        f"consumer {late[0]}'s read of k-tile {old} before it (no completed "
                                        f"phase of empty[{s}] covers its release)")
        return bool(late)
    def _tma(self, t, s):
        hw, issue, old = self.hw, self.now, t - self.S
        # who is known to have finished reading k-tile t − S: released and acquired through empty,
        # or the producer's own warpgroup through its wgmma.wait_group
        if old >= 0 and self._overwrites(t, s, old, self.cleared.get(t, set()), self.mma_ends[0][old]):
            return
        self.stage_k[s], self.landed[s] = t, 0
        for nbytes in (self.tile.a_bytes, self.tile.b_bytes):      # two boxes, landing in order
            dur = nbytes * hw.dram_fraction / (hw.tma_bytes_per_clk / hw.ctas_per_sm)
            if hw.l2_bytes_per_clk:
                dur = max(dur, nbytes / (hw.l2_bytes_per_clk / hw.ctas_per_sm))
            self.tma_free = max(issue + hw.tma_latency, self.tma_free) + dur
            self._at(self.tma_free, lambda nb=nbytes: self._land(t, s, nb))
        self.spans.append(Span("tma", "tma", t, s, issue, self.tma_free))

    def _land(self, t, s, nbytes):
        if self.stage_k[s] == t:
            self.landed[s] += nbytes
        self.full[s].complete_tx(nbytes)
        self._changed(self.full[s])

    def _mma(self, w, k, s):
        start = max(self.now, self.tc_free)
        self.tc_free = end = start + self.mma_cycles
        self.mma_ends[w].append(end)
        self.spans.append(Span(f"wg{w}", "mma", k, s, start, end))

    def _groups_done(self, w, pending):
        """When wgmma.wait_group(pending) returns for warpgroup w."""
        ends = self.mma_ends[w]
        return self.now if len(ends) <= pending else max(self.now, ends[-1 - pending] + self.hw.drain_cycles)

    # -- the protocol
    def _release(self, w, r):
        if self.proto == "missing_release" and w == self.C - 1:
            return
        bar = self.empty[r % self.S]
        self.released.setdefault(r, set()).add(w)
        bar.arrive()
        self.spans.append(Span(f"wg{w}", "release", r, r % self.S, self.now, self.now))
        self._changed(bar)

    def _produce(self, t):
        S, s = self.S, t % self.S
        parity = (t // S) % 2 if self.proto == "wrong_empty_parity" else kernel_empty_parity(t, S)
        if self.parities is not None:
            parity = self.parities[1](t, S)
        bar = self.full[s] if self.proto == "swapped_barriers" else self.empty[s]
        if self.proto != "missing_empty_wait":
            yield ("wait", "producer", "wait_empty", bar, parity, t, s)
        nbytes = {"expect_tx_too_small": self.tile.a_bytes,
                  "expect_tx_too_large": self.tile.stage_bytes + 1024}.get(self.proto, self.tile.stage_bytes)
        self.full[s].arrive_expect_tx(nbytes)
        self._changed(self.full[s])
        self._tma(t, s)
        yield ("at", self.now + self.hw.issue_cycles)

    def _consumer(self, w):
        S, P, K, lane = self.S, self.P, self.K, f"wg{w}"
        plan = self.plan
        if w == 0:
            for t in plan.prologue:                                     # prologue
                yield from self._produce(t)
        for k in range(K):
            s = k % S
            if w == 0 and plan.top[k] is not None:                      # model_v1, S = 1
                yield from self._produce(plan.top[k])
            parity = (k // S + 1) % 2 if self.proto == "full_parity_flipped" else kernel_full_parity(k, S)
            if self.parities is not None:
                parity = self.parities[0](k, S)
            bar = self.empty[s] if self.proto == "swapped_barriers" else self.full[s]
            yield ("wait", lane, "wait_full", bar, parity, k, s)
            yield ("at", self.now + self.hw.issue_cycles)
            self._mma(w, k, s)                                          # wgmma ×(bk/16), commit
            yield ("at", self._groups_done(w, P))                       # wgmma.wait_group(P)
            if plan.release[k] is not None:
                self._release(w, plan.release[k])
            if w == 0 and plan.refill[k] is not None:
                yield from self._produce(plan.refill[k])
        yield ("at", self._groups_done(w, 0))
        for r in range(max(0, K - P), K):
            self._release(w, r)
        start = self.now
        yield ("at", start + self.hw.epilogue_cycles)
        self.spans.append(Span(lane, "epilogue", K, -1, start, self.now))

    def _deadlock(self) -> Deadlock:
        blocked = sorted(self.waiting.values(), key=lambda w: (w[4], w[0] != "producer", w[6]))
        lane, kind, bar, parity, k, s, start = blocked[0]
        who = tuple(sorted((w[0] for w in blocked if w[2] is bar and w[3] == parity),
                           key=lambda x: (x != "producer", x)))
        why = [f"{bar.name} is in phase {bar.phase} (parity {bar.parity}); waiting on parity {parity} "
               f"waits for that phase to complete"]
        if bar.pending:
            why.append(f"{bar.pending} of its {bar.count} arrivals never come")
        if bar.tx:
            why.append(f"tx-count {bar.tx} bytes that no TMA in flight will deliver")
        if bar.phase == 0:
            why.append("no phase of it has completed yet (a fresh barrier is in phase 0)")
        others = [f"{lane_name(w[0])} on {w[2].name} parity {w[3]} at k-tile {w[4]}" for w in blocked if w[2] is not bar]
        if others:
            why.append("also blocked: " + ", ".join(others))
        return Deadlock(k, bar.name.split("[")[0], s, parity, who, "; ".join(why))


def span_summary(spans: Iterable) -> dict:
    """The numbers the model and the GPU trace are compared on, from spans (:class:`Span` or plain
    6-tuples, cycles): ``main_loop`` (first wait on full, last wgmma end), ``math_fraction`` (part
    of the main loop with a wgmma in flight), ``full_wait_cycles`` (summed over warpgroups), and the
    mean ``tma_cycles`` (issue → last byte) and ``mma_cycles`` per k-tile and warpgroup."""
    spans = [Span._make(s) for s in spans]
    mma = sorted((s for s in spans if s.kind == "mma"), key=lambda s: s.start)
    tma = [s.end - s.start for s in spans if s.kind == "tma"]
    lo = min((s.start for s in spans if s.kind == "wait_full"), default=0.0)
    hi = max((s.end for s in mma), default=0.0)
    busy, reach = 0.0, lo
    for s in mma:                                  # union of the wgmma intervals inside the loop
        a, b = max(s.start, reach), min(s.end, hi)
        if b > a:
            busy, reach = busy + b - a, b
    return dict(main_loop=(lo, hi), math_fraction=busy / (hi - lo) if hi > lo else 0.0,
                full_wait_cycles=sum(s.end - s.start for s in spans if s.kind == "wait_full"),
                tma_cycles=sum(tma) / len(tma) if tma else 0.0,
                mma_cycles=sum(s.end - s.start for s in mma) / len(mma) if mma else 0.0)


@dataclasses.dataclass
class Schedule:
    """A run of :func:`simulate`: ``spans`` (list of :class:`Span`, SM cycles) and ``diagnosis``
    (None, :class:`Deadlock` or :class:`Race`), with the inputs and the summary numbers."""
    spans: list
    diagnosis: Deadlock | Race | None
    stages: int
    wait_pending: int
    consumers: int
    k_tiles: int
    tile: Tile
    params: HardwareParams

    @property
    def total_cycles(self) -> float:
        return max((s.end for s in self.spans), default=0.0)

    @property
    def tflops_per_sm(self) -> float:
        """FLOP of the CTA tile × CTAs per SM / total cycles × clock, in TFLOP/s (0 if broken)."""
        if self.diagnosis is not None or not self.total_cycles:
            return 0.0
        flop = self.tile.flop_per_ktile * self.k_tiles * self.params.ctas_per_sm
        return flop / self.total_cycles * self.params.clock_mhz * 1e6 / 1e12

    def tflops_gpu(self, m: int | None = None, n: int | None = None) -> float:
        """× SMs; with m, n also the tail of the last wave (tiles / (SMs × CTAs per SM) rounded up)."""
        tf = self.tflops_per_sm * self.params.sm_count
        if m and n:
            tiles = math.ceil(m / self.tile.bm) * math.ceil(n / self.tile.bn)
            slots = self.params.sm_count * self.params.ctas_per_sm
            tf *= tiles / slots / math.ceil(tiles / slots)
        return tf

    @property
    def main_loop(self) -> tuple[float, float]:
        return span_summary(self.spans)["main_loop"]

    @property
    def math_fraction(self) -> float:
        """Fraction of the main loop (first wait on full → last wgmma done) with a wgmma in flight."""
        return span_summary(self.spans)["math_fraction"]

    @property
    def full_wait_cycles(self) -> float:
        """Cycles the consumer warpgroups spent blocked on full barriers, summed over warpgroups."""
        return span_summary(self.spans)["full_wait_cycles"]

    def __repr__(self) -> str:
        """One line (a notebook cell that ends in ``simulate(...)`` shows this, not every span):
        the inputs, the math fraction and the diagnosis; :meth:`summary` says more, ``spans``
        holds the timeline."""
        d = self.diagnosis
        if d is None:
            out = f"math_fraction={self.math_fraction:.2f}, diagnosis=None"
        elif isinstance(d, Deadlock):
            out = f"diagnosis=Deadlock at k-tile {d.iteration} on {d.barrier}[{d.stage}]"
        else:
            out = f"diagnosis=Race at k-tile {d.iteration} on stage {d.stage}"
        return (f"Schedule(S={self.stages}, P={self.wait_pending}, consumers={self.consumers}, "
                f"k_tiles={self.k_tiles}, {out}, {len(self.spans)} spans)")

    def summary(self) -> str:
        if self.diagnosis is not None:
            return f"S={self.stages} P={self.wait_pending}: {self.diagnosis!r}"
        return (f"S={self.stages} P={self.wait_pending} consumers={self.consumers} k-tiles={self.k_tiles}: "
                f"{self.total_cycles:.0f} cycles, {self.tflops_per_sm:.2f} TFLOP/s per SM, "
                f"{self.tflops_gpu():.0f} on {self.params.sm_count} SMs, math in flight "
                f"{self.math_fraction:.2f} of the main loop, {self.full_wait_cycles:.0f} cycles on full")


def simulate(stages: int, wait_pending: int, consumers: int, k_tiles: int,
             params: HardwareParams | None = None, protocol: str = "correct",
             tile: Tile = Tile(), schedule: str = "kernel", parities=None) -> Schedule:
    """Run the ring for one CTA tile: ``stages`` (S ≥ 1), ``wait_pending`` (P of wgmma.wait_group:
    0 or 1; P = 1 needs S ≥ 2), ``consumers`` (warpgroups, each computing bm / consumers rows),
    ``k_tiles`` (≥ 1), ``protocol`` "correct" or a name of :data:`VARIANTS` or :data:`NO_PARITY`
    ("ready_flag": waits that ignore parity, chapter 05 §1), ``schedule`` which
    k-tile the producer loads when (:data:`~.schedule.SCHEDULES`: "kernel", the kernel's — the
    default — or "model_v1", this model's own until 2026-12-01, with which
    :data:`H200_PREDICTION` was made; :func:`~.schedule.ring_schedule`), ``parities`` (a pair of
    functions ``full(k, S)`` and ``empty(t, S)`` returning the parity each wait names, in place of
    the kernel's ``(k // S) % 2`` and ``(t // S + 1) % 2``: chapter 05's write-it exercise), ``params`` (default
    :meth:`HardwareParams.from_records` for a 4096 × 4096 output). Returns a
    :class:`Schedule`; a broken protocol ends with its diagnosis, never a hang. Raises ValueError
    naming the field for bad arguments, :class:`MbarrierError` for an undefined mbarrier operation."""
    hw = params or HardwareParams.from_records(tile)
    for name, v, lo in (("stages", stages, 1), ("consumers", consumers, 1), ("k_tiles", k_tiles, 1)):
        if int(v) != v or v < lo:
            raise ValueError(f"{name}={v!r}: must be an integer ≥ {lo}")
    if wait_pending not in (0, 1):
        raise ValueError(f"wait_pending={wait_pending!r}: must be 0 or 1")
    if wait_pending == 1 and stages == 1:
        raise ValueError("wait_pending=1 with stages=1: the pending wgmma still reads the only stage "
                         "the next TMA must overwrite; use stages ≥ 2 or wait_pending=0")
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol={protocol!r}: must be one of {PROTOCOLS}")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule={schedule!r}: must be one of {SCHEDULES}")
    if tile.bm % (64 * consumers):
        raise ValueError(f"consumers={consumers}: each warpgroup needs a multiple of 64 rows of bm={tile.bm}")
    sim = _Sim(stages, wait_pending, consumers, k_tiles, hw, protocol, tile, schedule, parities)
    sim.run()
    return Schedule(sorted(sim.spans, key=lambda s: (s.start, s.lane)), sim.diagnosis, stages,
                    wait_pending, consumers, k_tiles, tile, hw)


