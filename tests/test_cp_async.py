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


def test_best_line_reads_the_record():
    from asynctc.core import records
    res = records.load("cp_async").results
    line = cp_async.best_line(res, "float16", 4096)
    best = max(r["tflops"] for r in cp_async.stage_table(res, "float16", 4096))
    assert line.startswith("Best cp.async rung at 4096³ float16 (") and f"{best:.0f} TFLOP/s" in line
    assert "× chapter 01 (" in line and "of cuBLAS (" in line


def test_ceiling_gap_model_counts_the_best_rungs_shared_memory_bytes():
    from asynctc.core import records
    rec, peak = records.load("cp_async"), records.load("mma_sync").results["peak"]
    gap = cp_async.ceiling_gap(rec.results, peak, rec.provenance["sm_count"])
    best = cp_async.best_rows(rec.results, "float16", "cp.async")[4096]
    tile = next(t for t in cp_async.TILES if t.name == best["tile"])
    assert gap["tile"] == tile.name and gap["tflops"] == best["tflops"]
    # cp.async writes the k-tile once; four 64×64 warp tiles read each slice of A and B twice
    assert gap["written"] == (tile.bm + tile.bn) * tile.bk * 2
    assert gap["ldsm"] == 2 * gap["written"] and tile.warps == 4
    assert gap["smem_clk"] == (gap["written"] + gap["ldsm"]) / cp_async.SMEM_BYTES_PER_CLK_SM
    assert gap["overlap_clk"] == max(gap["smem_clk"], gap["mma_clk"])
    assert gap["serial_clk"] == gap["smem_clk"] + gap["mma_clk"]
    flop = 2 * tile.bm * tile.bn * tile.bk
    assert gap["took_clk"] == pytest.approx(flop / gap["flop_clk"])
    # chapter 02's sentence: below the ceiling, shared memory as busy as the Tensor Cores, between
    assert gap["flop_clk"] < gap["ceiling_flop_clk"] and gap["smem_clk"] > 0.8 * gap["mma_clk"]
    assert gap["overlap_clk"] < gap["took_clk"] < gap["serial_clk"]
    ok, text, numbers = cp_async.ceiling_gap_note(gap)   # its table: five rows, then one verdict
    assert ok and numbers["took_clk"] == gap["took_clk"] and len(text.splitlines()) == 7
    assert text.splitlines()[-1].startswith("Between the two: ")
    assert not cp_async.ceiling_gap_note({**gap, "took_clk": gap["serial_clk"] + 1})[0]
    assert not cp_async.ceiling_gap_note({**gap, "smem_clk": 0.5 * gap["mma_clk"]})[0]
