"""Chapter 09 models: tcgen05 instruction / shared-memory descriptors, Tensor Memory, and the CPU
emulation of a tcgen05 GEMM tile. No GPU. Facts checked against the PTX ISA (§9.7.16) and CUTLASS
(include/cute/arch/mma_sm100_desc.hpp, include/cute/atom/mma_traits_sm100.hpp) are cited per test."""

import dataclasses
import itertools

import numpy as np
import pytest

from asynctc.models import descriptors as D
from asynctc.core import exercises
from asynctc.models.descriptors import DescriptorError
from asynctc.models import emulate as E
from asynctc.models import tcgen05 as T
from asynctc.models import tmem as M
from asynctc.models.tmem import TmemError

# ==================================================================================================
# Instruction descriptor
# ==================================================================================================


def _idescs():
    """A spread of legal descriptors over every field's values."""
    out = []
    for kind, dts in (("f16", [("float16", "float16"), ("bfloat16", "bfloat16")]),
                      ("f8f6f4", [("float8_e4m3fn", "float8_e5m2"), ("float8_e5m2", "float8_e4m3fn"),
                                  ("float6_e2m3", "float4_e2m1"), ("float6_e3m2", "float6_e3m2")]),
                      ("tf32", [("tfloat32", "tfloat32")])):
        for (a, b), (cg, m), n in itertools.product(dts, [(1, 64), (1, 128), (2, 128), (2, 256)],
                                                    (16, 48, 256)):
            majors = ("K", "MN") if a in T.TRANSPOSABLE and b in T.TRANSPOSABLE else ("K",)
            for am, bm in itertools.product(majors, majors):
                out.append(T.InstrDescriptor(a, b, "float32", m, n, am, bm, kind, cg))
    out.append(T.InstrDescriptor("float16", "float16", "float16", 64, 8))
    out.append(T.InstrDescriptor("float16", "float16", "float32", 128, 24, negate_a=1))
    out.append(T.InstrDescriptor("bfloat16", "bfloat16", "float32", 128, 256, negate_b=True))
    return out


def test_idesc_round_trip_every_field():
    ds = _idescs()
    assert len(ds) > 100
    for d in ds:
        v = d.encode()
        assert 0 <= v < 1 << 32
        assert T.InstrDescriptor.decode(v, d.kind, d.cta_group) == d, d


def test_idesc_field_positions():
    """Changing one field changes only that field's bits (PTX ISA §9.7.16.4.2 Table 'Instruction
    descriptor format …')."""
    base = T.InstrDescriptor("float16", "float16", "float32", 128, 128)
    masks = {n: ((1 << w) - 1) << lo for n, lo, w in T.IDESC_FIELDS}
    changes = {"d_format": dict(d_dtype="float16"), "a_format": dict(a_dtype="bfloat16",
                                                                     b_dtype="bfloat16"),
               "negate_a": dict(negate_a=1), "negate_b": dict(negate_b=1),
               "transpose_a": dict(a_major="MN"), "transpose_b": dict(b_major="MN"),
               "n_dim": dict(n=64), "m_dim": dict(m=64)}
    for field, ch in changes.items():
        diff = base.encode() ^ dataclasses.replace(base, **ch).encode()
        allowed = masks[field] | (masks["b_format"] if field == "a_format" else 0)
        assert diff and not diff & ~allowed, field
    assert all(not base.encode() >> b & 1 for b in T.IDESC_RESERVED_BITS)


def test_idesc_known_values():
    # CUTLASS UMMA::InstrDescriptor: c_format_ bits [4,6) F32=1, a_format_ [7,10) BF16=1,
    # b_format_ [10,13), n_dim_ = N>>3 at [17,23), m_dim_ = M>>4 at [24,29).
    d = T.InstrDescriptor("bfloat16", "bfloat16", "float32", 128, 256)
    assert d.encode() == (1 << 4) | (1 << 7) | (1 << 10) | (32 << 17) | (8 << 24) == 0x08400490
    # f16 → f16 accumulate, M=64, N=8: only the N and M fields are non-zero.
    assert T.InstrDescriptor("f16", "f16", "f16", 64, 8).encode() == (1 << 17) | (4 << 24)
    # transposes are bits 15 and 16 (PTX: "Transpose A/B Matrix"; CUTLASS a_major_/b_major_)
    t = T.InstrDescriptor("float16", "float16", "float32", 128, 128, "MN", "MN").encode()
    assert t >> 15 & 1 and t >> 16 & 1
    # f8f6f4 type codes: E4M3 0, E5M2 1, E2M3 3, E3M2 4, E2M1 5 (PTX table; CUTLASS MXF8F6F4Format)
    f8 = T.InstrDescriptor("e5m2", "e2m1", "float32", 128, 64, kind="f8f6f4")
    assert (f8.encode() >> 7) & 7 == 1 and (f8.encode() >> 10) & 7 == 5
    assert T.InstrDescriptor("tf32", "tf32", "f32", 64, 8, kind="tf32").encode() >> 7 & 7 == 2
    assert (d.k, T.InstrDescriptor("e4m3", "e4m3", kind="f8f6f4").k) == (16, 32)
    assert "tcgen05.mma.cta_group::1.kind::f16" in d.ptx() and "0x08400490" in d.table()


@pytest.mark.parametrize("kw, match", [
    (dict(kind="i8"), "kind="),
    (dict(cta_group=3), "cta_group=3"),
    (dict(cta_group=True), "cta_group=True"),
    (dict(a_dtype="float32", b_dtype="float32"), "a_dtype='float32'"),
    (dict(b_dtype="bfloat16"), "not a mix"),
    (dict(a_dtype="bfloat16", b_dtype="bfloat16", d_dtype="float16"), "F16 accumulator"),
    (dict(a_dtype="e4m3", b_dtype="e4m3", kind="f8f6f4", d_dtype="float16"), "F16 accumulator"),
    (dict(d_dtype="float64"), "d_dtype='float64'"),
    (dict(a_dtype="e2m1", b_dtype="e4m3", kind="f8f6f4", a_major="MN"), "6- and 4-bit"),
    (dict(a_major="row"), "a_major='row'"),
    (dict(m=256), "m=256: with .cta_group::1 M is 64 or 128"),
    (dict(m=64, cta_group=2), "m=64: with .cta_group::2 M is 128 or 256"),
    (dict(m=32), "M=32 exists only with .ws"),
    (dict(n=12), "n=12: .* N is 8…256 in steps of 8"),
    (dict(n=264), "n=264"),
    (dict(n=24, cta_group=2), "n=24: .* 16…256 in steps of 16"),
    (dict(n=128.0), "n=128.0: must be an integer"),
    (dict(saturate=1), "saturate=1: saturation is for integer types"),
    (dict(sparse=1), "sparse=1: this model covers dense"),
    (dict(sparse_id2=2), "sparsity selector"),
    (dict(sparse_id2=True), "not a boolean"),
    (dict(max_shift=1), "tcgen05.mma.ws only"),
    (dict(negate_a=2), "negate_a=2: a 1-bit field"),
])
def test_idesc_validation(kw, match):
    args = dict(a_dtype="float16", b_dtype="float16", d_dtype="float32", m=128, n=128)
    args.update(kw)
    with pytest.raises(DescriptorError, match=match) as e:
        T.InstrDescriptor(**args)
    assert "PTX ISA" in str(e.value) or "must be an integer" in str(e.value)


def test_idesc_decode_rejects():
    good = T.InstrDescriptor("float16", "float16", "float32", 128, 128).encode()
    for bad, match in ((True, "32-bit unsigned"), (1.0, "32-bit unsigned"),
                       (-1, "outside 0 .. 2\\^32-1"), (1 << 32, "outside"),
                       (good | 1 << 6, "reserved bit\\(s\\) \\[6\\]"),
                       (good | 1 << 23, "\\[23\\]"), (good | 1 << 29, "\\[29\\]"),
                       (good | 2 << 7, "a_format=2 is not a .kind::f16 type code"),
                       (good | 3 << 4, "d_format=3"),
                       ((good & ~(31 << 24)) | 2 << 24, "m=32"),
                       (good & ~(63 << 17), "n=0")):
        with pytest.raises(DescriptorError, match=match):
            T.InstrDescriptor.decode(bad)
    with pytest.raises(DescriptorError, match="type code"):
        T.InstrDescriptor.decode(good | 7 << 10, kind="f8f6f4")
    # the same bits are legal M=256 only for a CTA pair
    pair = T.InstrDescriptor("float16", "float16", "float32", 256, 128, cta_group=2).encode()
    with pytest.raises(DescriptorError, match="m=256"):
        T.InstrDescriptor.decode(pair, cta_group=1)
    assert T.InstrDescriptor.decode(pair, cta_group=2).cta_m == 128


def test_valid_ns_match_ptx_table():
    # PTX ISA §9.7.16.2.1 Table 'Various combinations of .kind and shapes' (dense, no .ws)
    assert T.valid_ns(128, 1) == tuple(range(8, 257, 8))
    assert T.valid_ns(256, 2) == tuple(range(16, 257, 16))


# ==================================================================================================
# Shared-memory descriptor
# ==================================================================================================

def test_sdesc_round_trip_every_field():
    n = 0
    for sw, start, lbo, sbo, lbo_mode in itertools.product(
            list(T.TCGEN05_SWIZZLE), (0, 0x400, 0x3FFF0 & ~0x3FF), (16, 4096, 0x3FFF0),
            (0, 1024, 0x3FFF0), (0, 1)):
        d = T.Tcgen05Descriptor(start, lbo, sbo, sw, 0, lbo_mode)
        assert T.Tcgen05Descriptor.decode(d.encode()) == d
        n += 1
    for bo in range(1, 8):      # base offset with a pattern that does not start on its boundary
        d = T.Tcgen05Descriptor(0x2000 + 128 * bo, 16, 1024, "128B", bo)
        assert T.Tcgen05Descriptor.decode(d.encode()) == d
    assert n > 100


def test_sdesc_bits_against_ptx_and_cutlass():
    # PTX ISA §9.7.16.4.1 Table 'Shared memory descriptor layout'; CUTLASS UMMA::SmemDescriptor
    # (fixed 0b001 at bits 46-48, layout type SWIZZLE_128B = 2 at bits 61-63).
    d = T.Tcgen05Descriptor(0x1000, 16, 1024, "128B")
    v = d.encode()
    assert v == (0x1000 >> 4) | (1 << 16) | (64 << 32) | (1 << 46) | (2 << 61)
    assert (v >> 46) & 7 == 0b001
    codes = {sw: T.Tcgen05Descriptor(0, 16, 0, sw).encode() >> 61 for sw in T.TCGEN05_SWIZZLE}
    assert codes == {"none": 0, "128B_base32B": 1, "128B": 2, "64B": 4, "32B": 6}
    assert T.Tcgen05Descriptor(0, 16, 0, "none", 0, 1).encode() >> 52 & 1
    assert T.Tcgen05Descriptor(0x2080, 16, 1024, "128B", 1).encode() >> 49 & 7 == 1
    # spans are accepted for the four sm_90 modes
    assert T.Tcgen05Descriptor(0, 16, 0, 64).swizzle == "64B"
    # one home: models.tcgen05 imports models.descriptors, never the reverse (no import cycle;
    # the lazy re-export descriptors.Tcgen05Descriptor was that cycle and is gone)
    assert not hasattr(D, "Tcgen05Descriptor") and T.Tcgen05Descriptor.__module__ == T.__name__
    # one source of truth: the printed layout, the fields' table and the messages use the same bits
    assert ("version", 46, 3) in T.SDESC_FIELDS and T.VERSION_BITS == "46-48"
    assert "46-48 | version" in T.sdesc_layout()
    assert any(r["bits"] == "46-48" for r in d.fields() if r["name"] == "version")


def test_sdesc_is_the_wgmma_descriptor_plus_version():
    """Same start/LBO/SBO/base-offset bits; the sm_100 swizzle codes 2/4/6 are the sm_90 codes
    1/2/3 one bit higher, so for the shared modes the values differ only in bit 46."""
    for sw in (0, 32, 64, 128):
        tile = D.OperandTile(128, 64, "float16", "K", sw)
        for step in range(tile.k_steps):
            w = tile.descriptor(step, 0x4000)
            t = T.Tcgen05Descriptor.from_operand_tile(tile, step, 0x4000)
            assert t.encode() == w.encode() | 1 << 46
            assert t.to_wgmma() == w and T.Tcgen05Descriptor.from_wgmma(w) == t


def test_each_decoder_rejects_the_other_format():
    w = D.WgmmaDescriptor(0x1000, 16, 1024, 128).encode()
    with pytest.raises(DescriptorError, match="version \\(bits 46-48\\) = 0b000.*sm_90 wgmma"):
        T.Tcgen05Descriptor.decode(w)
    t = T.Tcgen05Descriptor(0x1000, 16, 1024, "128B").encode()
    with pytest.raises(DescriptorError, match="bits \\[46\\].*tcgen05"):
        D.WgmmaDescriptor.decode(t)


@pytest.mark.parametrize("value, match", [
    (True, "64-bit unsigned"), (1.5, "64-bit unsigned"), (-1, "outside"), (1 << 64, "outside"),
    ((1 << 46) | (1 << 47), "version \\(bits 46-48\\) = 0b011"),
    ((1 << 46) | (1 << 48), "version \\(bits 46-48\\) = 0b101"),
] + [((1 << 46) | (1 << b), f"bits \\[{b}\\]") for b in (14, 15, 30, 31, 53, 57, 60)]
  + [((1 << 46) | (c << 61), f"swizzle code {c}") for c in (3, 5, 7)])
def test_sdesc_decode_rejects(value, match):
    with pytest.raises(DescriptorError, match=match) as e:
        T.Tcgen05Descriptor.decode(value)
    assert "9.7.15" not in str(e.value)


@pytest.mark.parametrize("kw, match", [
    (dict(start_address=0x1008), "multiple of 16 bytes"),
    (dict(sbo=1 << 18), "overflows its 14-bit field"),
    (dict(lbo=-16), "must be ≥ 0"),
    (dict(lbo=True), "integer number of bytes"),
    (dict(swizzle="256B"), "swizzle='256B'"),
    (dict(swizzle=3), "swizzle=3"),
    (dict(base_offset=8), "base_offset=8: a 3-bit field"),
    (dict(base_offset=True), "not a boolean"),
    (dict(swizzle="none", base_offset=1), "without swizzle it must be 0"),
    (dict(start_address=0x2080), "past its first 128-byte row"),
    (dict(lbo_mode=2), "lbo_mode=2"),
    (dict(version=0), "version=0"),
])
def test_sdesc_validation(kw, match):
    args = dict(start_address=0x2000, lbo=16, sbo=1024, swizzle="128B")
    args.update(kw)
    with pytest.raises(DescriptorError, match=match) as e:
        T.Tcgen05Descriptor(**args)
    msg = str(e.value)
    assert "9.7.15" not in msg          # cites the tcgen05 section, not the sm_90 one
    if "integer number" not in msg:
        assert "9.7.16.4.1" in msg


def test_read_model_scope():
    with pytest.raises(DescriptorError, match="none/32B/64B/128B"):
        T.read_addresses(T.Tcgen05Descriptor(0, 16, 1024, "128B_base32B"), "MN", "float16", 64)
    with pytest.raises(DescriptorError, match="none/32B/64B/128B"):
        T.read_addresses(T.Tcgen05Descriptor(0, 16, 1024, "128B", 0, 1), "K", "float16", 64)
    with pytest.raises(DescriptorError, match="new on sm_100"):
        T.Tcgen05Descriptor(0, 16, 1024, "128B_base32B").to_wgmma()


# ==================================================================================================
# Tensor Memory
# ==================================================================================================

def test_tmem_addresses():
    assert M.address(5, 300) == 5 << 16 | 300 and M.split_address(5 << 16 | 300) == (5, 300)
    for bad in (dict(lane=128, column=0), dict(lane=0, column=512), dict(lane=-1, column=0)):
        with pytest.raises(TmemError):
            M.address(**bad)
    with pytest.raises(TmemError, match="32 bits"):
        M.split_address(1 << 32)
    with pytest.raises(TmemError, match="must be an integer"):
        M.address(True, 0)


def test_alloc_rules():
    for n in (32, 64, 128, 256, 512):
        assert M.check_alloc_columns(n) == n
    for bad in (0, 16, 48, 96, 1024, True, 32.0):
        with pytest.raises(TmemError, match="ncols"):
            M.check_alloc_columns(bad)
    al = M.TmemAllocator()
    a = al.alloc(256)
    b = al.alloc(128, warp=1)
    c = al.alloc(32)
    assert [M.split_address(x) for x in (a, b, c)] == [(0, 0), (0, 256), (0, 384)]
    assert al.free_columns() == 96
    with pytest.raises(TmemError, match="only 96 of 512 columns are free.*deadlock"):
        al.alloc(128)
    with pytest.raises(TmemError, match="it has 128 columns"):
        al.dealloc(b, 64, warp=1)
    with pytest.raises(TmemError, match="the same warp must free them"):
        al.dealloc(b, 128, warp=0)
    with pytest.raises(TmemError, match="no allocation starts"):
        al.dealloc(M.address(0, 64), 64)
    with pytest.raises(TmemError, match="still allocated at kernel exit"):
        al.check_all_freed()
    al.dealloc(b, 128, warp=1)
    assert al.alloc(64) == M.address(0, 256)          # freed columns are reused
    al.relinquish_alloc_permit()
    with pytest.raises(TmemError, match="after relinquish_alloc_permit"):
        al.alloc(32)
    assert (al.column_owner() >= 0).sum() == 256 + 32 + 64


def test_lane_quarters():
    # PTX ISA §9.7.16 Tensor Memory access restrictions: warp w of a warpgroup → lanes 32(w%4)..+31
    assert [M.lane_window(w) for w in range(8)] == [(0, 31), (32, 63), (64, 95), (96, 127)] * 2
    M.check_lane_access(7, np.arange(96, 128))
    with pytest.raises(TmemError, match="warp=3 touches lanes \\[0"):
        M.check_lane_access(3, [0, 96])
    cells = np.arange(128 * 512, dtype=np.float32).reshape(128, 512)
    with pytest.raises(TmemError, match="may access lanes 32-63"):
        M.tcgen05_ld(cells, 1, M.address(0, 0), "32x32b", 4)
    with pytest.raises(TmemError, match="runs past column 511"):
        M.tcgen05_ld(cells, 0, M.address(0, 500), "32x32b", 16)
    ok = M.tcgen05_ld(cells, 5, M.address(48, 8), "16x256b", 1)       # warp 5 → lanes 32..63
    assert ok.shape == (32, 4)


def test_reader_warp_is_the_one_warp_whose_quarter_holds_the_lane():
    # 09 §4's worked case: the kernel's epilogue warps 2..5 (kernels/tcgen05.cu) read lane L's row
    epilogue = range(2, 6)
    assert [M.reader_warp(lane, epilogue) for lane in (0, 37, 64, 127)] == [4, 5, 2, 3]
    for lane in range(128):
        w = M.reader_warp(lane, epilogue)
        M.check_lane_access(w, [lane])
        assert w % 4 == lane // 32
    assert M.reader_warp(100) == 3                       # default: warps 0..3
    with pytest.raises(TmemError, match="0 readers"):
        M.reader_warp(0, range(1, 4))                    # three warps leave a quarter unread
    with pytest.raises(TmemError, match="2 readers"):
        M.reader_warp(0, range(0, 8))
    with pytest.raises(TmemError, match="lane=128"):
        M.reader_warp(128)


@pytest.mark.parametrize("shape, num", [(s, n) for s, (_, _, _, top) in M.LD_SHAPES.items()
                                        for n in (1, 2, top)])
def test_ld_fragments_cover_their_footprint_once(shape, num):
    lanes, cols, regs, _ = M.LD_SHAPES[shape]
    dl, dc = M.ld_fragment(shape, num)
    assert dl.shape == (32, regs * num)
    cells = dl * 1000 + dc
    assert len(np.unique(cells)) == cells.size == lanes * cols * num
    assert dl.min() == 0 and dl.max() == lanes - 1 and dc.max() == cols * num - 1


def test_ld_fragment_known_patterns():
    dl, dc = M.ld_fragment("32x32b", 8)          # thread i reads lane i, register r column r
    assert (dl == np.arange(32)[:, None]).all() and (dc == np.arange(8)[None, :]).all()
    # .16x256b is the mma.sync m16n8 accumulator fragment (PTX ISA "Matrix Fragments for
    # mma.m16n8k16", c0..c3): thread t: (t/4, 2(t%4)+{0,1}) and (t/4+8, …)
    dl, dc = M.ld_fragment("16x256b", 1)
    t = np.arange(32)
    assert (dl[:, 0] == t // 4).all() and (dl[:, 2] == t // 4 + 8).all()
    assert (dc[:, 0] == 2 * (t % 4)).all() and (dc[:, 1] == 2 * (t % 4) + 1).all()
    # … and the chapter-01 model of that fragment (asynctc.models.fragments.c_m16n8k16) agrees cell by cell
    from asynctc.models import fragments
    lane_of, reg_of = fragments.c_m16n8k16()
    for t_ in range(32):
        for r in range(4):
            assert lane_of[dl[t_, r], dc[t_, r]] == t_ and reg_of[dl[t_, r], dc[t_, r]] == r
    for bad in (("16x256b", 64), ("32x32b", 3), ("8x8b", 1), ("32x32b", True)):
        with pytest.raises(TmemError):
            M.ld_fragment(*bad)


@pytest.mark.parametrize("m, n, cg", [(64, 8, 1), (64, 256, 1), (128, 16, 1), (128, 256, 1),
                                      (128, 16, 2), (128, 256, 2), (256, 32, 2), (256, 256, 2)])
def test_accumulator_layouts(m, n, cg):
    lay = M.AccumulatorLayout(m, n, cg)
    lane, col = lay.maps()
    assert lane.shape == (m // cg, n)
    cells = lane * 1000 + col
    assert len(np.unique(cells)) == cells.size                  # one cell per element
    assert lane.min() >= 0 and lane.max() < 128 and col.max() < lay.columns <= lay.alloc_columns
    rows, cols = lay.inverse()
    assert (rows >= 0).sum() == cells.size
    i = np.arange(m // cg)[:, None]
    if lay.name in ("Layout D", "Layout A"):                    # lane = row
        assert (lane == i).all() and (col == np.arange(n)).all()
    elif lay.name == "Layout F":                                # lanes 0-15 of each quarter
        assert sorted(set(lane.ravel() % 32)) == list(range(16))
        assert (lane // 32 == i // 16).all()
    else:                                                       # Layout B: column halves folded
        assert lay.columns == n // 2 and len(lay.lanes_used()) == 128
        assert (lane[:, :n // 2] == i).all() and (lane[:, n // 2:] == i + 64).all()


def test_layout_names_and_columns():
    names = {(m, cg): M.AccumulatorLayout(m, 64, cg).name
             for m, cg in ((64, 1), (128, 1), (128, 2), (256, 2))}
    assert names == {(64, 1): "Layout F", (128, 1): "Layout D", (128, 2): "Layout B",
                     (256, 2): "Layout A"}
    assert M.AccumulatorLayout(128, 256).alloc_columns == 256
    assert M.AccumulatorLayout(64, 8).alloc_columns == 32
    assert M.AccumulatorLayout(128, 256, 2).alloc_columns == 128
    for bad in (dict(m=256, n=64), dict(m=64, n=64, cta_group=2), dict(m=128, n=12),
                dict(m=128, n=8, cta_group=2), dict(m=128, n=64, cta_group=4)):
        with pytest.raises(TmemError):
            M.AccumulatorLayout(**bad)
    with pytest.raises(TmemError):
        M.columns_for(600)


def test_tmem_maps_for_pictures():
    lay = M.AccumulatorLayout(64, 32)
    w = M.tmem_map(lay, "warp")
    assert set(np.unique(w)) == {-1, 0, 1, 2, 3} and (w[16:32] == -1).all()
    assert (M.tmem_map(lay, "row")[32, :] == 16).all()
    with pytest.raises(ValueError):
        M.tmem_map(lay, "bank")


def test_tmem_picture_by_warp_has_a_discrete_key():
    """By warp: four colours named in the legend, no colour bar (a continuous 0–3 scale once
    suggested values between the warps); by row: a colour bar."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = M.plot_tmem(M.AccumulatorLayout(64, 32), by="warp")
    assert len(fig.axes) == 1
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert [x.split(":")[0] for x in labels[:4]] == [f"warp {w} of the warpgroup" for w in range(4)]
    assert "lanes 96–127" in labels[3] and any("no element" in x for x in labels)
    assert len(M.plot_tmem(M.AccumulatorLayout(64, 32), by="row").axes) == 2
    plt.close("all")


# ==================================================================================================
# The emulated GEMM
# ==================================================================================================

CASES = [(cg, m, n) for cg, m in ((1, 64), (1, 128), (2, 128), (2, 256))
         for n in ((16, 48, 256) if cg == 2 else (8, 24, 256))]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("cg, m, n", CASES)
def test_emulated_gemm_matches_float64(rng, dtype, cg, m, n):
    for (am, bm), sw in (((("K", "K"), 128)), (("MN", "MN"), 64), (("K", "MN"), 0),
                         (("MN", "K"), 32)):
        i = T.InstrDescriptor(dtype, dtype, "float32", m, n, am, bm, cta_group=cg)
        a, b = E.random_problem(i, 64, rng)
        r = E.emulate_gemm(a, b, i, sw)
        assert r.passed, r.summary()
        assert (r.writes == 1).all() and np.isfinite(r.d).all()


@pytest.mark.parametrize("shape", list(M.LD_SHAPES))
@pytest.mark.parametrize("m, cg", [(64, 1), (128, 1), (128, 2)])
def test_emulated_epilogue_every_ld_shape(rng, shape, m, cg):
    i = T.InstrDescriptor("float16", "float16", "float32", m, 64, cta_group=cg)
    a, b = E.random_problem(i, 32, rng)
    assert E.emulate_gemm(a, b, i, 128, ld_shape=shape).passed


def test_emulated_fp8(rng):
    i = T.InstrDescriptor("e4m3", "e5m2", "float32", 128, 64, kind="f8f6f4")
    a, b = E.random_problem(i, 128, rng)
    assert E.emulate_gemm(a, b, i, 128).passed
    with pytest.raises(DescriptorError, match="fp32 accumulators"):
        E.emulate_gemm(a, b, T.InstrDescriptor("f16", "f16", "f16", 128, 64), 128)
    with pytest.raises(DescriptorError, match="f16/bf16 and fp8"):
        E.emulate_gemm(a, b, T.InstrDescriptor("e2m1", "e2m1", kind="f8f6f4", m=128, n=64), 128)


def test_tma_image_is_what_the_descriptor_side_expects(rng):
    """The emulation's images come from SmemTile.scatter (the TMA side); the descriptor side's own
    image (OperandTile.image) must be byte-identical."""
    for dt, major, sw, mn in (("float16", "K", 128, 128), ("bfloat16", "MN", 64, 64),
                              ("float16", "MN", 0, 24), ("float8_e4m3fn", "K", 32, 256)):
        tile = D.OperandTile(mn, 64, dt, major, sw)
        vals = E.round_to(rng.standard_normal((mn, 64)), dt)
        assert np.array_equal(E.smem_image(tile, vals), tile.image(vals))


def test_one_wrong_element_fails(rng):
    i = T.InstrDescriptor("float16", "float16", "float32", 128, 64)
    a, b = E.random_problem(i, 64, rng)
    r = E.emulate_gemm(a, b, i, 128)
    assert r.passed
    r.d[77, 13] += 4 * r.bound[77, 13]
    assert r.wrong == 1 and not r.passed
    r.d[77, 13] = r.reference[77, 13]
    r.writes[5, 5] = 0
    assert not r.passed


@pytest.mark.parametrize("what", ["swizzle", "sbo", "start", "transpose", "peer"])
def test_wrong_descriptor_is_caught(rng, what):
    cg = 2 if what == "peer" else 1
    i = T.InstrDescriptor("bfloat16", "bfloat16", "float32", 128, 64, cta_group=cg)
    a, b = E.random_problem(i, 64, rng)
    kw = {"swizzle": dict(a_descriptors=lambda c, s, d: d.replace(swizzle="64B")),
          "sbo": dict(b_descriptors=lambda c, s, d: d.replace(sbo=2 * d.sbo)),
          "start": dict(a_descriptors=lambda c, s, d: d.replace(start_address=d.start_address
                                                                 - 32 * s)),   # never advanced
          "transpose": dict(read_idesc=dataclasses.replace(i, a_major="MN")),
          # the peer CTA's B descriptors point at its A tile (both CTAs' k-steps)
          "peer": dict(b_descriptors=lambda c, s, d: d if c == 0 else d.replace(
              start_address=E.A_BASE + 32 * s))}[what]
    r = E.emulate_gemm(a, b, i, 128, **kw)
    assert not r.passed and r.wrong > r.d.size // 4, r.summary()


def test_emulation_rejects_bad_shapes(rng):
    i = T.InstrDescriptor("float16", "float16", "float32", 128, 64)
    with pytest.raises(ValueError, match="expected \\(M, K\\)"):
        E.emulate_gemm(np.ones((64, 64)), np.ones((64, 64)), i)
    with pytest.raises(ValueError, match="multiple of the instruction K"):
        E.emulate_gemm(rng.standard_normal((128, 24)), rng.standard_normal((24, 64)), i)


# ==================================================================================================
# Exercises
# ==================================================================================================

def test_exercises(capsys):
    assert exercises.expected("ch09.tmem_columns", m=128, n=256) == 256
    assert exercises.expected("ch09.tmem_columns", m=128, n=256, cta_group=2) == 128
    assert exercises.check("ch09.tmem_columns", 256, m=128, n=256)
    assert not exercises.check("ch09.tmem_columns", 128 * 256, m=128, n=256)
    assert "32-bit cells" in capsys.readouterr().out
    assert not exercises.check("ch09.tmem_columns", 200, m=128, n=256)
    assert "power of two" in capsys.readouterr().out
    assert exercises.expected("ch09.lane_quarter", warp=3) == (96, 127)
    assert exercises.check("ch09.lane_quarter", (96, 127), warp=7)
    assert not exercises.check("ch09.lane_quarter", (0, 31), warp=3)
    assert "warp id mod 4" in capsys.readouterr().out
    for broken in ("sbo", "swizzle", "start_address"):
        v = T.exercise_descriptor(broken)
        assert exercises.expected("ch09.fix_descriptor", value=v) == broken
        for wrong in ("start_address", "lbo", "sbo", "swizzle", "base_offset", "lbo_mode", "version"):
            if wrong != broken:               # each wrong field gets its own reason it is right
                assert not exercises.check("ch09.fix_descriptor", wrong, value=v)
                out = capsys.readouterr().out
                assert f"— {wrong} " in out.lower() and " is right: " in out, out
    v = T.exercise_descriptor("sbo")
    assert not exercises.check("ch09.fix_descriptor", "lbo", value=v)
    assert "Tcgen05Descriptor.decode(value)" in capsys.readouterr().out
    assert not exercises.check("ch09.fix_descriptor", "the swizzle thing", value=v)
    with pytest.raises(AssertionError):
        exercises.check("ch09.fix_descriptor", "lbo", value=v, solution=True)


def test_mma_thread_ordering_rules():
    """ordering.check_mma_thread: the MMA thread's wait (barrier and parity) and fence before each
    fill's MMAs; the kernel's order passes, each slip is one tcgen05 hazard at the MMA or the wait."""
    from asynctc.models import ordering as O

    def prog(stages=2, k_tiles=5, parity=lambda r: r & 1, fence="after", wait=True):
        p = []
        for kt in range(k_tiles):
            s, r = kt % stages, kt // stages
            if fence == "before":
                p.append(("fence_after", None))
            if wait:
                p.append(("wait", (f"full[{s}]", parity(r))))
            if fence == "after":
                p.append(("fence_after", None))
            p += [("mma", s), ("mma", s), ("commit", f"empty[{s}]")]
        return p

    assert O.check_mma_thread(prog()) == []
    hz = O.check_mma_thread(prog(parity=lambda r: 0))
    assert hz[0].rule == "tcgen05" and hz[0].op == "wait" and "fill 1 of stage 0" in hz[0].why
    assert "no tcgen05.fence::after_thread_sync" in O.check_mma_thread(prog(fence=None))[0].why
    assert "no tcgen05.fence::after_thread_sync" in O.check_mma_thread(prog(fence="before"))[0].why
    assert "with no wait on full[0]" in O.check_mma_thread(prog(wait=False))[0].why
    with pytest.raises(ValueError, match="must be"):
        O.check_mma_thread([("arrive", 0)])
