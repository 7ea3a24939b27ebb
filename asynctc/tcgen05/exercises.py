"""Chapter 09's auto-checked exercises: the deep dive's (notebook 09b) ``ch09.acc_columns``,
``ch09.acc_parity``, ``ch09.scale_byte``, and the core lesson's code exercise ``ch09.mma_issue``
(the MMA thread's work for one k-tile, written in Python against :class:`IssuerThread` and judged
rule by rule: one elected thread waits on the stage's full barrier with the fill's parity, fences
(tcgen05.fence::after_thread_sync), issues each k-step's MMA on the k-tile's stage, accumulate off on
the k-loop's first MMA only, then one commit to the stage's empty barrier; the wait, parity and fence
by the ordering checker :func:`asynctc.models.ordering.check_mma_thread`; a missing commit is run
through the kernel's protocol model, :func:`asynctc.models.tcgen05_sched.simulate_persistent`).
Registered on import (the package imports this module)."""

from __future__ import annotations

import re

from ..core import exercises as _ex
from ..models.ordering import check_mma_thread
from ..models.tcgen05_sched import simulate_persistent


def _cols_hint(answer, bn: int = 256, stages: int = 4, block_scaled: bool = False):
    try:
        a = int(answer)
    except (TypeError, ValueError):
        return None
    if a == bn or a == 2 * bn and block_scaled:
        return "two accumulators: each tile's MMAs write bn columns while the epilogue reads the other bn"
    if a == 2 * bn + (8 * stages if block_scaled else 0):
        return "that is the columns used; tcgen05.alloc takes a power of two"
    return None


@_ex.exercise("ch09.acc_columns", "How many TMEM columns must tcgen05.alloc request for two fp32 "
              "accumulators of bn columns (plus, block-scaled, 8 scale columns per stage)?",
              hint=_cols_hint)
def _acc_columns(bn: int = 256, stages: int = 4, block_scaled: bool = False) -> int:
    need = 2 * bn + (8 * stages if block_scaled else 0)
    c = 32
    while c < need:
        c *= 2
    return c


def _parity_hint(answer, t: int = 5):
    try:
        a = int(answer)
    except (TypeError, ValueError):
        return None
    if a == (t // 2) & 1:
        return ("that is the parity of the phase being filled now; a wait for a *completed* phase of "
                "a barrier whose first round must pass at once waits on the other parity")
    return None


@_ex.exercise("ch09.acc_parity", "Tile t uses accumulator t % 2. On which parity does the MMA thread "
              "wait acc_empty[t % 2] before tile t?", hint=_parity_hint)
def _acc_parity(t: int = 5) -> int:
    return ((t // 2) & 1) ^ 1


def _byte_hint(answer, kstep: int = 2):
    try:
        a = int(answer)
    except (TypeError, ValueError):
        return None
    if a == 4 * kstep:
        return "the ID counts bytes of the 32-bit scale cell, not bits or columns"
    return None


@_ex.exercise("ch09.scale_byte", "In a 128-element fp8 k-tile, which scale factor ID (byte of the "
              "scale cell) does the MMA of k-step kstep (K = 32 each) use?", hint=_byte_hint)
def _scale_byte(kstep: int = 2) -> int:
    return kstep % 4


# --------------------------------------------------------------------------------------------------
# ch09.mma_issue (chapter 09): the MMA thread's work for one k-tile, written by the learner
# --------------------------------------------------------------------------------------------------

#: The ring the judge runs the learner's k-tile on: stages, k-tiles, MMAs (K = 16 each) per stage
#: (BK = 64), and the threads of warp 1 (lane 0 is the elected one).
ISSUE_STAGES, ISSUE_K_TILES, ISSUE_STEPS, ISSUE_LANES = 2, 5, 4, 32


class _Barrier(str):
    """An mbarrier of the issuer's view, named like the kernel's (``empty[1]``, ``done``)."""


class IssuerThread:
    """One thread of warp 1 as ``issue_ktile(t, kt, s)`` sees it: ``t.elected`` (the one thread
    that issues), ``t.stages`` (stages in the ring), ``t.steps`` (MMAs per stage), the barriers
    ``t.full[s]``, ``t.empty[s]``, ``t.done``, and four instructions: ``t.wait(barrier, parity)``
    (mbarrier.try_wait.parity: returns once the barrier's phase of that parity completed),
    ``t.fence_after()`` (tcgen05.fence::after_thread_sync), ``t.mma(s, j, accumulate)``
    (tcgen05.mma on k-step j of stage s; ``accumulate`` False overwrites D, True adds to it) and
    ``t.commit(barrier)`` (tcgen05.commit: the barrier gets one arrive when every tcgen05.mma this
    thread issued before it has completed). Each call is recorded in ``events``."""

    def __init__(self, lane: int, stages: int = ISSUE_STAGES, steps: int = ISSUE_STEPS):
        self.lane, self.elected, self.stages, self.steps = lane, lane == 0, stages, steps
        self.full = [_Barrier(f"full[{s}]") for s in range(stages)]
        self.empty = [_Barrier(f"empty[{s}]") for s in range(stages)]
        self.done = _Barrier("done")
        self.events: list[tuple] = []

    def wait(self, barrier, parity):
        self.events.append(("wait", str(barrier), parity))

    def fence_after(self):
        self.events.append(("fence_after",))

    def mma(self, s, j, accumulate):
        self.events.append(("mma", s, j, bool(accumulate)))

    def commit(self, barrier):
        self.events.append(("commit", str(barrier)))


def issue_ktile(t: IssuerThread, kt: int, s: int) -> None:
    """The answer key of ``ch09.mma_issue``: the kernel's MMA thread on k-tile ``kt`` in stage ``s``
    (``kernels/tcgen05.cu``, warp 1)."""
    if t.elected:
        t.wait(t.full[s], (kt // t.stages) & 1)          # fill kt // stages of stage s: its parity
        t.fence_after()                                   # orders the MMAs after the wait
        for j in range(t.steps):
            t.mma(s, j, accumulate=(kt > 0 or j > 0))    # enable-input-d = 0 on the first MMA only
        t.commit(t.empty[s])                              # frees stage s once those MMAs completed


def _ktile_hint(ev: list, kt: int, s: int) -> str | None:
    """What is wrong with the elected thread's events ``ev`` of k-tile ``kt`` in stage ``s``."""
    stages, steps = ISSUE_STAGES, ISSUE_STEPS
    mmas = [e for e in ev if e[0] == "mma"]
    commits = [e[1] for e in ev if e[0] == "commit"]
    where = f"k-tile {kt} (stage {s})"
    back = f" Which barrier hands stage {s} back to the producer (§5's list of calls)?"   # the commit's question
    if any(m[1] != s for m in mmas):
        bad = next(m[1] for m in mmas if m[1] != s)
        return f"at {where} an MMA reads stage {bad}: this k-tile's boxes are in stage {s}"
    if [m[2] for m in mmas] != list(range(steps)):
        return (f"at {where} your MMAs cover k-steps {[m[2] for m in mmas]}: a stage holds k-steps "
                f"0..{steps - 1} (t.steps), each issued once, in order")
    for m in mmas:
        want = kt > 0 or m[2] > 0
        if m[3] != want:
            if kt == 0 and m[2] == 0:
                return _ex.tiered("accumulate=True on the very first MMA adds to whatever the fresh "
                                  "TMEM columns held.",
                                  " What does §4 say tcgen05.alloc leaves in the columns it allocates?",
                                  " tcgen05.alloc does not zero them: start with accumulate=False.")
            fresh = (" How many MMAs of the whole k-loop start from an empty D (§5's Accumulate "
                     "rule)?")
            first = " Only the k-loop's first MMA (k-tile 0, k-step 0) starts fresh."
            if m[2] == 0:
                return _ex.tiered(f"accumulate=False at {where}, k-step 0, overwrites D: the k-tiles "
                                  "before it are lost.", fresh, first)
            return _ex.tiered(f"accumulate=False at {where}, k-step {m[2]}, throws away the k-steps "
                              "before it.", fresh, first)
    if not commits:
        d = simulate_persistent(stages=stages, tiles=1, k_tiles=ISSUE_K_TILES,
                                protocol="missing_empty_commit").diagnosis
        return _ex.tiered(f"no tcgen05.commit at {where}: the producer never gets stage {s} back. "
                          f"The kernel's model without it: a {type(d).__name__.lower()} at k-tile "
                          f"{d.iteration}.",
                          back,
                          f" The producer waits on empty[0] forever: commit to t.empty[{s}] after the "
                          "k-tile's last MMA.")
    if len(commits) > 1:
        return f"{len(commits)} commits at {where}: one per k-tile, to t.empty[{s}]"
    if ev[-1][0] != "commit":
        return _ex.tiered(f"at {where} your commit comes before an MMA.",
                          " Which MMAs does its arrive wait for (t.commit in §5's list of calls)?",
                          f" Only those issued before it: empty[{s}] would free the stage while that "
                          "MMA still reads it. Commit after the k-tile's last MMA.")
    got = commits[0]
    if got == f"empty[{s}]":
        return None
    if got.startswith("full"):
        return _ex.tiered(f"you commit to {got}: full is the producer's barrier (its TMA bytes "
                          "complete it).",
                          back,
                          f" The MMAs release the stage on t.empty[{s}].")
    if got == "done":
        return _ex.tiered("you commit to t.done: that tells the epilogue the whole accumulator is "
                          "ready, once, after the last k-tile (the kernel does it after the loop).",
                          back,
                          f" A stage is released on t.empty[{s}].")
    return f"you commit to {got}: this k-tile read stage {s}, so release t.empty[{s}]"


def _sync_hint(ev: list, kt: int, s: int, stages: int = ISSUE_STAGES) -> str | None:
    """What is wrong with the wait and the fence in the elected thread's events of k-tile ``kt``."""
    where, r = f"k-tile {kt} (stage {s})", kt // stages          # r: the stage's fill
    kinds = [e[0] for e in ev]
    first_mma = kinds.index("mma") if "mma" in kinds else len(ev)
    waits = [i for i, k in enumerate(kinds) if k == "wait"]
    if not waits:
        return _ex.tiered(f"at {where} your MMAs read stage {s} without waiting: TMA may still be "
                          "writing it.",
                          f" Which barrier says stage {s} has landed (§5's Data rule)?",
                          f" Wait on t.full[{s}] first (t.wait(barrier, parity)): the producer's TMA "
                          "completes it.")
    if len(waits) > 1:
        return f"{len(waits)} waits at {where}: one wait per k-tile, on t.full[{s}]"
    _, bar, parity = ev[waits[0]]
    if bar.startswith("empty"):
        return (f"you wait on {bar}: empty is the barrier your commit arrives on (the producer waits "
                f"on it). The MMAs wait on t.full[{s}], which TMA completes once the stage has landed")
    if bar != f"full[{s}]":
        return f"you wait on {bar}: this k-tile's boxes land in stage {s}, so wait on t.full[{s}]"
    if waits[0] > first_mma:
        return f"at {where} your wait comes after an MMA: that MMA reads stage {s} before it is full"
    if isinstance(parity, bool) or parity not in (0, 1):
        return f"parity {parity!r}: a phase parity is 0 or 1, the low bit of the fill"
    if parity != r & 1:
        return _ex.tiered(f"at {where} you wait on parity {parity}: it names the fill before "
                          "(completed: the wait returns at once and the MMAs read a stage TMA is still "
                          "filling) or after (it needs this stage back: a hang).",
                          f" Which fill of stage {s} is k-tile {kt}, and what is its parity (§5's "
                          "Data rule)?",
                          f" This is fill {r} of stage {s} (kt // t.stages), and TMA completes phase "
                          f"{r} of full[{s}], parity {r & 1}.")
    fences = [i for i, k in enumerate(kinds) if k == "fence_after"]
    if not fences:
        return _ex.tiered(f"at {where} nothing orders your MMAs after the wait: a wait orders this "
                          "thread's ordinary loads and stores, not its tcgen05 operations, which run "
                          "asynchronously.",
                          " Which call in §5's list orders them (its Order rule)?",
                          " Call t.fence_after() (tcgen05.fence::after_thread_sync) after the wait, "
                          "before the first MMA.")
    if fences[0] < waits[0] and not any(waits[0] < i < first_mma for i in fences):
        return _ex.tiered(f"at {where} your fence comes before the wait.",
                          " What does t.fence_after() order, and behind which calls (§5's list of calls)?",
                          " fence::after_thread_sync orders the tcgen05 operations after it behind the "
                          "synchronisation before it, and before it there is none. Fence after the "
                          "wait, before the first MMA.")
    if not any(waits[0] < i < first_mma for i in fences):
        return _ex.tiered(f"at {where} your fence comes after an MMA.",
                          " Which tcgen05 operations does t.fence_after() order behind the wait (§5's "
                          "list of calls)?",
                          " Only those after it: that MMA is not ordered after the wait. Fence after "
                          "the wait, before the first MMA.")
    return None


def _stop(hint: str) -> str:
    """``hint`` with its full stop: a :func:`~asynctc.core.exercises.tiered` part ends its own."""
    return hint if hint.endswith(_ex.TIER) else hint + "."


def _kind(hint: str) -> str:
    """A hint with its numbers left out: one mistake repeated at several k-tiles is one kind."""
    return re.sub(r"\d+", "#", hint)


def _views(ev: list, kt: int, s: int):
    """The elected thread's events of one k-tile with all but one group of them made right, one
    view per group: its MMAs; its MMAs on the right stage (their k-steps and accumulate flags);
    its commits, placed before or after the right MMAs as the learner placed them."""
    right = [("mma", s, j, kt > 0 or j > 0) for j in range(ISSUE_STEPS)]
    mine = [e for e in ev if e[0] == "mma"]
    commits = [e for e in ev if e[0] == "commit"]
    yield mine + [("commit", f"empty[{s}]")]
    yield [("mma", s) + tuple(m[2:]) for m in mine] + [("commit", f"empty[{s}]")]
    last = not commits or ev[-1][0] == "commit"
    yield right + commits if last else right[:-1] + commits + right[-1:]


def _other_mistakes(per_ktile: list, first: str, hazard: bool) -> int:
    """How many kinds of mistake the elected thread's events show besides the one ``first`` names:
    :func:`_ktile_hint` on each of :func:`_views`, and, when the ordering checker found a hazard,
    :func:`_sync_hint`, at every k-tile. Counted by :func:`_kind` (a mistake repeated at several
    k-tiles is one), so it under-counts rather than over-counts."""
    kinds = set()
    for kt, ev in enumerate(per_ktile):
        s = kt % ISSUE_STAGES
        hints = [_ktile_hint(view, kt, s) for view in _views(ev, kt, s)]
        hints.append(_sync_hint(ev, kt, s) if hazard else None)
        kinds.update(_kind(_stop(h)) for h in hints if h)
    kinds.discard(_kind(first))
    return len(kinds)


def _program(per_ktile: list) -> tuple[list, list]:
    """The elected thread's events as an ordering program (``ordering.check_mma_thread``), and the
    k-tile of each step."""
    prog, at = [], []
    for kt, ev in enumerate(per_ktile):
        for e in ev:
            step = {"wait": lambda: ("wait", (e[1], e[2])), "fence_after": lambda: ("fence_after", None),
                    "mma": lambda: ("mma", e[1]), "commit": lambda: ("commit", e[1])}[e[0]]()
            prog.append(step)
            at.append(kt)
    return prog, at


def _judge_mma_issue(answer) -> str | None:
    if not callable(answer):
        return "pass your function itself, e.g. check('ch09.mma_issue', issue_ktile)"
    threads = [IssuerThread(lane) for lane in range(ISSUE_LANES)]
    per_ktile = []                                   # the elected thread's events per k-tile
    for kt in range(ISSUE_K_TILES):
        s = kt % ISSUE_STAGES
        for t in threads:
            before = len(t.events)
            if answer(t, kt, s) is not None:
                raise _ex.WrongReturn(f"your function returned a value for k-tile {kt}; it issues "
                                      "instructions (t.wait, t.mma, t.commit ...) and returns nothing")
            if t.elected:
                per_ktile.append(t.events[before:])
    issues = lambda t: [e for e in t.events if e[0] in ("mma", "commit")]   # waiting lanes are harmless
    others = [t for t in threads[1:] if issues(t)]
    if not issues(threads[0]):
        if others:
            return ("only the other lanes issue: the elected thread (t.elected) is the one that "
                    "issues tcgen05.mma and tcgen05.commit")
        raise _ex.NotAnswered("your function issues nothing: replace the `...` in issue_ktile's "
                              "body with your code and run the cell again.")
    prog, at = _program(per_ktile)                   # the wait, its parity and the fence: the checker's
    hz = check_mma_thread(prog)
    hint = None
    if mma_others := [t for t in others if any(e[0] == "mma" for e in t.events)]:
        hint = (f"{len(mma_others) + 1} threads of warp 1 issue MMAs: each would be a separate MMA into "
                "the same accumulator. One thread issues tcgen05.mma (unlike wgmma, which the whole "
                "warpgroup executes): guard the body with `if t.elected:`")
    elif others:                                     # only commits outside the guard
        hint = (f"{len(others) + 1} threads of warp 1 issue tcgen05.commit, {len(others)} of them "
                "after no MMA: a commit arrives once the MMAs its own thread issued have completed, "
                "so theirs arrive at once and free the stage while the elected thread's MMAs still "
                "read it. Put t.commit inside `if t.elected:` too")
    if not hint:
        hint = next((_stop(h) for kt, ev in enumerate(per_ktile)
                     if (h := _ktile_hint(ev, kt, kt % ISSUE_STAGES))), None)
    if not hint and hz:
        kt = at[hz[0].step]
        hint = _stop(_sync_hint(per_ktile[kt], kt, kt % ISSUE_STAGES) or f"at k-tile {kt}: {hz[0].why}")
    return hint and _ex.with_more(hint, _other_mistakes(per_ktile, hint, bool(hz)))


@_ex.code_exercise("ch09.mma_issue", "Write issue_ktile(t, kt, s): what warp 1's threads do for "
                   "k-tile kt in stage s: the elected thread (t.elected) waits until the stage is "
                   "full (t.wait(barrier, parity)), fences (t.fence_after()), issues t.steps MMAs, "
                   "t.mma(s, j, accumulate), then t.commit(barrier) so that the producer may refill "
                   "the stage. Pass the function: check('ch09.mma_issue', issue_ktile).",
                   judge=_judge_mma_issue)
def _ch09_mma_issue():
    return issue_ktile
