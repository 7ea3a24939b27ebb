"""Chapter 03 — the exercises auto-checked in notebooks/03_tma_mbarrier (registered on import):
``ch03.expect_tx`` and ``ch03.bank_128B``, each with its diagnosis of known mistakes, and the code
exercise ``ch03.swizzle_128b`` (write the 128-byte swizzle; checked byte for byte against
:func:`asynctc.models.layout.swizzle_address`)."""

from __future__ import annotations

from ..core import exercises as _ex
from ..models.layout import SmemTile, dtype_of, swizzle_address
from ..models.tensor_map import validate


@_ex.exercise("ch03.expect_tx", "The byte count for mbarrier.arrive.expect_tx before one TMA load of "
              "a rows×cols box of `dtype` (element strides 1).")
def _ch03_expect_tx(rows: int, cols: int, dtype: str) -> int:
    return validate(address=1 << 20, shape=(4096, 4096), dtype=dtype, box=(rows, cols)).box_bytes


@_ex.diagnosis("ch03.expect_tx")
def _ch03_expect_tx_hint(answer, expected, rows: int, cols: int, dtype: str) -> str | None:
    dt = dtype_of(dtype)
    k, n = dt.itemsize, rows * cols
    name = dt.name
    wrong_sizes = [(n * s, f"{s} byte{'s' if s > 1 else ''} per element? {name} is {k}.")
                   for s in (1, 2, 4, 8) if s != k]
    return _ex.known_mistake(answer, expected, [
        (n, f"you counted elements, not bytes: {name} is {k} byte{'s' if k > 1 else ''} per element."),
        *wrong_sizes,
        (2 * expected, "twice too large: one TMA load moves one box."),
        (rows * k, "that is one column of the box; it has rows×cols elements."),
        (cols * k, "that is one row of the box; it has rows×cols elements."),
        (expected * 8, "that is bits; expect_tx counts bytes."),
        (expected / 1024, "that is in KiB; expect_tx counts bytes."),
    ])


@_ex.exercise("ch03.bank_128B", "The shared-memory bank (0..31) of element (row, col) of a 64×64 fp16 "
              "tile loaded by TMA with 128-byte swizzle into a 1024-byte aligned buffer.")
def _ch03_bank_128B(row: int, col: int) -> int:
    return SmemTile(64, 64, "float16", 128).bank(row, col)


@_ex.diagnosis("ch03.bank_128B")
def _ch03_bank_128B_hint(answer, expected, row: int, col: int) -> str | None:
    swz = SmemTile(64, 64, "float16", 128)
    offset = swz.byte_offset(row, col)
    chunk, within = divmod(col * 2, 16)
    as_bytes = row * 128 + ((col // 16) ^ (row % 8)) * 16 + col % 16     # col taken as a byte index
    hint = _ex.known_mistake(answer, expected, [
        (SmemTile(64, 64, "float16", 0).bank(row, col),
         "that is the bank without swizzle: first XOR the 16-byte chunk index (col×2 // 16) with "
         "row % 8."),
        (chunk ^ (row % 8), "that is the swizzled 16-byte chunk — a group of four banks; the bank is "
                            "chunk×4 plus the 4-byte word inside the chunk."),
        (chunk, "that is the 16-byte chunk before the swizzle (and a chunk is four banks wide)."),
        (offset, "that is the byte offset; bank = (offset // 4) mod 32."),
        (offset // 4, "that is the 4-byte word index; the 32 banks repeat every 32 words: take it mod 32."),
        ((as_bytes // 4) % 32, "the columns are fp16 elements, 2 bytes each: byte = col × 2."),
        (((row * 128 + (chunk ^ row) * 16 + within) // 4) % 32 if row >= 8 else None,
         "the XOR uses row % 8 (the row's position inside its 1024-byte pattern), not the row."),
    ])
    if hint is None and not 0 <= answer < 32:
        return "a bank is a number 0..31 (32 banks of 4 bytes)."
    return hint


def _as_offset(value, offset: int) -> int:
    """The learner's return value for ``offset`` as an int; raises NotAnswered / WrongReturn."""
    import numbers
    if value is None or value is Ellipsis:
        raise _ex.NotAnswered("your function returns None: write its body (return the swizzled byte "
                              "offset, an int) and run the cell again.")
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _ex.WrongReturn(f"your function returned {value!r} for offset {offset}; return an int "
                              "(a byte offset)")
    return int(value)


#: The bytes the swizzle exercise tries: two 1024-byte patterns (16 rows of 128 bytes), every byte.
SWIZZLE_CASES = range(2048)


def _judge_swizzle_128b(answer) -> str | None:
    if not callable(answer):
        return "pass your function itself, e.g. check('ch03.swizzle_128b', swizzle_128b)"
    want = {o: swizzle_address(o, 128) for o in SWIZZLE_CASES}
    got = {o: _as_offset(answer(o), o) for o in SWIZZLE_CASES}
    wrong = [o for o in SWIZZLE_CASES if got[o] != want[o]]
    if not wrong:
        return None
    if all(got[o] == o for o in SWIZZLE_CASES):
        return _ex.tiered("you return every offset unchanged: that is no swizzle.",
                          " What does section 2's 128B swizzle XOR each 16-byte chunk's index with?",
                          " Inside each 128-byte row, the 16-byte chunk index is XORed with the row "
                          "index mod 8.")
    o = wrong[0]
    row, chunk, byte = o // 128, (o % 128) // 16, o % 16
    g = got[o]
    if o >= 1024:                                    # the first 8 rows are right
        return _ex.tiered(f"rows 0–7 are right and row 8 is not (byte {o}: you put it at {got[o]}).",
                          " After how many rows does section 2's pattern repeat, and what does that make "
                          "the row's part in the XOR?",
                          " The pattern repeats every 8 rows (1024 bytes), so XOR the chunk with "
                          "row % 8, not with the row.")
    if g % 16 != byte:
        return (f"byte {o} is byte {byte} of its 16-byte chunk but you put it at byte {g % 16} of one: "
                "the swizzle moves whole 16-byte chunks; the byte inside a chunk keeps its place.")
    if g // 128 != row:
        return (f"byte {o} is in row {row} (128-byte rows) but you moved it to row {g // 128}: the "
                "swizzle only permutes the eight 16-byte chunks inside each row.")
    return _ex.tiered(f"first wrong: byte {o} (row {row}, chunk {chunk}, byte {byte} of the chunk) — you "
                      f"put it in chunk {(g % 128) // 16}.",
                      f" Which chunk does section 2's rule give in row {row}: what is chunk {chunk} XORed with?",
                      f" The 128B swizzle puts it in chunk {chunk} XOR (row {row} % 8) = "
                      f"{chunk ^ row % 8}. In bits of the offset: the chunk is bits 4–6 and row % 8 is "
                      "bits 7–9; XOR bits 7–9 into bits 4–6.")


@_ex.code_exercise("ch03.swizzle_128b", "Write swizzle_128b(offset): the byte offset at which TMA's 128-byte "
                   "swizzle stores byte `offset` of a box (row-major rows of 128 bytes, destination "
                   "aligned to 1024 bytes). Pass the function: check('ch03.swizzle_128b', swizzle_128b).",
                   judge=_judge_swizzle_128b)
def _ch03_swizzle_128b():
    return lambda offset: swizzle_address(offset, 128)
