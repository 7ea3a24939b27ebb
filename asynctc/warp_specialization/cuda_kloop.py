"""Chapter 06's capstone exercise ``ch06.cuda_kloop`` (06 §1): both roles of one CTA's
persistent, warp-specialized k-loop, written as one piece of CUDA with the course's real wrappers
(``ring_wait`` on ``full_bar(s)`` / ``empty_bar(s)``, ``mbarrier_arrive_expect_tx``, ``tma_load_2d``,
``wgmma_desc_advance``, ``wgmma_mma_async_ss``, ``wgmma_commit_group``, ``wgmma_wait_group``,
``mbarrier_arrive``, ``setmaxnreg_dec`` / ``setmaxnreg_inc``) instead of the short names of deep dive 06f's warm-up (``ch06.whole_kloop``).

The check, in order:

* **A (always)** — :func:`build`: the text spliced between the marker lines of
  ``kernels/capstone_cuda.cu`` under ``#line 1 "your CUDA"``, compiled by NVRTC to an sm_90a cubin
  (no GPU needed); an error names the learner's line (:func:`compile_hint`).
* **B (where g++ exists)** — :func:`asynctc.warp_specialization.cuda_kloop_cpu.run_cpu`: the same
  text as host C++ against stand-ins that record every call, the roles ordered by a ring model, the
  loads and wgmmas replayed on the CPU against float64, with hints for a wrong parity (the wait
  that deadlocks or passes too early), swapped or wrong coordinates (which box landed where), a
  wrong descriptor advance (which k-step read which bytes), a release before ``wgmma_wait_group``.
  Without g++ the check says so and stays compile-only.
* **C (on an sm_90a GPU)** — :func:`run`: the build launched like the capstone's
  (:func:`asynctc.warp_specialization.capstone_build.run`), every element against float64, a wait
  that gives up reported from the kernel's error word.

:func:`capstone_cell` is 06 §1's cell after the exercise: the three checks' lines, the SASS table
beside the course's answer's (:func:`sass_table`), and without a GPU the recorded check C of this
kernel (the ``capstone_speed`` record); where that record is missing, the short-name kernel
``capstone.cu``'s (the same CTA), said so.
"""

from __future__ import annotations

import re
import time
import warnings
from typing import NamedTuple


from ..core import exercises as _ex
from ..core import runtime, sass
from . import capstone_build as _cb
from . import cuda_kloop_cpu as cpu

SOURCE, ENTRY = "capstone_cuda.cu", "capstone_cuda_gemm"
FILE_NAME = cpu.FILE_NAME
STAGES = 2
_CODE = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)

#: The learner's skeleton (06 §1): the names and the holes, no parities and no coordinates.
SKELETON = """\
int stage = 0; u32 phase = 0;                 // the ring position, once, before the tile loop
if (wg == 0) {                                // the producer warpgroup
  // setmaxnreg: give registers back
  if (elected) {
    for (int tile = 0; tile < TILES; ++tile)
      for (int k = 0; k < T; ++k) {
        // wait for the stage to be free; announce its bytes; load A's box and B's box
        // advance the ring
      }
  }
} else {                                      // consumer warpgroups 1 and 2
  // setmaxnreg: take registers
  for (int tile = 0; tile < TILES; ++tile) {
    for (int k = 0; k < T; ++k) {
      // wait for the stage's bytes; fence; 4 k-steps of wgmma; commit; wait; release (one thread)
      // advance the ring
    }
    store_tile(acc, tile);
  }
}
"""


def solution() -> str:
    """The course's answer: the text between the kernel file's markers."""
    return _cb.kernel_loops(SOURCE)


def splice(text: str) -> str:
    """The kernel's source with ``text`` between its markers, under ``#line 1 "your CUDA"``."""
    text = _cb.check_text(text)
    before, after, resume = _cb._parts(runtime.kernel_path(SOURCE).read_text())
    return _ex.spliced_source(before, text, after, FILE_NAME, SOURCE, resume)


def compile_hint(log: str, text: str, limit: int = 2) -> str:
    """NVRTC's first errors, each with the line of the learner's ``text``."""
    text = text[1:] if text.startswith("\n") else text
    resume = _cb._parts(runtime.kernel_path(SOURCE).read_text())[2]

    def elsewhere(where, n, msg, rest):
        if where.endswith(SOURCE) and resume <= n <= resume + 3:
            return f"after your last line: {msg} (a missing ';' or '}}'?)"
        at = re.search(rf'line (\d+) of "{re.escape(FILE_NAME)}"', rest[:600])
        return f"line {at.group(1)}: {msg}" if at else f"{where.rsplit('/', 1)[-1]}({n}): {msg}"
    return "NVRTC cannot compile your loops — " + _ex.nvrtc_errors(log, text, FILE_NAME, elsewhere, limit=limit)


class Built(NamedTuple):
    """:func:`build`'s outcome: the kernel, the seconds NVRTC took (0 from the cache), the
    USETMAXREG instructions in its SASS (2: both roles' setmaxnreg kept), ptxas's C75xx warnings."""
    kernel: runtime.CompiledKernel
    seconds: float
    setmaxnreg: int
    warnings: tuple

    def says(self) -> str:
        regs = (f"{self.setmaxnreg} USETMAXREG in its SASS" if self.setmaxnreg else "no USETMAXREG in its SASS")
        warn = f"; ptxas: {self.warnings[0]}" if self.warnings else ""
        return f"NVRTC: sm_90a cubin, {len(self.kernel.cubin)} bytes, {regs}{warn}"


def build(text: str, stages: int = STAGES, bn: int = _cb.BN, out_dtype: str = "float32") -> Built:
    """Check A: compile the spliced kernel for sm_90a (tile 128 × ``bn``, C in ``out_dtype``:
    the exercise's 128 × 128 with fp32 C, or :data:`~.capstone_build.WIDE`'s). Raises
    :class:`TypeError` / :class:`ValueError` for a text or shape it cannot take,
    :class:`~.capstone_build.LoopsCompileError` (message: NVRTC's errors with the learner's lines)
    when NVRTC refuses it."""
    code = splice(text)
    d = _cb.defines(stages, bn, out_dtype)
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", runtime.PerformanceWarning)
            ck = runtime.compile_kernel(SOURCE, ENTRY, "sm_90a", defines=d, code=code)
    except runtime.CompileError as e:
        raise _cb.LoopsCompileError(compile_hint(str(e), _cb.check_text(text)), str(e)) from None
    seconds = time.perf_counter() - t0
    ops = sass.instructions(sass.disassemble(ck.cubin))
    warn = tuple(re.findall(r"\(C75\d\d\)[^\n]*", ck.log or ""))
    return Built(ck, seconds, sum(1 for op in ops if op.startswith("USETMAXREG")), warn)


def run(text: str, m: int, n: int, k: int, stages: int = STAGES, ctas: int | None = None,
        rng=None, bn: int = _cb.BN, out_dtype: str = "float32") -> _cb.CapstoneRun:
    """Check C: :func:`build` launched on a live sm_90a GPU as :func:`.capstone_build.run` launches
    the capstone (fresh fp16 inputs, C poisoned with NaN, every element against float64, the
    kernel's error word); ``bn`` / ``out_dtype`` as :func:`build`'s. Raises
    :class:`~asynctc.core.runtime.NoGPUError` without a GPU."""
    m, n, k, stages, ctas = _cb.check_shape(m, n, k, stages, ctas, bn)
    ck = build(text, stages, bn, out_dtype).kernel
    if not runtime.runs_live("sm_90a"):
        raise runtime.NoGPUError(f"the kernel runs on an sm_90a GPU: {runtime.why_not_live('sm_90a')}")
    return _cb.launch_checked(ck, m, n, k, stages, ctas, rng, "cuda_kloop", bn, out_dtype)


def sass_table(text: str, stages: int = STAGES) -> _cb.SassTable:
    """The learner's build beside the course's answer's (:func:`solution`), row by row of
    :data:`~.capstone_build.SASS_ROWS` (static counts). Raises what :func:`build` raises."""
    t0 = time.perf_counter()
    mine = build(text, stages).kernel
    seconds = time.perf_counter() - t0
    ref = build(solution(), stages).kernel
    return _cb.table_of(mine, ref, [sass.instructions(sass.disassemble(x.cubin)) for x in (mine, ref)], seconds)


#: Said above the short-name kernel's recorded run in :func:`capstone_cell` (no GPU and no
#: ``capstone_speed`` record): which kernel that record ran.
RECORDED_IS_SHORT = ("No Hopper GPU here. The record holds runs of the short-name capstone "
                     "(kernels/capstone.cu: the same CTA and protocol, the course's calls behind "
                     "06f's short names), not yet of this kernel:")


def capstone_cell(text: str, passed: bool = True) -> None:
    """06 §1's cell once ``ch06.cuda_kloop`` passes (held until then): checks A, B and C's lines
    (:func:`verdict`), the SASS table beside the course's answer's with a line per differing row
    (:func:`~.capstone_read.differences`); without a GPU, the ``capstone_speed`` record's check C
    of this kernel (else the short-name kernel's, :data:`RECORDED_IS_SHORT`). Unless ``passed``, the loops
    :func:`~.capstone_read.loops_to_show` picks (the course's answer in the notebook build)."""
    if not _ex.after("ch06.cuda_kloop", held="your loops compiled into a real kernel"):
        return
    from .capstone_read import differences, loops_to_show
    from .capstone_suite import recorded_line
    text, answer = loops_to_show(text, passed, cuda=True)
    v = verdict(text, seed=0)
    print("The course's answer:" if answer else "Yours:")
    for line in (v.compile, v.cpu, v.gpu):
        if line:
            print("  " + line)
    if not answer and v.hint is None:
        table = sass_table(text)
        print(table)
        for line in differences(table, text, cuda=True):      # why a row differs: the call sites
            print("  " + line)
    if v.gpu is None:
        from ..core import records
        rec = records.load_or_none("capstone_speed")      # check C of this kernel (capstone_speed)
        if rec is not None and rec.results.get("checks"):
            print(f"No Hopper GPU here. The record ran this kernel, the course's answer ({rec.label()}):")
            for c in rec.results["checks"]:
                if c.get("bn", _cb.BN) == _cb.BN:      # this exercise's tile (the speed cell names the rest)
                    print("  " + checked_line(c))
        else:
            print(RECORDED_IS_SHORT)
            print(recorded_line())


def checked_line(c: dict) -> str:
    """One recorded check C run (:meth:`~.capstone_build.CapstoneRun.as_dict`) as a line."""
    m, n, k = c["shape"]
    head = (f"{m}×{n}×{k} on {c['ctas']} CTAs ({c['tiles_per_cta']} tiles each, T = {c['k_tiles']} k-tiles, "
            f"{c['stages']} stages): ")
    if c["passed"]:
        return head + f"every element within its bound of float64 (worst {c['check'].get('worst_ratio', float('nan')):.2g} of it)"
    return head + (c.get("error") or "") + f" {c['check'].get('wrong', '?')} elements outside the bound"


class Verdict(NamedTuple):
    """:func:`verdict`: the three checks' lines (``gpu`` None without a GPU, ``cpu`` None without
    g++) and the first hint (None: right)."""
    compile: str
    cpu: str | None
    gpu: str | None
    hint: str | None


def verdict(text: str, seed: int | None = None, gpu: bool | None = None) -> Verdict:
    """Checks A, B and C (module docstring) on ``text``; ``gpu`` None: C where an sm_90a GPU runs."""
    try:
        built = build(text)
    except _cb.LoopsCompileError as e:
        return Verdict(e.hint, None, None, e.hint)
    try:
        r = cpu.run_cpu(text, seed=seed)
    except cpu.NoCompiler as e:
        line = f"CPU run left out: {e}"
    else:
        if not r.passed:
            return Verdict(built.says(), r.says(), None, r.hint)
        line = r.says()
    g = None
    if gpu if gpu is not None else runtime.runs_live("sm_90a"):
        runs = [run(text, *shape, rng=seed) for shape in _cb.SHAPES]
        g = "GPU: " + "; ".join(x.says() for x in runs)
        bad = next((x for x in runs if not x.passed), None)
        if bad is not None:
            return Verdict(built.says(), line, g, "on the GPU: " + bad.says())
    return Verdict(built.says(), line, g, None)


def judge(answer) -> str | None:
    """The exercise's judge: a hint, or an :class:`~asynctc.core.exercises.Accepted` note with
    the checks' lines. Raises :class:`~asynctc.core.exercises.NotAnswered` for comments only."""
    if not isinstance(answer, str):
        return f"pass your loops as a string of CUDA C++ (got {type(answer).__name__}): cuda_kloop = \"\"\" … \"\"\""
    code = _CODE.sub("", answer).strip()
    if not code or code == _CODE.sub("", SKELETON).strip():
        raise _ex.NotAnswered("fill the skeleton's holes in the string, then run the cell again")
    try:
        v = verdict(answer)
    except (TypeError, ValueError) as e:
        return str(e)
    if v.hint:
        return v.hint
    missing = [f"setmaxnreg_{d}" for d in ("dec", "inc") if f"setmaxnreg_{d}" not in code]
    if missing:                      # correct without it, but the roles' registers are part of the exercise
        return _ex.tiered(f"your loops are right, but {' and '.join(missing)} is never called: the roles keep "
                          "168 registers each.", " What does the producer need few registers for, and who "
                          "gets the rest (06 §1, the register budget)?", " The producer gives registers back "
                          "(setmaxnreg_dec<40>() first in its branch), the consumers take them "
                          "(setmaxnreg_inc<232>() first in theirs).")
    return _ex.Accepted(" ".join(x + "." for x in (v.compile, v.cpu, v.gpu) if x))


@_ex.code_exercise("ch06.cuda_kloop", "Write both roles of one CTA's persistent loop in real CUDA with the "
                   "course's wrappers: the producer's bounded wait on empty_bar(stage), "
                   "mbarrier_arrive_expect_tx and two tma_load_2d; the consumers' wait on full_bar(stage), "
                   "wgmma_fence, four wgmma_mma_async_ss with descriptors moved by wgmma_desc_advance, "
                   "commit, wgmma_wait_group, the release on empty_bar(stage) by one thread, and "
                   "setmaxnreg for the roles. The check compiles it with NVRTC for sm_90a, runs it on the "
                   "CPU against float64 (where g++ exists) and on a Hopper GPU (where one is present).",
                   judge=judge)
def _cuda_kloop() -> str:
    return solution()
