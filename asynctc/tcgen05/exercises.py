"""The deep dive's auto-checked exercises (notebook 09b): ``ch09.acc_columns``, ``ch09.acc_parity``,
``ch09.scale_byte``. Registered on import (the package imports this module)."""

from __future__ import annotations

from ..core import exercises as _ex


def _cols_hint(answer, bn: int = 256, stages: int = 4, block_scaled: bool = False):
    try:
        a = int(answer)
    except (TypeError, ValueError):
        return None
    if a == bn or a == 2 * bn and block_scaled:
        return "two accumulators: each tile's MMAs write bn columns while the epilogue reads the other bn"
    if a == 2 * bn + (8 * stages if block_scaled else 0):
        return "that is the columns used; tcgen05.alloc takes a power of two"
    return None


@_ex.exercise("ch09.acc_columns", "How many TMEM columns must tcgen05.alloc request for two fp32 "
              "accumulators of bn columns (plus, block-scaled, 8 scale columns per stage)?",
              hint=_cols_hint)
def _acc_columns(bn: int = 256, stages: int = 4, block_scaled: bool = False) -> int:
    need = 2 * bn + (8 * stages if block_scaled else 0)
    c = 32
    while c < need:
        c *= 2
    return c


def _parity_hint(answer, t: int = 5):
    try:
        a = int(answer)
    except (TypeError, ValueError):
        return None
    if a == (t // 2) & 1:
        return ("that is the parity of the phase being filled now; a wait for a *completed* phase of "
                "a barrier whose first round must pass at once waits on the other parity")
    return None


@_ex.exercise("ch09.acc_parity", "Tile t uses accumulator t % 2. On which parity does the MMA thread "
              "wait acc_empty[t % 2] before tile t?", hint=_parity_hint)
def _acc_parity(t: int = 5) -> int:
    return ((t // 2) & 1) ^ 1


def _byte_hint(answer, kstep: int = 2):
    try:
        a = int(answer)
    except (TypeError, ValueError):
        return None
    if a == 4 * kstep:
        return "the ID counts bytes of the 32-bit scale cell, not bits or columns"
    return None


@_ex.exercise("ch09.scale_byte", "In a 128-element fp8 k-tile, which scale factor ID (byte of the "
              "scale cell) does the MMA of k-step kstep (K = 32 each) use?", hint=_byte_hint)
def _scale_byte(kstep: int = 2) -> int:
    return kstep % 4
