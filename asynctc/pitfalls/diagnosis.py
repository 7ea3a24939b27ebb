"""Diagnose a zoo class: run its protocol through the CPU model and, on a GPU, its kernel variant,
and print what went wrong in one screen.

:data:`MODELS` maps each class's ``model`` key (:data:`asynctc.pitfalls.zoo.CLASSES`) to the model
that diagnoses it:

* ``pipeline:<protocol>`` — chapter 05's ring (:func:`asynctc.models.pipeline.simulate`): a
  :class:`~asynctc.models.pipeline.Deadlock` (barrier, stage, k-tile, who waits, why) or a
  :class:`~asynctc.models.pipeline.Race`;
* ``ordering:<rule>`` — :func:`asynctc.pitfalls.ordering.check` on the rule's broken program;
* ``layout:<case>`` — where TMA writes each element (the swizzle of the *absolute* address,
  :func:`asynctc.models.layout.swizzle_address`) against where the reader looks: the first element
  read from the wrong place;
* ``ptxas:C7508`` — compile the setmaxnreg hand-off here without launch bounds: ptxas's log line
  and the USETMAXREG count.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np

from ..models import pipeline as M
from ..core.notebook import guards as _guards
from . import ordering, variants, zoo

#: The schedule the pipeline-model diagnoses run on (the kernel's own shape: 2 stages, 1 consumer
#: warpgroup, wait_group 0, 8 k-tiles).
SCHEDULE = dict(stages=2, wait_pending=0, consumers=1, k_tiles=8)


@dataclasses.dataclass
class Diagnosis:
    """``kind`` ("Deadlock", "Race", "Hazard", "Layout", "Ptxas", "None"), ``text`` one paragraph,
    ``detail`` the model's own object (Deadlock/Race, list of Hazard, dict)."""
    kind: str
    text: str
    detail: Any = None


def pipeline_diagnosis(protocol: str, **schedule) -> Diagnosis:
    """Chapter 05's ring model with ``protocol`` (a name of :data:`asynctc.models.pipeline.PROTOCOLS`)."""
    sched = {**SCHEDULE, **schedule}
    d = M.simulate(**sched, protocol=protocol).diagnosis
    if d is None:
        return Diagnosis("None", f"{protocol}: the model finishes all {sched['k_tiles']} k-tiles: no "
                                 "deadlock, no race", None)
    if isinstance(d, M.Deadlock):
        return Diagnosis("Deadlock", f"Deadlock at k-tile {d.iteration} on {d.barrier}[{d.stage}] "
                                     f"(parity {d.parity}), waiting: {', '.join(d.waiting)}; "
                                     f"{d.why}", d)
    return Diagnosis("Race", f"Race at k-tile {d.iteration}, stage {d.stage}: {d.what}", d)


def ordering_diagnosis(rule: str, program=None) -> Diagnosis:
    """:func:`ordering.check` on ``program`` (default: the rule's broken program)."""
    prog = program if program is not None else ordering.PROGRAMS[rule]["broken"]
    hz = ordering.check(prog)
    if not hz:
        return Diagnosis("None", "no hazard: every ordering rule holds", [])
    h = hz[0]
    return Diagnosis("Hazard", f"Hazard ({h.rule}) at step {h.step} ({h.op}): {h.why}", hz)


def _found(tma_swizzle: int, reader_swizzle: int, base_offset: int, rows: int = 64,
           row_bytes: int = 128) -> np.ndarray:
    """For each element (r, c) of the box, the flat index (row · cols + col) of the element the
    reader actually gets there (see :func:`layout_mismatch`)."""
    from ..models.layout import swizzle_address
    if base_offset % 128:
        raise ValueError(f"base_offset={base_offset}: TMA needs 128-byte aligned shared memory "
                         "(misaligned address error), the layout model starts from there")
    cols = row_bytes // 2
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    off = r * row_bytes + c * 2
    written = swizzle_address(base_offset + off, tma_swizzle) - base_offset   # where TMA put (r, c)
    looked = swizzle_address(off, reader_swizzle)                              # where the reader looks
    where = np.empty(rows * row_bytes // 2, np.int64)
    where[written.ravel() // 2] = np.arange(rows * cols)
    return where[looked.ravel() // 2].reshape(rows, cols)


def misplaced_offsets(tma_swizzle: int = 128, reader_swizzle: int = 128, base_offset: int = 0,
                      rows: int = 64, row_bytes: int = 128) -> dict:
    """How far from each element of the box the reader fetches it (:func:`layout_mismatch`'s
    setting): ``{"rows": row read − row wanted, "cols": column read − column wanted}``, two
    ``rows`` × ``row_bytes / 2`` int arrays in fp16 elements (0 where the layout agrees)."""
    cols = row_bytes // 2
    found = _found(tma_swizzle, reader_swizzle, base_offset, rows, row_bytes)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    return {"rows": found // cols - r, "cols": found % cols - c}


def layout_mismatch(tma_swizzle: int = 128, reader_swizzle: int = 128, base_offset: int = 0,
                    rows: int = 64, row_bytes: int = 128) -> dict | None:
    """Where the reader finds element (r, c) of a ``rows`` × ``row_bytes`` fp16 box that TMA wrote
    with ``tma_swizzle`` into a tile starting ``base_offset`` bytes past a 1024 B boundary, when it
    assumes ``reader_swizzle`` relative to the tile base. None when every element is where the reader
    looks; else {row, col, found_row, found_col, wrong, total} for the first misplaced element."""
    cols = row_bytes // 2
    found = _found(tma_swizzle, reader_swizzle, base_offset, rows, row_bytes)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    bad = np.argwhere(found != (r * cols + c))
    if not len(bad):
        return None
    i, j = (int(x) for x in bad[0])
    fr, fc = divmod(int(found[i, j]), cols)
    return {"row": i, "col": j, "found_row": fr, "found_col": fc, "wrong": int(len(bad)),
            "total": int(rows * cols)}


def layout_diagnosis(case: str) -> Diagnosis:
    args = {"misaligned": dict(tma_swizzle=128, reader_swizzle=128, base_offset=128),
            "swizzle": dict(tma_swizzle=128, reader_swizzle=0, base_offset=0)}[case]
    m = layout_mismatch(**args)
    if m is None:
        return Diagnosis("None", "every element is where the reader looks", None)
    return Diagnosis("Layout", f"element ({m['row']}, {m['col']}) is read from where TMA put "
                               f"({m['found_row']}, {m['found_col']}); {m['wrong']} of {m['total']} "
                               f"elements misplaced (tensor map swizzle {args['tma_swizzle']} B, reader "
                               f"{args['reader_swizzle']} B, tile base {args['base_offset']} B past 1024)", m)


def ptxas_diagnosis() -> Diagnosis:
    """Compile the setmaxnreg hand-off with and without launch bounds (no GPU needed)."""
    ck0, diag0 = variants.compile_setmaxnreg(False)
    ck1, diag1 = variants.compile_setmaxnreg(True)
    n0 = variants.sass_count(ck0, "USETMAXREG")
    n1 = variants.sass_count(ck1, "USETMAXREG")
    line = next((d for d in diag0 if "C7508" in d), "(no C7508 line)")
    return Diagnosis("Ptxas", f"without __launch_bounds__(256, 1): {line.strip()} — {n0} USETMAXREG in "
                              f"the SASS; with it: {n1} USETMAXREG, {len(diag1)} performance diagnostics",
                     {"without": n0, "with": n1, "line": line.strip()})


def model_diagnosis(key: str) -> Diagnosis:
    """The CPU model's diagnosis of zoo class ``key``."""
    c = _cls(key)
    family, _, arg = c.model.partition(":")
    if family == "pipeline":
        return pipeline_diagnosis(arg)
    if family == "ordering":
        return ordering_diagnosis(arg)
    if family == "layout":
        return layout_diagnosis(arg)
    return ptxas_diagnosis()


def _cls(key: str) -> zoo.BugClass:
    if not isinstance(key, str):
        raise TypeError(f"key={key!r}: must be a zoo class name (str), one of {sorted(zoo.BY_KEY)}")
    if key not in zoo.BY_KEY:
        raise ValueError(f"key={key!r}: must be one of {sorted(zoo.BY_KEY)}")
    return zoo.BY_KEY[key]


def recorded_outcome(bug: int, rec=None) -> str:
    """The recorded GPU outcome of variant ``bug`` (data/<gpu>/pitfalls.json), or a sentence saying
    it is not recorded yet. Records written before the words said "k-tile" (``at tile 0``) are
    shown in today's words (``at k-tile 0``, as :func:`variants.decode_word` writes them): the
    same field of the same error word, named as the ring model names it."""
    from ..core import records
    if rec is None:
        try:
            rec = records.load("pitfalls")
        except records.RecordError:
            return "not recorded yet (the pitfalls suite has not been run on a GPU)"
    for v in rec.results.get("variants", []):
        if v["bug"] == bug:
            words = re.sub(r"\bat tile (\d+)", r"at k-tile \1", v["words"])
            return f"{words}  [{rec.label()}]"
    return f"not recorded yet (the record has no variant {bug})"


def gpu_outcome(bug: int, live: bool | None = None) -> str:
    """Variant ``bug``'s outcome in words: run now on the GPU when ``live`` (default: an sm_90a GPU
    is present), marked "[measured now]"; else :func:`recorded_outcome`."""
    from ..core import runtime
    if runtime.runs_live("sm_90a") if live is None else live:
        return variants.run_variant(bug).words + "  [measured now]"
    return recorded_outcome(bug)


@_guards
def show_outcome(bug: int, expect: str, live: bool | None = None) -> str:
    """Chapter 08 §3's symptom in one call: print variant ``bug``'s GPU outcome (:func:`gpu_outcome`)
    and each error word it quotes taken apart field by field (:func:`variants.explain_word`).

    The chapter's markdown reads the words as fixed text, so this raises
    :class:`asynctc.core.notebook.ClaimError` unless the outcome contains ``expect`` (for BUG=1,
    "producer timed out on empty[0] at k-tile 0") or says the variant is not recorded yet. Returns
    the outcome."""
    from ..core import notebook
    outcome = gpu_outcome(bug, live)
    print(f"BUG={bug}:", outcome)
    notebook.require(expect in outcome or outcome.startswith("not recorded"),
                     f"BUG={bug}'s outcome contains {expect!r}", outcome=outcome)
    for word in variants.words_in(outcome):
        print("  ", variants.explain_word(word))
    return outcome


@_guards
def show_misplaced(tma_swizzle: int = 128, reader_swizzle: int = 128, base_offset: int = 128) -> dict:
    """Chapter 08 §5a's layout bug in one call: print the layout model's diagnosis of a box whose
    tile starts ``base_offset`` bytes past a 1024-byte boundary (:func:`layout_mismatch`).

    It guards the sentences §5a states as fixed text (raising :class:`AssertionError`): every
    element of the box is misplaced; the same reader finds every element at a 1024-byte aligned
    base; each element stays in its row and moves by whole 16-byte chunks (multiples of 8 fp16
    columns); the pattern repeats every 8 rows. Returns the :func:`layout_mismatch` dict."""
    m = layout_mismatch(tma_swizzle, reader_swizzle, base_offset)
    assert m is not None and m["wrong"] == m["total"], "not every element is misplaced"
    assert layout_mismatch(tma_swizzle, reader_swizzle, 1024) is None, "misplaced at an aligned base"
    off = misplaced_offsets(tma_swizzle, reader_swizzle, base_offset)
    cols = off["cols"]
    assert not off["rows"].any() and not (cols % 8).any() and (cols[8:] == cols[:-8]).all(), \
        "the offsets are not whole chunks inside rows, repeating every 8 rows"
    print(f"element ({m['row']}, {m['col']}) is read from where TMA put ({m['found_row']}, "
          f"{m['found_col']}); {m['wrong']} of {m['total']} elements misplaced (tensor map swizzle "
          f"{tma_swizzle} B, reader {reader_swizzle} B, tile base {base_offset} B past 1024)")
    return m


def diagnose(key: str, gpu: bool | None = None, bug: int | None = None, out=print) -> dict:
    """Print the diagnosis of zoo class ``key`` in one screen and return it as a dict: what goes
    wrong, the CPU model's verdict, the GPU variant's outcome (run now when ``gpu`` — default: an
    sm_90a GPU is present — else from the record), the fix, the public reports. ``bug`` picks
    another variant of the same class (e.g. 2 for the flipped full parity)."""
    from ..core import runtime
    c = _cls(key)
    b = c.bug if bug is None else variants._check_bug(bug)
    if bug is not None and variants.BUGS[b][0] != key:
        raise ValueError(f"bug={bug}: variant {bug} belongs to {variants.BUGS[b][0]!r}, not {key!r}")
    live = runtime.runs_live("sm_90a") if gpu is None else bool(gpu)
    d = model_diagnosis(key)
    if b is None:
        gpu_words = "no kernel variant (compile-only or model-only class)"
    else:
        gpu_words = gpu_outcome(b, live)
    lines = [f"== {c.title}  ({key})",
             f"what goes wrong  {c.wrong}",
             f"CPU model        [{c.model}] {d.text}",
             f"GPU variant      " + (f"BUG={b} ({variants.BUGS[b][1]}): {gpu_words}" if b is not None else gpu_words),
             f"fix              {c.fix}",
             f"test             tests/test_pitfalls.py::{c.test}"]
    if key == "missing_wgmma_wait":
        order = {w: " → ".join(variants.release_order(variants.compile_wgmma_release(w))) for w in (True, False)}
        lines.insert(3, f"SASS here        with the wait: {order[True]}; without: {order[False]}")
    for r in c.reports:
        lines.append(f"report           {r.cite} ({r.kind}, {r.symptom}): {r.seen}")
    if not c.reports:
        lines.append("report           none found in the public threads searched")
    for ln in lines:
        out(ln)
    return {"key": key, "model": d.kind, "model_text": d.text, "gpu": gpu_words, "bug": b}


#: The diagnoses by model key, for the table of the chapter.
MODELS = {c.model: c.key for c in zoo.CLASSES}
