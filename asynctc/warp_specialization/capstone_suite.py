"""Record suite ``capstone``: chapter 06's capstone loops compiled into ``kernels/capstone.cu`` and run
on the GPU (:mod:`.capstone_build`) — the course's answer, a second passing form, and wrong variants a
learner might write, each on :data:`~.capstone_build.SHAPES`.

:func:`measure_capstone` never raises on a wrong result or a wait that gave up: each run is recorded
(its error word decoded, its elementwise check), so the record says what every variant did.
:func:`capstone_cell` is the short-name capstone's cell (06 §1 now shows the real-call capstone's,
:func:`.cuda_kloop.capstone_cell`, which prints this record's lines as the short kernel's): it builds the learner's
loops, prints the SASS table, and runs them live on a GPU — in replay, the recorded outcome of the
course's answer, or that none was recorded yet. Never plots.
"""

from __future__ import annotations

import time

import numpy as np

from ..core import records, runtime
from . import capstone_build as cb
from .capstone_read import differences, loops_to_show
from .whole_kloop import SOLUTION

SUITE = "capstone"

_CONSUMER = """\
      full.wait(stage, phase);           // f mod 2: the TMA's bytes have landed
      mma_ktile(acc, stage);
      wgmma_wait_group<0>();             // the wgmmas are done reading the stage
      empty.arrive(stage);
      if (++stage == STAGES) { stage = 0; phase ^= 1; }
    }
    store_tile(acc, tile);"""
_PREV = """\
      full.wait(stage, phase);
      mma_ktile(acc, stage);
      wgmma_wait_group<1>();             // k-tile k - 1's wgmmas are done reading its stage
      if (k > 0) empty.arrive(prev);
      prev = stage;
      if (++stage == STAGES) { stage = 0; phase ^= 1; }
    }
    wgmma_wait_group<0>();
    empty.arrive(prev);                  // the tile's last k-tile
    store_tile(acc, tile);"""
_DECL = "int stage = 0, phase = 0;"
_TILE = "  for (int tile = 0; tile < TILES; ++tile) {\n"


def _replace(old: str, new: str, count: int = 1) -> str:
    assert SOLUTION.count(old) == count, old
    return SOLUTION.replace(old, new)


#: (name, what it is, the text): the course's answer, a second passing form (wgmma_wait_group<1>
#: and the previous stage's release, which the exercise accepts), and three wrong variants, as
#: chapter 05's ring model reads them (:func:`~.whole_kloop.timeline`): "producer phase" deadlocks
#: at k-tile 0 (a bounded wait ends it: the error word); "ring restarts" races at k-tile 4 (tile 1
#: reads stage 1 still holding k-tile 1: wrong elements); "consumers phase ^ 1", last, races at
#: k-tile 0 — its consumers may pass a wait before the bytes land and release early, so the
#: producer's next expect_tx may arrive on a full barrier whose phase is still pending (more
#: arrivals than its count: undefined in the PTX ISA) — wrong elements or a timeout.
VARIANTS = (
    ("course", "the course's answer (whole_kloop.SOLUTION)", SOLUTION),
    ("wait_group<1>", "passing form: wgmma_wait_group<1>, release the previous k-tile's stage",
     _replace(_CONSUMER, _PREV).replace(_DECL, "int stage = 0, phase = 0, prev = 0;")),
    ("producer phase", "wrong: the producer waits on empty with parity f mod 2",
     _replace("empty.wait(stage, phase ^ 1);", "empty.wait(stage, phase);")),
    ("ring restarts", "wrong: stage and phase set to 0 at every tile",
     _replace(_DECL, "").replace(_TILE, _TILE + "    " + _DECL + "\n")),
    ("consumers phase ^ 1", "wrong: the consumers wait on full with the producer's parity",
     _replace("full.wait(stage, phase);", "full.wait(stage, phase ^ 1);")),
)
VARIANT_TEXT = {name: text for name, _, text in VARIANTS}


def _one(name: str, text: str, shape, rng) -> dict:
    m, n, k, stages, ctas = shape
    row = {"variant": name, "shape": [m, n, k], "stages": stages, "ctas": ctas}
    try:
        t0 = time.perf_counter()
        r = cb.run(text, m, n, k, stages, ctas, rng)
        row.update(r.as_dict(), seconds=time.perf_counter() - t0, says=r.says())
    except Exception as e:  # noqa: BLE001 - recorded, never raised: the record must be written
        row.update(passed=False, failed=f"{type(e).__name__}: {e}")
    return row


def measure_capstone(progress=None, variants=VARIANTS, shapes=cb.SHAPES) -> dict:
    """Every variant of :data:`VARIANTS` built (compile seconds, the SASS table) and run on every
    shape of ``shapes``; the rows in order, one per (variant, shape)."""
    say = progress or (lambda _s: None)
    rng = np.random.default_rng()
    out: dict = {"variants": [{"name": n, "what": w} for n, w, _ in variants], "rows": [], "builds": []}
    for name, _, text in variants:
        t0 = time.perf_counter()
        table = cb.sass_table(text)
        out["builds"].append({"variant": name, "seconds": time.perf_counter() - t0,
                              "sass": [list(r) for r in table.rows], "total": list(table.total)})
        for shape in shapes:
            out["rows"].append(_one(name, text, shape, rng))
            r = out["rows"][-1]
            say(f"{name}: " + (r.get("says") or r.get("failed", "")))
    out["course_passed"] = all(r["passed"] for r in out["rows"] if r["variant"] == "course")
    return out


def summarize_capstone(rec: records.Record) -> str:
    res = rec.results
    lines = [rec.label(), "the capstone's loops compiled into kernels/capstone.cu, run on the GPU:"]
    for r in res["rows"]:
        lines.append(f"  {r['variant']:20s} " + ("passed " if r["passed"] else "FAILED ")
                     + (r.get("says") or r.get("failed", "")))
    return "\n".join(lines)


SUITES = {SUITE: (measure_capstone, summarize_capstone, "sm_90a")}



def recorded_line(rec=None) -> str:
    """What the record says of the course's answer, in one line per shape; or that it was not yet
    recorded on a GPU."""
    rec = rec if rec is not None else records.load_or_none(SUITE)
    if rec is None:
        return "Its run: not yet recorded on a GPU."
    rows = [r for r in rec.results["rows"] if r["variant"] == "course"]
    head = f"The course's answer, recorded ({rec.label()}):"
    return "\n".join([head] + ["  " + (r.get("says") or r.get("failed", "")) for r in rows])


def capstone_cell(text: str, passed: bool = True) -> None:
    """06 §1's cell once the capstone passes: build the learner's loops into a real sm_90a kernel
    (NVRTC on the CPU) and print the SASS table beside the course's answer's, with a line per
    differing row saying why (:func:`~.capstone_read.differences`); on a live sm_90a GPU
    run them on :data:`~.capstone_build.SHAPES`' first shape against float64, else print the
    recorded outcome of the course's answer (:func:`recorded_line`). Unless ``passed``, the loops
    :func:`~.capstone_read.loops_to_show` picks. Held (prints what is held and
    returns) until the capstone passes (:func:`asynctc.core.exercises.after`)."""
    from ..core import exercises as _ex
    if not _ex.after("ch06.whole_kloop", held="your loops compiled into a real kernel"):
        return
    text, answer = loops_to_show(text, passed)
    try:
        table = cb.sass_table(text)
    except cb.LoopsCompileError as e:
        print(f"{e}\n(The check reads your loops in the course's models; NVRTC is stricter C++.)")
        return
    if answer:          # opened without a pass (the notebook build): the answer beside itself says nothing
        print(f"The course's answer compiles (NVRTC, CPU) to a real sm_90a cubin ({table.total[1]} SASS instructions).")
    else:
        print("Compiled (NVRTC, on the CPU): a real sm_90a cubin.")
        print(table)
        for line in differences(table, text):      # why a row differs: the call sites, computed
            print("  " + line)
    if runtime.runs_live("sm_90a"):
        m, n, k, stages, ctas = cb.SHAPES[0]
        r = cb.run(text, m, n, k, stages, ctas)
        print(("Run now on this GPU, " if r.passed else "Run now on this GPU, FAILED: ") + r.says())
    else:
        print(recorded_line())
