"""Chapter 01 kernels on the CPU: compilation, SASS contents, input validation, models."""
import numpy as np
import pytest

from asynctc.models import fragments
from asynctc import mma_sync
from asynctc.core import sass
from asynctc.core.memory import DeviceArray
from asynctc.mma_sync import MmaSyncTile


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("tile", mma_sync.TILES, ids=lambda t: t.name)
def test_mma_sync_sass(dtype, tile):
    ck = mma_sync.compile_mma_sync(dtype, tile)
    counts = sass.class_counts(ck.sass())
    ops = sass.opcode_counts(ck.sass())
    hmma = [op for op in ops if op.startswith("HMMA.16816.F32")]
    assert hmma and all(("BF16" in op) == (dtype == "bfloat16") for op in hmma), hmma
    assert counts["LDSM"] > 0 and counts["BAR"] >= 1
    # the loop body is compiled once: HMMA count = per-warp mma.sync per k-tile
    assert counts["HMMA"] == (tile.wm // 16) * (tile.wn // 8) * (tile.bk // 16)
    assert "LDGSTS" not in counts and "HGMMA" not in counts   # synchronous: no async copies or wgmma


def test_default_tile_does_not_spill():
    ck = mma_sync.compile_mma_sync("float16")
    assert ck.resources.spill_stores == 0
    assert "LDL" not in sass.class_counts(ck.sass())


def test_peak_kernel_sass():
    ck = mma_sync.compile_mma_sync_peak("bfloat16")
    counts = sass.class_counts(ck.sass())
    assert counts["HMMA"] >= mma_sync.PEAK_CHAINS and "LDS" not in counts


@pytest.mark.parametrize("kw,msg", [
    (dict(bk=48), "bk=48"), (dict(wm=24), "wm=24"), (dict(bm=128, wm=96), "must divide"),
    (dict(bn=96, wn=32), "bn=96"), (dict(min_blocks=5), "min_blocks=5"),
    (dict(bm=256, bn=256, wm=32, wn=32), "threads=2048"),
])
def test_tile_rules(kw, msg):
    with pytest.raises(ValueError, match=msg):
        MmaSyncTile(**kw).validate()


@pytest.mark.parametrize("m,n,k,msg", [(100, 128, 64, "M=100"), (128, 100, 64, "N=100"),
                                       (128, 128, 40, "K=40"), (0, 128, 64, "M=0")])
def test_shape_rules(m, n, k, msg):
    with pytest.raises(ValueError, match=msg):
        mma_sync.check_shapes(m, n, k)


def test_bad_inputs_never_reach_the_gpu():
    a = np.ones((128, 64), np.float16)
    with pytest.raises(ValueError, match="float16 or bfloat16"):
        mma_sync.mma_sync_gemm(a.astype(np.float32), a.T.astype(np.float32))
    with pytest.raises(ValueError, match="b must have K=64 rows"):
        mma_sync.mma_sync_gemm(a, np.ones((32, 128), np.float16))
    with pytest.raises(ValueError, match="b.dtype"):
        mma_sync.mma_sync_gemm(a, np.ones((64, 128), np.float32))
    with pytest.raises(ValueError, match="must be 2-D"):
        mma_sync.mma_sync_gemm(np.ones((2, 128, 64), np.float16), np.ones((64, 128), np.float16))


def test_fragment_models(rng):
    a, b = rng.standard_normal((16, 16)), rng.standard_normal((16, 8))
    assert np.allclose(fragments.mma_from_fragments(a, b), a @ b)
    for fn, shape, per_lane in ((fragments.a_m16n8k16, (16, 16), 8), (fragments.b_m16n8k16, (16, 8), 4),
                                (fragments.c_m16n8k16, (16, 8), 4)):
        lane, reg = fn()
        assert lane.shape == shape
        assert np.all(np.bincount(lane.ravel(), minlength=32) == per_lane)   # every lane, equal share


def test_fragment_product_uses_only_registers(rng):
    """C from the fragments alone: any one register moved, in A or in B, makes C wrong."""
    a, b = rng.standard_normal((16, 16)), rng.standard_normal((16, 8))
    a_regs, b_regs = fragments.to_registers(a, b)
    lane_c, reg_c = fragments.c_m16n8k16()
    c = np.array([fragments.lane_c_fragment(ln, a_regs, b_regs) for ln in range(32)])[lane_c, reg_c]
    assert np.allclose(c, a @ b)
    for which, lane, r0, r1 in (("a", 7, 0, 2), ("a", 30, 1, 3), ("b", 12, 0, 1)):
        ar, br = a_regs.copy(), b_regs.copy()
        regs = ar if which == "a" else br
        regs[lane, [r0, r1]] = regs[lane, [r1, r0]]
        bad = np.array([fragments.lane_c_fragment(ln, ar, br) for ln in range(32)])[lane_c, reg_c]
        assert not np.allclose(bad, a @ b), (which, lane)
    assert fragments.quad_sources(5) == {"a": [4, 5, 6, 7], "b": list(range(8, 16))}


def test_wgmma_accumulator_fragment():
    """m64nNk16's fp32 D: every element held once; each warp's 16 rows repeat the m16n8 C
    fragment along N (thread 32w + lane, register 4j + r ↔ C register r of n8 block j)."""
    rows, cols = fragments.wgmma_accumulator(256)
    assert rows.shape == cols.shape == (128, 128)
    held = np.zeros((64, 256), int)
    np.add.at(held, (rows, cols), 1)
    assert (held == 1).all()
    lane_c, reg_c = fragments.c_m16n8k16()
    for w in range(4):
        for j in range(32):
            for (r, c), ln in np.ndenumerate(lane_c):
                i = 4 * j + reg_c[r, c]
                assert (rows[32 * w + ln, i], cols[32 * w + ln, i]) == (16 * w + r, 8 * j + c)
    for bad in (0, 12, 264, True):
        with pytest.raises(ValueError, match="n="):
            fragments.wgmma_accumulator(bad)


def test_wgmma_accumulator_owner_inverts_the_fragment():
    """Chapter 04 §6's model (figure and ch04.acc_owner): (thread, register) of D[r][c], the
    inverse of wgmma_accumulator, and the closed form the chapter's solution writes."""
    for n in (8, 16, 64, 256):
        thread, reg = fragments.wgmma_accumulator_owner(n)
        rows, cols = fragments.wgmma_accumulator(n)
        t, i = np.meshgrid(np.arange(128), np.arange(n // 2), indexing="ij")
        assert (thread[rows, cols] == t).all() and (reg[rows, cols] == i).all()
        r, c = np.meshgrid(np.arange(64), np.arange(n), indexing="ij")
        assert (thread == 32 * (r // 16) + 4 * (r % 8) + c % 8 // 2).all()
        assert (reg == 4 * (c // 8) + 2 * (r % 16 // 8) + c % 2).all()


def test_compare_catches_unwritten_and_wrong(rng):
    a, b = mma_sync.random_operands(64, 32, 48, "float16", rng.integers(1 << 31))
    ref = mma_sync.reference(a, b)
    good = ref.astype(np.float16)
    assert mma_sync.compare(good, ref, "float16", (64, 32, 48)).passed
    holes = good.copy()
    holes[3, 5] = np.nan                                   # one element never written
    c = mma_sync.compare(holes, ref, "float16", (64, 32, 48))
    assert not c.passed and c.unwritten == 1
    wrong = good.copy()
    wrong[[0, 1]] = wrong[[1, 0]]                           # two rows swapped
    assert not mma_sync.compare(wrong, ref, "float16", (64, 32, 48)).passed


def test_random_operands_are_not_trivial():
    a, b = mma_sync.random_operands(64, 64, 64, "bfloat16")
    av = a.astype(np.float32)
    assert np.count_nonzero(av) == av.size and not np.all(np.abs(av) == 1)
    assert len(np.unique(av)) > 100


def test_l1_model():
    t = mma_sync.DEFAULT_TILE
    b = t.l1_bytes_per_ktile()
    assert b["ldg"] == b["sts"] == (t.bm + t.bn) * t.bk * 2
    assert b["flop"] == 2 * t.bm * t.bn * t.bk
    assert 100 < t.l1_bound_tflops(132, 1980) < 2000


def test_run_gemm_plumbing_without_a_gpu(monkeypatch):
    """The host path up to the launch (validation, compile, upload, poisoned output), with the
    device side replaced by fakes: what reaches the launcher has the right shapes and dtypes."""
    class FakeDev:
        def __init__(self, shape, dtype):
            self.shape, self.dtype, self.ptr = tuple(shape), np.dtype(dtype), 0

        @classmethod
        def from_host(cls, arr, stream=None):
            return cls(arr.shape, arr.dtype)

        @classmethod
        def poisoned(cls, shape, dtype, stream=None):
            return cls(shape, dtype)

    monkeypatch.setattr(mma_sync.launch, "DeviceArray", FakeDev)     # run_gemm uploads there
    seen = {}

    def fake_launcher(ck, tile, a, b, out, stream):
        seen.update(ck=ck, a=a, b=b, out=out, tile=tile)
        return lambda: None

    a, b = mma_sync.random_operands(256, 128, 192, "bfloat16", 0)
    out = mma_sync.run_gemm(a, b, mma_sync.DEFAULT_TILE, lambda dt: ("compiled", dt), fake_launcher,
                        out_f32=True)
    assert seen["ck"] == ("compiled", "bfloat16")
    assert seen["a"].shape == (256, 192) and seen["b"].shape == (192, 128)
    assert out is seen["out"] and out.shape == (256, 128) and out.dtype == np.float32


def test_check_tiles_skips_unfit_shapes_and_stops_at_a_failure():
    calls = []

    def verify(m, n, k, dtype, tile):
        calls.append((m, n, k, dtype))
        return mma_sync.Check((m, n, k), dtype, 1e-4 if m < 512 else 1.0, 2e-3, 0)

    tile = mma_sync.DEFAULT_TILE
    ok = mma_sync.check_tiles(verify, [tile], [(128, 128, 64), (100, 128, 64)], ("float16",))
    assert calls == [(128, 128, 64, "float16")] and ok[0]["tile"] == tile.name and ok[0]["passed"]
    with pytest.raises(RuntimeError, match="kernel X wrong"):
        mma_sync.check_tiles(verify, [tile], [(512, 128, 64)], ("float16",), what="kernel X")


def test_check_sampled_rows(rng):
    a, b = mma_sync.random_operands(512, 32, 48, "float16", int(rng.integers(1 << 31)))
    good = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)

    class Out:
        def __init__(self, x):
            self.x = x

        def to_host(self):
            return self.x

    c = mma_sync.check_sampled_rows(Out(good), a, b, "float16", "t")
    assert c.passed and c.shape == (512, 32, 48)
    bad = good.copy()
    bad[:, 3] = np.nan                       # a column never written
    with pytest.raises(RuntimeError, match="timed run wrong: t float16"):
        mma_sync.check_sampled_rows(Out(bad), a, b, "float16", "t")


def test_ablations_remove_what_they_say():
    """The diagnostic variants (timed in the mma_sync record's anatomy) really drop their part of the
    data path: fewer global loads / shared stores, fewer ldmatrix, the same HMMA work per k-tile."""
    counts = {ab: sass.class_counts(mma_sync.compile_mma_sync_ablation(ab).sass()) for ab in mma_sync.ABLATIONS}
    full, no_copy, no_ldsm, bare = (counts[i] for i in range(4))
    assert no_copy["LDG"] < full["LDG"] and no_copy["STS"] < full["STS"]
    assert no_ldsm["LDSM"] < full["LDSM"] and no_ldsm["LDG"] == full["LDG"]
    assert bare["LDSM"] < full["LDSM"] and bare["LDG"] < full["LDG"]
    assert all(c["HMMA"] >= full["HMMA"] // 2 for c in counts.values())
    assert mma_sync.compile_mma_sync_ablation(0).cubin == mma_sync.compile_mma_sync().cubin
    with pytest.raises(ValueError, match="ablate=7"):
        mma_sync.compile_mma_sync_ablation(7)


# ---------------------------------------------------------------------------------------- GPU ---



@pytest.mark.gpu
def test_device_array_roundtrip_and_poison(rng):
    x = rng.standard_normal((123, 77)).astype(np.float32)
    d = DeviceArray.from_host(x)
    assert np.array_equal(d.to_host(), x)
    d.poison()
    assert np.isnan(d.to_host()).all()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("tile", mma_sync.TILES, ids=lambda t: t.name)
@pytest.mark.parametrize("shape", [(128, 256, 64), (256, 512, 192), (384, 768, 320), (1024, 512, 2048)])
def test_mma_sync_gemm_correct(rng, dtype, tile, shape):
    try:
        mma_sync.check_shapes(*shape, tile)
    except ValueError:
        pytest.skip(f"shape {shape} is not a whole number of {tile.name} tiles")
    c = mma_sync.verify_mma_sync(*shape, dtype=dtype, tile=tile, seed=int(rng.integers(1 << 31)))
    assert c.passed, c


@pytest.mark.gpu
def test_mma_sync_gemm_fp32_output(rng):
    c = mma_sync.verify_mma_sync(256, 256, 128, "float16", out_f32=True, seed=int(rng.integers(1 << 31)))
    assert c.passed and c.rel_err < 1e-5, c


@pytest.mark.gpu
def test_every_element_written(rng):
    """A kernel that skipped a tile would leave NaN poison; check the full output explicitly."""
    a, b = mma_sync.random_operands(256, 384, 128, "float16", int(rng.integers(1 << 31)))
    out = mma_sync.mma_sync_gemm(a, b).to_host()
    assert np.isfinite(out.astype(np.float32)).all()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_mma_sync_peak_kernel_correct(dtype):
    p = mma_sync.MmaSyncPeak(dtype, blocks=8, warps=4)
    c = p.check()
    assert c.passed, c


@pytest.mark.gpu
def test_simt_on_gpu(rng):
    from asynctc import simt
    assert not simt.simulated()
    a = rng.standard_normal((300, 200), dtype=np.float32)
    b = rng.standard_normal((200, 170), dtype=np.float32)
    c = simt.simt_gemm(a, b)
    ref = a.astype(np.float64) @ b
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) < 1e-5


@pytest.mark.gpu
def test_too_much_shared_memory_is_refused_before_launch():
    from asynctc.core import runtime
    ck = mma_sync.compile_mma_sync("float16")
    with pytest.raises(runtime.LaunchConfigError, match="opt-in shared memory"):
        runtime.check_launch(1, 128, 300 * 1024, ck)


def test_chapter_01_figure_from_the_record():
    """The figure's lines come from the replayed record: cuBLAS and ours per dtype, the peak at
    the sweep's clock, the datasheet's and the mma.sync ceiling at the default tile's occupancy."""
    import matplotlib
    matplotlib.use("Agg")
    from asynctc.core import records
    rec = records.load("mma_sync")
    lines = mma_sync.vs_cublas_lines(rec)
    assert set(lines["series"]) == {f"{k} {dt}" for k in ("cuBLAS", "mma.sync") for dt in mma_sync.DTYPES}
    ceil = mma_sync.ceiling_row(rec.results)
    assert (ceil["warps_per_cta"], ceil["ctas_per_sm"]) == (mma_sync.DEFAULT_TILE.warps,
                                                            mma_sync.DEFAULT_TILE.min_blocks)
    assert [v for v, _ in lines["ceilings"]][1] == ceil["tflops"] and lines["peak"] > ceil["tflops"]
    fig = mma_sync.plot_vs_cublas(rec)
    assert len(fig.axes[0].lines) == 4 + 1 + 2


def test_a_lane_map_labels_each_element_with_its_register():
    """Chapter 01 §2's A map: each cell shows the lane and, under it, the register a0–a3."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from asynctc.core import plots
    from asynctc.models import fragments
    lane, reg = fragments.a_m16n8k16()
    fig = plots.bank_map(lane, value_label="lane", regs=reg)
    texts = {t.get_text() for t in fig.axes[0].texts}
    plt.close(fig)
    assert f"{lane[0, 0]}\na{reg[0, 0]}" in texts and f"{lane[15, 15]}\na{reg[15, 15]}" in texts
    assert {t.split("\n")[1] for t in texts} == {"a0", "a1", "a2", "a3"}
