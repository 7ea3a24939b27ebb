"""CPU tests of the wgmma matrix descriptor and its layout model (asynctc.models.descriptors)."""
import numpy as np
import pytest

from asynctc.models import descriptors as D
from asynctc.models.descriptors import DescriptorError, OperandTile, WgmmaDescriptor

DTYPES = tuple(D.DTYPES)


# ---- known values ----------------------------------------------------------------------------------

def test_fp16_k_major_128B_known_value():
    # 64 rows × 64 fp16 = 128-byte rows: 8 rows × 128 B = 1024 B between 8-row groups (SBO); LBO is
    # unused by K-major swizzled layouts (the ISA "assumes 1": 16 bytes); swizzle field 1 = 128B.
    t = OperandTile(64, 64, "float16", "K", 128)
    d = t.descriptor(0)
    assert (d.start_address, d.lbo, d.sbo, d.swizzle, d.base_offset) == (0, 16, 1024, 128, 0)
    assert d.encoded_fields() == {"start_address": 0, "lbo": 1, "sbo": 64, "base_offset": 0,
                                  "swizzle_mode": 1}
    assert d.encode() == (1 << 62) | (64 << 32) | (1 << 16)
    # the next k16 step starts 32 bytes further along the same 128-byte row
    assert [x.start_address for x in t.descriptors(0x2000)] == [0x2000, 0x2020, 0x2040, 0x2060]
    assert t.descriptor(3, 0x2000).encode() & 0x3FFF == (0x2060 >> 4)


def test_field_positions():
    v = D.encode(start_address=0x3FFF0, lbo=0x10, sbo=0x20, swizzle=32, base_offset=5)
    assert v & 0x3FFF == 0x3FFF
    assert (v >> 16) & 0x3FFF == 1
    assert (v >> 32) & 0x3FFF == 2
    assert (v >> 49) & 7 == 5
    assert v >> 62 == 3                      # 32-byte swizzle is mode 3
    assert {s: D.encode(0, 16, 16, s) >> 62 for s in (0, 32, 64, 128)} == {0: 0, 32: 3, 64: 2, 128: 1}


# The "exact layouts" of the PTX ISA's examples (§9.7.15.5.1.2.1, bf16, MN-major), in elements:
# ((MN shape),(K shape)):((MN strides),(K strides)) and the LBO/SBO the ISA gives for them.
PTX_EXAMPLES = [
    # swizzle, MN shape, MN strides, K shape, K strides, LBO bytes, SBO bytes
    (0, (8, 1, 2), (1, 8, 64), (8, 2), (8, 128), 128 * 2, 64 * 2),
    (32, (8, 2, 2), (1, 8, 128), (8, 2), (16, 256), 128 * 2, 256 * 2),
    (64, (8, 4, 2), (1, 8, 256), (8, 2), (32, 512), 256 * 2, 512 * 2),
]


def _eval(coord, shape, stride):
    out = 0
    for s, d in zip(shape, stride):
        coord, c = divmod(coord, s) if s else (coord, 0)
        out += c * d
    return out


@pytest.mark.parametrize("sw,mshape,mstride,kshape,kstride,lbo,sbo", PTX_EXAMPLES)
def test_mn_major_matches_ptx_isa_examples(sw, mshape, mstride, kshape, kstride, lbo, sbo):
    mn = int(np.prod(mshape))
    base = 4096
    got = D.read_addresses(WgmmaDescriptor(base, lbo, sbo, sw), "MN", "bfloat16", mn)
    for i in range(mn):
        for k in range(16):
            off = 2 * (_eval(i, mshape, mstride) + _eval(k, kshape, kstride))
            assert got[i, k] == D.swizzle_bytes(base + off, sw)


def test_k_major_core_matrices_without_swizzle():
    # ((8,m),(T,2k)):((1T,SBO),(1,LBO)): 8 rows of 16 bytes per core matrix
    d = WgmmaDescriptor(0, lbo=2048, sbo=128, swizzle=0)
    got = D.read_addresses(d, "K", "float16", 64)
    assert got[0, 0] == 0 and got[1, 0] == 16 and got[7, 7] == 7 * 16 + 14
    assert got[8, 0] == 128 and got[0, 8] == 2048 and got[9, 9] == 128 + 16 + 2048 + 2


# ---- round trips -----------------------------------------------------------------------------------

def _random_descriptor(rng):
    """A random legal descriptor: with swizzle, the start address in a random 128-byte row of a
    random pattern; base offset 0 in row 0, else one whose low bits give that row (§9.7.15.5.1.2.2)."""
    sw = int(rng.choice([0, 32, 64, 128]))
    if not sw:
        start, bo = 16 * int(rng.integers(0, 1 << 14)), 0
    else:
        pat = D.PATTERN_BYTES[sw]
        rows = pat // 128
        row = int(rng.integers(0, rows))
        start = int(rng.integers(0, (1 << 18) // pat)) * pat + row * 128 + 16 * int(rng.integers(0, 8))
        bo = 0 if row == 0 else row + rows * int(rng.integers(0, 8 // rows))
    return WgmmaDescriptor(start, 16 * int(rng.integers(0, 1 << 14)),
                           16 * int(rng.integers(0, 1 << 14)), sw, bo)


def test_round_trips(rng):
    for _ in range(2000):
        d = _random_descriptor(rng)
        v = d.encode()
        assert 0 <= v < 1 << 64 and v & D.RESERVED_MASK == 0
        assert WgmmaDescriptor.decode(v) == d
        assert D.decode(int(np.uint64(v))).encode() == v


def test_table_lists_every_field():
    d = OperandTile(128, 64, "bfloat16", "MN", 64).descriptor(1, 0x4000)
    text = d.table()
    for name in ("start_address", "lbo", "sbo", "base_offset", "swizzle_mode"):
        assert name in text
    assert f"{d.encode():#018x}" in text
    assert [f["bits"] for f in d.fields()] == ["0-13", "16-29", "32-45", "49-51", "62-63"]


# ---- every rejection rule ----------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,match", [
    (dict(start_address=8, lbo=16, sbo=16), "start_address=8: must be a multiple of 16"),
    (dict(start_address=0, lbo=24, sbo=16), "lbo=24: must be a multiple of 16"),
    (dict(start_address=0, lbo=16, sbo=1 << 18), "sbo=262144: overflows its 14-bit field"),
    (dict(start_address=1 << 18, lbo=16, sbo=16), "start_address=262144: overflows"),
    (dict(start_address=-16, lbo=16, sbo=16), "start_address=-16: must be ≥ 0"),
    (dict(start_address=0, lbo=16.0, sbo=16), "lbo=16.0: must be an integer"),
    (dict(start_address=0, lbo=16, sbo=16, swizzle=16), "swizzle=16: must be 0 \\(none\\), 32, 64 or 128"),
    (dict(start_address=0, lbo=16, sbo=16, swizzle=128, base_offset=8), "base_offset=8: a 3-bit field"),
    (dict(start_address=0, lbo=16, sbo=16, swizzle=0, base_offset=1),
     "base_offset=1 with swizzle=0: .*swizzled modes only"),
    (dict(start_address=1024 + 128, lbo=16, sbo=1024, swizzle=128),
     "start_address=0x480 with swizzle=128 and base_offset=0: .*128 bytes into a 1024-byte"),
    (dict(start_address=512 + 256, lbo=16, sbo=512, swizzle=64), "256 bytes into a 512-byte"),
    (dict(start_address=128, lbo=16, sbo=256, swizzle=32), "128 bytes into a 256-byte"),
])
def test_descriptor_rejections(kwargs, match):
    with pytest.raises(DescriptorError, match=match):
        WgmmaDescriptor(**kwargs)


def test_unaligned_pattern_is_legal_with_a_base_offset():
    start = 1024 + 3 * 128
    d = WgmmaDescriptor(start, 16, 1024, 128, base_offset=(start >> 7) & 7)
    assert D.decode(d.encode()) == d
    with pytest.raises(DescriptorError, match="base_offset=3: this layout model covers"):
        D.read_addresses(d, "K", "float16", 64)


@pytest.mark.parametrize("start,sw,bo,match", [
    (0x400, 128, 3, "base_offset=3 with start_address=0x400 and swizzle=128: the start address lies "
                    "in the first 128-byte row"),
    (0x420, 128, 1, "first 128-byte row"),               # a k-step into an aligned pattern
    (0x580, 128, 2, r"base_offset=2 contradicts start_address=0x580 with swizzle=128: .* = 3"),
    (0x280, 64, 3, r"base_offset=3 contradicts start_address=0x280 with swizzle=64: .* = 5"),
    (0x180, 32, 2, r"base_offset=2 contradicts start_address=0x180 .* row 1 of 2"),
])
def test_base_offset_must_agree_with_the_start_address(start, sw, bo, match):
    with pytest.raises(DescriptorError, match=match):
        WgmmaDescriptor(start, 16, 1024, sw, base_offset=bo)
    with pytest.raises(DescriptorError):
        D.decode(D.encode(start, 16, 1024, sw, 0) | (bo << 49))


@pytest.mark.parametrize("start,sw", [(0x580, 128), (0x5A0, 128), (0x280, 64), (0x2E0, 64),
                                      (0x180, 32), (0x1C0, 32)])
def test_the_isa_base_offset_is_accepted(start, sw):
    pattern_start = start & ~127
    bo = (pattern_start >> 7) & 7              # PTX ISA: (pattern start addr >> 0x7) & 0x7
    d = WgmmaDescriptor(start, 16, 1024, sw, base_offset=bo)
    assert D.decode(d.encode()) == d


@pytest.mark.parametrize("value", [True, False, 1.0, "0", None, -1, 1 << 64, (1 << 64) + 5])
def test_decode_rejects_non_descriptors(value):
    with pytest.raises(DescriptorError, match=r"64-bit unsigned integer|outside 0 .. 2\^64-1"):
        D.decode(value)


def test_decode_rejections():
    good = D.encode(0, 16, 1024, 128)
    for bit in (14, 15, 30, 31, 46, 47, 48, 52, 61):
        with pytest.raises(DescriptorError, match=rf"bits \[{bit}\] are set"):
            D.decode(good | (1 << bit))
    with pytest.raises(DescriptorError, match="outside 0 .. 2\\^64-1"):
        D.decode(1 << 64)
    with pytest.raises(DescriptorError, match="with swizzle=0: .*swizzled modes only"):
        D.decode((1 << 49))


@pytest.mark.parametrize("args,match", [
    ((64, 64, "float8_e4m3fn", "MN", 128), "fp8 wgmma operands must be K-major"),
    ((64, 64, "float8_e5m2", "N", 0), "fp8 wgmma operands must be K-major"),
    ((64, 64, "float32", "K", 128), "dtype='float32'"),
    ((64, 64, "float16", "row", 128), "major='row': must be 'K'"),
    ((60, 64, "float16", "K", 128), "mn=60: .*multiple of 8"),
    ((64, 24, "float16", "K", 128), "k=24: .*multiple of 16"),
    ((64, 48, "float8_e4m3fn", "K", 128), "k=48: .*multiple of 32"),
    ((64, 96, "float16", "K", 128), "k=96: the inner \\(K\\) extent is 192 bytes"),
    ((24, 64, "float16", "MN", 32), "mn=24: the inner \\(MN\\) extent is 48 bytes"),
    ((64, 64, "float16", "K", 48), "swizzle=48"),
])
def test_operand_tile_rejections(args, match):
    with pytest.raises(DescriptorError, match=match):
        OperandTile(*args)


@pytest.mark.parametrize("sw,align", [(128, 1024), (64, 512), (32, 256), (0, 128)])
def test_tile_base_alignment(sw, align):
    t = OperandTile(64, 64, "float16", "K", sw)
    t.descriptor(0, 7 * align)                               # aligned: fine
    with pytest.raises(DescriptorError, match=f"must start on a {align}-byte boundary"):
        t.descriptor(0, 7 * align + align // 2)
    with pytest.raises(DescriptorError, match="step=4: this tile has k-steps 0..3"):
        t.descriptor(4)


# ---- the layout model against the TMA swizzle model ------------------------------------------------

def _tiles(dtype, major, sw):
    kk = D.instruction_k(dtype)
    for mn in (8, 16, 32, 64, 128, 256):
        for k in (kk, 2 * kk, 4 * kk, 8 * kk):
            try:
                yield OperandTile(mn, k, dtype, major, sw)
            except DescriptorError:
                continue                 # e.g. a K extent of 1.5 swizzle rows


COMBOS = [(dt, m, sw) for dt in DTYPES for m in ("K", "MN") for sw in (0, 32, 64, 128)
          if not (m == "MN" and D.itemsize(dt) == 1)]


@pytest.mark.parametrize("dtype,major,sw", COMBOS)
def test_descriptor_reads_what_tma_writes(dtype, major, sw):
    """What TMA writes (asynctc.models.layout.SmemTile, box by box) is what the descriptors make wgmma
    read (asynctc.models.descriptors.read_addresses), element by element, for every supported mode."""
    pytest.importorskip("asynctc.models.layout")
    n = 0
    for t in _tiles(dtype, major, sw):
        for base in (0, 3 * t.alignment):
            assert np.array_equal(t.addresses(base), t.tma_addresses(base)), t.describe()
        n += 1
    assert n >= 6


@pytest.mark.parametrize("dtype,major,sw", COMBOS)
def test_addresses_are_a_bijection_onto_the_tile(dtype, major, sw):
    for t in _tiles(dtype, major, sw):
        a = t.addresses()
        assert len(np.unique(a)) == a.size
        assert a.min() >= 0 and a.max() + t.itemsize <= t.size_bytes
        # 16-byte chunks stay whole: T consecutive elements along the contiguous dimension
        per = 16 // t.itemsize
        along = a if major == "K" else a.T
        if along.shape[1] >= per:
            ch = along[:, : along.shape[1] // per * per].reshape(along.shape[0], -1, per)
            assert np.all(np.diff(ch, axis=-1) == t.itemsize)


def test_image_and_gather_round_trip(rng):
    import ml_dtypes
    for dt in DTYPES:
        for major in ("K", "MN"):
            if major == "MN" and D.itemsize(dt) == 1:
                continue
            t = OperandTile(64, 4 * D.instruction_k(dt), dt, major, int(rng.choice([0, 32, 64, 128])))
            npdt = np.dtype(np.float16) if dt == "float16" else np.dtype(getattr(ml_dtypes, dt))
            v = rng.standard_normal((t.mn, t.k)).astype(np.float32).astype(npdt)
            img = t.image(v)
            assert img.size == t.size_bytes
            assert np.array_equal(t.gather(img).view(np.uint8), v.view(np.uint8))


def test_canonical_layout_text():
    assert D.canonical_layout("K", 128) == \
        "Swizzle<3,4,3> o ((8,m),(8,2k)):((64,SBO),(1,8))  (units: elements)"
    assert D.canonical_layout("MN", 0, "bfloat16").startswith("Swizzle<0,4,3> o ((8,1,m),(8,k))")


# ---- one object for the tensor map and the descriptor ----------------------------------------------

def test_descriptor_from_smem_tile():
    layout = pytest.importorskip("asynctc.models.layout")
    box = layout.SmemTile(64, 64, "float16", 128)            # A, K-major, one 128-byte row of K
    assert box.tensor_map_args()["box_dim"] == (64, 64)
    d = D.descriptor_for_smem_tile(box, "K", k_step=2, base_address=0x8000)
    assert (d.start_address, d.lbo, d.sbo, d.swizzle) == (0x8040, 16, 1024, 128)
    # no swizzle: each box is one 16-byte column of core matrices; 8 boxes make K = 64
    box0 = layout.SmemTile(64, 8, "float16", 0)
    d0 = D.descriptor_for_smem_tile(box0, "K", k_step=1, boxes=8)
    assert (d0.start_address, d0.lbo, d0.sbo, d0.swizzle) == (2 * 1024, 1024, 128, 0)
    # MN-major B: box rows are K (64), columns N (64 = 128 bytes); two boxes make N = 128
    boxb = layout.SmemTile(64, 64, "bfloat16", 128)
    db = D.descriptor_for_smem_tile(boxb, "MN", k_step=1, boxes=2)
    assert (db.start_address, db.lbo, db.sbo) == (2048, 64 * 128, 1024)
    with pytest.raises(DescriptorError, match="16-byte column"):
        D.descriptor_for_smem_tile(layout.SmemTile(64, 16, "float16", 0), "K")


# ---- sm_100 (chapter 09) ---------------------------------------------------------------------------

def test_tcgen05_descriptor_round_trip():
    from asynctc.models.tcgen05 import Tcgen05Descriptor    # chapter 09's model, not descriptors'
    d = Tcgen05Descriptor(0x1000, 16, 1024, "128B", 0, 0)
    v = d.encode()
    assert (v >> 46) & 7 == 1 and (v >> 61) == 2
    assert Tcgen05Descriptor.decode(v) == d
    with pytest.raises(DescriptorError, match="fixed 0b001"):
        Tcgen05Descriptor.decode(v & ~(1 << 46))


def test_kstep_hint_gives_the_mn_major_step_from_section_2s_sbo():
    """04 §2 works B's SBO (8 k-rows × 128 B = 1024 B); ch04.kstep's MN-major step is 16 k-rows. A
    step of one SBO moves the start half as far: the rule names it and gives 2 × SBO = 2048 B, +128
    (it cannot be told from fp16 elements counted as bytes, which gives the same number)."""
    from asynctc.core.exercises import told
    from asynctc.models.descriptors import OperandTile
    from asynctc.models.descriptors import kstep_diagnosis as raw

    def kstep_diagnosis(*args):
        return told(raw(*args), rule=True)
    tile, base, s = OperandTile(64, 64, "float16", "MN", 128), 0x4000, 2
    d0 = tile.descriptor(0, base).encode()
    hint = kstep_diagnosis(d0 + (s * tile.sbo >> 4), tile, s, base)
    assert "one SBO" in hint and "2 × SBO = 2048 B" in hint and "+128" in hint
    assert "section 2's SBO" in raw(d0, tile, s, base)          # k-step 0's, asked from §2 too
    k_tile = OperandTile(64, 64, "float16", "K", 128)                 # K-major keeps its own hint
    step_k = k_tile.descriptor(s, base).start_address - base
    assert "elements, not bytes" in kstep_diagnosis(k_tile.descriptor(0, base).encode() + (step_k // 2 >> 4),
                                                    k_tile, s, base)
