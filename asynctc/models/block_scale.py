"""Block-scaled ``tcgen05.mma`` (``.kind::mxf8f6f4.block_scale.scale_vec::1X``) on the CPU (chapter 09).

Chapter 07 multiplied each k-tile's partial sums by software scales in registers. Blackwell does it in
the Tensor Core: ``D += (A · scale_A) (B · scale_B)`` with one UE8M0 scale (a power of two,
2^(e − 127)) per row of A and per column of B for every 32 elements of K, the scales read from Tensor
Memory. This module models

* the 32-bit **instruction descriptor** of ``.kind::mxf8f6f4`` (:class:`BlockScaledIdesc`; PTX ISA
  §9.7.16.4.2, the table "Instruction descriptor format for .kind::mxf8f6f4, .kind::mxf4 and
  .kind::mxf4nvf4")::

      0-1 reserved   2 sparsity   3 reserved   4-5 scale factor B ID   6 reserved
      7-9 A type (E4M3 0, E5M2 1, E2M3 3, E3M2 4, E2M1 5)   10-12 B type
      13/14 negate A/B   15/16 transpose A/B   17-22 N >> 3   23 scale type (UE8M0 1)
      24-26 reserved   27-28 M >> 7   29-30 scale factor A ID   31 reserved

* where the scales sit in **TMEM** (:func:`scale_cell`): for ``scale_vec::1X`` one scale per row of
  A (lane = the row's lane, Layout D: row r → lane r for M = 128) in a 1-byte sub-column of a 32-bit
  cell, the byte chosen by the descriptor's scale factor A ID; the same for B with lane = column n of
  B (PTX ISA §9.7.16.10.7 "Block Scaling", "Scale Factor A ID", "Scale Factor B ID"). The course's
  kernel keeps the four 32-element blocks of a 128-element k-tile in bytes 0..3 of one cell and
  issues its four MMAs with IDs 0, 1, 2, 3;
* how they get there: the host packs each k-tile's four scales of a row into the first 4 of 16
  bytes (:func:`pack_scales`), TMA copies a 128-row × 16-byte box into shared memory, and
  ``tcgen05.cp.128x128b`` copies row r into lane r, four columns (:func:`tcgen05_cp_128x128b`,
  through the no-swizzle shared-memory descriptor, SBO = 128 bytes);
* one **emulated tile** (:func:`emulate_block_scaled`): fp8 A and B through the swizzled TMA layout
  and the sm_100 descriptors (:mod:`asynctc.models.emulate`'s gather), the scales through the copy,
  the MMA per 32-element step, float32 accumulation in TMEM, the epilogue's ``tcgen05.ld`` — checked
  elementwise against float64 of the dequantised inputs. Pass ``wrong=`` to see a wrong scale layout
  fail.

What this model could not pin down from the PTX text (it reads the figures' captions, not the
pictures): the SFB lanes for N > 128, which it refuses (:class:`BlockScaleError`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..core.runtime import AsyncTCError
from . import descriptors as _d
from . import tmem as _tm
from .emulate import epilogue_plan, gather, round_to, smem_image
from .tcgen05 import Tcgen05Descriptor, _pack

SECTION_IDESC = "PTX ISA §9.7.16.4.2 'Instruction descriptor' (.kind::mxf8f6f4 table)"
SECTION_SCALE = "PTX ISA §9.7.16.10.7 'Block Scaling' (scale_vec::1X, Scale Factor A/B ID)"
SECTION_CP = "PTX ISA §9.7.16 'tcgen05.cp' (.128x128b)"

#: Elements of K that share one scale (scale_vec::1X / block32), and K of one instruction.
BLOCK = 32
INSTRUCTION_K = 32
#: fp8/fp6/fp4 input formats of kind::mxf8f6f4 → the A/B type code.
FORMATS = {"float8_e4m3fn": 0, "float8_e5m2": 1, "float6_e2m3": 3, "float6_e3m2": 4,
           "float4_e2m1": 5}
#: (field, lowest bit, width) of the block-scaled instruction descriptor.
IDESC_FIELDS = (("sparse", 2, 1), ("sfb_id", 4, 2), ("a_format", 7, 3), ("b_format", 10, 3),
                ("negate_a", 13, 1), ("negate_b", 14, 1), ("transpose_a", 15, 1),
                ("transpose_b", 16, 1), ("n_dim", 17, 6), ("scale_type", 23, 1), ("m_dim", 27, 2),
                ("sfa_id", 29, 2))
IDESC_RESERVED_BITS = (0, 1, 3, 6, 24, 25, 26, 31)
#: Bytes per row of the scale tile one stage copies (tcgen05.cp.128x128b: 128 bits per lane).
SCALE_ROW_BYTES = 16
#: The scale tile's shared-memory descriptor template: no swizzle, 8-row core matrices of
#: 128 contiguous bytes (SBO = 128), one core matrix wide (LBO unused, 16).
SF_DESCRIPTOR = Tcgen05Descriptor(0, 16, 128, "none")


class BlockScaleError(AsyncTCError, ValueError):
    """A block-scaled descriptor, scale layout or problem breaks a rule (field, value, rule)."""


def _fail(field: str, value: Any, rule: str):
    raise BlockScaleError(f"{field}={value!r}: {rule}")


def _small(name: str, v: Any, width: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) < 1 << width:
        _fail(name, v, f"a {width}-bit field, 0..{(1 << width) - 1} ({SECTION_IDESC})")
    return int(v)


@dataclasses.dataclass(frozen=True)
class BlockScaledIdesc:
    """The instruction descriptor of ``tcgen05.mma.cta_group::N.kind::mxf8f6f4.block_scale``.

    ``a_dtype`` / ``b_dtype``: names of :data:`FORMATS`; ``m``: 128 (``cta_group=1``) or 256
    (``cta_group=2``); ``n``: a multiple of 8 (16 for a pair) up to 256; ``sfa_id`` / ``sfb_id``:
    which byte (0..3) of the 32-bit scale cell this instruction uses; K-major operands only (the
    course's kernel; the 6- and 4-bit types must be K-major). Raises :class:`BlockScaleError`.
    """

    a_dtype: str = "float8_e4m3fn"
    b_dtype: str = "float8_e4m3fn"
    m: int = 128
    n: int = 128
    sfa_id: int = 0
    sfb_id: int = 0
    cta_group: int = 1

    def __post_init__(self):
        for f in ("a_dtype", "b_dtype"):
            if getattr(self, f) not in FORMATS:
                _fail(f, getattr(self, f), f"kind::mxf8f6f4 takes {sorted(FORMATS)} ({SECTION_IDESC})")
        if self.cta_group not in (1, 2) or isinstance(self.cta_group, bool):
            _fail("cta_group", self.cta_group, "1 or 2 (.cta_group::1 / ::2)")
        want = 128 * self.cta_group
        if self.m != want:
            _fail("m", self.m, f"{want} with cta_group={self.cta_group}: the field holds M >> 7 "
                  f"in bits 27-28 ({SECTION_IDESC})")
        step = 8 * self.cta_group
        if isinstance(self.n, bool) or not isinstance(self.n, (int, np.integer)) or \
                not (step <= self.n <= 256 and self.n % step == 0):
            _fail("n", self.n, f"a multiple of {step} in {step}..256 ({SECTION_IDESC})")
        _small("sfa_id", self.sfa_id, 2)
        _small("sfb_id", self.sfb_id, 2)

    def fields(self) -> dict[str, int]:
        return {"sparse": 0, "sfb_id": self.sfb_id, "a_format": FORMATS[self.a_dtype],
                "b_format": FORMATS[self.b_dtype], "negate_a": 0, "negate_b": 0,
                "transpose_a": 0, "transpose_b": 0, "n_dim": self.n >> 3, "scale_type": 1,
                "m_dim": self.m >> 7, "sfa_id": self.sfa_id}

    def encode(self) -> int:
        return _pack(IDESC_FIELDS, self.fields())

    @classmethod
    def decode(cls, value: int, cta_group: int = 1) -> "BlockScaledIdesc":
        """Fields of a 32-bit block-scaled descriptor; a set reserved bit, a non-UE8M0 scale type,
        sparsity, negation or a transpose raise :class:`BlockScaleError`."""
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or \
                not 0 <= int(value) < 1 << 32:
            _fail("value", value, f"a 32-bit unsigned integer ({SECTION_IDESC})")
        value = int(value)
        bad = [b for b in IDESC_RESERVED_BITS if value >> b & 1]
        if bad:
            _fail("value", hex(value), f"reserved bits {bad} must be 0 ({SECTION_IDESC})")
        f = {name: (value >> lo) & ((1 << w) - 1) for name, lo, w in IDESC_FIELDS}
        if f["scale_type"] != 1:
            _fail("scale_type", 0, f"kind::mxf8f6f4 scales are UE8M0 (bit 23 = 1) ({SECTION_IDESC})")
        for x in ("sparse", "negate_a", "negate_b", "transpose_a", "transpose_b"):
            if f[x]:
                _fail(x, 1, "this model covers dense, non-negated, K-major operands")
        names = {v: k for k, v in FORMATS.items()}
        for x in ("a_format", "b_format"):
            if f[x] not in names:
                _fail(x, f[x], f"type codes {sorted(names)} ({SECTION_IDESC})")
        return cls(names[f["a_format"]], names[f["b_format"]], f["m_dim"] << 7, f["n_dim"] << 3,
                   f["sfa_id"], f["sfb_id"], cta_group)

    def with_ids(self, sfa_id: int, sfb_id: int) -> "BlockScaledIdesc":
        return dataclasses.replace(self, sfa_id=sfa_id, sfb_id=sfb_id)

    def ptx(self) -> str:
        return (f"tcgen05.mma.cta_group::{self.cta_group}.kind::mxf8f6f4.block_scale.scale_vec::1X "
                f"[d], a_desc, b_desc, {self.encode():#010x}, [sfa], [sfb], p;")


# ---- where the scales live --------------------------------------------------------------------

def ue8m0(e: np.ndarray) -> np.ndarray:
    """The value of UE8M0 scale codes: 2^(e − 127) (255 is NaN)."""
    e = np.asarray(e)
    return np.where(e == 255, np.nan, np.ldexp(1.0, e.astype(np.int64) - 127))


def scale_cell(row: int, kblock: int, column0: int) -> tuple[int, int, int]:
    """(lane, column, byte) of the scale of row ``row`` (of A; column of B) for 32-element block
    ``kblock`` of K, in the course kernel's layout: lane = row (Layout D), column = column0 +
    kblock // 4 ... within one k-tile the four blocks are bytes 0..3 of the k-tile's cell, which the
    MMA of k-step kblock % 4 selects with its scale factor ID."""
    if not 0 <= row < _tm.LANES:
        _fail("row", row, f"0..{_tm.LANES - 1}: one scale lane per row ({SECTION_SCALE})")
    return row, column0 + kblock // 4, kblock % 4


def pack_scales(e: np.ndarray, layout: str = "kernel") -> np.ndarray:
    """The host tensor the scale tensor map reads: ``e`` (rows × K/32 uint8 codes) → rows ×
    (k_tiles · 16) uint8, k-tile kt's four codes of a row in bytes 16·kt .. 16·kt + 3, the other 12
    bytes 0 (padding that keeps one 16-byte tcgen05.cp row per k-tile). ``layout="blocks_major"``
    is a deliberately wrong packing (the four codes spread one per 4-byte word) for the tests."""
    e = np.asarray(e, np.uint8)
    rows, kb = e.shape
    if kb % 4:
        _fail("e.shape[1]", kb, "a multiple of 4: 128-element k-tiles of four 32-element blocks")
    out = np.zeros((rows, kb // 4 * SCALE_ROW_BYTES), np.uint8)
    for kt in range(kb // 4):
        for j in range(4):
            byte = j if layout == "kernel" else 4 * j
            out[:, kt * SCALE_ROW_BYTES + byte] = e[:, 4 * kt + j]
    return out


def tcgen05_cp_128x128b(tmem: np.ndarray, smem: np.ndarray, desc: Tcgen05Descriptor,
                        taddr: int) -> None:
    """tcgen05.cp.128x128b: shared memory (byte image ``smem``) → TMEM cells ``tmem`` (lanes ×
    columns of uint32). Row r's 16 bytes, at start + (r // 8) · SBO + (r % 8) · 16 (no-swizzle
    core matrices), go to lane r, columns col .. col + 3 (little-endian bytes in each cell)."""
    if desc.swizzle != "none":
        _fail("desc.swizzle", desc.swizzle, "the scale tile is copied without swizzle here")
    lane0, col0 = _tm.split_address(taddr)
    if lane0 != 0:
        _fail("taddr", hex(taddr), f".128x128b writes all 128 lanes from lane 0 ({SECTION_CP})")
    for r in range(_tm.LANES):
        at = desc.start_address + (r // 8) * desc.sbo + (r % 8) * SCALE_ROW_BYTES
        row = smem[at:at + SCALE_ROW_BYTES]
        tmem[r, col0:col0 + 4] = row.view("<u4")


# ---- one emulated tile --------------------------------------------------------------------------

@dataclasses.dataclass
class BlockScaledTile:
    """Result of :func:`emulate_block_scaled`: ``d`` (M × N, from the epilogue's registers, NaN where
    unwritten), ``reference`` (float64 of the dequantised inputs), ``bound`` (elementwise),
    ``writes`` (count per element), ``scales_tmem`` (the uint32 scale cells)."""

    d: np.ndarray
    reference: np.ndarray
    bound: np.ndarray
    writes: np.ndarray
    scales_tmem: np.ndarray
    idesc: BlockScaledIdesc

    @property
    def wrong(self) -> int:
        return int((~(np.abs(self.d - self.reference) <= self.bound) | (self.writes != 1)).sum())

    @property
    def passed(self) -> bool:
        return self.wrong == 0

    def summary(self) -> str:
        return (f"emulated {self.idesc.ptx().split(' [')[0]} M={self.idesc.m} N={self.idesc.n} "
                f"K={self.k}: {'PASS' if self.passed else 'FAIL'} "
                f"({self.wrong} of {self.d.size} elements wrong)")

    k: int = 0


WRONG = ("blocks_major_packing", "ids_not_set", "scales_swapped", "one_scale_per_ktile")


def emulate_block_scaled(a: np.ndarray, b: np.ndarray, sfa: np.ndarray, sfb: np.ndarray,
                         dtype: str = "float8_e4m3fn", *, wrong: str | None = None,
                         rel_tol: float | None = None) -> BlockScaledTile:
    """Emulate one 128 × N tile of the block-scaled kernel (N ≤ 128, K a multiple of 128).

    ``a`` (128 × K) and ``b`` (K × N) real values (rounded to ``dtype``), ``sfa`` (128 × K/32) and
    ``sfb`` (N × K/32) UE8M0 codes. Each k-tile: TMA writes A and Bᵀ (K-major, 128-byte swizzle)
    and the packed scale rows into shared memory; the MMA thread copies the scale tiles into TMEM
    (:func:`tcgen05_cp_128x128b`) and issues four K = 32 MMAs with scale IDs 0..3; float32
    accumulation in TMEM; the epilogue's ``tcgen05.ld.32x32b`` puts D into a poisoned output.
    ``wrong``: one of :data:`WRONG` — a scale layout the kernel must not have. Raises
    :class:`BlockScaleError` for shapes the model does not cover."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    m, k = a.shape
    n = b.shape[1]
    if m != 128:
        _fail("a.shape[0]", m, "128 rows: one CTA, M = 128 (Layout D)")
    if not (8 <= n <= 128 and n % 8 == 0):
        _fail("b.shape[1]", n, "a multiple of 8 up to 128: one B scale lane per column (the SFB "
              "lanes of N > 128 are not modelled)")
    if k % 128 or b.shape[0] != k:
        _fail("K", k, "a multiple of 128 (one k-tile = four 32-element scale blocks), same for b")
    if sfa.shape != (m, k // BLOCK) or sfb.shape != (n, k // BLOCK):
        _fail("sfa.shape", (sfa.shape, sfb.shape), f"({m}, {k // BLOCK}) and ({n}, {k // BLOCK})")
    if wrong is not None and wrong not in WRONG:
        _fail("wrong", wrong, f"one of {WRONG}")
    ar, br = round_to(a, dtype), round_to(b, dtype)
    idesc = BlockScaledIdesc(dtype, dtype, 128, n)
    pa = pack_scales(sfa, "blocks_major" if wrong == "blocks_major_packing" else "kernel")
    pb = pack_scales(sfb)
    # TMEM: the accumulator (Layout D) and the scale columns after it
    layout = _tm.AccumulatorLayout(128, n, 1)
    lane_of, col_of = layout.maps()
    al = _tm.TmemAllocator()
    taddr = al.alloc(256, warp=1)
    acc = np.full((_tm.LANES, _tm.COLUMNS), np.nan, np.float32)
    cells = np.zeros((_tm.LANES, _tm.COLUMNS), np.uint32)
    sfa_col, sfb_col = 128, 132
    ta = _d.OperandTile(128, 128, dtype, "K", 128)
    tb = _d.OperandTile(n, 128, dtype, "K", 128)
    for kt in range(k // 128):
        img_a = smem_image(ta, ar[:, 128 * kt:128 * kt + 128])
        img_b = smem_image(tb, np.ascontiguousarray(br[128 * kt:128 * kt + 128].T))
        sm_a = np.ascontiguousarray(pa[:, 16 * kt:16 * kt + 16]).reshape(-1)   # the TMA box, row-major
        sm_b = np.zeros(128 * 16, np.uint8)
        sm_b[:n * 16] = np.ascontiguousarray(pb[:, 16 * kt:16 * kt + 16]).reshape(-1)
        if wrong == "scales_swapped":
            sm_a, sm_b = sm_b, sm_a
        tcgen05_cp_128x128b(cells, sm_a, SF_DESCRIPTOR, _tm.address(0, sfa_col))
        tcgen05_cp_128x128b(cells, sm_b, SF_DESCRIPTOR, _tm.address(0, sfb_col))
        for s in range(4):
            a_s = gather(img_a, 0, Tcgen05Descriptor.from_operand_tile(ta, s, 0), "K", dtype, 128)
            b_s = gather(img_b, 0, Tcgen05Descriptor.from_operand_tile(tb, s, 0), "K", dtype, n)
            ids = 0 if wrong == "ids_not_set" else s
            i = idesc.with_ids(ids, ids)
            byte_a = (cells[:, sfa_col] >> np.uint32(8 * i.sfa_id)) & np.uint32(0xFF)
            byte_b = (cells[:n, sfb_col] >> np.uint32(8 * i.sfb_id)) & np.uint32(0xFF)
            if wrong == "one_scale_per_ktile":
                byte_a = cells[:, sfa_col] & np.uint32(0xFF)
            sa, sb = ue8m0(byte_a), ue8m0(byte_b)
            part = (a_s.astype(np.float64) * sa[:, None]) @ (b_s.astype(np.float64) * sb[:, None]).T
            first = kt == 0 and s == 0
            prev = 0.0 if first else acc[lane_of, col_of].astype(np.float64)
            acc[lane_of, col_of] = (prev + part).astype(np.float32)
    d = np.full((128, n), np.nan)
    writes = np.zeros((128, n), int)
    inv_row, inv_col = layout.inverse()
    for (warp, lane, coff, shape, num) in epilogue_plan(layout, "32x32b"):
        r = _tm.tcgen05_ld(acc, warp, _tm.address(lane, coff), shape, num)
        dl, dc = _tm.ld_fragment(shape, num)
        rows, cols = inv_row[lane + dl, coff + dc], inv_col[lane + dl, coff + dc]
        keep = rows >= 0
        np.add.at(writes, (rows[keep], cols[keep]), 1)
        d[rows[keep], cols[keep]] = r[keep]
    al.dealloc(taddr, 256, warp=1)
    al.check_all_freed()
    xa = ar * np.repeat(ue8m0(sfa), BLOCK, axis=1)
    xb = br * np.repeat(ue8m0(sfb), BLOCK, axis=1).T
    ref = xa @ xb
    tol = rel_tol if rel_tol is not None else k * 2.0 ** -22
    res = BlockScaledTile(d, ref, tol * (np.abs(xa) @ np.abs(xb)) + 1e-300, writes, cells, idesc)
    res.k = k
    return res


def random_block_problem(n: int = 128, k: int = 256, rng: Any = None, dtype: str = "float8_e4m3fn"):
    """Fresh A (128 × K), B (K × N) standard-normal values and UE8M0 codes for both (exponents
    spread over 2^-6 .. 2^6, so a scale used for the wrong block changes the product)."""
    rng = rng if rng is not None else np.random.default_rng()
    a = rng.standard_normal((128, k))
    b = rng.standard_normal((k, n))
    sfa = rng.integers(121, 134, (128, k // BLOCK)).astype(np.uint8)
    sfb = rng.integers(121, 134, (n, k // BLOCK)).astype(np.uint8)
    return a, b, sfa, sfb
