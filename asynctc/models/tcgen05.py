"""The two descriptors of Blackwell's ``tcgen05.mma``, bit by bit (chapter 09).

A ``tcgen05.mma.cta_group::{1,2}.kind::{f16,tf32,f8f6f4}`` is issued by **one thread** and reads

* A and B from shared memory through two 64-bit **shared-memory descriptors**
  (:class:`Tcgen05Descriptor`), and
* everything else — types, M, N, transposes, negation, sparsity — from a 32-bit **instruction
  descriptor** (:class:`InstrDescriptor`).

The accumulator lives in Tensor Memory (:mod:`asynctc.models.tmem`). This module encodes and
decodes both descriptors, validates them (every error names the field, the value and the rule), and
says which shared-memory byte a descriptor makes the Tensor Core read (:func:`read_addresses`).

Sources (PTX ISA 9.x, chapter "Tensor Core 5th Generation Family Instructions", §9.7.16):

* §9.7.16.4.2 "Instruction Descriptor", Table "Instruction descriptor format for .kind::tf32,
  .kind::f16, .kind::f8f6f4 and .kind::i8" (bits inclusive)::

      0-1   sparsity selector         (only with sparsity)
      2     sparsity                  dense 0, sparse 1
      3     saturate                  integer kinds only (0 here)
      4-5   D type                    F16 0, F32 1 (S32 2 for .kind::i8)
      6     reserved
      7-9   A type                    f16: F16 0, BF16 1; tf32: TF32 2;
                                      f8f6f4: E4M3 0, E5M2 1, E2M3 3, E3M2 4, E2M1 5
      10-12 B type                    as A
      13    negate A                  14  negate B
      15    transpose A (A MN-major)  16  transpose B (B MN-major)
      17-22 N >> 3                    23  reserved
      24-28 M >> 4                    29  reserved
      30-31 maximum shift             .ws only (0 here)

* §9.7.16.2.1 "Matrix Shape", Table "Various combinations of .kind and shapes" (dense, no .ws):
  ``cta_group::1``: M ∈ {64, 128}, N = 8…256 in steps of 8; ``cta_group::2``: M ∈ {128, 256},
  N = 16…256 in steps of 16; K = 16 (f16/bf16), 8 (tf32), 32 (f8f6f4). kind::f16 with D = F16 takes
  only f16 inputs; bf16 needs D = F32.
* §9.7.16.4.1 "Shared Memory Descriptor", Table "Shared memory descriptor layout"::

      0-13  start address   matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4
      14-15 reserved
      16-29 leading dimension byte offset (or absolute address, LBO mode 1)
      30-31 reserved
      32-45 stride dimension byte offset
      46-48 fixed 0b001     (the model's field "version", value 1; an sm_90 descriptor has 0 there)
      49-51 matrix base offset
      52    LBO mode        0 relative, 1 absolute (absolute: sm_103a)
      53-60 fixed 0
      61-63 swizzle         0 none, 1 128-byte with 32-byte atoms, 2 128-byte, 4 64-byte, 6 32-byte;
                            3, 5, 7 invalid

  Start address, LBO and SBO are the sm_90 fields (same bits, same 16-byte units) and the
  canonical layouts are the sm_90 ones (CUTLASS's ``make_umma_desc`` reuses the GMMA layout atoms),
  so :func:`read_addresses` delegates to :func:`asynctc.models.descriptors.read_addresses`. What differs:
  the fixed 0b001 in bits 46-48, the "version" (so a wgmma descriptor is *not* a tcgen05 descriptor, and vice versa —
  both decoders reject the other's values), the LBO-mode bit, and a 3-bit swizzle field whose codes
  2/4/6 are the sm_90 codes 1/2/3 shifted left by one bit, plus the new mode 1.

Facts this module could not pin down from the PTX text (see the chapter's report): the D types of
``.kind::f8f6f4`` (the instruction-descriptor table lists F32 only; we accept F32 only), and the read
layout of the 128-byte/32-byte-atom swizzle mode (encoded and decoded, not modelled).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from . import descriptors as _d
from .descriptors import DescriptorError

SECTION_IDESC = "PTX ISA §9.7.16.4.2 'Instruction Descriptor' (tcgen05)"
SECTION_SHAPE = "PTX ISA §9.7.16.2.1 'Matrix Shape' (tcgen05.mma)"
SECTION_SDESC = "PTX ISA §9.7.16.4.1 'Shared Memory Descriptor' (tcgen05)"

# ==================================================================================================
# The instruction descriptor (32 bits)
# ==================================================================================================

#: (field, first bit, width) of the instruction descriptor for kind::f16 / tf32 / f8f6f4.
IDESC_FIELDS = (("sparse_id2", 0, 2), ("sparse", 2, 1), ("saturate", 3, 1), ("d_format", 4, 2),
                ("a_format", 7, 3), ("b_format", 10, 3), ("negate_a", 13, 1), ("negate_b", 14, 1),
                ("transpose_a", 15, 1), ("transpose_b", 16, 1), ("n_dim", 17, 6), ("m_dim", 24, 5),
                ("max_shift", 30, 2))
IDESC_RESERVED_BITS = (6, 23, 29)

#: kind → {input dtype name: A/B format code}.
INPUT_FORMATS = {
    "f16": {"float16": 0, "bfloat16": 1},
    "tf32": {"tfloat32": 2},
    "f8f6f4": {"float8_e4m3fn": 0, "float8_e5m2": 1, "float6_e2m3": 3, "float6_e3m2": 4,
               "float4_e2m1": 5},
}
#: D format code of each accumulator type.
D_FORMATS = {"float16": 0, "float32": 1}
#: K of one instruction (dense) per kind: always 32 bytes of K for the 16- and 8-bit types.
INSTRUCTION_K = {"f16": 16, "tf32": 8, "f8f6f4": 32}
#: Input types that may be MN-major ("transposed"); the 6- and 4-bit types must be K-major
#: (CUTLASS mma_sm100_desc.hpp, a_major_/b_major_ comment).
TRANSPOSABLE = {"float16", "bfloat16", "tfloat32", "float8_e4m3fn", "float8_e5m2"}

_DTYPE_ALIASES = {"f16": "float16", "fp16": "float16", "half": "float16", "bf16": "bfloat16",
                  "tf32": "tfloat32", "f32": "float32", "fp32": "float32",
                  "e4m3": "float8_e4m3fn", "float8_e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2",
                  "e2m3": "float6_e2m3", "e3m2": "float6_e3m2", "e2m1": "float4_e2m1"}


def _dtype(x: Any, what: str) -> str:
    if isinstance(x, str):
        name = x.strip().lower()
    else:
        try:
            name = np.dtype(x).name
        except TypeError:
            name = str(x)
    return _DTYPE_ALIASES.get(name, name)


#: 1-bit switches that may be given as True/False; every other field must be an int, not a bool.
_BOOL_OK = ("negate_a", "negate_b", "saturate", "sparse")


def _flag(name: str, v: Any, width: int = 1, section: str = SECTION_IDESC) -> int:
    if isinstance(v, bool):
        if name not in _BOOL_OK:
            raise DescriptorError(f"{name}={v!r}: a {width}-bit number, not a boolean ({section})")
        v = int(v)
    if not isinstance(v, (int, np.integer)) or not 0 <= int(v) < (1 << width):
        raise DescriptorError(f"{name}={v!r}: a {width}-bit field, 0..{(1 << width) - 1} ({section})")
    return int(v)


def _major(name: str, v: Any) -> str:
    m = {"K": "K", "MN": "MN", "M": "MN", "N": "MN"}.get(str(v).strip().upper())
    if m is None:
        raise DescriptorError(f"{name}={v!r}: 'K' (K-major, transpose bit 0) or 'MN' (M/N-major, "
                              f"transpose bit 1) ({SECTION_IDESC})")
    return m


def valid_ns(m: int, cta_group: int = 1) -> tuple[int, ...]:
    """The N a dense, non-.ws ``tcgen05.mma`` accepts for this M and CTA group (§9.7.16.2.1):
    8…256 step 8 for ``cta_group::1``, 16…256 step 16 for ``cta_group::2``."""
    step = 8 if cta_group == 1 else 16
    return tuple(range(step, 257, step))


def _pack(table, enc: dict[str, int]) -> int:
    """Place each field value of ``enc`` at its bits (``table``: (name, lowest bit, width) rows)."""
    v = 0
    for name, lo, w in table:
        assert enc[name] < (1 << w), name
        v |= enc[name] << lo
    return v


@dataclasses.dataclass(frozen=True)
class InstrDescriptor:
    """The 32-bit instruction descriptor of a dense ``tcgen05.mma`` (no ``.ws``).

    ``kind`` ("f16", "tf32", "f8f6f4") and ``cta_group`` (1 or 2) are part of the *instruction*,
    not of the descriptor's bits, but they decide which values are legal, so the model carries them.
    Fields: ``a_dtype``/``b_dtype`` (course names: "float16", "bfloat16", "tfloat32",
    "float8_e4m3fn", "float8_e5m2", "float6_e2m3", "float6_e3m2", "float4_e2m1"), ``d_dtype``
    ("float32" or "float16"), ``m``, ``n`` (the MMA's full M and N; with ``cta_group=2`` each CTA
    holds M/2 rows of A and D and N/2 columns of B), ``a_major``/``b_major`` ("K" or "MN": the
    transpose bits), ``negate_a``/``negate_b``, ``saturate``, ``sparse``, ``sparse_id2``,
    ``max_shift`` (0/1 flags and small ints).

    Raises :class:`asynctc.models.descriptors.DescriptorError` naming the field, the value and the rule
    (type combinations per kind, M per CTA group, N range and step, transposes only for 8/16/32-bit
    types, saturate 0 for float kinds, dense only, maximum shift only with ``.ws``).
    """

    a_dtype: str = "float16"
    b_dtype: str = "float16"
    d_dtype: str = "float32"
    m: int = 128
    n: int = 256
    a_major: str = "K"
    b_major: str = "K"
    kind: str = "f16"
    cta_group: int = 1
    negate_a: int = 0
    negate_b: int = 0
    saturate: int = 0
    sparse: int = 0
    sparse_id2: int = 0
    max_shift: int = 0

    def __post_init__(self):
        kind = str(self.kind).strip().lower().replace("kind::", "")
        if kind not in INPUT_FORMATS:
            raise DescriptorError(f"kind={self.kind!r}: this model covers .kind::f16, .kind::tf32 "
                                  f"and .kind::f8f6f4 ({SECTION_IDESC})")
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731
        set_("kind", kind)
        cg = self.cta_group
        if isinstance(cg, bool) or cg not in (1, 2):
            raise DescriptorError(f"cta_group={cg!r}: .cta_group::1 (one CTA) or .cta_group::2 "
                                  f"(a CTA pair) ({SECTION_SHAPE})")
        allowed = INPUT_FORMATS[kind]
        for f in ("a_dtype", "b_dtype"):
            name = _dtype(getattr(self, f), f)
            if name not in allowed:
                raise DescriptorError(f"{f}={getattr(self, f)!r}: .kind::{kind} takes "
                                      f"{sorted(allowed)} ({SECTION_IDESC}, A/B type)")
            set_(f, name)
        if kind == "f16" and self.a_dtype != self.b_dtype:
            raise DescriptorError(f"b_dtype={self.b_dtype!r} with a_dtype={self.a_dtype!r}: "
                                  f".kind::f16 multiplies f16×f16 or bf16×bf16, not a mix "
                                  f"({SECTION_SHAPE})")
        d = _dtype(self.d_dtype, "d_dtype")
        if d not in D_FORMATS:
            raise DescriptorError(f"d_dtype={self.d_dtype!r}: the accumulator is float32 or "
                                  f"float16 for these kinds ({SECTION_IDESC}, D type)")
        if d == "float16" and not (kind == "f16" and self.a_dtype == "float16"):
            raise DescriptorError(f"d_dtype='float16' with {kind} inputs {self.a_dtype}: an F16 "
                                  f"accumulator exists only for .kind::f16 with f16 inputs; use "
                                  f"float32 ({SECTION_SHAPE}; {SECTION_IDESC})")
        set_("d_dtype", d)
        for f in ("a_major", "b_major"):
            mj = _major(f, getattr(self, f))
            dt = self.a_dtype if f == "a_major" else self.b_dtype
            if mj == "MN" and dt not in TRANSPOSABLE:
                raise DescriptorError(f"{f}='MN' with {dt}: the transpose bit may be 1 only for "
                                      f"the 8-, 16- and 32-bit input types; 6- and 4-bit operands "
                                      f"are K-major ({SECTION_IDESC}; CUTLASS mma_sm100_desc.hpp)")
            set_(f, mj)
        for f in ("m", "n"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise DescriptorError(f"{f}={v!r}: must be an integer")
            set_(f, int(v))
        ms = (64, 128) if cg == 1 else (128, 256)
        if self.m not in ms:
            raise DescriptorError(f"m={self.m}: with .cta_group::{cg} M is {ms[0]} or {ms[1]} "
                                  f"({SECTION_SHAPE}; M=32 exists only with .ws)")
        ns = valid_ns(self.m, cg)
        if self.n not in ns:
            step = ns[0]
            raise DescriptorError(f"n={self.n}: with .cta_group::{cg} and M={self.m}, N is "
                                  f"{step}…256 in steps of {step} ({SECTION_SHAPE})")
        for f, w in (("negate_a", 1), ("negate_b", 1), ("saturate", 1), ("sparse", 1),
                     ("sparse_id2", 2), ("max_shift", 2)):
            set_(f, _flag(f, getattr(self, f), w))
        if self.saturate:
            raise DescriptorError(f"saturate=1: saturation is for integer types (.kind::i8); it "
                                  f"must be 0 for .kind::{kind} ({SECTION_IDESC}, bit 3)")
        if self.sparse:
            raise DescriptorError("sparse=1: this model covers dense MMAs only (sparse A doubles K "
                                  f"and needs a metadata operand in TMEM) ({SECTION_IDESC}, bit 2)")
        if self.sparse_id2:
            raise DescriptorError(f"sparse_id2={self.sparse_id2}: the sparsity selector is used "
                                  f"only when sparsity (bit 2) is 1; keep it 0 for a dense MMA "
                                  f"({SECTION_IDESC}, bits 0-1)")
        if self.max_shift:
            raise DescriptorError(f"max_shift={self.max_shift}: the maximum shift applies to "
                                  f"B-matrix reuse in tcgen05.mma.ws only; 0 for the MMA modelled "
                                  f"here ({SECTION_IDESC}, bits 30-31)")

    # -- geometry ---------------------------------------------------------------------------------
    @property
    def k(self) -> int:
        """K of one instruction: 16 (f16/bf16), 8 (tf32), 32 (f8f6f4)."""
        return INSTRUCTION_K[self.kind]

    @property
    def cta_m(self) -> int:
        """Rows of A and of D that each CTA holds: M / cta_group."""
        return self.m // self.cta_group

    @property
    def cta_n(self) -> int:
        """Columns of B that each CTA's shared memory holds: N / cta_group."""
        return self.n // self.cta_group

    # -- bits ---------------------------------------------------------------------------------------
    def encoded_fields(self) -> dict[str, int]:
        """Field name → the integer stored in it."""
        fmt = INPUT_FORMATS[self.kind]
        return {"sparse_id2": self.sparse_id2, "sparse": self.sparse, "saturate": self.saturate,
                "d_format": D_FORMATS[self.d_dtype], "a_format": fmt[self.a_dtype],
                "b_format": fmt[self.b_dtype], "negate_a": self.negate_a, "negate_b": self.negate_b,
                "transpose_a": int(self.a_major == "MN"), "transpose_b": int(self.b_major == "MN"),
                "n_dim": self.n >> 3, "m_dim": self.m >> 4, "max_shift": self.max_shift}

    def encode(self) -> int:
        """The 32-bit descriptor as an unsigned Python int."""
        return _pack(IDESC_FIELDS, self.encoded_fields())

    def __int__(self) -> int:
        return self.encode()

    @classmethod
    def decode(cls, value: int, kind: str = "f16", cta_group: int = 1) -> "InstrDescriptor":
        """The fields of a 32-bit instruction descriptor used with ``.kind::<kind>`` and
        ``.cta_group::<cta_group>`` (those are not in the bits). Raises :class:`DescriptorError`
        for a non-integer or a value outside 0..2^32-1, a set reserved bit (6, 23, 29), a type code
        the kind does not define, an N or M field that is not a whole N>>3 / M>>4 of a legal shape,
        or any rule of the constructor."""
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise DescriptorError(f"value={value!r}: an instruction descriptor is a 32-bit "
                                  f"unsigned integer ({SECTION_IDESC})")
        value = int(value)
        if not 0 <= value < (1 << 32):
            raise DescriptorError(f"value={value:#x}: outside 0 .. 2^32-1 — the instruction "
                                  f"descriptor is 32 bits ({SECTION_IDESC})")
        bad = [b for b in IDESC_RESERVED_BITS if value >> b & 1]
        if bad:
            raise DescriptorError(f"value={value:#010x}: reserved bit(s) {bad} set; bits 6, 23 and "
                                  f"29 must be 0 ({SECTION_IDESC})")
        k = str(kind).strip().lower().replace("kind::", "")
        if k not in INPUT_FORMATS:
            raise DescriptorError(f"kind={kind!r}: this model covers f16, tf32, f8f6f4")
        f = {name: (value >> lo) & ((1 << w) - 1) for name, lo, w in IDESC_FIELDS}
        names = {v: n for n, v in INPUT_FORMATS[k].items()}
        dnames = {v: n for n, v in D_FORMATS.items()}
        for fld in ("a_format", "b_format"):
            if f[fld] not in names:
                raise DescriptorError(f"value={value:#010x}: {fld}={f[fld]} is not a .kind::{k} "
                                      f"type code (valid: {sorted(names)}) ({SECTION_IDESC})")
        if f["d_format"] not in dnames:
            raise DescriptorError(f"value={value:#010x}: d_format={f['d_format']} is not F16 (0) "
                                  f"or F32 (1) ({SECTION_IDESC})")
        return cls(a_dtype=names[f["a_format"]], b_dtype=names[f["b_format"]],
                   d_dtype=dnames[f["d_format"]], m=f["m_dim"] << 4, n=f["n_dim"] << 3,
                   a_major="MN" if f["transpose_a"] else "K",
                   b_major="MN" if f["transpose_b"] else "K", kind=k, cta_group=cta_group,
                   negate_a=f["negate_a"], negate_b=f["negate_b"], saturate=f["saturate"],
                   sparse=f["sparse"], sparse_id2=f["sparse_id2"], max_shift=f["max_shift"])

    def fields(self) -> list[dict]:
        """One row per field for tables: ``name``, ``bits``, ``value`` (meaning), ``encoded``."""
        enc = self.encoded_fields()
        value = {"sparse_id2": self.sparse_id2, "sparse": "dense" if not self.sparse else "sparse",
                 "saturate": self.saturate, "d_format": self.d_dtype, "a_format": self.a_dtype,
                 "b_format": self.b_dtype, "negate_a": self.negate_a, "negate_b": self.negate_b,
                 "transpose_a": f"A {self.a_major}-major", "transpose_b": f"B {self.b_major}-major",
                 "n_dim": f"N={self.n}", "m_dim": f"M={self.m}", "max_shift": self.max_shift}
        return [{"name": n, "bits": f"{lo}" if w == 1 else f"{lo}-{lo + w - 1}",
                 "value": value[n], "encoded": enc[n]} for n, lo, w in IDESC_FIELDS]

    def table(self) -> str:
        """A printable bit table (value in hex and binary, one row per field)."""
        v = self.encode()
        rows = [f"instruction descriptor = {v:#010x}  (.kind::{self.kind}, "
                f".cta_group::{self.cta_group})", f"binary = {v:032b}",
                f"{'field':12s} {'bits':6s} {'encoded':>7s}  meaning"]
        rows += [f"{r['name']:12s} {r['bits']:6s} {r['encoded']:>7d}  {r['value']}"
                 for r in self.fields()]
        return "\n".join(rows)

    def ptx(self) -> str:
        """The PTX instruction this descriptor goes with (shared-memory A, dense)."""
        return (f"tcgen05.mma.cta_group::{self.cta_group}.kind::{self.kind} "
                f"[d_tmem], a_desc, b_desc, idesc, enable_input_d;")


# ==================================================================================================
# The shared-memory descriptor (64 bits)
# ==================================================================================================

#: Swizzle-mode field (bits 61-63): name → code. 3, 5 and 7 are invalid.
TCGEN05_SWIZZLE = {"none": 0, "128B_base32B": 1, "128B": 2, "64B": 4, "32B": 6}
_SWIZZLE_NAME = {v: k for k, v in TCGEN05_SWIZZLE.items()}
#: Swizzle name → span in bytes, for the modes that have an sm_90 twin (the read model covers these).
SPAN = {"none": 0, "32B": 32, "64B": 64, "128B": 128}
_NAME_OF_SPAN = {v: k for k, v in SPAN.items()}

#: (field, first bit, width) of the sm_100 shared-memory descriptor.
#: The PTX ISA's table "Shared memory descriptor layout" (§9.7.16.4.1): the one source of the bit
#: ranges that the encoder, the decoder, their error messages and the chapter's table use.
SDESC_FIELDS = (("start_address", 0, 14), ("lbo", 16, 14), ("sbo", 32, 14), ("version", 46, 3),
                ("base_offset", 49, 3), ("lbo_mode", 52, 1), ("swizzle", 61, 3))
#: What each field holds, and how it compares with the sm_90 wgmma descriptor (for tables).
SDESC_NOTES = {
    "start_address": ("start address >> 4", "same"),
    "lbo": ("LBO >> 4 (or an absolute address, LBO mode 1)", "same field"),
    "sbo": ("SBO >> 4", "same"),
    "version": ("fixed 0b001 (the \"version\", 1)", "new: 0 on sm_90"),
    "base_offset": ("matrix base offset", "same"),
    "lbo_mode": ("LBO mode: 0 relative, 1 absolute", "new"),
    "swizzle": ("swizzle: 0 none, 1 128B moving 32-byte chunks (not 16), 2 128B, 4 64B, 6 32B", "3 bits instead of 2"),
}
_SDESC_ASSIGNED = sum(((1 << w) - 1) << lo for _, lo, w in SDESC_FIELDS)
#: Bits that must be 0: 14-15, 30-31 and 53-60.
SDESC_RESERVED_MASK = ((1 << 64) - 1) & ~_SDESC_ASSIGNED
VERSION = 1
_V_LO, _V_W = next((lo, w) for n, lo, w in SDESC_FIELDS if n == "version")
#: "46-48": the version field's bits, as the messages and tables print them.
VERSION_BITS = f"{_V_LO}-{_V_LO + _V_W - 1}"


def _bits(lo: int, w: int) -> str:
    return f"{lo}" if w == 1 else f"{lo}-{lo + w - 1}"


def sdesc_layout() -> str:
    """The sm_100 shared-memory descriptor's fields as a printable table (from
    :data:`SDESC_FIELDS` and :data:`SDESC_NOTES`), reserved ranges included."""
    rows, nxt = [("bits", "field", "holds", "compared with sm_90")], 0
    for name, lo, w in SDESC_FIELDS:
        if lo > nxt:
            rows.append((_bits(nxt, lo - nxt), "(reserved)", "0", ""))
        rows.append((_bits(lo, w), name) + SDESC_NOTES[name])
        nxt = lo + w
    widths = [max(len(r[c]) for r in rows) for c in range(4)]
    return "\n".join(" | ".join(x.ljust(wd) for x, wd in zip(r, widths)).rstrip() for r in rows)


def _swizzle_name(sw: Any) -> str:
    if isinstance(sw, str):
        t = sw.strip()
        alias = {"NONE": "none", "0": "none", "128": "128B", "64": "64B", "32": "32B",
                 "128B": "128B", "64B": "64B", "32B": "32B", "128B_BASE32B": "128B_base32B"}
        t = alias.get(t.upper().replace("SWIZZLE_", ""), t)
        if t in TCGEN05_SWIZZLE:
            return t
    elif not isinstance(sw, bool) and isinstance(sw, (int, np.integer)) and int(sw) in _NAME_OF_SPAN:
        return _NAME_OF_SPAN[int(sw)]
    raise DescriptorError(f"swizzle={sw!r}: one of {sorted(TCGEN05_SWIZZLE)} (or a span 0/32/64/"
                          f"128 bytes) — codes 0, 1, 2, 4, 6 of bits 61-63 ({SECTION_SDESC})")


@dataclasses.dataclass(frozen=True)
class Tcgen05Descriptor:
    """An sm_100 ``tcgen05.mma`` shared-memory descriptor, in bytes.

    Fields (§9.7.16.4.1): ``start_address``, ``lbo``, ``sbo`` — byte values, multiples of 16 below
    256 KiB (the sm_90 encoding); ``swizzle`` — "none", "32B", "64B", "128B" or "128B_base32B" (a
    span 0/32/64/128 is accepted too); ``base_offset`` 0..7 (the row phase of a swizzle pattern that
    does not start on its 1024/512/256-byte boundary; 0 without swizzle); ``lbo_mode`` 0 (LBO is
    a relative byte offset) or 1 (an absolute byte address, sm_103a); ``version`` is fixed at 1.

    Raises :class:`DescriptorError` (naming field, value and rule) for a value that is not a
    multiple of 16 or overflows its field, an unknown swizzle, a base offset out of range or set
    without swizzle, a start address past the first 128-byte row of its swizzle pattern with base
    offset 0, or a version other than 1.
    """

    start_address: int
    lbo: int
    sbo: int
    swizzle: str = "none"
    base_offset: int = 0
    lbo_mode: int = 0
    version: int = VERSION

    def __post_init__(self):
        for f in ("start_address", "lbo", "sbo"):
            object.__setattr__(self, f, _d._check_bytes(f, getattr(self, f),
                                                        f"a byte value; {SECTION_SDESC}",
                                                        SECTION_SDESC))
        sw = _swizzle_name(self.swizzle)
        object.__setattr__(self, "swizzle", sw)
        object.__setattr__(self, "base_offset", _flag("base_offset", self.base_offset, 3,
                                                      SECTION_SDESC))
        object.__setattr__(self, "lbo_mode", _flag("lbo_mode", self.lbo_mode, 1, SECTION_SDESC))
        if isinstance(self.version, bool) or self.version != VERSION:
            raise DescriptorError(f"version={self.version!r}: bits {VERSION_BITS} hold the fixed 0b001 — "
                                  f"version 1 — in every tcgen05 descriptor ({SECTION_SDESC}); a "
                                  "0 there is what an sm_90 wgmma descriptor looks like")
        bo = self.base_offset
        if sw == "none" and bo:
            raise DescriptorError(f"base_offset={bo} with swizzle='none': the matrix base offset "
                                  f"is the row phase of a swizzle pattern; without swizzle it must "
                                  f"be 0 ({SECTION_SDESC})")
        span = SPAN.get(sw, 0)
        if span and bo == 0:
            pat = _d.PATTERN_BYTES[span]
            into = self.start_address % pat
            if into >= 128:
                raise DescriptorError(
                    f"start_address={self.start_address:#x} with swizzle={sw} and base_offset=0: "
                    f"the address is {into} bytes into a {pat}-byte swizzle pattern, past its "
                    f"first 128-byte row, so the pattern did not start on a {pat}-byte boundary "
                    f"(Table 'Starting address of repeating pattern'). Align the tile base to "
                    f"{pat} bytes, or set base_offset = (pattern start >> 7) & 7 ({SECTION_SDESC})")

    # -- bits ---------------------------------------------------------------------------------------
    @property
    def span(self) -> int:
        """Swizzle span in bytes (0 none; 128 for both 128-byte modes)."""
        return 128 if self.swizzle == "128B_base32B" else SPAN[self.swizzle]

    def encoded_fields(self) -> dict[str, int]:
        return {"start_address": (self.start_address & 0x3FFFF) >> 4,
                "lbo": (self.lbo & 0x3FFFF) >> 4, "sbo": (self.sbo & 0x3FFFF) >> 4,
                "version": self.version, "base_offset": self.base_offset,
                "lbo_mode": self.lbo_mode, "swizzle": TCGEN05_SWIZZLE[self.swizzle]}

    def encode(self) -> int:
        """The 64-bit descriptor as an unsigned Python int."""
        return _pack(SDESC_FIELDS, self.encoded_fields())

    def __int__(self) -> int:
        return self.encode()

    @classmethod
    def decode(cls, value: int) -> "Tcgen05Descriptor":
        """The fields of a 64-bit tcgen05 descriptor. Raises :class:`DescriptorError` for a
        non-integer (booleans included) or a value outside 0..2^64-1, bits 46-48 other than the
        fixed 0b001 (an sm_90 wgmma descriptor has 0 there), a set reserved bit (14-15, 30-31,
        53-60), an invalid swizzle code (3, 5, 7), or any rule of the constructor."""
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise DescriptorError(f"value={value!r}: a descriptor is a 64-bit unsigned integer "
                                  f"({SECTION_SDESC})")
        value = int(value)
        if not 0 <= value < (1 << 64):
            raise DescriptorError(f"value={value:#x}: outside 0 .. 2^64-1 ({SECTION_SDESC})")
        ver = (value >> _V_LO) & ((1 << _V_W) - 1)
        if ver != VERSION:
            hint = (" — this looks like an sm_90 wgmma descriptor (no version field); decode it "
                    "with asynctc.models.descriptors.WgmmaDescriptor.decode, or set bit 46") if ver == 0 \
                else ""
            raise DescriptorError(f"value={value:#018x}: version (bits {VERSION_BITS}) = {ver:#05b}, "
                                  f"but they must hold the fixed 0b001 ({SECTION_SDESC}){hint}")
        if value & SDESC_RESERVED_MASK:
            bits = [b for b in range(64) if (value & SDESC_RESERVED_MASK) >> b & 1]
            raise DescriptorError(f"value={value:#018x}: bits {bits} are set, but bits 14-15, "
                                  f"30-31 and 53-60 of a tcgen05 descriptor must be 0 "
                                  f"({SECTION_SDESC})")
        code = (value >> 61) & 0b111
        if code not in _SWIZZLE_NAME:
            raise DescriptorError(f"value={value:#018x}: swizzle code {code} in bits 61-63 is "
                                  f"invalid (3, 5 and 7 are; valid: 0, 1, 2, 4, 6) ({SECTION_SDESC})")

        def field(lo, w):
            return (value >> lo) & ((1 << w) - 1)
        return cls(field(0, 14) << 4, field(16, 14) << 4, field(32, 14) << 4, _SWIZZLE_NAME[code],
                   field(49, 3), field(52, 1), ver)

    def replace(self, **changes) -> "Tcgen05Descriptor":
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def advanced(self, nbytes: int) -> "Tcgen05Descriptor":
        """The same descriptor with the start address moved by ``nbytes`` (a k-step)."""
        return self.replace(start_address=self.start_address + int(nbytes))

    # -- the sm_90 twin -----------------------------------------------------------------------------
    def to_wgmma(self) -> "_d.WgmmaDescriptor":
        """The sm_90 descriptor with the same start/LBO/SBO/swizzle/base offset (for the modes both
        have; LBO mode 0). Raises :class:`DescriptorError` for "128B_base32B" or LBO mode 1."""
        if self.swizzle not in SPAN:
            raise DescriptorError(f"swizzle={self.swizzle!r}: the 128-byte swizzle with 32-byte "
                                  f"atoms is new on sm_100; wgmma has no such mode")
        if self.lbo_mode:
            raise DescriptorError("lbo_mode=1: absolute LBO addresses are new on sm_100 (sm_103a)")
        return _d.WgmmaDescriptor(self.start_address, self.lbo, self.sbo, SPAN[self.swizzle],
                                  self.base_offset)

    @classmethod
    def from_wgmma(cls, d: "_d.WgmmaDescriptor") -> "Tcgen05Descriptor":
        """The tcgen05 descriptor describing the same operand layout as sm_90 descriptor ``d``."""
        return cls(d.start_address, d.lbo, d.sbo, _NAME_OF_SPAN[d.swizzle], d.base_offset)

    @classmethod
    def from_operand_tile(cls, tile: "_d.OperandTile", step: int = 0,
                          base_address: int = 0) -> "Tcgen05Descriptor":
        """The descriptor for k-step ``step`` of an :class:`asynctc.models.descriptors.OperandTile`
        (a tile stored as TMA boxes) at ``base_address``: same geometry as the wgmma one, because
        the canonical layouts are the same."""
        return cls.from_wgmma(tile.descriptor(step, base_address))

    def fields(self) -> list[dict]:
        """One row per field, for tables."""
        enc = self.encoded_fields()
        value = {"start_address": f"{self.start_address:#x}", "lbo": f"{self.lbo} B",
                 "sbo": f"{self.sbo} B", "version": f"1 (fixed 0b001 in {VERSION_BITS})",
                 "base_offset": self.base_offset,
                 "lbo_mode": "relative" if not self.lbo_mode else "absolute",
                 "swizzle": self.swizzle}
        return [{"name": n, "bits": f"{lo}" if w == 1 else f"{lo}-{lo + w - 1}",
                 "value": value[n], "encoded": enc[n]} for n, lo, w in SDESC_FIELDS]

    def table(self) -> str:
        """A printable bit table of this descriptor."""
        v = self.encode()
        rows = [f"descriptor = {v:#018x}", f"binary     = {v:064b}",
                f"{'field':14s} {'bits':6s} {'encoded':>7s}  value"]
        rows += [f"{r['name']:14s} {r['bits']:6s} {r['encoded']:>7d}  {r['value']}"
                 for r in self.fields()]
        return "\n".join(rows)

    def __str__(self) -> str:
        return (f"Tcgen05Descriptor(start={self.start_address:#x}, LBO={self.lbo}, SBO={self.sbo}, "
                f"swizzle={self.swizzle}, base_offset={self.base_offset}, "
                f"lbo_mode={self.lbo_mode}) = {self.encode():#018x}")


def read_addresses(desc: Tcgen05Descriptor | int, major: str, dtype: Any, mn: int) -> np.ndarray:
    """Shared-memory byte address of every element one ``tcgen05.mma`` reads through ``desc``.

    ``desc``: a :class:`Tcgen05Descriptor` or its 64-bit value; ``major`` "K"/"MN"; ``dtype`` an
    input type ("float16", "bfloat16"; fp8 K-major); ``mn`` the operand's M (per CTA) or N extent.
    Returns an ``(mn, K)`` int64 array (K = 32 bytes of the type: 16 or 32 elements): entry
    ``[i, k]`` is the byte of A[i, k] (or B[k, i]). The canonical layouts are the sm_90 ones
    (§9.7.16 'Shared Memory Matrix Layout'; CUTLASS make_umma_desc), so this converts to the sm_90
    fields and calls :func:`asynctc.models.descriptors.read_addresses`. Raises :class:`DescriptorError` for
    the 128-byte/32-byte-atom swizzle and for LBO mode 1, which this model does not cover.
    """
    d = desc if isinstance(desc, Tcgen05Descriptor) else Tcgen05Descriptor.decode(desc)
    if d.swizzle == "128B_base32B" or d.lbo_mode:
        raise DescriptorError(f"{d}: the read model covers the swizzle modes none/32B/64B/128B with "
                              "relative LBO (the layouts sm_100 shares with sm_90)")
    return _d.read_addresses(d.to_wgmma(), major, dtype, mn)


# ==================================================================================================
# Hopper → Blackwell, as data (the notebook prints it)
# ==================================================================================================

#: (concept, Hopper PTX, Hopper SASS, Blackwell PTX, Blackwell SASS). SASS names as COURSE.md lists
#: them for sm_90a / sm_100a cubins compiled here.
MIGRATION = (
    ("who issues the MMA", "wgmma.mma_async (all 128 threads of a warpgroup)", "HGMMA / QGMMA",
     "tcgen05.mma (one thread)", "UTCHMMA / UTCQMMA"),
    ("where the accumulator lives", "registers (N/2 fp32 per thread for m64nN)", "registers (HGMMA's D)",
     "Tensor Memory, tcgen05.alloc'd columns", "UTCATOMSWS (alloc/dealloc)"),
    ("ordering register writes before the MMA", "wgmma.fence", "WARPGROUP.ARRIVE",
     "— (no register operands to fence)", "—"),
    ("ordering tcgen05 ops around a thread sync", "—", "—",
     "tcgen05.fence::before/after_thread_sync", "—"),
    ("waiting for the MMAs", "wgmma.commit_group + wait_group N", "WARPGROUP.DEPBAR.LE gsb0",
     "tcgen05.commit → mbarrier arrive; mbarrier wait", "UTCBAR"),
    ("getting D out", "already in registers", "—", "tcgen05.ld (+ tcgen05.wait::ld)", "LDTM"),
    ("largest MMA", "m64n256k16 per warpgroup", "HGMMA.64x256x16",
     "M=128 per CTA, M=256 per CTA pair (cta_group::2)", "UTCHMMA ….2CTA"),
    ("persistent tiles, epilogue overlap", "register accumulators per consumer warpgroup (ping-pong)",
     "HGMMA", "two TMEM accumulators, acc_full / acc_empty mbarriers", "UTCHMMA into tmem[a·BN]"),
    ("next tile", "static tile loop (or an atomic counter)", "—",
     "clusterlaunchcontrol.try_cancel / query_cancel", "UGETNEXTWORKID (.SELFCAST / .BROADCAST)"),
    ("sharing a tile row in a cluster", "cp.async.bulk.tensor .multicast::cluster", "UTMALDG.2D.MULTICAST",
     "the same, .cta_group::2 for a CTA pair", "UTMALDG.2D.MULTICAST.2CTA"),
    ("per-block scales", "FP32 promotion in registers (chapter 07)", "QGMMA + FFMA",
     "tcgen05.cp to TMEM + tcgen05.mma.kind::mxf8f6f4.block_scale", "UTCCP + UTCQMMA"),
)


#: How many of :data:`MIGRATION`'s rows chapter 09's GEMM covers; the rest are the persistent
#: GEMM's (deep dive 09b).
MIGRATION_CORE_ROWS = 7


def migration_text(rows: slice = slice(None), width: int = 100) -> str:
    """:data:`MIGRATION`'s ``rows`` as text: per concept, Hopper's PTX then Blackwell's, each with its
    SASS ("—": none, left out); a line longer than ``width`` puts its SASS on the next line."""
    lines = []
    for concept, *cells in MIGRATION[rows]:
        lines.append(concept)
        for arch, ptx, sass in (("Hopper", *cells[:2]), ("Blackwell", *cells[2:])):
            sass = "" if sass == "—" else f"  · SASS {sass}"
            one = f"  {arch:10s}{ptx}{sass}"
            lines += [one] if len(one) <= width else [f"  {arch:10s}{ptx}", f"{'':12s}{sass.strip()}"]
    return "\n".join(lines)


# ==================================================================================================
# Exercises (auto-checked in notebooks/09_blackwell and its deep dive 09c)
# ==================================================================================================

from ..core import exercises as _ex  # noqa: E402

#: The tile of the "fix the descriptor" exercise: B of a 128×256×64 GEMM, 256×64 bf16, K-major,
#: 128-byte swizzle, at shared address 0x8000.
EXERCISE_TILE = dict(mn=256, k=64, dtype="bfloat16", major="K", swizzle=128, base=0x8000)


def exercise_descriptor(broken: str = "sbo") -> int:
    """The 64-bit value of the exercise's descriptor for k-step 1 of :data:`EXERCISE_TILE`, with one
    field wrong (``broken``: "sbo", "swizzle", "start_address"; "" for the correct one)."""
    t = EXERCISE_TILE
    tile = _d.OperandTile(t["mn"], t["k"], t["dtype"], t["major"], t["swizzle"])
    good = Tcgen05Descriptor.from_operand_tile(tile, 1, t["base"])
    bad = {"": good, "sbo": good.replace(sbo=128), "swizzle": good.replace(swizzle="64B"),
           "start_address": good.replace(start_address=good.start_address + 64)}[broken]
    return bad.encode()


def _wrong_field(value: int) -> str:
    got = Tcgen05Descriptor.decode(value)
    good = Tcgen05Descriptor.decode(exercise_descriptor(""))
    diff = [f.name for f in dataclasses.fields(Tcgen05Descriptor)
            if getattr(got, f.name) != getattr(good, f.name)]
    return diff[0] if diff else ""


def _hint_columns(answer, **kw) -> str:
    from .tmem import columns_hint          # the hints in two tiers, beside the columns they count
    return columns_hint(answer, **kw)


@_ex.exercise("ch09.tmem_columns", "How many TMEM columns must tcgen05.alloc request for `accumulators` "
              "M×N fp32 accumulators side by side in one allocation (one CTA, cta_group::1; default one)?",
              hint=_hint_columns)
def _ch09_columns(m: int = 128, n: int = 256, cta_group: int = 1, accumulators: int = 1) -> int:
    from . import tmem
    return tmem.columns_for(accumulators * tmem.AccumulatorLayout(m, n, cta_group).columns)


def _hint_lanes(answer, warp: int = 3) -> str:
    try:
        lo, hi = (int(x) for x in answer)
    except (TypeError, ValueError):
        return "answer with a pair (first lane, last lane), e.g. (0, 31)."
    if hi - lo != 31:
        return "each warp reaches exactly 32 consecutive lanes."
    if lo >= 128:
        return ("TMEM has only 128 lanes: the window follows the warp's rank inside its warpgroup "
                "(warp id mod 4), not the warp id itself.")
    return ("the lane window depends on the warp's rank inside its warpgroup (warp id mod 4): "
            "warp w reaches lanes 32·(w mod 4) … 32·(w mod 4)+31.")


@_ex.exercise("ch09.lane_quarter", "Which TMEM lanes (first, last) may warp `warp` of a CTA read "
              "with tcgen05.ld?", hint=_hint_lanes)
def _ch09_lanes(warp: int = 3) -> tuple:
    from . import tmem
    return tmem.lane_window(warp)


def _hint_fix(answer, value: int) -> str:
    """Why the field answered is right (only one field of ``value`` is wrong), then how to look."""
    good, t = Tcgen05Descriptor.decode(exercise_descriptor("")), EXERCISE_TILE
    why = {"start_address": f"start_address {good.start_address:#x} is right: k-step 1 of a K-major "
                            f"tile starts 32 bytes (16 bf16) after the base {t['base']:#x}",
           "lbo": "LBO 16 is right: a K-major swizzled tile does not use it (the ISA \"assumes 1\")",
           "sbo": f"SBO {good.sbo} is right: 8 rows of {t['swizzle']} bytes",
           "swizzle": f"swizzle {good.swizzle} is right: the tile is stored with {t['swizzle']}-byte swizzle",
           "base_offset": f"base_offset 0 is right: the base {t['base']:#x} starts a swizzle pattern",
           "lbo_mode": "lbo_mode 0 is right: LBO is a relative offset here",
           "version": "version 1 is right: it is 1 in every tcgen05 descriptor (section 3)"}
    first = why.get(str(answer).strip().lower(), "answer with one field name")
    return (f"{first}. Print tc.Tcgen05Descriptor.decode(value) and check each field against what "
            "the tile needs.")


@_ex.exercise("ch09.fix_descriptor", "This tcgen05 descriptor should describe k-step 1 of B (256×64 "
              "bf16, K-major, 128-byte swizzle, base 0x8000). Which field is wrong?",
              choices=tuple(f.name for f in dataclasses.fields(Tcgen05Descriptor)), hint=_hint_fix)
def _ch09_fix(value: int) -> str:
    return _wrong_field(value)
