"""Chapter 06's capstone kernel read by the learner: 06 §4's walk through ``kernels/capstone.cu`` top
to bottom with the learner's loops spliced in (:func:`walk`, :func:`walk_cell`), and 06 §1's SASS
table's differing rows explained from the two texts' call sites (:func:`differences`).

* The walk's blocks come from the kernel file's own ``// ---- walk: NAME ----`` marker lines (and its
  two learner's-loops markers, the last of which opens "leaving"), so an edit of the kernel moves the
  blocks with it; every line after the header comment is shown, the marker lines being the blocks'
  headings. The learner's text is split into the producer's and the consumers' loops at its top-level
  ``} else``, each part named by what it calls (``tma_load``: the producer; ``mma_ktile``: the
  consumers); a text that does not split so is one block, "your loops". With ``cuda=True`` the same
  read is of ``kernels/capstone_cuda.cu``, the real-call capstone (``ch06.cuda_kloop``: 06 §1's
  exercise), its blocks :data:`CUDA_BLOCKS`, its roles told by ``tma_load_2d`` and ``wgmma_mma_async_ss``.
* Each block says, in a sentence or two, what it does, where the learner met it (:data:`BLOCKS`), and
  the fences in it, each with what it orders (:data:`FENCES`: PTX ISA facts, from ``ptx/*.cuh``).
* :func:`differences` reads, per differing row of :func:`~.capstone_build.sass_table`, the call sites
  of the calls that compile to that row (:data:`ROW_CALLS`) in both texts, each with its place (in the
  k-loop, in the tile loop outside it, outside both): the SASS counts are static, so one more place is
  one more instruction, however often a loop runs it.

No GPU: the walk reads files; :func:`differences` takes a table already built (NVRTC).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..core import runtime
from . import capstone_build as cb

_MARK = re.compile(r"^\s*// ---- walk: ([\w-]+) ----$")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)

#: The walk's blocks, in the file's order: marker name → (title, what it does, where the learner met
#: it). "producer", "consumers" and "loops" are the learner's text; "leaving" opens at the to-marker.
BLOCKS = {
    "names": ("The names your loops use",
              "The tile's constants, and the ring's barriers as the exercise names them: `wait` is a "
              "bounded wait on a stage's phase parity; `arrive` and `arrive_expect_tx` are made by one "
              "elected thread of the warpgroup.",
              "chapter [03 §3](03_tma_mbarrier.ipynb) (phase parity) and [05 §2](05_pipelines.ipynb) (the ring's kernel)"),
    "set-up": ("Set-up",
               "Thread 0 sets up each stage's barriers: full counts 1 arrival (the producer's "
               "`arrive_expect_tx`), empty counts 2 (one per consumer warpgroup). Then one fence, and "
               "`__syncthreads` so no thread uses a barrier before it exists.",
               "chapter [03 §3](03_tma_mbarrier.ipynb) (the mbarrier life cycle)"),
    "calls": ("The calls your loops make",
              "`tma_load` issues A's box and B's box of one k-tile onto `full[stage]` (the elected "
              "thread only). `mma_ktile` moves the stage's descriptors to the stage and issues its 4 "
              "k16 wgmmas as one group.",
              "chapter [03, exercise 1](03_tma_mbarrier.ipynb) (fill one stage) and [04 §2–§3](04_wgmma.ipynb) "
              "(descriptors, the k-step)"),
    "epilogue": ("The epilogue: `store_tile`",
                 "Each consumer stores its 64 rows of the tile's C from its accumulators, then zeroes "
                 "them for the next tile.",
                 "chapter [04 §6](04_wgmma.ipynb) (where the accumulator lives)"),
    "producer": ("Your loops: the producer",
                 "Per k-tile: wait until the stage is empty, announce its bytes, load it. The ring "
                 "position carries across tiles.",
                 "chapter [05, exercise 2](05_pipelines.ipynb) (the producer's step) and 06f §1 (the short-name warm-up)"),
    "consumers": ("Your loops: the consumers",
                  "Per k-tile: wait until the stage is full, issue its wgmmas, wait for them, release the "
                  "stage. At a tile's end, store C.",
                  "chapter [05 §1](05_pipelines.ipynb) (the ring, wait groups) and 06f §1 (the short-name warm-up)"),
    "loops": ("Your loops",
              "Both roles' loops, as you wrote them.",
              "chapter [05 §1–§2](05_pipelines.ipynb) and 06f §1 (the short-name warm-up)"),
    "leaving": ("Leaving",
                "The consumers wait for their last wgmma group. The producer's elected thread waits "
                "until each stage's last fill has landed, so no TMA writes into the shared memory of a "
                "CTA that has left.",
                "chapter [05 §1](05_pipelines.ipynb) (wait groups); the producer's drain is new here"),
}

#: The fences a block may hold: (regular expression on its code, the instruction, what it orders).
#: PTX ISA facts, as ptx/mbarrier.cuh and ptx/wgmma.cuh state them.
FENCES = (
    (r"\bfence_mbarrier_init\s*\(", "`fence.mbarrier_init.release.cluster`",
     "makes the barriers' `mbarrier.init` visible to the other threads and to the TMA unit's "
     "complete_tx before they use the barriers"),
    (r"::mma_ktile\s*\(", "`wgmma.fence.sync.aligned` (the first line of wgmma_ring.cuh's `mma_ktile`)",
     "orders the warpgroup's earlier accesses to the accumulator registers before the wgmmas that "
     "read and write them"),
    (r"\bfence_accumulators\s*\(", "`wgmma_fence_operand` (no instruction)",
     "an empty asm that keeps the compiler from moving ordinary reads or writes of the accumulators "
     "across a wgmma, commit or wait"),
    (r"\bwgmma_fence\s*\(", "`wgmma.fence.sync.aligned` (`wgmma_fence`)",
     "orders the warpgroup's earlier accesses to the accumulator registers before the wgmmas that "
     "read and write them"),
    (r"\bwgmma_fence_operand\s*\(", "`wgmma_fence_operand` (no instruction)",
     "an empty asm that keeps the compiler from moving ordinary reads or writes of the accumulators "
     "across a wgmma, commit or wait"),
    (r"\bfence_proxy_async", "`fence.proxy.async`",
     "orders ordinary shared-memory writes before the async proxy (TMA, wgmma) reads them"),
)
#: Said once under the walk when the kernel holds no ``fence.proxy.async``.
NO_PROXY_FENCE = ("No `fence.proxy.async` appears: TMA writes the stages and wgmma reads them, both "
                  "through the async proxy. It is needed where threads write shared memory with ordinary "
                  "stores before a wgmma or a TMA store reads it.")


#: The blocks of ``kernels/capstone_cuda.cu`` (06 §1's exercise ``ch06.cuda_kloop``, real calls), as
#: :data:`BLOCKS`; the learner's blocks reuse :data:`BLOCKS`' titles with these sentences.
CUDA_BLOCKS = {
    "constants": ("The tile's constants",
                  "The headers of the wrappers your text calls, the tile (128 × 128 × 64, two consumers) "
                  "and `kStageBytes`: one stage, A's box then B's box.",
                  "chapter [03, exercise 1](03_tma_mbarrier.ipynb) (a stage's bytes) and [05 §2](05_pipelines.ipynb) (the ring's kernel)"),
    "set-up": BLOCKS["set-up"],
    "names": ("The names your text uses",
              "The shared addresses of stage s's barriers (`full_bar`, `empty_bar`) and boxes (`smem_a`, "
              "`smem_b`), and the first row of A and of stored B of this CTA's tile number `tile`.",
              "chapter [03, exercise 1](03_tma_mbarrier.ipynb) (a stage's boxes and coordinates)"),
    "calls": ("The wrappers, guarded",
              "`ring_wait` is the bounded wait on a barrier's phase parity; it records which wait gave "
              "up. After one gave up, this thread's `mbarrier_arrive_expect_tx` and `tma_load_2d` do "
              "nothing, so a wrong parity ends in an error word, never a hang. Then each consumer's "
              "descriptors of stage 0, k-step 0, and its accumulators.",
              "chapter [03 §3](03_tma_mbarrier.ipynb) (phase parity) and [04 §2](04_wgmma.ipynb) (descriptors)"),
    "epilogue": BLOCKS["epilogue"],
    "producer": ("Your loops: the producer",
                 "`setmaxnreg_dec` gives registers back. Per k-tile the elected thread waits until the "
                 "stage is empty, announces its bytes, loads A's box and B's box at your coordinates.",
                 "chapter [03, exercise 1](03_tma_mbarrier.ipynb) (expect_tx, coordinates), "
                 "[05, exercise 2](05_pipelines.ipynb) (the producer's step) and 06 §1, exercise 1b"),
    "consumers": ("Your loops: the consumers",
                  "`setmaxnreg_inc` takes registers. Per k-tile: wait until the stage is full, fence, "
                  "four wgmmas at your k-step, commit, wait, release the stage (one thread). At a tile's "
                  "end, store C.",
                  "chapter [04 §3](04_wgmma.ipynb) (the k-step, exercise `ch04.kstep`), [05 §1](05_pipelines.ipynb) "
                  "(wait groups) and 06 §1, exercise 1b"),
    "loops": BLOCKS["loops"],
    "leaving": ("Leaving",
                "The consumers wait for their last wgmma group. The producer's elected thread waits "
                "until each stage's last fill has landed (it counted the fills), so no TMA writes into "
                "the shared memory of a CTA that has left.",
                "chapter [05 §1](05_pipelines.ipynb) (wait groups); the producer's drain is new here"),
}


class _Kernel(NamedTuple):
    source: str
    markers: tuple
    blocks: dict
    producer: str            # a call only the producer makes (regular expression)
    consumer: str            # a call only the consumers make
    exercise: str


def _kernel(cuda: bool) -> _Kernel:
    if cuda:
        return _Kernel("capstone_cuda.cu", ("constants", "set-up", "names", "calls", "epilogue"), CUDA_BLOCKS,
                       r"\btma_load_2d\s*\(", r"\bwgmma_mma_async_ss\b", "ch06.cuda_kloop")
    return _Kernel(cb.SOURCE, ("names", "set-up", "calls", "epilogue"), BLOCKS,
                   r"\btma_load\s*\(", r"\bmma_ktile\s*\(", "ch06.whole_kloop")


def _solution(cuda: bool) -> str:
    if cuda:                 # cuda_kloop.solution(), read here: cuda_kloop imports this module
        return cb.kernel_loops(_kernel(True).source)
    from .whole_kloop import SOLUTION
    return SOLUTION


class Block(NamedTuple):
    """One block of the walk: its ``key`` (:data:`BLOCKS`), and ``lines``: (line, the learner's?)."""
    key: str
    lines: tuple

    @property
    def code(self) -> str:
        return _COMMENT.sub("", "\n".join(line for line, _ in self.lines))

    def fences(self) -> list[tuple[str, str]]:
        """(instruction, what it orders) of each :data:`FENCES` entry whose call is in the block."""
        return [(name, what) for rx, name, what in FENCES if re.search(rx, self.code)]


def _split_roles(lines: list[str]):
    """(first part, second part) of the learner's lines at the top-level ``} else`` (brace depth 1
    before that line), or None."""
    depth = 0
    for i, line in enumerate(lines):
        code = _COMMENT.sub("", line)
        if depth == 1 and re.match(r"\s*\}\s*else\b", code):
            return lines[:i], lines[i:]
        depth += code.count("{") - code.count("}")
    return None


def _role_blocks(text: str, cuda: bool = False) -> list[Block]:
    lines = cb.check_text(text).rstrip("\n").splitlines()
    parts = _split_roles(lines)
    kern = _kernel(cuda)
    if parts:
        first, second = ("\n".join(p) for p in parts)
        calls = [(bool(re.search(kern.producer, _COMMENT.sub("", p))), bool(re.search(kern.consumer, _COMMENT.sub("", p))))
                 for p in (first, second)]
        if calls == [(True, False), (False, True)]:
            return [Block("producer", tuple((x, True) for x in parts[0])),
                    Block("consumers", tuple((x, True) for x in parts[1]))]
        if calls == [(False, True), (True, False)]:
            return [Block("consumers", tuple((x, True) for x in parts[0])),
                    Block("producer", tuple((x, True) for x in parts[1]))]
    return [Block("loops", tuple((x, True) for x in lines))]


def walk(text: str, cuda: bool = False) -> list[Block]:
    """``kernels/capstone.cu`` (``cuda``: ``kernels/capstone_cuda.cu``, the real calls' kernel) with
    ``text`` (the capstone's loops) in its place, as :class:`Block`\\ s in the file's order: every line
    after the header comment (which ends at the first walk marker), the marker lines being the
    headings. Raises what :func:`~.capstone_build.check_text` raises, and RuntimeError where the
    file's markers are missing."""
    kern = _kernel(cuda)
    code = runtime.kernel_path(kern.source).read_text()
    before, after, _ = cb._parts(code)
    head = before.splitlines()[:-1]                           # the from-marker line is a heading
    starts = [n for n, line in enumerate(head) if _MARK.match(line)]
    if not starts or tuple(_MARK.match(head[n]).group(1) for n in starts) != kern.markers:
        raise RuntimeError(f"{kern.source}: the walk's markers are not {', '.join(kern.markers)}")
    blocks = []
    for a, b in zip(starts, starts[1:] + [len(head)]):
        blocks.append(Block(_MARK.match(head[a]).group(1), tuple((x, False) for x in head[a + 1:b])))
    blocks += _role_blocks(text, cuda)
    blocks.append(Block("leaving", tuple((x, False) for x in after.rstrip("\n").splitlines()[1:])))
    return blocks


def walk_markdown(text: str, mark: str = "yours", cuda: bool = False) -> str:
    """:func:`walk` as Markdown: per block its title, where the learner met it, a sentence or two, its
    fences, and its lines, each behind a column that says ``mark`` for the learner's lines."""
    out, width, blocks = [], len(mark), walk(text, cuda)
    for i, block in enumerate(blocks, 1):
        title, says, met = _kernel(cuda).blocks[block.key]
        out.append(f"**{i}. {title}.** You met this in {met}. {says}")
        for name, what in block.fences():
            out.append(f"- Fence: {name}: {what}.")
        lines = list(block.lines)
        while lines and not lines[-1][0].strip():            # a block's trailing blank lines
            lines.pop()
        rows = [f"{mark if yours else '':{width}s} │ {line}".rstrip() for line, yours in lines]
        out.append("```cuda\n" + "\n".join(rows) + "\n```")
    if not re.search(FENCES[-1][0], "\n".join(b.code for b in blocks)):
        out.append(NO_PROXY_FENCE)
    return "\n\n".join(out)


def loops_to_show(text: str, passed: bool, cuda: bool = False) -> tuple[str, bool]:
    """(the loops a cell held until the capstone passes shows, whether they are the course's answer):
    ``text`` if ``passed``; else the loops kept when the capstone last passed (a restarted kernel);
    else — a cell opened without a pass, the notebook build — the course's answer. ``cuda``: the
    real-call capstone (``ch06.cuda_kloop``), else the short-name one (``ch06.whole_kloop``)."""
    from ..core import exercises as _ex
    name = _kernel(cuda).exercise
    if passed:
        return text, False
    if _ex.passed(name):
        return _ex.my_answer(name), False
    return _solution(cuda), True


def walk_cell(text: str, passed: bool = True, cuda: bool = False) -> None:
    """06 §4's cell: the whole capstone kernel with the learner's loops (:func:`walk_markdown`), held
    (one line saying it waits for exercise 1) until the capstone passes. ``cuda``: the real-call
    capstone in ``kernels/capstone_cuda.cu``."""
    from IPython.display import display
    from ..core import exercises as _ex
    from ..core import notebook
    if not _ex.after(_kernel(cuda).exercise, held="your kernel, top to bottom: it waits for exercise 1, "
                     "whose loops are its middle"):
        return
    text, answer = loops_to_show(text, passed, cuda)
    display(notebook.Markdown(walk_markdown(text, "answer" if answer else "yours", cuda)))


# ---- the SASS table's differences ---------------------------------------------------------------

#: Row of :data:`~.capstone_build.SASS_ROWS` → (the calls in the loops that compile to it, a regular
#: expression; their name in words).
ROW_CALLS = {
    "SYNCS.PHASECHK (waits)": (r"\b(?:full|empty)\s*\.\s*wait\s*\(", "full.wait / empty.wait"),
    "SYNCS.ARRIVE (arrives)": (r"\b(?:full|empty)\s*\.\s*arrive(?:_expect_tx)?\s*\(", "arrive / arrive_expect_tx"),
    "UTMALDG (TMA loads)": (r"\btma_load\s*\(", "tma_load (two TMA loads)"),
    "HGMMA (wgmmas)": (r"\bmma_ktile\s*\(", "mma_ktile (four wgmmas)"),
    "WARPGROUP.ARRIVE": (r"\bmma_ktile\s*\(", "mma_ktile (its wgmma.fence)"),
    "WARPGROUP.DEPBAR": (r"\bwgmma_wait_group\s*<", "wgmma_wait_group"),
    "STG (C stores)": (r"\bstore_tile\s*\(", "store_tile"),
}


#: :data:`ROW_CALLS` for the real calls (``ch06.cuda_kloop``).
CUDA_ROW_CALLS = {
    "SYNCS.PHASECHK (waits)": (r"\bring_wait\s*\(", "ring_wait"),
    "SYNCS.ARRIVE (arrives)": (r"\bmbarrier_arrive(?:_expect_tx)?\s*\(", "mbarrier_arrive / mbarrier_arrive_expect_tx"),
    "UTMALDG (TMA loads)": (r"\btma_load_2d\s*\(", "tma_load_2d"),
    "HGMMA (wgmmas)": (r"\bwgmma_mma_async_ss\b", "wgmma_mma_async_ss"),
    "WARPGROUP.ARRIVE": (r"\bwgmma_fence\s*\(", "wgmma_fence"),
    "WARPGROUP.DEPBAR": (r"\bwgmma_wait_group\s*<", "wgmma_wait_group"),
    "STG (C stores)": (r"\bstore_tile\s*\(", "store_tile"),
}


def call_sites(text: str, pattern: str) -> list[tuple[str, str]]:
    """(place, the statement) of each call matching ``pattern`` in ``text`` (comments left out); the
    place: "in the k-loop", "in the tile loop, outside the k-loop" or "outside the loops", from the
    braces of the ``for`` loops over ``k`` and ``tile`` around it."""
    stack, pending, parens, sites = [], "", 0, []
    for line in _COMMENT.sub("", text).splitlines():
        for m in re.finditer(pattern, line):
            place = ("in the k-loop" if "k" in stack else "in the tile loop, outside the k-loop"
                     if "tile" in stack else "outside the loops")
            stmt = line[m.start():].split(";")[0].strip() + ";"
            sites.append((place, re.sub(r"\s+", " ", stmt)))
        for ch in line:
            if ch == "{":
                stack.append("k" if re.search(r"\bfor\s*\(\s*(?:int\s+)?k\s*=", pending) else
                             "tile" if re.search(r"\bfor\s*\(\s*(?:int\s+)?tile\s*=", pending) else "")
                pending = ""
            elif ch == "}":
                stack, pending = stack[:-1], ""
            elif ch == ";" and not parens:            # a for's header keeps its ';'
                pending = ""
            else:
                parens += (ch == "(") - (ch == ")")
                pending += ch
        pending += " "
    return sites


_WORDS = {1: "one", 2: "two", 3: "three"}


def _places(sites) -> str:
    return ", ".join(f"`{stmt}` {place}" for place, stmt in sites) or "none"


def differences(table: "cb.SassTable", text: str, course: str | None = None, cuda: bool = False) -> list[str]:
    """One line per row of ``table`` where the learner's count differs from the course's: the call
    sites in ``text`` and in ``course`` (default the course's answer: :data:`~.whole_kloop.SOLUTION`,
    ``cuda``: :func:`~.cuda_kloop.solution`) of the calls that compile to that row, with their
    places, and what the difference in places accounts for."""
    course = _solution(cuda) if course is None else course
    out = []
    for what, mine, theirs in table.rows:
        if mine == theirs:
            continue
        rx, name = (CUDA_ROW_CALLS if cuda else ROW_CALLS)[what]
        a, b = call_sites(text, rx), call_sites(course, rx)
        line = (f"{what}: {mine} in yours, {theirs} in the course's. Calls of {name}: yours {_places(a)}; "
                f"the course's {_places(b)}.")
        extra, d = len(a) - len(b), mine - theirs
        n = f"{_WORDS.get(abs(extra), abs(extra))} {'more' if extra > 0 else 'fewer'}"
        if extra and d == extra:
            more = [p for p, _ in a]
            for p, _ in b:
                if p in more:
                    more.remove(p)
            drain = (" It runs once a tile, outside the k-loop: a drain."
                     if more == ["in the tile loop, outside the k-loop"] else "")
            line += (f" {n.capitalize()} call site{'s' * (abs(extra) > 1)}, {n} instruction"
                     f"{'s' * (abs(extra) > 1)}: SASS counts each once, however often its loop runs it.{drain}")
        elif extra:
            line += (f" {n.capitalize()} call site{'s' * (abs(extra) > 1)}; each compiles to several "
                     "instructions here (the counts are static).")
        else:
            line += " The same call sites: the compiler laid them out differently (unrolled or merged)."
        out.append(line)
    return out
