"""Chapter 03's code exercise ``ch03.stage_fill``: the learner writes, as CUDA C++ in a Python
string, the producer's lines that fill one stage of a GEMM's ring (``kernels/tma_stage.cu``, the
body of ``fill_stage``): ``mbarrier_arrive_expect_tx(full_bar, <bytes>)`` and two
``tma_load_2d(dst, map, full_bar, c0, c1)``, a BM×BK box of A and a BN×BK box of B. No GPU needed.

The check, in order:

1. **compile** — :func:`splice` puts the text in place of ``fill_stage``'s body (under
   ``#line 1 "your lines"``) and :func:`compile_fill` compiles the kernel with NVRTC
   (:func:`asynctc.core.runtime.compile_kernel` with ``code=``). A compile error is the hint.
2. **read** — :func:`~asynctc.models.stage_fill_reader.read` follows the straight-line text
   (declarations and calls) at two sample points (:data:`SAMPLES`) and returns each :class:`Fill`:
   the bytes announced, the arrivals, and each load's map, barrier, destination offset in the stage
   and coordinates.
3. **judge** — the mbarrier model (:class:`asynctc.models.pipeline.Mbarrier`, arrival count 1) is
   run on the announced bytes and the boxes' landings in both orders: too few bytes complete the
   phase before the second box lands (the consumer's wgmma would read a half-written stage); too
   many leave the tx-count above zero and the wait never passes (on the GPU the bounded wait gives
   up: "mbarrier wait timed out"). Then the destinations (A at the stage's start, B right after it,
   no overlap) and the coordinates (innermost first: the k column, then the row) against
   chapter 05's ``load_stage``.
"""

from __future__ import annotations

import re

from ..core import exercises as _ex
from ..core import runtime
# The reader and the mbarrier verdict live in the models layer (the CPU emulation of chapter 06e
# uses them too); the names stay importable from here.
from ..models.stage_fill_reader import (  # noqa: F401
    A_BYTES, B_BYTES, BEGIN, BK, BM, BN, COMMENTS, END, ITEMSIZE, SOURCE, STAGE_BYTES, Fill, Load,
    ReadError, bytes_hint, coord_hint, evaluate, kernel_lines, read, tx_outcome, where_hint)

ENTRY = "tma_stage_fill"
FILE_NAME = "your lines"
#: Two sample points the text is read at: the stage's shared address (1024-aligned), the barrier's,
#: the k-tile and the CTA's first rows of A and B.
SAMPLES = (dict(stage=0x2000, full_bar=0x40, kt=0, m0=0, n0=0),
           dict(stage=0x8000, full_bar=0x48, kt=5, m0=384, n0=256))


def _parts() -> tuple[str, str, int]:
    """(the source up to the exercise's first line, from its end marker on, the end marker's line)."""
    lines = runtime.kernel_path(SOURCE).read_text().splitlines(keepends=True)
    b0 = [n for n, ln in enumerate(lines) if ln.rstrip() == BEGIN]
    b1 = [n for n, ln in enumerate(lines) if ln.rstrip() == END]
    if len(b0) != 1 or len(b1) != 1 or b1[0] <= b0[0]:
        raise RuntimeError(f"{SOURCE}: the exercise's markers are not where the exercise expects them")
    return "".join(lines[:b0[0] + 1]), "".join(lines[b1[0]:]), b1[0] + 1


def splice(body: str) -> str:
    """The kernel's source with ``body`` in place of ``fill_stage``'s lines; NVRTC counts the body's
    lines from 1 in a file it calls :data:`FILE_NAME`."""
    before, after, end = _parts()
    return _ex.spliced_source(before, body, after, FILE_NAME, SOURCE, end)


def compile_fill(body: str) -> runtime.CompiledKernel:
    """Compile the kernel with ``body`` as ``fill_stage``'s lines (sm_90a cubin, cached). Raises
    :class:`~asynctc.core.runtime.CompileError` with NVRTC's log."""
    return runtime.compile_kernel(SOURCE, ENTRY, "sm_90a", code=splice(body))


def compile_hint(log: str, body: str, limit: int = 2) -> str:
    """NVRTC's first errors, each with the line of the learner's text it names."""
    errors = _ex.nvrtc_errors(log, body, FILE_NAME, limit=limit, elsewhere=lambda where, n, msg, _rest:
                              f"{where.rsplit('/', 1)[-1]}({n}): {msg} (a missing ';' or ')'?)")
    return ("NVRTC cannot compile your lines (in scope: ta, tb, stage, full_bar, kt, m0, n0, BM, BN, "
            "BK) — " + errors)


# ---- judging ----------------------------------------------------------------------------------------

def judge(answer) -> str | None:
    """Compile, read and judge a learner's lines (the module docstring): None when right, else the
    hint. Raises :class:`~asynctc.core.exercises.NotAnswered` for a text of comments (or ``...``)."""
    if not isinstance(answer, str):
        return f"pass your lines as a string of CUDA C++ (got {type(answer).__name__}): lines = \"\"\" … \"\"\""
    body = answer[1:] if answer.startswith("\n") else answer
    if COMMENTS.sub("", body).strip() in ("", "..."):
        raise _ex.NotAnswered("write the three lines in the string, then run the cell again")
    try:
        compile_fill(body)
    except runtime.CompileError as e:
        return compile_hint(str(e), body)
    found: dict[int, str] = {}           # kind of mistake (bytes, where, coordinates) → its first hint
    for s in SAMPLES:
        try:
            fill = read(body, **s)
        except ReadError as e:
            return f"NVRTC compiles your lines, but {e}"
        if fill.other_bars:
            return (f"{fill.other_bars[0]!r} names another barrier than full_bar: the stage's bytes and "
                    "its arrival all go to full_bar, the barrier the consumer waits on.")
        maps = [ld.map for ld in fill.loads]
        for mp, who in (("ta", "A"), ("tb", "B")):
            if maps.count(mp) != 1:
                return (f"{maps.count(mp)} loads from tensor map {mp} ({who}): a stage holds one box of A "
                        "(ta) and one of B (tb).")
        if len(maps) != 2:
            return f"{len(maps)} tma_load_2d calls: a stage is two boxes, one from ta and one from tb."
        for kind, h in enumerate((bytes_hint(fill), where_hint({ld.map: ld for ld in fill.loads}),
                                  coord_hint(fill, s))):
            if h:
                found.setdefault(kind, h)
    if not found:
        return _ex.Accepted(LOADS_FIRST) if fill.loads_before_expect else None
    more = len(found) - 1        # the first to fix, and how many others remain (as chapter 09's checks say)
    where = ", ".join(KINDS[k] for k in sorted(found)[1:])
    return _ex.with_more(found[min(found)], more, where)


#: The note for a right answer that issues loads before its expect_tx (PTX ISA, "Contents of the
#: mbarrier object": tx-count −(2^20 − 1) … 2^20 − 1; "Phase completion": pending arrivals and
#: tx-count both zero).
LOADS_FIRST = ("legal, but the convention is to arm first: expect_tx, then the loads. With the loads "
               "first, a fast box can land (complete_tx) before expect_tx is posted. The tx-count then "
               "goes below zero for a moment; the PTX ISA allows that (its range is −(2^20−1) … "
               "2^20−1), and the phase completes only when arrivals and tx-count are both zero. "
               "Arming first keeps the tx-count at or above zero: the bytes are owed before they land.")


#: The kinds of mistake :func:`judge` tells apart, in the order it reports them.
KINDS = ("the bytes announced", "where a box lands", "a box's coordinates")


@_ex.code_exercise("ch03.stage_fill", "Write the producer's lines that fill one stage (fill_stage in "
                   "kernels/tma_stage.cu): mbarrier_arrive_expect_tx(full_bar, <bytes>), then "
                   "tma_load_2d(dst, map, full_bar, c0, c1), c0 innermost (the column), for A's BM×BK box "
                   "(ta) and B's BN×BK box (tb, B stored N×K); stage and full_bar are u32 shared-memory "
                   "byte addresses. Pass the text: check('ch03.stage_fill', lines).", judge=judge)
def _ch03_stage_fill() -> str:
    return kernel_lines()
