"""The wgmma shared-memory matrix descriptor, bit by bit, and the layouts it describes.

A ``wgmma.mma_async`` reads its shared-memory operands through 64-bit **matrix descriptors**. This
module encodes and decodes them and models, in plain Python, which shared-memory byte a descriptor
makes wgmma read for every element of an operand — the "descriptor side" of chapter 04. The "TMA
side" (where a tensor-map load puts each element) is :class:`asynctc.models.layout.SmemTile`; the two are
written independently and a test proves that they agree for every swizzle mode, dtype and
major-ness wgmma supports.

Sources (PTX ISA 8.x/9.x, §9.7.15.5.1.2 "Shared Memory Matrix Layout"):

* §9.7.15.5.1.2.2 "Matrix Descriptor Format" — the fields (bit ranges inclusive)::

      bits  0-13  start address                 matrix-descriptor-encode(addr)
      bits 16-29  leading dimension byte offset matrix-descriptor-encode(LBO)
      bits 32-45  stride dimension byte offset  matrix-descriptor-encode(SBO)
      bits 49-51  matrix base offset            valid for the swizzled modes only
      bits 62-63  swizzle mode                  0 none, 1 128-byte, 2 64-byte, 3 32-byte

  with ``matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4``: byte values in 16-byte units, below
  256 KiB. The base offset is 0 when the swizzle pattern starts on its repeat boundary (1024 B for
  128-byte swizzle, 512 B for 64-byte, 256 B for 32-byte); otherwise ``(pattern start >> 7) & 7``.
  Bits 14-15, 30-31, 46-48 and 52-61 are not assigned on sm_90; this module keeps them 0.
* §9.7.15.5.1.2.1 "Leading / Stride Dimension Byte Offset" and "Canonical Layouts": with
  ``T = 128 / bits-per-element`` (elements per 16 bytes), in CuTe notation::

      K-major,  none : ((8,m),(T,2k)):((1T,SBO),(1,LBO))
      K-major,  32 B : Swizzle<1,4,3> o ((8,m),(T,2k)):((2T,SBO),(1,T))     LBO unused ("assumed 1")
      K-major,  64 B : Swizzle<2,4,3> o ((8,m),(T,2k)):((4T,SBO),(1,T))
      K-major, 128 B : Swizzle<3,4,3> o ((8,m),(T,2k)):((8T,SBO),(1,T))
      MN-major, none : ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
      MN-major, 32 B : Swizzle<1,4,3> o ((T,2,m),(8,k)):((1,T,LBO),(2T,SBO))
      MN-major, 64 B : Swizzle<2,4,3> o ((T,4,m),(8,k)):((1,T,LBO),(4T,SBO))
      MN-major,128 B : Swizzle<3,4,3> o ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO))

  Note the MN-major quirk: without swizzle SBO steps along MN and LBO along K; with a swizzle it
  is the other way round. ``Swizzle<B,4,3>`` XORs address bits [4, 4+B) with bits [7, 7+B) of the
  *shared-memory address* (CuTe's ``Swizzle o smem_ptr``), which is why tile bases are aligned.
* §9.7.15.5.2 "wgmma.mma_async": A is M×K "row-major" (K-major), B is K×N "column-major"
  (K-major); imm-trans-a/-b = 1 select MN-major, and "the transpose operation is only supported for
  the .f16/.bf16 types on matrices accessed from shared memory": fp8 operands must be K-major.
  Shared-memory operands must be 16-byte aligned (§9.7.15.5.1).

Contents: :class:`WgmmaDescriptor` (fields ↔ 64-bit value), :func:`read_addresses` (the layout
model for one instruction), :class:`OperandTile` (an operand tile in shared memory as TMA boxes:
its descriptors per k-step, the address of every element, the shared-memory image),
and :func:`descriptor_for_smem_tile` (the descriptor from an :class:`asynctc.models.layout.SmemTile`).
The sm_100 ``tcgen05`` descriptor lives in :mod:`asynctc.models.tcgen05` (chapter 09), which
imports this module; this one never imports it.

Every error is a :class:`DescriptorError` (a ``ValueError``) naming the field, the value and the rule.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..core.runtime import AsyncTCError

# --------------------------------------------------------------------------------------------------
# Constants from the PTX ISA
# --------------------------------------------------------------------------------------------------

#: Swizzle spans in bytes (0 = no swizzle, the "interleave" layout).
SWIZZLE_SPANS = (0, 32, 64, 128)

#: Swizzle span → the 2-bit "swizzle mode" field (bits 62-63), §9.7.15.5.1.2.2.
LAYOUT_TYPE = {0: 0, 128: 1, 64: 2, 32: 3}
SPAN_OF_LAYOUT_TYPE = {v: k for k, v in LAYOUT_TYPE.items()}

#: Swizzle span → bytes after which its pattern repeats; a pattern that starts on such a boundary
#: has base offset 0 (§9.7.15.5.1.2.2, table "Starting address of the repeating pattern").
PATTERN_BYTES = {32: 256, 64: 512, 128: 1024}

#: Tile-base alignment (bytes) this module requires per swizzle span: the pattern repeat, and for
#: no swizzle the 128 bytes a ``cp.async.bulk.tensor`` destination needs (16 would satisfy wgmma).
TILE_ALIGNMENT = {0: 128, 32: 256, 64: 512, 128: 1024}

#: ``matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4`` keeps 18 bits of a byte value.
ADDRESS_LIMIT = 1 << 18

#: (name, first bit, number of bits) of each sm_90 descriptor field.
FIELDS = (("start_address", 0, 14), ("lbo", 16, 14), ("sbo", 32, 14), ("base_offset", 49, 3),
          ("swizzle_mode", 62, 2))
_ASSIGNED = sum(((1 << w) - 1) << lo for _, lo, w in FIELDS)
RESERVED_MASK = ((1 << 64) - 1) & ~_ASSIGNED

#: Input types wgmma takes from shared memory in this course: name → (PTX type, bytes, instruction K).
DTYPES = {"float16": ("f16", 2, 16), "bfloat16": ("bf16", 2, 16),
          "float8_e4m3fn": ("e4m3", 1, 32), "float8_e5m2": ("e5m2", 1, 32)}

MAJORS = ("K", "MN")

SECTION = "PTX ISA §9.7.15.5.1.2.2 'Matrix Descriptor Format'"
SECTION_LAYOUT = "PTX ISA §9.7.15.5.1.2.1 'Canonical Layouts'"


class DescriptorError(AsyncTCError, ValueError):
    """A descriptor or operand layout wgmma cannot use; the message names field, value and rule."""


def dtype_name(dtype: Any) -> str:
    """Canonical course name of a wgmma input dtype ("float16", "bfloat16", "float8_e4m3fn",
    "float8_e5m2"); accepts names, numpy/ml_dtypes dtypes and the PTX names ("f16", "e4m3", ...).
    Raises :class:`DescriptorError` for anything else."""
    if isinstance(dtype, str):
        name = dtype.strip().lower()
        alias = {"f16": "float16", "half": "float16", "fp16": "float16", "bf16": "bfloat16",
                 "e4m3": "float8_e4m3fn", "float8_e4m3": "float8_e4m3fn", "fp8_e4m3": "float8_e4m3fn",
                 "e5m2": "float8_e5m2", "fp8_e5m2": "float8_e5m2"}
        name = alias.get(name, name)
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = str(dtype)
    if name not in DTYPES:
        raise DescriptorError(f"dtype={dtype!r}: wgmma reads {sorted(DTYPES)} from shared memory "
                              "in this course (PTX ISA §9.7.15.5.2 lists .f16/.bf16 with k16 and "
                              ".e4m3/.e5m2 with k32)")
    return name


def itemsize(dtype: Any) -> int:
    """Bytes per element of a wgmma input dtype."""
    return DTYPES[dtype_name(dtype)][1]


def instruction_k(dtype: Any) -> int:
    """K of one wgmma for this input type: 16 (f16/bf16, m64nNk16) or 32 (fp8, m64nNk32). One
    instruction always covers 32 bytes of K."""
    return DTYPES[dtype_name(dtype)][2]


def check_major(major: str, dtype: Any, what: str = "major") -> str:
    """Normalise ``major`` ("K" or "MN", case-insensitive; "M"/"N" mean MN) and apply the rule that
    fp8 operands are K-major only. Raises :class:`DescriptorError`."""
    m = str(major).strip().upper()
    m = {"K": "K", "MN": "MN", "M": "MN", "N": "MN"}.get(m)
    if m is None:
        raise DescriptorError(f"{what}={major!r}: must be 'K' (K-major) or 'MN' (M- or N-major)")
    name = dtype_name(dtype)
    if m == "MN" and DTYPES[name][1] == 1:
        raise DescriptorError(
            f"{what}='MN' with dtype={name}: fp8 wgmma operands must be K-major — the transpose "
            "(imm-trans-a/-b = 1) exists only for .f16/.bf16 operands read through descriptors "
            "(PTX ISA §9.7.15.5.2 wgmma.mma_async). Store the fp8 tile K-major (transpose it in "
            "global memory or while loading).")
    return m


def _check_span(swizzle: Any, what: str = "swizzle") -> int:
    if isinstance(swizzle, bool) or not isinstance(swizzle, (int, np.integer)) \
            or int(swizzle) not in SWIZZLE_SPANS:
        raise DescriptorError(f"{what}={swizzle!r}: must be 0 (none), 32, 64 or 128 (bytes of the "
                              f"swizzle span; {SECTION})")
    return int(swizzle)


def swizzle_bytes(addr, span: int):
    """``Swizzle<B,4,3>`` on byte addresses (int or integer array): bits [4, 4+B) ^= bits [7, 7+B),
    B = log2(span/16); span 0 leaves the address unchanged (§9.7.15.5.1.2.1, CuTe ``Swizzle``)."""
    if span == 0:
        return addr
    mask = span // 16 - 1
    return addr ^ (((addr >> 7) & mask) << 4)


# --------------------------------------------------------------------------------------------------
# The sm_90 descriptor
# --------------------------------------------------------------------------------------------------

def _check_bytes(name: str, v: Any, what: str, section: str = SECTION) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise DescriptorError(f"{name}={v!r}: must be an integer number of bytes")
    v = int(v)
    if v < 0:
        raise DescriptorError(f"{name}={v}: must be ≥ 0 ({what})")
    if v % 16:
        raise DescriptorError(f"{name}={v}: must be a multiple of 16 bytes — the field stores "
                              f"matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4, 16-byte units "
                              f"({section})")
    if v >= ADDRESS_LIMIT:
        raise DescriptorError(f"{name}={v}: overflows its 14-bit field — (x & 0x3FFFF) >> 4 keeps "
                              f"byte values below {ADDRESS_LIMIT} (256 KiB) ({section})")
    return v


@dataclasses.dataclass(frozen=True)
class WgmmaDescriptor:
    """An sm_90 wgmma shared-memory matrix descriptor, in bytes.

    Fields (PTX ISA §9.7.15.5.1.2.2):

    * ``start_address`` — shared-memory byte address of the operand's first element (bits 0-13);
    * ``lbo`` — leading dimension byte offset (bits 16-29), meaning per layout in
      :func:`read_addresses` (unused by K-major swizzled layouts, where the ISA "assumes 1", i.e.
      16 bytes);
    * ``sbo`` — stride dimension byte offset (bits 32-45);
    * ``swizzle`` — 0, 32, 64 or 128 bytes (bits 62-63 encode 0, 3, 2, 1);
    * ``base_offset`` — 0..7 (bits 49-51), non-zero only when the swizzle pattern does not start
      on its repeat boundary; must be 0 without swizzle.

    The base-offset rule (§9.7.15.5.1.2.2): it is 0 when the repeating pattern starts on its
    boundary (1024 / 512 / 256 bytes for 128 / 64 / 32-byte swizzle), otherwise non-zero and
    ``(pattern start addr >> 0x7) & 0x7``. The pattern starts at the 128-byte row of the start
    address (a K-major step moves the start inside that row; MN-major steps move it by whole
    patterns), so the start address fixes the row phase ``(start_address >> 7) % (pattern / 128)``
    and the base offset must agree with it in those low bits.

    Raises :class:`DescriptorError` when a value is not a multiple of 16, overflows its field, or
    contradicts the base-offset rule: ``base_offset`` 0 with the start address past the first
    128-byte row of a pattern (the tile base was not aligned to 1024/512/256 bytes), a non-zero
    ``base_offset`` for a pattern that starts on its boundary, or one whose low bits disagree with
    the start address's row phase.
    """

    start_address: int
    lbo: int
    sbo: int
    swizzle: int = 0
    base_offset: int = 0

    def __post_init__(self):
        object.__setattr__(self, "start_address",
                           _check_bytes("start_address", self.start_address,
                                        "a shared-memory byte address"))
        object.__setattr__(self, "lbo", _check_bytes("lbo", self.lbo, "a byte offset"))
        object.__setattr__(self, "sbo", _check_bytes("sbo", self.sbo, "a byte offset"))
        sw = _check_span(self.swizzle)
        object.__setattr__(self, "swizzle", sw)
        bo = self.base_offset
        if isinstance(bo, bool) or not isinstance(bo, (int, np.integer)) or not 0 <= int(bo) <= 7:
            raise DescriptorError(f"base_offset={bo!r}: a 3-bit field, 0..7 ({SECTION})")
        bo = int(bo)
        object.__setattr__(self, "base_offset", bo)
        if sw == 0 and bo:
            raise DescriptorError(f"base_offset={bo} with swizzle=0: the matrix base offset is "
                                  f"valid for the swizzled modes only; without swizzle it must be 0 "
                                  f"({SECTION})")
        if sw and bo:
            pat = PATTERN_BYTES[sw]
            rows = pat // 128
            phase = (self.start_address >> 7) % rows
            if phase == 0:
                raise DescriptorError(
                    f"base_offset={bo} with start_address={self.start_address:#x} and swizzle={sw}: "
                    f"the start address lies in the first 128-byte row of a {pat}-byte swizzle "
                    f"pattern that starts on a {pat}-byte boundary, where the base offset must be "
                    f"0 ({SECTION}: \"the value of base offset is 0 when the repeating pattern ... "
                    "starts\" on that boundary)")
            if bo % rows != phase:
                raise DescriptorError(
                    f"base_offset={bo} contradicts start_address={self.start_address:#x} with "
                    f"swizzle={sw}: a pattern starting at the start address's 128-byte row "
                    f"({self.start_address & ~127:#x}) has base offset (pattern start addr >> 7) & 7 "
                    f"= {(self.start_address >> 7) & 7} (its row {phase} of {rows} in the {pat}-byte "
                    f"pattern; base_offset must agree in its low {rows.bit_length() - 1} bit(s)) "
                    f"({SECTION})")
        if sw and bo == 0:
            pat = PATTERN_BYTES[sw]
            into = self.start_address % pat
            if into >= 128:
                raise DescriptorError(
                    f"start_address={self.start_address:#x} with swizzle={sw} and base_offset=0: "
                    f"the address is {into} bytes into a {pat}-byte swizzle pattern, past its first "
                    f"128-byte row, so the pattern did not start on a {pat}-byte boundary. Align "
                    f"the tile base to {pat} bytes (base offset 0 needs the pattern to start "
                    f"there), or give base_offset = (pattern start >> 7) & 7 ({SECTION})")

    # -- bits -------------------------------------------------------------------------------------
    @property
    def layout_type(self) -> int:
        """The 2-bit swizzle-mode field value: 0 none, 1 128-byte, 2 64-byte, 3 32-byte."""
        return LAYOUT_TYPE[self.swizzle]

    def encoded_fields(self) -> dict[str, int]:
        """Field name → the integer stored in that field."""
        return {"start_address": (self.start_address & 0x3FFFF) >> 4,
                "lbo": (self.lbo & 0x3FFFF) >> 4, "sbo": (self.sbo & 0x3FFFF) >> 4,
                "base_offset": self.base_offset, "swizzle_mode": self.layout_type}

    def encode(self) -> int:
        """The 64-bit descriptor as an unsigned Python int."""
        v = 0
        enc = self.encoded_fields()
        for name, lo, width in FIELDS:
            assert enc[name] < (1 << width)
            v |= enc[name] << lo
        return v

    def __int__(self) -> int:
        return self.encode()

    @classmethod
    def decode(cls, value: int) -> "WgmmaDescriptor":
        """The fields of a 64-bit descriptor. Raises :class:`DescriptorError` when ``value`` is not a
        64-bit unsigned integer, sets bits the sm_90 format does not assign (14-15, 30-31, 46-48,
        52-61), or breaks a rule of the constructor."""
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise DescriptorError(f"value={value!r}: a descriptor is a 64-bit unsigned integer")
        value = int(value)
        if not 0 <= value < (1 << 64):
            raise DescriptorError(f"value={value:#x}: outside 0 .. 2^64-1")
        if value & RESERVED_MASK:
            bits = [b for b in range(64) if (value & RESERVED_MASK) >> b & 1]
            hint = (" — bits 46-48 = 0b001 is the fixed \"version\" field of an sm_100 tcgen05 "
                    "descriptor; decode it with asynctc.models.tcgen05.Tcgen05Descriptor.decode") \
                if (value >> 46) & 0b111 == 1 else ""
            raise DescriptorError(f"value={value:#018x}: bits {bits} are set, but the sm_90 matrix "
                                  f"descriptor assigns only bits 0-13, 16-29, 32-45, 49-51, 62-63 "
                                  f"({SECTION}){hint}")

        def field(lo, width):
            return (value >> lo) & ((1 << width) - 1)
        return cls(start_address=field(0, 14) << 4, lbo=field(16, 14) << 4,
                   sbo=field(32, 14) << 4, swizzle=SPAN_OF_LAYOUT_TYPE[field(62, 2)],
                   base_offset=field(49, 3))

    def advanced(self, nbytes: int) -> "WgmmaDescriptor":
        """The same descriptor with the start address moved by ``nbytes`` (a multiple of 16): how a
        kernel steps along K inside a swizzle row (+32 bytes per k16 step of a 16-bit K-major
        operand) or to the next box."""
        return dataclasses.replace(self, start_address=self.start_address + int(nbytes))

    def fields(self) -> list[dict]:
        """One row per field, for tables: ``name``, ``bits`` ("0-13"), ``value`` (bytes or mode),
        ``encoded`` (what the field holds), ``meaning``."""
        enc = self.encoded_fields()
        meaning = {
            "start_address": "shared-memory address of the operand's first element, >> 4",
            "lbo": "leading dimension byte offset, >> 4",
            "sbo": "stride dimension byte offset, >> 4",
            "base_offset": "row phase of a swizzle pattern that does not start on its boundary",
            "swizzle_mode": "0 none, 1 128B, 2 64B, 3 32B",
        }
        value = {"start_address": self.start_address, "lbo": self.lbo, "sbo": self.sbo,
                 "base_offset": self.base_offset, "swizzle_mode": self.swizzle}
        return [{"name": n, "bits": f"{lo}-{lo + w - 1}", "value": value[n], "encoded": enc[n],
                 "meaning": meaning[n]} for n, lo, w in FIELDS]

    def table(self) -> str:
        """A printable bit table of this descriptor (with the 64-bit value in hex and binary)."""
        v = self.encode()
        rows = [f"descriptor = {v:#018x}", f"binary     = {v:064b}"]
        rows.append(f"{'field':14s} {'bits':6s} {'bytes/mode':>10s} {'encoded':>8s}  meaning")
        for f in self.fields():
            unit = "B" if f["name"] in ("start_address", "lbo", "sbo") else ""
            if f["name"] == "swizzle_mode":
                val = f"{f['value']}B" if f["value"] else "none"
            else:
                val = f"{f['value']}{unit}"
            rows.append(f"{f['name']:14s} {f['bits']:6s} {val:>10s} {f['encoded']:>8d}  {f['meaning']}")
        return "\n".join(rows)

    def __str__(self) -> str:
        sw = f"{self.swizzle}B" if self.swizzle else "none"
        return (f"WgmmaDescriptor(start={self.start_address:#x}, LBO={self.lbo}, SBO={self.sbo}, "
                f"swizzle={sw}, base_offset={self.base_offset}) = {self.encode():#018x}")


def encode(start_address: int, lbo: int, sbo: int, swizzle: int = 0, base_offset: int = 0) -> int:
    """Encode a descriptor from byte values (see :class:`WgmmaDescriptor`); returns the 64-bit int."""
    return WgmmaDescriptor(start_address, lbo, sbo, swizzle, base_offset).encode()


def decode(value: int) -> WgmmaDescriptor:
    """Decode a 64-bit descriptor into byte values (see :meth:`WgmmaDescriptor.decode`)."""
    return WgmmaDescriptor.decode(value)


# --------------------------------------------------------------------------------------------------
# The layout model: which byte a descriptor makes wgmma read
# --------------------------------------------------------------------------------------------------

def read_addresses(desc: WgmmaDescriptor | int, major: str, dtype: Any, mn: int) -> np.ndarray:
    """Shared-memory byte address of every element one wgmma reads through ``desc``.

    Parameters: ``desc`` (a :class:`WgmmaDescriptor` or its 64-bit value); ``major`` "K" or "MN";
    ``dtype`` the input type; ``mn`` the operand's M or N extent (64 for A; N for B; a multiple of 8).

    Returns an ``(mn, K)`` int64 array, K = :func:`instruction_k` (16 or 32): entry ``[i, k]`` is the
    byte address of operand element (row/column ``i`` of M or N, ``k``) — for A the element
    A[i, k], for B the element B[k, i]. The formula is the canonical layout of
    §9.7.15.5.1.2.1 for the descriptor's swizzle mode, with the ``Swizzle<B,4,3>`` applied to the
    absolute address. ``base_offset`` ≠ 0 is outside this model (:class:`DescriptorError`).
    """
    d = desc if isinstance(desc, WgmmaDescriptor) else WgmmaDescriptor.decode(desc)
    name = dtype_name(dtype)
    m = check_major(major, name)
    if d.base_offset:
        raise DescriptorError(f"base_offset={d.base_offset}: this layout model covers descriptors "
                              "whose swizzle pattern starts on its boundary (base_offset 0), as "
                              "every tile of this course does")
    if isinstance(mn, bool) or not isinstance(mn, (int, np.integer)) or mn < 8 or mn % 8 or mn > 256:
        raise DescriptorError(f"mn={mn!r}: the M or N extent of one wgmma is a multiple of 8 in "
                              "8..256 (PTX ISA §9.7.15.5.2 shapes; M is always 64)")
    es = DTYPES[name][1]
    kk = DTYPES[name][2]
    t = 16 // es                       # elements per 16 bytes ("T")
    sw = d.swizzle
    i = np.arange(mn, dtype=np.int64)[:, None]
    k = np.arange(kk, dtype=np.int64)[None, :]
    if m == "K":
        m1, m0 = np.divmod(i, 8)        # 8-row core-matrix groups
        if sw == 0:
            k1, k0 = np.divmod(k, t)    # two 16-byte core matrices along K, LBO apart
            off = m0 * 16 + m1 * d.sbo + k1 * d.lbo + k0 * es
        else:
            off = m0 * sw + m1 * d.sbo + k * es      # 32 bytes of K inside one swizzle row
    else:
        k1, k0 = np.divmod(k, 8)        # 8 K-rows per core matrix / swizzle atom
        if sw == 0:
            m1, m0 = np.divmod(i, t)    # 16 bytes of MN per core matrix, SBO apart
            off = m0 * es + k0 * 16 + m1 * d.sbo + k1 * d.lbo
        else:
            m1, m0 = np.divmod(i, sw // es)          # one swizzle row of MN per atom, LBO apart
            off = m0 * es + k0 * sw + m1 * d.lbo + k1 * d.sbo
    return swizzle_bytes(d.start_address + off, sw)


def read_address(desc: WgmmaDescriptor | int, major: str, dtype: Any, mn_index: int, k: int,
                 mn: int = 256) -> int:
    """Byte address wgmma reads for one element (``mn_index``, ``k``); see :func:`read_addresses`."""
    kk = instruction_k(dtype)
    if not 0 <= k < kk:
        raise IndexError(f"k={k}: one wgmma covers k in [0, {kk})")
    if not 0 <= mn_index < mn:
        raise IndexError(f"mn_index={mn_index}: must be in [0, {mn})")
    return int(read_addresses(desc, major, dtype, mn)[mn_index, k])


def canonical_layout(major: str, swizzle: int, dtype: Any = "float16") -> str:
    """The canonical layout of §9.7.15.5.1.2.1 as CuTe text, with T filled in for ``dtype``."""
    m = check_major(major, dtype)
    sw = _check_span(swizzle)
    t = 16 // itemsize(dtype)
    b = {0: 0, 32: 1, 64: 2, 128: 3}[sw]
    if m == "K":
        body = f"((8,m),({t},2k)):(({t},SBO),(1,LBO))" if sw == 0 else \
            f"((8,m),({t},2k)):(({sw // 16 * t},SBO),(1,{t}))"
    else:
        body = f"(({t},1,m),(8,k)):((1,{t},SBO),({t},LBO))" if sw == 0 else \
            f"(({t},{sw // 16},m),(8,k)):((1,{t},LBO),({sw // 16 * t},SBO))"
    return f"Swizzle<{b},4,3> o {body}  (units: elements)"


# --------------------------------------------------------------------------------------------------
# An operand tile in shared memory, as TMA boxes
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class OperandTile:
    """One wgmma operand tile in shared memory: ``mn`` × ``k`` elements of ``dtype``.

    For A, ``mn`` = 64 (M) and the tile holds A[0:64, 0:k]; for B, ``mn`` = N and it holds
    B[0:k, 0:N]. ``major`` "K" (K contiguous) or "MN"; ``swizzle`` 0, 32, 64 or 128 bytes.

    The tile is stored as TMA would store it: a row of **boxes**, each an
    :class:`asynctc.models.layout.SmemTile` of ``box_rows`` × ``box_cols`` (inner dimension = K for
    K-major, MN for MN-major), ``box_pitch`` bytes apart, one box per swizzle span of the inner
    dimension (per 16 bytes without swizzle, so that each box is a column of 8-row core matrices).
    From that, :meth:`descriptor` gives the descriptor of each k-step (the LBO/SBO of the canonical
    layout) and :meth:`addresses` the byte of every element that those descriptors make wgmma read.

    Rules checked (:class:`DescriptorError`): dtype one of :data:`DTYPES`; fp8 only K-major;
    ``k`` a positive multiple of the instruction K (16 / 32); ``mn`` a multiple of 8 in 8..256;
    with a swizzle, the inner extent in bytes ≤ the span or a multiple of it; without, a multiple
    of 16 bytes.
    """

    mn: int
    k: int
    dtype: str = "float16"
    major: str = "K"
    swizzle: int = 128

    def __post_init__(self):
        name = dtype_name(self.dtype)
        object.__setattr__(self, "dtype", name)
        object.__setattr__(self, "major", check_major(self.major, name))
        object.__setattr__(self, "swizzle", _check_span(self.swizzle))
        kk = DTYPES[name][2]
        for f, v in (("mn", self.mn), ("k", self.k)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise DescriptorError(f"{f}={v!r}: must be a positive integer")
        if self.mn % 8 or self.mn > 256:
            raise DescriptorError(f"mn={self.mn}: the M or N extent of a wgmma operand is a multiple "
                                  "of 8 in 8..256 (PTX ISA §9.7.15.5.2 shapes)")
        if self.k % kk:
            raise DescriptorError(f"k={self.k}: a {name} tile feeds m64nNk{kk} wgmmas, so k must be "
                                  f"a multiple of {kk} (PTX ISA §9.7.15.5.2)")
        inner = self.inner_bytes
        if self.swizzle:
            if inner > self.swizzle and inner % self.swizzle:
                raise DescriptorError(
                    f"{'k' if self.major == 'K' else 'mn'}={self.inner_elems}: the inner "
                    f"({self.major}) extent is {inner} bytes; with swizzle {self.swizzle} B it "
                    f"must fit one swizzle row or be a whole number of them (one TMA box per "
                    f"{self.swizzle}-byte span; {SECTION_LAYOUT})")
        elif inner % 16:
            raise DescriptorError(f"mn={self.mn}: an MN-major {name} tile without swizzle needs the "
                                  f"MN extent to be a multiple of {16 // self.itemsize} elements "
                                  f"(16-byte core-matrix rows, {SECTION_LAYOUT})")

    # -- geometry ---------------------------------------------------------------------------------
    @property
    def itemsize(self) -> int:
        return DTYPES[self.dtype][1]

    @property
    def instruction_k(self) -> int:
        return DTYPES[self.dtype][2]

    @property
    def k_steps(self) -> int:
        """Number of wgmma instructions along K that this tile feeds."""
        return self.k // self.instruction_k

    @property
    def inner_elems(self) -> int:
        """Extent of the contiguous dimension: K for K-major, MN for MN-major."""
        return self.k if self.major == "K" else self.mn

    @property
    def inner_bytes(self) -> int:
        return self.inner_elems * self.itemsize

    @property
    def row_pitch(self) -> int:
        """Bytes between rows of a box: the swizzle span, or 16 without swizzle."""
        return self.swizzle or 16

    @property
    def box_rows(self) -> int:
        return self.mn if self.major == "K" else self.k

    @property
    def box_cols(self) -> int:
        return min(self.inner_elems, self.row_pitch // self.itemsize)

    @property
    def n_boxes(self) -> int:
        return -(-self.inner_bytes // (self.box_cols * self.itemsize))

    @property
    def box_pitch(self) -> int:
        """Bytes from one box to the next (= the box's shared-memory size, padding included)."""
        return self.box_rows * self.row_pitch

    @property
    def size_bytes(self) -> int:
        return self.n_boxes * self.box_pitch

    @property
    def alignment(self) -> int:
        """Required tile-base alignment in bytes (:data:`TILE_ALIGNMENT`)."""
        return TILE_ALIGNMENT[self.swizzle]

    @property
    def lbo(self) -> int:
        """Leading dimension byte offset of this tile's canonical layout (§9.7.15.5.1.2.1):
        K-major none: next 16-byte K chunk (next box); K-major swizzled: unused (16, "assumed 1");
        MN-major none: next 8 K-rows (128 B); MN-major swizzled: next swizzle atom along MN
        (next box)."""
        if self.major == "K":
            return self.box_pitch if self.swizzle == 0 else 16
        return 128 if self.swizzle == 0 else self.box_pitch

    @property
    def sbo(self) -> int:
        """Stride dimension byte offset: K-major: next 8 rows of MN (8 × row pitch); MN-major none:
        next 16-byte MN chunk (next box); MN-major swizzled: next 8 K-rows (8 × span)."""
        if self.major == "K":
            return 8 * self.row_pitch
        return self.box_pitch if self.swizzle == 0 else 8 * self.swizzle

    def step_offset(self, step: int) -> int:
        """Bytes from the tile base to the first element of k-step ``step`` (its start address)."""
        if not 0 <= step < self.k_steps:
            raise DescriptorError(f"step={step}: this tile has k-steps 0..{self.k_steps - 1}")
        kb = step * 32                               # every wgmma covers 32 bytes of K
        if self.major == "K":
            if self.swizzle == 0:
                return (kb // 16) * self.box_pitch   # one box per 16-byte K chunk
            span = self.box_cols * self.itemsize
            return (kb // span) * self.box_pitch + kb % span
        kr = step * self.instruction_k               # K rows
        return kr * self.row_pitch

    def _check_base(self, base_address: int) -> int:
        if isinstance(base_address, bool) or not isinstance(base_address, (int, np.integer)) \
                or base_address < 0:
            raise DescriptorError(f"base_address={base_address!r}: must be a non-negative integer")
        if base_address % self.alignment:
            rule = (f"the {self.swizzle}-byte swizzle pattern repeats every "
                    f"{PATTERN_BYTES[self.swizzle]} bytes and a descriptor with base offset 0 (and a "
                    f"TMA box) assumes it starts there ({SECTION})") if self.swizzle else \
                "a cp.async.bulk.tensor destination is 128-byte aligned"
            raise DescriptorError(f"base_address={int(base_address):#x}: a tile with swizzle "
                                  f"{self.swizzle} must start on a {self.alignment}-byte boundary: "
                                  f"{rule}")
        return int(base_address)

    def descriptor(self, step: int = 0, base_address: int = 0) -> WgmmaDescriptor:
        """The descriptor wgmma needs for k-step ``step`` of this tile placed at ``base_address``
        (a shared-memory byte address aligned to :attr:`alignment`). Raises :class:`DescriptorError`."""
        base = self._check_base(base_address)
        return WgmmaDescriptor(base + self.step_offset(step), self.lbo, self.sbo, self.swizzle, 0)

    def descriptors(self, base_address: int = 0) -> list[WgmmaDescriptor]:
        """:meth:`descriptor` for every k-step."""
        return [self.descriptor(s, base_address) for s in range(self.k_steps)]

    # -- the model ----------------------------------------------------------------------------------
    def addresses(self, base_address: int = 0) -> np.ndarray:
        """``(mn, k)`` int64 array: the shared-memory byte address wgmma reads for each element,
        computed from this tile's descriptors with :func:`read_addresses` (the descriptor side)."""
        kk = self.instruction_k
        out = np.empty((self.mn, self.k), dtype=np.int64)
        for s, d in enumerate(self.descriptors(base_address)):
            out[:, s * kk:(s + 1) * kk] = read_addresses(d, self.major, self.dtype, self.mn)
        return out

    def box_of(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For every element (mn, k): (box index, row in box, column in box) as ``(mn, k)`` arrays —
        where a TMA load of box j puts it."""
        i = np.arange(self.mn, dtype=np.int64)[:, None] + np.zeros((1, self.k), np.int64)
        k = np.arange(self.k, dtype=np.int64)[None, :] + np.zeros((self.mn, 1), np.int64)
        inner, outer = (k, i) if self.major == "K" else (i, k)
        j, col = np.divmod(inner, self.box_cols)
        return j, outer, col

    def smem_tile(self):
        """One box as an :class:`asynctc.models.layout.SmemTile` (the object the tensor map is made from)."""
        from .layout import SmemTile
        return SmemTile(self.box_rows, self.box_cols, self.dtype, self.swizzle)

    def tma_addresses(self, base_address: int = 0) -> np.ndarray:
        """``(mn, k)`` int64 array: where TMA puts each element, from
        :meth:`asynctc.models.layout.SmemTile.byte_offset` of its box (the TMA side)."""
        base = self._check_base(base_address)
        tile = self.smem_tile()
        j, r, c = self.box_of()
        return base + j * self.box_pitch + tile.offsets()[r, c]

    def _logical(self, values: np.ndarray) -> np.ndarray:
        v = np.asarray(values)
        if v.shape == (self.mn, self.k):
            return v
        raise ValueError(f"values.shape={v.shape}: expected (mn, k) = {(self.mn, self.k)} — for B "
                         "pass B.T (the N×K view)")

    def image(self, values: np.ndarray, fill: int = 0) -> np.ndarray:
        """The ``size_bytes`` uint8 shared-memory image of this tile holding ``values`` ((mn, k),
        any dtype of this tile's itemsize), laid out where the descriptors make wgmma read; padding
        bytes hold ``fill``."""
        v = np.ascontiguousarray(self._logical(values))
        if v.dtype.itemsize != self.itemsize:
            raise ValueError(f"values.dtype={v.dtype}: itemsize {v.dtype.itemsize}, the tile's "
                             f"dtype {self.dtype} has {self.itemsize}")
        out = np.full(self.size_bytes, fill, dtype=np.uint8)
        idx = self.addresses()[..., None] + np.arange(self.itemsize)
        out[idx.reshape(-1)] = v.view(np.uint8).reshape(-1)
        return out

    def gather(self, image: np.ndarray, descriptors: list[WgmmaDescriptor] | None = None) -> np.ndarray:
        """What wgmma reads from ``image`` (uint8, this tile's bytes at base 0) through
        ``descriptors`` (default: this tile's own), as an ``(mn, k)`` array of this dtype. Addresses
        outside the image read as 0 (bytes). With other descriptors this shows what a mismatch does."""
        raw = np.ascontiguousarray(image).view(np.uint8).ravel()
        descs = descriptors if descriptors is not None else self.descriptors()
        kk = self.instruction_k
        addr = np.empty((self.mn, self.k), dtype=np.int64)
        for s, d in enumerate(descs):
            addr[:, s * kk:(s + 1) * kk] = read_addresses(d, self.major, self.dtype, self.mn)
        idx = addr[..., None] + np.arange(self.itemsize)
        ok = (idx >= 0) & (idx < raw.size)
        got = np.where(ok, raw[np.clip(idx, 0, raw.size - 1)], 0).astype(np.uint8)
        return got.reshape(-1).view(np.dtype(_np_dtype(self.dtype))).reshape(self.mn, self.k)

    def describe(self) -> str:
        sw = f"{self.swizzle}B swizzle" if self.swizzle else "no swizzle"
        return (f"{self.mn}×{self.k} {self.dtype} {self.major}-major, {sw}: {self.n_boxes} box(es) "
                f"of {self.box_rows}×{self.box_cols}, {self.box_pitch} B apart; LBO {self.lbo} B, "
                f"SBO {self.sbo} B, {self.k_steps} k-step(s)")


def _np_dtype(name: str) -> np.dtype:
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def operand_tile_from_smem_tile(tile, major: str, boxes: int = 1) -> OperandTile:
    """The :class:`OperandTile` made of ``boxes`` consecutive copies of ``tile`` (an
    :class:`asynctc.models.layout.SmemTile`, one TMA box) read as a ``major`` wgmma operand.

    For K-major the box rows are M/N and its columns K; for MN-major the rows are K and the columns
    M/N. Raises :class:`DescriptorError` when the box is not one wgmma can read as such: its
    columns must fill the swizzle span exactly unless it is the only box (a narrower row is padded
    to the span), and be 16 bytes wide without swizzle.
    """
    name = dtype_name(getattr(tile, "dtype", None))
    m = check_major(major, name)
    es = DTYPES[name][1]
    span = int(tile.swizzle)
    cols, rows = int(tile.cols), int(tile.rows)
    if span == 0 and cols * es != 16:
        raise DescriptorError(f"tile.cols={cols}: without swizzle a box read by wgmma must be one "
                              f"16-byte column of core matrices ({16 // es} {name} elements); "
                              f"{SECTION_LAYOUT}")
    if span and boxes > 1 and cols * es != span:
        raise DescriptorError(f"tile.cols={cols}: several boxes side by side must each fill the "
                              f"{span}-byte swizzle span ({span // es} elements)")
    if m == "K":
        return OperandTile(rows, cols * boxes, name, "K", span)
    return OperandTile(cols * boxes, rows, name, "MN", span)


def descriptor_for_smem_tile(tile, major: str = "K", k_step: int = 0, base_address: int = 0,
                             boxes: int = 1) -> WgmmaDescriptor:
    """The wgmma descriptor for k-step ``k_step`` of an operand stored as ``boxes`` consecutive TMA
    boxes shaped like ``tile`` (an :class:`asynctc.models.layout.SmemTile`) at ``base_address``: the same
    object makes the tensor map (:meth:`SmemTile.tensor_map_args`) and the descriptor.
    Raises :class:`DescriptorError`."""
    return operand_tile_from_smem_tile(tile, major, boxes).descriptor(k_step, base_address)


# --------------------------------------------------------------------------------------------------
# A wrong k-step descriptor, diagnosed (chapter 04's ch04.kstep and the CPU emulation of 06e)
# --------------------------------------------------------------------------------------------------

def kstep_diagnosis(got: int, tile: OperandTile, s: int, base: int) -> str:
    """Why descriptor ``got`` is not k-step ``s``'s of ``tile`` at ``base`` (k-step 0's plus an
    advance of the start address): the known mistakes, by the advance they make. It names the field
    and how far off the advance is, and points at where the notebook gives the step. A rule it names
    comes in two tiers (:func:`asynctc.core.exercises.tiered`): a question first, then the arithmetic
    (for MN-major, the step from section 2's SBO)."""
    from ..core.exercises import tiered as cut
    d0, sec3 = tile.descriptor(0, base), " (section 3's worked k-step)?"
    field = " Which bits does a k-step move, and in what unit (section 2's table, section 3)?"
    want = tile.descriptor(s, base)
    step = want.start_address - base                  # bytes k-step s starts after k-step 0
    g_raw = got - d0.encode()                          # the learner's advance of the 64-bit value
    sbo_q = " How many of section 2's SBO (8 k-rows) are 16 k-rows?"
    sbo_r = (f" A k16 step is 16 k-rows = 2 × SBO = {2 * d0.sbo} B: +{2 * d0.sbo >> 4} per step in the "
             "field (16-byte units).")

    def where(symptom: str) -> str:                    # the step's rule; MN-major's in two tiers
        if tile.major == "K":
            return (f"{symptom}; a k16 step is 16 fp16 along the 128-byte row (section 3 works one on a "
                    "64-byte row)")
        return cut(f"{symptom}.", sbo_q, sbo_r)
    if g_raw == step:
        return cut("the start moved 16× too far.", " In what unit does the start-address field count" + sec3,
                   " The start-address field holds the address >> 4 (16-byte units): you added bytes unshifted")
    if g_raw in (step // 2, step // 2 >> 4) and tile.major == "MN" and tile.swizzle == 128:
        return cut("the MN-major start moved half as far as it should.", sbo_q, " That is one SBO (8 k-rows), "
                   "or fp16 elements counted, not bytes." + sbo_r)
    if g_raw in (step // 2, step // 2 >> 4):
        return cut(f"the {tile.major}-major start moved half as far as it should.", " Did you count elements "
                   "or bytes" + sec3, " You advanced by elements, not bytes: an fp16 element is 2 bytes"
                   + (", and the field holds bytes >> 4" if g_raw == step // 2 else ""))
    if got == d0.encode() | (step >> 4):
        return cut("the start is wrong where k-step 0's start-address field has a 1 bit.", " How did you "
                   "combine the advance with desc0, and does that carry?", " You OR-ed the advance in; where "
                   "the start-address field already has a 1 bit, OR loses the carry: add it")
    stray = got & RESERVED_MASK
    if stray or (got >> 62) != d0.layout_type:
        bits = "62–63, the swizzle mode" if not stray else "that no field owns"
        return cut(f"the advance reached bits {bits}.", field,
                   " Only the start-address field (bits 0–13, in 16-byte units) moves")
    g = {n: (got >> lo) & ((1 << w) - 1) for n, lo, w in FIELDS}   # raw: a start inside a
    g0 = {n: (d0.encode() >> lo) & ((1 << w) - 1) for n, lo, w in FIELDS}  # pattern won't decode
    if any(g[n] != g0[n] for n in ("lbo", "sbo", "base_offset")):
        moved = [t for n, t in (("lbo", "LBO"), ("sbo", "SBO"), ("base_offset", "the base offset"))
                 if g[n] != g0[n]]
        return cut(f"you changed {' and '.join(moved)}.", field, " They stay as k-step 0's: only the start "
                   "address (bits 0–13, in 16-byte units) moves")
    adv = (g["start_address"] << 4) - base
    if adv == 0:
        return where(f"it is k-step 0's descriptor: the start address must move for k-step {s}")
    off = (f"{adv / step:.3g}× too far" if adv > step else f"{step / adv:.3g}× too near"
           if adv > 0 else "backwards")
    other = "MN" if tile.major == "K" else "K"
    other_tile = OperandTile(tile.mn, tile.k, tile.dtype, other, tile.swizzle)
    other_step = other_tile.descriptor(s, base).start_address - base
    if adv == s * tile.box_pitch or adv == s * 1024:
        return where(f"k-step {s} does not cross into the next box or swizzle pattern: the start moved {off}")
    if adv == other_step:
        return where(f"that is the {other}-major advance, {off}")
    return where(f"the start address moved {off}")
