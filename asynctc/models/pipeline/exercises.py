"""Chapter 05's exercises (auto-checked in notebooks/05_pipelines; registered on import by
:mod:`asynctc.models.pipeline`): the full and empty barriers' phase parity, the groups
``wgmma.wait_group`` leaves pending, the find-the-bug exercise over :data:`VARIANTS`, and the code
exercise ``ch05.ring_parities`` (write both parities; the ring model runs them and diagnoses)."""

from __future__ import annotations

from ...core import exercises as _ex
from .ring import VARIANTS, Deadlock, Mbarrier, Race, simulate


#: The schedule the find-the-bug exercise runs each variant on.
BUG_HUNT = dict(stages=4, wait_pending=1, consumers=2, k_tiles=16)


def _full_parity_hint(answer, k: int, stages: int):
    right = _full_parity(k, stages)
    if answer == 1 - right:
        return ("that is the parity of the phase before: the wait names the phase it waits FOR, "
                "the one TMA completes on this pass over the ring")
    if answer == k % 2 and stages > 1:
        return "a phase per pass over the ring, not per k-tile: divide k by S first"
    if isinstance(answer, int) and answer > 1:
        return "a parity is one bit: the pass number modulo 2"
    return None


@_ex.exercise("ch05.full_parity", "The parity a consumer waits on full[k % S] for k-tile k, with a ring "
              "of S = `stages` stages.", hint=_full_parity_hint)
def _full_parity(k: int, stages: int) -> int:
    bar = Mbarrier(1, "full")
    for _ in range(k // stages):                  # earlier passes over this stage completed a phase each
        bar.arrive_expect_tx(1024)
        bar.complete_tx(1024)
    return next(p for p in (0, 1) if not bar.test_wait(p))     # the phase still to complete


def _empty_parity_hint(answer, t: int, stages: int):
    if answer == 1 - _empty_parity(t, stages):
        if t < stages:
            return ("on the first pass the stage is empty but no phase of empty[s] has completed: "
                    "a fresh barrier is in phase 0, so parity 0 blocks; wait on the preceding phase")
        return "that is the phase the consumers complete when they release THIS load: it waits forever"
    return None


@_ex.exercise("ch05.empty_parity", "The parity the producer waits on empty[t % S] before loading k-tile t, "
              "with a ring of S = `stages` stages.", hint=_empty_parity_hint)
def _empty_parity(t: int, stages: int) -> int:
    bar = Mbarrier(1, "empty")
    passes = t // stages                                 # the stage was filled and released this often
    if passes == 0:
        return next(p for p in (0, 1) if bar.test_wait(p))    # must not block on a fresh barrier
    for _ in range(passes - 1):
        bar.arrive()
    return next(p for p in (0, 1) if not bar.test_wait(p))    # completes with the last release


def _pending_hint(answer, stages: int = 4, consumers: int = 1):
    if answer == 0:
        return ("with 0 pending the warpgroup waits for its own wgmma before it releases a stage and "
                "issues the next TMA, so the Tensor Cores idle at every refill: compare `math_fraction` "
                "of mp.simulate(stages, 0, consumers, 32) and (stages, 1, …), or draw "
                "mp.plot_timeline(mp.simulate(6, 0, 1, 32).spans) and look for the gaps between the "
                "wgmma bars (deep dive 05b §1 draws such timelines)")
    if answer not in (0, 1):
        return ("the answer is 0 or 1: does the warpgroup wait until all its wgmma groups are done "
                "(0), or leave the group it just issued running (1)?")
    return None


@_ex.exercise("ch05.groups_pending", "How many wgmma groups should wgmma.wait_group leave pending (0 or 1) "
              "so that the math keeps going while the next stage is released and refilled?",
              hint=_pending_hint)
def _groups_pending(stages: int = 4, consumers: int = 1) -> int:
    runs = {p: simulate(stages, p, consumers, 32) for p in (0, 1)}
    return max(runs, key=lambda p: runs[p].math_fraction)


#: The variant exercise 4 hides (chosen here so that the notebook's source does not name it).
_MYSTERY = "arrive_count_too_big"


#: A variant whose :data:`VARIANTS` line gives an exercise's answer by negation (05's exercise 2: the
#: refill's parity is the wrong one flipped), as deep dive 05c §5's table names it until that passes.
HELD = {"wrong_empty_parity": "the producer waits on empty with the wrong parity (05's exercise 2)"}


def shown_variants(hold: bool = False) -> dict:
    """:data:`VARIANTS` less the one the find-the-bug exercise hides: {name: what it breaks}.
    ``hold=True``: a variant of :data:`HELD` reads its line there, without the formula."""
    return {k: HELD.get(k, v) if hold else v for k, v in VARIANTS.items() if k != _MYSTERY}


def mystery_diagnosis():
    """The diagnosis (:class:`Deadlock` or :class:`Race`) of the hidden variant on the
    :data:`BUG_HUNT` schedule — the find-the-bug exercise's question, without its name."""
    return simulate(**BUG_HUNT, protocol=_MYSTERY).diagnosis


def _bug_hint(answer, diagnosis):
    if answer not in VARIANTS:
        return None
    got = simulate(**BUG_HUNT, protocol=answer).diagnosis
    if type(got) is not type(diagnosis):
        return f"{answer} ends in a {type(got).__name__}, the schedule shown in a {type(diagnosis).__name__}"
    if isinstance(got, Deadlock) and (got.barrier, got.iteration) != (diagnosis.barrier, diagnosis.iteration):
        return f"{answer} blocks on {got.barrier} at k-tile {got.iteration}; compare barrier and k-tile"
    return "same symptom, different cause: read the `why` (how many arrivals, how many bytes)"


@_ex.exercise("ch05.find_bug", "Which broken protocol produced this diagnosis? (a name of "
              "asynctc.models.pipeline.VARIANTS; the check runs the model)", choices=tuple(VARIANTS),
              hint=_bug_hint)
def _find_bug(diagnosis) -> str:
    hits = [v for v in VARIANTS if simulate(**BUG_HUNT, protocol=v).diagnosis == diagnosis]
    if len(hits) != 1:
        raise ValueError(f"diagnosis matches {len(hits)} variants: {hits}")
    return hits[0]


#: The rings the write-the-parities check runs: (stages, wait_pending, consumers, k_tiles).
PARITY_RUNS = ((4, 1, 2, 13), (3, 1, 2, 10), (2, 1, 1, 7), (1, 0, 2, 4))


def _parity_value(fn, what: str, i: int, stages: int) -> int:
    import numbers
    v = fn(i, stages)
    if v is None or v is Ellipsis:
        raise _ex.NotAnswered(f"your {what} returns None: write its body (return 0 or 1) and run the "
                              "cell again.")
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or int(v) not in (0, 1):
        raise _ex.WrongReturn(f"your {what}({i}, {stages}) returned {v!r}; a parity is 0 or 1")
    return int(v)


def _judge_parities(answer) -> str | None:
    if not (isinstance(answer, (tuple, list)) and len(answer) == 2 and all(callable(f) for f in answer)):
        return "pass your two functions as a pair: check('ch05.ring_parities', (full_parity, empty_parity))"
    full, empty = answer
    for S, P, C, K in PARITY_RUNS:
        for i in range(K):                       # every value the run will ask for, checked first
            _parity_value(full, "full_parity", i, S)
            _parity_value(empty, "empty_parity", i, S)
        run = simulate(S, P, C, K, parities=(lambda k, s: _parity_value(full, "full_parity", k, s),
                                             lambda t, s: _parity_value(empty, "empty_parity", t, s)))
        d = run.diagnosis
        ring = f"with S = {S} stages, {C} consumer warpgroup{'s' if C > 1 else ''} and {K} k-tiles"
        if isinstance(d, Deadlock):
            who = " and ".join(d.waiting)
            return (f"{ring}, the ring model deadlocks at k-tile {d.iteration}: {who} wait{'s' if len(d.who_waits) == 1 else ''} "
                    f"on {d.barrier}[{d.stage}] with parity {d.parity}, and {d.why}.")
        if isinstance(d, Race):
            return f"{ring}, the ring model finds a race at k-tile {d.iteration}: {d.what}."
    return None


@_ex.code_exercise("ch05.ring_parities", "Write full_parity(k, S), the parity a consumer waits on "
                   "full[k % S] for k-tile k, and empty_parity(t, S), the parity the producer waits on "
                   "empty[t % S] before loading k-tile t. The check runs chapter 05's ring model with "
                   "them on four rings; pass the pair: check('ch05.ring_parities', (full_parity, "
                   "empty_parity)).", judge=_judge_parities)
def _ring_parities():
    return (lambda k, S: _full_parity(k, S), lambda t, S: _empty_parity(t, S))
