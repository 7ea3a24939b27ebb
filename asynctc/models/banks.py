"""The shared-memory bank model, pure Python: shared memory has 32 banks of 4 bytes (bank =
(address / 4) mod 32) and serves one 4-byte word per bank per *wavefront* (128 bytes); a request
needs as many wavefronts as the largest number of distinct words any one bank must deliver
(:func:`wavefronts`, against the fewest its bytes could take, :func:`ideal_wavefronts`). Applied
to an operand read in 8-row × 16-byte core matrices (:func:`read_conflicts`; what wgmma reads
through its descriptors, :func:`asynctc.models.descriptors.read_addresses`), to a plain row-major
tile read the same way (:func:`plain_rows_conflicts`: what a swizzle prevents) and to TMA's writes
of a box (:func:`tma_write_conflicts`). Chapter 07's swizzle experiment
(:func:`asynctc.swizzle.bank_model`) applies it to every variant.

Source: CUDA C++ Programming Guide, "Shared Memory" (32 banks, 4-byte words); PTX ISA
§9.7.15.5.1.2.1 (core matrices of the wgmma canonical layouts)."""

from __future__ import annotations

import numpy as np

from .layout import BANK_BYTES, BANKS, SmemTile

#: Bytes one shared-memory wavefront delivers: one 4-byte word from each of the 32 banks.
WAVEFRONT_BYTES = BANKS * BANK_BYTES


def wavefronts(addresses, width: int) -> int:
    """Wavefronts one shared-memory request needs: ``addresses`` (byte addresses, one per element or
    lane) each reading ``width`` bytes. Every 4-byte word touched lies in bank (word mod 32); a
    wavefront delivers one word per bank (the same word to any number of readers), so the request
    takes the largest number of distinct words in one bank (≥ 1). Raises :class:`ValueError` for
    an empty request or a ``width`` below 1."""
    a = np.asarray(addresses, dtype=np.int64).ravel()
    if a.size == 0:
        raise ValueError("addresses: an empty request")
    if width < 1:
        raise ValueError(f"width={width}: bytes per access must be ≥ 1")
    first, last = a // BANK_BYTES, (a + width - 1) // BANK_BYTES
    words = np.unique(np.concatenate([np.arange(f, l + 1) for f, l in zip(first, last)]))
    return int(np.bincount(words % BANKS, minlength=BANKS).max())


def ideal_wavefronts(addresses, width: int) -> int:
    """The fewest wavefronts the bytes of a request could take: distinct words / 32, rounded up."""
    a = np.asarray(addresses, dtype=np.int64).ravel()
    first, last = a // BANK_BYTES, (a + width - 1) // BANK_BYTES
    words = np.unique(np.concatenate([np.arange(f, l + 1) for f, l in zip(first, last)]))
    return max(1, -(-words.size // BANKS))


def read_conflicts(addr: np.ndarray, itemsize: int, rows: int = 8, kbytes: int = 16) -> dict:
    """Conflict factor of reading an operand in blocks of ``rows`` rows × ``kbytes`` bytes of K.

    ``addr``: ``(mn, k)`` byte addresses of the operand's elements (what the reader fetches: the
    descriptor model's :meth:`OperandTile.addresses` for wgmma); blocks start at multiples of
    ``rows`` and ``kbytes``. The default block is one core matrix (8 rows × 16 bytes = 128 bytes),
    the unit of every wgmma canonical layout (PTX ISA §9.7.15.5.1.2.1). Returns ``blocks``,
    ``wavefronts`` (sum), ``ideal`` (sum), ``factor`` (wavefronts / ideal: 1.0 is conflict-free)
    and ``worst`` (the largest per-block ratio)."""
    addr = np.asarray(addr, dtype=np.int64)
    mn, k = addr.shape
    per = kbytes // itemsize
    if per < 1 or kbytes % itemsize or mn % rows or k % per:
        raise ValueError(f"blocks of {rows} rows × {kbytes} bytes do not tile a {mn}×{k} operand of "
                         f"{itemsize}-byte elements")
    total = ideal = 0
    worst = 0.0
    blocks = 0
    for r in range(0, mn, rows):
        for c in range(0, k, per):
            blk = addr[r:r + rows, c:c + per]
            w, i = wavefronts(blk, itemsize), ideal_wavefronts(blk, itemsize)
            total, ideal, blocks = total + w, ideal + i, blocks + 1
            worst = max(worst, w / i)
    return {"blocks": blocks, "wavefronts": total, "ideal": ideal, "factor": total / ideal,
            "worst": worst}


def plain_rows_conflicts(row_bytes: int, rows: int = 64, dtype: str = "float16", block_rows: int = 8,
                         kbytes: int = 16) -> dict:
    """The counterfactual: a tile stored row after row with no swizzle, ``row_bytes`` per row (what a
    TMA box ``row_bytes`` wide without swizzle leaves), read in the same 8-row × 16-byte blocks.
    128-byte rows put all 8 rows of a block in the same 4 banks (8 wavefronts), 64-byte rows 4,
    32-byte rows 2, 16-byte rows 1. No wgmma descriptor can read such a layout with rows wider
    than 16 bytes (the canonical layouts have no row pitch field): it is what ``ldmatrix`` or
    ``ld.shared`` of a core matrix would meet."""
    t = SmemTile(rows, row_bytes // np.dtype(dtype).itemsize, dtype, 0)
    return read_conflicts(t.offsets(), t.itemsize, block_rows, kbytes)


def tma_write_conflicts(tile: SmemTile) -> dict:
    """Wavefronts TMA needs to write one box if it writes the box's bytes in 128-byte pieces of
    consecutive rows (rows of ``inner_bytes``; 128 / inner_bytes rows per piece): each piece lands
    in :meth:`SmemTile.offsets`. Returns the same fields as :func:`read_conflicts`."""
    rows_per = max(1, WAVEFRONT_BYTES // tile.inner_bytes)
    off = tile.offsets()
    total = ideal = 0
    worst = 0.0
    for r in range(0, tile.rows, rows_per):
        blk = off[r:r + rows_per]
        w, i = wavefronts(blk, tile.itemsize), ideal_wavefronts(blk, tile.itemsize)
        total, ideal = total + w, ideal + i
        worst = max(worst, w / i)
    return {"blocks": -(-tile.rows // rows_per), "wavefronts": total, "ideal": ideal,
            "factor": total / ideal, "worst": worst}


def chunk_columns(swizzle: int, row_bytes: int, dtype: str = "float16") -> str:
    """Chapter 03's swizzle lever: a box of 8 rows × ``row_bytes`` under TMA swizzle ``swizzle``
    (0, 32, 64, 128), read one 16-byte chunk column at a time (chunk c of rows 0–7, as ``ldmatrix``
    reads a core matrix). Three lines: the box, the bank group (16-byte slot of a 128-byte line, 4
    banks) chunk 0 of each row lands in, and the :func:`wavefronts` each chunk column's read needs
    (1: conflict-free, 8: 8-way). A box the swizzle cannot take is answered with the
    :class:`LayoutError`'s rule."""
    from .layout import LayoutError
    try:
        tile = SmemTile(8, row_bytes // np.dtype(dtype).itemsize, dtype, swizzle)
    except LayoutError as e:
        return f"refused: {e}"
    off, per = tile.offsets(), 16 // tile.itemsize
    waves = [wavefronts(off[:, c * per:(c + 1) * per], tile.itemsize) for c in range(row_bytes // 16)]
    worst = max(waves)
    return "\n".join([
        f"swizzle {swizzle}, rows of {row_bytes} bytes: {len(waves)} chunks of 16 bytes per row",
        "bank groups of chunk 0 in rows 0–7: " + " ".join(str(int(o) % WAVEFRONT_BYTES // 16) for o in off[:, 0]),
        "wavefronts per chunk column: " + " ".join(map(str, waves))
        + (" (conflict-free)" if worst == 1 else f" ({worst}-way conflict)")])
