"""Chapter 08's ordering checker. It lives in :mod:`asynctc.models.ordering`, beside chapter 05's
ring model, because chapter 06's consumer-loop exercise uses it too; this module is its name in
chapter 08 (``from asynctc.pitfalls import ordering``), with printers for the chapter:
:func:`program_text`, :func:`fix_text`, :func:`show_rule` and :func:`drop_report`."""

from __future__ import annotations

import difflib
from typing import Sequence

from ..models.ordering import (_INT_ARG, _EXAMPLE, OP_FORMS, OPS, PROGRAMS, Hazard, _steps,  # noqa: F401
                               check, describe_ops, form)


def _step(op: str, arg) -> str:
    return op if arg is None else f"{op} {arg}"


def program_text(program: Sequence) -> str:
    """A program on one line, its steps numbered: ``0 st out · 1 sync · 2 tma_store out``."""
    return " · ".join(f"{i} {_step(*s)}" for i, s in enumerate(_steps(program)))


def fix_text(broken: Sequence, fixed: Sequence) -> str:
    """What ``fixed`` changes in ``broken``: its insertions by ``broken``'s step numbers
    (``+ fence_proxy before 1``), or, when it also moves or drops steps, the whole fixed program."""
    a, b = _steps(broken), _steps(fixed)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if tag != "insert":
            return program_text(fixed)
        where = f"before {i1}" if i1 < len(a) else "at the end"
        out.append(f"+ {', '.join(_step(*s) for s in b[j1:j2])} {where}")
    return "; ".join(out)

def show_rule(rule: str) -> None:
    """Chapter 08 §5b, one rule of :data:`PROGRAMS`: print its broken program, the first hazard the
    checker finds in it (step and why) and the fix (:func:`fix_text`). Raises
    :class:`AssertionError` when the broken program breaks no rule or the correct one breaks one."""
    broken, fixed = PROGRAMS[rule]["broken"], PROGRAMS[rule]["correct"]
    hz = check(broken)
    assert hz and check(fixed) == [], f"rule {rule!r}: its broken/correct programs no longer differ"
    print(f"{rule:6s} {program_text(broken)}\n       step {hz[0].step}: {hz[0].why}\n"
          f"       fix: {fix_text(broken, fixed)}")


#: What each step is for, and why the checker may see no hazard without it: the line
#: :func:`drop_report` prints when a dropped step breaks no rule.
WITHOUT = {
    "init": "creates the barrier; the init rule guards only its uses, and none is left",
    "fence_init": "makes the init visible to the async proxy; the init rule guards only uses, and none follows",
    "sync": "lets other threads on once this one's work is visible; no later step here needs that",
    "use": "is what the init steps are for (a TMA's complete_tx, another thread's wait). The init "
           "rule guards uses: with none left it has nothing to check, and the barrier is never used",
    "st": "writes the tile the TMA store copies out. The checker models order, not values: "
          "without the write the store copies stale data, and no rule can tell",
    "fence_proxy": "orders the generic writes before the async proxy's reads; no TMA store "
                   "follows a write here, so the proxy rule has nothing to guard",
    "tma_store": "copies the tile to global memory. No rule asks that the work get done: the "
                 "program is race-free, and its result never leaves shared memory",
    "bulk_commit": "closes the store's bulk group, the unit bulk_wait_read counts. Nothing "
                   "rewrites the buffer after it, so the store rule asks for no wait here; a "
                   "later rewrite could not wait for an uncommitted store (the checker does not model that)",
    "bulk_wait_read": "waits until committed TMA stores have read their buffers; the store rule "
                      "needs it only before a rewrite, and none follows",
    "wgmma": "is the math; without it no group reads the stage, so its release is safe at once",
    "wgmma_commit": "closes a wgmma group so wgmma_wait can count it; no release of its stages follows",
    "wgmma_wait": "retires wgmma groups; the wgmma rule needs it only before a release of their stages",
    "ld": "is the warp's read of the stage; with no read, the release waits for nothing",
    "syncwarp": "joins the warp's lanes after their reads; no release of a read stage follows",
    "arrive": "releases the stage to the producer. No ordering rule asks for a release: without "
              "it the producer waits on empty[s] forever, a hang chapter 05's ring model finds",
}


def drop_report(program: Sequence, drop: int | None) -> str:
    """Chapter 08's lever: ``program`` numbered (:func:`program_text`), then the checker's verdict on
    it with step ``drop`` deleted (None: on the whole program), each hazard named by its rule and
    the step it stops at, in ``program``'s numbering; when no rule breaks, what the dropped step
    is for and why no rule needs it (:data:`WITHOUT`). Raises :class:`IndexError` for a step
    ``program`` does not have."""
    steps = _steps(program)
    if drop is not None and not 0 <= drop < len(steps):
        raise IndexError(f"drop={drop!r}: the program has steps 0–{len(steps) - 1}")
    keep = [i for i in range(len(steps)) if i != drop]
    hz = check([steps[i] for i in keep])
    head = "all steps" if drop is None else f"without step {drop} ({_step(*steps[drop])})"
    return "\n".join([program_text(program)]
                     + [f"{head}: step {keep[h.step]} ({_step(*steps[keep[h.step]])}) breaks the "
                        f"{h.rule} rule: {h.why}" for h in hz]
                     + ([] if hz else [f"{head}: no hazard, every rule holds"]
                        + ([f"  step {drop} {WITHOUT[steps[drop][0]]}"] if drop is not None else [])))
