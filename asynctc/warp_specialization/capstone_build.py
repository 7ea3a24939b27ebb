"""Chapter 06's capstone ``ch06.whole_kloop`` compiled: the learner's loops, as written, become the
body of a real sm_90a kernel (``kernels/capstone.cu``: a persistent, warp-specialized GEMM CTA of
three warpgroups, TMA loads into a ring of stages with full/empty mbarriers, wgmma, each consumer's
accumulators stored to C). The exercise's check (:mod:`.whole_kloop`) reads the text in the course's
models; this module builds it with NVRTC — no GPU needed — and, on a GPU, runs it.

* :func:`splice` puts the text between the kernel's two marker lines under ``#line 1 "your loops"``,
  so NVRTC names the learner's lines; the kernel file is never changed (deep dive 06e's
  :mod:`.consumer_loop` does the same with rung 3's consumer loop).
* :func:`build` compiles it (:func:`asynctc.core.runtime.compile_kernel`: NVRTC → cubin for
  sm_90a, cached on disk); a compile error is raised as :class:`LoopsCompileError`, whose message
  is NVRTC's first errors with the line of the learner's text.
* :func:`sass_table` counts the instructions that carry the protocol in the learner's build and in
  the course's answer's (:data:`~.whole_kloop.SOLUTION`): the mbarrier waits and arrives, the TMA
  loads, the wgmmas, the warpgroup fences and waits, the stores of C.
* :func:`run` (a live sm_90a GPU) launches the build on fresh random fp16 inputs, C poisoned with
  NaN, every element compared with float64 within a bound relative to |A|·|B|
  (:func:`asynctc.core.checks.compare_elementwise`); a wait that gives up is reported from the
  kernel's error word (:func:`decode_error`), never a hang. :data:`SHAPES` are the exercise's
  rings on the GPU: several tiles per CTA, T k-tiles a tile no multiple of the stages, so a ring
  that restarts at each tile goes wrong at tile 1.

The record suite ``capstone`` (:mod:`.capstone_suite`) runs the course's answer and wrong variants.
"""

from __future__ import annotations

import functools
import re
import time
import warnings
from typing import NamedTuple

import numpy as np

from ..core import exercises as _ex
from ..core import runtime, sass
from ..core.checks import ElementCheck, compare_elementwise, random_operands
from .config import WSConfig

SOURCE, ENTRY = "capstone.cu", "capstone_gemm"
#: What NVRTC calls the learner's text in its messages.
FILE_NAME = "your loops"
#: The tile (rows, columns, k-tile depth) and the CTA's threads: kernels/capstone.cu's.
BM, BN, BK, THREADS = 128, 128, 64, 384
#: The stages of the default build: the exercise's first ring (whole_kloop.RINGS[0]).
STAGES = 2
#: Rung 3's tile for the real-call capstone (``capstone_cuda.cu`` only; 06 §1's speed table): the
#: same loops built with BN = 256 columns per tile, 4 stages and fp16 C, as rung 3 runs.
WIDE = {"bn": 256, "stages": 4, "out_dtype": "float16"}
_OUTS = ("float32", "float16")
_FROM = "    // ---- the learner's loops: from here ----"
_TO = "    // ---- the learner's loops: to here ----"
#: The calls' forms (the exercise's prompt), named in a hint when NVRTC refuses a call.
CALL_FORMS = ("tma_load(stage, tile, k)", "mma_ktile(acc, stage)", "store_tile(acc, tile)",
              "full.wait(stage, parity)", "full.arrive_expect_tx(stage, bytes)", "empty.arrive(stage)")
_CODE = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)

#: (M, N, K, stages, CTAs) of :func:`run`'s checks: the exercise's rings on the GPU — (2 stages,
#: T = 3, 3 tiles per CTA), (3 stages, T = 4, 2 tiles per CTA) — and a larger one (T = 7, 4 tiles
#: per CTA on 16 CTAs).
SHAPES = ((256, 384, 192, 2, 2), (512, 512, 256, 3, 8), (1024, 1024, 448, 2, 16))


class LoopsCompileError(runtime.CompileError):
    """NVRTC refused the learner's loops: ``str()`` is :attr:`hint` (its first errors, each with
    the line of the learner's text); :attr:`log` is NVRTC's whole log."""

    def __init__(self, hint: str, log: str):
        super().__init__(hint)
        self.hint, self.log = hint, log


def _fail(field: str, value, rule: str, kind: type = ValueError):
    raise kind(f"{field}={value!r}: {rule}")


def _check_int(field: str, value, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        _fail(field, value, f"must be an int (got {type(value).__name__})", TypeError)
    if value < lo or (hi is not None and value > hi):
        _fail(field, value, f"must be in {lo} .. {hi}" if hi is not None else f"must be ≥ {lo}")
    return int(value)


def check_text(text) -> str:
    """``text`` as the kernel takes it: a str (else :class:`TypeError`) with code besides comments
    (else :class:`ValueError`), without the marker lines or a ``#line`` of its own."""
    if not isinstance(text, str):
        _fail("text", type(text).__name__, "the loops are a string of CUDA C++ (whole_kloop's answer)",
              TypeError)
    if not _CODE.sub("", text).strip():
        _fail("text", text[:40], "holds no code: write both roles' loops (whole_kloop.TEMPLATE)")
    if re.search(r"^\s*#\s*line\b", text, re.M) or "the learner's loops:" in text:
        _fail("text", "#line / marker", "the loops may not set their own #line or hold the kernel's markers")
    return text[1:] if text.startswith("\n") else text


def config(stages: int = STAGES, bn: int = BN, out_dtype: str = "float32") -> WSConfig:
    """The chapter-06 configuration whose stage layout, TMA boxes and descriptor templates the
    capstone's kernel uses: 128 × ``bn`` tile (128, or 256 for :data:`WIDE`), two consumers, fp16,
    K-major B, C in ``out_dtype`` (float32 or float16), ``stages``; validated (shared memory
    included), else :class:`ValueError` naming the field."""
    stages = _check_int("stages", stages, 2, 6)
    if isinstance(bn, bool) or bn not in (BN, WIDE["bn"]):
        _fail("bn", bn, f"the capstone's tile is {BM} × {BN}, or rung 3's {BM} × {WIDE['bn']}")
    if out_dtype not in _OUTS:
        _fail("out_dtype", out_dtype, f"one of {', '.join(_OUTS)}")
    cfg = WSConfig(bm=BM, bn=bn, stages=stages, consumers=2, dtype="float16", out_dtype=out_dtype,
                   persistent=True)
    cfg.validate()            # a ValueError naming the field (shared memory at 6 stages of 128×256)
    return cfg


def defines(stages: int = STAGES, bn: int = BN, out_dtype: str = "float32") -> dict:
    """The defines of the build: STAGES and the layout model's byte offsets (ring_defaults.cuh),
    and OUT_F32 = 0 only for fp16 C (the default build's defines, so its cache key, unchanged)."""
    d = config(stages, bn, out_dtype).defines
    out = {k: d[k] for k in ("STAGES", "BM", "BN", "A_KSTEP_BYTES", "B_KSTEP_BYTES", "B_BOX_BYTES")}
    if out_dtype != "float32":
        out["OUT_F32"] = 0
    return out


@functools.lru_cache(maxsize=1)
def _parts(code: str) -> tuple[str, str, int]:
    """(the source up to the from-marker line, from the to-marker line on, the 1-based line of
    the to-marker): what :func:`splice` puts the text between."""
    lines = code.splitlines(keepends=True)
    a = [n for n, ln in enumerate(lines) if ln.rstrip("\n") == _FROM]
    b = [n for n, ln in enumerate(lines) if ln.rstrip("\n") == _TO]
    if len(a) != 1 or len(b) != 1 or b[0] <= a[0]:
        raise RuntimeError(f"{SOURCE}: the learner's-loops markers are not where the capstone expects them")
    return "".join(lines[:a[0] + 1]), "".join(lines[b[0]:]), b[0] + 1


def kernel_loops(source: str = SOURCE) -> str:
    """The loops the kernel file ``source`` holds between its markers (the course's answer, as
    compiled by the file unchanged; ``capstone_cuda.cu``'s for the real calls)."""
    code = runtime.kernel_path(source).read_text()
    before, after, _ = _parts(code)
    return code[len(before):len(code) - len(after)]


def splice(text: str) -> str:
    """The kernel's source with ``text`` between its markers; NVRTC counts the text's lines from 1
    in a file it calls :data:`FILE_NAME` and the kernel's own lines as before."""
    text = check_text(text)
    before, after, resume = _parts(runtime.kernel_path(SOURCE).read_text())
    return _ex.spliced_source(before, text, after, FILE_NAME, SOURCE, resume)


def compile_hint(log: str, text: str, limit: int = 2) -> str:
    """NVRTC's first errors, each with the line of the learner's ``text`` it names (the kernel's
    own line where the error surfaces after the text: a missing brace or ';')."""
    text = text[1:] if text.startswith("\n") else text
    resume = _parts(runtime.kernel_path(SOURCE).read_text())[2]

    def elsewhere(where, n, msg, rest):
        if where.endswith(SOURCE) and resume <= n <= resume + 3:
            return f"after your last line: {msg} (a missing ';' or '}}'?)"
        at = re.search(rf'line (\d+) of "{re.escape(FILE_NAME)}"', rest[:600])
        return f"line {at.group(1)}: {msg}" if at else f"{where.rsplit('/', 1)[-1]}({n}): {msg}"
    def note(msg):
        if "lambda" in msg:      # tma_load, mma_ktile, store_tile are lambdas in the kernel
            return f" (the calls take: {', '.join(CALL_FORMS)})"
        return ""
    return "NVRTC cannot compile your loops — " + _ex.nvrtc_errors(log, text, FILE_NAME, elsewhere,
                                                                   limit=limit, note=note)


def build(text: str, stages: int = STAGES) -> runtime.CompiledKernel:
    """Compile ``kernels/capstone.cu`` with ``text`` (the capstone's loops) spliced in, for sm_90a
    with ``stages`` stages (2..6): NVRTC → cubin, no GPU needed, cached on disk and in memory.
    Raises :class:`TypeError` / :class:`ValueError` for a text or stages it cannot take
    (:func:`check_text`), :class:`LoopsCompileError` when NVRTC refuses the text."""
    code = splice(text)
    d = defines(stages)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", runtime.PerformanceWarning)
            return runtime.compile_kernel(SOURCE, ENTRY, "sm_90a", defines=d, code=code)
    except LoopsCompileError:
        raise
    except runtime.CompileError as e:
        raise LoopsCompileError(compile_hint(str(e), check_text(text)), str(e)) from None


def course_build(stages: int = STAGES) -> runtime.CompiledKernel:
    """:func:`build` of the course's answer, :data:`~.whole_kloop.SOLUTION`."""
    from .whole_kloop import SOLUTION
    return build(SOLUTION, stages)


# ---- the SASS table ----------------------------------------------------------------------------

#: The rows of :func:`sass_table`: (what, regular expression on the full opcode).
SASS_ROWS = (
    ("SYNCS.PHASECHK (waits)", r"^SYNCS\.PHASECHK"),
    ("SYNCS.ARRIVE (arrives)", r"^SYNCS\.ARRIVE"),
    ("UTMALDG (TMA loads)", r"^UTMALDG\b"),
    ("HGMMA (wgmmas)", r"^HGMMA\b"),
    ("WARPGROUP.ARRIVE", r"^WARPGROUP\.ARRIVE\b"),
    ("WARPGROUP.DEPBAR", r"^WARPGROUP\.DEPBAR\b"),
    ("STG (C stores)", r"^STG\b"),
)


def _opcodes(cubin: bytes) -> list[str]:
    """The full opcodes of the kernel's SASS (nvdisasm, cached by :func:`asynctc.core.sass.disassemble`)."""
    text = sass.disassemble(cubin)
    return sass.instructions(sass.kernel_text(text, ENTRY) or text)


def opcode_rows(cubin: bytes, ops: list[str] | None = None) -> dict[str, int]:
    """{row of :data:`SASS_ROWS`: how many such instructions the kernel's SASS has} (static
    counts: an instruction inside a loop counts once); ``ops``: :func:`_opcodes` already read."""
    ops = _opcodes(cubin) if ops is None else ops
    return {what: sum(1 for op in ops if re.search(rx, op)) for what, rx in SASS_ROWS}


class SassTable(NamedTuple):
    """:func:`sass_table`: ``rows`` of (what, your build's count, the course's count); ``total``
    (your build's instructions, the course's); ``seconds``: the time the learner's build took
    (0 when it came from the cache)."""
    rows: list
    total: tuple
    seconds: float

    @property
    def same(self) -> bool:
        return all(y == c for _, y, c in self.rows)

    def __str__(self) -> str:
        w = max(len(r[0]) for r in self.rows)
        lines = [f"{'SASS':{w}s}  {'yours':>6s}  {'course':>6s}"]
        lines += [f"{what:{w}s}  {y:6d}  {c:6d}" for what, y, c in self.rows]
        return "\n".join(lines)


def sass_table(text: str, stages: int = STAGES) -> SassTable:
    """The learner's build beside the course's answer's (:func:`course_build`), row by row of
    :data:`SASS_ROWS`. Raises what :func:`build` raises."""
    t0 = time.perf_counter()
    mine = build(text, stages)
    seconds = time.perf_counter() - t0
    ref = course_build(stages)
    return table_of(mine, ref, [_opcodes(x.cubin) for x in (mine, ref)], seconds)


def table_of(mine: runtime.CompiledKernel, ref: runtime.CompiledKernel, ops: list[list[str]],
             seconds: float) -> SassTable:
    """The :class:`SassTable` of two builds whose opcodes ``ops`` (mine, the answer's) are read:
    :data:`SASS_ROWS` counted in each, the total instructions, the learner's build seconds."""
    a, b = (opcode_rows(x.cubin, o) for x, o in zip((mine, ref), ops))
    return SassTable([(what, a[what], b[what]) for what, _ in SASS_ROWS], tuple(len(o) for o in ops), seconds)


# ---- the run on a GPU ---------------------------------------------------------------------------

#: The error tag's barrier field (ring.cuh's WAIT_FULL, WAIT_EMPTY).
_BARRIERS = {1: "full", 2: "empty"}


def decode_error(word: int) -> str:
    """The kernel's error word in words: which wait gave up — its barrier and stage, the warpgroup
    (0 the producer, 1 and 2 the consumers) and the how-many-th wait of that thread on that barrier
    set it was (the ring counter j in the course's loops; 4095: the producer's last check that its
    final fills landed). ``"ok"`` for 0."""
    word = int(word)
    if word == 0:
        return "ok"
    from ..pipeline import error_fields
    f = error_fields(word)
    wg = f["warpgroup"]
    who = "the producer (warpgroup 0)" if wg == 0 else f"consumer {wg - 1} (warpgroup {wg})"
    bar = _BARRIERS.get(f["barrier"], f"tag {f['barrier']}")
    n = f["k_tile"]
    which = ("its check, before leaving, that the last fill landed" if n == 0xFFF else
             f"its wait number {n} on {bar} (ring counter {n} in the course's loops)")
    return (f"a wait gave up after 2 s: {who} on {bar}[{f['stage']}], {which}; the kernel "
            f"ended instead of hanging (error word {word:#x})")


def check_shape(m, n, k, stages=STAGES, ctas=None, bn: int = BN) -> tuple[int, int, int, int, int]:
    """(M, N, K, stages, CTAs) checked: ints (else :class:`TypeError`); M and N positive multiples
    of 128 and K of 64 (the kernel has no edge handling), below 2^31 (TMA coordinates are signed
    32-bit), M·N·K at most 2^33 (the float64 check on the host); ``ctas`` (default: a third of the
    tiles, at least 1, so every CTA walks several tiles) in 1 .. the tile count; N a multiple of
    ``bn`` (256 for :data:`WIDE`). Raises
    :class:`ValueError` naming the field, the value and the rule."""
    m, n, k = (_check_int(name, v, 1, 2**31 - 1) for name, v in (("M", m), ("N", n), ("K", k)))
    for name, v, t in (("M", m, BM), ("N", n, bn), ("K", k, BK)):
        if v % t:
            _fail(name, v, f"the capstone's kernel takes whole tiles: a positive multiple of {t}")
    if m * n * k > 2**33:
        _fail("M·N·K", m * n * k, "at most 2^33: every element is checked against float64 on the host")
    stages = _check_int("stages", stages, 2, 6)
    tiles = m // BM * (n // bn)
    ctas = max(1, tiles // 3) if ctas is None else _check_int("ctas", ctas, 1, tiles)
    return m, n, k, stages, ctas


class CapstoneRun(NamedTuple):
    """:func:`run`'s outcome: the shape (M, N, K), ``stages``, ``ctas``, ``tiles_per_cta`` (the
    most any CTA walks), ``k_tiles`` (T), ``error_word`` (0: no wait gave up), ``check`` (the
    elementwise comparison with float64)."""
    shape: tuple
    stages: int
    ctas: int
    tiles_per_cta: int
    k_tiles: int
    error_word: int
    check: ElementCheck

    @property
    def passed(self) -> bool:
        return self.error_word == 0 and bool(self.check.passed)

    def says(self) -> str:
        """One line: the shape and ring, then every element within its bound, or what went wrong."""
        m, n, k = self.shape
        head = (f"{m}×{n}×{k} on {self.ctas} CTAs ({self.tiles_per_cta} tiles each, T = {self.k_tiles} "
                f"k-tiles, {self.stages} stages): ")
        c = self.check
        if self.passed:
            return head + f"every element within its bound of float64 (worst {c.worst:.2g} of it)"
        parts = [decode_error(self.error_word)] if self.error_word else []
        if not c.passed:
            parts.append(f"{c.wrong} elements outside the bound, {c.unwritten} never written"
                         + (f", the first at {tuple(c.first_wrong)}" if c.first_wrong else ""))
        return head + "; ".join(parts)

    def as_dict(self) -> dict:
        return {"shape": list(self.shape), "stages": self.stages, "ctas": self.ctas,
                "tiles_per_cta": self.tiles_per_cta, "k_tiles": self.k_tiles,
                "error_word": self.error_word, "error": decode_error(self.error_word),
                "check": self.check.as_dict(), "passed": self.passed}


def run(text: str, m: int, n: int, k: int, stages: int = STAGES, ctas: int | None = None,
        rng=None) -> CapstoneRun:
    """Build ``text`` (:func:`build`) and launch it on a live sm_90a GPU: C (M×N fp32) = A·B with
    fresh random fp16 A (M×K) and B (K×N, passed stored N×K), C poisoned with NaN, ``ctas``
    persistent CTAs (:func:`check_shape`). Returns a :class:`CapstoneRun` — a wait that gave up
    (the error word) and wrong elements are reported in it, not raised. Raises what
    :func:`check_shape` and :func:`build` raise, and :class:`~asynctc.core.runtime.NoGPUError`
    without a GPU."""
    m, n, k, stages, ctas = check_shape(m, n, k, stages, ctas)
    ck = build(text, stages)
    if not runtime.runs_live("sm_90a"):
        raise runtime.NoGPUError(f"the capstone's kernel runs on an sm_90a GPU: {runtime.why_not_live('sm_90a')}")
    return launch_checked(ck, m, n, k, stages, ctas, rng, "capstone")


def launcher(ck: runtime.CompiledKernel, da, dbt, dc, stages: int, ctas: int, bn: int = BN):
    """(a no-argument launcher of the built capstone ``ck`` — ``capstone.cu``'s or
    ``capstone_cuda.cu``'s entry — on A (M×K), B stored N×K and C (fp32, or fp16 for a build with
    fp16 C), all :class:`~asynctc.core.memory.DeviceArray`, on ``ctas`` persistent CTAs, tiles of
    128 × ``bn``; its error word, a one-element :class:`~asynctc.core.memory.DeviceArray` the kernel
    sets when a wait gives up)."""
    from ..core.memory import DeviceArray
    from .launch import _tile_map
    (m, k), n = da.shape, dbt.shape[0]
    out_dtype = "float16" if np.dtype(dc.dtype) == np.float16 else "float32"
    cfg = config(stages, bn, out_dtype)
    err = DeviceArray.from_host(np.zeros(1, np.uint32))
    ta, tb = _tile_map(da, cfg.a_box), _tile_map(dbt, cfg.b_load_box)
    desc_a0, desc_b0 = cfg.descriptor_templates()
    shmem = 1024 + stages * (BM + bn) * 128
    runtime.check_launch(ctas, THREADS, shmem, ck)
    args = (ta, tb, dc, np.int32(m), np.int32(n), np.int32(k), np.uint64(desc_a0), np.uint64(desc_b0), err)
    return (lambda: runtime.launch(ck, ctas, THREADS, *args, shmem_bytes=shmem)), err


def launch_checked(ck: runtime.CompiledKernel, m: int, n: int, k: int, stages: int, ctas: int, rng,
                   label: str, bn: int = BN, out_dtype: str = "float32") -> CapstoneRun:
    """Launch a built capstone kernel (:func:`launcher`; the shape already through
    :func:`check_shape`) on fresh fp16 inputs, C (``out_dtype``) poisoned, and check every element
    against float64; ``label`` names the run in the check."""
    from ..core.memory import DeviceArray
    a, b = random_operands(m, n, k, "float16", rng)      # a Generator passes through default_rng
    da, db = DeviceArray.from_host(a), DeviceArray.from_host(np.ascontiguousarray(b.T))
    dc = DeviceArray.poisoned((m, n), np.float16 if out_dtype == "float16" else np.float32)
    go, err = launcher(ck, da, db, dc, stages, ctas, bn)
    go()
    word = int(err.to_host()[0])
    tiles = m // BM * (n // bn)
    check = compare_elementwise(dc.to_host(), a, b, out_dtype, label=f"{label} {m}x{n}x{k}")
    return CapstoneRun((m, n, k), stages, ctas, -(-tiles // ctas), k // BK, word, check)
