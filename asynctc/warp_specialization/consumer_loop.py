"""Deep dive 06e's code exercise ``ch06.consumer_loop``: the learner writes, as CUDA C++ in a Python
string, the body of the consumer warpgroups' k-loop of rung 3 (``kernels/warp_specialization.cu``,
the loop ``for (int k = 0; k < T; ++k, ++ring) { … }`` of the consumer branch). No GPU is needed.

The check, in order:

1. **compile** — :func:`splice` puts the text in place of the loop's body in the kernel's source
   (under ``#line 1 "your loop"``, so that NVRTC names the learner's lines) and
   :func:`compile_loop` compiles it for rung 3 through :func:`asynctc.core.runtime.compile_kernel`
   (NVRTC → cubin, sm_90a, cached on disk). A compile error is the hint: NVRTC's message with the
   line of the learner's text. The kernel file is never changed: every other build keeps its cubin.
2. **read** — :mod:`.loop_reader` runs the text as one thread of each consumer warpgroup (the
   elected thread and another) for two tiles of :data:`K_TILES` k-tiles on rung 3's ring, giving
   each k-tile's events (a wait on full[s] with a parity, the wgmmas on a stage and their commit,
   ``wgmma_wait_group<N>``, an arrive on empty[s]).
3. **judge** — the events against the course's models: the ring position, the stage the wgmmas
   read and the barrier they wait on as plain rules; a wrong parity through chapter 05's ring
   model (:func:`asynctc.models.pipeline.simulate` with the learner's parities: its Race or
   Deadlock); a release before the wgmma group that reads the stage has retired through the
   ordering checker's wgmma rule (:func:`asynctc.models.ordering.check` on the program read from
   the loop); each fill released exactly once by each warpgroup, in time for the producer's refill;
   every thread but the release doing the same (``.sync.aligned`` instructions, the wait as each
   thread's acquire).
4. **notes** on a right loop, two short sentences: the verdict, with a clause for
   ``wgmma_wait_group<0>`` (right, not the fastest form: chapter 06 §1 says why after its capstone)
   and for ``fence_accumulators`` left out; then the SASS of the learner's build beside the
   kernel's own (:func:`sass_difference`).

:func:`kernel_body` is the kernel's own loop body as chapter 06 shows it after the exercise.
"""

from __future__ import annotations

import difflib
import functools
import re
import warnings
from typing import NamedTuple

from ..core import exercises as _ex
from ..core import notebook, runtime, sass
from ..models import ordering
from ..models import pipeline as _mp
from ..core import loop_reader as _lr
from .ladder import RUNG_BY_NAME
from .launch import ENTRY, SOURCE, compile_ws

#: The build the exercise splices into: rung 3 (two consumers, setmaxnreg), fp16.
RUNG, DTYPE = "ws_setmaxnreg", "float16"
#: k-tiles per tile and tiles the reader runs the loop for (two tiles: the ring carries across).
K_TILES, TILES = 6, 2
#: What NVRTC calls the learner's text in its messages.
FILE_NAME = "your loop"

#: §1's listing of rung 3's roles (:func:`asynctc.core.notebook.source_excerpt` start, end).
LISTING = (r"^  if \(wg == 0\) \{", r"^        finish\(acc\);")
#: The consumer loop's body in that listing, as an ``omit`` range (first line, last line, note):
#: left out of the listing until the exercise is answered. No pattern names a barrier.
LOOP_LINES = (r"^        if \(!broken &&", r"^        pos\.advance\(\);", "the exercise")
#: The producer's k-tile in that listing (its wait on empty, with ``pos.phase ^ 1u``, and its load):
#: chapter 05's exercise 2 and the producer half of 06's capstone, so the listing always leaves it
#: out (06 §4 shows it once the capstone passes). :data:`LISTING_OMIT` leaves out both.
PRODUCER_LINES = (r"^          if \(!empty\.wait", r"^          pos\.advance\(\);",
                  "the producer's k-tile: 05's exercise 2, 06's capstone")
LISTING_OMIT = (PRODUCER_LINES, LOOP_LINES)

_CODE = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)

#: The names the loop body needs, all in scope at the loop (the exercise's prompt lists them): an
#: undefined identifier is answered with the nearest of these (:func:`compile_hint`).
IN_SCOPE = ("full.wait", "empty", "empty.arrive", "prev", "elected", "pos.stage", "pos.phase",
            "pos.advance", "k", "wg", "acc", "da0", "db0", "kStageBytes", "broken", "mma_ktile",
            "wgmma_desc_advance", "wgmma_wait_group", "fence_accumulators")


def config():
    """Rung 3's :class:`~asynctc.warp_specialization.WSConfig` (fp16), the build the loop goes into."""
    return RUNG_BY_NAME[RUNG].make(DTYPE)


def reference() -> runtime.CompiledKernel:
    """The kernel's own rung-3 build (cached)."""
    return compile_ws(config())


def kernel_body() -> str:
    """The kernel's own loop body, resolved for rung 3 as §1's listing shows it (the lines
    :data:`LOOP_LINES` leaves out), dedented."""
    return notebook.source_excerpt(reference(), *LISTING, variant=True, omit=LOOP_LINES, left_out=True)


@functools.lru_cache(maxsize=1)
def _source_parts(text: str) -> tuple[str, str, int]:
    """(the source up to the consumer loop's body, the source from its closing brace on, the
    1-based line of that brace)."""
    lines = text.splitlines(keepends=True)
    head = [n for n, ln in enumerate(lines) if ln.rstrip() == "      for (int k = 0; k < T; ++k, ++ring) {"]
    if len(head) != 1 or not lines[head[0] + 1].startswith("#endif"):
        raise RuntimeError(f"{SOURCE}: the consumer's k-loop header is not where the exercise expects it")
    b0 = head[0] + 2
    b1 = next(n for n in range(b0, len(lines)) if lines[n].rstrip() == "      }")
    return "".join(lines[:b0]), "".join(lines[b1:]), b1 + 1


def splice(body: str) -> str:
    """The kernel's source with ``body`` in place of the consumer k-loop's body; NVRTC counts the
    body's lines from 1 in a file it calls :data:`FILE_NAME`, and the kernel's own lines as before."""
    before, after, brace = _source_parts(runtime.kernel_path(SOURCE).read_text())
    return _ex.spliced_source(before, body, after, FILE_NAME, SOURCE, brace)


def compile_loop(body: str) -> tuple[runtime.CompiledKernel, list[str]]:
    """Compile rung 3 with ``body`` as the consumer loop's body: (the kernel, ptxas's performance
    diagnostics for it). Raises :class:`~asynctc.core.runtime.CompileError` (NVRTC's log)."""
    cfg = config()
    cfg.validate()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ck = runtime.compile_kernel(SOURCE, ENTRY, "sm_90a", defines=cfg.defines, code=splice(body))
    return ck, [str(w.message) for w in caught if issubclass(w.category, runtime.PerformanceWarning)]


def nearest_names(name: str, n: int = 3) -> list[str]:
    """The names of :data:`IN_SCOPE` closest to ``name`` (case and underscores ignored)."""
    def norm(x):
        return x.lower().replace("_", "")
    by_norm = {norm(x): x for x in IN_SCOPE}
    return [by_norm[m] for m in difflib.get_close_matches(norm(name), list(by_norm), n=n, cutoff=0.6)]


def _undefined_note(msg: str) -> str:
    """For NVRTC's 'identifier "X" is undefined': the in-scope names nearest X (or all of them)."""
    m = re.fullmatch(r'identifier "(\w+)" is undefined', msg)
    if not m:
        return ""
    near = nearest_names(m.group(1))
    if near:
        return f" (in scope and close: {', '.join(near)})"
    return f" (the names in scope: {', '.join(IN_SCOPE)})"


def compile_hint(log: str, body: str, limit: int = 2) -> str:
    """NVRTC's first errors, each with the line of the learner's text it names; an undefined
    identifier also gets the in-scope names nearest it (:func:`nearest_names`)."""
    brace = _source_parts(runtime.kernel_path(SOURCE).read_text())[2]

    def elsewhere(where, n, msg, rest):
        if where.endswith(SOURCE) and n == brace:
            return f"after your last line: {msg} (a missing ';' or '}}'?)"
        at = re.search(rf'line (\d+) of "{re.escape(FILE_NAME)}"', rest[:600])
        return f"line {at.group(1)}: {msg}" if at else f"{where.rsplit('/', 1)[-1]}({n}): {msg}"
    errors = _ex.nvrtc_errors(log, body, FILE_NAME, elsewhere, limit=limit, note=_undefined_note)
    return "NVRTC cannot compile your loop — " + errors


#: How a build differs from the kernel's own (:func:`asynctc.core.sass.difference`).
SassDifference = sass.Difference


def sass_difference(cubin: bytes) -> SassDifference:
    """How ``cubin``'s kernel differs from the kernel's own rung-3 build (the build the ladder
    times): instructions only one build has, and how many of the shared ones ptxas placed elsewhere."""
    return sass.difference(sass.disassemble(reference().cubin), sass.disassemble(cubin))


# ---- judging the protocol -------------------------------------------------------------------------

def _fill(i: int) -> str:
    return f"k-tile {i % K_TILES} of tile {i // K_TILES}" if i >= K_TILES else f"k-tile {i}"


def _deadlock_text(d) -> str:
    if isinstance(d, _mp.Race):
        return f"a race at k-tile {d.iteration}: {d.what}"
    return f"a deadlock at k-tile {d.iteration}: {d.why}"


def _elected_hint(stages: int, consumers: int) -> str:
    bar = _mp.Mbarrier(consumers, "empty[s]")
    done = sum(bar.arrive() for _ in range(_mp.WARPGROUP))
    return (f"every thread of the warpgroup releases: {_mp.WARPGROUP} arrivals per warpgroup on "
            f"empty[s], which counts {consumers} (one per consumer warpgroup). In chapter 05's "
            f"mbarrier model one warpgroup's arrivals complete {done} phases of it, not half of one: "
            "the phases no longer follow the fills, so the producer refills a stage the other "
            "warpgroup may still read, or waits for a parity that already went by. Guard the "
            "release with `elected` (one thread per warpgroup)")


def _model_parity_hint(waits: dict[int, int], stages: int, consumers: int) -> str | None:
    """Chapter 05's ring model run with the learner's parities on full (ring counter → parity):
    its diagnosis, or None when it finds none."""
    n = len(waits)
    run = _mp.simulate(stages, 1, consumers, n,
                       parities=(lambda k, S: waits.get(k, _mp.kernel_full_parity(k, S)), _mp.kernel_empty_parity))
    return _deadlock_text(run.diagnosis) if run.diagnosis is not None else None


def _mma(it: _lr.Iteration):
    return [e for e in it.events if e.kind == "mma"]


def _iteration_hint(it: _lr.Iteration, prev_it, stages: int, stage_bytes: int, consumers: int,
                    waits: dict[int, int], who: str) -> str | None:
    """The first rule iteration ``it`` (not a tail) breaks, or None."""
    i, k = it.i, it.k
    here = f"{who}at {_fill(i)}"
    expect_stage, expect_parity = i % stages, (i // stages) % 2
    mmas = _mma(it)
    if not mmas:
        return (f"{here} your loop issues no wgmmas: call mma_ktile(acc, …) once per k-tile (not "
                "under a condition that can be false)")
    if len(mmas) > 1:
        return f"{here} your loop issues the k-tile's wgmmas {len(mmas)} times: one mma_ktile per k-tile"
    mma = mmas[0]
    if (mma.a[0], mma.b[0]) != ("da0", "db0"):
        return (f"{here} mma_ktile gets {mma.a[0]} and {mma.b[0]}: A's descriptor (from da0) comes "
                "first, then B's (from db0)")
    if mma.a[1] != mma.b[1]:
        return (f"{here} A's descriptor is advanced by {mma.a[1]} bytes and B's by {mma.b[1]}: both "
                "operands of a k-tile are in the same stage")
    off = mma.a[1]
    if off % stage_bytes or not 0 <= off // stage_bytes < stages:
        return (f"{here} the descriptors are advanced by {off} bytes; stage s starts s × kStageBytes "
                f"bytes after stage 0 (s = 0..{stages - 1})")
    stage = off // stage_bytes
    if stage != expect_stage:
        if prev_it is not None and it.pos == prev_it.pos:
            return (f"{here} the ring has not moved since the k-tile before: pos.advance() is missing "
                    f"(the producer filled stage {expect_stage} with this k-tile)")
        if it.pos != (expect_stage, expect_parity):
            return (f"{here} pos is (stage {it.pos[0]}, phase {it.pos[1]}), the producer's is (stage "
                    f"{expect_stage}, phase {expect_parity}): advance the ring once per k-tile")
        return (f"{here} your wgmmas read stage {stage}, but the producer put this k-tile in stage "
                f"{expect_stage} (ring counter {i} mod S = {stages}): read stage pos.stage")
    at = it.events.index(mma)
    before = [e for e in it.events[:at] if e.kind == "wait"]
    if not before:
        late = [e for e in it.events[at:] if e.kind == "wait"]
        if late:
            return f"{here} your loop waits on {late[0].barrier}[{late[0].stage}] after issuing the wgmmas: wait first"
        return (f"{here} the wgmmas read stage {stage} with no wait on full[{stage}] before them: "
                "nothing tells the consumers that the TMA's bytes have landed (a race: at k-tile 0 "
                "the stage is still being filled)")
    w = before[-1]
    if w.barrier == "empty":
        text = (f"{here} your consumers wait on empty[{w.stage}], the barrier the consumers "
                "themselves complete when they release a stage (the seed article's naming). ")
        if w.parity == expect_parity:
            d = _mp.simulate(stages, 1, consumers, K_TILES * TILES, protocol="swapped_barriers").diagnosis
            text += f"Chapter 05's ring model with the consumers waiting on empty: {_deadlock_text(d)}. "
        return text + "The stage holds its k-tile when its full barrier completes: wait on full[s]"
    if w.stage != stage:
        return f"{here} your loop waits on full[{w.stage}] but its wgmmas read stage {stage}"
    if w.parity not in (0, 1):
        return f"{here} your wait names parity {w.parity}: a parity is 0 or 1"
    if w.parity != expect_parity:
        flipped = all(p == ((j // stages) % 2) ^ 1 for j, p in waits.items())
        why = _model_parity_hint(waits, stages, consumers) or "the phase of another fill"
        if flipped:
            return (f"{here} your wait names parity {w.parity}, the phase before this fill (the "
                    f"producer's parity on empty, (f + 1) mod 2): on full it passes before the "
                    f"bytes land. Chapter 05's ring model with your parities: {why}")
        return (f"{here} your wait names parity {w.parity}; this is fill f = {i // stages} of stage "
                f"{stage}, parity f mod 2 = {expect_parity}. Chapter 05's ring model with your parities: {why}")
    return None


def _same_work(a: _lr.Iteration, b: _lr.Iteration) -> str | None:
    """The first event kind the elected thread ``a`` and another thread ``b`` do differently,
    releases aside (those are the elected thread's alone)."""
    def work(it):
        return [(e.kind, e.barrier, e.stage, e.parity, e.n, e.a) for e in it.events
                if e.kind not in ("arrive", "syncwarp")]
    wa, wb = work(a), work(b)
    if wa == wb:
        return None
    for x, y in zip(wa + [None] * len(wb), wb + [None] * len(wa)):
        if x != y:
            return (x or y)[0]
    return None


_ALL_THREADS = {
    "wait": ("only the elected thread waits on full[s]: each thread that issues the wgmmas must see "
             "the phase complete itself (its wait orders the TMA's writes before its reads)"),
    "mma": ("only some threads issue mma_ktile: wgmma is .sync.aligned, all 128 threads of the "
            "warpgroup issue it together"),
    "wait_group": ("only some threads run wgmma_wait_group: it is .sync.aligned, all 128 threads of "
                   "the warpgroup run it"),
}


def _program(its: list[_lr.Iteration], stage_bytes: int):
    """The elected thread's steps for the ordering checker (("wgmma", s), ("wgmma_commit", None),
    ("wgmma_wait", N), ("arrive", s)), with the (iteration, event) of each step."""
    steps, where = [], []
    for it in its:
        for e in it.events:
            step = {"mma": ("wgmma", e.a[1] // stage_bytes if e.a else None),
                    "commit": ("wgmma_commit", None), "wait_group": ("wgmma_wait", e.n),
                    "arrive": ("arrive", e.stage)}.get(e.kind)
            if step is not None:
                steps.append(step)
                where.append((it, e))
    return steps, where


#: How often each ladder hint (:func:`_ladder`) was given in this session, by its key.
_TOLD: dict[str, int] = {}


def _ladder(key: str, symptom: str, fix: str) -> str:
    """A hint in two rungs: the first time ``key`` comes up, ``symptom`` (what the model saw) and a
    note that a repeat names the fix; from the second time on, ``symptom`` and then ``fix``."""
    _TOLD[key] = _TOLD.get(key, 0) + 1
    if _TOLD[key] == 1:
        return symptom + " (fail here again and the hint names the fix)"
    return f"{symptom}. {fix}"


def _release_hint(its: list[_lr.Iteration], body: str, stages: int, stage_bytes: int, who: str) -> str | None:
    """Releases against the ordering checker's wgmma rule and against the fills: each read fill
    released once, before the producer needs its stage again."""
    for it in its:
        for e in it.events:
            if e.kind == "arrive" and e.barrier == "full":
                return (f"{who}your release arrives on full[{e.stage}]: full counts one arrival per phase, "
                        "the producer's arrive.expect_tx. A consumer's arrival there completes a "
                        "phase early, so a later wait on it passes before the bytes land. A stage "
                        "is released on empty[s]")
    steps, where = _program(its, stage_bytes)
    hz = ordering.check(steps)
    first_hz = hz[0].step if hz else len(steps)
    # the fills: which k-tile each stage holds for this warpgroup, read and not yet released
    unreleased: dict[int, list[int]] = {s: [] for s in range(stages)}
    released: dict[int, int] = {}                    # ring counter → step of its release
    for n, ((op, a), (it, e)) in enumerate(zip(steps, where)):
        if n >= first_hz:
            break
        if op == "wgmma":
            unreleased[a].append(it.i)
        elif op == "arrive":
            if not unreleased[a] and it.tail:
                return (f"{who}after tile {it.tile}'s loop the kernel releases empty[prev], stage {a}, "
                        "but your loop has released that stage's k-tile already: leave the tile's "
                        "last release to the kernel (prev = the last k-tile's stage)")
            if not unreleased[a]:
                twice = [i for i, s in released.items() if i % stages == a]
                text = (f"{who}at {_fill(it.i)} your loop releases empty[{a}] again"
                        + (f": its fill ({_fill(twice[-1])}) was released already" if twice else "")
                        + ". A second release completes the stage's next phase before its next "
                          "fill is read (a race), and some other stage is never released")
                if not re.search(r"\bprev\s*=[^=]", _CODE.sub("", body)):
                    return _ladder("prev unset", text + ": prev is never set (it stays 0)",
                                   "Remember this k-tile's stage in prev")
                return text
            released[unreleased[a].pop(0)] = n
    if hz:
        it, e = where[hz[0].step]
        text = f"{who}at {_fill(it.i)}: {hz[0].why}"
        before = it.events[:it.events.index(e)]
        waits = [x.n for x in before if x.kind == "wait_group"]
        own = [x for x in it.events if x.kind == "mma"]
        if it.tail:
            return text
        if not waits:
            return text + ". The release comes before wgmma_wait_group: k-tile k − 1's group may still run"
        code = _CODE.sub("", body)
        at_prev = re.search(r"\bempty\s*(?:\[\s*prev\s*\]|\.arrive\s*\(\s*prev\s*\))", code)   # at k = 0, prev and pos.stage are both 0
        k0 = (f". At k = 0 the release lands on stage {e.stage} while a wgmma group still reads it: "
              f"the producer may refill it under them")
        if it.k == 0 and at_prev:
            return _ladder("k = 0", text + k0.replace("the release", "prev is still 0, so the release"), "There is no earlier k-tile in this tile at k = 0: "
                                               "release only when k > 0")
        if own and e.stage == own[0].a[1] // stage_bytes:
            fix = ("Release the previous k-tile's stage instead, empty.arrive(prev), after "
                   "wgmma_wait_group<1>() (k-tile 0 has no previous one: skip it when k = 0)")
            text += (f". That is this k-tile's own stage: wgmma_wait_group<1>() leaves its group in "
                     f"flight, so the producer may refill stage {e.stage} while those wgmmas still read it")
            p, adv = code.find("prev ="), code.find("pos.advance")
            if 0 <= adv < p:
                text += " (your prev is set after pos.advance(): it holds the next k-tile's stage)"
                fix += ", and set prev = pos.stage before pos.advance()"
            return _ladder("own stage", text, fix)
        if it.k == 0:
            return _ladder("k = 0", text + k0, "There is no earlier k-tile in this tile at k = 0: "
                                               "release only when k > 0")
        if waits[-1] > 1:
            return text + f". wgmma_wait_group<{waits[-1]}>() leaves k-tile k − 1's group in flight too"
        return text
    # in time: before the wait for k-tile j, the fill j − S must be released
    order = {id(e): n for n, e in enumerate(e for it in its for e in it.events)}
    for it in its:
        if it.tail or it.i < stages:
            continue
        first = next((e for e in it.events if e.kind in ("wait", "mma")), None)
        old = it.i - stages
        done = released.get(old)
        if first is not None and (done is None or order[id(where[done][1])] > order[id(first)]):
            if first.kind == "wait":
                return (f"{who}a deadlock at {_fill(it.i)}: the consumers wait on full[{old % stages}] "
                        f"for a fill the producer cannot load yet — it waits on empty[{old % stages}] for "
                        f"the release of {_fill(old)}, which your loop "
                        + ("makes only later" if old in released else "never makes"))
    left = [i for s in unreleased.values() for i in s]
    if left:
        return (f"{who}{_fill(left[0])}'s stage ({left[0] % stages}) is never released: the "
                f"producer would wait on empty[{left[0] % stages}] forever before its next fill")
    return None


def _notes(its: list[_lr.Iteration], cubin: bytes, perf: list[str], stages: int, consumers: int,
           uses_broken: bool) -> str:
    """A right loop's note, two short sentences: the verdict (with one clause each for
    ``wgmma_wait_group<0>`` and a left-out ``fence_accumulators``) and the SASS beside the kernel's."""
    groups = {e.n for it in its if not it.tail for e in it.events if e.kind == "wait_group"}
    fenced = any(e.kind == "fence" for it in its if not it.tail for e in it.events)
    d = sass_difference(cubin)
    if d.same and groups != {0} and fenced and not perf:
        return ("your loop compiles to the kernel's own SASS, instruction for instruction, in rung 3's "
                "build (the one the ladder times).")
    verdict = ["the loop is right"]
    if groups == {0}:
        verdict.append("<0> is not the fastest form (06 §1, after the capstone, says why)")
    if not fenced:
        verdict.append("fence_accumulators may go (only chapter 07's promote needs it)")
    notes = ["; ".join(verdict)]
    notes += [f"ptxas: {p.split(': ', 1)[-1]}" for p in perf]
    if d.same:
        notes.append("It compiles to the kernel's own SASS in rung 3's build")
    else:
        why = ("ptxas's layout, not the protocol" if uses_broken or not d.changed else
               "the kernel also sets broken when a wait gives up")
        notes.append(f"In rung 3's build {d.away} of its {d.total} SASS instructions "
                     f"{'differs' if d.away == 1 else 'differ'} from the "
                     f"kernel's ({sass.difference_words(d.only_kernel, d.only_yours, d.reordered)}): {why}")
    return ". ".join(notes) + "."


def judge(answer) -> str | None:
    """Compile, read and judge a learner's loop body (the module docstring): None is never
    returned for a right loop — an :class:`~asynctc.core.exercises.Accepted` note is; a hint
    otherwise. Raises :class:`~asynctc.core.exercises.NotAnswered` for a body of comments only."""
    if not isinstance(answer, str):
        return ("pass your loop body as a string of CUDA C++ (got "
                f"{type(answer).__name__}): consumer_loop = \"\"\" … \"\"\"")
    body = answer[1:] if answer.startswith("\n") else answer
    if not _CODE.sub("", body).strip():
        raise _ex.NotAnswered("write the loop body in the string, under the comment, then run the cell again")
    try:
        ck, perf = compile_loop(body)
    except runtime.CompileError as e:
        return compile_hint(str(e), body)
    cfg = config()
    stages, consumers, stage_bytes = cfg.stages, cfg.consumers, cfg.stage_bytes
    kw = dict(stages=stages, k_tiles=K_TILES, tiles=TILES, stage_bytes=stage_bytes)
    try:
        program = _lr.parse(body)
        runs = {(wg, el): _lr.run(program, wg=wg, elected=el, **kw)
                for wg in range(1, consumers + 1) for el in (True, False)}
    except _lr.ReadError as e:
        where = f"line {e.line}" if e.line else "after your loop, the kernel's release of prev"
        return (f"{where}: {e.why}. (The check reads the loop with the calls of §1: full.wait(stage, "
                "parity, wg, k), mma_ktile(acc, wgmma_desc_advance(da0, …), wgmma_desc_advance(db0, "
                "…)), wgmma_wait_group<N>(), empty.arrive(s), prev = …, pos.advance())")
    for wg in range(1, consumers + 1):
        who = "" if wg == 1 else f"(consumer {wg - 1}) "
        mine, other = runs[wg, True], runs[wg, False]
        loop = [it for it in mine if not it.tail]
        waits = {it.i: next((e.parity for e in it.events if e.kind == "wait"), (it.i // stages) % 2)
                 for it in loop}
        for n, it in enumerate(loop):
            hint = _iteration_hint(it, loop[n - 1] if n else None, stages, stage_bytes, consumers, waits, who)
            if hint:
                return hint
        for a, b in zip(mine, other):
            kind = _same_work(a, b)
            if kind:
                return who + _ALL_THREADS.get(kind, f"the elected thread and the others differ in {kind} "
                                                    "at this k-tile: all but the release is done by all "
                                                    "128 threads")
            if any(e.kind == "arrive" for e in b.events):
                return who + _elected_hint(stages, consumers)
        hint = _release_hint(mine, body, stages, stage_bytes, who)
        if hint:
            return hint
    uses_broken = bool(re.search(r"\bbroken\b", _CODE.sub("", body)))
    return _ex.Accepted(_notes(runs[1, True], ck.cubin, perf, stages, consumers, uses_broken),
                        meta=lambda: {"sass": _identity(ck.cubin)})


def _identity(cubin: bytes) -> dict:
    """What a passing loop keeps with the answer (asynctc.models.gemm_so_far reads it): whether its
    rung-3 build is the course's, instruction for instruction, and the build's label."""
    return sass_difference(cubin).kept(config().label())


@_ex.code_exercise("ch06.consumer_loop", "Write the body of the consumer warpgroups' k-loop of rung 3 "
                   "as a string of CUDA C++: wait for stage pos.stage to hold k-tile k, issue its "
                   "wgmmas, let one group stay in flight, release the stage of k-tile k − 1 (one "
                   "elected thread), remember this stage, advance the ring. After the loop the "
                   "kernel itself releases the stage in prev, so a loop that releases its own "
                   "k-tile's stage is refused, whatever N in wgmma_wait_group<N>. The check compiles it "
                   "into the kernel with NVRTC and judges the protocol it runs.", judge=judge)
def _consumer_loop() -> str:
    return kernel_body()
