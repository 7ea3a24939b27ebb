"""Your Hopper GEMM so far: the end of core chapters 03–06 runs the learner's pieces in one tile.

Each of chapters 03–06 has the learner write one or two pieces of a Hopper GEMM (the stage fill and
the swizzle in 03, the k-step in 04, the producer step in 05, the consumer loop in 06; deep dives
04b and 05b add the descriptor encoder and the parities). :func:`so_far` runs deep dive 06e's CPU
emulation of one 128 × 128 tile (:func:`asynctc.models.emulate_sm90.emulate`) with the learner's
passing answers up to a chapter and the course's pieces for the rest, and says in one clause
whether the tile is right or which of the learner's pieces breaks it.

Answers are read afresh on every call (:func:`asynctc.core.exercises.my_answer`); nothing is
cached. It is a model, not a run: no GPU, nothing timed. About 0.1–1 s on a laptop core.

One line more after chapters 05 and 06 (:func:`timed_line`): when the kept producer step (05) or
consumer loop (06) compiled to the course kernel's SASS instruction for instruction (the check kept
that fact with the answer), the H200's recorded run of that build is the learner's kernel, and the
line gives its number from the record; when the build differs, it says how many instructions
away, of which kinds, and gives the course kernel's recorded number as the course's, never as
the learner's. Both counts are in the timed build, as the check's note gives them.
"""

from __future__ import annotations

import dataclasses
import textwrap
from typing import Any

from . import emulate_sm90 as _e

#: Chapter → (piece, exercise, its name in the line, record suite, which run of it).
TIMED = {5: ("producer_step", "ch05.producer_step", "your producer step", "pipeline", "depth sweep"),
         6: ("consumer_loop", "ch06.consumer_loop", "your consumer loop", "warp_specialization",
             "rung 3")}
SIZE, DTYPE = 4096, "float16"

#: The pieces in the order the course teaches them: (piece, its name in the report, the chapter
#: whose exercises ask it (two digits), the notebook that asks it).
ORDER = (("stage_fill", "stage fill", 3, "chapter 03"),
         ("swizzle", "swizzle", 3, "chapter 03"),
         ("kstep", "k-step", 4, "chapter 04"),
         ("encode", "encode", 4, "deep dive 04b"),
         ("producer_step", "producer step", 5, "chapter 05"),
         ("parities", "parities", 5, "deep dive 05b"),
         ("consumer_loop", "rung-3 consumer loop", 6, "deep dive 06e"))
#: Deep dives' pieces shown even before they are yours: the consumer loop (06e §2) completes the tile.
ALWAYS_SHOWN = {"consumer_loop"}
#: Why chapter 06's exercise is not the tile's consumer loop: the line under that row until 06e's is
#: yours ({what}: the capstone's consumer loop, "your" once it passed). The row says "optional".
CONSUMER_NOTE = "(deep dive 06e §2 asks {what} again, in the kernel's own calls, compiled into rung 3.)"
#: The consumer loop's row while 06e's exercise is not yours (from chapter 06): what it is, not "not passed"
#: (newcomer 56: the row and the note both said the course's runs until you write it; the row says it once).
CONSUMER_ROW = "optional; the course's runs until you write it"
#: Chapter 06's capstone in real calls (06 §1, exercise 1b): a row of its own from chapter 06, before
#: the short-name warm-up's; it compiles into a kernel, not into this CPU tile.
CAPSTONE_CUDA = "ch06.cuda_kloop"
#: The FP8 GEMM's pieces (chapter 07 on): (piece, its name in the report, chapter, exercise). Not in
#: the fp16 tile; their row says only whether the exercise passed.
FP8_PIECES = (("promotion", "promotion", 7, "ch07.promotion"),)


@dataclasses.dataclass
class SoFar:
    """What :func:`so_far` found. ``chapter``: the chapter it was called for (3–10); ``rows``: per
    piece shown, (piece, "yours" / "the course's" / "later", the row's text); ``result``: the
    :class:`~asynctc.models.emulate_sm90.Sm90Gemm` (None when a piece raised); ``verdict``: the
    closing clause; ``blame``: the learner's pieces that break the tile (empty when it is right);
    ``timed``: :func:`timed_line`'s line or None; ``notes``: (piece, text) printed under that piece's
    row."""

    chapter: int
    rows: list
    result: Any
    verdict: str
    blame: list
    timed: str | None = None

    notes: list = dataclasses.field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.result is not None and self.result.passed

    def text(self) -> str:
        head = f"Your Hopper GEMM after chapter {self.chapter:02d}:"
        rows = []
        for piece, _, t in self.rows:                       # a note goes under its piece's row
            rows += [f"  {t}"] + [textwrap.fill(note, 96, initial_indent=" " * 22, subsequent_indent=" " * 22)
                                  for p, note in self.notes if p == piece]
        return "\n".join([head, *rows, self.verdict] + ([self.timed] if self.timed else []))

    __str__ = text

    def __repr__(self) -> str:
        return self.text()


def _chapter(chapter) -> int:
    try:
        n = int(str(chapter).strip())
    except ValueError:
        n = -1
    if not 3 <= n <= 10:
        raise ValueError(f"chapter={chapter!r}: a core chapter from '03' to '10' "
                         "(the first piece is written in chapter 03)")
    return n


def _when(name: str) -> str:
    from ..core import answers
    t = answers.passed_on(name)
    return f"passed {t[:16].replace('T', ' ')} UTC" if t else "passed"


def so_far(chapter: str | int, *, rng: Any = None) -> SoFar:
    """The report for the end of chapter ``chapter`` ("03" … "06"; later chapters take every
    piece): one row per piece — yours ✓ (when it passed), the course's (not passed yet), or the
    chapter it comes in; the optional deep dives' pieces (04b's encode, 05b's parities) only once
    they are yours; from chapter 06, a row for the capstone in real calls (:data:`CAPSTONE_CUDA`) and one for its loops in short names (``ch06.whole_kloop``, 06f's warm-up: they order
    deep dive 06e §4's tile, not this run's) before 06e's consumer loop, and while that loop is not
    yours, its row says it is optional (:data:`CONSUMER_ROW`) with a note under it (:data:`CONSUMER_NOTE`); from chapter 07, a row per FP8 piece (:data:`FP8_PIECES`) — then the
    tile run with your pieces up to that chapter and the course's
    for the rest, checked elementwise against float64. ``rng``: the inputs' generator (default:
    fresh). Raises :class:`ValueError` for a chapter outside 03–10. Never raises for a learner's
    piece: one that raises is named in the verdict."""
    n = _chapter(chapter)
    kept, _ = _e.your_pieces()                    # read afresh: my_answer for each exercise
    mine, rows = {}, []
    for piece, label, ch, where in ORDER:
        name = _e.PIECE_EXERCISES[piece][0]
        deep = where.startswith("deep") and piece not in ALWAYS_SHOWN
        head = f"{label} ({where.split()[-1]})"
        if kept[piece] is not None and ch <= n:
            mine[piece] = kept[piece]
            rows.append((piece, "yours", f"{head:<19} yours ✓ {_when(name)}"))
        elif deep:                                # an optional deep dive's piece: a row once it is yours
            continue
        elif ch > n:
            rows.append((piece, "later", f"{head:<19} comes in {where}"))
        else:
            text = CONSUMER_ROW if piece == "consumer_loop" else "the course's (not passed yet)"
            rows.append((piece, "the course's", f"{head:<19} {text}"))
    if n >= 6:                                    # chapter 06's capstone: not a piece of this run's order
        name, _, _ = _e.CAPSTONE_EXERCISE
        from ..core import exercises
        warm, real = exercises.passed(name), exercises.passed(CAPSTONE_CUDA)
        done = warm or real
        at = next((i for i, r in enumerate(rows) if r[0] == "consumer_loop"), len(rows))
        rows.insert(at, (_e.CAPSTONE, "yours" if warm else "the course's",
                         f"{'warm-up loops (06f)':<19} " + (f"yours ✓ {_when(name)}; they order" if warm else
                                                           "optional; the course's orders") + " the tile in 06e §4"))
        rows.insert(at, ("cuda_kloop", "yours" if real else "not yet",      # newcomer 57: the capstone counts
                         f"{'capstone (06)':<19} " + (f"yours ✓ {_when(CAPSTONE_CUDA)}" if real else "not passed yet")
                         + "; real CUDA: compiled, checked and timed in 06 §1, read in 06 §4 (this CPU tile runs the "
                         "short-name loops)"))
    what = "your capstone's consumer loop" if n >= 6 and done else "the consumers' loop"
    notes = [("consumer_loop", CONSUMER_NOTE.format(what=what))] if n >= 6 and "consumer_loop" not in mine else []
    from ..core import answers
    for piece, label, ch, name in FP8_PIECES:
        if ch <= n:
            done = answers.passed_on(name) is not None
            status = f"yours ✓ {_when(name)}" if done else "not passed yet"
            rows.append((piece, "yours" if done else "not yet",
                         f"{label + f' ({ch:02d})':<19} {status}; FP8 only, not in this fp16 tile"))
    result, blame, verdict = _run(mine, rng)
    return SoFar(n, rows, result, verdict, blame, timed_line(n, kept), notes)


def _recorded(suite: str, sass: dict):
    """(row, cuBLAS's TFLOP/s or None, record) of the recorded run of the build ``sass`` names at
    :data:`SIZE`³ :data:`DTYPE`, or (None, None, None) when no record holds it."""
    from ..core import records
    try:
        rec = records.load(suite)
    except Exception:  # noqa: BLE001 - no record: no number
        return None, None, None
    res = rec.results if isinstance(rec.results, dict) else {}
    if suite == "pipeline":
        rows = [r for r in res.get("sweep", []) if r.get("size") == SIZE and r.get("dtype") == DTYPE]
        fields = sass.get("fields") or {}
        keys = ("dtype", "bm", "bn", "bk", "stages", "consumers", "wait_pending", "out_dtype")
        mine = [r for r in rows if r.get("kernel") == "pipeline" and fields
                and all(k in r and r[k] == fields.get(k) for k in keys)
                and all(r[k] == v for k, v in fields.items() if k in r)]
        cublas = [r["tflops"] for r in rows if r.get("kernel") == "cuBLAS"]
        return (mine[0], cublas[0] if cublas else None, rec) if mine else (None, None, None)
    rows = [r for r in res.get("ladder", []) if r.get("rung") == 3 and r.get("size") == SIZE
            and r.get("dtype") == DTYPE and r.get("label") == sass.get("config")]
    if not rows:
        return None, None, None
    of = rows[0].get("of_cublas")
    return rows[0], (rows[0]["tflops"] / of if of else None), rec


def timed_line(chapter: int, kept: dict | None = None) -> str | None:
    """After chapter 05 (the producer step) or 06 and later (the consumer loop): one line saying
    whether the learner's kept answer compiled to the course kernel's SASS — then the recorded run
    of that build, with its number, is theirs — or how many instructions away it is (then the
    number is labelled the course kernel's). None when no
    answer is kept, or it was kept without that fact (see the module docstring). ``kept``: the
    learner's pieces as :func:`asynctc.models.emulate_sm90.your_pieces` reads them (read here when
    not given)."""
    if chapter < 5:
        return None
    piece, name, what, suite, which = TIMED[min(chapter, 6)]
    from ..core import answers
    meta = answers.meta(name)
    sass = meta.get("sass") if meta else None
    if not isinstance(sass, dict) or (kept if kept is not None else _e.your_pieces()[0])[piece] is None:
        return None
    row, cublas, rec = _recorded(suite, sass)
    build = f"in the timed build ({sass['config']})" if sass.get("config") else "in the timed build"
    if not sass.get("same"):
        from ..core.sass import difference_words
        away = sass.get("changed", "?")
        how = difference_words(sass.get("fewer") or {}, sass.get("extra") or {}, sass.get("reordered") or 0,
                               gloss=True)
        head = (f"{what.capitalize()}: {build} {away} of your kernel's {sass.get('total', '?')} SASS "
                f"instructions differ from the course's" + (f" ({how})" if how else ""))
        if row is None:
            return f"{head}; no recorded run is yours."
        return (f"{head}. No recorded run is exactly yours; the course kernel's, {away} "
                f"instruction{'s' if away != 1 else ''} different, ran at {_number(row, cublas, rec, suite, which)}.")
    same = f"{what.capitalize()} compiles to the course kernel's SASS, instruction for instruction, {build}"
    if row is None:
        return f"{same}; no record of that build is here, so no number."
    gpu = str(rec.provenance.get("gpu", "GPU")).replace("NVIDIA ", "")
    return f"{same}, so the {gpu}'s recorded run is your kernel's: {_number(row, cublas, rec, suite, which)}."


def _number(row: dict, cublas, rec, suite: str, which: str) -> str:
    of = f", {row['tflops'] / cublas:.2f} of cuBLAS" if cublas else ""
    return (f"{row['tflops']:.0f} TFLOP/s at {SIZE}³ fp16{of} (record {suite}, {which}, "
            f"{str(rec.provenance.get('date', '?'))[:10]})")


def _names(pieces) -> str:
    labels = {p: lab for p, lab, _, _ in ORDER}
    return " and ".join(f"your {labels[p]}" for p in pieces)


def _run(mine: dict, rng: Any):
    """(result, blame, verdict clause) of the tile with the learner's pieces ``mine``."""
    try:
        r = _e.emulate(**mine, rng=rng)
    except Exception as exc:  # noqa: BLE001 - a learner's piece raised: find which
        for p in mine:
            try:
                _e.emulate(**{q: v for q, v in mine.items() if q != p}, rng=rng)
            except Exception:  # noqa: BLE001
                continue
            return None, [p], f"The tile stops: {_names([p])} raises {type(exc).__name__}: {exc}"
        return None, list(mine), f"The tile stops: your pieces raise {type(exc).__name__}: {exc}"
    if r.passed:
        return r, [], f"The tile, run on the CPU, is right: worst error / bound {r.check.worst:.2g}."
    blame = list(r.blame)
    if r.error is not None:
        return r, blame, f"The tile stops: {_names(blame)}: {str(r.error).split(': ', 1)[-1]}"
    if r.diagnosis is not None:
        return r, blame, f"The tile stops: {_names(blame)} — {_e._ring_words(r.diagnosis)}"
    why = "; ".join(r.why[p] for p in blame if p in r.why)
    return r, blame, (f"The tile, run on the CPU, is wrong ({_e.where_wrong(r.bad)}): "
                      f"{_names(blame) or 'no piece of yours'} breaks it" + (f" — {why}" if why else "") + ". Deep dive 06e shows how to read this.")
