"""The ordering rules chapter 05's ring model does not cover: proxies, bulk groups, wgmma groups,
warp leaders and mbarrier initialisation, as a checker over a short program (pure Python, no GPU).
Chapter 08 teaches it (``asynctc.pitfalls.ordering`` is this module); chapter 06's consumer-loop
exercise runs its wgmma rule on the program read out of the learner's loop; chapter 09's MMA-thread
exercise runs :func:`check_mma_thread` (the full-barrier wait, its parity, the tcgen05 fence).

A *program* is a list of steps ``(op, arg)`` in the order they happen (across threads, once the
synchronisation before them holds). :func:`check` walks it and returns a :class:`Hazard` for every
rule it breaks — never "probably fine": a program with no hazard follows every rule below.

Ops: :data:`OP_FORMS` gives each op's argument and meaning; :func:`describe_ops` prints them as
the steps to write (``("st", "buf")``, ``("bulk_wait_read", N)``, ``("sync", None)`` …). A step
whose argument is missing, of the wrong kind, or given to an op that takes none is refused with the
form to write.

Rules (PTX ISA sections):

* init — a barrier may be used by others only after ``init``, ``fence_init`` and ``sync`` in that
  order ("mbarrier.init"; "membar/fence": fence.mbarrier_init).
* proxy — a TMA store (async proxy) of a buffer written by ``st`` (generic proxy) needs a
  ``fence_proxy`` after the last write and a ``sync`` after the fence ("Memory consistency model:
  proxies"; fence.proxy.async).
* store — writing a buffer that a committed TMA store still reads needs ``bulk_wait_read N`` with
  N ≤ the groups committed after that store's group ("cp.async.bulk.wait_group").
* wgmma — arriving on empty[s] needs the wgmma group reading stage s retired by ``wgmma_wait N``
  ("wgmma.wait_group": N ≤ the groups committed after it).
* leader — an elected lane's ``arrive`` for a warp needs every lane's ``ld`` of that stage before it,
  with a ``syncwarp`` between ("bar.warp.sync"; the arrive has release semantics only for the
  arriving thread).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

#: Every op: (its argument as the step writes it, or None for no argument; the instruction it stands
#: for — its name only, so that the list does not answer an exercise; the glossary and the module
#: docstring give the rules).
#: An argument in quotes is a name (any string or int naming a barrier, buffer or stage); N is an int.
OP_FORMS = {
    "init": ('"b"', 'mbarrier.init of barrier "b"'),
    "fence_init": (None, "fence.mbarrier_init"),
    "sync": (None, "__syncthreads, or a named barrier over the threads involved"),
    "use": ('"b"', 'another thread, or TMA\'s complete_tx, uses barrier "b"'),
    "st": ('"buf"', 'st.shared / stmatrix into buffer "buf"'),
    "fence_proxy": (None, "fence.proxy.async.shared::cta, by each writer"),
    "tma_store": ('"buf"', 'a TMA store (cp.async.bulk.tensor) from buffer "buf"'),
    "bulk_commit": (None, "cp.async.bulk.commit_group"),
    "bulk_wait_read": ("N", "cp.async.bulk.wait_group.read N"),
    "wgmma": ("s", "a wgmma reading stage s"),
    "wgmma_commit": (None, "wgmma.commit_group"),
    "wgmma_wait": ("N", "wgmma.wait_group N"),
    "ld": ("s", "each lane of a warp reads stage s"),
    "syncwarp": (None, "__syncwarp"),
    "arrive": ("s", "the elected lane's mbarrier.arrive on empty[s]"),
}
OPS = tuple(OP_FORMS)
_INT_ARG = ("bulk_wait_read", "wgmma_wait")
_EXAMPLE = {'"b"': '"full0"', '"buf"': '"out"', "s": "0", "N": "0"}


def form(op: str) -> str:
    """The step as a program writes it, e.g. ``("bulk_wait_read", N)`` or ``("sync", None)``."""
    arg = OP_FORMS[op][0]
    return f'("{op}", {arg if arg is not None else "None"})'


def describe_ops() -> str:
    """One line per op: the step as you write it, and what it stands for."""
    w = max(len(form(op)) for op in OPS)
    return "\n".join(f"{form(op):{w}s}  {OP_FORMS[op][1]}" for op in OPS) + (
        '\n"b", "buf": a barrier\'s or a buffer\'s name (any string); s: a stage number; N: an int, '
        'the groups that may stay pending (0: none)')


class Hazard(NamedTuple):
    """A broken rule: ``step`` (index into the program), ``op``, ``rule`` (init, proxy, store,
    wgmma, leader), ``why`` in words."""
    step: int
    op: str
    rule: str
    why: str


def _steps(program: Sequence) -> list[tuple[str, object]]:
    out = []
    for i, st in enumerate(program):
        if isinstance(st, str):
            st = (st, None)
        if not isinstance(st, (tuple, list)) or len(st) != 2 or st[0] not in OPS:
            raise ValueError(f"program[{i}]={st!r}: must be (op, arg) with op one of {OPS} "
                             "(ordering.describe_ops() shows each op with its argument)")
        op, a = st
        arg = OP_FORMS[op][0]
        example = f'("{op}", {_EXAMPLE[arg]})' if arg is not None else None
        if op in _INT_ARG and (isinstance(a, bool) or not isinstance(a, int)):
            raise ValueError(f"step {i}: ({op!r}, {a!r}): {op} takes N, the groups that may stay "
                             f"pending (an int; 0 waits for all): write it as {form(op)}, "
                             f"e.g. {example}")
        if arg is not None and a is None:
            raise ValueError(f"step {i}: ({op!r}, None): {op} needs its argument ({arg}): write it "
                             f"as {form(op)}, e.g. {example}")
        if arg is None and a is not None:
            raise ValueError(f"step {i}: ({op!r}, {a!r}): {op} takes no argument: write it as {form(op)}")
        out.append((op, a))
    return out


def check(program: Sequence) -> list[Hazard]:
    """The hazards of ``program`` (see the module docstring), in program order; [] if none.
    Raises ValueError naming the step for a malformed step."""
    steps = _steps(program)
    hz: list[Hazard] = []
    init_state: dict = {}            # barrier -> "init" | "fenced" | "ready"
    written: dict = {}               # buffer -> "dirty" | "fenced" | "published"
    groups: list = []                # committed bulk groups: list of sets of buffers read
    open_group: set = set()
    wg_groups: list = []             # committed wgmma groups: list of sets of stages read
    wg_open: set = set()
    lanes_read: dict = {}            # stage -> "read" | "synced"
    released: dict = {}              # buffer -> step of the barrier that let other threads on
    #                                  while a TMA store of it was still pending
    for i, (op, a) in enumerate(steps):
        if op == "init":
            init_state[a] = "init"
        elif op == "fence_init":
            for b, s in init_state.items():
                if s == "init":
                    init_state[b] = "fenced"
        elif op == "sync":
            for g in groups:                 # other threads pass this barrier with these pending
                for b in g:
                    released.setdefault(b, i)
            for b, s in init_state.items():
                if s == "fenced":
                    init_state[b] = "ready"
            for b, s in written.items():
                if s == "fenced":
                    written[b] = "published"
        elif op == "use":
            s = init_state.get(a)
            if s != "ready":
                need = {None: "an mbarrier.init", "init": "fence.mbarrier_init and a CTA barrier",
                        "fenced": "a CTA barrier"}[s]
                hz.append(Hazard(i, op, "init", f"barrier {a!r} used before {need} after its init: "
                                                f"another thread or the async proxy may see it uninitialised"))
        elif op == "st":
            pending = [j for j, g in enumerate(groups) if a in g]
            if pending:
                hz.append(Hazard(i, op, "store", f"buffer {a!r} rewritten while the TMA store of bulk "
                                                 f"group {pending[-1]} may still read it (no "
                                                 f"cp.async.bulk.wait_group.read covers that group)"))
            elif a in released:
                hz.append(Hazard(i, op, "store", f"buffer {a!r} rewritten after the barrier at step "
                                                 f"{released[a]}, which let the other threads on while "
                                                 f"its TMA store was still pending: the thread that "
                                                 f"issued the store must wait (wait_group.read) before "
                                                 f"that barrier, not after it"))
            written[a] = "dirty"
        elif op == "fence_proxy":
            for b, s in written.items():
                if s == "dirty":
                    written[b] = "fenced"
        elif op == "tma_store":
            s = written.get(a)
            if s in ("dirty", "fenced"):
                need = ("fence.proxy.async after the generic writes" if s == "dirty"
                        else "a barrier after the writers' proxy fence")
                hz.append(Hazard(i, op, "proxy", f"TMA store reads buffer {a!r} without {need}: "
                                                 f"the async proxy may read stale shared memory"))
            open_group.add(a)
        elif op == "bulk_commit":
            groups.append(set(open_group))
            open_group = set()
        elif op == "bulk_wait_read":
            n = int(a)
            groups = groups[len(groups) - n:] if n else []
        elif op == "wgmma":
            wg_open.add(a)
        elif op == "wgmma_commit":
            wg_groups.append(set(wg_open))
            wg_open = set()
        elif op == "wgmma_wait":
            n = int(a)
            wg_groups = wg_groups[len(wg_groups) - n:] if n else []
        elif op == "ld":
            lanes_read[a] = "read"
        elif op == "syncwarp":
            for s in lanes_read:
                lanes_read[s] = "synced"
        elif op == "arrive":
            if a in wg_open or any(a in g for g in wg_groups):
                hz.append(Hazard(i, op, "wgmma", f"empty[{a}] released while a wgmma group reading "
                                                 f"stage {a} is still in flight (no wgmma.wait_group retired it)"))
            s = lanes_read.pop(a, None)
            if s == "read":
                hz.append(Hazard(i, op, "leader", f"the elected lane releases stage {a} with no "
                                                  f"__syncwarp after its warp's reads: other lanes may still read it"))
            elif s is None and any(o == "ld" and x == a for o, x in steps[i + 1:]):
                hz.append(Hazard(i, op, "leader", f"stage {a} released before its warp read it"))
    return hz


#: Each rule's programs: the correct one and the broken one (the zoo's variant in miniature).
PROGRAMS = {
    "init": {
        "correct": [("init", "full0"), ("fence_init", None), ("sync", None), ("use", "full0")],
        "broken": [("init", "full0"), ("use", "full0")],
    },
    "proxy": {
        "correct": [("st", "out"), ("fence_proxy", None), ("sync", None), ("tma_store", "out"),
                    ("bulk_commit", None)],
        "broken": [("st", "out"), ("sync", None), ("tma_store", "out"), ("bulk_commit", None)],
    },
    "store": {
        "correct": [("st", "out"), ("fence_proxy", None), ("sync", None), ("tma_store", "out"),
                    ("bulk_commit", None), ("bulk_wait_read", 0), ("sync", None), ("st", "out")],
        "broken": [("st", "out"), ("fence_proxy", None), ("sync", None), ("tma_store", "out"),
                   ("bulk_commit", None), ("sync", None), ("st", "out")],
    },
    "wgmma": {
        "correct": [("wgmma", 0), ("wgmma_commit", None), ("wgmma", 1), ("wgmma_commit", None),
                    ("wgmma_wait", 1), ("arrive", 0)],
        "broken": [("wgmma", 0), ("wgmma_commit", None), ("wgmma", 1), ("wgmma_commit", None),
                   ("arrive", 0)],
    },
    "leader": {
        "correct": [("ld", 0), ("syncwarp", None), ("arrive", 0)],
        "broken": [("arrive", 0), ("ld", 0)],
    },
}


# --------------------------------------------------------------------------------------------------
# The MMA thread's rules on Blackwell (chapter 09's exercise): its own small program of tcgen05 steps
# --------------------------------------------------------------------------------------------------

#: The MMA-issuing thread's ops (``check_mma_thread``): the step as written, and what it stands for.
TC_OP_FORMS = {
    "wait": ('("full[s]", parity)', "mbarrier.try_wait.parity: returns once the phase of that parity completed"),
    "fence_after": (None, "tcgen05.fence::after_thread_sync"),
    "mma": ("s", "tcgen05.mma reading stage s"),
    "commit": ('"b"', "tcgen05.commit: one arrive on barrier b once this thread's earlier MMAs completed"),
}


def check_mma_thread(program: Sequence) -> list[Hazard]:
    """The hazards of one MMA-issuing thread's ``program`` (steps of :data:`TC_OP_FORMS`, in issue
    order, over the whole k-loop), rule ``tcgen05``. Stage s is at fill r once r commits to
    ``empty[s]`` were issued; the producer's TMA completes phase r of ``full[s]`` with fill r, so:

    * a ``tcgen05.mma`` reading stage s needs, in this fill, a wait on ``full[s]`` with parity
      ``r & 1`` (mbarrier.try_wait.parity returns once the phase of that parity completed: the other
      parity names the fill before, which has completed, or after, which needs this stage back);
    * and a ``tcgen05.fence::after_thread_sync`` after that wait, before the MMA (PTX ISA
      "tcgen05 memory consistency model": the wait orders this thread's ordinary operations, not
      its asynchronous tcgen05 ones);
    * a commit goes to ``empty[s]`` of the stage its MMAs read, after them (rule of the exercise's
      judge; here: an MMA after its stage's commit reads a stage already handed back).
    """
    hz: list[Hazard] = []
    rounds: dict = {}                # stage -> commits to empty[s] so far: the fill it is at
    waited: dict = {}                # stage -> "waited" | "fenced" (this fill)
    for i, st in enumerate(program):
        if not isinstance(st, (tuple, list)) or len(st) != 2 or st[0] not in TC_OP_FORMS:
            raise ValueError(f"program[{i}]={st!r}: must be (op, arg) with op one of {tuple(TC_OP_FORMS)}")
        op, a = st
        if op == "wait":
            bar, parity = a
            if str(bar).startswith("full["):
                s = int(str(bar)[5:-1])
                r = rounds.get(s, 0)
                if parity != r & 1:
                    hz.append(Hazard(i, op, "tcgen05", f"the wait on full[{s}] names parity {parity}: at "
                                     f"fill {r} of stage {s} the TMA completes a phase of parity {r & 1}"))
                else:
                    waited[s] = "waited"
        elif op == "fence_after":
            for s in waited:
                waited[s] = "fenced"
        elif op == "mma":
            w = waited.get(a)
            if w is None:
                hz.append(Hazard(i, op, "tcgen05", f"tcgen05.mma reads stage {a} with no wait on "
                                 f"full[{a}] (of the right parity) for this fill: TMA may not have filled it"))
            elif w == "waited":
                hz.append(Hazard(i, op, "tcgen05", f"tcgen05.mma reads stage {a} with no "
                                 f"tcgen05.fence::after_thread_sync after the wait on full[{a}]"))
        elif op == "commit" and str(a).startswith("empty["):
            s = int(str(a)[6:-1])
            rounds[s] = rounds.get(s, 0) + 1
            waited.pop(s, None)
    return hz
