"""Chapter 04 — the exercises auto-checked in notebooks/04_wgmma (registered on import): the
descriptor of a k-step, SBO and LBO, each with its diagnosis of known mistakes
(:func:`descriptor_diagnosis`), and the code exercise ``ch04.encode`` (write the descriptor's bit
packing; checked against :func:`asynctc.models.descriptors.encode` on every layout's descriptors)
and the code exercise ``ch04.kstep`` (advance a descriptor from k-step 0 to k-step s; judged by the
bytes wgmma would read, :func:`_judge_kstep`), and ``ch04.acc_owner`` (which thread and register hold
D[r][c] of the accumulator; the key is :func:`asynctc.models.fragments.wgmma_accumulator_owner`,
the hints :func:`acc_owner_hint`) with its code form ``ch04.acc_owner_fn`` (deep dive 04b: write
``owner(r, c)``, judged on every element, :func:`_judge_acc_owner`)."""

from __future__ import annotations

from ..models import descriptors as dsc
from ..models.descriptors import kstep_diagnosis


# --------------------------------------------------------------------------------------------------
# Exercise (auto-checked in the notebook)
# --------------------------------------------------------------------------------------------------

def _register_exercises():
    from ..core.exercises import code_exercise, diagnosis, exercise, known_mistake

    @code_exercise("ch04.encode", "Write encode(start_address, lbo, sbo, swizzle): the 64-bit wgmma "
                   "descriptor (an int) from byte values, as section 2's table packs them (base "
                   "offset 0). Pass the function: check('ch04.encode', encode).", judge=_judge_encode)
    def _ch04_encode():
        return dsc.encode

    @code_exercise("ch04.kstep", "Write kstep_desc(desc0, s, major): the 64-bit descriptor of k-step s "
                   "from desc0, k-step 0's, of a 64×64 fp16 operand tile with 128-byte swizzle, "
                   "major 'K' or 'MN'. Pass the function: check('ch04.kstep', kstep_desc).",
                   judge=_judge_kstep)
    def _ch04_kstep():
        return lambda desc0, s, major: KSTEP_TILES[major].descriptor(
            s, dsc.decode(desc0).start_address).encode()

    @exercise("ch04.acc_owner", "Element D[r][c] of an m64nNk16 wgmma's fp32 accumulator: which "
              "thread of the warpgroup (0..127) holds it, and in which of its registers (the index "
              "i of its N/2 accumulators)? Answer (thread, reg).", diagnose=acc_owner_hint)
    def _ch04_acc_owner(r: int, c: int) -> tuple[int, int]:
        if not (isinstance(r, int) and 0 <= r < 64 and isinstance(c, int) and 0 <= c < ACC_N):
            raise ValueError(f"(r, c) = ({r!r}, {c!r}): D is 64 rows × up to {ACC_N} columns")
        thread, reg = _acc_model()
        return int(thread[r, c]), int(reg[r, c])

    @code_exercise("ch04.acc_owner_fn", "Write owner(r, c): (thread, reg), the warpgroup's thread "
                   "(0..127) and the index of its accumulator register that hold D[r][c] of an "
                   "m64nNk16 wgmma's fp32 result, for any element. Pass the function: "
                   "check('ch04.acc_owner_fn', owner).", judge=_judge_acc_owner)
    def _ch04_acc_owner_fn():
        thread, reg = _acc_model()
        return lambda r, c: (int(thread[r, c]), int(reg[r, c]))

    @exercise("ch04.descriptor", "The 64-bit wgmma descriptor (an int) for k-step `step` of a tile "
              "mn×k of dtype, major-ness and swizzle, stored as TMA boxes from shared address base.")
    def _ch04_descriptor(mn: int, k: int, dtype: str, major: str, swizzle: int, step: int,
                         base: int) -> int:
        return dsc.OperandTile(mn, k, dtype, major, swizzle).descriptor(step, base).encode()

    @diagnosis("ch04.descriptor")
    def _ch04_descriptor_hint(answer, expected, mn, k, dtype, major, swizzle, step, base):
        return descriptor_diagnosis(answer, dsc.OperandTile(mn, k, dtype, major, swizzle), step, base)

    @exercise("ch04.sbo", "SBO in bytes of a K-major tile with the given swizzle (8 rows apart).")
    def _ch04_sbo(swizzle: int) -> int:
        return dsc.OperandTile(64, 64, "float16", "K", swizzle).sbo

    @diagnosis("ch04.sbo")
    def _ch04_sbo_hint(answer, expected, swizzle: int):
        t = dsc.OperandTile(64, 64, "float16", "K", swizzle)
        return known_mistake(answer, expected, [
            (t.row_pitch, f"that is one row ({t.row_pitch} bytes); SBO steps from one group of 8 rows "
                          "to the next."),
            (1024, "1024 is SBO with 128-byte swizzle (8 rows of 128 bytes); with "
                   f"{swizzle}-byte swizzle the rows are {t.row_pitch} bytes long."),
            (expected >> 4, "that is the encoded field value (bytes >> 4); the question asks for bytes."),
            (expected // t.itemsize, "you counted elements, not bytes."),
            (16, "16 bytes is LBO, which K-major swizzled layouts do not use (the ISA \"assumes 1\")."),
            (8, "8 is how many rows apart; SBO is the byte distance between them."),
        ])


#: The stage the ``ch04.kstep`` check reads: one 64×64 fp16 operand tile per major-ness, 128-byte
#: swizzle (K-major: 64 rows of 128 B, one box; MN-major: 64 k-rows of 128 B, one box).
KSTEP_TILES = {m: dsc.OperandTile(64, 64, "float16", m, 128) for m in ("K", "MN")}
#: Tile bases the check tries: 0x2800 >> 4 has bit 7 set, so OR-ing an MN-major step in is caught.
KSTEP_BASES = (0x2000, 0x2800, 0x3C000)


def _judge_kstep(answer) -> str | None:
    """Run ``answer(desc0, s, major)`` for every k-step of both tiles of :data:`KSTEP_TILES` at every
    base of :data:`KSTEP_BASES`; decode each descriptor into the bytes wgmma reads
    (:func:`asynctc.models.descriptors.read_addresses`) and compare them with the fresh random values
    TMA wrote there (:meth:`OperandTile.tma_addresses`). None when all agree, else the first wrong
    k-step and the mistake (:func:`kstep_diagnosis`)."""
    import numbers
    import numpy as np
    from ..core.exercises import NotAnswered, WrongReturn
    if not callable(answer):
        return "pass your function itself, e.g. check('ch04.kstep', kstep_desc)"
    rng = np.random.default_rng()
    for major, tile in KSTEP_TILES.items():
        for base in KSTEP_BASES:
            values = rng.integers(1, 1 << 16, size=(tile.mn, tile.k), dtype=np.uint16)
            smem = np.zeros(dsc.ADDRESS_LIMIT // 2, dtype=np.uint16)   # 256 KiB, as uint16
            smem[tile.tma_addresses(base) // 2] = values                # what TMA wrote
            desc0 = tile.descriptor(0, base).encode()
            for s in range(tile.k_steps):
                got = answer(desc0, s, major)
                if got is None or got is Ellipsis:
                    raise NotAnswered("your function returns None: write its body (return the 64-bit "
                                      "descriptor, an int) and run the cell again.")
                if isinstance(got, bool) or not isinstance(got, numbers.Integral):
                    raise WrongReturn(f"kstep_desc({desc0:#x}, {s}, {major!r}) returned {got!r}; "
                                      "return an int")
                got = int(got)
                call = f"kstep_desc({desc0:#x}, {s}, {major!r})"
                if not 0 <= got < 1 << 64:
                    return f"{call} returned {got:#x}, which does not fit in 64 bits"
                try:
                    addr = dsc.read_addresses(got, major, "float16", tile.mn)
                except dsc.DescriptorError:
                    return f"{call} = {got:#x}: {kstep_diagnosis(got, tile, s, base)}"
                kk = tile.instruction_k
                want = values[:, s * kk:(s + 1) * kk]
                inside = (addr >= 0) & (addr < dsc.ADDRESS_LIMIT)
                read = np.where(inside, smem[np.clip(addr, 0, dsc.ADDRESS_LIMIT - 2) // 2], 0)
                wrong = int((read != want).sum())
                if wrong:
                    return (f"{call} = {got:#x}: {wrong} of the {want.size} elements wgmma reads "
                            "are not the ones TMA wrote there; " + kstep_diagnosis(got, tile, s, base))
    return None


#: The widest accumulator ``ch04.acc_owner`` asks about: 64 × ACC_N (m64n256).
ACC_N = 256


def _acc_model():
    from ..models.fragments import wgmma_accumulator_owner
    return wgmma_accumulator_owner(ACC_N)


def _acc_slips(r: int, c: int) -> list[tuple[tuple[int, int], str]]:
    """(thread, reg) answers of the usual slips for element D[r][c], each with its hint."""
    w, g, h = r // 16, r % 8, r % 16 // 8
    j, t, e = c // 8, c % 8 // 2, c % 2
    thread, reg = 32 * w + 4 * g + t, 4 * j + 2 * h + e
    pair = "lane 4g + t holds a pair of neighbouring columns, 2t and 2t + 1: t counts pairs, not columns"
    return [
        ((thread, 4 * j + 2 * (1 - h) + e), "rows g and g + 8 are swapped: registers 4j and 4j + 1 "
                                            "hold row g, 4j + 2 and 4j + 3 row g + 8"),
        ((32 * w + 4 * t + g, reg), "g and t are swapped: the lane is 4g + t, where g = r mod 8 picks "
                                    "the row and t the column pair"),
        ((4 * g + t, reg), "the thread leaves out the warp: warp w holds rows 16w…16w+15, and its "
                           "threads are 32w…32w+31"),
        ((32 * w + 4 * g + c % 8, reg), pair),
        ((32 * w + 4 * g + c % 4, reg), pair),
        ((32 * w + 4 * (r % 16) + t, reg), "g is the row within an 8-row half (r mod 8): rows g and "
                                           "g + 8 of the warp's block share a lane"),
        ((thread, 4 * j + 2 * h + 1 - e), "the two columns of a pair are swapped: the even register "
                                          "holds the even column 2t, the odd one 2t + 1"),
        ((thread, 2 * h + e), "the register leaves out the 8-column block: each 8 columns further "
                              "along take four registers more"),
        ((thread, 4 * j + 2 * e + h), "bit 1 of the register index picks the row (g or g + 8), bit 0 "
                                      "the column of the pair; you swapped them"),
    ]


def acc_owner_hint(answer, expected, r: int, c: int) -> str | None:
    """Why ``answer`` is not (thread, reg) of D[r][c]: the slip it matches, else which half is
    wrong, then (:func:`~asynctc.core.exercises.tiered`) a question at §6, the rule at the next
    miss; never the right numbers."""
    from ..core.exercises import tiered
    if not isinstance(answer, (list, tuple)) or len(answer) != 2:
        return "answer (thread, reg): two numbers"
    got = tuple(answer)
    for value, hint in _acc_slips(r, c):
        if value != tuple(expected) and got == value:
            return hint + "."
    if not (0 <= got[0] < 128):
        return "a warpgroup's threads are 0..127."
    if not (0 <= got[1] < ACC_N // 2):
        return f"a thread's registers are 0..N/2 − 1 (0..{ACC_N // 2 - 1} at N = {ACC_N})."
    if got[0] == expected[0]:
        return tiered(f"the thread is right, the register is not: register {got[1]} holds another "
                      "element.",
                      " Which 8-column block, which row (g or g + 8) and which column of the pair "
                      f"is D[{r}][{c}] in, and how does §6's step 5 make those a register?",
                      " i // 4 counts 8-column blocks, bit 1 picks row g or g + 8, bit 0 the column "
                      "of the pair.")
    if got[1] == expected[1]:
        return tiered(f"the register is right, the thread is not: thread {got[0]} does not hold "
                      f"D[{r}][{c}].",
                      f" Which warp w, which row g within 8 and which column pair t is D[{r}][{c}] "
                      "in, and how do §6's steps 1–2 make those a thread?",
                      " Thread = 32w + 4g + t (w the warp, g the row within 8, t the column pair "
                      "within 8).")
    return _acc_elsewhere(got, r, c)


def _acc_elsewhere(got: tuple, r: int, c: int) -> str:
    """The fall-through of :func:`acc_owner_hint`: thread and register both wrong. Says which
    element ``got`` holds (or that it is D's own (row, col)) and on which axis it is off; then a
    question at §6, the rule at the next miss."""
    from ..core.exercises import tiered
    from ..models.fragments import wgmma_accumulator
    if got == (r, c):
        return (f"({r}, {c}) is the element's own (row, column): the answer is its owner, the "
                f"thread (0..127) that holds D[{r}][{c}] and which of that thread's registers.")
    rows, cols = wgmma_accumulator(ACC_N)
    r2, c2 = int(rows[got]), int(cols[got])
    off = [axis for axis, a, b in (("row", r2, r), ("column", c2, c)) if a != b]
    what = " and the ".join(off) + (" are" if len(off) == 2 else " is")
    return tiered(f"thread {got[0]}'s register {got[1]} holds D[{r2}][{c2}], not D[{r}][{c}]: the "
                  f"{what} off.",
                  f" Which warp's 16 rows hold row {r}, which row g within 8 and which 8-column "
                  f"block and column pair hold column {c}: how do §6's steps 1–5 make those a "
                  "thread and a register?",
                  " Thread = 32w + 4g + t, register = 4j + 2h + e: w = r // 16, g = r mod 8, "
                  "h = (r mod 16) // 8, j = c // 8, t = (c mod 8) // 2, e = c mod 2.")


def _judge_acc_owner(answer) -> str | None:
    """Run ``answer(r, c)`` on every element of a 64×:data:`ACC_N` accumulator and compare with the
    model. None when all agree; else the first wrong element, and the slip of :func:`_acc_slips` that
    every wrong element of it follows, or which half (thread, register) is wrong."""
    import numbers
    from ..core.exercises import NotAnswered, WrongReturn
    if not callable(answer):
        return "pass your function itself, e.g. check('ch04.acc_owner_fn', owner)"
    want_t, want_i = _acc_model()
    wrong = []
    for r in range(64):
        for c in range(ACC_N):
            v = answer(r, c)
            if v is None or v is Ellipsis:
                raise NotAnswered("your function returns None: write its body (return thread, reg) "
                                  "and run the cell again.")
            if (not isinstance(v, (tuple, list)) or len(v) != 2
                    or any(isinstance(x, bool) or not isinstance(x, numbers.Integral) for x in v)):
                raise WrongReturn(f"owner({r}, {c}) returned {v!r}; return two ints: (thread, reg)")
            got = (int(v[0]), int(v[1]))
            if got != (int(want_t[r, c]), int(want_i[r, c])):
                wrong.append((r, c, got))
    if not wrong:
        return None
    r, c, got = wrong[0]
    first = f"{len(wrong)} of {64 * ACC_N} elements are wrong, the first D[{r}][{c}], where you return {got}"
    for k, (_, hint) in enumerate(_acc_slips(r, c)):
        if all(g == _acc_slips(rr, cc)[k][0] for rr, cc, g in wrong):
            return f"{first}: {hint}."
    want = (int(want_t[r, c]), int(want_i[r, c]))
    return f"{first}: " + (acc_owner_hint(got, want, r, c) or "the thread and the register are both wrong.")


def encode_cases() -> list[tuple[int, int, int, int]]:
    """(start_address, lbo, sbo, swizzle) of the descriptors the ``ch04.encode`` check tries: every
    k-step of a 64×64 fp16 tile at base 0x4000 for each (major, swizzle) the course uses."""
    out = []
    for major in ("K", "MN"):
        for swizzle in (0, 32, 64, 128):
            tile = dsc.OperandTile(64, 64, "float16", major, swizzle)
            for step in range(tile.k_steps):
                d = tile.descriptor(step, 0x4000)
                out.append((d.start_address, d.lbo, d.sbo, d.swizzle))
    return out


def _judge_encode(answer) -> str | None:
    import numbers
    from ..core.exercises import NotAnswered
    if not callable(answer):
        return "pass your function itself, e.g. check('ch04.encode', encode)"
    for start, lbo, sbo, swz in encode_cases():
        want = dsc.encode(start, lbo, sbo, swz)
        got = answer(start, lbo, sbo, swz)
        if got is None or got is Ellipsis:
            raise NotAnswered("your function returns None: write its body (return the 64-bit "
                              "descriptor, an int) and run the cell again.")
        if isinstance(got, bool) or not isinstance(got, numbers.Integral):
            return f"encode({start:#x}, {lbo}, {sbo}, {swz}) returned {got!r}; return an int"
        got = int(got)
        if got == want:
            continue
        call = f"encode({start:#x}, lbo={lbo}, sbo={sbo}, swizzle={swz})"
        if not 0 <= got < 1 << 64:
            return f"{call} returned {got:#x}, which does not fit in 64 bits"
        enc = dsc.WgmmaDescriptor(start, lbo, sbo, swz).encoded_fields()
        moved = _moved_field(got, want, enc)
        if moved:
            return f"{call} is {want:#x}; yours is {got:#x}: {moved}."
        raw = {name: (got >> lo) & ((1 << w) - 1) for name, lo, w in dsc.FIELDS}
        stray = got & dsc.RESERVED_MASK
        notes = []
        for name, lo, w in dsc.FIELDS:
            if raw[name] == enc[name]:
                continue
            if name in ("start_address", "lbo", "sbo"):
                value = {"start_address": start, "lbo": lbo, "sbo": sbo}[name]
                if raw[name] == value & ((1 << w) - 1) or stray:
                    notes.append(f"{name} ({value:#x} bytes): the field holds the value >> 4 (16-byte "
                                 f"units), {enc[name]:#x}, in bits {lo}–{lo + w - 1}")
                else:
                    notes.append(f"{name}: bits {lo}–{lo + w - 1} hold {raw[name]:#x}, not "
                                 f"({value:#x} >> 4) = {enc[name]:#x}")
            elif name == "swizzle_mode":
                meant = {v: k for k, v in dsc.LAYOUT_TYPE.items()}[raw[name]]
                meant = f"{meant}-byte swizzle" if meant else "no swizzle"
                want_s = f"{swz}-byte swizzle" if swz else "no swizzle"
                notes.append(f"your bits 62–63 hold {raw[name]}, the mode of {meant}; {want_s} is "
                             f"mode {enc[name]}")
            else:
                notes.append(f"base_offset: bits 49–51 hold {raw[name]}; with tiles aligned to their "
                             "swizzle pattern it is 0")
        if stray and not notes:
            notes.append(f"bits outside every field are set ({stray:#x})")
        return f"{call} is {want:#x}; yours is {got:#x}: " + "; ".join(dict.fromkeys(notes)) + "."
    return None


def _moved_field(got: int, want: int, enc: dict) -> str | None:
    """When ``got`` is ``want`` with one field's right value shifted to other bits (say the swizzle
    mode at bit 61): which field, where it landed and where it belongs. None otherwise."""
    for name, lo, w in dsc.FIELDS:
        v = enc[name]
        if not v:
            continue
        rest = want & ~(((1 << w) - 1) << lo)
        for at in range(64 - v.bit_length() + 1):
            if at != lo and rest | (v << at) == got and not rest & (v << at):
                units = " (16-byte units)" if name in ("start_address", "lbo", "sbo") else ""
                return (f"{name} holds the right value, {v}{units}, but in the wrong bits: yours "
                        f"starts at bit {at}, the field is bits {lo}–{lo + w - 1}")
    return None


def descriptor_diagnosis(answer: int, tile: dsc.OperandTile, step: int, base: int) -> str | None:
    """Why ``answer`` is not the descriptor of k-step ``step`` of ``tile`` at shared address
    ``base``: both are decoded field by field (:func:`asynctc.models.descriptors.decode`) and the
    wrong fields are named, with the rule each one breaks. None when they agree."""
    want = tile.descriptor(step, base)
    raw = {name: (int(answer) >> lo) & ((1 << w) - 1) for name, lo, w in dsc.FIELDS}
    try:
        got = dsc.decode(answer)
    except dsc.DescriptorError as e:
        unscaled = [f for f in ("start_address", "lbo", "sbo")
                    if raw[f] and raw[f] == getattr(want, f) & ((1 << 14) - 1)]
        if unscaled:
            shown = ", ".join(f"{f} {getattr(want, f):#x} >> 4 = {getattr(want, f) >> 4:#x}"
                              for f in unscaled)
            return (f"{', '.join(unscaled)}: a descriptor stores byte values >> 4 (16-byte units), "
                    f"so write {shown}; unshifted, the bytes spill into bits no field owns")
        return f"this does not decode: {e}"
    notes = []
    if got.start_address != want.start_address:
        if got.start_address == base:
            notes.append(f"start address {got.start_address:#x} is k-step 0's; k-step {step} starts "
                         "further down K")
        elif tile.major == "MN" and got.start_address == base + step * 32:
            notes.append(f"start address {got.start_address:#x}: +32 bytes per k-step holds for "
                         f"K-major tiles; in an MN-major tile one k16 step is {tile.instruction_k} "
                         f"K-rows of {tile.row_pitch} bytes")
        elif tile.major == "K" and tile.swizzle and got.start_address == base + step * 32:
            per_row = tile.swizzle // 32
            notes.append(f"start address {got.start_address:#x}: +32 bytes per k16 step holds only "
                         f"inside one box; a {tile.swizzle}-byte swizzled row holds {per_row} k16 "
                         f"step{'s' * (per_row > 1)}, so k-step {step} starts in box {step // per_row}, "
                         f"at {want.start_address:#x}")
        elif got.start_address == 16 * want.start_address:
            notes.append("start address: the field holds the address >> 4 (16-byte units), not bytes")
        else:
            notes.append(f"start address {got.start_address:#x} is not where k-step {step} begins "
                         f"(base {base:#x} plus {step} k16 steps)")
    if got.lbo != want.lbo or got.sbo != want.sbo:
        if (got.lbo, got.sbo) == (want.sbo, want.lbo):
            notes.append("LBO and SBO are swapped: " + _offset_rule(tile))
        else:
            for f, label in (("lbo", "LBO"), ("sbo", "SBO")):
                g, w = getattr(got, f), getattr(want, f)
                if g == w:
                    continue
                if g == 16 * w:
                    notes.append(f"{label}: the field holds the byte offset >> 4 (16-byte units), "
                                 "not bytes")
                else:
                    notes.append(f"{label} {g} B is wrong: " + _offset_rule(tile, f))
    if got.swizzle != want.swizzle:
        notes.append(f"the swizzle field holds mode {got.layout_type} ({got.swizzle or 'no'}"
                     f"{'-byte' if got.swizzle else ''} swizzle); the mode numbers are 0 none, "
                     "1 = 128-byte, 2 = 64-byte, 3 = 32-byte")
    if got.base_offset != want.base_offset:
        notes.append(f"base offset {got.base_offset}: the tile base is aligned to its swizzle "
                     f"pattern, so it is {want.base_offset}")
    return "; ".join(notes) + "." if notes else None


def _offset_rule(tile: dsc.OperandTile, which: str = "") -> str:
    """The rule for LBO/SBO of ``tile``'s layout, in words (see OperandTile.lbo / .sbo)."""
    if tile.major == "K":
        rules = {"lbo": "K-major swizzled layouts do not use LBO (the ISA \"assumes 1\": 16 bytes)"
                 if tile.swizzle else "without swizzle LBO steps to the next 16-byte K chunk (the "
                 "next box)",
                 "sbo": f"SBO steps 8 rows of MN, 8 × {tile.row_pitch}-byte rows"}
    elif tile.swizzle:
        rules = {"lbo": f"in an MN-major swizzled tile LBO steps to the next box along MN "
                        f"({tile.box_rows} K-rows × {tile.row_pitch} bytes)",
                 "sbo": f"SBO steps 8 K-rows of {tile.swizzle} bytes"}
    else:
        rules = {"lbo": "MN-major without swizzle: LBO steps 8 K-rows (128 bytes)",
                 "sbo": "MN-major without swizzle: SBO steps to the next 16-byte MN chunk (next box)"}
    return rules[which] if which else f"{rules['lbo']}; {rules['sbo']}"


_register_exercises()
