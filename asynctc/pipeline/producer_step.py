"""Chapter 05's code exercise ``ch05.producer_step``: the learner writes, as CUDA C++ in a Python
string, the producer's refill step of ``gemm_pipeline`` (``kernels/pipeline.cu``): after the
release of k-tile r, wait on empty[ts] and load its refill, k-tile t = r + STAGES (stage ``ts``,
phase ``tp``), into that stage, only while t < T. No GPU is needed.

1. **compile** — :func:`splice` puts the text in place of the kernel's own step (the
   ``if (producer && t < T && !broken) { … }`` block, under ``#line 1 "your step"``) and
   compiles the default build (:class:`~asynctc.pipeline.PipelineConfig`) with NVRTC
   (:func:`asynctc.core.runtime.compile_kernel` ``code=``). The kernel file is never changed.
2. **read** — :mod:`asynctc.core.loop_reader`'s machine, given the step's names, runs the text for
   every k-tile of :data:`K_TILES`, as the producer (thread 0) and as another thread: the waits
   (barrier, stage, parity, the k-tile that labels it) and the ``load_stage`` calls (stage, full
   barrier, k-tile).
3. **judge** — plain rules (who loads, which k-tile, which stage, past K) and chapter 05's ring
   model (:func:`asynctc.models.pipeline.simulate`) for a missing wait on empty or a wrong parity:
   its Race (a stage overwritten while still read) or Deadlock, with the k-tile.

A passing step (not a solution cell) keeps :func:`sass_identity` with the answer: whether the step,
spliced into the build chapter 05's record times (:func:`timed_config`), compiles to the course's
SASS instruction for instruction — then the recorded run is the learner's kernel
(:mod:`asynctc.models.gemm_so_far` says so) — or how many instructions away it is, and of which
kinds. The check's note gives the same count, in the same build.
"""

from __future__ import annotations

import dataclasses
import re
import warnings

from ..core import exercises as _ex
from ..core import loop_reader as _lr
from ..core import runtime, sass
from ..models import pipeline as _mp
from .config import ENTRY, SOURCE, PipelineConfig

#: k-tiles the reader runs the step for (T), and what NVRTC calls the learner's text.
K_TILES, FILE_NAME = 12, "your step"
#: The kernel's own step in pipeline.cu: its first line (its block ends at the brace below it).
HEAD = "      if (producer && t < T && !broken) {"
#: The step as an ``omit`` range of §2's listing (first line, last line, note): left out until answered.
OMIT = (r"^      if \(producer && t < T", r"^      }$", "exercise 2")
#: The ranges chapter 05 §2's listing of ``gemm_pipeline`` folds to one line each (``omit`` of
#: :func:`asynctc.core.notebook.show_source`): set-up, prologue, this exercise's step, epilogue.
#: Deep dive 05c §2 prints the folded lines (all but the step) with the helpers they call.
SKELETON = ((r"^  extern __shared__", r"^  bool broken", "set-up: stage s at base + s · kStageBytes; "
             "full[s], empty[s] initialised"),
            (r"^  // Prologue", r"^  const u64 db0", "prologue: load_stage fills stages 0 … S − 1; acc = 0"),
            OMIT,
            (r"^  wgmma_wait_group<0>", r"^  store_c", "epilogue: wait_group<0>, then store_c writes C"))
#: Chapter 05 §2's listing, shown before exercise 2, rewords the kernel's comments that state the refill's
#: parity (``comments`` of :func:`asynctc.core.notebook.show_source`; the kernel file, whose SASS the record
#: timed, is unchanged): ``tp`` is said to be t's phase, got from r's, and which parity the wait on empty
#: names is left to the exercise.
LISTING_COMMENTS = ((r"const u32 tp = ", "t's phase, from r's: t is the stage's next fill"),
                    (r"^\s*// 4\. \.\.\. and the producer refills", "4. ... and the producer refills the stage "
                     "with k-tile t = r + S, once every"),
                    (r"^\s*//\s+\(its phase tp", "   warpgroup released r: exercise 2"))
#: The names the step uses, all in scope where it goes (the exercise's prompt lists them). The kernel's
#: phase bit ``tp`` is in scope too, unlisted: the exercise asks for the parity from t.
IN_SCOPE = ("producer", "r", "t", "ts", "STAGES", "T", "empty.wait", "load_stage", "ta", "tb", "base",
            "kStageBytes", "full", "m0", "n0", "wg", "broken")
#: Chapter 05 §2's "Say it back" on the wait's parity, shown once the step passes (it answers the exercise).
SAID_BACK = ("**Say it back.** The refill loads fill f = t div S of stage ts, so it waits on empty for phase "
             "f − 1, which r's release completes: parity (f + 1) mod 2. The kernel divides nothing: it carries "
             "a phase bit, `tp` (t's, f mod 2, flipped from r's), and passes `tp ^ 1`: the second flip undoes the "
             "first, so the wait names r's own phase, the one r's release completes. The same parity, in fewer "
             "instructions. "
             "Going further: [05c §2](05c_pipeline_variants.ipynb) shows the kernel's own step.")
#: Chapter 05 §2's exercise cell: the step with blanks (``___``) for the guard's condition, the
#: parity, the load and the give-up branch; :func:`judge` takes a text with a blank left as unanswered.
BLANKS = """
if (producer && ___ && !broken) {     // who refills, and when
  if (empty.wait(ts, ___, wg, t)) {  // the parity: §1's rule, from t
    ___;                             // load k-tile t into stage ts
  } else {
    ___;                             // the wait gave up
  }
}
"""
_CODE = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
#: The hint for a ``return`` in the step (the loop reader does not follow one): what it would do in the kernel.
RETURN_HINT = ("a return here leaves the kernel, not just the step: thread 0 skips the rest of its k-tiles "
               "(its waits on full, its part of each later wgmma, which all 128 threads of the warpgroup must "
               "issue, its warpgroup's releases of empty) and never stores its share of C; the other threads "
               "wait on full for refills that never come, and give up. When the wait gives up, set broken = true "
               "and stay in the loop: !broken skips every later wait and refill, the loop ends, and the host "
               "reads the error word the wait wrote")


def config() -> PipelineConfig:
    """The build the step goes into: the default, ``128x256x64/c2 s4`` fp16 (wait_group 1)."""
    return PipelineConfig()


def _source_parts(text: str) -> tuple[str, str, int]:
    lines = text.splitlines(keepends=True)
    head = [n for n, ln in enumerate(lines) if ln.rstrip() == HEAD]
    if len(head) != 1:
        raise RuntimeError(f"{SOURCE}: the producer's refill step is not where the exercise expects it")
    end = next(n for n in range(head[0], len(lines)) if lines[n].rstrip() == "      }")
    return "".join(lines[:head[0]]), "".join(lines[end + 1:]), end + 2


def splice(step: str) -> str:
    """The kernel's source with ``step`` in place of the producer's refill step."""
    before, after, line = _source_parts(runtime.kernel_path(SOURCE).read_text())
    return _ex.spliced_source(before, step, after, FILE_NAME, SOURCE, line)


def kernel_step() -> str:
    """The kernel's own step, dedented (the worked solution)."""
    text = runtime.kernel_path(SOURCE).read_text()
    before, after, _ = _source_parts(text)
    own = text[len(before):len(text) - len(after)]
    return "\n".join(ln[6:] for ln in own.rstrip("\n").splitlines()) + "\n"


def compile_step(step: str) -> runtime.CompiledKernel:
    """The default build with ``step`` spliced in. Raises :class:`~asynctc.core.runtime.CompileError`."""
    cfg = config()
    cfg.validate()
    with warnings.catch_warnings():                      # NVRTC's warnings (an unused tp) are no hint
        warnings.simplefilter("ignore")
        return runtime.compile_kernel(SOURCE, ENTRY, "sm_90a", defines=cfg.defines, code=splice(step))


def timed_config() -> PipelineConfig:
    """The build chapter 05's depth sweep times (record ``pipeline``): :func:`config` with output
    in the input dtype."""
    return dataclasses.replace(config(), out_dtype=config().dtype)


def sass_identity(step: str) -> dict:
    """``step`` compiled into :func:`timed_config` beside the course's build of it
    (:func:`asynctc.core.sass.difference`): ``same`` (the same instructions in the same order),
    ``changed`` (how many instructions apart), ``total`` (the course's), ``extra`` / ``fewer``
    (opcode class → count), ``reordered``, ``config`` (the build's label) and ``fields`` (its
    settings)."""
    from .launch import compile_pipeline
    cfg = timed_config()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ck = runtime.compile_kernel(SOURCE, ENTRY, "sm_90a", defines=cfg.defines, code=splice(step))
    d = sass.difference(sass.disassemble(compile_pipeline(cfg).cubin), sass.disassemble(ck.cubin))
    return {**d.kept(cfg.label()), "fields": dataclasses.asdict(cfg)}


def compile_hint(log: str, step: str) -> str:
    """NVRTC's first errors, each with the line of the learner's text it names."""
    def elsewhere(where, n, msg, _rest):
        return (f"after your step: {msg} (a missing ';' or '}}'?)" if where.endswith(SOURCE)
                else f"{where.rsplit('/', 1)[-1]}({n}): {msg}")
    errors = _ex.nvrtc_errors(log, step, FILE_NAME, elsewhere)
    old = sorted(set(re.findall(r'identifier "(rs|rp)" is undefined', log)), reverse=True)
    # not a rename table: rp was r's own phase, and the refill's parity is not tp (that deadlocks)
    said = {"rs": "rs (r's stage)", "rp": "rp (r's own phase)"}
    renamed = (f". {' and '.join(said[n] for n in old)}: names from an older version of the step; here "
               "the step names the refill k-tile t = r + STAGES and its stage ts — t's, not r's"
               if old else "")
    return f"NVRTC cannot compile your step — {errors}{renamed} (names in scope: {', '.join(IN_SCOPE)})"


# ---- reading: the loop reader's machine with the producer's names -----------------------------------

def read(step: str, producer: bool = True, stages: int = 4, pending: int = 1,
         k_tiles: int = K_TILES, waits_pass: bool = True) -> dict[int, list]:
    """Run ``step`` as the kernel runs it, after the release of each k-tile r = k − pending:
    r → the step's events (waits and loads). ``waits_pass=False``: every ``empty.wait`` returns
    false (it timed out). Raises :class:`~asynctc.core.loop_reader.ReadError`
    (:func:`asynctc.core.loop_reader.read_producer_step`)."""
    return _lr.read_producer_step(_lr.parse(step), producer=producer, stages=stages, pending=pending,
                                  k_tiles=k_tiles, stage_bytes=config().stage_bytes, in_scope=IN_SCOPE,
                                  waits_pass=waits_pass)


# ---- judging ----------------------------------------------------------------------------------------

def _model(stages, pending, consumers, k_tiles, **kw) -> str:
    d = _mp.simulate(stages, pending, consumers, k_tiles, **kw).diagnosis
    if isinstance(d, _mp.Race):
        return f"a stage overwritten while still read, at k-tile {d.iteration}: {d.what}"
    if isinstance(d, _mp.Deadlock):
        return f"a wait that never ends, at k-tile {d.iteration}: {d.why}"
    return "no failure in this run, but the wait names another fill's phase"


def _refill_hint(r, t, S, T, off_by_one: bool = False) -> str | None:
    """The hint for a refill of k-tile ``t`` after the release of ``r``, or None when t = r + S < T.
    ``off_by_one``: the step's loads stop at k-tile T exactly (a guard t <= T, not a missing one)."""
    here = f"after the release of k-tile r = {r}"
    if t >= T and off_by_one:
        return (f"{here} your step loads k-tile {t} = T, one past the last: the k-tiles are 0 … T − 1 "
                f"(T = {T}), so k-tile T starts at K and the TMA reads A and B beyond it. Your guard lets "
                "t = T through: t < T, not t <= T")
    if t >= T:
        return (f"{here} your step loads k-tile {t}, past K (T = {T} k-tiles): the guard t < T "
                "is missing, so the TMA reads A and B beyond K and no consumer ever reads the fill")
    if t == r + S - 1:
        return (f"{here} your step loads k-tile r + S − 1 = {t}, loaded already (by the prologue "
                f"or the step before), and k-tile {r + S} never is")
    if t == r + S + 1:
        return (f"{here} your step loads k-tile r + S + 1 = {t}, into stage {t % S}: that stage "
                f"still holds k-tile {t - S}, not yet read (and k-tile {r + S} is never loaded)")
    if t != r + S:
        return f"{here} your step loads k-tile {t}; the stage r just left takes k-tile t = r + S = {r + S}"
    return None


def judge(answer) -> str | None:
    """Compile, read and judge a learner's producer step (the module docstring): an
    :class:`~asynctc.core.exercises.Accepted` note for a right step, a hint otherwise."""
    if not isinstance(answer, str):
        return f'pass your step as a string of CUDA C++ (got {type(answer).__name__}): producer_step = """ … """'
    step = answer[1:] if answer.startswith("\n") else answer
    if not _CODE.sub("", step).strip():
        raise _ex.NotAnswered("write the step in the string, under the comment, then run the cell again")
    if (blanks := _CODE.sub("", step).count("___")):
        raise _ex.NotAnswered(f"fill the {blanks} blank{'s' if blanks > 1 else ''} ___ left in the step, "
                              "then run the cell again")
    try:
        ck = compile_step(step)
    except runtime.CompileError as e:
        return compile_hint(str(e), step)
    cfg = config()
    S, P, C, T = cfg.stages, cfg.wait_pending, cfg.consumers, K_TILES
    try:
        mine, other = read(step, True, S, P, T), read(step, False, S, P, T)
    except _lr.ReadError as e:
        if "'return'" in e.why:
            return f"line {e.line}: {RETURN_HINT}"
        return (f"line {e.line}: {e.why}. (The check reads the step with the calls of §2: "
                "empty.wait(stage, parity, wg, k-tile), load_stage(ta, tb, address, full[s], k-tile, m0, n0))")
    found: dict[str, str] = {}       # kind of mistake → its first hint, in the order the check meets them
    if any(other.values()):
        found["who"] = ("a thread other than the producer waits or loads: every thread of the CTA runs this "
                        "step, and only thread 0 issues the TMA (guard it with producer)")
    past = [e.n for events in mine.values() for e in events if e.kind == "load" and e.n >= T]
    waits, labels = {}, {}
    for r, events in mine.items():
        loads = [e for e in events if e.kind == "load"]
        if len(loads) > 1:
            found.setdefault("which", f"after the release of k-tile {r} your step loads {len(loads)} times: "
                                      "one refill per release")
            continue
        if not loads:
            if r + S < T:
                found.setdefault("which", f"after the release of k-tile {r} your step loads nothing: k-tile "
                                          f"{r + S} is never loaded, and the consumers wait on full[{(r + S) % S}] "
                                          "for it forever")
            continue
        e, t = loads[0], loads[0].n
        hint = _refill_hint(r, t, S, T, off_by_one=max(past, default=0) == T)
        if hint:
            found.setdefault("which", hint)
            continue
        if e.stage != t % S or e.barrier != f"full[{t % S}]":
            found.setdefault("which", f"k-tile {t} goes into stage {t % S} (t mod S), through full[{t % S}]; "
                                      f"your step gives stage {e.stage}'s address and {e.barrier}")
            continue
        before = [w for w in events[:events.index(e)] if w.kind == "wait"]
        if not before:
            if any(w.kind == "wait" for w in events):
                found.setdefault("wait", f"your step waits on empty after load_stage for k-tile {t}: wait first")
            else:
                found.setdefault("wait", "your step loads with no wait on empty: chapter 05's ring model "
                                         "without it finds " + _model(S, P, C, T, protocol="missing_empty_wait"))
            continue
        w = before[-1]
        if w.barrier != "empty":
            found.setdefault("wait", f"before k-tile {t} your step waits on {w.barrier}[{w.stage}]; the "
                                     f"consumers' releases complete empty[{t % S}]: wait there")
            continue
        if w.stage != t % S:
            found.setdefault("wait", f"before refilling stage {t % S} your step waits on empty[{w.stage}]")
            continue
        waits[t], labels[t] = w.parity, w.n
    want = {t: _mp.kernel_empty_parity(t, S) for t in waits}
    if waits != want:
        t = min(x for x in waits if waits[x] != want[x])
        why = _model(S, P, C, T, parities=(_mp.kernel_full_parity,
                                           lambda x, s: waits.get(x, _mp.kernel_empty_parity(x, s))))
        own = (f", f mod 2 of its own fill (k-tile t = {t}, f = {t} / S = {t // S}), a phase no "
               "release has completed"
               if waits[t] == (t // S) % 2 else "")
        if own and re.search(r"empty\.wait\([^,]*,\s*tp\s*,", _CODE.sub("", step)):
            own += " (`tp`, the listing's phase bit, is exactly that phase: t's own, not the one before it)"
        # tier 2: §1's table, for the fill being loaded (f = t / S, its phase tp = f mod 2)
        found["parity"] = _ex.tiered(
            f"before k-tile {t} your step waits on empty[{t % S}] with parity {waits[t]}{own}",
            ". Which fill does the refill load, and which column of §1's table gives its wait?",
            f". The refill loads k-tile t = {t}, fill f = t / STAGES = {t // S}: the "
            f"producer waits with (f + 1) mod 2 = {want[t]}.") + f" Chapter 05's ring model with your parities: {why}"
    t = next((x for x in sorted(labels) if labels[x] != x), None)
    if t is not None:
        slip = " — r, the k-tile just released," if labels[t] == t - S else ""
        found["label"] = (f"before k-tile {t} your wait on empty is labelled k-tile {labels[t]}{slip}; the label "
                          f"(the 4th argument) names the k-tile the refill loads, t = {t}. A wait that "
                          "gives up reports that k-tile in the kernel's error word")
    gave_up = read(step, True, S, P, T, waits_pass=False)     # every bounded wait times out
    for r, events in gave_up.items():
        kinds = [e.kind for e in events]
        if "load" in kinds and "wait" in kinds[:kinds.index("load")]:
            found["timeout"] = ("your step loads even when empty.wait timed out (returned false): the stage may "
                                "still be read — load only if the wait returned true")
            break
    if found:
        first, more = next(iter(found.values())), len(found) - 1   # as 03's stage_fill and 09's checks count
        return _ex.with_more(first + ("" if not more or first.endswith((".", "?", "!")) else "."), more)
    sets_broken = bool(re.search(r"\bbroken\s*=", _CODE.sub("", step)))
    ident = sass_identity(step)
    own_bit = bool(re.search(r"\btp\b", _CODE.sub("", step)))      # the kernel's phase bit, or t / STAGES
    return _ex.Accepted(_sass_note(ident, sets_broken, own_bit), meta=lambda: {"sass": ident})


def _sass_note(ident: dict, sets_broken: bool, own_bit: bool = True) -> str:
    """The check's note on a right step, two short sentences: the verdict, then the step's SASS
    beside the kernel's, counted in the build chapter 05's record times (the same count the
    end-of-chapter line gives), with at most three kinds of instruction named."""
    if ident["same"]:                      # (chapter 05's solution notebook compares this text)
        return "your step compiles to the kernel's own instructions."
    how = sass.difference_words(ident["fewer"], ident["extra"], ident["reordered"], limit=2, gloss=True)
    n = ident["changed"]
    verdict = ("the protocol is right" if sets_broken else
               "the protocol is right; leaving broken unset is harmless (every later wait gives up at once)")
    why = ("" if not sets_broken else ": ptxas's layout, not the protocol" if own_bit else
           ": the kernel flips a phase bit it carries instead (said back below)")
    return (f"{verdict}. In the timed build {n} of its {ident['total']} SASS instructions "
            f"{'differs' if n == 1 else 'differ'} from the kernel's ({how}){why}.")


@_ex.code_exercise("ch05.producer_step", "Write the producer's refill step of gemm_pipeline as a string "
                   "of CUDA C++: after the release of k-tile r, thread 0 waits on empty[ts] for "
                   "that release and refills the stage with k-tile t = r + S, while t < T. The "
                   "check compiles it into the kernel with NVRTC and runs its protocol through the "
                   "ring model.", judge=judge)
def _producer_step() -> str:
    return kernel_step()
