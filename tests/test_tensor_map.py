"""Every cuTensorMapEncodeTiled rule checked in asynctc.models.tensor_map has a test that triggers it (CPU only)."""
import numpy as np
import pytest

from asynctc import tma
from asynctc.models.layout import SmemTile
from asynctc.models.tensor_map import TensorMapError, validate

ADDR = 0x7F00_0000_0000     # a plausible, 256-byte aligned device address


def ok(**kw):
    args = dict(address=ADDR, shape=(256, 512), dtype="float16", box=(64, 64))
    args.update(kw)
    return validate(**args)


def bad(match, **kw):
    with pytest.raises(TensorMapError, match=match) as e:
        ok(**kw)
    assert "cuTensorMapEncodeTiled" in str(e.value)
    return str(e.value)


def test_a_valid_map_normalises():
    s = ok(swizzle=128)
    assert s.rank == 2 and s.strides == (1024, 2) and s.swizzle == 128
    assert s.data_type == "FLOAT16" and s.box_bytes == 64 * 64 * 2
    assert s.smem_tile() == SmemTile(64, 64, "float16", 128)


@pytest.mark.parametrize("shape", [(), (2, 2, 2, 2, 2, 16)])
def test_rank(shape):
    bad(r"rank=\d: a tensor map has 1 to 5 dimensions", shape=shape, box=(1,) * len(shape))


def test_rank_1_to_5_accepted():
    for r in range(1, 6):
        shape = (3,) * (r - 1) + (64,)
        assert ok(shape=shape, box=(1,) * (r - 1) + (32,)).rank == r


@pytest.mark.parametrize("dt", ["complex64", "bool"])
def test_dtype(dt):
    bad(rf"dtype='{dt}': no CUtensorMapDataType", dtype=dt)


@pytest.mark.parametrize("dt, travels", [("float8_e4m3fn", "UINT8"), ("int8", "UINT8"),
                                          ("bfloat16", "BFLOAT16"), ("float32", "FLOAT32")])
def test_dtype_mapping(dt, travels):
    size = np.dtype("float32").itemsize if dt == "float32" else (2 if dt == "bfloat16" else 1)
    assert ok(dtype=dt, box=(8, 64 // size)).data_type == travels


def test_address_null():
    bad(r"address=0: globalAddress must be a non-null", address=0)


@pytest.mark.parametrize("addr", [2**64, 2**64 + 256, 2**70])
def test_address_beyond_64_bits(addr):
    bad(r"globalAddress must be < 2\^64", address=addr)


@pytest.mark.parametrize("addr", [float(ADDR), "0x7f0000000000", None, True])
def test_address_not_an_integer(addr):
    msg = bad(r"globalAddress must be an integer device address", address=addr)
    assert "non-null" not in msg


def test_box_beyond_the_tx_count_range():
    # 256 x 256 x 16 fp16 = 2 MiB in one load: more than an mbarrier phase can count (2^20 - 1)
    bad(r"box=\(16, 256, 256\): one load of this box writes 2097152 bytes, more than an mbarrier",
        shape=(64, 256, 256), box=(16, 256, 256))


def test_box_beyond_shared_memory():
    # 256 x 256 fp32 = 256 KiB: within the tx-count range, beyond 227 KiB of shared memory
    bad(r"box=\(256, 256\): one load of this box fills 262144 bytes of shared memory",
        shape=(512, 512), dtype="float32", box=(256, 256))
    # the swizzle padding counts: 2048 rows of 16 bytes padded to 128-byte rows = 256 KiB
    bad(r"fills 262144 bytes of shared memory \(swizzle padding included\)",
        shape=(16, 512, 64), box=(8, 256, 8), swizzle=128)
    assert ok(shape=(512, 512), dtype="float32", box=(227, 256)).box_bytes == 227 * 1024


def test_address_alignment():
    bad(r"address='0x7f0000000008': globalAddress must be 16-byte aligned", address=ADDR + 8)


def test_global_dim_range():
    msg = bad(r"shape\[0\]=0: every globalDim must be in 1 .. 2\^31", shape=(0, 512))
    assert "CUDA 13.5" in msg and "2^32" in msg       # the limit says which document it rests on
    bad(r"shape\[1\]=2147483649: every globalDim", shape=(4, 2**31 + 1), box=(4, 64),
        strides=(2**33, 2))


def test_stride_multiple_of_16():
    msg = bad(r"strides\[0\]=1000: every globalStride must be a positive multiple of 16 bytes",
              strides=(1000, 2))
    assert "strides[0]=1000" in msg
    # a contiguous row of 100 fp16 = 200 bytes: not a multiple of 16
    bad(r"strides\[0\]=200", shape=(8, 100), box=(8, 64))


def test_stride_below_2_pow_40():
    bad(r"strides\[0\]=1099511627776: every globalStride must be < 2\^40", strides=(2**40, 2))


def test_size_one_dimension_strides_do_not_trip():
    # (1, 3, 40) fp16: the outer stride would be 240 bytes (not a multiple of 16) — never used.
    s = ok(shape=(1, 4, 40), box=(1, 4, 32), strides=(240, 80, 2))
    assert s.strides[0] % 16 == 0 and s.strides[1] == 80
    # a size-1 middle dimension with an illegal stride is fine too
    s = ok(shape=(4, 1, 64), box=(2, 1, 64), strides=(128, 8, 2))
    assert s.strides[1] % 16 == 0


def test_innermost_contiguous():
    bad(r"strides\[-1\]=4: the innermost dimension must be contiguous", strides=(1024, 4))


@pytest.mark.parametrize("box, field, val", [((0, 64), 0, 0), ((64, 257), 1, 257), ((300, 64), 0, 300)])
def test_box_range(box, field, val):
    bad(rf"box\[{field}\]={val}: every boxDim must be in 1 .. 256", box=box)


def test_box_inner_multiple_of_16_bytes():
    bad(r"box\[-1\]=12: the inner box dimension is 24 bytes .* multiple of 16 bytes", box=(8, 12))


@pytest.mark.parametrize("sw, cols", [(32, 32), (64, 64), (128, 128)])
def test_inner_box_within_swizzle_span(sw, cols):
    bad(rf"box\[-1\]={cols}: the inner box dimension is {cols * 2} bytes, more than the "
        rf"{sw}-byte swizzle span", swizzle=sw, box=(8, cols))
    assert ok(swizzle=sw, box=(8, sw // 2)).swizzle == sw


def test_swizzle_mode():
    bad(r"swizzle=256: must be one of \[0, 32, 64, 128\]", swizzle=256)


@pytest.mark.parametrize("es, i, v", [((1, 0), 1, 0), ((9, 1), 0, 9)])
def test_element_strides(es, i, v):
    bad(rf"element_strides\[{i}\]={v}: every elementStride must be in 1 .. 8", element_strides=es)


def test_element_strides_box_bytes():
    assert ok(box=(64, 64), element_strides=(2, 1)).box_bytes == 32 * 64 * 2


def test_innermost_element_stride_is_refused():
    # The driver ignores elementStrides[0] (innermost): TMA would write the whole 64x64 fp16 box,
    # 8192 bytes, and an expect_tx of 4096 would complete the phase early.
    msg = bad(r"element_strides\[-1\]=2: the innermost element stride must be 1",
              shape=(256, 256), box=(64, 64), element_strides=(1, 2))
    assert "all 64 inner elements" in msg


def test_outer_element_stride_tile_agrees_with_box_bytes():
    s = ok(shape=(256, 256), box=(64, 64), element_strides=(2, 1))
    assert s.loaded_box == (32, 64)
    assert s.box_bytes == 4096
    assert s.smem_tile() == SmemTile(32, 64, "float16", 0)
    assert s.smem_tile().box_bytes == s.box_bytes


def _loaded_by_traversal(box, es):
    """Brute force, independent of the model: walk the box coordinate by coordinate and keep
    those the traversal stride lands on (the innermost stride is ignored by the driver)."""
    import itertools
    es = tuple(es[:-1]) + (1,)
    kept = [c for c in itertools.product(*(range(b) for b in box))
            if all(ci % e == 0 for ci, e in zip(c, es))]
    return len(kept), {c[:-1] for c in kept}


@pytest.mark.parametrize("seed", range(40))
def test_element_stride_byte_accounting_property(seed):
    """For many legal (dtype, rank, box, element strides, swizzle): the expect_tx count, the
    shared-memory tile and the brute-force traversal agree."""
    rng = np.random.default_rng(seed)
    dt = ["uint8", "float16", "bfloat16", "float32", "float64"][seed % 5]
    size = np.dtype("float64").itemsize if dt == "float64" else {"uint8": 1, "float32": 4}.get(dt, 2)
    rank = 1 + seed % 4
    sw = [0, 32, 64, 128][int(rng.integers(0, 4))]
    span = sw or 128
    inner = int(rng.integers(1, span // 16 + 1)) * 16 // size
    box = tuple(int(rng.integers(1, 12)) for _ in range(rank - 1)) + (inner,)
    es = tuple(int(rng.integers(1, 9)) for _ in range(rank - 1)) + (1,)
    s = ok(shape=tuple(4 * b for b in box), dtype=dt, box=box, element_strides=es, swizzle=sw)
    n_elems, rows = _loaded_by_traversal(box, es)
    assert s.box_bytes == n_elems * size
    tile = s.smem_tile()
    assert tile.box_bytes == s.box_bytes
    assert tile.rows == len(rows) and tile.cols == box[-1]
    assert tile.size_bytes == tile.rows * (sw or inner * size)


@pytest.mark.parametrize("es", [(1, 2), (2, 2), (1, 8), (3, 1, 4)])
def test_every_innermost_stride_other_than_one_is_refused(es):
    kw = dict(shape=(16, 256, 256), box=(4, 64, 64)) if len(es) == 3 else dict(shape=(256, 256))
    bad(rf"element_strides\[-1\]={es[-1]}", element_strides=es, **kw)


def test_strided_box_model_matches_numpy(rng):
    s = ok(shape=(40, 64), box=(16, 32), element_strides=(3, 1))
    host = rng.standard_normal((40, 64)).astype(np.float16)
    got = tma.strided_box(host, (5, 16), s)
    assert got.shape == (6, 32)
    np.testing.assert_array_equal(got, host[5:21:3, 16:48])


def test_oob_fill():
    bad(r"oob_fill='inf'", oob_fill="inf")
    bad(r"oob_fill='nan': NaN fill needs a floating-point tensorDataType; uint8 travels as UINT8",
        oob_fill="nan", dtype="uint8", box=(8, 64))
    assert ok(oob_fill="nan").oob_fill == "nan"


def test_per_entry_count():
    bad(r"box=\(64,\): must have one entry per tensor dimension \(2\)", box=(64,))


def test_tensor_map_for_tile_dtype_mismatch():
    class Fake:
        dtype = np.dtype("float32")
        shape = (64, 64)
        ptr = ADDR
        nbytes = 64 * 64 * 4
    with pytest.raises(TensorMapError, match=r"dtype='float32': the tile holds 2-byte elements"):
        tma.tensor_map_for_tile(Fake(), SmemTile(64, 64, "float16", 128))


def test_view_beyond_the_array_is_rejected_before_encoding():
    class Fake:
        dtype = np.dtype("float16")
        shape = (64, 64)
        ptr = ADDR
        nbytes = 64 * 64 * 2
    with pytest.raises(TensorMapError, match=r"shape=\(128, 64\): .* more than the 8192-byte array"):
        tma.make_tensor_map(Fake(), (64, 64), shape=(128, 64))


def test_l2_promotion_is_validated():
    from asynctc import tma
    spec = tma.validate(address=0x1000, shape=(64, 64), dtype="float16", box=(64, 64), swizzle=128,
                        l2_promotion=256)
    assert spec.l2_promotion == 256
    assert tma.validate(address=0x1000, shape=(64, 64), dtype="float16", box=(64, 64)).l2_promotion == 0
    with pytest.raises(tma.TensorMapError, match=r"^l2_promotion=32"):
        tma.validate(address=0x1000, shape=(64, 64), dtype="float16", box=(64, 64), l2_promotion=32)
