"""Chapter 01's code exercise ``ch01.two_rows``: the learner completes a numba kernel in which each
thread computes TWO elements of C, rows ``row`` and ``row + TILE`` of one column (a 2×1 register
tile), so that each value read from the shared B tile feeds two FFMAs instead of one
(:mod:`asynctc.simt`'s kernel, one element per thread, is the starting point).

The check (:func:`judge`) launches the learner's ``@cuda.jit`` kernel — in numba's CUDA simulator
on a machine without a GPU, on the GPU where there is one — with a grid of ``TILE``×``TILE`` blocks
that each cover 2·TILE rows × TILE columns, on fresh random float32 inputs of odd sizes
(:data:`SHAPE`: a partial block of rows, of columns and of k), into a NaN-poisoned C with NaN
padding rows below it, and compares every element with float64 against the bound of
:func:`asynctc.core.checks.element_bound` (relative to |A|·|B|). A right kernel's note says it ran
(blocks × threads, where) and how many FFMAs each load of sB feeds. The first hint that fits:
``...`` left in the source (not answered); a Python exception in the kernel (its message, where);
writes below C; second rows never written (the learner's ``row2``); second rows wrong, first rows
right (the second accumulator); wrong only in the partial edge blocks (the bounds checks); else
the first wrong element. A kernel whose every element is right but whose inner loop reads ``sB``
more than once per ``kk`` (:func:`b_loads_per_k`: B read twice, or A's values taken from ``sB``) fails
too, with a hint: the exercise is one read of ``sB`` feeding both FFMAs. In the simulator, a kernel that passes is also compiled for sm_90 by
numba's real CUDA target in a child process (:func:`device_compile_error`), since the simulator runs
Python that the GPU compiler refuses (a shared array's shape computed in the kernel: the H200 did).
"""

from __future__ import annotations

import ast
import functools
import inspect
import io
import re
import textwrap
import tokenize
import warnings

import numpy as np

from .. import simt
from ..core import checks
from ..core import exercises as _ex

TILE = simt.TILE
#: The rows of A a block stages in shared memory. numba on a GPU wants a shared array's shape as
#: constants (a global or a literal), not an expression such as ``2 * TILE``; its simulator takes both.
ROWS = 2 * TILE
#: (M, N, K) of the check: M = 2·TILE + TILE + 5 leaves the last block of rows with 5 second rows,
#: N and K are not multiples of TILE either.
SHAPE = (3 * TILE + 5, 2 * TILE + 5, 2 * TILE + 8)


def grid_for(m: int, n: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """(grid, block) for an M×N output with 2 rows per thread: TILE×TILE threads cover 2·TILE × TILE."""
    return ((n + TILE - 1) // TILE, (m + 2 * TILE - 1) // (2 * TILE)), (TILE, TILE)


# ---- reading the learner's source ------------------------------------------------------------------

def _source(kernel) -> str | None:
    try:
        return textwrap.dedent(inspect.getsource(kernel.py_func))
    except (AttributeError, OSError, TypeError):
        return None


def holes(src: str) -> list[str]:
    """The lines of ``src`` that still hold a ``...`` (an Ellipsis token, not in a comment or string)."""
    lines = src.splitlines()
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(src).readline))
    except (tokenize.TokenError, SyntaxError):
        return []
    rows = sorted({t.start[0] for t in toks if t.type == tokenize.OP and t.string == "..."})
    return [lines[r - 1].split("#", 1)[0].strip() for r in rows]


def _inner_sb(src: str) -> tuple[int, int] | None:
    """(subscript loads of ``sB``, multiplications) in the innermost loop that reads ``sB`` (the
    last such loop, from the source text); None when no such loop is found or the text does not parse."""
    try:
        tree = ast.parse(textwrap.dedent(src))
    except SyntaxError:
        return None
    found = None
    for loop in ast.walk(tree):
        if not isinstance(loop, ast.For) or any(n is not loop and isinstance(n, ast.For) for n in ast.walk(loop)):
            continue
        nodes = list(ast.walk(loop))
        loads = sum(isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)
                    and isinstance(n.value, ast.Name) and n.value.id == "sB" for n in nodes)
        if loads:
            found = (loads, sum(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult) for n in nodes))
    return found


def ffma_per_b_load(src: str) -> float | None:
    """Multiplications per read of ``sB`` in the innermost loop that reads ``sB`` (each multiply-add
    is one FFMA), from the source text; None when no such loop is found."""
    got = _inner_sb(src)
    return got[1] / got[0] if got else None


def b_loads_per_k(src: str) -> int | None:
    """How many times the innermost loop that reads ``sB`` reads it per iteration (subscript loads of
    ``sB`` in its body), from the source text; None when no such loop is found. The right kernel: 1."""
    got = _inner_sb(src)
    return got[0] if got else None


# ---- running it ----------------------------------------------------------------------------------

def run(kernel, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Launch ``kernel`` (A, B, C) with :func:`grid_for`'s grid; returns C with 2·TILE padding rows
    below it ((M + 2·TILE)×N: C, then the padding), all NaN before the launch."""
    cuda = simt.numba_cuda()
    m, n = a.shape[0], b.shape[1]
    grid, block = grid_for(m, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # NumbaPerformanceWarning on small grids
        whole = cuda.to_device(np.full((m + 2 * TILE, n), np.nan, np.float32))
        kernel[grid, block](cuda.to_device(a), cuda.to_device(b), whole[:m])
        return whole.copy_to_host()


_WHERE = re.compile(r"^tid=\[(\d+), (\d+), \d+\] ctaid=\[(\d+), (\d+), \d+\]:? ?(.*)$", re.S)


def _first_line(msg: str) -> str:
    """The line of a numba error that says what went wrong: numba says "Failed in cuda mode pipeline
    (step: …)" first and the reason below it; colour codes and object addresses dropped."""
    lines = [ln.strip() for ln in re.sub(r"\x1b\[[0-9;]*m", "", msg).splitlines() if ln.strip()]
    first = next((ln for ln in lines if not ln.startswith("Failed in")), lines[0] if lines else "(no message)")
    return re.sub(r" at 0x[0-9a-f]+", "", first).rstrip(":")


def raised_hint(e: Exception) -> str:
    """A sentence for an exception the learner's kernel raised (the simulator names the thread)."""
    msg, where = str(e), ""
    m = _WHERE.match(msg)
    if m:
        tx, ty, bx, by, msg = m.groups()
        where = f" in thread (tx={tx}, ty={ty}) of block ({bx}, {by})"
    text = f"your kernel raised {type(e).__name__}{where}: {_first_line(msg)}"
    if "shared.array" in msg:
        return text + SHAPE_ADVICE
    if isinstance(e, IndexError):
        return text + (" — an index past an array's edge, which a GPU would read or write without a word: "
                       "which bounds check lets it through?")
    return text + "."


SHAPE_ADVICE = (" — numba on a GPU wants a shared array's shape as constants: name it at the top, as "
                "ROWS = 2 * TILE, and write cuda.shared.array((ROWS, TILE), float32), not (2 * TILE, TILE).")

#: Compiles the learner's kernel for sm_90 with numba's real CUDA target (in a child process: this
#: one runs the simulator). The child gets the kernel's source and the numbers it reads from globals.
_DEVICE_COMPILE = """
import os, sys
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
from numba import cuda, float32
{consts}
{source}
try:
    cuda.compile_ptx({name}, "void(float32[:, :], float32[:, :], float32[:, :])", cc=(9, 0))
except Exception as e:
    print(type(e).__name__ + ": " + str(e))
    sys.exit(3)
"""


def device_compile_error(kernel) -> str | None:
    """Where this process runs numba's simulator, compile ``kernel`` for a GPU (sm_90, numba's own
    NVVM; no GPU needed) in a child process: the simulator runs Python that numba's GPU compiler
    refuses (a shared array's shape computed in the kernel). Returns the compiler's error; "" when it compiles;
    None when this process runs on a GPU (the launch compiled it) or no compiler is at hand."""
    if not simt.simulated():
        return None
    src, fn = _source(kernel), getattr(kernel, "py_func", None)
    if not src or fn is None:
        return None
    g = fn.__globals__
    consts = "\n".join(f"{k} = {g[k]!r}" for k in fn.__code__.co_names
                       if isinstance(g.get(k), (int, float)) and not isinstance(g.get(k), bool))
    body = "\n".join(ln for ln in src.splitlines() if not ln.lstrip().startswith("@"))
    return _compile_in_child(_DEVICE_COMPILE.format(consts=consts, source=body, name=fn.__name__))


@functools.lru_cache(maxsize=32)
def _compile_in_child(code: str) -> str | None:
    """:func:`device_compile_error`'s child run of ``code``, once per distinct kernel text (a right
    answer checked again, or the course's key in each test, does not start Python again)."""
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode == 3:
        return r.stdout.strip() or "(no message)"
    return "" if r.returncode == 0 else None


# ---- judging ---------------------------------------------------------------------------------------

def _diagnose(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> str | None:
    m, n = a.shape[0], b.shape[1]
    c, pad = out[:m], out[m:]
    if not np.isnan(pad).all():
        r = int(np.argwhere(~np.isnan(pad))[0][0]) + m
        return (f"your kernel wrote row {r}, below C's last row ({m - 1}): a store needs its bound, "
                "row < M (and col < N).")
    ref = a.astype(np.float64) @ b.astype(np.float64)
    mag = np.abs(a) @ np.abs(b)
    bound = checks.element_bound(a.shape[1], mag.astype(np.float64), ref, "float32")
    finite = np.isfinite(c)
    bad = ~finite | (np.abs(np.where(finite, c, 0) - ref) > bound)
    if not bad.any():
        return None
    local = np.arange(m)[:, None] % (2 * TILE)
    second = np.broadcast_to(local >= TILE, c.shape)
    unwritten = ~finite & second
    if unwritten.any():
        r, col = (int(x) for x in np.argwhere(unwritten)[0])
        lost = sorted({int(x) % (2 * TILE) for x in np.argwhere(unwritten.all(axis=1))[:, 0]})
        rows = (f"{len(lost)} of a block's second rows ({lost[0]}…{lost[-1]}) are" if lost
                else "parts of a block's second rows are")
        return _ex.tiered(
            f"C[{r}, {col}] is still NaN: it is a second row (row {r % (2 * TILE)} of its block of "
            f"{2 * TILE} rows, thread ty = {r % (2 * TILE) - TILE}'s row2), and {rows} never stored.",
            " Look at row2, the second row's index you wrote: which row does it name?",
            f" A block covers {2 * TILE} rows of C: thread ty's first row is row ty of the block, its "
            "second is TILE rows further down.")
    if (bad & second).any() and not (bad & ~second).any():
        r, col = (int(x) for x in np.argwhere(bad & second)[0])
        return _ex.tiered(
            f"the first rows are right, the second are not (C[{r}, {col}] = {c[r, col]:.4g}, "
            f"float64 says {ref[r, col]:.4g}).",
            " Which products does the second accumulator, acc2, add?",
            " acc2 adds sA[ty + TILE, kk] · sB[kk, tx] over kk: the second row of sA, times the same "
            "value of sB that acc uses.")
    inner_m, inner_n = m // (2 * TILE) * 2 * TILE, n // TILE * TILE
    edge = np.zeros_like(bad)
    edge[inner_m:, :] = True
    edge[:, inner_n:] = True
    if not (bad & ~edge).any():
        r, col = (int(x) for x in np.argwhere(bad)[0])
        return (f"only the partial blocks at C's edges are wrong (first at C[{r}, {col}]; C is {m}×{n}, "
                f"the full blocks end at row {inner_m} and column {inner_n}): check the bounds — the "
                "zero-fill of the tiles past M, N and K, and the stores' row < M, col < N.")
    r, col = (int(x) for x in np.argwhere(bad)[0])
    got = "NaN (never stored)" if not finite[r, col] else f"{c[r, col]:.4g}"
    return _ex.tiered(f"C[{r}, {col}] = {got}, float64 says {ref[r, col]:.4g}: the first rows are wrong too.",
                      " What does §1's kernel add to its one accumulator at each kk?",
                      " acc sums sA[ty, kk] · sB[kk, tx] over kk, as in simt.py's kernel above.")


def judge(answer, rng=None):
    """Run the learner's kernel and judge it (the module docstring): None or an
    :class:`~asynctc.core.exercises.Accepted` note when right, else the hint. Raises
    :class:`~asynctc.core.exercises.NotAnswered` while the source still holds ``...``."""
    if not (hasattr(answer, "py_func") and hasattr(answer, "__getitem__")):
        return (f"pass your kernel, the function under @cuda.jit (got {type(answer).__name__}): "
                "check('ch01.two_rows', two_rows)")
    src = _source(answer)
    left = holes(src) if src else []
    if left:
        raise _ex.NotAnswered("replace each ... with code, in: " + "; ".join(f"`{x}`" for x in left)
                              + " — then run the cell again")
    rng = np.random.default_rng() if rng is None else rng
    m, n, k = SHAPE
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    try:
        out = run(answer, a, b)
    except Exception as e:  # noqa: BLE001 - the learner's kernel raised: the hint says so
        return raised_hint(e)
    reads = b_loads_per_k(src) if src else None
    hint = _diagnose(out, a, b)
    if hint:
        if reads and reads > 1:
            hint += (f" Your inner loop also reads sB {reads} times per kk: A's values are in sA, "
                     "and one read of sB serves both rows.")
        return hint
    if reads and reads > 1:
        return _ex.tiered(
            f"every element is right, but your inner loop reads sB {reads} times per kk, so each read "
            "feeds one FFMA, as in simt.py's kernel.",
            " Can one read of sB serve both acc and acc2?",
            " Read sB[kk, tx] once into a local, b = sB[kk, tx], and use b in both FFMAs.")
    err = device_compile_error(answer)
    if err:
        return ("it runs right in the simulator, but numba cannot compile it for a GPU: "
                + _first_line(err) + (SHAPE_ADVICE if "shared.array" in err else "."))
    grid, block = grid_for(m, n)
    where = "on the GPU"
    if simt.simulated():
        where = "in numba's CUDA simulator on this CPU" + (" (numba also compiles it for sm_90)" if err == "" else "")
    ran = (f"your kernel really ran: {grid[0] * grid[1]} blocks × {block[0] * block[1]} threads {where}, "
           f"and every element of its {m}×{n} C passed the float64 check.")
    ours = ffma_per_b_load(inspect.getsource(simt._kernel))
    yours = ffma_per_b_load(src) if src else None
    if ours and yours:
        note = f"FFMA per shared-memory load of B: {ours:g} in simt.py's kernel → {yours:g} in yours"
        note += (" (one per row of C a thread computes); §2's mma.sync takes this much further: one "
                 "instruction, 16×8×16 multiply-adds from registers.")
    else:
        note = ("each value read from sB now feeds two FFMAs, one per row; §2's mma.sync takes this much "
                "further: one instruction, 16×8×16 multiply-adds from registers.")
    return _ex.Accepted(f"{ran} {note}")


cuda = None       # numba.cuda, bound by reference() (the simulator swaps this global's name)
float32 = None


@functools.lru_cache(maxsize=1)
def reference():
    """The course's own answer: the kernel of the solution cell (built on first use)."""
    global cuda, float32
    cuda = simt.numba_cuda()
    from numba import float32

    @cuda.jit
    def two_rows(A, B, C):
        """C = A @ B, fp32. Each thread computes C[row, col] and C[row2, col], row2 = row + TILE."""
        sA = cuda.shared.array((ROWS, TILE), float32)
        sB = cuda.shared.array((TILE, TILE), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row = cuda.blockIdx.y * 2 * TILE + ty
        row2 = row + TILE
        col = cuda.blockIdx.x * TILE + tx
        M, K = A.shape
        N = B.shape[1]
        acc, acc2 = float32(0.0), float32(0.0)
        for k0 in range(0, K, TILE):
            sA[ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else float32(0.0)
            sA[ty + TILE, tx] = A[row2, k0 + tx] if row2 < M and k0 + tx < K else float32(0.0)
            sB[ty, tx] = B[k0 + ty, col] if k0 + ty < K and col < N else float32(0.0)
            cuda.syncthreads()
            for kk in range(TILE):
                b = sB[kk, tx]              # one read of sB ...
                acc += sA[ty, kk] * b       # ... feeds two FFMAs
                acc2 += sA[ty + TILE, kk] * b
            cuda.syncthreads()
        if row < M and col < N:
            C[row, col] = acc
        if row2 < M and col < N:
            C[row2, col] = acc2

    return two_rows


@_ex.code_exercise("ch01.two_rows", "Complete the kernel two_rows(A, B, C): each thread computes two "
                   "elements of one column of C, C[row, col] and C[row2, col] (a block of TILE×TILE threads "
                   "covers 2·TILE rows × TILE columns). Which row is row2, and what does the inner loop add "
                   "to acc and acc2? Pass the kernel: check('ch01.two_rows', two_rows).",
                   judge=judge)
def _ch01_two_rows():
    return reference()
