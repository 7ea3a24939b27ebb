"""Chapter 02 (cp.async): the kernels compile for sm_90a with the SASS they should have (CPU);
GPU tests (marker ``gpu``) check them on fresh random data with poisoned outputs."""
import numpy as np
import pytest

from asynctc import cp_async, mma_sync, tma
from asynctc.core import sass
from asynctc.cp_async import CpAsyncTile


def counts(ck):
    return sass.class_counts(tma.kernel_sass(ck))


@pytest.mark.parametrize("tile", cp_async.TILES, ids=lambda t: t.name)
def test_cp_async_gemm_sass(tile):
    ck = cp_async.compile_cp_async("float16", tile)
    c = counts(ck)
    assert c.get("LDGSTS", 0) > 0 and c.get("LDGDEPBAR", 0) > 0 and c.get("DEPBAR", 0) > 0
    assert c.get("HMMA", 0) > 0 and c.get("LDSM", 0) > 0
    # no register staging left: operands never pass through LDG / STS
    assert "LDG" not in c and "STS" not in c
    assert ck.resources.spill_stores == 0


def test_chapter01_kernel_still_stages_through_registers():
    c = counts(mma_sync.compile_mma_sync("float16"))
    assert c.get("LDG", 0) > 0 and c.get("STS", 0) > 0 and "LDGSTS" not in c


def test_smem_pipeline_sass():
    from asynctc.core import runtime
    s = sass.class_counts(runtime.compile_kernel("cp_async_smem_pipeline.cu", "smem_copy_sync").sass()
                          .split(".text.smem_copy_sync:")[1])
    a = sass.class_counts(runtime.compile_kernel("cp_async_smem_pipeline.cu", "smem_copy_async").sass()
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
        cp_async.cp_async_gemm(a, b)
    with pytest.raises(ValueError, match=r"a.dtype=float32"):
        cp_async.cp_async_gemm(a.astype(np.float32), b)
    with pytest.raises(ValueError, match=r"b must have K=100 rows"):
        cp_async.cp_async_gemm(a, b[:64])


@pytest.mark.gpu
@pytest.mark.parametrize("tile", cp_async.TILES, ids=lambda t: t.name)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cp_async_gemm_correct(tile, dtype, rng):
    for shp in ((256, 384, 640), (384, 256, 1024)):
        c = cp_async.verify_cp_async(*shp, dtype=dtype, tile=tile, seed=int(rng.integers(2**31)))
        assert c.passed, c.as_dict()
    c = cp_async.verify_cp_async(128, 256, 192, dtype=dtype, tile=tile, out_f32=True,
                                seed=int(rng.integers(2**31)))
    assert c.passed, c.as_dict()


@pytest.mark.gpu
@pytest.mark.parametrize("b", cp_async.SMEM_BLOCKS)
def test_smem_pipeline_correct(b):
    sp = cp_async.SmemPipeline(b, blocks=64, iters=16)
    for kind in ("sync", "async"):
        c = sp.check(kind)
        assert c.passed, c.as_dict()


def test_ceiling_rows_pair_the_best_rung_with_the_ceiling_at_its_occupancy():
    """Chapter 02 computes its clocks per k-tile in view from these rows; check the pairing and the
    numbers its sentence rests on (below the ceiling, shared memory as busy as the Tensor Cores,
    the measured k-tile between full overlap and none)."""
    from asynctc.core import records
    rec, peak = records.load("cp_async"), records.load("mma_sync").results["peak"]
    tile, best, ceil = cp_async.ceiling_rows(rec.results, peak)
    assert best == cp_async.best_rows(rec.results, "float16", "cp.async")[4096] and tile.name == best["tile"]
    assert (ceil["warps_per_cta"], ceil["ctas_per_sm"], ceil["dtype"]) == (tile.warps, tile.min_blocks, "float16")
    sm = rec.provenance["sm_count"]

    def per_clk(r):
        return r["tflops"] * 1e12 / (sm * r["sm_mhz"] * 1e6)
    flop = 2 * tile.bm * tile.bn * tile.bk
    written = (tile.bm + tile.bn) * tile.bk * 2
    read = tile.warps * (tile.wm + tile.wn) * tile.bk * 2
    assert read == 2 * written and tile.warps == 4     # four 64×64 warp tiles read each slice twice
    math, smem, took = flop / per_clk(ceil), (written + read) / cp_async.SMEM_BYTES_PER_CLK_SM, flop / per_clk(best)
    assert best["tflops"] < ceil["tflops"] and smem > 0.8 * math and max(math, smem) < took < math + smem
