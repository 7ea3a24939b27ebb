"""Chapter 06's rung 6 as a model: the ring of a cluster of CTAs whose producers multicast B.

Each CTA r of a cluster of ``cluster`` CTAs keeps chapter 05's ring (stages s = 0..S−1, barriers
``full[r][s]`` and ``empty[r][s]``). Its producer (one thread) loads k-tile t into stage t mod S:
the A box into its own CTA, and its share of B (BN / cluster rows) *multicast* into the same stage
of every CTA of the cluster (PTX ISA "cp.async.bulk.tensor", ``.multicast::cluster``: the bytes
land in each destination CTA and complete_tx that CTA's ``full[s]``). So before refilling stage s
the producer of CTA r must know that every consumer warpgroup of *every* CTA has finished reading
it. The kernel (``kernels/warp_specialization.cu``, ``CLUSTER = 2``) does this with one arrival per
consumer warpgroup on its own ``empty[s]`` and one on the peer's (``mbarrier_arrive_remote`` through
``mapa``), and initialises ``empty[s]`` with ``CONSUMERS · CLUSTER`` arrivals.

:func:`simulate_cluster` runs that protocol for a count of ``empty[s]`` the caller gives (the
exercise ``ch06.cluster_arrivals`` passes the learner's) on the :class:`~.ring.EventLoop`, with the
consumers of the CTAs ``lag`` cycles apart (two CTAs on two SMs never run in step). It returns a
:class:`ClusterRun`: a :class:`~.ring.Race` when a producer's load lands in a stage that a
consumer of some CTA has not released to it (the phase of ``empty`` it waited for completed
without that consumer's arrival), a :class:`~.ring.Deadlock` when the arrivals never reach the
count, an :class:`~.ring.MbarrierError` message for a count the PTX ISA refuses. Times are in
made-up cycles: the model is about order, not speed.
"""

from __future__ import annotations

import dataclasses

from .ring import (MBARRIER_LIMIT, Deadlock, EventLoop, Mbarrier, MbarrierError, Race,
                   kernel_empty_parity, kernel_full_parity)

#: The protocol's times, in model cycles: a TMA box in flight, a k-tile's wgmmas, the issue gap.
TMA_CYCLES, MMA_CYCLES, ISSUE_CYCLES = 100.0, 40.0, 1.0


@dataclasses.dataclass
class ClusterRun:
    """A run of :func:`simulate_cluster`: ``diagnosis`` (None, :class:`Race`, :class:`Deadlock`),
    the inputs, ``phases`` (per CTA, per stage: phases of ``empty`` completed) and ``fills`` (per
    CTA: k-tiles its producer loaded)."""
    diagnosis: Race | Deadlock | None
    empty_count: int
    stages: int
    consumers: int
    cluster: int
    k_tiles: int
    phases: list
    fills: list

    @property
    def arrivals_per_fill(self) -> int:
        """Arrivals each fill of a stage brings to each CTA's empty[s]: every consumer warpgroup of
        every CTA arrives once."""
        return self.consumers * self.cluster


class _ClusterSim(EventLoop):
    def __init__(self, count, S, C, R, K, lag):
        super().__init__()
        self.S, self.C, self.R, self.K, self.lag = S, C, R, K, lag
        self.full = [[Mbarrier(1, f"CTA {r}'s full[{s}]") for s in range(S)] for r in range(R)]
        self.empty = [[Mbarrier(count, f"CTA {r}'s empty[{s}]") for s in range(S)] for r in range(R)]
        self.a_bytes, self.b_share = 128 * 64 * 2, 256 * 64 * 2 // R
        self.stage_bytes = self.a_bytes + R * self.b_share
        self.released = {}       # (CTA r's empty, k-tile) -> {(CTA, warpgroup)} arrived on it
        self.seen = {}           # (producer r, k-tile t) -> the releases of t − S its wait saw
        self.reading = {}        # (CTA, stage) -> {(CTA, wg)} reading it now
        self.holds = [[None] * S for _ in range(R)]
        self.fills = [[] for _ in range(R)]

    def _actors(self):
        out = {f"producer{r}": self._producer(r) for r in range(self.R)}
        out.update({f"cta{r}.wg{w}": self._consumer(r, w) for r in range(self.R) for w in range(self.C)})
        return out

    def _on_pass(self, name, lane, kind, bar, parity, k, s):
        if kind == "wait_empty":                  # acquire: the arrivals of the completed phase
            r = int(name[len("producer"):])
            self.seen[r, k] = set(self.released.get((r, k - self.S), ()))

    def _producer(self, r):
        S = self.S
        for t in range(self.K):
            s = t % S
            yield ("wait", f"producer{r}", "wait_empty", self.empty[r][s], kernel_empty_parity(t, S), t, s)
            if t >= S:
                everyone = {(c, w) for c in range(self.R) for w in range(self.C)}
                missing = sorted(everyone - self.seen.get((r, t), set()))
                if missing:
                    c, w = missing[0]
                    still = "still reads it" if (c, w) in self.reading.get((c, s), ()) else \
                        "has not released it"
                    where = "its own CTA" if c == r else f"CTA {c}"
                    self.diagnosis = Race(t, s, (
                        f"CTA {r}'s producer loads k-tile {t} into stage {s} of every CTA (its B share "
                        f"is multicast) after its empty[{s}] completed a phase with "
                        f"{self.empty[r][s].count} arrivals, while consumer {w} of {where} "
                        f"{still} (k-tile {t - S})"))
                    return
            self.full[r][s].arrive_expect_tx(self.stage_bytes)
            self._changed(self.full[r][s])
            self.fills[r].append(t)
            land = self.now + TMA_CYCLES
            self._at(land, lambda t=t, s=s: self._land(r, [r], t, s, self.a_bytes))
            self._at(land, lambda t=t, s=s: self._land(r, range(self.R), t, s, self.b_share))
            yield ("at", self.now + ISSUE_CYCLES)

    def _land(self, src, dests, t, s, nbytes):
        for d in dests:
            self.holds[d][s] = t
            self.full[d][s].complete_tx(nbytes)
            self._changed(self.full[d][s])

    def _consumer(self, r, w):
        S, lane = self.S, f"cta{r}.wg{w}"
        yield ("at", self.lag * r)
        for k in range(self.K):
            s = k % S
            yield ("wait", lane, "wait_full", self.full[r][s], kernel_full_parity(k, S), k, s)
            self.reading.setdefault((r, s), set()).add((r, w))
            yield ("at", self.now + MMA_CYCLES)                 # the k-tile's wgmmas read the stage
            self.reading[r, s].discard((r, w))
            for c in [r] + [c for c in range(self.R) if c != r]:   # own empty[s], then the peer's
                bar = self.empty[c][s]
                self.released.setdefault((c, k), set()).add((r, w))
                bar.arrive()
                self._changed(bar)
                if self.diagnosis is not None:
                    return

    def _deadlock(self) -> Deadlock:
        blocked = sorted(self.waiting.values(), key=lambda w: (w[4], not w[0].startswith("producer")))
        lane, kind, bar, parity, k, s, _ = blocked[0]
        per_fill = self.C * self.R
        why = (f"{bar.name} counts {bar.count} arrivals per phase, but a fill brings only {per_fill} "
               f"({self.C} consumer warpgroups × {self.R} CTAs, each arriving once): {bar.pending} of "
               f"its {bar.count} never come, so its phase {bar.phase} never completes")
        return Deadlock(k, "empty" if "empty" in bar.name else "full", s, parity,
                        tuple(w[0] for w in blocked), why)


def simulate_cluster(empty_count: int, *, stages: int = 4, consumers: int = 2, cluster: int = 2,
                     k_tiles: int = 12, lag: float = 25.0) -> ClusterRun:
    """Run rung 6's ring for a cluster with ``empty[s]`` of every CTA initialised to
    ``empty_count`` arrivals (the kernel's: ``consumers * cluster``). ``lag``: cycles by which CTA
    r's consumers start after CTA 0's (the peer runs behind). Returns a :class:`ClusterRun` (its
    ``diagnosis`` None when every fill is ordered after every read of the stage's previous fill).
    Raises :class:`~.ring.MbarrierError` for a count outside 1..2^20−1 (PTX ISA mbarrier.init) and
    ValueError naming the field for other bad arguments."""
    for name, v, lo in (("stages", stages, 1), ("consumers", consumers, 1), ("cluster", cluster, 1),
                        ("k_tiles", k_tiles, 1)):
        if isinstance(v, bool) or int(v) != v or v < lo:
            raise ValueError(f"{name}={v!r}: must be an integer ≥ {lo}")
    if isinstance(empty_count, bool) or int(empty_count) != empty_count:
        raise ValueError(f"empty_count={empty_count!r}: an arrival count is an integer")
    if not 1 <= empty_count <= MBARRIER_LIMIT:
        raise MbarrierError(f"empty[s]: init count={empty_count}; must be 1..2^20-1 (PTX ISA mbarrier.init)")
    sim = _ClusterSim(int(empty_count), stages, consumers, cluster, k_tiles, lag)
    sim.run()
    return ClusterRun(sim.diagnosis, int(empty_count), stages, consumers, cluster, k_tiles,
                      [[b.phase for b in row] for row in sim.empty], sim.fills)
