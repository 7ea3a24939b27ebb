"""Which k-tile the producer loads when, in chapter 05's ring: one source for the schedule that the
kernel runs (``asynctc/kernels/pipeline.cu``, described in Python by
:meth:`asynctc.pipeline.PipelineConfig.schedule`) and that the ring model simulates
(:func:`asynctc.models.pipeline.simulate`). Pure Python.

The kernel's schedule (``SCHEDULES["kernel"]``), with S stages, P = the ``wgmma.wait_group``
argument in the loop (0 or 1; 0 when S = 1) and T k-tiles:

* prologue: k-tiles 0 … min(S, T) − 1, one per stage (the first pass over the empty barriers
  passes at once: a fresh mbarrier reports the preceding phase, parity 1, as complete);
* iteration k: wait full[k mod S], issue k-tile k's wgmmas, commit, ``wait_group(P)``; then
  r = k − P is known complete: each consumer warpgroup arrives on empty[r mod S], and the producer
  refills that stage with k-tile r + S (if r + S < T) after waiting on empty[r mod S].

So with P = 1 iteration k loads k + S − 1, with P = 0 it loads k + S.

``SCHEDULES["model_v1"]`` is the schedule the ring model ran until 2026-12-01 and with which
:data:`asynctc.models.pipeline.H200_PREDICTION` was made: a prologue of S − 1 k-tiles and, at
the end of iteration k, k-tile k + S − 1 whatever P (with S = 1: k-tile k at the top of
iteration k). With P = 1 it is the kernel's schedule but for k-tile S − 1, loaded at the end of
iteration 0 instead of in the prologue; with P = 0 every load comes one iteration later than the
kernel's — one stage less lead.
"""

from __future__ import annotations

import dataclasses

#: The schedules: "kernel" (what pipeline.cu runs) and "model_v1" (the ring model's own until
#: 2026-12-01, kept to reproduce the frozen prediction).
SCHEDULES = ("kernel", "model_v1")


@dataclasses.dataclass(frozen=True)
class RingSchedule:
    """The load schedule of one CTA tile: ``prologue`` (k-tiles loaded before the loop, in order),
    ``top`` (per iteration k: the k-tile loaded at the top of iteration k, before its full wait,
    or None), ``release`` (per iteration k: the k-tile each consumer warpgroup releases after
    ``wait_group(P)``, or None), ``refill`` (per iteration k: the k-tile the producer loads after
    that release, or None)."""
    stages: int
    wait_pending: int
    k_tiles: int
    name: str
    prologue: tuple
    top: tuple
    release: tuple
    refill: tuple

    def load_order(self) -> list[int]:
        """Every k-tile in the order the producer issues its TMA: 0 … T − 1 in both schedules."""
        out = list(self.prologue)
        for k in range(self.k_tiles):
            out += [t for t in (self.top[k], self.refill[k]) if t is not None]
        return out

    def lead(self, k: int) -> int | None:
        """How many k-tiles ahead of the one computed the producer loads in iteration k (None when
        it loads nothing there)."""
        t = self.refill[k] if self.refill[k] is not None else self.top[k]
        return None if t is None else t - k


def ring_schedule(stages: int, wait_pending: int, k_tiles: int,
                  name: str = "kernel") -> RingSchedule:
    """The :class:`RingSchedule` of ``name`` (:data:`SCHEDULES`) for S = ``stages`` ≥ 1,
    P = ``wait_pending`` (0 or 1; 1 needs S ≥ 2) and T = ``k_tiles`` ≥ 1. Raises ``ValueError``
    naming the field."""
    for field, v, lo in (("stages", stages, 1), ("k_tiles", k_tiles, 1)):
        if not isinstance(v, int) or isinstance(v, bool) or v < lo:
            raise ValueError(f"{field}={v!r}: must be an integer ≥ {lo}")
    if wait_pending not in (0, 1):
        raise ValueError(f"wait_pending={wait_pending!r}: must be 0 or 1 (the loop's wgmma.wait_group)")
    if wait_pending == 1 and stages == 1:
        raise ValueError("wait_pending=1 with stages=1: the pending group still reads the only stage")
    if name not in SCHEDULES:
        raise ValueError(f"name={name!r}: must be one of {SCHEDULES}")
    S, P, T = stages, wait_pending, k_tiles
    if name == "kernel":
        prologue = tuple(range(min(S, T)))
        top = (None,) * T
        release = tuple(k - P if k - P >= 0 else None for k in range(T))
        refill = tuple(k - P + S if k - P >= 0 and k - P + S < T else None for k in range(T))
    else:
        prologue = tuple(range(min(S - 1, T)))
        top = tuple(k if S == 1 else None for k in range(T))
        release = tuple(k - P if k - P >= 0 else None for k in range(T))
        refill = tuple(k + S - 1 if S > 1 and k + S - 1 < T else None for k in range(T))
    return RingSchedule(S, P, T, name, prologue, top, release, refill)
