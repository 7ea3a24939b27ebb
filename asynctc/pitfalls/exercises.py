"""Chapter 08's auto-checked exercises (registered with :mod:`asynctc.core.exercises`). Every
expected answer comes from the models: the ring model names the bug, the ordering checker judges a
repair, the layout model places the first misplaced element.

* ``ch08.name_bug`` — which zoo class produced this hang? The learner sees :func:`mystery_symptom`
  (who timed out where, what reached the barrier before); the check runs :func:`mystery_diagnosis`
  itself unless given another Deadlock (``diagnosis``).
* ``ch08.repair`` — a code exercise: insert steps into a broken program until
  :func:`ordering.check` finds no hazard, and pass the program; a wrong one gets the checker's
  first hazard as its hint.
* ``ch08.first_misplaced`` — the first (row, col) a reader gets from the wrong place (a tile off
  its swizzle repeat, or a reader that assumes another swizzle mode).
"""

from __future__ import annotations

import re

from ..core import exercises as _ex
from ..models import pipeline as M
from . import diagnosis as _d
from . import ordering, zoo

#: The class the name-the-bug exercise hides (the notebook's source does not name it).
_MYSTERY = "expect_tx"

#: 08 §2's listing of the consumers' loop (``notebook.show_source`` ``omit``): the step §6's
#: exercise 2 asks for, left out unmarked, and the two shared-memory asm blocks, folded. Kept here:
#: in the notebook's source the first range's pattern named who issues the step and its kind.
LISTING_OMIT = ((r"^    if \(tid == 0\) b\w+<0>", r"<0>", "§6's exercise 2 asks which step it is and where it goes",
                 "unmarked"),
                (r"^      asm volatile\(\"ld", r"\"memory\"", "ld.shared: v = chunk phys of the stage"),
                (r"^      asm volatile\(\"st", r"\"memory\"", "st.shared: chunk q of out_buf = v"))


def _pipeline_classes() -> dict:
    return {c.key: c.model.split(":", 1)[1] for c in zoo.CLASSES if c.model.startswith("pipeline:")}


def mystery_diagnosis():
    """The ring model's diagnosis of the hidden class on :data:`asynctc.pitfalls.diagnosis.SCHEDULE`."""
    return _d.pipeline_diagnosis(_pipeline_classes()[_MYSTERY]).detail


def _state(deadlock) -> dict:
    """What a stuck barrier holds, read off a Deadlock: arrivals still missing, bytes still due."""
    arr = re.search(r"(\d+) of its (\d+) arrivals never come", deadlock.why)
    tx = re.search(r"tx-count (\d+) bytes", deadlock.why)
    phase = re.search(r"is in phase (\d+)", deadlock.why)
    return {"missing": int(arr.group(1)) if arr else 0, "bytes": int(tx.group(1)) if tx else 0,
            "phase": int(phase.group(1)) if phase else None}


def _run(deadlock):
    """The ring-model run behind one of the pipeline classes' Deadlocks (None for another one)."""
    for proto in _pipeline_classes().values():
        run = M.simulate(**_d.SCHEDULE, protocol=proto)
        if run.diagnosis == deadlock:
            return run
    return None


def symptom(deadlock) -> str:
    """A Deadlock on a full barrier as a kernel's own trace would show it: who timed out where, what
    reached the barrier before (the producer's arrival with the bytes it announced, the boxes loaded
    into its stage), and none of the model's explanation or the barrier's internal counters. The
    learner must check the parity (f = k / S, f mod 2) and add up the boxes' bytes to find the cause."""
    bar = f"{deadlock.barrier}[{deadlock.stage}]"
    who = ", ".join(deadlock.waiting)
    lines = [f"timed out: {who} on {bar} at k-tile {deadlock.iteration}, waiting on parity {deadlock.parity}"]
    run = _run(deadlock)
    if deadlock.barrier != "full" or run is None:
        st = _state(deadlock)
        return "\n".join(lines + [f"{bar} then: phase {st['phase']}, arrivals still missing {st['missing']}"])
    st = _state(deadlock)
    arrived = 1 - st["missing"]
    t = run.tile
    announced = t.stage_bytes + st["bytes"]
    lines.append(f"{bar}: init count 1, {st['phase']} phases completed. Before the timeout:")
    if arrived:
        lines.append(f"  {arrived} arrival, from the producer, announcing {announced} bytes")
    dt = {1: "fp8", 2: "fp16", 4: "fp32"}.get(t.elem_bytes, f"{t.elem_bytes}-byte")
    lines += [f"  k-tile {sp.k}'s loads into stage {sp.stage}: an A box {t.bm}×{t.bk} and a B box "
              f"{t.bn}×{t.bk}, {dt}, both complete"
              for sp in run.spans if sp.kind == "tma" and sp.stage == deadlock.stage]
    return "\n".join(lines)


def mystery_symptom() -> str:
    """What the name-the-bug exercise shows the learner: :func:`symptom` of :func:`mystery_diagnosis`."""
    return symptom(mystery_diagnosis())


def _name_hint(answer, diagnosis=None):
    """A wrong class's hint, read off this run's symptom (never another barrier's run)."""
    diagnosis = mystery_diagnosis() if diagnosis is None else diagnosis
    protos = _pipeline_classes()
    if answer not in protos:
        return ("that class is not a ring-protocol error: the ring model diagnoses only "
                f"{', '.join(sorted(protos))}")
    bar = f"{diagnosis.barrier}[{diagnosis.stage}]"
    k = diagnosis.iteration
    right = (M.kernel_full_parity(k, _d.SCHEDULE["stages"]) if diagnosis.barrier == "full"
             else M.kernel_empty_parity(k, _d.SCHEDULE["stages"]))
    if answer == "phase_parity" and diagnosis.parity == right:
        f = k // _d.SCHEDULE["stages"]
        return (f"parity {diagnosis.parity} is what the kernel's formula gives for k-tile {k} on "
                f"{bar} (fill f = {k} / {_d.SCHEDULE['stages']} = {f}, f mod 2 = {f % 2}): the wait names the right phase, and that phase never completed. What else "
                "must a phase get before it completes?")
    if answer == "arrive_count" and _state(diagnosis)["missing"] == 0:
        return (f"every arrival {bar}'s init count asks for came. What else must a phase get "
                "before it completes?")
    return ("a full barrier's phase completes when its arrivals came and its tx-count reached 0: add up "
            "the bytes the two boxes deliver and compare them with what the producer announced")


@_ex.exercise("ch08.name_bug", "Which zoo class (a key of asynctc.pitfalls.zoo.BY_KEY) ends in this "
              "Deadlock (`diagnosis`, default the hang 08 §6 shows: mystery_diagnosis())? The check runs "
              "the ring model for each class.", choices=tuple(zoo.BY_KEY),
              hint=_name_hint, offered=tuple(_pipeline_classes()))
def _name_bug(diagnosis=None) -> str:
    diagnosis = mystery_diagnosis() if diagnosis is None else diagnosis   # newcomer 56: no name to define first
    hits = [k for k, p in _pipeline_classes().items() if _d.pipeline_diagnosis(p).detail == diagnosis]
    if len(hits) != 1:
        raise ValueError(f"the diagnosis matches {len(hits)} classes: {hits}")
    return hits[0]


def _is_insertion(program, broken) -> bool:
    it = iter(ordering._steps(program))
    return all(any(s == t for t in it) for s in ordering._steps(broken))


def _judge_repair(answer, rule: str):
    """Run the learner's program (``answer``: a list of ``(op, arg)`` steps) through
    :func:`ordering.check`: None when it finds no hazard, else the first hazard as the hint (its
    step, op and why). Raises :class:`~asynctc.core.exercises.NotAnswered` for the broken program
    unchanged."""
    if rule not in ordering.PROGRAMS:
        return f"rule={rule!r} is not a rule of the ordering checker: one of {sorted(ordering.PROGRAMS)}"
    broken = ordering.PROGRAMS[rule]["broken"]
    if isinstance(answer, (str, bytes, dict)) or not hasattr(answer, "__iter__"):
        return (f"pass your program, a list of (op, arg) steps (got {type(answer).__name__}): "
                f"check('ch08.repair', program, rule={rule!r})")
    try:
        steps = ordering._steps(list(answer))
    except ValueError as e:             # a malformed step: the checker's sentence names the form
        return str(e)
    if steps == ordering._steps(broken):
        raise _ex.NotAnswered("the program is still the broken one: insert the missing step "
                              "(program.insert(index, (op, arg))), then run the cell again")
    if not _is_insertion(steps, broken):
        return ("keep every step of the broken program, in order: a repair inserts steps; it does "
                "not delete or move the work")
    hz = ordering.check(steps)
    if hz:
        head = f"step {hz[0].step} {hz[0].op}: {hz[0].why}"
        symptom, cut, fix = head.partition(_WHO_WAITS)
        if cut:                       # the checker's sentence names the fix: held for a second miss
            return _ex.tiered(symptom + ".", " Which thread can wait for its store's reads, and which "
                              "step lets the other threads write the buffer?", " The" + cut[len(": the"):] + fix + ".")
        return head + _repair_place(steps, rule, hz[0].why)
    added, fewest = len(steps) - len(broken), _fewest_steps(rule)
    if fewest is not None and added > fewest:
        return (f"ordering.check finds no hazard, but you inserted {added} steps and "
                f"{fewest} {'is' if fewest == 1 else 'are'} enough: keep only the "
                f"step{'s' * (fewest != 1)} that fix{'es' * (fewest == 1)} the hazard (remove one "
                "of yours and check again)")
    return _ex.Accepted(STORE_NOTE) if rule == "store" else None


#: Where :func:`asynctc.models.ordering.check`'s store hazard turns from what went wrong to the fix.
_WHO_WAITS = ": the thread that issued the store must wait"


def _inserted(steps: list, broken: list) -> list[int]:
    """Indices of ``steps`` (an insertion into ``broken``, :func:`_is_insertion`) that are new."""
    out, k = [], 0
    for i, st in enumerate(steps):
        if k < len(broken) and st == broken[k]:
            k += 1
        else:
            out.append(i)
    return out


def _repair_place(steps: list, rule: str, why: str = "") -> str:
    """What the hazard alone does not say about an inserted step: the right place with the wrong
    argument (the same op there with the correct program's argument passes), or a wait placed
    before the commit it should count, or after the barrier or the rewrite it should precede.
    Empty otherwise (and where the hazard already names the barrier)."""
    correct = ordering._steps(ordering.PROGRAMS[rule]["correct"])
    for i in _inserted(steps, ordering._steps(ordering.PROGRAMS[rule]["broken"])):
        op, arg = steps[i]
        for want in sorted({a for o, a in correct if o == op and a != arg}, key=repr):
            if not ordering.check(steps[:i] + [(op, want)] + steps[i + 1:]):
                return (f". Step {i} ({op}) is in the right place; its argument {arg!r} is not"
                        + (": how many of the store's groups may still read the buffer when it "
                           "is written again?" if op == "bulk_wait_read" else "."))
        if op != "bulk_wait_read" or "barrier" in why:
            continue
        at = {o: [j for j, (oo, _) in enumerate(steps) if oo == o] for o in ("bulk_commit", "sync", "st")}
        commit = at["bulk_commit"][0] if at["bulk_commit"] else None
        if commit is not None and i < commit:
            return (f". Step {i} waits before the commit (step {commit}): wait_group.read counts "
                    "committed groups, and the store's is not closed yet.")
        later = [j for j in at["st"] if commit is not None and commit < j < i]
        if later:
            return f". Step {i} waits after the buffer is written again (step {later[0]}): too late."
        bar = [j for j in at["sync"] if commit is not None and commit < j < i]
        if bar:
            return (f". Step {i} waits after the barrier at step {bar[0]}, which already let the "
                    "other threads on to write the buffer.")
    return ""


#: The store repair's pass note: 08 shows the kernel's fix (BUG=8's diff) in another place.
STORE_NOTE = ("in this program, only straight after the commit works. The kernel has a second "
              "right place, the next tile's top (BUG=8's diff): both come before the barrier after which "
              "the threads write the buffer again; after that barrier is wrong.")


def _fewest_steps(rule: str) -> int | None:
    """How many steps the rule's correct program inserts into its broken one (None when the correct
    program is not an insertion: the leader repair moves a step)."""
    p = ordering.PROGRAMS[rule]
    correct, broken = ordering._steps(p["correct"]), ordering._steps(p["broken"])
    return len(correct) - len(broken) if _is_insertion(correct, broken) else None


@_ex.code_exercise("ch08.repair", "Insert the fewest steps (one, for rule='store') into "
                   "ordering.PROGRAMS[rule]['broken'] (keep its steps, in order) so that "
                   "ordering.check finds no hazard, and pass your program: "
                   "check('ch08.repair', program, rule=...).", judge=_judge_repair)
def _repair(rule: str) -> list:
    if rule not in ordering.PROGRAMS:
        raise ValueError(f"rule={rule!r}: must be one of {sorted(ordering.PROGRAMS)}")
    return list(ordering.PROGRAMS[rule]["correct"])


def _misplaced_hint(answer, base_offset, reader_swizzle=128):
    a = tuple(answer)
    if base_offset and a != (0, 0):
        return "row 0 is shifted too: the pattern follows the absolute address, not the tile's"
    if not base_offset and a == (0, 0):
        return "row 0 XORs its chunk index with 0 under the 128B swizzle: it lands where an unswizzled reader looks"
    if reader_swizzle == 64 and not base_offset and len(a) == 2 and a[0] in (1, 2, 3):
        return ("the 64B swizzle XORs the chunk's two low bits with row % 4, the 128B one its three "
                "low bits with row % 8: for rows 0–3 the two agree — find the first row where they part")
    return None


@_ex.exercise("ch08.first_misplaced", "A 64 × 64 fp16 box lands with the 128B swizzle in a tile that "
              "starts `base_offset` bytes past a 1024 B boundary; the reader assumes `reader_swizzle` "
              "relative to the tile. Which (row, col) is the first (row-major) it reads from the wrong "
              "place?", hint=_misplaced_hint)
def _first_misplaced(base_offset: int, reader_swizzle: int = 128) -> list:
    m = _d.layout_mismatch(128, reader_swizzle, base_offset)
    if m is None:
        raise ValueError("every element is in place for these arguments: nothing to find")
    return [m["row"], m["col"]]
