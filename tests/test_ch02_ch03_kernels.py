"""Chapters 02-03: every kernel compiles for sm_90a with the SASS it should have (CPU); the
GPU tests (marker ``gpu``) check the kernels on fresh random data with poisoned outputs."""
import numpy as np
import pytest

from asynctc import cpasync, gemm, sass, tmacopy
from asynctc.cpasync import CpAsyncTile
from asynctc.layout import SmemTile


def counts(ck):
    return sass.class_counts(tmacopy.kernel_sass(ck))


# ---------------------------------------------------------------------------------------- CPU ---

@pytest.mark.parametrize("tile", cpasync.TILES, ids=lambda t: t.name)
def test_cp_async_gemm_sass(tile):
    ck = cpasync.compile_cp_async("float16", tile)
    c = counts(ck)
    assert c.get("LDGSTS", 0) > 0 and c.get("LDGDEPBAR", 0) > 0 and c.get("DEPBAR", 0) > 0
    assert c.get("HMMA", 0) > 0 and c.get("LDSM", 0) > 0
    # no register staging left: operands never pass through LDG / STS
    assert "LDG" not in c and "STS" not in c
    assert ck.resources.spill_stores == 0


def test_chapter01_kernel_still_stages_through_registers():
    c = counts(gemm.compile_mma_sync("float16"))
    assert c.get("LDG", 0) > 0 and c.get("STS", 0) > 0 and "LDGSTS" not in c


@pytest.mark.parametrize("name, must, must_not", [
    ("tma_load_dump", {"UTMALDG", "SYNCS", "FENCE_ASYNC"}, {"UTMASTG"}),
    ("tma_store_raw", {"UTMASTG", "FENCE_ASYNC"}, {"UTMALDG"}),
    ("mbarrier_lifecycle", {"UTMALDG", "SYNCS"}, set()),
    ("copy_tma", {"UTMALDG", "UTMASTG", "SYNCS"}, {"LDG", "STG", "LDGSTS"}),
    ("copy_ldg_sts", {"LDG", "STS", "LDS", "STG"}, {"UTMALDG", "LDGSTS"}),
    ("copy_cp_async", {"LDGSTS", "LDGDEPBAR", "DEPBAR"}, {"UTMALDG", "LDG"}),
])
def test_tma_copy_kernels_sass(name, must, must_not):
    c = counts(tmacopy.compile_tma(name))
    assert must <= set(c), f"{name}: {c}"
    assert not (must_not & set(c)), f"{name}: {c}"


def test_mbarrier_sass_names():
    ops = set(sass.opcode_counts(tmacopy.kernel_sass(tmacopy.compile_tma("mbarrier_lifecycle"))))
    for op in ("SYNCS.EXCH.64", "SYNCS.ARRIVE.TRANS64", "SYNCS.PHASECHK.TRANS64.TRYWAIT"):
        assert op in ops


@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_tma_ranks_compile(rank):
    ops = sass.opcode_counts(tmacopy.kernel_sass(tmacopy.compile_tma("tma_load_dump", RANK=rank)))
    assert ops.get(f"UTMALDG.{rank}D", 0) == 1, sorted(ops)
    ops = sass.opcode_counts(tmacopy.kernel_sass(tmacopy.compile_tma("tma_store_raw", RANK=rank)))
    assert ops.get(f"UTMASTG.{rank}D", 0) == 1, sorted(ops)


def test_smem_pipeline_sass():
    from asynctc import runtime
    s = sass.class_counts(runtime.compile_kernel("smem_pipeline.cu", "smem_copy_sync").sass()
                          .split(".text.smem_copy_sync:")[1])
    a = sass.class_counts(runtime.compile_kernel("smem_pipeline.cu", "smem_copy_async").sass()
                          .split(".text.smem_copy_async:")[1].split(".text.")[0])
    assert "LDGSTS" in a and "LDGSTS" not in s


@pytest.mark.parametrize("kw, match", [
    (dict(stages=5), r"stages=5: must be 1, 2, 3 or 4"),
    (dict(stages=4, min_blocks=2), r"2 CTAs × 131072 B of shared memory do not fit"),
    (dict(bk=48), r"bk=48"),
])
def test_cp_async_tile_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        CpAsyncTile(**{**dict(bm=128, bn=128, bk=64, wm=64, wn=64), **kw}).validate()


def test_cp_async_gemm_rejects_bad_inputs_before_the_gpu(rng):
    a = rng.standard_normal((128, 100)).astype(np.float16)
    b = rng.standard_normal((100, 128)).astype(np.float16)
    with pytest.raises(ValueError, match=r"K=100: .* multiple of 64"):
        cpasync.cp_async_gemm(a, b)
    with pytest.raises(ValueError, match=r"a.dtype=float32"):
        cpasync.cp_async_gemm(a.astype(np.float32), b)
    with pytest.raises(ValueError, match=r"b must have K=100 rows"):
        cpasync.cp_async_gemm(a, b[:64])


def test_expected_box_oob(rng):
    host = rng.standard_normal((10, 16)).astype(np.float32) + 5
    box = tmacopy.expected_box(host, (-2, 12), (4, 8))
    assert np.array_equal(box[2:, :4], host[0:2, 12:16])
    assert np.all(box[:2] == 0) and np.all(box[:, 4:] == 0)
    assert np.all(tmacopy.expected_box(host, (20, 0), (4, 8)) == 0)
    assert np.isnan(tmacopy.expected_box(host, (8, 0), (4, 8), "nan")[2:]).all()


def test_copy_configs_fit():
    for br, bc in tmacopy.BOXES:
        for v in tmacopy.VARIANTS:
            c = tmacopy.copy_config(v, br, bc)
            assert 1024 <= c.box_bytes <= 32768
            assert c.ctas_per_sm * (c.smem_bytes + 1024) <= 228 * 1024
    with pytest.raises(ValueError, match="variant='dma'"):
        tmacopy.copy_config("dma", 8, 32)
    with pytest.raises(ValueError, match=r"box\[0\]=512"):
        tmacopy.copy_config("tma", 512, 32)


def test_lifecycle_table_is_consistent():
    # parity rule: while phase k is open, test_wait.parity(k % 2) is false and the other is true
    for what, bar, p0, p1, res in tmacopy.LIFECYCLE:
        assert p0 != p1


# ---------------------------------------------------------------------------------------- GPU ---

@pytest.mark.gpu
@pytest.mark.parametrize("tile", cpasync.TILES, ids=lambda t: t.name)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cp_async_gemm_correct(tile, dtype, rng):
    for shp in ((256, 384, 640), (384, 256, 1024)):
        c = cpasync.verify_cp_async(*shp, dtype=dtype, tile=tile, seed=int(rng.integers(2**31)))
        assert c.passed, c.as_dict()
    c = cpasync.verify_cp_async(128, 256, 192, dtype=dtype, tile=tile, out_f32=True,
                                seed=int(rng.integers(2**31)))
    assert c.passed, c.as_dict()


@pytest.mark.gpu
@pytest.mark.parametrize("tile", tmacopy.swizzle_tiles(), ids=repr)
def test_tma_load_matches_swizzle_model(tile, rng):
    c = tmacopy.load_box(tile, shape=(64, 4 * tile.cols + 16 // tile.itemsize * 3),
                         start=(int(rng.integers(0, 64 - tile.rows)), int(rng.integers(0, 3)) * tile.cols),
                         rng=rng)
    assert c.passed, c.as_dict()


@pytest.mark.gpu
@pytest.mark.parametrize("tile", tmacopy.swizzle_tiles(), ids=repr)
def test_tma_store_matches_swizzle_model(tile, rng):
    c = tmacopy.store_box(tile, shape=(48, 3 * tile.cols), start=(5, tile.cols), rng=rng)
    assert c.passed, c.as_dict()


@pytest.mark.gpu
@pytest.mark.parametrize("start", [(-3, -16), (40, 112), (-20, 120), (100, 0)])
@pytest.mark.parametrize("tile", [SmemTile(16, 64, "float16", 128), SmemTile(16, 32, "float32", 0),
                                  SmemTile(24, 64, "uint8", 64)], ids=repr)
def test_tma_oob_zero_fill(tile, start, rng):
    if start[1] * np.dtype(tile.dtype).itemsize % 16:
        pytest.skip("inner start not a multiple of 16 bytes: refused (test_tma_refuses_unaligned_start)")
    c = tmacopy.load_box(tile, shape=(48, 128), start=start, rng=rng)
    assert c.passed, c.as_dict()
    if min(start) < 0:
        return                  # stores at negative coordinates are refused (see the test below)
    c = tmacopy.store_box(tile, shape=(48, 128), start=start, rng=rng)
    assert c.passed, c.as_dict()


def test_tma_refuses_unaligned_start():
    """A uint8 box loaded at inner coordinate 120 (120 bytes) faulted on the H200: refused."""
    with pytest.raises(ValueError, match=r"120 bytes .* multiple of 16 bytes"):
        tmacopy.load_box(SmemTile(24, 64, "uint8", 64), shape=(48, 128), start=(-20, 120))
    with pytest.raises(ValueError, match="multiple of 16 bytes"):
        tmacopy.store_box(SmemTile(24, 64, "uint8", 64), shape=(48, 128), start=(8, 120))


def test_tma_store_refuses_negative_start():
    """A negative TMA store start faulted (illegal instruction) on the H200: refused in Python."""
    with pytest.raises(ValueError, match=r"start=\(-3, 16\): TMA store box coordinates must be ≥ 0"):
        tmacopy.store_box(SmemTile(16, 64, "float16", 128), shape=(48, 128), start=(-3, 16))


@pytest.mark.gpu
def test_tma_oob_nan_fill(rng):
    c = tmacopy.load_box(SmemTile(16, 64, "float16", 128), shape=(40, 96), start=(32, 64),
                         oob_fill="nan", rng=rng)
    assert c.passed, c.as_dict()


@pytest.mark.gpu
def test_mbarrier_lifecycle(rng):
    run = tmacopy.mbarrier_lifecycle(rng=rng)
    assert run.passed, tmacopy.lifecycle_table(run) + f"\nerr={run.err} boxes_ok={run.boxes_ok}"


@pytest.mark.gpu
@pytest.mark.parametrize("box", [(8, 32), (32, 64), (16, 256)])
def test_copy_variants_correct(box):
    cb = tmacopy.CopyBench(rows=1024, cols=2048)
    for v in tmacopy.VARIANTS:
        cfg = tmacopy.copy_config(v, *box)
        cb.dst.poison()
        cb.launcher(cfg)()
        c = cb.check(cfg.name)
        assert c.passed, c.as_dict()


@pytest.mark.gpu
@pytest.mark.parametrize("b", cpasync.SMEM_BLOCKS)
def test_smem_pipeline_correct(b):
    sp = cpasync.SmemPipeline(b, blocks=64, iters=16)
    for kind in ("sync", "async"):
        c = sp.check(kind)
        assert c.passed, c.as_dict()
