"""Python models of mma.sync register fragments: which lane holds which matrix element.

For ``mma.sync.aligned.m16n8k16`` with 16-bit inputs (PTX ISA, "Matrix Fragments for mma.m16n8k16
with floating point type"), with g = lane / 4 and t = lane % 4:

* A (16×16, row-major view): lane holds rows g and g+8, columns 2t, 2t+1, 2t+8, 2t+9;
* B (16×8, K×N): lane holds rows (k) 2t, 2t+1, 2t+8, 2t+9 of column g;
* C/D (16×8 fp32): lane holds rows g and g+8, columns 2t and 2t+1.

And one for ``wgmma.mma_async`` m64nNk16 (:func:`wgmma_accumulator`, and its inverse
:func:`wgmma_accumulator_owner`): the fp32 accumulator D of a warpgroup (128 threads), warp w owning
rows 16w..16w+15 in the m16n8 pattern above, repeated along N.

Each function returns an integer array of the matrix's shape whose entries are lane ids, and a
same-shaped array of register indices (which of the lane's registers holds the element).
"""

from __future__ import annotations

import numpy as np


def a_m16n8k16() -> tuple[np.ndarray, np.ndarray]:
    """(lane, register) for each element of the 16×16 A fragment (registers a0..a3, 2 halves each)."""
    lane = np.empty((16, 16), int)
    reg = np.empty((16, 16), int)
    for ln in range(32):
        g, t = ln // 4, ln % 4
        for r, (row, col0) in enumerate(((g, 2 * t), (g + 8, 2 * t), (g, 2 * t + 8), (g + 8, 2 * t + 8))):
            for h in range(2):
                lane[row, col0 + h] = ln
                reg[row, col0 + h] = r
    return lane, reg


def b_m16n8k16() -> tuple[np.ndarray, np.ndarray]:
    """(lane, register) for each element of the 16×8 B fragment (K×N; registers b0, b1)."""
    lane = np.empty((16, 8), int)
    reg = np.empty((16, 8), int)
    for ln in range(32):
        g, t = ln // 4, ln % 4
        for r, k0 in enumerate((2 * t, 2 * t + 8)):
            for h in range(2):
                lane[k0 + h, g] = ln
                reg[k0 + h, g] = r
    return lane, reg


def c_m16n8k16() -> tuple[np.ndarray, np.ndarray]:
    """(lane, register) for each element of the 16×8 fp32 accumulator (registers c0..c3)."""
    lane = np.empty((16, 8), int)
    reg = np.empty((16, 8), int)
    for ln in range(32):
        g, t = ln // 4, ln % 4
        for r, (row, col) in enumerate(((g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1))):
            lane[row, col] = ln
            reg[row, col] = r
    return lane, reg


def wgmma_accumulator(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of D for each (thread, register) of an m64nNk16 wgmma's fp32 accumulator: two
    int arrays of shape (128, n / 2). Thread 32w + 4g + t, register i holds D[16w + g + 8·((i >> 1)
    & 1)][8·(i >> 2) + 2t + (i & 1)] (PTX ISA §9.7.15.5.1.1, "Register fragments", the D matrix;
    the same rule as ``kernels/ptx/wgmma.cuh``). Registers 2p and 2p + 1 hold neighbouring columns:
    the pair a 16-bit epilogue stores as one 4-byte word. Raises :class:`ValueError` unless ``n`` is
    a multiple of 8 in 8..256."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not (8 <= n <= 256 and n % 8 == 0):
        raise ValueError(f"n={n!r}: wgmma's N is a multiple of 8 in 8..256")
    thread, reg = np.meshgrid(np.arange(128), np.arange(n // 2), indexing="ij")
    w, lane = divmod(thread, 32)
    g, t = divmod(lane, 4)
    return 16 * w + g + 8 * ((reg >> 1) & 1), 8 * (reg >> 2) + 2 * t + (reg & 1)


def wgmma_accumulator_owner(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The inverse of :func:`wgmma_accumulator`: (thread, register) holding each element of an
    m64nNk16 wgmma's fp32 accumulator D, two int arrays of shape (64, n). D[r][c] is held by thread
    32·(r // 16) + 4·(r % 8) + (c % 8) // 2, register 4·(c // 8) + 2·((r % 16) // 8) + c % 2.
    Raises :class:`ValueError` as :func:`wgmma_accumulator` does."""
    rows, cols = wgmma_accumulator(n)
    thread = np.empty((64, n), int)
    reg = np.empty((64, n), int)
    t, i = np.meshgrid(np.arange(128), np.arange(n // 2), indexing="ij")
    thread[rows, cols] = t
    reg[rows, cols] = i
    return thread, reg


def to_registers(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scatter A (16×16) and B (16×8, K×N) into the warp's registers with the models above.

    Returns ``(a_regs, b_regs)`` of shapes (32, 4, 2) and (32, 2, 2): lane, register (a0..a3 /
    b0..b1), half (the two 16-bit values packed in one 32-bit register, low half first), float64.
    """
    a_regs = np.full((32, 4, 2), np.nan)
    b_regs = np.full((32, 2, 2), np.nan)
    for (model, mat, regs) in ((a_m16n8k16, a, a_regs), (b_m16n8k16, b, b_regs)):
        lane, reg = model()
        for (r, c), ln in np.ndenumerate(lane):
            k = c if mat is a else r              # the K index decides the half
            regs[ln, reg[r, c], k % 2] = mat[r, c]
    assert not np.isnan(a_regs).any() and not np.isnan(b_regs).any(), "a register was left unset"
    return a_regs, b_regs


def quad_sources(lane: int) -> dict[str, list[int]]:
    """Which lanes' registers lane ``lane`` needs for its four C elements: A rows g and g+8 live in
    its own quad (lanes 4g..4g+3); B columns 2t and 2t+1 live in quads 2t and 2t+1 (lanes 8t..8t+7),
    which are other quads unless g is 2t or 2t+1."""
    g, t = divmod(lane, 4)
    return {"a": [4 * g + i for i in range(4)],
            "b": [4 * n + i for n in (2 * t, 2 * t + 1) for i in range(4)]}


def lane_c_fragment(lane: int, a_regs: np.ndarray, b_regs: np.ndarray) -> np.ndarray:
    """The m16n8k16 rule for one lane, from registers only: lane 4g+t computes c0..c3 =
    D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1] (PTX ISA, *Matrix Fragments for mma.m16n8k16*).

    Row ``g + 8h`` of A is gathered from the quad of lane g: lane 4g+i holds K = 2i, 2i+1 in register
    ``h`` and K = 2i+8, 2i+9 in register ``h+2``. Column n of B is gathered from the quad of n: lane
    4n+i holds K = 2i, 2i+1 in b0 and K = 2i+8, 2i+9 in b1. No full matrix is consulted.
    """
    g, t = divmod(lane, 4)

    def a_row(h):
        row = np.empty(16)
        for i in range(4):
            for hi in range(2):
                row[2 * i + 8 * hi: 2 * i + 8 * hi + 2] = a_regs[4 * g + i, h + 2 * hi]
        return row

    def b_col(n):
        col = np.empty(16)
        for i in range(4):
            for hi in range(2):
                col[2 * i + 8 * hi: 2 * i + 8 * hi + 2] = b_regs[4 * n + i, hi]
        return col

    return np.array([a_row(h) @ b_col(2 * t + e) for h in (0, 1) for e in (0, 1)])


def mma_from_fragments(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Simulate one warp's m16n8k16 from fragments alone: scatter A and B into per-lane registers
    (:func:`to_registers`), let every lane compute its c0..c3 from registers only
    (:func:`lane_c_fragment`), and place each lane's c registers into a 16×8 matrix with the C model.

    A check of the models, not of the hardware: the result equals ``a @ b`` (to rounding) only when the
    A, B and C layouts and the gather rule agree; a wrong lane or register anywhere changes it.
    """
    a_regs, b_regs = to_registers(np.asarray(a, np.float64), np.asarray(b, np.float64))
    c_regs = np.array([lane_c_fragment(ln, a_regs, b_regs) for ln in range(32)])   # (32, 4)
    lc, rc = c_m16n8k16()
    return c_regs[lc, rc]


def _span(name: str, rows: np.ndarray, cols: np.ndarray) -> str:
    """``A[1, 2:4]`` / ``B[2:4, 1]`` / ``C[1, 2]``: the elements at (rows, cols), one row or column."""
    def part(v):
        lo, hi = int(v.min()), int(v.max())
        return f"{lo}" if lo == hi else f"{lo}:{hi + 1}"
    return f"{name}[{part(rows)}, {part(cols)}]"


def lane_table(lane: int) -> str:
    """What lane ``lane`` (0..31) of the warp holds of A, B and C for one m16n8k16, read off the
    models above: one line per operand, each register with the elements it holds (``a0 = A[g,
    2t:2t+2]`` …, g = lane / 4, t = lane % 4). Raises :class:`ValueError` for a lane outside 0..31."""
    if isinstance(lane, bool) or not isinstance(lane, (int, np.integer)) or not 0 <= lane < 32:
        raise ValueError(f"lane={lane!r}: a warp's lanes are 0..31")
    lines = [f"lane {lane}: g = lane // 4 = {lane // 4}, t = lane % 4 = {lane % 4}"]
    for name, (ln, reg) in (("A", a_m16n8k16()), ("B", b_m16n8k16()), ("C", c_m16n8k16())):
        cells = [f"{name.lower()}{r} = " + _span(name, *np.nonzero((ln == lane) & (reg == r)))
                 for r in range(int(reg.max()) + 1)]
        lines.append(f"{name}: " + ", ".join(cells))
    return "\n".join(lines)
