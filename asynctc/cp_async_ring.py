"""Chapter 02's model of one thread's ``cp.async`` ring (pure Python and numpy; no GPU, no timing,
no plotting): when each k-tile's copies land, when the consumer reads its stage, and what the stage
held at that moment.

The protocol is the kernel's (``asynctc/kernels/cp_async.cu``): a prologue issues and commits the
copies of k-tiles 0 … S − 2, one group per k-tile; iteration kt then

1. waits (``cp.async.wait_group N``: until at most the N newest groups are pending), or not at all
   (``wait=None``: the copy is fire-and-forget and nothing says when it lands);
2. issues and commits the copies of k-tile kt + S − 1 (an empty group past the last k-tile);
3. computes on k-tile kt for ``work`` clocks, reading its stage (slot kt mod S) as it starts.

Every copy lands ``latency`` clocks after it is issued. A read is *stale* when k-tile kt has not
landed yet: the slot then still holds the k-tile S before it, or, in the first pass over the ring,
whatever shared memory held (garbage). PTX ISA, *cp.async.wait_group*: "wait until only N or fewer
of the most recent cp.async-groups are pending".
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class Step:
    """Iteration ``kt`` of the consumer: it started waiting at ``wait_from``, read its stage and
    started computing at ``start``, ended at ``end`` (clocks); ``issued``/``landed``: when the copies
    of k-tile kt were issued and landed; ``held``: the k-tile the slot held at ``start`` (None:
    garbage, nothing landed there yet)."""
    kt: int
    slot: int
    wait_from: float
    start: float
    end: float
    issued: float
    landed: float
    held: int | None

    @property
    def stale(self) -> bool:
        """The consumer read the slot before k-tile kt landed."""
        return self.held != self.kt


def run(stages: int, wait: int | None, ktiles: int = 8, latency: float = 1300.0,
        work: float = 600.0) -> list[Step]:
    """The consumer's iterations (:class:`Step`) for a ring of ``stages`` (≥ 1) and
    ``cp.async.wait_group wait`` (``wait`` ≥ 0, or None for no wait at all), over ``ktiles``
    k-tiles; ``latency`` and ``work`` in clocks. Raises ``ValueError`` naming the field."""
    for name, v, lo in (("stages", stages, 1), ("ktiles", ktiles, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ValueError(f"{name}={v!r}: must be a whole number ≥ {lo}")
    if wait is not None and (isinstance(wait, bool) or not isinstance(wait, int) or wait < 0):
        raise ValueError(f"wait={wait!r}: wait_group's N is a whole number ≥ 0 (or None: no wait)")
    if latency < 0 or work <= 0:
        raise ValueError(f"latency={latency!r}, work={work!r}: latency ≥ 0 and work > 0 clocks")
    issued, landed = [], []                       # per group (= per k-tile; empty groups past the end)

    def commit(t: float):                         # a group past the last k-tile is empty: done at once
        issued.append(t)
        landed.append(t + (latency if len(issued) <= ktiles else 0.0))

    t = 0.0
    for _ in range(stages - 1):                   # the prologue
        commit(t)
    steps = []
    for kt in range(ktiles):
        wait_from = t
        if wait is not None and len(landed) - wait > 0:
            t = max(t, max(landed[: len(landed) - wait]))   # all but the `wait` newest have landed
        commit(t)                                 # k-tile kt + S − 1 into the slot freed last iteration
        if stages == 1 and wait is not None:      # one stage: this k-tile's own copies, then the wait
            t = max(t, landed[-1])
        mine = [k for k in range(kt % stages, kt + 1, stages) if k < ktiles and landed[k] <= t]
        steps.append(Step(kt, kt % stages, wait_from, t, t + work, issued[kt], landed[kt],
                          mine[-1] if mine else None))
        t += work
    return steps


def table(steps: list[Step]) -> str:
    """A few lines: per k-tile, its slot, when its copies landed and when the consumer read it, and
    what the slot held then."""
    out = ["k-tile  slot  landed  read at  the slot held"]
    for s in steps:
        what = (f"k-tile {s.held}" if s.held == s.kt else
                "garbage (nothing landed yet)" if s.held is None else f"k-tile {s.held} (stale)")
        out.append(f"{s.kt:6d} {s.slot:5d} {s.landed:7.0f} {s.start:8.0f}  {what}")
    return "\n".join(out)


def gemm_from_reads(steps: list[Step], bk: int = 16, seed: int = 2) -> float:
    """Multiply A (64 × K) by B (K × 64), K = bk · len(steps), k-tile by k-tile from what each read
    found in its slot (:class:`Step`.held; garbage: random values), and return the largest error
    relative to float64, max |C − ref| / max |ref|: about 0 when every read was fresh."""
    rng = np.random.default_rng(seed)
    k = bk * len(steps)
    a, b = rng.standard_normal((64, k)), rng.standard_normal((k, 64))
    c = np.zeros((64, 64))
    for s in steps:
        if s.held is None:
            ta, tb = rng.standard_normal((64, bk)), rng.standard_normal((bk, 64))
        else:
            ta, tb = a[:, s.held * bk:(s.held + 1) * bk], b[s.held * bk:(s.held + 1) * bk]
        c += ta @ tb
    ref = a @ b
    return float(np.abs(c - ref).max() / np.abs(ref).max())


def show(stages: int, wait: int | None, **kw) -> str:
    """:func:`table` of :func:`run`, then one line: how many reads were stale and the GEMM's error
    (:func:`gemm_from_reads`). Raises ``AssertionError`` if the model contradicts itself (a stale read
    with a correct result, or the reverse)."""
    steps = run(stages, wait, **kw)
    err = gemm_from_reads(steps)
    bad = sum(s.stale for s in steps)
    assert (bad > 0) == (err > 1e-9), (bad, err)
    head = f"{stages} stages, " + ("no wait" if wait is None else f"wait_group {wait}")
    return (f"{head}\n{table(steps)}\n{bad} of {len(steps)} reads stale → C wrong by "
            f"{err:.0%} of its largest entry" if bad else
            f"{head}\n{table(steps)}\nevery read fresh → C right (error {err:.0e})")
