"""CPU tests of the shared-memory tile layout model (asynctc.models.layout.SmemTile)."""
import numpy as np
import pytest

from asynctc.models.layout import ALIGNMENT, LayoutError, SmemTile, swizzle_address, unswizzle_address

DTYPES = ("float16", "bfloat16", "float32", "float8_e4m3fn", "uint8")


def tiles():
    """Every swizzle mode × dtype, at the widest row the mode allows and at a narrower one."""
    out = []
    for dt in DTYPES:
        size = np.dtype("float32").itemsize if dt == "float32" else (1 if dt in ("float8_e4m3fn", "uint8") else 2)
        for sw in (0, 32, 64, 128):
            widest = (sw or 128) // size
            for cols in {widest, max(16 // size, widest // 2)}:
                out.append(SmemTile(24, cols, dt, sw))
    return out


@pytest.mark.parametrize("t", tiles(), ids=repr)
def test_offsets_are_a_bijection_onto_element_slots(t):
    off = t.offsets()
    assert off.shape == (t.rows, t.cols)
    assert len(np.unique(off)) == off.size                 # no two elements share a slot
    assert off.min() >= 0 and off.max() + t.itemsize <= t.size_bytes
    assert np.all(off % t.itemsize == 0)
    assert t.size_bytes == t.rows * t.row_pitch


@pytest.mark.parametrize("t", tiles(), ids=repr)
def test_sixteen_byte_chunks_stay_whole(t):
    # TMA swizzles 16-byte chunks: elements inside one chunk keep their order and adjacency.
    off = t.offsets()
    per = 16 // t.itemsize
    chunks = off.reshape(t.rows, t.cols // per, per)
    assert np.all(np.diff(chunks, axis=-1) == t.itemsize)
    assert np.all(chunks[..., 0] % 16 == 0)


def test_no_swizzle_is_row_major():
    t = SmemTile(5, 24, "float16", 0)
    r, c = 3, 17
    assert t.byte_offset(r, c) == r * 48 + c * 2
    assert t.required_alignment == 128


def test_128B_matches_the_programming_guide_index_relation(rng):
    # CUDA C++ Programming Guide: smem[y][x] <-> smem[y][((y + offset) % 8) ^ x] for 128-byte rows
    # of 16-byte chunks x, offset 0 for a 1024-byte aligned base.
    t = SmemTile(64, 64, "float16", 128)
    for _ in range(200):
        y, col = int(rng.integers(64)), int(rng.integers(64))
        x, within = divmod(col * 2, 16)
        assert t.byte_offset(y, col) == y * 128 + ((y % 8) ^ x) * 16 + within


@pytest.mark.parametrize("sw", [32, 64])
def test_narrow_modes_xor_with_the_128_byte_line_index(sw, rng):
    # The guide's offset formula for 64B / 32B is (ptr / 128) % (sw / 16): the XOR operand is the
    # 128-byte line number, so with sw-byte rows it changes every 128 / sw rows.
    t = SmemTile(32, sw // 4, "float32", sw)
    n = sw // 16
    for _ in range(100):
        r, c = int(rng.integers(32)), int(rng.integers(sw // 4))
        lin = r * sw + c * 4
        line, chunk, within = lin // 128, (lin % 128) // 16, lin % 16
        want = line * 128 + ((chunk & ~(n - 1)) | ((chunk % n) ^ (line % n))) * 16 + within
        assert t.byte_offset(r, c) == want


def test_chapter_03_reading_of_the_narrow_panels():
    """03 §2's words on the 32- and 64-byte panels of tma.plot_chunk_maps (8 rows, fp16)."""
    m32 = SmemTile(8, 16, "float16", 32).chunk_map()
    m64 = SmemTile(8, 32, "float16", 64).chunk_map()
    # 4 or 2 rows share a 128-byte line: row 1 sits in the next bank groups, with no XOR.
    assert m32[1].tolist() == [2, 3] and m64[1].tolist() == [4, 5, 6, 7]
    # 64 B: rows 2-3 (line 1) swap neighbouring chunks; 32 B: rows 4-7 (line 1) swap their two.
    assert (m64[2:4] == m64[0:2] ^ 1).all()
    assert (m32[4:8] == m32[0:4] ^ 1).all()


def test_swizzle_is_an_involution(rng):
    a = rng.integers(0, 1 << 16, size=1000)
    for sw in (0, 32, 64, 128):
        assert np.array_equal(unswizzle_address(swizzle_address(a, sw), sw), a)
        period = ALIGNMENT[sw] if sw else 1
        # the pattern repeats after ALIGNMENT bytes
        assert np.array_equal(swizzle_address(a + 3 * period, sw) - 3 * period, swizzle_address(a, sw))


def test_alignment_per_mode():
    assert [SmemTile(8, 16, "uint8", s).required_alignment for s in (0, 32)] == [128, 256]
    assert [SmemTile(8, 64, "uint8", s).required_alignment for s in (64, 128)] == [512, 1024]


def test_128B_swizzle_removes_column_read_conflicts():
    # 8 lanes (one ldmatrix phase) each read the 16-byte chunk at the same column of rows 0..7.
    sw = SmemTile(64, 64, "float16", 128)
    plain = SmemTile(64, 64, "float16", 0)
    for col in (0, 8, 56):
        assert sw.conflicts(range(8), [col] * 8, 16) == 1
        assert plain.conflicts(range(8), [col] * 8, 16) == 8
    # 4-byte reads of one column by 32 rows: 128B swizzle spreads them over 8 chunks of 4 banks
    assert plain.conflicts(range(32), [0] * 32, 4) == 32
    assert sw.conflicts(range(32), [0] * 32, 4) == 4


def test_banks_are_word_index_mod_32():
    t = SmemTile(16, 64, "float16", 128)
    assert np.array_equal(t.banks(), (t.offsets() // 4) % 32)
    assert t.bank(1, 0) == 4   # row 1, chunk 0 lands in chunk 1 → banks 4..7


@pytest.mark.parametrize("t", [SmemTile(8, 32, "bfloat16", 128), SmemTile(12, 16, "float32", 64),
                               SmemTile(7, 32, "uint8", 32), SmemTile(9, 40, "float16", 0)], ids=repr)
def test_scatter_gather_round_trip(t, rng):
    box = rng.integers(1, 2**31, size=(t.rows, t.cols * t.itemsize // 4 or 1), dtype=np.uint32)
    box = box.view(np.uint8)[:, : t.inner_bytes].copy().view(t.dtype)
    raw = t.scatter(box, fill=0xEE)
    assert raw.size == t.size_bytes
    assert np.array_equal(t.gather(raw).view(np.uint8), box.view(np.uint8))
    # padding (narrow rows under a wider swizzle span) is untouched
    assert np.count_nonzero(t.element_at() < 0) * t.itemsize == t.size_bytes - t.box_bytes


def test_narrow_row_is_padded_to_the_span():
    t = SmemTile(8, 32, "float16", 128)         # 64-byte rows under a 128-byte swizzle
    assert t.row_pitch == 128 and t.size_bytes == 1024 and t.box_bytes == 512


@pytest.mark.parametrize("args, match", [
    ((8, 12, "float16", 0), r"cols=12: the inner box dimension is 24 bytes.*multiple of 16"),
    ((8, 128, "float16", 128), r"cols=128: the inner box dimension is 256 bytes, more than the "
                               r"128-byte swizzle span.*at most 64 float16"),
    ((8, 16, "float32", 32), r"cols=16: .*64 bytes, more than the 32-byte swizzle span"),
    ((8, 64, "float16", 16), r"swizzle=16: must be 0 \(none\), 32, 64 or 128"),
    ((0, 64, "float16", 0), r"rows=0: must be a positive integer"),
    ((8, -8, "float16", 0), r"cols=-8: must be a positive integer"),
    ((8, 64, "complex64", 0), r"dtype=complex64"),
])
def test_invalid_tiles_name_field_value_and_rule(args, match):
    with pytest.raises(LayoutError, match=match):
        SmemTile(*args)


def test_swizzle_names_accepted():
    assert SmemTile(8, 64, "float16", "128B").swizzle == 128
    assert SmemTile(8, 64, "float16", None).swizzle == 0
    assert SmemTile(8, 32, "float16", "CU_TENSOR_MAP_SWIZZLE_64B").swizzle == 64
    assert SmemTile(8, 32, "float16", "SWIZZLE_64B").swizzle_name == "CU_TENSOR_MAP_SWIZZLE_64B"


def test_tensor_map_args_and_box_limit():
    t = SmemTile(64, 64, "bfloat16", 128)
    a = t.tensor_map_args()
    assert a["box_dim"] == (64, 64) and a["swizzle"] == 128 and a["dtype"] == t.dtype
    with pytest.raises(LayoutError, match=r"rows=300: one TMA box has at most 256 rows"):
        SmemTile(300, 64, "float16", 128).tensor_map_args()


def test_index_errors():
    t = SmemTile(4, 8, "float16", 0)
    with pytest.raises(IndexError, match="row=4"):
        t.byte_offset(4, 0)
    with pytest.raises(IndexError, match="col=8"):
        t.byte_offset(0, 8)


def test_chapter_03_column_reads_per_swizzle_mode():
    """03 §2's words: unswizzled, a chunk column of 8 rows repeats bank groups (8-way at 128-byte
    rows, 4-way at 64, 2-way at 32); each swizzle mode, at its own row width, spreads every column
    over the 8 groups, and 128B's column 0 is groups 0 to 7."""
    for row_bytes, ways in ((128, 8), (64, 4), (32, 2)):
        m = SmemTile(8, row_bytes // 2, "float16", 0).chunk_map() if row_bytes == 128 else None
        lin = np.arange(8)[:, None] * row_bytes + np.arange(row_bytes // 16)[None, :] * 16
        groups = (lin % 128) // 16                        # no swizzle: the byte offset is the address
        assert all(8 // len(set(groups[:, c])) == ways for c in range(groups.shape[1]))
        if m is not None:
            assert (m == groups).all()
        sw = SmemTile(8, row_bytes // 2, "float16", row_bytes).chunk_map()
        assert all(sorted(sw[:, c]) == list(range(8)) for c in range(sw.shape[1]))
    assert SmemTile(8, 64, "float16", 128).chunk_map()[:, 0].tolist() == list(range(8))
