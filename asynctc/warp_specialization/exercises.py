"""Chapter 06's exercises, auto-checked in notebooks/06_warp_specialization: answers and hints.

``ch06.consumer_regs`` (the most registers setmaxnreg.inc may give the consumers),
``ch06.producer_wait`` (the stage and parity a persistent CTA's producer waits on) and
``ch06.which_barrier`` (which mbarrier each protocol event uses, read from the kernel source);
registered with :mod:`asynctc.core.exercises` when the package is imported.
"""

from __future__ import annotations

from ..core import exercises as _ex
from ..models import pipeline as _mp
from .config import REGS_PER_SM, SETMAXNREG_RANGE, _launch_regs
from .figures import PROTOCOL_EVENTS, protocol_from_source


def _consumer_regs_hint(answer, producer_regs: int, consumers: int):
    exact = (REGS_PER_SM - 128 * producer_regs) / (128 * consumers)
    if not isinstance(answer, (int, float)):
        return None
    if answer == int(exact) and answer % 8:
        return f"{int(exact)} is the exact share, but setmaxnreg takes a multiple of 8: round down"
    if answer == REGS_PER_SM // (128 * consumers):
        return (f"that leaves nothing for the producer warpgroup: its 128 threads keep "
                f"{producer_regs} each, 128 × {producer_regs} = {128 * producer_regs} of the 65536")
    if answer == _launch_regs(128 * (1 + consumers)):
        return ("that is the count at entry (65536 / threads, rounded down to 8): setmaxnreg.inc "
                "raises the consumers above it with what the producer gave back")
    if answer == REGS_PER_SM // 128 - producer_regs:
        return f"the {consumers} consumer warpgroups share what is left: divide by {consumers}"
    total = 128 * producer_regs + 128 * consumers * answer
    if answer > exact:
        return (f"128 × {producer_regs} + {128 * consumers} × {answer} = {total} registers, more "
                "than the SM's 65536: setmaxnreg.inc would wait forever for them")
    if answer % 8:
        return (f"{answer:g} fits (128 × {producer_regs} + {128 * consumers} × {answer:g} ≤ 65536), "
                "but setmaxnreg takes a multiple of 8: take the largest one that fits")
    if answer < _launch_regs(128 * (1 + consumers)):
        return (f"{answer} is below the count at entry ({_launch_regs(128 * (1 + consumers))}): "
                "setmaxnreg.inc raises the consumers' count with what the producer gave back")
    return (f"128 × {producer_regs} + {128 * consumers} × {answer} = {total} of the 65536: "
            f"{REGS_PER_SM - total} stay unused, {(REGS_PER_SM - total) // (128 * consumers)} more "
            "per consumer thread. Is there a larger multiple of 8 that still fits?")


@_ex.exercise("ch06.consumer_regs", "The most registers per thread setmaxnreg.inc may give each of "
              "`consumers` consumer warpgroups when the producer warpgroup keeps `producer_regs` "
              "(one CTA per SM, 65536 registers).", hint=_consumer_regs_hint)
def _consumer_regs(producer_regs: int, consumers: int) -> int:
    """The largest value :class:`WSConfig` accepts as ``consumer_regs``, ignoring the accumulator
    floor (the rule tested is the register file, PTX ISA "setmaxnreg")."""
    best = None
    for regs in range(SETMAXNREG_RANGE[0], SETMAXNREG_RANGE[1] + 1, 8):
        total = 128 * producer_regs + 128 * consumers * regs
        if total <= REGS_PER_SM and regs >= _launch_regs(128 * (1 + consumers)):
            best = regs
    if best is None:
        raise ValueError(f"producer_regs={producer_regs}, consumers={consumers}: no consumer count fits")
    return best


def _ring(tile: int, k: int, k_tiles: int, stages: int) -> tuple[int, int]:
    i = tile * k_tiles + k                                # the ring counter carries across tiles
    return i % stages, _mp._empty_parity(i, stages)


def _producer_hint(answer, tile: int, k: int, k_tiles: int, stages: int):
    if not isinstance(answer, list) or len(answer) != 2:
        return "answer (stage, parity): two numbers"
    i = tile * k_tiles + k
    where = f"tile {tile}'s k-tile {k}"
    if tuple(answer) == _ring(0, k, k_tiles, stages):
        return _ex.tiered("you restarted the ring at the tile's first k-tile, but the producer's "
                          "counter carries across tiles.",
                          f" How many loads came before {where}?",
                          f" It is load number {i} (tile × k_tiles + k, from 0).")
    if answer[0] != i % stages:
        return _ex.tiered(f"stage {answer[0]} is not this load's ring counter modulo S.",
                          f" Which ring counter is {where}, counting every load from 0?",
                          f" i = {tile} × {k_tiles} + {k} = {i}; the stage is i mod {stages}.")
    if answer[1] not in (0, 1):
        return "a parity is one bit"
    if answer[1] == (i // stages) % 2:
        return _ex.tiered("that is the parity the consumers wait on full for this fill.",
                          " Which fill's release does the producer wait for on empty?",
                          " The release of the fill before: (f + 1) mod 2, the preceding phase.")
    return None


@_ex.exercise("ch06.producer_wait", "A persistent CTA's producer is about to load k-tile `k` of its "
              "tile number `tile` (its tiles have `k_tiles` k-tiles each; the ring has S = `stages` "
              "stages). Which stage does it fill, and which parity does it wait on empty[stage]? "
              "Answer (stage, parity).", hint=_producer_hint)
def _producer_wait(tile: int, k: int, k_tiles: int, stages: int) -> tuple[int, int]:
    return _ring(tile, k, k_tiles, stages)


def _barrier_hint(answer, event: str):
    if event == "consumer arrives" and answer == "full":
        return ("full[s] counts ONE arrival, the producer's arrive.expect_tx, and completes when the "
                "TMA's bytes land; the consumers' arrivals say 'stage s may be refilled' — the seed's "
                "backwards naming (print(mp.simulate(**mp.BUG_HUNT, protocol='swapped_barriers').summary()) "
                "shows where it deadlocks)")
    if event == "producer waits" and answer == "full":
        return ("a fresh full barrier lets the producer through, and later only its own loads "
                "complete it: it would overwrite stages the consumers still read (the seed's naming)")
    if event == "consumer waits" and answer == "empty":
        return "empty[s] completes when the consumers release the stage, not when its bytes land"
    if event == "TMA completes" and answer == "empty":
        return "complete_tx goes to the barrier the producer's arrive.expect_tx announced the bytes on"
    return None


@_ex.exercise("ch06.which_barrier", "Which mbarrier of stage s, 'full' or 'empty', does this event "
              "use in the warp-specialized kernel: `event` (one of 'producer waits', 'TMA "
              "completes', 'consumer waits', 'consumer arrives')?", choices=("full", "empty"),
              hint=_barrier_hint)
def _which_barrier(event: str) -> str:
    p = protocol_from_source()
    if event not in p:
        raise ValueError(f"event={event!r}: one of {PROTOCOL_EVENTS}")
    return p[event]
