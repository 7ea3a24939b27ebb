"""Python models of mma.sync register fragments: which lane holds which matrix element.

For ``mma.sync.aligned.m16n8k16`` with 16-bit inputs (PTX ISA, "Matrix Fragments for mma.m16n8k16
with floating point type"), with g = lane / 4 and t = lane % 4:

* A (16×16, row-major view): lane holds rows g and g+8, columns 2t, 2t+1, 2t+8, 2t+9;
* B (16×8, K×N): lane holds rows (k) 2t, 2t+1, 2t+8, 2t+9 of column g;
* C/D (16×8 fp32): lane holds rows g and g+8, columns 2t and 2t+1.

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


def mma_from_fragments(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Simulate one warp's m16n8k16: scatter A (16×16) and B (16×8) into per-lane registers with the
    models above, then compute each lane's C elements only from what that lane's quad holds.

    A check of the models, not of the hardware: returns the 16×8 product, equal to ``a @ b`` exactly
    when the three layouts are consistent with each other.
    """
    la, _ = a_m16n8k16()
    lb, _ = b_m16n8k16()
    lc, _ = c_m16n8k16()
    c = np.zeros((16, 8))
    for ln in range(32):
        for row, col in zip(*np.nonzero(lc == ln)):
            # The hardware combines the four lanes of a quad; the product needs row `row` of A
            # (held by lanes 4*(row % 8) .. +3) and column `col` of B (lanes with g == col).
            a_lanes = set(la[row].tolist())
            b_lanes = set(lb[:, col].tolist())
            assert a_lanes == {4 * (row % 8) + i for i in range(4)}
            assert b_lanes == {4 * col + i for i in range(4)}
            c[row, col] = float(a[row].astype(np.float64) @ b[:, col].astype(np.float64))
    return c
